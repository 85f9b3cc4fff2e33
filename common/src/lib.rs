//! What the three parts of mpiover share, kept free of MPI so that the report
//! builds and runs where no MPI is installed.
//!
//! - [`histogram`]: the log-scale duration histogram the interposer fills on
//!   every call and the report re-analyses against any tmax.
//! - [`record`]: the per-rank run record (`mpiover-record/1`), written by
//!   `libmpiover.so` and read by `mpiover report`.
//! - [`completion`]: which profile entries a key is looked up under, and the
//!   tmax of a completion composed from what it completed.
//! - [`demangle`]: readable C++ and Rust function names.
//! - [`functions`]: the catalogue of communication events and their class
//!   (what a wait in them means).
//! - [`profile`]: the calibrated tmax profile (`mpiover-profile/1`) and its lookup.
//! - [`run`]: loading and checking a run directory (all ranks' records), its
//!   default name ([`run::dir`]) and the job log that can stand for the
//!   records ([`run::joblog`]).
//! - [`rng`]: the deterministic generator of the synthetic records and the
//!   calibrator's run order.
//! - [`settings`]: the `MPIOVER_*` environment variables and their typed values.
//! - [`suggest`]: commands the tools suggest, as they can be pasted.
//! - [`one_line`]: error messages that quote a file kept on one line.

pub mod completion;
#[cfg(feature = "files")]
pub mod demangle;
pub mod functions;
pub mod histogram;
pub mod host;
pub mod one_line;
pub mod profile;
pub mod record;
pub mod rng;
#[cfg(feature = "files")]
pub mod run;
pub mod settings;
pub mod suggest;
pub mod timer;
