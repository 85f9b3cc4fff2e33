//! Reading other threads' tables safely when the record is written.
//!
//! A thread records an event between `updating = true` and `updating =
//! false` (Release). The writer first clears `ENABLED` in `STATE`, then must
//! know, for every thread, that the thread is either not inside an update or
//! will see recording disabled before it starts one. That is Dekker's
//! handshake, made asymmetric so that the hot path pays nothing: the
//! recording thread stores `updating` and loads `STATE` with only a compiler
//! fence between them ([`crate::rt::Guard::event`]); the writer makes every
//! thread of the process execute a full memory barrier (Linux `membarrier`)
//! after clearing `ENABLED`, then waits (Acquire) for `updating` to clear.
//! After the barrier, a thread whose `updating` store was not yet visible
//! is certain to load the cleared `STATE`, and skips its update.
//!
//! Without `membarrier` (kernels before 4.3, or a seccomp policy that
//! forbids it) the writer falls back to a bounded wait on `updating` alone,
//! and the record says that threads may still have been recording.

use std::sync::atomic::{AtomicBool, Ordering::*};

const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

static REGISTERED: AtomicBool = AtomicBool::new(false);

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no memory
    // of ours; an unsupported command only returns an error.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_int,
            0 as libc::c_int,
        ) == 0
    }
}

/// Registers the process for the fast (expedited) barrier; called once at
/// start-up, before any thread records.
pub fn register_barrier() {
    if membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) {
        REGISTERED.store(true, Release);
    }
}

/// Every thread of the process passes a full memory barrier before this
/// returns; false when the kernel offers no way to do that.
pub fn barrier_all_threads() -> bool {
    std::sync::atomic::fence(SeqCst);
    if REGISTERED.load(Acquire) && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
        return true;
    }
    membarrier(MEMBARRIER_CMD_GLOBAL)
}
