//! The `report` and `diff` subcommands: arguments and what they do.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::analysis::{analyze_dir, Options};
use crate::export::{export, ExportOptions, ReportFormat};
use crate::model::Report;
use crate::tmax::{open_profile, TmaxSource};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

/// What both `report` and `diff` take to analyse a run.
#[derive(Debug, Args)]
pub struct AnalysisArgs {
    /// Re-analyse against this calibrated profile (from the recorded histograms).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<PathBuf>,
    /// q_max to take tmax at (with --profile): 0.8 <= q < 1.
    #[arg(long = "q", visible_alias = "q-max", value_name = "Q")]
    pub q_max: Option<f64>,
    /// False discovery rate of the significance test (Benjamini-Hochberg).
    #[arg(long, default_value_t = 0.05, value_name = "ALPHA")]
    pub alpha: f64,
    /// Smallest overhead, as a share of the run's MPI time, with which a
    /// statistically significant site is flagged (else "negligible"); 0 flags
    /// on the test alone.
    #[arg(long, default_value_t = crate::analysis::DEFAULT_MIN_SHARE, value_name = "FRACTION")]
    pub min_share: f64,
    /// A significant site is called marginal when tmax times this factor
    /// (how far two calibrations put tmax apart) would clear it; 1 turns the
    /// check off.
    #[arg(long, default_value_t = crate::analysis::DEFAULT_TMAX_SPREAD, value_name = "FACTOR")]
    pub tmax_spread: f64,
    /// Do not compare the run's fastest calls with the calibration's (the
    /// machine's latency level): no level-shift warning or verdict.
    #[arg(long)]
    pub no_level_check: bool,
    /// Sends of at least this many bytes are rendezvous sends (Late Receiver).
    /// Default: one above the eager limit the profile measured, else the one
    /// the MPI library states (MPI_T, in the records), else 65536.
    #[arg(long, value_name = "BYTES")]
    pub eager_limit: Option<u64>,
    /// Threads that parse records (default: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory holding the rank-NNNNNN.json records.
    pub run_dir: PathBuf,
    /// Output format (default: from -o's extension, else text).
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<ReportFormat>,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Sites to show (default: 20 in text and HTML, all in JSON and CSV).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Colour in text output.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The run before and the run after (`A B`), or the runs before when the
    /// runs after follow `--`: several runs a side let the test weigh a
    /// change against run-to-run variation.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// The runs after (`mpiover diff A1 A2 -- B1 B2`).
    #[arg(last = true, value_name = "RUN_AFTER")]
    pub after: Vec<PathBuf>,
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Sites to show in text (default 30).
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub top: usize,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

impl DiffArgs {
    /// The runs before and after.
    fn sides(&self) -> anyhow::Result<(&[PathBuf], &[PathBuf])> {
        match (self.runs.as_slice(), self.after.is_empty()) {
            (runs, false) => Ok((runs, self.after.as_slice())),
            ([a, b], true) => Ok((std::slice::from_ref(a), std::slice::from_ref(b))),
            (runs, true) => anyhow::bail!(
                "diff takes two runs (A B), or the runs before and after separated by `--` \
                 (A1 A2 -- B1 B2); got {} run(s) and no `--`",
                runs.len()
            ),
        }
    }
}

impl AnalysisArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            anyhow::bail!("--alpha must be between 0 and 1 (got {})", self.alpha);
        }
        if !(self.min_share >= 0.0 && self.min_share < 1.0) {
            anyhow::bail!(
                "--min-share must be at least 0 and below 1 (got {})",
                self.min_share
            );
        }
        if !(self.tmax_spread >= 1.0 && self.tmax_spread.is_finite()) {
            anyhow::bail!(
                "--tmax-spread must be at least 1 (got {})",
                self.tmax_spread
            );
        }
        if let Some(q) = self.q_max {
            if mpiover_stats::QMax::new(q).is_err() {
                anyhow::bail!(
                    "--q must be at least {} and below 1 (got {q}): tmax is the q_max quantile \
                     of the calibrated error model",
                    mpiover_stats::QMax::MIN
                );
            }
            if self.profile.is_none() {
                anyhow::bail!(
                    "--q re-computes tmax from a profile's fitted models: give --profile too \
                     (the records only hold tmax at the q_max they were recorded with)"
                );
            }
        }
        Ok(())
    }

    fn tmax(&self) -> anyhow::Result<Option<Box<dyn TmaxSource>>> {
        match &self.profile {
            Some(p) => Ok(Some(open_profile(p, self.q_max)?)),
            None => Ok(None),
        }
    }

    fn options(&self, detail_sites: usize, read_sources: bool) -> Options {
        Options {
            alpha: self.alpha,
            min_share: self.min_share,
            tmax_spread: self.tmax_spread,
            level_check: !self.no_level_check,
            eager_limit: self.eager_limit,
            threads: self.threads,
            detail_sites,
            read_sources,
        }
    }
}

