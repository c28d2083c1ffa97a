//! `schedlab sim <benchmark> [the benchmark's own flags] --machine M ...`:
//! simulate a benchmark and print what the real one prints, plus a placement
//! summary (or one JSON object with `--json`).
//!
//! Every number flag takes an integer in a range ([`int_in`]); a run is
//! bounded by `--max-events`, `--time-limit` (simulated seconds) and
//! `--max-memory` (its estimate, checked before it is built), and shows
//! its progress on stderr when that is a terminal.
//!
//! `schedlab sim --replay FILE` reruns the run a `--json` result records.

use crate::args::{int_in, name_values};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use lab::workload::{HackbenchSpec, SchbenchSpec, SchbenchVersion, SpinSpec, TbenchSpec};
use lab::{Policy, RunSpec, WorkloadSpec};
use serde_json::{json, Value};
use sim::placement::linux::Features;
use sim::run::SimResult;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

mod progress;
mod stats;
pub mod trace;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    pub bench: Option<SimBench>,
    /// List the kernel profiles (--kernel) and exit.
    #[arg(long)]
    pub list_kernels: bool,
    /// List the wake-up path and load-balancer features (--feature) and exit.
    #[arg(long)]
    pub list_features: bool,
    /// Rerun the run a `schedlab sim ... --json` result file records and print it as that command did (exit status 1 if the result differs).
    #[arg(long, value_name = "RESULT.json", conflicts_with_all = ["list_kernels", "list_features"])]
    pub replay: Option<PathBuf>,
    /// Print the replayed run as JSON (as the file) or as the text report (as the command without --json).
    #[arg(long, value_name = "json|text", requires = "replay", default_value = "json", value_parser = ["json", "text"])]
    pub replay_format: String,
}

#[derive(Subcommand, Debug)]
pub enum SimBench {
    /// hackbench (rt-tests flags): groups of senders and receivers exchanging messages.
    #[command(allow_negative_numbers = true)]
    Hackbench(SimHackbenchArgs),
    /// Compute-only tasks, all started on the first allowed CPU without fork
    /// placement: only the load balancer spreads them.
    #[command(allow_negative_numbers = true)]
    Spin(SpinArgs),
    /// schbench (new 2023+ or old 2016-2019, --version): message and worker
    /// threads; wakeup, request and RPS percentiles as schbench prints them.
    #[command(allow_negative_numbers = true)]
    Schbench(SimSchbenchArgs),
    /// dbench's tbench: N clients replaying an NBENCH loadfile, each against
    /// its own tbench_srv process over loopback TCP (times are simulated).
    #[command(allow_negative_numbers = true)]
    Tbench(SimTbenchArgs),
    /// A false-sharing loop: one task stores to a word, another loads it, on
    /// the first two CPUs the run may use (e.g. --cpus 0,4).
    #[command(allow_negative_numbers = true)]
    Falseshare(FalseShareArgs),
    /// An rt-app JSON workload (rt-app's grammar: threads, phases, run/sleep/timer,
    /// mutexes, condition variables, barriers, suspend/resume); prints a per-thread
    /// table and writes rt-app's per-thread logs to --logdir or the file's logdir.
    Rtapp(SimRtappArgs),
    /// A NAS Parallel Benchmark (NPB 3.3.1, OpenMP): bt, cg, ep, is, lu, mg, sp or ua,
    /// with libgomp's barriers and the kernel's phases and memory traffic; prints NPB's
    /// report lines (times are simulated).
    Npb(SimNpbArgs),
}

#[derive(Args, Debug)]
pub struct SimNpbArgs {
    /// The kernel: bt, cg, ep, is, lu, mg, sp, ua.
    #[arg(value_name = "BENCH")]
    pub bench: String,
    /// The problem class: S, W, A, B, C, D.
    #[arg(long, default_value = "S", value_name = "S|W|A|B|C|D")]
    pub class: String,
    /// OMP_NUM_THREADS (default: the CPUs the run may use, as mmtests sets it).
    #[arg(long, value_name = "N",
          value_parser = int_in::<u32>(1, sim::workload::npb::MAX_THREADS.into()))]
    pub threads: Option<u32>,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

#[derive(Args, Debug)]
pub struct SimRtappArgs {
    /// The rt-app JSON file.
    #[arg(value_name = "FILE.json")]
    pub file: PathBuf,
    /// Write rt-app's per-thread logs (PREFIX-THREAD-IDX.log) into DIR [the file's global.logdir; no logs if it names none].
    #[arg(long, value_name = "DIR")]
    pub logdir: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

#[derive(Args, Debug)]
pub struct FalseShareArgs {
    /// Stores by the writer and loads by the reader.
    #[arg(short = 'n', long = "iterations", value_name = "N", default_value_t = 1_000_000,
          value_parser = int_in::<u32>(1, u32::MAX.into()))]
    pub iterations: u32,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

