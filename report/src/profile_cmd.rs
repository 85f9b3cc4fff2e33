//! `mpiover profile ...`: placeholder until calibration lands (issue 4).
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ProfileCmd {
    /// Print a profile as a readable table.
    Show { profile: String },
}

pub fn run(_cmd: &ProfileCmd) -> anyhow::Result<()> {
    anyhow::bail!("mpiover profile is not implemented yet")
}
