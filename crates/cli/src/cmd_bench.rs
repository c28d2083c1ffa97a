//! `schedlab bench <hackbench|schbench|tbench> [benchmark flags] [common flags]`:
//! the native benchmarks, run on this host.
//!
//! Each benchmark takes the original tool's own flags (rt-tests
//! `hackbench`, schbench, dbench's `tbench`) and prints the original's
//! report. The common flags may be given before or after the benchmark
//! name:
//!
//! - `--cpus LIST` / `--node N`: CPU affinity of every task (like
//!   `taskset -c LIST` / `numactl -N N` in front of the C tool);
//! - `--json`: print one JSON object on stdout instead of the text report;
//!   the text report then goes to **stderr** (so a terminal still shows
//!   progress and a pipe gets only the JSON);
//! - `--output FILE`: also write the JSON object to FILE (atomically: a
//!   temporary file renamed into place, never a partial file);
//! - `--timeout S`: stop and reap every task after S seconds (exit 2).
//!
//! schbench prints its report on stderr (as the C schbench does since
//! 2023), so under `--json` stdout again holds only the JSON object.
//!
//! SIGINT, SIGTERM and SIGHUP stop the run, reap every task and exit with
//! the shell's status for the signal: 130, 143 and 129 (no report is
//! printed for an interrupted run). Forked tasks die with the run even when
//! it is SIGKILLed.
//!
//! Everything that can be checked before the run is: the parameters, the
//! loadfile, and that `--output`'s directory exists and is writable.
//!
//! Output: when stdout is a closed pipe (`| head`), the run stops quietly
//! (exit 0) at the first line it cannot print, unless `--output` is given,
//! whose file is then still written; any other failure to write stdout
//! (a full disk) is an error naming stdout (exit 2). tbench prints a
//! progress line every second: the first one that cannot be printed stops
//! the run there, its tasks killed and reaped.

use crate::args::HackbenchArgs;
use crate::output::{check_writable, write_atomic, StdoutError};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use native::{hackbench, schbench, tbench, CpuSelection};
use std::cell::RefCell;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Run a benchmark natively on this host.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub bench: Bench,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags shared by every native benchmark.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Pin every task to these CPUs (a Linux CPU list, e.g. 0-3,8).
    #[arg(long, global = true, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Pin every task to the CPUs of this NUMA node.
    #[arg(long, global = true, value_name = "N")]
    pub node: Option<u32>,
    /// Print the result as one JSON object on stdout (text report to stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// Also write the JSON result to FILE (atomically).
    #[arg(long, global = true, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Stop (and reap every task) after S seconds; exit status 2.
    #[arg(long, global = true, value_name = "S", allow_hyphen_values = true)]
    pub timeout: Option<f64>,
}

/// The benchmarks.
///
/// A negative number is read as a value (and rejected with the flag's
/// range), not as an unknown flag.
#[derive(Subcommand, Debug)]
pub enum Bench {
    /// rt-tests hackbench: groups of senders and receivers over sockets or pipes.
    #[command(
        disable_help_flag = false,
        mut_args(HackbenchArgs::for_bench),
        allow_negative_numbers = true
    )]
    Hackbench(HackbenchArgs),
    /// dbench's tbench: N clients replaying an NBENCH loadfile against
    /// a loopback TCP server (started by the run itself).
    #[command(allow_negative_numbers = true)]
    Tbench(TbenchArgs),
    /// schbench (2023+): message and worker threads, wakeup and request
    /// latency percentiles. The report goes to stderr, as schbench's does.
    #[command(allow_negative_numbers = true)]
    Schbench(SchbenchArgs),
}

/// The most tbench clients `benchspec` accepts (checked by a test below).
const MAX_CLIENTS: i64 = 100_000;

