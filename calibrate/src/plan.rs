//! What to measure, decided the same way on every rank from the arguments:
//! the patterns and entries, process counts, neighbour counts, sizes, budgets;
//! the host-interleaved rank order; the profile keys of a job.

use mpiover_common::profile::ProfileKey;

use crate::args::Args;
use crate::grid::{self, Job, Pair};
use crate::pattern::{self, Pattern};

/// --quick's target wall time: under the 2 minutes a quick calibration may
/// take with -np 4 on a 2-core machine, with room for start-up, the clock
/// synchronization and the per-job fixed costs that pacing cannot shrink.
pub(crate) const QUICK_PACE_S: f64 = 90.0;

/// Smallest budget pacing gives a job: enough for the warm-up and a batch.
pub(crate) const PACE_FLOOR_S: f64 = 0.1;
/// A paced entry runs past its share until it has this many samples (or
/// its unpaced budget is spent): what a tail model needs, with a margin for
/// ties at the threshold.
pub(crate) const PACED_MIN_SAMPLES: u64 = (mpiover_stats::tail::MIN_SAMPLE as u64) * 5 / 4;

/// Everything that all ranks decide the same way from the arguments.
pub(crate) struct Plan {
    pub(crate) kinds: Vec<Pattern>,
    pub(crate) selected: Vec<Vec<bool>>,
    pub(crate) functions: Vec<String>,
    pub(crate) procs: Vec<u32>,
    /// Neighbour counts of the exchange pattern.
    pub(crate) ks: Vec<u32>,
    /// Largest message size (--max-bytes): the eager limit is searched up to it.
    pub(crate) max_bytes: u64,
    pub(crate) sizes: Vec<u64>,
    pub(crate) max_samples: u64,
    pub(crate) entry_budget: f64,
    pub(crate) time_budget: Option<f64>,
    pub(crate) pace: Option<f64>,
}

pub(crate) fn make_plan(a: &Args, world_size: u32) -> Result<Plan, String> {
    if world_size < 2 {
        // Started alone: the same command under this build's launcher.
        use mpiover_common::suggest::{launcher, program, quote};
        let library = if mpiover_mpisys::FLAVOR == "mpich" {
            "MPICH"
        } else {
            "Open MPI"
        };
        let args: Vec<String> = std::env::args().skip(1).map(|a| quote(&a)).collect();
        return Err(format!(
            "needs at least 2 ranks: start it with the MPI launcher, e.g. `{} {}{}{}`",
            launcher(library, 2),
            program("mpiover-calibrate"),
            if args.is_empty() { "" } else { " " },
            args.join(" ")
        ));
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
    if sizes.is_empty() && kinds.iter().any(|&k| k != Pattern::Barrier) {
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
    if !(a.spread.is_finite() && a.spread >= 0.0) {
        return Err(format!(
            "--spread {}: must be a number of seconds >= 0",
            a.spread
        ));
    }
    if a.spread > 0.0 && a.rounds < 2 {
        return Err("--spread spaces rounds: it needs --rounds 2 or more".into());
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
pub(crate) fn interleaved(host_of: &[u32]) -> Vec<i32> {
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
pub(crate) fn same_host_of(job: &Job, hosts: u32) -> Option<bool> {
    match job.pair {
        Some(p) => Some(p == Pair::SameHost),
        None if job.kind == Pattern::Exchange => Some(hosts <= 1),
        None => None,
    }
}

pub(crate) fn keys_of(job: &Job, kind_sel: &[bool], same_host: Option<bool>) -> Vec<ProfileKey> {
    job.kind
        .entries()
        .iter()
        .zip(kind_sel)
        .filter(|(_, &s)| s)
        .map(|(d, _)| ProfileKey {
            function: d.function.to_string(),
            p: job.p,
            bytes: job.bytes,
            role: d.role.map(String::from),
            same_host,
        })
        .collect()
}
