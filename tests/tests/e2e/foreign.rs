//! The library meets an MPI it was not built for, or a program it cannot
//! profile: the program runs as it would without the tool, and the user is
//! told once, on stderr, why there is no record and what to do.
//!
//! These need both builds of the interposer (Open MPI's in `target/release`,
//! MPICH's in `target/mpich/release`) and MPICH 4 (sessions), so they run in
//! the suite's MPICH leg (`scripts/test`), whose name filter they carry:
//! `mpich_only_`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::*;

/// The interposer built against `family` in this workspace.
fn build_for(family: &str) -> PathBuf {
    let dir = match family {
        "openmpi" => workspace_root().join("target").join("release"),
        _ => workspace_root()
            .join("target")
            .join("mpich")
            .join("release"),
    };
    let p = dir.join("libmpiover.so");
    assert!(
        p.is_file(),
        "{} not built: scripts/test builds both (Open MPI first, then MPICH)",
        p.display()
    );
    p
}

fn assert_mpich_leg() {
    assert_eq!(
        mpi_flavor(),
        "mpich",
        "run with MPIOVER_E2E_MPI=mpich (scripts/test's MPICH leg)"
    );
}

fn sorted(out: &str) -> String {
    let mut l: Vec<&str> = out.lines().collect();
    l.sort();
    l.join("\n")
}

fn records_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("rank-"))
            .count()
    })
}

/// Regression: the Open MPI build preloaded into an MPICH program aborted it
/// ("Fatal error in internal_Comm_rank: Invalid communicator") and said
/// nothing of why.
#[test]
fn mpich_only_open_mpi_build_in_an_mpich_program_stays_off_and_says_so() {
    assert_mpich_leg();
    let dir = scratch("mpich_only_foreign_build");
    let prog = example_in("threads", "thread_level");
    let plain = Job::program(2, &prog, &["multiple"], &dir).run();
    plain.assert_success();
    let run = dir.join("run");
    let mut c = Job::program(2, &prog, &["multiple"], &dir)
        .env("LD_PRELOAD", build_for("openmpi").display().to_string())
        .env("MPIOVER_OUT", run.display().to_string())
        .command();
    let out = c.output().expect("mpiexec.mpich runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let ctx = format!("=== stdout\n{stdout}\n=== stderr\n{stderr}");
    assert!(out.status.success(), "the program failed: {ctx}");
    assert_eq!(
        sorted(&stdout),
        sorted(&plain.stdout),
        "stdout differs: {ctx}"
    );
    let said = stderr
        .lines()
        .filter(|l| l.contains("built against Open MPI, but the program runs on MPICH"))
        .count();
    assert_eq!(said, 1, "said once, by one rank: {ctx}");
    assert!(
        stderr.contains("target/mpich"),
        "names the build to use: {ctx}"
    );
    assert_eq!(
        records_in(&run),
        0,
        "no record from a build that stayed off: {ctx}"
    );
}

/// The reverse: the MPICH build preloaded into an Open MPI program.
#[test]
fn mpich_only_mpich_build_in_an_open_mpi_program_stays_off_and_says_so() {
    assert_mpich_leg();
    let dir = scratch("mpich_only_foreign_build_reverse");
    let prog = dir.join("thread_level_ompi");
    let cc = Command::new("mpicc")
        .args(["-g", "-O2", "-o"])
        .arg(&prog)
        .arg(examples_src().join("threads").join("thread_level.c"))
        .arg("-lpthread")
        .output()
        .expect("mpicc (Open MPI) runs");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = dir.join("run");
    let mpirun = |preload: bool| {
        let mut c = Command::new("mpirun");
        c.args(["-np", "2"]);
        if preload {
            c.arg("-x")
                .arg(format!("LD_PRELOAD={}", build_for("mpich").display()))
                .arg("-x")
                .arg(format!("MPIOVER_OUT={}", run.display()));
        }
        c.arg(&prog).arg("single").current_dir(&dir);
        for (k, v) in [
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
            ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
        ] {
            c.env(k, v);
        }
        c.env_remove("LD_PRELOAD");
        c.output().expect("mpirun (Open MPI) runs")
    };
    let plain = mpirun(false);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let prof = mpirun(true);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&prof.stdout),
        String::from_utf8_lossy(&prof.stderr),
    );
    let ctx = format!("=== stdout\n{stdout}\n=== stderr\n{stderr}");
    assert!(prof.status.success(), "the program failed: {ctx}");
    assert_eq!(
        sorted(&stdout),
        sorted(&String::from_utf8_lossy(&plain.stdout)),
        "stdout differs: {ctx}"
    );
    let said = stderr
        .lines()
        .filter(|l| l.contains("built against MPICH, but the program runs on Open MPI"))
        .count();
    assert_eq!(said, 1, "said once, by one rank: {ctx}");
    assert_eq!(records_in(&run), 0, "no record: {ctx}");
}

/// `mpiover record` run from the Open MPI build's directory, with MPICH's
/// launcher, preloads the MPICH build it finds beside it.
#[test]
fn mpich_only_record_picks_the_build_for_the_launcher() {
    assert_mpich_leg();
    let dir = scratch("mpich_only_record_picks");
    let prog = example_in("threads", "thread_level");
    let mpiover = workspace_root()
        .join("target")
        .join("release")
        .join("mpiover");
    assert!(mpiover.is_file(), "{} not built", mpiover.display());
    let run = dir.join("run");
    let mut c = Command::new(&mpiover);
    c.args(["record", "--no-summary", "--out"])
        .arg(&run)
        .args(["--", "mpiexec.mpich", "-n", "2"])
        .arg(&prog)
        .arg("init")
        .current_dir(&dir)
        .env_remove("MPIOVER_LIB")
        .env_remove("LD_PRELOAD");
    let out = c.output().expect("mpiover record runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("preloading") && stderr.contains("mpich"),
        "says which build it took: {stderr}"
    );
    assert_eq!(records_in(&run), 2, "both ranks recorded: {stderr}");
}

/// Regression: a program that starts MPI with `MPI_Session_init` alone got
/// no record and no message.
#[test]
fn mpich_only_sessions_without_init_are_said_not_profiled() {
    assert_mpich_leg();
    let dir = scratch("mpich_only_sessions");
    let prog = example_in("sessions", "sessions_only");
    let plain = Job::program(2, &prog, &[], &dir).run();
    plain.assert_success();
    assert!(plain.stdout.contains("sum of ranks 1"), "{}", plain.dump());
    let run = dir.join("run");
    let prof = Job::program(2, &prog, &[], &dir).profiled(&run).run();
    prof.assert_success();
    assert_eq!(
        sorted(&prof.stdout),
        sorted(&plain.stdout),
        "{}",
        prof.dump()
    );
    let said = prof
        .stderr
        .lines()
        .filter(|l| l.contains("MPI_Session_init before MPI_Init"))
        .count();
    assert_eq!(said, 1, "said once: {}", prof.dump());
}
