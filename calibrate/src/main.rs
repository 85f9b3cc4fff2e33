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

mod clock;
mod env;
mod grid;
mod measure;
mod mpi;
mod pattern;
mod progress;
mod protocol;
mod stat;

use std::collections::HashSet;
use std::path::PathBuf;

use clap::Parser;
use mpiover_common::profile::{
    iso8601_utc, unix_now, ClockSync, Entry, Key, Method, Profile, RunInfo, Skipped, WindowRule,
};

use crate::clock::Clock;
use crate::grid::{Job, Pair};
use crate::measure::{Settings, Sync};
use crate::pattern::Kind;
use crate::stat::StatOpts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SyncArg {
    Window,
    Barrier,
}

/// Measure the machine's tmax(function, p, bytes) profile (run under mpirun).
#[derive(Debug, Parser)]
#[command(name = "mpiover-calibrate", version)]
struct Args {
    /// Profile to write (rewritten after every entry).
    #[arg(short, long)]
    output: PathBuf,
    /// Continue an interrupted run that wrote OUTPUT (same options).
    #[arg(long)]
    resume: bool,
    /// Reduced grid: every function, p = 2, 3, 4 and the powers of two up to the world size and
    /// the world size itself, sizes 1, 1000, 100000; at most 400 samples and 1.5 s per entry,
    /// paced to 90 s (--pace). No run budget: it measures the whole grid (20-40 s with -np 4 on
    /// an idle 2-core machine).
    #[arg(long)]
    quick: bool,
    /// Functions to measure (comma-separated, e.g. MPI_Send,Bcast); default all.
    #[arg(long, value_delimiter = ',')]
    functions: Vec<String>,
    /// More process counts for the collectives, added to the default ones (2, 3, 4, 6, 8, 12,
    /// ... up to the world size; --quick: 2, 3, 4), the powers of two up to the world size and
    /// the world size, which are always measured.
    #[arg(long, value_delimiter = ',')]
    procs: Vec<u32>,
    /// Message sizes in bytes (suffixes k, M, Ki, Mi); default 1, 10, ..., 100, 200, ... up to --max-bytes.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
    /// Largest size (default 4Mi).
    #[arg(long)]
    max_bytes: Option<String>,
    /// How calls are started together.
    #[arg(long, value_enum, default_value = "window")]
    sync: SyncArg,
    /// Minimum kept samples per entry before the stopping rule may end it (the entry and run
    /// budgets can still end it earlier: the entry's `stop` says so).
    #[arg(long, default_value_t = 200)]
    min_samples: u64,
    /// Maximum kept samples per entry (default 1000, --quick 400).
    #[arg(long)]
    max_samples: Option<u64>,
    /// Relative tolerance of the stopping rule (tmax stable within this).
    #[arg(long, default_value_t = 0.05)]
    rel_tol: f64,
    /// Time budget of one entry, seconds (default 30, --quick 1.5).
    #[arg(long)]
    entry_budget: Option<f64>,
    /// Time budget of the whole run, seconds (default none), counted over --resume segments;
    /// jobs not started by then are skipped and listed in the profile (and said on stderr).
    #[arg(long)]
    time_budget: Option<f64>,
    /// Target wall time of the run, seconds: each job's budget is at most its share of the time
    /// left, (S - elapsed) / jobs left (but at least 0.1 s), so that a busy machine makes the
    /// entries smaller (fewer samples, `stop` = entry_budget) instead of the run longer
    /// (default none, --quick 90).
    #[arg(long)]
    pace: Option<f64>,
    /// Quantile of the error model that defines tmax (0.8 <= q < 1).
    #[arg(long, default_value_t = 0.99)]
    q_max: f64,
    /// Significance level of the chi-square test.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Warm-up calls per entry (discarded).
    #[arg(long, default_value_t = 4)]
    warmup: u32,
    /// Seed of the job-order shuffle (default: from the clock; recorded).
    #[arg(long)]
    seed: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Re-synchronize clocks every this many seconds (window sync).
    #[arg(long, default_value_t = 10.0)]
    resync_interval: f64,
    /// Fit points and ping-pongs per fit point of the clock synchronization.
    #[arg(long, default_value_t = 16)]
    sync_fitpoints: u32,
    #[arg(long, default_value_t = 10)]
    sync_exchanges: u32,
    /// Time the initial fit points are spread over, seconds.
    #[arg(long, default_value_t = 0.3)]
    sync_span: f64,
}

