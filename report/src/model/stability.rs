//! How far the report's verdicts hang on one calibration: the sites whose
//! verdict a wider tmax would change, and the machine's latency level during
//! the run against the calibration's (`docs/method.md`, "Verdicts that do not
//! hang on one calibration").

use serde::{Deserialize, Serialize};

/// What the verdicts were checked against besides tmax itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// The factor every tmax was widened by to tell a significant site from
    /// a marginal one: how far two calibrations of one machine put tmax
    /// apart. 1 when the check was off or no site was tested.
    pub tmax_spread: f64,
    /// The run's latency level against the calibration's, when the run had
    /// keys to judge it by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
}

/// The run's fastest calls against the calibration, key by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// How much slower the run's calls were than calibrated: the median over
    /// the counted keys of their `ratio`; 1 when it was not consistently
    /// above 1.
    pub factor: f64,
    /// The factor was applied: sites whose overhead lies within it are
    /// `within level shift`, not significant.
    pub shifted: bool,
    /// The quantile of a key's calls that stands for its fastest calls.
    pub fast_quantile: f64,
    /// Every key of the run with enough calls and a profile entry.
    pub keys: Vec<LevelKey>,
}

/// One (function, p, bytes) of the run, all its sites merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelKey {
    pub function: String,
    pub p: u32,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub calls: u64,
    /// The run's `fast_quantile` of these calls.
    pub run_fast_s: f64,
    /// The profile's fastest and median call of the same key.
    pub profile_min_s: f64,
    pub profile_median_s: f64,
    /// `run_fast_s / profile_median_s`: above 1, even the run's fast calls
    /// were slower than the calibration's typical one.
    pub ratio: f64,
    /// Whether the key counts towards the factor: a ratio beyond what a
    /// latency level explains is a wait of the program, not the machine.
    pub counted: bool,
}

/// A site's figures against a widened tmax.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Margin {
    /// Every tmax of the site times this.
    pub factor: f64,
    pub overhead_s: f64,
    pub calls_over_tmax: f64,
    /// Benjamini-Hochberg adjusted p-value of the calls over the widened tmax.
    pub q_value: f64,
}
