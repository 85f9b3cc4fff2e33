//! The bindings link against the probed library and the shim's constants are
//! the library's (MPI_Get_library_version may be called before MPI_Init).
use mpiover_mpisys as ffi;

#[test]
fn library_version_names_the_probed_flavor() {
    let mut buf = vec![0u8; ffi::consts::max_library_version_string() as usize + 1];
    let mut len = 0;
    // SAFETY: `buf` holds MPI_MAX_LIBRARY_VERSION_STRING + 1 bytes, the most
    // the call writes, and `len` is a live local; no handle is needed.
    let rc = unsafe { ffi::PMPI_Get_library_version(buf.as_mut_ptr() as *mut _, &mut len) };
    assert_eq!(rc, ffi::consts::success());
    let text = String::from_utf8_lossy(&buf[..len as usize]).to_lowercase();
    match ffi::FLAVOR {
        "openmpi" => assert!(text.contains("open mpi"), "{text}"),
        "mpich" => assert!(text.contains("mpich"), "{text}"),
        other => panic!("unknown flavor {other}: {text}"),
    }
}

#[test]
fn sentinels_have_their_documented_values() {
    // The two libraries' mpi.h differ in all three: MPI_IN_PLACE is
    // (void *) 1 in Open MPI and (void *) -1 in MPICH, MPI_STATUS_IGNORE a
    // null pointer and (MPI_Status *) 1, MPI_ANY_SOURCE -1 and -2.
    let (in_place, status_ignore, any_source) = if ffi::FLAVOR == "mpich" {
        (usize::MAX, 1, -2)
    } else {
        (1, 0, -1)
    };
    assert_eq!(ffi::consts::in_place() as usize, in_place);
    assert_eq!(ffi::consts::status_ignore() as usize, status_ignore);
    assert_eq!(ffi::consts::any_source(), any_source);
}
