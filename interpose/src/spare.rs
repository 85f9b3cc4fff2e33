//! The record kept ready while the job log is merged.
//!
//! During the merge a rank waits in MPI for its peers; when one of them
//! dies, the launcher ends the job: under Open MPI, SIGCONT, a second,
//! SIGTERM, and SIGKILL once the grace period (`odls_base_sigkill_timeout`,
//! 1 s) is over, or as soon as the first rank has exited: the launcher's
//! `sleep` is cut short by that rank's SIGCHLD, and the remaining part of a
//! second rounds to zero (traced: SIGKILL 4 ms after SIGTERM). MPICH's
//! Hydra sends SIGKILL alone. A rank that writes its record only in its
//! SIGTERM handler therefore races every other rank, and on a busy machine
//! loses (measured: 1 to 3 of 7 survivors' records lost in 6 runs of 8
//! ranks on 2 cores). So the record is written *before* the merge starts, complete up
//! to `MPI_Finalize` (its sites located, not yet resolved: the report
//! resolves them from the modules), with `finished` = `merge`; once the log
//! is written every rank removes its file. A job that dies during the merge
//! leaves one file per rank that reached it.
//!
//! Above [`FILE_MAX_RANKS`] ranks the file is not written (a parallel file
//! system pays for a create and an unlink per rank); the bytes are kept in
//! memory, and the signal handler writes them with system calls only (open,
//! write, close, rename: async-signal-safe, nothing allocated, no lock
//! taken), best effort.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering::SeqCst};

use mpiover_common::record::{self, Record};

/// Ranks up to which the record is written to its file before the merge.
pub(crate) const FILE_MAX_RANKS: u32 = 16_384;

use mpiover_common::record::FINISHED_AT_MERGE as FINISHED;

/// A record serialized for its rank file.
pub(crate) struct Spare {
    tmp: CString,
    dst: CString,
    bytes: Vec<u8>,
    /// Written to its file already (before the merge).
    on_disk: bool,
}

static SPARE: AtomicPtr<Spare> = AtomicPtr::new(std::ptr::null_mut());

impl Spare {
    /// `rec` serialized for rank file `dir/rank-NNNNNN.json`; None when it
    /// cannot be.
    pub(crate) fn of(mut rec: Record, dir: &Path, rank: u32, pid: u32) -> Option<Spare> {
        rec.finished = FINISHED.to_string();
        let mut bytes = serde_json::to_vec(&rec).ok()?;
        bytes.push(b'\n');
        let name = record::rank_file_name(rank);
        let path = |p: &Path| CString::new(p.as_os_str().as_bytes()).ok();
        Some(Spare {
            tmp: path(&dir.join(format!(".{name}.tmp-{pid}")))?,
            dst: path(&dir.join(&name))?,
            bytes,
            on_disk: false,
        })
    }

    /// Writes the file now; false (and the bytes kept for a signal) when
    /// it cannot be.
    pub(crate) fn write_now(&mut self) -> bool {
        self.on_disk = write_file(self);
        self.on_disk
    }
}

/// Keeps `spare` for a signal until [`take`] (the merge is over).
pub(crate) fn keep(spare: Spare) {
    // A previous one is leaked, not freed: a handler may still use it.
    let _ = SPARE.swap(Box::into_raw(Box::new(spare)), SeqCst);
}

/// The merge is over: the spare is no longer the handler's to write. With
/// `remove`, its file is removed too (the job log holds the rank). Leaked on
/// purpose: a handler on another thread may hold it; once per process.
pub(crate) fn take(remove: bool) {
    let p = SPARE.swap(std::ptr::null_mut(), SeqCst);
    if remove && !p.is_null() {
        // SAFETY: from Box::into_raw in `keep`, never freed.
        let s = unsafe { &*p };
        if s.on_disk {
            // SAFETY: a NUL-terminated path owned by `s`.
            unsafe { libc::unlink(s.dst.as_ptr()) };
        }
    }
}

/// In a signal handler during the merge: makes sure the spare record is in
/// its file, once. False when no merge runs (or the write failed).
/// Async-signal-safe: system calls only.
pub(crate) fn write_in_handler() -> bool {
    let p = SPARE.swap(std::ptr::null_mut(), SeqCst);
    if p.is_null() {
        return false;
    }
    // SAFETY: `p` came from Box::into_raw in `keep` and is never freed; the
    // swap made this call its only user.
    let s = unsafe { &*p };
    s.on_disk || write_file(s)
}

/// The bytes to the temporary name, renamed into place: a reader never sees
/// half a file. System calls only.
fn write_file(s: &Spare) -> bool {
    // SAFETY: both paths are NUL-terminated C strings owned by `s`.
    let fd = unsafe {
        libc::open(
            s.tmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return false;
    }
    let ok = write_all(fd, &s.bytes);
    // SAFETY: our own descriptor, closed once.
    let closed = unsafe { libc::close(fd) } == 0;
    // SAFETY: as above.
    if ok && closed && unsafe { libc::rename(s.tmp.as_ptr(), s.dst.as_ptr()) } == 0 {
        return true;
    }
    // SAFETY: as above.
    unsafe { libc::unlink(s.tmp.as_ptr()) };
    false
}

fn write_all(fd: libc::c_int, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        // SAFETY: `b` is a live slice of `b.len()` bytes.
        let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        if n == 0 {
            return false;
        }
        b = &b[n as usize..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_record() -> Record {
        serde_json::from_str(include_str!(
            "../../report/tests/fixtures/run-online/rank-000001.json"
        ))
        .expect("a real record")
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mpiover-spare-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    /// What is written (before the merge or in the handler) is the record,
    /// finished at the merge; once written, the handler does nothing more,
    /// and the end of the merge removes the file when the log holds it.
    #[test]
    fn the_spare_record_is_the_record_finished_at_the_merge() {
        let dir = scratch("file");
        let rec = a_record();
        let path = dir.join(record::rank_file_name(rec.rank));
        let mut spare = Spare::of(rec.clone(), &dir, rec.rank, 42).expect("serializes");
        assert!(spare.write_now());
        let back: Record =
            serde_json::from_slice(&std::fs::read(&path).expect("written")).expect("a record");
        assert_eq!(back.finished, FINISHED);
        assert_eq!(back.entries.len(), rec.entries.len());
        keep(spare);
        std::fs::remove_file(&path).expect("rm");
        assert!(write_in_handler(), "on disk already");
        assert!(!path.exists(), "not written twice");
        assert!(!write_in_handler(), "taken");

        // Kept in memory only: the handler writes it; the merge's end
        // removes only a file it wrote itself.
        keep(Spare::of(rec.clone(), &dir, rec.rank, 42).expect("serializes"));
        assert!(write_in_handler());
        assert!(path.exists());
        keep(Spare::of(rec.clone(), &dir, rec.rank, 42).expect("serializes"));
        take(true);
        assert!(path.exists());
        let mut spare = Spare::of(rec.clone(), &dir, rec.rank, 42).expect("serializes");
        assert!(spare.write_now());
        keep(spare);
        take(true);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
