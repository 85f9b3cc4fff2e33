//! The signals whose records the tool writes, and the actions they had
//! before it: saved by start-up when it installs its handlers
//! (`init::install_exit_handlers`), restored by those handlers and by the
//! writer (`write`) to deliver a signal again. Below both, so that
//! the writer does not name start-up.

use std::os::raw::c_int;

pub(crate) const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGTERM, "signal:SIGTERM"),
    (libc::SIGINT, "signal:SIGINT"),
    (libc::SIGSEGV, "signal:SIGSEGV"),
    (libc::SIGABRT, "signal:SIGABRT"),
    (libc::SIGBUS, "signal:SIGBUS"),
];

pub(crate) struct OldActions(pub(crate) std::cell::UnsafeCell<[libc::sigaction; 5]>);

// SAFETY: written once in `install_exit_handlers` before any handler of
// ours is installed, only read afterwards.
unsafe impl Sync for OldActions {}

pub(crate) static OLD: OldActions =
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, no flags).
    OldActions(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));

pub(crate) fn old_action(sig: c_int) -> Option<libc::sigaction> {
    let i = SIGNALS.iter().position(|(s, _)| *s == sig)?;
    // SAFETY: OLD is only read after installation.
    Some(unsafe { (*OLD.0.get())[i] })
}

/// Delivers `sig` again with the disposition it had before the tool (the
/// writer calls this for a signal that arrived on its own thread while it
/// wrote outside a handler).
pub fn redeliver(sig: c_int) {
    let Some(old) = old_action(sig) else { return };
    // SAFETY: restoring the previous disposition and raising.
    unsafe {
        libc::sigaction(sig, &old, std::ptr::null_mut());
        libc::raise(sig);
    }
}
