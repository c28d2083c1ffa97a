//! `schedlab`: simulate, measure and compare Linux CPU-scheduler task placement.
//!
//! Each subcommand lives in its own module (`cmd_*.rs`); this file only
//! dispatches and turns every error into one line on stderr with exit status 2.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_bench;
mod cmd_sim;
mod cmd_topology;
mod output;

/// A laboratory for Linux CPU-scheduler task placement.
#[derive(Parser, Debug)]
#[command(name = "schedlab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show machine topologies and the sched domains Linux would build.
    #[command(subcommand)]
    Topology(cmd_topology::TopologyCommand),
    /// Simulate a benchmark on a modelled machine and kernel.
    Sim(cmd_sim::SimArgs),
    /// Run a benchmark natively on this host.
    Bench(cmd_bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and usage
            // errors to stderr with exit 2.
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let result = match cli.command {
        Command::Topology(cmd) => cmd_topology::run(cmd),
        Command::Sim(args) => cmd_sim::run(args),
        Command::Bench(args) => cmd_bench::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line, naming the problem; never a backtrace.
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("schedlab: error: {msg}");
            ExitCode::from(2)
        }
    }
}
