//! Snapshot tests: the text, CSV and JSON outputs on the fixed fixtures under
//! `tests/fixtures/` must equal the files under `tests/snapshots/`.
//! After an intended change, re-bless with `MPIOVER_BLESS=1 cargo test -p
//! mpiover-report --test snapshots` and review the diff.

use std::path::{Path, PathBuf};

use mpiover_common::record::rank_file_name;
use mpiover_report::analysis::{analyze_dir, Options};
use mpiover_report::export::{export, ExportOptions, Format};
use mpiover_report::synth;

fn bless() -> bool {
    std::env::var_os("MPIOVER_BLESS").is_some()
}

fn check(name: &str, got: &[u8]) {
    let path = Path::new("tests/snapshots").join(name);
    if bless() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with MPIOVER_BLESS=1)", path.display()));
    if want != got {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("snapshot-{name}"));
        std::fs::write(&out, got).unwrap();
        panic!(
            "{} differs from the output (written to {}); if intended, bless with MPIOVER_BLESS=1",
            path.display(),
            out.display()
        );
    }
}

fn run(fixture: &str, format: Format, threads: usize) -> Vec<u8> {
    let opts = Options {
        threads,
        ..Options::default()
    };
    let r = analyze_dir(Path::new(&format!("tests/fixtures/{fixture}")), None, &opts).unwrap();
    export(&r, format, &ExportOptions::default())
}

#[test]
fn fixtures_are_what_the_generator_writes() {
    for (name, online) in [("run-online", true), ("run-noprofile", false)] {
        for rec in synth::fixture_run(online) {
            let p = Path::new("tests/fixtures")
                .join(name)
                .join(rank_file_name(rec.rank));
            let bytes = serde_json::to_vec(&rec).unwrap();
            if bless() {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, &bytes).unwrap();
            } else {
                assert!(
                    std::fs::read(&p).unwrap() == bytes,
                    "{} is stale: bless with MPIOVER_BLESS=1",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn text_snapshots() {
    check("online.txt", &run("run-online", Format::Text, 0));
    check("noprofile.txt", &run("run-noprofile", Format::Text, 0));
}

#[test]
fn csv_snapshots() {
    check("online.csv", &run("run-online", Format::Csv, 0));
    check("noprofile.csv", &run("run-noprofile", Format::Csv, 0));
}

#[test]
fn json_snapshots() {
    check("online.json", &run("run-online", Format::Json, 0));
    check("noprofile.json", &run("run-noprofile", Format::Json, 0));
}

#[test]
fn output_does_not_depend_on_the_number_of_threads() {
    let one = run("run-online", Format::Json, 1);
    for t in [2, 3, 4] {
        assert!(one == run("run-online", Format::Json, t), "{t} threads");
    }
}

#[test]
fn json_keeps_the_keys_of_issue_2_and_6() {
    let v: serde_json::Value = serde_json::from_slice(&run("run-online", Format::Json, 0)).unwrap();
    assert_eq!(v["schema"], "mpiover-report/1");
    for k in ["ranks", "command", "mpi_library"] {
        assert!(v["run"].get(k).is_some(), "run.{k}");
    }
    for k in ["app_time_s", "mpi_time_s", "overhead_s"] {
        assert!(v["summary"][k].is_number(), "summary.{k}");
    }
    let s = &v["sites"][0];
    for k in [
        "mpi_function",
        "file",
        "line",
        "function",
        "calls",
        "time_s",
        "bytes",
        "overhead_s",
        "tmax_s",
        "exceed_fraction",
        "significant",
        "wait_state",
        "late_ranks",
        "per_rank",
    ] {
        assert!(s.get(k).is_some(), "sites[].{k}");
    }
    let v: serde_json::Value =
        serde_json::from_slice(&run("run-noprofile", Format::Json, 0)).unwrap();
    assert!(v["summary"]["overhead_s"].is_null());
    assert!(v["sites"][0]["overhead_s"].is_null());
}