#[derive(Args, Debug)]
pub struct SpinArgs {
    /// Number of tasks (default: twice the CPUs the run may use).
    #[arg(short = 'n', long = "tasks", value_name = "N",
          value_parser = int_in::<u32>(1, sim::run::MAX_SPIN_TASKS.into()))]
    pub tasks: Option<u32>,
    /// User work of each task, ms.
    #[arg(short = 'w', long = "work-ms", value_name = "MS", default_value_t = 100,
          value_parser = int_in::<u32>(1, u32::MAX.into()))]
    pub work_ms: u32,
    /// Memory each task streams, MiB: a private array first touched where the task first runs (all on one CPU), read an eighth at a time, so pages land on one node and NUMA balancing has work.
    #[arg(long = "mem-mib", value_name = "MIB", default_value_t = 0,
          value_parser = int_in::<u64>(0, sim::run::MAX_SPIN_MEM_MIB as i128))]
    pub mem_mib: u64,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

/// Options shared by every simulated benchmark.
#[derive(Args, Debug)]
pub struct CommonSimArgs {
    /// Machine: a preset (see `schedlab topology list`), smp:KEY=VALUE,... with cost=PRESET|FILE (see `schedlab topology --help`), sysfs:DIR or hwloc:FILE.
    #[arg(long, default_value = "kunpeng920-node")]
    pub machine: String,
    /// Restrict the run to these CPUs, like taskset (e.g. 0-3,8).
    #[arg(long, conflicts_with = "node")]
    pub cpus: Option<String>,
    /// Restrict the run to the CPUs of this NUMA node, like numactl -N.
    #[arg(long, value_name = "N", value_parser = int_in::<usize>(0, MAX_NODE))]
    pub node: Option<usize>,
    /// Seed of every random stream.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = int_in::<u64>(0, u64::MAX.into()))]
    pub seed: u64,
    #[command(flatten)]
    pub bounds: crate::args::BoundArgs,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Verify the model's invariants while running (slower).
    #[arg(long)]
    pub check: bool,
    /// Model costs (on) or make every modelled cost zero (off).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub costs: String,
    /// Use this cost profile (TOML, from `schedlab costs show PRESET --toml` or `schedlab calibrate`) instead of the machine's costs (a preset's, or an smp: machine's cost=).
    #[arg(long, value_name = "FILE")]
    pub cost_profile: Option<std::path::PathBuf>,
    /// Placement policy: the Linux wake-up path and load balancer, or the sched_ext default idle pick (no load balancer: sched_ext's default does not balance).
    #[arg(long, default_value = "linux", value_parser = ["linux", "scx"])]
    pub policy: String,
    /// Kernel profile of the Linux wake-up path (see --list-kernels).
    #[arg(long, default_value = "latest")]
    pub kernel: String,
    /// Override a wake-up path or load-balancer feature, NAME=VALUE (repeatable; see --list-features); also as the kernel's sched_features spells it: SIS_PROP=off, SIS_PROP (on), NO_SIS_PROP (off).
    #[arg(long = "feature", value_name = "NAME=VALUE")]
    pub features: Vec<String>,
    /// Override a kernel build option, NAME=y|n (repeatable; see --list-kernels).
    #[arg(long = "kernel-config", value_name = "NAME=y|n")]
    pub kernel_config: Vec<String>,
    /// Print to stderr where the host time went: events per wall second, ns per event, the part spent inside the modelled kernel's decisions (placement, load balancing) with their scan work, and peak memory.
    #[arg(long)]
    pub stats: bool,
    /// The cpuidle driver and governor: none, or DRIVER[:GOVERNOR] with DRIVER intel_idle, acpi_idle, haltpoll, pseries_idle, powernv_idle and GOVERNOR menu, teo, haltpoll [default: the machine's].
    #[arg(long, value_name = "DRIVER[:GOVERNOR]")]
    pub cpuidle: Option<String>,
    #[command(flatten)]
    pub trace: trace::TraceArgs,
    /// Run in the guests of a host: a preset (vm1x8, vm2x8, vm1x8-noisy) or a machine file (TOML, docs/vm.md); one workload instance per guest, reported per guest.
    #[arg(long, value_name = "FILE|PRESET", conflicts_with_all = ["cpus", "node"])]
    pub host: Option<String>,
    /// kernel.numa_balancing: automatic NUMA balancing on or off [default: on when the machine has more than one node, as the kernel does; on is refused on a one-node machine].
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    pub numa_balancing: Option<String>,
    /// Where new pages go, as numactl sets it: local (first touch), interleave=all|NODES, membind=NODES (NODES: 0,2-3).
    #[arg(long, value_name = "POLICY")]
    pub mem_policy: Option<String>,
    /// Map workload memory with transparent huge pages (a 2 MiB chunk faults and is scanned as one PMD).
    #[arg(long)]
    pub thp: bool,
    /// A NUMA balancing knob, NAME=VALUE (repeatable): scan_delay_ms, scan_period_min_ms, scan_period_max_ms, scan_size_mb (the kernel's sysctl/debugfs names without the numa_balancing_ prefix).
    #[arg(long = "numa-param", value_name = "NAME=VALUE")]
    pub numa_params: Vec<String>,
    /// With --host: this many copies of the host's first guest.
    #[arg(long, value_name = "N", requires = "host", value_parser = int_in::<u32>(1, lab::vm::MAX_GUESTS.into()))]
    pub guests: Option<u32>,
    /// With --host: the host's kernel profile instead of the description's (its fair class, placement and KVM rules; e.g. linux-4.18: up to 5.18 KVM flags a halted vCPU pre-empted too).
    #[arg(long, value_name = "KERNEL", requires = "host")]
    pub host_kernel: Option<String>,
}

