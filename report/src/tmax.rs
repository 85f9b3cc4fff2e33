//! Where tmax comes from when a run is re-analysed against a profile.
//!
//! The analysis asks a [`TmaxSource`] for the tmax of one call of each
//! aggregation key (function, p, bytes, role). The real source is a calibrated
//! profile (`common::profile`); tests use [`FnTmax`].

use std::path::Path;

use mpiover_common::completion::{resolve, KeyRef, Missing};
use mpiover_common::profile::{Environment, FitModel, Profile};

pub use mpiover_aggregate::Tmax;

/// The tmax of each call, or why the source has none for this key.
pub trait TmaxSource: Sync {
    /// The key is the record entry's (bytes as recorded, role, and for
    /// completions what they completed); the source maps it to its own
    /// (`mpiover_common::completion::resolve`).
    fn tmax(&self, k: &KeyRef) -> Result<Tmax, Missing>;

    /// Name shown in the methods block (the profile's path).
    fn name(&self) -> String {
        "profile".to_string()
    }

    /// The q_max the tmax values were computed at, when known.
    fn q_max(&self) -> Option<f64> {
        None
    }

    /// Whether the profile's environment matches the run's (as far as the
    /// records tell it: MPI library, hosts, ranks per host), with a note
    /// saying why not. `None` when the source cannot tell.
    fn matches(&self, _run: &Environment) -> Option<(bool, String)> {
        None
    }

    /// Smallest message size (bytes) that the library sends with the
    /// rendezvous protocol within a host, and across hosts when measured,
    /// when the profile knows it.
    fn rendezvous_bytes(&self) -> Option<(u64, Option<u64>)> {
        None
    }

    /// The profile's entries by the source of their tmax, when known.
    fn tmax_from(&self) -> Option<crate::model::TmaxFrom> {
        None
    }

    /// The profile itself, when the source is one: the level check reads
    /// its entries' fastest and median calls.
    fn profile(&self) -> Option<&Profile> {
        None
    }
}

// The aggregate's folds ask their tmax through the aggregate's own trait,
// which knows nothing of profiles: any source given to the report answers it.
impl mpiover_aggregate::TmaxLookup for dyn TmaxSource + '_ {
    fn tmax(&self, k: &KeyRef) -> Result<Tmax, Missing> {
        TmaxSource::tmax(self, k)
    }
}

/// A tmax source made of a closure: for tests and tools.
pub struct FnTmax<F> {
    pub name: String,
    pub q_max: Option<f64>,
    pub f: F,
}

