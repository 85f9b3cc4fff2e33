//! Root causes: why the ranks a site waited for were late, from the regions
//! (the application's code between two MPI calls) alone, without traces
//! (`docs/method.md`, "Root causes").
//!
//! For a site X with a wait state, waiting ranks W and a late rank l, the
//! call of l that the waiting ranks waited for is its *matching call*: X
//! itself for a collective, l's send to a waiting rank for a late sender,
//! its receive from one for a late receiver. l's lateness is the code it
//! ran since it last met W, up to that call: the *stretch*, walked back
//! through the regions ([`stretch`]). Its time per pass is compared with
//! the waiting ranks' own stretch up to X since they last met l; the
//! difference, over the passes both made, explains the wait, and the
//! regions of the stretch that hold it are the causes. Where l's stretch
//! began at a wait of its own for a rank outside W, the same is asked of
//! that wait, and the ranks it passes through are kept in `via`: a chain
//! names its origin. The causes of one question never claim more than it
//! asked, so a site's causes add up to at most its overhead.

use mpiover_aggregate::{HashMap, PeerAcc, RegionId, SiteKey};

use super::site_row::Built;
use crate::model::{RootCause, CAUSE_OF_OVERHEAD, CAUSE_OF_REFERENCE};

mod index;
mod stretch;

use index::{median, region_ref};
pub(crate) use index::{region_reports, sort_rows, RegionIndex};
use stretch::{stretch, Boundary, Sites, Stretch, Walk};

/// How far lateness is followed back through ranks that waited themselves.
const MAX_DEPTH: usize = 4;
/// Root causes kept per site.
const MAX_CAUSES: usize = 5;
/// Waiting ranks whose stretches make the reference: the median of a
/// sample this large, evenly spaced over the ranks, is the median of all
/// within a few percent, and a site of a 100,000-rank job costs no more.
const MAX_REFERENCE_RANKS: usize = 64;

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

/// A cause found, with the seconds of the asked site's overhead it explains.
struct Found {
    cause: RootCause,
    explained: f64,
}

/// What a late rank's stretch took beyond the waiting ranks'.
struct Excess {
    /// The whole stretch was compared (no region began at a meeting the
    /// waiting ranks' stretches began at).
    whole: bool,
    /// The stretch's passes.
    entries: u64,
    /// Its excess per pass, seconds.
    per_pass: f64,
    /// The seconds of the asked overhead it explains.
    explained: f64,
}

/// The waiting side of a question: each sampled waiting rank's stretch up
/// to X since it last met the late rank, per pass.
struct Reference {
    /// (rank, the rank's passes, its time per pass)
    ranks: Vec<(u32, u64, f64)>,
    per_pass: f64,
    entries: f64,
    /// Where their stretches began: the late rank's stretch counts only
    /// the regions opened at the same meetings, so that a send shared by
    /// two phases does not bring the other phase's code in.
    boundaries: Vec<Boundary>,
}

impl Reference {
    /// Whether the late rank's stretch may begin at `b`: at a meeting the
    /// waiting ranks' stretches began at too (the same collective; a
    /// message), or at its own wait for a third rank.
    fn same_phase(&self, b: Boundary) -> bool {
        matches!(b, Boundary::Wait(_)) || self.boundaries.contains(&b)
    }
}

struct Explainer<'e> {
    sites: &'e Sites<'e>,
    index: &'e RegionIndex<'e>,
    asked: Vec<(usize, u32)>,
}

fn sample(ranks: &[u32]) -> Vec<u32> {
    if ranks.len() <= MAX_REFERENCE_RANKS {
        return ranks.to_vec();
    }
    (0..MAX_REFERENCE_RANKS)
        .map(|i| ranks[i * ranks.len() / MAX_REFERENCE_RANKS])
        .collect()
}

