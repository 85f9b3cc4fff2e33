//! Process-wide state: the enable state the hooks test on every call, the
//! epochs that invalidate per-thread caches, the settings read at start-up,
//! and the small helpers the generated wrappers share (handles, counts).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

use mpiover_mpisys::consts;

use crate::names::NFUNCS;

/// Recording on (bit 0); the clock is the TSC (bit 1, set once at init,
/// before recording starts: the wrappers' clock reads test this word rather
/// than the timer's own flag, one instruction less each); bits 2..8 count
/// pauses (`MPI_Pcontrol(0)` then `(1)`, modulo 64), bits 8..32
/// `MPI_Pcontrol(2)` resets, bits 32.. freed datatypes (`MPI_Type_free`).
/// A thread that sees the low half change forgets where its current region
/// started; one that sees the high half change forgets the datatype sizes
/// it cached. Every wrapper compares the whole word with the one its
/// thread saw last (`enter`), so a freed datatype costs the hot path no
/// test of its own (a separate epoch was three instructions per lookup).
pub static STATE: AtomicU64 = AtomicU64::new(0);
pub const ENABLED: u64 = 1;
pub const CLOCK_TSC: u64 = 1 << 1;
pub const PAUSES: u64 = 0xfc;
pub const PAUSE_STEP: u64 = 1 << 2;
pub const RESET_STEP: u64 = 1 << 8;
/// The resets' bits.
pub const RESETS: u64 = 0xffff_ff00;
pub const TYPE_FREED_STEP: u64 = 1 << 32;

/// Recording on (`MPI_Pcontrol(1)`); returns the previous word. Turning it
/// on after a pause is counted, so that every thread's next call sees a new
/// state word.
pub fn resume() -> u64 {
    let step = |s: u64| {
        (s & ENABLED == 0).then(|| (s & !PAUSES) | (s.wrapping_add(PAUSE_STEP) & PAUSES) | ENABLED)
    };
    STATE
        .fetch_update(Relaxed, Relaxed, step)
        .unwrap_or_else(|s| s)
}
/// Bumped by `MPI_Comm_free`/`MPI_Comm_disconnect` (per-thread caches clear).
pub static COMM_EPOCH: AtomicU32 = AtomicU32::new(0);
/// `MPIOVER_DEPTH` (its default until `MPI_Init` sets it).
pub static DEPTH: AtomicU32 = AtomicU32::new(crate::opt::DEFAULT_DEPTH);
/// `MPIOVER_MAX_KEYS` (its default until `MPI_Init` sets it).
pub static MAX_KEYS: AtomicU32 = AtomicU32::new(crate::opt::DEFAULT_MAX_KEYS);
/// Address range of libmpiover itself (frames skipped for depth > 1).
pub static SELF_LO: AtomicUsize = AtomicUsize::new(0);
pub static SELF_HI: AtomicUsize = AtomicUsize::new(0);
/// This process's rank in `MPI_COMM_WORLD` and the world size (set at init).
pub static WORLD_RANK: AtomicU32 = AtomicU32::new(0);
pub static WORLD_SIZE: AtomicU32 = AtomicU32::new(0);
/// `MPI_Group` of the world, as bits (Open MPI: a pointer; MPICH: an int).
pub(crate) static WORLD_GROUP: AtomicUsize = AtomicUsize::new(0);

pub const NONE_PEER: i32 = i32::MIN;
/// No function: a key's `completes` when it completed nothing, or requests
/// posted by different calls or sites.
pub const NONE_FN: u16 = u16::MAX;
/// Function id of the fold-everything entry.
pub const FID_OTHER: u16 = NFUNCS as u16;
/// This rank's role in a rooted collective (one byte of a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Role {
    /// Not a rooted collective.
    #[default]
    None = 0,
    Root = 1,
    NonRoot = 2,
}

impl Role {
    /// The record's spelling.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Role::Root => Some("root"),
            Role::NonRoot => Some("nonroot"),
            Role::None => None,
        }
    }
}

/// Counts of either C type (`int`, `MPI_Count`), negative read as 0.
pub trait ToCount: Copy {
    fn cnt(self) -> u64;
}
impl ToCount for i32 {
    #[inline(always)]
    fn cnt(self) -> u64 {
        self.max(0) as u64
    }
}
impl ToCount for i64 {
    #[inline(always)]
    fn cnt(self) -> u64 {
        self.max(0) as u64
    }
}

#[inline(always)]
pub fn cnt<T: ToCount>(c: T) -> u64 {
    c.cnt()
}

#[inline(always)]
pub fn in_place(buf: *const core::ffi::c_void) -> bool {
    std::ptr::eq(buf, consts::in_place() as *const core::ffi::c_void)
}

/// Communicator / datatype freed: per-thread caches must forget handles.
pub fn comm_freed() {
    COMM_EPOCH.fetch_add(1, Relaxed);
}
pub fn type_freed() {
    STATE.fetch_add(TYPE_FREED_STEP, Relaxed);
}
