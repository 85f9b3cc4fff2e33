//! Where the time goes: the wait of each example lands on the line its marker
//! names, with the injected delay in it.

use crate::harness::*;

const ITERS: u32 = 10;
const DELAY_MS: u32 = 20;
/// Total nominal delay per waiting rank (the programs report what they
/// actually injected, which is what the times are compared with).
const NOMINAL_S: f64 = (ITERS * DELAY_MS) as f64 / 1e3;

/// The waiting rank's top site is `file:line` of `function`, holding the
/// `expected_s` within 10 %; returns its entries' total calls.
fn assert_top_site(
    p: &Profiled,
    rank: u32,
    function: &str,
    file: &str,
    line: u32,
    expected_s: f64,
) -> u64 {
    let r = &p.records[rank as usize];
    let context = format!("{}\n{}", dump_sites(r), p.out.dump());
    let top = sites_by_time(r);
    let (top_id, _) = *top
        .first()
        .unwrap_or_else(|| panic!("rank {rank} has no entries\n{context}"));
    let s = site(r, top_id).expect("top site exists");
    assert!(
        site_is(s, file, line),
        "rank {rank}: top site is {}, expected {file}:{line}\n{context}",
        describe_site(r, top_id)
    );
    let es = entries_at(r, function, file, line);
    assert!(
        !es.is_empty(),
        "rank {rank}: no {function} entry at {file}:{line}\n{context}"
    );
    let t: f64 = es.iter().map(|e| e.sum_s).sum();
    assert_close(
        &format!("rank {rank}: time of {function} at {file}:{line}"),
        t,
        expected_s,
        0.10,
        &context,
    );
    es.iter().map(|e| e.count).sum()
}

#[test]
fn late_sender_recv_is_top_site_with_injected_delay() {
    let it = ITERS.to_string();
    let d = DELAY_MS.to_string();
    let p = profile(
        "late_sender_recv_is_top_site_with_injected_delay",
        2,
        "late_sender",
        &[&it, &d],
    );
    let line = marker("late_sender.c", "late-sender-recv");
    let injected = injected_s(&p.out, "late_sender", 1);
    let calls = assert_top_site(&p, 0, "MPI_Recv", "late_sender.c", line, injected);
    assert_eq!(calls, u64::from(ITERS), "calls of the late-sender MPI_Recv");
    let r0 = &p.records[0];
    let e = entries_at(r0, "MPI_Recv", "late_sender.c", line)[0];
    assert_eq!(e.bytes, 8, "bytes of one MPI_Recv of one MPI_LONG");
    assert_eq!(e.peer, Some(1), "peer of the late-sender MPI_Recv");
    assert_eq!(e.p, 2, "communicator size");
    let s = site(r0, e.site).unwrap();
    assert_eq!(
        s.function.as_deref(),
        Some("main"),
        "enclosing function of {s:?}"
    );

    // The sender's sends are where they are, and quick.
    let r1 = &p.records[1];
    let sl = marker("late_sender.c", "late-sender-send");
    let sends = entries_at(r1, "MPI_Send", "late_sender.c", sl);
    assert_eq!(
        sends.iter().map(|e| e.count).sum::<u64>(),
        u64::from(ITERS),
        "rank 1: MPI_Send calls at late_sender.c:{sl}\n{}",
        dump_sites(r1)
    );
    let t: f64 = sends.iter().map(|e| e.sum_s).sum();
    assert!(
        t < 0.1 * NOMINAL_S,
        "rank 1: the sender's MPI_Send took {:.3} ms",
        t * 1e3
    );
}

/// Rendezvous size used by the test: 64 times Open MPI's shared-memory eager
/// limit (4 KiB), small enough that the copy itself stays well under the delay.
const RENDEZVOUS_BYTES: u64 = 256 << 10;