/// schbench flags (same letters, same defaults as the new schbench).
#[derive(Args, Debug)]
pub struct SchbenchArgs {
    /// Message threads.
    #[arg(
        short = 'm',
        long = "message-threads",
        value_name = "N",
        default_value_t = 1
    )]
    pub message_threads: u32,
    /// Worker threads per message thread [default: ceil(online CPUs / M)].
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<u32>,
    /// Seconds to run; 0 runs until interrupted.
    #[arg(short = 'r', long = "runtime", value_name = "S", default_value_t = 30)]
    pub runtime: u32,
    /// Microseconds each request sleeps.
    #[arg(
        short = 's',
        long = "sleep_usec",
        value_name = "USEC",
        default_value_t = 100
    )]
    pub sleep_usec: u32,
    /// Cache footprint of each worker's matrices, KB.
    #[arg(short = 'F', value_name = "KB", default_value_t = 256)]
    pub footprint_kb: u32,
    /// Matrix multiplications per request.
    #[arg(
        short = 'n',
        long = "operations",
        value_name = "N",
        default_value_t = 5
    )]
    pub operations: u32,
    /// Warm-up seconds, after which the statistics are zeroed (forced to 0
    /// under a 30 s runtime and in RPS mode).
    #[arg(
        short = 'w',
        long = "warmuptime",
        value_name = "S",
        default_value_t = 0
    )]
    pub warmup: u32,
    /// Seconds between interval reports; 0 disables them.
    #[arg(
        short = 'i',
        long = "intervaltime",
        value_name = "S",
        default_value_t = 10
    )]
    pub interval: u32,
    /// Zero the statistics every S seconds (0: never).
    #[arg(short = 'z', long = "zerotime", value_name = "S", default_value_t = 0)]
    pub zerotime: u32,
    /// Requests per second, spread over the message threads (0: closed loop).
    #[arg(short = 'R', long = "rps", value_name = "N", default_value_t = 0)]
    pub rps: u32,
    /// No per-CPU lock around the matrix work.
    #[arg(short = 'L', long = "no-locking")]
    pub no_locking: bool,
    /// Calibrate: no lock, and the sleep is not part of the request time.
    #[arg(short = 'C', long = "calibrate")]
    pub calibrate: bool,
}

/// dbench `tbench` flags.
#[derive(Args, Debug)]
pub struct TbenchArgs {
    /// Number of client processes.
    #[arg(
        value_name = "NCLIENTS",
        value_parser = clap::value_parser!(u32).range(1..=MAX_CLIENTS)
    )]
    pub clients: u32,
    /// Seconds of execute phase, after the warm-up (dbench's -t).
    #[arg(
        short = 't',
        long = "time",
        visible_alias = "timelimit",
        value_name = "S",
        default_value_t = 600
    )]
    pub time: u32,
    /// Seconds of warm-up before the execute phase [default: time/5].
    #[arg(long, value_name = "S")]
    pub warmup: Option<u32>,
    /// NBENCH loadfile to replay, e.g. /usr/share/dbench/client.txt
    /// [default: a built-in mix, see `native::loadfile`].
    #[arg(short = 'c', long = "loadfile", value_name = "PATH")]
    pub loadfile: Option<PathBuf>,
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    let common = &args.common;
    let cpus = cpu_selection(common)?;
    let timeout = match common.timeout {
        None => None,
        Some(t) if t.is_finite() && t > 0.0 && t < 1e9 => Some(Duration::from_secs_f64(t)),
        Some(t) => bail!("--timeout: {t} is not a positive number of seconds"),
    };
    if let Some(path) = &common.output {
        // Before the run, not after it: a typo must not cost the whole run.
        check_writable(path).context("--output")?;
    }
    let text = Text::new(common);
    let result = match args.bench {
        Bench::Hackbench(a) => run_hackbench(a, cpus, timeout, common, &text),
        Bench::Tbench(a) => run_tbench(a, cpus, timeout, common, &text),
        Bench::Schbench(a) => run_schbench(a, cpus, timeout, common),
    };
    match result {
        // A line the run could not print (and that the --output file did
        // not make up for) fails the run, even though it completed.
        Ok(()) => text.finish().map(|()| ExitCode::SUCCESS),
        Err(e) => match e.downcast_ref::<native::Error>() {
            Some(n) if n.is_interrupted() => {
                to_stderr(&format!("schedlab: {n}\n"));
                // 128 + the signal, as a shell reports it; SIGINT's 2 if
                // the library ever reports an interruption without one.
                let sig = n.interrupt_signal().unwrap_or(2);
                Ok(ExitCode::from(128 + sig as u8))
            }
            _ => Err(e),
        },
    }
}

fn cpu_selection(common: &CommonArgs) -> Result<CpuSelection> {
    Ok(match (&common.cpus, common.node) {
        (Some(_), Some(_)) => bail!("--cpus and --node: give one or the other"),
        (Some(list), None) => CpuSelection::Cpus(native::cpus::parse_cpu_list(list, "--cpus")?),
        (None, Some(n)) => CpuSelection::Node(n),
        (None, None) => CpuSelection::Inherit,
    })
}

/// Where the text report goes: stdout normally, stderr under `--json`.
///
/// A failed write to stdout is kept (further lines are dropped) and
/// reported by [`Text::check`] / [`Text::finish`]: a closed pipe stops the
/// run quietly unless an `--output` file is still to be written, any other
/// failure stops it as an error.
struct Text {
    json: bool,
    /// An `--output` file will hold the result: a closed stdout is no
    /// reason to stop the run.
    has_output: bool,
    failed: RefCell<Option<std::io::Error>>,
}

impl Text {
    fn new(common: &CommonArgs) -> Self {
        Text {
            json: common.json,
            has_output: common.output.is_some(),
            failed: RefCell::new(None),
        }
    }

