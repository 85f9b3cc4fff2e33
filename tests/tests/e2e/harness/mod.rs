//! Building the examples, finding `libmpiover.so` and `mpiover`, running
//! `mpirun` with a timeout, and reading the run records.
//!
//! Every MPI job of the suite runs under one global lock: the machine has two
//! cores and the attribution tests compare times against injected delays, so
//! jobs must not compete with each other.

mod examples;
mod job;
mod paths;
mod profiled;
mod records;
mod reported;
mod sites;

pub use examples::*;
pub use job::*;
pub use paths::*;
pub use profiled::*;
pub use records::*;
pub use reported::*;
pub use sites::*;
