//! What can be wrong with a run directory or a record, and the warnings a
//! readable run may still carry.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::record::{RecordFault, RECORD_SCHEMA};

/// Why a run directory or one of its records cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("run directory {} does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("{} is not a directory: give the run directory that holds the rank-NNNNNN.json records", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot read run directory {}: {source}", path.display())]
    ReadDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("run directory {} holds no rank records (rank-NNNNNN.json){}", path.display(),
        if *other_files > 0 { format!("; it has {other_files} other file(s): is it the right directory?") } else { String::new() })]
    Empty { path: PathBuf, other_files: usize },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: truncated record (the JSON ends early, at line {line} column {column}); the rank was probably killed while writing it: remove the file to report on the other ranks", path.display())]
    Truncated {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("{}: not a valid {RECORD_SCHEMA} record: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: {}, expected \"{RECORD_SCHEMA}\" (a file of another tool or of another version of mpiover)", path.display(),
        match found { Some(s) => format!("schema is {s:?}"), None => "no \"schema\" field".to_string() })]
    Schema {
        path: PathBuf,
        found: Option<String>,
    },
    #[error("{}: {what}", path.display())]
    Invalid { path: PathBuf, what: String },
    #[error("records of two runs are mixed: {} is from run {found:?} but {} is from run {expected:?}; give a directory that holds one run", path.display(), first.display())]
    MixedRuns {
        path: PathBuf,
        found: String,
        first: PathBuf,
        expected: String,
    },
    #[error("rank {rank} has two records: {} and {}", first.display(), path.display())]
    DuplicateRank {
        rank: u32,
        first: PathBuf,
        path: PathBuf,
    },
    #[error("inconsistent number of ranks: {} says the run has {found} ranks but {} says {expected}", path.display(), first.display())]
    InconsistentRanks {
        path: PathBuf,
        found: u32,
        first: PathBuf,
        expected: u32,
    },
    #[error("{}: truncated job log: its frames are whole up to byte {offset} of {size}, then {what} is cut short (the job was probably killed while rank 0 wrote it)", path.display())]
    TruncatedLog {
        path: PathBuf,
        offset: u64,
        size: u64,
        what: String,
    },
    #[error("{}: corrupt job log at byte {offset}: {what}", path.display())]
    BadLog {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    #[error("{}: rank {rank} is not below the number of ranks ({ranks})", path.display())]
    RankOutOfRange {
        path: PathBuf,
        rank: u32,
        ranks: u32,
    },
}

impl RunError {
    /// A fault inside the record at `path` (a file, or a job log's frame).
    pub fn of_record(path: &Path, fault: RecordFault) -> RunError {
        let path = path.to_path_buf();
        match fault {
            RecordFault::Invalid(what) => RunError::Invalid { path, what },
            RecordFault::RankOutOfRange { rank, ranks } => {
                RunError::RankOutOfRange { path, rank, ranks }
            }
        }
    }
}

/// Something the reader of a report should know, which does not stop it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunWarning {
    /// Ranks of `0..ranks` without a record, as ranges `lo..=hi` (a
    /// damaged file can claim 2^32 ranks: a list of each would take 16 GiB).
    MissingRanks {
        missing: Vec<(u32, u32)>,
        ranks: u32,
    },
    /// Ranks whose record was written at exit or on a signal rather than at
    /// `MPI_Finalize`: their figures stop there. `how` is the record's `finished`.
    NotFinalized { how: String, ranks: Vec<u32> },
    /// Ranks whose record is a file of its own beside the job log (they did
    /// not reach the merge at `MPI_Finalize`).
    OutsideTheLog { ranks: Vec<u32> },
    /// Ranks that reached `MPI_Finalize` while the job ended during the job
    /// log merge: their records, written before the merge, are whole.
    MergeCut { ranks: Vec<u32> },
}

impl fmt::Display for RunWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunWarning::MissingRanks { missing, ranks } => {
                let n: u64 = missing.iter().map(|&(lo, hi)| (hi - lo) as u64 + 1).sum();
                write!(
                    f,
                    "{n} of {ranks} ranks have no record ({}): they ended without writing one \
                     (killed with SIGKILL, by the launcher once its grace period was over or by \
                     the out-of-memory killer); the report covers the other {}",
                    range_list(missing, 10),
                    *ranks as u64 - n
                )
            }
            RunWarning::OutsideTheLog { ranks } => write!(
                f,
                "{} rank(s) came from records of their own ({}), the others from the job log: \
                 they did not reach its merge at MPI_Finalize",
                ranks.len(),
                rank_list(ranks, 10)
            ),
            RunWarning::MergeCut { ranks } => write!(
                f,
                "the job ended during the job log merge at MPI_Finalize: {} rank(s) that had reached \
                 it ({}) left the records they wrote before the merge, whole up to MPI_Finalize",
                ranks.len(),
                rank_list(ranks, 10)
            ),
            RunWarning::NotFinalized { how, ranks } => write!(
                f,
                "{} rank(s) wrote their record at {how}, not at MPI_Finalize ({}): their figures stop there",
                ranks.len(),
                rank_list(ranks, 10)
            ),
        }
    }
}

/// `0-3, 7, 9-12` for a sorted list, with at most `max` groups shown.
pub fn rank_list(ranks: &[u32], max: usize) -> String {
    let mut groups: Vec<(u32, u32)> = Vec::new();
    for &r in ranks {
        match groups.last_mut() {
            Some((_, hi)) if *hi + 1 == r => *hi = r,
            _ => groups.push((r, r)),
        }
    }
    range_list(&groups, max)
}

/// [`rank_list`] of ranks given as ranges `lo..=hi`, in increasing order.
pub fn range_list(groups: &[(u32, u32)], max: usize) -> String {
    let mut parts: Vec<String> = groups
        .iter()
        .take(max)
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("rank {lo}")
            } else {
                format!("ranks {lo}-{hi}")
            }
        })
        .collect();
    if groups.len() > max {
        parts.push(format!("and {} more", groups.len() - max));
    }
    parts.join(", ")
}
