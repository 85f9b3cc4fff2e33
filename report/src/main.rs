//! The `mpiover` command. Every error is a problem with the user's input or
//! environment: it is printed once, with its context, and the exit code is 2.
//!
//! Output goes through `cli::write_out`, never `print!`: a reader that closes
//! the pipe early (`mpiover profile show P | head`) ends the command quietly,
//! where `println!` would panic, and with `panic = "abort"` dump core.
#![deny(clippy::print_stdout)]
use clap::{Parser, Subcommand};

mod record_cmd;

use mpiover_report::{fit, profile_cmd};

#[derive(Debug, Parser)]
#[command(
    name = "mpiover",
    version,
    about = "Which source lines waste time in MPI communication"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Report the call sites of a run, ranked by overhead (or time).
    Report(mpiover_report::cli::ReportArgs),
    /// Compare two runs site by site: what got better or worse.
    Diff(mpiover_report::cli::DiffArgs),
    /// Fit the error models to a sample of run-times and print tmax.
    Fit(fit::FitArgs),
    /// Inspect, query and merge calibration profiles.
    #[command(subcommand)]
    Profile(profile_cmd::ProfileCmd),
    /// Run an MPI job under the profiler, then print the report's summary.
    Record(record_cmd::RecordArgs),
}

fn main() {
    let cli = Cli::parse();
    let res = match &cli.cmd {
        Cmd::Report(a) => mpiover_report::cli::run_report(a),
        Cmd::Diff(a) => mpiover_report::cli::run_diff(a),
        Cmd::Fit(a) => fit::run(a),
        Cmd::Profile(c) => profile_cmd::run(c),
        Cmd::Record(a) => record_cmd::run(a).map(|code| std::process::exit(code)),
    };
    if let Err(e) = res {
        // One line, whatever a message quotes from a damaged file.
        let msg = mpiover_common::one_line::one_line(&format!("{e:#}"));
        eprintln!("mpiover: error: {msg}");
        std::process::exit(2);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
