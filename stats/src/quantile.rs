//! Nonparametric confidence intervals of quantiles (Hoefler & Belli §3.1.3, after Le Boudec).
//!
//! For n independent measurements, the conf = 1 - a confidence interval of the q quantile runs
//! from the order statistic at rank
//!
//! lo = floor(n q - z sqrt(n q (1 - q)))   to the one at rank   hi = ceil(1 + n q + z sqrt(n q (1 - q))),
//!
//! z = z_(a/2) the standard normal quantile (1.96 for 95 %); ranks count from 1. For the median
//! (q = 1/2) these are Hoefler & Belli's floor((n - z sqrt(n))/2) and ceil(1 + (n + z sqrt(n))/2).
//! The interval assumes nothing about the distribution, only independent, identically
//! distributed measurements. It exists only when both ranks fall within 1..=n: a 95 % interval
//! of the 0.99 quantile needs about n >= 560 values.
//!
//! # Exact coverage, and the widest interval when the nominal one does not exist
//!
//! For a continuous distribution the number B of measurements below the true q quantile is
//! Binomial(n, q), and x_(lo) <= xi_q <= x_(hi) exactly when lo <= B <= hi - 1, so the
//! coverage of [x_(lo), x_(hi)] is
//!
//! P(lo <= B <= hi - 1) = 1 - P(B <= lo - 1) - P(B >= hi)            ([`order_stat_coverage`]).
//!
//! The calibration takes about 200 measurements, where no 95 % interval of the 0.99 quantile
//! exists: even the sample maximum lies below xi_0.99 with probability P(B = n) = 0.99^200 =
//! 13.4 %, more than the 2.5 % a two-sided 95 % interval allows on each side. Rather than no
//! interval at all, [`quantile_ci_with_coverage`] then gives the widest one the sample has,
//! from exact binomial ranks: the lower end is the highest order statistic x_(lo) with
//! P(B <= lo - 1) <= a/2 (the lower bound keeps its one-sided level 1 - a/2), the upper end the
//! lowest x_(hi) with P(B >= hi) <= a/2, or the sample maximum when none has (as here), and the
//! result carries its exact coverage (about 85 % at n = 200, q = 0.99) so that nobody mistakes
//! it for a 95 % interval. When these exact ranks do reach the level (for q = 0.99 from
//! n = 348, [`min_n_for_ci_with_coverage`], before the normal-approximation ranks exist at
//! n = 563) the interval is a genuine one, with unequal tails.
use serde::Serialize;

use crate::significance::binomial_sf;
use crate::special::normal_upper_quantile;

/// Ranks (lo, hi), from 1, of the order statistics that bound a `conf` confidence interval of
/// the `q` quantile of `n` values; None when q or conf is outside (0, 1) or the ranks fall
/// outside 1..=n (too few values for that quantile and level).
pub fn quantile_ci(n: usize, q: f64, conf: f64) -> Option<(usize, usize)> {
    if n == 0 || !(q > 0.0 && q < 1.0) || !(conf > 0.0 && conf < 1.0) {
        return None;
    }
    let z = normal_upper_quantile((1.0 - conf) / 2.0);
    let nf = n as f64;
    let half = z * (nf * q * (1.0 - q)).sqrt();
    let lo = (nf * q - half).floor();
    let hi = (1.0 + nf * q + half).ceil();
    if lo < 1.0 || hi > nf {
        return None;
    }
    Some((lo as usize, hi as usize))
}

/// Exact coverage of [x_(lo), x_(hi)] (ranks from 1) as a confidence interval of the q
/// quantile of a continuous distribution: P(lo <= B <= hi - 1), B ~ Binomial(n, q) (see the
/// module docs). None unless 1 <= lo <= hi <= n and 0 < q < 1.
pub fn order_stat_coverage(n: usize, lo: usize, hi: usize, q: f64) -> Option<f64> {
    if !(q > 0.0 && q < 1.0) || lo < 1 || lo > hi || hi > n {
        return None;
    }
    let n64 = n as u64;
    // P(B <= lo - 1) as the upper tail of n - B ~ Binomial(n, 1 - q), so that a tiny lower tail
    // keeps its digits instead of being 1 - (something close to 1).
    let below = binomial_sf((n - lo + 1) as u64, n64, 1.0 - q);
    let above = binomial_sf(hi as u64, n64, q);
    Some((1.0 - below - above).clamp(0.0, 1.0))
}

