//! Body plus tail: a two-component mixture of a Poisson body and a geometric tail (the
//! discretized exponential of the overhead paper eq. 6) in the class index,
//!
//! p_k = (1 - pi) lambda^k e^(-lambda) / k!  +  pi rho^k (1 - rho),   rho = e^(-lambda_t w).
//!
//! Most calls of an undisturbed MPI operation take a few classes above the fastest one (the
//! body, Poisson as in §5 of the overhead paper); a fraction pi is slowed down by something
//! that strikes at random and lasts a random time (an interrupt, a cache or TLB refill, a
//! progress-engine pass), which gives a longer, exponential tail. Neither model alone fits such
//! a sample: the Poisson has no tail, the geometric no body. Parameters, in this order:
//! **[lambda (body mean, classes), lambda_t (tail rate, 1/s, as the exponential model's
//! lambda), pi (tail weight, the fraction of errors in the tail, 0 < pi < 1)]**, 3 in all.
//!
//! # MLE by EM
//!
//! The likelihood has no closed-form maximum, but each component's does (§6 of the overhead
//! paper), which is what the EM algorithm needs (Dempster, Laird & Rubin 1977, "Maximum
//! likelihood from incomplete data via the EM algorithm", J. R. Statist. Soc. B 39: 1-38;
//! McLachlan & Peel, *Finite Mixture Models*, 2000, ch. 2). With t_k the probability that an
//! error of class k belongs to the tail under the current parameters (E step), the M step is
//!
//! pi = sum f_k t_k / N,  lambda = sum f_k (1 - t_k) k / sum f_k (1 - t_k),
//! m_t = sum f_k t_k k / sum f_k t_k,  rho = m_t / (1 + m_t),
//!
//! the Poisson and geometric MLEs on weighted counts. Every step raises the likelihood; the
//! iteration stops when a step raises it by less than 1e-9 or after [`MAX_ITERS`] steps, each
//! one pass over the occupied classes. The start puts the body at the sample's median class and
//! a tenth of the errors in a tail of mean 2 k-bar + 1, so that the tail begins wider than
//! the body.
//!
//! # Tail and quantile
//!
//! P(K >= k) = (1 - pi) P(k, lambda) + pi rho^k (P the regularized lower incomplete gamma
//! function, as for the Poisson model), accurate far into the tail, and its continuous
//! extension in real k gives the continuous class quantile; terr,max is that of a discrete
//! model ([`super`]).
use statrs::function::gamma::ln_gamma;

use super::{exponential, poisson};
use crate::histogram::Histogram;

/// Cap on the EM steps of one fit.
pub const MAX_ITERS: usize = 500;

/// Weights and parameters are kept this far inside their domain, where a component that EM
/// empties would otherwise leave 0 or a division by 0.
const EPS: f64 = 1e-12;

fn ln_add_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp()).ln()
}

pub(super) fn ln_pmf(lambda: f64, tail_lambda: f64, pi: f64, width_s: f64, k: u64) -> f64 {
    ln_add_exp(
        (-pi).ln_1p() + poisson::ln_pmf(lambda, k),
        pi.ln() + exponential::ln_pmf(tail_lambda, width_s, k),
    )
}

pub(super) fn sf(lambda: f64, tail_lambda: f64, pi: f64, width_s: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    ((1.0 - pi) * poisson::sf(lambda, k) + pi * exponential::sf(tail_lambda, width_s, k))
        .clamp(0.0, 1.0)
}

pub(super) fn sf_ext(lambda: f64, tail_lambda: f64, pi: f64, width_s: f64, y: f64) -> f64 {
    ((1.0 - pi) * poisson::sf_ext(lambda, y) + pi * exponential::sf_ext(tail_lambda, width_s, y))
        .clamp(0.0, 1.0)
}

pub(super) fn mean_class(lambda: f64, tail_lambda: f64, pi: f64, width_s: f64) -> f64 {
    (1.0 - pi) * lambda + pi * exponential::mean_class(tail_lambda, width_s)
}

pub(super) fn mean_error_s(lambda: f64, tail_lambda: f64, pi: f64, width_s: f64) -> f64 {
    (1.0 - pi) * lambda * width_s + pi / tail_lambda
}

/// One E step: the log-likelihood of (lambda, rho, pi) and the tail's weighted count and
/// class sum.
fn e_step(cls: &[(f64, f64, f64)], lambda: f64, rho: f64, pi: f64) -> (f64, f64, f64) {
    let (ll_b, ll_t) = ((-pi).ln_1p() - lambda, pi.ln() + (-rho).ln_1p());
    let (ln_l, ln_rho) = (lambda.ln(), rho.ln());
    let (mut ll, mut wt, mut st) = (0.0, 0.0, 0.0);
    for &(k, c, ln_fact) in cls {
        let b = ll_b + k * ln_l - ln_fact;
        let t = ll_t + k * ln_rho;
        let m = b.max(t);
        let (eb, et) = ((b - m).exp(), (t - m).exp());
        let s = eb + et;
        ll += c * (m + s.ln());
        let resp = c * et / s;
        wt += resp;
        st += resp * k;
    }
    (ll, wt, st)
}

/// The MLE (lambda, lambda_t, pi) by EM (see the module docs).
pub(super) fn mle(h: &Histogram) -> Option<(f64, f64, f64)> {
    let w = h.width_s();
    let n = h.n() as f64;
    let kbar = h.mean_class();
    if !(kbar > 0.0 && kbar.is_finite()) {
        return None;
    }
    let total = kbar * n;
    let cls: Vec<(f64, f64, f64)> = h
        .occupied()
        .iter()
        .map(|&(k, c)| (k as f64, c as f64, ln_gamma(k as f64 + 1.0)))
        .collect();
    // The median class: the first whose cumulative count reaches N / 2.
    let mut cum = 0.0;
    let median = cls
        .iter()
        .find(|&&(_, c, _)| {
            cum += c;
            cum >= 0.5 * n
        })
        .map_or(kbar, |&(k, _, _)| k);
    let mut lambda = median.max(0.5);
    let mut m_t = 2.0 * kbar + 1.0;
    let mut pi = 0.1;
    let mut ll_old = f64::NEG_INFINITY;
    let mut best = (lambda, m_t, pi);
    for _ in 0..MAX_ITERS {
        let rho = m_t / (1.0 + m_t);
        let (ll, wt, st) = e_step(&cls, lambda, rho, pi);
        if !(ll > ll_old) {
            break; // a rounding-level decrease (or NaN): keep the last good point
        }
        best = (lambda, m_t, pi);
        if ll - ll_old < 1e-9 {
            break;
        }
        ll_old = ll;
        let (wb, sb) = (n - wt, total - st);
        pi = (wt / n).clamp(EPS, 1.0 - EPS);
        if wb > EPS * n {
            lambda = (sb / wb).max(EPS);
        }
        if wt > EPS * n {
            m_t = (st / wt).max(EPS);
        }
    }
    let (lambda, m_t, pi) = best;
    let tail_lambda = (1.0 / m_t).ln_1p() / w;
    (lambda.is_finite() && tail_lambda.is_finite() && tail_lambda > 0.0)
        .then_some((lambda, tail_lambda, pi))
}
