//! `mpiover report` on a real run directory, and on bad input:
//! the late sender's `MPI_Recv` line comes first, the JSON keys are the stable
//! ones, and every bad input gives one clear error and exit code 2.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

use crate::harness::*;

const ITERS: u32 = 10;
const DELAY_MS: u32 = 20;

/// A profiled 2-rank late_sender run shared by the report tests (read-only).
fn late_sender_run() -> &'static Profiled {
    static RUN: OnceLock<Result<Profiled, String>> = OnceLock::new();
    shared(&RUN, || {
        profile(
            "report_fixture_late_sender",
            2,
            "late_sender",
            &[&ITERS.to_string(), &DELAY_MS.to_string()],
        )
    })
}

fn mpiover(args: &[&str], dir: &Path) -> Output {
    std::process::Command::new(mpiover_bin())
        .args(args)
        .arg(dir)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("running mpiover")
}

fn dump(o: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}---",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// A copy of the shared run in this test's scratch directory, to damage.
fn copy_of_run(test: &str) -> PathBuf {
    let dir = scratch(test).join("run");
    copy_dir(&late_sender_run().dir, &dir);
    dir
}

#[test]
fn report_text_ranks_late_sender_recv_first() {
    let p = late_sender_run();
    let o = mpiover(&["report"], &p.dir);
    assert!(o.status.success(), "{}", dump(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = marker("late_sender.c", "late-sender-recv");
    let want = format!("late_sender.c:{line}");
    let first = text
        .lines()
        .find(|l| l.contains(".c:"))
        .unwrap_or_else(|| panic!("no file:line in the report\n{}", dump(&o)));
    assert!(
        first.contains(&want) && first.contains("MPI_Recv"),
        "the first site of the report should be MPI_Recv at {want}, got:\n{first}\n{}",
        dump(&o)
    );
}

fn key<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| {
        v.get(k)
            .unwrap_or_else(|| panic!("report JSON lacks `{path}`:\n{v:#}"))
    })
}

fn num(v: &Value, path: &str) -> f64 {
    key(v, path)
        .as_f64()
        .unwrap_or_else(|| panic!("`{path}` is not a number: {}", key(v, path)))
}

#[test]
fn report_json_has_stable_keys_and_late_sender_recv_first() {
    let p = late_sender_run();
    let o = mpiover(&["report", "--format", "json"], &p.dir);
    assert!(o.status.success(), "{}", dump(&o));
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("report --format json is not JSON: {e}\n{}", dump(&o)));

    assert_eq!(key(&v, "schema"), "mpiover-report/2");
    assert_eq!(key(&v, "run.ranks").as_u64(), Some(2), "run.ranks");
    assert!(
        key(&v, "run.command").to_string().contains("late_sender"),
        "run.command"
    );
    assert!(
        key(&v, "run.mpi_library").to_string().contains("Open MPI"),
        "run.mpi_library"
    );
    let (app, mpi) = (num(&v, "summary.app_time_s"), num(&v, "summary.mpi_time_s"));
    assert!(
        app > 0.0 && mpi > 0.0 && mpi <= app,
        "summary: app {app} s, mpi {mpi} s"
    );
    assert!(
        key(&v, "summary.overhead_s").is_null(),
        "summary.overhead_s without a profile"
    );

    let sites = key(&v, "sites").as_array().expect("sites is an array");
    assert!(!sites.is_empty(), "no sites");
    for s in sites {
        for k in [
            "mpi_function",
            "file",
            "line",
            "function",
            "calls",
            "time_s",
            "bytes",
            "overhead_s",
        ] {
            assert!(s.get(k).is_some(), "site lacks `{k}`: {s}");
        }
    }
    let times: Vec<f64> = sites.iter().map(|s| num(s, "time_s")).collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "sites not ranked by time: {times:?}"
    );

    let top = &sites[0];
    let line = marker("late_sender.c", "late-sender-recv");
    assert_eq!(top["mpi_function"], "MPI_Recv", "top site: {top:#}");
    assert!(
        top["file"]
            .as_str()
            .is_some_and(|f| file_is(f, "late_sender.c")),
        "top site file: {top:#}"
    );
    assert_eq!(
        top["line"].as_u64(),
        Some(u64::from(line)),
        "top site line: {top:#}"
    );
    assert_eq!(top["function"], "main", "top site function: {top:#}");
    assert_eq!(
        top["calls"].as_u64(),
        Some(u64::from(ITERS)),
        "top site calls: {top:#}"
    );
    assert_eq!(
        top["bytes"].as_u64(),
        Some(u64::from(ITERS) * 8),
        "top site bytes (total over its calls): {top:#}"
    );
    assert!(
        top["overhead_s"].is_null(),
        "overhead_s without a profile: {top:#}"
    );
    assert_close(
        "top site time_s",
        num(top, "time_s"),
        injected_s(&p.out, "late_sender", 1),
        0.10,
        &format!("{top:#}"),
    );
}

