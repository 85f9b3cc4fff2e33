//! Refinement of the fitted parameter (the overhead paper §7, eq. 10).
//!
//! Starting from the maximum-likelihood lambda^, the paper minimizes
//!
//! D(lambda) = sum_k | f_k - p_k(lambda) |                                   (eq. 10)
//!
//! over lambda > 0, f_k = B_k / N being the observed relative frequency of class k. The sum runs
//! over *all* classes k >= 0; since sum_k p_k = 1 it is evaluated exactly over the occupied
//! classes only: D = 1 + sum_(k occupied) (|f_k - p_k| - p_k).
//! ([`Objective::Chi2`] minimizes chi2^ on the MLE's groups instead, the minimum chi-square
//! estimator; the overhead paper allows either.)
//!
//! The 1-D minimization is Brent's method (argmin's `BrentOpt`) on lambda = u lambda^ with
//! u in [0.618, 1.618]: Brent's first point is the golden section a + 0.382 (b - a) = 1, so the
//! search starts from the MLE exactly, and the bracket is far wider than the sampling error of
//! lambda^ at the sample sizes used (~1/sqrt(N)).
//!
//! Only the one-parameter families (Poisson, exponential) are refined; the others keep their
//! maximum-likelihood parameters, which their AIC and degrees of freedom assume.
//!
//! The refined lambda is **kept only when it lowers chi2^**, compared on the same groups (those
//! of the MLE), so that refinement can only improve the fit "in the sense of the chi-square
//! test" (§7) and never changes the degrees of freedom; and only when every one of those groups
//! still expects at least 5 observations under the refined lambda (a small, badly fitting
//! sample can otherwise move lambda far enough to break the rule of §7's test).
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::brent::BrentOpt;
use serde::Serialize;
use statrs::function::gamma::ln_gamma;

use crate::chi2::statistic_on;
use crate::histogram::ErrorClasses;
use crate::model::{Model, ModelKind};

/// What the refinement minimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// sum_k |f_k - p_k(lambda)|, the paper's eq. 10.
    #[default]
    L1,
    /// chi2^ on the MLE's groups.
    Chi2,
}

/// Brent's bracket in units of lambda^ (golden-section point at 1).
const BRACKET: (f64, f64) = (0.618_033_988_749_895, 1.618_033_988_749_895);
const MAX_ITERS: u64 = 100;

/// D(lambda) of eq. 10 for `model` on `h`.
pub fn l1_distance(model: &Model, h: &ErrorClasses) -> f64 {
    let nf = h.n() as f64;
    let s: f64 = h
        .occupied()
        .iter()
        .map(|&(k, c)| {
            let p = model.pmf(k);
            (c as f64 / nf - p).abs() - p
        })
        .sum();
    (1.0 + s).max(0.0)
}

struct Cost<'a> {
    kind: ModelKind,
    lambda0: f64,
    h: &'a ErrorClasses,
    objective: Objective,
    bounds: &'a [(u64, u64)],
    /// ln k! for every occupied class (Poisson only), so that an evaluation costs one exp
    /// per class.
    ln_fact: Vec<f64>,
}

impl Cost<'_> {
    fn eval(&self, u: f64) -> f64 {
        let Some(model) = self.kind.with_lambda(u * self.lambda0, self.h.width_s()) else {
            return f64::MAX;
        };
        match self.objective {
            Objective::Chi2 => statistic_on(&model, self.h, self.bounds),
            Objective::L1 => match model {
                Model::Poisson { lambda } => {
                    let nf = self.h.n() as f64;
                    let ll = lambda.ln();
                    let s: f64 = self
                        .h
                        .occupied()
                        .iter()
                        .zip(&self.ln_fact)
                        .map(|(&(k, c), &lf)| {
                            let p = (k as f64 * ll - lambda - lf).exp();
                            (c as f64 / nf - p).abs() - p
                        })
                        .sum();
                    (1.0 + s).max(0.0)
                }
                _ => l1_distance(&model, self.h),
            },
        }
    }
}

impl CostFunction for Cost<'_> {
    type Param = f64;
    type Output = f64;

    fn cost(&self, u: &f64) -> Result<f64, argmin::core::Error> {
        Ok(self.eval(*u))
    }
}

