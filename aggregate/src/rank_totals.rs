//! What the aggregate keeps of each rank: its times, overhead, the tool's
//! cost, and how its record was made and ended.

use std::sync::Arc;

use mpiover_common::functions::{lifecycle, Lifecycle};
use mpiover_common::record::Record;
use serde::{Deserialize, Serialize};

/// The profile a rank's record names: path, whether it matched the run,
/// q_max, a note.
pub type ProfileRow = (String, bool, Option<f64>, Option<String>);

/// One rank's row. What is the same on many ranks (the host, the command,
/// the library, ...) is shared (`Arc`), so that a million rows cost their
/// numbers, not a million copies of the same strings; the job log writes
/// them as columns (`crate::rank_table`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankAcc {
    pub rank: u32,
    pub host: Arc<str>,
    pub app_time: f64,
    /// Without start-up and shut-down.
    pub mpi_time: f64,
    pub startup: f64,
    pub shutdown: f64,
    pub event_time: f64,
    pub overhead: Option<f64>,
    pub calls: u64,
    pub cost_per_call: f64,
    /// Rank 0's time merging the job log, when the run wrote one.
    pub merge_s: Option<f64>,
    /// Python sites: added cost per call from Python, and such calls.
    pub py_cost: Option<f64>,
    pub py_calls: u64,
    pub finished: Arc<str>,
    pub command: Arc<[String]>,
    pub mpi_library: Arc<str>,
    pub thread_level: Arc<str>,
    pub start: f64,
    pub end: f64,
    pub timer_name: Arc<str>,
    pub timer_resolution: f64,
    pub timer_cost: f64,
    pub depth: u32,
    pub profile: Option<Arc<ProfileRow>>,
    pub warnings: Arc<[String]>,
}

impl RankAcc {
    /// The row of a record whose entries summed `event_time` seconds and
    /// `overhead` (None when no entry had a tmax).
    pub(crate) fn of_record(rec: &Record, event_time: f64, overhead: Option<f64>) -> RankAcc {
        // Start-up and shut-down are not the application's communication:
        // they go on their own line, out of the MPI time every %MPI divides by.
        let (mut startup, mut shutdown) = (0.0, 0.0);
        for f in &rec.functions {
            match lifecycle(&f.function) {
                Some(Lifecycle::StartUp) => startup += f.time_s,
                Some(Lifecycle::ShutDown) => shutdown += f.time_s,
                None => {}
            }
        }
        RankAcc {
            rank: rec.rank,
            host: rec.host.as_str().into(),
            app_time: rec.app_time_s,
            mpi_time: (rec.mpi_time_s - startup - shutdown).max(0.0),
            startup,
            shutdown,
            event_time,
            overhead,
            calls: rec.tool.calls,
            cost_per_call: rec.tool.cost_per_call_s,
            merge_s: rec.tool.merge_s.filter(|s| s.is_finite() && *s >= 0.0),
            py_cost: rec.tool.python.as_ref().map(|p| p.cost_per_call_s),
            py_calls: rec.tool.python.as_ref().map_or(0, |p| p.calls),
            finished: rec.finished.as_str().into(),
            command: rec.command.as_slice().into(),
            mpi_library: rec.mpi_library.as_str().into(),
            thread_level: rec.thread_level.as_str().into(),
            start: rec.start_unix_s,
            end: rec.end_unix_s,
            timer_name: rec.timer.name.as_str().into(),
            timer_resolution: rec.timer.resolution_s,
            timer_cost: rec.timer.cost_s,
            depth: rec.tool.depth,
            profile: rec
                .profile
                .as_ref()
                .map(|p| Arc::new((p.path.clone(), p.matched, p.q_max, p.note.clone()))),
            warnings: rec.warnings.as_slice().into(),
        }
    }

    /// The tool's own time on this rank: the wrapper's cost per call, plus
    /// the Python site's on the calls made from Python.
    pub fn tool_time(&self) -> f64 {
        self.cost_per_call * self.calls as f64 + self.py_cost.unwrap_or(0.0) * self.py_calls as f64
    }
}
