//! Root causes: why the ranks a site waited for were late, from the regions
//! (the application's code between two MPI calls) alone, without traces
//! (`docs/method.md`, "Root causes").
//!
//! For a site X with a wait state, waiting ranks W and a late rank l, the
//! call of l that the waiting ranks waited for is its *matching call*: X
//! itself for a collective, l's send to a waiting rank for a late sender,
//! its receive from one for a late receiver. Each region of l that ended at
//! a matching call is compared with the same region on the waiting ranks
//! that ran it (their median time), or, when none did, with their time in
//! the code leading into the same call (the regions ending there, opened by
//! other calls), else into X. The difference,
//! summed over the run, is the region's *excess*: the extra time l spent in
//! that code. When l waited itself at the call that opened the region, the
//! same is asked of that wait, and the ranks it passes through are kept in
//! `via`: a chain names its origin.

use mpiover_aggregate::{RegionAcc, RegionId};
use mpiover_common::functions::catalogue::{self, Direction};

use super::assemble::{site, Built};
use super::*;

/// How far lateness is followed back through ranks that waited themselves.
const MAX_DEPTH: usize = 4;
/// Root causes kept per site.
const MAX_CAUSES: usize = 5;
/// Noise: an excess below this part of the waiting ranks' own time in the
/// region, or explaining less than this part of the overhead asked about,
/// is not a cause.
pub(crate) const OF_REFERENCE: f64 = 0.05;
pub(crate) const OF_OVERHEAD: f64 = 0.05;

/// The regions, indexed for the analysis: each one's rows sorted by rank,
/// and the regions by the site that ended them.
pub(crate) struct RegionIndex<'a> {
    regions: &'a HashMap<RegionId, RegionAcc>,
    by_end: HashMap<&'a SiteKey, Vec<&'a RegionId>>,
}