/// Minimizes `objective` from `start` (the MLE). Returns the minimizing model, or None when the
/// optimizer fails (it does not for these objectives), lands on a non-finite lambda, or
/// `start` is of a family with more than one parameter (those keep their MLE: eq. 10 is a
/// one-parameter refinement of the paper's two models).
/// Whether to keep it is the caller's decision (it is kept when it lowers chi2^).
pub fn refine(
    start: &Model,
    h: &ErrorClasses,
    bounds: &[(u64, u64)],
    objective: Objective,
) -> Option<Model> {
    let kind = start.kind();
    if kind.n_params() != 1 {
        return None;
    }
    let ln_fact = match kind {
        ModelKind::Poisson => h
            .occupied()
            .iter()
            .map(|&(k, _)| ln_gamma(k as f64 + 1.0))
            .collect(),
        _ => Vec::new(),
    };
    let cost = Cost {
        kind,
        lambda0: start.lambda(),
        h,
        objective,
        bounds,
        ln_fact,
    };
    let solver = BrentOpt::new(BRACKET.0, BRACKET.1).set_tolerance(1e-7, 1e-9);
    let res = Executor::new(cost, solver)
        .configure(|state| state.max_iters(MAX_ITERS))
        .run()
        .ok()?;
    let u = *res.state().get_best_param()?;
    kind.with_lambda(u * start.lambda(), h.width_s())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chi2::group_bounds;
    use crate::histogram::Binning;
    use crate::sample::Sample;

    fn hist(ticks: &[u64]) -> ErrorClasses {
        let v: Vec<f64> = ticks.iter().map(|&k| 2e-6 + k as f64 * 1e-9).collect();
        let s = Sample::new(&v).unwrap();
        ErrorClasses::new(&s, Binning::choose(&s, 1e-9, Some(1e-9)).unwrap()).unwrap()
    }

    #[test]
    fn l1_distance_over_occupied_classes_equals_full_sum() {
        let h = hist(&[0, 0, 0, 1, 1, 2, 4, 4, 7]);
        for m in [
            Model::Poisson { lambda: 1.3 },
            Model::Exponential {
                lambda: 5e8,
                width_s: 1e-9,
            },
        ] {
            let dense = h.dense(100);
            let full: f64 = (0..5000u64)
                .map(|k| {
                    let f = dense.get(k as usize).copied().unwrap_or(0) as f64 / 9.0;
                    (f - m.pmf(k)).abs()
                })
                .sum();
            assert!((l1_distance(&m, &h) - full).abs() < 1e-12, "{m:?}");
        }
    }

    #[test]
    fn refinement_does_not_increase_its_objective() {
        // A sample the Poisson MLE fits imperfectly (too many zeros).
        let mut ticks = vec![0u64; 50];
        ticks.extend([1u64; 20]);
        ticks.extend([2u64; 20]);
        ticks.extend([3u64; 10]);
        let h = hist(&ticks);
        for kind in ModelKind::ALL {
            let m = kind.mle(&h).unwrap();
            if kind.n_params() > 1 {
                let b = group_bounds(&m, h.n(), 5.0);
                assert!(refine(&m, &h, &b, Objective::L1).is_none(), "{kind}");
                continue;
            }
            let b = group_bounds(&m, h.n(), 5.0);
            let r = refine(&m, &h, &b, Objective::L1).unwrap();
            assert!(l1_distance(&r, &h) <= l1_distance(&m, &h) + 1e-12, "{kind}");
            let rc = refine(&m, &h, &b, Objective::Chi2).unwrap();
            assert!(
                statistic_on(&rc, &h, &b) <= statistic_on(&m, &h, &b) + 1e-9,
                "{kind}"
            );
            let ratio = r.lambda() / m.lambda();
            assert!((BRACKET.0..=BRACKET.1).contains(&ratio));
        }
    }

    #[test]
    fn minimum_is_found_by_brent() {
        // Compare against a fine grid scan of eq. 10.
        let ticks: Vec<u64> = (0..500u64).map(|i| (i * i * 31 + 7) % 13 / 4).collect();
        let h = hist(&ticks);
        let m = ModelKind::Poisson.mle(&h).unwrap();
        let b = group_bounds(&m, h.n(), 5.0);
        let r = refine(&m, &h, &b, Objective::L1).unwrap();
        let grid_min = (0..=10_000)
            .map(|i| BRACKET.0 + (BRACKET.1 - BRACKET.0) * f64::from(i) / 10_000.0)
            .map(|u| {
                l1_distance(
                    &Model::Poisson {
                        lambda: u * m.lambda(),
                    },
                    &h,
                )
            })
            .fold(f64::INFINITY, f64::min);
        assert!(l1_distance(&r, &h) <= grid_min + 1e-6);
    }
}
