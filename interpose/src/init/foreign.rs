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

use mpiover_mpisys::*;

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

/// A symbol only the other family's library defines: Open MPI's world
/// communicator object, MPICH's version string.
fn other_family_marker() -> Option<&'static std::ffi::CStr> {
    match FLAVOR {
        "openmpi" => Some(c"MPII_Version_string"),
        "mpich" => Some(c"ompi_mpi_comm_world"),
        _ => None,
    }
}

/// Runs when the dynamic loader has loaded the program and its libraries,
/// before `main`: a program linked with the other MPI library would be
/// harmed by this build's wrappers before any check at `MPI_Init` could
/// help (MPICH's handles are 32-bit integers, Open MPI's 64-bit pointers:
/// an MPICH build's wrappers cut every Open MPI handle they forward). So
/// the process is started again, at once, with this library taken out of
/// `LD_PRELOAD`: the same program, arguments and environment, unprofiled,
/// and told so in one line. A library loaded later (`dlopen`, as mpi4py
/// does) is caught at `MPI_Init` instead ([`foreign_library`]).
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

extern "C" fn on_load() {
    on_private_stack(load_time_check);
}

extern "C" fn load_time_check() {
    crate::heap::protect_fork();
    if other_family_loaded() {
        restart_without_this_library("(it is linked with it)");
    }
}

/// The stack region a constructor runs on is where `main`'s frame will be,
/// and a program that reads a local before writing it (MPICH's test
/// `pt2pt/rqstatus` reads the `MPI_ERROR` field of a status that Open MPI's
/// `MPI_Request_get_status` leaves as it was, as the standard allows) then
/// sees what the constructor left there: it passed without the tool and
/// failed with it. So the load-time work (loader queries, several KB of
/// stack) runs on a stack of its own, mapped for it and unmapped after;
/// the program's stack sees only this function's small frame and the
/// context switch's return address. The contexts are statics, not locals,
/// for the same reason (a `ucontext_t` is about 1 KB). When a stack cannot
/// be mapped the work runs here, as before.
fn on_private_stack(work: extern "C" fn()) {
    use std::cell::UnsafeCell;
    struct Contexts(UnsafeCell<[libc::ucontext_t; 2]>);
    // SAFETY: used only by the load-time constructor, which the dynamic
    // loader runs once, on one thread, before `main`.
    unsafe impl Sync for Contexts {}
    // SAFETY: ucontext_t is plain data; all zero is a valid initial value.
    static CTX: Contexts = Contexts(UnsafeCell::new(unsafe { std::mem::zeroed() }));
    const STACK: usize = 256 << 10;
    // SAFETY: a new anonymous private mapping aliases nothing; the result is
    // checked before use.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    // SAFETY: the contexts are touched only here, by the one load-time call
    // (see `Contexts`), so this is the only reference.
    let ctx = unsafe { &mut *CTX.0.get() };
    let [main_ctx, work_ctx] = ctx;
    // SAFETY: getcontext fills the context it is given, a live static.
    if stack == libc::MAP_FAILED || unsafe { libc::getcontext(work_ctx) } != 0 {
        if stack != libc::MAP_FAILED {
            // SAFETY: unmaps the mapping made above, unused.
            unsafe { libc::munmap(stack, STACK) };
        }
        work();
        return;
    }
    work_ctx.uc_stack.ss_sp = stack;
    work_ctx.uc_stack.ss_size = STACK;
    work_ctx.uc_link = main_ctx;
    // SAFETY: `work_ctx` was filled by getcontext and given a stack of its
    // own (mapped above) and a successor context, both live until the
    // swap below returns; `work` takes no arguments, as the 0 says.
    unsafe { libc::makecontext(work_ctx, work, 0) };
    // SAFETY: `work_ctx` was prepared just above; `work` returns to
    // `main_ctx` through uc_link, which this swap saved.
    if unsafe { libc::swapcontext(main_ctx, work_ctx) } != 0 {
        work();
    }
    // SAFETY: `work` has returned, so nothing runs on the stack any more.
    unsafe { libc::munmap(stack, STACK) };
}

/// Called on entry of `MPI_Init*`, before the library's: an MPI library
/// loaded after start-up with its symbols kept local (mpi4py's extension
/// module, `dlopen`ed by Python) is not in the default scope, so this
/// build's `PMPI_*` would go to its own library while the program's
/// handles are the other's: nothing can forward correctly, and the process
/// is started again without the tool (what it did before `MPI_Init` is done
/// again: for an mpi4py program, its imports).
pub fn check_before_init() {
    if other_family_loaded() {
        restart_without_this_library(
            "(loaded after start-up: what the program did before MPI_Init runs again)",
        );
    }
}

