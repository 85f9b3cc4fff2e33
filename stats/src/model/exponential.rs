//! The discretized exponential (the overhead paper eq. 4-6): p_k = rho^k (1 - rho) with
//! rho = e^(-lambda w), lambda in 1/s. The closed-form MLE is rho^ = k-bar / (1 + k-bar)
//! (see [`super`]).
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