impl<'a> RegionIndex<'a> {
    /// `regions`' rows must be sorted by rank ([`sort_rows`]).
    pub(crate) fn new(regions: &'a HashMap<RegionId, RegionAcc>) -> RegionIndex<'a> {
        let mut by_end: HashMap<&SiteKey, Vec<&RegionId>> = HashMap::default();
        for id in regions.keys() {
            by_end.entry(&id.to).or_default().push(id);
        }
        for v in by_end.values_mut() {
            v.sort();
        }
        RegionIndex { regions, by_end }
    }

    fn time(&self, id: &RegionId, rank: u32) -> Option<f64> {
        let rows = &self.regions.get(id)?.per_rank;
        let i = rows.binary_search_by_key(&rank, |r| r.rank).ok()?;
        rows.get(i).map(|r| r.time)
    }

    fn ending_at(&self, site: &SiteKey) -> &[&'a RegionId] {
        self.by_end.get(site).map_or(&[], |v| v.as_slice())
    }
}

/// Sorts every region's rows by rank (for [`RegionIndex`]).
pub(crate) fn sort_rows(regions: &mut HashMap<RegionId, RegionAcc>) {
    for r in regions.values_mut() {
        r.per_rank.sort_by_key(|r| r.rank);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One end of a region as the report names it.
pub(crate) fn end_report(key: &SiteKey) -> RegionEndReport {
    let (file, line) = site::file_line(&key.loc);
    RegionEndReport {
        file,
        line,
        function: site::function_name(key),
        mpi_function: key.mpi.clone(),
        location: key.loc.display(),
    }
}

pub(crate) fn region_ref(id: &RegionId) -> RegionRef {
    RegionRef {
        from: end_report(&id.from),
        to: end_report(&id.to),
    }
}

/// Load imbalance of every region, largest first.
pub(crate) fn region_reports(regions: &HashMap<RegionId, RegionAcc>) -> Vec<RegionReport> {
    let mut out: Vec<RegionReport> = regions
        .iter()
        .filter(|(_, r)| !r.per_rank.is_empty())
        .map(|(id, r)| {
            let times: Vec<f64> = r.per_rank.iter().map(|x| x.time).collect();
            let (max_rank, max_s) = r
                .per_rank
                .iter()
                .map(|x| (x.rank, x.time))
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            let min_s = times.iter().copied().fold(f64::INFINITY, f64::min);
            let median_s = median(times);
            RegionReport {
                region: region_ref(id),
                ranks: r.per_rank.len() as u32,
                passes: r.count,
                time_s: r.time.get(),
                max_s,
                median_s,
                min_s,
                max_rank,
                imbalance_s: max_s - median_s,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.imbalance_s
            .total_cmp(&a.imbalance_s)
            .then(b.time_s.total_cmp(&a.time_s))
            .then_with(|| a.region.from.location.cmp(&b.region.from.location))
            .then_with(|| a.region.to.location.cmp(&b.region.to.location))
    });
    out
}

/// What the analysis reads of the sites.
struct Sites<'b> {
    built: &'b [Built],
    by_key: &'b HashMap<&'b SiteKey, usize>,
    wait: &'b HashMap<(u32, u32), PeerAcc>,
}

impl Sites<'_> {
    fn overhead_of(&self, site: usize, rank: u32) -> f64 {
        let rows = &self.built[site].acc.per_rank;
        rows.binary_search_by_key(&rank, |r| r.rank)
            .ok()
            .and_then(|i| rows[i].overhead)
            .unwrap_or(0.0)
    }

    fn has_pair(&self, site: usize, rank: u32, peer: u32) -> bool {
        self.built[site].acc.pairs.contains_key(&(rank, peer))
    }

    /// The calls of `late` that the ranks `waiting` waited for at site `x`.
    fn matching(&self, x: usize, late: u32, waiting: &[u32]) -> Vec<usize> {
        let want = match self.built[x].report.wait_state {
            Some(WaitState::LateSender) => Direction::Send,
            Some(WaitState::LateReceiver) => Direction::Recv,
            _ => return vec![x],
        };
        (0..self.built.len())
            .filter(|&s| {
                let dir = catalogue::get(&self.built[s].key.mpi).map(|f| f.direction);
                (dir == Some(want) || dir == Some(Direction::Both))
                    && waiting.iter().any(|&w| self.has_pair(s, late, w))
            })
            .collect()
    }

    /// The ranks `rank` waited for at site `a`.
    fn waited_for_at(&self, a: usize, rank: u32) -> Vec<u32> {
        let b = &self.built[a];
        match b.report.wait_state {
            Some(WaitState::LateSender | WaitState::LateReceiver) => {
                let mut q: Vec<u32> = b
                    .acc
                    .pairs
                    .keys()
                    .filter(|(r, p)| *r == rank && *p != rank)
                    .map(|&(_, p)| p)
                    .filter(|&p| {
                        self.wait
                            .get(&(rank, p))
                            .is_some_and(|c| c.overhead.get() > 0.0)
                    })
                    .collect();
                q.sort_unstable();
                q.dedup();
                q
            }
            Some(_) => b
                .report
                .late_ranks
                .iter()
                .copied()
                .filter(|&q| q != rank)
                .collect(),
            None => Vec::new(),
        }
    }
}

/// One question: why was `late` late to `waiting` at site `x`? `cap` is the
/// most of the asked site's overhead an answer can explain: all of it at
/// first, along a chain no more than each rank passed on waited itself.
struct Question<'q> {
    x: usize,
    late: u32,
    waiting: &'q [u32],
    cap: f64,
    via: Vec<u32>,
    depth: usize,
}

struct Explainer<'e> {
    sites: Sites<'e>,
    index: &'e RegionIndex<'e>,
    site_overhead: f64,
    causes: Vec<RootCause>,
    asked: Vec<(usize, u32)>,
}

