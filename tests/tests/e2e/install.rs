//! An installed prefix (`scripts/install`): its `mpiover-calibrate` measures,
//! its `mpiover record` preloads the `libmpiover.so` of its own prefix (no
//! build tree, no `MPIOVER_LIB`), its `mpiover report` finds the injected
//! wait; without the library it says so and exits 2, and `MPIOVER_LIB` points
//! it at a library elsewhere. Under both MPIs (the MPICH leg of scripts/test
//! installs the MPICH build). A prefix of the other MPI beside it says which
//! prefix to use instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::harness::*;

/// `scripts/install --no-build PREFIX` of the build under test (the target
/// directory `lib()` comes from), into `dir/name`; returns the prefix.
fn install_from(target: &Path, dir: &Path, name: &str) -> PathBuf {
    let prefix = dir.join(name);
    let out = Command::new(workspace_root().join("scripts").join("install"))
        .arg("--no-build")
        .arg(&prefix)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("MPICC")
        .output()
        .expect("scripts/install runs");
    let ctx = format!(
        "scripts/install --no-build {} ({})\n=== stdout\n{}\n=== stderr\n{}",
        prefix.display(),
        target.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{ctx}");
    for f in ["bin/mpiover", "bin/mpiover-calibrate", "lib/libmpiover.so"] {
        assert!(prefix.join(f).is_file(), "{f} not installed: {ctx}");
    }
    prefix
}

/// The target directory (`<target>/release/libmpiover.so`) of the library
/// under test.
fn target_of(lib: &Path) -> PathBuf {
    lib.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} is not in <target>/release", lib.display()))
        .to_path_buf()
}

fn launcher() -> &'static str {
    if mpi_flavor() == "mpich" {
        "mpiexec.mpich"
    } else {
        "mpirun"
    }
}

/// `PREFIX/bin/mpiover record [--profile P] --out RUN -- <launcher> -np 2
/// late_sender 5 20`, with `extra` environment; the suite's environment
/// drops the developer's `MPIOVER_*` (so `MPIOVER_LIB` only when given).
fn record_from(
    prefix: &Path,
    profile: Option<&Path>,
    run: &Path,
    extra: &[(&str, &Path)],
) -> Outcome {
    let mut c = Command::new(prefix.join("bin").join("mpiover"));
    c.arg("record");
    if let Some(p) = profile {
        c.arg("--profile").arg(p);
    }
    c.arg("--out")
        .arg(run)
        .arg("--")
        .arg(launcher())
        .args(["-np", "2"])
        .arg(example("late_sender"))
        .args(["5", "20"]);
    let dir = run.parent().expect("run has a parent");
    c.current_dir(dir);
    let job = format!(
        "{} record --out {} -- {} -np 2 late_sender 5 20",
        prefix.join("bin/mpiover").display(),
        run.display(),
        launcher()
    );
    // run_locked applies the suite's environment first; the extra variables
    // must survive it, so they go through a wrapper `env`.
    if extra.is_empty() {
        return run_locked(c, job, dir);
    }
    let mut w = Command::new("env");
    for (k, v) in extra {
        w.arg(format!("{k}={}", v.display()));
    }
    w.arg(c.get_program()).args(c.get_args()).current_dir(dir);
    run_locked(w, job, dir)
}

