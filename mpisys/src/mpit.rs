//! What the MPI library says about itself through the MPI tool information
//! interface (`MPI_T` control variables): read once, never written.

use std::ffi::CString;
use std::os::raw::{c_int, c_void};

use crate::{
    MPI_Datatype, MPI_T_cvar_handle, MPI_T_enum, PMPI_Get_library_version, PMPI_Query_thread,
    PMPI_T_cvar_get_index, PMPI_T_cvar_get_info, PMPI_T_cvar_handle_alloc, PMPI_T_cvar_handle_free,
    PMPI_T_cvar_read, PMPI_T_finalize, PMPI_T_init_thread, PMPI_Type_size,
};

/// Control variables that hold a library's eager limit between two ranks of
/// one host, per library and device, in the order asked (the first one the
/// library defines with a positive value wins). A library registers the
/// variables of every device it was built with, used or not (MPICH 4's ch4
/// build still answers `MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE`, 128 KiB, which
/// governs nothing there), so the device is read from the library's version
/// string first ([`eager_cvars`]).
///
/// - Open MPI: its shared-memory transport (4.x `vader`, 5.x `sm`).
/// - MPICH ch4: none. No control variable states its same-host limit: the
///   calibration measured 8255 B under MPICH 4.0.2 ch4:ucx on one host
///   (sends of 8256 B and more waited for the receiver), while the
///   variables that look like it say 131072 (`MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE`,
///   ch3's) and 69632 (`MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE`); the
///   report then uses the profile's measured limit, or says it assumed one.
/// - MPICH ch3: nemesis shared memory, then the generic eager limit (which
///   also governs shared memory when the first is left at its default, -1).
pub const OPEN_MPI_EAGER_CVARS: &[&str] = &["btl_vader_eager_limit", "btl_sm_eager_limit"];
pub const MPICH_CH4_EAGER_CVARS: &[&str] = &[];
pub const MPICH_CH3_EAGER_CVARS: &[&str] = &[
    "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ",
    "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE",
];

/// The control variables to ask, given the library's version string
/// (`MPI_Get_library_version`); every known one when the string says
/// neither library nor device.
pub fn eager_cvars(version: &str) -> Vec<&'static str> {
    match Library::of(version) {
        Library::OpenMpi => OPEN_MPI_EAGER_CVARS.to_vec(),
        Library::MpichCh4 => MPICH_CH4_EAGER_CVARS.to_vec(),
        Library::MpichCh3 => MPICH_CH3_EAGER_CVARS.to_vec(),
        Library::Unknown => [OPEN_MPI_EAGER_CVARS, MPICH_CH3_EAGER_CVARS].concat(),
    }
}

/// The library (and MPICH's device) a version string
/// (`MPI_Get_library_version`) names, as far as the control variables to
/// ask depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Library {
    OpenMpi,
    MpichCh4,
    MpichCh3,
    Unknown,
}

impl Library {
    fn of(version: &str) -> Library {
        if version.contains("Open MPI") {
            return Library::OpenMpi;
        }
        let device = version
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("MPICH Device:"))
            .map(str::trim);
        match device {
            Some(d) if d.starts_with("ch4") => Library::MpichCh4,
            Some(d) if d.starts_with("ch3") => Library::MpichCh3,
            _ => Library::Unknown,
        }
    }
}

/// The eager limit the library states (bytes) and the control variable that
/// said so, or `None` when it exposes none of [`eager_cvars`] (or no `MPI_T`).
/// Call between `MPI_Init` and `MPI_Finalize`, from one thread; uses only
/// `PMPI_T_*`, opens and closes its own `MPI_T` session.
///
/// `MPI_T` is initialized at the thread level MPI granted the process (what
/// `MPI_Query_thread` answers), and not at all when that cannot be asked,
/// because Open MPI 4.1's `MPI_T_init_thread` overwrites the process's
/// thread level with the one it is asked for. Asked for `MPI_THREAD_SINGLE`
/// after `MPI_Init_thread(MPI_THREAD_MULTIPLE)`, it made `MPI_Query_thread`
/// answer 0 and cleared the flag (`ompi_mpi_thread_multiple`) that its
/// ob1 transport reads in every blocking `MPI_Send` / `MPI_Recv` to decide
/// whether threads may be calling at once.
pub fn eager_limit() -> Option<(&'static str, u64)> {
    first_positive_cvar(&eager_cvars(&library_version()))
}

