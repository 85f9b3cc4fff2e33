//! What a reader of the records relies on, checked on real runs: the
//! environment is filled in, the histograms agree with the counts and sums,
//! and the time accounting adds up.

use std::sync::OnceLock;

use mpiover_common::record::Record;

use crate::harness::*;

fn check(r: &Record) {
    let who = format!("rank {}", r.rank);
    assert!(!r.run_id.is_empty(), "{who}: run_id");
    assert!(!r.host.is_empty(), "{who}: host");
    assert!(r.pid > 0, "{who}: pid");
    assert!(
        r.mpi_library.contains("Open MPI"),
        "{who}: mpi_library {:?}",
        r.mpi_library
    );
    assert_eq!(
        r.thread_level, "single",
        "{who}: thread_level of an MPI_Init program"
    );
    assert!(
        r.start_unix_s > 1.6e9 && r.end_unix_s >= r.start_unix_s,
        "{who}: start/end"
    );
    assert!(r.app_time_s > 0.0, "{who}: app_time_s");
    assert!(
        r.mpi_time_s > 0.0 && r.mpi_time_s <= r.app_time_s * 1.01,
        "{who}: mpi_time_s {} vs app_time_s {}",
        r.mpi_time_s,
        r.app_time_s
    );
    // app_time_s may exclude the tool's own start-up (timer calibration at
    // MPI_Init), but never exceeds the wall-clock span of the record.
    let span = r.end_unix_s - r.start_unix_s;
    assert!(
        r.app_time_s <= span + 0.01,
        "{who}: app_time_s {} exceeds end - start {span}",
        r.app_time_s
    );
    assert!(!r.timer.name.is_empty(), "{who}: timer.name");
    assert!(
        r.timer.unit_s > 0.0 && r.timer.unit_s < 1e-6,
        "{who}: timer.unit_s {}",
        r.timer.unit_s
    );
    assert!(
        r.timer.resolution_s > 0.0 && r.timer.resolution_s < 1e-5,
        "{who}: timer.resolution_s"
    );
    assert!(
        r.timer.cost_s > 0.0 && r.timer.cost_s < 1e-5,
        "{who}: timer.cost_s"
    );
    assert!(r.profile.is_none(), "{who}: no profile was given");

    let fn_calls: u64 = r.functions.iter().map(|f| f.calls).sum();
    assert_eq!(
        r.tool.calls, fn_calls,
        "{who}: tool.calls vs the sum of functions[].calls"
    );
    let fn_time: f64 = r.functions.iter().map(|f| f.time_s).sum();
    assert!(
        (fn_time - r.mpi_time_s).abs() <= 1e-6 + 0.01 * r.mpi_time_s,
        "{who}: mpi_time_s {} vs the sum of functions[].time_s {fn_time}",
        r.mpi_time_s
    );
    for name in [
        "MPI_Comm_rank",
        "MPI_Comm_size",
        "MPI_Type_vector",
        "MPI_Comm_split",
    ] {
        assert!(
            r.functions
                .iter()
                .any(|f| f.function == name && f.calls >= 1),
            "{who}: {name} not in functions[]"
        );
    }

    for e in &r.entries {
        let what = format!(
            "{who}: entry {} at {}",
            e.function,
            describe_site(r, e.site)
        );
        assert!(e.count > 0, "{what}: count");
        assert!(e.hist.is_valid(), "{what}: invalid histogram");
        assert_eq!(e.hist.count(), e.count, "{what}: histogram count vs count");
        let hist_sum: f64 =
            e.hist.buckets.iter().map(|b| b.sum() as f64).sum::<f64>() * r.timer.unit_s;
        assert!(
            (hist_sum - e.sum_s).abs() <= 1e-6 + 0.01 * e.sum_s,
            "{what}: histogram sum {hist_sum} s vs sum_s {}",
            e.sum_s
        );
        assert!(
            e.min_s <= e.max_s
                && e.min_s * e.count as f64 <= e.sum_s * (1.0 + 1e-9)
                && e.sum_s <= e.max_s * e.count as f64 * (1.0 + 1e-9),
            "{what}: min {} max {} sum {} count {}",
            e.min_s,
            e.max_s,
            e.sum_s,
            e.count
        );
        // Every entry's calls are also counted under its function.
        let total = r.functions.iter().find(|f| f.function == e.function);
        assert!(
            e.function == "other" || total.is_some_and(|f| f.calls >= e.count),
            "{what}: missing or smaller in functions[]"
        );
        assert!(
            e.tmax_s.is_none() && e.overhead_s.is_none(),
            "{what}: overhead without a profile"
        );
    }
    for s in &r.sites {
        assert!(
            s.address.starts_with("0x"),
            "{who}: site address {:?}",
            s.address
        );
        if s.module
            .as_deref()
            .is_some_and(|m| m.ends_with("datatypes"))
        {
            assert!(
                s.build_id.is_some() && s.offset.is_some(),
                "{who}: site {s:?} lacks build-id/offset"
            );
        }
    }
}

