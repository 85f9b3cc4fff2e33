//! The wrappers' clock reads: the shared timer's (`mpiover_common::timer`,
//! the clock `mpiover-calibrate` measures with), with its choice of clock
//! kept in the state word the wrapper has just tested.

use std::sync::atomic::Ordering::Relaxed;

use super::guard::Guard;
use super::state::{CLOCK_TSC, STATE};

/// Records the timer's choice (at init, once the timer is set up and
/// before recording starts).
pub(crate) fn set_clock() {
    if crate::timer::name() == "rdtsc" {
        STATE.fetch_or(CLOCK_TSC, Relaxed);
    }
}

impl Guard {
    /// `timer::now()`: one test of the state word `enter` read and `rdtsc`
    /// inline; the other clock out of line (the TSC is the clock of most
    /// runs).
    #[inline(always)]
    pub fn now(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            if self.st & CLOCK_TSC != 0 {
                // SAFETY: rdtsc has no preconditions on x86_64.
                return unsafe { core::arch::x86_64::_rdtsc() };
            }
        }
        other_clock()
    }
}

#[cold]
#[inline(never)]
fn other_clock() -> u64 {
    crate::timer::now()
}
