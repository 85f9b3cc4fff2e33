//! The calibrated profile, schema `mpiover-profile/1`, and its lookup.
//!
//! `mpiover-calibrate` measures, for every communication event, a sample of
//! run-times under ideal conditions and reduces it to `tmax`, the longest time
//! one call may take without overhead (the overhead paper §4-9). The profile holds one
//! [`Entry`] per measured base point `(function, p, bytes, role, same_host)`,
//! the [`Environment`] it was measured in and the [`Method`] used, so that a
//! reader can judge the numbers (Hoefler & Belli, rules 9 and 10). The interposer
//! loads it at `MPI_Init` ([`Profile::load`]), checks that the run matches
//! ([`Profile::matches`]) and asks [`Profile::tmax`] once per new key.
//!
//! # File layout
//!
//! ```text
//! {"schema": "mpiover-profile/1",
//!  "environment": {hosts, ranks, ranks_per_host, mpi_library, cpu_model, binding, timer, date,
//!                  tool_version, command, ...},
//!  "method": {sync, clock_sync, window, q_max, alpha, warmup, min_samples, max_samples,
//!             entry_budget_s, time_budget_s, seed, functions, procs, sizes, ...},
//!  "runs": [{id, date, command, seed, wall_s, kept_windows, kept_window_s, ...}],
//!                                                             one per calibration run merged in
//!  "entries": [{function, p, bytes, role, same_host, hosts, n, n_invalid, n_late, n_overrun,
//!               n_preempted, min_s, median_s,
//!               median_ci_s, max_s, q90_s, q99_s, tmax_s, model, lambda, chi2, df, critical,
//!               accepted, fallback, bin_width_s, window_s, stop, sum_s, elapsed_s, note,
//!               runs: [{run, n, n_invalid, min_s, median_s, tmax_s, ...}]}],
//!  "skipped": [{function, p, bytes, reason}]}                 jobs not measured (budget)}
//! ```
//!
//! All times are seconds. The file is written with one entry per line so that
//! it stays readable and diffable; any JSON reader can load it. `n` counts the
//! kept samples, `n_invalid` the samples dropped because their window was
//! invalid, split by reason (`n_late`: a rank started late; else
//! `n_overrun`: a call ended after the window; else `n_preempted`: a rank was
//! preempted during its call); `model` is null and `fallback` true when every error model was
//! rejected by the chi-square test (tmax is then the empirical q_max
//! quantile); `stop` says why sampling ended (`stable`: the stopping rule of
//! the statistical core; `max_samples`; `entry_budget`; `time_budget`;
//! `window_max`).
//!
//! # For the interposer
//!
//! ```no_run
//! use mpiover_common::profile::{Environment, Profile};
//! let prof = Profile::load("profile.json")?;                 // errors name the file and the problem
//! let here = Environment { mpi_library: "Open MPI v4.1.4".into(), ..Default::default() };
//! if let Err(m) = prof.matches(&here) { eprintln!("mpiover: profile does not match: {m}"); }
//! if let Some(l) = prof.tmax("MPI_Recv", 16, 8, None) {       // once per new key
//!     let _overhead = (2.0e-5 - l.tmax_s).max(0.0);            // l.out_of_range: flag it
//! }
//! # Ok::<(), mpiover_common::profile::ProfileError>(())
//! ```
//!
//! The first lookup builds the index (one table per function/role, binary
//! searches after that); [`Index`] can also be built and kept separately.
//!
//! # Keys: what an entry's `function`, `p`, `bytes` and `role` mean
//!
//! Function names are the C names of [`crate::functions::EVENTS`] (`MPI_Send`).
//!
//! | function | p | bytes | role | sample (whose local durations) |
//! |---|---|---|---|---|
//! | `MPI_Send`, `MPI_Ssend` | 2 | message | none | both ranks of a ping-pong pair (ping and pong) |
//! | `MPI_Recv` | 2 | message | none | both ranks: the receive of the ping (posted with the send) and of the pong (posted after the own send) |
//! | `MPI_Isend`, `MPI_Irecv` | 2 | message | none | posting the request, both ranks |
//! | `MPI_Wait` | 2 | message | `MPI_Isend` or `MPI_Irecv` | the wait completing that request, right after posting |
//! | `MPI_Sendrecv` | 2 | message (each way) | none | both ranks, exchanging |
//! | `MPI_Bcast`, `MPI_Reduce`, `MPI_Gather(v)`, `MPI_Scatter(v)` | comm size | per-rank block | `root` / `nonroot` | root alone / all non-roots pooled |
//! | `MPI_Allreduce`, `MPI_Allgather(v)`, `MPI_Alltoall(v)`, `MPI_Scan`, `MPI_Exscan`, `MPI_Reduce_scatter(_block)`, `MPI_Barrier` | comm size | per-rank block (Barrier: 0) | none | all ranks pooled |
//!
//! *bytes* is the size of the per-rank block the call's arguments describe
//! (count x type size): the message for point-to-point calls, the buffer for
//! Bcast/Reduce/Allreduce/Scan/Exscan, `sendcount` of Gather/Allgather (on the
//! root too), `recvcount` of Scatter and Reduce_scatter_block, the per-pair
//! block of Alltoall; for the `v` variants and Reduce_scatter the mean block,
//! total / p. This is the "message size" of the usual MPI benchmarks; it can
//! be computed from the arguments on every rank without knowing the others'.
//!
//! Point-to-point entries do not depend on the communicator size: they are
//! measured on a pair, stored with `p = 2`, and the lookup ignores `p` for
//! them (never flagged out of range because of `p`). `same_host` says whether
//! the pair shared a host; on a multi-host calibration both kinds exist.
//!
//! Non-blocking point-to-point: the post (`MPI_Isend`, `MPI_Irecv`) is keyed by
//! its own name; the completion is keyed `function = "MPI_Wait"` with `role`
//! = the completed request's function (`"MPI_Irecv"`, `"MPI_Isend"`), i.e.
//! what the run record calls `completes`. A completion through
//! `Waitall/Waitany/Test` of one request may be looked up as `MPI_Wait`.
//!
//! # Lookup: interpolation and its axes
//!
//! `Tf(p, b)` is defined at the base points and interpolated bilinearly in
//! `(ln p, ln b)` (the overhead paper §8):
//!
//! - **bytes on a log scale.** The base sizes are log-spaced (1, 10, 20, ...,
//!   100, 200, ..., 4 MiB); communication time is close to linear in b only
//!   within a decade, and a linear scale would make everything between 1 MB and
//!   2 MB depend on two far apart points the same way as 1 B to 10 B. `b = 0` is
//!   treated as `b = 1` (a zero-byte message costs what a one-byte one does).
//! - **p on a log scale.** Tree-based collectives cost ~ log p, so linear
//!   interpolation in ln p is exact for them; for algorithms linear in p
//!   (Alltoall) interpolating in ln p overestimates slightly between base
//!   points (at most ~2 % between 2^n and 1.5 * 2^n), while interpolating in p
//!   would underestimate the log-p ones. Overestimating tmax is the safe side:
//!   it never invents overhead.
//!
//! Each `p` row is interpolated over its own byte list (the grid may be
//! ragged: a budget-limited run, a merge), then the two rows around `p` are
//! interpolated. The result is exact at base points and, between two adjacent
//! base points, lies between their values and is monotone (a convex
//! combination). Outside the measured range the nearest edge is used and
//! [`Lookup::out_of_range`] is set: never an extrapolation.
//!
//! # Merging runs
//!
//! Run-to-run (mpirun-to-mpirun) variation of a few percent is normal (seed
//! 000). [`Profile::merge`] combines two profiles of the same environment
//! (unless forced), the same q_max and the same `method.sync` (never forced:
//! barrier-synchronized samples hold the barrier's exit skew). Entries with the
//! same key keep every run's sample summary in `runs`, and the combined fields
//! are ([`combine_runs`]):
//!
//! - summed: `n`, `n_invalid`, `n_late`, `n_overrun`, `n_preempted`, and
//!   `sum_s`, `elapsed_s` (none when a run lacks them: a sum over part of the
//!   runs would not describe the `n` samples beside it);
//! - envelope: `min_s` the minimum, `max_s` the maximum, `median_ci_s` the
//!   union of the runs' intervals; `q90_s`, `q99_s` the **maximum** of the
//!   runs' quantiles (the pooled sample's quantile lies between the runs'
//!   smallest and largest, so this is an upper bound); `median_s` the median
//!   of the runs' medians (also between the runs' smallest and largest);
//!   `window_s` and `hosts` the largest;
//! - from the run with the largest tmax: `tmax_s` (the **maximum**), `model`,
//!   `lambda`, `chi2`, `df`, `critical`, `bin_width_s`, `stop`; `accepted`
//!   only if every run's model was accepted, `fallback` if any run fell back;
//!   `note` the runs' notes prefixed with their run ids.
//!
//! Taking the maximum tmax means that run-to-run variation the machine shows
//! under ideal conditions is never reported as overhead of an application.
//! The merged top-level fields are not a fit of the pooled samples (those are
//! not kept); each run's own summary stays in `runs`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::functions::{class_of, EventClass};

