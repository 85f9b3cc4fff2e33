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
//! the Poisson and geometric MLEs on weighted counts. Every step raises the likelihood, but
//! slowly when the components overlap or one of them empties, so the steps are accelerated by
//! SQUAREM (Varadhan & Roland 2008), on the unconstrained scale (ln lambda, ln m_t, logit pi);
//! the iteration stops when a cycle raises ln L by less than 1e-9 of itself (1e-6 at
//! N = 400, far below what moves a chi-square or a BIC), or after [`MAX_ITERS`]
//! E steps, each one pass over the occupied classes. The start puts the body at the median
//! class and a tenth of the errors in a tail of mean 2 k-bar + 1, wider than the body. (A
//! second start, 30 % of the errors in a tail of mean 4 k-bar + 1 above a body at the lower
//! quartile, changed no accepted/rejected verdict on 600 samples of the mixture itself and
//! doubled the cost, so one start is used.)
//!
//! # Tail and quantile
//!
//! P(K >= k) = (1 - pi) P(k, lambda) + pi rho^k (P the regularized lower incomplete gamma
//! function, as for the Poisson model), accurate far into the tail, and its continuous
//! extension in real k gives the continuous class quantile; terr,max is that of a discrete
//! model ([`super`]).
use statrs::function::gamma::ln_gamma;

use super::{exponential, poisson};
use crate::histogram::ErrorClasses;

/// Cap on the E steps of one run of EM (one of the two starts).
pub const MAX_ITERS: usize = 300;

/// Weights are kept this far inside (0, 1), where a component that EM empties would otherwise
/// leave 0 or a division by 0.
const EPS: f64 = 1e-12;
/// Smallest mean class of either component. A component this narrow is a point mass on
/// class 0 (Poisson(1e-3) puts 0.999 there): EM on a sample with extra errors in class 0
/// drives one mean towards 0, converging ever more slowly on the log scale without changing
/// the fit, so it stops here.
const MIN_MEAN: f64 = 1e-3;

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

/// One E step at (lambda, m_t, pi) (m_t the tail's mean class, rho = m_t / (1 + m_t)): the
/// log-likelihood there, and the M step's new parameters.
fn em_step(cls: &[(f64, f64, f64)], n: f64, total: f64, th: Theta) -> (f64, Theta) {
    let (lambda, m_t, pi) = th.natural();
    let rho = m_t / (1.0 + m_t);
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
    let (wb, sb) = (n - wt, total - st);
    let pi = (wt / n).clamp(EPS, 1.0 - EPS);
    // An emptied component keeps its parameter (it no longer affects the likelihood).
    let lambda = if wb > EPS * n {
        (sb / wb).max(EPS)
    } else {
        lambda
    };
    let m_t = if wt > EPS * n {
        (st / wt).max(EPS)
    } else {
        m_t
    };
    (ll, Theta::new(lambda, m_t, pi))
}

/// The parameters on an unconstrained scale (ln lambda, ln m_t, logit pi), where SQUAREM's
/// extrapolation cannot leave the domain.
#[derive(Clone, Copy, Debug)]
struct Theta([f64; 3]);

impl Theta {
    fn new(lambda: f64, m_t: f64, pi: f64) -> Theta {
        Theta([lambda.ln(), m_t.ln(), (pi / (1.0 - pi)).ln()])
    }
    fn natural(self) -> (f64, f64, f64) {
        let [a, b, c] = self.0;
        let pi = (1.0 / (1.0 + (-c).exp())).clamp(EPS, 1.0 - EPS);
        (a.exp().max(MIN_MEAN), b.exp().max(MIN_MEAN), pi)
    }
}

/// EM from `start`, accelerated by SQUAREM (Varadhan & Roland 2008, "Simple and globally
/// convergent methods for accelerating the convergence of any EM algorithm", Scand. J.
/// Statist. 35: 335-353, scheme S3; the step length is halved towards plain EM while the
/// extrapolated point lowers the likelihood, so the likelihoods never decrease). Stops when a
/// cycle raises ln L by less than 1e-9 of itself, or after `MAX_ITERS` E steps. Returns the best point
/// and its ln L.
fn squarem(cls: &[(f64, f64, f64)], n: f64, total: f64, start: Theta) -> (Theta, f64) {
    let sub = |a: Theta, b: Theta| [a.0[0] - b.0[0], a.0[1] - b.0[1], a.0[2] - b.0[2]];
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let (mut th, mut best, mut best_ll) = (start, start, f64::NEG_INFINITY);
    let mut steps = 0;
    while steps + 3 <= MAX_ITERS {
        let (ll0, th1) = em_step(cls, n, total, th);
        let (ll1, th2) = em_step(cls, n, total, th1);
        steps += 2;
        let prev = best_ll;
        for (l, t) in [(ll0, th), (ll1, th1)] {
            if l > best_ll {
                (best, best_ll) = (t, l);
            }
        }
        let r = sub(th1, th);
        let v = sub(Theta(sub(th2, th1)), Theta(r));
        let (nr, nv) = (norm(r), norm(v));
        let mut next = th2;
        if nv > 0.0 && nr.is_finite() && nv.is_finite() {
            // The step length, halved towards -1 (plain EM) while the extrapolated point
            // lowers the likelihood.
            let mut alpha = (-nr / nv).min(-1.0);
            while alpha < -1.01 && steps < MAX_ITERS {
                let x = Theta(std::array::from_fn(|i| {
                    th.0[i] - 2.0 * alpha * r[i] + alpha * alpha * v[i]
                }));
                // Back into the domain (a mean below MIN_MEAN), so that the next differences
                // measure real moves.
                let (l, m, p) = x.natural();
                let x = Theta::new(l, m, p);
                let (lx, thx) = em_step(cls, n, total, x);
                steps += 1;
                if lx.is_finite() && lx >= ll1 {
                    if lx > best_ll {
                        (best, best_ll) = (x, lx);
                    }
                    next = thx;
                    break;
                }
                alpha = 0.5 * (alpha - 1.0);
            }
        }
        if best_ll - prev < 1e-9 * best_ll.abs().max(1.0) {
            break;
        }
        th = next;
    }
    (best, best_ll)
}

/// The MLE (lambda, lambda_t, pi) by EM (see the module docs).
pub(super) fn mle(h: &ErrorClasses) -> Option<(f64, f64, f64)> {
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
    // The class below which a fraction `p` of the errors lie.
    let quantile = |p: f64| {
        let mut cum = 0.0;
        cls.iter()
            .find(|&&(_, c, _)| {
                cum += c;
                cum >= p * n
            })
            .map_or(kbar, |&(k, _, _)| k)
    };
    // The body at the median class, a tenth of the errors in a tail of mean 2 k-bar + 1.
    let start = Theta::new(quantile(0.5).max(0.5), 2.0 * kbar + 1.0, 0.1);
    let (best, ll) = squarem(&cls, n, total, start);
    let (lambda, m_t, pi) = best.natural();
    let tail_lambda = (1.0 / m_t).ln_1p() / w;
    (ll.is_finite() && lambda.is_finite() && tail_lambda.is_finite() && tail_lambda > 0.0)
        .then_some((lambda, tail_lambda, pi))
}
