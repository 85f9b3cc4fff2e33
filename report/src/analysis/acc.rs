//! The accumulators records are folded into: per site (totals, a display
//! histogram, one row per rank), per rank, per waiter/peer pair.

use serde::{Deserialize, Serialize};

use super::*;

/// Log-spaced display bins: 20 per decade from 1 ns to 10^4 s.
pub(crate) const DIST_LO: f64 = 1e-9;
pub(crate) const DIST_PER_DECADE: f64 = 20.0;
pub(crate) const DIST_BINS: usize = 13 * 20;

pub(crate) fn dist_bin(t: f64) -> usize {
    if t <= DIST_LO {
        return 0;
    }
    (((t / DIST_LO).log10() * DIST_PER_DECADE) as usize).min(DIST_BINS - 1)
}

pub(crate) fn dist_edge(i: usize) -> f64 {
    DIST_LO * 10f64.powf(i as f64 / DIST_PER_DECADE)
}

/// The bin whose lower edge is `edge` (the inverse of [`dist_edge`]).
pub(crate) fn dist_index_of_edge(edge: f64) -> usize {
    (((edge / DIST_LO).log10() * DIST_PER_DECADE)
        .round()
        .max(0.0) as usize)
        .min(DIST_BINS - 1)
}

/// One rank's figures at one site.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct RankSite {
    pub(crate) rank: u32,
    pub(crate) calls: u64,
    pub(crate) time: f64,
    /// Overhead of the calls that had a tmax; `None` when none had.
    pub(crate) overhead: Option<f64>,
    pub(crate) root: bool,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct PeerAcc {
    pub(crate) overhead: Fx,
    pub(crate) time: Fx,
    pub(crate) calls: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SiteAcc {
    /// Lowest rank that contributed, and the site as that rank resolved it.
    pub(crate) shown_by: u32,
    pub(crate) site: Site,
    pub(crate) calls: u64,
    pub(crate) time: Fx,
    pub(crate) bytes: u128,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) overhead: Fx,
    pub(crate) tmax_sum: Fx,
    pub(crate) calls_over: Fx,
    pub(crate) calls_with_tmax: u64,
    pub(crate) out_of_range_calls: u64,
    pub(crate) tmax_min: f64,
    pub(crate) tmax_max: f64,
    /// How the least certain tmax of the site was estimated, when known.
    pub(crate) basis: Option<Basis>,
    /// Overhead per wait state (`None`: overhead that indicates no wait state).
    pub(crate) states: BTreeMap<Option<WaitState>, Fx>,
    #[serde(with = "packed::map")]
    pub(crate) peers: HashMap<u32, PeerAcc>,
    #[serde(with = "packed::vec")]
    pub(crate) per_rank: Vec<RankSite>,
    pub(crate) dist: Vec<u64>,
    pub(crate) completes: BTreeSet<String>,
    pub(crate) posted_at: BTreeMap<String, u64>,
    /// Posts: where their requests were completed (calls).
    pub(crate) completed_at: BTreeMap<String, u64>,
    /// Calls whose tmax was composed, per rule; calls without a tmax, per reason.
    #[serde(with = "static_rules")]
    pub(crate) composed: BTreeMap<&'static str, u64>,
    pub(crate) missing: BTreeMap<String, u64>,
    /// Completions that waited on requests to or from several peers: whom
    /// they waited for is decided once every rank is in (`charge_multi`).
    pub(crate) multi: Vec<MultiWait>,
    /// (late peer, posting line) -> overhead charged.
    pub(crate) waited_for: HashMap<(u32, Option<String>), Fx>,
}

/// One rank's waiting at a completion site whose requests went to or came
/// from several peers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MultiWait {
    pub(crate) rank: u32,
    pub(crate) overhead: f64,
    pub(crate) time: f64,
    pub(crate) calls: u64,
    /// The peers it may have waited for, with the line that posted each
    /// one's request.
    pub(crate) candidates: Vec<(u32, Option<String>)>,
}

