//! Fortran entry points (Open MPI; MPICH's `use mpi_f08`). `mpif.h` and
//! `use mpi` programs call
//! `mpi_send_` (or `mpi_send`, `mpi_send__`, `MPI_SEND`, by compiler) in
//! libmpi_mpifh, `use mpi_f08` programs `mpi_send_f08_` in
//! libmpi_usempif08; both call `PMPI_Send` directly, so the C wrappers see
//! nothing. The generated wrappers (`interpose/build/gen_fortran.rs`, from the C prototypes of
//! `mpi.h` by the standard's Fortran rules, `docs/fortran.md`) define all
//! five names and forward to the library's
//! `pmpi_send_` / `pmpi_send_f08_`, found with `dlsym(RTLD_NEXT)` on first
//! use. Arguments pass through untouched (sentinels such as `MPI_IN_PLACE`
//! and `MPI_STATUS_IGNORE` included); only to read bytes, peers and sizes
//! are handles converted with `PMPI_*_f2c`. When the caller passes
//! `MPI_STATUS(ES)_IGNORE` the tool passes a status of its own instead (as
//! the C wrappers do), so that the source and size of what arrived are
//! known. The per-thread re-entry guard makes sure nothing counts twice (a
//! Fortran binding that calls a C `MPI_*` function is forwarded untouched).
//! Calls are recorded under their C names (`MPI_Send`).
//!
//! MPICH: `mpif.h`, `use mpi` and the `use mpi_f08` calls with a choice
//! buffer (`mpi_send_f08ts_`) reach the C `MPI_*` functions and so the C
//! wrappers, which skip the Fortran library's frames to find the `.f90`
//! line (`rt::site_of`); the other `use mpi_f08` calls (`mpi_wait_f08_`,
//! `mpi_init_f08_`, ...) call `PMPI_*` and are wrapped here (forwarding to
//! `pmpir_*_f08_`).

#![allow(non_snake_case)]

use std::os::raw::c_int;

use crate::fort_conv::Fint;
use crate::rt;

pub mod generated {
    //! The generated Fortran wrappers (see `interpose/build/gen_fortran.rs`).
    // Generated code: each wrapper is a Fortran entry point whose contract
    // is the MPI standard's Fortran binding (no `# Safety` section restates
    // it); the rest is what generation leaves unused.
    #![allow(
        non_snake_case,
        non_upper_case_globals,
        unused_variables,
        unused_mut,
        unused_unsafe,
        clippy::missing_safety_doc,
        clippy::too_many_arguments,
        clippy::nonminimal_bool,
        clippy::overly_complex_bool_expr,
        clippy::needless_return,
        clippy::unnecessary_cast,
        clippy::let_and_return,
        clippy::unused_unit,
        clippy::let_unit_value
    )]
    include!(concat!(env!("OUT_DIR"), "/fortran.rs"));
}

/// Number of generated Fortran functions (each with five entry points).
pub const WRAPPED: &str = env!("MPIOVER_FORTRAN_WRAPPED");

// Re-exported: the generated wrappers name these as `crate::fort::...`.
pub use crate::fort_conv::{buf, comm, datatype, fwd, ierr, int, req_bits, request, FStatus};

// ---------------------------------------------------------------------------
// Hand-written entry points: start and stop the tool.
// ---------------------------------------------------------------------------

// Each takes the prototype's arguments and one more word passed through
// (see `fortran_args` in interpose/build/gen_fortran.rs).
type FnIerr = unsafe extern "C" fn(*mut Fint, usize);
type Fn3 = unsafe extern "C" fn(*mut Fint, *mut Fint, *mut Fint, usize);

