//! The error model an entry's tmax came from, as the profile names it, and
//! the test of a tail model.
use serde::{Deserialize, Serialize};

/// The error model a tmax was fitted with (`docs/method.md`, "tmax from a
/// sample: error models").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FitModel {
    Poisson,
    Exponential,
    /// Negative binomial in the class index: params [mean (classes), r].
    #[serde(rename = "negbinomial")]
    NegBinomial,
    /// Discretized log-normal error: params [median (s), sigma].
    LogNormal,
    /// Poisson body plus geometric tail: params [lambda (classes), tail_lambda (1/s),
    /// tail_weight].
    Mixture,
    /// No body model fits; a generalized Pareto distribution fits the errors above a
    /// threshold: params [threshold (s above min), xi, sigma (s), share above the
    /// threshold]. `chi2`, `df` and `critical` are then the nearest body model's.
    Tail,
}

impl FitModel {
    /// The spelling of the profile file (the statistics' `ModelKind::name`).
    pub fn as_str(self) -> &'static str {
        match self {
            FitModel::Poisson => "poisson",
            FitModel::Exponential => "exponential",
            FitModel::NegBinomial => "negbinomial",
            FitModel::LogNormal => "lognormal",
            FitModel::Mixture => "mixture",
            FitModel::Tail => "tail",
        }
    }

    /// Parameters of a body family (the statistics' `ModelKind::n_params`,
    /// held equal by a test of `fitted`); none for the tail model. Here as
    /// well because the preload library reads profiles without the
    /// statistics crate.
    pub fn body_params(self) -> Option<usize> {
        match self {
            FitModel::Poisson | FitModel::Exponential => Some(1),
            FitModel::NegBinomial | FitModel::LogNormal => Some(2),
            FitModel::Mixture => Some(3),
            FitModel::Tail => None,
        }
    }

    /// True for the tail model, false for the body families.
    pub fn is_tail(self) -> bool {
        self == FitModel::Tail
    }
}

/// The goodness-of-fit test of a tail model (`docs/method.md`, "A tail model
/// where no body fits").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TailTest {
    /// Quantile level of the threshold.
    pub level: f64,
    /// Exceedances over the threshold.
    pub exceedances: u64,
    /// Anderson-Darling statistic and its p-value for estimated parameters.
    pub a2: f64,
    pub p_value: f64,
    pub accepted: bool,
}
