//! Poisson in the class index (the overhead paper eq. 3).
//!
//! p_k = lambda^k e^(-lambda) / k!, lambda in **classes**. With f_k errors in class k, N in
//! total and S = sum_i k_i, the log-likelihood of eq. 7 is
//! ln L = sum_k f_k (k ln lambda - lambda - ln k!) = S ln lambda - N lambda - const, and
//! d ln L / d lambda = S / lambda - N = 0 gives the closed form
//!
//! **lambda^ = S / N = k-bar**, the mean class.

use statrs::function::gamma::{checked_gamma_lr, gamma_lr, ln_gamma};

use crate::sample::QMax;
use crate::special::normal_sf;

/// Mean (classes) above which the tails are the normal approximation's.
/// The regularized gamma function's series needs more terms the larger
/// lambda: at 6e13 classes (a sample holding a run-time of 1e308 s) one fit
/// took 4 s in it, and lambda goes up to the histogram's 2^52 classes. Above
/// 1e8 the approximation's error, of the order of the skewness
/// 1 / sqrt(lambda) = 1e-4, is below what a chi-square test on a sample of
/// calls can see.
const NORMAL_ABOVE: f64 = 1e8;

/// P[K >= y] by the normal approximation with continuity correction.
fn normal_tail(lambda: f64, y: f64) -> f64 {
    normal_sf((y - 0.5 - lambda) / lambda.sqrt())
}

pub(super) fn ln_pmf(lambda: f64, k: u64) -> f64 {
    let kf = k as f64;
    kf * lambda.ln() - lambda - ln_gamma(kf + 1.0)
}

/// P[K >= k] = P[Gamma(k) <= lambda] = P(k, lambda), the regularized lower gamma function.
pub(super) fn sf(lambda: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if lambda > NORMAL_ABOVE {
        return normal_tail(lambda, k as f64);
    }
    gamma_lr(k as f64, lambda).clamp(0.0, 1.0)
}

/// The continuous extension of P[K >= y], y > 0: P(y, lambda), equal to [`sf`] at integers.
/// checked_: an invalid evaluation counts as 0, which only moves a bisection down.
pub(super) fn sf_ext(lambda: f64, y: f64) -> f64 {
    if lambda > NORMAL_ABOVE {
        return normal_tail(lambda, y);
    }
    checked_gamma_lr(y, lambda).map_or(0.0, |p| p.clamp(0.0, 1.0))
}

/// k_q = min{k : P(K <= k) >= q}.
pub(super) fn class_quantile(lambda: f64, q: QMax) -> u64 {
    let q = q.get();
    // P[K <= k] = 1 - P(k + 1, lambda) is increasing in k: bisect on
    // [0, lambda + 40 sqrt(lambda) + 60], far beyond any q < 1 - 1e-16.
    let cdf = |k: u64| 1.0 - sf(lambda, k + 1);
    let (mut lo, mut hi) = (0u64, (lambda + 40.0 * lambda.sqrt() + 60.0) as u64);
    if cdf(lo) >= q {
        return 0;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if cdf(mid) >= q {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// x_q with F(x_q) = q for F(x) = Q(x + 1, lambda) (see [`super::Model::class_quantile_continuous`]).
pub(super) fn class_quantile_continuous(lambda: f64, q: QMax) -> f64 {
    let q = q.get();
    let cdf = |x: f64| match lambda > NORMAL_ABOVE {
        true => 1.0 - normal_tail(lambda, x + 1.0),
        false => checked_gamma_lr(x + 1.0, lambda).map_or(0.0, |p| 1.0 - p),
    };
    let (mut lo, mut hi) = (-1.0f64, lambda + 40.0 * lambda.sqrt() + 60.0);
    // 80 halvings bring a bracket of up to ~1e13 classes below 1e-10 classes.
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) >= q {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
