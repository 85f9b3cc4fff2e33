//! Raw MPI bindings for the MPI library found at build time (see `build.rs`),
//! plus the handles and constants that `mpi.h` defines as macros, read from a
//! C shim (`src/shim.c`).
//!
//! Everything here is `unsafe` FFI. Code that must not re-enter the profiler's
//! own wrappers (the interposer, the calibrator) calls only `PMPI_*`.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all)]

mod bindings {
    #![allow(
        non_upper_case_globals,
        non_camel_case_types,
        non_snake_case,
        dead_code
    )]
    #![allow(clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}
pub use bindings::*;

pub mod mpit;

/// `openmpi`, `mpich` or `unknown`: the library this crate was built against.
pub const FLAVOR: &str = env!("MPIOVER_MPI_FLAVOR");
/// How the library was found (`mpicc -show`, `pkg-config NAME`).
pub const PROBE: &str = env!("MPIOVER_MPI_PROBE");

/// The shim's constants, read through these accessors so that callers do not
/// need `unsafe` for plain reads of immutable globals.
pub mod consts {
    use super::*;
    extern "C" {
        static MPIOVER_COMM_WORLD: MPI_Comm;
        static MPIOVER_COMM_SELF: MPI_Comm;
        static MPIOVER_COMM_NULL: MPI_Comm;
        static MPIOVER_GROUP_NULL: MPI_Group;
        static MPIOVER_DATATYPE_NULL: MPI_Datatype;
        static MPIOVER_BYTE: MPI_Datatype;
        static MPIOVER_CHAR: MPI_Datatype;
        static MPIOVER_INT: MPI_Datatype;
        static MPIOVER_DOUBLE: MPI_Datatype;
        static MPIOVER_LONG_LONG: MPI_Datatype;
        static MPIOVER_UNSIGNED_LONG_LONG: MPI_Datatype;
        static MPIOVER_UINT8_T: MPI_Datatype;
        static MPIOVER_SUM: MPI_Op;
        static MPIOVER_MAX: MPI_Op;
        static MPIOVER_MIN: MPI_Op;
        static MPIOVER_LOR: MPI_Op;
        static MPIOVER_REQUEST_NULL: MPI_Request;
        static MPIOVER_INFO_NULL: MPI_Info;
        static MPIOVER_ERRORS_RETURN: MPI_Errhandler;
        static MPIOVER_IN_PLACE: *mut core::ffi::c_void;
        static MPIOVER_BOTTOM: *mut core::ffi::c_void;
        static MPIOVER_STATUS_IGNORE: *mut MPI_Status;
        static MPIOVER_STATUSES_IGNORE: *mut MPI_Status;
        static MPIOVER_ANY_TAG: i32;
        static MPIOVER_ROOT: i32;
        static MPIOVER_SUCCESS: i32;
        static MPIOVER_IDENT: i32;
        static MPIOVER_MAX_PROCESSOR_NAME: i32;
        static MPIOVER_MAX_LIBRARY_VERSION_STRING: i32;
        static MPIOVER_THREAD_SINGLE: i32;
        static MPIOVER_THREAD_FUNNELED: i32;
        static MPIOVER_THREAD_SERIALIZED: i32;
        static MPIOVER_THREAD_MULTIPLE: i32;
        static MPIOVER_COMM_TYPE_SHARED: i32;
        static MPIOVER_GRAPH: i32;
        static MPIOVER_CART: i32;
        static MPIOVER_DIST_GRAPH: i32;
    }
    macro_rules! getters {
        ($($f:ident => $s:ident : $t:ty),* $(,)?) => {
            $(
                #[inline(always)]
                pub fn $f() -> $t {
                    // SAFETY: `src/shim.c` defines each of these as a
                    // `const` C global of this type, initialized from mpi.h's
                    // macro when the library is loaded and never written, so
                    // a read races with nothing.
                    unsafe { $s }
                }
            )*
        };
    }
    getters! {
        comm_world => MPIOVER_COMM_WORLD: MPI_Comm,
        comm_self => MPIOVER_COMM_SELF: MPI_Comm,
        comm_null => MPIOVER_COMM_NULL: MPI_Comm,
        group_null => MPIOVER_GROUP_NULL: MPI_Group,
        datatype_null => MPIOVER_DATATYPE_NULL: MPI_Datatype,
        byte => MPIOVER_BYTE: MPI_Datatype,
        char => MPIOVER_CHAR: MPI_Datatype,
        int => MPIOVER_INT: MPI_Datatype,
        double => MPIOVER_DOUBLE: MPI_Datatype,
        long_long => MPIOVER_LONG_LONG: MPI_Datatype,
        unsigned_long_long => MPIOVER_UNSIGNED_LONG_LONG: MPI_Datatype,
        uint8_t => MPIOVER_UINT8_T: MPI_Datatype,
        op_sum => MPIOVER_SUM: MPI_Op,
        op_max => MPIOVER_MAX: MPI_Op,
        op_min => MPIOVER_MIN: MPI_Op,
        op_lor => MPIOVER_LOR: MPI_Op,
        request_null => MPIOVER_REQUEST_NULL: MPI_Request,
        info_null => MPIOVER_INFO_NULL: MPI_Info,
        errors_return => MPIOVER_ERRORS_RETURN: MPI_Errhandler,
        in_place => MPIOVER_IN_PLACE: *mut core::ffi::c_void,
        bottom => MPIOVER_BOTTOM: *mut core::ffi::c_void,
        status_ignore => MPIOVER_STATUS_IGNORE: *mut MPI_Status,
        statuses_ignore => MPIOVER_STATUSES_IGNORE: *mut MPI_Status,
        any_tag => MPIOVER_ANY_TAG: i32,
        root => MPIOVER_ROOT: i32,
        success => MPIOVER_SUCCESS: i32,
        ident => MPIOVER_IDENT: i32,
        max_processor_name => MPIOVER_MAX_PROCESSOR_NAME: i32,
        max_library_version_string => MPIOVER_MAX_LIBRARY_VERSION_STRING: i32,
        thread_single => MPIOVER_THREAD_SINGLE: i32,
        thread_funneled => MPIOVER_THREAD_FUNNELED: i32,
        thread_serialized => MPIOVER_THREAD_SERIALIZED: i32,
        thread_multiple => MPIOVER_THREAD_MULTIPLE: i32,
        comm_type_shared => MPIOVER_COMM_TYPE_SHARED: i32,
        graph => MPIOVER_GRAPH: i32,
        cart => MPIOVER_CART: i32,
        dist_graph => MPIOVER_DIST_GRAPH: i32,
    }

    // Plain integers in every mpi.h, so bindgen has them as constants: the
    // hot path compares arguments with them on every call, and a constant
    // is an immediate operand where a shim global is two loads.
    /// `MPI_ANY_SOURCE`.
    #[inline(always)]
    pub const fn any_source() -> i32 {
        MPI_ANY_SOURCE as i32
    }
    /// `MPI_PROC_NULL`.
    #[inline(always)]
    pub const fn proc_null() -> i32 {
        MPI_PROC_NULL as i32
    }
    /// `MPI_UNDEFINED`.
    #[inline(always)]
    pub const fn undefined() -> i32 {
        MPI_UNDEFINED as i32
    }
}
