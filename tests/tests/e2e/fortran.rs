//! Fortran programs: Open MPI's `mpif.h`, `use mpi` and `use
//! mpi_f08` bindings call `PMPI_*` directly, so only the tool's Fortran
//! wrappers see them. Every call must be seen exactly once, with its C name,
//! the right bytes and peers, and the `.f90` line that made it.

use std::collections::BTreeSet;

use mpiover_common::record::{Entry, Record};

use crate::harness::*;

const FLAVOURS: [&str; 3] = ["f77", "mpi", "f08"];

fn calls(r: &Record, function: &str) -> u64 {
    r.functions
        .iter()
        .find(|f| f.function == function)
        .map(|f| f.calls)
        .unwrap_or(0)
}

fn of<'a>(r: &'a Record, function: &str) -> Vec<&'a Entry> {
    r.entries
        .iter()
        .filter(|e| e.function == function)
        .collect()
}

/// World ranks next to `rank` on the 2 x 2 grid of 4 ranks.
fn neighbours(rank: u32) -> BTreeSet<i32> {
    let (x, y) = (rank % 2, rank / 2);
    [((1 - x) + 2 * y) as i32, (x + 2 * (1 - y)) as i32]
        .into_iter()
        .collect()
}

/// The wavefront of one flavour on 4 ranks (2 x 2): the same output as
/// without the tool, and per rank 24 sends and 24 receives of 256 bytes,
/// all at the helper lines of `comm_<flavour>.f90`, each counted once.
fn wavefront_at_helpers(flavour: &str) {
    let prog = example_in("fortran", &format!("wavefront_{flavour}"));
    let dir = scratch(&format!("fortran_wavefront_{flavour}_plain"));
    let plain = Job::program(4, &prog, &[], &dir).run();
    plain.assert_success();
    let p = profile_program(&format!("fortran_wavefront_{flavour}"), 4, &prog, &[], &[]);
    assert_eq!(p.out.stdout, plain.stdout, "stdout changed with the tool");
    assert!(p.out.stdout.contains("messages 96/96"), "{}", p.out.dump());
    let file = format!("comm_{flavour}.f90");
    let send_line = marker_any(
        &format!("fortran/{file}"),
        &format!("{flavour}-send-helper"),
    );
    let recv_line = marker_any(
        &format!("fortran/{file}"),
        &format!("{flavour}-recv-helper"),
    );
    for r in &p.records {
        let ctx = dump_sites(r);
        assert_eq!(r.thread_level, "single");
        for (f, n) in [
            ("MPI_Init", 1),
            ("MPI_Finalize", 1),
            ("MPI_Comm_rank", 1),
            ("MPI_Comm_size", 1),
            ("MPI_Dims_create", 1),
            ("MPI_Barrier", 1),
            ("MPI_Reduce", 1),
            ("MPI_Send", 24),
            ("MPI_Recv", 24),
        ] {
            assert_eq!(calls(r, f), n, "rank {}: calls of {f}\n{ctx}", r.rank);
        }
        for (function, line) in [("MPI_Send", send_line), ("MPI_Recv", recv_line)] {
            let all = of(r, function);
            let at = entries_at(r, function, &file, line);
            assert_eq!(
                at.len(),
                all.len(),
                "rank {}: every {function} at {file}:{line}\n{ctx}",
                r.rank
            );
            let n: u64 = at.iter().map(|e| e.count).sum();
            assert_eq!(n, 24, "rank {}: {function} at {file}:{line}\n{ctx}", r.rank);
            for e in at {
                assert_eq!((e.bytes, e.p), (256, 4), "rank {}: {e:?}", r.rank);
                let peer = e.peer.expect("a peer");
                assert!(
                    neighbours(r.rank).contains(&peer),
                    "rank {}: peer {peer} is not a neighbour",
                    r.rank
                );
            }
        }
        let red = of(r, "MPI_Reduce");
        assert_eq!(red.len(), 1);
        assert_eq!(red[0].bytes, 24, "3 integer(8)");
        let role = if r.rank == 0 { "root" } else { "nonroot" };
        assert_eq!(red[0].role.as_deref(), Some(role));
    }
}

