//! What the MPI library says about itself through the MPI tool information
//! interface (`MPI_T` control variables): read once, never written.

use std::ffi::CString;
use std::os::raw::{c_int, c_void};

use crate::*;

/// Control variables that hold a library's eager limit between two ranks of
/// one host, in the order asked (the first one the library defines with a
/// positive value wins): Open MPI's shared-memory transports (4.x `vader`,
/// 5.x `sm`), MPICH's nemesis shared memory, then its generic eager limit
/// (which also governs shared memory when the first is left at its default,
/// -1), and the ch4 OFI netmod's.
pub const EAGER_CVARS: &[&str] = &[
    "btl_vader_eager_limit",
    "btl_sm_eager_limit",
    "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ",
    "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE",
    "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE",
];

/// The eager limit the library states (bytes) and the control variable that
/// said so, or `None` when it exposes none of [`EAGER_CVARS`] (or no `MPI_T`).
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
    let (mut granted, mut provided): (c_int, c_int) = (0, 0);
    // SAFETY: MPI_T may be initialized any number of times, with a matching
    // finalize; every out-pointer below is a valid local.
    unsafe {
        if PMPI_Query_thread(&mut granted) != 0 {
            return None;
        }
        if PMPI_T_init_thread(granted, &mut provided) != 0 {
            return None;
        }
        let mut found = None;
        for &name in EAGER_CVARS {
            if let Some(v) = read_int_cvar(name).filter(|&v| v > 0) {
                found = Some((name, v as u64));
                break;
            }
        }
        PMPI_T_finalize();
        found
    }
}

/// An integer control variable not bound to an object, by name.
///
/// # Safety
/// `MPI_T` is initialized.
unsafe fn read_int_cvar(name: &str) -> Option<i64> {
    let cname = CString::new(name).ok()?;
    let mut idx: c_int = 0;
    if PMPI_T_cvar_get_index(cname.as_ptr(), &mut idx) != 0 {
        return None;
    }
    let mut nbuf = [0 as std::os::raw::c_char; 256];
    let mut nlen: c_int = nbuf.len() as c_int;
    let (mut verbosity, mut bind, mut scope, mut dlen): (c_int, c_int, c_int, c_int) = (0, 0, 0, 0);
    let mut dt: MPI_Datatype = std::mem::zeroed();
    let mut et: MPI_T_enum = std::mem::zeroed();
    if PMPI_T_cvar_get_info(
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
    ) != 0
    {
        return None;
    }
    let mut size: c_int = 0;
    if PMPI_Type_size(dt, &mut size) != 0 || !(size == 4 || size == 8) {
        return None;
    }
    let mut h: MPI_T_cvar_handle = std::mem::zeroed();
    let mut count: c_int = 0;
    if PMPI_T_cvar_handle_alloc(idx, std::ptr::null_mut(), &mut h, &mut count) != 0 {
        return None;
    }
    let mut buf = [0u8; 16];
    let ok = count == 1 && PMPI_T_cvar_read(h, buf.as_mut_ptr() as *mut c_void) == 0;
    PMPI_T_cvar_handle_free(&mut h);
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
