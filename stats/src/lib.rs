//! # mpiover-stats: the statistical core of mpiover
//!
//! From a sample S = {t_1..t_N} of run-times of one MPI call under ideal conditions, decide
//! **tmax**, the longest time the call may take without overhead (the overhead paper,
//! §4-9). A later call of duration t is charged the overhead
//! t_oh = max(0, t - tmax). No MPI here: the calibration program and the `mpiover` command both
//! use this crate.
//!
//! ## The method, step by step, with the module that implements it
//!
//! | step | formula | paper | module |
//! |---|---|---|---|
//! | error sample | t = t_min + t_err (eq. 1); e_i = t_i - min(S) | §4 | [`histogram`] |
//! | histogram | class k holds e in [k w, (k+1) w), w >= timer resolution | §6 | [`histogram`] |
//! | Poisson model | p_k = lambda^k e^-lambda / k! (eq. 3) | §5 | [`model`] |
//! | exponential model | p_k = F((k+1)w) - F(kw) = e^(-lambda k w)(1 - e^(-lambda w)) (eq. 5-6) | §5 | [`model`] |
//! | fit | maximum likelihood L = prod p_k^f_k (eq. 7): closed forms lambda = k-bar (Poisson), lambda = ln(1 + 1/k-bar)/w (exponential) | §6 | [`model`] |
//! | goodness of fit | chi2^ = sum (B_i - E_i)^2 / E_i (eq. 8), E_i >= 5, nu = classes - 1 - 1, exact critical value and Wilson-Hilferty (eq. 9) | §7 | [`chi2`], [`special`] |
//! | refinement | min over lambda > 0 of sum abs(f_k - p_k(lambda)) (eq. 10), kept if chi2^ drops | §7 | [`refine`] |
//! | selection | lowest chi2^ among accepted models; none accepted: empirical quantile + CI | §7 | [`mod@fit`] |
//! | tmax | tmax = min(S) + t_err,max, t_err,max the q_max quantile, 0.8 <= q_max < 1 (eq. 2) | §4 | [`model`], [`mod@fit`] |
//! | sample size | tmax stable over growing subsets from N ~ 200 | §9 | [`stopping`] |
//!
//! Supporting pieces: [`sample`] (validated inputs), [`quantile`] (nonparametric confidence
//! intervals of quantiles, Hoefler & Belli), [`summary`] (median, quantiles, dropped counts),
//! [`significance`] (binomial tail and Benjamini-Hochberg for the report).
//!
//! ## Use
//!
//! ```
//! use mpiover_stats::{fit, FitOptions};
//! // 1 us floor plus 0-3 ticks of 1 ns
//! let times: Vec<f64> = (0..400).map(|i| 1e-6 + f64::from([0, 0, 1, 0, 2, 1, 0, 3][i % 8]) * 1e-9).collect();
//! let r = fit(&times, &FitOptions::default()).unwrap();
//! assert!(r.tmax_s >= r.min_s && r.tmax_s <= r.max_s + 1e-8);
//! println!("{}: tmax = {} s", r.decision(), r.tmax_s);
//! ```
//!
//! Every public function validates its input and returns [`StatsError`] rather than
//! panicking; no result contains NaN or an infinity.
//!
//! ## Performance
//!
//! `cargo run --release -p mpiover-stats --example fit_speed` times [`fit()`] (defaults,
//! refinement on) on synthetic samples with a 1 ns timer. Measured 2026-11-22 on a shared
//! 2-core VM (AMD EPYC, load average about 3 from other builds, so the ranges span four
//! runs; each figure is the fastest of 5 timing blocks):
//!
//! | errors | N | time per fit | samples per second |
//! |---|---|---|---|
//! | exponential (mean 1 us) | 1,000 | 50-63 us | 16-20 million |
//! | exponential (mean 1 us) | 100,000 | 2.3-2.8 ms | 36-44 million |
//! | Poisson (lambda = 2 ticks) | 1,000 | 25-37 us | 27-40 million |
//! | Poisson (lambda = 2 ticks) | 100,000 | 1.0-1.7 ms | 60-100 million |
//!
//! One check of the [`StoppingRule`] (4 fits) took 0.12-0.16 ms at N = 200 and 0.23-0.29 ms
//! at N = 1,000. A calibration measures each sample in a synchronization window of tens of
//! microseconds or more, so 200 samples take milliseconds at least; fitting them, and checking
//! the stopping rule every 25 samples, costs a small fraction of that and is never the
//! bottleneck.

pub mod chi2;
pub mod compare;
pub mod error;
pub mod fit;
pub mod histogram;
pub mod model;
pub mod quantile;
pub mod refine;
pub mod sample;
pub mod significance;
pub mod special;
pub mod stopping;
pub mod summary;

pub use chi2::{Group, Verdict};
pub use compare::mann_whitney_binned;
pub use error::StatsError;
pub use fit::{fit, FitOptions, FitResult, ModelFit};
pub use histogram::{class_index, BinRule, Binning, Histogram};
pub use model::{Model, ModelKind};
pub use quantile::{
    min_n_for_ci, min_n_for_ci_with_coverage, order_stat_coverage, quantile_ci,
    quantile_ci_with_coverage, QuantileCi,
};
pub use refine::Objective;
pub use sample::{QMax, Sample};
pub use significance::{
    benjamini_hochberg, benjamini_hochberg_adjusted, beta_binomial_sf, binomial_sf, ExceedancePrior,
};
pub use special::{chi2_critical, chi2_critical_wilson_hilferty, chi2_sf, normal_upper_quantile};
pub use stopping::{Stop, StoppingRule};
pub use summary::{summarize, Summary};
