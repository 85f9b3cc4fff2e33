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
    let facts = |name: &str| {
        let out = dir.join(name);
        std::fs::create_dir_all(&out).expect("facts directory");
        out
    };
    let read = |out: &Path| {
        (0..2)
            .map(|r| read_all(&out.join(format!("facts-{r}.txt"))))
            .collect::<Vec<_>>()
            .join("")
    };
    let without = facts("without");
    let plain = Job::program(
        2,
        &prog,
        &["multiple", &without.display().to_string()],
        &dir,
    )
    .run();
    plain.assert_success();
    let run = dir.join("run");
    let with = facts("with");
    let mut c = Job::program(2, &prog, &["multiple", &with.display().to_string()], &dir)
        .env("LD_PRELOAD", build_for("openmpi").display().to_string())
        .env("MPIOVER_OUT", run.display().to_string())
        .command();
    let out = c.output().expect("mpiexec.mpich runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = format!("=== stderr\n{stderr}");
    assert!(out.status.success(), "the program failed: {ctx}");
    assert_eq!(
        read(&with),
        read(&without),
        "what the program sees differs: {ctx}"
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
        prof.stdout.matches("sum of ranks 1").count(),
        2,
        "both ranks computed their sum: {}",
        prof.dump()
    );
    let said = prof
        .stderr
        .lines()
        .filter(|l| l.contains("MPI_Session_init before MPI_Init"))
        .count();
    assert_eq!(said, 1, "said once: {}", prof.dump());
}
