//! The per-thread re-entry guard: a hook records only when MPI was entered
//! from outside the tool, and a thread whose state is gone simply forwards.

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::*;

use super::state::{ENABLED, STATE};
use super::threads::ThreadState;

/// Whether this thread is inside the tool, and its state (the layout of
/// `src/tls.c`'s pair: the flag first, so that its address, which the
/// guard keeps, is the pair's own).
#[repr(C)]
pub(crate) struct Tls {
    pub(crate) busy: Cell<bool>,
    pub(crate) ts: Cell<*mut ThreadState>,
}

/// This thread's pair: `mpiover_tls` of `src/tls.c`, in the initial-exec
/// model, at a fixed offset from the thread pointer (`fs`): two loads and
/// no call, so that the wrapper's arguments stay in their registers. Zeroed
/// at the thread's start, no destructor: never in a "destroyed" state.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tls() -> &'static Tls {
    let p: *const Tls;
    // SAFETY: the GOT entry holds the pair's offset from the thread pointer
    // (a TPOFF relocation the loader fills), and `fs:0` holds the thread
    // pointer itself; the pair lives as long as the thread, and only this
    // thread uses it (`Tls` is not `Sync`: the reference stays here).
    unsafe {
        core::arch::asm!(
            "mov {p}, qword ptr [rip + mpiover_tls@GOTTPOFF]",
            "add {p}, qword ptr fs:[0]",
            p = out(reg) p,
            options(pure, readonly, nostack)
        );
        &*p
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tls() -> &'static Tls {
    thread_local! {
        static TLS: Tls = const { Tls { busy: Cell::new(false), ts: Cell::new(std::ptr::null_mut()) } };
    }
    // SAFETY: const-initialized without a destructor, so it lives as long as
    // the thread, and the reference stays on it (`Tls` is not `Sync`).
    TLS.with(|t| unsafe { &*(t as *const Tls) })
}

/// Proof that this thread is inside a wrapper and may record. Dropping it
/// leaves the tool.
pub struct Guard {
    pub(crate) ts: NonNull<ThreadState>,
    pub(crate) busy: *const Cell<bool>,
    /// The state word `enter` read: the clock reads test its clock bit here
    /// rather than loading the word again (the bit is set once, before
    /// recording starts, so every guard's word has it as it stays).
    pub(crate) st: u64,
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
    let t = tls();
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
        st,
    };
    // SAFETY: as above.
    unsafe {
        if (*ts.as_ptr()).seen != st {
            (*ts.as_ptr()).sync(st);
        }
    }
    Some(g)
}

/// Marks this thread as inside the tool without a state (hand-written hooks
/// that call PMPI functions which might come back through wrappers).
pub struct Busy {
    pub(crate) was: bool,
}

pub fn busy() -> Busy {
    let was = tls().busy.replace(true);
    Busy { was }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let was = self.was;
        tls().busy.set(was);
    }
}

/// Whether this thread is inside the tool (a wrapper or a hook).
pub fn is_busy() -> bool {
    tls().busy.get()
}

/// This thread's state, if it has one (for init-time measurements).
pub fn this_thread_state() -> *mut ThreadState {
    tls().ts.get()
}
