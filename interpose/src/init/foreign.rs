//! Whether the program runs on the MPI library this build was made for.
//!
//! `libmpiover.so` is compiled against one `mpi.h`: Open MPI's handles are
//! addresses of its globals, MPICH's are integers. Preloaded into a program
//! of the other library, its `PMPI_*` calls resolve to the program's library
//! (the program's own dependencies come first in the lookup order) while its
//! handles are those of the library it was built for, so the first call the
//! tool makes with one (`MPI_Comm_rank(MPI_COMM_WORLD)`) aborts the job
//! ("Invalid communicator" under MPICH). The check asks the library the
//! program actually runs on for its version string, which needs no handle.

use std::os::raw::c_int;

use mpiover_mpisys::*;

/// The largest `MPI_MAX_LIBRARY_VERSION_STRING` of the libraries we know
/// (MPICH: 8192, Open MPI: 256), doubled: the buffer must fit the program's
/// library, not the one this build's header describes.
const VERSION_BUF: usize = 16384;

/// Which family a library version string belongs to.
fn family(version: &str) -> &'static str {
    if version.contains("Open MPI") {
        "openmpi"
    } else {
        // MPICH and the libraries of its ABI (Intel MPI, MVAPICH, Cray MPICH).
        "mpich"
    }
}

fn display(flavor: &str) -> &'static str {
    match flavor {
        "openmpi" => "Open MPI",
        "mpich" => "MPICH",
        _ => "another MPI",
    }
}

/// `Some(message)` when the library the program runs on is not of the family
/// this build was made for (`mpiover_mpisys::FLAVOR`). Safe to call before
/// or after `MPI_Init` (`MPI_Get_library_version` needs neither).
pub(crate) fn foreign_library() -> Option<String> {
    if FLAVOR == "unknown" {
        return None;
    }
    let mut buf = vec![0u8; VERSION_BUF];
    let mut len: c_int = 0;
    // SAFETY: a buffer larger than any library's MPI_MAX_LIBRARY_VERSION_STRING
    // and a valid out-pointer; the call takes no handle.
    let r = unsafe { PMPI_Get_library_version(buf.as_mut_ptr() as *mut libc::c_char, &mut len) };
    if r != 0 {
        return None;
    }
    let n = (len.max(0) as usize).min(VERSION_BUF);
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let runs_on = family(&text);
    if runs_on == FLAVOR {
        return None;
    }
    let first = text
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Some(format!(
        "this libmpiover.so was built against {}, but the program runs on {} ({first}); \
         the tool stays off and the program runs unprofiled: preload the build made \
         against {} (`MPICC={} cargo build --release -p mpiover-interpose`; \
         `mpiover record` picks it when it is built)",
        display(FLAVOR),
        display(runs_on),
        display(runs_on),
        if runs_on == "mpich" {
            "mpicc.mpich CARGO_TARGET_DIR=target/mpich"
        } else {
            "mpicc"
        },
    ))
}

/// Rank 0 of the job, from the launcher's environment (the tool cannot ask
/// MPI: its handles are not the program's library's). Unknown counts as 0,
/// so that the message is never lost.
pub(crate) fn launcher_rank_is_zero() -> bool {
    let rank = [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok());
    match rank {
        Some(r) => r.trim() == "0",
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_strings_are_told_apart() {
        assert_eq!(
            family("Open MPI v4.1.4, package: Debian OpenMPI"),
            "openmpi"
        );
        assert_eq!(
            family("MPICH Version:      4.0.2\nMPICH Release date: ..."),
            "mpich"
        );
        assert_eq!(
            family("Intel(R) MPI Library 2021.10 for Linux* OS"),
            "mpich"
        );
    }
}
