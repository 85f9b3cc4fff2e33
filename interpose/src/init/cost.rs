//! The interposer's own cost per call, measured at start-up and stated in
//! the report's tool cost.

use std::os::raw::c_int;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::run::debug;
use crate::timer;

/// Added time per call of the wrapped path: a one-`int` `MPI_Allreduce` on
/// `MPI_COMM_SELF` (an event, and a call that does not run the progress
/// engine, whose time varies by microseconds with the other ranks' traffic)
/// through the wrapper vs `PMPI_Allreduce`. Seven repetitions of eleven
/// alternating pairs of batches; in each repetition the fastest batch of
/// either kind is taken (noise only ever adds time) and their difference is
/// the repetition's estimate; the result is the median of the repetitions,
/// never below two timer reads (the wrapper reads the timer twice).
pub(crate) fn measure_cost(timer_cost_s: f64) -> f64 {
    const BATCH: u64 = 100;
    const PAIRS: usize = 11;
    const REPS: usize = 7;
    let (a, mut b): (c_int, c_int) = (1, 0);
    let sb = &a as *const c_int as *const libc::c_void;
    let rb = &mut b as *mut c_int as *mut libc::c_void;
    let (ty, op, comm) = (consts::int(), consts::op_sum(), consts::comm_self());
    let mut est = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let (mut direct, mut wrapped) = (u64::MAX, u64::MAX);
        for _ in 0..PAIRS {
            let t0 = timer::mono_ns();
            for _ in 0..BATCH {
                // SAFETY: valid buffers of one int each.
                unsafe { PMPI_Allreduce(sb, rb, 1, ty, op, comm) };
            }
            let t1 = timer::mono_ns();
            for _ in 0..BATCH {
                // SAFETY: as above; goes through the generated wrapper.
                unsafe { crate::wrappers::MPI_Allreduce(sb, rb, 1, ty, op, comm) };
            }
            let t2 = timer::mono_ns();
            direct = direct.min(t1.wrapping_sub(t0));
            wrapped = wrapped.min(t2.wrapping_sub(t1));
        }
        est.push((wrapped as f64 - direct as f64) / BATCH as f64 * 1e-9);
        if debug() {
            eprintln!(
                "mpiover: debug: cost batch minima: direct {:.1} ns, wrapped {:.1} ns",
                direct as f64 / BATCH as f64,
                wrapped as f64 / BATCH as f64
            );
        }
    }
    est.sort_by(|a, b| a.total_cmp(b));
    let median = est.get(est.len() / 2).copied().unwrap_or(0.0);
    let floor = 2.0 * timer_cost_s;
    if median.is_finite() {
        median.max(floor)
    } else {
        floor
    }
}

// ---------------------------------------------------------------------------
// Exit and signals
// ---------------------------------------------------------------------------
