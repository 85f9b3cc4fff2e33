//! Non-blocking calls: the time of a late sender goes to the
//! completion, which is recorded at its own line with the posting call's
//! function and line beside it; persistent requests name their `*_init` and
//! the `MPI_Start` that (re)posted them. With a profile, the completion is
//! looked up as `MPI_Wait` with role = the completed request's function.

use std::sync::OnceLock;

use mpiover_common::completion::is_completion;
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

// ---- completion calls (examples/nonblocking/requests.c) --------------------

const REQ_FILE: &str = "requests.c";
const REQ_ITERS: u64 = 5;

fn rm(tag: &str) -> u32 {
    marker_any(&format!("nonblocking/{REQ_FILE}"), tag)
}

fn req_prog() -> std::path::PathBuf {
    example_in("nonblocking", "requests")
}

fn req_at<'a>(r: &'a Record, function: &str, tag: &str) -> Vec<&'a Entry> {
    entries_at(r, function, REQ_FILE, rm(tag))
}

fn req_run() -> &'static Profiled {
    static RUN: OnceLock<Result<Profiled, String>> = OnceLock::new();
    shared(&RUN, || {
        profile_program(
            "nonblocking_requests",
            2,
            &req_prog(),
            &[&REQ_ITERS.to_string(), "5"],
            &[],
        )
    })
}

/// `requests: <what> N` on stderr.
fn req_stat(out: &Outcome, what: &str) -> u64 {
    let prefix = format!("requests: {what} ");
    out.stderr
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix:?} line\n{}", out.dump()))
}

fn req_ctx(p: &Profiled, r: &Record) -> String {
    let mut s = format!("{}\n", dump_sites(r));
    for e in &r.entries {
        s += &format!(
            "  {} @{} x{} {}B peer {:?} p {} completes {:?} post {:?}\n",
            e.function,
            describe_site(r, e.site),
            e.count,
            e.bytes,
            e.peer,
            e.p,
            e.completes,
            e.post_site.map(|s| describe_site(r, s))
        );
    }
    s + &p.out.dump()
}

/// The one key of a completion that completed `completes` posted at `tag`.
fn assert_completes(
    r: &Record,
    e: &Entry,
    (count, bytes, peer): (u64, u64, Option<i32>),
    completes: &str,
    post_tag: &str,
    ctx: &str,
) {
    assert_eq!(
        (e.count, e.bytes, e.peer, e.completes.as_deref()),
        (count, bytes, peer, Some(completes)),
        "{ctx}"
    );
    assert_eq!(post_line(r, e), Some(rm(post_tag)), "post site\n{ctx}");
}

/// A Waitall over [Irecv from a late sender, MPI_REQUEST_NULL, Isend to
/// MPI_PROC_NULL, Irecv from MPI_PROC_NULL, an inactive persistent receive]
/// keeps the Irecv's post site, bytes and peer: the other requests move
/// nothing (Open MPI returns one shared request for every MPI_PROC_NULL post).
#[test]
fn nonblocking_waitall_ignores_null_proc_null_and_inactive_requests() {
    let p = req_run();
    let r0 = &p.records[0];
    let ctx = req_ctx(p, r0);
    let w = req_at(r0, "MPI_Waitall", "rq-waitall");
    assert_eq!(w.len(), 1, "one key at the Waitall line\n{ctx}");
    assert_completes(
        r0,
        w[0],
        (REQ_ITERS, 8, Some(1)),
        "MPI_Irecv",
        "rq-irecv-all",
        &ctx,
    );
    assert!(
        w[0].p == 2,
        "p of the Irecv's communicator: {}\n{ctx}",
        w[0].p
    );
    // The MPI_PROC_NULL posts are still counted where they were made.
    let isend = req_at(r0, "MPI_Isend", "rq-isend-null");
    assert_eq!(
        isend
            .iter()
            .map(|e| (e.count, e.bytes, e.peer))
            .collect::<Vec<_>>(),
        vec![(REQ_ITERS, 0, None)],
        "{ctx}"
    );
    // Blocking receives from MPI_PROC_NULL: what the status says arrived
    // (nothing), although 8 bytes were posted; no peer.
    for (func, tag) in [
        ("MPI_Recv", "rq-recv-null"),
        ("MPI_Sendrecv", "rq-sendrecv-null"),
    ] {
        let got: Vec<_> = req_at(r0, func, tag)
            .iter()
            .map(|e| (e.count, e.bytes, e.peer))
            .collect();
        assert_eq!(got, vec![(REQ_ITERS, 0, None)], "{func}\n{ctx}");
    }
    // Nothing the request map could not place.
    assert!(
        !r0.warnings
            .iter()
            .any(|w| w.contains("unmatched completions")),
        "{:?}\n{ctx}",
        r0.warnings
    );
}

