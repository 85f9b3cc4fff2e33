//! The discretized log-normal error: ln e ~ N(mu, sigma^2), e in seconds, cut into the classes
//! like the exponential (the overhead paper eq. 5):
//!
//! p_k = F((k + 1) w) - F(k w),  F(x) = Phi((ln x - mu) / sigma),  p_0 = F(w).
//!
//! Run-times pile up a little above their floor and thin out slowly: the log-normal has a mode
//! above class 0 and a tail heavier than any geometric (Johnson, Kotz & Balakrishnan,
//! *Continuous Univariate Distributions* vol. 1, 2nd ed. 1994, ch. 14). Parameters, in this
//! order: **[median = e^mu (seconds), sigma (dimensionless)]**.
//!
//! # MLE
//!
//! The binned likelihood sum_k f_k ln p_k has no closed form (the normal CDF at the class
//! boundaries). It is maximized by Nelder-Mead over (mu, ln sigma) (the crate's own small optimizer), from
//! the moments of ln((k + 1/2) w) over the sample (the continuous MLE on the class midpoints),
//! until the simplex's values agree to 1e-8 of ln L, with at most [`MAX_EVALS`]
//! evaluations, each one pass over the occupied classes.
//! sigma is kept within [[`SIGMA_MIN`], [`SIGMA_MAX`]].
//!
//! # Tail and quantile
//!
//! P(K >= k) = Q((ln(k w) - mu) / sigma) with Q = erfc(./sqrt 2)/2, accurate far into the tail;
//! a class probability is the difference of two upper tails above the median and of two lower
//! tails below it, so neither side cancels. As for the exponential, the q quantile of the binned
//! continuous model is the continuous one, independent of w: terr,max = median e^(sigma z_q),
//! z_q = Phi^-1(q).
use super::optim::nelder_mead;
use crate::histogram::ErrorClasses;
use crate::sample::QMax;
use crate::special::{normal_sf, normal_upper_quantile};

/// Narrowest sigma (a class-width spike far above 0 is no run-time distribution).
pub const SIGMA_MIN: f64 = 1e-3;
/// Widest sigma: e^(sigma z) stays finite for every q_max < 1 - 1e-16.
pub const SIGMA_MAX: f64 = 20.0;
/// Cap on the likelihood evaluations of one fit.
pub const MAX_EVALS: usize = 240;

/// z of the class boundary k w (-infinity for k = 0).
fn z(mu: f64, sigma: f64, width_s: f64, k: u64) -> f64 {
    if k == 0 {
        f64::NEG_INFINITY
    } else {
        ((k as f64 * width_s).ln() - mu) / sigma
    }
}

/// P(a <= Z < b) for a standard normal Z, from the side where both tails are small.
fn normal_interval(a: f64, b: f64) -> f64 {
    if a >= 0.0 {
        normal_sf(a) - normal_sf(b)
    } else {
        normal_sf(-b) - normal_sf(-a)
    }
}

/// ln p_k with p_k from the boundaries' z values; an underflowed class is MIN_POSITIVE, so that
/// a likelihood stays finite (and very low).
fn ln_interval(a: f64, b: f64) -> f64 {
    normal_interval(a, b).max(f64::MIN_POSITIVE).ln()
}

pub(super) fn ln_pmf(median_s: f64, sigma: f64, width_s: f64, k: u64) -> f64 {
    let mu = median_s.ln();
    ln_interval(z(mu, sigma, width_s, k), z(mu, sigma, width_s, k + 1))
}

pub(super) fn sf(median_s: f64, sigma: f64, width_s: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    normal_sf(z(median_s.ln(), sigma, width_s, k))
}

/// The q quantile of the continuous error, median e^(sigma z_q).
pub(super) fn quantile_s(median_s: f64, sigma: f64, q: QMax) -> f64 {
    median_s * (sigma * normal_upper_quantile(1.0 - q.get())).exp()
}

/// E[K] = sum_(k >= 1) P(e >= k w), by Euler-Maclaurin E[e] / w - 1/2 (exact up to terms in
/// the density's derivative, small when the density varies slowly over a class).
pub(super) fn mean_class(median_s: f64, sigma: f64, width_s: f64) -> f64 {
    (mean_error_s(median_s, sigma) / width_s - 0.5).max(0.0)
}

pub(super) fn mean_error_s(median_s: f64, sigma: f64) -> f64 {
    median_s * (0.5 * sigma * sigma).exp()
}

/// The MLE (median_s, sigma).
pub(super) fn mle(h: &ErrorClasses) -> Option<(f64, f64)> {
    let w = h.width_s();
    let n = h.n() as f64;
    // (count, ln of the lower and upper boundary) per occupied class.
    let cls: Vec<(f64, f64, f64)> = h
        .occupied()
        .iter()
        .map(|&(k, c)| {
            let lo = if k == 0 {
                f64::NEG_INFINITY
            } else {
                (k as f64 * w).ln()
            };
            (c as f64, lo, ((k + 1) as f64 * w).ln())
        })
        .collect();
    let mid = |&(_, lo, hi): &(f64, f64, f64)| {
        if lo.is_finite() {
            0.5 * (lo + hi) // ln of the geometric midpoint: close enough for a start
        } else {
            hi - std::f64::consts::LN_2
        }
    };
    let mu0 = cls.iter().map(|c| c.0 * mid(c)).sum::<f64>() / n;
    let var0 = cls
        .iter()
        .map(|c| c.0 * (mid(c) - mu0).powi(2))
        .sum::<f64>()
        / n;
    let s0 = var0.sqrt().clamp(0.05, SIGMA_MAX / 2.0);
    let (ls_min, ls_max) = (SIGMA_MIN.ln(), SIGMA_MAX.ln());
    let neg_ll = |x: &[f64; 2]| {
        if !(x[1] >= ls_min && x[1] <= ls_max) {
            return f64::INFINITY;
        }
        let (mu, s) = (x[0], x[1].exp());
        -cls.iter()
            .map(|&(c, lo, hi)| c * ln_interval((lo - mu) / s, (hi - mu) / s))
            .sum::<f64>()
    };
    // Stop when the simplex's values agree to 1e-8 of ln L (1e-5 at N = 400): far below what
    // moves a chi-square or a BIC, and below the change a 1 % move of a parameter makes.
    let start = [mu0, s0.ln()];
    let ftol = 1e-8 * neg_ll(&start).abs().clamp(1.0, 1e300);
    let (x, v) = nelder_mead(neg_ll, start, [0.3 * s0, 0.3], ftol, MAX_EVALS);
    let (median, sigma) = (x[0].exp(), x[1].exp());
    (v.is_finite() && median > 0.0 && median.is_finite()).then_some((median, sigma))
}
