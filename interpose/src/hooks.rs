//! Hand-written hooks: initialization, finalization, abort, `MPI_Pcontrol`.

use std::os::raw::{c_char, c_int};

use mpiover_mpisys::*;

use crate::names::{
    FID_MPI_Abort, FID_MPI_Finalize, FID_MPI_Init, FID_MPI_Init_thread, FID_MPI_Pcontrol,
};
use crate::rt;

/// `MPI_Init`: the library's, then the tool starts.
///
/// # Safety
/// Called by the MPI program as the standard's `MPI_Init`, with what the
/// standard requires of its arguments; they reach `PMPI_Init` unchanged.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    crate::init::check_before_init();
    // SAFETY: the caller is the MPI program, passing what the MPI standard defines for this function; the arguments go to the PMPI twin unchanged.
    unsafe {
        let t0 = crate::init::note_init_entry();
        let b = rt::busy();
        let r = PMPI_Init(argc, argv);
        let t1 = crate::timer::mono_ns();
        drop(b);
        if r == 0 {
            crate::init::on_init(None, FID_MPI_Init, t1.wrapping_sub(t0));
        }
        r
    }
}

/// `MPI_Init_thread`: the library's, then the tool starts.
///
/// # Safety
/// As [`MPI_Init`], for `MPI_Init_thread`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    crate::init::check_before_init();
    let t0 = crate::init::note_init_entry();
    let b = rt::busy();
    // SAFETY: the MPI program's arguments, which the standard defines (this
    // function's contract), go to the PMPI twin unchanged.
    let r = unsafe { PMPI_Init_thread(argc, argv, required, provided) };
    let t1 = crate::timer::mono_ns();
    drop(b);
    if r == 0 {
        let level = if provided.is_null() {
            required
        } else {
            // SAFETY: a successful MPI_Init_thread wrote the granted level
            // through the program's non-null `provided`.
            unsafe { *provided }
        };
        crate::init::on_init(Some(level), FID_MPI_Init_thread, t1.wrapping_sub(t0));
    }
    r
}

/// `MPI_Finalize`: counted and timed like every call, then the record is
/// written (no MPI call is needed for that).
///
/// # Safety
/// As [`MPI_Init`]: the program's call, with the standard's requirements.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    // SAFETY: the caller is the MPI program, passing what the MPI standard defines for this function; the arguments go to the PMPI twin unchanged.
    unsafe { finalize_with(|| PMPI_Finalize()) }
}

/// Times `fin` (the library's finalize), counts it as `MPI_Finalize`, writes
/// the record.
pub fn finalize_with<R>(fin: impl FnOnce() -> R) -> R {
    crate::init::ask_eager_limit();
    // A job log is merged over MPI, so before the library finalizes (the
    // record then holds no time of MPI_Finalize itself).
    if crate::run::format() != crate::opt::Format::PerRank {
        crate::write::write_record("finalize", crate::write::When::Merge);
    }
    let r = match rt::enter() {
        Some(mut g) => {
            let t0 = crate::timer::now();
            let r = fin();
            let t1 = crate::timer::now();
            g.plain(FID_MPI_Finalize, t1.wrapping_sub(t0));
            r
        }
        None => {
            let _b = rt::busy();
            fin()
        }
    };
    crate::write::write_record("finalize", crate::write::When::Normal);
    r
}

/// `MPI_Abort`: counted, the record written, then the library aborts.
///
/// # Safety
/// As [`MPI_Init`]: the program's call, with the standard's requirements
/// (`comm` a valid communicator).
#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    // SAFETY: the caller is the MPI program, passing what the MPI standard defines for this function; the arguments go to the PMPI twin unchanged.
    unsafe { abort_with(|| PMPI_Abort(comm, errorcode)) }
}

pub fn abort_with<R>(abort: impl FnOnce() -> R) -> R {
    if let Some(mut g) = rt::enter() {
        g.plain(FID_MPI_Abort, 0);
    }
    crate::write::write_record("abort", crate::write::When::Normal);
    let _b = rt::busy();
    abort()
}

/// Called by `MPI_Pcontrol` (src/pcontrol.c): 0 stops recording, 1 resumes,
/// 2 forgets what was recorded so far; other levels are ignored.
#[no_mangle]
pub extern "C" fn mpiover_pcontrol(level: c_int) -> c_int {
    use std::sync::atomic::Ordering::Relaxed;
    // From inside the tool (a Fortran MPI_Pcontrol that reaches the C one):
    // already done.
    if !crate::init::recording_possible() || rt::is_busy() {
        return 0;
    }
    // Counted while recording is on (a Pcontrol(0) is the last call counted
    // before the pause, a Pcontrol(1) the first after it).
    if let Some(mut g) = rt::enter() {
        g.plain(FID_MPI_Pcontrol, 0);
    }
    match level {
        0 => {
            rt::STATE.fetch_and(!rt::ENABLED, Relaxed);
        }
        1 => {
            let was = rt::resume();
            match rt::enter() {
                Some(mut g) if was & rt::ENABLED == 0 => g.plain(FID_MPI_Pcontrol, 0),
                _ => {}
            }
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
///
/// # Safety
/// Called as the variadic C `MPI_Pcontrol(int level, ...)`: the jump leaves
/// the caller's registers and stack to the C implementation, which reads
/// `level` only.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pcontrol() {
    core::arch::naked_asm!("jmp {}", sym mpiover_c_pcontrol)
}

/// `int MPI_Pcontrol(const int level, ...)`, as on x86_64.
///
/// # Safety
/// As on x86_64.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pcontrol() {
    core::arch::naked_asm!("b {}", sym mpiover_c_pcontrol)
}

/// `MPI_Session_init` (MPI-4 sessions; declared by MPICH 4, not by Open MPI
/// 4.1): forwarded untouched. The tool starts recording at `MPI_Init*`
/// (the world model), so a process that opens a session before, or instead
/// of, `MPI_Init` is told once that what it does through sessions is not
/// profiled, rather than finding no record and no reason.
///
/// # Safety
/// As [`MPI_Init`], for `MPI_Session_init`.
#[cfg(mpi_sessions)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    crate::init::note_session();
    // SAFETY: the caller is the MPI program, passing what the MPI standard defines for this function; the arguments go to the PMPI twin unchanged.
    unsafe {
        // Counted like any call while recording (a session opened after
        // MPI_Init), as the generated wrapper did.
        let Some(mut g) = rt::enter() else {
            return PMPI_Session_init(info, errhandler, session);
        };
        let t0 = crate::timer::now();
        let r = PMPI_Session_init(info, errhandler, session);
        let t1 = crate::timer::now();
        g.plain(crate::names::FID_MPI_Session_init, t1.wrapping_sub(t0));
        r
    }
}
