//! The hot path: the per-thread re-entry guard, per-thread aggregation, and the
//! communicator / datatype / request caches the generated wrappers use.
//!
//! Rules (bytehound's preload does the same): nothing here panics, does I/O or
//! formats; the only allocations are bounded (a thread's state once, a new
//! key's entry, a histogram growing to the range of durations seen, cache
//! entries), and a thread whose TLS is gone simply forwards.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering::*};

use mpiover_common::histogram::bucket_index;
use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::names::{FN_NAMES, NFUNCS};

// ---------------------------------------------------------------------------
// Global state
// ---------------------------------------------------------------------------

/// Recording on (bit 0); bits 8.. count `MPI_Pcontrol(2)` resets.
pub static STATE: AtomicU32 = AtomicU32::new(0);
pub const ENABLED: u32 = 1;
pub const RESET_STEP: u32 = 1 << 8;
/// Bumped by `MPI_Comm_free`/`MPI_Comm_disconnect` (per-thread caches clear).
pub static COMM_EPOCH: AtomicU32 = AtomicU32::new(0);
/// Bumped by `MPI_Type_free`.
pub static TYPE_EPOCH: AtomicU32 = AtomicU32::new(0);
/// `MPIOVER_DEPTH`.
pub static DEPTH: AtomicU32 = AtomicU32::new(1);
/// `MPIOVER_MAX_KEYS`.
pub static MAX_KEYS: AtomicU32 = AtomicU32::new(4096);
/// Address range of libmpiover itself (frames skipped for depth > 1).
pub static SELF_LO: AtomicUsize = AtomicUsize::new(0);
pub static SELF_HI: AtomicUsize = AtomicUsize::new(0);
/// This process's rank in `MPI_COMM_WORLD` and the world size (set at init).
pub static WORLD_RANK: AtomicU32 = AtomicU32::new(0);
pub static WORLD_SIZE: AtomicU32 = AtomicU32::new(0);
/// `MPI_Group` of the world, as bits (Open MPI: a pointer; MPICH: an int).
static WORLD_GROUP: AtomicUsize = AtomicUsize::new(0);
/// Every thread's state, a lock-free list (pushed once per thread, never
/// removed: a thread's data outlives it and is written at the end).
static THREADS: AtomicPtr<ThreadState> = AtomicPtr::new(null_mut());

pub const NONE_PEER: i32 = i32::MIN;
pub const NONE_FN: u16 = u16::MAX;
pub const MIXED_FN: u16 = u16::MAX - 1;
/// Function id of the fold-everything entry.
pub const FID_OTHER: u16 = NFUNCS as u16;
pub const ROLE_NONE: u8 = 0;
pub const ROLE_ROOT: u8 = 1;
pub const ROLE_NONROOT: u8 = 2;

/// Handles as bits, whatever the MPI's handle representation.
pub trait Handle: Copy {
    fn bits(self) -> usize;
}
impl<T> Handle for *mut T {
    #[inline(always)]
    fn bits(self) -> usize {
        self as usize
    }
}
impl Handle for i32 {
    #[inline(always)]
    fn bits(self) -> usize {
        self as u32 as usize
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

/// The wrapper's return address, through the frame pointer.
/// Must be expanded inside the `extern "C"` wrapper itself, after its PMPI
/// call (the frame is certainly set up there).
#[cfg(all(target_arch = "x86_64", mpiover_fp))]
#[macro_export]
macro_rules! caller {
    () => {{
        let fp: usize;
        // SAFETY: with frame pointers forced (build.rs checks), rbp points at
        // the saved rbp of this frame and the return address sits above it.
        unsafe {
            core::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags));
            *(fp as *const usize).add(1)
        }
    }};
}

/// Without frame pointers the first frame outside libmpiover is found by
/// unwinding (slow, but never wrong).
#[cfg(not(all(target_arch = "x86_64", mpiover_fp)))]
#[macro_export]
macro_rules! caller {
    () => {
        $crate::rt::unwound_site(1)
    };
}

/// Address ranges of an MPI library's Fortran bindings that call the C
/// `MPI_*` functions (MPICH's libmpichfort): a C wrapper called from there
/// serves a Fortran call, whose site is the first frame outside them.
const MAX_BINDINGS: usize = 4;
static BINDINGS: [(AtomicUsize, AtomicUsize); MAX_BINDINGS] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_BINDINGS];
static ANY_BINDING: AtomicBool = AtomicBool::new(false);

/// Registers a Fortran binding library's address range (at init).
pub fn add_binding(lo: usize, hi: usize) {
    for (l, h) in &BINDINGS {
        if l.load(Relaxed) == 0 {
            l.store(lo, Relaxed);
            h.store(hi, Relaxed);
            ANY_BINDING.store(true, Relaxed);
            return;
        }
    }
}

#[inline(always)]
fn in_binding(ip: usize) -> bool {
    if !ANY_BINDING.load(Relaxed) {
        return false;
    }
    BINDINGS
        .iter()
        .any(|(l, h)| ip >= l.load(Relaxed) && ip < h.load(Relaxed))
}

/// The call site for a return address `ra` of a wrapper: `ra` itself at
/// depth 1 unless it lies in a Fortran binding library, else found by
/// unwinding.
#[inline(always)]
pub fn site_of(ra: usize) -> usize {
    let depth = DEPTH.load(Relaxed);
    if depth <= 1 && !in_binding(ra) {
        ra
    } else {
        unwound_site(depth)
    }
}

/// The `n`-th frame outside libmpiover and the Fortran binding libraries
/// (1 = the direct caller of MPI).
#[inline(never)]
pub fn unwound_site(n: u32) -> usize {
    let (lo, hi) = (SELF_LO.load(Relaxed), SELF_HI.load(Relaxed));
    let mut seen = 0u32;
    let mut found = 0usize;
    // SAFETY: unwinding our own stack; the callback neither panics nor allocates.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            let ip = frame.ip() as usize;
            if (ip >= lo && ip < hi) || in_binding(ip) {
                return true;
            }
            seen += 1;
            if seen >= n {
                found = ip;
                return false;
            }
            true
        });
    }
    found
}

// ---------------------------------------------------------------------------
// Re-entry guard
// ---------------------------------------------------------------------------

struct Tls {
    busy: Cell<bool>,
    ts: Cell<*mut ThreadState>,
}

thread_local! {
    // Const-initialized, no destructor: never in a "destroyed" state, no lazy
    // registration on the hot path.
    static TLS: Tls = const { Tls { busy: Cell::new(false), ts: Cell::new(null_mut()) } };
}

/// Proof that this thread is inside a wrapper and may record. Dropping it
/// leaves the tool.
pub struct Guard {
    ts: NonNull<ThreadState>,
    busy: *const Cell<bool>,
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the TLS cell lives as long as the thread (no destructor).
        unsafe { (*self.busy).set(false) }
    }
}

/// Enters the tool: `None` when recording is off, or when this thread is
/// already inside the tool (MPI calling MPI, the tool calling PMPI), or when
/// the thread's state cannot be had. Then the wrapper just forwards.
#[inline(always)]
pub fn enter() -> Option<Guard> {
    let st = STATE.load(Relaxed);
    if st & ENABLED == 0 {
        return None;
    }
    TLS.try_with(|t| {
        if t.busy.get() {
            return None;
        }
        let mut ts = t.ts.get();
        if ts.is_null() {
            ts = ThreadState::create();
            if ts.is_null() {
                return None;
            }
            t.ts.set(ts);
        }
        t.busy.set(true);
        // SAFETY: ts is non-null, owned by this thread.
        let ts = unsafe { NonNull::new_unchecked(ts) };
        let g = Guard {
            ts,
            busy: &t.busy as *const Cell<bool>,
        };
        // SAFETY: as above.
        unsafe {
            if (*ts.as_ptr()).seen != st {
                (*ts.as_ptr()).sync(st);
            }
        }
        Some(g)
    })
    .ok()
    .flatten()
}

