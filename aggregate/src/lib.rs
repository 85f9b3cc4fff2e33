//! The job aggregate: what run records are folded into, per site (totals,
//! tmax figures, a display histogram, one row per rank), per rank and per
//! waiter/peer pair, and how two aggregates merge; and the merged job log's
//! payload, [`JobAggregate`], with its format version.
//!
//! Both sides fold with this crate: the report's worker threads fold the
//! per-rank records of a run directory, and with `MPIOVER_FORMAT=log` every
//! rank of a job folds its own record at `MPI_Finalize` and the ranks merge
//! their parts over MPI. So it needs no MPI, and nothing the preload library
//! should not carry (no statistics, no command line): the report turns the
//! aggregate into its tables, significance and all.
//!
//! **Site identity.** A site is (location, enclosing function, MPI
//! function), [`SiteKey`]: entries of all ranks with the same identity are
//! one site, whatever their p, bytes, peer or address.
//!
//! **Determinism.** Sums of seconds are accumulated in fixed point
//! ([`Fx`], 1e-15 s units, i128), which is exact and independent of the
//! order in which records and parts are folded and merged, so the result
//! does not depend on scheduling.
//!
//! - [`aggregate`]: [`Aggregate`] and its merge.
//! - [`fold_record`]: one record into an aggregate.
//! - [`job_aggregate`]: the merged job log's payload.
//! - [`site_totals`], [`rank_totals`], [`merged_keys`]: what is kept per
//!   site, per rank and per key.
//! - [`site_key`]: a site's identity.
//! - [`regions`]: the application's code between MPI calls, per rank.
//! - [`tmax_eval`]: an entry against tmax.
//! - [`wait_state`]: which wait state overhead indicates.
//! - [`eager_limit`]: the rendezvous threshold and where it comes from.
//! - [`display_bins`]: the display histogram's bins.
//! - [`exact_sum`]: the fixed-point sums.
//! - [`tree`]: the binomial tree the ranks merge up.
//! - [`rank_table`]: the ranks' rows as columns in the payload.
//! - [`packed_rows`]: the rows that grow with the ranks, as fixed-width bytes.
//! - [`bounded`], [`sketch`]: what a merged job log keeps of them, in
//!   bounded memory.

pub mod aggregate;
pub mod bounded;
pub mod display_bins;
pub mod eager_limit;
pub mod exact_sum;
pub mod fold_record;
pub mod job_aggregate;
pub mod merged_keys;
pub mod packed_rows;
pub mod rank_table;
pub mod rank_totals;
pub mod regions;
pub mod site_key;
pub mod site_totals;
pub mod sketch;
pub mod spread;
pub mod tmax_eval;
pub mod tree;
pub mod wait_state;

pub use aggregate::Aggregate;
pub use bounded::{Bounds, BOUND_ROWS};
pub use display_bins::{dist_edge, dist_index_of_edge, DIST_BINS};
pub use eager_limit::{
    eager_limit, EagerLimit, RendezvousSource, Thresholds, DEFAULT_RENDEZVOUS_BYTES,
};
pub use exact_sum::Fx;
pub use job_aggregate::{JobAggregate, PayloadError, PAYLOAD_VERSION};
pub use merged_keys::{KeyAcc, KeyId};
pub use rank_totals::RankAcc;
pub use regions::{FoldedRegionTotals, RegionAcc, RegionId, RegionRank};
pub use site_key::{Loc, SiteKey};
pub use site_totals::{MultiWait, PeerAcc, RankSite, SiteAcc};
pub use sketch::{Sketch, SKETCH_ALPHA, SKETCH_FLOOR_S};
pub use spread::{RegionSpread, Spread, WaitDropped};
pub use tmax_eval::{Lookups, Tmax, TmaxLookup};
pub use wait_state::entry_wait_state;

/// FxHash (rustc's multiply-rotate hash): several times faster than the
/// default SipHash on the short keys folded per record entry, where hashing
/// was a visible share of the report's time on thousands of ranks. No
/// protection against adversarial keys is needed. The report sorts what it
/// shows; a payload's bytes follow the maps' order, which FxHash keeps the
/// same from run to run.
pub type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;
