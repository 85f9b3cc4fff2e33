//! The error models (the overhead paper §5) and their maximum-likelihood fits (§6).
//!
//! Both models are distributions of the class index k = 0, 1, 2, ... of an error.
//!
//! # Poisson (eq. 3)
//!
//! p_k = lambda^k e^(-lambda) / k!, lambda in **classes**. With f_k errors in class k, N in
//! total and S = sum_i k_i, the log-likelihood of eq. 7 is
//! ln L = sum_k f_k (k ln lambda - lambda - ln k!) = S ln lambda - N lambda - const, and
//! d ln L / d lambda = S / lambda - N = 0 gives the closed form
//!
//! **lambda^ = S / N = k-bar**, the mean class.
//!
//! # Discretized exponential (eq. 4-6)
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
//! mean class.) Both estimators need k-bar > 0, which [`crate::Histogram::new`] guarantees.
//!
//! # tmax of a model (§4, eq. 2)
//!
//! terr,max is the q_max quantile of the error under the model; tmax = min(S) + terr,max.
//!
//! * Poisson: the model is discrete in k, so the quantile is the class
//!   k_q = min{k : P(K <= k) >= q_max}. Every error in classes 0..=k_q is accepted, so terr,max
//!   is the last timer tick inside class k_q: terr,max = (k_q + 1) w - r. With w = r (the usual
//!   case for tick-quantized errors) this is k_q w, the formula of the overhead paper; with wider
//!   classes it keeps the whole class k_q, so that no more than 1 - q_max of the errors the
//!   model describes fall above tmax.
//! * Exponential: the discretized model is the binned continuous exponential, whose quantile is
//!   exact and independent of w: terr,max = -ln(1 - q_max) / lambda.
//!
//! # Adding a model
//!
//! Add a variant to [`ModelKind`] (and to `ModelKind::ALL`) and to [`Model`]; the compiler then
//! lists every `match` that needs an arm: the MLE, pmf, survival function, quantile, and unit.
use serde::Serialize;
use statrs::function::gamma::{gamma_lr, ln_gamma};

use crate::histogram::Histogram;
use crate::sample::QMax;

/// The model families fitted to every sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Poisson in the class index (eq. 3).
    Poisson,
    /// Discretized exponential, a geometric distribution in the class index (eq. 6).
    Exponential,
}

impl ModelKind {
    /// Every model, in the order they are fitted and reported.
    pub const ALL: [ModelKind; 2] = [ModelKind::Poisson, ModelKind::Exponential];

