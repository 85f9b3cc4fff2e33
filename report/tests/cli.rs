//! The `mpiover` binary on good and bad inputs: bad input gives one clear
//! error on stderr and exit code 2, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mpiover_common::record::rank_file_name;
use mpiover_report::synth;

fn mpiover(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpiover"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs mpiover")
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_fixture(dir: &Path, online: bool) {
    for r in synth::fixture_run(online) {
        std::fs::write(
            dir.join(rank_file_name(r.rank)),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    }
}

/// `DIR/run` holding the offline fixture run; returns it and its MPI library.
fn fixture_run_in(d: &Path) -> (std::path::PathBuf, String) {
    let run = d.join("run");
    std::fs::create_dir_all(&run).unwrap();
    write_fixture(&run, false);
    (run, synth::fixture_run(false)[0].mpi_library.clone())
}

/// Exit 2, exactly one line on stderr, starting `mpiover: error:` and
/// containing every `needle`; nothing on stdout.
fn assert_error(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("mpiover: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{err:?} lacks {n:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_directory() {
    let d = tmp("missing");
    let p = d.join("nope");
    assert_error(
        &mpiover(&["report", p.to_str().unwrap()]),
        &["does not exist", "nope"],
    );
}

#[test]
fn empty_directory() {
    let d = tmp("empty");
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["no rank records"],
    );
}

#[test]
fn not_a_directory() {
    let d = tmp("notdir");
    let f = d.join("rank-000000.json");
    std::fs::write(&f, "{}").unwrap();
    assert_error(
        &mpiover(&["report", f.to_str().unwrap()]),
        &["is not a directory"],
    );
}

#[test]
fn truncated_record() {
    let d = tmp("truncated");
    write_fixture(&d, false);
    let f = d.join(rank_file_name(2));
    let b = std::fs::read(&f).unwrap();
    std::fs::write(&f, &b[..b.len() / 3]).unwrap();
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["rank-000002.json", "truncated"],
    );
}

#[test]
fn garbage_record() {
    let d = tmp("garbage");
    write_fixture(&d, false);
    std::fs::write(d.join(rank_file_name(1)), "\u{0}\u{1}not json at all").unwrap();
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["rank-000001.json"],
    );
}

#[test]
fn foreign_schema() {
    let d = tmp("foreign");
    write_fixture(&d, false);
    std::fs::write(
        d.join(rank_file_name(0)),
        r#"{"schema": "mpip-report/3", "ranks": 4}"#,
    )
    .unwrap();
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["rank-000000.json", "mpip-report/3", "mpiover-record/1"],
    );
}

#[test]
fn mixed_runs() {
    let d = tmp("mixed");
    write_fixture(&d, false);
    let mut r = synth::fixture_run(false).remove(3);
    r.run_id = "another-run".into();
    std::fs::write(d.join(rank_file_name(3)), serde_json::to_vec(&r).unwrap()).unwrap();
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["two runs", "another-run", "rank-000003.json"],
    );
}

#[test]
fn duplicate_and_inconsistent_ranks() {
    let d = tmp("dup");
    write_fixture(&d, false);
    let r = synth::fixture_run(false).remove(1);
    std::fs::write(d.join("rank-000009.json"), serde_json::to_vec(&r).unwrap()).unwrap();
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["rank 1 has two records"],
    );
    let d = tmp("inconsistent");
    write_fixture(&d, false);
    let mut r = synth::fixture_run(false).remove(2);
    r.ranks = 8;
    std::fs::write(d.join(rank_file_name(2)), serde_json::to_vec(&r).unwrap()).unwrap();
    assert_error(
        &mpiover(&["report", d.to_str().unwrap()]),
        &["number of ranks"],
    );
}