impl<F> TmaxSource for FnTmax<F>
where
    F: Fn(&str, u32, u64, Option<&str>) -> Option<(f64, bool)> + Sync,
{
    fn tmax(&self, k: &KeyRef) -> Result<Tmax, Missing> {
        (self.f)(k.function, k.p, k.bytes, k.role)
            .map(|(s, out_of_range)| Tmax {
                s,
                out_of_range,
                basis: None,
                composed: None,
            })
            .ok_or(Missing("no tmax for this function"))
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn q_max(&self) -> Option<f64> {
        self.q_max
    }
}

/// Opens a calibrated profile as a tmax source, at `q_max` when given.
///
pub fn open_profile(path: &Path, q_max: Option<f64>) -> anyhow::Result<Box<dyn TmaxSource>> {
    let mut profile = Profile::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut name = path.display().to_string();
    if let Some(q) = q_max {
        if (q - profile.method.q_max).abs() > 1e-12 {
            let approx = retarget(&mut profile, q).map_err(|e| {
                anyhow::anyhow!("profile {}: tmax at q_max = {q}: {e}", path.display())
            })?;
            name = format!(
                "{name} (tmax re-computed at q_max = {q}; {approx} fallback entries interpolated \
                 between their stored quantiles)"
            );
        }
    }
    Ok(Box::new(ProfileTmax { name, profile }))
}

/// Re-computes every entry's tmax at another q_max, without re-measuring:
/// entries with a fitted model (the overhead paper §7) take `min + terr_max(q)` of that
/// model with its stored parameters (or, in older profiles, lambda) and bin width, a tail
/// model its generalized Pareto quantile where q lies above its threshold; entries that fell back to the empirical quantile are interpolated linearly in q
/// between their stored quantiles (median at 0.5, q90, q99, max at 1). Returns how many entries
/// were interpolated that way (an approximation, named in the methods block).
pub fn retarget(profile: &mut Profile, q: f64) -> Result<usize, mpiover_stats::StatsError> {
    let qm = mpiover_stats::QMax::new(q)?;
    let resolution = profile.environment.timer.resolution_s;
    let mut approx = 0;
    for e in &mut profile.entries {
        // A tail model's quantile at q, where q lies above its threshold.
        if e.model == Some(FitModel::Tail) && !e.fallback {
            if let Some(t) = e
                .params
                .as_deref()
                .and_then(|p| mpiover_stats::tail::terr_max_from_params(p, q))
            {
                e.tmax_s = e.min_s + t;
                continue;
            }
        }
        let kind = e.model.and_then(FitModel::kind);
        // The stored parameters; profiles written before them have only lambda, which is
        // all a Poisson or exponential model needs.
        let fitted = match (kind, &e.params, e.lambda, e.bin_width_s) {
            (Some(k), Some(p), _, Some(w)) => k.from_params(p, w).map(|m| (m, w)),
            (Some(k), None, Some(l), Some(w)) => k.with_lambda(l, w).map(|m| (m, w)),
            _ => None,
        };
        match fitted {
            Some((m, w)) => e.tmax_s = e.min_s + m.terr_max_s(qm, w, resolution),
            None => {
                let mut pts = vec![(0.5, e.median_s)];
                pts.extend(e.q90_s.map(|v| (0.9, v)));
                pts.extend(e.q99_s.map(|v| (0.99, v)));
                pts.extend(e.max_s.map(|v| (1.0, v)));
                e.tmax_s = interpolate(&pts, q).max(e.min_s);
                approx += 1;
            }
        }
    }
    profile.method.q_max = q;
    profile.invalidate_index();
    Ok(approx)
}

/// Piecewise-linear interpolation through increasing `(q, value)` points,
/// clamped to the first and last.
fn interpolate(pts: &[(f64, f64)], q: f64) -> f64 {
    match pts {
        [] => 0.0,
        [(_, v)] => *v,
        _ => {
            if q <= pts[0].0 {
                return pts[0].1;
            }
            for w in pts.windows(2) {
                let ((q0, v0), (q1, v1)) = (w[0], w[1]);
                if q <= q1 {
                    return v0 + (v1 - v0) * (q - q0) / (q1 - q0);
                }
            }
            pts[pts.len() - 1].1
        }
    }
}

/// A calibrated profile as a tmax source.
struct ProfileTmax {
    name: String,
    profile: Profile,
}

impl TmaxSource for ProfileTmax {
    fn tmax(&self, k: &KeyRef) -> Result<Tmax, Missing> {
        let r = resolve(&self.profile, k)?;
        let l = r.lookup;
        if !(l.tmax_s.is_finite() && l.tmax_s >= 0.0) {
            return Err(Missing("the profile's tmax is not a number"));
        }
        Ok(Tmax {
            s: l.tmax_s,
            out_of_range: l.out_of_range,
            basis: Some(l.basis),
            composed: r.composed,
        })
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn q_max(&self) -> Option<f64> {
        Some(self.profile.method.q_max)
    }
    fn rendezvous_bytes(&self) -> Option<(u64, Option<u64>)> {
        self.profile.protocol.as_ref()?.rendezvous_bytes_by_host()
    }
    fn tmax_from(&self) -> Option<crate::model::TmaxFrom> {
        Some(crate::model::TmaxFrom::of(&self.profile))
    }
    fn profile(&self) -> Option<&Profile> {
        Some(&self.profile)
    }
    fn matches(&self, run: &Environment) -> Option<(bool, String)> {
        Some(match self.profile.matches(run) {
            Ok(()) => (true, String::new()),
            Err(m) => (false, m.to_string()),
        })
    }
}

#[cfg(test)]
mod retarget_tests {
    use super::*;
    use mpiover_common::profile::{Environment, Method, ProfileEntry};

    fn entry(model: Option<&str>, lambda: Option<f64>) -> ProfileEntry {
        let mut e: ProfileEntry = serde_json::from_value(serde_json::json!({
            "function": "MPI_Recv", "p": 2, "bytes": 8, "role": null,
            "n": 200, "n_invalid": 0, "min_s": 1e-6, "median_s": 1.2e-6,
            "q90_s": 2e-6, "q99_s": 4e-6, "max_s": 8e-6, "tmax_s": 4e-6,
            "model": model, "lambda": lambda, "bin_width_s": 1e-7,
            "accepted": model.is_some(), "fallback": model.is_none()
        }))
        .expect("entry json");
        e.tmax_s = 4e-6;
        e
    }

    #[test]
    fn lower_q_gives_lower_tmax_and_model_entries_follow_the_model() {
        let mut p = Profile::new(Environment::default(), Method::default());
        p.method.q_max = 0.99;
        p.environment.timer.resolution_s = 1e-9;
        p.push_entry(entry(Some("exponential"), Some(1e6)));
        let approx = retarget(&mut p, 0.9).expect("valid q");
        assert_eq!(approx, 0);
        // min + -ln(1 - 0.9) / lambda
        let want = 1e-6 + (10f64).ln() / 1e6;
        assert!(
            (p.entries[0].tmax_s - want).abs() < 1e-12,
            "{}",
            p.entries[0].tmax_s
        );
    }

    /// A model with more than one parameter is rebuilt from `params`; stored params take
    /// precedence over lambda.
    #[test]
    fn entries_with_params_follow_their_model() {
        let mut p = Profile::new(Environment::default(), Method::default());
        p.method.q_max = 0.99;
        p.environment.timer.resolution_s = 1e-9;
        let mut e = entry(Some("lognormal"), Some(5e-7));
        e.params = Some(vec![5e-7, 0.5]);
        p.push_entry(e);
        let mut e = entry(Some("exponential"), Some(1.0));
        e.bytes = 16; // another key
        e.params = Some(vec![1e6]);
        p.push_entry(e);
        assert_eq!(retarget(&mut p, 0.9).expect("valid q"), 0);
        // min + median e^(sigma z_0.9)
        let want = 1e-6 + 5e-7 * (0.5f64 * 1.281_551_565_544_601).exp();
        assert!((p.entries[0].tmax_s / want - 1.0).abs() < 1e-9);
        let want = 1e-6 + (10f64).ln() / 1e6;
        assert!((p.entries[1].tmax_s - want).abs() < 1e-12);
        // Invalid params: the entry falls back to its stored quantiles.
        p.entries[0].params = Some(vec![5e-7]);
        assert_eq!(retarget(&mut p, 0.9).expect("valid q"), 1);
    }

    #[test]
    fn fallback_entries_interpolate_their_quantiles() {
        let mut p = Profile::new(Environment::default(), Method::default());
        p.push_entry(entry(None, None));
        assert_eq!(retarget(&mut p, 0.9).expect("valid q"), 1);
        assert!((p.entries[0].tmax_s - 2e-6).abs() < 1e-15);
        retarget(&mut p, 0.945).expect("valid q");
        assert!((p.entries[0].tmax_s - 3e-6).abs() < 1e-12);
        assert!(retarget(&mut p, 1.5).is_err());
    }
}