    /// The name used in JSON and text ("poisson", "exponential").
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Poisson => "poisson",
            ModelKind::Exponential => "exponential",
        }
    }

    /// Unit of the model's lambda.
    pub fn lambda_unit(self) -> &'static str {
        match self {
            ModelKind::Poisson => "classes",
            ModelKind::Exponential => "1/s",
        }
    }

    /// Number of parameters fitted from the data (enters the chi-square degrees of freedom).
    pub fn n_params(self) -> usize {
        match self {
            ModelKind::Poisson | ModelKind::Exponential => 1,
        }
    }

    /// The closed-form maximum-likelihood fit (see the module docs). None when the histogram
    /// has no error above class 0 (k-bar = 0), which `Histogram::new` already rules out.
    pub fn mle(self, h: &Histogram) -> Option<Model> {
        let kbar = h.mean_class();
        if !(kbar > 0.0 && kbar.is_finite()) {
            return None;
        }
        let lambda = match self {
            ModelKind::Poisson => kbar,
            ModelKind::Exponential => (1.0 / kbar).ln_1p() / h.width_s(),
        };
        self.with_lambda(lambda, h.width_s())
    }

    /// The model of this family with parameter `lambda` (None unless lambda is positive and
    /// finite). `width_s` is the bin width, which the exponential model needs.
    pub fn with_lambda(self, lambda: f64, width_s: f64) -> Option<Model> {
        if !(lambda > 0.0 && lambda.is_finite() && width_s > 0.0 && width_s.is_finite()) {
            return None;
        }
        Some(match self {
            ModelKind::Poisson => Model::Poisson { lambda },
            ModelKind::Exponential => Model::Exponential { lambda, width_s },
        })
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`: widths and alignment in format strings apply.
        f.pad(self.name())
    }
}

/// A fitted model: a distribution of the class index. lambda is always positive and finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Poisson, lambda in classes.
    Poisson { lambda: f64 },
    /// Discretized exponential, lambda in 1/s, for bins of `width_s`.
    Exponential { lambda: f64, width_s: f64 },
}

impl Model {
    /// The family.
    pub fn kind(&self) -> ModelKind {
        match self {
            Model::Poisson { .. } => ModelKind::Poisson,
            Model::Exponential { .. } => ModelKind::Exponential,
        }
    }

    /// The parameter, in the family's unit.
    pub fn lambda(&self) -> f64 {
        match *self {
            Model::Poisson { lambda } | Model::Exponential { lambda, .. } => lambda,
        }
    }

    /// rho = e^(-lambda w), the ratio p_(k+1) / p_k of the exponential model.
    fn rho(lambda: f64, width_s: f64) -> f64 {
        (-lambda * width_s).exp()
    }

    /// ln p_k.
    pub fn ln_pmf(&self, k: u64) -> f64 {
        let kf = k as f64;
        match *self {
            Model::Poisson { lambda } => kf * lambda.ln() - lambda - ln_gamma(kf + 1.0),
            Model::Exponential { lambda, width_s } => {
                -lambda * width_s * kf + (-(-lambda * width_s).exp_m1()).ln()
            }
        }
    }

    /// p_k.
    pub fn pmf(&self, k: u64) -> f64 {
        self.ln_pmf(k).exp()
    }

    /// P(K >= k), in closed form (regularized incomplete gamma for Poisson, rho^k for the
    /// exponential), accurate in the far tail.
    pub fn sf(&self, k: u64) -> f64 {
        if k == 0 {
            return 1.0;
        }
        match *self {
            // P[K >= k] = P[Gamma(k) <= lambda] = P(k, lambda), regularized lower gamma.
            Model::Poisson { lambda } => gamma_lr(k as f64, lambda).clamp(0.0, 1.0),
            Model::Exponential { lambda, width_s } => (-lambda * width_s * k as f64).exp(),
        }
    }

    /// Model mean of the class index.
    pub fn mean_class(&self) -> f64 {
        match *self {
            Model::Poisson { lambda } => lambda,
            Model::Exponential { lambda, width_s } => {
                let rho = Self::rho(lambda, width_s);
                rho / -(-lambda * width_s).exp_m1()
            }
        }
    }

    /// The class quantile k_q = min{k : P(K <= k) >= q}.
    pub fn class_quantile(&self, q: QMax) -> u64 {
        let q = q.get();
        match *self {
            Model::Poisson { lambda } => {
                // P[K <= k] = 1 - P(k + 1, lambda) is increasing in k: bisect on
                // [0, lambda + 40 sqrt(lambda) + 60], far beyond any q < 1 - 1e-16.
                let cdf = |k: u64| 1.0 - gamma_lr(k as f64 + 1.0, lambda);
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
            Model::Exponential { lambda, width_s } => {
                // 1 - rho^(k+1) >= q  <=>  k + 1 >= ln(1 - q) / ln(rho) = -ln(1 - q) / (lambda w).
                let x = -(-q).ln_1p() / (lambda * width_s);
                let k = (x * (1.0 - 1e-12)).ceil() - 1.0;
                k.clamp(0.0, crate::histogram::MAX_CLASS as f64) as u64
            }
        }
    }

    /// The q quantile of the class index on a continuous scale: x_q with F(x_q) = q, where F
    /// extends the model's CDF P(K <= k) to real x, so that the class quantile
    /// [`Model::class_quantile`] is ceil(x_q) (up to rounding) and x_q moves smoothly with lambda.
    ///
    /// * Poisson: F(x) = Q(x + 1, lambda), the regularized upper incomplete gamma function, which
    ///   equals P(K <= k) at every integer x = k and increases continuously in x > -1; solved
    ///   by bisection on (-1, lambda + 40 sqrt(lambda) + 60].
    /// * Exponential: F(x) = 1 - rho^(x + 1), so x_q = -ln(1 - q) / (lambda w) - 1.
    ///
    /// [`crate::stopping`] judges stability on this value because the class quantile of the
    /// Poisson model is a step function of lambda: it can stay put while lambda drifts towards
    /// the next step.
    pub fn class_quantile_continuous(&self, q: QMax) -> f64 {
        let q = q.get();
        match *self {
            Model::Poisson { lambda } => {
                // checked_: no panic path even if a bracket end were out of the domain; an
                // invalid evaluation counts as "below q", which only moves the bisection up.
                let cdf = |x: f64| {
                    statrs::function::gamma::checked_gamma_lr(x + 1.0, lambda)
                        .map_or(0.0, |p| 1.0 - p)
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
            Model::Exponential { lambda, width_s } => -(-q).ln_1p() / (lambda * width_s) - 1.0,
        }
    }

    /// terr,max computed from [`Model::class_quantile_continuous`] instead of the class
    /// quantile: equal to [`Model::terr_max_s`] for the exponential, and for Poisson equal to it
    /// whenever x_q is a whole class, otherwise up to one class below it.
    pub fn terr_max_continuous_s(&self, q: QMax, width_s: f64, resolution_s: f64) -> f64 {
        match *self {
            Model::Poisson { .. } => {
                let x = self.class_quantile_continuous(q);
                ((x + 1.0) * width_s - resolution_s.min(width_s)).max(0.0)
            }
            Model::Exponential { .. } => self.terr_max_s(q, width_s, resolution_s),
        }
    }

    /// terr,max = the q quantile of the error in seconds (see the module docs), for bins of
    /// `width_s` on a timer of `resolution_s`.
    pub fn terr_max_s(&self, q: QMax, width_s: f64, resolution_s: f64) -> f64 {
        match *self {
            Model::Poisson { .. } => {
                let k = self.class_quantile(q) as f64;
                ((k + 1.0) * width_s - resolution_s.min(width_s)).max(0.0)
            }
            Model::Exponential { lambda, .. } => -(-q.get()).ln_1p() / lambda,
        }
    }

    /// Model mean of the error in seconds (for display).
    pub fn mean_error_s(&self, width_s: f64) -> f64 {
        match *self {
            Model::Poisson { lambda } => lambda * width_s,
            Model::Exponential { lambda, .. } => 1.0 / lambda,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Binning;
    use crate::sample::Sample;

    fn hist(ticks: &[u64], r: f64) -> Histogram {
        let v: Vec<f64> = ticks.iter().map(|&k| 1e-6 + k as f64 * r).collect();
        let s = Sample::new(&v).unwrap();
        Histogram::new(&s, Binning::choose(&s, r, Some(r)).unwrap()).unwrap()
    }

    #[test]
    fn closed_form_mles() {
        let h = hist(&[0, 0, 1, 1, 2, 3, 0, 1], 1e-9); // k-bar = 1
        let p = ModelKind::Poisson.mle(&h).unwrap();
        assert!((p.lambda() - 1.0).abs() < 1e-12);
        let e = ModelKind::Exponential.mle(&h).unwrap();
        // rho = 1/2, lambda = ln 2 / w
        assert!((e.lambda() - std::f64::consts::LN_2 / 1e-9).abs() < 1e-3);
        assert!((e.mean_class() - 1.0).abs() < 1e-12);
    }

    /// The closed form really is the maximum: the log-likelihood is lower on either side.
    #[test]
    fn mle_maximizes_the_likelihood() {
        let ticks: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 11 / 3).collect();
        let h = hist(&ticks, 1e-9);
        for kind in ModelKind::ALL {
            let m = kind.mle(&h).unwrap();
            let ll = |lam: f64| {
                let mm = kind.with_lambda(lam, h.width_s()).unwrap();
                h.occupied()
                    .iter()
                    .map(|&(k, c)| c as f64 * mm.ln_pmf(k))
                    .sum::<f64>()
            };
            let l0 = ll(m.lambda());
            for f in [0.9, 0.99, 0.999, 1.001, 1.01, 1.1] {
                assert!(ll(m.lambda() * f) < l0, "{kind} factor {f}");
            }
        }
    }

    #[test]
    fn pmf_sums_to_one_and_sf_is_the_tail() {
        for m in [
            Model::Poisson { lambda: 0.3 },
            Model::Poisson { lambda: 7.5 },
            Model::Poisson { lambda: 900.0 },
            Model::Exponential {
                lambda: 2e6,
                width_s: 1e-7,
            },
        ] {
            let mut cum = 0.0;
            for k in 0..3000u64 {
                let tail = 1.0 - cum;
                assert!(
                    (m.sf(k) - tail).abs() < 1e-9,
                    "{m:?} k {k}: {} vs {tail}",
                    m.sf(k)
                );
                cum += m.pmf(k);
            }
            assert!((cum - 1.0).abs() < 1e-9, "{m:?}");
        }
    }

    #[test]
    fn class_quantiles() {
        let q = QMax::new(0.99).unwrap();
        // Poisson(2): P[K <= 5] = 0.9834, P[K <= 6] = 0.9955.
        assert_eq!(Model::Poisson { lambda: 2.0 }.class_quantile(q), 6);
        assert_eq!(Model::Poisson { lambda: 0.011 }.class_quantile(q), 1); // e^-0.011 < 0.99
        assert_eq!(Model::Poisson { lambda: 0.01 }.class_quantile(q), 0); // e^-0.01 > 0.99
        assert_eq!(Model::Poisson { lambda: 0.001 }.class_quantile(q), 0);
        let big = Model::Poisson { lambda: 1e6 }.class_quantile(q);
        assert!((big as f64 - (1e6 + 2.326 * 1e3)).abs() < 5.0, "{big}");
        // Exponential with rho = 1/2: 1 - 2^-(k+1) >= 0.99 first at k = 6.
        let e = Model::Exponential {
            lambda: std::f64::consts::LN_2,
            width_s: 1.0,
        };
        assert_eq!(e.class_quantile(q), 6);
        assert_eq!(e.class_quantile(QMax::new(0.875).unwrap()), 2); // exactly 1 - 2^-3
    }

    /// The continuous quantile is the class quantile before rounding up, and it is continuous
    /// in lambda where the class quantile jumps.
    #[test]
    fn continuous_class_quantile() {
        let q = QMax::new(0.99).unwrap();
        for lambda in [0.05, 0.3, 1.0, 1.7, 2.0, 2.3, 5.0, 40.0, 1e4] {
            let m = Model::Poisson { lambda };
            let x = m.class_quantile_continuous(q);
            let k = m.class_quantile(q);
            // ceil(x) = k_q, with a little room for the bisection's last digits.
            assert!(
                x <= k as f64 + 1e-9 && x > k as f64 - 1.0,
                "lambda {lambda}: x {x} k {k}"
            );
            // At x the extended CDF equals q.
            let f = 1.0 - gamma_lr(x + 1.0, lambda);
            assert!((f - q.get()).abs() < 1e-9, "lambda {lambda}: F(x) = {f}");
        }
        // Across the jump of k_q from 5 to 6 (near lambda = 1.79) x_q moves by a sliver.
        let (a, b) = (
            Model::Poisson { lambda: 1.780 },
            Model::Poisson { lambda: 1.790 },
        );
        assert_eq!((a.class_quantile(q), b.class_quantile(q)), (5, 6));
        let dx = b.class_quantile_continuous(q) - a.class_quantile_continuous(q);
        assert!(dx > 0.0 && dx < 0.05, "{dx}");
        // Poisson: at an integer x the continuous terr,max is the class one.
        let r = 1e-9;
        let m = Model::Poisson { lambda: 2.0 };
        let x = m.class_quantile_continuous(q);
        assert!((m.terr_max_continuous_s(q, r, r) - x * r).abs() < 1e-21);
        assert!(m.terr_max_continuous_s(q, r, r) <= m.terr_max_s(q, r, r));
        // Exponential with rho = 1/2: x = ln(100)/ln(2) - 1; terr,max unchanged.
        let e = Model::Exponential {
            lambda: std::f64::consts::LN_2,
            width_s: 1.0,
        };
        let want = 100f64.ln() / std::f64::consts::LN_2 - 1.0;
        assert!((e.class_quantile_continuous(q) - want).abs() < 1e-12);
        assert_eq!(
            e.terr_max_continuous_s(q, 1.0, 0.1),
            e.terr_max_s(q, 1.0, 0.1)
        );
    }

    #[test]
    fn terr_max_definitions() {
        let q = QMax::new(0.99).unwrap();
        let p = Model::Poisson { lambda: 2.0 };
        // w = r: k_q w
        assert!((p.terr_max_s(q, 1e-9, 1e-9) - 6e-9).abs() < 1e-21);
        // w = 4 r: the last tick of class 6
        assert!((p.terr_max_s(q, 4e-9, 1e-9) - 27e-9).abs() < 1e-21);
        let e = Model::Exponential {
            lambda: 1e6,
            width_s: 1e-7,
        };
        assert!((e.terr_max_s(q, 1e-7, 1e-9) - 100f64.ln() * 1e-6).abs() < 1e-18);
    }

    #[test]
    fn invalid_lambda_gives_no_model() {
        for l in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(ModelKind::Poisson.with_lambda(l, 1.0).is_none());
            assert!(ModelKind::Exponential.with_lambda(l, 1.0).is_none());
        }
    }
}
