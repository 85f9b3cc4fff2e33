//! Validated inputs: a [`Sample`] of run-times (finite, non-negative, sorted) and a [`QMax`]
//! (the quantile that defines tmax, 0.8 <= q_max < 1 as the overhead paper §4 requires).
//!
//! Every computation of the crate takes these types, so the checks are made once, at the
//! boundary, and the statistics below never meet a NaN, a negative time or an unsorted slice.
use crate::error::StatsError;

/// A non-empty sample of run-times in seconds: every value finite and `>= 0`, kept sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
}

impl Sample {
    /// Validates and sorts `times_s`. Errors name the first offending index (from 0).
    pub fn new(times_s: &[f64]) -> Result<Self, StatsError> {
        if times_s.is_empty() {
            return Err(StatsError::TooFewSamples { n: 0, min: 1 });
        }
        for (index, &value) in times_s.iter().enumerate() {
            if !value.is_finite() {
                return Err(StatsError::NonFinite { index, value });
            }
            if value < 0.0 {
                return Err(StatsError::Negative { index, value });
            }
        }
        let mut sorted: Vec<f64> = times_s.iter().map(|&v| v + 0.0).collect(); // -0.0 -> 0.0
        sorted.sort_unstable_by(f64::total_cmp);
        Ok(Sample { sorted })
    }

    /// Number of run-times (at least 1).
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Always false: a `Sample` holds at least one value.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The values in ascending order.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// min(S).
    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    /// max(S).
    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// True when every value is the same.
    pub fn all_equal(&self) -> bool {
        self.min() == self.max()
    }

    /// Arithmetic mean (two-pass around the minimum, so that a tiny spread over a large floor
    /// keeps its digits).
    pub fn mean(&self) -> f64 {
        let m = self.min();
        let s: f64 = self.sorted.iter().map(|&t| t - m).sum();
        m + s / self.len() as f64
    }

    /// Sample standard deviation (divisor n - 1; 0 for a single value).
    pub fn sd(&self) -> f64 {
        let n = self.len();
        if n < 2 {
            return 0.0;
        }
        let mean = self.mean();
        let ss: f64 = self.sorted.iter().map(|&t| (t - mean) * (t - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    }

    /// The order statistic x_(rank), rank counted from 1 and clamped to 1..=n.
    pub fn order_stat(&self, rank: usize) -> f64 {
        let i = rank.clamp(1, self.len()) - 1;
        self.sorted[i]
    }

    /// Empirical quantile by the inverse of the empirical CDF (Hyndman-Fan type 1):
    /// the smallest observed x with F_n(x) >= q, i.e. x_(ceil(n q)). Always an observed time;
    /// this is the fallback tmax (a time that at least a fraction q of the sample did not exceed).
    pub fn quantile_inverse_cdf(&self, q: f64) -> f64 {
        let n = self.len();
        let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
        // ceil(n q) with a guard against q*n landing a hair above an integer by rounding.
        let x = n as f64 * q;
        let r = (x - 1e-9 * x.max(1.0)).ceil().max(1.0) as usize;
        self.order_stat(r)
    }

    /// Empirical quantile with linear interpolation between order statistics (Hyndman-Fan
    /// type 7, the default of R and NumPy): h = (n - 1) q, x_(floor h) + frac(h) (next - it).
    /// Used for the summary's quartiles and percentiles.
    pub fn quantile_linear(&self, q: f64) -> f64 {
        let n = self.len();
        let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
        let h = (n - 1) as f64 * q;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(n - 1);
        let frac = h - lo as f64;
        let a = self.sorted[lo];
        let b = self.sorted[hi];
        a + frac * (b - a)
    }
}

/// The quantile q_max of the error distribution that defines tmax (the overhead paper §4, eq. 2):
/// `0.8 <= q_max < 1`. q_max = 1 would ask for the largest error the model can produce,
/// which is infinite for both models.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct QMax(f64);

impl QMax {
    /// Lowest q_max the method allows.
    pub const MIN: f64 = 0.8;

    /// Validates `0.8 <= q < 1`.
    pub fn new(q: f64) -> Result<Self, StatsError> {
        if (Self::MIN..1.0).contains(&q) {
            Ok(QMax(q))
        } else {
            Err(StatsError::BadQuantile(q))
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for QMax {
    fn default() -> Self {
        QMax(0.99)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_values_with_their_index() {
        assert!(matches!(
            Sample::new(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(matches!(
            Sample::new(&[1.0, 2.0, f64::INFINITY]),
            Err(StatsError::NonFinite { index: 2, .. })
        ));
        assert!(matches!(
            Sample::new(&[1.0, -1e-9]),
            Err(StatsError::Negative { index: 1, .. })
        ));
        assert!(matches!(
            Sample::new(&[]),
            Err(StatsError::TooFewSamples { n: 0, min: 1 })
        ));
        assert!(Sample::new(&[-0.0]).is_ok());
    }

    #[test]
    fn sorts_and_summarizes() {
        let s = Sample::new(&[3.0, 1.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((s.min(), s.max(), s.len()), (1.0, 4.0, 4));
        assert_eq!(s.mean(), 2.5);
        assert!((s.sd() - (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert!(!s.all_equal());
        assert!(Sample::new(&[2.0, 2.0]).unwrap().all_equal());
    }

    #[test]
    fn quantile_definitions() {
        let s = Sample::new(&(1..=100).map(f64::from).collect::<Vec<_>>()).unwrap();
        // type 1: x_(ceil(n q))
        assert_eq!(s.quantile_inverse_cdf(0.99), 99.0);
        assert_eq!(s.quantile_inverse_cdf(0.991), 100.0);
        assert_eq!(s.quantile_inverse_cdf(0.5), 50.0);
        assert_eq!(s.quantile_inverse_cdf(0.0), 1.0);
        // type 7: 1 + 99 q
        assert!((s.quantile_linear(0.25) - 25.75).abs() < 1e-12);
        assert_eq!(s.quantile_linear(1.0), 100.0);
        assert_eq!(s.quantile_linear(0.0), 1.0);
        // 0.7 * 10 = 7.000000000000001 in floating point: still rank 7.
        let t = Sample::new(&(1..=10).map(f64::from).collect::<Vec<_>>()).unwrap();
        assert_eq!(t.quantile_inverse_cdf(0.7), 7.0);
    }

    #[test]
    fn qmax_range() {
        assert!(QMax::new(0.8).is_ok());
        assert!(QMax::new(0.999).is_ok());
        for bad in [0.79, 1.0, 1.5, f64::NAN, -0.9] {
            assert!(matches!(QMax::new(bad), Err(StatsError::BadQuantile(_))));
        }
        assert_eq!(QMax::default().get(), 0.99);
    }
}
