//! End-to-end tests of `mpiover-calibrate` under `mpirun` (skipped, with a
//! message, when `mpirun` is not installed, except under `CI`, where that
//! fails). Each runs a reduced grid so that it takes seconds; they run one at
//! a time (one lock), since the machine has few cores.

mod harness;
mod profile;
mod runs;
mod windows;
