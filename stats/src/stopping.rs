//! When to stop measuring (the overhead paper §9).
//!
//! The paper fitted growing subsets (50, 60, ..., 3000) of one sample and found tmax stable
//! from about N = 200 on, while chi2^ kept growing with N. [`StoppingRule::check`] turns that
//! observation into a rule the calibration program can apply as it measures:
//!
//! * below `min_samples` (default 200): continue;
//! * otherwise tmax is computed on the whole sample and on its prefixes that are `step`,
//!   2 `step`, ... shorter (`lookback` values in all; default 4 values 25 samples apart, so the
//!   last 75 samples are examined), exactly as the paper's subsets;
//! * **stable** when the spread max - min of these tmax values is at most `rel_tol` (default
//!   5 %) of terr,max = tmax - min(S), the part of tmax that the fit determines (relative to
//!   tmax itself any rule would pass at once whenever the floor min(S) dominates);
//! * **exhausted** at `max_samples` (default 5000) without stability: the caller should record
//!   the entry as unstable (or use the returned tmax, which is the best there is).
//!
//! **Stability is judged on the continuous quantile.** The Poisson tmax is min(S) plus a whole
//! class k_q, a step function of lambda^: it stays on one class while lambda^ still drifts
//! towards the next step, so "unchanged over the last 75 samples" said nothing, and Poisson
//! streams stopped at the earliest possible check in every trial. The spread and terr,max
//! above are therefore taken on min(S) + the chosen model's terr,max computed from the
//! continuous class quantile x_q ([`crate::Model::class_quantile_continuous`], with
//! k_q = ceil(x_q)); for the exponential this is its tmax itself, and for the empirical
//! fallback the order statistic. The tmax returned is always the fit's own.
//!
//! Measured on synthetic streams checked every 25 samples (`tests/statistical.rs`, batches of
//! 20 seeded streams, floor lowered to 50 so that the rule and not the floor decides; the
//! earliest possible stop is then 125, four prefixes 25 apart above the fit's minimum of 50):
//! exponential errors stop at a median N of 200-250 (225 in most batches); Poisson errors of
//! lambda = 1 tick at 150-200, lambda = 2 at 150, lambda >= 3 at 125-150. Poisson stops earlier
//! than the paper's N ~ 200 because its terr,max ~ lambda + z sqrt(lambda) classes is
//! relatively more precise than the exponential's -ln(1 - q)/lambda (relative standard error
//! about 0.5/sqrt(N) against 1/sqrt(N) at lambda = 2), so the same 5 % tolerance is met sooner;
//! the default floor of 200 keeps the paper's minimum for every model. A system that changes
//! while it is measured runs to `max_samples`.
//!
//! A prefix that cannot be fitted because its times are all equal or all within one class has
//! the empirical q_max quantile as its tmax. The check costs `lookback` fits (0.6-1.5 ms in
//! all at N = 200, 1.0-2.3 ms at N = 1000 with the five model families, release build on a
//! busy 2-core VM; see the crate's Performance section), so it can be run every 20-50 new
//! samples. It only looks
//! at the order of the samples it is given, so pass them in measurement order.
use serde::Serialize;

use crate::error::StatsError;
use crate::fit::{fit, FitOptions};
use crate::sample::{QMax, Sample};

/// Parameters of the stopping rule. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoppingRule {
    /// Never stop below this many samples (default 200).
    pub min_samples: usize,
    /// Always stop at this many samples (default 5000).
    pub max_samples: usize,
    /// Largest spread of the recent tmax values, as a fraction of terr,max (default 0.05).
    pub rel_tol: f64,
    /// Samples between the compared prefixes (default 25).
    pub step: usize,
    /// Number of tmax values compared, the full sample included (default 4, at least 2).
    pub lookback: usize,
}

impl Default for StoppingRule {
    fn default() -> Self {
        StoppingRule {
            min_samples: 200,
            max_samples: 5000,
            rel_tol: 0.05,
            step: 25,
            lookback: 4,
        }
    }
}

/// The verdict of [`StoppingRule::check`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Stop {
    /// Measure more.
    Continue { n: usize, reason: String },
    /// tmax is stable: stop, record `tmax_s` and n.
    Stable {
        n: usize,
        /// The fit's tmax on all `n` samples.
        tmax_s: f64,
        /// Spread of the compared values (on the continuous quantile, see the module docs).
        spread_s: f64,
    },
    /// `max_samples` reached without stability.
    Exhausted {
        n: usize,
        tmax_s: Option<f64>,
        spread_s: Option<f64>,
        reason: String,
    },
}

impl Stop {
    /// True for `Stable` and `Exhausted`.
    pub fn is_done(&self) -> bool {
        !matches!(self, Stop::Continue { .. })
    }
}

impl StoppingRule {
    /// Checks that the parameters make sense.
    pub fn validate(&self) -> Result<(), StatsError> {
        if self.max_samples < self.min_samples {
            return Err(StatsError::BadStoppingRule(format!(
                "max_samples ({}) is below min_samples ({})",
                self.max_samples, self.min_samples
            )));
        }
        if !(self.rel_tol > 0.0 && self.rel_tol.is_finite()) {
            return Err(StatsError::BadStoppingRule(format!(
                "rel_tol must be positive, got {}",
                self.rel_tol
            )));
        }
        if self.step == 0 || self.lookback < 2 {
            return Err(StatsError::BadStoppingRule(format!(
                "step must be >= 1 and lookback >= 2 (got {} and {})",
                self.step, self.lookback
            )));
        }
        Ok(())
    }