impl SiteAcc {
    pub(crate) fn new(rank: u32, site: &Site) -> SiteAcc {
        SiteAcc {
            shown_by: rank,
            site: site.clone(),
            calls: 0,
            time: Fx::default(),
            bytes: 0,
            min: f64::INFINITY,
            max: 0.0,
            overhead: Fx::default(),
            tmax_sum: Fx::default(),
            calls_over: Fx::default(),
            calls_with_tmax: 0,
            out_of_range_calls: 0,
            tmax_min: f64::INFINITY,
            tmax_max: 0.0,
            basis: None,
            states: BTreeMap::new(),
            peers: HashMap::default(),
            per_rank: Vec::new(),
            dist: vec![0; DIST_BINS],
            completes: BTreeSet::new(),
            posted_at: BTreeMap::new(),
            completed_at: BTreeMap::new(),
            composed: BTreeMap::new(),
            missing: BTreeMap::new(),
            multi: Vec::new(),
            waited_for: HashMap::default(),
        }
    }

    pub(crate) fn merge(&mut self, o: SiteAcc) {
        if o.shown_by < self.shown_by {
            self.shown_by = o.shown_by;
            self.site = o.site;
        }
        self.calls += o.calls;
        self.time.merge(o.time);
        self.bytes += o.bytes;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.overhead.merge(o.overhead);
        self.tmax_sum.merge(o.tmax_sum);
        self.calls_over.merge(o.calls_over);
        self.calls_with_tmax += o.calls_with_tmax;
        self.out_of_range_calls += o.out_of_range_calls;
        self.tmax_min = self.tmax_min.min(o.tmax_min);
        self.tmax_max = self.tmax_max.max(o.tmax_max);
        self.basis = weaker(self.basis, o.basis);
        for (k, v) in o.states {
            self.states.entry(k).or_default().merge(v);
        }
        for (k, v) in o.peers {
            let p = self.peers.entry(k).or_default();
            p.overhead.merge(v.overhead);
            p.time.merge(v.time);
            p.calls += v.calls;
        }
        self.per_rank.extend(o.per_rank);
        for (a, b) in self.dist.iter_mut().zip(o.dist) {
            *a += b;
        }
        self.completes.extend(o.completes);
        for (k, v) in o.posted_at {
            *self.posted_at.entry(k).or_default() += v;
        }
        for (k, v) in o.completed_at {
            *self.completed_at.entry(k).or_default() += v;
        }
        for (k, v) in o.composed {
            *self.composed.entry(k).or_default() += v;
        }
        for (k, v) in o.missing {
            *self.missing.entry(k).or_default() += v;
        }
        self.multi.extend(o.multi);
        for (k, v) in o.waited_for {
            self.waited_for.entry(k).or_default().merge(v);
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RankAcc {
    pub(crate) rank: u32,
    pub(crate) host: String,
    pub(crate) app_time: f64,
    /// Without start-up and shut-down.
    pub(crate) mpi_time: f64,
    pub(crate) startup: f64,
    pub(crate) shutdown: f64,
    pub(crate) event_time: f64,
    pub(crate) overhead: Option<f64>,
    pub(crate) calls: u64,
    pub(crate) cost_per_call: f64,
    /// Rank 0's time merging the job log, when the run wrote one.
    pub(crate) merge_s: Option<f64>,
    /// Python sites: added cost per call from Python, and such calls.
    pub(crate) py_cost: Option<f64>,
    pub(crate) py_calls: u64,
    pub(crate) finished: String,
    pub(crate) command: Vec<String>,
    pub(crate) mpi_library: String,
    pub(crate) thread_level: String,
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) timer_name: String,
    pub(crate) timer_resolution: f64,
    pub(crate) timer_cost: f64,
    pub(crate) depth: u32,
    pub(crate) profile: Option<(String, bool, Option<f64>, Option<String>)>,
    pub(crate) warnings: Vec<String>,
}

impl RankAcc {
    /// The tool's own time on this rank: the wrapper's cost per call, plus
    /// the Python site's on the calls made from Python.
    pub(crate) fn tool_time(&self) -> f64 {
        self.cost_per_call * self.calls as f64 + self.py_cost.unwrap_or(0.0) * self.py_calls as f64
    }
}

/// What one worker folds its records into; also what the ranks of a job
/// fold theirs into and merge over MPI for a merged job log (`merged`), so
/// it serializes (MessagePack) without its caches.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Agg {
    pub(crate) sites: HashMap<SiteKey, SiteAcc>,
    pub(crate) ranks: Vec<RankAcc>,
    /// (waiter, peer) -> overhead, time, calls.
    #[serde(with = "packed::map")]
    pub(crate) wait: HashMap<(u32, u32), PeerAcc>,
    pub(crate) lookups: Lookups,
    pub(crate) folded_keys: u64,
    pub(crate) folded_calls: u64,
    /// Fill the display histograms (only the HTML export shows them).
    pub(crate) want_dist: bool,
    /// Display bin of each histogram bucket for the timer unit `bin_unit`
    /// (`u16::MAX`: not computed yet): saves a logarithm per bucket.
    /// Only when folding for a merged job log (`want_keys`): every key's
    /// entries of all ranks merged, without peer, so that the report can
    /// evaluate the sites against another profile or eager limit.
    #[serde(default, with = "pairs")]
    pub(crate) keys: HashMap<KeyId, KeyAcc>,
    #[serde(skip)]
    pub(crate) want_keys: bool,
    #[serde(skip)]
    pub(crate) bin_cache: Vec<u16>,
    #[serde(skip)]
    pub(crate) bin_unit: f64,
    #[serde(skip)]
    pub(crate) scratch: Vec<(usize, u64)>,
}

impl Agg {
    pub(crate) fn new(want_dist: bool) -> Agg {
        Agg {
            want_dist,
            ..Agg::default()
        }
    }

