//! Running `mpiover-calibrate` under `mpirun` (one job at a time: the suite's
//! lock), scratch directories, and reading what it wrote.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use mpiover_common::profile::{Profile, ProfileKey};

pub(crate) static LOCK: Mutex<()> = Mutex::new(());

pub(crate) fn mpirun() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("mpirun"))
        .find(|p| p.exists())
}

pub(crate) fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "mpiover-calibrate-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `mpirun -np N [-x VAR]... mpiover-calibrate ARGS`.
pub(crate) fn command(np: u32, env: &[(&str, &str)], args: &[&str]) -> Option<Command> {
    let Some(mpirun) = mpirun() else {
        // Under CI a missing MPI is a broken setup, not a reason to pass.
        assert!(
            std::env::var_os("CI").is_none(),
            "mpirun not found under CI: scripts/setup installs it"
        );
        eprintln!("mpirun not found: test skipped");
        return None;
    };
    let mut c = Command::new(mpirun);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .args(["-np", &np.to_string()]);
    for (k, v) in env {
        c.env(k, v).args(["-x", k]);
    }
    c.arg(env!("CARGO_BIN_EXE_mpiover-calibrate"))
        .args(args)
        .arg("--quiet");
    Some(c)
}

pub(crate) fn run(np: u32, env: &[(&str, &str)], args: &[&str]) -> Option<Output> {
    let out = command(np, env, args)?.output().expect("mpirun runs");
    Some(out)
}

pub(crate) fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "mpirun failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn keys(p: &Profile) -> BTreeSet<ProfileKey> {
    p.entries.iter().map(|e| e.key()).collect()
}

/// PIDs of a process's descendants (from /proc/PID/task/*/children).
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                for c in s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()) {
                    out.push(c);
                    stack.push(c);
                }
            }
        }
    }
    out
}

pub(crate) fn entries_in(f: &Path) -> usize {
    Profile::load(f).map(|p| p.entries.len()).unwrap_or(0)
}

/// Load average of the machine (for messages: the machine is shared).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default()
}

/// `target/release/mpiover` beside the calibrator (built by the workspace).
pub(crate) fn mpiover_cli() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_BIN_EXE_mpiover-calibrate")).parent()?;
    let cli = dir.join("mpiover");
    if cli.exists() {
        return Some(cli);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} missing under CI: build the workspace first",
        cli.display()
    );
    eprintln!("{} not built: test skipped", cli.display());
    None
}

/// The smallest grid: `MPI_Allreduce` of 8 bytes on 2 ranks, written to `out`.
pub(crate) fn allreduce_8b(out: &str) -> [&str; 8] {
    [
        "--functions",
        "MPI_Allreduce",
        "--procs",
        "2",
        "--sizes",
        "8",
        "-o",
        out,
    ]
}
