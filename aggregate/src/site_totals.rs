//! What a site accumulates over the records folded: totals, tmax and
//! overhead figures, a display histogram, its peers and one row per rank.

use std::collections::{BTreeMap, BTreeSet};

use mpiover_common::functions::WaitState;
use mpiover_common::profile::Basis;
use mpiover_common::record::Site;
use serde::{Deserialize, Serialize};

use crate::display_bins::DIST_BINS;
use crate::exact_sum::Fx;
use crate::packed_rows::{self, fx_at, u32_at, u64_at, Row};
use crate::spread::Spread;
use crate::tmax_eval::{weaker, EntryEval, Tmax};
use crate::HashMap;

/// One rank's figures at one site.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RankSite {
    pub rank: u32,
    pub calls: u64,
    pub time: f64,
    /// Overhead of the calls that had a tmax; `None` when none had.
    pub overhead: Option<f64>,
    pub root: bool,
}

/// What one waiter spent waiting on one peer (at a site, or in the wait
/// matrix).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct PeerAcc {
    pub overhead: Fx,
    pub time: Fx,
    pub calls: u64,
}

impl PeerAcc {
    pub fn merge(&mut self, o: &PeerAcc) {
        self.overhead.merge(o.overhead);
        self.time.merge(o.time);
        self.calls += o.calls;
    }
}

/// One site's sums over every record folded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SiteAcc {
    /// Lowest rank that contributed, and the site as that rank resolved it.
    pub shown_by: u32,
    pub site: Site,
    pub calls: u64,
    pub time: Fx,
    pub bytes: u128,
    pub min: f64,
    pub max: f64,
    pub overhead: Fx,
    pub tmax_sum: Fx,
    pub calls_over: Fx,
    pub calls_with_tmax: u64,
    pub out_of_range_calls: u64,
    pub tmax_min: f64,
    pub tmax_max: f64,
    /// How the least certain tmax of the site was estimated, when known.
    pub basis: Option<Basis>,
    /// Overhead per wait state (`None`: overhead that indicates no wait state).
    pub states: BTreeMap<Option<WaitState>, Fx>,
    #[serde(with = "packed_rows::map")]
    pub peers: HashMap<u32, PeerAcc>,
    #[serde(with = "packed_rows::vec")]
    pub per_rank: Vec<RankSite>,
    pub dist: Vec<u64>,
    pub completes: BTreeSet<String>,
    pub posted_at: BTreeMap<String, u64>,
    /// Posts: where their requests were completed (calls).
    pub completed_at: BTreeMap<String, u64>,
    /// Calls whose tmax was composed, per rule; calls without a tmax, per reason.
    #[serde(with = "static_rules")]
    pub composed: BTreeMap<&'static str, u64>,
    pub missing: BTreeMap<String, u64>,
    /// Completions that waited on requests to or from several peers: whom
    /// they waited for is decided once every rank is in (the report's late
    /// peers).
    pub multi: Vec<MultiWait>,
    /// (late peer, posting line) -> overhead charged.
    pub waited_for: HashMap<(u32, Option<String>), Fx>,
    /// Point-to-point sends and receives: (rank, peer) -> calls
    /// (saturating), so that a waiting rank's peer can be found at the
    /// line where it sent or received (root causes).
    #[serde(default, with = "packed_rows::map")]
    pub pairs: HashMap<(u32, u32), u32>,
    /// The calls that waited: (waiting rank, the peer it waited for) ->
    /// overhead, time and calls at this site, so that root causes tell a
    /// rank that waited here for one peer from one that waited for another
    /// (a completion of requests to several). Absent from job logs written
    /// before it was kept (then empty).
    #[serde(default, with = "packed_rows::map")]
    pub pair_waits: HashMap<(u32, u32), PeerAcc>,
    /// Once the site's rows are bounded (a merged job log of many ranks,
    /// `crate::bounded`): what is kept of every rank's row; `per_rank`
    /// then holds the rows that matter only. None: `per_rank` is whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
}

/// One rank's waiting at a completion site whose requests went to or came
/// from several peers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MultiWait {
    pub rank: u32,
    pub overhead: f64,
    pub time: f64,
    pub calls: u64,
    /// The peers it may have waited for, with the line that posted each
    /// one's request.
    pub candidates: Vec<(u32, Option<String>)>,
}

impl SiteAcc {
    /// Charges `overhead` of `rank`'s waiting here to `peer`.
    pub fn add_pair_wait(&mut self, rank: u32, peer: u32, overhead: f64, time: f64, calls: u64) {
        let w = self.pair_waits.entry((rank, peer)).or_default();
        w.overhead.add(overhead);
        w.time.add(time);
        w.calls += calls;
    }

