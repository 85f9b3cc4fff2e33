//! Summary statistics for the profile and the report (Hoefler & Belli
//! rules 5-6): no normality assumed, so the centre is the median with its nonparametric
//! confidence interval, the spread is given by quantiles, and the mean and standard deviation
//! are there for completeness. Values that cannot be run-times (NaN, infinite, negative) are
//! dropped and counted with the reason; callers add their own reasons (for example
//! measurements flagged by the window synchronization) with [`Summary::add_dropped`].
//!
//! Quantiles here interpolate linearly between order statistics (Hyndman-Fan type 7, as R and
//! NumPy do by default).
use serde::Serialize;

use crate::error::StatsError;
use crate::quantile::quantile_ci;
use crate::sample::Sample;

/// Confidence level of [`Summary::median_ci`].
pub const SUMMARY_CI_LEVEL: f64 = 0.95;

/// Reason recorded for dropped NaN or infinite values.
pub const DROPPED_NON_FINITE: &str = "not a finite number";
/// Reason recorded for dropped negative values.
pub const DROPPED_NEGATIVE: &str = "negative";

/// Location and spread of a sample of run-times, seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Values used.
    pub n: usize,
    pub min_s: f64,
    pub max_s: f64,
    pub mean_s: f64,
    /// Sample standard deviation (n - 1).
    pub sd_s: f64,
    pub median_s: f64,
    /// 95 % nonparametric CI of the median (Hoefler & Belli); None below n = 8.
    pub median_ci: Option<(f64, f64)>,
    /// Level of `median_ci`.
    pub ci_level: f64,
    pub q25: f64,
    pub q75: f64,
    pub q90: f64,
    pub q99: f64,
    /// (reason, count) of values left out, in order of first appearance.
    pub dropped: Vec<(String, usize)>,
}

impl Summary {
    /// Counts `count` more values dropped for `reason` (merged with an existing reason).
    pub fn add_dropped(&mut self, reason: &str, count: usize) {
        if count == 0 {
            return;
        }
        match self.dropped.iter_mut().find(|(r, _)| r == reason) {
            Some((_, c)) => *c += count,
            None => self.dropped.push((reason.to_string(), count)),
        }
    }

    /// Total number of dropped values.
    pub fn n_dropped(&self) -> usize {
        self.dropped.iter().map(|(_, c)| c).sum()
    }
}

/// Summarizes `sample_s`, dropping (and counting) NaN, infinite and negative values.
/// Errors only when no value is left.
pub fn summarize(sample_s: &[f64]) -> Result<Summary, StatsError> {
    let (mut non_finite, mut negative) = (0usize, 0usize);
    let kept: Vec<f64> = sample_s
        .iter()
        .copied()
        .filter(|&v| {
            if !v.is_finite() {
                non_finite += 1;
                false
            } else if v < 0.0 {
                negative += 1;
                false
            } else {
                true
            }
        })
        .collect();
    if kept.is_empty() {
        return Err(StatsError::TooFewSamples { n: 0, min: 1 });
    }
    let s = Sample::new(&kept)?;
    let n = s.len();
    let median_ci =
        quantile_ci(n, 0.5, SUMMARY_CI_LEVEL).map(|(lo, hi)| (s.order_stat(lo), s.order_stat(hi)));
    let mut out = Summary {
        n,
        min_s: s.min(),
        max_s: s.max(),
        mean_s: s.mean(),
        sd_s: s.sd(),
        median_s: s.quantile_linear(0.5),
        median_ci,
        ci_level: SUMMARY_CI_LEVEL,
        q25: s.quantile_linear(0.25),
        q75: s.quantile_linear(0.75),
        q90: s.quantile_linear(0.90),
        q99: s.quantile_linear(0.99),
        dropped: Vec::new(),
    };
    out.add_dropped(DROPPED_NON_FINITE, non_finite);
    out.add_dropped(DROPPED_NEGATIVE, negative);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_1_to_100() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = summarize(&v).unwrap();
        assert_eq!((s.n, s.min_s, s.max_s), (100, 1.0, 100.0));
        assert_eq!(s.mean_s, 50.5);
        assert!((s.sd_s - 29.011_491_975_882_016).abs() < 1e-12);
        assert_eq!(s.median_s, 50.5);
        assert_eq!(s.median_ci, Some((40.0, 61.0)));
        assert!((s.q25 - 25.75).abs() < 1e-12);
        assert!((s.q75 - 75.25).abs() < 1e-12);
        assert!((s.q90 - 90.1).abs() < 1e-12);
        assert!((s.q99 - 99.01).abs() < 1e-12);
        assert!(s.dropped.is_empty());
    }

    #[test]
    fn drops_and_counts_bad_values() {
        let v = [
            1.0,
            f64::NAN,
            -2.0,
            3.0,
            f64::INFINITY,
            -0.5,
            f64::NEG_INFINITY,
        ];
        let mut s = summarize(&v).unwrap();
        assert_eq!(s.n, 2);
        assert_eq!(
            s.dropped,
            vec![
                (DROPPED_NON_FINITE.to_string(), 3),
                (DROPPED_NEGATIVE.to_string(), 2)
            ]
        );
        s.add_dropped("late start", 4);
        s.add_dropped("negative", 1);
        s.add_dropped("nothing", 0);
        assert_eq!(s.n_dropped(), 10);
        assert_eq!(s.dropped.len(), 3);
        assert_eq!(s.median_ci, None);
    }

    #[test]
    fn nothing_left_is_an_error() {
        assert!(matches!(
            summarize(&[]),
            Err(StatsError::TooFewSamples { n: 0, .. })
        ));
        assert!(matches!(
            summarize(&[f64::NAN, -1.0]),
            Err(StatsError::TooFewSamples { .. })
        ));
    }

    #[test]
    fn single_value() {
        let s = summarize(&[2.5e-6]).unwrap();
        assert_eq!((s.n, s.sd_s, s.median_s, s.q99), (1, 0.0, 2.5e-6, 2.5e-6));
    }
}
