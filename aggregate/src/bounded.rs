//! Bounded per-rank detail: what a merged job log keeps of the parts that
//! grow with the ranks, so that no node of the merge tree (rank 0 least of
//! all) holds a row per rank and site.
//!
//! A site's or region's rows, the wait matrix's cells and a site's pairs
//! are each owned by one rank (the rank whose record made them): when a
//! part is bounded they are complete, and a row dropped there could not
//! have grown later. So keeping, per criterion, the rows that rank first
//! in a part keeps every row that ranks first in the job, whatever the
//! order of the merges: the top rows (largest and smallest time and
//! overhead, the roots) are exact at every scale. The rest is summarised
//! exactly where a sum does (the wait matrix's total and cells), and by
//! quantile sketches ([`crate::sketch`], stated error) where the report
//! needs a median. An evenly spaced sample of ranks, chosen by rank alone,
//! is kept as well, for the root causes' reference of waiting ranks. A
//! site's peers and late lines are not owned by one rank (many waiters
//! charge one peer): their kept values are lower bounds.
//!
//! Nothing is bounded below [`BOUND_ROWS`] rows (or the rows of the
//! [`Bounds`] given): there the log holds every row, as the per-rank records
//! do.

use crate::aggregate::Aggregate;
use crate::regions::{RegionAcc, RegionRank};
use crate::site_totals::{PeerAcc, RankSite, SiteAcc};
use crate::sketch::Sketch;
use crate::spread::{heat_columns, heat_max, RegionSpread, Spread};
use crate::HashMap;

/// Rows of a site or region kept whole; above it they are bounded (the
/// default of `MPIOVER_LOG_ROWS`).
pub const BOUND_ROWS: usize = mpiover_common::settings::LOG_ROWS.default as usize;
/// Rows kept per criterion (largest time, smallest time, ...): in
/// `spread`, which a log without its own `keep` reads it from.
pub use crate::spread::KEEP_PER_CRITERION;
/// Ranks of the evenly spaced sample kept at every site and region.
pub const SAMPLE_RANKS: u32 = 64;
/// Wait-matrix cells kept per metric (overhead, time): as many as the
/// report lists.
pub const KEEP_CELLS: usize = 10_000;
/// A site's peers, pairs and late lines kept per criterion.
pub const KEEP_PEERS: usize = 256;

/// How much per-rank detail a part keeps once bounded. The job log's
/// default is [`Bounds::DEFAULT`]; a smaller one (`MPIOVER_LOG_ROWS`) makes a
/// job of a few dozen ranks bound its rows as a job of thousands does, so
/// that the estimates can be checked on a real job of test size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Rows of a site or region kept whole; above it they are bounded.
    pub rows: usize,
    /// Rows kept per criterion.
    pub keep: usize,
    /// Ranks of the evenly spaced sample.
    pub sample: u32,
}

impl Bounds {
    pub const DEFAULT: Bounds = Bounds {
        rows: BOUND_ROWS,
        keep: KEEP_PER_CRITERION,
        sample: SAMPLE_RANKS,
    };

    /// Rows kept whole up to `rows`; above, a sixteenth of that per
    /// criterion (at least 4, so that a small setting still keeps a few
    /// late ranks) and an eighth as the sample, as the default's 512, 32
    /// and 64.
    pub fn with_rows(rows: usize) -> Bounds {
        let rows = rows.max(1);
        Bounds {
            rows,
            keep: rows.div_ceil(16).max(4).min(rows),
            sample: u32::try_from(rows / 8).unwrap_or(u32::MAX).max(1),
        }
    }

    fn sampled(&self, rank: u32, world: u32) -> bool {
        rank.is_multiple_of(world.div_ceil(self.sample).max(1))
    }
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds::DEFAULT
    }
}

/// A criterion: the rows with the largest values are kept; None: the row
/// does not compete.
type Criterion<'a, T> = &'a dyn Fn(&T) -> Option<f64>;

/// `rows` down to those that rank among the first `keep` by any of
/// `criteria` (ties to the lowest `id`) or that `always` keeps, once there
/// are more than `cap`; returns the rows dropped.
fn select<T>(
    rows: &mut Vec<T>,
    cap: usize,
    keep: usize,
    id: &dyn Fn(&T) -> u64,
    criteria: &[Criterion<T>],
    always: &dyn Fn(&T) -> bool,
) -> Vec<T> {
    if rows.len() <= cap {
        return Vec::new();
    }
    let mut mark: Vec<bool> = rows.iter().map(always).collect();
    for c in criteria {
        let mut cand: Vec<(f64, u64, usize)> = rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| c(r).map(|v| (v, id(r), i)))
            .collect();
        let order =
            |a: &(f64, u64, usize), b: &(f64, u64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if cand.len() > keep {
            cand.select_nth_unstable_by(keep, order);
            cand.truncate(keep);
        }
        for (_, _, i) in cand {
            mark[i] = true;
        }
    }
    let mut it = mark.into_iter();
    let (kept, dropped): (Vec<T>, Vec<T>) = rows.drain(..).partition(|_| it.next().unwrap_or(true));
    *rows = kept;
    dropped
}