#[test]
fn missing_ranks_are_a_warning() {
    let d = tmp("partial");
    write_fixture(&d, true);
    std::fs::remove_file(d.join(rank_file_name(1))).unwrap();
    let out = mpiover(&["report", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("WARNINGS") && text.contains("1 of 4 ranks have no record (rank 1)"),
        "{text}"
    );
    let out = mpiover(&["report", d.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mpiover: warning: 1 of 4 ranks have no record"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["run"]["ranks_present"], 3);
}

#[test]
fn bad_options() {
    let d = tmp("opts");
    write_fixture(&d, false);
    let ds = d.to_str().unwrap();
    assert_error(&mpiover(&["report", ds, "--q", "0.9"]), &["--profile"]);
    assert_error(&mpiover(&["report", ds, "--alpha", "2"]), &["--alpha"]);
    assert_error(
        &mpiover(&["report", ds, "--min-share", "1.5"]),
        &["--min-share"],
    );
    assert_error(
        &mpiover(&["report", ds, "--profile", "/nonexistent/profile.json"]),
        &["/nonexistent/profile.json"],
    );
    let out = mpiover(&["report", ds, "-o", "/nonexistent/dir/r.txt"]);
    assert_error(&out, &["cannot write", "/nonexistent/dir/r.txt"]);
}

#[test]
fn every_format_and_output_file() {
    let d = tmp("formats");
    write_fixture(&d, true);
    let ds = d.to_str().unwrap();
    let out = mpiover(&["report", ds]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SUMMARY") && text.contains("METHODS") && text.contains("Late Sender"));
    assert!(!text.contains('\x1b'), "no colour when not on a terminal");
    let out = mpiover(&["report", ds, "--color", "always", "--top", "2"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains('\x1b'));
    let csv = mpiover(&["report", ds, "-f", "csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert_eq!(csv.lines().count(), 1 + 7);
    let html = d.join("report.html");
    let out = mpiover(&["report", ds, "-o", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>") && h.contains("<svg id=\"bar-chart\""));
    assert!(
        !h.contains("http://") && !h.contains("https://"),
        "self-contained"
    );
    let js = d.join("r.json");
    mpiover(&["report", ds, "-o", js.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&js).unwrap()).unwrap();
    assert_eq!(v["schema"], "mpiover-report/2");
}

#[test]
fn diff_of_two_runs() {
    let a = tmp("diff-a");
    write_fixture(&a, true);
    // B: the late sender fixed (rank 2 no longer waits at halo.c:42).
    let b = tmp("diff-b");
    let mut recs = synth::fixture_run(true);
    let (_, r2) = recs.split_at_mut(2);
    let e = r2[0]
        .entries
        .iter_mut()
        .find(|e| e.function == "MPI_Recv")
        .unwrap();
    let mut rng = mpiover_common::rng::Rng::new(9);
    let d = synth::draw(
        &mut rng,
        synth::Times {
            base_s: 5e-6,
            noise_s: 1e-6,
            delay_s: 0.0,
        },
        200,
        1e-9,
        e.tmax_s,
        1000,
    );
    e.hist = d.hist;
    e.sum_s = d.sum_s;
    e.min_s = d.min_s;
    e.max_s = d.max_s;
    e.overhead_s = Some(d.overhead_s);
    for r in &recs {
        std::fs::write(
            b.join(rank_file_name(r.rank)),
            serde_json::to_vec(r).unwrap(),
        )
        .unwrap();
    }
    let out = mpiover(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-f",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["compared_by"], "overhead");
    let top = &v["sites"][0];
    assert_eq!(top["mpi_function"], "MPI_Recv");
    assert_eq!(top["status"], "better");
    assert!(top["delta_overhead_s"].as_f64().unwrap() < -0.35);
    let same = v["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "same")
        .count();
    assert_eq!(same, 6);
    let out = mpiover(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("better") && t.contains("halo.c:42"), "{t}");
    assert_error(
        &mpiover(&["diff", a.to_str().unwrap(), "/nonexistent"]),
        &["does not exist"],
    );
}

fn json_of(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[path = "cli/profile.rs"]
mod profile;

/// `function` is the name without parameters, as the format says; the whole
/// C++ signature is `function_signature`. The names renamed in
/// `mpiover-report/2` are still written under their old names, same values.
#[test]
fn json_function_without_parameters_and_renamed_keys_beside_old_ones() {
    let d = tmp("signature");
    let signature = "halo::Exchanger::exchange(int, double*) const";
    for mut r in synth::fixture_run(true) {
        for s in r
            .sites
            .iter_mut()
            .filter(|s| s.function.as_deref() == Some("exchange"))
        {
            s.function = Some(signature.into());
        }
        std::fs::write(
            d.join(rank_file_name(r.rank)),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    }
    let ds = d.to_str().unwrap();
    let out = mpiover(&["report", ds, "-f", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sites = v["sites"].as_array().unwrap();
    let cxx: Vec<_> = sites
        .iter()
        .filter(|s| s["function_signature"] == signature)
        .collect();
    assert!(!cxx.is_empty(), "{sites:#?}");
    for s in cxx {
        assert_eq!(s["function"], "halo::Exchanger::exchange", "{s:#}");
    }
    for s in sites {
        for (new, old) in [
            ("position", "rank"),
            ("tmax_sum_s", "tmax_s"),
            ("overhead_share_of_mpi", "share_of_mpi_time"),
            ("overhead_share_of_app", "share_of_app_time"),
        ] {
            assert!(
                s.get(new).is_some() && s[new] == s[old],
                "{new} {old}: {s:#}"
            );
        }
    }
    let text = mpiover(&["report", ds]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("halo::Exchanger::exchange") && !text.contains("double*"),
        "{text}"
    );
}
