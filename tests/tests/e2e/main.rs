//! End-to-end tests of mpiover: the example programs of `examples/` run under
//! `mpirun` with `libmpiover.so` preloaded, and their records (and the report
//! made from them) are checked for what a user would check.
//!
//! Needs Open MPI (`mpicc`, `mpirun`) and a built library and report:
//! `cargo build --release --workspace`, then `cargo test -p mpiover-e2e`.
//! `MPIOVER_LIB` / `MPIOVER_BIN` point the tests at another build.
//! Each test's files stay in `target/tmp/e2e/<test>/` for inspection.

mod harness;

mod accuracy;
mod attribution;
mod bytes_peers;
mod calibrated;
mod cross_host;
mod cross_host_calibration;
mod cxx;
mod diff;
mod estimates;
mod exports;
mod fake_cluster;
mod foreign;
mod fortran;
mod halo;
mod html_layout;
mod install;
mod joblog;
mod large_count;
mod merge_faults;
mod nonblocking;
mod pcontrol;
mod profile_mutants;
mod profile_use;
mod protocol;
mod python;
mod record_format;
mod report;
mod robustness;
mod root_cause_stretch;
mod root_causes;
mod srun;
mod stability;
mod suggestions;
mod tail_call;
mod threads;
mod transparency;