/// An MPI_Irecv that is cancelled and completed by MPI_Wait moved nothing:
/// 0 bytes and no peer (whether the caller's status is MPI_STATUS_IGNORE or
/// its own), still naming the Irecv.
#[test]
fn nonblocking_cancelled_receive_records_no_bytes_and_no_peer() {
    let p = req_run();
    let r0 = &p.records[0];
    let ctx = req_ctx(p, r0);
    assert_eq!(req_stat(&p.out, "cancelled"), REQ_ITERS, "{ctx}");
    for (tag, n) in [
        ("rq-wait-cancel", REQ_ITERS.div_ceil(2)),
        ("rq-wait-cancel-status", REQ_ITERS / 2),
    ] {
        let w = req_at(r0, "MPI_Wait", tag);
        assert_eq!(w.len(), 1, "{tag}\n{ctx}");
        assert_completes(r0, w[0], (n, 0, None), "MPI_Irecv", "rq-irecv-cancel", &ctx);
    }
}

/// Polling: 1000 MPI_Test calls that cannot succeed stay one key; the polls
/// until done make at most one more key beside the completion, which names
/// the Irecv. The same for MPI_Testall over [Irecv, Isend to MPI_PROC_NULL].
#[test]
fn nonblocking_test_polling_stays_one_key() {
    let p = req_run();
    let r0 = &p.records[0];
    let ctx = req_ctx(p, r0);
    let polls = req_at(r0, "MPI_Test", "rq-test-poll");
    assert_eq!(polls.len(), 1, "1000 failed polls, one key\n{ctx}");
    assert_eq!(
        (
            polls[0].count,
            polls[0].bytes,
            polls[0].completes.as_deref()
        ),
        (REQ_ITERS * 1000, 0, None),
        "{ctx}"
    );
    for (function, tag, post, what) in [
        ("MPI_Test", "rq-test-until", "rq-irecv-test", "test polls"),
        (
            "MPI_Testall",
            "rq-testall",
            "rq-irecv-testall",
            "testall polls",
        ),
    ] {
        let keys = req_at(r0, function, tag);
        let total: u64 = keys.iter().map(|e| e.count).sum();
        assert_eq!(total, req_stat(&p.out, what), "{function}\n{ctx}");
        assert!(keys.len() <= 2, "{function}: {} keys\n{ctx}", keys.len());
        let done: Vec<_> = keys.iter().filter(|e| e.completes.is_some()).collect();
        assert_eq!(done.len(), 1, "{function}\n{ctx}");
        assert_completes(
            r0,
            done[0],
            (REQ_ITERS, 8, Some(1)),
            "MPI_Irecv",
            post,
            &ctx,
        );
        for e in keys.iter().filter(|e| e.completes.is_none()) {
            assert_eq!((e.bytes, e.peer, e.post_site), (0, None, None), "{ctx}");
        }
    }
}