fn datatypes_run() -> &'static Profiled {
    static RUN: OnceLock<Result<Profiled, String>> = OnceLock::new();
    shared(&RUN, || {
        profile("records_are_self_consistent", 4, "datatypes", &[])
    })
}

#[test]
fn records_are_self_consistent() {
    let p = datatypes_run();
    for r in &p.records {
        check(r);
    }
    assert!(
        p.records.iter().all(|r| r.folded.keys == 0),
        "nothing to fold in a small run"
    );
}

/// The tool states its own cost per call. It cannot be
/// below one timer read (the wrapper reads the timer twice), nor absurdly high.
#[test]
fn tool_cost_per_call_is_measured() {
    for r in &datatypes_run().records {
        let c = r.tool.cost_per_call_s;
        assert!(
            c >= r.timer.cost_s && c < 1e-5,
            "rank {}: tool.cost_per_call_s {c} s (timer.cost_s {} s): a measured cost \
             cannot be below one timer read",
            r.rank,
            r.timer.cost_s
        );
    }
}

/// Bounded aggregation under a real run: with a cap of two
/// keys per thread the datatypes example's many (site, function, p, bytes,
/// peer) keys fold into `other`; no call is lost (the entries' counts add up
/// to the uncapped run's), the fold is counted, and the report shows it.
#[test]
fn capped_keys_fold_into_other_without_losing_calls() {
    let capped = profile_env(
        "capped_keys_fold_into_other_without_losing_calls",
        4,
        "datatypes",
        &[],
        &[("MPIOVER_MAX_KEYS", "2")],
    );
    let full = datatypes_run();
    for r in &capped.records {
        let uncapped = full
            .records
            .iter()
            .find(|u| u.rank == r.rank)
            .expect("same ranks in both runs");
        let distinct = r.entries.iter().filter(|e| e.function != "other").count();
        assert!(
            distinct <= 2,
            "rank {}: {distinct} keys kept under MPIOVER_MAX_KEYS=2\n{}",
            r.rank,
            dump_sites(r)
        );
        let calls = |rec: &Record| rec.entries.iter().map(|e| e.count).sum::<u64>();
        assert_eq!(
            calls(r),
            calls(uncapped),
            "rank {}: calls in entries, capped vs uncapped",
            r.rank
        );
        let other: u64 = r
            .entries
            .iter()
            .filter(|e| e.function == "other")
            .map(|e| e.count)
            .sum();
        assert!(
            r.folded.keys > 0 && r.folded.calls == other && other > 0,
            "rank {}: folded {:?}, calls in `other` entries {other}",
            r.rank,
            r.folded
        );
    }
    let rep = std::process::Command::new(mpiover_bin())
        .arg("report")
        .arg(&capped.dir)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("running mpiover report");
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(
        rep.status.success() && text.contains("(folded keys)"),
        "report of a capped run must show the folded keys\n{text}\n{}",
        String::from_utf8_lossy(&rep.stderr)
    );
}
