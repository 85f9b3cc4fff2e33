//! The run directory: the default name, and preparing what the user gave.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::record_cmd::preload::absolute;

/// The profile, checked readable before the job starts (a bad profile would
/// otherwise cost one warning per rank and a run without overhead).
pub(crate) fn check_profile(p: &Path) -> anyhow::Result<PathBuf> {
    if !p.is_file() {
        bail!("profile {}: no such file", p.display());
    }
    mpiover_common::profile::Profile::load(p)
        .with_context(|| format!("cannot use profile {}", p.display()))?;
    absolute(p)
}

/// Creates `./mpiover-<program>-<timestamp>` (or `-2`, `-3`...).
pub(crate) fn make_default_out(cwd: &Path, prog: &str) -> anyhow::Result<PathBuf> {
    mpiover_common::run::dir::create_default(cwd, prog).map_err(anyhow::Error::msg)
}

/// Creates the run directory and removes the records of an earlier run in it.
pub(crate) fn prepare_out(p: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(p)
        .with_context(|| format!("cannot create run directory {}", p.display()))?;
    let p = absolute(p)?;
    let rd = std::fs::read_dir(&p)
        .with_context(|| format!("cannot read run directory {}", p.display()))?;
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("rank-") && n.ends_with(".json") {
            std::fs::remove_file(e.path()).with_context(|| {
                format!("cannot remove the earlier record {}", e.path().display())
            })?;
        }
    }
    Ok(p)
}

// ---------------------------------------------------------------------------
// Running the job
// ---------------------------------------------------------------------------
