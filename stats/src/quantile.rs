//! Nonparametric confidence intervals of quantiles (seed 003 §3.1.3, after Le Boudec).
//!
//! For n independent measurements, the conf = 1 - a confidence interval of the q quantile runs
//! from the order statistic at rank
//!
//! lo = floor(n q - z sqrt(n q (1 - q)))   to the one at rank   hi = ceil(1 + n q + z sqrt(n q (1 - q))),
//!
//! z = z_(a/2) the standard normal quantile (1.96 for 95 %); ranks count from 1. For the median
//! (q = 1/2) these are seed 003's floor((n - z sqrt(n))/2) and ceil(1 + (n + z sqrt(n))/2).
//! The interval assumes nothing about the distribution, only independent, identically
//! distributed measurements. It exists only when both ranks fall within 1..=n: a 95 % interval
//! of the 0.99 quantile needs about n >= 560 values.
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
    fn median_matches_seed_003() {
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