/// MPI_Waitany names the Irecv each call completed (the array fills with
/// MPI_REQUEST_NULL as it goes); MPI_Waitsome sums the Irecvs each call
/// completed (with a null request in the array), so that over all its keys
/// count x bytes is every byte received.
#[test]
fn nonblocking_waitany_and_waitsome_name_their_irecvs() {
    let p = req_run();
    let r0 = &p.records[0];
    let ctx = req_ctx(p, r0);
    let any = req_at(r0, "MPI_Waitany", "rq-waitany");
    assert_eq!(any.len(), 1, "{ctx}");
    assert_completes(
        r0,
        any[0],
        (4 * REQ_ITERS, 16, Some(1)),
        "MPI_Irecv",
        "rq-irecv-any",
        &ctx,
    );
    let some = req_at(r0, "MPI_Waitsome", "rq-waitsome");
    assert!(!some.is_empty(), "{ctx}");
    for e in &some {
        assert_eq!(
            (e.completes.as_deref(), e.peer, e.bytes % 24),
            (Some("MPI_Irecv"), Some(1), 0),
            "{ctx}"
        );
        assert_eq!(post_line(r0, e), Some(rm("rq-irecv-some")), "{ctx}");
    }
    let bytes: u64 = some.iter().map(|e| e.count * e.bytes).sum();
    assert_eq!(bytes, 4 * REQ_ITERS * 24, "{ctx}");
}

/// Non-blocking collectives: the Wait completes the MPI_Iallreduce (4
/// doubles), the MPI_Ineighbor_allgather and MPI_Ineighbor_alltoall (1 int
/// from each of the 2 neighbours of a periodic ring of 2) with their bytes,
/// on every rank.
#[test]
fn nonblocking_collective_waits_name_the_collective() {
    let p = req_run();
    for r in &p.records {
        let ctx = req_ctx(p, r);
        for (post_fn, post, wait, bytes) in [
            ("MPI_Iallreduce", "rq-iallreduce", "rq-wait-iallreduce", 32),
            (
                "MPI_Ineighbor_allgather",
                "rq-ineighbor-allgather",
                "rq-wait-ineighbor-allgather",
                8,
            ),
            (
                "MPI_Ineighbor_alltoall",
                "rq-ineighbor-alltoall",
                "rq-wait-ineighbor-alltoall",
                8,
            ),
        ] {
            let posts = req_at(r, post_fn, post);
            assert_eq!(
                posts
                    .iter()
                    .map(|e| (e.count, e.bytes, e.p))
                    .collect::<Vec<_>>(),
                vec![(REQ_ITERS, bytes, 2)],
                "rank {}: {post_fn}\n{ctx}",
                r.rank
            );
            let w = req_at(r, "MPI_Wait", wait);
            assert_eq!(w.len(), 1, "rank {}: {wait}\n{ctx}", r.rank);
            assert_completes(r, w[0], (REQ_ITERS, bytes, None), post_fn, post, &ctx);
            assert_eq!(w[0].p, 2, "{ctx}");
        }
    }
}

#[test]
fn nonblocking_requests_program_runs_unchanged() {
    let dir = scratch("nonblocking_requests_program_runs_unchanged");
    let plain = Job::program(2, &req_prog(), &["3", "1"], &dir).run();
    plain.assert_success();
    let q = profile_program(
        "nonblocking_requests_program_runs_unchanged_profiled",
        2,
        &req_prog(),
        &["3", "1"],
        &[],
    );
    assert_eq!(q.out.stdout, plain.stdout);
}

/// After a plain MPI_Init the record says the thread level MPI granted
/// (`MPI_Query_thread`), here raised to `multiple` through the library's
/// environment variable; `single` without it.
#[test]
fn nonblocking_thread_level_after_mpi_init_is_queried() {
    let (k, v) = if mpi_flavor() == "mpich" {
        ("MPIR_CVAR_DEFAULT_THREAD_LEVEL", "MPI_THREAD_MULTIPLE")
    } else {
        ("OMPI_MPI_THREAD_LEVEL", "3")
    };
    let p = profile_program(
        "nonblocking_thread_level_queried",
        2,
        &req_prog(),
        &["1", "1"],
        &[(k, v)],
    );
    for r in &p.records {
        assert_eq!(r.thread_level, "multiple", "rank {}", r.rank);
    }
    for r in &req_run().records {
        assert_eq!(r.thread_level, "single", "rank {}", r.rank);
    }
}

