//! The chi-square goodness-of-fit test (the overhead paper §7, eq. 8-9).
//!
//! chi2^ = sum_i (B_i - E_i)^2 / E_i over the classes i, B_i observed and E_i = N p_i expected.
//!
//! * **Merging.** The chi-square approximation needs every E_i >= 5 (`min_expected`). Classes
//!   are merged by walking up from class 0: consecutive classes are pooled until their expected
//!   count reaches 5, which merges the lower tail of a Poisson with a large lambda; the upper
//!   tail from the first class whose remaining expectation N P(K >= k) is below 5 on is one
//!   open-ended group [k, infinity), merged into the group below it when it is itself below 5.
//!   The last group is open-ended, so the E_i sum to N. Groups depend on the fitted model only,
//!   not on where the observations fell.
//! * **Degrees of freedom** nu = groups - 1 - fitted parameters. With nu < 1 the model cannot
//!   be tested (it is reported as untestable and not accepted).
//! * **Critical value** chi2_(nu; 1-alpha) exactly (see [`crate::special::chi2_critical`]),
//!   and the paper's Wilson-Hilferty approximation (eq. 9) alongside it for reference.
//!   The model is accepted when chi2^ <= critical value; the p-value is P(chi2_nu >= chi2^).
use serde::Serialize;

use crate::histogram::ErrorClasses;
use crate::model::Model;
use crate::special::{chi2_critical, chi2_critical_wilson_hilferty, chi2_sf};

/// Classes examined one by one while merging; beyond, everything is in the open-ended group.
/// (Reached only with a bin width far below the spread of the errors.)
const MAX_GROUPING_CLASSES: u64 = 1 << 20;

/// A group of merged classes, first..=last (`last` None: open-ended upper tail).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Group {
    /// First class of the group.
    pub first: u64,
    /// Last class of the group; None for the open-ended upper tail.
    pub last: Option<u64>,
    /// Observed count B_i.
    pub observed: u64,
    /// Expected count E_i = N P(first <= K <= last).
    pub expected: f64,
}

/// Group boundaries [first, end) for `model` and N = `n` observations (see the module docs).
pub fn group_bounds(model: &Model, n: u64, min_expected: f64) -> Vec<(u64, u64)> {
    let nf = n as f64;
    let mut bounds: Vec<(u64, u64)> = Vec::new();
    let mut cum: f64 = 0.0; // P[K < k]
    let mut start = 0u64;
    let mut acc = 0.0; // expected count in start..k
    let mut k = 0u64;
    while k < MAX_GROUPING_CLASSES {
        let tail = (1.0 - cum).max(0.0); // P[K >= k]
        if nf * tail < min_expected {
            break;
        }
        let p = model.pmf(k);
        cum += p;
        acc += nf * p;
        k += 1;
        if acc >= min_expected {
            bounds.push((start, k));
            start = k;
            acc = 0.0;
        }
    }
    // The open-ended remainder [start, inf).
    let rest = nf * model.sf(start);
    if rest >= min_expected || bounds.is_empty() {
        bounds.push((start, u64::MAX));
    } else if let Some(last) = bounds.last_mut() {
        last.1 = u64::MAX;
    }
    bounds
}

/// Observed and expected counts of `model` in the groups `bounds`.
pub fn groups_for(model: &Model, h: &ErrorClasses, bounds: &[(u64, u64)]) -> Vec<Group> {
    let nf = h.n() as f64;
    bounds
        .iter()
        .map(|&(first, end)| {
            let upper = if end == u64::MAX { 0.0 } else { model.sf(end) };
            let expected = (nf * (model.sf(first) - upper)).max(0.0);
            let last = (end != u64::MAX).then(|| end - 1);
            Group {
                first,
                last,
                observed: h.count_in(first, end),
                expected,
            }
        })
        .collect()
}

/// chi2^ = sum (B - E)^2 / E over `groups`; finite (an empty expectation with observations
/// counts as the largest finite value).
pub fn statistic(groups: &[Group]) -> f64 {
    let mut s = 0.0;
    for g in groups {
        let d = g.observed as f64 - g.expected;
        if g.expected > 0.0 {
            s += d * d / g.expected;
        } else if g.observed > 0 {
            return f64::MAX;
        }
    }
    if s.is_finite() {
        s
    } else {
        f64::MAX
    }
}

/// chi2^ of `model` on fixed group boundaries (used to compare a refined lambda with the MLE on
/// the same classes).
pub fn statistic_on(model: &Model, h: &ErrorClasses, bounds: &[(u64, u64)]) -> f64 {
    statistic(&groups_for(model, h, bounds))
}

/// Outcome of the test of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// chi2^ <= critical value.
    Accepted,
    /// chi2^ > critical value.
    Rejected,
    /// Too few groups after merging for any degree of freedom.
    Untestable,
}

/// The result of a chi-square test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GofTest {
    /// chi2^.
    pub chi2: f64,
    /// nu = groups - 1 - parameters (0 when untestable).
    pub df: usize,
    /// Number of groups after merging.
    pub groups: usize,
    /// Exact chi2_(nu; 1 - alpha); None when untestable.
    pub critical: Option<f64>,
    /// Wilson-Hilferty approximation of the same (eq. 9); None when untestable.
    pub critical_wilson_hilferty: Option<f64>,
    /// P(chi2_nu >= chi2^); None when untestable.
    pub p_value: Option<f64>,
    /// The decision.
    pub verdict: Verdict,
}

