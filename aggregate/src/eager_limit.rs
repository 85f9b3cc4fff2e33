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

/// The rendezvous thresholds a fold applies to sends: sends of at least
/// `same_host` bytes to a rank of the same host are rendezvous sends, and
/// of at least `cross_host` to a rank of another host (`None`: the
/// same-host one applies across hosts too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    pub same_host: u64,
    pub cross_host: Option<u64>,
}

impl Thresholds {
    /// One threshold for every send.
    pub const fn uniform(bytes: u64) -> Thresholds {
        Thresholds {
            same_host: bytes,
            cross_host: None,
        }
    }

    /// The threshold of a send whose peer is on another host
    /// (`cross_host`), on this rank's host, or where the record does not say
    /// (`None`: the smaller of the two, so that such a send is labelled as
    /// waiting for its receiver rather than not).
    pub fn for_peer(&self, cross_host: Option<bool>) -> u64 {
        match (cross_host, self.cross_host) {
            (Some(true), Some(c)) => c,
            (None, Some(c)) => c.min(self.same_host),
            _ => self.same_host,
        }
    }
}

impl From<u64> for Thresholds {
    fn from(bytes: u64) -> Thresholds {
        Thresholds::uniform(bytes)
    }
}

/// The thresholds (sends of at least this many bytes are rendezvous
/// sends), where they came from, and that in words.
pub type EagerLimit = (Thresholds, RendezvousSource, String);

/// The thresholds of the rendezvous protocol and where they came from, in
/// this order: the report's `--eager-limit` (`option`, for every send), the
/// profile's measurement (`measured`: the profile given, or the one the run
/// was recorded with: within a host and, when it measured one, across
/// hosts), what the library states through `MPI_T` (recorded by the
/// interposer), a default.
pub fn eager_limit(
    option: Option<u64>,
    measured: Option<(u64, Option<u64>)>,
    mpi_t: Option<&MpiTValue>,
) -> EagerLimit {
    if let Some(b) = option {
        (b.into(), RendezvousSource::Option, "--eager-limit".into())
    } else if let Some((same_host, cross_host)) = measured {
        (
            Thresholds {
                same_host,
                cross_host,
            },
            RendezvousSource::Profile,
            "measured by the calibration (profile)".into(),
        )
    } else if let Some(m) = mpi_t {
        (
            m.bytes.saturating_add(1).into(),
            RendezvousSource::MpiT,
            format!("the MPI library's control variable {} (MPI_T)", m.cvar),
        )
    } else {
        (
            DEFAULT_RENDEZVOUS_BYTES.into(),
            RendezvousSource::Default,
            "default: no profile measured it and the library does not state it".into(),
        )
    }
}