struct Fail(String);

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
    mpi::init();
    let world = mpi::world();
    let me = mpi::rank(world);
    let code = match run(&args, world) {
        Ok(()) => 0,
        Err(Fail(msg)) => {
            if me == 0 {
                eprintln!("mpiover-calibrate: error: {msg}");
            }
            2
        }
    };
    mpi::finalize();
    std::process::exit(code);
}

/// --quick's target wall time: under the 2 minutes a quick calibration may
/// take with -np 4 on a 2-core machine, with room for start-up, the clock
/// synchronization and the per-job fixed costs that pacing cannot shrink.
const QUICK_PACE_S: f64 = 90.0;

/// Smallest budget pacing gives a job: enough for the warm-up and a batch.
const PACE_FLOOR_S: f64 = 0.1;

/// Everything that all ranks decide the same way from the arguments.
struct Plan {
    kinds: Vec<Kind>,
    selected: Vec<Vec<bool>>,
    functions: Vec<String>,
    procs: Vec<u32>,
    /// Neighbour counts of the exchange pattern.
    ks: Vec<u32>,
    /// Largest message size (--max-bytes): the eager limit is searched up to it.
    max_bytes: u64,
    sizes: Vec<u64>,
    max_samples: u64,
    entry_budget: f64,
    time_budget: Option<f64>,
    pace: Option<f64>,
}

fn make_plan(a: &Args, world_size: u32) -> Result<Plan, String> {
    if world_size < 2 {
        return Err("needs at least 2 ranks (mpirun -np 2 or more)".into());
    }
    let mut wanted: Vec<&'static str> = Vec::new();
    for f in &a.functions {
        if f.trim().is_empty() {
            continue;
        }
        match pattern::canonical_function(f) {
            Some(c) => wanted.push(c),
            None => {
                return Err(format!(
                    "unknown function \"{f}\"; measurable: {}",
                    pattern::all_functions().join(", ")
                ))
            }
        }
    }
    if wanted.is_empty() {
        wanted = pattern::all_functions();
    }
    let mut kinds = Vec::new();
    let mut selected = Vec::new();
    for &k in pattern::ALL {
        let sel: Vec<bool> = k
            .entries()
            .iter()
            .map(|d| wanted.contains(&d.function))
            .collect();
        if sel.iter().any(|&x| x) {
            kinds.push(k);
            selected.push(sel);
        }
    }
    let max_bytes = match &a.max_bytes {
        Some(s) => grid::parse_size(s)?,
        None => 4 << 20,
    };
    // Collectives are always measured at the job's own size and at the
    // powers of two up to it (an application calibrated with as many ranks
    // as it runs on is never looked up out of range); --procs adds others.
    let mut procs: Vec<u32> = if a.quick {
        vec![2, 3, 4]
    } else {
        grid::default_procs(world_size)
    };
    procs.extend(grid::powers_of_two(world_size));
    if world_size >= 2 {
        procs.push(world_size);
    }
    procs.extend(&a.procs);
    for &p in &a.procs {
        if p < 2 || p > world_size {
            return Err(format!(
                "--procs {p}: must be between 2 and the number of ranks ({world_size})"
            ));
        }
    }
    procs.retain(|&p| p <= world_size);
    procs.sort_unstable();
    procs.dedup();
    let mut sizes: Vec<u64> = if !a.sizes.is_empty() {
        a.sizes
            .iter()
            .map(|s| grid::parse_size(s))
            .collect::<Result<_, _>>()?
    } else if a.quick {
        vec![1, 1000, 100_000]
    } else {
        grid::default_sizes(max_bytes)
    };
    sizes.retain(|&b| b <= max_bytes);
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() && kinds.iter().any(|&k| k != Kind::Barrier) {
        return Err("no message sizes left (check --sizes and --max-bytes)".into());
    }
    if !(0.8..1.0).contains(&a.q_max) {
        return Err(format!("--q-max {}: must be in [0.8, 1)", a.q_max));
    }
    for (name, v) in [
        ("--entry-budget", a.entry_budget),
        ("--time-budget", a.time_budget),
        ("--pace", a.pace),
    ] {
        if let Some(v) = v {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} {v}: must be a positive number of seconds"));
            }
        }
    }
    if !(a.rel_tol.is_finite() && a.rel_tol > 0.0) {
        return Err(format!("--rel-tol {}: must be positive", a.rel_tol));
    }
    if !(a.alpha > 0.0 && a.alpha < 0.5) {
        return Err(format!("--alpha {}: must be in (0, 0.5)", a.alpha));
    }
    let max_samples = a.max_samples.unwrap_or(if a.quick { 400 } else { 1000 });
    if a.min_samples < 1 || max_samples < a.min_samples {
        return Err(format!(
            "--min-samples {} / --max-samples {max_samples}: need 1 <= min <= max",
            a.min_samples
        ));
    }
    Ok(Plan {
        functions: wanted.iter().map(|s| s.to_string()).collect(),
        kinds,
        selected,
        procs,
        ks: grid::exchange_neighbours(a.quick),
        max_bytes,
        sizes,
        max_samples,
        entry_budget: a.entry_budget.unwrap_or(if a.quick { 1.5 } else { 30.0 }),
        // No implicit budget for --quick: a quick run that silently skipped
        // half its grid looked like success; its limits keep it short instead.
        time_budget: a.time_budget,
        pace: a.pace.or(a.quick.then_some(QUICK_PACE_S)),
    })
}

