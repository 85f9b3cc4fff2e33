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

/// The words of `mpiover_no_thread_state`: up to and with the state's
/// `seen`.
const NO_THREAD_WORDS: usize = std::mem::offset_of!(ThreadState, seen) / 8 + 1;

/// What a thread's state pointer holds before its first call (`src/tls.c`
/// initializes the pointer to it): zeros as far as the state's `seen`
/// word, which no enabled state word equals, so that `enter`'s one test of
/// that word also sends a thread without a state to `enter_slow`, and no
/// wrapper tests the pointer for null. Only that word is ever read of it.
#[repr(C, align(64))]
pub(crate) struct NoThread([u64; NO_THREAD_WORDS]);

#[no_mangle]
#[allow(non_upper_case_globals)]
pub(crate) static mpiover_no_thread_state: NoThread = NoThread([0; NO_THREAD_WORDS]);

/// The placeholder as a state pointer (compared, never dereferenced as a
/// state).
#[inline(always)]
fn no_thread() -> *mut ThreadState {
    std::ptr::addr_of!(mpiover_no_thread_state) as *mut ThreadState
}

/// The `seen` word of `ts`, this thread's state or the placeholder.
///
/// # Safety
/// `ts` is this thread's state or `no_thread()`.
#[inline(always)]
unsafe fn seen_of(ts: *mut ThreadState) -> u64 {
    // SAFETY: both a state and the placeholder hold the word at this
    // offset (the placeholder is that large), and only this thread writes
    // its state's.
    unsafe {
        ts.cast::<u8>()
            .add(std::mem::offset_of!(ThreadState, seen))
            .cast::<u64>()
            .read()
    }
}

/// This thread's pair: `mpiover_tls` of `src/tls.c`, in the initial-exec
/// model, at a fixed offset from the thread pointer (`fs`): two loads and
/// no call, so that the wrapper's arguments stay in their registers. Set
/// at the thread's start (not busy, the placeholder state), no destructor:
/// never in a "destroyed" state.
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
    // Null where the C pair has the placeholder: `enter` tests for it here.
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
    // One test for a thread whose state is current: a state that missed a
    // change of the word, and the placeholder of a thread without one
    // (`mpiover_no_thread_state`), both differ.
    #[cfg(not(target_arch = "x86_64"))]
    if ts.is_null() {
        ts = enter_slow(t, st);
        if ts.is_null() {
            return None;
        }
    }
    // SAFETY: this thread's state or the placeholder (the pair holds
    // nothing else).
    if unsafe { seen_of(ts) } != st {
        ts = enter_slow(t, st);
        if ts.is_null() {
            return None;
        }
    }
    t.busy.set(true);
    Some(Guard {
        // SAFETY: not null (tested above) and not the placeholder (its word
        // differs, or `enter_slow` replaced it), so this thread's state.
        ts: unsafe { NonNull::new_unchecked(ts) },
        busy: &t.busy as *const Cell<bool>,
        st,
    })
}

/// `enter`'s way for a thread without a state yet (it is created) or whose
/// state missed a change of the state word (it catches up): the state, or
/// null when it cannot be had. Neither step calls MPI.
#[cold]
#[inline(never)]
fn enter_slow(t: &'static Tls, st: u64) -> *mut ThreadState {
    let mut ts = t.ts.get();
    if ts.is_null() || ts == no_thread() {
        ts = ThreadState::create();
        if ts.is_null() {
            return ts;
        }
        t.ts.set(ts);
    }
    // SAFETY: this thread's own state (created or set before).
    unsafe {
        if (*ts).seen != st {
            (*ts).sync(st);
        }
    }
    ts
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
    let ts = tls().ts.get();
    if ts == no_thread() {
        return std::ptr::null_mut();
    }
    ts
}
