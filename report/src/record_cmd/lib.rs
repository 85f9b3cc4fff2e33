//! Finding `libmpiover.so` and putting it into `LD_PRELOAD`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

pub(crate) const LIB_NAME: &str = "libmpiover.so";

/// The library to preload, as an absolute path.
pub(crate) fn find_lib(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        if !p.is_file() {
            bail!("--lib {}: no such file", p.display());
        }
        return absolute(p);
    }
    if let Some(p) = std::env::var_os("MPIOVER_LIB").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("MPIOVER_LIB={}: no such file", p.display());
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
    bail!(
        "cannot find {LIB_NAME} (tried {}): build it with `cargo build --release --workspace`, \
         or give its path with --lib or MPIOVER_LIB",
        tried.join(", ")
    )
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
