//! The report of a job on two hosts of the fake cluster
//! (`scripts/fake-cluster`, see `fake_cluster.rs`), one rank per host or
//! two on one, recorded with a profile:
//!
//! - a late sender across hosts (`late_sender 10 20` on rank 0 of node1
//!   and rank 1 of node2): the receive's line, its state (Late Sender), the
//!   late rank 1, the hosts in RANKS and in the wait matrix (JSON and
//!   text); recorded as both per-rank records and the job log merged over
//!   MPI, whose report equals the per-rank one;
//! - a send between the two eager limits (16 KiB: above the same-host one
//!   of Open MPI's shared memory, below the cross-host one of its TCP): on
//!   one host it waits for its late receiver (Late Receiver); across hosts it
//!   is eager, does not wait and carries no wait state. Open MPI only: the
//!   cross-host limit of its profile is Open MPI's TCP one.
//!
//! Where the fake cluster is not up they say so and pass (fail under CI),
//! as `fake_cluster.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fake_cluster::{cluster_or_skip, record_on};
use crate::harness::*;

/// `mpiover report DIR` as text, with `--profile` when given.
pub(crate) fn text_report(run: &Path, profile: Option<&Path>) -> String {
    let mut c = Command::new(mpiover_bin());
    c.arg("report").arg(run);
    if let Some(p) = profile {
        c.arg("--profile").arg(p);
    }
    let o = c.env_remove("LD_PRELOAD").output().expect("mpiover report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The lines of a text report's section `name`, up to the next blank line.
fn section<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.starts_with(name))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn fake_cluster_late_sender_across_hosts_per_rank_and_in_the_job_log() {
    let Some(vars) = cluster_or_skip("fake_cluster_late_sender_across_hosts") else {
        return;
    };
    let dir = scratch("fake_cluster_late_sender_across_hosts");
    let prof = calibrated_profile();
    // Rank 0 on node1 receives; rank 1 on node2 sleeps 20 ms before each
    // of its 10 sends.
    let (run, out) = record_on(
        &dir,
        &vars,
        "both",
        Some(prof),
        2,
        "node1:1,node2:1",
        "late_sender",
        &["10", "20"],
    );
    let injected = injected_s(&out, "late_sender", 1);
    let (log_only, files_only) = split_both(&run, &dir);
    let rep = report_json_of(&files_only, None, &out);
    let merged = report_json_of(&log_only, None, &out);
    let ctx = format!("{rep:#}\n{}", out.dump());
    assert!(!rep["sites"].as_array().expect("sites").is_empty(), "{ctx}");
    assert_eq!(without_dir(merged), without_dir(rep.clone()), "{ctx}");

    assert_eq!(
        rep["run"]["hosts"],
        serde_json::json!(["node1", "node2"]),
        "{ctx}"
    );
    let hosts: Vec<(u64, &str)> = rep["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|k| (k["rank"].as_u64().unwrap(), k["host"].as_str().unwrap()))
        .collect();
    assert_eq!(hosts, [(0, "node1"), (1, "node2")], "{ctx}");
    let line = marker("late_sender.c", "late-sender-recv");
    let recv = site_at(&rep, "late_sender.c", line, "MPI_Recv")
        .unwrap_or_else(|| panic!("no MPI_Recv at late_sender.c:{line}\n{ctx}"));
    assert_eq!(recv["wait_state"], "Late Sender", "{recv:#}\n{ctx}");
    assert_eq!(recv["late_ranks"], serde_json::json!([1]), "{recv:#}");
    let ovh = recv["overhead_s"].as_f64().unwrap_or(0.0);
    assert!(
        ovh > 0.5 * injected,
        "overhead {ovh} s of {injected} s injected\n{recv:#}"
    );
    // The wait matrix: rank 0 on node1 waited on rank 1 on node2.
    let cell = &rep["wait_matrix"]["cells"][0];
    assert_eq!(
        (
            &cell["waiter"],
            &cell["waiter_host"],
            &cell["peer"],
            &cell["peer_host"]
        ),
        (
            &Value::from(0),
            &Value::from("node1"),
            &Value::from(1),
            &Value::from("node2")
        ),
        "{:#}",
        rep["wait_matrix"]
    );
    assert!(
        cell["value_s"].as_f64().unwrap_or(0.0) > 0.5 * injected,
        "{cell}"
    );

    // The text report: the hosts in RANKS, and beside both ranks of the
    // wait matrix's row.
    let text = text_report(&files_only, None);
    let ranks = section(&text, "RANKS");
    for (rank, host) in [("0", "node1"), ("1", "node2")] {
        assert!(
            ranks.iter().any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 1 && w[0] == rank && w[1] == host
            }),
            "rank {rank} on {host}?\n{text}"
        );
    }
    let matrix = section(&text, "WAIT MATRIX");
    let row: Vec<&str> = matrix
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&"0"))
        .unwrap_or_else(|| panic!("no row of rank 0 in the wait matrix\n{text}"));
    assert_eq!(row[..4], ["0", "node1", "1", "node2"], "{text}");
    // The same text from the job log, but for the run directory named first.
    let body = |t: &str| t.split_once('\n').map(|(_, b)| b.to_string());
    assert_eq!(
        body(&text_report(&log_only, None)),
        body(&text),
        "the job log's text"
    );
}