/// The schema string of this format; readers refuse anything else.
pub const PROFILE_SCHEMA: &str = "mpiover-profile/1";

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// A calibration profile. Build one with [`Profile::new`] or load it with
/// [`Profile::load`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// Always [`PROFILE_SCHEMA`].
    pub schema: String,
    pub environment: Environment,
    pub method: Method,
    /// One element per calibration run (mpirun) whose entries are in here.
    #[serde(default)]
    pub runs: Vec<RunInfo>,
    pub entries: Vec<Entry>,
    /// Base points that were planned but not measured, and why.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// The library's eager/rendezvous threshold as measured (absent in
    /// profiles made before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    #[serde(skip)]
    index: OnceLock<Index>,
}

/// Where the library switches from the eager to the rendezvous protocol:
/// the largest message a blocking `MPI_Send` delivers without waiting for
/// its receiver, found by sending to a receiver that is deliberately late.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Protocol {
    /// Largest eager message between two ranks of one host (bytes); `null`
    /// when not measured.
    pub eager_limit_same_host: Option<u64>,
    /// The same between two hosts; `null` when the run had one host.
    pub eager_limit_cross_host: Option<u64>,
    /// Largest size searched: a limit equal to it means every size up to it
    /// was eager.
    pub searched_up_to: u64,
    /// How it was measured.
    pub method: String,
    /// What the library's `MPI_T` control variables say, when it has one:
    /// `{cvar, bytes}`.
    pub mpi_t: Option<MpiTValue>,
}

/// A control variable's value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiTValue {
    pub cvar: String,
    pub bytes: u64,
}

impl Protocol {
    /// The smallest message size that is sent with the rendezvous protocol:
    /// one above the eager limit (the same-host one, or the smaller of the
    /// two when both were measured: sends are then labelled as waiting for
    /// their receiver rather than not); `None` when nothing was measured or
    /// every size searched was eager.
    pub fn rendezvous_bytes(&self) -> Option<u64> {
        let limit = match (self.eager_limit_same_host, self.eager_limit_cross_host) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        (limit < self.searched_up_to).then_some(limit + 1)
    }
}

/// Where the profile was measured. Every field has a default so that an
/// interposer can fill only what it knows before calling [`Profile::matches`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// Distinct host names (`MPI_Get_processor_name`), in order of first rank.
    pub hosts: Vec<String>,
    /// Number of ranks (world size) of the calibration run.
    pub ranks: u32,
    /// Ranks on each host, parallel to `hosts`.
    pub ranks_per_host: Vec<u32>,
    /// `MPI_Get_library_version`, trimmed.
    pub mpi_library: String,
    /// `openmpi`, `mpich` or `unknown` (what the tool was built against).
    pub mpi_flavor: String,
    /// `model name` of /proc/cpuinfo on the first host.
    pub cpu_model: String,
    /// Online CPUs of the first host.
    pub cpus: u32,
    pub binding: Binding,
    pub timer: TimerInfo,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub os: String,
    /// MPI tuning variables of the environment (`OMPI_MCA_*`, `MPICH_*`,
    /// `I_MPI_*`, `UCX_*`, ...): the library's settings are part of the machine.
    pub mpi_env: BTreeMap<String, String>,
    /// UTC date and time of the calibration start, ISO 8601.
    pub date: String,
    /// Version of the tool that measured.
    pub tool_version: String,
    /// Command line of rank 0.
    pub command: Vec<String>,
}

/// Process binding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Binding {
    /// The requested policy, e.g. `OMPI_MCA_hwloc_base_binding_policy`, if set.
    pub policy: Option<String>,
    /// Each rank's allowed CPUs (`sched_getaffinity`, as a CPU list), by rank.
    pub ranks: Vec<String>,
}

/// The timer the durations were measured with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimerInfo {
    pub name: String,
    /// Smallest non-zero difference of two consecutive reads, seconds.
    pub resolution_s: f64,
    /// Mean cost of one read, seconds.
    pub cost_s: f64,
}

