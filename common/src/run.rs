//! Loading and checking a run directory: every rank's record (`rank-NNNNNN.json`).
//!
//! The checks are split so that a reader can stream: [`RunDir::open`] lists the
//! record files (missing, not a directory, empty), [`read_record`] parses one
//! file and checks its schema and internal consistency, and [`RunCheck`] checks
//! the records against each other (one run, no duplicate rank, the same number
//! of ranks) from a small [`RankInfo`] per record, so that the records
//! themselves need not be kept. [`load_run`] does all three for callers that
//! want every record in memory.
//!
//! Problems that make the directory unusable are [`RunError`]s, each naming the
//! file and what is wrong with it. Problems that leave a usable report (ranks
//! without a record, ranks that were killed) are [`RunWarning`]s.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::record::{Record, RECORD_SCHEMA};

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
    #[error("{}: rank {rank} is not below the number of ranks ({ranks})", path.display())]
    RankOutOfRange {
        path: PathBuf,
        rank: u32,
        ranks: u32,
    },
}

/// Something the reader of a report should know, which does not stop it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunWarning {
    /// Ranks of `0..ranks` without a record.
    MissingRanks { missing: Vec<u32>, ranks: u32 },
    /// Ranks whose record was written at exit or on a signal rather than at
    /// `MPI_Finalize`: their figures stop there. `how` is the record's `finished`.
    NotFinalized { how: String, ranks: Vec<u32> },
}

impl fmt::Display for RunWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunWarning::MissingRanks { missing, ranks } => write!(
                f,
                "{} of {ranks} ranks have no record ({}): they were probably killed before writing it; the report covers the other {}",
                missing.len(),
                rank_list(missing, 10),
                *ranks as usize - missing.len()
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

/// A run directory and its record files, sorted by name (so by rank).
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    pub files: Vec<PathBuf>,
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
        let mut other_files = 0;
        for ent in rd {
            let ent = ent.map_err(|source| RunError::ReadDir {
                path: path.clone(),
                source,
            })?;
            let name = ent.file_name();
            match name.to_str() {
                Some(n) if is_record_file_name(n) => files.push(ent.path()),
                _ => other_files += 1,
            }
        }
        if files.is_empty() {
            return Err(RunError::Empty { path, other_files });
        }
        files.sort();
        Ok(RunDir { path, files })
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

/// The internal consistency of one record: the rank is in range, every entry
/// names a known site, histograms are well formed, figures are finite.
pub fn check_record(path: &Path, rec: &Record) -> Result<(), RunError> {
    let invalid = |what: String| RunError::Invalid {
        path: path.to_path_buf(),
        what,
    };
    if rec.ranks == 0 {
        return Err(invalid("\"ranks\" is 0".into()));
    }
    if rec.rank >= rec.ranks {
        return Err(RunError::RankOutOfRange {
            path: path.to_path_buf(),
            rank: rec.rank,
            ranks: rec.ranks,
        });
    }
    if !(rec.timer.unit_s.is_finite() && rec.timer.unit_s > 0.0) {
        return Err(invalid(format!(
            "timer.unit_s is {}, expected a positive number of seconds",
            rec.timer.unit_s
        )));
    }
    for (name, v) in [
        ("app_time_s", rec.app_time_s),
        ("mpi_time_s", rec.mpi_time_s),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(invalid(format!("{name} is {v}")));
        }
    }
    let mut ids: Vec<u32> = rec.sites.iter().map(|s| s.id).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(invalid(format!("site id {} is defined twice", w[0])));
    }
    for (i, e) in rec.entries.iter().enumerate() {
        if ids.binary_search(&e.site).is_err() {
            return Err(invalid(format!(
                "entries[{i}] ({}) refers to site {} which is not in \"sites\"",
                e.function, e.site
            )));
        }
        if let Some(ps) = e.post_site {
            if ids.binary_search(&ps).is_err() {
                return Err(invalid(format!(
                    "entries[{i}] ({}) refers to post_site {ps} which is not in \"sites\"",
                    e.function
                )));
            }
        }
        if !e.hist.is_valid() {
            return Err(invalid(format!(
                "entries[{i}] ({}): malformed histogram",
                e.function
            )));
        }
        if !e.sum_s.is_finite() || e.sum_s < 0.0 {
            return Err(invalid(format!(
                "entries[{i}] ({}): sum_s is {}",
                e.function, e.sum_s
            )));
        }
    }
    Ok(())
}

