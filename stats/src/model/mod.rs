//! The error models (the overhead paper §5 and beyond) and their maximum-likelihood fits (§6).
//!
//! Every model is a distribution of the class index k = 0, 1, 2, ... of an error, so that the
//! binned log-likelihood ln L = sum over occupied classes of f_k ln p_k is comparable across
//! families (the selection by BIC in [`mod@crate::fit`] relies on it). Each family's module gives
//! its pmf, tail, MLE and quantile with references:
//!
//! | family ([`ModelKind::name`]) | params ([`Model::params`], in order) | free | MLE | module |
//! |---|---|---|---|---|
//! | `poisson` | lambda (classes) | 1 | closed form lambda = k-bar | [`poisson`] |
//! | `exponential` | lambda (1/s) | 1 | closed form rho = k-bar / (1 + k-bar) | [`exponential`] |
//! | `negbinomial` | mean m (classes), size r | 2 | m = k-bar; r: 1-D root of the score (Brent) | [`negbin`] |
//! | `lognormal` | median (s), sigma | 2 | Nelder-Mead over (mu, ln sigma) | [`lognormal`] |
//! | `mixture` | lambda (classes), lambda_t (1/s), tail weight pi | 3 | EM | [`mixture`] |
//!
//! The first parameter is always called lambda in [`crate::ModelFit`] (and in older profile
//! files); it is the Poisson or exponential rate for those two and, for the others, the
//! parameter that plays its part: the mean or median of the error, the body's mean.
//!
//! # tmax of a model (§4, eq. 2)
//!
//! terr,max is the q_max quantile of the error under the model; tmax = min(S) + terr,max.
//!
//! * **Discrete families** (Poisson, negative binomial, mixture): the quantile is the class
//!   k_q = min{k : P(K <= k) >= q_max}. Every error in classes 0..=k_q is accepted, so
//!   terr,max is the last timer tick inside class k_q: terr,max = (k_q + 1) w - r. With w = r
//!   (the usual case for tick-quantized errors) this is k_q w, the formula of the overhead
//!   paper; with wider classes it keeps the whole class k_q, so that no more than 1 - q_max of
//!   the errors the model describes fall above tmax.
//! * **Discretized continuous families** (exponential, log-normal): the binned model's
//!   quantile is the continuous one, exact and independent of w: -ln(1 - q_max) / lambda for
//!   the exponential, median e^(sigma z_q) for the log-normal.
//!
//! The *continuous* class quantile x_q ([`Model::class_quantile_continuous`]), on which the
//! stopping rule judges stability, extends the CDF of a discrete family to real x through its
//! tail's continuous extension (the incomplete gamma or beta function in a real first
//! argument, rho^x), and is e_q / w - 1 for the continuous families.
//!
//! # Which families earn their place
//!
//! On the kept samples of nine calibration profiles of this machine (Open MPI and MPICH, 2-8
//! ranks, 1,454 entries that could be fitted, N ~ 400; `examples/real_samples.rs`), the
//! chi-square test at alpha = 0.05 accepted:
//!
//! | family | accepted | chi2^ / critical, median | 90th percentile | chosen (lowest BIC) |
//! |---|---|---|---|---|
//! | poisson | 50 | 11.8 | 62 | 33 |
//! | exponential | 11 | 7.6 | 17 | 7 |
//! | negbinomial | 102 | 3.8 | 11 | 46 |
//! | lognormal | 84 | 3.0 | 12 | 61 |
//! | mixture | 266 | 2.1 | 8.0 | 206 |
//!
//! With the two families of the overhead paper alone 1,397 of the 1,454 entries (96 %) fell
//! back to the empirical quantile; with all five, 1,101 (76 %). The body + tail mixture does
//! most of the work (errors pile up a few classes above the fastest call, and a minority is
//! delayed far beyond); the negative binomial and the log-normal each fit entries no other
//! family does. A discretized gamma was not added: the negative binomial is the gamma-mixed
//! Poisson, so for means of more than a few classes it is the discretized gamma to within
//! the width of a class, and below that it keeps the timer's discreteness that a binned
//! continuous density lacks; the log-normal covers the heavier tail the gamma does not.
//!
//! # Adding a model
//!
//! Add a variant to [`ModelKind`] (and to `ModelKind::ALL`, which no compiler check holds
//! complete) and to [`Model`]; the compiler then lists every `match` that needs an arm: the
//! MLE, pmf, survival function, quantile, parameters and units.
//!
//! Outside this crate a family touches:
//!
//! - `common/src/profile/fit_model.rs`: a `FitModel` variant (its profile name, serde and
//!   `as_str`, the same as [`ModelKind::name`]) and its arm of `FitModel::body_params` (the
//!   preload library judges an entry's basis by it without this crate);
//! - `common/src/profile/fitted.rs`: its arms of `FitModel::of_kind` and `FitModel::kind` (the
//!   compiler asks for them; the test there checks the name and parameter count of every
//!   family of `ModelKind::ALL`);
//! - `report/src/fit.rs`: its arms in the `mpiover fit` text (parameters in words, the model
//!   line);
//! - `docs/profile-format.md` (the `model` and `params` rows) and `docs/method.md` ("tmax from
//!   a sample: error models").
use serde::Serialize;

