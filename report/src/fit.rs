//! `mpiover fit FILE`: placeholder until the statistical core lands (issue 3).
use clap::Args;

#[derive(Debug, Args)]
pub struct FitArgs {
    /// File with one run-time in seconds per line (`-` for stdin).
    pub file: String,
}

pub fn run(_args: &FitArgs) -> anyhow::Result<()> {
    anyhow::bail!("mpiover fit is not implemented yet")
}
