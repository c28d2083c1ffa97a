//! `schedlab sim ...` (placeholder until the simulator lands).
use anyhow::{bail, Result};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Benchmark to simulate.
    pub benchmark: String,
}

pub fn run(args: SimArgs) -> Result<ExitCode> {
    bail!("benchmark {:?} is not simulated yet", args.benchmark)
}
