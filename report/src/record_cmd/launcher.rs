//! What the command is: an MPI launcher (and whose), or the program itself;
//! the program's name for the default output directory.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    /// Open MPI's launcher: needs `-x NAME` to pass the environment.
    OpenMpi,
    /// Another launcher (MPICH hydra, srun...): forwards the environment.
    Launcher,
    /// Not a launcher: the program itself (a singleton run).
    Program,
}

pub(crate) fn base_name(p: &OsStr) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What kind of launcher the command starts with.
pub fn launcher_kind(launcher: &OsStr) -> CommandKind {
    let name = base_name(launcher);
    let mpi = ["mpirun", "mpiexec", "orterun"]
        .iter()
        .any(|n| name.starts_with(n));
    if mpi {
        if name.ends_with(".openmpi") {
            return CommandKind::OpenMpi;
        }
        if name.contains(".mpich") || name.contains("hydra") {
            return CommandKind::Launcher;
        }
        return if says_open_mpi(launcher) {
            CommandKind::OpenMpi
        } else {
            CommandKind::Launcher
        };
    }
    const OTHERS: [&str; 7] = [
        "srun", "aprun", "jsrun", "prun", "ibrun", "flux", "charmrun",
    ];
    if OTHERS.contains(&name.as_str()) {
        CommandKind::Launcher
    } else {
        CommandKind::Program
    }
}

/// The MPI library family whose launcher this is (`openmpi`, `mpich`), as
/// far as its name and kind tell; `None` for launchers of either (`srun`)
/// and for a program run alone.
pub fn launcher_family(launcher: &OsStr, kind: CommandKind) -> Option<&'static str> {
    match kind {
        CommandKind::OpenMpi => Some("openmpi"),
        CommandKind::Program => None,
        CommandKind::Launcher => {
            let name = base_name(launcher);
            ["mpirun", "mpiexec", "hydra"]
                .iter()
                .any(|n| name.contains(n))
                .then_some("mpich")
        }
    }
}

/// Whether `<launcher> --version` mentions Open MPI (or its runtime, OpenRTE).
pub(crate) fn says_open_mpi(launcher: &OsStr) -> bool {
    let child = Command::new(launcher)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("LD_PRELOAD")
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
    match child.wait_with_output() {
        Ok(o) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            text.contains("Open MPI") || text.contains("OpenRTE")
        }
        Err(_) => false,
    }
}

/// Whether `arg` names an executable file: a path (with a `/`) or a name found
/// on `PATH`.
pub(crate) fn is_executable(arg: &OsStr) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let s = arg.to_string_lossy();
    if s.is_empty() {
        return false;
    }
    if s.contains('/') {
        return exec(Path::new(arg));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| exec(&d.join(arg))))
}

/// The program's name for the default run directory (the interposer's rule:
/// letters, digits and `._-`, anything else `_`). Behind a launcher it is the
/// first non-option argument that names an executable.
pub fn program_name(command: &[OsString], behind_launcher: bool) -> String {
    let prog = if behind_launcher {
        command
            .iter()
            .skip(1)
            .find(|a| !a.to_string_lossy().starts_with('-') && is_executable(a))
    } else {
        command.first()
    };
    let base = prog.map(|p| base_name(p)).unwrap_or_default();
    mpiover_common::run::dir::program_component(&base)
}
