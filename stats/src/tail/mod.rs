//! A tail model where no body model fits: peaks over a threshold, a generalized Pareto
//! distribution (GPD) for the errors above it, and tmax its q_max quantile.
//!
//! **Why.** On a virtual machine the body of a call's error distribution is often multimodal
//! (the latency switches between levels within seconds), and no family of at most three
//! parameters passes the chi-square test there. tmax does not depend on the body, only on the
//! upper tail, and the tail of almost any distribution above a high threshold is close to a GPD
//! (Pickands 1975; Balkema & de Haan 1974, "Residual life time at great age", Ann. Probab. 2:
//! 792-804). Fitting the tail alone uses the few dozen largest errors instead of the four or
//! five above the 99th percentile that the empirical quantile rests on.
//!
//! **The rule**, for errors e_i = t_i - min(S), n of them:
//!
//! 1. Candidate thresholds u are the empirical quantiles of the errors at the levels
//!    [`LEVELS`] (75 %, 80 %, 85 %, 90 %, 95 %), tried from the lowest. The exceedances are
//!    y = e - u for the e strictly above u; a candidate needs at least [`MIN_EXCEEDANCES`] of
//!    them and an exceedance share zeta = k/n above 1 - q_max.
//! 2. The GPD is fitted to the exceedances by maximum likelihood ([`gpd`]).
//! 3. Its fit is tested with the Anderson-Darling statistic against the null distribution for
//!    estimated parameters ([`null`]); the candidate is accepted at p >= alpha.
//! 4. The fit must also agree with the sample where tmax is read: its q_max quantile must lie
//!    within the nonparametric 95 % confidence interval of the sample's own q_max quantile
//!    (the widest interval the sample gives when it is too small for 95 %;
//!    [`crate::quantile`]). A GPD that passes the test on its excesses yet puts tmax above
//!    the largest call measured, or below the calls the interval says lie under the quantile,
//!    describes the bulk of the excesses but not the part that matters.
//! 5. The lowest accepted threshold is taken: the most exceedances the GPD describes (the
//!    automatic choice of Choulakian & Stephens 2001, who move the threshold up until the test
//!    accepts). Trying up to four thresholds makes acceptance somewhat likelier than one test
//!    at alpha would; the out-of-sample check of `mpiover profile check` measures what that
//!    costs (the share of held-out calls above tmax).
//! 6. tmax = min(S) + u + y_q with P(E > u + y_q) = zeta P(Y > y_q) = 1 - q_max, i.e.
//!    y_q = sigma/xi ((zeta / (1 - q_max))^xi - 1) (sigma ln(zeta / (1 - q_max)) at xi = 0).
//!
//! When no candidate is accepted, the fit with the highest p-value is returned with
//! `accepted: false`, so that a reader sees how far off it was, and tmax stays the empirical
//! quantile.
pub mod gpd;
pub mod null;

use serde::Serialize;

use crate::quantile::{quantile_ci_with_coverage, QuantileCi};
use crate::sample::{QMax, Sample};
use gpd::{anderson_darling, fit_mle};

/// Whether `value` lies within the order-statistic interval `ci` of `sample` (true when the
/// sample gives no interval at all).
fn within(ci: Option<QuantileCi>, sample: &Sample, value: f64) -> bool {
    match ci {
        None => true,
        Some(c) => sample.order_stat(c.lo_rank) <= value && value <= sample.order_stat(c.hi_rank),
    }
}

/// The thresholds' quantile levels, tried from the lowest.
pub const LEVELS: [f64; 5] = [0.75, 0.80, 0.85, 0.90, 0.95];
/// Fewest exceedances a GPD is fitted to.
pub const MIN_EXCEEDANCES: usize = 20;
/// Smallest sample that can have a tail model: `MIN_EXCEEDANCES` above the
/// lowest threshold, MIN_EXCEEDANCES / (1 - LEVELS[0]) (a constant rather
/// than that expression: float arithmetic in constants needs a newer Rust).
pub const MIN_SAMPLE: usize = 80;