/// How the profile was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Method {
    /// `window` (synchronized clocks, one call per window) or `barrier`.
    pub sync: String,
    /// Clock synchronization (window sync only).
    pub clock_sync: Option<ClockSync>,
    pub window: Option<WindowRule>,
    /// Quantile of the error model that defines tmax.
    pub q_max: f64,
    /// Significance level of the chi-square test.
    pub alpha: f64,
    /// Relative tolerance of the stopping rule.
    pub rel_tol: Option<f64>,
    /// Warm-up calls per entry, discarded.
    pub warmup: u32,
    pub min_samples: u64,
    pub max_samples: u64,
    /// Time budget of one entry, seconds.
    pub entry_budget_s: f64,
    /// Time budget of the whole run, seconds, if any.
    pub time_budget_s: Option<f64>,
    /// Target wall time the entry budgets were paced to, seconds, if any:
    /// each job got at most (pace - elapsed) / (jobs left), at least 0.1 s.
    pub pace_s: Option<f64>,
    /// Seed of the job-order shuffle.
    pub seed: u64,
    /// Whether `--quick` chose the grid.
    pub quick: bool,
    /// The grid asked for.
    pub functions: Vec<String>,
    pub procs: Vec<u32>,
    /// Neighbour counts k of the exchange pattern (`MPI_Waitall`, role
    /// `exchange`); empty in profiles made before it existed.
    #[serde(default)]
    pub exchange_neighbours: Vec<u32>,
    pub sizes: Vec<u64>,
    /// Datatype and op of the reductions.
    pub reduction: String,
    /// Which ranks' local durations form the sample of an entry.
    pub sample: String,
    /// Which ranks form the sub-communicator of size p.
    pub communicators: String,
    /// Anything else worth knowing (test settings in force, ...).
    pub notes: Vec<String>,
}

/// Clock synchronization: a linear model (offset + drift) of each rank's clock
/// against rank 0's, by ping-pong regression (Jones-Koenig, Hunold & Carpen-Amarie 2016 Alg. 15).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockSync {
    pub method: String,
    /// Fit points per synchronization and ping-pongs per fit point.
    pub fitpoints: u32,
    pub exchanges: u32,
    /// Re-synchronization interval, seconds (fit points are added to the model).
    pub resync_interval_s: f64,
    /// The model of each rank at the end of the run.
    pub ranks: Vec<RankClock>,
}

/// A rank's clock model: `local - global = drift * local + intercept`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankClock {
    pub rank: u32,
    /// `local - global` at `ref_local_s`, seconds.
    pub offset_s: f64,
    /// Local clock time (seconds) where `offset_s` is evaluated: the middle of
    /// the fit points.
    pub ref_local_s: f64,
    /// Slope of the model (dimensionless, s/s).
    pub drift: f64,
    /// Fit points in the model, and the local time they span (seconds).
    pub fitpoints: u32,
    pub span_s: f64,
    /// Smallest ping-pong round trip seen, seconds.
    pub rtt_min_s: f64,
    /// Root mean square residual of the fit, seconds.
    pub residual_s: f64,
}

/// The window rule of window-based synchronization.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowRule {
    /// How the first window of an entry is chosen.
    pub initial: String,
    /// When and how it grows.
    pub growth: String,
    /// Lower and upper bound, seconds.
    pub min_s: f64,
    pub max_s: f64,
    /// Lead time between broadcasting a start time and the start, seconds
    /// (initial value; grown when first windows start late).
    pub lead_s: f64,
}

/// One calibration run (one mpirun) whose entries are in the profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunInfo {
    /// Unique id of the run (date and random suffix).
    pub id: String,
    pub date: String,
    pub command: Vec<String>,
    pub hosts: Vec<String>,
    pub ranks: u32,
    pub seed: u64,
    /// Wall time of the run, seconds (summed over resumed segments).
    pub wall_s: f64,
    /// Windows whose samples were kept, and the sum over them of the longest
    /// rank's call time in the window, seconds (summed over resumed
    /// segments; 0 in older profiles). Unlike the entries' `sum_s`, which
    /// pools every rank's overlapping duration, this counts each window's
    /// call time once: `wall_s / kept_window_s` is the calibration's cost per
    /// second of calls measured.
    pub kept_windows: u64,
    pub kept_window_s: f64,
    /// Number of times the run was resumed with `--resume`.
    pub resumed: u32,
    /// Whether the run measured every planned entry.
    pub complete: bool,
}

/// One base point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// C name of the MPI function (`MPI_Send`).
    pub function: String,
    /// Communicator size (2 for point-to-point).
    pub p: u32,
    /// Per-rank block size, see the module docs.
    pub bytes: u64,
    /// `root`/`nonroot` for rooted collectives, the completed request's
    /// function for `MPI_Wait`, else none.
    #[serde(default)]
    pub role: Option<String>,
    /// Point-to-point: whether the pair shared a host.
    #[serde(default)]
    pub same_host: Option<bool>,
    /// Hosts spanned by the communicator.
    #[serde(default)]
    pub hosts: u32,
    /// Kept (valid) samples.
    pub n: u64,
    /// Samples dropped because their window was invalid. Each dropped sample
    /// is counted under one reason, the first that applies, so that
    /// `n_invalid = n_late + n_overrun + n_preempted` (profiles written
    /// before `n_late`/`n_overrun` existed read them as 0).
    pub n_invalid: u64,
    /// Dropped because a rank started its call late: it arrived after the
    /// window's start (the previous window spilled over) or its wait ended
    /// more than 1 us after it (it lost its core while waiting).
    #[serde(default)]
    pub n_late: u64,
    /// Dropped because (not late, but) a rank's call ended after its window.
    #[serde(default)]
    pub n_overrun: u64,
    /// Dropped only because a rank was preempted during its call (its
    /// thread's context switches grew): a host shared with other work.
    #[serde(default)]
    pub n_preempted: u64,
    pub min_s: f64,
    pub median_s: f64,
    /// Nonparametric 95 % confidence interval of the median.
    #[serde(default)]
    pub median_ci_s: Option<[f64; 2]>,
    #[serde(default)]
    pub max_s: Option<f64>,
    /// Empirical 90 % and 99 % quantiles of the kept sample.
    #[serde(default)]
    pub q90_s: Option<f64>,
    #[serde(default)]
    pub q99_s: Option<f64>,
    pub tmax_s: f64,
    /// Chosen model (`poisson`, `exponential`), none when every model was
    /// rejected (then tmax is the empirical q_max quantile, `fallback`).
    pub model: Option<String>,
    pub lambda: Option<f64>,
    pub chi2: Option<f64>,
    pub df: Option<u64>,
    /// Critical chi-square value at alpha.
    #[serde(default)]
    pub critical: Option<f64>,
    pub accepted: bool,
    #[serde(default)]
    pub fallback: bool,
    /// Histogram bin width of the fit, seconds.
    #[serde(default)]
    pub bin_width_s: Option<f64>,
    /// Final window size, seconds (window sync).
    #[serde(default)]
    pub window_s: Option<f64>,
    /// Why sampling stopped: `stable`, `max_samples`, `entry_budget`, `time_budget`.
    #[serde(default)]
    pub stop: Option<String>,
    /// Sum of the kept samples (seconds) and wall time spent on the entry.
    #[serde(default)]
    pub sum_s: Option<f64>,
    #[serde(default)]
    pub elapsed_s: Option<f64>,
    /// Anything unusual about the entry (why the fit failed, ...).
    #[serde(default)]
    pub note: Option<String>,
    /// Per-run summaries (one per calibration run merged into this entry).
    #[serde(default)]
    pub runs: Vec<EntryRun>,
}

