//! Raw MPI bindings for the MPI library found at build time (see
//! `build/main.rs`), plus the handles and constants that `mpi.h` defines as
//! macros, read from a C shim generated from `build/constants.rs`.
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

/// What `mpi.h` defines as macros (`MPI_COMM_WORLD`, `MPI_IN_PLACE`, ...),
/// one getter each, generated with the C shim that holds the values from the
/// table in `build/constants.rs`. Getters rather than statics, so that
/// callers need no `unsafe` for plain reads of immutable globals.
pub mod consts {
    include!(concat!(env!("OUT_DIR"), "/consts.rs"));
}
