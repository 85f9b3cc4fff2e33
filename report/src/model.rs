//! The finished report, `mpiover-report/2`: what every exporter is fed.
//!
//! The JSON export is this structure serialized, so the field names below are
//! the JSON keys. The first keys of the format (`schema`, `run.{ranks, command,
//! mpi_library}`, `summary.{app_time_s, mpi_time_s, overhead_s}`,
//! `sites[].{mpi_function, file, line, function, calls, time_s, bytes,
//! overhead_s}`) are stable; later additions only add keys. A key renamed
//! for clarity is still written under its old name for one schema version
//! (the fields marked deprecated), so that readers have a version to move.
//!
//! Conventions: times in seconds (`_s`), shares in 0..1, ranks are ranks of
//! `MPI_COMM_WORLD`, sums over ranks are rank-seconds.

use serde::{Deserialize, Serialize};

pub use mpiover_common::functions::WaitState;

mod regions;
mod stability;
pub use regions::{Excerpt, RegionEndReport, RegionRef, RegionReport, RootCause};
pub use stability::{Level, LevelKey, Margin, Stability};

mod tmax_from;
pub use tmax_from::TmaxFrom;

mod limits;
pub use limits::{CAUSE_OF_OVERHEAD, CAUSE_OF_REFERENCE, TOP_REGIONS};

