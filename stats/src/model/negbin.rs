//! The negative binomial in the class index (Johnson, Kemp & Kotz, *Univariate Discrete
//! Distributions*, 3rd ed. 2005, ch. 5):
//!
//! p_k = Gamma(k + r) / (Gamma(r) k!) (r / (r + m))^r (m / (r + m))^k,
//!
//! with mean m (classes) and size r > 0 (dimensionless); variance m + m^2 / r. It is the Poisson
//! whose rate varies from call to call as a gamma variable (an overdispersed Poisson, the first
//! thing to try when errors spread wider than Poisson's variance = mean allows); r = 1 is the
//! geometric distribution, i.e. the discretized exponential; r -> infinity is the Poisson.
//! Parameters, in this order: **[m (classes), r]**.
//!
//! # MLE
//!
//! For fixed r the score in m gives **m^ = k-bar** in closed form. With m = k-bar the profile
//! score in r is
//!
//! sum_k f_k (psi(k + r) - psi(r)) - N ln(1 + k-bar / r) = 0,
//!
//! (psi the digamma function) which has exactly one root when the sample variance (divisor N)
//! exceeds the mean and none otherwise (Aragón, Eberly & Eberly 1992, "Existence and uniqueness
//! of the maximum likelihood estimator for the two-parameter negative binomial distribution",
//! Statist. Probab. Lett. 15: 375-379). It is solved for ln r by Brent's method, starting from
//! the moment estimate r = k-bar^2 / (s^2 - k-bar). Without overdispersion the likelihood rises
//! towards the Poisson limit; r is then [`R_MAX`], a negative binomial indistinguishable from
//! the Poisson (variance within 0.1 % of the mean at m <= 100 classes), which the AIC never
//! prefers to the Poisson itself. psi(k + r) - psi(r) is summed as 1/r + ... + 1/(r + k - 1)
//! for small k, where the difference of two digammas would lose digits at large r.
//!
//! # Tail and quantile
//!
//! P(K >= k) = I_(m/(r+m))(k, r), the regularized incomplete beta function
//! ([`crate::special::beta_reg`], computed on its small side, so accurate far into the tail).
//! Its continuous extension I(y, r) in real y > 0 gives the continuous class quantile;
//! terr,max is that of a discrete model ([`super`]): the last timer tick of class k_q.
use statrs::function::gamma::{digamma, ln_gamma};

use super::optim::brent_root;
use crate::histogram::ErrorClasses;
use crate::special::beta_reg;

/// Largest size r: the Poisson limit (see the module docs).
pub const R_MAX: f64 = 1e5;
/// Smallest size r: a distribution with almost all its mass in class 0 and a tail decaying
/// more slowly than any geometric over the classes a sample reaches.
pub const R_MIN: f64 = 1e-4;

/// ln Gamma(k + r) - ln Gamma(r), as a sum of logs for small k (exact at any r).
fn ln_rising(r: f64, k: u64) -> f64 {
    if k <= 16 {
        (0..k).map(|j| (r + j as f64).ln()).sum()
    } else {
        ln_gamma(k as f64 + r) - ln_gamma(r)
    }
}

pub(super) fn ln_pmf(m: f64, r: f64, k: u64) -> f64 {
    let kf = k as f64;
    let tail = if k == 0 {
        0.0
    } else {
        ln_rising(r, k) - ln_gamma(kf + 1.0) - kf * (r / m).ln_1p()
    };
    tail - r * (m / r).ln_1p()
}

/// P[K >= y] for real y > 0 (the continuous extension; exact at integers).
pub(super) fn sf_ext(m: f64, r: f64, y: f64) -> f64 {
    if y <= 0.0 {
        return 1.0;
    }
    beta_reg(y, r, m / (r + m), r / (r + m))
}

pub(super) fn sf(m: f64, r: f64, k: u64) -> f64 {
    sf_ext(m, r, k as f64)
}

/// psi(k + r) - psi(r).
fn digamma_diff(r: f64, k: u64) -> f64 {
    if k <= 16 {
        (0..k).map(|j| 1.0 / (r + j as f64)).sum()
    } else {
        digamma(k as f64 + r) - digamma(r)
    }
}

/// The MLE (m, r); None when k-bar is not positive.
pub(super) fn mle(h: &ErrorClasses) -> Option<(f64, f64)> {
    let n = h.n() as f64;
    let m = h.mean_class();
    if !(m > 0.0 && m.is_finite()) {
        return None;
    }
    let occ = h.occupied();
    let var = occ
        .iter()
        .map(|&(k, c)| c as f64 * (k as f64 - m).powi(2))
        .sum::<f64>()
        / n;
    if var <= m * (1.0 + 1e-9) {
        return Some((m, R_MAX));
    }
    let score = |t: f64| {
        let r = t.exp();
        let s: f64 = occ
            .iter()
            .filter(|&&(k, _)| k > 0)
            .map(|&(k, c)| c as f64 * digamma_diff(r, k))
            .sum();
        s - n * (m / r).ln_1p()
    };
    // The score is positive below the root and negative above it.
    let (t_min, t_max) = (R_MIN.ln(), R_MAX.ln());
    let t0 = (m * m / (var - m)).clamp(R_MIN, R_MAX).ln();
    let (mut lo, mut hi) = ((t0 - 0.5).max(t_min), (t0 + 0.5).min(t_max));
    while score(lo) < 0.0 {
        if lo <= t_min {
            return Some((m, R_MIN));
        }
        hi = lo;
        lo = (lo - 2.0).max(t_min);
    }
    while score(hi) > 0.0 {
        if hi >= t_max {
            return Some((m, R_MAX));
        }
        lo = hi;
        hi = (hi + 2.0).min(t_max);
    }
    let t = brent_root(score, lo, hi, 1e-10, 100);
    Some((m, t.exp().clamp(R_MIN, R_MAX)))
}
