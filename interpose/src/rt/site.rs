//! Call-site capture: the return address of the wrapped call, or the first
//! frame outside an MPI library's Fortran bindings.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};

use crate::site_ref::SiteRef;
use crate::site_ways::{site_way, WAY_BINDING, WAY_DEPTH};

use super::guard::Guard;
use super::state::{DEPTH, SELF_HI, SELF_LO};

/// Address ranges of an MPI library's Fortran bindings that call the C
/// `MPI_*` functions (MPICH's libmpichfort): a C wrapper called from there
/// serves a Fortran call, whose site is the first frame outside them.
pub(crate) const MAX_BINDINGS: usize = 4;
pub(crate) static BINDINGS: [(AtomicUsize, AtomicUsize); MAX_BINDINGS] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_BINDINGS];
pub(crate) static ANY_BINDING: AtomicBool = AtomicBool::new(false);

/// `MPIOVER_DEPTH` (at init).
pub fn set_depth(depth: u32) {
    DEPTH.store(depth, Relaxed);
    site_way(WAY_DEPTH, depth > 1);
}

/// Registers a Fortran binding library's address range (at init).
pub fn add_binding(lo: usize, hi: usize) {
    for (l, h) in &BINDINGS {
        if l.load(Relaxed) == 0 {
            l.store(lo, Relaxed);
            h.store(hi, Relaxed);
            ANY_BINDING.store(true, Relaxed);
            site_way(WAY_BINDING, true);
            return;
        }
    }
}

#[inline(always)]
pub(crate) fn in_binding(ip: usize) -> bool {
    if !ANY_BINDING.load(Relaxed) {
        return false;
    }
    BINDINGS
        .iter()
        .any(|(l, h)| ip >= l.load(Relaxed) && ip < h.load(Relaxed))
}

/// The call site for a return address `ra` of a wrapper: `ra` itself at
/// depth 1 unless it lies in a Fortran binding library, else found by
/// unwinding.
#[inline(always)]
pub fn site_of(ra: usize) -> SiteRef {
    let depth = DEPTH.load(Relaxed);
    if depth <= 1 && !in_binding(ra) {
        SiteRef::native(ra)
    } else {
        SiteRef::native(unwound_site(depth))
    }
}

impl Guard {
    /// The call site of this call, whose wrapper's return address is `ra`:
    /// a Python line when the call came from Python through mpi4py (and
    /// Python sites are on), else [`site_of`]. A wrapper finds it once and
    /// passes it to the event, the post and the completions. Inlined: one
    /// load and a branch when none of `SITE_WAYS` is on.
    #[inline(always)]
    pub fn site(&mut self, ra: usize) -> SiteRef {
        if !crate::site_ways::any() {
            SiteRef::native(ra)
        } else {
            self.site_other_ways(ra)
        }
    }

    #[inline(never)]
    fn site_other_ways(&mut self, ra: usize) -> SiteRef {
        if crate::py::ON.load(Relaxed) {
            self.python_site(ra)
        } else {
            site_of(ra)
        }
    }

    #[inline(never)]
    fn python_site(&mut self, ra: usize) -> SiteRef {
        if crate::py::in_mpi4py(ra) {
            let depth = DEPTH.load(Relaxed);
            if let Ok(s) = crate::py::site(&mut self.ts().py, ra, depth) {
                // Counted here rather than by the event, off the common
                // path: every wrapper records the event of the site it
                // found (or takes the count back, `record::disabled`).
                if s.is_python() {
                    self.ts().py_calls += 1;
                }
                return s;
            }
        }
        site_of(ra)
    }
}

/// The `n`-th frame outside libmpiover and the Fortran binding libraries
/// (1 = the direct caller of MPI).
#[inline(never)]
pub fn unwound_site(n: u32) -> usize {
    let (lo, hi) = (SELF_LO.load(Relaxed), SELF_HI.load(Relaxed));
    let mut seen = 0u32;
    let mut found = 0usize;
    // SAFETY: unwinding our own stack; the callback neither panics nor allocates.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            let ip = frame.ip() as usize;
            if (ip >= lo && ip < hi) || in_binding(ip) {
                return true;
            }
            seen += 1;
            if seen >= n {
                found = ip;
                return false;
            }
            true
        });
    }
    found
}

/// The wrapper's return address, through the frame pointer.
/// Must be expanded inside the `extern "C"` wrapper itself, after its PMPI
/// call (the frame is certainly set up there).
#[cfg(all(target_arch = "x86_64", mpiover_fp))]
#[macro_export]
macro_rules! caller {
    () => {{
        let ra: usize;
        // The block stands alone whether or not the wrapper's body is itself
        // an unsafe block (generated wrappers' are).
        #[allow(unused_unsafe)]
        // SAFETY: with frame pointers forced (build.rs checks), rbp points at
        // the saved rbp of this frame and the return address sits above it:
        // read in one instruction.
        unsafe {
            core::arch::asm!(
                "mov {}, qword ptr [rbp + 8]",
                out(reg) ra,
                options(readonly, nostack, preserves_flags)
            );
        }
        ra
    }};
}

/// Without frame pointers the first frame outside libmpiover is found by
/// unwinding (slow, but never wrong).
#[cfg(not(all(target_arch = "x86_64", mpiover_fp)))]
#[macro_export]
macro_rules! caller {
    () => {
        $crate::rt::unwound_site(1)
    };
}
