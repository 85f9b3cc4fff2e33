//! The records of a run checked together: one per rank, the same run, the
//! same world size; what is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::record::{Record, FINISHED_AT_MERGE as MERGE_CUT};
use crate::run::error::{RunError, RunWarning};
use crate::run::record_file::Source;

/// What the cross-record checks need of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct RankInfo {
    pub path: PathBuf,
    pub run_id: String,
    pub rank: u32,
    pub ranks: u32,
    pub finished: String,
    /// Read from the job log rather than a file of its own.
    pub from_log: bool,
}

impl RankInfo {
    pub fn of(path: &Path, rec: &Record) -> RankInfo {
        RankInfo {
            path: path.to_path_buf(),
            run_id: rec.run_id.clone(),
            rank: rec.rank,
            ranks: rec.ranks,
            finished: rec.finished.clone(),
            from_log: false,
        }
    }

    /// The info of the record at `src`.
    pub fn of_source(src: &Source, rec: &Record) -> RankInfo {
        RankInfo {
            from_log: src.is_log(),
            ..RankInfo::of(&src.path(), rec)
        }
    }
}

/// Checks records against each other, one [`RankInfo`] at a time. Feed them in
/// file order for deterministic messages (the first file is the reference).
#[derive(Debug, Default)]
pub struct RunCheck {
    first: Option<RankInfo>,
    seen: BTreeMap<u32, PathBuf>,
    not_finalized: BTreeMap<String, Vec<u32>>,
    /// Ranks read from files of their own, and whether any came from a log.
    from_files: Vec<u32>,
    any_log: bool,
}

/// The outcome of a successful check.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub run_id: String,
    /// World size the records agree on.
    pub ranks: u32,
    /// Ranks that have a record, sorted.
    pub present: Vec<u32>,
    pub warnings: Vec<RunWarning>,
}

impl RunCheck {
    pub fn new() -> RunCheck {
        RunCheck::default()
    }

    pub fn add(&mut self, info: RankInfo) -> Result<(), RunError> {
        if let Some(first) = &self.first {
            if info.run_id != first.run_id {
                return Err(RunError::MixedRuns {
                    path: info.path,
                    found: info.run_id,
                    first: first.path.clone(),
                    expected: first.run_id.clone(),
                });
            }
            if info.ranks != first.ranks {
                return Err(RunError::InconsistentRanks {
                    path: info.path,
                    found: info.ranks,
                    first: first.path.clone(),
                    expected: first.ranks,
                });
            }
        }
        if info.rank >= info.ranks {
            return Err(RunError::RankOutOfRange {
                path: info.path,
                rank: info.rank,
                ranks: info.ranks,
            });
        }
        if let Some(prev) = self.seen.get(&info.rank) {
            return Err(RunError::DuplicateRank {
                rank: info.rank,
                first: prev.clone(),
                path: info.path,
            });
        }
        self.seen.insert(info.rank, info.path.clone());
        if info.from_log {
            self.any_log = true;
        } else {
            self.from_files.push(info.rank);
        }
        if info.finished != "finalize" {
            self.not_finalized
                .entry(info.finished.clone())
                .or_default()
                .push(info.rank);
        }
        if self.first.is_none() {
            self.first = Some(info);
        }
        Ok(())
    }

    /// Ends the check; `None` when no record was added.
    pub fn finish(self) -> Option<RunSummary> {
        let first = self.first?;
        let present: Vec<u32> = self.seen.keys().copied().collect();
        let mut warnings = Vec::new();
        if present.len() < first.ranks as usize {
            // The gaps between the ranks present, as ranges: the work and
            // memory are those of the records, whatever `ranks` claims.
            let mut missing = Vec::new();
            let mut next = 0u32;
            for &r in present.iter().filter(|&&r| r < first.ranks) {
                if r > next {
                    missing.push((next, r - 1));
                }
                next = r + 1;
            }
            if next < first.ranks {
                missing.push((next, first.ranks - 1));
            }
            warnings.push(RunWarning::MissingRanks {
                missing,
                ranks: first.ranks,
            });
        }
        if self.any_log && !self.from_files.is_empty() {
            let mut ranks = self.from_files;
            ranks.sort_unstable();
            warnings.push(RunWarning::OutsideTheLog { ranks });
        }
        for (how, mut ranks) in self.not_finalized {
            ranks.sort_unstable();
            warnings.push(if how == MERGE_CUT {
                RunWarning::MergeCut { ranks }
            } else {
                RunWarning::NotFinalized { how, ranks }
            });
        }
        Some(RunSummary {
            run_id: first.run_id,
            ranks: first.ranks,
            present,
            warnings,
        })
    }
}
