//! The eager/rendezvous limit a fold applies, and where it comes from.

use mpiover_common::profile::MpiTValue;
use serde::{Deserialize, Serialize};

/// Last-resort threshold of the rendezvous protocol, when neither the
/// option, nor the profile (which measures it), nor the library (`MPI_T`,
/// recorded by the interposer) says: Open MPI's TCP BTL and MPICH's nemesis
/// network modules switch at 64 KiB.
pub const DEFAULT_RENDEZVOUS_BYTES: u64 = 64 * 1024;

/// Where the eager/rendezvous limit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RendezvousSource {
    /// `--eager-limit`.
    #[serde(rename = "option")]
    Option,
    /// Measured by the calibration.
    #[serde(rename = "profile")]
    Profile,
    /// What the MPI library states through its MPI_T control variables.
    #[serde(rename = "mpi_t")]
    MpiT,
    /// None of these: 64 KiB.
    #[serde(rename = "default")]
    Default,
}

impl RendezvousSource {
    /// The JSON spelling, as reports print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            RendezvousSource::Option => "option",
            RendezvousSource::Profile => "profile",
            RendezvousSource::MpiT => "mpi_t",
            RendezvousSource::Default => "default",
        }
    }
}

impl std::fmt::Display for RendezvousSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The limit in bytes (sends of at least this many bytes are rendezvous
/// sends), where it came from, and that in words.
pub type EagerLimit = (u64, RendezvousSource, String);

/// The threshold of the rendezvous protocol and where it came from, in this
/// order: the report's `--eager-limit` (`option`), the profile's measurement
/// (`measured`: the profile given, or the one the run was recorded with),
/// what the library states through `MPI_T` (recorded by the interposer), a
/// default.
pub fn eager_limit(
    option: Option<u64>,
    measured: Option<u64>,
    mpi_t: Option<&MpiTValue>,
) -> EagerLimit {
    if let Some(b) = option {
        (b, RendezvousSource::Option, "--eager-limit".into())
    } else if let Some(b) = measured {
        (
            b,
            RendezvousSource::Profile,
            "measured by the calibration (profile)".into(),
        )
    } else if let Some(m) = mpi_t {
        (
            m.bytes.saturating_add(1),
            RendezvousSource::MpiT,
            format!("the MPI library's control variable {} (MPI_T)", m.cvar),
        )
    } else {
        (
            DEFAULT_RENDEZVOUS_BYTES,
            RendezvousSource::Default,
            "default: no profile measured it and the library does not state it".into(),
        )
    }
}
