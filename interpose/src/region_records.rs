//! The record's regions: every thread's region table summed per
//! (from, to), numbered against the record's sites.

use std::collections::{BTreeMap, HashMap};

use mpiover_common::histogram::Histogram;
use mpiover_common::record::{FoldedRegions, Region, RegionEnd};

use crate::names::FN_NAMES;
use crate::rt::{RegionKey, RegionStats, SiteRef, Table, FID_OTHER};

/// One region summed over threads (raw timer units).
pub(crate) struct MergedRegion {
    count: u64,
    sum: u64,
    hist: Histogram,
}

/// The regions of every thread, and what folded past the cap.
#[derive(Default)]
pub(crate) struct Regions {
    merged: HashMap<RegionKey, MergedRegion>,
    folded_keys: u64,
    folded_count: u64,
    folded_sum: u64,
}

impl Regions {
    /// Adds one thread's table.
    pub(crate) fn add(&mut self, t: &Table<RegionStats>) {
        self.folded_keys += t.folded_keys();
        for r in t.entries.iter() {
            let (count, sum) = (r.count(), r.sum());
            if count == 0 {
                continue;
            }
            if r.key.from_fid == FID_OTHER {
                self.folded_count += count;
                self.folded_sum = self.folded_sum.wrapping_add(sum);
                continue;
            }
            let h = r.histogram();
            match self.merged.get_mut(&r.key) {
                Some(m) => {
                    m.count += count;
                    m.sum = m.sum.wrapping_add(sum);
                    m.hist.merge(&h);
                }
                None => {
                    self.merged.insert(
                        r.key,
                        MergedRegion {
                            count,
                            sum,
                            hist: h,
                        },
                    );
                }
            }
        }
    }

    /// Adds the regions' ends to the sites to number.
    pub(crate) fn sites(&self, addrs: &mut BTreeMap<SiteRef, u32>) {
        for k in self.merged.keys() {
            addrs.insert(k.from, 0);
            addrs.insert(k.to, 0);
        }
    }

    /// The record's regions, by time, longest first, and the folded ones.
    pub(crate) fn into_record(
        self,
        addrs: &BTreeMap<SiteRef, u32>,
        unit: f64,
    ) -> (Vec<Region>, FoldedRegions) {
        let end = |site: SiteRef, fid: u16| RegionEnd {
            site: addrs.get(&site).copied().unwrap_or(0),
            function: FN_NAMES
                .get(fid as usize)
                .copied()
                .unwrap_or("other")
                .to_string(),
        };
        let mut regions: Vec<Region> = self
            .merged
            .into_iter()
            .map(|(k, m)| Region {
                from: end(k.from, k.from_fid),
                to: end(k.to, k.to_fid),
                count: m.count,
                sum_s: m.sum as f64 * unit,
                hist: m.hist,
            })
            .collect();
        regions.sort_by(|a, b| {
            b.sum_s
                .total_cmp(&a.sum_s)
                .then_with(|| (&a.from, &a.to).cmp(&(&b.from, &b.to)))
        });
        let folded = FoldedRegions {
            keys: self.folded_keys,
            count: self.folded_count,
            sum_s: self.folded_sum as f64 * unit,
        };
        (regions, folded)
    }
}
