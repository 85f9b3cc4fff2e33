//! The stretch of a rank's own code since it last met the ranks it is
//! compared with: walked back through the regions from a call until the
//! calls at which the two sides synchronized (`docs/method.md`, "Root
//! causes").
//!
//! Regions chain: the call that closes one opens the next. From a call M,
//! the regions that ended at M are part of the stretch; each was opened by a
//! call F, and the walk goes on through the regions that ended at F unless F
//! is where the rank met the others (a collective they took part in, a
//! message between them that completed) or where it waited for a rank
//! outside them (there the lateness came from that rank, and the chain
//! follows it). Posts, polls and calls that did not wait are passed through:
//! the code on both sides of them is one stretch.

use mpiover_aggregate::RegionId;
use mpiover_common::functions::catalogue::{self, Direction, EventClass};

use super::super::site_row::Built;
use super::super::*;
use super::index::RegionIndex;

/// What the analysis reads of the sites.
pub(super) struct Sites<'b> {
    pub(super) built: &'b [Built],
    pub(super) by_key: &'b HashMap<&'b SiteKey, usize>,
    pub(super) wait: &'b HashMap<(u32, u32), PeerAcc>,
    /// Per completion site, the posts whose requests it completed.
    completed: Vec<Vec<usize>>,
}

impl<'b> Sites<'b> {
    pub(super) fn new(
        built: &'b [Built],
        by_key: &'b HashMap<&'b SiteKey, usize>,
        wait: &'b HashMap<(u32, u32), PeerAcc>,
    ) -> Sites<'b> {
        // Posts name their completions by line (`completed_at`).
        let mut by_line: HashMap<String, Vec<usize>> = HashMap::default();
        for (i, b) in built.iter().enumerate() {
            by_line.entry(b.key.loc.display()).or_default().push(i);
        }
        let mut completed = vec![Vec::new(); built.len()];
        for (p, b) in built.iter().enumerate() {
            for line in b.acc.completed_at.keys() {
                for &c in by_line.get(line).map_or(&[][..], |v| v.as_slice()) {
                    completed[c].push(p);
                }
            }
        }
        Sites {
            built,
            by_key,
            wait,
            completed,
        }
    }

    fn row(&self, site: usize, rank: u32) -> Option<&RankSite> {
        let rows = &self.built[site].acc.per_rank;
        rows.binary_search_by_key(&rank, |r| r.rank)
            .ok()
            .map(|i| &rows[i])
    }

    pub(super) fn overhead_of(&self, site: usize, rank: u32) -> f64 {
        self.row(site, rank).and_then(|r| r.overhead).unwrap_or(0.0)
    }

    /// The longest call at site `x`, of any rank.
    pub(super) fn longest_call(&self, x: usize) -> f64 {
        self.built[x].acc.max
    }

    pub(super) fn has_pair(&self, site: usize, rank: u32, peer: u32) -> bool {
        self.built[site].acc.pairs.contains_key(&(rank, peer))
    }

    /// The calls of `late` that the ranks `waiting` waited for at site `x`.
    pub(super) fn matching(&self, x: usize, late: u32, waiting: &[u32]) -> Vec<usize> {
        let want = match self.built[x].report.wait_state {
            Some(WaitState::LateSender) => Direction::Send,
            Some(WaitState::LateReceiver) => Direction::Recv,
            _ => return vec![x],
        };
        let all: Vec<usize> = (0..self.built.len())
            .filter(|&s| {
                let dir = catalogue::get(&self.built[s].key.mpi).map(|f| f.direction);
                (dir == Some(want) || dir == Some(Direction::Both))
                    && waiting.iter().any(|&w| self.has_pair(s, late, w))
            })
            .collect();
        // A blocking send or receive is matched by the calls that move
        // messages of its size, when there are any: the late rank's sends
        // of 8 bytes in one phase are not what a receive of 1 MiB in the
        // next waited for.
        let blocking = catalogue::get(&self.built[x].key.mpi)
            .is_some_and(|f| matches!(f.class, EventClass::Send | EventClass::Recv));
        let size = |s: usize| {
            let a = &self.built[s].acc;
            (a.calls > 0).then(|| a.bytes as f64 / a.calls as f64)
        };
        if let (true, Some(bx)) = (blocking, size(x)) {
            let same: Vec<usize> = all
                .iter()
                .copied()
                .filter(|&s| size(s).is_some_and(|b| (b - bx).abs() <= 0.01 * bx))
                .collect();
            if !same.is_empty() {
                return same;
            }
        }
        all
    }

    /// The peers `rank` waited for at site `a`, as its calls there were
    /// charged (`pair_waits`).
    fn waited_peers(&self, a: usize, rank: u32) -> Vec<u32> {
        let mut q: Vec<u32> = self.built[a]
            .acc
            .pair_waits
            .iter()
            .filter(|(&(r, p), w)| r == rank && p != rank && w.overhead.get() > 0.0)
            .map(|(&(_, p), _)| p)
            .collect();
        q.sort_unstable();
        q
    }

    /// What `rank` waited at site `a` that made it late to `others`: at a
    /// point-to-point site or completion, its waits charged to peers outside
    /// them; at a collective (or without waits per peer) its overhead beyond
    /// theirs in the same call.
    pub(super) fn waited_beyond(&self, a: usize, rank: u32, others: &[u32]) -> f64 {
        let acc = &self.built[a].acc;
        if !func_is_collective(&self.built[a].key.mpi) && !acc.pair_waits.is_empty() {
            return acc
                .pair_waits
                .iter()
                .filter(|(&(r, p), _)| r == rank && !others.contains(&p))
                .map(|(_, w)| w.overhead.get())
                .fold(0.0, |x, y| x + y);
        }
        let theirs = super::index::median(others.iter().map(|&w| self.overhead_of(a, w)).collect());
        self.overhead_of(a, rank) - theirs
    }

    /// The ranks `rank` waited for at site `a`.
    pub(super) fn waited_for_at(&self, a: usize, rank: u32) -> Vec<u32> {
        let b = &self.built[a];
        match b.report.wait_state {
            Some(WaitState::LateSender | WaitState::LateReceiver) => {
                let charged = self.waited_peers(a, rank);
                if !charged.is_empty() || !b.acc.pair_waits.is_empty() {
                    return charged;
                }
                // A job log written before the waits were kept per peer:
                // the peers it exchanged with here and waited for anywhere.
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

    /// Whether `rank` met one of `others` at site `f`: a blocking collective
    /// they made too, a blocking send or receive between them, or a
    /// blocking completion of requests posted to or from them (or of a
    /// non-blocking collective they took part in). An eager send counts as
    /// a meeting although it need not have waited for its receiver: the
    /// records keep no per-message timing to tell (`docs/method.md`).
    fn met(&self, f: usize, rank: u32, others: &[u32]) -> bool {
        let Some(func) = catalogue::get(&self.built[f].key.mpi) else {
            return false;
        };
        match func.class {
            EventClass::CollectiveNxN
            | EventClass::Barrier
            | EventClass::CollectiveOneToN
            | EventClass::CollectiveNToOne
            | EventClass::CollectiveScan => others.iter().any(|&w| self.row(f, w).is_some()),
            EventClass::Send | EventClass::Recv | EventClass::SendRecv | EventClass::Probe => {
                others.iter().any(|&w| self.has_pair(f, rank, w))
            }
            EventClass::Completion if func.completion.is_some_and(|c| c.blocks) => {
                self.completed[f].iter().any(|&p| {
                    let collective = func_is_collective(&self.built[p].key.mpi);
                    others.iter().any(|&w| {
                        self.has_pair(p, rank, w) || (collective && self.row(p, w).is_some())
                    })
                })
            }
            _ => false,
        }
    }

    fn time_of(&self, site: usize, rank: u32) -> f64 {
        self.row(site, rank).map_or(0.0, |r| r.time)
    }

    /// Whether a stretch walked back to a call at site `f` begins there. A
    /// call where the rank waited for others, none of them among the ones
    /// it is compared with, is where its lateness came from a third rank,
    /// even when the call also completed messages with them (a completion
    /// of requests to several peers).
    fn boundary(&self, f: usize, walk: &Walk) -> Option<Boundary> {
        let collective = func_is_collective(&self.built[f].key.mpi);
        let waited = self.blocks(f) && self.overhead_of(f, walk.rank) >= walk.wait_floor;
        if waited && !collective {
            let peers = self.waited_peers(f, walk.rank);
            if !peers.is_empty() && !peers.iter().any(|p| walk.others.contains(p)) {
                return Some(Boundary::Wait(f));
            }
        }
        if self.met(f, walk.rank, walk.others) {
            Some(if collective {
                Boundary::Collective(f)
            } else {
                Boundary::Message
            })
        } else if waited {
            Some(Boundary::Wait(f))
        } else {
            None
        }
    }

    /// Whether a call at site `f` can wait for another rank.
    fn blocks(&self, f: usize) -> bool {
        catalogue::get(&self.built[f].key.mpi).is_some_and(|func| match func.class {
            EventClass::Post | EventClass::Poll => false,
            EventClass::Completion => func.completion.is_some_and(|c| c.blocks),
            _ => true,
        })
    }
}

fn func_is_collective(mpi: &str) -> bool {
    catalogue::get(mpi).is_some_and(|f| f.scope == catalogue::Scope::Collective)
}

/// Where a stretch began: the call before its first region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Boundary {
    /// A call the report has no site for (`MPI_Init`).
    Start,
    /// A collective the other side took part in (its site).
    Collective(usize),
    /// A message between the two sides that completed.
    Message,
    /// A wait for a rank outside the other side: the chain of waits goes
    /// on from there.
    Wait(usize),
}

/// One piece of a stretch: a region, or a call passed through (its time
/// delays the rank as the code does).
pub(super) struct Part<'a> {
    /// `None` for a call passed through.
    pub(super) region: Option<&'a RegionId>,
    pub(super) time: f64,
    pub(super) count: u64,
    /// Set on the regions that a boundary opened.
    pub(super) boundary: Option<Boundary>,
}

