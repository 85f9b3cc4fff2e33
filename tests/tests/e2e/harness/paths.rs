//! Where things are: the workspace, scratch directories, the built
//! `libmpiover.so`, `mpiover` and `mpiover-calibrate`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Longest any single `mpirun` may take before the harness kills it.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

pub fn examples_src() -> PathBuf {
    workspace_root().join("examples")
}

/// Directory for this test's files, emptied first and kept afterwards so that
/// a failure can be inspected (`target/.../tmp/e2e/<test>`).
pub fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e")
        .join(test);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// Candidate build directories, most specific first: `$CARGO_TARGET_DIR`
/// (if the tests run with one), then the workspace's `target/`.
pub fn target_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        let t = PathBuf::from(t);
        dirs.push(if t.is_absolute() {
            t
        } else {
            workspace_root().join(t)
        });
    }
    dirs.push(workspace_root().join("target"));
    dirs
}

/// A built artifact: `$<env_var>` if set, else `<target>/release/<name>`, else
/// `<target>/debug/<name>`. Panics (never skips) when there is none.
pub fn locate_artifact(env_var: &str, name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "{env_var}={} does not name a file",
            p.display()
        );
        return p;
    }
    let mut tried = Vec::new();
    for dir in target_dirs() {
        for profile in ["release", "debug"] {
            let p = dir.join(profile).join(name);
            if p.is_file() {
                return p;
            }
            tried.push(p.display().to_string());
        }
    }
    panic!(
        "{name} not found (tried {}).\nBuild it first: `cargo build --release --workspace` \
         (or set {env_var} to its path).",
        tried.join(", ")
    );
}

/// The MPI library the suite runs under: `openmpi` (the default) or `mpich`
/// (`MPIOVER_E2E_MPI=mpich`: `mpiexec.mpich`, `mpicc.mpich`, `mpifort.mpich`;
/// point `MPIOVER_LIB` or `CARGO_TARGET_DIR` at a build made with
/// `MPICC=mpicc.mpich`). Only the tests that do not depend on Open MPI's
/// behaviour are meant to run under MPICH (see `.ci`).
pub fn mpi_flavor() -> &'static str {
    static F: OnceLock<String> = OnceLock::new();
    F.get_or_init(|| match std::env::var("MPIOVER_E2E_MPI").as_deref() {
        Ok("mpich") => "mpich".to_string(),
        Ok("openmpi") | Ok("") | Err(_) => "openmpi".to_string(),
        Ok(other) => panic!("MPIOVER_E2E_MPI={other:?}: expected openmpi or mpich"),
    })
}

/// The launcher of [`mpi_flavor`] (`mpiover record` checks that the
/// library was built for it).
pub fn suite_launcher() -> &'static str {
    if mpi_flavor() == "mpich" {
        "mpiexec.mpich"
    } else {
        "mpirun"
    }
}

/// `make` variables selecting the compilers of [`mpi_flavor`].
pub fn make_vars() -> Vec<String> {
    if mpi_flavor() == "mpich" {
        vec![
            "MPICC=mpicc.mpich".into(),
            "MPIFC=mpifort.mpich".into(),
            "MPICXX=mpicxx.mpich".into(),
        ]
    } else {
        Vec::new()
    }
}

/// Where the examples of [`mpi_flavor`] are built.
pub fn examples_out() -> PathBuf {
    let name = if mpi_flavor() == "mpich" {
        "examples-mpich"
    } else {
        "examples"
    };
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The interposer under test.
pub fn lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let p = locate_artifact("MPIOVER_LIB", "libmpiover.so");
        eprintln!("e2e: using {}", p.display());
        p
    })
}

/// The report command under test.
pub fn mpiover_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let p = locate_artifact("MPIOVER_BIN", "mpiover");
        eprintln!("e2e: using {}", p.display());
        p
    })
}

/// The calibration program under test (`mpiover-calibrate`, or
/// `$MPIOVER_CALIBRATE`).
pub fn calibrate_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let p = locate_artifact("MPIOVER_CALIBRATE", "mpiover-calibrate");
        eprintln!("e2e: using {}", p.display());
        p
    })
}
