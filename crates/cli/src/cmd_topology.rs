//! `schedlab topology ...` (placeholder until the topology crate lands).
use anyhow::Result;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum TopologyCommand {
    /// List the built-in machine presets.
    List,
}

pub fn run(cmd: TopologyCommand) -> Result<ExitCode> {
    match cmd {
        TopologyCommand::List => Ok(ExitCode::SUCCESS),
    }
}