/// Marks this thread as inside the tool without a state (hand-written hooks
/// that call PMPI functions which might come back through wrappers).
pub struct Busy {
    was: bool,
}

pub fn busy() -> Busy {
    let was = TLS.try_with(|t| t.busy.replace(true)).unwrap_or(true);
    Busy { was }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let was = self.was;
        let _ = TLS.try_with(|t| t.busy.set(was));
    }
}

/// Whether this thread is inside the tool (a wrapper or a hook).
pub fn is_busy() -> bool {
    TLS.try_with(|t| t.busy.get()).unwrap_or(true)
}

/// This thread's state, if it has one (for init-time measurements).
pub fn this_thread_state() -> *mut ThreadState {
    TLS.try_with(|t| t.ts.get()).unwrap_or(null_mut())
}

// ---------------------------------------------------------------------------
// Aggregation
// ---------------------------------------------------------------------------

/// The aggregation key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Key {
    pub ra: usize,
    pub post_ra: usize,
    pub bytes: u64,
    pub p: u32,
    pub peer: i32,
    pub fid: u16,
    pub completes: u16,
    pub role: u8,
    /// Completions: requests completed per call, and of them point-to-point
    /// receives and sends (saturating); 0 for other functions.
    pub nreq: u16,
    pub nrecv: u16,
    pub nsend: u16,
}

impl Key {
    /// What a completion key completed per call; `None` for other
    /// functions (not on the hot path: once per new key and at the end).
    pub fn requests(&self, function: &str) -> Option<mpiover_common::completion::Requests> {
        mpiover_common::completion::is_completion(function).then_some(
            mpiover_common::completion::Requests {
                n: self.nreq as u32,
                recv: self.nrecv as u32,
                send: self.nsend as u32,
            },
        )
    }

    #[inline(always)]
    fn hash(&self) -> u64 {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = (self.ra as u64).wrapping_mul(K);
        h = (h.rotate_left(5) ^ self.bytes).wrapping_mul(K);
        h = (h.rotate_left(5) ^ (((self.p as u64) << 32) | self.peer as u32 as u64))
            .wrapping_mul(K);
        h = (h.rotate_left(5)
            ^ (self.fid as u64 | ((self.completes as u64) << 16) | ((self.role as u64) << 32)))
            .wrapping_mul(K);
        h = (h.rotate_left(5) ^ self.post_ra as u64).wrapping_mul(K);
        h = (h.rotate_left(5)
            ^ (self.nreq as u64 | ((self.nrecv as u64) << 16) | ((self.nsend as u64) << 32)))
            .wrapping_mul(K);
        h
    }
}

/// One key's statistics, durations in raw timer units.
pub struct Agg {
    pub key: Key,
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    /// Sum of max(0, t - tmax) (raw units), when `tmax` is known.
    pub over: u64,
    /// tmax in raw units, `u64::MAX` when there is none.
    pub tmax: u64,
    pub tmax_s: Option<mpiover_common::profile::Lookup>,
    /// The rule tmax was composed by (`mpiover_common::completion`), or why
    /// there is none, when a profile is in use.
    pub tmax_composed: Option<&'static str>,
    pub tmax_missing: Option<&'static str>,
    /// Posts: the site of the completion that completed this key's
    /// requests (0: none seen yet; the latest one wins).
    pub done_ra: usize,
    /// Dense histogram: (count, sum) of buckets `lo..lo + hist.len()`.
    pub hist_lo: u32,
    pub hist: Vec<[u64; 2]>,
}

impl Agg {
    fn new(key: Key) -> Agg {
        let resolved = if key.fid == FID_OTHER {
            None
        } else {
            let completes = if key.completes < MIXED_FN {
                FN_NAMES.get(key.completes as usize).copied()
            } else {
                None
            };
            let function = FN_NAMES.get(key.fid as usize).copied().unwrap_or("?");
            crate::profile_hook::tmax(&mpiover_common::completion::KeyRef {
                function,
                p: key.p,
                bytes: key.bytes,
                role: role_name(key.role),
                completes,
                requests: key.requests(function),
            })
        };
        let (tmax_s, tmax_composed, tmax_missing) = match resolved {
            Some(Ok(r)) => (Some(r.lookup), r.composed, None),
            Some(Err(m)) => (None, None, Some(m.0)),
            None => (None, None, None),
        };
        let tmax = match tmax_s {
            Some(l) if l.tmax_s.is_finite() && l.tmax_s >= 0.0 => {
                let t = l.tmax_s;
                let u = crate::timer::unit_quick();
                if u > 0.0 {
                    (t / u) as u64
                } else {
                    u64::MAX
                }
            }
            _ => u64::MAX,
        };
        Agg {
            key,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            over: 0,
            tmax,
            tmax_s,
            tmax_composed,
            tmax_missing,
            done_ra: 0,
            hist_lo: 0,
            hist: Vec::new(),
        }
    }

    #[inline(always)]
    fn add(&mut self, dt: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(dt);
        self.min = self.min.min(dt);
        self.max = self.max.max(dt);
        if self.tmax != u64::MAX {
            self.over = self.over.wrapping_add(dt.saturating_sub(self.tmax));
        }
        let i = bucket_index(dt) as u32;
        match self.hist.get_mut(i.wrapping_sub(self.hist_lo) as usize) {
            Some(b) => {
                b[0] += 1;
                b[1] = b[1].wrapping_add(dt);
            }
            None => self.grow(i, dt),
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: u32, dt: u64) {
        if self.hist.is_empty() {
            self.hist_lo = i;
            self.hist.push([1, dt]);
            return;
        }
        if i < self.hist_lo {
            let extra = (self.hist_lo - i) as usize;
            let mut v = Vec::with_capacity(self.hist.len() + extra);
            v.resize(extra, [0, 0]);
            v.extend_from_slice(&self.hist);
            self.hist = v;
            self.hist_lo = i;
        } else {
            let len = (i - self.hist_lo) as usize + 1;
            self.hist.resize(len, [0, 0]);
        }
        if let Some(b) = self.hist.get_mut((i - self.hist_lo) as usize) {
            b[0] += 1;
            b[1] = b[1].wrapping_add(dt);
        }
    }

    pub fn reset(&mut self) {
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.over = 0;
        self.hist.clear();
        self.hist_lo = 0;
    }
}

pub fn role_name(r: u8) -> Option<&'static str> {
    match r {
        ROLE_ROOT => Some("root"),
        ROLE_NONROOT => Some("nonroot"),
        _ => None,
    }
}

/// Open-addressing table of keys (linear probing, no deletion), capped.
pub struct Table {
    slots: Box<[u32]>,
    shift: u32,
    pub entries: Vec<Agg>,
    cap: usize,
    /// The latest entry of each call site (by a few bits of its address):
    /// a loop that alternates between sites (post, post, complete) finds
    /// its key here without hashing it.
    recent: [usize; RECENT],
    /// Index of the fold entry, once created.
    other: usize,
    pub folded_calls: u64,
    fold_bits: Vec<u64>,
}

