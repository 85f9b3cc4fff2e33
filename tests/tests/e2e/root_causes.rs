//! Root causes: why the rank a site waited for was late, from the regions
//! between MPI calls (`examples/root_cause.c`, recorded with a profile of
//! this machine).
//!
//! - Load imbalance before a collective: the slow rank and its region (from
//!   the Bcast to the Allreduce, in `compute_step`) come first, with the
//!   excess within 15 % of what it slept more than the others.
//! - A late sender that produces longer before its send: the sender's
//!   region from the barrier to its send.
//! - A chain (rank 2 late to rank 1, which is then late to rank 0): rank 0's
//!   wait names rank 2's region, via rank 1.
//! - A balanced program: no root cause at any site.
//! - The merged job log gives the same regions and root causes as the
//!   per-rank records.

use serde_json::Value;

use crate::harness::*;

const FILE: &str = "root_cause.c";

fn causes(site: &Value) -> &[Value] {
    site["root_causes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A region end's (line, MPI function).
fn end(c: &Value, which: &str) -> (Option<u64>, String) {
    let e = &c["region"][which];
    (
        e["line"].as_u64(),
        e["mpi_function"].as_str().unwrap_or("?").to_string(),
    )
}

fn line(tag: &str) -> Option<u64> {
    Some(u64::from(marker(FILE, tag)))
}

fn site<'a>(r: &'a Recorded, tag: &str, mpi: &str) -> &'a Value {
    site_at(&r.report, FILE, marker(FILE, tag), mpi)
        .unwrap_or_else(|| panic!("no {mpi} site at {FILE}:{tag}\n{}", context(r)))
}

#[test]
fn root_cause_of_imbalance_before_a_collective_is_the_slow_ranks_region() {
    let np = 3;
    let r = record(
        "root_cause_of_imbalance_before_a_collective_is_the_slow_ranks_region",
        np,
        "root_cause",
        &["imbalance", "10", "30", "2"],
        calibrated_profile(),
    );
    let ctx = context(&r);
    let s = site(&r, "rc-allreduce", "MPI_Allreduce");
    assert_eq!(s["wait_state"], "Wait at NxN", "{s:#}\n{ctx}");
    let c = causes(s)
        .first()
        .unwrap_or_else(|| panic!("no root cause\n{s:#}\n{ctx}"));
    assert_eq!(c["rank"], np - 1, "{c:#}\n{ctx}");
    assert_eq!(
        end(c, "from"),
        (line("rc-bcast"), "MPI_Bcast".into()),
        "{c:#}"
    );
    assert_eq!(
        end(c, "to"),
        (line("rc-allreduce"), "MPI_Allreduce".into()),
        "{c:#}"
    );
    assert_eq!(c["region"]["from"]["function"], "compute_step", "{c:#}");
    let slow = injected_s(&r.out, "root_cause", np - 1);
    let fast: Vec<f64> = (0..np - 1)
        .map(|k| injected_s(&r.out, "root_cause", k))
        .collect();
    let expected = slow - fast.iter().sum::<f64>() / fast.len() as f64;
    let excess = c["excess_s"].as_f64().expect("excess_s");
    assert!(
        (excess - expected).abs() <= 0.15 * expected,
        "excess {:.1} ms, the slow rank slept {:.1} ms more\n{c:#}\n{ctx}",
        excess * 1e3,
        expected * 1e3
    );
    assert!(c["share"].as_f64().is_some_and(|x| x > 0.5), "{c:#}");
    // The regions list ranks the same region first, on the same rank.
    let top = &r.report["regions"][0];
    assert_eq!(top["max_rank"], np - 1, "{top:#}");
    assert_eq!(top["region"], c["region"], "{top:#}");
}

