//! The job log (`MPIOVER_FORMAT=log`): every rank's record merged over MPI
//! at `MPI_Finalize` into one file, written by rank 0.
//!
//! - 32 ranks (oversubscribed): one merged `job.mpiover-log` and no
//!   per-rank file; with `both`, the report on the log alone equals the
//!   report on the per-rank records alone, byte for byte but the run
//!   directory; `--eager-limit` on the merged log applies to its sites, with
//!   a warning that the per-rank figures keep the run's own.
//! - A rank that dies of SIGTERM (2 ranks): every other rank's record still reaches
//!   the report (the job never reaches the merge, so each writes its own),
//!   the killed rank flagged.
//! - A cut or damaged log: exit 2, the file and the byte offset named.
//! - The default (`auto`): per-rank records up to `MPIOVER_LOG_ABOVE` ranks,
//!   the job log above (4 ranks against thresholds of 4 and 3).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::estimates;
use crate::harness::*;

const NP: u32 = 32;

fn report(dir: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(mpiover_bin())
        .args(["report", "-f", "json"])
        .arg(dir)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("runs mpiover report");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn joblog_of_32_ranks_is_one_file_and_reports_like_the_per_rank_records() {
    let dir = scratch("joblog_32");
    let run = dir.join("run");
    let out = Job::new(NP, "late_sender", &["3", "5"], &dir)
        .profiled(&run)
        .env("MPIOVER_FORMAT", "log")
        .env("MPIOVER_DEBUG", "1")
        .run();
    out.assert_success();
    assert_eq!(names(&run), ["job.mpiover-log"], "{}", out.dump());
    // The sites are resolved once, by rank 0, for every rank.
    let merges: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("job log merge:"))
        .collect();
    assert_eq!(merges.len(), NP as usize, "{}", out.dump());
    for l in &merges {
        let (k, n) = l
            .split_once(" sites resolved by rank 0")
            .and_then(|(a, _)| a.rsplit_once("; ")?.1.split_once(" of "))
            .unwrap_or_else(|| panic!("no site count in {l:?}"));
        assert!(k == n && k != "0", "not every site resolved by rank 0: {l}");
    }
    let (code, json, err) = report(&run);
    assert_eq!(code, Some(0), "{err}");
    let rep: Value = serde_json::from_str(&json).expect("report JSON");
    assert_eq!(rep["run"]["ranks_present"], NP, "{err}");
    let recv = marker("late_sender.c", "late-sender-recv");
    assert!(
        rep["sites"].as_array().is_some_and(|s| s.iter().any(|s| {
            s["mpi_function"] == "MPI_Recv"
                && s["location"]
                    .as_str()
                    .is_some_and(|l| l.ends_with(&format!("late_sender.c:{recv}")))
        })),
        "no MPI_Recv site at late_sender.c:{recv}: {json}"
    );
    // Another eager limit (or profile) applies to the merged log's sites,
    // from its merged histograms; the report says that the per-rank
    // figures keep the run's own.
    let o = Command::new(mpiover_bin())
        .args(["report", "-f", "json", "--eager-limit", "1000"])
        .arg(&run)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("runs mpiover report");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{e}");
    let again: Value = serde_json::from_slice(&o.stdout).expect("report JSON");
    assert_eq!(again["methods"]["rendezvous_bytes"], 1000, "{e}");
    assert!(
        again["warnings"].as_array().is_some_and(|w| w
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("merged")))),
        "{}",
        again["warnings"]
    );
    // The merge's own cost is part of the tool's cost.
    let merge = rep["methods"]["tool"]["log_merge_s"].as_f64();
    assert!(
        merge.is_some_and(|m| m > 0.0 && m < 60.0),
        "log_merge_s {merge:?}"
    );

    // Both from the same records: the two paths give the same report.
    let both = dir.join("both");
    let out = Job::new(NP, "late_sender", &["3", "5"], &dir)
        .profiled(&both)
        .env("MPIOVER_FORMAT", "both")
        .run();
    out.assert_success();
    let listed = names(&both);
    assert_eq!(listed.len(), NP as usize + 1, "{listed:?}");
    let (log_only, files_only) = split_both(&both, &dir);
    let (a, b) = (report(&log_only), report(&files_only));
    assert_eq!((a.0, b.0), (Some(0), Some(0)), "{}\n{}", a.2, b.2);
    let (a, b): (Value, Value) = (
        serde_json::from_str(&a.1).expect("JSON"),
        serde_json::from_str(&b.1).expect("JSON"),
    );
    assert!(a["sites"].as_array().is_some_and(|s| !s.is_empty()));
    assert_eq!(without_dir(a), without_dir(b));
    let log = std::fs::metadata(log_only.join("job.mpiover-log"))
        .expect("log")
        .len();
    let json: u64 = names(&files_only)
        .iter()
        .map(|n| std::fs::metadata(files_only.join(n)).map_or(0, |m| m.len()))
        .sum();
    eprintln!("e2e: joblog: {NP} ranks, log {log} bytes, per-rank JSON {json} bytes");
    assert!(log * 2 < json, "log {log} bytes vs JSON {json}");
}

/// The sketches' relative error (docs/log-format.md: a quantile read from
/// one is within 0.5 % of the true one).
const SKETCH_ALPHA: f64 = 0.005;