/// A confidence interval of a quantile as ranks of order statistics, with its exact coverage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QuantileCi {
    /// Rank (from 1) of the lower end.
    pub lo_rank: usize,
    /// Rank (from 1) of the upper end.
    pub hi_rank: usize,
    /// Exact coverage P(lo <= B <= hi - 1), B ~ Binomial(n, q).
    pub coverage: f64,
    /// True when this is an interval at the requested level: Hoefler & Belli's ranks
    /// ([`quantile_ci`]), or exact binomial ranks whose coverage reaches the level. False when
    /// the sample is too small for one and this is the widest interval it gives, with less
    /// coverage.
    pub nominal: bool,
}

/// The `conf` confidence interval of the `q` quantile of `n` values with its exact coverage:
/// Hoefler & Belli's ranks when they exist ([`quantile_ci`]), otherwise exact binomial ranks, each end
/// falling back to the sample's extreme when the binomial tail allows no order statistic
/// there (see the module docs). None when q or conf is outside (0, 1) or n < 2.
pub fn quantile_ci_with_coverage(n: usize, q: f64, conf: f64) -> Option<QuantileCi> {
    if n < 2 || !(q > 0.0 && q < 1.0) || !(conf > 0.0 && conf < 1.0) {
        return None;
    }
    if let Some((lo, hi)) = quantile_ci(n, q, conf) {
        let coverage = order_stat_coverage(n, lo, hi, q)?;
        return Some(QuantileCi {
            lo_rank: lo,
            hi_rank: hi,
            coverage,
            nominal: true,
        });
    }
    let half = (1.0 - conf) / 2.0;
    let n64 = n as u64;
    // P(B <= lo - 1) grows with lo and P(B >= hi) shrinks with hi: bisect for the highest lo
    // and the lowest hi whose tail is at most a/2 (log2 n tail evaluations each).
    let lower_tail = |lo: usize| binomial_sf((n - lo + 1) as u64, n64, 1.0 - q);
    let upper_tail = |hi: usize| binomial_sf(hi as u64, n64, q);
    let lo = last_true(n, |r| lower_tail(r) <= half).unwrap_or(1);
    let hi = last_true(n, |r| upper_tail(r) > half).map_or(1, |r| r + 1);
    let hi = if hi > n { n } else { hi };
    // An empty or inverted interval can only come from conf near 0; widen it to the ends.
    let (lo, hi) = if lo < hi { (lo, hi) } else { (1, n) };
    let coverage = order_stat_coverage(n, lo, hi, q)?;
    Some(QuantileCi {
        lo_rank: lo,
        hi_rank: hi,
        coverage,
        nominal: coverage >= conf,
    })
}

/// The smallest n for which [`quantile_ci_with_coverage`] gives an interval at level `conf`
/// (`nominal`). None for invalid q or conf, or beyond [`min_n_for_ci`]'s search.
///
/// No n below n1 = ln(1 - conf) / ln(q) qualifies: there P(B = n) = q^n > 1 - conf, so even an
/// interval reaching the sample maximum misses more often than allowed; the scan starts there
/// and ends at the latest at [`min_n_for_ci`], where Hoefler & Belli's ranks exist.
pub fn min_n_for_ci_with_coverage(q: f64, conf: f64) -> Option<usize> {
    if !(q > 0.0 && q < 1.0 && conf > 0.0 && conf < 1.0) {
        return None;
    }
    let last = min_n_for_ci(q, conf)?;
    let n1 = ((1.0 - conf).ln() / q.ln()).floor();
    let first = if n1.is_finite() && n1 >= 2.0 {
        (n1 as usize).min(last)
    } else {
        2
    };
    (first..=last)
        .find(|&n| quantile_ci_with_coverage(n, q, conf).is_some_and(|c| c.nominal))
        .or(Some(last))
}