/// One run's summary of an entry's sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryRun {
    pub run: String,
    pub n: u64,
    pub n_invalid: u64,
    /// Why samples were dropped (see [`Entry`]); 0 in profiles written
    /// before these were kept per run.
    #[serde(default)]
    pub n_late: u64,
    #[serde(default)]
    pub n_overrun: u64,
    #[serde(default)]
    pub n_preempted: u64,
    pub min_s: f64,
    pub median_s: f64,
    #[serde(default)]
    pub median_ci_s: Option<[f64; 2]>,
    #[serde(default)]
    pub max_s: Option<f64>,
    #[serde(default)]
    pub q90_s: Option<f64>,
    #[serde(default)]
    pub q99_s: Option<f64>,
    /// Sum of the run's kept samples and its wall time on the entry, seconds
    /// (none in profiles written before these were kept per run).
    #[serde(default)]
    pub sum_s: Option<f64>,
    #[serde(default)]
    pub elapsed_s: Option<f64>,
    #[serde(default)]
    pub window_s: Option<f64>,
    #[serde(default)]
    pub stop: Option<String>,
    #[serde(default)]
    pub hosts: u32,
    #[serde(default)]
    pub note: Option<String>,
    pub tmax_s: f64,
    pub model: Option<String>,
    pub lambda: Option<f64>,
    pub chi2: Option<f64>,
    pub df: Option<u64>,
    #[serde(default)]
    pub critical: Option<f64>,
    pub accepted: bool,
    #[serde(default)]
    pub fallback: bool,
    #[serde(default)]
    pub bin_width_s: Option<f64>,
}

/// A base point that was planned but not measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub function: String,
    pub p: u32,
    pub bytes: u64,
    pub reason: String,
}

/// The identity of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub function: String,
    pub p: u32,
    pub bytes: u64,
    pub role: Option<String>,
    pub same_host: Option<bool>,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} p={} bytes={}", self.function, self.p, self.bytes)?;
        if let Some(r) = &self.role {
            write!(f, " role={r}")?;
        }
        if let Some(s) = self.same_host {
            write!(f, " same_host={s}")?;
        }
        Ok(())
    }
}

impl Entry {
    pub fn key(&self) -> Key {
        Key {
            function: self.function.clone(),
            p: self.p,
            bytes: self.bytes,
            role: self.role.clone(),
            same_host: self.same_host,
        }
    }

    /// This entry's own numbers as a per-run summary.
    pub fn as_run(&self, run: &str) -> EntryRun {
        EntryRun {
            run: run.to_string(),
            n: self.n,
            n_invalid: self.n_invalid,
            n_late: self.n_late,
            n_overrun: self.n_overrun,
            n_preempted: self.n_preempted,
            min_s: self.min_s,
            median_s: self.median_s,
            median_ci_s: self.median_ci_s,
            max_s: self.max_s,
            q90_s: self.q90_s,
            q99_s: self.q99_s,
            sum_s: self.sum_s,
            elapsed_s: self.elapsed_s,
            window_s: self.window_s,
            stop: self.stop.clone(),
            hosts: self.hosts,
            note: self.note.clone(),
            tmax_s: self.tmax_s,
            model: self.model.clone(),
            lambda: self.lambda,
            chi2: self.chi2,
            df: self.df,
            critical: self.critical,
            accepted: self.accepted,
            fallback: self.fallback,
            bin_width_s: self.bin_width_s,
        }
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why a profile could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("profile {path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("profile {path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("profile {path}: not valid JSON: {msg}")]
    Json { path: PathBuf, msg: String },
    #[error("profile {path}: {msg}")]
    Schema { path: PathBuf, msg: String },
    #[error("profile {path}: {msg}")]
    Invalid { path: PathBuf, msg: String },
    #[error("cannot merge profiles: {0}")]
    Merge(String),
}

/// Why a profile does not fit an environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub reasons: Vec<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.reasons.join("; "))
    }
}

impl std::error::Error for Mismatch {}

// ---------------------------------------------------------------------------
// Loading, saving
// ---------------------------------------------------------------------------

impl Profile {
    pub fn new(environment: Environment, method: Method) -> Self {
        Profile {
            schema: PROFILE_SCHEMA.to_string(),
            environment,
            method,
            runs: Vec::new(),
            entries: Vec::new(),
            skipped: Vec::new(),
            protocol: None,
            index: OnceLock::new(),
        }
    }

