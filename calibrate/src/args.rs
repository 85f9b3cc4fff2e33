//! The command line.

use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SyncArg {
    Window,
    Barrier,
}

/// Measure the machine's tmax(function, p, bytes) profile (run under mpirun).
#[derive(Debug, Parser)]
#[command(name = "mpiover-calibrate", version)]
pub(crate) struct Args {
    /// Profile to write (rewritten after every entry).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Continue an interrupted run that wrote OUTPUT (same options).
    #[arg(long)]
    pub(crate) resume: bool,
    /// Reduced grid: every function, p = 2, 3, 4 and the powers of two up to the world size and
    /// the world size itself, sizes 1, 1000, 100000; at most 400 samples and 1.5 s per entry,
    /// paced to 90 s (--pace). No run budget: it measures the whole grid (20-40 s with -np 4 on
    /// an idle 2-core machine).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Functions to measure (comma-separated, e.g. MPI_Send,Bcast); default all.
    #[arg(long, value_delimiter = ',')]
    pub(crate) functions: Vec<String>,
    /// More process counts for the collectives, added to the default ones (2, 3, 4, 6, 8, 12,
    /// ... up to the world size; --quick: 2, 3, 4), the powers of two up to the world size and
    /// the world size, which are always measured.
    #[arg(long, value_delimiter = ',')]
    pub(crate) procs: Vec<u32>,
    /// Message sizes in bytes (suffixes k, M, Ki, Mi); default 1, 10, ..., 100, 200, ... up to --max-bytes.
    #[arg(long, value_delimiter = ',')]
    pub(crate) sizes: Vec<String>,
    /// Largest size (default 4Mi).
    #[arg(long)]
    pub(crate) max_bytes: Option<String>,
    /// How calls are started together.
    #[arg(long, value_enum, default_value = "window")]
    pub(crate) sync: SyncArg,
    /// Minimum kept samples per entry before the stopping rule may end it (the entry and run
    /// budgets can still end it earlier: the entry's `stop` says so).
    #[arg(long, default_value_t = 200)]
    pub(crate) min_samples: u64,
    /// Maximum kept samples per entry (default 1000, --quick 400).
    #[arg(long)]
    pub(crate) max_samples: Option<u64>,
    /// Relative tolerance of the stopping rule (tmax stable within this).
    #[arg(long, default_value_t = 0.05)]
    pub(crate) rel_tol: f64,
    /// Time budget of one entry, seconds (default 30, --quick 1.5).
    #[arg(long)]
    pub(crate) entry_budget: Option<f64>,
    /// Time budget of the whole run, seconds (default none), counted over --resume segments;
    /// jobs not started by then are skipped and listed in the profile (and said on stderr).
    #[arg(long)]
    pub(crate) time_budget: Option<f64>,
    /// Target wall time of the run, seconds: each job's budget is at most its share of the time
    /// left, (S - elapsed) / jobs left (but at least 0.1 s), so that a busy machine makes the
    /// entries smaller (fewer samples, `stop` = entry_budget) instead of the run longer
    /// (default none, --quick 90). A job still short of 100 samples at its share goes on up to
    /// the entry budget: fewer cannot be modelled, so an oversubscribed host's run is longer.
    #[arg(long)]
    pub(crate) pace: Option<f64>,
    /// Quantile of the error model that defines tmax (0.8 <= q < 1).
    #[arg(long, default_value_t = 0.99)]
    pub(crate) q_max: f64,
    /// Significance level of the chi-square test.
    #[arg(long, default_value_t = 0.05)]
    pub(crate) alpha: f64,
    /// Warm-up calls per entry (discarded).
    #[arg(long, default_value_t = 4)]
    pub(crate) warmup: u32,
    /// Measure every entry in this many rounds, passes over the whole grid whose samples are
    /// pooled (each round takes 1/R of --max-samples; the stopping rule applies in the last),
    /// so that each entry's sample spans the run and the states the machine passes through
    /// in it (a shared VM's latency can switch between levels every few seconds). Each round
    /// gets its share of the entry's budget: with more ranks than CPUs and --quick's pace, slow
    /// entries can then get no valid sample; give them --pace or --entry-budget.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) rounds: u32,
    /// With --rounds: start round k no earlier than k * S / R seconds after the first, so that
    /// the rounds span at least S seconds even when the grid is quick (the ranks sleep between
    /// rounds).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) spread: f64,
    /// Seed of the job-order shuffle (default: from the clock; recorded).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Re-synchronize clocks every this many seconds (window sync).
    #[arg(long, default_value_t = 10.0)]
    pub(crate) resync_interval: f64,
    /// Fit points and ping-pongs per fit point of the clock synchronization.
    #[arg(long, default_value_t = 16)]
    pub(crate) sync_fitpoints: u32,
    #[arg(long, default_value_t = 10)]
    pub(crate) sync_exchanges: u32,
    /// Time the initial fit points are spread over, seconds.
    #[arg(long, default_value_t = 0.3)]
    pub(crate) sync_span: f64,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap adds "[default: ...]" to an option with a default: a doc comment
    /// that says it too prints it twice.
    #[test]
    fn help_names_each_default_once() {
        let help = super::Args::command().render_long_help().to_string();
        for para in help.split("\n\n") {
            assert!(
                para.matches("[default:").count() <= 1,
                "a default printed twice:\n{para}"
            );
        }
        assert!(help.contains("--rounds"), "{help}");
    }
}