/// Control variables that hold a library's eager limit between two hosts, in
/// the order asked, as [`OPEN_MPI_EAGER_CVARS`] for one host.
///
/// - Open MPI: its TCP transport (`btl_tcp_eager_limit`, which counts the
///   headers sent with the first fragment: the largest eager payload is a
///   few dozen bytes less). Where the job runs over a network transport of
///   its own (UCX, InfiniBand), this variable governs nothing and the
///   measured limit is the one to trust.
/// - MPICH ch4: none (UCX's threshold is a UCX setting, not a control
///   variable).
/// - MPICH ch3: the generic eager limit.
pub const OPEN_MPI_CROSS_HOST_EAGER_CVARS: &[&str] = &["btl_tcp_eager_limit"];
pub const MPICH_CH3_CROSS_HOST_EAGER_CVARS: &[&str] = &["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"];

/// The control variables to ask for the limit between hosts, given the
/// library's version string; none when it says neither library nor device.
pub fn cross_host_eager_cvars(version: &str) -> Vec<&'static str> {
    match Library::of(version) {
        Library::OpenMpi => OPEN_MPI_CROSS_HOST_EAGER_CVARS.to_vec(),
        Library::MpichCh3 => MPICH_CH3_CROSS_HOST_EAGER_CVARS.to_vec(),
        Library::MpichCh4 | Library::Unknown => Vec::new(),
    }
}

/// The eager limit between hosts the library states, as [`eager_limit`]
/// for one host (same calling rules).
pub fn cross_host_eager_limit() -> Option<(&'static str, u64)> {
    first_positive_cvar(&cross_host_eager_cvars(&library_version()))
}