/// The tail model of one sample (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TailFit {
    /// The threshold's quantile level.
    pub level: f64,
    /// The threshold u as an error above min(S), seconds.
    pub threshold_s: f64,
    /// Number of exceedances k.
    pub exceedances: usize,
    /// zeta = k / n.
    pub share: f64,
    /// GPD shape.
    pub xi: f64,
    /// GPD scale, seconds.
    pub sigma_s: f64,
    /// Anderson-Darling statistic of the exceedances against the fitted GPD.
    pub a2: f64,
    /// Its p-value for estimated parameters.
    pub p_value: f64,
    /// tmax lies within the confidence interval of the sample's q_max quantile.
    pub within_ci: bool,
    /// p_value >= alpha and `within_ci`.
    pub accepted: bool,
    /// Thresholds tried.
    pub tried: usize,
    /// u + y_q: terr,max of the tail model, seconds.
    pub terr_max_s: f64,
    /// min(S) + terr,max.
    pub tmax_s: f64,
}

impl TailFit {
    /// The parameters in the profile's order: [threshold (s), xi, sigma (s), share].
    pub fn params(&self) -> [f64; 4] {
        [self.threshold_s, self.xi, self.sigma_s, self.share]
    }
}

/// terr,max at `q` of a tail model with `params` ([`TailFit::params`]); None when the
/// parameters are not a tail model or `q` lies below the threshold (1 - q >= share).
pub fn terr_max_from_params(params: &[f64], q: f64) -> Option<f64> {
    let &[u, xi, sigma, share] = params else {
        return None;
    };
    let ok = |v: f64| v.is_finite();
    if !(ok(u) && ok(xi) && ok(sigma) && ok(share)) || u < 0.0 || sigma <= 0.0 {
        return None;
    }
    if !(share > 1.0 - q && share <= 1.0 && (gpd::XI_MIN..=gpd::XI_MAX).contains(&xi)) {
        return None;
    }
    let y = gpd::Gpd { xi, sigma }.upper_quantile((1.0 - q) / share);
    Some(u + y).filter(|t| t.is_finite())
}

/// The fit and test at one threshold `level` (steps 1-4 and 6 of the module docs; `tried` is
/// left at 1); None when the level has too few exceedances or no GPD could be fitted.
pub fn fit_at_level(sample: &Sample, q: QMax, alpha: f64, level: f64) -> Option<TailFit> {
    let min = sample.min();
    let n = sample.len();
    let u = sample.quantile_inverse_cdf(level) - min;
    let y: Vec<f64> = sample
        .sorted()
        .iter()
        .map(|&t| t - min - u)
        .filter(|&v| v > 0.0)
        .collect();
    let k = y.len();
    let share = k as f64 / n as f64;
    if k < MIN_EXCEEDANCES || share <= 1.0 - q.get() {
        return None;
    }
    let g = fit_mle(&y)?;
    let a2 = anderson_darling(&y, &g);
    let p_value = null::p_value(a2, g.xi);
    let terr = terr_max_from_params(&[u, g.xi, g.sigma, share], q.get())?;
    // Where the sample's own quantile may lie (step 4).
    let within = within(
        quantile_ci_with_coverage(n, q.get(), 0.95),
        sample,
        min + terr,
    );
    Some(TailFit {
        level,
        threshold_s: u,
        exceedances: k,
        share,
        xi: g.xi,
        sigma_s: g.sigma,
        a2,
        p_value,
        accepted: p_value >= alpha && within,
        within_ci: within,
        tried: 1,
        terr_max_s: terr,
        tmax_s: min + terr,
    })
}

/// Fits the tail of `sample` by the rule of the module docs; None when no threshold has
/// enough exceedances or no GPD could be fitted.
pub fn fit_tail(sample: &Sample, q: QMax, alpha: f64) -> Option<TailFit> {
    let mut best: Option<TailFit> = None;
    let mut tried = 0;
    for &level in &LEVELS {
        let Some(fit) = fit_at_level(sample, q, alpha, level) else {
            continue;
        };
        tried += 1;
        if fit.accepted {
            return Some(TailFit { tried, ..fit });
        }
        let better = match &best {
            None => true,
            Some(b) => fit.p_value > b.p_value,
        };
        if better {
            best = Some(fit);
        }
    }
    best.map(|b| TailFit { tried, ..b })
}

#[cfg(test)]
mod tests;
