//! Profiled runs (the preload with `MPIOVER_OUT`) and quick calibrations
//! for the tests that need a profile.

use std::path::{Path, PathBuf};

use mpiover_common::record::Record;

use crate::harness::examples::example;
use crate::harness::job::{Job, Outcome};
use crate::harness::paths::{calibrate_bin, scratch};
use crate::harness::records::complete_records;

/// A profiled run: outcome, run directory and records.
pub struct Profiled {
    pub out: Outcome,
    pub dir: PathBuf,
    pub records: Vec<Record>,
}

/// Runs `example args` on `np` ranks with the preload and `MPIOVER_OUT`, expects
/// success and a complete set of records written at `MPI_Finalize`.
pub fn profile(test: &str, np: u32, example_name: &str, args: &[&str]) -> Profiled {
    profile_env(test, np, example_name, args, &[])
}

pub fn profile_env(
    test: &str,
    np: u32,
    example_name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Profiled {
    profile_program(test, np, &example(example_name), args, env)
}

/// `mpirun -np N mpiover-calibrate --quick --quiet --functions F --sizes S`
/// into `<scratch of test>/profile.json`; expects success.
pub fn quick_profile(test: &str, np: u32, functions: &str, sizes: &str) -> PathBuf {
    quick_profile_with(test, np, functions, sizes, &[])
}

/// `quick_profile` with more calibrator options (`extra`).
pub fn quick_profile_with(
    test: &str,
    np: u32,
    functions: &str,
    sizes: &str,
    extra: &[&str],
) -> PathBuf {
    quick_profile_by(calibrate_bin(), &scratch(test), np, functions, sizes, extra)
}

/// `quick_profile_with` by a given calibrator (an installed one, say), into
/// `dir/profile.json`.
pub fn quick_profile_by(
    calibrator: &Path,
    dir: &Path,
    np: u32,
    functions: &str,
    sizes: &str,
    extra: &[&str],
) -> PathBuf {
    let prof = dir.join("profile.json");
    let mut args = vec![
        "--quick",
        "--quiet",
        "--functions",
        functions,
        "--sizes",
        sizes,
        "-o",
        prof.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    let out = Job::program(np, calibrator, &args, dir).run();
    out.assert_success();
    prof
}

/// `profile_env` for any program (by path).
pub fn profile_program(
    test: &str,
    np: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Profiled {
    let dir = scratch(test);
    let run = dir.join("run");
    let example_name = program
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    let example_name = example_name.as_str();
    let mut job = Job::program(np, program, args, &dir).profiled(&run);
    for (k, v) in env {
        job = job.env(k, v);
    }
    let out = job.run();
    out.assert_success();
    let records = complete_records(&run, np, example_name, &out);
    for r in &records {
        assert_eq!(r.finished, "finalize", "rank {}: finished", r.rank);
    }
    Profiled {
        out,
        dir: run,
        records,
    }
}

// ---- looking things up in a record ----