const FOLD_BITS: usize = 1 << 16;
const RECENT: usize = 64;

#[inline(always)]
fn recent_slot(ra: usize) -> usize {
    (ra ^ (ra >> 6)) & (RECENT - 1)
}

impl Table {
    fn new(cap: usize) -> Table {
        let cap = cap.clamp(1, 1 << 24);
        let nslots = (cap * 2).next_power_of_two().max(16);
        Table {
            slots: vec![0u32; nslots].into_boxed_slice(),
            shift: 64 - nslots.trailing_zeros(),
            entries: Vec::with_capacity(cap + 1),
            cap,
            recent: [usize::MAX; RECENT],
            other: usize::MAX,
            folded_calls: 0,
            fold_bits: Vec::new(),
        }
    }

    /// Adds a call under `key`; returns the index of its entry, or
    /// `usize::MAX` when the key was folded into `other`.
    #[inline(always)]
    fn add(&mut self, key: &Key, dt: u64) -> usize {
        let r = recent_slot(key.ra);
        let last = self.recent.get(r).copied().unwrap_or(usize::MAX);
        if let Some(e) = self.entries.get_mut(last) {
            if e.key == *key {
                e.add(dt);
                return last;
            }
        }
        let idx = self.add_slow(key, dt);
        if let Some(s) = self.recent.get_mut(r) {
            *s = idx;
        }
        idx
    }

    #[inline(never)]
    fn add_slow(&mut self, key: &Key, dt: u64) -> usize {
        let h = key.hash();
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = match self.slots.get(i & mask) {
                Some(&s) => s,
                None => return usize::MAX,
            };
            if s == 0 {
                break;
            }
            let idx = s as usize - 1;
            if let Some(e) = self.entries.get_mut(idx) {
                if e.key == *key {
                    e.add(dt);
                    return idx;
                }
            }
            i += 1;
        }
        // A new key.
        if self.entries.len() < self.cap {
            let idx = self.entries.len();
            self.entries.push(Agg::new(*key));
            if let Some(slot) = self.slots.get_mut(i & mask) {
                *slot = idx as u32 + 1;
            }
            if let Some(e) = self.entries.get_mut(idx) {
                e.add(dt);
            }
            return idx;
        }
        self.fold(h, dt);
        usize::MAX
    }

    #[cold]
    fn fold(&mut self, h: u64, dt: u64) {
        if self.other == usize::MAX {
            self.other = self.entries.len();
            self.entries.push(Agg::new(Key {
                ra: 0,
                post_ra: 0,
                bytes: 0,
                p: 0,
                peer: NONE_PEER,
                fid: FID_OTHER,
                completes: NONE_FN,
                role: ROLE_NONE,
                nreq: 0,
                nrecv: 0,
                nsend: 0,
            }));
        }
        if let Some(e) = self.entries.get_mut(self.other) {
            e.add(dt);
        }
        self.folded_calls += 1;
        if self.fold_bits.is_empty() {
            self.fold_bits = vec![0u64; FOLD_BITS / 64];
        }
        let b = (h as usize) & (FOLD_BITS - 1);
        if let Some(w) = self.fold_bits.get_mut(b / 64) {
            *w |= 1 << (b % 64);
        }
    }

    /// Estimated number of distinct folded keys (linear counting).
    pub fn folded_keys(&self) -> u64 {
        if self.fold_bits.is_empty() {
            return 0;
        }
        let set: u64 = self.fold_bits.iter().map(|w| w.count_ones() as u64).sum();
        let m = FOLD_BITS as f64;
        let zero = (FOLD_BITS as u64 - set).max(1) as f64;
        (m * (m / zero).ln()).round() as u64
    }

    fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = 0);
        self.entries.clear();
        self.recent = [usize::MAX; RECENT];
        self.other = usize::MAX;
        self.folded_calls = 0;
        self.fold_bits.clear();
    }
}

// ---------------------------------------------------------------------------
// Communicators
// ---------------------------------------------------------------------------

/// What an event needs of its communicator.
#[derive(Clone, Copy)]
pub struct CommInfo {
    /// Local group size (`MPI_Comm_size`).
    pub size: u32,
    /// Size of the group peers are ranks of (the remote group of an
    /// intercommunicator, else `size`).
    pub rsize: u32,
    /// This process's rank in the local group.
    pub rank: i32,
    pub inter: bool,
    /// 0: the world, 1: self, 2: other (translate through `slot`).
    kind: u8,
    slot: u8,
}

const COMM_SLOTS: usize = 32;

struct CommEntry {
    handle: usize,
    info: CommInfo,
    world: Box<[i32]>,
    deg: Option<(u32, u32)>,
}

pub struct CommCache {
    epoch: u32,
    entries: Vec<CommEntry>,
    next_victim: usize,
}

static WORLD_INFO_SIZE: AtomicU32 = AtomicU32::new(0);

/// Records the world's geometry and group at init (with the guard held).
pub fn init_world(rank: i32, size: i32) {
    WORLD_RANK.store(rank.max(0) as u32, Relaxed);
    WORLD_SIZE.store(size.max(0) as u32, Relaxed);
    WORLD_INFO_SIZE.store(size.max(0) as u32, Relaxed);
    let mut g: MaybeUninit<MPI_Group> = MaybeUninit::uninit();
    // SAFETY: plain PMPI call with valid out-pointer.
    unsafe {
        if PMPI_Comm_group(consts::comm_world(), g.as_mut_ptr()) == 0 {
            WORLD_GROUP.store(g.assume_init().bits(), Relaxed);
        }
    }
}

#[cfg(mpi_handles_are_pointers)]
fn world_group() -> MPI_Group {
    WORLD_GROUP.load(Relaxed) as MPI_Group
}
#[cfg(not(mpi_handles_are_pointers))]
fn world_group() -> MPI_Group {
    WORLD_GROUP.load(Relaxed) as u32 as i32 as MPI_Group
}

impl CommCache {
    fn new() -> CommCache {
        CommCache {
            epoch: COMM_EPOCH.load(Relaxed),
            entries: Vec::new(),
            next_victim: 0,
        }
    }

    fn lookup(&mut self, comm: MPI_Comm) -> CommInfo {
        let h = comm.bits();
        if h == consts::comm_world().bits() {
            let s = WORLD_INFO_SIZE.load(Relaxed);
            return CommInfo {
                size: s,
                rsize: s,
                rank: WORLD_RANK.load(Relaxed) as i32,
                inter: false,
                kind: 0,
                slot: 0,
            };
        }
        if h == consts::comm_self().bits() {
            return CommInfo {
                size: 1,
                rsize: 1,
                rank: 0,
                inter: false,
                kind: 1,
                slot: 0,
            };
        }
        let e = COMM_EPOCH.load(Relaxed);
        if e != self.epoch {
            self.entries.clear();
            self.epoch = e;
        }
        for (i, c) in self.entries.iter().enumerate() {
            if c.handle == h {
                let mut info = c.info;
                info.slot = i as u8;
                return info;
            }
        }
        self.insert(comm)
    }

