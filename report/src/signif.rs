//! The significance test of a site: are its calls over tmax more than the
//! (1 - q_max) share expected by chance?
//!
//! Under the calibration, a call of an undisturbed site exceeds tmax with
//! probability `1 - q_max`. With `n` calls of which `k` exceed tmax, the
//! one-sided p-value is `P(X >= k)` for `X ~ Binomial(n, 1 - q_max)`. Sites are
//! then tested together with Benjamini-Hochberg at false discovery rate alpha.
//! The distributions come from the statistical core (`mpiover-stats`).

/// One-sided binomial p-value: P(X >= k) for X ~ Binomial(n, p).
pub fn binomial_upper_tail(k: u64, n: u64, p: f64) -> f64 {
    mpiover_stats::binomial_sf(k, n, p)
}

/// Benjamini-Hochberg adjusted p-values (q-values), in the input order: a
/// hypothesis is rejected at false discovery rate alpha when its q-value is
/// at most alpha.
pub fn bh_adjust(pvalues: &[f64]) -> Vec<f64> {
    mpiover_stats::benjamini_hochberg_adjusted(pvalues)
}

/// The smallest number of calls at which the test can reject at all: with
/// fewer, even every call over tmax gives a p-value above alpha.
pub fn min_calls(q_max: f64, alpha: f64) -> u64 {
    let p0 = 1.0 - q_max;
    if p0 <= 0.0 {
        return 1;
    }
    if p0 >= 1.0 {
        return u64::MAX;
    }
    // p0^n <= alpha  <=>  n >= ln(alpha) / ln(p0)
    (alpha.ln() / p0.ln()).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_tail_known_value() {
        // P(X >= 3 | 10, 0.1) = 0.0701908264
        assert!((binomial_upper_tail(3, 10, 0.1) - 0.070_190_826_4).abs() < 1e-9);
        assert_eq!(binomial_upper_tail(0, 10, 0.1), 1.0);
    }

    /// Regression: a local implementation asserted a tail above 1 - 1e-20,
    /// which double precision cannot represent; the tail of 1e7 calls must be
    /// ~0.5 at the mean and tiny 10 sd above it.
    #[test]
    fn binomial_tail_for_many_calls() {
        let n = 10_000_000;
        let mid = binomial_upper_tail(1_000_000, n, 0.1);
        assert!((mid - 0.5).abs() < 0.01, "{mid}");
        assert!(binomial_upper_tail(1_010_000, n, 0.1) < 1e-20);
        assert!(binomial_upper_tail(990_000, n, 0.1) > 1.0 - 1e-12);
    }

    #[test]
    fn bh_matches_a_worked_example() {
        let p = [0.01, 0.04, 0.03, 0.005, 0.5];
        let q = bh_adjust(&p);
        let want = [0.025, 0.05, 0.05, 0.025, 0.5];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
    }

    #[test]
    fn min_calls_for_q_09() {
        assert_eq!(min_calls(0.9, 0.05), 2);
        assert_eq!(min_calls(0.5, 0.05), 5);
        assert!(binomial_upper_tail(5, 5, 0.5) <= 0.05);
        assert!(binomial_upper_tail(4, 4, 0.5) > 0.05);
    }
}
