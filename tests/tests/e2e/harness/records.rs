//! Reading and checking the run records a job wrote.

use std::fs;
use std::path::{Path, PathBuf};

use mpiover_common::record::{Record, RECORD_SCHEMA};

use crate::harness::job::{Job, Outcome};
use crate::harness::paths::scratch;

/// How many rank records (`rank-*`) a run directory holds (0 when there is
/// no such directory).
pub fn records_in(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("rank-"))
            .count()
    })
}

/// Reads every `rank-NNNNNN.json` of a run directory, sorted by rank, with
/// errors that name the file.
pub fn read_records(dir: &Path) -> Result<Vec<Record>, String> {
    let rd = fs::read_dir(dir).map_err(|e| format!("reading run dir {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rank-") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let rec: Record = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a readable record: {e} ({} bytes)",
                f.display(),
                text.len()
            )
        })?;
        out.push(rec);
    }
    out.sort_by_key(|r| r.rank);
    Ok(out)
}

/// The records of a run, checked for what every complete run must satisfy:
/// one record per rank, all of schema `mpiover-record/1`, one run id, the
/// world size, the program in the command line, and entries pointing at sites.
pub fn complete_records(dir: &Path, np: u32, program: &str, context: &Outcome) -> Vec<Record> {
    let recs = read_records(dir).unwrap_or_else(|e| panic!("{e}\n{}", context.dump()));
    let ranks: Vec<u32> = recs.iter().map(|r| r.rank).collect();
    assert_eq!(
        ranks,
        (0..np).collect::<Vec<_>>(),
        "expected one record per rank in {}\n{}",
        dir.display(),
        context.dump()
    );
    for r in &recs {
        check_record_basics(r, np, program);
    }
    let ids: Vec<&str> = recs.iter().map(|r| r.run_id.as_str()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] == w[1]),
        "ranks disagree on the run id: {ids:?}"
    );
    recs
}

pub fn check_record_basics(r: &Record, np: u32, program: &str) {
    let who = format!("rank {}", r.rank);
    assert_eq!(r.schema, RECORD_SCHEMA, "{who}: schema");
    assert_eq!(r.ranks, np, "{who}: ranks");
    assert!(
        r.command.first().is_some_and(|c| c.ends_with(program)),
        "{who}: command {:?} does not start with the program {program}",
        r.command
    );
    let ids: Vec<u32> = r.sites.iter().map(|s| s.id).collect();
    for e in &r.entries {
        assert!(
            e.function == "other" || ids.contains(&e.site),
            "{who}: entry {} refers to unknown site {}",
            e.function,
            e.site
        );
    }
}

/// A run of `program` on `np` ranks recorded in both formats with `profile`
/// (`MPIOVER_FORMAT=both`, `MPIOVER_PROFILE`) into the scratch directory of
/// `test`, split as [`split_both`] splits it: (outcome, log_only,
/// files_only).
pub fn record_both_formats(
    test: &str,
    np: u32,
    program: &Path,
    args: &[&str],
    profile: &Path,
) -> (Outcome, PathBuf, PathBuf) {
    let dir = scratch(test);
    let both = dir.join("both");
    let out = Job::program(np, program, args, &dir)
        .profiled(&both)
        .env("MPIOVER_FORMAT", "both")
        .env("MPIOVER_PROFILE", profile.display().to_string())
        .run();
    out.assert_success();
    let (log_only, files_only) = split_both(&both, &dir);
    (out, log_only, files_only)
}

/// A run of `MPIOVER_FORMAT=both` split in two directories under `dir`:
/// `log_only` with the job log, `files_only` with the per-rank records, so
/// that the report of each can be compared.
pub fn split_both(run: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let (log_only, files_only) = (dir.join("log_only"), dir.join("files_only"));
    for d in [&log_only, &files_only] {
        let _ = fs::remove_dir_all(d);
        fs::create_dir_all(d).expect("mkdir");
    }
    for e in fs::read_dir(run).expect("run directory") {
        let n = e.expect("entry").file_name();
        let to = if n.to_string_lossy().ends_with(".mpiover-log") {
            &log_only
        } else {
            &files_only
        };
        fs::copy(run.join(&n), to.join(&n)).expect("copy");
    }
    (log_only, files_only)
}

/// A JSON report without its run directory (the one thing two reports of
/// the same run from different directories differ in: the run's `dir`, and
/// the no-profile hint's command that re-analyses that directory).
pub fn without_dir(mut v: serde_json::Value) -> serde_json::Value {
    let dir = v["run"]["dir"].as_str().map(str::to_string);
    v["run"]["dir"] = serde_json::Value::Null;
    if let (Some(dir), Some(hint)) = (dir, v["methods"]["hint"].as_str()) {
        v["methods"]["hint"] = hint.replace(&dir, "RUN_DIR").into();
    }
    v
}