    #[cold]
    #[inline(never)]
    fn insert(&mut self, comm: MPI_Comm) -> CommInfo {
        let mut info = CommInfo {
            size: 0,
            rsize: 0,
            rank: -1,
            inter: false,
            kind: 2,
            slot: 0,
        };
        let mut world: Vec<i32> = Vec::new();
        // SAFETY: PMPI calls on a communicator the just-successful call used.
        unsafe {
            let (mut inter, mut size, mut rank) = (0i32, 0i32, -1i32);
            PMPI_Comm_test_inter(comm, &mut inter);
            PMPI_Comm_size(comm, &mut size);
            PMPI_Comm_rank(comm, &mut rank);
            info.inter = inter != 0;
            info.size = size.max(0) as u32;
            info.rank = rank;
            let mut rsize = size;
            let mut group: MaybeUninit<MPI_Group> = MaybeUninit::uninit();
            let ok = if info.inter {
                PMPI_Comm_remote_size(comm, &mut rsize);
                PMPI_Comm_remote_group(comm, group.as_mut_ptr())
            } else {
                PMPI_Comm_group(comm, group.as_mut_ptr())
            };
            info.rsize = rsize.max(0) as u32;
            if ok == 0 && rsize > 0 {
                let mut group = group.assume_init();
                let ranks: Vec<i32> = (0..rsize).collect();
                world = vec![NONE_PEER; rsize as usize];
                if PMPI_Group_translate_ranks(
                    group,
                    rsize,
                    ranks.as_ptr(),
                    world_group(),
                    world.as_mut_ptr(),
                ) != 0
                {
                    world.clear();
                }
                for w in world.iter_mut() {
                    if *w < 0 {
                        *w = NONE_PEER;
                    }
                }
                PMPI_Group_free(&mut group);
            }
        }
        let entry = CommEntry {
            handle: comm.bits(),
            info,
            world: world.into_boxed_slice(),
            deg: None,
        };
        let slot = if self.entries.len() < COMM_SLOTS {
            self.entries.push(entry);
            self.entries.len() - 1
        } else {
            let v = self.next_victim % COMM_SLOTS;
            self.next_victim = self.next_victim.wrapping_add(1);
            if let Some(e) = self.entries.get_mut(v) {
                *e = entry;
            }
            v
        };
        info.slot = slot as u8;
        info
    }

    #[inline(always)]
    fn world_rank(&self, info: &CommInfo, r: i32) -> i32 {
        if r < 0 {
            return NONE_PEER;
        }
        match info.kind {
            0 => r,
            1 => WORLD_RANK.load(Relaxed) as i32,
            _ => self
                .entries
                .get(info.slot as usize)
                .and_then(|e| e.world.get(r as usize).copied())
                .unwrap_or(NONE_PEER),
        }
    }

    /// Translation through what is already cached (no MPI call).
    fn translate_cached(&self, handle: usize, r: i32) -> i32 {
        if r < 0 || handle == 0 {
            return NONE_PEER;
        }
        if handle == consts::comm_world().bits() {
            return r;
        }
        if handle == consts::comm_self().bits() {
            return WORLD_RANK.load(Relaxed) as i32;
        }
        if self.epoch != COMM_EPOCH.load(Relaxed) {
            return NONE_PEER;
        }
        self.entries
            .iter()
            .find(|e| e.handle == handle)
            .and_then(|e| e.world.get(r as usize).copied())
            .unwrap_or(NONE_PEER)
    }

    fn degrees(&mut self, comm: MPI_Comm, info: &CommInfo) -> (u32, u32) {
        if info.kind != 2 {
            return (0, 0);
        }
        if let Some(d) = self.entries.get(info.slot as usize).and_then(|e| e.deg) {
            return d;
        }
        let (mut indeg, mut outdeg) = (0i32, 0i32);
        // SAFETY: PMPI calls on a valid topology communicator.
        unsafe {
            let mut topo = 0i32;
            PMPI_Topo_test(comm, &mut topo);
            if topo == consts::dist_graph() {
                let mut weighted = 0;
                PMPI_Dist_graph_neighbors_count(comm, &mut indeg, &mut outdeg, &mut weighted);
            } else if topo == consts::graph() {
                PMPI_Graph_neighbors_count(comm, info.rank, &mut indeg);
                outdeg = indeg;
            } else if topo == consts::cart() {
                let mut nd = 0;
                PMPI_Cartdim_get(comm, &mut nd);
                indeg = 2 * nd;
                outdeg = indeg;
            }
        }
        let d = (indeg.max(0) as u32, outdeg.max(0) as u32);
        if let Some(e) = self.entries.get_mut(info.slot as usize) {
            e.deg = Some(d);
        }
        d
    }
}

// ---------------------------------------------------------------------------
// Datatype sizes
// ---------------------------------------------------------------------------

const TYPE_SLOTS: usize = 64;

pub struct TypeCache {
    epoch: u32,
    slots: [(usize, u64); TYPE_SLOTS],
}

impl TypeCache {
    fn new() -> TypeCache {
        TypeCache {
            epoch: TYPE_EPOCH.load(Relaxed),
            slots: [(0, 0); TYPE_SLOTS],
        }
    }

    #[inline(always)]
    fn size(&mut self, dt: MPI_Datatype) -> u64 {
        let h = dt.bits();
        let e = TYPE_EPOCH.load(Relaxed);
        if e != self.epoch {
            self.slots = [(0, 0); TYPE_SLOTS];
            self.epoch = e;
        }
        let i = ((h >> 4) ^ (h >> 10)) & (TYPE_SLOTS - 1);
        if let Some(s) = self.slots.get(i) {
            if s.0 == h && h != 0 {
                return s.1;
            }
        }
        self.miss(dt, i)
    }

    #[cold]
    #[inline(never)]
    fn miss(&mut self, dt: MPI_Datatype, i: usize) -> u64 {
        let mut sz: MPI_Count = 0;
        // SAFETY: the datatype is significant for a call that just succeeded.
        let ok = unsafe { PMPI_Type_size_x(dt, &mut sz) } == 0;
        let sz = if ok && sz > 0 { sz as u64 } else { 0 };
        if ok {
            if let Some(s) = self.slots.get_mut(i) {
                *s = (dt.bits(), sz);
            }
        }
        sz
    }
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// What a pending request was posted as.
#[derive(Clone, Copy)]
pub struct ReqInfo {
    pub handle: usize,
    /// The posting communicator (bits), to translate a status's source.
    pub comm: usize,
    /// Where the request was last posted (its `*_init` or the latest
    /// `MPI_Start`), and where a persistent one was created.
    pub ra: usize,
    pub init_ra: usize,
    pub bytes: u64,
    pub p: u32,
    pub peer: i32,
    pub fid: u16,
    pub persistent: bool,
    pub recv: bool,
    /// A point-to-point request (not a non-blocking collective's).
    pub p2p: bool,
    /// Index of the posting key's entry in the thread's table
    /// (`usize::MAX`: none), checked against `ra` and `fid` before use.
    pub agg: usize,
    /// A persistent request between `MPI_Start` and its completion.
    pub active: bool,
    /// `MPI_Cancel` was called on it: its completion checks the status.
    pub cancel: bool,
    /// Posted to or from `MPI_PROC_NULL` (a persistent one: the others never
    /// enter the map): moves nothing, ignored by completions and starts.
    pub proc_null: bool,
}

impl ReqInfo {
    const EMPTY: ReqInfo = ReqInfo {
        handle: 0,
        comm: 0,
        ra: 0,
        init_ra: 0,
        bytes: 0,
        p: 0,
        peer: 0,
        fid: 0,
        persistent: false,
        recv: false,
        p2p: false,
        agg: usize::MAX,
        active: false,
        cancel: false,
        proc_null: false,
    };
}

/// Request handles returned by posts to or from `MPI_PROC_NULL` that are not
/// in the map (Open MPI returns one shared `ompi_request_empty` for all of
/// them, MPICH a built-in complete request per kind): a completion of one of
/// them is ignored rather than counted as an unknown request.
const NULL_REQS: usize = 4;

const REQ_SLOTS: usize = 1 << 13;
/// Pending requests one thread's map holds.
pub const REQ_CAPACITY: usize = REQ_SLOTS * 7 / 8 - 1;

/// Open addressing, linear probing with backward-shift deletion; a post that
/// finds the table full is not remembered (its completion then has no
/// `completes`) and counted in `dropped`.
pub struct ReqMap {
    slots: Vec<ReqInfo>,
    len: usize,
    /// Posts not remembered because the map was full.
    pub dropped: u64,
}

impl ReqMap {
    fn new() -> ReqMap {
        ReqMap {
            slots: Vec::new(),
            len: 0,
            dropped: 0,
        }
    }

