//! `MPI_Pcontrol`: level 0 stops recording, 1 resumes, 2
//! forgets what was recorded. What happens in a level-0 region is absent
//! from the record, calls and entries alike; the program runs unchanged.

use mpiover_common::record::Record;

use crate::harness::*;

const FILE: &str = "pcontrol.c";

fn m(tag: &str) -> u32 {
    marker_any(&format!("pcontrol/{FILE}"), tag)
}

fn calls(r: &Record, function: &str) -> u64 {
    r.functions
        .iter()
        .find(|f| f.function == function)
        .map(|f| f.calls)
        .unwrap_or(0)
}

#[test]
fn pcontrol_zero_regions_are_absent_and_two_forgets() {
    let prog = example_in("pcontrol", "pcontrol");
    let dir = scratch("pcontrol_plain");
    let plain = Job::program(3, &prog, &["5"], &dir).run();
    plain.assert_success();
    let p = profile_program("pcontrol", 3, &prog, &["5"], &[]);
    assert_eq!(p.out.stdout, plain.stdout);
    for r in &p.records {
        let ctx = dump_sites(r);
        for (function, tag) in [
            ("MPI_Sendrecv", "pc-forgotten-sendrecv"),
            ("MPI_Barrier", "pc-forgotten-barrier"),
            ("MPI_Sendrecv", "pc-hidden-sendrecv"),
            ("MPI_Irecv", "pc-hidden-irecv"),
            ("MPI_Barrier", "pc-hidden-barrier"),
        ] {
            assert!(
                entries_at(r, function, FILE, m(tag)).is_empty(),
                "rank {}: {function} at {tag} must not be recorded\n{ctx}",
                r.rank
            );
        }
        for (tag, n) in [("pc-visible-sendrecv", 5), ("pc-again-sendrecv", 5)] {
            let c: u64 = entries_at(r, "MPI_Sendrecv", FILE, m(tag))
                .iter()
                .map(|e| e.count)
                .sum();
            assert_eq!(c, n, "rank {}: {tag}\n{ctx}", r.rank);
        }
        for tag in ["pc-visible-barrier", "pc-again-barrier"] {
            assert_eq!(entries_at(r, "MPI_Barrier", FILE, m(tag)).len(), 1, "{tag}");
        }
        // Calls are counted only while recording: the visible and the again
        // phase (the forgotten one is forgotten, MPI_Init with it).
        for (f, n) in [
            ("MPI_Sendrecv", 10),
            ("MPI_Barrier", 2),
            ("MPI_Irecv", 0),
            ("MPI_Send", 1),
            ("MPI_Wait", 1),
            ("MPI_Pcontrol", 2),
            ("MPI_Init", 0),
            ("MPI_Finalize", 1),
        ] {
            assert_eq!(calls(r, f), n, "rank {}: calls of {f}\n{ctx}", r.rank);
        }
        // A request posted while paused: its completion is recorded, without
        // a posting call or site.
        let w = entries_at(r, "MPI_Wait", FILE, m("pc-again-wait"));
        assert_eq!(w.len(), 1, "{ctx}");
        assert_eq!((w[0].completes.as_deref(), w[0].post_site), (None, None));
    }
}