/// What the cross-record checks need of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct RankInfo {
    pub path: PathBuf,
    pub run_id: String,
    pub rank: u32,
    pub ranks: u32,
    pub finished: String,
}

impl RankInfo {
    pub fn of(path: &Path, rec: &Record) -> RankInfo {
        RankInfo {
            path: path.to_path_buf(),
            run_id: rec.run_id.clone(),
            rank: rec.rank,
            ranks: rec.ranks,
            finished: rec.finished.clone(),
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
            let missing: Vec<u32> = (0..first.ranks)
                .filter(|r| !self.seen.contains_key(r))
                .collect();
            warnings.push(RunWarning::MissingRanks {
                missing,
                ranks: first.ranks,
            });
        }
        for (how, mut ranks) in self.not_finalized {
            ranks.sort_unstable();
            warnings.push(RunWarning::NotFinalized { how, ranks });
        }
        Some(RunSummary {
            run_id: first.run_id,
            ranks: first.ranks,
            present,
            warnings,
        })
    }
}

/// A whole run in memory.
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    /// Records in rank order.
    pub records: Vec<Record>,
    pub summary: RunSummary,
}

/// Reads and checks every record of a run directory, sequentially, keeping
/// them all. Fine for small runs; the report streams instead.
pub fn load_run(dir: impl AsRef<Path>) -> Result<Run, RunError> {
    let rd = RunDir::open(dir)?;
    let mut check = RunCheck::new();
    let mut records = Vec::with_capacity(rd.files.len());
    for f in &rd.files {
        let rec = read_record(f)?;
        check.add(RankInfo::of(f, &rec))?;
        records.push(rec);
    }
    records.sort_by_key(|r| r.rank);
    let summary = check.finish().expect("a listed run directory has records");
    Ok(Run {
        dir: rd.path,
        records,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Histogram;
    use crate::record::*;

    fn record(rank: u32, ranks: u32, run_id: &str) -> Record {
        let mut hist = Histogram::default();
        hist.record(1000);
        Record {
            schema: RECORD_SCHEMA.into(),
            run_id: run_id.into(),
            rank,
            ranks,
            host: "h".into(),
            pid: 1,
            mpi_library: "Open MPI v4.1.4".into(),
            thread_level: "single".into(),
            command: vec!["./a".into()],
            start_unix_s: 0.0,
            end_unix_s: 1.0,
            app_time_s: 1.0,
            mpi_time_s: 0.5,
            finished: "finalize".into(),
            timer: Timer {
                name: "rdtsc".into(),
                unit_s: 1e-9,
                resolution_s: 1e-9,
                cost_s: 2e-8,
            },
            tool: Tool {
                version: "0.1.0".into(),
                cost_per_call_s: 5e-8,
                calls: 10,
                depth: 1,
                max_keys: 4096,
            },
            profile: None,
            sites: vec![Site {
                id: 0,
                address: "0x1234".into(),
                module: None,
                build_id: None,
                offset: None,
                function: Some("main".into()),
                symbol: None,
                file: Some("a.c".into()),
                line: Some(3),
                inlined_into: vec![],
                note: None,
            }],
            functions: vec![],
            entries: vec![Entry {
                site: 0,
                function: "MPI_Recv".into(),
                p: ranks,
                bytes: 8,
                peer: Some(0),
                role: None,
                completes: None,
                post_site: None,
                requests: None,
                completed_at: None,
                count: 1,
                sum_s: 1e-6,
                min_s: 1e-6,
                max_s: 1e-6,
                tmax_s: None,
                overhead_s: None,
                tmax_out_of_range: false,
                tmax_basis: None,
                tmax_composed: None,
                tmax_missing: None,
                hist,
            }],
            folded: Folded::default(),
            warnings: vec![],
            eager_limit: None,
        }
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("mpiover-run-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(dir: &Path, rec: &Record) {
        std::fs::write(
            dir.join(rank_file_name(rec.rank)),
            serde_json::to_vec(rec).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn record_file_names() {
        assert!(is_record_file_name("rank-000003.json"));
        assert!(is_record_file_name("rank-12.json"));
        assert!(!is_record_file_name("rank-.json"));
        assert!(!is_record_file_name("rank-000003.json.tmp"));
        assert!(!is_record_file_name("profile.json"));
    }

    #[test]
    fn loads_a_run_and_warns_about_missing_ranks() {
        let d = tmpdir("ok");
        write(&d, &record(0, 4, "r1"));
        write(&d, &record(2, 4, "r1"));
        let mut r3 = record(3, 4, "r1");
        r3.finished = "signal:SIGTERM".into();
        write(&d, &r3);
        std::fs::write(d.join("notes.txt"), "x").unwrap();
        let run = load_run(&d).unwrap();
        assert_eq!(run.records.len(), 3);
        assert_eq!(run.summary.present, vec![0, 2, 3]);
        assert_eq!(
            run.summary.warnings[0],
            RunWarning::MissingRanks {
                missing: vec![1],
                ranks: 4
            }
        );
        let w = run.summary.warnings[1].to_string();
        assert!(w.contains("signal:SIGTERM") && w.contains("rank 3"), "{w}");
    }

    #[test]
    fn directory_errors() {
        let d = tmpdir("dirs");
        let e = RunDir::open(d.join("nope")).unwrap_err();
        assert!(matches!(e, RunError::NotFound(_)), "{e}");
        std::fs::write(d.join("file"), "x").unwrap();
        let e = RunDir::open(d.join("file")).unwrap_err();
        assert!(matches!(e, RunError::NotADirectory(_)), "{e}");
        let empty = d.join("empty");
        std::fs::create_dir(&empty).unwrap();
        let e = RunDir::open(&empty).unwrap_err();
        assert!(e.to_string().contains("holds no rank records"), "{e}");
    }

    #[test]
    fn file_errors_name_the_file() {
        let d = tmpdir("files");
        let p = d.join("rank-000000.json");
        let full = serde_json::to_vec(&record(0, 1, "r")).unwrap();
        let e = parse_record(&p, &full[..full.len() / 2]).unwrap_err();
        assert!(matches!(e, RunError::Truncated { .. }), "{e}");
        assert!(e.to_string().contains("rank-000000.json"));
        let e = parse_record(&p, br#"{"schema": "other/2", "x": 1}"#).unwrap_err();
        assert!(e.to_string().contains("\"other/2\""), "{e}");
        let e = parse_record(&p, br#"{"x": 1}"#).unwrap_err();
        assert!(e.to_string().contains("no \"schema\""), "{e}");
        let e = parse_record(&p, b"[1, 2]").unwrap_err();
        assert!(matches!(e, RunError::Parse { .. }), "{e}");
        let mut r = record(0, 1, "r");
        r.schema = "mpiover-record/9".into();
        let e = parse_record(&p, &serde_json::to_vec(&r).unwrap()).unwrap_err();
        assert!(matches!(e, RunError::Schema { .. }), "{e}");
        let mut r = record(0, 1, "r");
        r.entries[0].site = 9;
        let e = parse_record(&p, &serde_json::to_vec(&r).unwrap()).unwrap_err();
        assert!(e.to_string().contains("site 9"), "{e}");
        let e = parse_record(&p, &serde_json::to_vec(&record(3, 2, "r")).unwrap()).unwrap_err();
        assert!(matches!(e, RunError::RankOutOfRange { .. }), "{e}");
    }

    #[test]
    fn cross_record_errors() {
        let p = |n: &str| PathBuf::from(n);
        let mut c = RunCheck::new();
        c.add(RankInfo::of(&p("a"), &record(0, 2, "r1"))).unwrap();
        let e = c
            .add(RankInfo::of(&p("b"), &record(1, 2, "r2")))
            .unwrap_err();
        assert!(matches!(e, RunError::MixedRuns { .. }), "{e}");
        let e = c
            .add(RankInfo::of(&p("b"), &record(1, 3, "r1")))
            .unwrap_err();
        assert!(matches!(e, RunError::InconsistentRanks { .. }), "{e}");
        let e = c
            .add(RankInfo::of(&p("b"), &record(0, 2, "r1")))
            .unwrap_err();
        assert!(e.to_string().contains("rank 0 has two records"), "{e}");
        c.add(RankInfo::of(&p("c"), &record(1, 2, "r1"))).unwrap();
        let s = c.finish().unwrap();
        assert_eq!(s.present, vec![0, 1]);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn rank_lists_are_compact() {
        assert_eq!(
            rank_list(&[0, 1, 2, 5, 7, 8], 10),
            "ranks 0-2, rank 5, ranks 7-8"
        );
        assert_eq!(rank_list(&[0, 2, 4], 2), "rank 0, rank 2, and 1 more");
    }
}