    #[inline(always)]
    fn home(h: usize) -> usize {
        ((h as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 51) as usize & (REQ_SLOTS - 1)
    }

    fn insert(&mut self, r: ReqInfo) {
        if self.slots.is_empty() {
            self.slots = vec![ReqInfo::EMPTY; REQ_SLOTS];
        }
        let mut i = Self::home(r.handle);
        for _ in 0..REQ_SLOTS {
            let Some(s) = self.slots.get_mut(i) else {
                return;
            };
            if s.handle == 0 {
                if self.len >= REQ_CAPACITY {
                    self.dropped += 1;
                    return;
                }
                *s = r;
                self.len += 1;
                return;
            }
            // A handle that is already pending is shared: MPI returns one
            // static, already complete request for every send it finished
            // at once (Open MPI's `ompi_request_empty` for small eager
            // `MPI_Isend`s), so several posts may hold it at the same time.
            // Each post keeps its own slot and each completion of the handle
            // takes one. Persistent requests are unique: re-posting one
            // (`*_init` again after a free) replaces it.
            if s.handle == r.handle && (s.persistent || r.persistent) {
                *s = r;
                return;
            }
            i = (i + 1) & (REQ_SLOTS - 1);
        }
    }

    fn find(&self, h: usize) -> Option<usize> {
        if self.slots.is_empty() || h == 0 {
            return None;
        }
        let mut i = Self::home(h);
        for _ in 0..REQ_SLOTS {
            let s = self.slots.get(i)?;
            if s.handle == 0 {
                return None;
            }
            if s.handle == h {
                return Some(i);
            }
            i = (i + 1) & (REQ_SLOTS - 1);
        }
        None
    }

    fn remove_at(&mut self, mut i: usize) {
        // Backward-shift deletion keeps probe chains intact.
        let mask = REQ_SLOTS - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let Some(&s) = self.slots.get(j) else { break };
            if s.handle == 0 {
                break;
            }
            let k = Self::home(s.handle);
            // Move s to i if its home is not cyclically in (i, j].
            let in_range = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !in_range {
                if let Some(d) = self.slots.get_mut(i) {
                    *d = s;
                }
                i = j;
            }
        }
        if let Some(d) = self.slots.get_mut(i) {
            d.handle = 0;
        }
        self.len = self.len.saturating_sub(1);
    }
}

// ---------------------------------------------------------------------------
// Per-thread state
// ---------------------------------------------------------------------------

pub struct ThreadState {
    next: *mut ThreadState,
    /// The `STATE` word this thread last saw (reset epoch).
    seen: u32,
    /// Set while the thread updates its aggregates (the writer waits a little).
    pub updating: AtomicBool,
    /// Calls and time per function id.
    pub funcs: Box<[[u64; 2]]>,
    pub table: Table,
    comms: CommCache,
    types: TypeCache,
    reqs: ReqMap,
    /// Handles of posts to or from `MPI_PROC_NULL` (see `NULL_REQS`).
    null_reqs: [usize; NULL_REQS],
    /// Where the next one goes (round robin); 0 while there is none.
    null_next: usize,
    /// Completions of requests that were in neither (posted on another
    /// thread, while recording was off, by an unwrapped call such as
    /// `MPI_File_iwrite`, or dropped from a full map).
    pub unmatched: u64,
    snap: Vec<usize>,
    /// Entry index of the latest event (`usize::MAX`: folded), for `post`.
    last_event: usize,
    /// Posting entries (index, site, function) of the requests the current
    /// completion call completed; drained by its `event`. Bounded by the
    /// largest request count of one call.
    done: Vec<(usize, usize, u16)>,
    statuses: Vec<MPI_Status>,
    /// Fortran statuses for calls whose caller passed `MPI_STATUSES_IGNORE`,
    /// and completed indices converted to C's (from 0).
    fstatuses: Vec<crate::fort::Fint>,
    findices: Vec<core::ffi::c_int>,
}

impl ThreadState {
    #[cold]
    #[inline(never)]
    fn create() -> *mut ThreadState {
        let ts = Box::new(ThreadState {
            next: null_mut(),
            seen: STATE.load(Relaxed),
            updating: AtomicBool::new(false),
            funcs: vec![[0u64; 2]; NFUNCS + 1].into_boxed_slice(),
            table: Table::new(MAX_KEYS.load(Relaxed) as usize),
            comms: CommCache::new(),
            types: TypeCache::new(),
            reqs: ReqMap::new(),
            null_reqs: [0; NULL_REQS],
            null_next: 0,
            unmatched: 0,
            snap: Vec::new(),
            last_event: usize::MAX,
            done: Vec::new(),
            statuses: Vec::new(),
            fstatuses: Vec::new(),
            findices: Vec::new(),
        });
        let p = Box::into_raw(ts);
        let mut head = THREADS.load(Acquire);
        loop {
            // SAFETY: p is ours until published.
            unsafe { (*p).next = head };
            match THREADS.compare_exchange_weak(head, p, AcqRel, Acquire) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        p
    }

    #[cold]
    #[inline(never)]
    fn sync(&mut self, st: u32) {
        if st >> 8 != self.seen >> 8 {
            self.reset();
        }
        self.seen = st;
    }

    /// Forgets everything recorded (`MPI_Pcontrol(2)`, init-time measurement).
    pub fn reset(&mut self) {
        self.funcs.iter_mut().for_each(|f| *f = [0, 0]);
        self.table.clear();
        self.reqs.dropped = 0;
        self.unmatched = 0;
    }

    /// (posts not remembered because the map was full, completions of
    /// unknown requests).
    pub fn request_counts(&self) -> (u64, u64) {
        (self.reqs.dropped, self.unmatched)
    }

    /// Whether this thread's data belongs to the current reset epoch.
    pub fn current(&self) -> bool {
        self.seen >> 8 == STATE.load(Relaxed) >> 8
    }
}

/// Every thread state ever created.
pub fn threads() -> Vec<*mut ThreadState> {
    let mut v = Vec::new();
    let mut p = THREADS.load(Acquire);
    while !p.is_null() {
        v.push(p);
        // SAFETY: states are never freed.
        p = unsafe { (*p).next };
    }
    v
}

// ---------------------------------------------------------------------------
// The event being recorded
// ---------------------------------------------------------------------------

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
    pub role: u8,
    pub peer: i32,
    pub p: u32,
    pub sent: u64,
    pub recvd: u64,
    pub completes: u16,
    pub post_ra: usize,
    /// Completions seen so far (for merging several into one key).
    pub n_done: u32,
    /// Of them, point-to-point receives and sends.
    pub n_recv: u32,
    pub n_send: u32,
    /// A point-to-point call to or from `MPI_PROC_NULL`.
    pub proc_null: bool,
}

impl Ev {
    #[inline(always)]
    pub fn new(fid: u16) -> Ev {
        Ev {
            fid,
            call_fid: fid,
            role: ROLE_NONE,
            peer: NONE_PEER,
            p: 0,
            sent: 0,
            recvd: 0,
            completes: NONE_FN,
            post_ra: 0,
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
    pub unsafe fn from_fortran(&mut self, f: *const crate::fort::Fint) -> *mut MPI_Status {
        PMPI_Status_f2c(f, self.0.as_mut_ptr());
        self.0.as_mut_ptr()
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
    if st.is_null() {
        return MPI_PROC_NULL;
    }
    (*st).MPI_SOURCE
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
        Some((*st)._ucount as u64)
    }
    #[cfg(not(mpi_flavor = "openmpi"))]
    {
        let mut c: MPI_Count = 0;
        if PMPI_Get_elements_x(st, consts::byte(), &mut c) == 0 && c >= 0 {
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
    if counts.is_null() {
        return 0;
    }
    let mut s = 0u64;
    for i in 0..n as usize {
        s = s.saturating_add((*counts.add(i)).cnt());
    }
    s
}

/// `counts[i]`, null- and range-safe.
///
/// # Safety
/// `counts` is null or points to at least `n` counts.
#[inline]
pub unsafe fn nth_count<T: ToCount>(counts: *const T, i: i32, n: u32) -> u64 {
    if counts.is_null() || i < 0 || i as u32 >= n {
        return 0;
    }
    (*counts.add(i as usize)).cnt()
}

impl Guard {
    #[inline(always)]
    fn ts(&mut self) -> &mut ThreadState {
        // SAFETY: the state belongs to this thread and is never freed.
        unsafe { &mut *self.ts.as_ptr() }
    }

    /// Communicator facts (cached per thread).
    #[inline(always)]
    pub fn comm(&mut self, comm: MPI_Comm) -> CommInfo {
        self.ts().comms.lookup(comm)
    }

    /// A rank of `comm` (`info`) as a rank of the world; `MPI_PROC_NULL`,
    /// `MPI_ANY_SOURCE` and invalid ranks give no peer.
    #[inline(always)]
    pub fn world_rank(&mut self, info: &CommInfo, r: i32) -> i32 {
        self.ts().comms.world_rank(info, r)
    }

    /// (in, out) degrees of a topology communicator.
    pub fn degrees(&mut self, comm: MPI_Comm, info: &CommInfo) -> (u32, u32) {
        self.ts().comms.degrees(comm, info)
    }

    /// `PMPI_Type_size_x`, cached per thread; 0 for count 0 (the datatype
    /// may then be anything).
    #[inline(always)]
    pub fn bytes(&mut self, count: u64, dt: MPI_Datatype) -> u64 {
        if count == 0 {
            return 0;
        }
        count.saturating_mul(self.ts().types.size(dt))
    }

    /// Sum of `counts[i] * size(types[i])` for `i < n` (`Alltoallw`).
    ///
    /// # Safety
    /// Both arrays are null or hold at least `n` elements.
    pub unsafe fn wbytes<T: ToCount>(
        &mut self,
        counts: *const T,
        types: *const MPI_Datatype,
        n: u32,
    ) -> u64 {
        if counts.is_null() || types.is_null() {
            return 0;
        }
        let mut s = 0u64;
        for i in 0..n as usize {
            let c = (*counts.add(i)).cnt();
            if c > 0 {
                s = s.saturating_add(self.bytes(c, *types.add(i)));
            }
        }
        s
    }

    /// Role of this rank for a rooted collective.
    #[inline(always)]
    pub fn role(&self, info: &CommInfo, root: i32) -> u8 {
        if info.inter {
            if root == MPI_ROOT {
                ROLE_ROOT
            } else {
                ROLE_NONROOT
            }
        } else if root == info.rank {
            ROLE_ROOT
        } else {
            ROLE_NONROOT
        }
    }

    /// Records a plain (non-event) call.
    #[inline(always)]
    pub fn plain(&mut self, fid: u16, dt: u64) {
        if let Some(f) = self.ts().funcs.get_mut(fid as usize) {
            f[0] += 1;
            f[1] = f[1].wrapping_add(dt);
        }
    }

    /// Records an event under its key.
    #[inline(always)]
    pub fn event(&mut self, ra: usize, ev: &Ev, dt: u64) {
        let ra = site_of(ra);
        let ts = self.ts();
        ts.updating.store(true, Relaxed);
        if let Some(f) = ts.funcs.get_mut(ev.call_fid as usize) {
            f[0] += 1;
            f[1] = f[1].wrapping_add(dt);
        }
        let (completes, post_ra) = match ev.completes {
            MIXED_FN => (NONE_FN, 0),
            c => (c, ev.post_ra),
        };
        let sat = |n: u32| n.min(u16::MAX as u32) as u16;
        let key = Key {
            ra,
            post_ra,
            bytes: ev.sent.max(ev.recvd),
            p: ev.p,
            peer: ev.peer,
            fid: ev.fid,
            completes,
            role: ev.role,
            nreq: sat(ev.n_done),
            nrecv: sat(ev.n_recv),
            nsend: sat(ev.n_send),
        };
        let idx = ts.table.add(&key, dt);
        ts.last_event = idx;
        if !ts.done.is_empty() {
            // The posting keys of what this completion completed learn
            // where they were completed.
            let entries = &mut ts.table.entries;
            for (i, post_ra, fid) in ts.done.drain(..) {
                if let Some(e) = entries.get_mut(i) {
                    if e.key.ra == post_ra && e.key.fid == fid {
                        e.done_ra = ra;
                    }
                }
            }
        }
        ts.updating.store(false, Relaxed);
    }

    // ---- requests ----------------------------------------------------------

    /// Remembers a request a posting call created. A non-persistent request
    /// to or from `MPI_PROC_NULL` is not remembered (its handle may be shared
    /// by all such posts): its handle goes into `null_reqs`, so that its
    /// completion is ignored.
    #[inline]
    pub fn post(
        &mut self,
        ev: &Ev,
        comm: usize,
        req: usize,
        persistent: bool,
        kind: Posted,
        ra: usize,
    ) {
        let (recv, p2p) = (kind == Posted::Recv, kind != Posted::Collective);
        if req == 0 || req == consts::request_null().bits() {
            return;
        }
        let ts = self.ts();
        if ev.proc_null && !persistent {
            if !ts.null_reqs.contains(&req) {
                // The latest few distinct ones (an MPI that returned fresh
                // requests for them would reuse those for real posts, which
                // the map finds first).
                let k = ts.null_next % NULL_REQS;
                ts.null_next = k + 1;
                if let Some(s) = ts.null_reqs.get_mut(k) {
                    *s = req;
                }
            }
            return;
        }
        if ts.null_next != 0 && ts.null_reqs.contains(&req) {
            // A shared complete request (e.g. `MPI_Imrecv` of
            // `MPI_MESSAGE_NO_PROC`): not a request of its own.
            return;
        }
        let ra = site_of(ra);
        // The posting call's own event was recorded just before.
        let agg = ts.last_event;
        ts.reqs.insert(ReqInfo {
            handle: req,
            comm,
            ra,
            init_ra: ra,
            bytes: ev.sent.max(ev.recvd),
            p: ev.p,
            peer: ev.peer,
            fid: ev.fid,
            persistent,
            recv,
            p2p,
            agg,
            active: false,
            cancel: false,
            proc_null: ev.proc_null,
        });
    }

    /// `MPI_Request_free`: forget the request.
    pub fn forget(&mut self, req: usize) {
        let m = &mut self.ts().reqs;
        if let Some(i) = m.find(req) {
            m.remove_at(i);
        }
    }

    /// `MPI_Cancel`: its completion will check the status's cancelled flag.
    pub fn cancelling(&mut self, req: usize) {
        let m = &mut self.ts().reqs;
        if let Some(i) = m.find(req) {
            if let Some(s) = m.slots.get_mut(i) {
                s.cancel = true;
            }
        }
    }

    /// `MPI_Start(all)`: the event gets the persistent request's bytes, peer
    /// and p, with `completes` = the `*_init` function and `post_site` = its
    /// site; the request's posting site becomes this call's, and it is active
    /// until completed. A request to or from `MPI_PROC_NULL` is started but
    /// not merged into the event.
    pub fn start(&mut self, ev: &mut Ev, req: usize, ra: usize) {
        let m = &mut self.ts().reqs;
        if let Some(i) = m.find(req) {
            if let Some(s) = m.slots.get_mut(i) {
                // The event names the *_init call and its site; later
                // completions name this start as the posting site.
                let mut init = *s;
                init.ra = init.init_ra;
                s.ra = site_of(ra);
                s.active = true;
                s.cancel = false;
                if !init.proc_null {
                    merge_done(ev, &init, init.bytes, init.peer);
                }
            }
        }
    }

    /// A completed request: merges what it was into the event and forgets
    /// it unless persistent. `st` is its status (may be null). Ignored:
    /// `MPI_REQUEST_NULL`, an inactive persistent request (MPI completes
    /// both at once with an empty status), a request to or from
    /// `MPI_PROC_NULL`. A cancelled request moved nothing: 0 bytes, no peer.
    ///
    /// # Safety
    /// `st` is null or points to a status MPI filled.
    pub unsafe fn complete(&mut self, ev: &mut Ev, req: usize, st: *const MPI_Status) {
        if req == 0 || req == consts::request_null().bits() {
            return;
        }
        let ts = self.ts();
        let m = &mut ts.reqs;
        let Some(i) = m.find(req) else {
            if ts.null_next != 0 && ts.null_reqs.contains(&req) {
                return;
            }
            ts.unmatched += 1;
            ev.completes = if ev.n_done == 0 { NONE_FN } else { MIXED_FN };
            ev.n_done += 1;
            return;
        };
        let Some(s) = m.slots.get_mut(i) else { return };
        let r = *s;
        if r.persistent {
            if !r.active {
                return;
            }
            s.active = false;
            s.cancel = false;
        } else {
            m.remove_at(i);
        }
        if r.proc_null {
            return;
        }
        if r.agg != usize::MAX {
            ts.done.push((r.agg, r.init_ra, r.fid));
        }
        let (mut bytes, mut peer) = (r.bytes, r.peer);
        if r.cancel && !st.is_null() {
            let mut flag: core::ffi::c_int = 0;
            if PMPI_Test_cancelled(st, &mut flag) == 0 && flag != 0 {
                merge_done(ev, &r, 0, NONE_PEER);
                return;
            }
        }
        if r.recv && !st.is_null() {
            if let Some(b) = status_bytes(st) {
                bytes = b;
            }
            if peer == NONE_PEER {
                // Posted with MPI_ANY_SOURCE: the status says who, as a rank
                // of the posting communicator (translated without calling MPI:
                // the communicator may be gone by now).
                peer = ts.comms.translate_cached(r.comm, status_source(st));
            }
        }
        merge_done(ev, &r, bytes, peer);
    }

    /// Copies `n` request handles (they become `MPI_REQUEST_NULL` as they
    /// complete).
    ///
    /// # Safety
    /// `reqs` is null or points to at least `n` requests.
    pub unsafe fn snap(&mut self, n: i32, reqs: *const MPI_Request) {
        let ts = self.ts();
        ts.snap.clear();
        if reqs.is_null() || n <= 0 {
            return;
        }
        ts.snap.reserve(n as usize);
        for i in 0..n as usize {
            ts.snap.push((*reqs.add(i)).bits());
        }
    }

    /// `n` Fortran request handles, as C bits.
    ///
    /// # Safety
    /// `reqs` is null or points to at least `n` Fortran requests.
    pub unsafe fn snap_f(&mut self, n: i32, reqs: *const crate::fort::Fint) {
        let ts = self.ts();
        ts.snap.clear();
        if reqs.is_null() || n <= 0 {
            return;
        }
        ts.snap.reserve(n as usize);
        for i in 0..n as usize {
            ts.snap.push(crate::fort::req_bits(reqs.add(i)));
        }
    }

    /// Fortran statuses for `n` requests: the caller's, or the tool's own
    /// when the caller passed `MPI_STATUSES_IGNORE`.
    pub fn fstatuses(&mut self, n: i32, st: *mut crate::fort::Fint) -> *mut crate::fort::Fint {
        if !crate::fort::is_statuses_ignore(st) {
            return st;
        }
        let ts = self.ts();
        let len = n.max(1) as usize * crate::fort::STATUS_INTS;
        if ts.fstatuses.len() < len {
            ts.fstatuses.resize(len, 0);
        }
        ts.fstatuses.as_mut_ptr()
    }

    /// The first `n` Fortran statuses as C statuses.
    ///
    /// # Safety
    /// `st` points to at least `n` Fortran statuses.
    pub unsafe fn fstatuses_c(&mut self, n: i32, st: *const crate::fort::Fint) -> *mut MPI_Status {
        let ts = self.ts();
        let n = n.max(1) as usize;
        if ts.statuses.len() < n {
            // SAFETY: MPI_Status is plain old data.
            ts.statuses.resize(n, std::mem::zeroed());
        }
        if !st.is_null() {
            for i in 0..n {
                PMPI_Status_f2c(
                    st.add(i * crate::fort::STATUS_INTS),
                    ts.statuses.as_mut_ptr().add(i),
                );
            }
        }
        ts.statuses.as_mut_ptr()
    }

    /// A completed request's Fortran index (from 1) as a C index (from 0).
    /// MPICH 4.0's `use mpi_f08` returns indices from 0 (pmodels/mpich#6270),
    /// so the index is checked against the request that became
    /// `MPI_REQUEST_NULL`: `v - 1` if that one did, else `v` if that one did,
    /// else `v - 1` (a persistent request stays).
    ///
    /// # Safety
    /// `ix` is null or points to an index; `reqs` to the snapped requests.
    pub unsafe fn findex(
        &mut self,
        ix: *const crate::fort::Fint,
        reqs: *const crate::fort::Fint,
    ) -> core::ffi::c_int {
        let v = crate::fort::int(ix);
        if v == consts::undefined() {
            return v;
        }
        let snap = &self.ts().snap;
        let freed = |k: i32| {
            k >= 0
                && (k as usize) < snap.len()
                && snap[k as usize] != 0
                && !reqs.is_null()
                && crate::fort::req_bits(reqs.add(k as usize)) == 0
        };
        if freed(v - 1) {
            v - 1
        } else if freed(v) {
            v
        } else if v >= 1 {
            v - 1
        } else {
            consts::undefined()
        }
    }

    /// `n` Fortran indices (from 1) as C indices (from 0), see `findex`.
    ///
    /// # Safety
    /// `ix` is null or points to at least `n` indices; `reqs` to the
    /// snapped requests.
    pub unsafe fn findices(
        &mut self,
        ix: *const crate::fort::Fint,
        n: i32,
        reqs: *const crate::fort::Fint,
    ) -> *mut core::ffi::c_int {
        // Fill the thread's reusable buffer directly (taken out while
        // `findex` borrows self): no allocation per call once it has grown.
        let mut buf = core::mem::take(&mut self.ts().findices);
        buf.clear();
        if !ix.is_null() && n > 0 && n != consts::undefined() {
            for i in 0..n as usize {
                buf.push(self.findex(ix.add(i), reqs));
            }
        }
        if buf.is_empty() {
            buf.push(0);
        }
        let ts = self.ts();
        ts.findices = buf;
        ts.findices.as_mut_ptr()
    }

    /// `wbytes` with Fortran datatypes.
    ///
    /// # Safety
    /// Both arrays are null or hold at least `n` elements.
    pub unsafe fn wbytes_f<T: ToCount>(
        &mut self,
        counts: *const T,
        types: *const crate::fort::Fint,
        n: u32,
    ) -> u64 {
        if counts.is_null() || types.is_null() {
            return 0;
        }
        let mut s = 0u64;
        for i in 0..n as usize {
            let c = (*counts.add(i)).cnt();
            if c > 0 {
                s = s.saturating_add(self.bytes(c, crate::fort::datatype(types.add(i))));
            }
        }
        s
    }

    #[inline]
    pub fn snapped(&mut self, i: i32) -> usize {
        if i < 0 {
            return 0;
        }
        self.ts().snap.get(i as usize).copied().unwrap_or(0)
    }

    /// Statuses for `n` requests: the caller's, or the tool's own when the
    /// caller passed `MPI_STATUSES_IGNORE`.
    pub fn statuses(&mut self, n: i32, statuses: *mut MPI_Status) -> *mut MPI_Status {
        if statuses != consts::statuses_ignore() && !statuses.is_null() {
            return statuses;
        }
        let ts = self.ts();
        let n = n.max(1) as usize;
        if ts.statuses.len() < n {
            // SAFETY: MPI_Status is plain old data.
            ts.statuses.resize(n, unsafe { std::mem::zeroed() });
        }
        ts.statuses.as_mut_ptr()
    }
}

fn merge_done(ev: &mut Ev, r: &ReqInfo, bytes: u64, peer: i32) {
    if ev.n_done == 0 {
        ev.completes = r.fid;
        ev.post_ra = r.ra;
        ev.peer = peer;
        ev.p = r.p;
        ev.sent = bytes;
    } else {
        if ev.completes != r.fid || ev.post_ra != r.ra {
            ev.completes = MIXED_FN;
            ev.post_ra = 0;
        }
        if ev.peer != peer {
            ev.peer = NONE_PEER;
        }
        if ev.p != r.p {
            ev.p = 0;
        }
        ev.sent = ev.sent.saturating_add(bytes);
    }
    ev.n_done += 1;
    if r.p2p {
        if r.recv {
            ev.n_recv += 1;
        } else {
            ev.n_send += 1;
        }
    }
}

/// Communicator / datatype freed: per-thread caches must forget handles.
pub fn comm_freed() {
    COMM_EPOCH.fetch_add(1, Relaxed);
}
pub fn type_freed() {
    TYPE_EPOCH.fetch_add(1, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiover_common::histogram::Histogram;

    fn key(ra: usize, bytes: u64) -> Key {
        Key {
            ra,
            post_ra: 0,
            bytes,
            p: 2,
            peer: 1,
            fid: 3,
            completes: NONE_FN,
            role: ROLE_NONE,
            nreq: 0,
            nrecv: 0,
            nsend: 0,
        }
    }

    #[test]
    fn table_aggregates_and_folds_past_the_cap() {
        let mut t = Table::new(4);
        for i in 0..100u64 {
            t.add(&key(0x1000 + (i % 6) as usize, 8), 100 + i);
        }
        // 4 keys fit; the other 2 fold.
        assert_eq!(t.entries.len(), 5);
        let other = t
            .entries
            .iter()
            .find(|e| e.key.fid == FID_OTHER)
            .expect("fold entry");
        assert_eq!(other.count, t.folded_calls);
        assert_eq!(t.folded_calls, 100 - 4 * 17);
        assert_eq!(t.folded_keys(), 2);
        let total: u64 = t.entries.iter().map(|e| e.count).sum();
        assert_eq!(total, 100);
        let e = &t.entries[0];
        assert_eq!((e.min, e.max, e.count), (100, 196, 17));
    }

    #[test]
    fn dense_histogram_matches_the_sparse_one() {
        let mut t = Table::new(8);
        let mut h = Histogram::default();
        let mut x = 12345u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x % 1_000_000 + (x >> 60);
            t.add(&key(1, 1), v);
            h.record(v);
        }
        let a = &t.entries[0];
        let buckets: Vec<_> = a
            .hist
            .iter()
            .enumerate()
            .filter(|(_, b)| b[0] > 0)
            .map(|(i, b)| mpiover_common::histogram::Bucket(a.hist_lo + i as u32, b[0], b[1]))
            .collect();
        assert_eq!(buckets, h.buckets);
    }

    #[test]
    fn request_map_insert_find_remove() {
        let mut m = ReqMap::new();
        let r = |h| ReqInfo {
            handle: h,
            ra: h * 2,
            init_ra: h * 2,
            ..ReqInfo::EMPTY
        };
        // Colliding and wrapping probe chains.
        let hs: Vec<usize> = (1..3000).map(|i| i * 4096 + 8).collect();
        for &h in &hs {
            m.insert(r(h));
        }
        for (n, &h) in hs.iter().enumerate() {
            if n % 3 == 0 {
                let i = m.find(h).expect("present");
                m.remove_at(i);
            }
        }
        for (n, &h) in hs.iter().enumerate() {
            let f = m.find(h);
            assert_eq!(f.is_some(), n % 3 != 0, "handle {h}");
            if let Some(i) = f {
                assert_eq!(m.slots[i].ra, h * 2);
            }
        }
        assert_eq!(m.len, hs.len() - hs.len().div_ceil(3));
    }

    /// Regression: Open MPI returns one shared, already complete request for
    /// small eager `MPI_Isend`s; a halo exchange posting several of them
    /// before one `MPI_Waitall` had all but the last forgotten, and their
    /// completions counted as unmatched.
    #[test]
    fn a_shared_request_handle_is_kept_once_per_post() {
        let mut m = ReqMap::new();
        let shared = 0x7000_1000;
        for peer in 0..5 {
            m.insert(ReqInfo {
                handle: shared,
                peer,
                ..ReqInfo::EMPTY
            });
        }
        m.insert(ReqInfo {
            handle: 0x9000,
            ..ReqInfo::EMPTY
        });
        let mut peers = Vec::new();
        for _ in 0..5 {
            let i = m.find(shared).expect("one slot per post");
            peers.push(m.slots[i].peer);
            m.remove_at(i);
        }
        peers.sort_unstable();
        assert_eq!(peers, vec![0, 1, 2, 3, 4]);
        assert!(m.find(shared).is_none());
        assert!(m.find(0x9000).is_some());
        // A persistent request re-posted under the same handle replaces it.
        let p = ReqInfo {
            handle: 0xa000,
            persistent: true,
            ..ReqInfo::EMPTY
        };
        m.insert(p);
        m.insert(ReqInfo { peer: 7, ..p });
        let i = m.find(0xa000).expect("present");
        m.remove_at(i);
        assert!(m.find(0xa000).is_none());
    }
}
