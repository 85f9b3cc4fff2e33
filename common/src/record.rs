//! The per-rank run record, schema `mpiover-record/1`.
//!
//! `libmpiover.so` writes one file per rank, `rank-<NNNNNN>.json`, into the run
//! directory; `mpiover report` reads them all. The format is documented for
//! users in `docs/record-format.md`; this module is the single definition both
//! sides compile against (bytehound's `common/` crate does the same).
//!
//! Durations inside histograms are in raw timer units; `timer.unit_s` converts
//! them to seconds. Every other time is in seconds.

use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;

mod check;
#[cfg(test)]
pub(crate) mod sample;
pub use check::RecordFault;

pub const RECORD_SCHEMA: &str = "mpiover-record/1";

/// `finished` of a record written at `MPI_Finalize` just before the job log
/// merge; it stays only when the job ended during the merge.
pub const FINISHED_AT_MERGE: &str = "merge";

/// File name of a rank's record inside the run directory.
pub fn rank_file_name(rank: u32) -> String {
    format!("rank-{rank:06}.json")
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Always [`RECORD_SCHEMA`]; readers refuse anything else.
    pub schema: String,
    /// Identifier shared by all ranks of one run (chosen by rank 0 at
    /// `MPI_Init` and broadcast); records with different ids are different runs.
    pub run_id: String,
    /// Rank in `MPI_COMM_WORLD`, and the world size.
    pub rank: u32,
    pub ranks: u32,
    pub host: String,
    pub pid: u32,
    /// `MPI_Get_library_version` string.
    pub mpi_library: String,
    /// Thread level granted by `MPI_Init_thread` (`single`, `funneled`,
    /// `serialized`, `multiple`), or for `MPI_Init` what `MPI_Query_thread`
    /// says (`single` unless the MPI library was told otherwise).
    pub thread_level: String,
    /// argv of the process.
    pub command: Vec<String>,
    /// Wall-clock times (Unix seconds) of `MPI_Init` and of writing the record.
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    /// Application time: from `MPI_Init` to the end of the record (seconds).
    pub app_time_s: f64,
    /// Time inside every wrapped MPI function (events and others), seconds.
    pub mpi_time_s: f64,
    /// How the record was written: `finalize`, `exit`, or `signal:SIGTERM` etc.
    pub finished: String,
    pub timer: Timer,
    pub tool: Tool,
    /// The profile used for online overhead, if any.
    pub profile: Option<ProfileUse>,
    /// Call sites referenced by `entries[].site` and `entries[].post_site`.
    pub sites: Vec<Site>,
    /// Count and time of every wrapped MPI function, events or not.
    pub functions: Vec<FunctionTotal>,
    /// Aggregated communication events, one per key.
    pub entries: Vec<Entry>,
    /// Keys that did not fit under the cap and were folded into the entries with
    /// `function == "other"`.
    pub folded: Folded,
    /// Warnings the tool raised during the run (once each).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The eager limit the MPI library states through its `MPI_T` control
    /// variables, when it states one (the report's threshold of the
    /// rendezvous protocol when no profile measured it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_limit: Option<crate::profile::MpiTValue>,
    /// The application's own code between consecutive MPI calls of a thread,
    /// one entry per (call, next call); absent in older records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Region>,
    /// Regions that did not fit under the key cap: counted, not kept.
    #[serde(default, skip_serializing_if = "FoldedRegions::is_empty")]
    pub regions_folded: FoldedRegions,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timer {
    /// `rdtsc` or `clock_gettime(CLOCK_MONOTONIC)`.
    pub name: String,
    /// Seconds per raw unit of the histograms.
    pub unit_s: f64,
    /// Smallest non-zero difference between two reads, seconds.
    pub resolution_s: f64,
    /// Cost of one read, seconds.
    pub cost_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub version: String,
    /// Measured cost the wrapper adds to one call (seconds): timer reads,
    /// call-site capture and aggregation, measured at `MPI_Init`.
    pub cost_per_call_s: f64,
    /// Number of wrapped calls of this rank (events and others).
    pub calls: u64,
    /// `MPIOVER_DEPTH`: which caller is the site (1 = direct caller of MPI).
    pub depth: u32,
    /// Cap on distinct keys per thread.
    pub max_keys: u32,
    /// Rank 0 only, in its own file of a run also written as a job log
    /// (`MPIOVER_FORMAT=both`): its time (seconds) merging the job log at
    /// `MPI_Finalize`, from the start of the merge to the last child's
    /// aggregate merged. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_s: Option<f64>,
    /// Python sites (the process ran CPython with mpi4py and the tool
    /// attributed its MPI calls to Python lines); absent otherwise and in
    /// older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonSites>,
}

/// What Python sites cost and covered on one rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PythonSites {
    /// The interpreter, e.g. `CPython 3.11.7`.
    pub interpreter: String,
    /// Measured time the Python site adds to one call made from Python
    /// (seconds), on top of `cost_per_call_s`, measured at `MPI_Init`.
    pub cost_per_call_s: f64,
    /// Calls of this rank attributed to a Python line.
    pub calls: u64,
    /// Calls made from Python whose Python line could not be read (they are
    /// at the nearest native frame).
    #[serde(default)]
    pub fallbacks: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileUse {
    pub path: String,
    /// False when the profile's environment (MPI library, host) differs from
    /// this run; overhead is then still computed but flagged.
    pub matched: bool,
    pub q_max: Option<f64>,
    pub note: Option<String>,
}

/// A call site: the address of the call instruction's return point in user
/// code, resolved on the rank that saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub id: u32,
    /// Return address in the process (hex), for reference only (ASLR).
    pub address: String,
    /// Path of the object (executable or shared library) holding the address.
    pub module: Option<String>,
    /// GNU build-id of that object (hex), for offline resolution.
    pub build_id: Option<String>,
    /// Offset of the return address from the object's load bias (hex).
    pub offset: Option<String>,
    /// Enclosing function (demangled), if symbols are available.
    pub function: Option<String>,
    /// Its linkage name when that differs (a mangled C++ or Rust name), for
    /// looking it up with `nm` or a debugger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// For an address inside inlined code: the chain of callers it was inlined
    /// into, innermost first, as `function (file:line)`.
    #[serde(default)]
    pub inlined_into: Vec<String>,
    /// Language frame note, e.g. "python: nearest native frame".
    #[serde(default)]
    pub note: Option<String>,
    /// A Python site (`file`, `line`, `function` are the Python code's; `address`,
    /// `module`, `build_id` and `offset` the native frame's): the native frame
    /// that made the MPI call, `function (file:line)` in mpi4py's extension
    /// module, when resolved. Absent for native sites and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<String>,
    /// `python` for a site in Python code; absent for native sites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionTotal {
    pub function: String,
    pub calls: u64,
    pub time_s: f64,
}

