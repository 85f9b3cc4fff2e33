//! The event being recorded: its fields, status slots, and reading counts
//! and statuses.

use std::mem::MaybeUninit;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use super::*;

/// What a posting call posted (the completion's tmax and wait state depend on it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Posted {
    /// A point-to-point send (`MPI_Isend`, `MPI_Send_init`, ...).
    Send,
    /// A point-to-point receive (`MPI_Irecv`, `MPI_Imrecv`, `MPI_Recv_init`).
    Recv,
    /// A non-blocking collective.
    Collective,
}

/// What a wrapper found out about one call.
pub struct Ev {
    /// The event's function: the key's and the request map's. An MPI-4
    /// large-count variant (`MPI_Send_c`) is recorded as its base function
    /// (`MPI_Send`): same semantics, so the same wait states and profile.
    pub fid: u16,
    /// The function actually called, for the per-function call counts.
    pub call_fid: u16,
    pub role: Role,
    pub peer: i32,
    pub p: u32,
    pub sent: u64,
    pub recvd: u64,
    /// What the completed requests were posted by (`NONE_FN` and no site
    /// when none, or when they were posted by different calls or sites).
    pub completes: u16,
    pub post_ra: SiteRef,
    /// Completions seen so far (for merging several into one key), and of
    /// them point-to-point receives and sends: saturating, as the key keeps
    /// them (counted as the key's, so that the key is built by copying).
    pub n_done: u16,
    pub n_recv: u16,
    pub n_send: u16,
    /// A point-to-point call to or from `MPI_PROC_NULL`.
    pub proc_null: bool,
}

impl Ev {
    #[inline(always)]
    pub fn new(fid: u16) -> Ev {
        Ev {
            fid,
            call_fid: fid,
            role: Role::None,
            peer: NONE_PEER,
            p: 0,
            sent: 0,
            recvd: 0,
            completes: NONE_FN,
            post_ra: SiteRef::NONE,
            n_done: 0,
            n_recv: 0,
            n_send: 0,
            proc_null: false,
        }
    }
}

/// A status for the call when the caller passed `MPI_STATUS_IGNORE`.
pub struct StatusSlot(MaybeUninit<MPI_Status>);

impl StatusSlot {
    #[inline(always)]
    pub fn new() -> StatusSlot {
        StatusSlot(MaybeUninit::zeroed())
    }
    #[inline(always)]
    pub fn or(&mut self, status: *mut MPI_Status) -> *mut MPI_Status {
        if status == consts::status_ignore() || status.is_null() {
            self.0.as_mut_ptr()
        } else {
            status
        }
    }
}

impl StatusSlot {
    /// The C status of a Fortran status (for reading the source and size).
    ///
    /// # Safety
    /// `f` points to a Fortran status (MPI filled it or the tool's own).
    #[inline(always)]
    pub unsafe fn from_fortran(&mut self, f: *const crate::fort_conv::Fint) -> *mut MPI_Status {
        // SAFETY: `f` is a Fortran status array of MPI_F_STATUS_SIZE integers (this function's contract).
        unsafe {
            PMPI_Status_f2c(f, self.0.as_mut_ptr());
            self.0.as_mut_ptr()
        }
    }
}

impl Default for StatusSlot {
    fn default() -> Self {
        Self::new()
    }
}

/// Source rank of a status (in the communicator's group).
///
/// # Safety
/// `st` is null or points to a status MPI filled.
#[inline(always)]
pub unsafe fn status_source(st: *const MPI_Status) -> i32 {
    // SAFETY: `st` points at a status MPI filled, or at the tool's own slot (this function's contract).
    unsafe {
        if st.is_null() {
            return MPI_PROC_NULL;
        }
        (*st).MPI_SOURCE
    }
}

/// Bytes received according to a status.
///
/// # Safety
/// `st` is null or points to a status MPI filled.
#[inline(always)]
pub unsafe fn status_bytes(st: *const MPI_Status) -> Option<u64> {
    if st.is_null() {
        return None;
    }
    #[cfg(mpi_flavor = "openmpi")]
    {
        // SAFETY: `st` is non-null, so a status MPI filled (this function's
        // contract); Open MPI keeps the received byte count in `_ucount`.
        Some(unsafe { (*st)._ucount } as u64)
    }
    #[cfg(not(mpi_flavor = "openmpi"))]
    {
        let mut c: MPI_Count = 0;
        // SAFETY: `st` is non-null, so a status MPI filled (this function's
        // contract); MPI_BYTE is the library's handle, `c` a live local.
        if unsafe { PMPI_Get_elements_x(st, consts::byte(), &mut c) } == 0 && c >= 0 {
            Some(c as u64)
        } else {
            None
        }
    }
}

/// Sum of `counts[0..n]` (null-safe).
///
/// # Safety
/// `counts` is null or points to at least `n` counts.
#[inline]
pub unsafe fn sum_counts<T: ToCount>(counts: *const T, n: u32) -> u64 {
    // SAFETY: `counts` holds the `n` (or more) elements MPI requires of the caller for this communicator (this function's contract).
    unsafe {
        if counts.is_null() {
            return 0;
        }
        let mut s = 0u64;
        for i in 0..n as usize {
            s = s.saturating_add((*counts.add(i)).cnt());
        }
        s
    }
}

/// `counts[i]`, null- and range-safe.
///
/// # Safety
/// `counts` is null or points to at least `n` counts.
#[inline]
pub unsafe fn nth_count<T: ToCount>(counts: *const T, i: i32, n: u32) -> u64 {
    // SAFETY: `counts` holds the `n` (or more) elements MPI requires of the caller for this communicator (this function's contract).
    unsafe {
        if counts.is_null() || i < 0 || i as u32 >= n {
            return 0;
        }
        (*counts.add(i as usize)).cnt()
    }
}
