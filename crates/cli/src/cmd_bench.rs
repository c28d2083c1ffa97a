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
//! SIGINT/SIGTERM stop the run, reap every task and exit with status 130
//! (no report is printed for an interrupted run).

use crate::args::HackbenchArgs;
use crate::output::write_atomic;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use native::{hackbench, schbench, tbench, CpuSelection};
use std::io::Write;
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
#[derive(Subcommand, Debug)]
pub enum Bench {
    /// rt-tests hackbench: groups of senders and receivers over sockets or pipes.
    #[command(disable_help_flag = false, mut_args(HackbenchArgs::for_bench))]
    Hackbench(HackbenchArgs),
    /// dbench's tbench: N clients replaying an NBENCH loadfile against
    /// a loopback TCP server (started by the run itself).
    Tbench(TbenchArgs),
    /// schbench (2023+): message and worker threads, wakeup and request
    /// latency percentiles. The report goes to stderr, as schbench's does.
    Schbench(SchbenchArgs),
}

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
    #[arg(value_name = "NCLIENTS")]
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
    let result = match args.bench {
        Bench::Hackbench(a) => run_hackbench(a, cpus, timeout, common),
        Bench::Tbench(a) => run_tbench(a, cpus, timeout, common),
        Bench::Schbench(a) => run_schbench(a, cpus, timeout, common),
    };
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => match e.downcast_ref::<native::Error>() {
            Some(n) if n.is_interrupted() => {
                to_stderr(&format!("schedlab: {n}\n"));
                Ok(ExitCode::from(130))
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
struct Text {
    json: bool,
}

impl Text {
    fn print(&self, s: &str) {
        if self.json {
            to_stderr(s);
        } else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(s.as_bytes());
            let _ = out.flush();
        }
    }
}

fn emit_json(common: &CommonArgs, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising the JSON report")?;
    if let Some(path) = &common.output {
        write_atomic(path, format!("{text}\n").as_bytes()).context("--output")?;
    }
    if common.json {
        let mut out = std::io::stdout().lock();
        match writeln!(out, "{text}").and_then(|_| out.flush()) {
            // A closed pipe (`| head`) is the reader's choice, not an error.
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(e).context("writing the JSON report to stdout")
            }
            _ => {}
        }
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
) -> Result<()> {
    let cfg = hackbench::HackbenchConfig {
        bench: a.to_bench(),
        cpus,
        timeout,
    };
    cfg.validate()?;
    let text = Text { json: common.json };
    text.print(&cfg.header());
    let report = hackbench::run(&cfg)?;
    text.print(&format!("{}\n", report.time_line()));
    emit_json(common, &report)
}

fn run_tbench(
    a: TbenchArgs,
    cpus: CpuSelection,
    timeout: Option<Duration>,
    common: &CommonArgs,
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
    cfg.validate()?;
    let text = Text { json: common.json };
    text.print(&cfg.header());
    let report = tbench::run(&cfg, &mut |line| text.print(line))?;
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
