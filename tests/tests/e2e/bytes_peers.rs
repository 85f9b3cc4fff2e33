//! Byte counts and peers that are easy to get wrong: derived datatypes,
//! `MPI_IN_PLACE`, `MPI_ANY_SOURCE` (with and without a status) and
//! point-to-point on a sub-communicator (peers must be world ranks).
//! One 4-rank run of `datatypes`, shared by the tests of this module.

use std::sync::OnceLock;

use mpiover_common::record::Entry;

use crate::harness::*;

const NP: u32 = 4;

fn run() -> &'static Profiled {
    static RUN: OnceLock<Result<Profiled, String>> = OnceLock::new();
    shared(&RUN, || profile("datatypes", NP, "datatypes", &[]))
}

/// The entries of `function` at the marker `tag` on `rank`, at least one.
fn at(rank: u32, function: &str, tag: &str) -> Vec<&'static Entry> {
    let p = run();
    let r = &p.records[rank as usize];
    let line = marker("datatypes.c", tag);
    let es = entries_at(r, function, "datatypes.c", line);
    assert!(
        !es.is_empty(),
        "rank {rank}: no {function} entry at datatypes.c:{line} ({tag})\n{}",
        dump_sites(r)
    );
    es
}

/// The one entry (one key) of `function` at `tag` on `rank`.
fn one(rank: u32, function: &str, tag: &str) -> &'static Entry {
    let es = at(rank, function, tag);
    assert_eq!(
        es.len(),
        1,
        "rank {rank}: {function} at {tag}: expected one key, got {es:#?}"
    );
    es[0]
}

#[test]
fn vector_datatype_bytes_are_type_size_not_extent() {
    // 3 elements of a vector of 16 blocks of 4 doubles: 3 * 16 * 4 * 8.
    let s = one(0, "MPI_Send", "datatypes-vector-send");
    assert_eq!(
        (s.bytes, s.peer, s.count),
        (1536, Some(1), 1),
        "rank 0 vector MPI_Send"
    );
    let r = one(1, "MPI_Recv", "datatypes-vector-recv");
    assert_eq!(
        (r.bytes, r.peer, r.count),
        (1536, Some(0), 1),
        "rank 1 vector MPI_Recv"
    );
}

#[test]
fn in_place_collectives_count_the_buffer() {
    for rank in 0..NP {
        let e = one(rank, "MPI_Allreduce", "datatypes-inplace-allreduce");
        assert_eq!(
            (e.bytes, e.p, e.count),
            (4000, NP, 1),
            "rank {rank}: MPI_IN_PLACE Allreduce"
        );
    }
    let root = one(0, "MPI_Reduce", "datatypes-inplace-reduce-root");
    assert_eq!(root.bytes, 4000, "root's MPI_IN_PLACE Reduce");
    assert_eq!(
        root.role.as_deref(),
        Some("root"),
        "role of the root's Reduce"
    );
    for rank in 1..NP {
        let e = one(rank, "MPI_Reduce", "datatypes-inplace-reduce-nonroot");
        assert_eq!(e.bytes, 4000, "rank {rank}: Reduce");
        assert_eq!(
            e.role.as_deref(),
            Some("nonroot"),
            "rank {rank}: role of the Reduce"
        );
    }
}

fn peers(es: &[&Entry]) -> Vec<Option<i32>> {
    let mut v = Vec::new();
    for e in es {
        for _ in 0..e.count {
            v.push(e.peer);
        }
    }
    v.sort();
    v
}

#[test]
fn any_source_receive_is_resolved_to_the_sender() {
    let want: Vec<Option<i32>> = (1..NP as i32).map(Some).collect();
    for tag in ["datatypes-any-recv-status", "datatypes-any-recv-ignore"] {
        let es = at(0, "MPI_Recv", tag);
        assert_eq!(
            peers(&es),
            want,
            "peers of the MPI_ANY_SOURCE receives at {tag}"
        );
        assert!(es.iter().all(|e| e.bytes == 32), "bytes at {tag}: {es:#?}");
    }
}

#[test]
fn sub_communicator_peers_are_world_ranks() {
    // split(color = rank % 2, key = -rank): world 2 -> world 0, world 3 -> world 1.
    for (sender, receiver) in [(2u32, 0u32), (3, 1)] {
        let s = one(sender, "MPI_Send", "datatypes-subcomm-send");
        assert_eq!(
            (s.peer, s.p, s.bytes),
            (Some(receiver as i32), 2, 20),
            "world rank {sender}: sub-communicator MPI_Send (peer, p, bytes)"
        );
        let r = one(receiver, "MPI_Recv", "datatypes-subcomm-recv");
        assert_eq!(
            (r.peer, r.p, r.bytes),
            (Some(sender as i32), 2, 20),
            "world rank {receiver}: sub-communicator MPI_Recv (peer, p, bytes)"
        );
        let r = one(receiver, "MPI_Recv", "datatypes-subcomm-recv-any");
        assert_eq!(
            (r.peer, r.bytes),
            (Some(sender as i32), 24),
            "world rank {receiver}: sub-communicator MPI_ANY_SOURCE MPI_Recv (peer, bytes)"
        );
    }
}