use crate::histogram::{ErrorClasses, MAX_CLASS};
use crate::sample::QMax;

pub mod exponential;
pub mod lognormal;
pub mod mixture;
pub mod negbin;
mod optim;
pub mod poisson;
#[cfg(test)]
mod tests;

/// The model families fitted to every sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Poisson in the class index (eq. 3).
    Poisson,
    /// Discretized exponential, a geometric distribution in the class index (eq. 6).
    Exponential,
    /// Negative binomial in the class index ([`negbin`]).
    #[serde(rename = "negbinomial")]
    NegBinomial,
    /// Discretized log-normal error ([`lognormal`]).
    LogNormal,
    /// Poisson body plus geometric tail ([`mixture`]).
    Mixture,
}

impl ModelKind {
    /// Every model, in the order they are fitted and reported (simplest first).
    pub const ALL: [ModelKind; 5] = [
        ModelKind::Poisson,
        ModelKind::Exponential,
        ModelKind::NegBinomial,
        ModelKind::LogNormal,
        ModelKind::Mixture,
    ];

    /// The stable name used in JSON, profiles and text: "poisson", "exponential",
    /// "negbinomial", "lognormal", "mixture".
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Poisson => "poisson",
            ModelKind::Exponential => "exponential",
            ModelKind::NegBinomial => "negbinomial",
            ModelKind::LogNormal => "lognormal",
            ModelKind::Mixture => "mixture",
        }
    }

    /// The family of a [`ModelKind::name`].
    pub fn from_name(name: &str) -> Option<ModelKind> {
        ModelKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Names of the parameters, in the order of [`Model::params`].
    pub fn param_names(self) -> &'static [&'static str] {
        match self {
            ModelKind::Poisson | ModelKind::Exponential => &["lambda"],
            ModelKind::NegBinomial => &["mean", "r"],
            ModelKind::LogNormal => &["median", "sigma"],
            ModelKind::Mixture => &["lambda", "tail_lambda", "tail_weight"],
        }
    }

    /// Units of the parameters ("" for dimensionless), in the order of [`Model::params`].
    pub fn param_units(self) -> &'static [&'static str] {
        match self {
            ModelKind::Poisson => &["classes"],
            ModelKind::Exponential => &["1/s"],
            ModelKind::NegBinomial => &["classes", ""],
            ModelKind::LogNormal => &["s", ""],
            ModelKind::Mixture => &["classes", "1/s", ""],
        }
    }

    /// Unit of the model's first parameter (its "lambda").
    pub fn lambda_unit(self) -> &'static str {
        self.param_units()[0]
    }

    /// Number of parameters fitted from the data (enters the chi-square degrees of freedom and
    /// the AIC).
    pub fn n_params(self) -> usize {
        self.param_names().len()
    }

    /// The maximum-likelihood fit (see the family's docs). None when the histogram has no
    /// error above class 0 (k-bar = 0), which `ErrorClasses::new` already rules out, or when a
    /// numerical fit ends on an invalid point.
    pub fn mle(self, h: &ErrorClasses) -> Option<Model> {
        let kbar = h.mean_class();
        if !(kbar > 0.0 && kbar.is_finite()) {
            return None;
        }
        let w = h.width_s();
        match self {
            ModelKind::Poisson => self.with_lambda(kbar, w),
            ModelKind::Exponential => self.with_lambda((1.0 / kbar).ln_1p() / w, w),
            ModelKind::NegBinomial => {
                negbin::mle(h).and_then(|(m, r)| self.from_params(&[m, r], w))
            }
            ModelKind::LogNormal => {
                lognormal::mle(h).and_then(|(m, s)| self.from_params(&[m, s], w))
            }
            ModelKind::Mixture => {
                mixture::mle(h).and_then(|(l, t, p)| self.from_params(&[l, t, p], w))
            }
        }
    }

    /// The one-parameter model of this family with parameter `lambda` (None unless lambda is
    /// positive and finite, and for the families with more than one parameter). `width_s` is
    /// the bin width, which the exponential model needs.
    pub fn with_lambda(self, lambda: f64, width_s: f64) -> Option<Model> {
        match self {
            ModelKind::Poisson | ModelKind::Exponential => self.from_params(&[lambda], width_s),
            _ => None,
        }
    }

    /// Rebuilds a model from its stored [`Model::params`] and the bin width it was fitted on.
    /// None when the number of parameters is wrong or one is outside its domain (every
    /// parameter positive and finite; sigma at most [`lognormal::SIGMA_MAX`]; the tail weight
    /// below 1).
    pub fn from_params(self, params: &[f64], width_s: f64) -> Option<Model> {
        let ok = |x: f64| x > 0.0 && x.is_finite();
        if params.len() != self.n_params() || !params.iter().all(|&p| ok(p)) || !ok(width_s) {
            return None;
        }
        let p = params;
        Some(match self {
            ModelKind::Poisson => Model::Poisson { lambda: p[0] },
            ModelKind::Exponential => Model::Exponential {
                lambda: p[0],
                width_s,
            },
            ModelKind::NegBinomial => Model::NegBinomial {
                mean: p[0],
                r: p[1],
            },
            ModelKind::LogNormal if p[1] <= lognormal::SIGMA_MAX => Model::LogNormal {
                median_s: p[0],
                sigma: p[1],
                width_s,
            },
            ModelKind::Mixture if p[2] < 1.0 => Model::Mixture {
                lambda: p[0],
                tail_lambda: p[1],
                tail_weight: p[2],
                width_s,
            },
            ModelKind::LogNormal | ModelKind::Mixture => return None,
        })
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`: widths and alignment in format strings apply.
        f.pad(self.name())
    }
}

/// A fitted model: a distribution of the class index. Every parameter is positive and finite
/// (build one with [`ModelKind::from_params`] to have that checked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Poisson, lambda in classes.
    Poisson { lambda: f64 },
    /// Discretized exponential, lambda in 1/s, for bins of `width_s`.
    Exponential { lambda: f64, width_s: f64 },
    /// Negative binomial with mean `mean` (classes) and size `r`.
    NegBinomial { mean: f64, r: f64 },
    /// Discretized log-normal: ln e ~ N(ln median_s, sigma^2), for bins of `width_s`.
    LogNormal {
        median_s: f64,
        sigma: f64,
        width_s: f64,
    },
    /// Poisson body (lambda in classes) plus a fraction `tail_weight` of a geometric tail
    /// (tail_lambda in 1/s, as the exponential's), for bins of `width_s`.
    Mixture {
        lambda: f64,
        tail_lambda: f64,
        tail_weight: f64,
        width_s: f64,
    },
}

impl Model {
    /// The family.
    pub fn kind(&self) -> ModelKind {
        match self {
            Model::Poisson { .. } => ModelKind::Poisson,
            Model::Exponential { .. } => ModelKind::Exponential,
            Model::NegBinomial { .. } => ModelKind::NegBinomial,
            Model::LogNormal { .. } => ModelKind::LogNormal,
            Model::Mixture { .. } => ModelKind::Mixture,
        }
    }

    /// The parameters, in the order and units of [`ModelKind::param_names`] and
    /// [`ModelKind::param_units`] (`[lambda]` for Poisson and exponential).
    pub fn params(&self) -> Vec<f64> {
        match *self {
            Model::Poisson { lambda } | Model::Exponential { lambda, .. } => vec![lambda],
            Model::NegBinomial { mean, r } => vec![mean, r],
            Model::LogNormal {
                median_s, sigma, ..
            } => vec![median_s, sigma],
            Model::Mixture {
                lambda,
                tail_lambda,
                tail_weight,
                ..
            } => vec![lambda, tail_lambda, tail_weight],
        }
    }

    /// The first parameter, in the family's unit (the Poisson or exponential lambda).
    pub fn lambda(&self) -> f64 {
        match *self {
            Model::Poisson { lambda }
            | Model::Exponential { lambda, .. }
            | Model::Mixture { lambda, .. } => lambda,
            Model::NegBinomial { mean, .. } => mean,
            Model::LogNormal { median_s, .. } => median_s,
        }
    }

    /// ln p_k.
    pub fn ln_pmf(&self, k: u64) -> f64 {
        match *self {
            Model::Poisson { lambda } => poisson::ln_pmf(lambda, k),
            Model::Exponential { lambda, width_s } => exponential::ln_pmf(lambda, width_s, k),
            Model::NegBinomial { mean, r } => negbin::ln_pmf(mean, r, k),
            Model::LogNormal {
                median_s,
                sigma,
                width_s,
            } => lognormal::ln_pmf(median_s, sigma, width_s, k),
            Model::Mixture {
                lambda,
                tail_lambda,
                tail_weight,
                width_s,
            } => mixture::ln_pmf(lambda, tail_lambda, tail_weight, width_s, k),
        }
    }

    /// p_k.
    pub fn pmf(&self, k: u64) -> f64 {
        self.ln_pmf(k).exp()
    }

    /// The binned log-likelihood sum over the occupied classes of f_k ln p_k (eq. 7).
    pub fn log_likelihood(&self, h: &ErrorClasses) -> f64 {
        h.occupied()
            .iter()
            .map(|&(k, c)| c as f64 * self.ln_pmf(k))
            .sum()
    }

    /// P(K >= k), in closed form (regularized incomplete gamma or beta function, rho^k, the
    /// normal upper tail), accurate in the far tail.
    pub fn sf(&self, k: u64) -> f64 {
        if k == 0 {
            return 1.0;
        }
        match *self {
            Model::Poisson { lambda } => poisson::sf(lambda, k),
            Model::Exponential { lambda, width_s } => exponential::sf(lambda, width_s, k),
            Model::NegBinomial { mean, r } => negbin::sf(mean, r, k),
            Model::LogNormal {
                median_s,
                sigma,
                width_s,
            } => lognormal::sf(median_s, sigma, width_s, k),
            Model::Mixture {
                lambda,
                tail_lambda,
                tail_weight,
                width_s,
            } => mixture::sf(lambda, tail_lambda, tail_weight, width_s, k),
        }
    }

    /// The continuous extension of P(K >= y) to real y > 0 of a discrete family (None for the
    /// discretized continuous ones, whose quantile is the continuous one).
    fn sf_ext(&self, y: f64) -> Option<f64> {
        match *self {
            Model::Poisson { lambda } => Some(poisson::sf_ext(lambda, y)),
            Model::NegBinomial { mean, r } => Some(negbin::sf_ext(mean, r, y)),
            Model::Mixture {
                lambda,
                tail_lambda,
                tail_weight,
                width_s,
            } => Some(mixture::sf_ext(
                lambda,
                tail_lambda,
                tail_weight,
                width_s,
                y,
            )),
            Model::Exponential { .. } | Model::LogNormal { .. } => None,
        }
    }

    /// The q quantile of the continuous error, seconds (discretized continuous families only).
    fn quantile_s(&self, q: QMax) -> Option<f64> {
        match *self {
            Model::Exponential { lambda, .. } => Some(exponential::quantile_s(lambda, q)),
            Model::LogNormal {
                median_s, sigma, ..
            } => Some(lognormal::quantile_s(median_s, sigma, q)),
            _ => None,
        }
    }

    /// Model mean of the class index.
    pub fn mean_class(&self) -> f64 {
        match *self {
            Model::Poisson { lambda } => lambda,
            Model::Exponential { lambda, width_s } => exponential::mean_class(lambda, width_s),
            Model::NegBinomial { mean, .. } => mean,
            Model::LogNormal {
                median_s,
                sigma,
                width_s,
            } => lognormal::mean_class(median_s, sigma, width_s),
            Model::Mixture {
                lambda,
                tail_lambda,
                tail_weight,
                width_s,
            } => mixture::mean_class(lambda, tail_lambda, tail_weight, width_s),
        }
    }

    /// The class quantile k_q = min{k : P(K <= k) >= q}.
    pub fn class_quantile(&self, q: QMax) -> u64 {
        match *self {
            Model::Poisson { lambda } => poisson::class_quantile(lambda, q),
            Model::Exponential { lambda, width_s } => {
                exponential::class_quantile(lambda, width_s, q)
            }
            Model::LogNormal { width_s, .. } => {
                let x = self.quantile_s(q).unwrap_or(0.0) / width_s;
                ((x * (1.0 - 1e-12)).ceil() - 1.0).clamp(0.0, MAX_CLASS as f64) as u64
            }
            Model::NegBinomial { .. } | Model::Mixture { .. } => {
                // Smallest k with P(K >= k + 1) <= 1 - q: bracket by doubling from the mean,
                // then bisect. The tail is a decreasing function of k.
                let tail = 1.0 - q.get();
                let above = |k: u64| self.sf(k.saturating_add(1)) > tail;
                if !above(0) {
                    return 0;
                }
                // A NaN mean (not for valid parameters) starts at 1.
                let start = self.mean_class().clamp(1.0, (MAX_CLASS / 4) as f64);
                let (mut lo, mut hi) = (0u64, if start.is_nan() { 1 } else { start as u64 });
                while above(hi) {
                    if hi >= MAX_CLASS / 2 {
                        return MAX_CLASS;
                    }
                    lo = hi;
                    hi *= 2;
                }
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if above(mid) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                hi
            }
        }
    }

    /// The q quantile of the class index on a continuous scale: x_q with F(x_q) = q, where F
    /// extends the model's CDF P(K <= k) to real x, so that the class quantile
    /// [`Model::class_quantile`] is ceil(x_q) (up to rounding) and x_q moves smoothly with the
    /// parameters.
    ///
    /// * Poisson: F(x) = Q(x + 1, lambda), the regularized upper incomplete gamma function, which
    ///   equals P(K <= k) at every integer x = k and increases continuously in x > -1; solved
    ///   by bisection on (-1, lambda + 40 sqrt(lambda) + 60].
    /// * Negative binomial and mixture: F(x) = 1 - S(x + 1) with S the continuous extension of
    ///   the tail (the family docs), by bisection on (k_q - 1, k_q].
    /// * Exponential and log-normal: x_q = e_q / w - 1, e_q the continuous quantile; for the
    ///   exponential F(x) = 1 - rho^(x + 1).
    ///
    /// [`crate::stopping`] judges stability on this value because the class quantile of a
    /// discrete model is a step function of its parameters: it can stay put while they drift
    /// towards the next step.
    pub fn class_quantile_continuous(&self, q: QMax) -> f64 {
        if let Model::Poisson { lambda } = *self {
            return poisson::class_quantile_continuous(lambda, q);
        }
        if let (Some(e), Some(w)) = (self.quantile_s(q), self.width_s()) {
            return e / w - 1.0;
        }
        let tail = 1.0 - q.get();
        let k = self.class_quantile(q) as f64;
        let (mut lo, mut hi) = ((k - 1.0).max(-1.0), k);
        // 50 halvings of a one-class bracket: below 1e-15 classes.
        for _ in 0..50 {
            let mid = 0.5 * (lo + hi);
            if self.sf_ext(mid + 1.0).unwrap_or(0.0) <= tail {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// The bin width a discretized continuous family carries.
    fn width_s(&self) -> Option<f64> {
        match *self {
            Model::Exponential { width_s, .. } | Model::LogNormal { width_s, .. } => Some(width_s),
            _ => None,
        }
    }

    /// terr,max computed from [`Model::class_quantile_continuous`] instead of the class
    /// quantile: equal to [`Model::terr_max_s`] for the discretized continuous families, and
    /// for the discrete ones equal to it whenever x_q is a whole class, otherwise up to one
    /// class below it.
    pub fn terr_max_continuous_s(&self, q: QMax, width_s: f64, resolution_s: f64) -> f64 {
        match self.quantile_s(q) {
            Some(e) => e,
            None => {
                let x = self.class_quantile_continuous(q);
                ((x + 1.0) * width_s - resolution_s.min(width_s)).max(0.0)
            }
        }
    }

    /// terr,max = the q quantile of the error in seconds (see the module docs), for bins of
    /// `width_s` on a timer of `resolution_s`.
    pub fn terr_max_s(&self, q: QMax, width_s: f64, resolution_s: f64) -> f64 {
        match self.quantile_s(q) {
            Some(e) => e,
            None => {
                let k = self.class_quantile(q) as f64;
                ((k + 1.0) * width_s - resolution_s.min(width_s)).max(0.0)
            }
        }
    }

    /// Model mean of the error in seconds (for display): the mean class times w for the
    /// discrete families, the continuous mean for the others (and for the mixture's tail).
    pub fn mean_error_s(&self, width_s: f64) -> f64 {
        match *self {
            Model::Poisson { lambda } => lambda * width_s,
            Model::Exponential { lambda, .. } => 1.0 / lambda,
            Model::NegBinomial { mean, .. } => mean * width_s,
            Model::LogNormal {
                median_s, sigma, ..
            } => lognormal::mean_error_s(median_s, sigma),
            Model::Mixture {
                lambda,
                tail_lambda,
                tail_weight,
                ..
            } => mixture::mean_error_s(lambda, tail_lambda, tail_weight, width_s),
        }
    }
}
