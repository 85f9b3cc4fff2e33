//! One record file: found in a run directory, parsed, checked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::joblog::{JobLog, LOG_FILE_NAME};
use crate::record::{Record, RECORD_SCHEMA};
use crate::run::error::RunError;

/// A run directory: its job log, if rank 0 wrote one at `MPI_Finalize`, and
/// its per-rank record files, sorted by name (so by rank): written by ranks
/// that did not reach the log (killed, no `MPI_Finalize`) or by every rank
/// with `MPIOVER_FORMAT=per-rank`.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    pub files: Vec<PathBuf>,
    pub log: Option<Arc<JobLog>>,
}

/// Where one rank's record is: a file of its own or a frame of the job log.
#[derive(Debug, Clone)]
pub enum Source {
    File(PathBuf),
    Frame(Arc<JobLog>, usize),
}

impl Source {
    /// The record, parsed and checked.
    pub fn read(&self) -> Result<Record, RunError> {
        match self {
            Source::File(p) => read_record(p),
            Source::Frame(log, i) => log.record(*i),
        }
    }

    /// How the record is named in messages (`DIR/job.mpiover-log#rank-3`).
    pub fn path(&self) -> PathBuf {
        match self {
            Source::File(p) => p.clone(),
            Source::Frame(log, i) => log.frame_path(log.rank(*i)),
        }
    }

    pub fn is_log(&self) -> bool {
        matches!(self, Source::Frame(..))
    }
}

/// True for a record file name: `rank-<digits>.json`.
pub fn is_record_file_name(name: &str) -> bool {
    name.strip_prefix("rank-")
        .and_then(|s| s.strip_suffix(".json"))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

impl RunDir {
    /// Lists the records of a run directory. Other files are ignored.
    pub fn open(path: impl AsRef<Path>) -> Result<RunDir, RunError> {
        let path = path.as_ref().to_path_buf();
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RunError::NotFound(path))
            }
            Err(source) => return Err(RunError::ReadDir { path, source }),
        };
        if !meta.is_dir() {
            return Err(RunError::NotADirectory(path));
        }
        let rd = std::fs::read_dir(&path).map_err(|source| RunError::ReadDir {
            path: path.clone(),
            source,
        })?;
        let mut files = Vec::new();
        let mut log = None;
        let mut other_files = 0;
        for ent in rd {
            let ent = ent.map_err(|source| RunError::ReadDir {
                path: path.clone(),
                source,
            })?;
            let name = ent.file_name();
            match name.to_str() {
                Some(n) if is_record_file_name(n) => files.push(ent.path()),
                Some(LOG_FILE_NAME) => log = Some(Arc::new(JobLog::open(&ent.path())?)),
                _ => other_files += 1,
            }
        }
        if files.is_empty() && log.is_none() {
            return Err(RunError::Empty { path, other_files });
        }
        files.sort();
        Ok(RunDir { path, files, log })
    }

    /// Every record's place: the job log's frames first, then the files.
    /// A rank's own file of the log's run is left out when the log holds
    /// that rank: a signal at the end of the merge can leave both, and the
    /// log's copy was taken at `MPI_Finalize`. A file of another run stays
    /// in, so that the check refuses the mix.
    pub fn sources(&self) -> Vec<Source> {
        let mut v: Vec<Source> = match &self.log {
            // The merged aggregate is read by the report, not as records.
            Some(l) if l.is_merged() => Vec::new(),
            Some(l) => {
                // Rank order, as the files sort: rank 0 writes its own frame
                // last (it holds the merge's time).
                let mut order: Vec<usize> = (0..l.len()).collect();
                order.sort_by_key(|&i| l.rank(i));
                order
                    .into_iter()
                    .map(|i| Source::Frame(l.clone(), i))
                    .collect()
            }
            None => Vec::new(),
        };
        let in_log = |f: &PathBuf| -> bool {
            let Some(l) = &self.log else { return false };
            let rank = f.file_name().and_then(|n| n.to_str()).and_then(|n| {
                n.strip_prefix("rank-")?
                    .strip_suffix(".json")?
                    .parse::<u32>()
                    .ok()
            });
            rank.is_some_and(|r| (0..l.len()).any(|i| l.rank(i) == r))
                && read_record(f).is_ok_and(|rec| rec.run_id == l.header.run_id)
        };
        v.extend(
            self.files
                .iter()
                .filter(|f| !in_log(f))
                .cloned()
                .map(Source::File),
        );
        v
    }
}

/// Reads, parses and checks one record file.
pub fn read_record(path: &Path) -> Result<Record, RunError> {
    let bytes = std::fs::read(path).map_err(|source| RunError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_record(path, &bytes)
}

/// Parses and checks one record; `path` is only used in errors.
pub fn parse_record(path: &Path, bytes: &[u8]) -> Result<Record, RunError> {
    #[derive(Deserialize)]
    struct SchemaOnly {
        schema: Option<serde_json::Value>,
    }
    let schema_error = |v: Option<serde_json::Value>| RunError::Schema {
        path: path.to_path_buf(),
        found: v.map(|v| match v {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        }),
    };
    match serde_json::from_slice::<Record>(bytes) {
        Ok(rec) => {
            if rec.schema != RECORD_SCHEMA {
                return Err(schema_error(Some(serde_json::Value::String(rec.schema))));
            }
            check_record(path, &rec)?;
            Ok(rec)
        }
        Err(e) if e.is_eof() => Err(RunError::Truncated {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
        }),
        Err(e) => {
            // A JSON object of another shape: say whose it is rather than
            // which field is missing.
            match serde_json::from_slice::<SchemaOnly>(bytes) {
                Ok(s) if s.schema.as_ref().and_then(|v| v.as_str()) != Some(RECORD_SCHEMA) => {
                    Err(schema_error(s.schema))
                }
                _ => Err(RunError::Parse {
                    path: path.to_path_buf(),
                    source: e,
                }),
            }
        }
    }
}

/// The internal consistency of one record ([`Record::check`]), its faults
/// named with the file they are in.
pub fn check_record(path: &Path, rec: &Record) -> Result<(), RunError> {
    rec.check().map_err(|e| RunError::of_record(path, e))
}