    /// Read and check a profile file.
    pub fn load(path: impl AsRef<Path>) -> Result<Profile, ProfileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text, path)
    }

    /// Parse and check a profile; `path` is only used in messages.
    pub fn from_json(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        #[derive(Deserialize)]
        struct Head {
            schema: Option<serde_json::Value>,
        }
        let p = || path.to_path_buf();
        // A JSON list or scalar would otherwise fail with serde's "trailing
        // characters" (a struct can be read from a sequence), which says
        // nothing useful: say what the file is not.
        if let Some(c) = text.trim_start().chars().next().filter(|c| *c != '{') {
            let what = match c {
                '[' => "a JSON list",
                '"' => "a JSON string",
                _ => "not a JSON object",
            };
            return Err(ProfileError::Schema {
                path: p(),
                msg: format!("{what}: not an mpiover profile (expected an object with \"schema\": \"{PROFILE_SCHEMA}\")"),
            });
        }
        let head: Head = serde_json::from_str(text).map_err(|e| ProfileError::Json {
            path: p(),
            msg: e.to_string(),
        })?;
        match head.schema {
            None => {
                return Err(ProfileError::Schema {
                    path: p(),
                    msg: format!(
                    "no \"schema\" field: not an mpiover profile (expected \"{PROFILE_SCHEMA}\")"
                ),
                })
            }
            Some(serde_json::Value::String(s)) if s == PROFILE_SCHEMA => {}
            Some(serde_json::Value::String(s)) if s.starts_with("mpiover-profile/") => {
                return Err(ProfileError::Schema {
                    path: p(),
                    msg: format!(
                        "schema \"{s}\" is not supported (this mpiover reads \"{PROFILE_SCHEMA}\")"
                    ),
                })
            }
            Some(other) => {
                return Err(ProfileError::Schema {
                    path: p(),
                    msg: format!(
                        "schema {other} is not an mpiover profile (expected \"{PROFILE_SCHEMA}\")"
                    ),
                })
            }
        }
        let prof: Profile = serde_json::from_str(text).map_err(|e| ProfileError::Json {
            path: p(),
            msg: e.to_string(),
        })?;
        prof.validate()
            .map_err(|msg| ProfileError::Invalid { path: p(), msg })?;
        Ok(prof)
    }

    /// Check the entries: finite non-negative times, p >= 1, no duplicate keys.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            let k = e.key();
            let bad = |what: &str| format!("entry {i} ({k}): {what}");
            if e.function.is_empty() {
                return Err(bad("empty function name"));
            }
            if e.p == 0 {
                return Err(bad("p must be at least 1"));
            }
            for (name, v) in [
                ("tmax_s", e.tmax_s),
                ("min_s", e.min_s),
                ("median_s", e.median_s),
            ] {
                if !v.is_finite() || v < 0.0 {
                    return Err(bad(&format!("{name} = {v} is not a non-negative number")));
                }
            }
            if let Some(j) = seen.insert(k.clone(), i) {
                return Err(format!("entries {j} and {i} have the same key ({k})"));
            }
        }
        Ok(())
    }

    /// The profile as JSON: pretty header, one entry per line.
    pub fn to_json(&self) -> String {
        fn field<T: Serialize>(out: &mut String, name: &str, v: &T, last: bool) {
            out.push_str("  \"");
            out.push_str(name);
            out.push_str("\": ");
            let s = serde_json::to_string_pretty(v).expect("profile serializes");
            out.push_str(&s.replace('\n', "\n  "));
            out.push_str(if last { "\n" } else { ",\n" });
        }
        fn list<T: Serialize>(out: &mut String, name: &str, v: &[T], last: bool) {
            out.push_str("  \"");
            out.push_str(name);
            out.push_str("\": [");
            for (i, e) in v.iter().enumerate() {
                out.push_str(if i == 0 { "\n    " } else { ",\n    " });
                out.push_str(&serde_json::to_string(e).expect("profile serializes"));
            }
            out.push_str(if v.is_empty() { "]" } else { "\n  ]" });
            out.push_str(if last { "\n" } else { ",\n" });
        }
        let mut out = String::from("{\n");
        field(&mut out, "schema", &self.schema, false);
        field(&mut out, "environment", &self.environment, false);
        field(&mut out, "method", &self.method, false);
        list(&mut out, "runs", &self.runs, false);
        list(&mut out, "entries", &self.entries, false);
        if let Some(p) = &self.protocol {
            field(&mut out, "protocol", p, false);
        }
        list(&mut out, "skipped", &self.skipped, true);
        out.push_str("}\n");
        out
    }

    /// Write the profile atomically: a temporary file in the same directory,
    /// then a rename, so a reader (or a killed run) never sees half a file.
    pub fn save_atomic(&self, path: impl AsRef<Path>) -> Result<(), ProfileError> {
        let path = path.as_ref();
        let werr = |source| ProfileError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, self.to_json()).map_err(werr)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            werr(e)
        })
    }

    /// Add an entry (replacing one with the same key) and drop the lookup index.
    pub fn push_entry(&mut self, e: Entry) {
        let k = e.key();
        if let Some(old) = self.entries.iter_mut().find(|x| x.key() == k) {
            *old = e;
        } else {
            self.entries.push(e);
        }
        self.index = OnceLock::new();
    }

    /// Call after changing `entries` directly, before the next lookup.
    pub fn invalidate_index(&mut self) {
        self.index = OnceLock::new();
    }

    pub fn entry(&self, key: &Key) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key() == *key)
    }
}

// ---------------------------------------------------------------------------
// Environment match
// ---------------------------------------------------------------------------

fn norm_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Profile {
    /// Whether this profile may be used in `run` (the environment of an
    /// application run; fields left empty/zero are not compared).
    ///
    /// A mismatch is: another MPI library (version string), another CPU model,
    /// none of the run's hosts among the profile's hosts, more ranks on a host
    /// than were calibrated on any host, another binding policy. Each reason
    /// names both values.
    pub fn matches(&self, run: &Environment) -> Result<(), Mismatch> {
        let me = &self.environment;
        let mut reasons = Vec::new();
        if !me.mpi_library.is_empty()
            && !run.mpi_library.is_empty()
            && norm_ws(&me.mpi_library) != norm_ws(&run.mpi_library)
        {
            reasons.push(format!(
                "MPI library differs: profile \"{}\", this run \"{}\"",
                first_line(&me.mpi_library),
                first_line(&run.mpi_library)
            ));
        }
        if !me.cpu_model.is_empty()
            && !run.cpu_model.is_empty()
            && norm_ws(&me.cpu_model) != norm_ws(&run.cpu_model)
        {
            reasons.push(format!(
                "CPU differs: profile \"{}\", this run \"{}\"",
                me.cpu_model, run.cpu_model
            ));
        }
        if !me.hosts.is_empty()
            && !run.hosts.is_empty()
            && !run.hosts.iter().any(|h| me.hosts.contains(h))
        {
            reasons.push(format!(
                "other machine: profile measured on {}, this run is on {}",
                me.hosts.join(","),
                run.hosts.join(",")
            ));
        }
        let max_me = me.ranks_per_host.iter().copied().max().unwrap_or(0);
        let max_run = run.ranks_per_host.iter().copied().max().unwrap_or(0);
        if max_me > 0 && max_run > max_me {
            reasons.push(format!(
                "{max_run} ranks on a host, the profile was measured with at most {max_me} per host"
            ));
        }
        if let (Some(a), Some(b)) = (&me.binding.policy, &run.binding.policy) {
            if a != b {
                reasons.push(format!("binding policy differs: profile {a}, this run {b}"));
            }
        }
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(Mismatch { reasons })
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}

// ---------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------

/// How a tmax was estimated, as far as the report's significance test needs
/// it: from `n` calibration samples, by a fitted model (`fitted`) or as the
/// empirical quantile. A tmax is an estimate, so a clean call exceeds it with
/// a chance that is itself uncertain (`mpiover_stats::ExceedancePrior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Basis {
    pub n: u64,
    pub fitted: bool,
}