/// Exit code 2, nothing on stdout, exactly one line on stderr that says
/// `mpiover: error:` and contains every string of `mentions`.
fn assert_one_error(o: &Output, mentions: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "exit code\n{}", dump(o));
    assert!(
        o.stdout.is_empty(),
        "a failed report must print no partial report\n{}",
        dump(o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "expected exactly one error line\n{}",
        dump(o)
    );
    assert!(
        lines[0].starts_with("mpiover: error:"),
        "error line: {}",
        lines[0]
    );
    for m in mentions {
        assert!(
            lines[0].to_lowercase().contains(&m.to_lowercase()),
            "the error should mention {m:?}: {}",
            lines[0]
        );
    }
}

#[test]
fn report_missing_dir_is_one_error_exit_2() {
    let dir = scratch("report_missing_dir_is_one_error_exit_2").join("no-such-run");
    for fmt in [&["report"][..], &["report", "--format", "json"][..]] {
        assert_one_error(&mpiover(fmt, &dir), &["no-such-run"]);
    }
}

#[test]
fn report_empty_dir_is_one_error_exit_2() {
    let dir = scratch("report_empty_dir_is_one_error_exit_2").join("empty-run");
    fs::create_dir_all(&dir).unwrap();
    assert_one_error(&mpiover(&["report"], &dir), &["empty-run"]);
}

#[test]
fn report_truncated_record_is_one_error_exit_2() {
    let dir = copy_of_run("report_truncated_record_is_one_error_exit_2");
    let f = dir.join("rank-000001.json");
    let text = fs::read(&f).unwrap();
    fs::write(&f, &text[..text.len() / 2]).unwrap();
    for fmt in [&["report"][..], &["report", "--format", "json"][..]] {
        assert_one_error(&mpiover(fmt, &dir), &["rank-000001.json"]);
    }
}

#[test]
fn report_foreign_record_is_one_error_exit_2() {
    let dir = copy_of_run("report_foreign_record_is_one_error_exit_2");
    let f = dir.join("rank-000001.json");
    // Valid JSON, valid structure, but another schema (a future or foreign format).
    let text = fs::read_to_string(&f).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["schema"] = Value::from("mpiover-record/999");
    fs::write(&f, v.to_string()).unwrap();
    assert_one_error(&mpiover(&["report"], &dir), &["rank-000001.json"]);
    // Not a record at all.
    fs::write(&f, "{\"hello\": \"world\"}\n").unwrap();
    assert_one_error(&mpiover(&["report"], &dir), &["rank-000001.json"]);
}

#[test]
fn report_mixed_runs_is_one_error_exit_2() {
    let test = "report_mixed_runs_is_one_error_exit_2";
    let dir = copy_of_run(test);
    // A second run of the same program: only the run id tells them apart.
    let other = scratch(&format!("{test}_other")).join("run");
    let out = Job::new(2, "late_sender", &["2", "1"], other.parent().unwrap())
        .profiled(&other)
        .run();
    out.assert_success();
    fs::copy(other.join("rank-000001.json"), dir.join("rank-000001.json")).unwrap();
    assert_one_error(&mpiover(&["report"], &dir), &["run"]);
}
