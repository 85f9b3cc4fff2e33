//! The run directory: named after the program and the date unless given,
//! created by rank 0, cleared of an earlier run's records.

use std::path::{Path, PathBuf};

pub(crate) fn program_name(cmd: &[String]) -> String {
    let base = cmd
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    mpiover_common::run::dir::program_component(&base)
}

/// Rank 0: chooses and creates the run directory; returns it, or a reason
/// why records cannot be written there.
pub(crate) fn make_run_dir(out: Option<&str>, cmd: &[String]) -> Result<PathBuf, String> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let dir = match out {
        Some(o) => {
            let p = cwd.join(o);
            std::fs::create_dir_all(&p)
                .map_err(|e| format!("cannot create run directory {}: {e}", p.display()))?;
            // Records of an earlier run in the same directory would mix runs.
            if let Ok(rd) = std::fs::read_dir(&p) {
                for e in rd.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.starts_with("rank-") && n.ends_with(".json") {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
            p
        }
        None => mpiover_common::run::dir::create_default(&cwd, &program_name(cmd))?,
    };
    let probe = dir.join(format!(".mpiover-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| format!("cannot write into run directory {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}