/// One aggregation key's statistics. The key is
/// (site, function, p, bytes, peer, role, completes, post_site).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Index into `sites` (the site's `id`).
    pub site: u32,
    /// C name of the MPI function (`MPI_Recv`), or `other` for folded keys.
    pub function: String,
    /// Size of the communicator.
    pub p: u32,
    /// Bytes this rank sent or received in the call (count x type size).
    pub bytes: u64,
    /// Point-to-point peer as a rank of `MPI_COMM_WORLD` (source for receives,
    /// destination for sends), `None` for collectives or unknown.
    pub peer: Option<i32>,
    /// For point-to-point keys: whether `peer` ran on another host than
    /// this rank (the ranks' host names are exchanged at `MPI_Init` when a
    /// profile is used); absent when not known. The report labels a send
    /// across hosts with the profile's eager limit across hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_host: Option<bool>,
    /// `root` or `nonroot` for rooted collectives.
    pub role: Option<String>,
    /// For completions: the function of the request completed (`MPI_Irecv`).
    pub completes: Option<String>,
    /// For completions: the site where that request was posted.
    pub post_site: Option<u32>,
    /// For completions: what one call completed (how many requests, of
    /// which kind); the tmax of a completion is composed from it. Absent for
    /// other functions and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<crate::completion::Requests>,
    /// For posts (`MPI_Isend`, `MPI_Irecv`, ...): the site of the completion
    /// call that completed this key's requests (the last one seen, when
    /// several did), so the report can tell a completion which lines posted
    /// what it waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<u32>,
    pub count: u64,
    pub sum_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// tmax of one call of this key from the profile (seconds), if a profile was used.
    pub tmax_s: Option<f64>,
    /// Online sum of max(0, t - tmax), if a profile was used.
    pub overhead_s: Option<f64>,
    /// Whether the tmax lookup fell outside the profile's measured range.
    #[serde(default)]
    pub tmax_out_of_range: bool,
    /// How the profile's tmax was estimated (calibration samples, fitted
    /// model or empirical quantile), for the significance test; absent in
    /// records without a profile and in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmax_basis: Option<crate::profile::Basis>,
    /// When tmax was composed from other measurements rather than measured
    /// (`crate::completion`): the rule used. Absent when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmax_composed: Option<String>,
    /// Why a key of a function the profile should cover has no tmax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmax_missing: Option<String>,
    pub hist: Histogram,
}

/// One end of a region: the MPI call that opened it (`from`: the region
/// starts when that call returns) or closed it (`to`: it ends when that call
/// is entered).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RegionEnd {
    /// Index into `sites` (the site's `id`).
    pub site: u32,
    /// C name of the MPI function called there.
    pub function: String,
}

/// Time a thread spent outside MPI between the return of one MPI call and
/// the entry of its next, summed per (`from`, `to`) pair of calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Region {
    pub from: RegionEnd,
    pub to: RegionEnd,
    /// Passes through the region.
    pub count: u64,
    pub sum_s: f64,
    /// Durations of the passes (raw timer units), per octave: each power of
    /// two's passes and sum in the bucket of their mean.
    pub hist: Histogram,
}

/// Regions over the key cap: distinct pairs (estimated), passes and time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FoldedRegions {
    pub keys: u64,
    pub count: u64,
    pub sum_s: f64,
}

impl FoldedRegions {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Folded {
    pub keys: u64,
    pub calls: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_file_names_sort_numerically() {
        assert_eq!(rank_file_name(7), "rank-000007.json");
        assert!(rank_file_name(10) > rank_file_name(9));
    }
}
