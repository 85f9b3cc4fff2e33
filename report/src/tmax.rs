//! Where tmax comes from when a run is re-analysed against a profile.
//!
//! The analysis asks a [`TmaxSource`] for the tmax of one call of each
//! aggregation key (function, p, bytes, role). The real source is a calibrated
//! profile (`common::profile`); tests use [`FnTmax`].

use std::path::Path;

use mpiover_common::functions::profile_key;
use mpiover_common::profile::{Environment, Profile};

/// tmax of one call: `(tmax_s, out_of_range)`, or `None` when the source has
/// nothing for this function.
pub trait TmaxSource: Sync {
    /// `bytes` and `role` are the record entry's; `completes` the completed
    /// request's function for completions. The source maps them to its key
    /// (`mpiover_common::functions::profile_key`).
    fn tmax(
        &self,
        function: &str,
        p: u32,
        bytes: u64,
        role: Option<&str>,
        completes: Option<&str>,
    ) -> Option<(f64, bool)>;

    /// Name shown in the methods block (the profile's path).
    fn name(&self) -> String {
        "profile".to_string()
    }

    /// The q_max the tmax values were computed at, when known.
    fn q_max(&self) -> Option<f64> {
        None
    }

    /// Whether the profile's environment matches the run, with a note saying
    /// why not. `None` when the source cannot tell.
    fn matches(&self, _mpi_library: &str, _hosts: &[String]) -> Option<(bool, String)> {
        None
    }

    /// Smallest message size (bytes) that the library sends with the
    /// rendezvous protocol, when the profile knows it.
    fn rendezvous_bytes(&self) -> Option<u64> {
        None
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
    fn tmax(
        &self,
        function: &str,
        p: u32,
        bytes: u64,
        role: Option<&str>,
        _completes: Option<&str>,
    ) -> Option<(f64, bool)> {
        (self.f)(function, p, bytes, role)
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
/// The profile format and its lookup live in `mpiover_common::profile`
/// (issue 4); until it exposes a lookup this refuses with a clear message.
pub fn open_profile(path: &Path, q_max: Option<f64>) -> anyhow::Result<Box<dyn TmaxSource>> {
    let profile = Profile::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(q) = q_max {
        if (q - profile.method.q_max).abs() > 1e-12 {
            anyhow::bail!(
                "profile {} was calibrated at q_max = {}; tmax at another q_max ({q}) needs a \
                 new calibration (mpiover-calibrate --q-max {q})",
                path.display(),
                profile.method.q_max
            );
        }
    }
    Ok(Box::new(ProfileTmax {
        name: path.display().to_string(),
        profile,
    }))
}

/// A calibrated profile as a tmax source.
struct ProfileTmax {
    name: String,
    profile: Profile,
}

impl TmaxSource for ProfileTmax {
    fn tmax(
        &self,
        function: &str,
        p: u32,
        bytes: u64,
        role: Option<&str>,
        completes: Option<&str>,
    ) -> Option<(f64, bool)> {
        let (function, role, bytes) = profile_key(function, role, completes, p, bytes);
        let l = self.profile.tmax(function, p, bytes, role)?;
        (l.tmax_s.is_finite() && l.tmax_s >= 0.0).then_some((l.tmax_s, l.out_of_range))
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn q_max(&self) -> Option<f64> {
        Some(self.profile.method.q_max)
    }
    fn matches(&self, mpi_library: &str, hosts: &[String]) -> Option<(bool, String)> {
        let env = Environment {
            mpi_library: mpi_library.to_string(),
            hosts: hosts.to_vec(),
            ..Default::default()
        };
        Some(match self.profile.matches(&env) {
            Ok(()) => (true, String::new()),
            Err(m) => (false, m.to_string()),
        })
    }
}
