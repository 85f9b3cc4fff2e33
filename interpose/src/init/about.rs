//! What the record says about the process: its command line, host, MPI
//! library and thread level.

use std::os::raw::c_int;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

/// argv from /proc/self/cmdline.
pub fn command_line() -> Vec<String> {
    match std::fs::read("/proc/self/cmdline") {
        Ok(b) => b
            .split(|&c| c == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buffer and its length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub(crate) fn library_version() -> String {
    let n = consts::max_library_version_string().max(256) as usize;
    let mut buf = vec![0u8; n + 1];
    let mut len: c_int = 0;
    // SAFETY: buffer of at least MPI_MAX_LIBRARY_VERSION_STRING bytes.
    let r = unsafe { PMPI_Get_library_version(buf.as_mut_ptr() as *mut libc::c_char, &mut len) };
    if r != 0 {
        return String::new();
    }
    let len = (len.max(0) as usize).min(n);
    String::from_utf8_lossy(buf.get(..len).unwrap_or(&[]))
        .trim_end_matches(['\0', '\n', ' '])
        .to_string()
}

/// The thread level MPI granted (after a plain `MPI_Init`: `single` by
/// default, but Open MPI's `OMPI_MPI_THREAD_LEVEL` and MPICH's
/// `MPIR_CVAR_DEFAULT_THREAD_LEVEL` can raise it).
pub(crate) fn query_thread() -> Option<c_int> {
    let mut l: c_int = 0;
    // SAFETY: MPI is initialized; out-pointer valid.
    (unsafe { PMPI_Query_thread(&mut l) } == 0).then_some(l)
}

pub(crate) fn level_name(level: Option<c_int>) -> String {
    match level {
        None => "single".into(),
        Some(l) if l == consts::thread_single() => "single".into(),
        Some(l) if l == consts::thread_funneled() => "funneled".into(),
        Some(l) if l == consts::thread_serialized() => "serialized".into(),
        Some(l) if l == consts::thread_multiple() => "multiple".into(),
        Some(l) => format!("unknown({l})"),
    }
}