impl Explainer<'_> {
    /// The waiting ranks' time in the code the late rank's region `id` ran:
    /// the median over those that ran the same region; when none did, over
    /// their code leading into the same call (opened by another call, as
    /// the last wait of a halo exchange differs with a rank's position),
    /// else into the wait site `x`.
    fn reference(&self, id: &RegionId, x: usize, waiting: &[u32]) -> f64 {
        let same: Vec<f64> = waiting
            .iter()
            .filter_map(|&w| self.index.time(id, w))
            .collect();
        if !same.is_empty() {
            return median(same);
        }
        for end in [&id.to, &self.sites.built[x].key] {
            let into = self.index.ending_at(end);
            let times: Vec<f64> = waiting
                .iter()
                .filter_map(|&w| {
                    let t: Vec<f64> = into.iter().filter_map(|r| self.index.time(r, w)).collect();
                    (!t.is_empty()).then(|| t.iter().sum())
                })
                .collect();
            if !times.is_empty() {
                return median(times);
            }
        }
        0.0
    }

    fn explain(&mut self, q: Question) {
        if self.asked.contains(&(q.x, q.late)) {
            return;
        }
        self.asked.push((q.x, q.late));
        let mut opened_by: Vec<usize> = Vec::new();
        for m in self.sites.matching(q.x, q.late, q.waiting) {
            let key = &self.sites.built[m].key;
            for id in self.index.ending_at(key) {
                let Some(t) = self.index.time(id, q.late) else {
                    continue;
                };
                let reference = self.reference(id, q.x, q.waiting);
                let excess = t - reference;
                // Every waiting rank waited for the excess.
                let explained = (excess * q.waiting.len() as f64).min(q.cap);
                if excess > 0.0
                    && excess >= OF_REFERENCE * reference
                    && explained >= OF_OVERHEAD * q.cap
                {
                    self.causes.push(RootCause {
                        rank: q.late,
                        region: region_ref(id),
                        excess_s: excess,
                        share: if self.site_overhead > 0.0 {
                            (explained / self.site_overhead).min(1.0)
                        } else {
                            0.0
                        },
                        via: q.via.clone(),
                    });
                }
                if let Some(&a) = self.sites.by_key.get(&id.from) {
                    if !opened_by.contains(&a) {
                        opened_by.push(a);
                    }
                }
            }
        }
        if q.depth >= MAX_DEPTH {
            return;
        }
        // The late rank waited itself where its region began: why? Only
        // what it waited there beyond the waiting ranks (when they sat in
        // the same call, e.g. a collective) made it late to them.
        for a in opened_by {
            let theirs = median(
                q.waiting
                    .iter()
                    .map(|&w| self.sites.overhead_of(a, w))
                    .collect(),
            );
            let own = self.sites.overhead_of(a, q.late) - theirs;
            if own <= 0.0 || own < OF_OVERHEAD * q.cap {
                continue;
            }
            let mut via = q.via.clone();
            via.push(q.late);
            for l2 in self.sites.waited_for_at(a, q.late) {
                if via.contains(&l2) {
                    continue;
                }
                self.explain(Question {
                    x: a,
                    late: l2,
                    waiting: &[q.late],
                    cap: own.min(q.cap),
                    via: via.clone(),
                    depth: q.depth + 1,
                });
            }
        }
    }
}

/// Fills `root_causes` of every site with a wait state.
pub(crate) fn root_causes(
    built: &mut [Built],
    index: &RegionIndex,
    wait: &HashMap<(u32, u32), PeerAcc>,
) {
    let mut found: Vec<(usize, Vec<RootCause>)> = Vec::new();
    {
        let by_key: HashMap<&SiteKey, usize> =
            built.iter().enumerate().map(|(i, b)| (&b.key, i)).collect();
        let view: &[Built] = built;
        for (x, b) in view.iter().enumerate() {
            if b.report.wait_state.is_none() {
                continue;
            }
            let site_overhead = b.report.overhead_s.unwrap_or(0.0);
            let mut ex = Explainer {
                sites: Sites {
                    built: view,
                    by_key: &by_key,
                    wait,
                },
                index,
                site_overhead,
                causes: Vec::new(),
                asked: Vec::new(),
            };
            let late = &b.report.late_ranks;
            // Every rank that waited here, late ones included: in a
            // symmetric exchange each rank waits for some and is late to
            // others.
            let waited: Vec<u32> = b
                .acc
                .per_rank
                .iter()
                .filter(|r| r.overhead.unwrap_or(0.0) > 0.0)
                .map(|r| r.rank)
                .collect();
            // Two late ranks share the site's overhead by what each is
            // charged (`late_ranks_s`), so that their causes do not both
            // claim all of it.
            let weights = &b.report.late_ranks_s;
            let total: f64 = weights.iter().sum();
            for (i, &l) in late.iter().enumerate() {
                let mine: Vec<u32> = waited.iter().copied().filter(|&w| w != l).collect();
                // A late peer's own waiting ranks, when the site knows them.
                let theirs: Vec<u32> = mine
                    .iter()
                    .copied()
                    .filter(|&w| ex.sites.has_pair(x, w, l))
                    .collect();
                let waiting = if theirs.is_empty() { &mine } else { &theirs };
                if waiting.is_empty() {
                    continue;
                }
                let part = match weights.get(i) {
                    Some(&w) if total > 0.0 && w > 0.0 => w / total,
                    _ => 1.0 / late.len() as f64,
                };
                ex.explain(Question {
                    x,
                    late: l,
                    waiting,
                    cap: site_overhead * part,
                    via: Vec::new(),
                    depth: 0,
                });
            }
            found.push((x, ex.causes));
        }
    }
    for (x, mut causes) in found {
        causes.sort_by(|a, b| {
            b.share
                .total_cmp(&a.share)
                .then(b.excess_s.total_cmp(&a.excess_s))
                .then(a.rank.cmp(&b.rank))
        });
        causes.dedup_by(|a, b| a.rank == b.rank && a.region == b.region);
        causes.truncate(MAX_CAUSES);
        built[x].report.root_causes = Some(causes);
    }
}
