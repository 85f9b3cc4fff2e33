//! Fortran arguments as C values: `INTEGER`s, handles (`PMPI_*_f2c`), the
//! sentinels (`MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE`, ...), and the library
//! function each Fortran entry point forwards to. Used by the generated
//! Fortran wrappers (`fort`) and by the hot path (`rt`), so
//! it lives below both, apart from the hand-written entry points that start
//! and stop the tool.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::handle::Handle as _;

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
