//! Running the calibration, in steps every rank takes together; rank 0
//! decides (the job order, when to stop) and writes the profile:
//!
//! 1. [`Driver::start`] ([`setup`]): the plan, the environment, the
//!    communicators, the profile (new or resumed) and its seed, the clock
//!    synchronization, the measurement settings.
//! 2. [`Driver::measure_protocol`]: the eager limit of each pair kind.
//! 3. [`Driver::prepare_queue`] ([`jobs`]): the jobs still to measure, in
//!    the seeded order.
//! 4. [`Driver::run_jobs`]: one job at a time as rank 0 commands
//!    ([`command`]); after each, the profile is rewritten.
//! 5. [`Driver::finish`] ([`finish`]): every rank's clock model, what the
//!    budget left out, the closing messages.

mod command;
mod finish;
mod jobs;
mod setup;
mod topology;

use mpiover_common::profile::{Profile, Protocol};

use crate::args::Args;
use crate::clock::Clock;
use crate::grid::Job;
use crate::measure::Settings;
use crate::mpi;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::stat::StatOpts;
use topology::Topology;

/// A run that cannot go on; rank 0 prints the message.
pub(crate) struct Fail(pub(crate) String);

/// The whole calibration on `world`.
pub(crate) fn run(a: &Args, world: mpi::Comm) -> Result<(), Fail> {
    let mut d = Driver::start(a, world)?;
    d.measure_protocol();
    d.prepare_queue()?;
    d.run_jobs()?;
    d.finish()
}

/// The state the steps share.
struct Driver<'a> {
    a: &'a Args,
    world: mpi::Comm,
    me: i32,
    world_size: u32,
    /// When the run started (the interposer's raw clock).
    t_start: f64,
    plan: Plan,
    clock: Clock,
    topo: Topology,
    jobs: Vec<Job>,
    /// Rank 0's profile; `None` on every other rank.
    profile: Option<Profile>,
    seed: u64,
    stats: StatOpts,
    settings: Settings,
    /// The measured eager limits, until the profile takes them.
    protocol: Option<Protocol>,
    /// Rank 0: the jobs to measure, in order, and how far it got.
    queue: Vec<usize>,
    qpos: usize,
    /// Rank 0: jobs queued a second time because an entry got no valid
    /// sample (each is re-measured once, at the end of the queue).
    retried: std::collections::HashSet<usize>,
    /// Jobs commanded so far (every rank counts them; the test-only delay's
    /// `jobs` limit reads it).
    jobs_started: u64,
    /// `--rounds`: jobs per round in the queue (the queue holds the rounds
    /// one after the other), the rounds each job has had so far (every
    /// rank), and rank 0's outcomes of the rounds before a job's last.
    round_len: usize,
    rounds_done: std::collections::HashMap<usize, u32>,
    partial: std::collections::HashMap<usize, crate::measure::Outcome>,
    /// Rank 0: raw clock time the first round started.
    rounds_t0: Option<f64>,
    /// Rank 0: the progress bar and the jobs done.
    progress: Option<(Progress, usize)>,
    run_id: String,
    /// Wall time of the earlier `--resume` segments of this run.
    prev_wall: f64,
    /// The host's CPU counters (rank 0) and this rank's CPU time when the
    /// run started: how busy the host was is judged against them at the end.
    load_start: crate::load::Reading,
    cpu_start_s: f64,
}
