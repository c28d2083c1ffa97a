//! `schedlab bench ...` (placeholder until the native benchmarks land).
use anyhow::{bail, Result};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Benchmark to run natively.
    pub benchmark: String,
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    bail!("native benchmark {:?} is not implemented yet", args.benchmark)
}
