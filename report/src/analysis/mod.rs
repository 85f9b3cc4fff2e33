//! From a run directory to a finished [`Report`].
//!
//! Records are parsed in parallel (one worker per core) and folded at once into
//! per-worker aggregates ([`Aggregate`], the `mpiover-aggregate` crate), then
//! dropped: memory holds one record per worker plus the aggregates (per site:
//! totals, a display histogram and one small row per rank), whatever the number
//! of ranks. A merged job log holds such an aggregate already, folded and merged
//! in the job.
//!
//! **Site identity.** A report site is (location, enclosing function, MPI
//! function), where the location is `file:line` when the address was resolved,
//! else module + offset from the load bias (stable under ASLR), else the raw
//! address. Entries of all ranks with the same identity are one site, whatever
//! their p, bytes, peer or address.
//!
//! **Determinism.** Sums of seconds are accumulated in fixed point (1e-15 s
//! units, i128), which is exact and independent of the order in which workers
//! fold records, so the output does not depend on scheduling.

use mpiover_aggregate::{HashMap, PeerAcc, RankSite, SiteKey};
use mpiover_common::functions::WaitState;

use crate::model::*;

mod assemble;
#[cfg(test)]
mod bounded_tests;
mod causes;
#[cfg(test)]
mod causes_tests;
#[cfg(test)]
mod job_log_tests;
mod late;
mod level;
mod load;
mod per_rank;
mod rendezvous;
mod site_row;
mod symbols;
#[cfg(test)]
mod tests;

use per_rank::*;

pub use load::{analyze_dir, analyze_records, job_aggregate_of};
pub use mpiover_aggregate::{
    dist_index_of_edge, entry_wait_state, JobAggregate, DEFAULT_RENDEZVOUS_BYTES, DIST_BINS,
};

/// Default of [`Options::min_share`]: 0.1 % of the MPI time.
pub const DEFAULT_MIN_SHARE: f64 = 0.001;

/// Default of [`Options::tmax_spread`]: two quick calibrations of one
/// machine put an entry's tmax a median factor 1.3-1.5 apart
/// (`docs/method.md`, section 4a).
pub const DEFAULT_TMAX_SPREAD: f64 = 1.5;

/// How a report is computed.
#[derive(Debug, Clone)]
pub struct Options {
    /// False discovery rate of the significance test.
    pub alpha: f64,
    /// Smallest overhead, as a share of the run's MPI time (all ranks), with
    /// which a statistically significant site is flagged; below it the site
    /// is "negligible". With thousands of calls the test detects shifts of a
    /// few nanoseconds per call between calibration and run (another cache
    /// state, another clock frequency): real, and not worth anyone's time.
    pub min_share: f64,
    /// A site significant against tmax is `marginal` when tmax times this
    /// factor would clear it: its verdict hangs on the calibration. 1: off.
    pub tmax_spread: f64,
    /// Compare the run's fastest calls with the calibration's and judge
    /// sites against the machine's level when it ran slower.
    pub level_check: bool,
    /// Sends of at least this many bytes are rendezvous sends.
    pub eager_limit: Option<u64>,
    /// Worker threads for parsing (0: one per core).
    pub threads: usize,
    /// Sites that get HTML details (distribution, heat map row, source).
    pub detail_sites: usize,
    /// Read source files around the detailed sites.
    pub read_sources: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.05,
            min_share: DEFAULT_MIN_SHARE,
            tmax_spread: DEFAULT_TMAX_SPREAD,
            level_check: true,
            eager_limit: None,
            threads: 0,
            detail_sites: 20,
            read_sources: false,
        }
    }
}
