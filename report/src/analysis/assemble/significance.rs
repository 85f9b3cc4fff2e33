//! The significance test of every site (`docs/method.md`, "Significance").

use mpiover_common::profile::Basis;

use crate::analysis::site_row::Built;
use crate::analysis::Options;
use crate::model::{Significance, SiteReport};
use crate::signif;

/// Tests every site with a tmax: one-sided against the calibration's own
/// spread (`signif::Null`), Benjamini-Hochberg across sites. Returns the
/// fewest calls any tested site needs to be significant (the least certain
/// tmax decides), if a site was tested.
pub(crate) fn test_significance(
    built: &mut [Built],
    q_max: Option<f64>,
    opts: &Options,
    mpi_time: f64,
) -> Option<u64> {
    // Significance: one-sided test per site against the calibration's own
    // spread (`signif::Null`), BH across sites.
    let mut tested: Vec<(usize, f64, signif::Null)> = Vec::new();
    for (i, b) in built.iter_mut().enumerate() {
        let s = &mut b.report;
        if s.calls_with_tmax == 0 || s.mpi_function == "other" {
            s.significance = Significance::NoTmax;
            continue;
        }
        let Some(q) = q_max else {
            s.significance = Significance::NoQmax;
            continue;
        };
        let null = signif::Null::new(q, b.acc.basis);
        let n = s.calls_with_tmax;
        let k = (s.calls_over_tmax.unwrap_or(0.0).round() as u64).min(n);
        let p = null.p_value(k, n);
        s.p_value = Some(p);
        s.expected_exceed_fraction = Some(null.expected_share());
        tested.push((i, p, null));
    }
    let min_calls = tested.iter().map(|t| t.2.min_calls(opts.alpha)).max();
    let qv = signif::bh_adjust(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
    for (&(i, _, null), q) in tested.iter().zip(qv) {
        let weak = built[i].acc.basis.is_some_and(|b| b.is_weak());
        let s = &mut built[i].report;
        s.q_value = Some(q);
        let expected = s.calls_with_tmax as f64 * null.expected_share();
        let over = s.calls_over_tmax.unwrap_or(0.0);
        let material = s.overhead_s.unwrap_or(0.0) >= opts.min_share * mpi_time;
        if q <= opts.alpha && over > expected && material {
            s.significant = true;
            s.significance = Significance::Significant;
        } else if q <= opts.alpha && over > expected {
            s.significance = Significance::Negligible;
            s.late_ranks.clear();
            s.late_ranks_s.clear();
            s.late_basis = None;
        } else {
            // A weak tmax cannot clear a site: it errs either way.
            s.significance = if weak {
                Significance::WeakTmax
            } else if s.calls_with_tmax < null.min_calls(opts.alpha) {
                Significance::TooFewCalls
            } else {
                Significance::NotSignificant
            };
            // Whom a chance-level wait was on says nothing.
            s.late_ranks.clear();
            s.late_ranks_s.clear();
            s.late_basis = None;
        }
    }
    min_calls
}

/// Ranks the sites: by overhead when known, then time, then identity.
pub(crate) fn rank_sites(built: &mut [Built], overhead_known: bool) {
    built.sort_by(|a, b| {
        let (x, y) = (&a.report, &b.report);
        let ko = |s: &SiteReport| s.overhead_s.unwrap_or(-1.0);
        if overhead_known {
            ko(y).total_cmp(&ko(x))
        } else {
            std::cmp::Ordering::Equal
        }
        .then(y.time_s.total_cmp(&x.time_s))
        .then_with(|| a.key.cmp(&b.key))
    });
    for (i, b) in built.iter_mut().enumerate() {
        b.report.rank = i + 1;
        b.report.position = i + 1;
    }
}

/// The warning for the sites whose tmax came from weak calibration entries
/// (ranked order, at most five named), with the commands that re-measure
/// them: the calibrator started by `launch`, its profile merged into the
/// run's (`profile`, shell-quoted).
pub(crate) fn weak_tmax_warning(built: &[Built], launch: &str, profile: &str) -> Option<String> {
    let weak: Vec<(&SiteReport, Basis)> = built
        .iter()
        .filter_map(|b| {
            let basis = b.acc.basis.filter(|x| x.is_weak())?;
            (b.report.calls_with_tmax > 0).then_some((&b.report, basis))
        })
        .collect();
    weak.first()?;
    let named: Vec<String> = weak
        .iter()
        .take(5)
        .map(|(s, b)| {
            let why = if b.n < b.min_n {
                format!("n = {} of {}", b.n, b.min_n)
            } else {
                "clock skew".to_string()
            };
            format!("#{} {} {} ({why})", s.rank, s.location, s.mpi_function)
        })
        .collect();
    let more = weak.len().saturating_sub(named.len());
    let mut functions: Vec<&str> = weak.iter().map(|(s, _)| s.mpi_function.as_str()).collect();
    functions.sort_unstable();
    functions.dedup();
    // The sizes the weak sites send (each one's bytes per call): measured
    // at those sizes, the new entries are the ones their lookups find, and
    // the calibration measures a few entries instead of the whole grid.
    let mut sizes: Vec<u64> = weak
        .iter()
        .filter(|(s, _)| s.calls > 0 && s.bytes > 0)
        .map(|(s, _)| s.bytes / s.calls)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let sizes = if sizes.is_empty() || sizes.len() > 6 {
        String::new()
    } else {
        let list: Vec<String> = sizes.iter().map(u64::to_string).collect();
        format!(" --sizes {}", list.join(","))
    };
    let skewed = weak.iter().any(|(_, b)| b.skewed);
    let few = weak.iter().any(|(_, b)| b.n < b.min_n);
    let cause = match (few, skewed) {
        (true, true) => {
            "fewer samples than the stopping rule asks, or a clock synchronization \
                         residual larger than the calls"
        }
        (true, false) => "fewer samples than the stopping rule asks: a budget cut them short",
        _ => {
            "a clock synchronization residual larger than the calls: the calibration's \
              ranks did not start together"
        }
    };
    Some(format!(
        "{} site{} rel{} on weak calibration entries ({cause}), so a clean verdict is not \
         possible there: {}{}; re-measure on an idle machine with a larger budget per entry, \
         e.g. `{launch} {} --functions {}{sizes} --entry-budget 30 -o more.json` \
         and `{} profile merge {profile} more.json -o merged.json`",
        weak.len(),
        if weak.len() == 1 { "" } else { "s" },
        if weak.len() == 1 { "ies" } else { "y" },
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        mpiover_common::suggest::program("mpiover-calibrate"),
        functions.join(","),
        mpiover_common::suggest::program("mpiover"),
    ))
}
