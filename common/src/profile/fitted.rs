//! A fit of the statistical core written into an entry's fields: the one
//! mapping the calibrator (when it measures) and `mpiover profile refit`
//! (when it fits stored samples again) share.
use mpiover_stats::FitResult;

use super::{FitModel, Measured};

impl FitModel {
    /// The profile's name of a model family of the statistical core (the
    /// same lowercase spelling); none for a family this format lacks.
    pub fn from_name(name: &str) -> Option<FitModel> {
        serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
    }
}

/// Sets the fit fields of `m` from `f`: tmax, the chosen model (none when
/// every model was rejected: `fallback`, tmax the empirical quantile) with
/// its parameters, and the test of the chosen model, or of the nearest one
/// (lowest chi2 / critical value: the families have different degrees of
/// freedom) when none was accepted, so that a reader sees how far off it was.
pub fn apply(f: &FitResult, m: &mut Measured) {
    let chosen = f.chosen.and_then(|c| f.model(c));
    let ratio = |x: &mpiover_stats::ModelFit| x.critical.map_or(f64::INFINITY, |c| x.chi2 / c);
    let shown = chosen.or_else(|| f.models.iter().min_by(|a, b| ratio(a).total_cmp(&ratio(b))));
    m.tmax_s = f.tmax_s;
    m.model = chosen.and_then(|c| FitModel::from_name(c.kind.name()));
    m.params = chosen.map(|c| c.params.clone());
    m.lambda = shown.map(|s| s.lambda);
    m.chi2 = shown.map(|s| s.chi2);
    m.df = shown.map(|s| s.df as u64);
    m.critical = shown.and_then(|s| s.critical);
    m.accepted = chosen.is_some_and(|c| c.accepted);
    m.fallback = f.fallback;
    m.bin_width_s = Some(f.bin_width_s);
}