/// A kind whose JSON spelling is also how reports print it.
macro_rules! spelled {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $v),+
        }

        impl $name {
            /// The JSON spelling, as reports print it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

spelled! {
    /// What sites are ranked by.
    RankedBy {
        /// A profile gave tmax.
        Overhead = "overhead",
        /// No profile: time, as mpiP ranks.
        Time = "time",
    }
}

spelled! {
    /// The verdict of a site's significance test.
    Significance {
        Significant = "significant",
        NotSignificant = "not significant",
        /// Fewer calls than any significant result needs.
        TooFewCalls = "too few calls",
        /// Significant, but below `Methods::min_share` of the MPI time.
        Negligible = "negligible",
        NoTmax = "no tmax",
        NoQmax = "no q_max",
        /// Not significant against a tmax from weak calibration entries
        /// (too few samples, or a skewed clock): no verdict.
        WeakTmax = "weak tmax",
        /// Significant against tmax, not against tmax widened by the spread
        /// between calibrations: the verdict hangs on the calibration.
        Marginal = "marginal",
        /// Significant against tmax, not once tmax is scaled by how much
        /// slower the machine ran than it was calibrated.
        LevelShift = "within level shift",
    }
}

spelled! {
    /// How a site's late ranks were found.
    LateBasis {
        /// The point-to-point peers of the waiting calls.
        Peer = "peer",
        /// The ranks that spent the least time in a collective arrived last.
        Arrival = "arrival",
        /// The root of a one-to-all collective its non-roots waited for.
        Root = "root",
    }
}

spelled! {
    /// How a site changed between two runs (`mpiover diff`).
    DiffStatus {
        Worse = "worse",
        Better = "better",
        Same = "same",
        /// Only in the second run.
        New = "new",
        /// Only in the first run.
        Gone = "gone",
    }
}

spelled! {
    /// The value a matrix or heat map shows.
    Metric {
        Overhead = "overhead_s",
        Time = "time_s",
    }
}

spelled! {
    /// Where the overhead's profile came from.
    ProfileSource {
        /// `mpiover report --profile`: re-analysed from the histograms.
        Option = "--profile",
        /// The online overhead of the run, with the profile it was recorded with.
        Record = "record",
    }
}

pub use mpiover_aggregate::{Lookups, RendezvousSource};

pub const REPORT_SCHEMA: &str = "mpiover-report/2";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Always [`REPORT_SCHEMA`].
    pub schema: String,
    /// `mpiover <version>`.
    pub generator: String,
    pub run: ReportedRun,
    pub summary: Summary,
    /// Every site, ranked (worst first).
    pub sites: Vec<SiteReport>,
    /// One row per rank that has a record, in rank order.
    pub ranks: Vec<RankReport>,
    pub wait_matrix: WaitMatrix,
    /// The application's code between MPI calls, by load imbalance (largest
    /// first); absent when the records carry no regions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<RegionReport>,
    pub methods: Methods,
    /// Problems found while reading the run (missing ranks, killed ranks, the
    /// tool's own warnings), each once.
    pub warnings: Vec<String>,
    /// What only the HTML export shows (not in the JSON).
    #[serde(skip)]
    pub detail: Detail,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportedRun {
    /// The run directory as given.
    pub dir: String,
    pub run_id: String,
    /// World size.
    pub ranks: u32,
    /// Ranks that left a record.
    pub ranks_present: u32,
    /// argv of the lowest rank.
    pub command: Vec<String>,
    /// `MPI_Get_library_version` of the lowest rank.
    pub mpi_library: String,
    pub thread_level: String,
    /// Distinct host names, sorted.
    pub hosts: Vec<String>,
    /// Earliest `MPI_Init` and latest record write (Unix seconds).
    pub start_unix_s: f64,
    pub end_unix_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Application time summed over ranks (rank-seconds, as mpiP's aggregate).
    pub app_time_s: f64,
    /// Longest application time of one rank (wall-clock of the run).
    pub app_wall_s: f64,
    /// Time in MPI, summed over ranks, without start-up and shut-down
    /// (`MPI_Init*`, `MPI_Finalize`, below): every `%MPI` is a share of it.
    pub mpi_time_s: f64,
    /// Time in `MPI_Init` / `MPI_Init_thread`, summed over ranks (not in
    /// `mpi_time_s`).
    #[serde(default)]
    pub startup_s: f64,
    /// Time in `MPI_Finalize` up to the record (not in `mpi_time_s`).
    #[serde(default)]
    pub shutdown_s: f64,
    /// Time in the communication events of the sites, summed over ranks.
    pub event_time_s: f64,
    /// Overhead (time beyond tmax) summed over sites; null without a profile.
    pub overhead_s: Option<f64>,
    pub overhead_share_of_mpi: Option<f64>,
    pub overhead_share_of_app: Option<f64>,
    /// `overhead` when a profile gave tmax, else `time`.
    pub ranked_by: RankedBy,
    /// Event calls over all sites and ranks.
    pub calls: u64,
    pub sites: usize,
    pub significant_sites: usize,
    /// Sites significant against tmax whose verdict a wider tmax or the
    /// machine's level shift undoes (not among `significant_sites`).
    #[serde(default)]
    pub marginal_sites: usize,
    /// The worst sites, one sentence each (at most three).
    pub worst: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SiteReport {
    /// Deprecated (removed in `mpiover-report/3`): the same as `position`,
    /// which cannot be mistaken for an MPI rank.
    pub rank: usize,
    /// Position in the ranking, from 1.
    #[serde(default)]
    pub position: usize,
    pub mpi_function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Enclosing function of the call, without its parameter list (C++
    /// overloads at one line differ in `function_signature`).
    pub function: Option<String>,
    /// The enclosing function as demangled, with its parameters, qualifiers
    /// and a template instance's return type; the same as `function` for C,
    /// Fortran and Python.
    #[serde(default)]
    pub function_signature: Option<String>,
    /// `file:line`, or `module+offset` when the address was not resolved.
    pub location: String,
    pub module: Option<String>,
    pub offset: Option<String>,
    /// For inlined code: the callers it was inlined into, innermost first.
    pub inlined_into: Vec<String>,
    /// What the tool says about the site, e.g. that a Python call resolved to
    /// the nearest native frame, or that the site could not be symbolized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `python` for a Python site (an MPI call made from CPython through
    /// mpi4py: `file`, `line`, `function` are the Python code's); absent
    /// for native sites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// A Python site's native frame (mpi4py's extension module), `function
    /// (file:line)`; `module` and `offset` are that frame's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<String>,
    pub calls: u64,
    pub time_s: f64,
    /// Bytes moved, summed over calls and ranks.
    pub bytes: u64,
    pub min_call_s: f64,
    pub max_call_s: f64,
    /// This site's time over the run's MPI time (`summary.mpi_time_s`).
    pub time_share_of_mpi: f64,
    /// Sum of max(0, t - tmax) over calls; null when no call had a tmax.
    pub overhead_s: Option<f64>,
    /// Deprecated (removed in `mpiover-report/3`): the same as
    /// `tmax_sum_s`, which does not read as a per-call tmax.
    pub tmax_s: Option<f64>,
    /// Sum of tmax over the calls that had one (not a per-call tmax).
    #[serde(default)]
    pub tmax_sum_s: Option<f64>,
    /// Share of the calls with a tmax that took longer than it.
    pub exceed_fraction: Option<f64>,
    /// The share expected by chance, what `exceed_fraction` is tested
    /// against: 1 - q_max, or more when tmax came from few calibration
    /// samples (`signif::Null`); null when the site was not tested.
    pub expected_exceed_fraction: Option<f64>,
    /// Estimated number of calls over tmax (from the histograms).
    pub calls_over_tmax: Option<f64>,
    /// Calls that had a tmax.
    pub calls_with_tmax: u64,
    /// Calls whose tmax lookup fell outside the profile's measured range.
    pub out_of_range_calls: u64,
    /// Overhead over the run's MPI time (`summary.mpi_time_s`), as the
    /// summary's `overhead_share_of_mpi`.
    #[serde(default)]
    pub overhead_share_of_mpi: Option<f64>,
    /// Overhead over the run's application time (`summary.app_time_s`).
    #[serde(default)]
    pub overhead_share_of_app: Option<f64>,
    /// Deprecated (removed in `mpiover-report/3`): the same as
    /// `overhead_share_of_mpi`; beside `time_share_of_mpi` it read as the
    /// site's share of MPI time.
    pub share_of_mpi_time: Option<f64>,
    /// Deprecated (removed in `mpiover-report/3`): the same as
    /// `overhead_share_of_app`.
    pub share_of_app_time: Option<f64>,
    /// Scalasca's name of the wait state the overhead indicates, or null.
    pub wait_state: Option<WaitState>,
    /// World ranks that made this site wait, worst first (at most 16).
    pub late_ranks: Vec<u32>,
    /// How `late_ranks` were found: `peer` (the point-to-point peer of the
    /// waiting calls) or `arrival` (the ranks that spent the least time in a
    /// collective, i.e. arrived last).
    pub late_basis: Option<LateBasis>,
    /// Overhead (or, for `arrival`, lateness in seconds) per late rank.
    pub late_ranks_s: Vec<f64>,
    /// Calls over tmax significantly above the (1 - q_max) expected by
    /// chance (one-sided binomial test, Benjamini-Hochberg across sites).
    pub significant: bool,
    /// `significant`, `not significant`, `too few calls`, `negligible`,
    /// `marginal`, `within level shift`, `weak tmax`, `no tmax` or `no q_max`.
    pub significance: Significance,
    /// For sites significant against tmax: their figures against the widest
    /// tmax they were tested at (`methods.stability`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<Margin>,
    pub p_value: Option<f64>,
    /// Benjamini-Hochberg adjusted p-value.
    pub q_value: Option<f64>,
    pub per_rank: PerRank,
    /// For completions (`MPI_Wait`...): the functions of the requests completed.
    pub completes: Vec<String>,
    /// For completions: every line that posted a completed request, most
    /// requests first (a completion completes what a few lines posted, so
    /// the list stays short; `waited_for` names lines from it).
    pub posted_at: Vec<String>,
    /// For completions that waited: whom they waited for, the late peer and
    /// the line that posted the request it was late with, worst first (at
    /// most 8). A completion of requests to several peers is charged to the
    /// peers that waited least at the same site (they arrived last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waited_for: Vec<WaitedFor>,
    /// For sites with a wait state: why the late ranks were late, the
    /// regions that explain most of the overhead first (empty when none
    /// stands out of the noise; absent for sites without a wait state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_causes: Option<Vec<RootCause>>,
    /// The part of the overhead the root causes explain together (0..1),
    /// those beyond the five listed included;
    /// the rest is waiting that no late rank's extra work accounts for
    /// (the order of dependencies, as a pipeline filling and draining, or
    /// work the regions cannot see). Absent without a wait state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_causes_share: Option<f64>,
    /// For posts (`MPI_Isend`, `MPI_Irecv`, ...): every completion line that
    /// completed their requests, most requests first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed_at: Vec<String>,
    /// When the tmax of some calls was composed from other measurements
    /// rather than measured: the rules used (`docs/completions.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tmax_composed: Vec<String>,
    /// Why calls of this site have no tmax although a profile was used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tmax_missing: Vec<String>,
}

/// One late peer a completion waited for, and where the request was posted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WaitedFor {
    /// World rank of the late peer.
    pub peer: u32,
    /// The line that posted the request (`file:line`), when known.
    pub posted_at: Option<String>,
    /// Overhead charged to it, seconds.
    pub overhead_s: f64,
}

/// Per-rank figures of one site, over the ranks where it occurs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PerRank {
    pub ranks: u32,
    pub time_min_s: f64,
    pub time_median_s: f64,
    pub time_max_s: f64,
    pub time_min_rank: u32,
    pub time_max_rank: u32,
    pub overhead_min_s: Option<f64>,
    pub overhead_median_s: Option<f64>,
    pub overhead_max_s: Option<f64>,
    /// The rank with the most overhead (most time without a profile).
    pub worst_rank: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: u32,
    pub host: String,
    pub app_time_s: f64,
    /// Without start-up and shut-down, as the summary's.
    pub mpi_time_s: f64,
    pub event_time_s: f64,
    pub overhead_s: Option<f64>,
    /// Wrapped MPI calls of the rank (events and others).
    pub calls: u64,
    /// The tool's own estimated cost: cost per call x calls.
    pub tool_time_s: f64,
    pub finished: String,
}

/// Who waited on whom in point-to-point calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitMatrix {
    /// `overhead_s` (overhead of Late Sender / Late Receiver calls) when a
    /// profile gave tmax, else `time_s` (time in point-to-point calls).
    pub metric: Metric,
    pub total_s: f64,
    /// Number of non-zero cells; `cells` holds the largest (at most 10,000).
    pub cells_total: usize,
    pub cells: Vec<WaitCell>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitCell {
    /// The rank that waited.
    pub waiter: u32,
    /// The peer it waited on.
    pub peer: u32,
    /// The hosts of the two, when their records say (null for a rank
    /// without a record).
    #[serde(default)]
    pub waiter_host: Option<String>,
    #[serde(default)]
    pub peer_host: Option<String>,
    pub value_s: f64,
    pub calls: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Methods {
    /// The profile the overhead comes from; null without one.
    pub profile: Option<ProfileMethod>,
    pub q_max: Option<f64>,
    /// False discovery rate of the significance test.
    pub alpha: f64,
    pub test: String,
    /// Fewest calls with which a site can be significant at all.
    pub min_calls: Option<u64>,
    /// Smallest overhead, as a share of the run's MPI time, of a flagged
    /// site; statistically significant sites below it are "negligible".
    pub min_share: f64,
    /// Sends of at least this many bytes are taken as rendezvous sends
    /// (Late Receiver); `MPI_Ssend` always, `MPI_Bsend` never. Between
    /// ranks of one host, and between hosts too unless the next says.
    pub rendezvous_bytes: u64,
    /// The same for a send to a rank on another host, when the profile
    /// measured an eager limit across hosts; null when `rendezvous_bytes`
    /// applies to every send.
    #[serde(default)]
    pub rendezvous_bytes_cross_host: Option<u64>,
    /// Where that threshold comes from: `option` (`--eager-limit`),
    /// `profile` (measured by the calibration), `mpi_t` (what the library
    /// states), `default`.
    pub rendezvous_source: RendezvousSource,
    /// The same in words (the `MPI_T` control variable named).
    #[serde(default)]
    pub rendezvous_detail: String,
    pub lookups: Lookups,
    pub tool: ToolCost,
    pub timer: TimerInfo,
    /// Keys the interposer folded into `other` because of its cap.
    pub folded_keys: u64,
    pub folded_calls: u64,
    /// `MPIOVER_DEPTH` of the run.
    pub depth: u32,
    /// How to get overhead when there is no profile.
    pub hint: Option<String>,
    /// What the verdicts were checked against besides tmax.
    #[serde(default)]
    pub stability: Stability,
    /// The sites and regions of a merged job log whose per-rank detail is
    /// bounded (more ranks than the log keeps rows for), whose medians and
    /// what derives from them are estimates; absent when every figure is
    /// exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounded_detail: Option<BoundedDetail>,
}

/// See [`Methods::bounded_detail`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundedDetail {
    pub sites: u64,
    pub regions: u64,
}

impl BoundedDetail {
    /// The METHODS line, the same in every format.
    pub fn describe(&self) -> String {
        format!(
            "the job log keeps the rows of some ranks only at {} sites and {} regions (more ranks \
             than its MPIOVER_LOG_ROWS): their per-rank medians, late ranks by arrival, root \
             causes and figures at the widened tmax are estimates, each within the bound \
             docs/report-format.md states; every sum, minimum, maximum and ranking is exact",
            self.sites, self.regions
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileMethod {
    /// `--profile` (re-analysed from the histograms) or `record` (online).
    pub source: ProfileSource,
    pub path: String,
    /// Whether the profile's environment matches the run; null if unknown.
    pub matched: Option<bool>,
    pub note: Option<String>,
    /// Where the profile's tmax values come from: entries per chosen error
    /// model, and those at the empirical quantile (none when the profile
    /// could not be read here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmax_from: Option<TmaxFrom>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCost {
    /// Median over ranks of the measured cost per wrapped call.
    pub cost_per_call_s: f64,
    /// Python sites: median over ranks of what the Python site adds to a
    /// call made from Python (absent when no rank had Python sites).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_cost_per_call_s: Option<f64>,
    /// Calls attributed to Python lines, over all ranks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub python_calls: u64,
    /// Wrapped calls over all ranks.
    pub calls: u64,
    /// Sum over ranks of cost per call x calls (and of the Python site's
    /// cost x calls from Python).
    pub time_s: f64,
    /// That time as a share of the application time.
    pub share_of_app: f64,
    /// With a job log: rank 0's time merging every rank's record into it at
    /// `MPI_Finalize` (seconds; not in `time_s`, which counts the calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_merge_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimerInfo {
    pub name: String,
    /// Coarsest resolution over ranks.
    pub resolution_s: f64,
    /// Largest cost of one read over ranks.
    pub cost_s: f64,
}

/// HTML-only details, computed for the top sites.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    pub heatmap: Option<Heatmap>,
    /// Indexed like `Report::sites`; `None` past the detailed sites.
    pub dists: Vec<Option<Dist>>,
    pub sources: Vec<Option<Source>>,
    /// Indexed like `Report::regions`: each region's source lines (empty
    /// past the regions shown, or when its files are not readable).
    pub regions: Vec<Vec<Excerpt>>,
}

/// Overhead (or time) per site and rank for the top sites.
#[derive(Debug, Clone)]
pub struct Heatmap {
    /// `overhead_s` or `time_s`.
    pub metric: Metric,
    /// Site indices (into `Report::sites`).
    pub rows: Vec<usize>,
    /// Rank ranges `[lo, hi]` of the columns (one rank each up to 128 ranks).
    pub cols: Vec<(u32, u32)>,
    /// `values[row][col]`: the largest value over the column's ranks, `None`
    /// when no rank of the column has the site.
    pub values: Vec<Vec<Option<f64>>>,
}

/// Distribution of a site's call times on log-spaced bins.
#[derive(Debug, Clone)]
pub struct Dist {
    /// Lower edge of each bin (seconds), and one past the last.
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
    /// Range and call-weighted mean of tmax over the calls that had one.
    pub tmax_min_s: Option<f64>,
    pub tmax_mean_s: Option<f64>,
    pub tmax_max_s: Option<f64>,
}

/// Source lines around a site.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: String,
    /// `(line number, text)`.
    pub lines: Vec<(u32, String)>,
    pub highlight: u32,
}