/// What a bounded site keeps of its rows.
fn spread_of_rows(rows: &[RankSite], world: u32, keep: u32) -> Spread {
    let per_call = |r: &RankSite| (r.calls > 0).then(|| r.time / r.calls as f64);
    let (per_col, cols) = heat_columns(world);
    let mut s = Spread {
        world,
        time: Sketch::of(rows.iter().map(|r| r.time)),
        overhead: Sketch::of(rows.iter().filter_map(|r| r.overhead)),
        per_call: Sketch::of(rows.iter().filter_map(per_call)),
        per_call_nonroot: Sketch::of(rows.iter().filter(|r| !r.root).filter_map(per_call)),
        heat_time: vec![f32::NAN; cols as usize],
        heat_overhead: vec![f32::NAN; cols as usize],
        keep,
    };
    for r in rows {
        let col = (r.rank / per_col) as usize;
        heat_max(&mut s.heat_time, col, r.time as f32);
        heat_max(&mut s.heat_overhead, col, r.overhead.unwrap_or(0.0) as f32);
    }
    s
}

fn pair_id(k: &(u32, u32)) -> u64 {
    (u64::from(k.0) << 32) | u64::from(k.1)
}

fn bound_map<K, V>(
    m: &mut HashMap<K, V>,
    keep: usize,
    id: &dyn Fn(&K) -> u64,
    criteria: &[Criterion<(K, V)>],
) where
    K: Eq + std::hash::Hash,
{
    if m.len() <= keep * criteria.len() {
        return;
    }
    let mut v: Vec<(K, V)> = m.drain().collect();
    select(&mut v, 0, keep, &|kv| id(&kv.0), criteria, &|_| false);
    m.extend(v);
}

impl SiteAcc {
    /// The site's spread, from its rows when it is not bounded yet.
    fn spread_or_rows(&self, world: u32, keep: u32) -> Spread {
        self.spread
            .clone()
            .unwrap_or_else(|| spread_of_rows(&self.per_rank, world, keep))
    }

    /// Keeps the spread of `o` and `self` when either is bounded.
    pub(crate) fn merge_spread(&mut self, o: &SiteAcc) {
        let (world, keep) = match (&self.spread, &o.spread) {
            (None, None) => return,
            (Some(s), _) | (_, Some(s)) => (s.world, s.keep),
        };
        let mut s = self.spread_or_rows(world, keep);
        s.merge(&o.spread_or_rows(world, keep));
        self.spread = Some(s);
    }

    /// Bounds what grows with the ranks (see the module's text).
    pub fn bound(&mut self, world: u32, b: &Bounds) {
        let sampled = |rank: u32| b.sampled(rank, world);
        // Once bounded, always: the rows kept are then those of the
        // criteria over the whole job, whatever the order of the merges.
        if self.spread.is_some() || self.per_rank.len() > b.rows {
            if self.spread.is_none() {
                let keep = u32::try_from(b.keep).unwrap_or(u32::MAX);
                self.spread = Some(spread_of_rows(&self.per_rank, world, keep));
            }
            let per_call = |r: &RankSite| (r.calls > 0).then(|| -(r.time / r.calls as f64));
            select(
                &mut self.per_rank,
                0,
                b.keep,
                &|r| u64::from(r.rank),
                &[
                    &|r| Some(r.time),
                    &|r| Some(-r.time),
                    &|r| r.overhead,
                    &|r| r.overhead.map(|o| -o),
                    &per_call,
                    &|r| (!r.root).then(|| per_call(r)).flatten(),
                    &|r| r.root.then_some(0.0),
                ],
                &|r| sampled(r.rank),
            );
            self.per_rank.sort_by_key(|r| r.rank);
        }
        let ovh = |a: &PeerAcc| a.overhead.get();
        bound_map(
            &mut self.peers,
            KEEP_PEERS,
            &|k| u64::from(*k),
            &[&|kv| Some(ovh(&kv.1)), &|kv| Some(kv.1.time.get())],
        );
        bound_map(
            &mut self.pairs,
            KEEP_PEERS,
            &pair_id,
            &[&|kv| Some(f64::from(kv.1)), &|kv| {
                sampled(kv.0 .0).then_some(f64::INFINITY)
            }],
        );
        bound_map(
            &mut self.pair_waits,
            KEEP_PEERS,
            &pair_id,
            &[&|kv| Some(ovh(&kv.1)), &|kv| Some(kv.1.time.get()), &|kv| {
                sampled(kv.0 .0).then_some(f64::INFINITY)
            }],
        );
        bound_map(
            &mut self.waited_for,
            KEEP_PEERS,
            &|k| u64::from(k.0),
            &[&|kv| Some(kv.1.get())],
        );
        if self.multi.len() > KEEP_PEERS {
            select(
                &mut self.multi,
                KEEP_PEERS,
                KEEP_PEERS,
                &|m| u64::from(m.rank),
                &[&|m| Some(m.overhead)],
                &|m| sampled(m.rank),
            );
        }
    }
}