    /// Prints `s`; a failure is kept for [`Text::check`].
    fn print(&self, s: &str) {
        if self.json {
            to_stderr(s);
            return;
        }
        if self.failed.borrow().is_some() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
            *self.failed.borrow_mut() = Some(e);
        }
    }

    /// Prints `s` and stops the run if stdout failed (see [`Text`]).
    fn print_checked(&self, s: &str) -> Result<()> {
        self.print(s);
        self.check()
    }

    /// Whether a failed write must stop the run now: what [`Text::check`]
    /// would report, without taking the error.
    fn must_stop(&self) -> bool {
        match &*self.failed.borrow() {
            Some(e) => !(e.kind() == std::io::ErrorKind::BrokenPipe && self.has_output),
            None => false,
        }
    }

    /// Err when a failed write must stop the run now.
    fn check(&self) -> Result<()> {
        let mut failed = self.failed.borrow_mut();
        match &*failed {
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe && self.has_output => Ok(()),
            Some(_) => Err(StdoutError(failed.take().expect("matched Some")).into()),
            None => Ok(()),
        }
    }

    /// After the run: the error for a line that could not be printed. A
    /// closed pipe is the reader's choice and main() exits 0 for it.
    fn finish(&self) -> Result<()> {
        match self.failed.borrow_mut().take() {
            Some(e) => Err(StdoutError(e).into()),
            None => Ok(()),
        }
    }
}

/// Writes the JSON object to `--output` (first: a closed stdout must not
/// lose it) and, under `--json`, to stdout.
fn emit_json(common: &CommonArgs, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising the JSON report")?;
    if let Some(path) = &common.output {
        write_atomic(path, format!("{text}\n").as_bytes()).context("--output")?;
    }
    if common.json {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")
            .and_then(|_| out.flush())
            .map_err(StdoutError)?;
    }
    Ok(())
}

/// `eprint!` without the panic when stderr is gone.
fn to_stderr(s: &str) {
    let _ = std::io::stderr().lock().write_all(s.as_bytes());
}

fn run_hackbench(
    a: HackbenchArgs,
    cpus: CpuSelection,
    timeout: Option<Duration>,
    common: &CommonArgs,
    text: &Text,
) -> Result<()> {
    let cfg = hackbench::HackbenchConfig {
        bench: a.to_bench(),
        cpus,
        timeout,
    };
    cfg.validate()?;
    text.print_checked(&cfg.header())?;
    let report = hackbench::run(&cfg)?;
    text.print(&format!("{}\n", report.time_line()));
    emit_json(common, &report)
}

fn run_tbench(
    a: TbenchArgs,
    cpus: CpuSelection,
    timeout: Option<Duration>,
    common: &CommonArgs,
    text: &Text,
) -> Result<()> {
    let cfg = tbench::TbenchConfig {
        bench: tbench::Tbench {
            clients: a.clients,
            time: a.time,
            warmup: a.warmup,
            loadfile: a.loadfile,
        },
        cpus,
        timeout,
    };
    // Checks the loadfile too, before anything is printed.
    cfg.validate()?;
    text.print_checked(&cfg.header())?;
    // A progress line that cannot be printed stops the run (a closed pipe:
    // exit 0 quietly, unless --output still wants the result).
    let report = tbench::run(&cfg, &mut |line| {
        text.print(line);
        if text.must_stop() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let report = match report {
        Err(native::Error::Stopped) => {
            text.check()?;
            return Err(native::Error::Stopped.into());
        }
        r => r?,
    };
    text.print(&report.summary());
    emit_json(common, &report)
}

fn run_schbench(
    a: SchbenchArgs,
    cpus: CpuSelection,
    timeout: Option<Duration>,
    common: &CommonArgs,
) -> Result<()> {
    let cfg = schbench::SchbenchConfig {
        bench: schbench::Schbench {
            message_threads: a.message_threads,
            worker_threads: a.threads,
            runtime: a.runtime,
            sleep_usec: a.sleep_usec,
            footprint_kb: a.footprint_kb,
            operations: a.operations,
            warmup: a.warmup,
            interval: a.interval,
            zerotime: a.zerotime,
            rps: a.rps,
            no_locking: a.no_locking,
            calibrate: a.calibrate,
        },
        cpus,
        timeout,
    };
    cfg.validate()?;
    // schbench prints everything on stderr, whatever --json says.
    if let Some(line) = cfg.setting_workers_line() {
        to_stderr(&line);
    }
    let report = schbench::run(&cfg, &mut |text| to_stderr(text))?;
    to_stderr(report.text());
    emit_json(common, &report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_clients_is_benchspecs_limit() {
        let t = |clients| tbench::Tbench {
            clients,
            ..Default::default()
        };
        t(MAX_CLIENTS as u32).validate().unwrap();
        assert!(t(MAX_CLIENTS as u32 + 1).validate().is_err());
    }
}