/// `MPI_Init` from Fortran: the library's, then the tool starts.
///
/// # Safety
/// `fwd` is the library's own Fortran entry point of this name and signature
/// (found by `fwd`); the other arguments are the Fortran program's, as the
/// standard defines them.
pub unsafe fn fb_MPI_Init(_ra: usize, fwd: usize, ierr: *mut c_int, x: usize) {
    // SAFETY: `fwd` is the address of the library's own entry point of this signature (found by `fort::fwd`), and the arguments are the caller's, passed on unchanged.
    unsafe {
        let f: FnIerr = std::mem::transmute(fwd);
        let t0 = crate::init::note_init_entry();
        let b = rt::busy();
        f(ierr, x);
        let t1 = crate::timer::mono_ns();
        drop(b);
        if int(ierr) == 0 {
            crate::init::on_init(None, crate::names::FID_MPI_Init, t1.wrapping_sub(t0));
        }
    }
}

/// `MPI_Init_thread` from Fortran: the library's, then the tool starts.
///
/// # Safety
/// As [`fb_MPI_Init`].
pub unsafe fn fb_MPI_Init_thread(
    _ra: usize,
    fwd: usize,
    required: *mut c_int,
    provided: *mut c_int,
    ierr: *mut c_int,
    x: usize,
) {
    // SAFETY: `fwd` is the address of the library's own entry point of this
    // signature (found by `fort::fwd`), never null here.
    let f: Fn3 = unsafe { std::mem::transmute(fwd) };
    let t0 = crate::init::note_init_entry();
    let b = rt::busy();
    // SAFETY: the Fortran program's arguments, passed on unchanged.
    unsafe { f(required, provided, ierr, x) };
    let t1 = crate::timer::mono_ns();
    drop(b);
    // SAFETY: `ierr` is the program's (null when an `mpi_f08` caller left
    // it out); `int` reads it only when non-null.
    if unsafe { int(ierr) } == 0 {
        let level = if provided.is_null() {
            // SAFETY: `required` is the program's by-reference argument.
            unsafe { int(required) }
        } else {
            // SAFETY: a successful init wrote the level through `provided`.
            unsafe { *provided }
        };
        crate::init::on_init(
            Some(level),
            crate::names::FID_MPI_Init_thread,
            t1.wrapping_sub(t0),
        );
    }
}

/// `MPI_Finalize` from Fortran, as [`crate::hooks::MPI_Finalize`].
///
/// # Safety
/// As [`fb_MPI_Init`].
pub unsafe fn fb_MPI_Finalize(_ra: usize, fwd: usize, ierr: *mut c_int, x: usize) {
    // SAFETY: `fwd` is the address of the library's own entry point of this signature (found by `fort::fwd`), and the arguments are the caller's, passed on unchanged.
    unsafe {
        let f: FnIerr = std::mem::transmute(fwd);
        crate::hooks::finalize_with(|| f(ierr, x))
    }
}

/// `MPI_Abort` from Fortran, as [`crate::hooks::MPI_Abort`].
///
/// # Safety
/// As [`fb_MPI_Init`].
pub unsafe fn fb_MPI_Abort(
    _ra: usize,
    fwd: usize,
    comm: *mut c_int,
    errorcode: *mut c_int,
    ierr: *mut c_int,
    x: usize,
) {
    // SAFETY: `fwd` is the address of the library's own entry point of this signature (found by `fort::fwd`), and the arguments are the caller's, passed on unchanged.
    unsafe {
        let f: Fn3 = std::mem::transmute(fwd);
        crate::hooks::abort_with(|| f(comm, errorcode, ierr, x))
    }
}

/// `MPI_Pcontrol(level)`; MPICH's `use mpi_f08` one also takes an optional
/// `ierror` (the passed-through word).
///
/// # Safety
/// As [`fb_MPI_Init`].
pub unsafe fn fb_MPI_Pcontrol(_ra: usize, fwd: usize, level: *mut c_int, x: usize) {
    // SAFETY: `fwd` is the address of the library's own entry point of this signature (found by `fort::fwd`), and the arguments are the caller's, passed on unchanged.
    unsafe {
        let f: FnIerr = std::mem::transmute(fwd);
        crate::hooks::mpiover_pcontrol(int(level));
        let _b = rt::busy();
        f(level, x)
    }
}
