//! Loading and checking a run directory: every rank's record (`rank-NNNNNN.json`).
//!
//! The checks are split so that a reader can stream: [`RunDir::open`] lists the
//! record files (missing, not a directory, empty), [`read_record`] parses one
//! file and checks its schema and internal consistency, and [`RunCheck`] checks
//! the records against each other (one run, no duplicate rank, the same number
//! of ranks) from a small [`RankInfo`] per record, so that the records
//! themselves need not be kept.
//!
//! Problems that make the directory unusable are [`RunError`]s, each naming the
//! file and what is wrong with it. Problems that leave a usable report (ranks
//! without a record, ranks that were killed) are [`RunWarning`]s.

mod check;
pub mod dir;
mod error;
pub mod joblog;
mod record_file;

pub use check::*;
pub use error::*;
pub use record_file::*;

#[cfg(test)]
pub(crate) mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::record::sample::record;
    use crate::record::*;

    /// A whole run in memory.
    #[derive(Debug, Clone)]
    pub(crate) struct Run {
        /// Records in rank order.
        pub(crate) records: Vec<Record>,
        pub(crate) summary: RunSummary,
    }

    /// Reads and checks every record of a run directory, sequentially, keeping
    /// them all: the three checks end to end, for these tests (the report
    /// streams instead).
    pub(crate) fn load_run(dir: impl AsRef<Path>) -> Result<Run, RunError> {
        let rd = RunDir::open(dir)?;
        if let Some(l) = rd.log.as_ref().filter(|l| l.is_merged()) {
            return Err(RunError::Invalid {
                path: l.path.clone(),
                what: "a merged job log holds no record per rank (mpiover report reads it)".into(),
            });
        }
        let mut check = RunCheck::new();
        let sources = rd.sources();
        let mut records = Vec::with_capacity(sources.len());
        for src in &sources {
            let rec = src.read()?;
            check.add(RankInfo::of_source(src, &rec))?;
            records.push(rec);
        }
        records.sort_by_key(|r| r.rank);
        let summary = check.finish().expect("a listed run directory has records");
        Ok(Run { records, summary })
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

    fn write_log(dir: &Path, recs: &[Record]) {
        use crate::run::joblog::*;
        let header = LogHeader {
            schema: LOG_SCHEMA.into(),
            run_id: recs[0].run_id.clone(),
            ranks: recs[0].ranks,
            writer: "test".into(),
        };
        let f = std::fs::File::create(dir.join(LOG_FILE_NAME)).unwrap();
        let mut w = LogWriter::new(f, &header).unwrap();
        for r in recs {
            w.frame(r.rank, &encode_record(r).unwrap()).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn a_log_and_leftover_files_make_one_run_and_the_log_wins_a_rank_in_both() {
        let d = tmpdir("log_and_files");
        write_log(&d, &[record(0, 3, "r1"), record(1, 3, "r1")]);
        let mut killed = record(2, 3, "r1");
        killed.finished = "signal:SIGTERM".into();
        write(&d, &killed);
        // A copy of rank 1 beside the log (a signal at the end of the merge).
        let mut again = record(1, 3, "r1");
        again.finished = "signal:SIGTERM".into();
        write(&d, &again);
        let run = load_run(&d).unwrap();
        assert_eq!(run.summary.present, [0, 1, 2]);
        assert_eq!(run.records[1].finished, "finalize");
        assert!(run
            .summary
            .warnings
            .contains(&RunWarning::OutsideTheLog { ranks: vec![2] }));
        // A file of another run is not taken for a leftover.
        write(&d, &record(1, 3, "r2"));
        let e = load_run(&d).unwrap_err();
        assert!(matches!(e, RunError::MixedRuns { .. }), "{e}");
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
                missing: vec![(1, 1)],
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

    /// A job log's header (or a record) damaged to claim 2^31 ranks made
    /// the check list every missing rank: 8 GiB and half a minute.
    #[test]
    fn a_run_claiming_billions_of_ranks_lists_the_missing_as_ranges() {
        let p = |n: &str| PathBuf::from(n);
        let mut c = RunCheck::new();
        c.add(RankInfo::of(&p("a"), &record(0, u32::MAX, "r")))
            .unwrap();
        c.add(RankInfo::of(&p("b"), &record(5, u32::MAX, "r")))
            .unwrap();
        let s = c.finish().unwrap();
        let RunWarning::MissingRanks { missing, ranks } = &s.warnings[0] else {
            panic!("{:?}", s.warnings);
        };
        assert_eq!(*ranks, u32::MAX);
        assert_eq!(missing, &[(1, 4), (6, u32::MAX - 1)]);
        let w = s.warnings[0].to_string();
        assert!(
            w.starts_with(
                "4294967293 of 4294967295 ranks have no record (ranks 1-4, ranks 6-4294967294)"
            ),
            "{w}"
        );
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
