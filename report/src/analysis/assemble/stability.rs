//! Verdicts that do not hang on one calibration (`docs/method.md`,
//! "Verdicts that do not hang on one calibration").
//!
//! Two calibrations of one machine put an entry's tmax a median factor of
//! 1.3-1.5 apart, and a run may sit at another latency level than its
//! calibration. A site significant against tmax is tested again against
//! every tmax scaled up: first by the run's level shift, when the level
//! check found one (the site is then `within level shift` if that clears
//! it), then by the shift times the spread between calibrations (`marginal`
//! if that clears it). What stays significant does not depend on which
//! calibration the run was judged against. The scaled figures come from the
//! run's keys (every site's histograms merged over a sample of at most 64
//! ranks, `level::sampled`), so the records are read once: a site's calls
//! over the scaled tmax are its calls over tmax times the share of them the
//! sample keeps above the scaled one (exact when the run has at most 64
//! ranks), and the same for its overhead.

use mpiover_aggregate::tmax_eval::evaluate;
use mpiover_aggregate::{Fx, HashMap, KeyAcc, KeyId, SiteKey};

use crate::analysis::site_row::Built;
use crate::analysis::Options;
use crate::model::{Level, Margin, Significance, SiteReport};
use crate::signif;
use crate::tmax::TmaxSource;

/// A site's calls against tmax times one factor.
#[derive(Debug, Clone, Copy, Default)]
struct Scaled {
    overhead: f64,
    calls_over: f64,
}

/// One stage of the re-test: every tmax times `factor`; a site it clears
/// gets `verdict`.
struct Stage {
    factor: f64,
    verdict: Significance,
}

/// The stages for a run whose level is `level`, at the spread of `opts`.
fn stages(level: Option<&Level>, opts: &Options) -> Vec<Stage> {
    let shift = level.filter(|l| l.shifted).map_or(1.0, |l| l.factor);
    let mut v = Vec::new();
    if shift > 1.0 {
        v.push(Stage {
            factor: shift,
            verdict: Significance::LevelShift,
        });
    }
    if opts.tmax_spread > 1.0 {
        v.push(Stage {
            factor: shift * opts.tmax_spread,
            verdict: Significance::Marginal,
        });
    }
    v
}

/// Every site's calls against its tmax times each of `factors`, from the
/// run's keys; tmax as the fold took it (the profile given, else the one
/// the records carry).
fn scaled<'a>(
    keys: impl Iterator<Item = (&'a KeyId, &'a KeyAcc)>,
    tmax: Option<&dyn TmaxSource>,
    factors: &[f64],
) -> HashMap<SiteKey, Vec<Scaled>> {
    // Fixed-point sums: the keys come in the map's order, the figures must
    // not depend on it.
    let mut sums: HashMap<SiteKey, Vec<(Fx, Fx)>> = HashMap::default();
    for (id, k) in keys {
        let Some(t) = evaluate(&k.entry, k.unit_s, tmax).tmax else {
            continue;
        };
        let row = sums
            .entry(id.0.clone())
            .or_insert_with(|| vec![Default::default(); factors.len()]);
        for (slot, f) in row.iter_mut().zip(factors) {
            let ex = k.entry.hist.excess(k.unit_s, t.s * f);
            slot.0.add(ex.overhead_s);
            slot.1.add(ex.calls_over);
        }
    }
    sums.into_iter()
        .map(|(site, row)| {
            let row = row
                .into_iter()
                .map(|(o, c)| Scaled {
                    overhead: o.get(),
                    calls_over: c.get(),
                })
                .collect();
            (site, row)
        })
        .collect()
}

/// A site's figures against the scaled tmax, from its own against tmax and
/// the sample's against both; none when the sample holds none of its calls
/// over tmax (then nothing says the wider tmax clears it).
fn of_site(s: &SiteReport, sample: Scaled, scaled: Scaled) -> Option<Scaled> {
    let share = |all: f64, part: f64, whole: f64| {
        if whole > 0.0 {
            Some(all * (part / whole).min(1.0))
        } else if all > 0.0 {
            None
        } else {
            Some(0.0)
        }
    };
    Some(Scaled {
        overhead: share(s.overhead_s?, scaled.overhead, sample.overhead)?,
        calls_over: share(s.calls_over_tmax?, scaled.calls_over, sample.calls_over)?,
    })
}

/// Tests the significant sites again at every stage; the ones a stage
/// clears take its verdict. Returns how many were cleared.
pub(crate) fn retest<'a>(
    built: &mut [Built],
    keys: impl Iterator<Item = (&'a KeyId, &'a KeyAcc)>,
    tmax: Option<&dyn TmaxSource>,
    q_max: Option<f64>,
    level: Option<&Level>,
    opts: &Options,
    mpi_time: f64,
) -> usize {
    let Some(q) = q_max else { return 0 };
    let stages = stages(level, opts);
    if stages.is_empty() || !built.iter().any(|b| b.report.significant) {
        return 0;
    }
    // Index 0: the sample against tmax itself, what the scaled figures are
    // a share of.
    let factors: Vec<f64> = std::iter::once(1.0)
        .chain(stages.iter().map(|s| s.factor))
        .collect();
    let figures = scaled(keys, tmax, &factors);
    let mut cleared = 0;
    for (i, stage) in stages.iter().enumerate() {
        // The same test as against tmax: one-sided per site, BH across the
        // sites tested.
        let mut tested: Vec<(usize, f64, Scaled, f64)> = Vec::new();
        for (j, b) in built.iter().enumerate() {
            let s = &b.report;
            if s.p_value.is_none() {
                continue;
            }
            let Some(f) = figures.get(&b.key).and_then(|v| of_site(s, v[0], v[i + 1])) else {
                continue;
            };
            let null = signif::Null::new(q, b.acc.basis);
            let n = s.calls_with_tmax;
            let k = (f.calls_over.round() as u64).min(n);
            tested.push((j, null.p_value(k, n), f, n as f64 * null.expected_share()));
        }
        let qv = signif::bh_adjust(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
        for (&(j, _, f, expected), qv) in tested.iter().zip(qv) {
            let s = &mut built[j].report;
            if !s.significant {
                continue;
            }
            s.margin = Some(Margin {
                factor: stage.factor,
                overhead_s: f.overhead,
                calls_over_tmax: f.calls_over,
                q_value: qv,
            });
            let material = f.overhead >= opts.min_share * mpi_time;
            if qv <= opts.alpha && f.calls_over > expected && material {
                continue;
            }
            s.significant = false;
            s.significance = stage.verdict;
            // Whom the site waited for is only named for significant waits.
            s.late_ranks.clear();
            s.late_ranks_s.clear();
            s.late_basis = None;
            cleared += 1;
        }
    }
    cleared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(factor: f64, shifted: bool) -> Level {
        Level {
            factor,
            shifted,
            fast_quantile: 0.1,
            keys: Vec::new(),
        }
    }

    #[test]
    fn stages_follow_the_level_and_the_spread() {
        let opts = Options::default();
        let s = stages(None, &opts);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].factor, opts.tmax_spread);
        assert_eq!(s[0].verdict, Significance::Marginal);
        let s = stages(Some(&level(2.0, true)), &opts);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].factor, s[0].verdict), (2.0, Significance::LevelShift));
        assert_eq!(s[1].factor, 2.0 * opts.tmax_spread);
        // A level not shifted changes nothing; a spread of 1 is off.
        assert_eq!(stages(Some(&level(1.05, false)), &opts).len(), 1);
        let off = Options {
            tmax_spread: 1.0,
            ..Options::default()
        };
        assert!(stages(None, &off).is_empty());
    }
}
