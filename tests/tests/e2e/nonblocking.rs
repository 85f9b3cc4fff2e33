//! Non-blocking calls (issue 5 item 2): the time of a late sender goes to the
//! completion, which is recorded at its own line with the posting call's
//! function and line beside it; persistent requests name their `*_init` and
//! the `MPI_Start` that (re)posted them. With a profile, the completion is
//! looked up as `MPI_Wait` with role = the completed request's function.

use std::sync::OnceLock;

use mpiover_common::profile::Environment;
use mpiover_common::record::{Entry, Record};

use crate::harness::*;
use crate::profile_use::{hand_profile, point};

const FILE: &str = "late_sender_nb.c";

fn m(tag: &str) -> u32 {
    marker_any(&format!("nonblocking/{FILE}"), tag)
}

fn prog() -> std::path::PathBuf {
    example_in("nonblocking", "late_sender_nb")
}

fn at<'a>(r: &'a Record, function: &str, tag: &str) -> Vec<&'a Entry> {
    entries_at(r, function, FILE, m(tag))
}

fn post_line(r: &Record, e: &Entry) -> Option<u32> {
    e.post_site.and_then(|s| site(r, s)).and_then(|s| s.line)
}

fn run() -> &'static Profiled {
    static RUN: OnceLock<Result<Profiled, String>> = OnceLock::new();
    shared(&RUN, || {
        profile_program("nonblocking_late_sender", 2, &prog(), &["10", "20"], &[])
    })
}

#[test]
fn nonblocking_late_sender_waits_at_the_wait_with_the_irecv_as_post_site() {
    let p = run();
    let r0 = &p.records[0];
    let ctx = format!("{}\n{}", dump_sites(r0), p.out.dump());
    let waits = at(r0, "MPI_Wait", "nb-wait");
    assert_eq!(waits.len(), 1, "one key at the Wait line\n{ctx}");
    let w = waits[0];
    assert_eq!(
        (w.count, w.bytes, w.peer, w.completes.as_deref()),
        (10, 8, Some(1), Some("MPI_Irecv")),
        "{ctx}"
    );
    assert_eq!(post_line(r0, w), Some(m("nb-irecv")), "post site\n{ctx}");
    let injected = injected_s(&p.out, "late_sender_nb", 1);
    assert_close("rank 0: time in the Wait", w.sum_s, injected, 0.10, &ctx);
    // The post is cheap: the wait is not in it.
    let irecv: f64 = at(r0, "MPI_Irecv", "nb-irecv")
        .iter()
        .map(|e| e.sum_s)
        .sum();
    assert!(irecv < 0.05 * injected, "Irecv took {irecv} s\n{ctx}");
    let n: u64 = at(r0, "MPI_Irecv", "nb-irecv")
        .iter()
        .map(|e| e.count)
        .sum();
    assert_eq!(n, 10);
    // Nothing of it is on the sender's side.
    let r1 = &p.records[1];
    let send: f64 = entries_at(r1, "MPI_Send", FILE, m("nb-send"))
        .iter()
        .map(|e| e.sum_s)
        .sum();
    assert!(send < 0.05 * injected, "rank 1: sends took {send} s");
}

#[test]
fn nonblocking_persistent_receive_names_its_init_and_start() {
    let p = run();
    let r0 = &p.records[0];
    let ctx = format!("{}\n{}", dump_sites(r0), p.out.dump());
    let waits = at(r0, "MPI_Wait", "nb-wait-persistent");
    assert_eq!(waits.len(), 1, "{ctx}");
    let w = waits[0];
    assert_eq!(
        (w.count, w.bytes, w.peer, w.completes.as_deref()),
        (10, 8, Some(1), Some("MPI_Recv_init")),
        "{ctx}"
    );
    assert_eq!(post_line(r0, w), Some(m("nb-start")), "{ctx}");
    let injected = injected_s(&p.out, "late_sender_nb/persistent", 1);
    assert_close(
        "rank 0: time in the persistent Wait",
        w.sum_s,
        injected,
        0.10,
        &ctx,
    );
    let starts = at(r0, "MPI_Start", "nb-start");
    assert_eq!(starts.len(), 1, "every start names the Recv_init\n{ctx}");
    assert_eq!(
        (starts[0].count, starts[0].completes.as_deref()),
        (10, Some("MPI_Recv_init"))
    );
    assert_eq!(post_line(r0, starts[0]), Some(m("nb-recv-init")), "{ctx}");
    assert_eq!(at(r0, "MPI_Recv_init", "nb-recv-init")[0].count, 1);
}

#[test]
fn nonblocking_program_runs_unchanged() {
    let dir = scratch("nonblocking_program_runs_unchanged");
    let plain = Job::program(2, &prog(), &["3", "1"], &dir).run();
    plain.assert_success();
    let p = profile_program(
        "nonblocking_program_runs_unchanged_profiled",
        2,
        &prog(),
        &["3", "1"],
        &[],
    );
    assert_eq!(p.out.stdout, plain.stdout);
}

/// Online overhead of a completion: the wait is looked up as `MPI_Wait` with
/// role `MPI_Irecv` (a persistent receive's too), so the late sender's
/// delay becomes overhead of the Wait line; the post gets its own tmax.
#[test]
fn nonblocking_wait_overhead_uses_the_wait_entries_of_the_profile() {
    let pdir = scratch("nonblocking_wait_overhead_profile");
    let tmax = 1e-3;
    let prof = hand_profile(
        &pdir,
        "nb.json",
        Environment::default(),
        vec![
            point("MPI_Wait", 8, Some("MPI_Irecv"), tmax),
            point("MPI_Wait", 8, Some("MPI_Isend"), 5e-6),
            point("MPI_Irecv", 8, None, 2e-6),
        ],
    );
    let p = profile_program(
        "nonblocking_wait_overhead",
        2,
        &prog(),
        &["10", "20"],
        &[("MPIOVER_PROFILE", prof.to_str().unwrap())],
    );
    let r0 = &p.records[0];
    let ctx = format!("{}\n{}", dump_sites(r0), p.out.dump());
    for tag in ["nb-wait", "nb-wait-persistent"] {
        let w = at(r0, "MPI_Wait", tag);
        assert_eq!(w.len(), 1, "{ctx}");
        let w = w[0];
        assert_eq!(w.tmax_s, Some(tmax), "{tag}: {w:?}");
        let over = w.overhead_s.expect("overhead");
        let expected = w.sum_s - w.count as f64 * tmax;
        assert!(
            (over - expected).abs() <= 1e-3 * w.sum_s,
            "{tag}: overhead {over} vs sum - count * tmax {expected}\n{ctx}"
        );
    }
    let post = at(r0, "MPI_Irecv", "nb-irecv");
    assert!(post.iter().all(|e| e.tmax_s == Some(2e-6)), "{post:?}");
}