impl Basis {
    pub fn of(e: &Entry) -> Basis {
        Basis {
            n: e.n,
            fitted: !e.fallback && e.model.is_some(),
        }
    }

    /// The less certain of two: fewer samples, fitted only if both were.
    pub fn weaker(self, o: Basis) -> Basis {
        Basis {
            n: self.n.min(o.n),
            fitted: self.fitted && o.fitted,
        }
    }
}

/// Result of a tmax lookup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lookup {
    pub tmax_s: f64,
    /// How the base points used were estimated (the weakest of them).
    pub basis: Basis,
    /// The point lies outside the measured range in p or bytes; the nearest
    /// edge was used.
    pub out_of_range: bool,
    /// The point is a base point (no interpolation).
    pub exact: bool,
    /// The p rows used (equal when p is a base point or clamped).
    pub p_lo: u32,
    pub p_hi: u32,
}

impl Lookup {
    /// `exact`, `interpolated` or `out of range`.
    pub fn kind(&self) -> &'static str {
        if self.out_of_range {
            "out of range"
        } else if self.exact {
            "exact"
        } else {
            "interpolated"
        }
    }
}

/// A lookup request. `same_host: None` means unknown: then the cross-host
/// entries are used when the profile has both (the larger tmax, so the
/// network's own latency is never reported as overhead).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub function: &'a str,
    pub p: u32,
    pub bytes: u64,
    pub role: Option<&'a str>,
    pub same_host: Option<bool>,
}

/// Whether a function's entries depend on the communicator size.
pub fn is_point_to_point(function: &str) -> bool {
    matches!(
        class_of(function),
        Some(
            EventClass::Send
                | EventClass::Recv
                | EventClass::SendRecv
                | EventClass::Post
                | EventClass::Completion
        )
    )
}

/// Canonical role string: `root`/`nonroot`, `MPI_Isend`/`MPI_Irecv` for waits.
pub fn normalize_role(function: &str, role: &str) -> String {
    let r = role.trim();
    let low = r.to_ascii_lowercase();
    match low.as_str() {
        "root" => "root".into(),
        "nonroot" | "non-root" | "non_root" => "nonroot".into(),
        _ if function == "MPI_Wait"
            || low.starts_with("mpi_i")
            || low == "isend"
            || low == "irecv" =>
        {
            let base = low.trim_start_matches("mpi_");
            let mut c = base.chars();
            match c.next() {
                Some(first) => format!("MPI_{}{}", first.to_ascii_uppercase(), c.as_str()),
                None => r.to_string(),
            }
        }
        _ => r.to_string(),
    }
}

#[derive(Debug, Clone)]
struct Row {
    p: u32,
    /// Sorted by bytes (0 mapped to 1), unique.
    bytes: Vec<u64>,
    tmax: Vec<f64>,
    basis: Vec<Basis>,
}

#[derive(Debug, Clone)]
struct Table {
    p2p: bool,
    /// Sorted by p.
    rows: Vec<Row>,
}

/// One row's base points while the index is built: bytes -> (tmax, basis).
type RowPoints = BTreeMap<u64, (f64, Basis)>;

/// (function, role, same_host).
type TableKey = (String, Option<String>, Option<bool>);

/// The lookup structure: one table per (function, role, same_host), rows by p,
/// points by bytes; lookups are two binary searches.
#[derive(Debug, Clone, Default)]
pub struct Index {
    tables: HashMap<TableKey, Table>,
}

fn xb(b: u64) -> f64 {
    (b.max(1) as f64).ln()
}

fn lerp(a: f64, b: f64, t: f64) -> f64 {
    // Convex combination; exact at t = 0 and t = 1, never outside [a, b].
    let v = a + t * (b - a);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    v.clamp(lo, hi)
}

impl Row {
    /// (value, exact, out_of_range, basis)
    fn at(&self, bytes: u64) -> (f64, bool, bool, Basis) {
        let b = bytes.max(1);
        match self.bytes.binary_search(&b) {
            Ok(i) => (self.tmax[i], true, false, self.basis[i]),
            Err(0) => (self.tmax[0], false, true, self.basis[0]),
            Err(i) if i == self.bytes.len() => (self.tmax[i - 1], false, true, self.basis[i - 1]),
            Err(i) => {
                let (b0, b1) = (self.bytes[i - 1], self.bytes[i]);
                let t = (xb(b) - xb(b0)) / (xb(b1) - xb(b0));
                (
                    lerp(self.tmax[i - 1], self.tmax[i], t),
                    false,
                    false,
                    self.basis[i - 1].weaker(self.basis[i]),
                )
            }
        }
    }
}

impl Table {
    fn at(&self, p: u32, bytes: u64) -> Lookup {
        let rows = &self.rows;
        let one = |r: &Row, oor: bool| {
            let (v, exact, o, basis) = r.at(bytes);
            Lookup {
                tmax_s: v,
                basis,
                out_of_range: o || oor,
                exact: exact && !o && !oor,
                p_lo: r.p,
                p_hi: r.p,
            }
        };
        if self.p2p {
            // p does not matter: the row nearest to p (normally the only one, p = 2).
            let r = rows
                .iter()
                .min_by_key(|r| (r.p as i64 - p as i64).abs())
                .expect("table has rows");
            return one(r, false);
        }
        match rows.binary_search_by_key(&p, |r| r.p) {
            Ok(i) => one(&rows[i], false),
            Err(0) => one(&rows[0], true),
            Err(i) if i == rows.len() => one(&rows[i - 1], true),
            Err(i) => {
                let (r0, r1) = (&rows[i - 1], &rows[i]);
                let (v0, _, o0, n0) = r0.at(bytes);
                let (v1, _, o1, n1) = r1.at(bytes);
                let t = ((p as f64).ln() - (r0.p as f64).ln())
                    / ((r1.p as f64).ln() - (r0.p as f64).ln());
                Lookup {
                    tmax_s: lerp(v0, v1, t),
                    basis: n0.weaker(n1),
                    out_of_range: o0 || o1,
                    exact: false,
                    p_lo: r0.p,
                    p_hi: r1.p,
                }
            }
        }
    }
}

