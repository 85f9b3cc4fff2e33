//! What the wrapper generator needs to know beyond the event catalogue.
//!
//! The events themselves (their nature and the roles of their parameters)
//! are the rows of `mpiover_common::functions::CATALOGUE`: `build/main.rs`
//! generates an event wrapper for each from its roles, and a plain (counted)
//! wrapper for every other function of `mpi.h`. This file lists the
//! functions whose wrappers are not the plain ones: those written by hand,
//! those that must tell the runtime about a handle, and those it must not
//! wrap at all.

/// A function wrapped by hand; the generator skips it.
#[derive(Clone, Copy, Debug)]
pub struct HandWritten {
    pub name: &'static str,
    /// Whether its Fortran entry points are hand-written too (`src/fort.rs`);
    /// else the generator writes them as for any other function.
    pub fortran: bool,
}

const fn hand(name: &'static str, fortran: bool) -> HandWritten {
    HandWritten { name, fortran }
}

/// Functions wrapped by hand in `src/`: start-up and shut-down, the variadic
/// `MPI_Pcontrol` (`src/pcontrol.c`) and `MPI_Session_init`, whose C
/// wrapper starts the tool as `MPI_Init` does.
pub const HAND_WRITTEN: &[HandWritten] = &[
    hand("MPI_Init", true),
    hand("MPI_Init_thread", true),
    hand("MPI_Finalize", true),
    hand("MPI_Abort", true),
    hand("MPI_Pcontrol", true),
    hand("MPI_Session_init", false),
];

/// Whether the C wrapper of `name` is hand-written.
pub fn c_hand_written(name: &str) -> bool {
    HAND_WRITTEN.iter().any(|h| h.name == name)
}

/// Whether the Fortran entry points of `name` are hand-written.
pub fn fortran_hand_written(name: &str) -> bool {
    HAND_WRITTEN.iter().any(|h| h.name == name && h.fortran)
}

/// What a plain wrapper tells the runtime, because the runtime caches or
/// tracks the handle the call frees or cancels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// After the call: a communicator died (caches keyed by it are dropped).
    CommFreed,
    /// After the call: a datatype died.
    TypeFreed,
    /// Before the call: the request (first parameter) is forgotten.
    ForgetRequest,
    /// Before the call: the request's completion will check whether it was
    /// cancelled.
    CancelRequest,
}

impl Hook {
    /// The runtime function (`crate::rt::`) or guard method (`__g.`) called.
    pub fn call(self) -> &'static str {
        match self {
            Hook::CommFreed => "comm_freed",
            Hook::TypeFreed => "type_freed",
            Hook::ForgetRequest => "forget",
            Hook::CancelRequest => "cancelling",
        }
    }
}

pub const HOOKS: &[(&str, Hook)] = &[
    ("MPI_Comm_free", Hook::CommFreed),
    ("MPI_Comm_disconnect", Hook::CommFreed),
    ("MPI_Type_free", Hook::TypeFreed),
    ("MPI_Request_free", Hook::ForgetRequest),
    ("MPI_Cancel", Hook::CancelRequest),
];

/// The hook of `name`, if its wrapper has one.
pub fn hook(name: &str) -> Option<Hook> {
    HOOKS.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}

/// Declared by some `mpi.h` (MPICH 4) but defined only in the Fortran
/// library: a C wrapper would leave `PMPI_X` unresolved in a C program.
pub const NOT_IN_C_LIBRARY: &[&str] = &[
    "MPI_Status_c2f08",
    "MPI_Status_f082c",
    "MPI_Status_f082f",
    "MPI_Status_f2f08",
];