    /// Display bin of a histogram bucket (its midpoint) for timer unit `unit`.
    pub(crate) fn bucket_bin(&mut self, index: usize, unit: f64) -> usize {
        if self.bin_unit != unit || self.bin_cache.is_empty() {
            self.bin_cache.clear();
            self.bin_cache
                .resize(mpiover_common::histogram::MAX_INDEX, u16::MAX);
            self.bin_unit = unit;
        }
        let c = &mut self.bin_cache[index];
        if *c == u16::MAX {
            let (lo, hi) = bucket_bounds(index);
            *c = dist_bin((lo as f64 + hi as f64) / 2.0 * unit) as u16;
        }
        *c as usize
    }
}

/// The composition rules as the catalogue's own strings: by name in a
/// serialized aggregate, back to the catalogue's `&'static str` when read.
mod static_rules {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        m: &BTreeMap<&'static str, u64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<&'static str, u64>, D::Error> {
        let m = BTreeMap::<String, u64>::deserialize(d)?;
        Ok(m.into_iter()
            .filter_map(|(k, v)| Some((super::composed_rule(Some(&k))?, v)))
            .collect())
    }
}

/// What makes a key's tmax and wait state, at a site: (site, MPI function,
/// p, bytes, role, completed function, requests completed).
pub(crate) type KeyId = (
    SiteKey,
    String,
    u32,
    u64,
    Option<String>,
    Option<String>,
    Option<Requests>,
);

/// One key's entries of all ranks, merged: the histogram in the timer unit
/// of the lowest rank (the ranks' units differ by their clocks' calibration,
/// parts per million), and how many entries were merged (the report counts
/// tmax lookups per entry).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct KeyAcc {
    pub(crate) rank: u32,
    pub(crate) unit_s: f64,
    pub(crate) entries: u64,
    pub(crate) entry: Entry,
}

impl KeyAcc {
    pub(crate) fn merge(&mut self, mut o: KeyAcc) {
        if o.rank < self.rank {
            std::mem::swap(self, &mut o);
        }
        let (a, b) = (&mut self.entry, &o.entry);
        a.count += b.count;
        a.sum_s += b.sum_s;
        a.min_s = a.min_s.min(b.min_s);
        a.max_s = a.max_s.max(b.max_s);
        a.overhead_s = match (a.overhead_s, b.overhead_s) {
            (Some(x), Some(y)) => Some(x + y),
            (x, y) => x.or(y),
        };
        a.tmax_out_of_range |= b.tmax_out_of_range;
        a.hist.merge(&b.hist);
        self.entries += o.entries;
    }
}

/// A map serialized as a list of pairs (its keys are not strings).
mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::HashMap;

    pub(crate) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        m: &HashMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub(crate) fn deserialize<'de, K, V, D>(d: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + std::hash::Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}