#[test]
fn root_cause_of_a_late_sender_is_its_region_before_the_send() {
    let r = record(
        "root_cause_of_a_late_sender_is_its_region_before_the_send",
        2,
        "root_cause",
        &["late_sender", "10", "30"],
        calibrated_profile(),
    );
    let ctx = context(&r);
    let s = site(&r, "rc-recv", "MPI_Recv");
    assert_eq!(s["wait_state"], "Late Sender", "{s:#}\n{ctx}");
    let c = causes(s)
        .first()
        .unwrap_or_else(|| panic!("no root cause\n{s:#}\n{ctx}"));
    assert_eq!(c["rank"], 1, "{c:#}");
    assert_eq!(
        end(c, "from"),
        (line("rc-barrier"), "MPI_Barrier".into()),
        "{c:#}"
    );
    assert_eq!(end(c, "to"), (line("rc-send"), "MPI_Send".into()), "{c:#}");
    assert!(c["via"].as_array().is_none_or(Vec::is_empty), "{c:#}");
}

#[test]
fn root_cause_of_a_chain_of_waits_names_its_origin() {
    let np = 3;
    let r = record(
        "root_cause_of_a_chain_of_waits_names_its_origin",
        np,
        "root_cause",
        &["chain", "10", "30"],
        calibrated_profile(),
    );
    let ctx = context(&r);
    let s = site(&r, "rc-chain-recv-first", "MPI_Recv");
    assert_eq!(s["wait_state"], "Late Sender", "{s:#}\n{ctx}");
    assert_eq!(s["late_ranks"][0], 1, "rank 0 waits for rank 1\n{s:#}");
    let c = causes(s)
        .first()
        .unwrap_or_else(|| panic!("no root cause\n{s:#}\n{ctx}"));
    assert_eq!(c["rank"], 2, "the origin is the last rank\n{c:#}\n{ctx}");
    assert_eq!(c["via"], serde_json::json!([1]), "{c:#}");
    assert_eq!(
        end(c, "to"),
        (line("rc-chain-send-last"), "MPI_Send".into()),
        "{c:#}"
    );
    assert_eq!(
        end(c, "from"),
        (line("rc-chain-barrier"), "MPI_Barrier".into()),
        "{c:#}"
    );
}

#[test]
fn root_cause_of_a_balanced_program_is_none() {
    // Two ranks: with more ranks than cores, MPICH's ranks spin while they
    // wait, and a rank that wakes from its sleep waits for a core, which is
    // real lateness (5-7 % of the region here) but not the program's.
    let r = record(
        "root_cause_of_a_balanced_program_is_none",
        2,
        "root_cause",
        &["balanced", "20", "0", "10"],
        calibrated_profile(),
    );
    let ctx = context(&r);
    for s in sites(&r.report) {
        assert!(
            causes(s).is_empty(),
            "a root cause in a balanced program:\n{s:#}\n{ctx}"
        );
    }
    assert!(
        r.report["regions"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "no regions\n{ctx}"
    );
}

#[test]
fn root_causes_of_the_job_log_equal_those_of_the_per_rank_records() {
    let (out, log_only, files_only) = record_both_formats(
        "root_causes_of_the_job_log_equal_those_of_the_per_rank_records",
        3,
        &example("root_cause"),
        &["chain", "5", "20"],
        calibrated_profile(),
    );
    // Without a profile: the report on per-rank records would evaluate
    // every call against a given one again, while a merged log keeps the
    // run's own figures per rank; both use the tmax the records carry.
    let (a, b) = (
        report_json_of(&log_only, None, &out),
        report_json_of(&files_only, None, &out),
    );
    assert!(
        a["regions"].as_array().is_some_and(|v| !v.is_empty()),
        "{a:#}"
    );
    assert_eq!(a["regions"], b["regions"]);
    let causes_of = |v: &Value| -> Vec<Value> {
        sites(v)
            .iter()
            .map(|s| serde_json::json!([s["location"], s["mpi_function"], s["root_causes"]]))
            .collect()
    };
    assert_eq!(causes_of(&a), causes_of(&b));
    assert!(
        sites(&a).iter().any(|s| !causes(s).is_empty()),
        "no root cause in the chain\n{}",
        describe_sites(&a)
    );
}
