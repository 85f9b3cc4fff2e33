//! Where tmax comes from when a run is re-analysed against a profile.
//!
//! The analysis asks a [`TmaxSource`] for the tmax of one call of each
//! aggregation key (function, p, bytes, role). The real source is a calibrated
//! profile (`common::profile`); tests use [`FnTmax`].

use std::path::Path;

/// tmax of one call: `(tmax_s, out_of_range)`, or `None` when the source has
/// nothing for this function.
pub trait TmaxSource: Sync {
    fn tmax(&self, function: &str, p: u32, bytes: u64, role: Option<&str>) -> Option<(f64, bool)>;

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
    fn tmax(&self, function: &str, p: u32, bytes: u64, role: Option<&str>) -> Option<(f64, bool)> {
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
pub fn open_profile(path: &Path, _q_max: Option<f64>) -> anyhow::Result<Box<dyn TmaxSource>> {
    if !path.exists() {
        anyhow::bail!("profile {} does not exist", path.display());
    }
    anyhow::bail!(
        "cannot use profile {}: reading profiles is not available in this build yet \
         (the profile lookup of issue 4 has not landed)",
        path.display()
    )
}