    pub fn new(rank: u32, site: &Site) -> SiteAcc {
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
            pairs: HashMap::default(),
            pair_waits: HashMap::default(),
            spread: None,
        }
    }

    pub fn merge(&mut self, o: SiteAcc) {
        self.merge_spread(&o);
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
            self.peers.entry(k).or_default().merge(&v);
        }
        self.per_rank.extend(o.per_rank);
        for (a, b) in self.dist.iter_mut().zip(o.dist) {
            *a += b;
        }
        self.completes.extend(o.completes);
        add_counts(&mut self.posted_at, o.posted_at);
        add_counts(&mut self.completed_at, o.completed_at);
        add_counts(&mut self.composed, o.composed);
        add_counts(&mut self.missing, o.missing);
        self.multi.extend(o.multi);
        for (k, v) in o.waited_for {
            self.waited_for.entry(k).or_default().merge(v);
        }
        for (k, v) in o.pairs {
            let c = self.pairs.entry(k).or_default();
            *c = c.saturating_add(v);
        }
        for (k, v) in o.pair_waits {
            self.pair_waits.entry(k).or_default().merge(&v);
        }
    }
}

fn add_counts<K: Ord>(into: &mut BTreeMap<K, u64>, from: BTreeMap<K, u64>) {
    for (k, v) in from {
        *into.entry(k).or_default() += v;
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
            .filter_map(|(k, v)| Some((crate::tmax_eval::composed_rule(Some(&k))?, v)))
            .collect())
    }
}

/// What an entry's tmax adds to its site: overhead (by wait state), calls
/// over tmax, the range and basis of tmax, composition rules, and why a
/// tmax is missing.
pub fn site_eval(acc: &mut SiteAcc, ev: &EntryEval, count: u64, state: Option<WaitState>) {
    if let Some(Tmax {
        s: t,
        out_of_range: oor,
        basis,
        ..
    }) = ev.tmax
    {
        acc.basis = weaker(acc.basis, basis);
        acc.overhead.add(ev.overhead);
        acc.tmax_sum.add(t * count as f64);
        acc.calls_over.add(ev.calls_over);
        acc.calls_with_tmax += count;
        if oor {
            acc.out_of_range_calls += count;
        }
        acc.tmax_min = acc.tmax_min.min(t);
        acc.tmax_max = acc.tmax_max.max(t);
        acc.states.entry(state).or_default().add(ev.overhead);
        if let Some(rule) = ev.tmax.and_then(|t| t.composed) {
            *acc.composed.entry(rule).or_default() += count;
        }
    }
    if let Some(why) = &ev.missing {
        *acc.missing.entry(why.clone()).or_default() += count;
    }
}

// The fixed-width rows of a site's per-rank table and its peers, for
// `packed_rows` (which knows no type of the aggregate).
impl Row for RankSite {
    const SIZE: usize = 4 + 8 + 8 + 8 + 1;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.calls.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
        // None as NaN: an overhead is never NaN (it is a sum of max(0, x)).
        out.extend_from_slice(&self.overhead.unwrap_or(f64::NAN).to_le_bytes());
        out.push(u8::from(self.root));
    }
    fn get(b: &[u8]) -> Self {
        let o = f64::from_bits(u64_at(b, 20));
        RankSite {
            rank: u32_at(b, 0),
            calls: u64_at(b, 4),
            time: f64::from_bits(u64_at(b, 12)),
            overhead: (!o.is_nan()).then_some(o),
            root: b[28] != 0,
        }
    }
}

impl Row for PeerAcc {
    const SIZE: usize = 16 + 16 + 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.overhead.bits().to_le_bytes());
        out.extend_from_slice(&self.time.bits().to_le_bytes());
        out.extend_from_slice(&self.calls.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        PeerAcc {
            overhead: fx_at(b, 0),
            time: fx_at(b, 16),
            calls: u64_at(b, 32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PeerAcc, RankSite};
    use crate::packed_rows::{bytes_of, Row};

    #[test]
    fn rows_read_back_as_written() {
        let v = vec![
            RankSite {
                rank: 7,
                calls: 3,
                time: 0.25,
                overhead: None,
                root: true,
            },
            RankSite {
                rank: 65535,
                calls: u64::MAX,
                time: 1e-9,
                overhead: Some(0.0),
                root: false,
            },
        ];
        let b = bytes_of(v.iter().copied());
        assert_eq!(b.len(), 2 * RankSite::SIZE);
        let back: Vec<RankSite> = b.chunks_exact(RankSite::SIZE).map(RankSite::get).collect();
        assert_eq!(format!("{back:?}"), format!("{v:?}"));
        let mut p = PeerAcc::default();
        p.overhead.add(-3.5e-7);
        p.time.add(1e6);
        p.calls = 9;
        let k = ((1u32, 2u32), p.clone());
        let mut b = Vec::new();
        k.put(&mut b);
        let back = <((u32, u32), PeerAcc)>::get(&b);
        assert_eq!(back.0, (1, 2));
        assert_eq!(
            (back.1.overhead, back.1.time, back.1.calls),
            (p.overhead, p.time, 9)
        );
    }
}