/// Tests `groups` of a model with `n_params` fitted parameters at significance `alpha`.
pub fn test(groups: &[Group], n_params: usize, alpha: f64) -> GofTest {
    let chi2 = statistic(groups);
    let g = groups.len();
    if g < n_params + 2 {
        return GofTest {
            chi2,
            df: 0,
            groups: g,
            critical: None,
            critical_wilson_hilferty: None,
            p_value: None,
            verdict: Verdict::Untestable,
        };
    }
    let df = g - 1 - n_params;
    let critical = chi2_critical(df, alpha);
    let verdict = if chi2 <= critical {
        Verdict::Accepted
    } else {
        Verdict::Rejected
    };
    GofTest {
        chi2,
        df,
        groups: g,
        critical: Some(critical),
        critical_wilson_hilferty: Some(chi2_critical_wilson_hilferty(df, alpha)),
        p_value: Some(chi2_sf(chi2, df as f64)),
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Binning;
    use crate::sample::Sample;

    fn hist(ticks: &[u64]) -> ErrorClasses {
        let v: Vec<f64> = ticks.iter().map(|&k| 1e-6 + k as f64 * 1e-9).collect();
        let s = Sample::new(&v).unwrap();
        ErrorClasses::new(&s, Binning::choose(&s, 1e-9, Some(1e-9)).unwrap()).unwrap()
    }

    #[test]
    fn every_group_expects_at_least_five_and_all_sum_to_n() {
        for (m, n) in [
            (Model::Poisson { lambda: 2.0 }, 1000u64),
            (Model::Poisson { lambda: 0.2 }, 60),
            (Model::Poisson { lambda: 400.0 }, 5000),
            (
                Model::Exponential {
                    lambda: 3e6,
                    width_s: 1e-8,
                },
                200,
            ),
            (
                Model::Exponential {
                    lambda: 1e3,
                    width_s: 1e-8,
                },
                100_000,
            ),
        ] {
            let b = group_bounds(&m, n, 5.0);
            assert_eq!(b[0].0, 0);
            assert_eq!(b.last().unwrap().1, u64::MAX);
            for w in b.windows(2) {
                assert_eq!(w[0].1, w[1].0, "contiguous");
            }
            let total: f64 = b
                .iter()
                .map(|&(f, e)| n as f64 * (m.sf(f) - if e == u64::MAX { 0.0 } else { m.sf(e) }))
                .inspect(|&ex| assert!(ex >= 5.0 - 1e-9, "{m:?}: group expects {ex}"))
                .sum();
            assert!((total - n as f64).abs() < 1e-6 * n as f64, "{m:?}");
        }
    }

    #[test]
    fn poisson_large_lambda_merges_both_tails() {
        let b = group_bounds(&Model::Poisson { lambda: 400.0 }, 5000, 5.0);
        assert!(
            b[0].1 > 300,
            "lower tail merged into the first group: {:?}",
            b[0]
        );
        assert!(b.len() > 20);
    }

    #[test]
    fn too_few_expected_gives_one_group_and_untestable() {
        let b = group_bounds(&Model::Poisson { lambda: 1.0 }, 4, 5.0);
        assert_eq!(b, vec![(0, u64::MAX)]);
        let h = hist(&[0, 1, 1, 2]);
        let g = groups_for(&Model::Poisson { lambda: 1.0 }, &h, &b);
        let t = test(&g, 1, 0.05);
        assert_eq!(
            (t.verdict, t.df, t.critical),
            (Verdict::Untestable, 0, None)
        );
    }

    #[test]
    fn statistic_by_hand() {
        // Poisson(1) with 100 observations, bounds fixed by hand.
        let ticks: Vec<u64> = [(0u64, 40usize), (1, 35), (2, 15), (3, 10)]
            .iter()
            .flat_map(|&(k, c)| vec![k; c])
            .collect();
        let h = hist(&ticks);
        let m = Model::Poisson { lambda: 1.0 };
        let bounds = [(0, 1), (1, 2), (2, 3), (3, u64::MAX)];
        let g = groups_for(&m, &h, &bounds);
        let e = (-1.0f64).exp();
        let exp = [100.0 * e, 100.0 * e, 50.0 * e, 100.0 * (1.0 - 2.5 * e)];
        let obs = [40.0, 35.0, 15.0, 10.0];
        let want: f64 = obs
            .iter()
            .zip(exp)
            .map(|(o, e)| (o - e) * (o - e) / e)
            .sum();
        assert!((statistic(&g) - want).abs() < 1e-9);
        let t = test(&g, 1, 0.05);
        assert_eq!(t.df, 2);
        assert!((t.critical.unwrap() - 5.991_464_547_107_979).abs() < 1e-9);
        assert_eq!(
            t.verdict,
            if want <= 5.991_464_547_107_979 {
                Verdict::Accepted
            } else {
                Verdict::Rejected
            }
        );
        assert!((t.p_value.unwrap() - (-want / 2.0).exp()).abs() < 1e-12); // df 2: p = e^(-x/2)
    }

    #[test]
    fn empty_expectation_with_observations_is_max_not_inf() {
        let g = [Group {
            first: 0,
            last: Some(0),
            observed: 3,
            expected: 0.0,
        }];
        assert_eq!(statistic(&g), f64::MAX);
        let g = [Group {
            first: 0,
            last: Some(0),
            observed: 0,
            expected: 0.0,
        }];
        assert_eq!(statistic(&g), 0.0);
    }
}
