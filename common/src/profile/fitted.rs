//! A fit of the statistical core written into an entry's fields: the one
//! mapping the calibrator (when it measures) and `mpiover profile refit`
//! (when it fits stored samples again) share.
use mpiover_stats::{FitResult, ModelKind};

use super::{FitModel, Measured, TailTest};

impl FitModel {
    /// The profile's name of a body family of the statistical core. A
    /// `match` without a wildcard, so that a family added to the statistics
    /// does not compile until the profile format has a name for it.
    pub fn of_kind(kind: ModelKind) -> FitModel {
        match kind {
            ModelKind::Poisson => FitModel::Poisson,
            ModelKind::Exponential => FitModel::Exponential,
            ModelKind::NegBinomial => FitModel::NegBinomial,
            ModelKind::LogNormal => FitModel::LogNormal,
            ModelKind::Mixture => FitModel::Mixture,
        }
    }

    /// The statistics' body family of a profile's model; none for the tail
    /// model, which is no body family.
    pub fn kind(self) -> Option<ModelKind> {
        match self {
            FitModel::Poisson => Some(ModelKind::Poisson),
            FitModel::Exponential => Some(ModelKind::Exponential),
            FitModel::NegBinomial => Some(ModelKind::NegBinomial),
            FitModel::LogNormal => Some(ModelKind::LogNormal),
            FitModel::Mixture => Some(ModelKind::Mixture),
            FitModel::Tail => None,
        }
    }
}

/// Sets the fit fields of `m` from `f`: tmax, the chosen model (the tail
/// model when no body model was accepted and the tail's test accepts; none
/// when every model was rejected: `fallback`, tmax the empirical quantile)
/// with its parameters, and the chi-square test of the chosen body model, or
/// of the nearest one (lowest chi2 / critical value: the families have
/// different degrees of freedom) when none was accepted, so that a reader
/// sees how far off it was.
pub fn apply(f: &FitResult, m: &mut Measured) {
    let chosen = f.chosen.and_then(|c| f.model(c));
    let ratio = |x: &mpiover_stats::ModelFit| x.critical.map_or(f64::INFINITY, |c| x.chi2 / c);
    let shown = chosen.or_else(|| f.models.iter().min_by(|a, b| ratio(a).total_cmp(&ratio(b))));
    let tail = f.tail.as_ref().filter(|t| t.accepted && chosen.is_none());
    m.tmax_s = f.tmax_s;
    m.model = match (chosen, tail) {
        (Some(c), _) => Some(FitModel::of_kind(c.kind)),
        (None, Some(_)) => Some(FitModel::Tail),
        (None, None) => None,
    };
    m.params = match (chosen, tail) {
        (Some(c), _) => Some(c.params.clone()),
        (None, Some(t)) => Some(t.params().to_vec()),
        (None, None) => None,
    };
    m.tail_test = f.tail.as_ref().map(|t| TailTest {
        level: t.level,
        exceedances: t.exceedances as u64,
        a2: t.a2,
        p_value: t.p_value,
        accepted: t.accepted,
    });
    m.lambda = shown.map(|s| s.lambda);
    m.chi2 = shown.map(|s| s.chi2);
    m.df = shown.map(|s| s.df as u64);
    m.critical = shown.and_then(|s| s.critical);
    m.accepted = chosen.is_some_and(|c| c.accepted) || tail.is_some();
    m.fallback = f.fallback;
    m.bin_width_s = Some(f.bin_width_s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_body_family_has_a_profile_name_and_back() {
        for k in ModelKind::ALL {
            let m = FitModel::of_kind(k);
            assert_eq!(m.kind(), Some(k));
            // The same spelling in both crates (profile files and fit output agree).
            assert_eq!(m.as_str(), k.name());
            // The parameter count the profile reader (without statistics)
            // judges an entry's basis by.
            assert_eq!(m.body_params(), Some(k.n_params()), "{}", k.name());
        }
        assert_eq!(FitModel::Tail.kind(), None);
        assert_eq!(FitModel::Tail.body_params(), None);
    }
}
