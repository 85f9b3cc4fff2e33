//! The library meets an MPI it was not built for, or a program it cannot
//! profile: the program runs as it would without the tool, and the user is
//! told once, on stderr, why there is no record and what to do. A build for
//! the other library restarts the process without itself (at load, or at
//! `MPI_Init` when MPI is loaded later, as by mpi4py).
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

/// A fresh directory for the facts `thread_level` writes (one file a rank).
fn facts_dir(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    std::fs::create_dir_all(&out).expect("facts directory");
    out
}

/// What the two ranks of `thread_level` wrote, in rank order.
fn facts(out: &Path) -> String {
    (0..2)
        .map(|r| read_all(&out.join(format!("facts-{r}.txt"))))
        .collect::<Vec<_>>()
        .join("")
}

/// The job with a build for the other MPI preloaded: it succeeded, one rank
/// said `phrase` once, and no record was written into `run`. Returns its
/// stdout and a context for further assertions.
fn assert_ran_unprofiled(out: &std::process::Output, phrase: &str, run: &Path) -> (String, String) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    let ctx = format!("=== stdout\n{stdout}\n=== stderr\n{stderr}");
    assert!(out.status.success(), "the program failed: {ctx}");
    let said = stderr.lines().filter(|l| l.contains(phrase)).count();
    assert_eq!(said, 1, "said once, by one rank: {ctx}");
    assert_eq!(
        records_in(run),
        0,
        "no record from a build that stayed off: {ctx}"
    );
    (stdout, ctx)
}

/// Regression: the Open MPI build preloaded into an MPICH program aborted it
/// ("Fatal error in internal_Comm_rank: Invalid communicator") and said
/// nothing of why. It now starts the process again without itself, before
/// `main`.
#[test]
fn mpich_only_open_mpi_build_in_an_mpich_program_restarts_it_without_the_tool() {
    assert_mpich_leg();
    let dir = scratch("mpich_only_foreign_build");
    let prog = example_in("threads", "thread_level");
    let run_with =
        |out: &Path| Job::program(2, &prog, &["multiple", &out.display().to_string()], &dir);
    let without = facts_dir(&dir, "without");
    run_with(&without).run().assert_success();
    let (run, with) = (dir.join("run"), facts_dir(&dir, "with"));
    let out = run_with(&with)
        .env("LD_PRELOAD", build_for("openmpi").display().to_string())
        .env("MPIOVER_OUT", run.display().to_string())
        .command()
        .output()
        .expect("mpiexec.mpich runs");
    let phrase = "built against Open MPI, but the program runs on MPICH";
    let (_, ctx) = assert_ran_unprofiled(&out, phrase, &run);
    assert_eq!(
        facts(&with),
        facts(&without),
        "what the program sees differs: {ctx}"
    );
    assert!(
        ctx.contains("target/mpich"),
        "names the build to use: {ctx}"
    );
}

/// The reverse: the MPICH build preloaded into an Open MPI program. Its
/// wrappers would cut Open MPI's 64-bit handles to MPICH's 32-bit ones (the
/// program crashed in its first `MPI_Allreduce`), so the library starts the
/// process again without itself, before `main`.
#[test]
fn mpich_only_mpich_build_in_an_open_mpi_program_restarts_it_without_the_tool() {
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
    let mpirun = |preload: bool, facts: &Path| {
        let mut c = Command::new("mpirun");
        c.args(["-np", "2"]);
        if preload {
            c.arg("-x")
                .arg(format!("LD_PRELOAD={}", build_for("mpich").display()))
                .arg("-x")
                .arg(format!("MPIOVER_OUT={}", run.display()));
        }
        c.arg(&prog).arg("multiple").arg(facts).current_dir(&dir);
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
    let (without, with) = (facts_dir(&dir, "without"), facts_dir(&dir, "with"));
    let plain = mpirun(false, &without);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let prof = mpirun(true, &with);
    let phrase = "built against MPICH, but the program runs on Open MPI";
    let (_, ctx) = assert_ran_unprofiled(&prof, phrase, &run);
    assert_eq!(
        facts(&with),
        facts(&without),
        "what the program sees differs: {ctx}"
    );
}

/// An mpi4py program loads MPI after start-up, out of the tool's sight at
/// load: the Open MPI build preloaded into Python whose mpi4py runs on
/// MPICH crashed it in `MPI_Init`. It is now started again without the
/// tool at `MPI_Init`. (The suite's MPICH leg puts an mpi4py built against
/// MPICH on `PYTHONPATH`.)
#[test]
fn mpich_only_open_mpi_build_in_an_mpich_mpi4py_program_restarts_it_without_the_tool() {
    assert_mpich_leg();
    let dir = scratch("mpich_only_foreign_python");
    let script = dir.join("sum.py");
    std::fs::write(
        &script,
        "from mpi4py import MPI\n\
         c = MPI.COMM_WORLD\n\
         print(f'rank {c.Get_rank()}: sum {c.allreduce(c.Get_rank() + 1)}', flush=True)\n",
    )
    .expect("script");
    let python = std::env::var("MPIOVER_PYTHON").unwrap_or_else(|_| "python3".into());
    let run = dir.join("run");
    let job = |preload: bool| {
        let mut j = Job::program(
            2,
            Path::new(&python),
            &[&script.display().to_string()],
            &dir,
        );
        if let Some(pp) = std::env::var_os("PYTHONPATH") {
            j = j.env("PYTHONPATH", pp.to_string_lossy());
        }
        if preload {
            j = j
                .env("LD_PRELOAD", build_for("openmpi").display().to_string())
                .env("MPIOVER_OUT", run.display().to_string());
        }
        j.command().output().expect("mpiexec.mpich runs")
    };
    let plain = job(false);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let phrase = "built against Open MPI, but the program runs on MPICH";
    let (stdout, ctx) = assert_ran_unprofiled(&job(true), phrase, &run);
    assert_eq!(
        stdout.matches(": sum 3").count(),
        2,
        "both ranks summed: {ctx}"
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
