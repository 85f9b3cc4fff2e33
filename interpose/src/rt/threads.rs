//! Per-thread state and the registry the writer walks at the end.

use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};

use mpiover_mpisys::*;

use crate::names::NFUNCS;
use crate::site_ref::SiteRef;

use super::call_key::KeyStats;
use super::comms::CommCache;
use super::regions::{Passes, RegionStart, RegionStats};
use super::requests::{ReqMap, NULL_REQS};
use super::state::{MAX_KEYS, RESETS, STATE};
use super::table::Table;
use super::type_sizes::TypeCache;

/// Every thread's state, a lock-free list (pushed once per thread, never
/// removed: a thread's data outlives it and is written at the end).
static THREADS: AtomicPtr<ThreadState> = AtomicPtr::new(null_mut());

pub struct ThreadState {
    pub(crate) next: *mut ThreadState,
    /// The `STATE` word this thread last saw (reset epoch, freed datatypes).
    pub(crate) seen: u64,
    /// Set while the thread updates its aggregates (the writer waits a little).
    pub updating: AtomicBool,
    /// Calls and time per function id. A fixed-size array: a wrapper's
    /// constant id needs no bounds check. Boxed: inline it saves a load per
    /// call, but its 6.5 KB put the state's hot fields that far apart, and
    /// the request path measured 2 ns slower per call for it.
    pub funcs: Box<[[u64; 2]; NFUNCS + 1]>,
    pub table: Table<KeyStats>,
    /// The application's code between MPI calls, per (call, next call).
    pub regions: Table<RegionStats>,
    /// Where the current region started (the last call's return).
    pub(crate) region_start: RegionStart,
    pub(crate) comms: CommCache,
    pub(crate) types: TypeCache,
    pub(crate) reqs: ReqMap,
    /// Handles of posts to or from `MPI_PROC_NULL` (see `NULL_REQS`).
    pub(crate) null_reqs: [usize; NULL_REQS],
    /// Where the next one goes (round robin); 0 while there is none.
    pub(crate) null_next: usize,
    /// Completions of requests that were in neither (posted on another
    /// thread, while recording was off, by an unwrapped call such as
    /// `MPI_File_iwrite`, or dropped from a full map).
    pub unmatched: u64,
    pub(crate) snap: Vec<usize>,
    /// Entry index of the latest event (`usize::MAX`: folded), for `post`.
    pub(crate) last_event: usize,
    /// Posting entries (index, site, function) of the requests the current
    /// completion call completed, whose key does not already name its site;
    /// drained by its `event`. Bounded by the largest request count of one
    /// call.
    pub(crate) done: Vec<(usize, SiteRef, u16)>,
    pub(crate) statuses: Vec<MPI_Status>,
    /// Fortran statuses for calls whose caller passed `MPI_STATUSES_IGNORE`,
    /// and completed indices converted to C's (from 0).
    pub(crate) fstatuses: Vec<crate::fort_conv::Fint>,
    pub(crate) findices: Vec<core::ffi::c_int>,
    /// Python sites: this thread's caches (from its first call from Python).
    pub py: Option<Box<crate::py::Cache>>,
    /// Events attributed to a Python line.
    pub py_calls: u64,
}

impl ThreadState {
    #[cold]
    #[inline(never)]
    pub(crate) fn create() -> *mut ThreadState {
        let Ok(funcs) = vec![[0u64; 2]; NFUNCS + 1].into_boxed_slice().try_into() else {
            return null_mut();
        };
        let ts = Box::new(ThreadState {
            next: null_mut(),
            seen: STATE.load(Relaxed),
            updating: AtomicBool::new(false),
            funcs,
            table: Table::new(MAX_KEYS.load(Relaxed) as usize),
            regions: Table::new(MAX_KEYS.load(Relaxed) as usize),
            region_start: RegionStart::NONE,
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
            py: None,
            py_calls: 0,
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
    pub(crate) fn sync(&mut self, st: u64) {
        let changed = st ^ self.seen;
        if changed & RESETS != 0 {
            self.reset();
        }
        if changed as u32 != 0 {
            // Recording was paused (`MPI_Pcontrol`) or reset since this
            // thread's last call: the time since is not one region of its
            // own code.
            self.region_start = RegionStart::NONE;
        }
        if changed >> 32 != 0 {
            // A datatype was freed: its handle may come back as another.
            self.types.clear();
        }
        self.seen = st;
    }

    /// What a region's pass needs of this state (`regions::Passes`).
    #[inline(always)]
    pub(crate) fn passes(&mut self) -> Passes<'_> {
        Passes {
            start: &mut self.region_start,
            regions: &mut self.regions,
            keys: &mut self.table,
        }
    }

    /// Forgets everything recorded (`MPI_Pcontrol(2)`, init-time measurement).
    pub fn reset(&mut self) {
        self.funcs.iter_mut().for_each(|f| *f = [0, 0]);
        self.table.clear();
        self.regions.clear();
        self.region_start = RegionStart::NONE;
        self.reqs.dropped = 0;
        self.unmatched = 0;
        self.py_calls = 0;
        if let Some(c) = self.py.as_mut() {
            c.fallbacks = 0;
        }
    }

    /// (posts not remembered because the map was full, completions of
    /// unknown requests).
    pub fn request_counts(&self) -> (u64, u64) {
        (self.reqs.dropped, self.unmatched)
    }

    /// Whether this thread's data belongs to the current reset epoch.
    pub fn current(&self) -> bool {
        (self.seen ^ STATE.load(Relaxed)) & RESETS == 0
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