/// Whether a loaded object, or one of its dependencies, defines the other
/// family's marker symbol. Objects are listed first and looked into after
/// (`dlopen` inside `dl_iterate_phdr`'s callback would take the loader's
/// lock twice).
fn other_family_loaded() -> bool {
    let Some(marker) = other_family_marker() else {
        return false;
    };
    // SAFETY: dlsym with the default scope and a NUL-terminated name.
    if !unsafe { libc::dlsym(libc::RTLD_DEFAULT, marker.as_ptr()) }.is_null() {
        return true;
    }
    /// The `dl_iterate_phdr` callback: every loaded object's name.
    ///
    /// # Safety
    /// Called by `dl_iterate_phdr` only, with `data` the `Vec<CString>`
    /// passed to it below.
    unsafe extern "C" fn collect(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info for the duration of the
        // call; `data` is the Vec handed to dl_iterate_phdr below.
        unsafe {
            let names = &mut *(data as *mut Vec<std::ffi::CString>);
            let name = (*info).dlpi_name;
            if !name.is_null() && *name != 0 {
                names.push(std::ffi::CStr::from_ptr(name).to_owned());
            }
        }
        0
    }
    let mut names: Vec<std::ffi::CString> = Vec::new();
    // SAFETY: the callback only reads the info it is given and pushes to
    // the Vec passed as data, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(collect), &mut names as *mut _ as *mut libc::c_void) };
    names.iter().any(|n| {
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already
        // loaded (taking a reference that dlclose gives back); dlsym on it
        // searches that object and its dependencies.
        unsafe {
            let h = libc::dlopen(n.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
            if h.is_null() {
                return false;
            }
            let found = !libc::dlsym(h, marker.as_ptr()).is_null();
            libc::dlclose(h);
            found
        }
    })
}

/// Execs `/proc/self/exe` with the same arguments and environment, less
/// this library in `LD_PRELOAD`; returns (and the check at `MPI_Init`
/// takes over) when that cannot be done. `why` ends the message.
fn restart_without_this_library(why: &str) {
    use std::ffi::{CString, OsStr};
    use std::os::unix::ffi::OsStrExt;
    let Some(preload) = std::env::var_os("LD_PRELOAD") else {
        return;
    };
    let is_ours = |s: &&[u8]| {
        let name = s.rsplit(|&c| c == b'/').next().unwrap_or(s);
        name == b"libmpiover.so"
    };
    let parts: Vec<&[u8]> = preload
        .as_bytes()
        .split(|&c| c == b':' || c == b' ')
        .filter(|s| !s.is_empty())
        .collect();
    if !parts.iter().any(&is_ours) {
        return; // linked in, not preloaded: nothing to take out
    }
    let kept: Vec<&[u8]> = parts.into_iter().filter(|p| !is_ours(p)).collect();
    let Ok(cmdline) = std::fs::read("/proc/self/cmdline") else {
        return;
    };
    let argv: Vec<CString> = cmdline
        .split(|&c| c == 0)
        .filter(|a| !a.is_empty())
        .filter_map(|a| CString::new(a).ok())
        .collect();
    if argv.is_empty() {
        return;
    }
    let mut envp: Vec<CString> = Vec::new();
    for (k, v) in std::env::vars_os() {
        let value: Vec<u8> = if k == OsStr::new("LD_PRELOAD") {
            kept.join(&b':')
        } else {
            v.as_bytes().to_vec()
        };
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(&value);
        if let Ok(c) = CString::new(kv) {
            envp.push(c);
        }
    }
    let quiet = std::env::var_os("MPIOVER_QUIET").is_some();
    if !quiet && launcher_rank_is_zero() {
        let runs_on = if FLAVOR == "openmpi" {
            "mpich"
        } else {
            "openmpi"
        };
        eprintln!(
            "mpiover: this libmpiover.so was built against {}, but the program runs on {} \
             {why}; the program is started again without the tool and runs unprofiled: {}",
            display(FLAVOR),
            display(runs_on),
            remedy(runs_on)
        );
    }
    let mut av: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    av.push(std::ptr::null());
    let mut ev: Vec<*const libc::c_char> = envp.iter().map(|e| e.as_ptr()).collect();
    ev.push(std::ptr::null());
    // SAFETY: NUL-terminated path, and NULL-terminated arrays of
    // NUL-terminated strings that outlive the call (it returns only on
    // failure).
    unsafe { libc::execve(c"/proc/self/exe".as_ptr(), av.as_ptr(), ev.as_ptr()) };
}

/// What to do instead, in words: the build to preload, from a source tree
/// or as an installed prefix (this library cannot tell which it came from).
fn remedy(runs_on: &str) -> String {
    let mpicc = if runs_on == "mpich" {
        "mpicc.mpich"
    } else {
        "mpicc.openmpi"
    };
    format!(
        "preload the build made against {} (in the source tree `MPICC={mpicc}{} cargo build \
         --release --workspace`, which `mpiover record` picks when it is built; \
         installed, a prefix of its own: `MPICC={mpicc} scripts/install PREFIX` and that \
         prefix's mpiover)",
        display(runs_on),
        if runs_on == "mpich" {
            " CARGO_TARGET_DIR=target/mpich"
        } else {
            ""
        },
    )
}

/// `Some(message)` when the library the program runs on is not of the family
/// this build was made for (`mpiover_mpisys::FLAVOR`). Safe to call before
/// or after `MPI_Init` (`MPI_Get_library_version` needs neither).
pub(crate) fn foreign_library() -> Option<String> {
    if FLAVOR == "unknown" {
        return None;
    }
    let text = mpiover_mpisys::mpit::library_version();
    if text.is_empty() {
        return None;
    }
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
         the tool stays off and the program runs unprofiled: {}",
        display(FLAVOR),
        display(runs_on),
        remedy(runs_on)
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
