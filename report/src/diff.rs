//! `mpiover diff A B` (or `A1 A2 ... -- B1 B2 ...`): the same sites in two
//! sets of runs, matched by (file:line or module+offset, enclosing function,
//! MPI function), and which of them changed beyond run-to-run variation.
//!
//! A site is `better` or `worse` only when both hold (docs/method.md,
//! "Comparing runs"):
//!
//! 1. **The change is significant**: the rank-sum test on the site's
//!    per-call durations, pooled over each side's runs; the p-values of all
//!    sites on both sides are adjusted together for a false discovery rate
//!    of `alpha` (Benjamini & Hochberg).
//! 2. **The change is larger than the runs' own variation**: with two or
//!    more runs a side, every run of one side is better than every run of
//!    the other (the ranges of the per-run figures do not overlap). The
//!    calls of one run cannot show run-to-run variation, so with one run a
//!    side this guard is missing (the output says so).
//! 3. **The change is large enough to matter**: at least
//!    [`MIN_CHANGE_OF_SITE`] of the site's larger figure and
//!    [`MIN_CHANGE_OF_MPI`] of the larger set's MPI time (per run): with
//!    thousands of calls the test finds any shift significant, and this
//!    floor keeps the shifts of small sites `same`.
//!
//! Figures of a side are means over its runs; a site missing from a run
//! counts 0 there.

use std::collections::BTreeMap;

use mpiover_aggregate::{dist_index_of_edge, DIST_BINS};
use serde::{Deserialize, Serialize};

use crate::model::{DiffStatus, RankedBy, Report, SiteReport, WaitState};

pub const DIFF_SCHEMA: &str = "mpiover-diff/1";

/// Smallest change that counts, as a share of the site's larger figure.
pub const MIN_CHANGE_OF_SITE: f64 = 0.10;
/// Smallest change that counts, as a share of the MPI time of a run.
pub const MIN_CHANGE_OF_MPI: f64 = 0.01;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffReport {
    pub schema: String,
    pub a: DiffRun,
    pub b: DiffRun,
    /// `overhead` when every run has overhead, else `time`.
    pub compared_by: RankedBy,
    /// How `better` and `worse` were decided.
    pub method: DiffMethod,
    pub sites: Vec<DiffSite>,
}

/// One side: its runs, and their figures (means over the runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffRun {
    /// The first run's directory.
    pub dir: String,
    /// Every run's directory.
    pub dirs: Vec<String>,
    pub ranks: u32,
    pub command: Vec<String>,
    pub app_time_s: f64,
    pub mpi_time_s: f64,
    pub overhead_s: Option<f64>,
}

