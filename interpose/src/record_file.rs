//! A rank's record as its own file in the run directory, and what is said
//! when the directory cannot take it: a fault of the directory itself (full,
//! read-only, not allowed, gone) meets every rank, so rank 0 says it once for
//! all, and a job of a thousand ranks does not print a thousand lines.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use mpiover_common::record::{self, Record};

/// Set once a failure to write into the run directory was reported (by the
/// job log's writer or a record's): the next says nothing new.
static DIR_WARNED: AtomicBool = AtomicBool::new(false);

/// Writes `rec` to a temporary name and renames it into place; false (and
/// at most one warning for the job, see the module) on failure.
pub(crate) fn save(info: &crate::run::RunInfo, dir: &Path, rec: &Record) -> bool {
    let name = record::rank_file_name(info.head.rank);
    let tmp = dir.join(format!(".{name}.tmp-{}", info.head.pid));
    let res = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut f = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut f);
        serde_json::to_writer(&mut w, rec).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
        w.flush()?;
        drop(w);
        std::fs::rename(&tmp, dir.join(&name))
    })();
    let Err(e) = res else { return true };
    let _ = std::fs::remove_file(&tmp);
    let wide = dir_wide(&e);
    if info.head.rank == 0 || !wide {
        let others = if wide && info.head.ranks > 1 {
            "; the other ranks' records cannot be written there either (they do not say so again)"
        } else {
            ""
        };
        say_once(&format!(
            "cannot write {}: {e}{others}",
            dir.join(&name).display()
        ));
    }
    false
}

/// Whether a write error is the run directory's rather than this rank's: a
/// full or read-only file system, a quota, a directory not allowed or gone.
pub(crate) fn dir_wide(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ENOSPC
                | libc::EDQUOT
                | libc::EROFS
                | libc::EACCES
                | libc::EPERM
                | libc::ENOENT
                | libc::ENOTDIR
        )
    )
}

/// `mpiover: warning: <what>` on stderr, unless quiet or a fault of the
/// run directory was said already by this process.
pub(crate) fn say_once(what: &str) {
    if !crate::run::quiet() && !DIR_WARNED.swap(true, SeqCst) {
        crate::run::say_warning(what);
    }
}
