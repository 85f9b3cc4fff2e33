//! Fortran entry points (Open MPI; MPICH's `use mpi_f08`). `mpif.h` and
//! `use mpi` programs call
//! `mpi_send_` (or `mpi_send`, `mpi_send__`, `MPI_SEND`, by compiler) in
//! libmpi_mpifh, `use mpi_f08` programs `mpi_send_f08_` in
//! libmpi_usempif08; both call `PMPI_Send` directly, so the C wrappers see
//! nothing. The generated wrappers (`build.rs`, from the C prototypes of
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

use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::rt::{self, Handle as _};

pub mod generated {
    //! The generated Fortran wrappers (see `build.rs`).
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

/// `MPI_Fint` (Open MPI: `int`).
pub type Fint = c_int;

/// Addresses of the Fortran sentinels: Open MPI's common blocks (all
/// bindings), MPICH's `use mpi_f08` objects.
static IN_PLACE: [AtomicUsize; 2] = [const { AtomicUsize::new(usize::MAX) }; 2];
static BOTTOM: [AtomicUsize; 2] = [const { AtomicUsize::new(usize::MAX) }; 2];
static STATUS_IGNORE: [AtomicUsize; 2] = [const { AtomicUsize::new(usize::MAX) }; 2];
static STATUSES_IGNORE: [AtomicUsize; 2] = [const { AtomicUsize::new(usize::MAX) }; 2];

#[inline(always)]
fn is(a: usize, s: &[AtomicUsize; 2]) -> bool {
    a == s[0].load(Relaxed) || a == s[1].load(Relaxed)
}

fn lookup(name: &CStr) -> usize {
    // SAFETY: dlsym with a valid C string.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        usize::MAX
    } else {
        p as usize
    }
}

