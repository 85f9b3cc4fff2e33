//! Regions: the application's own code between two MPI calls of a thread,
//! from the return of one (its site and function) to the entry of the next.
//! Per (from, to) pair the thread keeps passes, time and a histogram, under
//! the same key cap as the MPI calls; the report compares a late rank's
//! region with the waiting ranks' to say why it was late.

use mpiover_common::histogram::{bucket_index, Bucket, Histogram};

use crate::site_ref::SiteRef;

use super::call_key::KeyStats;
use super::state::FID_OTHER;
use super::table::{Stats, Table};

/// A region's two ends.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RegionKey {
    pub from: SiteRef,
    pub to: SiteRef,
    pub from_fid: u16,
    pub to_fid: u16,
}

/// When the thread's current region started: the time the MPI call that
/// returned last returned. Its site and function are those of that call's
/// entry (`ThreadState::last_event`), read only when a region is new; a
/// folded call has no entry, so its site and function are kept here. `t`
/// is 0 when there is no region (before the first call, after a pause in
/// recording): the hot path tests `t` alone, and a timer that reads 0 at a
/// call's return (it counts from boot) at worst skips one region.
#[derive(Clone, Copy)]
pub struct RegionStart {
    pub t: u64,
    pub folded_site: SiteRef,
    pub folded_fid: u16,
}

impl RegionStart {
    pub(crate) const NONE: RegionStart = RegionStart {
        t: 0,
        folded_site: SiteRef::NONE,
        folded_fid: 0,
    };
}

/// One region's passes (durations in raw timer units). Regions are timed
/// on every call, so their histogram is per octave (powers of two) in a
/// fixed array: one leading-zero count and two adds, without the range
/// checks of the keys' finer histogram. The passes and their sum are not
/// counted on their own: the octaves hold both. Nor are the shortest and
/// longest pass: what the report compares is a region's total per rank.
pub struct RegionStats {
    pub key: RegionKey,
    /// (passes, sum) of the durations in `[2^i, 2^(i+1))` (octave 0 holds
    /// 0 and 1).
    pub octaves: [[u64; 2]; 64],
}

impl RegionStats {
    /// Passes through the region.
    pub fn count(&self) -> u64 {
        self.octaves.iter().map(|o| o[0]).sum()
    }

    /// Their total time (raw units, wrapping as the per-key sums do).
    pub fn sum(&self) -> u64 {
        self.octaves.iter().fold(0u64, |s, o| s.wrapping_add(o[1]))
    }

    /// The octaves in the record's histogram form: each octave's passes and
    /// sum in the record's bucket of their mean duration, so that counts
    /// and sums are exact and every pass is placed within its octave.
    pub fn histogram(&self) -> Histogram {
        let mut buckets: Vec<Bucket> = Vec::new();
        for o in self.octaves.iter().filter(|o| o[0] > 0) {
            let i = bucket_index(o[1] / o[0]) as u32;
            match buckets.last_mut() {
                Some(b) if b.0 == i => {
                    b.1 += o[0];
                    b.2 = b.2.wrapping_add(o[1]);
                }
                _ => buckets.push(Bucket(i, o[0], o[1])),
            }
        }
        Histogram { buckets }
    }
}

/// The octave of a duration: `floor(log2(dt))`, 0 for 0 and 1.
#[inline(always)]
fn octave(dt: u64) -> usize {
    (63 - (dt | 1).leading_zeros()) as usize & 63
}

impl Stats for RegionStats {
    type Key = RegionKey;
    #[inline(always)]
    fn key(&self) -> &RegionKey {
        &self.key
    }
    #[inline(always)]
    fn site_bits(k: &RegionKey) -> usize {
        k.to.bits()
    }
    #[inline(always)]
    fn hash(k: &RegionKey) -> u64 {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = (k.from.bits() as u64).wrapping_mul(K);
        h = (h.rotate_left(5) ^ k.to.bits() as u64).wrapping_mul(K);
        (h.rotate_left(5) ^ (k.from_fid as u64 | (k.to_fid as u64) << 16)).wrapping_mul(K)
    }
    fn placeholder() -> RegionStats {
        // No call's function: a region ends at a call, so its `to_fid` is
        // a function's.
        Self::fresh(RegionKey {
            from: SiteRef::NONE,
            to: SiteRef::NONE,
            from_fid: u16::MAX,
            to_fid: u16::MAX,
        })
    }
    fn fresh(key: RegionKey) -> RegionStats {
        RegionStats {
            key,
            octaves: [[0; 2]; 64],
        }
    }
    #[inline(always)]
    fn add(&mut self, dt: u64) {
        let o = &mut self.octaves[octave(dt)];
        tally!(o[0], o[1], dt);
    }
    fn fold_key() -> RegionKey {
        RegionKey {
            from: SiteRef::NONE,
            to: SiteRef::NONE,
            from_fid: FID_OTHER,
            to_fid: FID_OTHER,
        }
    }
}

