//! MPI-4 large-count calls (`MPI_Send_c`, `MPI_Recv_c`, ...). MPICH 4 has
//! them and mpi4py built against MPICH makes every message through them;
//! before they were events, such a program's sends and receives were counted
//! but had no site, bytes or peer, and its wait never showed. They are
//! recorded as their base function (same semantics, same wait states and
//! profile entries); the per-function counts keep the name called. Under Open
//! MPI 4.1 (no MPI-4) the example uses the int versions, so the same checks
//! hold there too.

use crate::harness::*;

#[test]
fn large_count_calls_are_events_of_their_base_function() {
    let p = profile("large_count", 2, "large_count", &["10", "20"]);
    let mpi4 = p.out.stdout.contains("mpi4 1");
    if mpi_flavor() == "mpich" {
        assert!(mpi4, "MPICH 4 has the large-count calls\n{}", p.out.dump());
    }
    let suffix = if mpi4 { "_c" } else { "" };
    let r0 = p.records.iter().find(|r| r.rank == 0).expect("rank 0");
    let r1 = p.records.iter().find(|r| r.rank == 1).expect("rank 1");
    let ctx = format!("{}\n{}\n{}", dump_sites(r0), dump_sites(r1), p.out.dump());

    let calls = |r: &mpiover_common::record::Record, f: &str| {
        r.functions
            .iter()
            .find(|t| t.function == f)
            .map_or(0, |t| t.calls)
    };
    assert_eq!(calls(r0, &format!("MPI_Recv{suffix}")), 10, "{ctx}");
    assert_eq!(calls(r1, &format!("MPI_Send{suffix}")), 10, "{ctx}");

    // The late sender's wait, at the receive's line, as MPI_Recv.
    let line = marker("large_count.c", "large-count-recv");
    let recv = entries_at(r0, "MPI_Recv", "large_count.c", line);
    assert_eq!(recv.iter().map(|e| e.count).sum::<u64>(), 10, "{ctx}");
    assert!(
        recv.iter()
            .all(|e| e.bytes == 8000 && e.peer == Some(1) && e.p == 2),
        "1000 doubles from rank 1: {recv:?}\n{ctx}"
    );
    let t: f64 = recv.iter().map(|e| e.sum_s).sum();
    assert_close(
        "time in the large-count receive",
        t,
        injected_s(&p.out, "large_count", 1),
        0.10,
        &ctx,
    );
    let line = marker("large_count.c", "large-count-send");
    let send = entries_at(r1, "MPI_Send", "large_count.c", line);
    assert!(
        send.iter().map(|e| e.count).sum::<u64>() == 10
            && send.iter().all(|e| e.bytes == 8000 && e.peer == Some(0)),
        "{send:?}\n{ctx}"
    );

    // A collective: 100 ints on every rank.
    let line = marker("large_count.c", "large-count-allreduce");
    for r in [r0, r1] {
        let a = entries_at(r, "MPI_Allreduce", "large_count.c", line);
        assert!(
            a.len() == 1 && a[0].bytes == 400 && a[0].count == 1,
            "rank {}: {a:?}\n{ctx}",
            r.rank
        );
    }

    // The request map knows what a large-count post was.
    let wait = marker("large_count.c", "large-count-wait");
    let irecv = marker("large_count.c", "large-count-irecv");
    let w = entries_at(r0, "MPI_Wait", "large_count.c", wait);
    assert!(
        w.len() == 1
            && w[0].completes.as_deref() == Some("MPI_Irecv")
            && w[0].bytes == 8000
            && w[0].peer == Some(1)
            && w[0]
                .post_site
                .and_then(|s| site(r0, s))
                .is_some_and(|s| site_is(s, "large_count.c", irecv)),
        "the Wait completes the Irecv posted at large_count.c:{irecv}: {w:?}\n{ctx}"
    );
}
