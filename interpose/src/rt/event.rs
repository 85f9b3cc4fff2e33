//! The event being recorded: its fields, status slots, and reading counts
//! and statuses.

use std::mem::MaybeUninit;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::site_ref::SiteRef;

use super::call_key::CallKey;
use super::state::{Role, ToCount, NONE_FN, NONE_PEER};

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

/// What a wrapper found out about one call: its key, built in place (the
/// event adds the call under it without copying it).
pub struct Ev {
    /// The key: the call's site, and its function (an MPI-4 large-count
    /// variant, `MPI_Send_c`, is recorded as its base function, `MPI_Send`:
    /// same semantics, so the same wait states and profile), p, bytes
    /// (the larger of the bytes sent and received), peer, role. A
    /// completion's: what the completed requests were posted by
    /// (`completes`, `post_ra`: `NONE_FN` and no site when none, or when
    /// posted by different calls or sites) and how many it completed
    /// (`nreq`, `nrecv`, `nsend`: saturating, as the key keeps them).
    pub key: CallKey,
}

impl Ev {
    /// The event of a call of function `fid` at `site`.
    #[inline(always)]
    pub fn new(fid: u16, site: SiteRef) -> Ev {
        Ev::with(fid, site, KeyFields::NONE)
    }

    /// The event of a call of function `fid` at `site` with the fields `k`.
    /// Built as the key's six words, so that each is one store (field by
    /// field, the compiler wrote the last two words in four stores).
    #[inline(always)]
    pub fn with(fid: u16, site: SiteRef, k: KeyFields) -> Ev {
        let mut key = CallKey::from_words([
            site.bits() as u64,
            SiteRef::NONE.bits() as u64,
            k.bytes,
            0,
            // fid, completes; nreq and nrecv 0.
            fid as u64 | (NONE_FN as u64) << 16,
            // nsend 0, role, spare bytes 0.
            (k.role as u8 as u64) << 16,
        ]);
        // p and peer as two stores (combined into one word they took a
        // shift and an or more).
        key.p = k.p;
        key.peer = k.peer;
        Ev { key }
    }
}

/// The key's fields a wrapper finds from its arguments after a successful
/// call (the rest are the event's function and site, and a completion's
/// requests), kept in locals until the event is built from them at once
/// (`Ev::with`).
#[derive(Clone, Copy)]
pub struct KeyFields {
    pub p: u32,
    pub peer: i32,
    pub bytes: u64,
    pub role: Role,
}

impl KeyFields {
    /// A failed call's, or a function's without them.
    pub const NONE: KeyFields = KeyFields {
        p: 0,
        peer: NONE_PEER,
        bytes: 0,
        role: Role::None,
    };
}

/// A status for the call when the caller passed `MPI_STATUS_IGNORE`. Not
/// initialized: the tool reads a status only where MPI has set it (the call
/// succeeded, and a probe or test found its message or completion), as it
/// reads the caller's own; zeroing it was three stores per call.
pub struct StatusSlot(MaybeUninit<MPI_Status>);

impl StatusSlot {
    #[inline(always)]
    pub fn new() -> StatusSlot {
        StatusSlot(MaybeUninit::uninit())
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