impl RegionAcc {
    pub(crate) fn merge_spread(&mut self, o: &RegionAcc) {
        if self.spread.is_none() && o.spread.is_none() {
            return;
        }
        let of = |g: &RegionAcc| {
            g.spread.clone().unwrap_or_else(|| RegionSpread {
                time: Sketch::of(g.per_rank.iter().map(|r| r.time)),
            })
        };
        let mut s = of(self);
        s.time.merge(&of(o).time);
        self.spread = Some(s);
    }

    pub fn bound(&mut self, world: u32, b: &Bounds) {
        if self.spread.is_none() && self.per_rank.len() <= b.rows {
            return;
        }
        if self.spread.is_none() {
            self.spread = Some(RegionSpread {
                time: Sketch::of(self.per_rank.iter().map(|r| r.time)),
            });
        }
        select(
            &mut self.per_rank,
            0,
            b.keep,
            &|r: &RegionRank| u64::from(r.rank),
            &[&|r| Some(r.time), &|r| Some(-r.time), &|r| {
                (r.count > 0).then(|| r.time / r.count as f64)
            }],
            &|r| b.sampled(r.rank, world),
        );
        self.per_rank.sort_by_key(|r| r.rank);
    }
}

impl Aggregate {
    /// Bounds every part that grows with the ranks of a job of `world`
    /// ranks (see the module's text); a no-op below `b.rows` rows.
    pub fn bound(&mut self, world: u32, b: &Bounds) {
        for s in self.sites.values_mut() {
            s.bound(world, b);
        }
        for g in self.regions.values_mut() {
            g.bound(world, b);
        }
        if self.wait.len() > 2 * KEEP_CELLS {
            let mut cells: Vec<((u32, u32), PeerAcc)> = self.wait.drain().collect();
            let dropped = select(
                &mut cells,
                0,
                KEEP_CELLS,
                &|kv| pair_id(&kv.0),
                &[&|kv| Some(kv.1.overhead.get()), &|kv| Some(kv.1.time.get())],
                &|_| false,
            );
            let d = &mut self.wait_dropped;
            for (_, a) in dropped {
                d.overhead.merge(a.overhead);
                d.time.merge(a.time);
                d.cells_with_overhead += u64::from(a.overhead.get() > 0.0);
                d.cells_with_time += u64::from(a.time.get() > 0.0);
            }
            self.wait.extend(cells);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> mpiover_common::record::Site {
        mpiover_common::record::Site {
            id: 0,
            address: "0x1000".into(),
            module: None,
            build_id: None,
            offset: None,
            function: None,
            symbol: None,
            file: None,
            line: None,
            inlined_into: Vec::new(),
            note: None,
            native: None,
            language: None,
        }
    }

    fn row(rank: u32, time: f64) -> RankSite {
        RankSite {
            rank,
            calls: 10,
            time,
            overhead: Some(time / 2.0),
            root: rank == 3,
        }
    }

    /// Rows of 4,096 ranks bounded in parts of any size keep the same rows
    /// and the same spread as bounded at once.
    #[test]
    fn bounding_parts_keeps_the_rows_bounding_the_whole_keeps() {
        let world = 4096;
        let t = |r: u32| 1e-3 * (1.0 + f64::from((r * 2_654_435_761u32) >> 20));
        let whole: Vec<RankSite> = (0..world).map(|r| row(r, t(r))).collect();
        let mut once = SiteAcc::new(0, &site());
        once.per_rank = whole.clone();
        once.bound(world, &Bounds::DEFAULT);
        let mut tree: Option<SiteAcc> = None;
        for chunk in whole.chunks(700) {
            let mut part = SiteAcc::new(chunk[0].rank, &site());
            part.per_rank = chunk.to_vec();
            part.bound(world, &Bounds::DEFAULT);
            match tree.as_mut() {
                None => tree = Some(part),
                Some(t) => {
                    t.merge(part);
                    t.bound(world, &Bounds::DEFAULT);
                }
            }
        }
        let tree = tree.unwrap();
        let ranks = |s: &SiteAcc| s.per_rank.iter().map(|r| r.rank).collect::<Vec<_>>();
        assert_eq!(ranks(&tree), ranks(&once));
        assert!(once.per_rank.len() <= BOUND_ROWS);
        let (a, b) = (tree.spread.clone().unwrap(), once.spread.clone().unwrap());
        assert_eq!(a.time, b.time);
        assert_eq!(a.time.n, u64::from(world));
        assert!(a.is_consistent());
        let mut sorted: Vec<f64> = whole.iter().map(|r| r.time).collect();
        sorted.sort_by(f64::total_cmp);
        let exact = (sorted[2047] + sorted[2048]) / 2.0;
        assert!((a.time.median() - exact).abs() <= crate::sketch::SKETCH_ALPHA * exact);
        // The slowest and the root are among the rows kept.
        let slowest = whole
            .iter()
            .max_by(|x, y| x.time.total_cmp(&y.time))
            .unwrap();
        assert!(ranks(&tree).contains(&slowest.rank));
        assert!(ranks(&tree).contains(&3));
    }
}
