//! Regions: the application's own code between two MPI calls of a thread,
//! from the return of one (its site and function) to the entry of the next.
//! Per (from, to) pair the thread keeps passes, time and a histogram, under
//! the same key cap as the MPI calls; the report compares a late rank's
//! region with the waiting ranks' to say why it was late.

use super::buckets::Buckets;
use super::table::Stats;
use super::*;

/// A region's two ends.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RegionKey {
    pub from: SiteRef,
    pub to: SiteRef,
    pub from_fid: u16,
    pub to_fid: u16,
}

/// Where the thread's current region started: the site and function of the
/// MPI call that returned last, and the time it returned. `site` is
/// [`SiteRef::NONE`] when there is none (before the first call, after a
/// pause in recording).
#[derive(Clone, Copy)]
pub struct RegionStart {
    pub site: SiteRef,
    pub fid: u16,
    pub t: u64,
}

impl RegionStart {
    pub(crate) const NONE: RegionStart = RegionStart {
        site: SiteRef::NONE,
        fid: 0,
        t: 0,
    };
}

/// One region's passes (durations in raw timer units).
pub struct RegionStats {
    pub key: RegionKey,
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    pub hist: Buckets,
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
    fn fresh(key: RegionKey) -> RegionStats {
        RegionStats {
            key,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            hist: Buckets::default(),
        }
    }
    #[inline(always)]
    fn add(&mut self, dt: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(dt);
        self.min = self.min.min(dt);
        self.max = self.max.max(dt);
        self.hist.add(dt);
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