    /// Decides whether `sample_s` (in measurement order) is large enough. Never panics; an
    /// invalid rule or options, or an invalid value in the sample, gives `Continue` with the
    /// reason (and `Exhausted` at `max_samples`).
    pub fn check(&self, sample_s: &[f64], opts: &FitOptions) -> Stop {
        let n = sample_s.len();
        let fail = |reason: String| {
            if n >= self.max_samples {
                Stop::Exhausted {
                    n,
                    tmax_s: None,
                    spread_s: None,
                    reason,
                }
            } else {
                Stop::Continue { n, reason }
            }
        };
        if let Err(e) = self.validate().and_then(|_| opts.validate().map(|_| ())) {
            return fail(e.to_string());
        }
        if n < self.min_samples {
            return Stop::Continue {
                n,
                reason: format!("{n} samples, the rule needs at least {}", self.min_samples),
            };
        }
        let smallest = opts.min_samples.max(2);
        let mut tmax = Vec::with_capacity(self.lookback);
        for j in 0..self.lookback {
            let Some(len) = n.checked_sub(j * self.step).filter(|&l| l >= smallest) else {
                break;
            };
            match tmax_estimate(&sample_s[..len], opts) {
                Ok(t) => tmax.push(t),
                Err(e) => return fail(e.to_string()),
            }
        }
        if tmax.len() < self.lookback {
            return fail(format!(
                "{n} samples are too few to compare tmax over {} prefixes {} apart",
                self.lookback, self.step
            ));
        }
        // Spread and scale are both taken on the smooth value, so that a Poisson tmax that
        // sits on one class while lambda^ drifts towards the next is not called stable.
        let hi = tmax.iter().map(|t| t.1).fold(f64::NEG_INFINITY, f64::max);
        let lo = tmax.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
        let spread = hi - lo;
        let min_s = sample_s.iter().copied().fold(f64::INFINITY, f64::min);
        let terr = tmax[0].1 - min_s;
        let tmax_now = tmax[0].0;
        if spread <= self.rel_tol * terr || spread == 0.0 {
            return Stop::Stable {
                n,
                tmax_s: tmax_now,
                spread_s: spread,
            };
        }
        let reason = format!(
            "tmax moved by {:.1}% of terr,max over the last {} samples (tolerance {:.1}%)",
            if terr > 0.0 {
                100.0 * spread / terr
            } else {
                100.0
            },
            (tmax.len() - 1) * self.step,
            100.0 * self.rel_tol
        );
        if n >= self.max_samples {
            Stop::Exhausted {
                n,
                tmax_s: Some(tmax_now),
                spread_s: Some(spread),
                reason,
            }
        } else {
            Stop::Continue { n, reason }
        }
    }
}

/// tmax of a (prefix of a) sample, and the value its stability is judged on (see the module
/// docs): the fit's tmax and min(S) + the chosen model's continuous terr,max, or the empirical
/// quantile (twice) when no model was chosen or the sample has no spread to fit (all equal,
/// or all in one class).
fn tmax_estimate(sample_s: &[f64], opts: &FitOptions) -> Result<(f64, f64), StatsError> {
    match fit(sample_s, opts) {
        Ok(r) => {
            let smooth = r
                .chosen_kind()
                .and_then(|k| r.model(k))
                .and_then(|m| m.kind.from_params(&m.params, r.bin_width_s))
                .zip(QMax::new(r.q_max).ok())
                .map(|(model, q)| {
                    r.min_s + model.terr_max_continuous_s(q, r.bin_width_s, r.resolution_s)
                })
                .filter(|t| t.is_finite())
                .unwrap_or(r.tmax_s);
            Ok((r.tmax_s, smooth))
        }
        Err(StatsError::AllEqual { value_s, .. }) => Ok((value_s, value_s)),
        Err(StatsError::SingleClass { .. }) => {
            let t = Sample::new(sample_s)?.quantile_inverse_cdf(opts.q_max);
            Ok((t, t))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_min_continues() {
        let v: Vec<f64> = (0..100).map(|i| 1e-6 + f64::from(i % 5) * 1e-9).collect();
        assert!(matches!(
            StoppingRule::default().check(&v, &FitOptions::default()),
            Stop::Continue { n: 100, .. }
        ));
    }

    #[test]
    fn constant_sample_is_stable() {
        let v = vec![2e-6; 300];
        match StoppingRule::default().check(&v, &FitOptions::default()) {
            Stop::Stable {
                n,
                tmax_s,
                spread_s,
            } => {
                assert_eq!((n, tmax_s, spread_s), (300, 2e-6, 0.0));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_values_never_panic() {
        let mut v = vec![1e-6; 300];
        v[7] = f64::NAN;
        let r = StoppingRule::default();
        assert!(matches!(
            r.check(&v, &FitOptions::default()),
            Stop::Continue { .. }
        ));
        let r = StoppingRule {
            max_samples: 300,
            ..r
        };
        match r.check(&v, &FitOptions::default()) {
            Stop::Exhausted {
                tmax_s: None,
                reason,
                ..
            } => assert!(reason.contains("not a finite")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_rule_is_reported() {
        let r = StoppingRule {
            lookback: 1,
            ..StoppingRule::default()
        };
        assert!(r.validate().is_err());
        match r.check(&[1.0; 10], &FitOptions::default()) {
            Stop::Continue { reason, .. } => assert!(reason.contains("lookback")),
            other => panic!("{other:?}"),
        }
        let r = StoppingRule {
            min_samples: 10,
            max_samples: 5,
            ..StoppingRule::default()
        };
        assert!(r.validate().is_err());
        let bad = FitOptions {
            q_max: 1.0,
            ..FitOptions::default()
        };
        assert!(matches!(
            StoppingRule::default().check(&[1.0; 300], &bad),
            Stop::Continue { .. }
        ));
    }
}