/// The shared calibration (one host), with the eager limit across hosts
/// that Open MPI's TCP BTL has between the fake cluster's hosts: 65480 B
/// (its 64 KiB eager fragment less the match header), as a calibration on
/// two hosts measures it. The shared calibration runs on one host; this
/// checks how the report labels sends given the two limits.
fn profile_with_cross_host_limit(dir: &Path) -> (PathBuf, u64) {
    let mut p: Value =
        serde_json::from_slice(&std::fs::read(calibrated_profile()).expect("profile"))
            .expect("profile JSON");
    let proto = &mut p["protocol"];
    let same = proto["eager_limit_same_host"]
        .as_u64()
        .unwrap_or_else(|| panic!("no same-host eager limit measured: {proto}"));
    assert!(
        same < 16 * 1024,
        "this test needs a same-host eager limit below 16 KiB: {proto}"
    );
    proto["eager_limit_cross_host"] = 65480.into();
    let searched = proto["searched_up_to"].as_u64().unwrap_or(0);
    proto["searched_up_to"] = searched.max(1 << 20).into();
    let to = dir.join("profile-two-limits.json");
    std::fs::write(&to, serde_json::to_vec_pretty(&p).unwrap()).expect("write profile");
    (to, same)
}

#[test]
fn cross_host_send_between_the_eager_limits_is_eager_across_hosts_only() {
    let Some(vars) = cluster_or_skip("cross_host_eager") else {
        return;
    };
    if mpi_flavor() == "mpich" {
        eprintln!(
            "e2e: cross_host_eager: the profile's cross-host limit is Open MPI's TCP one; \
             not tested under MPICH"
        );
        return;
    }
    let dir = scratch("cross_host_eager");
    let (prof, same) = profile_with_cross_host_limit(&dir);
    let line = marker("late_receiver.c", "late-receiver-send");
    // 10 sends of 16 KiB from rank 0 to rank 1, which sleeps 20 ms before
    // each receive: on one host (node1), then across hosts.
    let mut got = Vec::new();
    for (case, hosts) in [("same_host", "node1:2"), ("cross_host", "node1:1,node2:1")] {
        let d = dir.join(case);
        std::fs::create_dir_all(&d).expect("mkdir");
        let (run, out) = record_on(
            &d,
            &vars,
            "per-rank",
            Some(&prof),
            2,
            hosts,
            "late_receiver",
            &["10", "20", "16384"],
        );
        let injected = injected_s(&out, "late_receiver", 1);
        let rep = report_json_of(&run, None, &out);
        let ctx = format!("{case}\n{rep:#}\n{}", out.dump());
        let m = &rep["methods"];
        assert_eq!(m["rendezvous_source"], "profile", "{ctx}");
        assert_eq!(m["rendezvous_bytes"], same + 1, "{ctx}");
        assert_eq!(m["rendezvous_bytes_cross_host"], 65481, "{ctx}");
        let send = site_at(&rep, "late_receiver.c", line, "MPI_Send")
            .unwrap_or_else(|| panic!("no MPI_Send at late_receiver.c:{line}\n{ctx}"))
            .clone();
        // The records say whether the peer was on another host.
        let rec: Value = serde_json::from_slice(
            &std::fs::read(run.join("rank-000000.json")).expect("rank 0's record"),
        )
        .expect("record JSON");
        let crosses: Vec<&Value> = rec["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|e| e["function"] == "MPI_Send" && e["bytes"] == 16384)
            .map(|e| &e["cross_host"])
            .collect();
        assert_eq!(
            crosses,
            [&Value::Bool(case == "cross_host")],
            "{case}: {:#}",
            rec["entries"]
        );
        got.push((case, injected, send, ctx));
    }
    let [(_, injected, within, ctx), (_, injected_x, across, ctx_x)] = &got[..] else {
        unreachable!()
    };
    // On one host 16 KiB is rendezvous: each send waits for its receiver.
    assert_eq!(within["wait_state"], "Late Receiver", "{ctx}");
    let ovh = within["overhead_s"].as_f64().unwrap_or(0.0);
    assert!(ovh > 0.5 * injected, "{ovh} s of {injected} s\n{ctx}");
    // Across hosts it is eager: the sends do not wait, and are not labelled
    // as waiting for their receiver.
    let t = across["time_s"].as_f64().unwrap_or(f64::MAX);
    assert!(t < 0.25 * injected_x, "{t} s of {injected_x} s\n{ctx_x}");
    assert!(across["wait_state"].is_null(), "{across:#}\n{ctx_x}");
    assert_eq!(across["late_ranks"], serde_json::json!([]), "{ctx_x}");
}