/// The highest `--node`: Linux's MAX_NUMNODES with the largest
/// CONFIG_NODES_SHIFT (10).
const MAX_NODE: i128 = 1023;

impl CommonSimArgs {
    /// Apply the run's bounds (`--max-events`, `--time-limit`,
    /// `--max-memory`) to its options.
    fn bound(&self, o: &mut sim::run::SimOptions) {
        self.bounds.bounds().apply(o);
        o.phase_timing = self.stats;
    }
}

/// hackbench's own flags (shared with `schedlab bench`), then the
/// simulation's.
#[derive(Args, Debug)]
#[command(mut_args(crate::args::HackbenchArgs::for_sim))]
pub struct SimHackbenchArgs {
    #[command(flatten)]
    pub bench: crate::args::HackbenchArgs,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

/// A count the parser has kept in `1..=u32::MAX` ([`int_in`]).
fn count(v: i64) -> u32 {
    u32::try_from(v).expect("the parser bounds every count to u32")
}

/// The flag that sets a run-spec field, for errors (`features.NAME` is
/// `--feature NAME`).
fn flag_of(field: &str) -> String {
    if let Some(name) = field.strip_prefix("features.") {
        return format!("--feature {name}");
    }
    if let Some(name) = field.strip_prefix("kernel_config.") {
        return format!("--kernel-config {name}");
    }
    if let Some(name) = field.strip_prefix("numa_params.") {
        return format!("--numa-param {name}");
    }
    let known = [
        ("cputime_usec", "-c/--cputime"),
        ("warmup", "-w/--warmuptime"),
        ("footprint_kb", "-F"),
        ("operations", "-n/--operations"),
        ("interval", "-i/--intervaltime"),
        ("zerotime", "-z/--zerotime"),
        ("no_locking", "-L/--no-locking"),
        ("calibrate", "-C/--calibrate"),
        ("split", "--split"),
        ("rps", "-R/--rps"),
        ("version", "--version"),
        ("file", "rt-app file"),
    ];
    match known.iter().find(|(f, _)| *f == field) {
        Some((_, flag)) => flag.to_string(),
        None => format!("--{}", field.replace('_', "-")),
    }
}

/// A run-spec error as the command line says it: naming the flag.
fn cli_error(e: lab::exec::RunError) -> anyhow::Error {
    match e {
        lab::exec::RunError::Spec(s) => {
            let msg = s
                .message
                .replace("(use version new)", "(use --version new)")
                .replace("(use version old)", "(use --version old)");
            anyhow::anyhow!("{}: {msg}", flag_of(&s.field))
        }
        other => other.into(),
    }
}

/// The run the common flags describe, for `workload`.
fn spec(c: &CommonSimArgs, workload: WorkloadSpec) -> Result<RunSpec> {
    let pairs = name_values;
    let policy = if c.policy == "scx" {
        if !c.features.is_empty() || !c.kernel_config.is_empty() {
            bail!("--feature and --kernel-config apply to --policy linux only");
        }
        Policy::Scx
    } else {
        Policy::Linux
    };
    Ok(RunSpec {
        machine: c.machine.clone(),
        cpus: c.cpus.clone(),
        node: c.node,
        kernel: c.kernel.clone(),
        features: crate::args::feature_values(&c.features)?,
        kernel_config: pairs(&c.kernel_config, "--kernel-config", "NAME=y|n")?,
        policy,
        costs: c.costs == "on",
        cpuidle: c.cpuidle.clone(),
        cost_profile: c.cost_profile.clone(),
        seed: c.seed,
        check: c.check,
        host: c.host.clone(),
        guests: c.guests,
        host_kernel: c.host_kernel.clone(),
        numa_balancing: c.numa_balancing.as_deref().map(|v| v == "on"),
        mem_policy: c.mem_policy.clone(),
        thp: c.thp,
        numa_params: pairs(&c.numa_params, "--numa-param", "NAME=VALUE")?,
        ..RunSpec::new(workload)
    })
}

/// Simulate the run the flags describe and print it.
fn simulate(c: &CommonSimArgs, workload: WorkloadSpec) -> Result<ExitCode> {
    let spec = spec(c, workload)?;
    let trace = c.trace.open()?;
    let slot = trace.as_ref().map(|t| t.slot());
    let ran = run_spec(&spec, |o| {
        c.bound(o);
        o.trace = slot.clone();
    })?;
    if let Some(t) = trace {
        t.finish()?;
    }
    print_run(&ran.record, &ran.text, c.json)?;
    if c.stats {
        eprintln!("{}", stats::line(&ran.cost));
    }
    Ok(ExitCode::SUCCESS)
}

/// Files a tool writes: (name, content).
type ToolFiles = Vec<(String, String)>;

/// A simulated run as the commands print it.
struct Ran {
    /// The `--json` record.
    record: Value,
    /// The text report.
    text: String,
    /// What the run cost the host (`--stats`).
    cost: stats::HostCost,
    /// Files the tool would write (rt-app's logs).
    files: ToolFiles,
}

/// Simulate `spec` within the bounds `bound` sets.
fn run_spec(spec: &RunSpec, bound: impl Fn(&mut sim::run::SimOptions)) -> Result<Ran> {
    let t0 = Instant::now();
    let s = progress::show(|p| {
        lab::exec::simulate_with(spec, |o| {
            bound(o);
            o.progress = p;
        })
    })
    .map_err(cli_error)?;
    let wall = t0.elapsed().as_secs_f64();
    let record = report(&s.result, wall, &s.params, spec)?;
    let text = format!(
        "{}{}{}",
        s.result.text,
        placement_text(&s.result),
        numa_text(&s.result)
    );
    let cost = stats::HostCost {
        wall_s: wall,
        events: s.result.counters.events,
        wakeups: s.result.counters.wakeups,
        sim_ns: s.result.sim_ns,
        probes: s.result.placement.probes,
        phases: s.result.phases,
    };
    Ok(Ran {
        record,
        text,
        cost,
        files: s.result.files.clone(),
    })
}

/// `schedlab sim rtapp FILE.json`: simulate it, write rt-app's logs (to
/// `--logdir`, else the file's `global.logdir`, else nowhere) and print the
/// per-thread table.
fn rtapp(a: SimRtappArgs) -> Result<ExitCode> {
    let r = lab::workload::RtappSpec {
        file: a.file.clone(),
        native_nice: None,
    };
    let (_, app) = r.load().map_err(|e| cli_error(e.into()))?;
    let dir = a
        .logdir
        .clone()
        .or_else(|| app.global.logdir.as_ref().map(PathBuf::from));
    if let Some(d) = &dir {
        if !d.is_dir() {
            let flag = if a.logdir.is_some() {
                "--logdir"
            } else {
                "global.logdir"
            };
            bail!("{flag} {}: not a directory", d.display());
        }
    }
    let spec = spec(&a.common, WorkloadSpec::Rtapp(r))?;
    let Ran {
        record,
        text,
        cost,
        files,
    } = run_spec(&spec, |o| a.common.bound(o))?;
    if let Some(d) = &dir {
        for (name, body) in &files {
            let path = d.join(name);
            crate::output::write_atomic(&path, body.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    print_run(&record, &text, a.common.json)?;
    if a.common.stats {
        eprintln!("{}", stats::line(&cost));
    }
    Ok(ExitCode::SUCCESS)
}

/// This schedlab: its version and the git commit it was built from
/// (`unknown` when not built from a checkout).
pub fn provenance() -> Value {
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("SCHEDLAB_GIT_COMMIT"),
    })
}

/// The fields of a `--json` record that measure the host, not the run: a
/// replay recomputes them and does not compare them.
pub const HOST_FIELDS: [&str; 2] = ["wall_s", "events_per_s"];

/// The largest result file `--replay` reads. A `sim --json` result grows
/// with the machine (per-CPU and per-domain figures): about 30 KB for the
/// 224-CPU preset, so well under 1 MiB for 4096 CPUs; 64 MiB is far beyond
/// any result, while `/dev/zero` or a wrong, huge file fails at once.
const MAX_RESULT_BYTES: u64 = 64 << 20;

/// `schedlab sim --replay FILE`: rerun the run FILE records (its `run`
/// field), print it as JSON or text, and check the new record against the
/// file's. The fields that measure the host ([`HOST_FIELDS`]) are this
/// run's and are not compared, nor is `schedlab` (the binary that wrote
/// it). A difference is reported on stderr, naming the fields, with exit
/// status 1; relative paths in the run (cost profile, `sysfs:`/`hwloc:`
/// machine, tbench loadfile) are taken from the current directory, as the
/// original run took them.
fn replay(file: &Path, format: &str) -> Result<ExitCode> {
    let what = file.display();
    let bytes = topology::input::read_capped(file, MAX_RESULT_BYTES)
        .map_err(|e| anyhow!("--replay {what}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("--replay {what}: not UTF-8 text"))?;
    let recorded: Value = serde_json::from_str(&text)
        .with_context(|| format!("--replay {what}: not a JSON result"))?;
    let run = recorded.get("run").with_context(|| {
        format!("--replay {what}: no \"run\" field (not written by `schedlab sim --json`, or written before results recorded their run)")
    })?;
    let spec: RunSpec = serde_json::from_value(run.clone())
        .with_context(|| format!("--replay {what}: bad \"run\" field"))?;
    if spec.mode != lab::Mode::Sim {
        bail!(
            "--replay {what}: a {} run; only simulated runs replay",
            spec.mode.name()
        );
    }
    let Ran { record, text, .. } = run_spec(&spec, |_| {})?;
    print_run(&record, &text, format == "json")?;
    let differ = differing_fields(&recorded, &record);
    if differ.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let by = match recorded.get("schedlab") {
        Some(p) if *p != provenance() => format!(
            " (it was written by schedlab {} commit {}; this is {} commit {})",
            p["version"].as_str().unwrap_or("?"),
            p["commit"].as_str().unwrap_or("?"),
            env!("CARGO_PKG_VERSION"),
            env!("SCHEDLAB_GIT_COMMIT"),
        ),
        _ => String::new(),
    };
    eprintln!(
        "schedlab: replay of {what} differs from the recorded result in {}{by}",
        differ.join(", ")
    );
    Ok(ExitCode::from(1))
}

/// The top-level fields whose values differ between two records, except
/// the host's and the binary's.
fn differing_fields(a: &Value, b: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec!["the whole record".into()];
    };
    let skip = |k: &str| HOST_FIELDS.contains(&k) || k == "schedlab";
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).filter(|k| !skip(k)).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

pub fn run(args: SimArgs) -> Result<ExitCode> {
    if args.list_kernels {
        for (name, desc) in Features::kernels() {
            let class = Features::kernel(name)
                .map(|f| sim::fair_features::class_name(f.fair.class))
                .unwrap_or("?");
            println!("{name:<16} {class:<6} {desc}");
        }
        println!(
            "\nany other linux-X.Y from 4.16 to 6.14 is accepted too (e.g. linux-6.1, linux-6.12): every toggle as of that release"
        );
        println!("\nfair class: CFS before 6.6, EEVDF from 6.6 (override with --feature fair_class=cfs|eevdf)");
        println!("\nkernel config of every profile (override with --kernel-config NAME=y|n):");
        for (name, default, desc) in Features::kernel_config() {
            println!("  {name:<14} {default:<12} {desc}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.list_features {
        for (name, values, desc) in Features::features() {
            println!("{name:<30} {values:<36} {desc}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(file) = &args.replay {
        if args.bench.is_some() {
            bail!("--replay reruns the run its file records: give no benchmark");
        }
        return replay(file, &args.replay_format);
    }
    match args.bench {
        Some(SimBench::Hackbench(a)) => hackbench(a),
        Some(SimBench::Spin(a)) => spin(a),
        Some(SimBench::Schbench(a)) => schbench(a),
        Some(SimBench::Tbench(a)) => tbench(a),
        Some(SimBench::Falseshare(a)) => simulate(
            &a.common,
            WorkloadSpec::Falseshare(lab::workload::FalseShareSpec {
                iterations: a.iterations,
            }),
        ),
        Some(SimBench::Rtapp(a)) => rtapp(a),
        Some(SimBench::Npb(a)) => {
            // the names first, so a bad one is the error whatever else is wrong
            sim::workload::npb::Kernel::parse(&a.bench).map_err(|e| anyhow!("BENCH: {e}"))?;
            sim::workload::npb::Class::parse(&a.class).map_err(|e| anyhow!("--class: {e}"))?;
            simulate(
                &a.common,
                WorkloadSpec::Npb(lab::workload::NpbSpec {
                    bench: a.bench.to_ascii_lowercase(),
                    class: a.class.to_ascii_uppercase(),
                    threads: a.threads,
                }),
            )
        }
        None => bail!("name a benchmark to simulate (e.g. `schedlab sim hackbench`), or use --list-kernels / --list-features"),
    }
}

fn hackbench(a: SimHackbenchArgs) -> Result<ExitCode> {
    let b = &a.bench;
    let hb = HackbenchSpec {
        groups: count(b.groups),
        fds: count(b.fds),
        loops: count(b.loops),
        datasize: count(b.datasize),
        pipe: b.pipe,
        threads: b.threaded(),
    };
    simulate(&a.common, WorkloadSpec::Hackbench(hb))
}

fn spin(a: SpinArgs) -> Result<ExitCode> {
    let sp = SpinSpec {
        tasks: a.tasks,
        work_ms: a.work_ms,
        mem_mib: a.mem_mib,
    };
    simulate(&a.common, WorkloadSpec::Spin(sp))
}

/// tbench's own flags (the same as `schedlab bench tbench`'s, with their
/// ranges: [`SimTbenchArgs::ranges`]), then the simulation's.
#[derive(Args, Debug)]
#[command(mut_args(SimTbenchArgs::ranges))]
pub struct SimTbenchArgs {
    #[command(flatten)]
    pub bench: crate::cmd_bench::TbenchArgs,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

impl SimTbenchArgs {
    /// The range of each number flag of tbench.
    fn ranges(arg: clap::Arg) -> clap::Arg {
        let u32s = |min: i128| int_in::<u32>(min, u32::MAX.into());
        match arg.get_id().as_str() {
            "clients" | "time" => arg.value_parser(u32s(1)),
            "warmup" => arg.value_parser(u32s(0)),
            _ => arg,
        }
    }
}

fn tbench(a: SimTbenchArgs) -> Result<ExitCode> {
    let tb = TbenchSpec {
        clients: a.bench.clients,
        time: a.bench.time,
        warmup: a.bench.warmup,
        loadfile: a.bench.loadfile,
    };
    simulate(&a.common, WorkloadSpec::Tbench(tb))
}

// ---------------------------------------------------------------------------
// schbench

/// schbench's own flags, both versions (letters and long names of
/// schbench.c; defaults depend on --version), then the simulation's.
#[derive(Args, Debug)]
pub struct SimSchbenchArgs {
    /// Which schbench: the 2023+ rework (new) or the spinning 2016-2019 one (old).
    #[arg(long = "version", value_name = "old|new", default_value = "new", value_parser = ["old", "new"])]
    pub version: String,
    /// Message threads [default: new 1, old 2].
    #[arg(short = 'm', long = "message-threads", value_name = "N", value_parser = int_in::<u32>(1, 10_000))]
    pub message_threads: Option<u32>,
    /// Workers per message thread [default: new ceil(machine CPUs / M), old 16].
    #[arg(short = 't', long = "threads", value_name = "N", value_parser = int_in::<u32>(1, u32::MAX.into()))]
    pub threads: Option<u32>,
    /// Seconds to run (simulated).
    #[arg(short = 'r', long = "runtime", value_name = "S", default_value_t = 30, value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub runtime: u32,
    /// new: microseconds each request sleeps [100]; old: the message thread's delay [30000].
    #[arg(
        short = 's',
        long = "sleep_usec",
        visible_alias = "sleeptime",
        value_name = "USEC"
    , value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub sleep: Option<u32>,
    /// old only: microseconds each worker spins [30000].
    #[arg(short = 'c', long = "cputime", value_name = "USEC", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub cputime: Option<u32>,
    /// new only: warm-up seconds after which the statistics are zeroed [0] (ignored under a 30 s runtime, as schbench does).
    #[arg(short = 'w', long = "warmuptime", value_name = "S", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub warmup: Option<u32>,
    /// new only: cache footprint of each worker's matrices, KB [256].
    #[arg(short = 'F', value_name = "KB", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub footprint_kb: Option<u32>,
    /// new only: matrix multiplications per request [5].
    #[arg(short = 'n', long = "operations", value_name = "N", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub operations: Option<u32>,
    /// new only: seconds between interval reports [10] (0: every second).
    #[arg(short = 'i', long = "intervaltime", value_name = "S", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub interval: Option<u32>,
    /// new only: zero the statistics every S seconds [0: never].
    #[arg(short = 'z', long = "zerotime", value_name = "S", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub zerotime: Option<u32>,
    /// new only: requests per second (RPS mode), divided across the message threads [0: closed loop].
    #[arg(short = 'R', long = "rps", value_name = "N", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub rps: Option<u32>,
    /// Auto-RPS (target CPU busy percent): not modelled, refused.
    #[arg(short = 'A', long = "auto-rps", value_name = "PCT", value_parser = int_in::<u32>(0, u32::MAX.into()))]
    pub auto_rps: Option<u32>,
    /// new only: no per-CPU lock around the matrix work.
    #[arg(short = 'L', long = "no-locking")]
    pub no_locking: bool,
    /// new only: calibrate (no lock; the sleep is not part of the request time).
    #[arg(short = 'C', long = "calibrate")]
    pub calibrate: bool,
    /// new only: percent of the footprint private to each worker (0-100); the rest is one matrix set shared by all.
    #[arg(long = "split", value_name = "PCT", value_parser = int_in::<u32>(0, 100))]
    pub split: Option<u32>,
    #[command(flatten)]
    pub common: CommonSimArgs,
}

impl SimSchbenchArgs {
    /// The workload; each version's defaults and the fields of the other
    /// version are the run spec's to check.
    fn workload(&self) -> Result<WorkloadSpec> {
        if self.auto_rps.is_some() {
            // it scales -R from the host's /proc/stat busy time each second
            bail!("-A/--auto-rps is not modelled (auto-RPS steers by the host's CPU usage); give -R N");
        }
        Ok(WorkloadSpec::Schbench(SchbenchSpec {
            version: if self.version == "old" {
                SchbenchVersion::Old
            } else {
                SchbenchVersion::New
            },
            message_threads: self.message_threads,
            threads: self.threads,
            runtime: Some(self.runtime),
            sleep_usec: self.sleep,
            cputime_usec: self.cputime,
            warmup: self.warmup,
            footprint_kb: self.footprint_kb,
            operations: self.operations,
            interval: self.interval,
            zerotime: self.zerotime,
            rps: self.rps,
            no_locking: self.no_locking,
            calibrate: self.calibrate,
            split: self.split,
        }))
    }
}

fn schbench(a: SimSchbenchArgs) -> Result<ExitCode> {
    let w = a.workload()?;
    simulate(&a.common, w)
}

/// The `--json` record of a run: the simulator's fields, the workload's
/// parameters as the run used them (`params`), and its provenance: the
/// schedlab that made it (`schedlab`: version and commit), the run
/// specification (`run`, which `--replay` reruns) and, for the Linux
/// policy, the kernel it modelled with every feature value that differs
/// from the profile's (`kernel`, e.g. `linux-5.12+sis_prop=off`).
fn report(
    r: &SimResult,
    wall_s: f64,
    params: &impl serde::Serialize,
    spec: &RunSpec,
) -> Result<Value> {
    let mut v = result_json(r, wall_s);
    v["params"] = serde_json::to_value(params)?;
    v["schedlab"] = provenance();
    v["run"] = serde_json::to_value(spec)?;
    if spec.policy == Policy::Linux {
        v["kernel"] = json!(spec.kernel_name().map_err(|e| cli_error(e.into()))?);
    }
    Ok(v)
}

/// Print a run: its JSON record (`--json`), or the tool's lines and the
/// placement and balance summary.
fn print_run(record: &Value, text: &str, json: bool) -> Result<()> {
    use crate::output::StdoutError;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(record)?).map_err(StdoutError)?;
    } else {
        out.write_all(text.as_bytes()).map_err(StdoutError)?;
    }
    out.flush().map_err(StdoutError)?;
    Ok(())
}

/// The NUMA-balancing counters as mmtests' vmstat report prints them
/// (MonitorMmtestsvmstat.pm's rows and derivations; "NUMA base PTE
/// updates" is the kernel's `numa_pte_updates`, which counts a huge PMD as
/// 512, and "NUMA page range updates" adds 512 per huge PMD to it), for a
/// run whose workload has memory.
fn numa_text(r: &SimResult) -> String {
    let Some(n) = r.numa else {
        return String::new();
    };
    // mmtests: 100 when there were no faults
    let pct = (n.numa_hint_faults_local * 100)
        .checked_div(n.numa_hint_faults)
        .unwrap_or(100);
    let rows = [
        ("NUMA alloc local", n.numa_local),
        ("NUMA base PTE updates", n.numa_pte_updates),
        ("NUMA huge PMD updates", n.numa_huge_pte_updates),
        ("NUMA page range updates", n.mmtests_numa_pte_updates),
        ("NUMA hint faults", n.numa_hint_faults),
        ("NUMA hint local faults", n.numa_hint_faults_local),
        ("NUMA hint local percent", pct),
        ("NUMA pages migrated", n.numa_pages_migrated),
    ];
    let mut out = String::from("\n");
    for (name, v) in rows {
        out.push_str(&format!("{name:<28}{v:>14}\n"));
    }
    out
}

/// The JSON record: every field is deterministic except `wall_s` and
/// `events_per_s`, which measure the host.
pub fn result_json(r: &SimResult, wall_s: f64) -> Value {
    let mut v = serde_json::to_value(r).expect("serialisable");
    v["mode"] = json!("sim");
    v["time_s"] = json!(r.time_ns as f64 / 1e9);
    if r.counters.messages > 0 {
        // the lines moved per message, by object and distance
        let per = r.counters.messages as f64;
        let mut by = serde_json::Map::new();
        for (object, distance, n) in r.counters.line_transfers_by.entries() {
            let e = by.entry(object).or_insert_with(|| json!({}));
            e[distance] = json!(n as f64 / per);
        }
        v["lines_per_message"] = Value::Object(by);
    }
    v["wall_s"] = json!(wall_s);
    v["events_per_s"] = json!(if wall_s > 0.0 {
        (r.counters.events as f64 / wall_s).round()
    } else {
        0.0
    });
    v
}

fn placement_text(r: &SimResult) -> String {
    let p = &r.placement;
    let (busy, all) = r.cpus.iter().fold((0u64, 0u64), |(b, a), c| {
        (b + c.busy_ns, a + c.busy_ns + c.idle_ns)
    });
    let mut s = format!(
        "Machine ({}): CPUs {:.1}% busy, {} wake-ups, {} context switches, {} preemptions\n",
        r.machine,
        100.0 * busy as f64 / all.max(1) as f64,
        r.counters.wakeups,
        r.counters.context_switches,
        r.counters.preemptions
    );
    let total: u64 = p.stages.values().sum();
    // delayed tasks (DELAY_DEQUEUE) woken where they are queued: no decision
    let in_place = match r.counters.wakeups_in_place {
        0 => String::new(),
        n => format!(" ({n} wake-ups in place)"),
    };
    s += &format!(
        "Placement ({}): {} decisions{}, {:.2} CPUs probed per wakeup, probe cost {:.3} ms, {} migrations\n",
        p.policy,
        total,
        in_place,
        p.probes_per_wakeup.mean,
        p.probe_cost_ns as f64 / 1e6,
        r.counters.migrations
    );
    let mut stages: Vec<_> = p.stages.iter().collect();
    stages.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, n) in stages {
        s += &format!(
            "  {:<24} {:>10} {:>6.1}%\n",
            name,
            n,
            100.0 * *n as f64 / total.max(1) as f64
        );
    }
    let b = &r.balance;
    s += &format!(
        "Balance ({}): {} tasks moved, {} newidle entries ({} gated), {} nohz kicks, {} active, cost {:.3} ms, idle while work waits {:.3} ms\n",
        b.balancer,
        b.stats.moved,
        b.stats.newidle_entries,
        b.stats.newidle_gated,
        b.stats.ilb_kicks,
        b.stats.active_kicks,
        b.stats.cost_ns as f64 / 1e6,
        b.idle_while_work_waits_ns as f64 / 1e6
    );
    s += &lines_text(r);
    s
}

/// Per message (or in all, for a run without messages) when the run moved
/// any line: how many lines moved, over which distances, and of which
/// kernel objects, the largest first.
fn lines_text(r: &SimResult) -> String {
    let moved = &r.counters.line_transfers_by;
    let total = moved.total();
    if total == 0 {
        return String::new();
    }
    let (per, unit) = match r.counters.messages {
        0 => (1.0, "in all"),
        m => (m as f64, "per message"),
    };
    let distances: Vec<String> = moved
        .by_distance()
        .iter()
        .zip(sim::cacheline::DISTANCES)
        .filter(|(n, _)| **n as f64 / per >= 0.005)
        .map(|(n, (_, name))| format!("{name} {}", num(*n as f64 / per)))
        .collect();
    let mut objects: Vec<(&str, u64)> = Vec::new();
    for (object, _, n) in moved.entries() {
        match objects.iter_mut().find(|(o, _)| *o == object) {
            Some((_, t)) => *t += n,
            None => objects.push((object, n)),
        }
    }
    objects.sort_by_key(|o| std::cmp::Reverse(o.1));
    let objects: Vec<String> = objects
        .iter()
        .filter(|(_, n)| *n as f64 / per >= 0.005)
        .map(|(o, n)| format!("{o} {}", num(*n as f64 / per)))
        .collect();
    format!(
        "Lines moved {unit}: {} ({}): {}\n",
        num(total as f64 / per),
        distances.join(", "),
        objects.join(", ")
    )
}

/// A count per message to two decimals, a whole count as it is.
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}