/// The test behind the verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DiffTest {
    /// The rank-sum test on per-call durations, and with two or more runs a
    /// side the separation of the per-run figures.
    #[serde(rename = "rank_sum_call_durations")]
    RankSumCallDurations,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffMethod {
    pub test: DiffTest,
    /// False discovery rate over the sites.
    pub alpha: f64,
    pub min_change_of_site: f64,
    pub min_change_of_mpi: f64,
    pub runs_a: usize,
    pub runs_b: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Side {
    pub calls: u64,
    pub time_s: f64,
    pub overhead_s: Option<f64>,
    pub wait_state: Option<WaitState>,
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffSite {
    pub mpi_function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Without parameters, as the report's `function`.
    pub function: Option<String>,
    /// As the report's `function_signature`.
    #[serde(default)]
    pub function_signature: Option<String>,
    pub location: String,
    /// `worse`, `better`, `same`, `new` (only in B) or `gone` (only in A).
    pub status: DiffStatus,
    pub a: Option<Side>,
    pub b: Option<Side>,
    /// B - A.
    pub delta_time_s: f64,
    pub delta_overhead_s: Option<f64>,
    pub delta_calls: i64,
    /// The test's p-value and its false-discovery-adjusted q-value (sites on
    /// both sides).
    pub p_value: Option<f64>,
    pub q_value: Option<f64>,
    /// The smallest change of the compared figure that counts at this site.
    pub min_change_s: f64,
    /// With two or more runs a side: whether the ranges of the per-run
    /// figures overlap (then the change is within run-to-run variation).
    pub runs_overlap: Option<bool>,
}

type Key = (String, Option<String>, String);

/// The whole signature: two overloads at one line are two sites.
fn key(s: &SiteReport) -> Key {
    (
        s.location.clone(),
        s.function_signature.clone(),
        s.mpi_function.clone(),
    )
}

/// A site in the runs of one side: its report in each run (if there), and
/// its call durations binned over all of them.
struct SideSite<'a> {
    per_run: Vec<Option<&'a SiteReport>>,
    dist: Vec<u64>,
}

impl<'a> SideSite<'a> {
    fn new(runs: usize) -> Self {
        SideSite {
            per_run: vec![None; runs],
            dist: Vec::new(),
        }
    }

    fn present(&self) -> Option<&'a SiteReport> {
        self.per_run.iter().flatten().next().copied()
    }

    fn values(&self, metric: impl Fn(&SiteReport) -> f64) -> Vec<f64> {
        self.per_run
            .iter()
            .map(|s| s.map_or(0.0, &metric))
            .collect()
    }

    fn side(&self) -> Option<Side> {
        let first = self.present()?;
        let n = self.per_run.len() as f64;
        let mean = |f: &dyn Fn(&SiteReport) -> f64| self.values(f).iter().sum::<f64>() / n;
        Some(Side {
            calls: mean(&|s| s.calls as f64).round() as u64,
            time_s: mean(&|s| s.time_s),
            overhead_s: first
                .overhead_s
                .map(|_| mean(&|s| s.overhead_s.unwrap_or(0.0))),
            wait_state: first.wait_state,
            significant: self.per_run.iter().flatten().any(|s| s.significant),
        })
    }
}

/// Every site of one side's runs, by key.
fn collect<'a>(runs: &'a [Report], into: &mut BTreeMap<Key, [Option<SideSite<'a>>; 2]>, at: usize) {
    for (r, rep) in runs.iter().enumerate() {
        for (i, s) in rep.sites.iter().enumerate() {
            let slot = &mut into.entry(key(s)).or_default()[at];
            let site = slot.get_or_insert_with(|| SideSite::new(runs.len()));
            site.per_run[r] = Some(s);
            if let Some(Some(d)) = rep.detail.dists.get(i) {
                if site.dist.is_empty() {
                    site.dist = vec![0; DIST_BINS];
                }
                let lo = d.edges.first().map_or(0, |&e| dist_index_of_edge(e));
                for (k, &c) in d.counts.iter().enumerate() {
                    if let Some(b) = site.dist.get_mut(lo + k) {
                        *b += c;
                    }
                }
            }
        }
    }
}

fn run(rs: &[Report]) -> DiffRun {
    let n = rs.len() as f64;
    let mean = |f: &dyn Fn(&Report) -> f64| rs.iter().map(f).sum::<f64>() / n;
    let first = &rs[0];
    DiffRun {
        dir: first.run.dir.clone(),
        dirs: rs.iter().map(|r| r.run.dir.clone()).collect(),
        ranks: first.run.ranks,
        command: first.run.command.clone(),
        app_time_s: mean(&|r| r.summary.app_time_s),
        mpi_time_s: mean(&|r| r.summary.mpi_time_s),
        overhead_s: rs
            .iter()
            .all(|r| r.summary.overhead_s.is_some())
            .then(|| mean(&|r| r.summary.overhead_s.unwrap_or(0.0))),
    }
}

