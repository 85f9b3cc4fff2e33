//! The eager/rendezvous threshold, measured.
//!
//! A blocking `MPI_Send` of a small message returns as soon as the message
//! is handed to the library (eager protocol); above the library's eager
//! limit it returns only once the receiver has posted the matching receive
//! (rendezvous). Whether a send that waited indicates a Late Receiver depends
//! on which side of the limit it was, and the limit differs between
//! libraries, transports and settings, and what a library states is not
//! always what a send does (Open MPI 4.1's shared memory states a 4 KiB
//! eager limit, yet its sends above 256 bytes can wait for a late receiver;
//! its TCP transport states 64 KiB), so it is measured, not assumed.
//!
//! **Probe.** On a pair, the receiver sleeps `DELAY_S` before posting its
//! `MPI_Recv`; the sender times its `MPI_Send`. A rendezvous send cannot
//! return before the receive is posted, an eager one returns in
//! microseconds. Each size is probed `REPS` times and is eager when every
//! probe returned within `DELAY_S / 2`. Every probe, not any: between the
//! sizes that always go eagerly and those that always wait, libraries have
//! sizes that go eagerly only while a per-peer buffer has room (Open MPI's
//! shared-memory "fast boxes": from about 0.3 to 4 KiB, depending on where
//! the ring buffer stands), and a send of such a size can wait for its
//! receiver. The limit found is the largest size that never waited, so
//! every send above it can show a Late Receiver. Before the search the pair
//! exchanges `WARMUP` messages: libraries set up their fastest path only
//! after some traffic (Open MPI gives a peer its fast box after 16 sends).
//!
//! **Search.** Sizes double from 1 byte until a send waits (or the largest
//! size is reached: every size was eager), then the interval between the
//! last eager and the first waiting size is bisected to the byte: about
//! 2 log2(limit) probes of `REPS` x `DELAY_S` each: about half a second.

use std::ffi::c_void;
use std::time::Duration;

use mpiover_mpisys as ffi;
use mpiover_mpisys::consts as c;

use crate::mpi::{self, Comm};

/// How late the receiver is.
pub const DELAY_S: f64 = 0.003;
/// Probes per size.
pub const REPS: usize = 4;

/// The largest size `eager` says yes to, searched up to `max` as the module
/// docs say: 0 when even 1 byte waits, `max` when nothing waits. Returns it
/// and the number of sizes probed.
pub fn search(max: u64, mut eager: impl FnMut(u64) -> bool) -> (u64, u32) {
    let mut probes = 0;
    let mut lo = 0u64;
    let max = max.max(1);
    let mut b = 1u64;
    let hi = loop {
        probes += 1;
        if !eager(b) {
            break b;
        }
        lo = b;
        if b >= max {
            return (lo, probes);
        }
        b = b.saturating_mul(2).min(max);
    };
    let mut hi = hi;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        probes += 1;
        if eager(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, probes)
}

/// Exchanges before the search (ping-pongs of one byte, both ways).
const WARMUP: usize = 64;

/// One byte each way, to warm the pair up.
fn probe_once(comm: Comm, me: i32, tag: i32, buf: &mut [u8]) {
    let other = 1 - me;
    // The calls below move one byte in and out of `buf`.
    assert!(!buf.is_empty());
    // SAFETY: `buf` holds at least one byte (asserted), borrowed mutably for
    // the blocking calls; `comm` is a pair communicator, so `other` a rank.
    unsafe {
        let p = buf.as_mut_ptr() as *mut c_void;
        let comm = comm.as_raw();
        if me == 0 {
            ffi::PMPI_Send(p, 1, c::byte(), other, tag, comm);
            ffi::PMPI_Recv(p, 1, c::byte(), other, tag, comm, c::status_ignore());
        } else {
            ffi::PMPI_Recv(p, 1, c::byte(), other, tag, comm, c::status_ignore());
            ffi::PMPI_Send(p, 1, c::byte(), other, tag, comm);
        }
    }
}

/// Whether a `bytes` send is eager on the pair `comm` (ranks 0, sending,
/// and 1, receiving late); both ranks call it and get rank 0's answer.
fn probe(comm: Comm, me: i32, bytes: u64, buf: &mut [u8]) -> bool {
    let n = bytes.min(buf.len() as u64) as i32;
    let unit = mpiover_common::timer::unit_quick();
    let mut worst: f64 = 0.0;
    for _ in 0..REPS {
        mpi::barrier(comm);
        if me == 0 {
            let t0 = mpiover_common::timer::now();
            // SAFETY: `n` is at most `buf.len()` (clamped above); `comm` is a
            // pair communicator, so rank 1 exists.
            unsafe {
                ffi::PMPI_Send(
                    buf.as_ptr() as *const c_void,
                    n,
                    c::byte(),
                    1,
                    77,
                    comm.as_raw(),
                );
            }
            let t1 = mpiover_common::timer::now();
            worst = worst.max(t1.wrapping_sub(t0) as f64 * unit);
        } else {
            std::thread::sleep(Duration::from_secs_f64(DELAY_S));
            // SAFETY: as above.
            unsafe {
                ffi::PMPI_Recv(
                    buf.as_mut_ptr() as *mut c_void,
                    n,
                    c::byte(),
                    0,
                    77,
                    comm.as_raw(),
                    c::status_ignore(),
                );
            }
        }
    }
    let mut verdict = [u8::from(worst <= DELAY_S / 2.0)];
    mpi::bcast_bytes(&mut verdict, 0, comm);
    verdict[0] == 1
}

/// Searches the eager limit on the pair `comm` (both ranks call it) up to
/// `max` bytes; returns (largest eager size, sizes probed).
pub fn eager_limit(comm: Comm, max: u64) -> (u64, u32) {
    let me = mpi::rank(comm);
    let max = max.clamp(1, i32::MAX as u64);
    let mut buf = vec![1u8; max as usize];
    // Warm the pair up first: libraries set up their fastest path between
    // two ranks only after some traffic (Open MPI's shared memory gives a
    // peer its eager "fast box" after 16 sends), and an application's
    // steady state is what matters.
    for _ in 0..WARMUP {
        probe_once(comm, me, 1, &mut buf);
    }
    search(max, |b| probe(comm, me, b, &mut buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_limit_to_the_byte() {
        for limit in [0u64, 1, 2, 3, 4082, 4096, 65_535, 131_072] {
            let (got, probes) = search(4 << 20, |b| b <= limit);
            assert_eq!(got, limit);
            assert!(probes <= 2 * 23 + 2, "{limit}: {probes} probes");
        }
    }

    #[test]
    fn everything_eager_stops_at_the_largest_size() {
        assert_eq!(search(1000, |_| true).0, 1000);
        assert_eq!(search(1, |_| true).0, 1);
    }

    #[test]
    fn a_noisy_yes_above_the_limit_only_raises_it_to_a_size_that_said_yes() {
        // The search never reports a size that was not seen eager.
        let mut seen = Vec::new();
        let (got, _) = search(1 << 16, |b| {
            let e = b <= 4096 || b == 6144;
            if e {
                seen.push(b);
            }
            e
        });
        assert!(seen.contains(&got));
    }
}
