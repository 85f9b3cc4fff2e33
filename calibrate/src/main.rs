//! `mpiover-calibrate`: measure tmax(function, p, bytes) on this machine and
//! write the profile (`mpiover-profile/1`, see `mpiover_common::profile`).
//!
//! ```text
//! mpirun -np P mpiover-calibrate [--quick] [--functions F,..] [--procs 2,4] [--sizes 1,1Ki]
//!        [--max-bytes 4Mi] [--sync window|barrier] [--min-samples 200] [--max-samples N]
//!        [--entry-budget S] [--time-budget S] [--pace S] [--q-max 0.99] [--alpha 0.05] [--seed N]
//!        [--resume] [--quiet] -o profile.json
//! ```
//!
//! The run: MPI init; gather the environment; synchronize clocks (window
//! sync); plan the jobs (pattern x p x bytes) and shuffle them with the seed;
//! rank 0 hands out the jobs one at a time (ranks not in a job's communicator
//! wait without spinning, so they leave the CPUs to the measuring ranks);
//! after every job rank 0 fits tmax for each of its entries and rewrites the
//! profile atomically, so a killed run can be continued with `--resume`
//! (SKaMPI §3.3: the job that was running when the run died is retried last).
//! Only `PMPI_*` is called.

mod advice;
mod args;
mod clock;
mod driver;
mod env;
mod grid;
mod load;
mod measure;
mod mpi;
mod output;
mod pattern;
mod plan;
mod progress;
mod protocol;
mod same_clock;
mod skew;
mod stat;

use clap::Parser;

use crate::args::Args;
use crate::driver::{run, Fail};

fn world_rank_from_env() -> i32 {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            // Every rank parses the same arguments: only rank 0 speaks.
            if world_rank_from_env() == 0 {
                let _ = e.print();
            }
            std::process::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let world = mpi::init();
    let me = mpi::rank(world);
    if me == 0 {
        // The tail model's test simulates its null distribution once per process (about half
        // a second): here, before any measurement, not inside the first stopping check while
        // the other ranks wait for its verdict.
        mpiover_stats::tail::null::warm();
    }
    let code = match run(&args, world) {
        Ok(()) => 0,
        Err(Fail(msg)) => {
            if me == 0 {
                eprintln!("mpiover-calibrate: error: {msg}");
            }
            2
        }
    };
    // SAFETY: `run` has returned, and with it every use of a communicator;
    // only the exit follows.
    unsafe { mpi::finalize() };
    std::process::exit(code);
}
