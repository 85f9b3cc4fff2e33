//! Records written at exit and on fatal signals: the handlers (on an
//! alternate stack), the watchdog that bounds the write, and the original
//! action re-delivered afterwards.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering::*};

use crate::signal_actions::{old_action, OLD, SIGNALS};

extern "C" fn at_exit() {
    crate::write::write_record("exit", crate::write::When::Exit);
}

/// Size of the alternate signal stack (virtual; pages are committed only as
/// the handler touches them).
pub(crate) const ALT_STACK_BYTES: usize = 4 << 20;

/// An alternate signal stack for the thread that initializes MPI (normally
/// the main thread), unless it has one already: a stack overflow raises
/// SIGSEGV with no stack left to run a handler on, and without this the
/// record of such a rank was lost. Mapped once, never freed (the handler may
/// run until the process ends). Other threads keep the kernel's default; an
/// application that installs its own alternate stack later replaces ours.
pub(crate) fn install_alt_stack() {
    // SAFETY: stack_t is a pointer and integers, valid all zero.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: with a null new stack sigaltstack only writes the current one
    // into `cur`, a live local.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut cur) } != 0
        || cur.ss_flags & libc::SS_DISABLE == 0
    {
        return;
    }
    let page = 4096;
    // SAFETY: a new anonymous private mapping aliases nothing; the result is
    // checked before use.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK_BYTES + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return;
    }
    // Guard page below the stack: an overflow of the handler itself faults
    // cleanly instead of writing into whatever lies below.
    // SAFETY: the first page of the mapping made above, which nothing uses.
    unsafe { libc::mprotect(base, page, libc::PROT_NONE) };
    let ss = libc::stack_t {
        ss_sp: base.wrapping_byte_add(page),
        ss_flags: 0,
        ss_size: ALT_STACK_BYTES,
    };
    // SAFETY: `ss` describes the mapping above the guard page, ours and
    // never freed once the kernel has it; on failure it is unmapped unused.
    if unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) } != 0 {
        // SAFETY: see above.
        unsafe { libc::munmap(base, ALT_STACK_BYTES + page) };
    }
}

pub(crate) fn install_exit_handlers() {
    install_alt_stack();
    // SAFETY: `at_exit` is an `extern "C" fn()` of this library, which is
    // never unloaded.
    unsafe { libc::atexit(at_exit) };
    // SAFETY: OLD is written only here, once, at initialization and before
    // any handler that reads it is installed (below).
    let old = unsafe { &mut *OLD.0.get() };
    for (i, (sig, _)) in SIGNALS.iter().enumerate() {
        // SAFETY: sigaction is integers, a set and a function address, valid
        // all zero (SIG_DFL).
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `cur`.
        if unsafe { libc::sigaction(*sig, std::ptr::null(), &mut cur) } != 0 {
            continue;
        }
        if cur.sa_sigaction == libc::SIG_IGN {
            continue; // an ignored signal does not end the process
        }
        old[i] = cur;
    }
    for (i, (sig, _)) in SIGNALS.iter().enumerate() {
        if old[i].sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: as above, all zero is SIG_DFL.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `act` is a live local; `on_signal` has the SA_SIGINFO
        // signature and lives as long as the process (the library stays).
        unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(*sig, &act, std::ptr::null_mut());
        }
    }
}

/// The signal being handled when the watchdog fires.
pub(crate) static DYING: AtomicI32 = AtomicI32::new(0);

pub(crate) static OLD_ALRM: OldAlarm =
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, no flags).
    OldAlarm(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));

pub(crate) struct OldAlarm(std::cell::UnsafeCell<libc::sigaction>);

// SAFETY: written only by the thread that armed the watchdog (DYING guards
// it), read when disarming.
unsafe impl Sync for OldAlarm {}

/// Writing the record from a signal handler allocates; if the signal came in
/// the middle of `malloc` on this thread, that can deadlock. The watchdog
/// (SIGALRM after 10 s) then ends the process with the original signal, so
/// that the exit status is the one without the tool.
extern "C" fn watchdog(_: c_int) {
    let sig = DYING.load(SeqCst);
    // SAFETY: async-signal-safe calls only.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig);
    }
}

pub(crate) fn arm_watchdog(sig: c_int) {
    if DYING.compare_exchange(0, sig, SeqCst, SeqCst).is_err() {
        return;
    }
    // SAFETY: async-signal-safe calls with valid pointers.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = watchdog as *const () as usize;
        act.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGALRM, &act, OLD_ALRM.0.get());
        libc::alarm(10);
    }
}

/// The process lives on after all (a handler of the application took the
/// signal): the watchdog must not fire.
pub(crate) fn disarm_watchdog() {
    if DYING.load(SeqCst) == 0 {
        return;
    }
    // SAFETY: async-signal-safe calls; OLD_ALRM was written when arming.
    unsafe {
        libc::alarm(0);
        libc::sigaction(libc::SIGALRM, OLD_ALRM.0.get(), std::ptr::null_mut());
    }
    DYING.store(0, SeqCst);
}

/// Sleeps about a millisecond (async-signal-safe).
pub(crate) fn nap() {
    let t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: valid timespec.
    unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    use crate::write::{PENDING_SIG, PHASE, WRITER_TID};
    let Some(i) = SIGNALS.iter().position(|(s, _)| *s == sig) else {
        return;
    };
    let Some(old) = old_action(sig) else { return };
    let fatal_anyway = matches!(sig, libc::SIGSEGV | libc::SIGBUS | libc::SIGABRT);
    let dies = old.sa_sigaction == libc::SIG_DFL || fatal_anyway;
    if dies && crate::write::save_merging() {
        // Killed while merging the job log (a peer died): this rank's
        // record is written on its own; the signal takes its course.
    } else if dies {
        if PHASE.load(SeqCst) == 0 {
            arm_watchdog(sig);
            // Best effort: the process is about to die.
            crate::write::write_record(SIGNALS[i].1, crate::write::When::Signal);
        }
        if PHASE.load(SeqCst) == 1 {
            if WRITER_TID.load(SeqCst) == crate::write::gettid() {
                // This thread was writing (at exit, at MPI_Finalize) when the
                // signal came: let it finish; it delivers the signal again.
                // A fault inside the writer itself cannot wait.
                if !fatal_anyway && old.sa_sigaction == libc::SIG_DFL {
                    PENDING_SIG.store(sig, SeqCst);
                    return;
                }
            } else {
                // Another thread writes: wait for it (mpirun's SIGKILL comes
                // about a second after its SIGTERM).
                arm_watchdog(sig);
                crate::write::WAITING_SIG.store(sig, SeqCst);
                let mut n = 0;
                while PHASE.load(SeqCst) == 1 && n < 9000 {
                    nap();
                    n += 1;
                }
            }
        }
    }
    // SAFETY: `old` is the disposition the process had before the tool, a
    // valid sigaction the kernel gave us.
    unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
    if old.sa_sigaction == libc::SIG_DFL {
        // Blocked while we run; delivered with the default action on return.
        // SAFETY: raise takes no pointer.
        unsafe { libc::raise(sig) };
    } else if old.sa_sigaction != libc::SIG_IGN {
        disarm_watchdog();
        // SAFETY: neither SIG_DFL nor SIG_IGN, so `sa_sigaction` is the
        // handler the program installed, of the signature its SA_SIGINFO
        // flag says; it is called as the kernel would have, with the
        // kernel's `info` and `ctx`.
        unsafe {
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(c_int) = std::mem::transmute(old.sa_sigaction);
                f(sig);
            }
        }
    }
}
