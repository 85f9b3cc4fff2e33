//! The profile's schema: the types serialized as `mpiover-profile/1`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::profile::fit_model::{FitModel, TailTest};
use crate::profile::index::Index;
use crate::profile::load::HostLoad;
use crate::profile::samples::Samples;

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
    pub runs: Vec<CalibrationRun>,
    pub entries: Vec<ProfileEntry>,
    /// Base points that were planned but not measured, and why.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// The library's eager/rendezvous threshold as measured (absent in
    /// profiles made before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    #[serde(skip)]
    pub(crate) index: OnceLock<Index>,
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
    /// The same for the limit between hosts (`btl_tcp_eager_limit` under
    /// Open MPI), when the run had several hosts and the library states one;
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpi_t_cross_host: Option<MpiTValue>,
}

/// A control variable's value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiTValue {
    pub cvar: String,
    pub bytes: u64,
}

impl Protocol {
    /// The smallest message size sent with the rendezvous protocol between
    /// two ranks of one host, and between two hosts: one above each eager
    /// limit measured below the largest size searched. The first is the
    /// same-host one (the cross-host one when only that was measured, and
    /// the second is then `None`); `None` when nothing was measured or every
    /// size searched was eager.
    pub fn rendezvous_bytes_by_host(&self) -> Option<(u64, Option<u64>)> {
        let above = |l: Option<u64>| {
            l.filter(|&l| l < self.searched_up_to)
                .map(|l| l.saturating_add(1))
        };
        match self.eager_limit_same_host {
            Some(_) => Some((
                above(self.eager_limit_same_host)?,
                above(self.eager_limit_cross_host),
            )),
            None => Some((above(self.eager_limit_cross_host)?, None)),
        }
    }

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

/// Why the calibration stopped sampling an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The stopping rule: tmax stable over the last samples.
    Stable,
    MaxSamples,
    EntryBudget,
    TimeBudget,
    /// Windows stayed invalid at the largest window size.
    WindowMax,
}

impl StopReason {
    /// The spelling of the profile file.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stable => "stable",
            StopReason::MaxSamples => "max_samples",
            StopReason::EntryBudget => "entry_budget",
            StopReason::TimeBudget => "time_budget",
            StopReason::WindowMax => "window_max",
        }
    }
}

/// How the calibration made ranks start a call together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMethod {
    /// Synchronized clocks, one call per window.
    #[default]
    Window,
    /// An `MPI_Barrier` before every call.
    Barrier,
}

impl SyncMethod {
    /// The spelling of the profile file.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncMethod::Window => "window",
            SyncMethod::Barrier => "barrier",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),+) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }
    )+};
}
display_as_str!(FitModel, StopReason, SyncMethod);

/// How the profile was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Method {
    pub sync: SyncMethod,
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
    /// Rounds each entry was measured in (passes over the grid whose
    /// samples are pooled); 0 or 1: one (absent from such profiles).
    #[serde(skip_serializing_if = "at_most_one")]
    pub rounds: u32,
    /// The least wall time the rounds were spread over, seconds.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub spread_s: f64,
}

fn at_most_one(v: &u32) -> bool {
    *v <= 1
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Clock synchronization: a linear model (offset + drift) of each rank's clock
/// against rank 0's, by ping-pong regression (Jones-Koenig, Hunold & Carpen-Amarie 2015 Alg. 15).
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
    /// The rank's host (`environment.hosts`); empty in older profiles.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
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
    /// Fit points whose offset the model mispredicted by more than its
    /// bound (the model had gone wrong: the drift changed; the model was
    /// started afresh from each), and the worst such error beyond the
    /// point's own uncertainty, seconds. Absent when none.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub model_failures: u32,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub prediction_error_s: f64,
    /// The rank reads rank 0's clock (one kernel, one time namespace): its
    /// model is zero by construction, not learned. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
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
pub struct CalibrationRun {
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
    /// How busy rank 0's host was while the run measured (none in older
    /// profiles and where `/proc` cannot be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<HostLoad>,
}

/// One base point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
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
    /// What was measured and fitted (flattened: its keys are the entry's).
    #[serde(flatten)]
    pub measured: Measured,
    /// Per-run summaries (one per calibration run merged into this entry).
    #[serde(default)]
    pub runs: Vec<EntryRun>,
    /// The kept samples of every run, in measurement order, so that the
    /// models can be refitted without measuring again (profiles written
    /// before they were kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Samples>,
}

/// One run's summary of an entry's sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryRun {
    pub run: String,
    /// The run's own numbers (flattened). Fields that profiles written
    /// before they were kept per run lack read as 0 or none.
    #[serde(flatten)]
    pub measured: Measured,
}

/// What calibration measured and fitted of one entry: over all its runs in
/// [`ProfileEntry`], over one run in [`EntryRun`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
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
    /// Chosen model (`poisson`, `exponential`, `negbinomial`, `lognormal`,
    /// `mixture`; `tail` when every body model was rejected and a generalized
    /// Pareto tail was accepted), none when every model was rejected (then
    /// tmax is the empirical q_max quantile, `fallback`).
    pub model: Option<FitModel>,
    pub lambda: Option<f64>,
    /// Every parameter of the chosen model, in the statistics' order
    /// (`ModelKind::param_names`; `[lambda]` for poisson and exponential), so
    /// that tmax can be re-computed at another q_max. Absent in profiles
    /// written before the families with more than one parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Vec<f64>>,
    pub chi2: Option<f64>,
    pub df: Option<u64>,
    /// Critical chi-square value at alpha.
    #[serde(default)]
    pub critical: Option<f64>,
    pub accepted: bool,
    #[serde(default)]
    pub fallback: bool,
    /// The tail model's test, when one was fitted (every body model rejected):
    /// its Anderson-Darling statistic and p-value, accepted or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_test: Option<TailTest>,
    /// Histogram bin width of the fit, seconds.
    #[serde(default)]
    pub bin_width_s: Option<f64>,
    /// Final window size, seconds (window sync).
    #[serde(default)]
    pub window_s: Option<f64>,
    /// Why sampling stopped: `stable`, `max_samples`, `entry_budget`, `time_budget`.
    #[serde(default)]
    pub stop: Option<StopReason>,
    /// Sum of the kept samples (seconds) and wall time spent on the entry.
    #[serde(default)]
    pub sum_s: Option<f64>,
    #[serde(default)]
    pub elapsed_s: Option<f64>,
    /// Anything unusual about the entry (why the fit failed, ...).
    #[serde(default)]
    pub note: Option<String>,
}

/// An entry reads as what was measured of it: `entry.tmax_s`.
impl std::ops::Deref for ProfileEntry {
    type Target = Measured;
    fn deref(&self) -> &Measured {
        &self.measured
    }
}

impl std::ops::DerefMut for ProfileEntry {
    fn deref_mut(&mut self) -> &mut Measured {
        &mut self.measured
    }
}

/// A run's summary reads as what was measured in that run.
impl std::ops::Deref for EntryRun {
    type Target = Measured;
    fn deref(&self) -> &Measured {
        &self.measured
    }
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
pub struct ProfileKey {
    pub function: String,
    pub p: u32,
    pub bytes: u64,
    pub role: Option<String>,
    pub same_host: Option<bool>,
}

impl fmt::Display for ProfileKey {
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

impl ProfileEntry {
    pub fn key(&self) -> ProfileKey {
        ProfileKey {
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
            measured: self.measured.clone(),
        }
    }
}
