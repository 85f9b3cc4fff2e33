//! The default run-directory name, `mpiover-<program>-<YYYYmmdd-HHMMSS>`,
//! computed the same way by the interposer (rank 0 at `MPI_Init`) and by
//! `mpiover record` (before the launch), so that both name it alike.

/// The program's base name made safe for a path component: characters other
/// than ASCII alphanumerics and `._-` become `_`; empty becomes `program`.
pub fn program_component(base: &str) -> String {
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "program".into()
    } else {
        clean
    }
}

/// Local time as `YYYYmmdd-HHMMSS`.
///
/// chrono's `Local` parses the zone (TZ, else /etc/localtime) in Rust and
/// needs neither libc's localtime_r nor a single-threaded process: rank 0
/// calls this at `MPI_Init`, when the MPI library may have started threads
/// (which is why `time`'s `current_local_offset` would refuse here). Where
/// no zone can be read it falls back to UTC.
pub fn local_timestamp() -> String {
    chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()
}

/// Creates the default run directory `cwd/mpiover-<program>-<timestamp>`,
/// or `-2`, `-3`, ... when taken (another run started in the same second).
/// `program` is already a path component ([`program_component`]).
pub fn create_default(cwd: &std::path::Path, program: &str) -> Result<std::path::PathBuf, String> {
    let base = format!("mpiover-{program}-{}", local_timestamp());
    for i in 1..1000 {
        let name = if i == 1 {
            base.clone()
        } else {
            format!("{base}-{i}")
        };
        let p = cwd.join(name);
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create run directory {}: {e}", p.display())),
        }
    }
    Err(format!(
        "cannot create a run directory {base}-N in {}",
        cwd.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_names_become_safe() {
        assert_eq!(program_component("a.out"), "a.out");
        assert_eq!(program_component("my app$"), "my_app_");
        assert_eq!(program_component(""), "program");
    }

    #[test]
    fn timestamp_has_the_documented_shape() {
        let t = local_timestamp();
        assert_eq!(t.len(), 15, "{t}");
        assert_eq!(&t[8..9], "-");
    }
}