/// The highest r in 1..=n with `pred(r)`, for a predicate that is true up to some rank and false
/// above it; None when it is false at 1.
fn last_true(n: usize, pred: impl Fn(usize) -> bool) -> Option<usize> {
    if n == 0 || !pred(1) {
        return None;
    }
    let (mut lo, mut hi) = (1usize, n + 1); // pred(lo) holds; pred(hi) fails or hi is past n
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// The shortest n for which [`quantile_ci`] exists (searched up to 10^9; None beyond).
pub fn min_n_for_ci(q: f64, conf: f64) -> Option<usize> {
    let ok = |n: usize| quantile_ci(n, q, conf).is_some();
    let mut hi = 1usize;
    while !ok(hi) {
        hi = hi.checked_mul(2)?;
        if hi > 1_000_000_000 {
            return None;
        }
    }
    // Existence is monotone in n beyond the first n that has it, up to rounding of the
    // ceil/floor; scan down linearly near the boundary to find the first.
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::significance::binomial_sf;

    #[test]
    fn median_matches_hoefler_and_belli() {
        let z = 1.959_963_984_540_054f64;
        for n in [8usize, 10, 31, 100, 1000, 12345] {
            let nf = n as f64;
            let lo = ((nf - z * nf.sqrt()) / 2.0).floor() as usize;
            let hi = (1.0 + (nf + z * nf.sqrt()) / 2.0).ceil() as usize;
            assert_eq!(quantile_ci(n, 0.5, 0.95), Some((lo, hi)), "n {n}");
        }
        // n = 100: (100 - 19.6)/2 = 40.2 and 1 + 119.6/2 = 60.8.
        assert_eq!(quantile_ci(100, 0.5, 0.95), Some((40, 61)));
    }

    #[test]
    fn too_small_or_invalid_gives_none() {
        assert_eq!(quantile_ci(0, 0.5, 0.95), None);
        assert_eq!(quantile_ci(3, 0.5, 0.95), None);
        assert_eq!(quantile_ci(200, 0.99, 0.95), None);
        assert!(quantile_ci(600, 0.99, 0.95).is_some());
        for bad in [0.0, 1.0, f64::NAN, -0.5] {
            assert_eq!(quantile_ci(100, bad, 0.95), None);
            assert_eq!(quantile_ci(100, 0.5, bad), None);
        }
    }

    #[test]
    fn min_n() {
        let m = min_n_for_ci(0.99, 0.95).unwrap();
        assert!((500..700).contains(&m), "{m}");
        assert!(quantile_ci(m, 0.99, 0.95).is_some());
        assert!(quantile_ci(m - 1, 0.99, 0.95).is_none());
        assert_eq!(min_n_for_ci(0.5, 0.95), Some(8));
        assert_eq!(quantile_ci(8, 0.5, 0.95), Some((1, 8)));
    }

    /// Binomial(n, k, p) by the textbook formula, for hand checks independent of binomial_sf.
    fn pmf(n: u64, k: u64, p: f64) -> f64 {
        let mut c = 1.0f64; // C(n, k) built up as a product
        for i in 0..k {
            c *= (n - i) as f64 / (i + 1) as f64;
        }
        c * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32)
    }

    #[test]
    fn coverage_by_hand() {
        // [x_(1), x_(200)] of the 0.99 quantile: misses only when all 200 values are below it
        // (0.99^200) or all above (0.01^200).
        let whole = order_stat_coverage(200, 1, 200, 0.99).unwrap();
        assert!((whole - (1.0 - 0.99f64.powi(200))).abs() < 1e-12, "{whole}");
        assert!((whole - 0.866).abs() < 5e-4, "{whole}");
        // The median's [x_(40), x_(61)] at n = 100: P(40 <= B <= 60), B ~ Bin(100, 1/2).
        let want: f64 = (40..=60).map(|k| pmf(100, k, 0.5)).sum();
        let got = order_stat_coverage(100, 40, 61, 0.5).unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        for (lo, hi, q) in [
            (0, 5, 0.5),
            (6, 5, 0.5),
            (1, 101, 0.5),
            (1, 5, 1.0),
            (1, 5, 0.0),
        ] {
            assert_eq!(order_stat_coverage(100, lo, hi, q), None);
        }
    }

    /// n = 200, q = 0.99, 95 %: Hoefler & Belli's ranks do not exist. The widest interval runs from the
    /// exact binomial lower rank to the maximum. A = n - B ~ Bin(200, 0.01) counts the values
    /// above the quantile: P(B <= 194) = P(A >= 6) = 0.0160 <= 0.025 < P(A >= 5) = 0.0517, so
    /// lo = 195, and the coverage is 1 - P(A >= 6) - P(A = 0) = 1 - 0.0160 - 0.99^200 = 0.850.
    #[test]
    fn widest_interval_at_n_200() {
        let p_a_ge = |k: u64| 1.0 - (0..k).map(|j| pmf(200, j, 0.01)).sum::<f64>();
        assert!(p_a_ge(6) <= 0.025 && p_a_ge(5) > 0.025);
        let ci = quantile_ci_with_coverage(200, 0.99, 0.95).unwrap();
        assert_eq!((ci.lo_rank, ci.hi_rank, ci.nominal), (195, 200, false));
        let want = 1.0 - p_a_ge(6) - 0.99f64.powi(200);
        assert!(
            (ci.coverage - want).abs() < 1e-10,
            "{} vs {want}",
            ci.coverage
        );
        assert!((ci.coverage - 0.850).abs() < 1e-3, "{}", ci.coverage);
        // Where Hoefler & Belli's ranks exist they are used, with their exact coverage.
        let ci = quantile_ci_with_coverage(1000, 0.99, 0.95).unwrap();
        let (lo, hi) = quantile_ci(1000, 0.99, 0.95).unwrap();
        assert_eq!((ci.lo_rank, ci.hi_rank, ci.nominal), (lo, hi, true));
        assert_eq!(
            ci.coverage,
            order_stat_coverage(1000, lo, hi, 0.99).unwrap()
        );
        // Between: exact binomial ranks reach 95 % once P(B = n) = 0.99^n <= 2.5 %, n >= 368.
        let ci = quantile_ci_with_coverage(400, 0.99, 0.95).unwrap();
        assert!(quantile_ci(400, 0.99, 0.95).is_none());
        assert!(
            ci.nominal && ci.coverage >= 0.95 && ci.hi_rank <= 400,
            "{ci:?}"
        );
        let ci = quantile_ci_with_coverage(300, 0.99, 0.95).unwrap();
        assert!(
            !ci.nominal && ci.coverage < 0.95 && ci.hi_rank == 300,
            "{ci:?}"
        );
        // Invalid input gives None, never a panic.
        assert_eq!(quantile_ci_with_coverage(1, 0.99, 0.95), None);
        assert_eq!(quantile_ci_with_coverage(200, 1.0, 0.95), None);
        assert_eq!(quantile_ci_with_coverage(200, 0.99, f64::NAN), None);
        // The first n with a 95 % interval of the 0.99 quantile: none below it.
        let m = min_n_for_ci_with_coverage(0.99, 0.95).unwrap();
        assert!((299..=400).contains(&m), "{m}");
        assert!(quantile_ci_with_coverage(m, 0.99, 0.95).unwrap().nominal);
        assert!((2..m).all(|n| !quantile_ci_with_coverage(n, 0.99, 0.95).unwrap().nominal));
        // Small n for the median: both ends fall back to the extremes.
        let ci = quantile_ci_with_coverage(5, 0.5, 0.95).unwrap();
        assert_eq!((ci.lo_rank, ci.hi_rank), (1, 5));
        assert!((ci.coverage - (1.0 - 2.0 / 32.0)).abs() < 1e-12);
    }

    /// The exact coverage of the interval [x_(lo), x_(hi)] for a continuous distribution is
    /// P(lo <= B <= hi - 1) with B ~ Binomial(n, q) the number of values below the true
    /// quantile. Check that the seed-003 ranks reach the nominal level.
    #[test]
    fn coverage_is_at_least_nominal() {
        for q in [0.5, 0.75, 0.9, 0.99] {
            let start = min_n_for_ci(q, 0.95).unwrap();
            let mut worst: f64 = 1.0;
            for n in (start..3000).step_by(7) {
                if let Some((lo, hi)) = quantile_ci(n, q, 0.95) {
                    let cov =
                        binomial_sf(lo as u64, n as u64, q) - binomial_sf(hi as u64, n as u64, q);
                    worst = worst.min(cov);
                }
            }
            assert!(worst >= 0.94, "q {q}: worst coverage {worst}");
        }
    }
}