/// The first of `names` the library defines with a positive value, read in
/// an `MPI_T` session of its own (see [`eager_limit`] on the thread level).
fn first_positive_cvar(names: &[&'static str]) -> Option<(&'static str, u64)> {
    if names.is_empty() {
        return None;
    }
    let (mut granted, mut provided): (c_int, c_int) = (0, 0);
    // SAFETY: MPI_Query_thread only writes the valid out-pointer it is given.
    if unsafe { PMPI_Query_thread(&mut granted) } != 0 {
        return None;
    }
    // SAFETY: MPI_T may be initialized any number of times, each with a
    // matching finalize (below); `provided` is a valid out-pointer.
    if unsafe { PMPI_T_init_thread(granted, &mut provided) } != 0 {
        return None;
    }
    let mut found = None;
    for &name in names {
        // SAFETY: MPI_T was initialized just above and is finalized only
        // after the loop.
        if let Some(v) = unsafe { read_int_cvar(name) }.filter(|&v| v > 0) {
            found = Some((name, v as u64));
            break;
        }
    }
    // SAFETY: matches the successful MPI_T_init_thread above.
    unsafe { PMPI_T_finalize() };
    found
}

/// An integer control variable not bound to an object, by name.
///
/// # Safety
/// `MPI_T` is initialized.
unsafe fn read_int_cvar(name: &str) -> Option<i64> {
    let cname = CString::new(name).ok()?;
    let mut idx: c_int = 0;
    // SAFETY: `cname` is a NUL-terminated string alive for the call, `idx`
    // a valid out-pointer; MPI_T is initialized (the caller's contract).
    if unsafe { PMPI_T_cvar_get_index(cname.as_ptr(), &mut idx) } != 0 {
        return None;
    }
    let mut nbuf = [0 as std::os::raw::c_char; 256];
    let mut nlen: c_int = nbuf.len() as c_int;
    let (mut verbosity, mut bind, mut scope, mut dlen): (c_int, c_int, c_int, c_int) = (0, 0, 0, 0);
    // SAFETY: both handles are a pointer or an integer (per library), for
    // which zero bytes are a valid value; the call overwrites them.
    let (mut dt, mut et): (MPI_Datatype, MPI_T_enum) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: `nbuf` holds `nlen` chars, the most the call writes of the
    // name; the description is not asked for (null, with `dlen` a valid
    // out-pointer); every other argument is a valid out-pointer to a local.
    let rc = unsafe {
        PMPI_T_cvar_get_info(
            idx,
            nbuf.as_mut_ptr(),
            &mut nlen,
            &mut verbosity,
            &mut dt,
            &mut et,
            std::ptr::null_mut(),
            &mut dlen,
            &mut bind,
            &mut scope,
        )
    };
    if rc != 0 {
        return None;
    }
    let mut size: c_int = 0;
    // SAFETY: `dt` is the datatype handle the library just returned.
    if unsafe { PMPI_Type_size(dt, &mut size) } != 0 || !(size == 4 || size == 8) {
        return None;
    }
    // SAFETY: the handle is a pointer (or integer), valid when zero; the
    // call overwrites it.
    let mut h: MPI_T_cvar_handle = unsafe { std::mem::zeroed() };
    let mut count: c_int = 0;
    // SAFETY: a variable bound to no object takes a null object pointer;
    // `h` and `count` are valid out-pointers.
    if unsafe { PMPI_T_cvar_handle_alloc(idx, std::ptr::null_mut(), &mut h, &mut count) } != 0 {
        return None;
    }
    let mut buf = [0u8; 16];
    // SAFETY: one element of 4 or 8 bytes (checked above) fits the 16-byte
    // buffer; `h` is the handle just allocated.
    let ok = count == 1 && unsafe { PMPI_T_cvar_read(h, buf.as_mut_ptr() as *mut c_void) } == 0;
    // SAFETY: frees the handle allocated above, once.
    unsafe { PMPI_T_cvar_handle_free(&mut h) };
    if !ok {
        return None;
    }
    Some(if size == 4 {
        i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as i64
    } else {
        i64::from_ne_bytes([
            buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7],
        ])
    })
}

/// The version string (`MPI_Get_library_version`) of the library the
/// process's `PMPI_*` calls reach, empty when it cannot be read. The buffer
/// fits any library's string, not only the one this crate was built for
/// (the call needs no handle, and is valid before `MPI_Init`).
pub fn library_version() -> String {
    // MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256.
    let mut buf = vec![0u8; 16384];
    let mut len: c_int = 0;
    // SAFETY: a buffer larger than any library's version string, a valid
    // out-pointer; the call takes no handle.
    if unsafe { PMPI_Get_library_version(buf.as_mut_ptr() as *mut std::os::raw::c_char, &mut len) }
        != 0
    {
        return String::new();
    }
    buf.truncate(len.clamp(0, 16384) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_picks_the_control_variables() {
        assert_eq!(
            eager_cvars("Open MPI v4.1.4, package: Debian OpenMPI"),
            OPEN_MPI_EAGER_CVARS
        );
        let ch4 = "MPICH Version:    \t4.0.2\nMPICH Device:    \tch4:ucx\n";
        assert_eq!(eager_cvars(ch4), MPICH_CH4_EAGER_CVARS);
        assert!(!eager_cvars(ch4).contains(&"MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"));
        let ch3 = "MPICH Version:\t3.4.1\nMPICH Device:\tch3:nemesis\n";
        assert_eq!(eager_cvars(ch3), MPICH_CH3_EAGER_CVARS);
        assert_eq!(eager_cvars("Some MPI 1.0").len(), 4);
        assert_eq!(
            cross_host_eager_cvars("Open MPI v4.1.4, package: Debian OpenMPI"),
            ["btl_tcp_eager_limit"]
        );
        assert!(cross_host_eager_cvars(ch4).is_empty());
        assert_eq!(
            cross_host_eager_cvars(ch3),
            ["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"]
        );
    }
}
