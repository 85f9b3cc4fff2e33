//! Estimators of the q_max quantile beside the one tmax uses, to judge how steady any estimate
//! from one calibration's sample can be.
//!
//! **Why.** Two calibrations one after the other give tmax values further apart than the
//! entries' medians. That spread could be the product's estimator (the chosen model, or the
//! tail rule's data-driven threshold) or the quantile itself: a sample of 400 holds four values
//! above its 99th percentile, and the machine moves within an entry's own second. Comparing
//! the same pair of calibrations under several estimators tells the two apart: when estimators
//! built on different principles all move alike, the spread is the data's, not the method's.
//!
//! The estimators:
//!
//! - [`Estimator::Empirical`]: the inverse-CDF order statistic (what tmax falls back to).
//! - [`Estimator::HarrellDavis`]: a weighted mean of every order statistic, the weights the
//!   Beta((n + 1) q, (n + 1)(1 - q)) probabilities of the intervals ((i - 1)/n, i/n]
//!   (Harrell & Davis 1982, "A new distribution-free quantile estimator", Biometrika 69:
//!   635-640). It smooths the jump between neighbouring order statistics, which is where an
//!   empirical quantile of a small tail loses most of its precision.
//! - [`Estimator::TailAt`]: the generalized Pareto tail of [`crate::tail`] at one fixed
//!   threshold level, whether or not its test accepts it: no threshold choice that can switch
//!   between two calibrations.
use serde::Serialize;

use crate::sample::{QMax, Sample};
use crate::special::beta_reg;
use crate::tail::fit_at_level;

/// One way to estimate the q_max quantile of a sample (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Estimator {
    Empirical,
    HarrellDavis,
    /// The GPD tail above this quantile level of the sample.
    TailAt(f64),
}

impl Estimator {
    /// The estimators compared by `mpiover profile check --against`.
    pub const COMPARED: [Estimator; 4] = [
        Estimator::Empirical,
        Estimator::HarrellDavis,
        Estimator::TailAt(0.85),
        Estimator::TailAt(0.90),
    ];

    /// A short name for tables.
    pub fn name(&self) -> String {
        match self {
            Estimator::Empirical => "empirical".into(),
            Estimator::HarrellDavis => "Harrell-Davis".into(),
            Estimator::TailAt(l) => format!("GPD above {:.0} %", 100.0 * l),
        }
    }

    /// The estimate of `sample`'s `q` quantile, seconds; None when the estimator has too little
    /// data (a tail needs its exceedances).
    pub fn estimate(&self, sample: &Sample, q: QMax) -> Option<f64> {
        match *self {
            Estimator::Empirical => Some(sample.quantile_inverse_cdf(q.get())),
            Estimator::HarrellDavis => Some(harrell_davis(sample, q.get())),
            // alpha only decides `accepted`, which this estimator ignores.
            Estimator::TailAt(level) => fit_at_level(sample, q, 0.05, level).map(|f| f.tmax_s),
        }
    }
}

/// The Harrell-Davis estimate of the `q` quantile (0 < q < 1) of `sample`.
pub fn harrell_davis(sample: &Sample, q: f64) -> f64 {
    let s = sample.sorted();
    let n = s.len() as f64;
    let (a, b) = ((n + 1.0) * q, (n + 1.0) * (1.0 - q));
    let cdf = |i: usize| {
        let x = i as f64 / n;
        beta_reg(a, b, x, 1.0 - x)
    };
    let mut prev = 0.0;
    let mut acc = 0.0;
    for (i, &v) in s.iter().enumerate() {
        let next = cdf(i + 1);
        acc += (next - prev) * v;
        prev = next;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::{harrell_davis, Estimator};
    use crate::sample::{QMax, Sample};

    fn uniform(n: usize) -> Sample {
        let v: Vec<f64> = (1..=n).map(|i| i as f64 / (n + 1) as f64).collect();
        Sample::new(&v).expect("a sample")
    }

    #[test]
    fn harrell_davis_of_an_even_grid_is_close_to_the_quantile() {
        let s = uniform(999);
        for q in [0.1, 0.5, 0.9, 0.99] {
            let e = harrell_davis(&s, q);
            assert!((e - q).abs() < 2e-3, "q {q}: {e}");
        }
    }

    #[test]
    fn harrell_davis_stays_between_the_extremes_and_grows_with_q() {
        let v = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0];
        let s = Sample::new(&v).expect("a sample");
        let mut last = f64::NEG_INFINITY;
        for q in [0.05, 0.25, 0.5, 0.75, 0.95, 0.99] {
            let e = harrell_davis(&s, q);
            assert!((1.0..=9.0).contains(&e), "q {q}: {e}");
            assert!(e >= last, "q {q}: {e} below {last}");
            last = e;
        }
    }

    #[test]
    fn a_tail_estimate_needs_its_exceedances() {
        let q = QMax::new(0.99).expect("q");
        // The quantiles of a unit exponential: its excesses over any threshold are exponential
        // too (a GPD with xi = 0), and its 99th percentile is ln 100.
        let expo = |n: usize| {
            let v: Vec<f64> = (1..=n)
                .map(|i| -(1.0 - i as f64 / (n + 1) as f64).ln())
                .collect();
            Sample::new(&v).expect("a sample")
        };
        // 50 values: 7 above the 85 % level, fewer than a tail is fitted to.
        assert_eq!(Estimator::TailAt(0.85).estimate(&expo(50), q), None);
        let e = Estimator::TailAt(0.85)
            .estimate(&expo(400), q)
            .expect("a tail of 60 exceedances");
        assert!((e / 100f64.ln() - 1.0).abs() < 0.05, "{e}");
    }
}
