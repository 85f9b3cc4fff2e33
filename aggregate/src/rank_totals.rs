//! What the aggregate keeps of each rank: its times, overhead, the tool's
//! cost, and how its record was made and ended.

use mpiover_common::functions::{lifecycle, Lifecycle};
use mpiover_common::record::Record;
use serde::{Deserialize, Serialize};

/// One rank's row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankAcc {
    pub rank: u32,
    pub host: String,
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
    pub finished: String,
    pub command: Vec<String>,
    pub mpi_library: String,
    pub thread_level: String,
    pub start: f64,
    pub end: f64,
    pub timer_name: String,
    pub timer_resolution: f64,
    pub timer_cost: f64,
    pub depth: u32,
    pub profile: Option<(String, bool, Option<f64>, Option<String>)>,
    pub warnings: Vec<String>,
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
            host: rec.host.clone(),
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
            finished: rec.finished.clone(),
            command: rec.command.clone(),
            mpi_library: rec.mpi_library.clone(),
            thread_level: rec.thread_level.clone(),
            start: rec.start_unix_s,
            end: rec.end_unix_s,
            timer_name: rec.timer.name.clone(),
            timer_resolution: rec.timer.resolution_s,
            timer_cost: rec.timer.cost_s,
            depth: rec.tool.depth,
            profile: rec
                .profile
                .as_ref()
                .map(|p| (p.path.clone(), p.matched, p.q_max, p.note.clone())),
            warnings: rec.warnings.clone(),
        }
    }

    /// The tool's own time on this rank: the wrapper's cost per call, plus
    /// the Python site's on the calls made from Python.
    pub fn tool_time(&self) -> f64 {
        self.cost_per_call * self.calls as f64 + self.py_cost.unwrap_or(0.0) * self.py_calls as f64
    }
}
