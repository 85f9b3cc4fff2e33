//! Per-thread aggregation: one entry per key (call site, function, p,
//! bytes, peer, ...) with its duration histogram.

use mpiover_common::histogram::bucket_index;

use crate::names::FN_NAMES;

use super::*;

/// The aggregation key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CallKey {
    pub ra: SiteRef,
    pub post_ra: SiteRef,
    pub bytes: u64,
    pub p: u32,
    pub peer: i32,
    pub fid: u16,
    pub completes: u16,
    pub role: Role,
    /// Completions: requests completed per call, and of them point-to-point
    /// receives and sends (saturating); 0 for other functions.
    pub nreq: u16,
    pub nrecv: u16,
    pub nsend: u16,
}

impl CallKey {
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
    pub(crate) fn hash(&self) -> u64 {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = (self.ra.bits() as u64).wrapping_mul(K);
        h = (h.rotate_left(5) ^ self.bytes).wrapping_mul(K);
        h = (h.rotate_left(5) ^ (((self.p as u64) << 32) | self.peer as u32 as u64))
            .wrapping_mul(K);
        h = (h.rotate_left(5)
            ^ (self.fid as u64 | ((self.completes as u64) << 16) | ((self.role as u64) << 32)))
            .wrapping_mul(K);
        h = (h.rotate_left(5) ^ self.post_ra.bits() as u64).wrapping_mul(K);
        h = (h.rotate_left(5)
            ^ (self.nreq as u64 | ((self.nrecv as u64) << 16) | ((self.nsend as u64) << 32)))
            .wrapping_mul(K);
        h
    }
}

/// One key's statistics, durations in raw timer units.
pub struct KeyStats {
    pub key: CallKey,
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
    pub done_ra: SiteRef,
    /// Dense histogram: (count, sum) of buckets `lo..lo + hist.len()`.
    pub hist_lo: u32,
    pub hist: Vec<[u64; 2]>,
}

impl KeyStats {
    pub(crate) fn new(key: CallKey) -> KeyStats {
        let resolved = if key.fid == FID_OTHER {
            None
        } else {
            let completes = if key.completes < MIXED_FN {
                FN_NAMES.get(key.completes as usize).copied()
            } else {
                None
            };
            let function = FN_NAMES.get(key.fid as usize).copied().unwrap_or("?");
            crate::overhead::tmax(&mpiover_common::completion::KeyRef {
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
        KeyStats {
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
            done_ra: SiteRef::NONE,
            hist_lo: 0,
            hist: Vec::new(),
        }
    }

    #[inline(always)]
    pub(crate) fn add(&mut self, dt: u64) {
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
    pub(crate) fn grow(&mut self, i: u32, dt: u64) {
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

pub fn role_name(r: Role) -> Option<&'static str> {
    r.name()
}

/// Open-addressing table of keys (linear probing, no deletion), capped.
pub struct Table {
    pub(crate) slots: Box<[u32]>,
    pub(crate) shift: u32,
    pub entries: Vec<KeyStats>,
    pub(crate) cap: usize,
    /// The latest entry of each call site (by a few bits of its address):
    /// a loop that alternates between sites (post, post, complete) finds
    /// its key here without hashing it.
    pub(crate) recent: [usize; RECENT],
    /// Index of the fold entry, once created.
    pub(crate) other: usize,
    pub folded_calls: u64,
    pub(crate) fold_bits: Vec<u64>,
}

pub(crate) const FOLD_BITS: usize = 1 << 16;
pub(crate) const RECENT: usize = 64;

#[inline(always)]
pub(crate) fn recent_slot(ra: usize) -> usize {
    (ra ^ (ra >> 6)) & (RECENT - 1)
}

impl Table {
    pub(crate) fn new(cap: usize) -> Table {
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
    pub(crate) fn add(&mut self, key: &CallKey, dt: u64) -> usize {
        let r = recent_slot(key.ra.bits());
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
    pub(crate) fn add_slow(&mut self, key: &CallKey, dt: u64) -> usize {
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
            self.entries.push(KeyStats::new(*key));
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
    pub(crate) fn fold(&mut self, h: u64, dt: u64) {
        if self.other == usize::MAX {
            self.other = self.entries.len();
            self.entries.push(KeyStats::new(CallKey {
                ra: SiteRef::NONE,
                post_ra: SiteRef::NONE,
                bytes: 0,
                p: 0,
                peer: NONE_PEER,
                fid: FID_OTHER,
                completes: NONE_FN,
                role: Role::None,
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

    pub(crate) fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = 0);
        self.entries.clear();
        self.recent = [usize::MAX; RECENT];
        self.other = usize::MAX;
        self.folded_calls = 0;
        self.fold_bits.clear();
    }
}