impl Explainer<'_> {
    fn reference(&self, q: &Question) -> Reference {
        let to = &self.sites.built[q.x].key;
        let late = [q.late];
        let mut boundaries: Vec<Boundary> = Vec::new();
        let ranks: Vec<(u32, u64, f64)> = sample(q.waiting)
            .into_iter()
            .filter_map(|w| {
                let walk = Walk {
                    rank: w,
                    others: &late,
                    wait_floor: f64::INFINITY,
                };
                let s = stretch(self.sites, self.index, to, &walk);
                for b in s.boundaries() {
                    if !boundaries.contains(&b) {
                        boundaries.push(b);
                    }
                }
                let t = s.totals(|_| true);
                Some((w, t.entries, t.per_pass()?))
            })
            .collect();
        Reference {
            per_pass: median(ranks.iter().map(|r| r.2).collect()),
            entries: median(ranks.iter().map(|r| r.1 as f64).collect()),
            ranks,
            boundaries,
        }
    }

    /// The regions of the late rank's stretch that hold its excess over
    /// the waiting ranks, each with its part of the excess and of what the
    /// stretch explains.
    fn regions_of(
        &self,
        q: &Question,
        s: &Stretch,
        x: &Excess,
        reference: &Reference,
    ) -> Vec<Found> {
        let entries = x.entries;
        // Per region: how much longer each of the late rank's passes
        // through it took than the waiting ranks' passes through the same
        // code (their median), over the late rank's passes, per pass of the
        // stretch. A waiting rank that never ran the region is compared by
        // what it did instead: its own stretch per pass. Where the late
        // rank spent no longer per pass than they did, its time there is
        // the order of the program (a pipeline's first stage runs before
        // the others can), not extra work: nothing is named there.
        let per_region: Vec<(&RegionId, f64, f64)> = s
            .parts
            .iter()
            .filter(|p| {
                p.boundary
                    .is_none_or(|b| x.whole || reference.same_phase(b))
            })
            .filter_map(|p| {
                let id = p.region?;
                let mine = self.index.row(id, q.late)?;
                let calls = mine.count.max(1) as f64;
                let theirs = median(
                    reference
                        .ranks
                        .iter()
                        .map(|&(w, _, stretch_per_pass)| match self.index.row(id, w) {
                            Some(r) => r.time / r.count.max(1) as f64,
                            None => stretch_per_pass,
                        })
                        .collect(),
                );
                let more = (mine.time / calls - theirs) * calls / entries as f64;
                Some((id, more, theirs * calls / entries as f64))
            })
            .collect();
        let positive: f64 = per_region.iter().map(|r| r.1.max(0.0)).sum();
        if positive <= 0.0 {
            return Vec::new();
        }
        // A region holds at most its own excess. When the regions' own
        // excesses add up to less than the stretch's, the rest is the mix:
        // the late rank ran the same code as fast, in other proportions
        // (a pipeline's last stage finishing a block that the first has
        // long passed), which is the order of the program and stays
        // unexplained rather than landing on whichever region ran a little
        // slow.
        let held = positive.max(x.per_pass);
        per_region
            .into_iter()
            .filter(|&(_, more, theirs)| more > 0.0 && more >= CAUSE_OF_REFERENCE * theirs)
            .map(|(id, more, _)| Found {
                cause: RootCause {
                    rank: q.late,
                    region: region_ref(id),
                    excess_s: x.per_pass * entries as f64 * more / held,
                    share: 0.0,
                    via: q.via.clone(),
                },
                explained: x.explained * more / held,
            })
            .filter(|f| f.explained >= CAUSE_OF_OVERHEAD * q.cap)
            .collect()
    }

    fn explain(&mut self, q: Question) -> Vec<Found> {
        if self.asked.contains(&(q.x, q.late)) || q.cap <= 0.0 {
            return Vec::new();
        }
        self.asked.push((q.x, q.late));
        let reference = self.reference(&q);
        let mut found = Vec::new();
        let mut waits: Vec<usize> = Vec::new();
        for m in self.sites.matching(q.x, q.late, q.waiting) {
            let walk = Walk {
                rank: q.late,
                others: q.waiting,
                wait_floor: CAUSE_OF_OVERHEAD * q.cap,
            };
            let s = stretch(self.sites, self.index, &self.sites.built[m].key, &walk);
            for a in s.waits() {
                if !waits.contains(&a) {
                    waits.push(a);
                }
            }
            // Only the same phase as the waiting ranks' stretches; when no
            // region began at a meeting they began at (the ranks run other
            // code: MPMD, master and workers), the whole stretch.
            let mut t = s.totals(|b| reference.same_phase(b));
            let whole = t.entries == 0;
            if whole {
                t = s.totals(|_| true);
            }
            let Some(mine) = t.per_pass() else {
                continue;
            };
            let e = mine - reference.per_pass;
            if e <= 0.0 || e < CAUSE_OF_REFERENCE * reference.per_pass {
                continue;
            }
            // The passes both sides made: a call after a loop is not
            // charged the loop's passes through the same send. And an
            // excess of e per pass makes waits of about e: none when no
            // call of X took half that long (a send of an earlier phase to
            // the same rank does not explain the short waits of a later
            // exchange).
            let passes = if self.sites.longest_call(q.x) < e / 2.0 {
                0.0
            } else {
                (t.entries as f64).min(reference.entries.max(1.0))
            };
            let x = Excess {
                whole,
                entries: t.entries,
                per_pass: e,
                explained: (e * passes * q.waiting.len() as f64).min(q.cap),
            };
            found.extend(self.regions_of(&q, &s, &x, &reference));
        }
        if q.depth < MAX_DEPTH {
            found.extend(self.chains(&q, &waits));
        }
        // Shares add up: what one question's answers explain together is at
        // most what it asked.
        let total: f64 = found.iter().map(|f| f.explained).sum();
        if total > q.cap {
            for f in &mut found {
                f.explained *= q.cap / total;
            }
        }
        found
    }

    /// The late rank waited itself where its stretch began, for a rank
    /// outside the waiting ones: why was that rank late? Only what it waited
    /// there for others than them made it late to them, and a rank it
    /// waited for that is among them, or already in the chain, met them
    /// there: no lateness passes back through it.
    fn chains(&mut self, q: &Question, waits: &[usize]) -> Vec<Found> {
        let mut found = Vec::new();
        for &a in waits {
            let own = self.sites.waited_beyond(a, q.late, q.waiting);
            if own <= 0.0 || own < CAUSE_OF_OVERHEAD * q.cap {
                continue;
            }
            let mut via = q.via.clone();
            via.push(q.late);
            for l2 in self.sites.waited_for_at(a, q.late) {
                if via.contains(&l2) || q.waiting.contains(&l2) {
                    continue;
                }
                found.extend(self.explain(Question {
                    x: a,
                    late: l2,
                    waiting: &[q.late],
                    cap: own.min(q.cap),
                    via: via.clone(),
                    depth: q.depth + 1,
                }));
            }
        }
        found
    }
}

