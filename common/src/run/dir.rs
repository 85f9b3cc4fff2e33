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

/// Local time as `YYYYmmdd-HHMMSS` (seconds since the epoch if the local
/// time cannot be had).
pub fn local_timestamp() -> String {
    // SAFETY: time(2) accepts a null pointer (it then only returns the time).
    let t = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: `tm` is plain integers (and a pointer to the zone name, which
    // may be null), so zero bytes are a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals; localtime_r is the
    // re-entrant form, writing only `tm`.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return format!("{t}");
    }
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
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