/// Writes to the file, or to stdout. Every command's output goes through
/// here (the crates deny `print!`): a closed pipe (`mpiover ... | head`) is
/// the reader having read enough, not an error, and `println!` would abort on it.
pub fn write_out(output: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match output {
        Some(p) => {
            std::fs::write(p, bytes).with_context(|| format!("cannot write {}", p.display()))
        }
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(bytes).and_then(|_| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.context("cannot write to standard output"),
            }
        }
    }
}

pub fn run_report(a: &ReportArgs) -> anyhow::Result<()> {
    a.analysis.check()?;
    let format = match (a.format, &a.output) {
        (Some(f), _) => f,
        (None, Some(p)) => ReportFormat::from_path(p).unwrap_or(ReportFormat::Text),
        (None, None) => ReportFormat::Text,
    };
    let tmax = a.analysis.tmax()?;
    let html = format == ReportFormat::Html;
    let detail = if html { a.top.unwrap_or(20).max(1) } else { 0 };
    let report = analyze_dir(
        &a.run_dir,
        tmax.as_deref(),
        &a.analysis.options(detail, html),
    )?;
    let to_tty = a.output.is_none() && std::io::stdout().is_terminal();
    let color = match a.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => to_tty && std::env::var_os("NO_COLOR").is_none(),
    };
    let bytes = export(&report, format, &ExportOptions { top: a.top, color });
    write_out(a.output.as_deref(), &bytes)?;
    // The text report shows its warnings; other outputs get them on stderr
    // (after the output is written, so that a failed write is the only message).
    if format != ReportFormat::Text || a.output.is_some() {
        for w in &report.warnings {
            eprintln!("mpiover: warning: {w}");
        }
    }
    Ok(())
}

pub fn run_diff(a: &DiffArgs) -> anyhow::Result<()> {
    a.analysis.check()?;
    let (before, after) = a.sides()?;
    let tmax = a.analysis.tmax()?;
    // Every site's call distribution (the rank-sum test reads them); no
    // source files.
    let opts = a.analysis.options(usize::MAX, false);
    let analyze = |dirs: &[PathBuf]| -> anyhow::Result<Vec<Report>> {
        dirs.iter()
            .map(|d| Ok(analyze_dir(d, tmax.as_deref(), &opts)?))
            .collect()
    };
    // Every run is read before anything is said: a bad one is the only line.
    let sides = [analyze(before)?, analyze(after)?];
    for (name, runs) in ["A", "B"].into_iter().zip(&sides) {
        let many = runs.len() > 1;
        for r in runs {
            for w in &r.warnings {
                match many {
                    true => eprintln!("mpiover: warning: run {name} ({}): {w}", r.run.dir),
                    false => eprintln!("mpiover: warning: run {name}: {w}"),
                }
            }
        }
    }
    let d = crate::diff::diff(&sides[0], &sides[1], a.analysis.alpha);
    let bytes = match a.format {
        DiffFormat::Text => crate::export::diff::text(&d, a.top),
        DiffFormat::Json => crate::export::diff::json(&d),
        DiffFormat::Csv => crate::export::diff::csv(&d),
    };
    write_out(a.output.as_deref(), &bytes)
}
