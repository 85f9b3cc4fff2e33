//! Hand-written hooks: initialization, finalization, abort, `MPI_Pcontrol`.

#![allow(clippy::missing_safety_doc)]

use std::os::raw::{c_char, c_int};

use mpiover_mpisys::*;

use crate::rt;

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let b = rt::busy();
    let r = PMPI_Init(argc, argv);
    drop(b);
    if r == 0 {
        crate::init::on_init(None);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let b = rt::busy();
    let r = PMPI_Init_thread(argc, argv, required, provided);
    drop(b);
    if r == 0 {
        let level = if provided.is_null() {
            required
        } else {
            *provided
        };
        crate::init::on_init(Some(level));
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    crate::write::write_record("finalize");
    let _b = rt::busy();
    PMPI_Finalize()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    crate::write::write_record("abort");
    let _b = rt::busy();
    PMPI_Abort(comm, errorcode)
}

/// Called by `MPI_Pcontrol` (src/pcontrol.c): 0 stops recording, 1 resumes,
/// 2 forgets what was recorded so far; other levels are ignored.
#[no_mangle]
pub extern "C" fn mpiover_pcontrol(level: c_int) -> c_int {
    use std::sync::atomic::Ordering::Relaxed;
    if !crate::init::recording_possible() {
        return 0;
    }
    match level {
        0 => {
            rt::STATE.fetch_and(!rt::ENABLED, Relaxed);
        }
        1 => {
            rt::STATE.fetch_or(rt::ENABLED, Relaxed);
        }
        2 => {
            rt::STATE.fetch_add(rt::RESET_STEP, Relaxed);
        }
        _ => {}
    }
    0
}

extern "C" {
    /// The variadic C implementation (src/pcontrol.c).
    fn mpiover_c_pcontrol(level: c_int, ...) -> c_int;
}

/// `int MPI_Pcontrol(const int level, ...)`: a tail jump into the C
/// implementation, so the variadic arguments arrive as the caller left them.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pcontrol() {
    core::arch::naked_asm!("jmp {}", sym mpiover_c_pcontrol)
}

#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pcontrol() {
    core::arch::naked_asm!("b {}", sym mpiover_c_pcontrol)
}
