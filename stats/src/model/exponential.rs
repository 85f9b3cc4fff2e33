//! The discretized exponential (the overhead paper eq. 4-6).
//!
//! Cutting the exponential density lambda e^(-lambda x) into windows of width w gives
//! p_k = F((k+1) w) - F(k w) = e^(-lambda k w) (1 - e^(-lambda w)), lambda in **1/seconds**.
//! With rho = e^(-lambda w) this is the geometric distribution p_k = rho^k (1 - rho), so
//! ln L = sum_k f_k (k ln rho + ln(1 - rho)) = S ln rho + N ln(1 - rho), concave in rho, and
//! d ln L / d rho = S / rho - N / (1 - rho) = 0 gives the closed form
//!
//! **rho^ = k-bar / (1 + k-bar), lambda^ = -ln(rho^) / w = ln(1 + 1/k-bar) / w.**
//!
//! (The geometric mean rho/(1 - rho) equals k-bar: as for the Poisson model, the MLE matches the
//! mean class.) Both estimators need k-bar > 0, which [`crate::ErrorClasses::new`] guarantees.

use crate::sample::QMax;

pub(super) fn ln_pmf(lambda: f64, width_s: f64, k: u64) -> f64 {
    -lambda * width_s * k as f64 + (-(-lambda * width_s).exp_m1()).ln()
}

/// P[K >= k] = rho^k.
pub(super) fn sf(lambda: f64, width_s: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    (-lambda * width_s * k as f64).exp()
}

/// rho^y for real y, the continuous extension of [`sf`].
pub(super) fn sf_ext(lambda: f64, width_s: f64, y: f64) -> f64 {
    (-lambda * width_s * y).exp()
}

pub(super) fn mean_class(lambda: f64, width_s: f64) -> f64 {
    let rho = (-lambda * width_s).exp();
    rho / -(-lambda * width_s).exp_m1()
}

/// 1 - rho^(k+1) >= q  <=>  k + 1 >= -ln(1 - q) / (lambda w).
pub(super) fn class_quantile(lambda: f64, width_s: f64, q: QMax) -> u64 {
    let x = quantile_s(lambda, q) / width_s;
    let k = (x * (1.0 - 1e-12)).ceil() - 1.0;
    k.clamp(0.0, crate::histogram::MAX_CLASS as f64) as u64
}

/// The q quantile of the continuous error, -ln(1 - q) / lambda.
pub(super) fn quantile_s(lambda: f64, q: QMax) -> f64 {
    -(-q.get()).ln_1p() / lambda
}
