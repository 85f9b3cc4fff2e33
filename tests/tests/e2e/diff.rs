//! `mpiover diff` on real runs of the late sender (a receive that waits for
//! the injected delay, 10 times per run):
//!
//! - two runs of the unchanged program: no site `better` or `worse`;
//! - the delay cut from 20 ms to 5 ms: the receive line `better`, with a
//!   q-value below alpha, with one run a side and with two.

use std::process::Command;

use serde_json::Value;

use crate::harness::*;

/// `mpiover diff -f json --profile P ARGS`.
fn diff(args: &[&std::path::Path]) -> Value {
    // Options first: what follows `--` is runs.
    let mut c = Command::new(mpiover_bin());
    c.args(["diff", "-f", "json", "--profile"])
        .arg(calibrated_profile());
    for a in args {
        c.arg(a);
    }
    let o = c.output().expect("runs mpiover diff");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("diff JSON")
}

fn changed(d: &Value) -> Vec<String> {
    d["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .filter(|s| s["status"] == "better" || s["status"] == "worse")
        .map(|s| {
            format!(
                "{} {} {}: {} q {}",
                s["status"], s["location"], s["mpi_function"], s["delta_overhead_s"], s["q_value"]
            )
        })
        .collect()
}

fn recv_site(d: &Value) -> &Value {
    let line = marker("late_sender.c", "late-sender-recv");
    d["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .find(|s| s["line"].as_u64() == Some(u64::from(line)) && s["mpi_function"] == "MPI_Recv")
        .unwrap_or_else(|| panic!("no MPI_Recv at late_sender.c:{line} in {d:#}"))
}

#[test]
fn diff_of_unchanged_runs_is_all_same_and_a_cut_delay_is_better() {
    let run = |name: &str, delay: &str| {
        record(
            name,
            NP,
            "late_sender",
            &["10", delay],
            calibrated_profile(),
        )
        .dir
    };
    let (a1, a2) = (run("diff_a1", "20"), run("diff_a2", "20"));
    let (b1, b2) = (run("diff_b1", "5"), run("diff_b2", "5"));

    let same = diff(&[&a1, &a2]);
    assert_eq!(same["compared_by"], "overhead");
    assert!(
        changed(&same).is_empty(),
        "unchanged program: {:?}",
        changed(&same)
    );

    let one = diff(&[&a1, &b1]);
    assert_eq!(one["method"]["test"], "rank_sum_call_durations");
    let s = recv_site(&one);
    assert_eq!(s["status"], "better", "{s:#}");
    assert!(s["q_value"].as_f64().is_some_and(|q| q <= 0.05), "{s:#}");
    // 10 waits of about 15 ms less each.
    let delta = s["delta_overhead_s"].as_f64().unwrap_or(0.0);
    assert!((-0.2..=-0.1).contains(&delta), "{s:#}");
    assert_eq!(
        changed(&one).len(),
        1,
        "only the receive: {:?}",
        changed(&one)
    );

    let dash = std::path::Path::new("--");
    let two = diff(&[&a1, &a2, dash, &b1, &b2]);
    assert_eq!(two["method"]["runs_a"], 2);
    let s = recv_site(&two);
    assert_eq!(s["status"], "better", "{s:#}");
    assert_eq!(s["runs_overlap"], false, "{s:#}");
    assert!(s["q_value"].as_f64().is_some_and(|q| q <= 0.05), "{s:#}");
}
