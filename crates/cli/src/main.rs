//! `schedlab`: simulate, measure and compare Linux CPU-scheduler task placement.
//!
//! Each subcommand lives in its own module (`cmd_*.rs`); this file only
//! dispatches and turns every error into one line on stderr with exit status 2.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod args;
mod cmd_bench;
mod cmd_calibrate;
mod cmd_compare;
mod cmd_costs;
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
    Sim(Box<cmd_sim::SimArgs>),
    /// Run a benchmark natively on this host.
    Bench(cmd_bench::BenchArgs),
    /// Run an experiment (baseline against variants, over a sweep, repeated) and print the mmtests comparison.
    Compare(cmd_compare::CompareArgs),
    /// Measure this host's OS and hardware costs and write them as a cost profile (for --cost-profile).
    Calibrate(cmd_calibrate::CalibrateArgs),
    /// Show a machine preset's cost profile (every cost the simulator charges, with its source).
    #[command(subcommand)]
    Costs(cmd_costs::CostsCommand),
}

fn main() -> ExitCode {
    // A panic is a bug in schedlab, never the user's fault: report it in one
    // line, without a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        // A closed stdout (`| head`) is not an error: stop quietly.
        if msg.contains("Broken pipe") && msg.contains("stdout") {
            std::process::exit(0);
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("schedlab: internal error (please report): {msg}{at}");
        std::process::exit(2);
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::from(e.exit_code() as u8);
            }
            // Usage errors: one line naming the problem, exit status 2.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("schedlab: error: {first}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Topology(cmd) => cmd_topology::run(cmd),
        Command::Sim(args) => cmd_sim::run(*args),
        Command::Bench(args) => cmd_bench::run(args),
        Command::Compare(args) => cmd_compare::run(args),
        Command::Costs(cmd) => cmd_costs::run(cmd),
        Command::Calibrate(args) => cmd_calibrate::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            // stdout was closed (`| head`): stop quietly
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One line, naming the problem; never a backtrace.
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("schedlab: error: {msg}");
            ExitCode::from(2)
        }
    }
}
