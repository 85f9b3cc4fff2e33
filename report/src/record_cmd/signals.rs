//! Running the launcher with the signals a user sends forwarded to it, and
//! its exit code as a shell reports it.

use std::ffi::OsStr;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use anyhow::Context;

/// The exit code of `mpiover record` for the launcher's status.
pub fn exit_code(st: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    }
}

mod sig {
    //! Signals to forward while the job runs.
    use std::sync::atomic::{AtomicI32, Ordering::SeqCst};

    pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    /// si_code of a signal the kernel sent for the terminal (Ctrl-C).
    const SI_KERNEL: libc::c_int = 0x80;

    static PENDING: [AtomicI32; 3] = [AtomicI32::new(0), AtomicI32::new(0), AtomicI32::new(0)];

    extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // A terminal's signal went to the whole foreground process group,
        // the launcher included: do not send it twice (a second Ctrl-C makes
        // Open MPI's mpirun abort hard).
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        let from_tty = !info.is_null() && unsafe { (*info).si_code } == SI_KERNEL;
        if from_tty {
            return;
        }
        if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
            PENDING[i].fetch_add(1, SeqCst);
        }
    }

    /// Installs the handlers; returns the previous actions.
    pub fn install() -> Vec<libc::sigaction> {
        let mut old = Vec::new();
        for &s in &SIGNALS {
            // SAFETY: sigaction(2) with valid pointers; the handler only
            // touches atomics (async-signal-safe).
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut act.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                libc::sigaction(s, &act, &mut prev);
                old.push(prev);
            }
        }
        old
    }

    pub fn restore(old: &[libc::sigaction]) {
        for (&s, o) in SIGNALS.iter().zip(old) {
            // SAFETY: restores an action returned by sigaction(2).
            unsafe {
                libc::sigaction(s, o, std::ptr::null_mut());
            }
        }
    }

    /// Signals received since the last call, to forward.
    pub fn take() -> Vec<libc::c_int> {
        let mut v = Vec::new();
        for (i, &s) in SIGNALS.iter().enumerate() {
            let n = PENDING[i].swap(0, SeqCst);
            if n > 0 {
                v.push(s);
            }
        }
        v
    }
}

pub(crate) fn run_forwarding_signals(
    mut cmd: Command,
    launcher: &OsStr,
) -> anyhow::Result<ExitStatus> {
    let old = sig::install();
    let child = cmd.spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            sig::restore(&old);
            return Err(e).with_context(|| format!("cannot start {}", launcher.to_string_lossy()));
        }
    };
    let pid = child.id() as libc::pid_t;
    let status = loop {
        for s in sig::take() {
            // SAFETY: kill(2) of the child we started (not yet reaped).
            unsafe {
                libc::kill(pid, s);
            }
        }
        match child.try_wait() {
            Ok(Some(st)) => break Ok(st),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(e),
        }
    };
    sig::restore(&old);
    status.with_context(|| format!("waiting for {}", launcher.to_string_lossy()))
}

// ---------------------------------------------------------------------------
// The summary
// ---------------------------------------------------------------------------
