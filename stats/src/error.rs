//! The one error type of the crate. Every message says what was wrong and, where it helps,
//! what to do about it; no function of the crate panics or returns NaN instead.
use thiserror::Error;

/// Why a statistical computation could not be done.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The sample is smaller than the caller's (or the method's) minimum.
    #[error("too few samples: {n} given, at least {min} needed")]
    TooFewSamples { n: usize, min: usize },
    /// Every run-time is the same number: there is no error distribution to fit.
    #[error("all {n} run-times are equal ({value_s:e} s): there is no spread to fit a model to")]
    AllEqual { n: usize, value_s: f64 },
    /// A value is NaN or infinite (`index` counts from 0).
    #[error("sample value at index {index} is not a finite number ({value})")]
    NonFinite { index: usize, value: f64 },
    /// A value is negative (`index` counts from 0).
    #[error(
        "sample value at index {index} is negative ({value:e} s): a run-time cannot be negative"
    )]
    Negative { index: usize, value: f64 },
    /// The timer resolution must be a positive, finite number of seconds.
    #[error("timer resolution must be a positive number of seconds, got {0:e}")]
    BadResolution(f64),
    /// The bin width must be a positive, finite number of seconds.
    #[error("bin width must be a positive number of seconds, got {0:e}")]
    BadBinWidth(f64),
    /// The histogram's bin width may never be finer than the timer can resolve (the overhead paper §6).
    #[error("bin width {bin_width_s:e} s is below the timer resolution {resolution_s:e} s")]
    BinWidthBelowResolution { bin_width_s: f64, resolution_s: f64 },
    /// q_max outside the range the method allows (the overhead paper §4: 0.8 <= q_max < 1).
    #[error("q_max must satisfy 0.8 <= q_max < 1, got {0}")]
    BadQuantile(f64),
    /// A significance level outside (0, 1).
    #[error("significance level alpha must satisfy 0 < alpha < 1, got {0}")]
    BadAlpha(f64),
    /// A confidence level outside (0, 1).
    #[error("confidence level must satisfy 0 < level < 1, got {0}")]
    BadConfidence(f64),
    /// The minimum expected count per chi-square class must be positive and finite.
    #[error("minimum expected count per class must be positive, got {0}")]
    BadMinExpected(f64),
    /// Every error falls into class 0: the bin width is wider than the whole spread.
    #[error(
        "all {n} errors fall into class 0 (bin width {bin_width_s:e} s, largest error \
         {max_error_s:e} s): no model can be fitted; use a smaller bin width or resolution"
    )]
    SingleClass {
        n: usize,
        bin_width_s: f64,
        max_error_s: f64,
    },
    /// A stopping rule whose parameters contradict each other.
    #[error("invalid stopping rule: {0}")]
    BadStoppingRule(String),
}
