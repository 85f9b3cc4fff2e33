//! Regions and root causes in the report: why a late rank was late, from
//! the time each rank spent in its own code between MPI calls
//! (`docs/method.md`, "Root causes").

use serde::{Deserialize, Serialize};

/// One end of a region: the MPI call that opened or closed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionEndReport {
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Enclosing function (without parameters), when known.
    pub function: Option<String>,
    pub mpi_function: String,
    /// `file:line`, else module+offset, as sites show it.
    pub location: String,
}

/// A region: the code from the return of the `from` call to the entry of
/// the `to` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionRef {
    pub from: RegionEndReport,
    pub to: RegionEndReport,
}

impl RegionRef {
    /// The function both ends are in, when they share one.
    pub fn function(&self) -> Option<&str> {
        match (&self.from.function, &self.to.function) {
            (Some(a), Some(b)) if a == b => Some(a),
            _ => None,
        }
    }
}

/// Why a site waited: a late rank's region that took longer than the
/// waiting ranks' (`docs/method.md`, "Root causes").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootCause {
    /// The rank that spent longer in the region.
    pub rank: u32,
    pub region: RegionRef,
    /// How much longer it spent in the region than the waiting ranks (their
    /// median) spent in theirs, summed over the run, seconds.
    pub excess_s: f64,
    /// The part of the site's overhead it explains (0..1).
    pub share: f64,
    /// When the lateness propagated: the ranks it passed through, from the
    /// rank the site waited for to the one before `rank` (each was late
    /// because it waited itself). Empty when `rank` is the late rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<u32>,
}

/// Load imbalance of one region over the ranks that pass through it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionReport {
    pub region: RegionRef,
    /// Ranks that passed through it, and passes over all of them.
    pub ranks: u32,
    pub passes: u64,
    /// Summed over ranks, rank-seconds.
    pub time_s: f64,
    /// Time per rank (summed over the run): largest, median, smallest.
    pub max_s: f64,
    pub median_s: f64,
    pub min_s: f64,
    /// The rank with the largest time.
    pub max_rank: u32,
    /// `max_s - median_s`: what the slowest rank makes the others wait, at
    /// most, when the region ends at a synchronizing call.
    pub imbalance_s: f64,
}

/// Source lines of a region for the HTML export: one stretch of a file,
/// with the lines of the region's ends marked. Line numbers need not be
/// consecutive: a jump is an elision.
#[derive(Debug, Clone, PartialEq)]
pub struct Excerpt {
    pub path: String,
    /// `(line number, text)`, ascending.
    pub lines: Vec<(u32, String)>,
    /// The lines of the MPI calls that open and close the region.
    pub marks: Vec<u32>,
}
