//! Regions: the application's code between two MPI calls, as the records
//! carry them per (from, to) pair of calls, folded per pair of report
//! sites with one row per rank. The report compares a late rank's row with
//! the waiting ranks' to say why it was late (`docs/method.md`, "Root
//! causes").

use mpiover_common::record::{Record, Region, Site};
use serde::{Deserialize, Serialize};

use crate::exact_sum::Fx;
use crate::packed_rows;
use crate::site_key::SiteKey;

/// A region's identity: the report sites of its two ends (each with its MPI
/// function).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RegionId {
    pub from: SiteKey,
    pub to: SiteKey,
}

/// One rank's passes through a region.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RegionRank {
    pub rank: u32,
    pub count: u64,
    pub time: f64,
}

/// One region over every record folded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegionAcc {
    /// Lowest rank that contributed, and its two sites as it resolved them.
    pub shown_by: u32,
    pub from: Site,
    pub to: Site,
    pub count: u64,
    pub time: Fx,
    #[serde(with = "packed_rows::vec")]
    pub per_rank: Vec<RegionRank>,
    /// Once bounded (`crate::bounded`): every rank's time, sketched;
    /// `per_rank` then holds the rows that matter only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<crate::bounded::RegionSpread>,
}

impl RegionAcc {
    pub fn merge(&mut self, o: RegionAcc) {
        self.merge_spread(&o);
        if o.shown_by < self.shown_by {
            self.shown_by = o.shown_by;
            self.from = o.from;
            self.to = o.to;
        }
        self.count += o.count;
        self.time.merge(o.time);
        self.per_rank.extend(o.per_rank);
    }

    /// This rank's row (count, time), if it passed through the region.
    pub fn of_rank(&self, rank: u32) -> Option<&RegionRank> {
        self.per_rank.iter().find(|r| r.rank == rank)
    }
}

/// Regions that did not fit under the interposer's key cap, over every
/// record: distinct pairs (estimated, summed over ranks), passes, time.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct FoldedRegionTotals {
    pub keys: u64,
    pub count: u64,
    pub time: Fx,
}

impl crate::Aggregate {
    /// Folds a record's regions (called once per record).
    pub(crate) fn add_regions<'r>(
        &mut self,
        rec: &'r Record,
        site: impl Fn(u32) -> Option<&'r Site>,
    ) {
        for r in &rec.regions {
            let (Some(from), Some(to)) = (site(r.from.site), site(r.to.site)) else {
                continue;
            };
            self.add_region(rec.rank, r, from, to);
        }
        let f = &rec.regions_folded;
        self.regions_folded.keys += f.keys;
        self.regions_folded.count += f.count;
        self.regions_folded.time.add(f.sum_s);
    }

    fn add_region(&mut self, rank: u32, r: &Region, from: &Site, to: &Site) {
        let id = RegionId {
            from: SiteKey::of_call(from, &r.from.function),
            to: SiteKey::of_call(to, &r.to.function),
        };
        let acc = self.regions.entry(id).or_insert_with(|| RegionAcc {
            shown_by: rank,
            from: from.clone(),
            to: to.clone(),
            count: 0,
            time: Fx::default(),
            per_rank: Vec::new(),
            spread: None,
        });
        if rank < acc.shown_by {
            acc.shown_by = rank;
            acc.from = from.clone();
            acc.to = to.clone();
        }
        acc.count += r.count;
        acc.time.add(r.sum_s);
        // Two threads' pairs of sites may be the same report region (or
        // two addresses on one line): one row per rank.
        match acc.per_rank.last_mut() {
            Some(row) if row.rank == rank => {
                row.count += r.count;
                row.time += r.sum_s;
            }
            _ => acc.per_rank.push(RegionRank {
                rank,
                count: r.count,
                time: r.sum_s,
            }),
        }
    }
}