#[test]
fn late_receiver_rendezvous_send_is_top_site_with_injected_delay() {
    let it = ITERS.to_string();
    let d = DELAY_MS.to_string();
    let b = RENDEZVOUS_BYTES.to_string();
    let p = profile(
        "late_receiver_rendezvous_send_is_top_site_with_injected_delay",
        2,
        "late_receiver",
        &[&it, &d, &b],
    );
    let (r0, r1) = (&p.records[0], &p.records[1]);
    let context = format!("{}\n{}\n{}", dump_sites(r0), dump_sites(r1), p.out.dump());
    let line = marker("late_receiver.c", "late-receiver-send");
    let top = sites_by_time(r0).first().and_then(|(id, _)| site(r0, *id));
    assert!(
        top.is_some_and(|s| site_is(s, "late_receiver.c", line)),
        "rank 0: top site is not the MPI_Send at late_receiver.c:{line}\n{context}"
    );
    let sends = entries_at(r0, "MPI_Send", "late_receiver.c", line);
    assert_eq!(
        sends.iter().map(|e| e.count).sum::<u64>(),
        u64::from(ITERS),
        "MPI_Send calls"
    );
    for e in &sends {
        assert_eq!(
            (e.bytes, e.peer),
            (RENDEZVOUS_BYTES, Some(1)),
            "bytes and peer of the MPI_Send"
        );
    }
    let rl = marker("late_receiver.c", "late-receiver-recv");
    let recvs = entries_at(r1, "MPI_Recv", "late_receiver.c", rl);
    assert_eq!(
        recvs.iter().map(|e| e.count).sum::<u64>(),
        u64::from(ITERS),
        "MPI_Recv calls"
    );
    // A rendezvous send lasts from its start to the end of the transfer: the
    // receiver's lateness plus the protocol's round trips, which on this
    // oversubscribed 2-core machine cost up to a few ms per message whenever
    // a rank polling with sched_yield loses the CPU. So all of the injected
    // delay must be there (-10 %), plus at most half of it again.
    let injected = injected_s(&p.out, "late_receiver", 1);
    let t_send: f64 = sends.iter().map(|e| e.sum_s).sum();
    let t_recv: f64 = recvs.iter().map(|e| e.sum_s).sum();
    assert!(
        t_send >= 0.9 * injected && t_send <= 1.5 * injected,
        "rank 0: MPI_Send at late_receiver.c:{line} took {:.3} ms, the receiver injected {:.3} ms \
         (expected between -10 % and +50 %)\n{context}",
        t_send * 1e3,
        injected * 1e3
    );
    assert!(
        t_recv < 0.5 * t_send,
        "rank 1: the late receiver's MPI_Recv took {:.3} ms, the sender's MPI_Send {:.3} ms: \
         the wait should be on the sender\n{context}",
        t_recv * 1e3,
        t_send * 1e3
    );
}

#[test]
fn imbalanced_allreduce_waits_on_fast_ranks() {
    let it = ITERS.to_string();
    let d = DELAY_MS.to_string();
    let np = 3;
    let p = profile(
        "imbalanced_allreduce_waits_on_fast_ranks",
        np,
        "imbalanced_allreduce",
        &[&it, &d],
    );
    let line = marker("imbalanced_allreduce.c", "imbalanced-allreduce");
    for rank in 0..np - 1 {
        let expected = injected_s(&p.out, "imbalanced_allreduce", np - 1)
            - injected_s(&p.out, "imbalanced_allreduce", rank);
        let calls = assert_top_site(
            &p,
            rank,
            "MPI_Allreduce",
            "imbalanced_allreduce.c",
            line,
            expected,
        );
        assert_eq!(calls, u64::from(ITERS));
        let e = entries_at(
            &p.records[rank as usize],
            "MPI_Allreduce",
            "imbalanced_allreduce.c",
            line,
        )[0];
        assert_eq!(
            (e.p, e.bytes, e.peer),
            (np, 8, None),
            "p, bytes, peer of the Allreduce"
        );
    }
    let slow = &p.records[(np - 1) as usize];
    let t: f64 = entries_at(slow, "MPI_Allreduce", "imbalanced_allreduce.c", line)
        .iter()
        .map(|e| e.sum_s)
        .sum();
    assert!(
        t < 0.25 * NOMINAL_S,
        "the slow rank waited {:.3} ms in MPI_Allreduce\n{}",
        t * 1e3,
        dump_sites(slow)
    );
}

