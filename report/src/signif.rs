//! The significance test of a site: are its calls over tmax more than the
//! share expected by chance?
//!
//! A call of an undisturbed site exceeds tmax with probability 1 - q_max only
//! if tmax were known exactly. It is an estimate from n calibration samples,
//! so the chance is itself random: Beta(a, b) around 1 - q_max (for the
//! calibration's default n = 200 at q_max = 0.99, a clean site's share of
//! calls over tmax lies anywhere between 0.3 % and 3.5 %). With `n` calls of
//! which `k` exceed tmax, the one-sided p-value is `P(X >= k)` for
//! `X ~ BetaBinomial(n, a, b)` when the profile says how its tmax was
//! estimated ([`Null::Calibrated`]), else for `X ~ Binomial(n, 1 - q_max)`
//! ([`Null::Exact`], records without that information). Sites are then tested
//! together with Benjamini-Hochberg at false discovery rate alpha. The
//! distributions and the derivation are in `mpiover_stats::significance`.

use mpiover_common::profile::Basis;
use mpiover_stats::ExceedancePrior;

/// What "by chance" means for one site.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Null {
    /// tmax taken as exact: each call exceeds it with probability p.
    Exact(f64),
    /// tmax estimated from calibration samples: the chance is Beta-distributed.
    Calibrated(ExceedancePrior),
}

impl Null {
    /// The null of a site whose least certain tmax has `basis`, at `q_max`.
    pub fn new(q_max: f64, basis: Option<Basis>) -> Null {
        basis
            .and_then(|b| {
                if b.fitted {
                    ExceedancePrior::from_model(b.n, q_max)
                } else {
                    ExceedancePrior::from_calibration(b.n, q_max)
                }
            })
            .map_or(Null::Exact(1.0 - q_max), Null::Calibrated)
    }

    /// One-sided p-value P(X >= k) among n calls.
    pub fn p_value(&self, k: u64, n: u64) -> f64 {
        match self {
            Null::Exact(p) => binomial_upper_tail(k, n, *p),
            Null::Calibrated(prior) => prior.sf(k, n),
        }
    }

    /// Expected share of calls over tmax.
    pub fn expected_share(&self) -> f64 {
        match self {
            Null::Exact(p) => *p,
            Null::Calibrated(prior) => prior.mean(),
        }
    }

    /// The smallest number of calls at which the test can reject at all: with
    /// fewer, even every call over tmax gives a p-value above alpha.
    pub fn min_calls(&self, alpha: f64) -> u64 {
        match self {
            Null::Exact(p) => min_calls(1.0 - p, alpha),
            Null::Calibrated(prior) => {
                // P(X = n | n) = prod_{i < n} (a + i) / (a + b + i), decreasing in n.
                let (a, b) = prior.params();
                let mut all = 1.0f64;
                for n in 1..=1_000_000u64 {
                    let i = (n - 1) as f64;
                    all *= (a + i) / (a + b + i);
                    if all <= alpha {
                        return n;
                    }
                }
                u64::MAX
            }
        }
    }
}

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
    fn null_follows_the_basis() {
        assert_eq!(Null::new(0.99, None), Null::Exact(1.0 - 0.99));
        let emp = Null::new(0.99, Some(Basis::new(200, false)));
        let fit = Null::new(0.99, Some(Basis::new(200, true)));
        assert!((emp.expected_share() - 3.0 / 201.0).abs() < 1e-12);
        assert!((fit.expected_share() - 0.01).abs() < 1e-9);
        // 33 of 2000 calls over tmax: chance for a 200-sample calibration,
        // not for an exact tmax.
        assert!(Null::Exact(0.01).p_value(33, 2000) < 0.01);
        assert!(emp.p_value(33, 2000) > 0.2);
        // Every call over tmax: the beta-binomial needs as few calls as the
        // binomial at q = 0.99 (one), more at q = 0.5.
        for (null, alpha) in [(emp, 0.05), (fit, 0.05), (Null::Exact(0.5), 0.05)] {
            let m = null.min_calls(alpha);
            assert!(null.p_value(m, m) <= alpha, "{null:?}");
            assert!(m == 1 || null.p_value(m - 1, m - 1) > alpha, "{null:?}");
        }
        let half = Null::new(0.5, Some(Basis::new(200, false)));
        assert!(half.min_calls(0.05) >= min_calls(0.5, 0.05));
    }

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
