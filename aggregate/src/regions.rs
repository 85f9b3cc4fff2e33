//! Regions: the application's code between two MPI calls, as the records
//! carry them per (from, to) pair of calls, folded per pair of report
//! sites with one row per rank. The report compares a late rank's row with
//! the waiting ranks' to say why it was late (`docs/method.md`, "Root
//! causes").

use mpiover_common::record::Site;
use serde::{Deserialize, Serialize};

use crate::exact_sum::Fx;
use crate::packed_rows::{self, u32_at, u64_at, Row};
use crate::site_key::SiteKey;
use crate::spread::RegionSpread;

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
    pub spread: Option<RegionSpread>,
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

// A region's per-rank row for `packed_rows`.
impl Row for RegionRank {
    const SIZE: usize = 4 + 8 + 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        RegionRank {
            rank: u32_at(b, 0),
            count: u64_at(b, 4),
            time: f64::from_bits(u64_at(b, 12)),
        }
    }
}