/// One rank's stretch up to a call.
pub(super) struct Stretch<'a> {
    pub(super) parts: Vec<Part<'a>>,
    /// Passes of the regions that ended at the call: the stretch's passes
    /// when no boundary opened any (a loop of posts and polls).
    last_entries: u64,
}

/// A stretch's totals, over the parts a filter keeps.
pub(super) struct Totals {
    /// The rank's time in the parts, summed over the run.
    pub(super) time: f64,
    /// How many times the rank entered the stretch: the passes of its
    /// regions that a boundary opened. Times per pass compare stretches run
    /// a different number of times (a call after a loop with one in it).
    pub(super) entries: u64,
}

impl Totals {
    pub(super) fn per_pass(&self) -> Option<f64> {
        (self.entries > 0).then(|| self.time / self.entries as f64)
    }
}

impl Stretch<'_> {
    /// The boundaries it began at, each once.
    pub(super) fn boundaries(&self) -> Vec<Boundary> {
        let mut v: Vec<Boundary> = Vec::new();
        for b in self.parts.iter().filter_map(|p| p.boundary) {
            if !v.contains(&b) {
                v.push(b);
            }
        }
        v
    }

    /// The calls at which it began by waiting for a third rank.
    pub(super) fn waits(&self) -> Vec<usize> {
        self.boundaries()
            .into_iter()
            .filter_map(|b| match b {
                Boundary::Wait(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    /// Totals over the regions opened at a boundary that `keep` accepts,
    /// and every region and call inside.
    pub(super) fn totals(&self, keep: impl Fn(Boundary) -> bool) -> Totals {
        let mut t = Totals {
            time: 0.0,
            entries: 0,
        };
        for p in &self.parts {
            match p.boundary {
                Some(b) if !keep(b) => continue,
                Some(_) => t.entries += p.count,
                None => {}
            }
            t.time += p.time;
        }
        if t.entries == 0 && !self.parts.iter().any(|p| p.boundary.is_some()) {
            t.entries = self.last_entries;
        }
        t
    }
}

/// How to walk: with whom the rank is compared, and from what own overhead
/// at a call that call counts as a wait for a third rank (infinite: never,
/// for the waiting side).
pub(super) struct Walk<'w> {
    pub(super) rank: u32,
    pub(super) others: &'w [u32],
    pub(super) wait_floor: f64,
}

/// Regions visited at most, per stretch: a bound for programs whose regions
/// form large graphs without meeting points (then the stretch is cut, and
/// the comparison covers what was walked).
const MAX_REGIONS: usize = 256;

pub(super) fn stretch<'a>(
    sites: &Sites,
    index: &RegionIndex<'a>,
    to: &SiteKey,
    walk: &Walk,
) -> Stretch<'a> {
    let mut s = Stretch {
        parts: Vec::new(),
        last_entries: 0,
    };
    let mut seen: Vec<&SiteKey> = vec![to];
    let mut frontier: Vec<&SiteKey> = vec![to];
    while let Some(at) = frontier.pop() {
        for &id in index.ending_at(at) {
            let Some(row) = index.row(id, walk.rank) else {
                continue;
            };
            if s.parts.len() >= MAX_REGIONS {
                break;
            }
            if at == to {
                s.last_entries += row.count;
            }
            let boundary = match sites.by_key.get(&id.from) {
                None => Some(Boundary::Start),
                Some(&f) => sites.boundary(f, walk),
            };
            s.parts.push(Part {
                region: Some(id),
                time: row.time,
                count: row.count,
                boundary,
            });
            if boundary.is_none() && !seen.contains(&&id.from) {
                seen.push(&id.from);
                frontier.push(&id.from);
                // The call passed through: its time delays the rank too.
                if let Some(&f) = sites.by_key.get(&id.from) {
                    s.parts.push(Part {
                        region: None,
                        time: sites.time_of(f, walk.rank),
                        count: 0,
                        boundary: None,
                    });
                }
            }
        }
    }
    s
}