/// (sends, receives) sites of the wavefront's point-to-point entries, as lines
/// in wavefront.c, over all ranks; panics on a site in another file.
fn wavefront_lines(p: &Profiled) -> (Vec<u32>, Vec<u32>, u64, u64) {
    let (mut sends, mut recvs, mut nsend, mut nrecv) = (Vec::new(), Vec::new(), 0, 0);
    for r in &p.records {
        for e in &r.entries {
            let (lines, n) = match e.function.as_str() {
                "MPI_Send" => (&mut sends, &mut nsend),
                "MPI_Recv" => (&mut recvs, &mut nrecv),
                _ => continue,
            };
            *n += e.count;
            assert_eq!(e.bytes, 32 * 8, "bytes of a wavefront block");
            let s = site(r, e.site).unwrap_or_else(|| panic!("rank {}: site {}", r.rank, e.site));
            let line = s.line.unwrap_or_else(|| {
                panic!("rank {}: {} site without a line: {s:?}", r.rank, e.function)
            });
            assert!(
                s.file.as_deref().is_some_and(|f| file_is(f, "wavefront.c")),
                "rank {}: {} attributed to {}\n{}",
                r.rank,
                e.function,
                describe_site(r, e.site),
                dump_sites(r)
            );
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    sends.sort();
    recvs.sort();
    (sends, recvs, nsend, nrecv)
}

/// 2x2 grid, 4 directions, 6 blocks: every rank sends 2 blocks per block in
/// the 1 direction it is the upstream corner of, 1 in the 2 edge directions.
const WAVEFRONT_MESSAGES: u64 = 96;

#[test]
fn wavefront_depth1_attributes_to_helper_lines() {
    let p = profile(
        "wavefront_depth1_attributes_to_helper_lines",
        4,
        "wavefront",
        &[],
    );
    assert!(p.out.stdout.contains("messages 96/96"), "{}", p.out.dump());
    let (sends, recvs, ns, nr) = wavefront_lines(&p);
    assert_eq!(
        sends,
        vec![marker("wavefront.c", "wavefront-send-helper")],
        "send sites"
    );
    assert_eq!(
        recvs,
        vec![marker("wavefront.c", "wavefront-recv-helper")],
        "recv sites"
    );
    assert_eq!(
        (ns, nr),
        (WAVEFRONT_MESSAGES, WAVEFRONT_MESSAGES),
        "message counts"
    );
    for r in &p.records {
        assert_eq!(r.tool.depth, 1, "rank {}: tool.depth", r.rank);
    }
}

#[test]
fn wavefront_depth2_attributes_to_callers_of_helpers() {
    let p = profile_env(
        "wavefront_depth2_attributes_to_callers_of_helpers",
        4,
        "wavefront",
        &[],
        &[("MPIOVER_DEPTH", "2")],
    );
    let (sends, recvs, ns, nr) = wavefront_lines(&p);
    let mut want_sends = vec![
        marker("wavefront.c", "wavefront-send-x"),
        marker("wavefront.c", "wavefront-send-y"),
    ];
    let mut want_recvs = vec![
        marker("wavefront.c", "wavefront-recv-x"),
        marker("wavefront.c", "wavefront-recv-y"),
    ];
    want_sends.sort();
    want_recvs.sort();
    assert_eq!(
        sends, want_sends,
        "send sites at depth 2 (callers of send_block)"
    );
    assert_eq!(
        recvs, want_recvs,
        "recv sites at depth 2 (callers of recv_block)"
    );
    assert_eq!(
        (ns, nr),
        (WAVEFRONT_MESSAGES, WAVEFRONT_MESSAGES),
        "message counts"
    );
    for r in &p.records {
        assert_eq!(r.tool.depth, 2, "rank {}: tool.depth", r.rank);
        for e in r
            .entries
            .iter()
            .filter(|e| e.function == "MPI_Send" || e.function == "MPI_Recv")
        {
            let f = site(r, e.site).and_then(|s| s.function.clone());
            assert!(
                f.as_deref().is_some_and(|f| f.starts_with("sweep")),
                "rank {}: {} at depth 2 is in function {f:?}, expected sweep",
                r.rank,
                e.function
            );
        }
    }
}
