//! The eager/rendezvous limit the report applies, and where it comes from.

use super::*;

/// [`rendezvous`] for a run whose first record is `first`: without a profile
/// given, the one the run was recorded with is asked (when it can be read).
pub(crate) fn rendezvous_of(
    opts: &Options,
    tmax: Option<&dyn TmaxSource>,
    first: Option<&Record>,
) -> (u64, RendezvousSource, String) {
    let recorded = match (tmax, first.and_then(|r| r.profile.as_ref())) {
        (None, Some(p)) => mpiover_common::profile::Profile::load(&p.path)
            .ok()
            .and_then(|p| p.protocol?.rendezvous_bytes()),
        _ => None,
    };
    rendezvous(
        opts,
        tmax,
        recorded,
        first.and_then(|r| r.eager_limit.as_ref()),
    )
}

/// The threshold of the rendezvous protocol and where it came from, in this
/// order: `--eager-limit`, the profile's measurement (the profile given, or
/// the one the run was recorded with: `recorded`), what the library states
/// through `MPI_T` (recorded by the interposer), a default.
pub(crate) fn rendezvous(
    opts: &Options,
    tmax: Option<&dyn TmaxSource>,
    recorded: Option<u64>,
    mpi_t: Option<&MpiTValue>,
) -> (u64, RendezvousSource, String) {
    if let Some(b) = opts.eager_limit {
        (b, RendezvousSource::Option, "--eager-limit".into())
    } else if let Some(b) = tmax.and_then(|t| t.rendezvous_bytes()).or(recorded) {
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