/// Compares the runs `a` (before) with the runs `b` (after); each side has
/// at least one run, analysed with HTML details for every site (their call
/// distributions).
pub fn diff(a: &[Report], b: &[Report], alpha: f64) -> DiffReport {
    assert!(!a.is_empty() && !b.is_empty(), "a side without runs");
    let by_ovh = a.iter().chain(b).all(|r| r.summary.overhead_s.is_some());
    let metric = |s: &SiteReport| {
        if by_ovh {
            s.overhead_s.unwrap_or(0.0)
        } else {
            s.time_s
        }
    };
    let test = DiffTest::RankSumCallDurations;
    let (ra, rb) = (run(a), run(b));
    let mpi_floor = MIN_CHANGE_OF_MPI * ra.mpi_time_s.max(rb.mpi_time_s);

    let mut m: BTreeMap<Key, [Option<SideSite>; 2]> = BTreeMap::new();
    collect(a, &mut m, 0);
    collect(b, &mut m, 1);

    let mut sites: Vec<DiffSite> = Vec::with_capacity(m.len());
    let mut changes: Vec<f64> = Vec::with_capacity(m.len());
    for [sa, sb] in m.into_values() {
        let any = sa
            .as_ref()
            .and_then(SideSite::present)
            .or_else(|| sb.as_ref().and_then(SideSite::present))
            .expect("a site is in some run");
        let (va, vb) = (
            sa.as_ref().map(|s| s.values(metric)),
            sb.as_ref().map(|s| s.values(metric)),
        );
        let mean = |v: &Option<Vec<f64>>| {
            v.as_ref()
                .map_or(0.0, |v| v.iter().sum::<f64>() / v.len() as f64)
        };
        let (ma, mb) = (mean(&va), mean(&vb));
        let p_value = match (&sa, &sb) {
            (Some(x), Some(y)) => mpiover_stats::mann_whitney_binned(&x.dist, &y.dist),
            _ => None,
        };
        let range = |v: &Option<Vec<f64>>| {
            v.as_ref().map(|v| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                (lo, v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            })
        };
        let runs_overlap = match (range(&va), range(&vb)) {
            (Some((alo, ahi)), Some((blo, bhi))) if a.len() >= 2 && b.len() >= 2 => {
                Some(alo <= bhi && blo <= ahi)
            }
            _ => None,
        };
        let (side_a, side_b) = (
            sa.as_ref().and_then(SideSite::side),
            sb.as_ref().and_then(SideSite::side),
        );
        let time = |s: &Option<Side>| s.as_ref().map_or(0.0, |s| s.time_s);
        let ovh = |s: &Option<Side>| s.as_ref().and_then(|s| s.overhead_s).unwrap_or(0.0);
        let calls = |s: &Option<Side>| s.as_ref().map_or(0, |s| s.calls as i64);
        sites.push(DiffSite {
            mpi_function: any.mpi_function.clone(),
            file: any.file.clone(),
            line: any.line,
            function: any.function.clone(),
            function_signature: any.function_signature.clone(),
            location: any.location.clone(),
            status: match (&side_a, &side_b) {
                (Some(_), None) => DiffStatus::Gone,
                (None, Some(_)) => DiffStatus::New,
                _ => DiffStatus::Same,
            },
            delta_time_s: time(&side_b) - time(&side_a),
            delta_overhead_s: by_ovh.then(|| ovh(&side_b) - ovh(&side_a)),
            delta_calls: calls(&side_b) - calls(&side_a),
            a: side_a,
            b: side_b,
            p_value,
            q_value: None,
            runs_overlap,
            min_change_s: (MIN_CHANGE_OF_SITE * ma.abs().max(mb.abs()))
                .max(mpi_floor)
                .max(1e-6),
        });
        changes.push(mb - ma);
    }
    judge(&mut sites, &changes, alpha);
    let d = |s: &DiffSite| {
        if by_ovh {
            s.delta_overhead_s.unwrap_or(0.0)
        } else {
            s.delta_time_s
        }
    };
    sites.sort_by(|x, y| {
        d(y).abs()
            .total_cmp(&d(x).abs())
            .then_with(|| x.location.cmp(&y.location))
            .then_with(|| x.mpi_function.cmp(&y.mpi_function))
    });
    DiffReport {
        schema: DIFF_SCHEMA.into(),
        a: ra,
        b: rb,
        compared_by: if by_ovh {
            RankedBy::Overhead
        } else {
            RankedBy::Time
        },
        method: DiffMethod {
            test,
            alpha,
            min_change_of_site: MIN_CHANGE_OF_SITE,
            min_change_of_mpi: MIN_CHANGE_OF_MPI,
            runs_a: a.len(),
            runs_b: b.len(),
        },
        sites,
    }
}

