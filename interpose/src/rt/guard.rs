//! The per-thread re-entry guard: a hook records only when MPI was entered
//! from outside the tool, and a thread whose state is gone simply forwards.

use std::cell::Cell;
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::Ordering::*;

use super::*;

pub(crate) struct Tls {
    pub(crate) busy: Cell<bool>,
    pub(crate) ts: Cell<*mut ThreadState>,
}

thread_local! {
    // Const-initialized, no destructor: never in a "destroyed" state, no lazy
    // registration on the hot path.
    static TLS: Tls = const { Tls { busy: Cell::new(false), ts: Cell::new(null_mut()) } };
}

/// Proof that this thread is inside a wrapper and may record. Dropping it
/// leaves the tool.
pub struct Guard {
    pub(crate) ts: NonNull<ThreadState>,
    pub(crate) busy: *const Cell<bool>,
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the TLS cell lives as long as the thread (no destructor).
        unsafe { (*self.busy).set(false) }
    }
}

/// Enters the tool: `None` when recording is off, or when this thread is
/// already inside the tool (MPI calling MPI, the tool calling PMPI), or when
/// the thread's state cannot be had. Then the wrapper just forwards.
#[inline(always)]
pub fn enter() -> Option<Guard> {
    let st = STATE.load(Relaxed);
    if st & ENABLED == 0 {
        return None;
    }
    TLS.try_with(|t| {
        if t.busy.get() {
            return None;
        }
        let mut ts = t.ts.get();
        if ts.is_null() {
            ts = ThreadState::create();
            if ts.is_null() {
                return None;
            }
            t.ts.set(ts);
        }
        t.busy.set(true);
        // SAFETY: ts is non-null, owned by this thread.
        let ts = unsafe { NonNull::new_unchecked(ts) };
        let g = Guard {
            ts,
            busy: &t.busy as *const Cell<bool>,
        };
        // SAFETY: as above.
        unsafe {
            if (*ts.as_ptr()).seen != st {
                (*ts.as_ptr()).sync(st);
            }
        }
        Some(g)
    })
    .ok()
    .flatten()
}

/// Marks this thread as inside the tool without a state (hand-written hooks
/// that call PMPI functions which might come back through wrappers).
pub struct Busy {
    pub(crate) was: bool,
}

pub fn busy() -> Busy {
    let was = TLS.try_with(|t| t.busy.replace(true)).unwrap_or(true);
    Busy { was }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let was = self.was;
        let _ = TLS.try_with(|t| t.busy.set(was));
    }
}

/// Whether this thread is inside the tool (a wrapper or a hook).
pub fn is_busy() -> bool {
    TLS.try_with(|t| t.busy.get()).unwrap_or(true)
}

/// This thread's state, if it has one (for init-time measurements).
pub fn this_thread_state() -> *mut ThreadState {
    TLS.try_with(|t| t.ts.get()).unwrap_or(null_mut())
}