#[test]
fn fortran_mpif_h_wavefront_calls_seen_once_at_helper_lines() {
    wavefront_at_helpers("f77");
}

#[test]
fn fortran_use_mpi_wavefront_calls_seen_once_at_helper_lines() {
    wavefront_at_helpers("mpi");
}

#[test]
fn fortran_mpi_f08_wavefront_calls_seen_once_at_helper_lines() {
    wavefront_at_helpers("f08");
}

/// With `MPIOVER_DEPTH=2` the sites are the helpers' callers: the four call
/// lines in wavefront.f90 (as for Sweep3D, whose messages all go through two
/// helper lines).
#[test]
fn fortran_wavefront_depth2_shows_the_helpers_callers() {
    let lines = [
        "fwave-recv-x",
        "fwave-recv-y",
        "fwave-send-x",
        "fwave-send-y",
    ]
    .map(|t| marker_any("fortran/wavefront.f90", t));
    for flavour in FLAVOURS {
        let prog = example_in("fortran", &format!("wavefront_{flavour}"));
        let p = profile_program(
            &format!("fortran_wavefront_depth2_{flavour}"),
            4,
            &prog,
            &[],
            &[("MPIOVER_DEPTH", "2")],
        );
        let mut seen = BTreeSet::new();
        for r in &p.records {
            assert_eq!(r.tool.depth, 2);
            let ctx = dump_sites(r);
            for (function, pair) in [("MPI_Recv", [0, 1]), ("MPI_Send", [2, 3])] {
                let mut n = 0;
                for e in of(r, function) {
                    let s = site(r, e.site).expect("site");
                    let at = pair
                        .iter()
                        .find(|&&k| site_is(s, "wavefront.f90", lines[k]))
                        .unwrap_or_else(|| {
                            panic!(
                                "{flavour} rank {}: {function} at {}, not at a caller line\n{ctx}",
                                r.rank,
                                describe_site(r, e.site)
                            )
                        });
                    seen.insert(*at);
                    n += e.count;
                }
                assert_eq!(n, 24, "{flavour} rank {}: {function}\n{ctx}", r.rank);
            }
        }
        assert_eq!(
            seen.len(),
            4,
            "{flavour}: all four caller lines appear on some rank"
        );
    }
}

fn one<'a>(r: &'a Record, function: &str, tag: &str) -> &'a Entry {
    let line = marker_any("fortran/events.F90", tag);
    let es = entries_at(r, function, "events.F90", line);
    assert_eq!(
        es.len(),
        1,
        "rank {}: {function} at events.F90:{line} ({tag})\n{}",
        r.rank,
        dump_sites(r)
    );
    es[0]
}

fn post_line(r: &Record, e: &Entry) -> Option<u32> {
    e.post_site.and_then(|s| site(r, s)).and_then(|s| s.line)
}

