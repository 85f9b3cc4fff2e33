//! Commands the tools suggest, written so that they can be pasted as
//! printed: the launcher of the MPI library in use, each mpiover program
//! by the name the shell finds it under (or its path when the shell would
//! not find it, or would find another), words quoted for the shell.

use std::path::{Path, PathBuf};

/// `s` as one shell word: as it is when it holds only characters no shell
/// treats specially, else in single quotes.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The first file named `name` on `path` (a `PATH` value).
fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// How to name the mpiover program `name` in a suggested command: by its
/// name when `PATH` finds the one beside the running program, else by the
/// path of the one beside it (a cargo target directory, an installed
/// `bin/`), else by its name alone (it is not beside this one: installed
/// apart, and the name is the best guess).
pub fn program(name: &str) -> String {
    let Some(beside) = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join(name)))
        .filter(|p| p.is_file())
    else {
        return name.to_string();
    };
    program_in(name, &beside, std::env::var_os("PATH").as_deref())
}

fn program_in(name: &str, beside: &Path, path: Option<&std::ffi::OsStr>) -> String {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    };
    match on_path(name, path) {
        Some(found) if same(&found, beside) => name.to_string(),
        _ => quote(&beside.to_string_lossy()),
    }
}

/// The launcher of `np` ranks for the MPI library whose version string is
/// `library` (`MPI_Get_library_version`): Open MPI's `mpirun`; MPICH's
/// Hydra as Debian names it (`mpiexec.mpich`) when `PATH` has it, else
/// `mpiexec`; `mpirun` when the library is neither or unknown.
pub fn launcher(library: &str, np: u32) -> String {
    launcher_in(library, np, std::env::var_os("PATH").as_deref())
}

fn launcher_in(library: &str, np: u32, path: Option<&std::ffi::OsStr>) -> String {
    if library.contains("MPICH") {
        let hydra = if on_path("mpiexec.mpich", path).is_some() {
            "mpiexec.mpich"
        } else {
            "mpiexec"
        };
        format!("{hydra} -n {np}")
    } else {
        format!("mpirun -np {np}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_a_shell_would_split_or_expand_them() {
        assert_eq!(
            quote("/opt/mpiover/bin/mpiover"),
            "/opt/mpiover/bin/mpiover"
        );
        assert_eq!(quote("run 1"), "'run 1'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn the_launcher_is_the_librarys() {
        let dir = std::env::temp_dir().join(format!("mpiover-suggest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let none = Some(dir.as_os_str());
        let open = "Open MPI v4.1.4, package: Debian OpenMPI";
        assert_eq!(launcher_in(open, 4, none), "mpirun -np 4");
        assert_eq!(launcher_in("MPICH Version: 4.0.2", 2, none), "mpiexec -n 2");
        std::fs::write(dir.join("mpiexec.mpich"), "").unwrap();
        assert_eq!(
            launcher_in("MPICH Version: 4.0.2", 2, none),
            "mpiexec.mpich -n 2"
        );
        assert_eq!(launcher_in("", 3, none), "mpirun -np 3");

        // A program beside this one: by name when PATH finds that very
        // file, else by its path.
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = bin.join("mpiover-calibrate");
        std::fs::write(&tool, "").unwrap();
        let on = Some(bin.as_os_str());
        assert_eq!(
            program_in("mpiover-calibrate", &tool, on),
            "mpiover-calibrate"
        );
        assert_eq!(
            program_in("mpiover-calibrate", &tool, none),
            tool.to_string_lossy()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
