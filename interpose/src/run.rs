//! The run's shared facts, read by every layer: what `MPI_Init*` learnt
//! ([`INFO`]), what the job writes ([`format`]), the options that steer
//! diagnostics, and how a warning is given. Set by start-up (`crate::init`),
//! read by the hot path's neighbours and the writers; nothing here names
//! another module of the interposer but [`crate::opt`].

use std::path::PathBuf;
use std::sync::OnceLock;

use mpiover_common::record::Record;

/// Facts about the run, fixed at init; read when the record is written.
pub struct RunInfo {
    /// The record's fixed part (who, where, which library, since when): the
    /// writer fills in the rest.
    pub head: Record,
    pub start_mono_ns: u64,
    /// None: no records are written (the directory was not writable).
    pub dir: Option<PathBuf>,
    pub timer_resolution_s: f64,
    pub timer_cost_s: f64,
    pub cost_per_call_s: f64,
    /// Python sites: the interpreter and the added cost per call from
    /// Python, when they are on.
    pub python: Option<(String, f64)>,
    pub depth: u32,
    pub max_keys: u32,
    pub warnings: Vec<String>,
}

pub static INFO: OnceLock<RunInfo> = OnceLock::new();

/// What this job writes: `MPIOVER_FORMAT` with `auto` resolved for the
/// world's size (per-rank before `MPI_Init` filled it in).
pub fn format() -> crate::opt::Format {
    let ranks = INFO.get().map_or(1, |i| i.head.ranks);
    crate::opt::get().format_for(ranks)
}

/// The eager limit the library states, asked at `MPI_Finalize`
/// (`crate::init::ask_eager_limit`).
pub(crate) static EAGER_LIMIT: OnceLock<mpiover_common::profile::MpiTValue> = OnceLock::new();

/// The limit `crate::init::ask_eager_limit` found, if asked and stated.
pub fn eager_limit() -> Option<mpiover_common::profile::MpiTValue> {
    EAGER_LIMIT.get().cloned()
}

/// `MPIOVER_QUIET` (see [`crate::opt`]).
pub fn quiet() -> bool {
    crate::opt::get().quiet
}

/// `MPIOVER_DEBUG` set: timings of the record write on stderr.
pub fn debug() -> bool {
    crate::opt::get().debug
}

/// `MPIOVER_DEBUG=slow-write` (tests: 300 ms pass between the quick and the
/// resolved write of a record at exit or on a signal).
pub fn slow_write() -> bool {
    crate::opt::get().slow_write
}

/// One warning: into the record always, on stderr once (rank 0 only for
/// warnings every rank would repeat).
pub fn warn(warnings: &mut Vec<String>, msg: String, print: bool) {
    if print && !quiet() {
        say_warning(&msg);
    }
    warnings.push(msg);
}

/// Writes `mpiover: warning: <msg>` and its newline to stderr in one
/// `write`: `eprintln!` writes a formatted line in pieces, and the
/// application's own ranks writing to the same pipe then land inside it
/// (a line under 4 KiB written at once stays whole in a pipe).
pub fn say_warning(msg: &str) {
    use std::io::Write;
    let line = format!("mpiover: warning: {msg}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
