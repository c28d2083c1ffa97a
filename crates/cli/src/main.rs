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
mod cmd_compare_html;
mod cmd_compare_trace;
mod cmd_costs;
mod cmd_fidelity;
mod cmd_kernel;
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
    #[command(subcommand, after_help = cmd_topology::MACHINE_HELP)]
    Topology(cmd_topology::TopologyCommand),
    /// Simulate a benchmark on a modelled machine and kernel.
    Sim(Box<cmd_sim::SimArgs>),
    /// Run a benchmark natively on this host.
    Bench(cmd_bench::BenchArgs),
    /// Run an experiment (baseline against variants, over a sweep, repeated) and print the mmtests comparison.
    Compare(cmd_compare::CompareArgs),
    /// Run the fidelity corpus (published results of real kernel changes) and score the simulator against them.
    Fidelity(cmd_fidelity::FidelityArgs),
    /// Measure this host's OS and hardware costs and write them as a cost profile (for --cost-profile).
    Calibrate(cmd_calibrate::CalibrateArgs),
    /// Show a machine preset's cost profile (every cost the simulator charges, with its source).
    #[command(subcommand)]
    Costs(cmd_costs::CostsCommand),
    /// Boot a real Linux kernel under qemu on a machine's topology and compare its placement with the simulator's.
    #[command(subcommand)]
    Kernel(cmd_kernel::KernelCommand),
}

/// What std's `print!`/`println!` panic with when stdout cannot be written
/// (`library/std/src/io/stdio.rs`, unchanged since Rust 1.0).
const PRINT_PANIC_STDOUT: &str = "failed printing to stdout: ";
/// The same for `eprint!`/`eprintln!`.
const PRINT_PANIC_STDERR: &str = "failed printing to stderr: ";

/// Writes one line to stderr, ignoring failure: there is nowhere left to
/// report it (and `eprintln!` would panic).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{}", output::one_line(line));
}

/// How the process ends after failing to write stdout: quietly with status
/// 0 for a closed pipe (the reader stopped reading: `| head`), otherwise
/// (a full disk, /dev/full) with one line naming stdout and status 2.
fn stdout_failed(closed_pipe: bool, what: &str) -> u8 {
    if closed_pipe {
        return 0;
    }
    say(&format!("schedlab: error: writing to stdout: {what}"));
    2
}

/// True when the error is a failed write to a closed stdout, as opposed to,
/// say, a benchmark's own socket hitting EPIPE.
fn is_closed_stdout(e: &anyhow::Error) -> bool {
    if let Some(out) = e
        .chain()
        .find_map(|c| c.downcast_ref::<output::StdoutError>())
    {
        return out.is_closed_pipe();
    }
    // Commands that write stdout with `?` return the bare io::Error.
    e.chain()
        .all(|c| c.downcast_ref::<native::Error>().is_none())
        && e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        })
}

/// Renders a clap usage error as one line. clap spreads some over several
/// lines (the missing arguments are listed under "...not provided:"); the
/// continuation lines are joined in. A value outside a flag's range reads
/// `FLAG: VALUE is not in MIN..=MAX`.
fn usage_error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if line.ends_with(':') {
        let more: Vec<&str> = lines
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        if !more.is_empty() {
            line = format!("{line} {}", more.join(", "));
        }
    }
    range_error(&line).unwrap_or(line)
}

/// `invalid value '-1' for '<NCLIENTS>': -1 is not in 1..=100000` →
/// `NCLIENTS: -1 is not in 1..=100000` (`--groups <N>` → `--groups`).
fn range_error(line: &str) -> Option<String> {
    let rest = line.strip_prefix("invalid value '")?;
    let (value, rest) = rest.split_once("' for '")?;
    let (arg, problem) = rest.split_once("': ")?;
    if !problem.starts_with(&format!("{value} is not in ")) {
        return None;
    }
    let flag = match arg.split_once(' ') {
        Some((flag, _value_name)) => flag,
        None => arg.trim_start_matches('<').trim_end_matches('>'),
    };
    Some(format!("{flag}: {problem}"))
}

fn main() -> ExitCode {
    // A panic is a bug in schedlab, never the user's fault: report it in one
    // line, without a backtrace. print!/println! panic when stdout cannot be
    // written: that is handled as a failed write, not as a bug.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if let Some(what) = msg.strip_prefix(PRINT_PANIC_STDOUT) {
            let closed = what.contains("Broken pipe") || what.contains("os error 32");
            std::process::exit(stdout_failed(closed, what).into());
        }
        if let Some(what) = msg.strip_prefix(PRINT_PANIC_STDERR) {
            // Nothing more can be said. A closed pipe is a reader that
            // stopped, as for stdout.
            let closed = what.contains("Broken pipe") || what.contains("os error 32");
            std::process::exit(if closed { 0 } else { 2 });
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        say(&format!(
            "schedlab: internal error (please report): {msg}{at}"
        ));
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
                let code = e.exit_code() as u8;
                return match e.print() {
                    // Help and version go to stdout, which may fail like
                    // any other output.
                    Err(io) if !e.use_stderr() => ExitCode::from(stdout_failed(
                        io.kind() == std::io::ErrorKind::BrokenPipe,
                        &io.to_string(),
                    )),
                    _ => ExitCode::from(code),
                };
            }
            // Usage errors: one line naming the problem, exit status 2.
            say(&format!("schedlab: error: {}", usage_error_line(&e)));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Topology(cmd) => cmd_topology::run(cmd),
        Command::Sim(args) => cmd_sim::run(*args),
        Command::Bench(args) => cmd_bench::run(args),
        Command::Compare(args) => cmd_compare::run(args),
        Command::Costs(cmd) => cmd_costs::run(cmd),
        Command::Fidelity(args) => cmd_fidelity::run(args),
        Command::Calibrate(args) => cmd_calibrate::run(args),
        Command::Kernel(cmd) => cmd_kernel::run(cmd),
    };
    // print! leaves an unterminated last line in stdout's buffer; write it
    // now, while a failure can still be reported (exit would drop it).
    let result = result.and_then(|code| {
        use std::io::Write;
        std::io::stdout().flush().map_err(output::StdoutError)?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) if is_closed_stdout(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, naming the problem; never a backtrace.
            say(&format!("schedlab: error: {e:#}"));
            ExitCode::from(2)
        }
    }
}