impl Index {
    pub fn new(entries: &[Entry]) -> Index {
        let mut points: HashMap<TableKey, BTreeMap<u32, RowPoints>> = HashMap::new();
        for e in entries {
            let role = e.role.as_deref().map(|r| normalize_role(&e.function, r));
            let k = (e.function.clone(), role, e.same_host);
            let row = points.entry(k).or_default().entry(e.p).or_default();
            // b = 0 and b = 1 are the same point; keep the larger tmax.
            let basis = Basis::of(e);
            let slot = row.entry(e.bytes.max(1)).or_insert((e.tmax_s, basis));
            *slot = (slot.0.max(e.tmax_s), slot.1.weaker(basis));
        }
        let tables = points
            .into_iter()
            .map(|(k, rows)| {
                // An exchange's p is its neighbour count: it matters like a
                // collective's communicator size.
                let p2p = is_point_to_point(&k.0) && k.1.as_deref() != Some("exchange");
                let rows = rows
                    .into_iter()
                    .map(|(p, pts)| Row {
                        p,
                        bytes: pts.keys().copied().collect(),
                        tmax: pts.values().map(|v| v.0).collect(),
                        basis: pts.values().map(|v| v.1).collect(),
                    })
                    .collect();
                (k, Table { p2p, rows })
            })
            .collect();
        Index { tables }
    }

    fn table(&self, function: &str, role: Option<&str>, same_host: Option<bool>) -> Option<&Table> {
        let role = role.map(|r| normalize_role(function, r));
        let get = |role: Option<String>, sh: Option<bool>| {
            self.tables.get(&(function.to_string(), role, sh))
        };
        let try_role = |role: Option<String>| match same_host {
            Some(s) => get(role.clone(), Some(s)).or_else(|| get(role, None)),
            None => get(role.clone(), Some(false))
                .or_else(|| get(role.clone(), Some(true)))
                .or_else(|| get(role, None)),
        };
        match role {
            Some(r) => try_role(Some(r)).or_else(|| try_role(None)),
            None => try_role(None),
        }
    }

    pub fn lookup(&self, q: &Query) -> Option<Lookup> {
        self.table(q.function, q.role, q.same_host)
            .map(|t| t.at(q.p, q.bytes))
    }
}

impl Profile {
    /// The lookup index, built on first use.
    pub fn index(&self) -> &Index {
        self.index.get_or_init(|| Index::new(&self.entries))
    }

    /// tmax of one call of `function` on a communicator of `p` ranks moving
    /// `bytes` (per-rank block), `role` for rooted collectives (`root`,
    /// `nonroot`) and for `MPI_Wait` (the completed request's function).
    /// `None` when the profile has no entry for the function (and role).
    pub fn tmax(&self, function: &str, p: u32, bytes: u64, role: Option<&str>) -> Option<Lookup> {
        self.index().lookup(&Query {
            function,
            p,
            bytes,
            role,
            same_host: None,
        })
    }

    pub fn tmax_query(&self, q: &Query) -> Option<Lookup> {
        self.index().lookup(q)
    }
}

// ---------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Combine per-run summaries into an entry's top-level fields (module docs,
/// "Merging runs"): counts and sums are summed, order statistics take the
/// envelope, and the fit fields come from the run with the largest tmax.
/// With one run the entry's own fields come back unchanged.
pub fn combine_runs(base: &Entry, runs: Vec<EntryRun>) -> Entry {
    let mut e = base.clone();
    let top = runs
        .iter()
        .max_by(|a, b| a.tmax_s.total_cmp(&b.tmax_s))
        .expect("at least one run")
        .clone();
    // Some(f(values)) only when every run has the value: a sum or bound over
    // part of the runs would not describe the `n` samples it sits beside.
    fn all<T: Copy>(runs: &[EntryRun], get: impl Fn(&EntryRun) -> Option<T>) -> Option<Vec<T>> {
        runs.iter().map(get).collect()
    }
    e.n = runs.iter().map(|r| r.n).sum();
    e.n_invalid = runs.iter().map(|r| r.n_invalid).sum();
    e.n_late = runs.iter().map(|r| r.n_late).sum();
    e.n_overrun = runs.iter().map(|r| r.n_overrun).sum();
    e.n_preempted = runs.iter().map(|r| r.n_preempted).sum();
    e.min_s = runs.iter().map(|r| r.min_s).fold(f64::INFINITY, f64::min);
    e.max_s = all(&runs, |r| r.max_s).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max));
    e.median_s = median_of(runs.iter().map(|r| r.median_s).collect());
    e.median_ci_s = runs
        .iter()
        .filter_map(|r| r.median_ci_s)
        .reduce(|a, b| [a[0].min(b[0]), a[1].max(b[1])]);
    // The pooled sample's q-quantile lies between the runs' smallest and
    // largest q-quantiles; the largest is kept (an upper bound, the safe side
    // like tmax).
    e.q90_s = all(&runs, |r| r.q90_s).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max));
    e.q99_s = all(&runs, |r| r.q99_s).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max));
    e.sum_s = all(&runs, |r| r.sum_s).map(|v| v.into_iter().sum());
    e.elapsed_s = all(&runs, |r| r.elapsed_s).map(|v| v.into_iter().sum());
    e.window_s = runs.iter().filter_map(|r| r.window_s).reduce(f64::max);
    e.hosts = runs.iter().map(|r| r.hosts).max().unwrap_or(base.hosts);
    e.stop = top.stop.clone();
    e.tmax_s = top.tmax_s;
    e.model = top.model.clone();
    e.lambda = top.lambda;
    e.chi2 = top.chi2;
    e.df = top.df;
    e.critical = top.critical;
    e.bin_width_s = top.bin_width_s;
    e.accepted = runs.iter().all(|r| r.accepted);
    e.fallback = runs.iter().any(|r| r.fallback);
    e.note = if runs.len() == 1 {
        top.note.clone()
    } else {
        let notes: Vec<String> = runs
            .iter()
            .filter_map(|r| r.note.as_ref().map(|n| format!("run {}: {n}", r.run)))
            .collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    };
    e.runs = runs;
    e
}

impl Profile {
    /// The run id used for entries that carry no per-run summaries.
    fn default_run_id(&self) -> String {
        self.runs
            .first()
            .map(|r| r.id.clone())
            .unwrap_or_else(|| "unknown".into())
    }