/// The Waitall with null and MPI_PROC_NULL requests, and the cancelled
/// receive, through the Fortran bindings (`mpif.h` and `use mpi_f08`).
#[test]
fn nonblocking_fortran_waitall_and_cancel() {
    let file = "requests_f.F90";
    let fm = |tag: &str| marker_any(&format!("nonblocking/{file}"), tag);
    for binding in ["f77", "f08"] {
        let p = profile_program(
            &format!("nonblocking_fortran_requests_{binding}"),
            2,
            &example_in("nonblocking", &format!("requests_{binding}")),
            &["5"],
            &[],
        );
        let r0 = &p.records[0];
        let ctx = format!("{binding}\n{}", req_ctx(&p, r0));
        let post = |e: &Entry| post_line(r0, e);
        let w = entries_at(r0, "MPI_Waitall", file, fm("rqf-waitall"));
        assert_eq!(w.len(), 1, "{ctx}");
        assert_eq!(
            (w[0].count, w[0].bytes, w[0].peer, w[0].completes.as_deref()),
            (5, 8, Some(1), Some("MPI_Irecv")),
            "{ctx}"
        );
        assert_eq!(post(w[0]), Some(fm("rqf-irecv")), "{ctx}");
        let isend = entries_at(r0, "MPI_Isend", file, fm("rqf-isend-null"));
        assert_eq!(isend.iter().map(|e| e.count).sum::<u64>(), 5, "{ctx}");
        let c = entries_at(r0, "MPI_Wait", file, fm("rqf-wait-cancel"));
        assert_eq!(c.len(), 1, "{ctx}");
        assert_eq!(
            (c[0].count, c[0].bytes, c[0].peer, c[0].completes.as_deref()),
            (5, 0, None, Some("MPI_Irecv")),
            "{ctx}"
        );
        assert_eq!(post(c[0]), Some(fm("rqf-irecv-cancel")), "{ctx}");
    }
}

/// Every completion of the requests example (Waitall with null,
/// `MPI_PROC_NULL` and inactive requests, Testall and Test polls, Waitany,
/// Waitsome, cancelled receives, the Wait of an `MPI_Iallreduce`) gets a
/// tmax from a profile calibrated on this machine, online and in the
/// report; only the waits of neighbourhood collectives, which the
/// calibration does not measure, have none, and they say why.
#[test]
fn nonblocking_every_completion_has_a_tmax_or_says_why() {
    let prof = quick_profile(
        "nonblocking_completion_tmax_profile",
        2,
        "MPI_Wait,MPI_Waitall,MPI_Allreduce",
        "1,8,64",
    );
    let p = profile_program(
        "nonblocking_completion_tmax",
        2,
        &req_prog(),
        &[&REQ_ITERS.to_string(), "5"],
        &[("MPIOVER_PROFILE", prof.to_str().expect("utf-8 path"))],
    );
    let mut checked = 0;
    for r in &p.records {
        let ctx = req_ctx(&p, r);
        for e in &r.entries {
            if !is_completion(&e.function) {
                continue;
            }
            checked += 1;
            let neighbour = e
                .completes
                .as_deref()
                .is_some_and(|c| c.starts_with("MPI_Ineighbor"));
            if neighbour {
                assert!(e.tmax_s.is_none(), "{e:?}\n{ctx}");
                assert!(
                    e.tmax_missing.as_deref().is_some_and(|w| !w.is_empty()),
                    "a completion without tmax must say why: {e:?}\n{ctx}"
                );
            } else {
                assert!(
                    e.tmax_s.is_some(),
                    "no tmax for {} completing {:?} ({:?}): {:?}\n{ctx}",
                    e.function,
                    e.completes,
                    e.requests,
                    e.tmax_missing
                );
            }
        }
    }
    assert!(checked >= 8, "only {checked} completion entries");
    // The report re-analyses them alike.
    let report = crate::harness::report_json(&p.dir, &prof, &p.out);
    for s in crate::harness::sites(&report) {
        let f = s["mpi_function"].as_str().unwrap_or("");
        if is_completion(f) && s["calls_with_tmax"] != s["calls"] {
            assert!(
                s["tmax_missing"].as_array().is_some_and(|a| !a.is_empty()),
                "{} {f}: calls without tmax and no reason: {s:#}",
                s["location"]
            );
        }
    }
}
