//! [`Aggregate`]: what records are folded into, and how two are merged.

use serde::{Deserialize, Serialize};

use crate::display_bins::BucketBins;
use crate::merged_keys::{merge_key, pairs, KeyAcc, KeyId};
use crate::rank_totals::RankAcc;
use crate::regions::{FoldedRegionTotals, RegionAcc, RegionId};
use crate::site_key::SiteKey;
use crate::site_totals::{PeerAcc, SiteAcc};
use crate::spread::WaitDropped;
use crate::tmax_eval::Lookups;
use crate::{packed_rows, HashMap};

/// The sums of some records: per site, per rank, per waiter and peer. What
/// one of the report's workers folds its records into; also what the ranks
/// of a job fold theirs into and merge over MPI for a merged job log
/// ([`crate::JobAggregate`]), so it serializes (MessagePack) without its
/// caches. Field order is the payload's layout (`docs/log-format.md`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Aggregate {
    pub sites: HashMap<SiteKey, SiteAcc>,
    #[serde(with = "crate::rank_table")]
    pub ranks: Vec<RankAcc>,
    /// (waiter, peer) -> overhead, time, calls.
    #[serde(with = "packed_rows::map")]
    pub wait: HashMap<(u32, u32), PeerAcc>,
    pub lookups: Lookups,
    pub folded_keys: u64,
    pub folded_calls: u64,
    /// Fill the display histograms (only the HTML export shows them).
    pub want_dist: bool,
    /// Only when folding for a merged job log (`want_keys`): every key's
    /// entries of all ranks merged, without peer, so that the report can
    /// evaluate the sites against another profile or eager limit.
    #[serde(default, with = "pairs")]
    pub keys: HashMap<KeyId, KeyAcc>,
    /// The same for the point-to-point keys whose peer was on another host
    /// (their sends have another eager limit); absent in payloads written
    /// before it was kept apart.
    #[serde(default, with = "pairs")]
    pub keys_cross_host: HashMap<KeyId, KeyAcc>,
    /// The regions between MPI calls, per pair of sites, one row per rank.
    #[serde(default)]
    pub regions: HashMap<RegionId, RegionAcc>,
    #[serde(default)]
    pub regions_folded: FoldedRegionTotals,
    /// The wait matrix's cells dropped when it was bounded
    /// (`crate::bounded`): their sums and counts.
    #[serde(default)]
    pub wait_dropped: WaitDropped,
    #[serde(skip)]
    pub(crate) want_keys: bool,
    #[serde(skip)]
    pub(crate) bucket_bins: BucketBins,
}

impl Aggregate {
    /// An empty aggregate; `want_dist`: fill the display histograms.
    pub fn new(want_dist: bool) -> Aggregate {
        Aggregate {
            want_dist,
            ..Aggregate::default()
        }
    }

    /// Whether the records folded from now on also keep their keys merged
    /// over ranks (`keys`), as a merged job log does: the report reads the
    /// run's latency level and re-tests its sites at a wider tmax from the
    /// keys of a sample of ranks.
    pub fn keep_keys(&mut self, keep: bool) {
        self.want_keys = keep;
    }

    /// Adds another aggregate (other records).
    pub fn merge(&mut self, o: Aggregate) {
        for (id, k) in o.keys {
            merge_key(&mut self.keys, id, k);
        }
        for (id, k) in o.keys_cross_host {
            merge_key(&mut self.keys_cross_host, id, k);
        }
        for (k, v) in o.sites {
            match self.sites.get_mut(&k) {
                Some(a) => a.merge(v),
                None => {
                    self.sites.insert(k, v);
                }
            }
        }
        self.ranks.extend(o.ranks);
        for (k, v) in o.wait {
            self.wait.entry(k).or_default().merge(&v);
        }
        self.lookups.merge(&o.lookups);
        self.folded_keys += o.folded_keys;
        self.folded_calls += o.folded_calls;
        for (k, v) in o.regions {
            match self.regions.get_mut(&k) {
                Some(a) => a.merge(v),
                None => {
                    self.regions.insert(k, v);
                }
            }
        }
        self.regions_folded.keys += o.regions_folded.keys;
        self.regions_folded.count += o.regions_folded.count;
        self.regions_folded.time.merge(o.regions_folded.time);
        let (d, od) = (&mut self.wait_dropped, o.wait_dropped);
        d.overhead.merge(od.overhead);
        d.time.merge(od.time);
        d.cells_with_overhead += od.cells_with_overhead;
        d.cells_with_time += od.cells_with_time;
    }
}