/// The causes of one site: every late rank asked with its part of the
/// overhead, duplicates merged, the largest share first; and the part of
/// the overhead they explain together, those left out by the cap on their
/// number included.
fn causes_of<'e>(
    sites: &'e Sites<'e>,
    index: &'e RegionIndex<'e>,
    x: usize,
) -> (Vec<RootCause>, f64) {
    let b = &sites.built[x];
    let site_overhead = b.report.overhead_s.unwrap_or(0.0);
    let mut ex = Explainer {
        sites,
        index,
        asked: Vec::new(),
    };
    let late = &b.report.late_ranks;
    // Every rank that waited here, late ones included: in a symmetric
    // exchange each rank waits for some and is late to others.
    let waited: Vec<u32> = b
        .acc
        .per_rank
        .iter()
        .filter(|r| r.overhead.unwrap_or(0.0) > 0.0)
        .map(|r| r.rank)
        .collect();
    // Two late ranks share the site's overhead by what each is charged
    // (`late_ranks_s`), so that their causes do not both claim all of it.
    let weights = &b.report.late_ranks_s;
    let total: f64 = weights.iter().sum();
    let mut found: Vec<Found> = Vec::new();
    for (i, &l) in late.iter().enumerate() {
        let mine: Vec<u32> = waited.iter().copied().filter(|&w| w != l).collect();
        // A late peer's own waiting ranks, when the site knows them.
        let theirs: Vec<u32> = mine
            .iter()
            .copied()
            .filter(|&w| sites.has_pair(x, w, l))
            .collect();
        let waiting = if theirs.is_empty() { &mine } else { &theirs };
        if waiting.is_empty() {
            continue;
        }
        let part = match weights.get(i) {
            Some(&w) if total > 0.0 && w > 0.0 => w / total,
            _ => 1.0 / late.len() as f64,
        };
        found.extend(ex.explain(Question {
            x,
            late: l,
            waiting,
            cap: site_overhead * part,
            via: Vec::new(),
            depth: 0,
        }));
    }
    let mut causes: Vec<RootCause> = Vec::new();
    for f in found {
        let share = if site_overhead > 0.0 {
            f.explained / site_overhead
        } else {
            0.0
        };
        // One region of one rank reached along two paths is one cause.
        match causes
            .iter_mut()
            .find(|c| c.rank == f.cause.rank && c.region == f.cause.region)
        {
            Some(c) => {
                c.share += share;
                c.excess_s = c.excess_s.max(f.cause.excess_s);
            }
            None => causes.push(RootCause { share, ..f.cause }),
        }
    }
    for c in &mut causes {
        c.share = c.share.min(1.0);
    }
    causes.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(b.excess_s.total_cmp(&a.excess_s))
            .then(a.rank.cmp(&b.rank))
    });
    let explained = causes.iter().map(|c| c.share).fold(0.0, |a, b| a + b);
    causes.truncate(MAX_CAUSES);
    (causes, explained.min(1.0))
}

/// Fills `root_causes` of every site with a wait state, and the part of
/// its overhead they explain.
pub(crate) fn root_causes(
    built: &mut [Built],
    index: &RegionIndex,
    wait: &HashMap<(u32, u32), PeerAcc>,
) {
    let mut found: Vec<(usize, (Vec<RootCause>, f64))> = Vec::new();
    {
        let by_key: HashMap<&SiteKey, usize> =
            built.iter().enumerate().map(|(i, b)| (&b.key, i)).collect();
        let sites = Sites::new(built, &by_key, wait);
        for (x, b) in built.iter().enumerate() {
            if b.report.wait_state.is_some() {
                found.push((x, causes_of(&sites, index, x)));
            }
        }
    }
    for (x, (causes, explained)) in found {
        built[x].report.root_causes_share = Some(explained);
        built[x].report.root_causes = Some(causes);
    }
}
