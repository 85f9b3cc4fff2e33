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
    // Open MPI: (void *) 1; MPICH: (void *) -1.
    let expected = if ffi::FLAVOR == "mpich" {
        usize::MAX
    } else {
        1
    };
    assert_eq!(ffi::consts::in_place() as usize, expected);
    assert!(ffi::consts::status_ignore().is_null());
    assert_eq!(ffi::consts::any_source(), -1);
}
