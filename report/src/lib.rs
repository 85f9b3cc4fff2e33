//! The report side of mpiover (the `mpiover` command), as a library so that
//! tests, examples and benchmarks can drive it.
//!
//! - [`analysis`]: run directory -> [`model::Report`] (streaming, parallel).
//! - [`model`]: the finished report, `mpiover-report/2` (the JSON schema).
//! - [`export`]: one exporter per format (text, JSON, CSV, HTML).
//! - [`diff`]: two runs compared site by site.
//! - [`signif`]: the binomial test and Benjamini-Hochberg.
//! - [`tmax`]: where tmax comes from when re-analysing against a profile.
//! - [`fit`], [`profile_cmd`] (with [`profile_check`], [`profile_show`]):
//!   `mpiover fit` and `mpiover profile ...`, here so that the tests run the
//!   commands' own code.
//! - `synth` (feature `synth`, on in this crate's tests): synthetic records
//!   for tests and the scale benchmark; not part of the command.
//!
//! Output goes through [`cli::write_out`], never `print!` (see there).
#![deny(clippy::print_stdout)]

pub mod analysis;
pub mod cli;
pub mod diff;
pub mod export;
pub mod fit;
pub mod model;
pub mod profile_check;
pub mod profile_cmd;
pub mod profile_show;
pub mod prose;
pub mod signif;
pub mod source;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
pub mod tmax;
pub mod units;