/// The q-values of the sites that have a p-value, and the verdict of every
/// site on both sides: `better`/`worse` when q <= alpha, the runs of the two
/// sides do not overlap (when there are several), and the change of the
/// compared figure (`changes`, B - A) reaches the site's minimum.
fn judge(sites: &mut [DiffSite], changes: &[f64], alpha: f64) {
    let tested: Vec<usize> = (0..sites.len())
        .filter(|&i| sites[i].p_value.is_some())
        .collect();
    let p: Vec<f64> = tested.iter().filter_map(|&i| sites[i].p_value).collect();
    let q = mpiover_stats::benjamini_hochberg_adjusted(&p);
    for (&i, &q) in tested.iter().zip(&q) {
        sites[i].q_value = Some(q);
        let change = changes[i];
        let separate = sites[i].runs_overlap != Some(true);
        if q <= alpha && separate && change.abs() >= sites[i].min_change_s {
            sites[i].status = if change > 0.0 {
                DiffStatus::Worse
            } else {
                DiffStatus::Better
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(p: Option<f64>, min: f64) -> DiffSite {
        DiffSite {
            mpi_function: "MPI_Recv".into(),
            file: None,
            line: None,
            function: None,
            function_signature: None,
            location: "x".into(),
            status: DiffStatus::Same,
            a: None,
            b: None,
            delta_time_s: 0.0,
            delta_overhead_s: None,
            delta_calls: 0,
            p_value: p,
            q_value: None,
            min_change_s: min,
            runs_overlap: None,
        }
    }

    #[test]
    fn a_change_needs_both_significance_and_size() {
        let mut s = vec![
            site(Some(1e-9), 0.1), // significant and large: worse
            site(Some(1e-9), 0.1), // significant, too small: same
            site(Some(0.5), 0.1),  // large, not significant: same
            site(Some(1e-9), 0.1), // significant and large the other way
            site(None, 0.1),       // no test (one side only): untouched
        ];
        judge(&mut s, &[0.2, 0.05, 0.3, -0.2, 0.9], 0.05);
        let st: Vec<DiffStatus> = s.iter().map(|s| s.status).collect();
        assert_eq!(
            st,
            [
                DiffStatus::Worse,
                DiffStatus::Same,
                DiffStatus::Same,
                DiffStatus::Better,
                DiffStatus::Same
            ]
        );
        assert!(s[2].q_value.unwrap() >= 0.5);
        assert_eq!(s[4].q_value, None);
    }

    #[test]
    fn a_change_within_the_runs_own_spread_is_the_same() {
        let mut s = vec![site(Some(1e-9), 0.1), site(Some(1e-9), 0.1)];
        s[0].runs_overlap = Some(true);
        s[1].runs_overlap = Some(false);
        judge(&mut s, &[0.5, 0.5], 0.05);
        assert_eq!(s[0].status, DiffStatus::Same);
        assert_eq!(s[1].status, DiffStatus::Worse);
    }

    #[test]
    fn many_marginal_p_values_do_not_survive_the_false_discovery_control() {
        // 20 sites at p = 0.04: one of them alone would pass alpha = 0.05,
        // but not when all but one are p = 0.9.
        let mut s: Vec<DiffSite> = (0..20).map(|_| site(Some(0.9), 0.0)).collect();
        s[0].p_value = Some(0.04);
        judge(&mut s, &[1.0; 20], 0.05);
        assert!(s.iter().all(|s| s.status == DiffStatus::Same));
    }
}
