//! From a run directory to a finished [`Report`].
//!
//! Records are parsed in parallel (one worker per core) and folded at once into
//! per-worker aggregates, then dropped: memory holds one record per worker plus
//! the aggregates (per site: totals, a display histogram and one small row per
//! rank), whatever the number of ranks.
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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use mpiover_common::completion::{KeyRef, Requests};
use mpiover_common::functions::{
    catalogue, class_of, lifecycle, wait_state, EventClass, Function, Lifecycle, Scope, WaitState,
};
use mpiover_common::histogram::bucket_bounds;
use mpiover_common::profile::{Basis, MpiTValue};
use mpiover_common::record::{Entry, Record, Site};
use mpiover_common::run::{RankInfo, RunCheck, RunDir, RunError, RunSummary};

use crate::model::*;
use crate::signif;
use crate::tmax::{Tmax, TmaxSource};

mod acc;
mod assemble;
mod evaluate;
mod fixed;
mod fold;
mod key;
mod late;
mod load;
mod merged;
mod packed;
mod per_rank;
mod rendezvous;
mod rules;
#[cfg(test)]
mod tests;

use acc::*;
use assemble::*;
use evaluate::*;
use fixed::*;
use key::*;
use late::*;
use per_rank::*;
use rendezvous::*;

pub(crate) use acc::{dist_index_of_edge, DIST_BINS};
pub use load::{analyze_dir, analyze_records};
pub use merged::JobAgg;
pub use rules::entry_wait_state;
use rules::*;

/// FxHash (rustc's multiply-rotate hash): several times faster than the
/// default SipHash on the short keys folded per record entry, where hashing
/// was a visible share of the report's time on thousands of ranks. No
/// protection against adversarial keys is needed, and nothing depends on the
/// iteration order of these maps (the results are sorted).
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Last-resort threshold of the rendezvous protocol, when neither the
/// option, nor the profile (which measures it), nor the library (`MPI_T`,
/// recorded by the interposer) says: Open MPI's TCP BTL and MPICH's nemesis
/// network modules switch at 64 KiB.
pub const DEFAULT_RENDEZVOUS_BYTES: u64 = 64 * 1024;

/// Default of [`Options::min_share`]: 0.1 % of the MPI time.
pub const DEFAULT_MIN_SHARE: f64 = 0.001;

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
            eager_limit: None,
            threads: 0,
            detail_sites: 20,
            read_sources: false,
        }
    }
}
