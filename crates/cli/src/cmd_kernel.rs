//! `schedlab kernel ...`: hold the simulator against a real Linux kernel.
//!
//! - `kernel run --machine M --kernel-image PATH [--kvm] -- scenario NAME...|all`
//!   or `-- bench ...`: boots the kernel under qemu on M's topology
//!   (crates/oracle), runs the command inside with the scheduler trace
//!   events on, then prints the domain check, the agreement table
//!   (scenarios) and the trace's wake-up locality.
//! - `kernel scenario NAME... [--machine M] [--rounds N]`: the guest's side
//!   of the scenarios (native threads and affinity); runs on any Linux.
//!   `all` names the placement scenarios, `fair` the fair-class ones
//!   (oracle::fair: pipe ping-pong, a short and a long sleeper woken on a
//!   busy CPU, a fork onto a busy CPU), whose outcome `kernel run` reads
//!   from the trace and compares with the simulator's run of the same
//!   workload under the booted kernel's profile.
//! - `kernel trace FILE --machine M`: the locality summary of a saved trace.
//! - `kernel domains --machine M --dump DIR`: a saved guest's domains against ours.
//! - `kernel scenarios`: the scenario list.

use crate::output::write_atomic;
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use oracle::agreement::{self, Agreement};
use oracle::boot::{self, BootSpec};
use oracle::domains_dump;
use oracle::fair::{self, FairRow, FAIR_SCENARIOS};
use oracle::qemu::QemuShape;
use oracle::runner;
use oracle::scenario::{self, SCENARIOS};
use oracle::trace::{self, Locality};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use topology::Topology;