/// Ranks in host-interleaved order: the first rank of each host, then the
/// second of each, ...; a sub-communicator of size p is the first p of them,
/// so it spans as many hosts as it can.
fn interleaved(host_of: &[u32]) -> Vec<i32> {
    let nh = host_of.iter().copied().max().map_or(0, |m| m + 1);
    let per: Vec<Vec<i32>> = (0..nh)
        .map(|h| {
            (0..host_of.len())
                .filter(|&r| host_of[r] == h)
                .map(|r| r as i32)
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < host_of.len() {
        for v in &per {
            if let Some(&r) = v.get(i) {
                out.push(r);
            }
        }
        i += 1;
    }
    out
}

/// Whether a job's entries are same-host ones: pairs by their kind, an
/// exchange by whether its ranks share one host (`hosts` of them), the
/// collectives `None`.
fn same_host_of(job: &Job, hosts: u32) -> Option<bool> {
    match job.pair {
        Some(p) => Some(p == Pair::SameHost),
        None if job.kind == Kind::Exchange => Some(hosts <= 1),
        None => None,
    }
}

fn keys_of(job: &Job, kind_sel: &[bool], same_host: Option<bool>) -> Vec<Key> {
    job.kind
        .entries()
        .iter()
        .zip(kind_sel)
        .filter(|(_, &s)| s)
        .map(|(d, _)| Key {
            function: d.function.to_string(),
            p: job.p,
            bytes: job.bytes,
            role: d.role.map(String::from),
            same_host,
        })
        .collect()
}

fn run(a: &Args, world: mpi::Comm) -> Result<(), Fail> {
    let t_start = clock::raw_now();
    let me = mpi::rank(world);
    let world_size = mpi::size(world) as u32;
    let plan = make_plan(a, world_size).map_err(Fail)?;
    clock::init_duration_timer().map_err(Fail)?;
    let mut clock = Clock::new(me).map_err(Fail)?;
    let delay = match std::env::var("MPIOVER_CALIBRATE_TEST_DELAY") {
        Ok(v) if !v.trim().is_empty() => Some(measure::parse_delay(&v).map_err(Fail)?),
        _ => None,
    };
    let command: Vec<String> = std::env::args().collect();
    let date = iso8601_utc(unix_now());
    let (layout, environment) = env::gather(world, command.clone(), date.clone());

    // Pairs for point-to-point: rank 0 with the next rank on its host, and with
    // the first rank on another host.
    let order = interleaved(&layout.host_of);
    let same_peer =
        (1..world_size as i32).find(|&r| layout.host_of[r as usize] == layout.host_of[0]);
    let cross_peer =
        (1..world_size as i32).find(|&r| layout.host_of[r as usize] != layout.host_of[0]);
    let mut pairs = Vec::new();
    let mut pair_comms = Vec::new();
    for (pair, peer) in [(Pair::SameHost, same_peer), (Pair::CrossHost, cross_peer)] {
        if let Some(peer) = peer {
            let color = (me == 0 || me == peer).then_some(0);
            pairs.push(pair);
            pair_comms.push((pair, mpi::split(world, color, if me == 0 { 0 } else { 1 })));
        }
    }
    let jobs = grid::plan(
        &plan.kinds,
        &plan.procs,
        &plan.ks,
        &plan.sizes,
        &pairs,
        world_size,
    );
    // One communicator per size the jobs need (collectives: p; exchanges:
    // their ranks), made of the first ranks of the host-interleaved order.
    let mut sizes: Vec<u32> = jobs
        .iter()
        .filter(|j| j.pair.is_none())
        .map(|j| j.ranks)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut comms = Vec::new();
    for &p in &sizes {
        let pos = order.iter().position(|&r| r == me).unwrap_or(0) as i32;
        let color = (pos < p as i32).then_some(0);
        comms.push((p, mpi::split(world, color, pos)));
    }
    let hosts_in = |p: u32| -> u32 {
        let mut h: Vec<u32> = order
            .iter()
            .take(p as usize)
            .map(|&r| layout.host_of[r as usize])
            .collect();
        h.sort_unstable();
        h.dedup();
        h.len() as u32
    };

    let kind_index = |k: Kind| plan.kinds.iter().position(|&x| x == k).unwrap();

    // Seed: given, stored (resume), or from the clock; rank 0 decides.
    let mut seed_buf = [0u8; 8];
    let mut profile: Option<Profile> = None;
    let mut setup_err = String::new();
    if me == 0 {
        let seed = a
            .seed
            .unwrap_or_else(|| (unix_now() * 1e6) as u64 ^ ((std::process::id() as u64) << 32));
        let method = Method {
            sync: match a.sync {
                SyncArg::Window => "window".into(),
                SyncArg::Barrier => "barrier".into(),
            },
            clock_sync: None,
            window: (a.sync == SyncArg::Window).then(|| WindowRule {
                initial: "2 x the slowest warm-up call (over ranks) + 10 us".into(),
                growth: "doubled when more than 1/4 of a batch's windows are invalid".into(),
                min_s: 5e-6,
                max_s: 1.0,
                lead_s: 2e-4,
            }),
            q_max: a.q_max,
            alpha: a.alpha,
            rel_tol: Some(a.rel_tol),
            warmup: a.warmup,
            min_samples: a.min_samples,
            max_samples: plan.max_samples,
            entry_budget_s: plan.entry_budget,
            time_budget_s: plan.time_budget,
            pace_s: plan.pace,
            seed,
            quick: a.quick,
            functions: plan.functions.clone(),
            procs: plan.procs.clone(),
            exchange_neighbours: if plan.kinds.contains(&Kind::Exchange) {
                plan.ks.clone()
            } else {
                Vec::new()
            },
            sizes: plan.sizes.clone(),
            reduction: "MPI_UINT8_T with MPI_SUM".into(),
            sample: "each rank's own local duration of its call; point-to-point: a ping-pong per \
                     window, every call of both ranks timed (receives pool the one-way receive and the \
                     receive of the reply), who pings alternates; rooted collectives: the root alone, \
                     and all non-root ranks pooled; other collectives: all ranks pooled; samples of \
                     invalid windows are dropped: a rank started late, overran the window, or was \
                     preempted during its call (involuntary context switch, getrusage; kept and noted \
                     when more than half of a batch was, and not checked when ranks outnumber cores)"
                .into(),
            communicators: "size p: the first p ranks in host-interleaved order; pairs: rank 0 with the \
                            next rank on its host (same_host) and with the first rank on another host"
                .into(),
            notes: test_notes(),
        };
        match start_profile(a, environment, method, &date, &command, world_size) {
            Ok(p) => {
                seed_buf = p.method.seed.to_le_bytes();
                profile = Some(p);
            }
            Err(e) => setup_err = e,
        }
    }
    let mut ok = [u8::from(setup_err.is_empty())];
    mpi::bcast_bytes(&mut ok, 0, world);
    if ok[0] == 0 {
        return Err(Fail(setup_err));
    }
    mpi::bcast_bytes(&mut seed_buf, 0, world);
    let seed = u64::from_le_bytes(seed_buf);

    // Clock synchronization.
    if a.sync == SyncArg::Window {
        clock::initial_sync(
            &mut clock,
            world,
            a.sync_fitpoints,
            a.sync_exchanges,
            a.sync_span,
        );
    }

    let resolution_s = profile
        .as_ref()
        .map_or(1e-9, |p| p.environment.timer.resolution_s.max(1e-9));
    let stats = StatOpts {
        q_max: a.q_max,
        alpha: a.alpha,
        resolution_s,
        min_samples: a.min_samples,
        max_samples: plan.max_samples,
        rel_tol: a.rel_tol,
    };
    let settings = Settings {
        sync: if a.sync == SyncArg::Window {
            Sync::Window
        } else {
            Sync::Barrier
        },
        warmup: a.warmup,
        stats,
        entry_budget_s: plan.entry_budget,
        window_min_s: 5e-6,
        window_max_s: 1.0,
        lead_s: 2e-4,
        yield_wait: false,
        window_slack_s: 0.0,
        delay,
        world_rank: me,
        sync_exchanges: a.sync_exchanges,
    };

    // The eager limit of each pair kind, when blocking sends are measured
    // (their wait state depends on it).
    let mut protocol = None;
    if plan.kinds.contains(&Kind::Send) {
        let mut p = mpiover_common::profile::Protocol {
            searched_up_to: plan.max_bytes.clamp(1, i32::MAX as u64),
            method: format!(
                "blocking MPI_Send to a receiver {:.0} ms late, {} probes per size, sizes doubled \
                 from 1 byte then bisected: the largest size whose send returned within half the \
                 delay",
                protocol::DELAY_S * 1e3,
                protocol::REPS
            ),
            ..Default::default()
        };
        for (pair, comm) in &pair_comms {
            if let Some(comm) = comm {
                let (limit, _) = protocol::eager_limit(*comm, plan.max_bytes);
                match pair {
                    Pair::SameHost => p.eager_limit_same_host = Some(limit),
                    Pair::CrossHost => p.eager_limit_cross_host = Some(limit),
                }
            }
        }
        p.mpi_t = mpiover_mpisys::mpit::eager_limit().map(|(cvar, bytes)| {
            mpiover_common::profile::MpiTValue {
                cvar: cvar.to_string(),
                bytes,
            }
        });
        protocol = Some(p);
    }

    // Rank 0: the job queue (resume: what is missing, the first missing last).
    let mut queue: Vec<usize> = Vec::new();
    let mut progress = None;
    let mut run_id = String::new();
    let mut prev_wall = 0.0;
    if let Some(prof) = profile.as_mut() {
        if protocol.is_some() {
            prof.protocol = protocol.take();
        }
        let done: HashSet<Key> = prof.entries.iter().map(|e| e.key()).collect();
        let all = grid::order(&jobs, seed);
        let total = all.len();
        queue = all
            .into_iter()
            .filter(|&id| {
                let j = &jobs[id];
                let sh = same_host_of(j, hosts_in(j.ranks));
                !keys_of(j, &plan.selected[kind_index(j.kind)], sh)
                    .iter()
                    .all(|k| done.contains(k))
            })
            .collect();
        if a.resume && !prof.entries.is_empty() && !queue.is_empty() {
            let first = queue.remove(0);
            queue.push(first);
        }
        prof.skipped.clear();
        run_id = prof.runs.last().map(|r| r.id.clone()).unwrap_or_default();
        prev_wall = prof.runs.last().map_or(0.0, |r| r.wall_s);
        let mut pr = progress::Progress::new(total, a.quiet);
        pr.update(total - queue.len(), "starting");
        progress = Some((pr, total - queue.len()));
        prof.method.clock_sync = (a.sync == SyncArg::Window).then(|| ClockSync {
            method: "Jones-Koenig style: ping-pong offsets against rank 0 (the fastest of each fit \
                     point's exchanges), Theil-Sen line through the fit points, slope kept when \
                     significant (> 3 standard errors); fit points at the start, before every entry \
                     and every resync_interval_s"
                .into(),
            fitpoints: a.sync_fitpoints,
            exchanges: a.sync_exchanges,
            resync_interval_s: a.resync_interval,
            ranks: Vec::new(),
        });
        if let Err(e) = prof.save_atomic(&a.output) {
            return Err(Fail(e.to_string()));
        }
    }

    // The budget is the whole run's, over all its --resume segments: what
    // earlier segments spent (their recorded wall time) is already gone.
    let deadline = plan
        .time_budget
        .map_or(f64::INFINITY, |b| t_start + b - prev_wall);
    let mut last_sync = clock::raw_now();
    // Learned window slack per communicator size: the noise a window must
    // absorb depends on how many ranks share the cores (a 4-rank job on 2
    // cores needs milliseconds, a pair microseconds), so one size's growth
    // must not lengthen every other size's windows.
    let mut window_slack: std::collections::HashMap<u32, f64> = Default::default();
    let mut qpos = 0usize;
    loop {
        // Rank 0 decides: 0 = job, 1 = resync, 2 = done.
        let mut cmd = [0u8; 9];
        if me == 0 {
            let now = clock::raw_now();
            if a.sync == SyncArg::Window
                && now - last_sync > a.resync_interval
                && qpos < queue.len()
            {
                cmd[0] = 1;
            } else if qpos < queue.len() && now < deadline {
                cmd[0] = 0;
                cmd[1..].copy_from_slice(&(queue[qpos] as u64).to_le_bytes());
                qpos += 1;
            } else {
                cmd[0] = 2;
            }
        }
        mpi::bcast_bytes_sleepy(&mut cmd, 0, world);
        match cmd[0] {
            1 => {
                clock::sync_round(&mut clock, world, a.sync_exchanges);
                last_sync = clock::raw_now();
                continue;
            }
            2 => break,
            _ => {}
        }
        let id = u64::from_le_bytes(cmd[1..].try_into().unwrap()) as usize;
        let job = &jobs[id];
        let comm = match job.pair {
            Some(pair) => pair_comms
                .iter()
                .find(|(p, _)| *p == pair)
                .and_then(|x| x.1),
            None => comms
                .iter()
                .find(|(p, _)| *p == job.ranks)
                .and_then(|x| x.1),
        };
        let Some(comm) = comm else { continue };
        if let Some((pr, done)) = progress.as_mut() {
            pr.update(*done, &job.label());
        }
        let sel = &plan.selected[kind_index(job.kind)];
        // Spin while waiting for a window start unless the job's ranks on this
        // host outnumber its CPUs (then yield; ranks outside the job sleep).
        let members: Vec<i32> = match job.pair {
            Some(Pair::SameHost) => vec![0, same_peer.unwrap_or(0)],
            Some(Pair::CrossHost) => vec![0, cross_peer.unwrap_or(0)],
            None => order.iter().take(job.ranks as usize).copied().collect(),
        };
        let mine = layout.host_of[me as usize];
        let local = members
            .iter()
            .filter(|&&r| layout.host_of[r as usize] == mine)
            .count() as u32;
        // Pacing (rank 0 alone decides when an entry ends): this job's share
        // of the time left, over the jobs left including this one.
        let entry_budget_s = match plan.pace {
            Some(pace) if me == 0 => {
                let spent = prev_wall + (clock::raw_now() - t_start);
                let left = (queue.len() - qpos + 1) as f64;
                ((pace - spent) / left).clamp(PACE_FLOOR_S, plan.entry_budget.max(PACE_FLOOR_S))
            }
            _ => plan.entry_budget,
        };
        let job_settings = Settings {
            entry_budget_s,
            yield_wait: layout.host_cpus > 0 && local > layout.host_cpus,
            window_slack_s: window_slack.get(&job.ranks).copied().unwrap_or(0.0),
            ..settings.clone()
        };
        let outcome = measure::run_job(
            job.kind,
            job.p,
            job.bytes,
            comm,
            &mut clock,
            &job_settings,
            sel,
            deadline,
        );
        if let Some(out) = &outcome {
            // Learn how much longer than the warm-up estimate windows have to
            // be on this machine now: follow the growth jobs needed, and decay
            // when a job needed none.
            let slack = window_slack.entry(job.ranks).or_insert(0.0);
            if out.growths > 0 {
                let needed = (out.window_s - out.window_base_s).max(0.0);
                *slack = (0.5 * *slack + 0.5 * needed).min(0.1);
            } else if out.windows_invalid * 20 < out.windows {
                *slack *= 0.8;
            }
        }
        if let (Some(out), Some(prof)) = (outcome, profile.as_mut()) {
            let hosts = match job.pair {
                Some(Pair::SameHost) => 1,
                Some(Pair::CrossHost) => 2,
                None => hosts_in(job.ranks),
            };
            let same_host = same_host_of(job, hosts);
            for (e, def) in job.kind.entries().iter().enumerate() {
                if !sel[e] {
                    continue;
                }
                let key = Key {
                    function: def.function.into(),
                    p: job.p,
                    bytes: job.bytes,
                    role: def.role.map(String::from),
                    same_host,
                };
                match make_entry(
                    &key,
                    &out,
                    e,
                    hosts,
                    &stats,
                    &run_id,
                    settings.sync == Sync::Window,
                ) {
                    Some(entry) => prof.push_entry(entry),
                    None => prof.skipped.push(Skipped {
                        function: key.function.clone(),
                        p: key.p,
                        bytes: key.bytes,
                        reason: format!(
                            "no valid sample ({}; {} dropped)",
                            out.stop, out.invalid[e]
                        ),
                    }),
                }
            }
            if let Some(r) = prof.runs.last_mut() {
                r.wall_s = prev_wall + (clock::raw_now() - t_start);
                r.kept_windows += out.kept_windows;
                r.kept_window_s += out.kept_window_s;
            }
            prof.save_atomic(&a.output)
                .map_err(|e| Fail(e.to_string()))?;
            if let Some((_, done)) = progress.as_mut() {
                *done += 1;
            }
        }
    }

    // Clock models of all ranks, for the record.
    let cs = clock.summary(me as u32);
    let mine = [
        cs.offset_s,
        cs.ref_local_s,
        cs.drift,
        cs.fitpoints as f64,
        cs.span_s,
        cs.rtt_min_s,
        cs.residual_s,
    ];
    let mut all = vec![0.0f64; if me == 0 { 7 * world_size as usize } else { 1 }];
    mpi::gather_f64s(&mine, &mut all, 0, world);
    if let Some(prof) = profile.as_mut() {
        if let Some((pr, _)) = progress.as_mut() {
            pr.finish();
        }
        if let Some(c) = prof.method.clock_sync.as_mut() {
            c.ranks = all
                .chunks(7)
                .enumerate()
                .map(|(r, v)| mpiover_common::profile::RankClock {
                    rank: r as u32,
                    offset_s: v[0],
                    ref_local_s: v[1],
                    drift: v[2],
                    fitpoints: v[3] as u32,
                    span_s: v[4],
                    rtt_min_s: v[5],
                    residual_s: v[6],
                })
                .collect();
        }
        for &id in &queue[qpos..] {
            let j = &jobs[id];
            for k in keys_of(
                j,
                &plan.selected[kind_index(j.kind)],
                same_host_of(j, hosts_in(j.ranks)),
            ) {
                prof.skipped.push(Skipped {
                    function: k.function,
                    p: k.p,
                    bytes: k.bytes,
                    reason: "time budget".into(),
                });
            }
        }
        let complete = prof.skipped.is_empty();
        if let Some(r) = prof.runs.last_mut() {
            r.wall_s = prev_wall + (clock::raw_now() - t_start);
            r.complete = complete;
        }
        prof.save_atomic(&a.output)
            .map_err(|e| Fail(e.to_string()))?;
        if !complete {
            // Said even with --quiet: the profile has holes (lookups there
            // interpolate over the missing points or are out of range).
            let budget = prof
                .skipped
                .iter()
                .filter(|s| s.reason == "time budget")
                .count();
            eprintln!(
                "mpiover-calibrate: warning: {} planned entries not measured ({} by the time \
                 budget, {} without a valid sample; listed under \"skipped\" in {}); --resume \
                 with a larger --time-budget measures them",
                prof.skipped.len(),
                budget,
                prof.skipped.len() - budget,
                a.output.display()
            );
        }
        if !a.quiet {
            let n: u64 = prof.entries.iter().map(|e| e.n).sum();
            let inv: u64 = prof.entries.iter().map(|e| e.n_invalid).sum();
            let pre: u64 = prof.entries.iter().map(|e| e.n_preempted).sum();
            let kept: f64 = prof.entries.iter().filter_map(|e| e.sum_s).sum();
            eprintln!(
                "mpiover-calibrate: {} entries ({} samples kept, {} dropped, {} of them preempted), \
                 {} skipped, {:.1} s -> {}",
                prof.entries.len(),
                n,
                inv,
                pre,
                prof.skipped.len(),
                clock::raw_now() - t_start,
                a.output.display()
            );
            let (windows, per_window) = prof
                .runs
                .last()
                .map_or((0, 0.0), |r| (r.kept_windows, r.kept_window_s));
            eprintln!(
                "mpiover-calibrate: kept call time {kept:.6} s (sum of the kept samples), \
                 {per_window:.6} s in {windows} kept windows (longest rank per window)"
            );
        }
    }
    Ok(())
}

fn test_notes() -> Vec<String> {
    let mut v = Vec::new();
    for var in [
        "MPIOVER_CALIBRATE_TEST_CLOCK_SKEW",
        "MPIOVER_CALIBRATE_TEST_DELAY",
    ] {
        if let Ok(x) = std::env::var(var) {
            if !x.trim().is_empty() {
                v.push(format!("test setting in force: {var}={x}"));
            }
        }
    }
    v
}

/// A new profile, or the one being resumed (checked against the options).
fn start_profile(
    a: &Args,
    environment: mpiover_common::profile::Environment,
    mut method: Method,
    date: &str,
    command: &[String],
    ranks: u32,
) -> Result<Profile, String> {
    if a.resume && a.output.exists() {
        let mut prof = Profile::load(&a.output).map_err(|e| format!("cannot resume: {e}"))?;
        let old = &prof.method;
        if a.seed.is_some_and(|s| s != old.seed) {
            return Err(format!(
                "cannot resume: --seed {} differs from the run's seed {}",
                a.seed.unwrap(),
                old.seed
            ));
        }
        let mut diffs = Vec::new();
        macro_rules! same {
            ($f:ident, $name:expr) => {
                if old.$f != method.$f {
                    diffs.push(format!(
                        "{} ({:?} now, {:?} in the profile)",
                        $name, method.$f, old.$f
                    ));
                }
            };
        }
        same!(sync, "--sync");
        same!(functions, "--functions");
        same!(procs, "--procs");
        same!(sizes, "--sizes/--max-bytes");
        same!(q_max, "--q-max");
        same!(alpha, "--alpha");
        same!(min_samples, "--min-samples");
        same!(max_samples, "--max-samples");
        same!(quick, "--quick");
        same!(warmup, "--warmup");
        same!(rel_tol, "--rel-tol");
        same!(entry_budget_s, "--entry-budget");
        same!(pace_s, "--pace");
        // --time-budget may change: it shapes no sample, only how many jobs
        // run, and resuming a run its budget stopped needs a larger one. It is
        // the total over all segments (the new value replaces the old).
        if !diffs.is_empty() {
            return Err(format!(
                "cannot resume {}: options differ: {}",
                a.output.display(),
                diffs.join(", ")
            ));
        }
        if let Err(m) = prof.matches(&environment) {
            return Err(format!("cannot resume {}: {m}", a.output.display()));
        }
        if environment.ranks != prof.environment.ranks {
            return Err(format!(
                "cannot resume {}: it was measured with {} ranks, this run has {}",
                a.output.display(),
                prof.environment.ranks,
                environment.ranks
            ));
        }
        if let Some(r) = prof.runs.last_mut() {
            r.resumed += 1;
        }
        prof.method.time_budget_s = method.time_budget_s;
        Ok(prof)
    } else {
        if a.resume {
            eprintln!(
                "mpiover-calibrate: {} does not exist yet: starting a new run",
                a.output.display()
            );
        }
        method.notes.dedup();
        let hosts = environment.hosts.clone();
        let mut prof = Profile::new(environment, method);
        let suffix = (unix_now() * 1e6) as u64 ^ ((std::process::id() as u64) << 20);
        prof.runs.push(RunInfo {
            id: format!(
                "{}-{:06x}",
                date.replace([':', '-'], ""),
                suffix & 0xff_ffff
            ),
            date: date.to_string(),
            command: command.to_vec(),
            hosts,
            ranks,
            seed: prof.method.seed,
            wall_s: 0.0,
            kept_windows: 0,
            kept_window_s: 0.0,
            resumed: 0,
            complete: false,
        });
        Ok(prof)
    }
}

/// Fit and summarize one entry's sample.
fn make_entry(
    key: &Key,
    out: &measure::Outcome,
    e: usize,
    hosts: u32,
    stats: &StatOpts,
    run: &str,
    windowed: bool,
) -> Option<Entry> {
    let sample = &out.samples[e];
    if sample.is_empty() {
        return None;
    }
    let s = stat::summarize_sample(sample);
    let (fit, note) = match stat::fit_sample(sample, stats) {
        Ok(f) => (f, None),
        Err(msg) => (
            stat::Fitted {
                tmax_s: s.max_s,
                fallback: true,
                ..Default::default()
            },
            Some(format!("fit failed ({msg}): tmax is the sample maximum")),
        ),
    };
    let mut entry = Entry {
        function: key.function.clone(),
        p: key.p,
        bytes: key.bytes,
        role: key.role.clone(),
        same_host: key.same_host,
        hosts,
        n: sample.len() as u64,
        n_invalid: out.invalid[e],
        n_late: out.invalid_late[e],
        n_overrun: out.invalid_overrun[e],
        n_preempted: out.invalid_preempted[e],
        min_s: s.min_s,
        median_s: s.median_s,
        median_ci_s: s.median_ci_s,
        max_s: Some(s.max_s),
        q90_s: s.q90_s,
        q99_s: s.q99_s,
        tmax_s: fit.tmax_s,
        model: fit.model,
        lambda: fit.lambda,
        chi2: fit.chi2,
        df: fit.df,
        critical: fit.critical,
        accepted: fit.accepted,
        fallback: fit.fallback,
        bin_width_s: fit.bin_width_s,
        window_s: windowed.then_some(out.window_s),
        stop: Some(out.stop.clone()),
        sum_s: Some(sample.iter().sum()),
        elapsed_s: Some(out.elapsed_s),
        note,
        runs: Vec::new(),
    };
    if out.preempted_kept > 0 {
        let busy = format!(
            "{} of {} windows had a rank preempted during its call and were kept (more than half of \
             their batch: the host was busy or oversubscribed); tmax includes scheduler noise",
            out.preempted_kept, out.windows
        );
        entry.note = Some(match entry.note.take() {
            Some(n) => format!("{n}; {busy}"),
            None => busy,
        });
    }
    entry.runs = vec![entry.as_run(run)];
    Some(entry)
}
