//! When to stop measuring (seed 004 §9; DESIGN §2 step 8).
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
//! Measured on synthetic streams checked every 25 samples (`tests/statistical.rs`): exponential
//! errors stop at a median N = 225 (also 225 with the floor lowered to 50, so the tolerance and
//! not the floor puts it there), Poisson errors of a few ticks at N = 200; a system that
//! changes while it is measured runs to `max_samples`.
//!
//! A prefix that cannot be fitted because its times are all equal or all within one class has
//! the empirical q_max quantile as its tmax. The check costs `lookback` fits (about
//! 4 x 0.1 ms at N = 1000 in release), so it can be run every 20-50 new samples. It only looks
//! at the order of the samples it is given, so pass them in measurement order.
use serde::Serialize;

use crate::error::StatsError;
use crate::fit::{fit, FitOptions};
use crate::sample::Sample;

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
        tmax_s: f64,
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
        let hi = tmax.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lo = tmax.iter().copied().fold(f64::INFINITY, f64::min);
        let spread = hi - lo;
        let min_s = sample_s.iter().copied().fold(f64::INFINITY, f64::min);
        let terr = tmax[0] - min_s;
        if spread <= self.rel_tol * terr || spread == 0.0 {
            return Stop::Stable {
                n,
                tmax_s: tmax[0],
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
                tmax_s: Some(tmax[0]),
                spread_s: Some(spread),
                reason,
            }
        } else {
            Stop::Continue { n, reason }
        }
    }
}

/// tmax of a (prefix of a) sample: the fit's, or the empirical quantile when the sample has no
/// spread to fit (all equal, or all in one class).
fn tmax_estimate(sample_s: &[f64], opts: &FitOptions) -> Result<f64, StatsError> {
    match fit(sample_s, opts) {
        Ok(r) => Ok(r.tmax_s),
        Err(StatsError::AllEqual { value_s, .. }) => Ok(value_s),
        Err(StatsError::SingleClass { .. }) => {
            Ok(Sample::new(sample_s)?.quantile_inverse_cdf(opts.q_max))
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