    fn entry_runs(&self, e: &Entry) -> Vec<EntryRun> {
        match e.runs.as_slice() {
            [] => vec![e.as_run(&self.default_run_id())],
            // One run: the entry's own fields are that run's, and they may hold
            // what an older writer did not copy into `runs` (sum_s, q99_s, ...).
            [r] => vec![e.as_run(&r.run)],
            _ => e.runs.clone(),
        }
    }

    /// Merge two profiles (module docs). Refuses profiles of different
    /// environments (unless `force`), different q_max, or sharing a run.
    pub fn merge(a: &Profile, b: &Profile, force: bool) -> Result<Profile, ProfileError> {
        if !force {
            if let Err(m) = a.matches(&b.environment) {
                return Err(ProfileError::Merge(format!(
                    "the environments differ: {m} (use --force to merge anyway)"
                )));
            }
        }
        // Not even with `force`: barrier-synchronized samples hold the
        // barrier's exit skew, window-synchronized ones do not, so pooling
        // them would describe neither method.
        if a.method.sync != b.method.sync {
            return Err(ProfileError::Merge(format!(
                "the synchronization methods differ (method.sync \"{}\" and \"{}\"): their samples \
                 are not comparable; calibrate both with the same --sync",
                a.method.sync, b.method.sync
            )));
        }
        if (a.method.q_max - b.method.q_max).abs() > 1e-12 {
            return Err(ProfileError::Merge(format!(
                "q_max differs ({} and {}): their tmax are not comparable",
                a.method.q_max, b.method.q_max
            )));
        }
        for r in &b.runs {
            if a.runs.iter().any(|x| x.id == r.id) {
                return Err(ProfileError::Merge(format!(
                    "run {} is in both profiles (merging a profile with itself?)",
                    r.id
                )));
            }
        }
        let mut out = Profile::new(a.environment.clone(), a.method.clone());
        for h in &b.environment.hosts {
            if !out.environment.hosts.contains(h) {
                out.environment.hosts.push(h.clone());
                let i = b.environment.hosts.iter().position(|x| x == h).unwrap_or(0);
                out.environment
                    .ranks_per_host
                    .push(b.environment.ranks_per_host.get(i).copied().unwrap_or(0));
            }
        }
        out.runs = a.runs.iter().chain(b.runs.iter()).cloned().collect();
        let mut by_key: BTreeMap<Key, (Entry, Vec<EntryRun>)> = BTreeMap::new();
        for (prof, e) in a
            .entries
            .iter()
            .map(|e| (a, e))
            .chain(b.entries.iter().map(|e| (b, e)))
        {
            let runs = prof.entry_runs(e);
            by_key
                .entry(e.key())
                .and_modify(|(_, rs)| rs.extend(runs.clone()))
                .or_insert_with(|| (e.clone(), runs));
        }
        out.entries = by_key
            .into_values()
            .map(|(e, runs)| combine_runs(&e, runs))
            .collect();
        let measured: std::collections::HashSet<(String, u32, u64)> = out
            .entries
            .iter()
            .map(|e| (e.function.clone(), e.p, e.bytes))
            .collect();
        for s in a.skipped.iter().chain(b.skipped.iter()) {
            if !measured.contains(&(s.function.clone(), s.p, s.bytes)) && !out.skipped.contains(s) {
                out.skipped.push(s.clone());
            }
        }
        out.protocol = merge_protocol(a.protocol.as_ref(), b.protocol.as_ref());
        Ok(out)
    }
}

/// Two measurements of the eager limit: the smaller of each kind (a size one
/// run saw wait for its receiver is not trusted to be eager), searched up to
/// the smaller bound.
fn merge_protocol(a: Option<&Protocol>, b: Option<&Protocol>) -> Option<Protocol> {
    let min = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(Protocol {
            eager_limit_same_host: min(a.eager_limit_same_host, b.eager_limit_same_host),
            eager_limit_cross_host: min(a.eager_limit_cross_host, b.eager_limit_cross_host),
            searched_up_to: a.searched_up_to.min(b.searched_up_to),
            method: a.method.clone(),
            mpi_t: a.mpi_t.clone().or_else(|| b.mpi_t.clone()),
        }),
        (a, b) => a.or(b).cloned(),
    }
}

// ---------------------------------------------------------------------------
// Probing the local machine (no MPI)
// ---------------------------------------------------------------------------

/// `model name` of the first CPU in /proc/cpuinfo (or `unknown`).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| {
                    l.starts_with("model name")
                        || l.starts_with("Processor")
                        || l.starts_with("cpu model")
                })
                .and_then(|l| l.split_once(':').map(|x| x.1.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Number of CPUs listed in /proc/cpuinfo.
pub fn cpus_online() -> u32 {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count() as u32)
        .unwrap_or(0)
}

/// This process's allowed CPUs (`Cpus_allowed_list` of /proc/self/status).
pub fn cpus_allowed_list() -> Option<String> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Cpus_allowed_list:"))
                .map(|l| l["Cpus_allowed_list:".len()..].trim().to_string())
        })
}

/// Number of CPUs in a CPU list like `0-3,6`.
pub fn cpu_list_len(list: &str) -> u32 {
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(part.trim().parse::<u32>().is_ok()),
        })
        .sum()
}

/// The binding policy asked for through the environment, if any.
pub fn binding_policy() -> Option<String> {
    for var in [
        "OMPI_MCA_hwloc_base_binding_policy",
        "MPICH_BIND_TO",
        "HYDRA_BINDING",
        "I_MPI_PIN_DOMAIN",
    ] {
        if let Ok(v) = std::env::var(var) {
            if !v.is_empty() {
                return Some(format!("{var}={v}"));
            }
        }
    }
    None
}

/// Kernel release.
pub fn os_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_string())
}

/// MPI tuning variables of the environment.
pub fn mpi_env() -> BTreeMap<String, String> {
    const PREFIXES: &[&str] = &[
        "OMPI_MCA_",
        "MPICH_",
        "MPIR_CVAR_",
        "I_MPI_",
        "UCX_",
        "PSM2_",
        "FI_",
        "HYDRA_",
    ];
    std::env::vars()
        .filter(|(k, _)| PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect()
}

/// UTC date-time of a Unix time, ISO 8601 (`2026-01-31T12:00:00Z`).
pub fn iso8601_utc(unix_s: f64) -> String {
    let secs = unix_s.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Current Unix time in seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests;