#[derive(Subcommand, Debug)]
pub enum KernelCommand {
    /// Boot a kernel image under qemu on a machine's topology, run a scenario set or a benchmark inside, and compare with the simulator.
    Run(RunArgs),
    /// (In a guest, or on any Linux host) run placement scenarios with real threads and print where each wakee ran.
    Scenario(ScenarioArgs),
    /// List the placement scenarios.
    Scenarios,
    /// The wake-up locality of a saved tracefs `trace` file.
    Trace {
        /// The trace file (`--save-dir`'s trace.txt).
        file: PathBuf,
        /// The machine the trace was taken on (the guest's: `kernel run` prints it).
        #[arg(long)]
        machine: String,
    },
    /// The agreement table of a saved scenario run (`kernel run --save-dir`), against the simulator again.
    Agreement {
        /// The machine (as given to `kernel run`).
        #[arg(long)]
        machine: String,
        /// The directory `kernel run --save-dir` wrote (output.txt, uname.txt).
        #[arg(long)]
        dump: PathBuf,
        /// The simulator's kernel profile (default: linux-X.Y of the saved kernel).
        #[arg(long)]
        sim_kernel: Option<String>,
    },
    /// (In the guest of a `compare` kernel run) run a native benchmark from its run specification (JSON) and print its record.
    #[command(hide = true)]
    GuestRun {
        /// The run specification, as an experiment's run is serialised (mode native).
        spec: String,
    },
    /// Compare a saved guest's sched domains (`--save-dir`) with schedlab's for the same machine.
    Domains {
        /// The machine (as given to `kernel run`).
        #[arg(long)]
        machine: String,
        /// The directory `kernel run --save-dir` wrote (domains.txt, dmesg.txt, uname.txt).
        #[arg(long)]
        dump: PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Machine: a preset, `smp:...`, `sysfs:DIR` or `hwloc:FILE`.
    #[arg(long)]
    machine: String,
    /// The kernel image to boot (e.g. /boot/vmlinuz-6.1.0-57-cloud-amd64).
    #[arg(long)]
    kernel_image: PathBuf,
    /// Use KVM (real timing) instead of TCG.
    #[arg(long)]
    kvm: bool,
    /// The qemu binary.
    #[arg(long, default_value = "qemu-system-x86_64")]
    qemu: PathBuf,
    /// A statically linked busybox (Debian's busybox-static).
    #[arg(long, default_value = "/bin/busybox")]
    busybox: PathBuf,
    /// A statically linked schedlab for the guest (default: this one, if it is static).
    #[arg(long)]
    guest_binary: Option<PathBuf>,
    /// qemu's CPU model.
    #[arg(long, default_value = "Skylake-Server")]
    cpu_model: String,
    /// Seconds for the guest to come up.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86400))]
    boot_timeout: u64,
    /// Seconds for the whole run.
    #[arg(long, default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=604800))]
    timeout: u64,
    /// Rounds per scenario.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100000))]
    rounds: u64,
    /// The simulator's kernel profile (default: linux-X.Y of the booted kernel).
    #[arg(long)]
    sim_kernel: Option<String>,
    /// Keep the guest's reports here (trace.txt, domains.txt, dmesg.txt, output.txt, console.log, uname.txt).
    #[arg(long)]
    save_dir: Option<PathBuf>,
    /// Write the results as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The command: `scenario NAME...` (or `scenario all`) or `bench hackbench|schbench|tbench ...`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// Scenario names, or `all` (`schedlab kernel scenarios`).
    #[arg(required = true)]
    names: Vec<String>,
    /// The machine the CPUs are numbered on (default: this host's, from sysfs).
    #[arg(long, default_value = "host")]
    machine: String,
    /// Rounds per scenario.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100000))]
    rounds: u64,
    /// Skip scenarios the machine cannot hold instead of failing.
    #[arg(long)]
    skip_unfit: bool,
}

pub fn run(cmd: KernelCommand) -> Result<ExitCode> {
    match cmd {
        KernelCommand::Run(a) => run_guest(a),
        KernelCommand::Scenario(a) => run_scenarios(a),
        KernelCommand::Scenarios => {
            let mut out = std::io::stdout().lock();
            for (n, stage, what) in SCENARIOS {
                writeln!(out, "{n:<18} {stage:<24} {what}")?;
            }
            writeln!(
                out,
                "fair-class scenarios (`fair` names them all; not part of `all`):"
            )?;
            for (n, funcs, what) in FAIR_SCENARIOS {
                writeln!(out, "{n:<18} {funcs:<24} {what}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        KernelCommand::Trace { file, machine } => {
            let t = topology::machine(&machine).map_err(|e| anyhow!("--machine: {e}"))?;
            let text = read_text(&file, "trace")?;
            let s = trace::analyse(&text);
            print!("{}", locality_text(&t, &s));
            Ok(ExitCode::SUCCESS)
        }
        KernelCommand::Agreement {
            machine,
            dump,
            sim_kernel,
        } => {
            let t = topology::machine(&machine).map_err(|e| anyhow!("--machine: {e}"))?;
            let shape = QemuShape::of(&t)?;
            let guest = shape.guest_topology();
            let uname = read_text(&dump.join("uname.txt"), "--dump")?;
            let output = read_text(&dump.join("output.txt"), "--dump")?;
            let ver = domains_dump::kernel_version(&uname)
                .ok_or_else(|| anyhow!("--dump: cannot read the kernel version from {uname:?}"))?;
            let k = sim_kernel.unwrap_or_else(|| format!("linux-{}.{}", ver.0, ver.1));
            let rows = agreement_rows(&guest, &output, &k)?;
            if !rows.is_empty() {
                print!(
                    "Agreement with the simulator ({k}):\n{}",
                    agreement::table(&rows)
                );
            }
            let setups = fair::parse_output(&output, &guest)?;
            if !setups.is_empty() {
                let tr = read_text(&dump.join("trace.txt"), "--dump")?;
                let cost = preset_name(&machine);
                let f = fair::compare(&guest, &setups, &tr, &k, cost.as_deref())?;
                print!("{}", fair_text(&k, &f));
            }
            Ok(ExitCode::SUCCESS)
        }
        KernelCommand::GuestRun { spec } => {
            let spec: lab::RunSpec = serde_json::from_str(&spec)
                .map_err(|e| anyhow!("guest-run: the run specification: {e}"))?;
            if spec.mode != lab::Mode::Native {
                bail!(
                    "guest-run: the run must be native, not {}",
                    spec.mode.name()
                );
            }
            lab::exec::check(&spec)?;
            let v = lab::exec::run_native(&spec)?;
            println!("{}", serde_json::to_string(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        KernelCommand::Domains { machine, dump } => {
            let t = topology::machine(&machine).map_err(|e| anyhow!("--machine: {e}"))?;
            let shape = QemuShape::of(&t)?;
            let uname = read_text(&dump.join("uname.txt"), "--dump")?;
            let dbg = read_text(&dump.join("domains.txt"), "--dump")?;
            let dmesg = read_text(&dump.join("dmesg.txt"), "--dump")?;
            let (text, ndiff) = domain_check(&shape, &uname, &dbg, &dmesg)?;
            print!("{text}");
            Ok(if ndiff == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// A text file of at most 256 MiB.
fn read_text(path: &Path, what: &str) -> Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("{what} {}", path.display()))?;
    if !meta.is_file() {
        bail!("{what} {}: not a regular file", path.display());
    }
    if meta.len() > 256 << 20 {
        bail!("{what} {}: larger than 256 MiB", path.display());
    }
    let b = std::fs::read(path).with_context(|| format!("{what} {}", path.display()))?;
    Ok(String::from_utf8_lossy(&b).into_owned())
}

fn expand_names(names: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let group: Vec<String> = match n.as_str() {
            "all" => SCENARIOS.iter().map(|s| s.0.to_string()).collect(),
            "fair" => FAIR_SCENARIOS.iter().map(|s| s.0.to_string()).collect(),
            _ if SCENARIOS.iter().any(|s| s.0 == n) || fair::is_fair(n) => vec![n.clone()],
            _ => bail!(
                "scenario {n:?} is unknown (valid: {}, {}, all, fair)",
                scenario::names(),
                FAIR_SCENARIOS
                    .iter()
                    .map(|s| s.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        for g in group {
            if !out.contains(&g) {
                out.push(g);
            }
        }
    }
    Ok(out)
}

/// The guest side: every scenario's rounds as `round ...` lines after a
/// `scenario NAME` line.
fn run_scenarios(a: ScenarioArgs) -> Result<ExitCode> {
    let t = topology::machine(&a.machine).map_err(|e| anyhow!("--machine: {e}"))?;
    let names = expand_names(&a.names)?;
    let mut setups = Vec::new();
    let mut fairs = Vec::new();
    for n in &names {
        if fair::is_fair(n) {
            fairs.push(fair::setup(n, &t, a.rounds as usize)?);
            continue;
        }
        match scenario::setup(n, &t) {
            Ok(s) => setups.push(s),
            Err(_) if a.skip_unfit => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut out = std::io::stdout().lock();
    for s in &setups {
        writeln!(out, "scenario {}", s.name)?;
        out.flush()?;
        let mut err = None;
        runner::run(s, a.rounds as usize, |r| {
            if err.is_none() {
                if let Err(e) = writeln!(out, "{}", r.line()) {
                    err = Some(e);
                }
            }
        })?;
        if let Some(e) = err {
            return Err(e.into());
        }
    }
    for f in &fairs {
        writeln!(out, "scenario {}", f.name)?;
        writeln!(out, "{}", f.line())?;
        out.flush()?;
        oracle::fair_runner::run(f)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The guest binary: the flag, else this executable if it is static.
fn guest_binary(flag: &Option<PathBuf>) -> Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().context("finding this executable")?;
    let bytes = std::fs::read(&me).with_context(|| format!("reading {}", me.display()))?;
    if oracle::initramfs::is_static_elf(&bytes) {
        Ok(me)
    } else {
        Err(oracle::OracleError::NotStatic(me).into())
    }
}

/// The agreement of every scenario in a guest's output.
fn agreement_rows(guest: &Topology, output: &str, sim_kernel: &str) -> Result<Vec<Agreement>> {
    let mut rows = Vec::new();
    for (n, rounds) in runner::parse_output(output) {
        if fair::is_fair(&n) {
            continue;
        }
        let s = scenario::setup(&n, guest)?;
        let d = oracle::probe::decide(guest, &s, sim_kernel)?;
        rows.push(agreement::compare(guest, &s, &rounds, d));
    }
    Ok(rows)
}

/// `machine` if it is a preset (its costs are the simulator's).
fn preset_name(machine: &str) -> Option<String> {
    topology::presets()
        .iter()
        .any(|p| p.0 == machine)
        .then(|| machine.to_string())
}

fn fair_text(sim_kernel: &str, rows: &[FairRow]) -> String {
    format!(
        "Fair class against the simulator ({sim_kernel}; the kernel from the trace, {} us = at once):\n{}",
        fair::AT_ONCE_NS / 1000,
        fair::table(rows)
    )
}

fn domain_check(shape: &QemuShape, uname: &str, dbg: &str, dmesg: &str) -> Result<(String, usize)> {
    let ver = domains_dump::kernel_version(uname)
        .ok_or_else(|| anyhow!("guest report: cannot read the kernel version from {uname:?}"))?;
    let kernel = domains_dump::parse(dbg, dmesg)?;
    let ours = domains_dump::model_lines(&shape.guest_topology(), ver);
    let diffs = domains_dump::differences(&kernel, &ours);
    let mut s = format!(
        "Domains: kernel {} on {} against `schedlab topology show '{}' --kernel linux-{}.{} --arch x86 --domains`: ",
        uname.trim(),
        shape.guest_spec,
        shape.guest_spec,
        ver.0,
        ver.1
    );
    if diffs.is_empty() {
        s.push_str(&format!("{} lines, all equal\n", kernel.len()));
    } else {
        s.push_str(&format!("{} differences\n", diffs.len()));
        for d in &diffs {
            s.push_str(&format!("  {d}\n"));
        }
    }
    Ok((s, diffs.len()))
}

fn locality_text(t: &Topology, s: &trace::TraceSummary) -> String {
    let task: Vec<_> = s.wakeups.iter().filter(|w| !w.new_task).cloned().collect();
    let c = trace::locality_counts(t, &task, false);
    let total: u64 = c.iter().sum();
    let mut out = format!(
        "Trace: {} wake-ups ({} of new tasks), {} migrations ({} in wake-ups), {} switches\n",
        s.wakeups.len(),
        s.wakeups.len() - task.len(),
        s.migrations,
        s.wakeup_migrations,
        s.switches
    );
    out.push_str("Wake-up locality (relative to the waker's CPU):");
    for l in Locality::ALL {
        let n = c[l as usize];
        let pct = if total > 0 {
            100.0 * n as f64 / total as f64
        } else {
            0.0
        };
        out.push_str(&format!(" {} {n} ({pct:.1}%)", l.name()));
    }
    out.push('\n');
    out
}

/// The simulator's run of the same benchmark on the guest's machine
/// (`schedlab sim BENCH ARGS --machine GUEST --kernel K --json`, costs of
/// the preset the machine came from, none otherwise), its wake-up locality
/// beside the kernel's in the simulator's four classes.
fn bench_side_by_side(
    machine: &str,
    shape: &QemuShape,
    bench_args: &[String],
    sim_kernel: &str,
    guest: &Topology,
    tr: &trace::TraceSummary,
) -> (String, Option<[u64; 4]>) {
    let is_preset = topology::presets().iter().any(|p| p.0 == machine);
    let mut spec = shape.guest_spec.clone();
    let mut args: Vec<String> = vec!["sim".into()];
    args.extend(bench_args.iter().cloned());
    if is_preset {
        spec.push_str(&format!(",cost={machine}"));
    } else {
        args.extend(["--costs".into(), "off".into()]);
    }
    args.extend([
        "--machine".into(),
        spec,
        "--kernel".into(),
        sim_kernel.into(),
        "--json".into(),
    ]);
    let me = match std::env::current_exe() {
        Ok(m) => m,
        Err(e) => return (format!("Simulator: not run ({e})\n"), None),
    };
    let out = match std::process::Command::new(me).args(&args).output() {
        Ok(o) => o,
        Err(e) => return (format!("Simulator: not run ({e})\n"), None),
    };
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return (
            format!(
                "Simulator: not run ({})\n",
                msg.lines().next().unwrap_or("failed")
            ),
            None,
        );
    }
    let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => return (format!("Simulator: unreadable result ({e})\n"), None),
    };
    let wl = &v["placement"]["wake_locality"];
    let sim =
        ["same_cpu", "same_cluster", "same_llc", "other_llc"].map(|k| wl[k].as_u64().unwrap_or(0));
    let task: Vec<_> = tr.wakeups.iter().filter(|w| !w.new_task).cloned().collect();
    let c = trace::locality_counts(guest, &task, false);
    let mut ker = [0u64; 4];
    for l in Locality::ALL {
        ker[l.sim_bucket()] += c[l as usize];
    }
    let share = |x: &[u64; 4], i: usize| {
        let t: u64 = x.iter().sum();
        if t == 0 {
            0.0
        } else {
            100.0 * x[i] as f64 / t as f64
        }
    };
    let mut s = format!(
        "Wake-up locality, kernel against simulator (`schedlab {}`):\n{:<14} {:>10} {:>10}\n",
        args.join(" "),
        "",
        "kernel",
        "simulator"
    );
    for (i, name) in ["same_cpu", "same_cluster", "same_llc", "other_llc"]
        .iter()
        .enumerate()
    {
        s.push_str(&format!(
            "{name:<14} {:>9.1}% {:>9.1}%\n",
            share(&ker, i),
            share(&sim, i)
        ));
    }
    s.push_str("(same_cluster counts SMT siblings, other_llc other nodes, as the simulator's wake_locality does)\n");
    (s, Some(sim))
}

fn run_guest(a: RunArgs) -> Result<ExitCode> {
    let t = topology::machine(&a.machine).map_err(|e| anyhow!("--machine: {e}"))?;
    let shape = QemuShape::of(&t)?;
    let guest = shape.guest_topology();
    let (kind, guest_args, names) = match a.command.first().map(String::as_str) {
        Some("scenario") => {
            let names = expand_names(&a.command[1..])?;
            if names.is_empty() {
                bail!("-- scenario: name at least one scenario (or all)");
            }
            // refuse scenarios this machine cannot hold before booting
            let explicit = !a.command[1..].iter().any(|n| n == "all" || n == "fair");
            let names: Vec<String> = names
                .into_iter()
                .filter(|n| explicit || fair::is_fair(n) || scenario::setup(n, &guest).is_ok())
                .collect();
            if explicit {
                for n in &names {
                    if fair::is_fair(n) {
                        fair::setup(n, &guest, a.rounds as usize)?;
                    } else {
                        scenario::setup(n, &guest)?;
                    }
                }
            }
            let mut g = vec![
                "kernel".to_string(),
                "scenario".into(),
                "--machine".into(),
                shape.guest_spec.clone(),
                "--rounds".into(),
                a.rounds.to_string(),
            ];
            g.extend(names.iter().cloned());
            ("scenario", g, names)
        }
        Some("bench") => ("bench", a.command.clone(), Vec::new()),
        _ => bail!("--: the command must be `scenario NAME...` or `bench ...`"),
    };
    if let Some(j) = &a.json {
        crate::output::check_writable(j)?;
    }
    if !a.kernel_image.is_file() {
        bail!(
            "--kernel-image {}: not a regular file",
            a.kernel_image.display()
        );
    }
    let gb = guest_binary(&a.guest_binary)?;
    let trace_kb = oracle::qemu::trace_kb(shape.nr_cpus());
    let initrd = oracle::initramfs::build(&a.busybox, &gb, &guest_args, trace_kb)?;
    let spec = BootSpec {
        qemu: a.qemu.clone(),
        kernel: a.kernel_image.clone(),
        machine_args: shape.args(),
        cpu_model: a.cpu_model.clone(),
        kvm: a.kvm,
        boot_timeout: Duration::from_secs(a.boot_timeout),
        run_timeout: Duration::from_secs(a.timeout),
    };
    if std::io::stderr().is_terminal() {
        eprintln!(
            "schedlab: booting {} as {} ({} vCPUs, {})",
            a.kernel_image.display(),
            shape.guest_spec,
            shape.nr_cpus(),
            if a.kvm { "KVM" } else { "TCG" }
        );
    }
    let out = boot::boot(&spec, &initrd)?;
    let r = &out.reports;
    let uname = r.require("uname")?.trim().to_string();
    if let Some(dir) = &a.save_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("--save-dir {}", dir.display()))?;
        let files = [
            ("trace.txt", r.section("trace")),
            ("domains.txt", r.section("domains")),
            ("dmesg.txt", r.section("dmesg")),
            ("output.txt", r.section("output")),
            ("uname.txt", r.section("uname")),
            ("console.log", out.console.as_str()),
        ];
        for (f, body) in files {
            write_atomic(&dir.join(f), body.as_bytes())?;
        }
        let cmdline = format!(
            "{} {}\n",
            a.qemu.display(),
            boot::qemu_command(
                &spec,
                Path::new("initramfs.cpio"),
                Path::new("console.log"),
                Path::new("data.log")
            )
            .join(" ")
        );
        write_atomic(&dir.join("cmdline.txt"), cmdline.as_bytes())?;
    }
    match r.status {
        Some(0) => {}
        Some(n) => bail!(
            "the command in the guest failed (exit status {n}): {}",
            r.section("stderr").lines().next().unwrap_or("(no message)")
        ),
        None => bail!("guest report: no exit status"),
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "Kernel {uname}, machine {} as {}",
        a.machine, shape.guest_spec
    )?;
    let (dtext, ndiff) = domain_check(&shape, &uname, r.require("domains")?, r.section("dmesg"))?;
    write!(stdout, "{dtext}")?;
    let tr = trace::analyse(r.section("trace"));
    let ver = domains_dump::kernel_version(&uname).unwrap_or((6, 1));
    let sim_kernel = a
        .sim_kernel
        .clone()
        .unwrap_or_else(|| format!("linux-{}.{}", ver.0, ver.1));
    let mut rows: Vec<Agreement> = Vec::new();
    let mut fair_rows: Vec<FairRow> = Vec::new();
    if kind == "scenario" {
        rows = agreement_rows(&guest, r.section("output"), &sim_kernel)?;
        let setups = fair::parse_output(r.section("output"), &guest)?;
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| {
                !rows.iter().any(|r| &r.scenario == *n) && !setups.iter().any(|s| &s.name == *n)
            })
            .collect();
        if !missing.is_empty() {
            bail!("guest report: no rounds for scenario {missing:?}");
        }
        if !rows.is_empty() {
            writeln!(stdout, "Agreement with the simulator ({sim_kernel}):")?;
            write!(stdout, "{}", agreement::table(&rows))?;
        }
        if !setups.is_empty() {
            let cost = preset_name(&a.machine);
            fair_rows = fair::compare(
                &guest,
                &setups,
                r.section("trace"),
                &sim_kernel,
                cost.as_deref(),
            )?;
            write!(stdout, "{}", fair_text(&sim_kernel, &fair_rows))?;
        }
    } else {
        write!(stdout, "{}", r.section("output"))?;
    }
    write!(stdout, "{}", locality_text(&guest, &tr))?;
    let mut sim_locality = None;
    if kind == "bench" {
        let (text, loc) = bench_side_by_side(
            &a.machine,
            &shape,
            &a.command[1..],
            &sim_kernel,
            &guest,
            &tr,
        );
        write!(stdout, "{text}")?;
        sim_locality = loc;
    }
    if let Some(j) = &a.json {
        let task: Vec<_> = tr.wakeups.iter().filter(|w| !w.new_task).cloned().collect();
        let c = trace::locality_counts(&guest, &task, false);
        let loc: serde_json::Map<String, serde_json::Value> = Locality::ALL
            .iter()
            .map(|l| (l.name().to_string(), c[*l as usize].into()))
            .collect();
        let v = serde_json::json!({
            "kernel": uname,
            "machine": a.machine,
            "guest_machine": shape.guest_spec,
            "sim_kernel": sim_kernel,
            "domain_differences": ndiff,
            "agreement": rows,
            "fair": fair_rows,
            "sim_wake_locality": sim_locality,
            "trace": {
                "wakeups": tr.wakeups.len(),
                "migrations": tr.migrations,
                "wakeup_migrations": tr.wakeup_migrations,
                "switches": tr.switches,
                "wake_locality": loc,
            },
        });
        write_atomic(j, serde_json::to_string_pretty(&v)?.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