/// 32 ranks whose log keeps 8 rows per site and region whole
/// (`MPIOVER_LOG_ROWS=8`): bounded as a job of thousands is. A point-to-point
/// program (16 receivers, 16 late senders) and a collective one (31 ranks
/// waiting for the last): the report of the log equals the report of the
/// per-rank records in every exact figure, and each estimate is within the
/// bound docs/report-format.md states.
#[test]
fn joblog_of_32_ranks_bounded_keeps_exact_figures_and_estimates_within_bounds() {
    let programs: [(&str, &[&str]); 2] = [
        ("late_sender", &["3", "5"]),
        ("root_cause", &["imbalance", "4", "20", "2"]),
    ];
    for (program, args) in programs {
        let dir = scratch(&format!("joblog_bounded_{program}"));
        let both = dir.join("both");
        let out = Job::new(NP, program, args, &dir)
            .profiled(&both)
            .env("MPIOVER_FORMAT", "both")
            .env("MPIOVER_LOG_ROWS", "8")
            // Online: the per-rank figures of a log keep the tmax recorded.
            .env(
                "MPIOVER_PROFILE",
                calibrated_profile().display().to_string(),
            )
            .run();
        out.assert_success();
        let (log_only, files_only) = split_both(&both, &dir);
        let (a, b) = (report(&log_only), report(&files_only));
        assert_eq!((a.0, b.0), (Some(0), Some(0)), "{}\n{}", a.2, b.2);
        let (mut bounded, exact): (Value, Value) = (
            serde_json::from_str(&a.1).expect("JSON"),
            serde_json::from_str(&b.1).expect("JSON"),
        );
        assert!(
            exact["sites"].as_array().is_some_and(|s| s
                .iter()
                .any(|s| s["significant"] == true && s["per_rank"]["ranks"].as_u64() > Some(8))),
            "{program}: no significant site over more ranks than the log keeps rows for"
        );
        // MPIOVER_LOG_ROWS=8 keeps 4 rows per criterion (a sixteenth, at
        // least 4: docs/log-format.md).
        estimates::take_estimates(&mut bounded, &exact, SKETCH_ALPHA, 4);
        estimates::assert_the_rest_equal(without_dir(bounded), without_dir(exact));
    }
}

#[test]
fn joblog_by_default_above_the_threshold_and_per_rank_records_up_to_it() {
    let dir = scratch("joblog_auto");
    for (above, expect_log) in [(4, false), (3, true)] {
        let run = dir.join(format!("above_{above}"));
        let out = Job::new(4, "late_sender", &["3", "5"], &dir)
            .profiled(&run)
            .env("MPIOVER_LOG_ABOVE", above.to_string())
            .run();
        out.assert_success();
        let want: Vec<String> = if expect_log {
            vec!["job.mpiover-log".into()]
        } else {
            (0..4).map(|r| format!("rank-{r:06}.json")).collect()
        };
        assert_eq!(
            names(&run),
            want,
            "MPIOVER_LOG_ABOVE={above}\n{}",
            out.dump()
        );
        let (code, json, err) = report(&run);
        assert_eq!(code, Some(0), "{err}");
        let rep: Value = serde_json::from_str(&json).expect("report JSON");
        assert_eq!(rep["run"]["ranks_present"], 4, "{err}");
    }
}

#[test]
fn joblog_rank_killed_by_sigterm_leaves_the_others_in_the_report() {
    let dir = scratch("joblog_sigterm");
    let run = dir.join("run");
    // Two ranks on two cores: with more, mpirun's SIGKILL can come before a
    // descheduled rank has written (the same as without a log).
    let np = 2;
    let out = Job::new(np, "crash", &["sigterm"], &dir)
        .profiled(&run)
        .env("MPIOVER_FORMAT", "log")
        .run();
    assert_ne!(out.code(), Some(0), "{}", out.dump());
    let (code, json, err) = report(&run);
    assert_eq!(code, Some(0), "{err}\n{}", out.dump());
    let rep: Value = serde_json::from_str(&json).expect("report JSON");
    assert_eq!(rep["run"]["ranks_present"], np, "{json}");
    let killed = rep["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .find(|r| r["rank"] == np - 1)
        .expect("the killed rank");
    assert_eq!(killed["finished"], "signal:SIGTERM", "{killed:#}");
}

#[test]
fn joblog_cut_or_damaged_is_one_error_with_the_byte_offset() {
    let dir = scratch("joblog_bad");
    let run = dir.join("run");
    let out = Job::new(4, "late_sender", &["2", "1"], &dir)
        .profiled(&run)
        .env("MPIOVER_FORMAT", "log")
        .run();
    out.assert_success();
    let log = run.join("job.mpiover-log");
    let bytes = std::fs::read(&log).expect("the log");
    let check = |name: &str, b: &[u8], what: &str| {
        let d = dir.join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("job.mpiover-log"), b).expect("write");
        let (code, stdout, err) = report(&d);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(stdout.is_empty(), "{name}: {stdout}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(
            err.contains("job.mpiover-log") && err.contains("byte "),
            "{name}: {err}"
        );
        assert!(err.contains(what), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    };
    check("cut", &bytes[..bytes.len() * 2 / 3], "truncated job log");
    let mut damaged = bytes.clone();
    let mid = bytes.len() / 2;
    for b in &mut damaged[mid..mid + 16] {
        *b ^= 0x5a;
    }
    check("damaged", &damaged, "corrupt job log");
}
