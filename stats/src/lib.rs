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
//! | Poisson model | p_k = lambda^k e^-lambda / k! (eq. 3) | §5 | [`model`], [`model::poisson`] |
//! | exponential model | p_k = F((k+1)w) - F(kw) = e^(-lambda k w)(1 - e^(-lambda w)) (eq. 5-6) | §5 | [`model`], [`model::exponential`] |
//! | negative binomial | p_k = Gamma(k+r)/(Gamma(r) k!) (r/(r+m))^r (m/(r+m))^k: overdispersed Poisson, r = 1 the geometric | - | [`model::negbin`] |
//! | discretized log-normal | p_k = Phi((ln((k+1)w) - mu)/sigma) - Phi((ln(kw) - mu)/sigma): mode above 0, heavy tail | - | [`model::lognormal`] |
//! | body + tail mixture | p_k = (1 - pi) Poisson(lambda) + pi geometric(rho): most calls near the floor, a fraction delayed | - | [`model::mixture`] |
//! | fit | maximum likelihood L = prod p_k^f_k (eq. 7), ln L summed over the occupied classes: closed forms lambda = k-bar (Poisson), lambda = ln(1 + 1/k-bar)/w (exponential); negative binomial m = k-bar and r by Brent's root of the score; log-normal by Nelder-Mead; mixture by EM (SQUAREM) | §6 | [`model`] |
//! | goodness of fit | chi2^ = sum (B_i - E_i)^2 / E_i (eq. 8), E_i >= 5, nu = classes - 1 - parameters, exact critical value and Wilson-Hilferty (eq. 9) | §7 | [`chi2`], [`special`] |
//! | refinement | min over lambda > 0 of sum abs(f_k - p_k(lambda)) (eq. 10), kept if chi2^ drops; one-parameter models only | §7 | [`refine`] |
//! | selection | lowest BIC = k ln N - 2 ln L among accepted models (the paper, with two one-parameter models: lowest chi2^); none accepted: empirical quantile + CI | §7 | [`mod@fit`] |
//! | tmax | tmax = min(S) + t_err,max, t_err,max the q_max quantile, 0.8 <= q_max < 1 (eq. 2) | §4 | [`model`], [`mod@fit`] |
//! | tail model | no body accepted: a generalized Pareto distribution above the lowest accepted of five thresholds (Anderson-Darling), tmax its q_max quantile | - | [`tail`] |
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
//! refinement on, all five families) on synthetic samples with a 1 ns timer. Measured
//! 2026-11-26 on a shared 2-core VM (AMD EPYC, load average 3-4.5 from other builds and test
//! runs, so the ranges span several runs; each figure is the fastest of 5 timing blocks):
//!
//! | errors | N | time per fit | samples per second |
//! |---|---|---|---|
//! | exponential (mean 1 us) | 1,000 | 0.23-0.39 ms | 2.5-4.3 million |
//! | exponential (mean 1 us) | 100,000 | 4.6-7.1 ms | 14-22 million |
//! | Poisson (lambda = 2 ticks) | 1,000 | 0.12-0.15 ms | 6.7-8.1 million |
//! | Poisson (lambda = 2 ticks) | 100,000 | 2.0-2.4 ms | 41-50 million |
//!
//! Per family at N = 400 (maximum likelihood, then grouping and chi-square test), microseconds:
//!
//! | errors | poisson | exponential | negbinomial | lognormal | mixture | whole fit() |
//! |---|---|---|---|---|---|---|
//! | exponential | 0.1 / 3-6 | 0.1 / 2-5 | 4-8 / 17-32 | 53-95 / 59-119 | 37-58 / 47-71 | 250-450 |
//! | Poisson(2) | 0.1 / 3-6 | 0.1 / 2-4 | 0.1 / 5-10 | 18-45 / 21-40 | 16-17 / 23-33 | 90-230 |
//! | body (Poisson ticks of 10 ns) + 15 % exponential delay | 0.1 / 5-10 | 0.1 / 4-8 | 19-37 / 52-91 | 118-240 / 130-275 | 13-30 / 31-62 | 350-760 |
//!
//! The cost is per occupied class, not per sample (a log-normal evaluation is two erfc per
//! class, up to [`model::lognormal::MAX_EVALS`] of them), so it grows with the spread of the
//! sample in classes rather than with N. The whole fit() is about twice the sum of the families
//! (the refinement of the two one-parameter models, the quantiles, sorting). On the kept samples
//! of nine real calibration profiles (1,454 entries, N ~ 400; `examples/real_samples.rs`) a fit
//! took 0.23 ms median, 0.38 ms at the 90th percentile.
//!
//! One check of the [`StoppingRule`] (4 fits) took 0.63-1.5 ms at N = 200 and 1.0-2.3 ms at
//! N = 1,000. A calibration measures each sample in a synchronization window of tens of
//! microseconds or more, so the 25 samples between two checks take about a millisecond at
//! least; the check costs as much again at most and is never the bottleneck (a faster log-normal
//! fit, by Newton's method on the analytic derivatives of the binned likelihood, would halve it).

pub mod chi2;
pub mod compare;
pub mod error;
pub mod estimators;
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
pub mod tail;

pub use chi2::{Group, Verdict};
pub use compare::mann_whitney_binned;
pub use error::StatsError;
pub use estimators::Estimator;
pub use fit::{fit, FitOptions, FitResult, ModelFit};
pub use histogram::{class_index, BinRule, Binning, ErrorClasses};
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
pub use tail::{fit_at_level, fit_tail, TailFit};
