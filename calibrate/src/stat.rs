//! The one place where the calibrator calls the statistical core
//! (`mpiover-stats`): fitting tmax, the stopping rule, summaries.

use mpiover_stats::{fit, summarize, FitOptions, FitResult, StoppingRule};

/// Options of the statistics, as recorded in the profile's method.
#[derive(Debug, Clone, Copy)]
pub struct StatOpts {
    pub q_max: f64,
    pub alpha: f64,
    pub resolution_s: f64,
    pub min_samples: u64,
    pub max_samples: u64,
    pub rel_tol: f64,
}

/// Order statistics of a sample.
#[derive(Debug, Clone, Copy)]
pub struct Summ {
    pub min_s: f64,
    pub median_s: f64,
    pub median_ci_s: Option<[f64; 2]>,
    pub max_s: f64,
    pub q90_s: Option<f64>,
    pub q99_s: Option<f64>,
}

impl StatOpts {
    fn fit_options(&self) -> FitOptions {
        FitOptions {
            resolution_s: self.resolution_s,
            q_max: self.q_max,
            alpha: self.alpha,
            ..FitOptions::default()
        }
    }

    fn rule(&self) -> StoppingRule {
        StoppingRule {
            min_samples: self.min_samples as usize,
            max_samples: self.max_samples.max(self.min_samples) as usize,
            rel_tol: self.rel_tol,
            ..StoppingRule::default()
        }
    }
}

/// Fit the error models (the overhead paper §5-7): tmax with the chosen model
/// (the accepted model with the lowest BIC; none accepted: the empirical
/// q_max quantile, `fallback`). `mpiover_common::profile::fitted::apply`
/// writes it into an entry.
pub fn fit_sample(sample: &[f64], o: &StatOpts) -> Result<FitResult, String> {
    fit(sample, &o.fit_options()).map_err(|e| e.to_string())
}

/// The stopping rule of the statistical core: tmax of the sample and of its
/// recent prefixes agree within `rel_tol` of terr,max.
pub fn stable(sample: &[f64], o: &StatOpts) -> bool {
    sample.len() as u64 >= o.min_samples && o.rule().check(sample, &o.fit_options()).is_done()
}

/// Min, median with its 95 % nonparametric confidence interval, max.
pub fn summarize_sample(sample: &[f64]) -> Summ {
    match summarize(sample) {
        Ok(s) => Summ {
            min_s: s.min_s,
            median_s: s.median_s,
            median_ci_s: s.median_ci.map(|(a, b)| [a, b]),
            max_s: s.max_s,
            q90_s: Some(s.q90),
            q99_s: Some(s.q99),
        },
        Err(_) => {
            let min = sample.iter().copied().fold(f64::INFINITY, f64::min);
            let max = sample.iter().copied().fold(0.0, f64::max);
            Summ {
                min_s: min,
                median_s: min,
                median_ci_s: None,
                max_s: max,
                q90_s: None,
                q99_s: None,
            }
        }
    }
}
