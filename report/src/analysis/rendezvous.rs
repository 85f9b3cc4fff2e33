//! The eager/rendezvous limit the report applies, and where it comes from.

use mpiover_aggregate::{eager_limit, EagerLimit};
use mpiover_common::record::Record;

use super::Options;
use crate::tmax::TmaxSource;

/// The eager limit for a run whose first record is `first`, in this order:
/// `--eager-limit`, the measurement of the profile given, else of the one
/// the run was recorded with (when it can be read), what the library states
/// through `MPI_T`, a default.
pub(crate) fn rendezvous_of(
    opts: &Options,
    tmax: Option<&dyn TmaxSource>,
    first: Option<&Record>,
) -> EagerLimit {
    let recorded = match (tmax, first.and_then(|r| r.profile.as_ref())) {
        (None, Some(p)) => mpiover_common::profile::Profile::load(&p.path)
            .ok()
            .and_then(|p| p.protocol?.rendezvous_bytes_by_host()),
        _ => None,
    };
    eager_limit(
        opts.eager_limit,
        tmax.and_then(|t| t.rendezvous_bytes()).or(recorded),
        first.and_then(|r| r.eager_limit.as_ref()),
    )
}