/// What a region's pass reads and writes of the thread's state: where the
/// current region started, the regions, and the calls' keys (whose entries
/// are the regions' ends). Borrowed from the state field by field, so that
/// this module, which the state is made of, does not name the state.
pub(crate) struct Passes<'a> {
    pub(crate) start: &'a mut RegionStart,
    pub(crate) regions: &'a mut Table<RegionStats>,
    pub(crate) keys: &'a mut Table<KeyStats>,
}

impl Passes<'_> {
    /// The region that ended at this call's entry `t0` (from the previous
    /// call, of entry `prev`, to this one, of entry `idx` at `to`, `to_fid`;
    /// `hint` is that entry's (`region_from`, `region_in`)) gets its pass,
    /// and the next one starts at the call's return `t1` (only the time is
    /// written: the site and function are the entry's).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn next_region(
        self,
        prev: usize,
        idx: usize,
        hint: (u32, *mut ()),
        to: SiteRef,
        to_fid: u16,
        t0: u64,
        t1: u64,
    ) {
        let opened = self.start.t;
        if opened != 0 {
            let dt = t0.wrapping_sub(opened);
            // No previous call matches a key without a hint (`NO_REGION`),
            // a folded one (`prev` all ones) included.
            let (from, r) = hint;
            if from == prev as u32 {
                // SAFETY: a hint's `from` is set only with the address of
                // an entry of this thread's region table (`region_slow`),
                // whose entries never move and are cleared only with the
                // key that holds the hint (`KeyStats::region_in`); only this
                // thread touches them.
                unsafe { (*r.cast::<RegionStats>()).add(dt) };
            } else {
                region_slow(
                    self.start,
                    self.regions,
                    self.keys,
                    prev,
                    idx,
                    to,
                    to_fid,
                    dt,
                );
            }
        }
        self.start.t = t1;
    }

    /// `next_region` for a call whose key was folded (no entry, no hint):
    /// its site and function are kept for the next region's start.
    #[cold]
    #[inline(never)]
    pub(crate) fn folded_region(self, prev: usize, to: SiteRef, to_fid: u16, t0: u64, t1: u64) {
        let opened = self.start.t;
        if opened != 0 {
            let dt = t0.wrapping_sub(opened);
            region_slow(
                self.start,
                self.regions,
                self.keys,
                prev,
                usize::MAX,
                to,
                to_fid,
                dt,
            );
        }
        *self.start = RegionStart {
            t: t1,
            folded_site: to,
            folded_fid: to_fid,
        };
    }
}

/// Adds `dt` to the region from the call of entry `prev` (the region's
/// start, `start`) to this call, of entry `idx` at `to` (`to_fid`), found
/// by its key, and gives this call's entry the hint of it.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn region_slow(
    start: &RegionStart,
    regions: &mut Table<RegionStats>,
    keys: &mut Table<KeyStats>,
    prev: usize,
    idx: usize,
    to: SiteRef,
    to_fid: u16,
    dt: u64,
) {
    // The region's start: the previous call's entry, or what a folded one
    // kept.
    let (from, from_fid) = match keys.entries.get(prev) {
        Some(e) => (e.key.ra, e.key.fid),
        None => (start.folded_site, start.folded_fid),
    };
    let key = RegionKey {
        from,
        to,
        from_fid,
        to_fid,
    };
    let r = regions.add(&key, dt);
    // The hint needs both calls' entries (a folded key has none) and the
    // region's own (a folded region has none either).
    if r != usize::MAX && prev != usize::MAX {
        if let (Some(e), true) = (keys.entries.get_mut(idx), r < regions.entries.len()) {
            e.region_from = prev as u32;
            // From the buffer's own pointer, as the memo's (`Table::remember`),
            // not from a reference to the element that later borrows end.
            e.region_in = regions.entries.as_mut_ptr().wrapping_add(r).cast();
        }
    }
}