/// Finds the Fortran sentinels (at `MPI_Init`, when the Fortran libraries
/// are loaded; the dynamic linker binds every module's references to the
/// first definition, which is the one `RTLD_DEFAULT` finds).
pub fn init_sentinels() {
    IN_PLACE[0].store(lookup(c"mpi_fortran_in_place_"), Relaxed);
    BOTTOM[0].store(lookup(c"mpi_fortran_bottom_"), Relaxed);
    STATUS_IGNORE[0].store(lookup(c"mpi_fortran_status_ignore_"), Relaxed);
    STATUSES_IGNORE[0].store(lookup(c"mpi_fortran_statuses_ignore_"), Relaxed);
    IN_PLACE[1].store(lookup(c"MPIR_F08_MPI_IN_PLACE"), Relaxed);
    BOTTOM[1].store(lookup(c"MPIR_F08_MPI_BOTTOM"), Relaxed);
    STATUS_IGNORE[1].store(lookup(c"MPIR_F08_MPI_STATUS_IGNORE_OBJ"), Relaxed);
    STATUSES_IGNORE[1].store(lookup(c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"), Relaxed);
}

/// The library function `name` forwards to, found once.
#[inline(always)]
pub fn fwd(slot: &AtomicUsize, name: &CStr) -> usize {
    let p = slot.load(Relaxed);
    if p != 0 {
        return p;
    }
    resolve(slot, name)
}

/// Finds what the entry point `name` (`mpi_send_`, `mpi_wait_f08_`)
/// forwards to: its profiling twin `pmpi_send_` (Open MPI) or
/// `pmpir_wait_f08_` (MPICH's `use mpi_f08`), else the library's own `name`.
#[cold]
#[inline(never)]
fn resolve(slot: &AtomicUsize, name: &CStr) -> usize {
    let n = name.to_string_lossy();
    let rest = n.strip_prefix("mpi_").unwrap_or(&n);
    let mut p = std::ptr::null_mut();
    for cand in [format!("p{n}"), format!("pmpir_{rest}"), n.to_string()] {
        let Ok(c) = std::ffi::CString::new(cand) else {
            continue;
        };
        // SAFETY: dlsym with a valid C string. RTLD_NEXT: never our own.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c.as_ptr()) };
        if !p.is_null() {
            break;
        }
    }
    if p.is_null() {
        // Nothing to forward to: the program called a Fortran MPI function
        // its MPI library does not have. Nothing sensible can follow.
        eprintln!(
            "mpiover: error: {} not found in the MPI library; cannot forward",
            name.to_string_lossy()
        );
        std::process::abort();
    }
    slot.store(p as usize, Relaxed);
    p as usize
}

/// An `INTEGER` argument (0 when absent).
///
/// # Safety
/// `p` is null or points to a Fortran `INTEGER`: an argument, which Fortran
/// passes by reference, live for the call.
#[inline(always)]
pub unsafe fn int(p: *const Fint) -> c_int {
    if p.is_null() {
        0
    } else {
        // SAFETY: non-null, so a Fortran INTEGER argument, live for the
        // call (this function's contract).
        unsafe { *p }
    }
}

/// The error code of a call (an absent optional `ierror` of `mpi_f08`:
/// success, since an error would have gone to the error handler).
///
/// # Safety
/// As [`int`].
#[inline(always)]
pub unsafe fn ierr(p: *const Fint) -> c_int {
    // SAFETY: this function's contract is `int`'s.
    unsafe { int(p) }
}

/// A choice buffer, Fortran sentinels as their C values (for reading only).
#[inline(always)]
pub fn buf(p: *const core::ffi::c_void) -> *const core::ffi::c_void {
    let a = p as usize;
    if is(a, &IN_PLACE) {
        consts::in_place() as *const core::ffi::c_void
    } else if is(a, &BOTTOM) {
        consts::bottom() as *const core::ffi::c_void
    } else {
        p
    }
}

// Handle conversions: functions in Open MPI, casts (macros) in MPICH.
#[cfg(mpi_handles_are_pointers)]
mod f2c {
    use super::*;
    /// The C handle of a Fortran datatype handle.
    ///
    /// # Safety
    /// `f` is a datatype handle the program passed: MPI's conversion accepts
    /// any value of its kind.
    #[inline(always)]
    pub unsafe fn datatype(f: Fint) -> MPI_Datatype {
        // SAFETY: `f` is a Fortran handle of this kind (this function's
        // contract); the conversion accepts any such value.
        unsafe { PMPI_Type_f2c(f) }
    }
    /// The C handle of a Fortran communicator handle.
    ///
    /// # Safety
    /// `f` is a communicator handle the program passed: MPI's conversion
    /// accepts any value of its kind.
    #[inline(always)]
    pub unsafe fn comm(f: Fint) -> MPI_Comm {
        // SAFETY: `f` is a Fortran handle of this kind (this function's
        // contract); the conversion accepts any such value.
        unsafe { PMPI_Comm_f2c(f) }
    }
    /// The C handle of a Fortran request handle.
    ///
    /// # Safety
    /// `f` is a request handle the program passed: MPI's conversion accepts
    /// any value of its kind.
    #[inline(always)]
    pub unsafe fn request(f: Fint) -> MPI_Request {
        // SAFETY: `f` is a Fortran handle of this kind (this function's
        // contract); the conversion accepts any such value.
        unsafe { PMPI_Request_f2c(f) }
    }
}
#[cfg(not(mpi_handles_are_pointers))]
mod f2c {
    use super::*;
    /// The C handle of a Fortran datatype handle.
    ///
    /// # Safety
    /// None here (a cast); the functions are unsafe as their Open MPI twins
    /// are.
    #[inline(always)]
    pub unsafe fn datatype(f: Fint) -> MPI_Datatype {
        f as MPI_Datatype
    }
    /// The C handle of a Fortran communicator handle.
    ///
    /// # Safety
    /// None here (a cast); the functions are unsafe as their Open MPI twins
    /// are.
    #[inline(always)]
    pub unsafe fn comm(f: Fint) -> MPI_Comm {
        f as MPI_Comm
    }
    /// The C handle of a Fortran request handle.
    ///
    /// # Safety
    /// None here (a cast); the functions are unsafe as their Open MPI twins
    /// are.
    #[inline(always)]
    pub unsafe fn request(f: Fint) -> MPI_Request {
        f as MPI_Request
    }
}

/// A datatype argument as its C handle.
///
/// # Safety
/// As [`int`]: `p` is null or points to a Fortran datatype handle.
#[inline(always)]
pub unsafe fn datatype(p: *const Fint) -> MPI_Datatype {
    // SAFETY: `p` is null or a datatype argument (this function's contract),
    // so `int` reads a handle value of that kind, which `f2c` accepts.
    unsafe { f2c::datatype(int(p)) }
}

/// A communicator argument as its C handle.
///
/// # Safety
/// As [`int`]: `p` is null or points to a Fortran communicator handle.
#[inline(always)]
pub unsafe fn comm(p: *const Fint) -> MPI_Comm {
    // SAFETY: `p` is null or a communicator argument (this function's contract),
    // so `int` reads a handle value of that kind, which `f2c` accepts.
    unsafe { f2c::comm(int(p)) }
}

/// A request argument as its C handle.
///
/// # Safety
/// As [`int`]: `p` is null or points to a Fortran request handle.
#[inline(always)]
pub unsafe fn request(p: *const Fint) -> MPI_Request {
    // SAFETY: `p` is null or a request argument (this function's contract),
    // so `int` reads a handle value of that kind, which `f2c` accepts.
    unsafe { f2c::request(int(p)) }
}

/// A request as the C handle's bits (what the request map is keyed by).
///
/// # Safety
/// As [`int`]: `p` is null or points to a Fortran request handle.
#[inline(always)]
pub unsafe fn req_bits(p: *const Fint) -> usize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: non-null, so a Fortran request argument (this function's
    // contract), a value that `f2c::request` accepts.
    let r = unsafe { f2c::request(*p) };
    if r.bits() == consts::request_null().bits() {
        0
    } else {
        r.bits()
    }
}

/// Fortran `INTEGER`s in one status (Open MPI 6, MPICH 5).
pub const STATUS_INTS: usize = std::mem::size_of::<MPI_Status>() / std::mem::size_of::<Fint>();

/// A Fortran status for a call whose caller passed `MPI_STATUS_IGNORE`.
pub struct FStatus([Fint; 16]);

impl FStatus {
    #[inline(always)]
    pub fn new() -> FStatus {
        FStatus([0; 16])
    }

    #[inline(always)]
    pub fn or(&mut self, p: *mut Fint) -> *mut Fint {
        if p.is_null() || is(p as usize, &STATUS_IGNORE) {
            self.0.as_mut_ptr()
        } else {
            p
        }
    }
}

impl Default for FStatus {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `p` is Fortran's `MPI_STATUSES_IGNORE`.
#[inline(always)]
pub fn is_statuses_ignore(p: *const Fint) -> bool {
    p.is_null() || is(p as usize, &STATUSES_IGNORE)
}

// ---------------------------------------------------------------------------
// Hand-written entry points: start and stop the tool.
// ---------------------------------------------------------------------------

// Each takes the prototype's arguments and one more word passed through
// (see `fortran_args` in build.rs).
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