fn installed_report(prefix: &Path, run: &Path, profile: &Path) -> Value {
    let o = Command::new(prefix.join("bin").join("mpiover"))
        .arg("report")
        .arg(run)
        .arg("--profile")
        .arg(profile)
        .args(["--format", "json"])
        .env_remove("LD_PRELOAD")
        .output()
        .expect("running the installed mpiover report");
    assert!(
        o.status.success(),
        "installed mpiover report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("report --format json is JSON")
}

#[test]
fn install_prefix_calibrates_records_and_reports_from_there() {
    let dir = scratch("install_prefix");
    let prefix = install_from(&target_of(lib()), &dir, "prefix");

    // Calibrate with the installed calibrator (MPI_Recv at the example's 8
    // bytes), as a user of the prefix would.
    let cal = prefix.join("bin").join("mpiover-calibrate");
    let prof = quick_profile_by(&cal, &dir, 2, "MPI_Send,MPI_Recv", "8", &[]);

    // Record from the prefix: the library is found beside its bin/.
    let run = dir.join("run");
    let out = record_from(&prefix, Some(&prof), &run, &[]);
    assert_eq!(out.code(), Some(0), "{}", out.dump());
    assert!(
        !out.stderr.contains("warning"),
        "the prefix's own library matches its launcher: {}",
        out.dump()
    );
    assert_eq!(records_in(&run), 2, "a record per rank: {}", out.dump());
    let report = installed_report(&prefix, &run, &prof);
    let line = marker("late_sender.c", "late-sender-recv");
    let s = site_at(&report, "late_sender.c", line, "MPI_Recv").unwrap_or_else(|| {
        panic!(
            "no MPI_Recv site at late_sender.c:{line}\n{}{}",
            describe_sites(&report),
            out.dump()
        )
    });
    assert_eq!(
        s["wait_state"],
        "Late Sender",
        "{s:#}\n{}",
        describe_sites(&report)
    );

    // Without its library the prefix's mpiover says where it looked, and
    // starts nothing.
    let moved = dir.join("elsewhere");
    std::fs::create_dir_all(&moved).expect("a directory for the library");
    let lib_at = moved.join("libmpiover.so");
    std::fs::rename(prefix.join("lib").join("libmpiover.so"), &lib_at).expect("moving the library");
    let run2 = dir.join("run-missing");
    let out = record_from(&prefix, None, &run2, &[]);
    assert_eq!(out.code(), Some(2), "a usage error: {}", out.dump());
    let expected = prefix
        .join("bin")
        .join("..")
        .join("lib")
        .join("libmpiover.so");
    assert!(
        out.stderr.contains(&expected.display().to_string())
            && out.stderr.contains("MPIOVER_LIB")
            && out.stderr.contains("scripts/install"),
        "names where it looked and the ways out: {}",
        out.dump()
    );
    assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.dump());
    assert!(!run2.exists(), "no job started: {}", out.dump());

    // MPIOVER_LIB names it wherever it is.
    let run3 = dir.join("run-env");
    let out = record_from(&prefix, None, &run3, &[("MPIOVER_LIB", &lib_at)]);
    assert_eq!(out.code(), Some(0), "{}", out.dump());
    assert_eq!(records_in(&run3), 2, "a record per rank: {}", out.dump());
}

/// Two prefixes side by side, one per MPI: the Open MPI prefix's mpiover
/// under MPICH's launcher warns before the job and names the way to the
/// MPICH prefix; its library, started anyway, keeps the program unprofiled
/// and says so once. (Needs both builds: the MPICH leg of scripts/test.)
#[test]
fn mpich_only_install_prefix_of_the_other_mpi_says_which_to_use() {
    assert_eq!(mpi_flavor(), "mpich", "run in scripts/test's MPICH leg");
    let dir = scratch("mpich_only_install_other");
    // scripts/test builds Open MPI's first, then MPICH's in its target/mpich.
    let mpich_target = target_of(lib());
    let openmpi_target = [
        mpich_target.parent(),
        Some(&*workspace_root().join("target")),
    ]
    .into_iter()
    .flatten()
    .find(|t| t.join("release/libmpiover.so").is_file())
    .unwrap_or_else(|| {
        panic!(
            "no Open MPI build beside {} (scripts/test builds it first, in target/)",
            mpich_target.display()
        )
    })
    .to_path_buf();
    let ompi = install_from(&openmpi_target, &dir, "openmpi");
    let mpich = install_from(&mpich_target, &dir, "mpich");
    assert!(mpich.join("lib/libmpiover.so").is_file());

    let run = dir.join("run");
    let out = record_from(&ompi, None, &run, &[]);
    // The program runs, unprofiled, to its own end; `mpiover record` then
    // exits 1 because nothing was recorded, so that scripts notice.
    assert!(
        out.stdout.contains("late_sender: ranks 2"),
        "the program runs, unprofiled: {}",
        out.dump()
    );
    assert_eq!(
        out.code(),
        Some(1),
        "nothing recorded is an exit status of 1: {}",
        out.dump()
    );
    let warning: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("mpiover: warning:"))
        .collect();
    assert_eq!(
        warning.len(),
        1,
        "one warning before the job: {}",
        out.dump()
    );
    assert!(
        warning[0].contains("built for Open MPI but the launcher is MPICH's")
            && warning[0].contains("MPICC=mpicc.mpich scripts/install PREFIX"),
        "names the mismatch and the prefix to install: {}",
        out.dump()
    );
    let said = out
        .stderr
        .lines()
        .filter(|l| l.contains("built against Open MPI, but the program runs on MPICH"))
        .count();
    assert_eq!(said, 1, "the library says it once: {}", out.dump());
    assert_eq!(records_in(&run), 0, "no record: {}", out.dump());
}
