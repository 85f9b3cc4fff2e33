//! Finding `libmpiover.so` and putting it into `LD_PRELOAD`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mpiover_common::settings::Var;

pub(crate) const LIB_NAME: &str = "libmpiover.so";

/// The library to preload, as an absolute path.
pub(crate) fn find_lib(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        if !p.is_file() {
            bail!("--lib {}: no such file", p.display());
        }
        return absolute(p);
    }
    if let Some(p) = Var::Lib.get().filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("{}={}: no such file", Var::Lib.name(), p.display());
        }
        return absolute(&p);
    }
    let exe = std::env::current_exe().context("cannot find the mpiover executable")?;
    let candidates = lib_candidates(&exe);
    for c in &candidates {
        if c.is_file() {
            return absolute(c);
        }
    }
    let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    let get_it = if installed(&exe) {
        "install it beside this mpiover (`scripts/install PREFIX` puts it in PREFIX/lib)"
    } else {
        "build it with `cargo build --release --workspace`"
    };
    bail!(
        "cannot find {LIB_NAME} (tried {}): {get_it}, or give its path with --lib or {}",
        tried.join(", "),
        Var::Lib.name()
    )
}

/// Whether `exe` runs from an installed prefix (`PREFIX/bin/mpiover`) rather
/// than from a cargo build tree (`target/<profile>/mpiover`): the advice for
/// a missing or mismatched library differs.
fn installed(exe: &Path) -> bool {
    exe.parent().and_then(Path::file_name) == Some(OsStr::new("bin"))
}

/// The MPI family a `libmpiover.so` was built for, from the marker the
/// interposer carries (`mpiover-built-for:<flavor>;`); `None` for a file
/// without one.
pub fn built_for(lib: &Path) -> Option<String> {
    const MARK: &[u8] = b"mpiover-built-for:";
    let bytes = std::fs::read(lib).ok()?;
    let at = bytes.windows(MARK.len()).position(|w| w == MARK)? + MARK.len();
    let rest = bytes.get(at..)?;
    let end = rest.iter().take(32).position(|&c| c == b';')?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The library to preload for a job whose launcher belongs to `family`:
/// `found` when it was built for that family (or either is unknown), else
/// the first build for that family in the usual places beside the
/// executable (`target/release` and `target/mpich/release` of one cargo
/// tree, `lib/<family>/` of an installed tree). A mismatch is said on
/// stderr; without a matching build the found one is kept (it stays off in
/// the job and says so).
pub fn matching_lib(found: PathBuf, family: Option<&str>, exe: &Path, explicit: bool) -> PathBuf {
    let Some(family) = family else { return found };
    let Some(has) = built_for(&found) else {
        return found;
    };
    if has == family {
        return found;
    }
    if !explicit {
        let dir = exe.parent().unwrap_or(Path::new("."));
        let others = [
            dir.join("..").join("mpich").join("release").join(LIB_NAME),
            dir.join("..").join("..").join("release").join(LIB_NAME),
            dir.join("..").join("lib").join(family).join(LIB_NAME),
        ];
        if let Some(p) = others
            .iter()
            .filter(|p| p.is_file())
            .find(|p| built_for(p).as_deref() == Some(family))
        {
            if let Ok(p) = absolute(p) {
                eprintln!(
                    "mpiover: the launcher is {}'s: preloading {} (built for it) instead of {}",
                    family_name(family),
                    p.display(),
                    found.display()
                );
                return p;
            }
        }
    }
    let get_it = if installed(exe) {
        // One prefix per MPI: the other prefix's mpiover preloads its own
        // library.
        format!(
            "run the mpiover of a prefix installed for {} (`MPICC={} scripts/install PREFIX`) \
             or pass its lib/{LIB_NAME} with --lib",
            family_name(family),
            family_mpicc(family)
        )
    } else {
        // Where the lookup above finds it: target/release for Open MPI,
        // target/mpich/release for MPICH.
        let target = if family == "mpich" {
            " CARGO_TARGET_DIR=target/mpich"
        } else {
            ""
        };
        format!(
            "build it for {} (`MPICC={}{target} cargo build --release --workspace`) \
             or pass that build with --lib",
            family_name(family),
            family_mpicc(family)
        )
    };
    eprintln!(
        "mpiover: warning: {} was built for {} but the launcher is {}'s: the tool will stay \
         off in the job; {get_it}",
        found.display(),
        family_name(&has),
        family_name(family),
    );
    found
}

/// The compiler wrapper of `family` under its Debian name (the docs say to
/// use the site's own where it differs).
fn family_mpicc(family: &str) -> &str {
    match family {
        "openmpi" => "mpicc.openmpi",
        "mpich" => "mpicc.mpich",
        _ => "mpicc",
    }
}

fn family_name(f: &str) -> &str {
    match f {
        "openmpi" => "Open MPI",
        "mpich" => "MPICH",
        other => other,
    }
}

/// Where the library is looked for relative to the `mpiover` executable.
pub fn lib_candidates(exe: &Path) -> Vec<PathBuf> {
    let dir = exe.parent().unwrap_or(Path::new("."));
    vec![
        dir.join(LIB_NAME),
        dir.join("..").join("lib").join(LIB_NAME),
    ]
}

pub(crate) fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    p.canonicalize()
        .with_context(|| format!("cannot resolve {}", p.display()))
}

/// `existing` (colon- or space-separated) without any other libmpiover.so,
/// then `lib`.
pub fn join_preload(existing: Option<&OsStr>, lib: &Path) -> OsString {
    let mut parts: Vec<String> = existing
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default()
        .split([':', ' '])
        .filter(|s| !s.is_empty())
        .filter(|s| Path::new(s).file_name() != Some(OsStr::new(LIB_NAME)))
        .map(str::to_string)
        .collect();
    parts.push(lib.to_string_lossy().into_owned());
    parts.join(":").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_told_from_a_build_tree_by_its_bin_directory() {
        assert!(installed(Path::new("/opt/mpiover/openmpi/bin/mpiover")));
        assert!(!installed(Path::new("/src/mpiover/target/release/mpiover")));
        assert!(!installed(Path::new(
            "/src/mpiover/target/mpich/release/mpiover"
        )));
    }
}
