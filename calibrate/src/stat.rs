//! The one place where the calibrator calls the statistical core
//! (`mpiover-stats`): fitting tmax, the stopping rule, summaries.

use mpiover_stats::{fit, summarize, FitOptions, StoppingRule};

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

/// A fitted tmax with the model that produced it.
#[derive(Debug, Clone, Default)]
pub struct Fitted {
    pub tmax_s: f64,
    pub model: Option<mpiover_stats::ModelKind>,
    pub lambda: Option<f64>,
    /// Every parameter of the chosen model (none when no model was chosen).
    pub params: Option<Vec<f64>>,
    pub chi2: Option<f64>,
    pub df: Option<u64>,
    pub critical: Option<f64>,
    pub accepted: bool,
    pub fallback: bool,
    pub bin_width_s: Option<f64>,
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

/// Fit the error models (the overhead paper §5-7) and return tmax with the chosen model
/// (the model with the lowest BIC among the accepted ones; none
/// accepted: the empirical q_max quantile, `fallback`).
pub fn fit_sample(sample: &[f64], o: &StatOpts) -> Result<Fitted, String> {
    let r = fit(sample, &o.fit_options()).map_err(|e| e.to_string())?;
    let chosen = r.chosen.and_then(|c| r.models.iter().find(|m| m.kind == c));
    // The model fields describe the chosen model, or the best-fitting
    // (lowest chi-square) one when every model was rejected.
    let shown = chosen.or_else(|| r.models.iter().min_by(|a, b| a.chi2.total_cmp(&b.chi2)));
    Ok(Fitted {
        tmax_s: r.tmax_s,
        model: chosen.map(|m| m.kind),
        lambda: shown.map(|m| m.lambda),
        params: chosen.map(|m| m.params.clone()),
        chi2: shown.map(|m| m.chi2),
        df: shown.map(|m| m.df as u64),
        critical: shown.and_then(|m| m.critical),
        accepted: chosen.is_some_and(|m| m.accepted),
        fallback: r.fallback,
        bin_width_s: Some(r.bin_width_s),
    })
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