/// Non-blocking calls, `MPI_ANY_SOURCE` with the status ignored, `Waitany`
/// (Fortran indices count from 1), `MPI_IN_PLACE`, rooted collectives and an
/// `MPI_Pcontrol(0)` region, through mpif.h and through mpi_f08.
#[test]
fn fortran_events_have_right_bytes_peers_and_request_links() {
    let m = |t| marker_any("fortran/events.F90", t);
    for binding in ["f77", "f08"] {
        let prog = example_in("fortran", &format!("events_{binding}"));
        let p = profile_program(&format!("fortran_events_{binding}"), 2, &prog, &[], &[]);
        let (r0, r1) = (&p.records[0], &p.records[1]);
        let who = format!("events_{binding}");

        // Rank 0 sends.
        for (tag, n) in [("ev-isend", 40), ("ev-isend2", 40)] {
            let e = one(r0, "MPI_Isend", tag);
            assert_eq!((e.bytes, e.peer, e.count), (n, Some(1), 1), "{who}: {tag}");
        }
        assert_eq!(one(r0, "MPI_Send", "ev-send16").bytes, 16, "{who}");
        let sends: Vec<u64> = {
            let mut v: Vec<u64> = of(r0, "MPI_Send").iter().map(|e| e.bytes).collect();
            v.sort();
            v
        };
        assert_eq!(sends, [8, 12, 16, 24], "{who}: rank 0 sends");
        assert_eq!(calls(r0, "MPI_Send"), 4, "{who}");
        assert_eq!(calls(r0, "MPI_Isend"), 2, "{who}");

        // Rank 1: two receives completed by one Waitall(STATUSES_IGNORE).
        let w = one(r1, "MPI_Waitall", "ev-waitall");
        assert_eq!((w.bytes, w.peer), (80, Some(0)), "{who}: waitall");
        for tag in ["ev-irecv", "ev-irecv2"] {
            let e = one(r1, "MPI_Irecv", tag);
            assert_eq!((e.bytes, e.peer), (40, None), "{who}: {tag} (ANY_SOURCE)");
        }
        // Irecv(ANY_SOURCE) + Wait(STATUS_IGNORE): the wait knows it all.
        let w = one(r1, "MPI_Wait", "ev-wait16");
        assert_eq!(
            (w.bytes, w.peer, w.completes.as_deref()),
            (16, Some(0), Some("MPI_Irecv")),
            "{who}: wait"
        );
        assert_eq!(post_line(r1, w), Some(m("ev-irecv16")), "{who}: post site");
        // Waitany: each completion names its own Irecv.
        let wl = m("ev-waitany");
        let mut any: Vec<(u64, Option<u32>)> = entries_at(r1, "MPI_Waitany", "events.F90", wl)
            .iter()
            .map(|e| {
                assert_eq!(e.completes.as_deref(), Some("MPI_Irecv"), "{who}: {e:?}");
                assert_eq!(e.peer, Some(0));
                (e.bytes, post_line(r1, e))
            })
            .collect();
        any.sort();
        assert_eq!(
            any,
            [
                (8, Some(m("ev-irecv-any1"))),
                (12, Some(m("ev-irecv-any2")))
            ],
            "{who}: waitany\n{}",
            dump_sites(r1)
        );
        assert_eq!(calls(r1, "MPI_Waitany"), 2);
        assert_eq!(calls(r1, "MPI_Irecv"), 5);
        let rv = one(r1, "MPI_Recv", "ev-recv-any");
        assert_eq!((rv.bytes, rv.peer), (24, Some(0)), "{who}: what arrived");

        // Collectives.
        for (r, role, gathered) in [(r0, "root", 16), (r1, "nonroot", 8)] {
            let b = one(r, "MPI_Bcast", "ev-bcast");
            assert_eq!((b.bytes, b.role.as_deref(), b.p), (80, Some(role), 2));
            assert_eq!(
                one(r, "MPI_Allreduce", "ev-allreduce").bytes,
                20,
                "in place"
            );
            let g = one(r, "MPI_Gather", "ev-gather");
            assert_eq!((g.bytes, g.role.as_deref()), (gathered, Some(role)));
            let tag = if role == "root" {
                "ev-gather-ip"
            } else {
                "ev-gather-ip-nonroot"
            };
            let g = one(r, "MPI_Gather", tag);
            assert_eq!(
                (g.bytes, g.role.as_deref()),
                (gathered, Some(role)),
                "{who}: {tag}: MPI_IN_PLACE at the root"
            );
            // MPI_Pcontrol(0) hides the first barrier.
            let hidden = entries_at(r, "MPI_Barrier", "events.F90", m("ev-hidden"));
            assert!(hidden.is_empty(), "{who}: {hidden:?}");
            assert_eq!(one(r, "MPI_Barrier", "ev-barrier").count, 1);
            assert_eq!(calls(r, "MPI_Barrier"), 1, "{who}");
            assert_eq!(calls(r, "MPI_Pcontrol"), 2, "{who}");
            assert_eq!((calls(r, "MPI_Init"), calls(r, "MPI_Finalize")), (1, 1));
        }
    }
}
