//! `schedlab compare <FILE | builtin:NAME>`: run an experiment (every
//! variant, sweep point and iteration, in parallel) and print the mmtests
//! comparison; `--json`, `--csv`, `--plot` write the raw values, one row per
//! run and an SVG per metric; `--html` the whole report as one page
//! (`cmd_compare_html`); `--trace` a Perfetto trace of one simulated run
//! (`cmd_compare_trace`). `--shard I/N` runs a deterministic part and
//! `--merge LOG...` joins the parts' run logs into the same report.
//! docs/experiments.md is the user's guide, docs/visualising.md for the
//! page and the trace.

use crate::output::write_atomic;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lab::runner::{self, RunOptions, Shard};
use lab::Experiment;
use report::{Report, RunRecord};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// An experiment file (TOML, see docs/experiments.md) or builtin:NAME (see --list).
    #[arg(value_name = "FILE | builtin:NAME", required_unless_present_any = ["list", "merge"])]
    pub experiment: Option<String>,
    /// List the built-in experiments and exit.
    #[arg(long, conflicts_with_all = ["experiment", "merge"])]
    pub list: bool,
    /// Iterations per variant and point (overrides the experiment's, and --quick's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: Option<u32>,
    /// Simulations to run at once [default: every core]; native and kernel runs always run alone.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// A fast look: the experiment's [quick] settings (or a tenth of the work and at most 3 iterations).
    #[arg(long)]
    pub quick: bool,
    /// Write every raw value, the statistics and the runs as JSON.
    #[arg(long, value_name = "F")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per run.
    #[arg(long, value_name = "F")]
    pub csv: Option<PathBuf>,
    /// Write an SVG plot of the first metric to F, and of each other metric to F's stem + `-METRIC.svg`; each with its gain-per-point plot (intervals) beside it, `-gain` after its stem.
    #[arg(long, value_name = "F.svg")]
    pub plot: Option<PathBuf>,
    /// Write the whole report as one self-contained HTML page: the experiment, every table and plot, the scheduler internals, the simulator's error against native runs.
    #[arg(long, value_name = "F.html")]
    pub html: Option<PathBuf>,
    /// Run only shard I of N (1-based) and keep its runs in the run log; join with --merge.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, conflicts_with_all = ["json", "csv", "plot", "html"])]
    pub shard: Option<Shard>,
    /// Keep the runs the run log already holds and do only the missing ones.
    #[arg(long)]
    pub resume: bool,
    /// The run log [default: NAME[.quick][.shard-I-of-N].runs.jsonl beside the first of --json/--csv/--plot, else here].
    #[arg(long, value_name = "F")]
    pub log: Option<PathBuf>,
    /// Trace one simulated run of the experiment (--trace-run) to FILE: it is run again, alone, with its seed (runs are deterministic, so it is the run the report holds).
    #[arg(long, value_name = "FILE", conflicts_with = "shard")]
    pub trace: Option<PathBuf>,
    /// The run --trace traces: VARIANT[,POINT[,ITERATION]] [default: the baseline, the first point, iteration 0].
    #[arg(long, value_name = "VARIANT[,POINT[,ITERATION]]", requires = "trace")]
    pub trace_run: Option<String>,
    /// Keep only events from S simulated seconds on in the --trace file.
    #[arg(long, value_name = "S", requires = "trace", value_parser = crate::cmd_sim::trace::sim_seconds)]
    pub trace_from: Option<u64>,
    /// Keep only events before S simulated seconds in the --trace file.
    #[arg(long, value_name = "S", requires = "trace", value_parser = crate::cmd_sim::trace::sim_seconds)]
    pub trace_to: Option<u64>,
    /// Build the report from the run logs of an experiment's shards instead of running.
    #[arg(long, value_name = "LOG", num_args = 1.., conflicts_with_all = ["experiment", "shard", "resume", "quick", "iterations", "jobs", "log", "max_events", "time_limit", "max_memory"])]
    pub merge: Vec<PathBuf>,
    /// The bounds of every simulated run of the experiment (and of the --trace run), as `sim` takes them.
    #[command(flatten)]
    pub bounds: crate::args::BoundArgs,
}

/// The signal that stopped a native run of the experiment, if one did.
fn interrupt_signal(e: &runner::LabError) -> Option<i32> {
    match e {
        runner::LabError::Run { cause, .. } => match &**cause {
            lab::exec::RunError::Native(n) if n.is_interrupted() => n.interrupt_signal(),
            _ => None,
        },
        _ => None,
    }
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

fn load(name: &str, quick: bool) -> Result<Experiment> {
    if let Some(b) = name.strip_prefix("builtin:") {
        return Ok(lab::builtin::load(b, quick)?);
    }
    Ok(Experiment::read(Path::new(name), quick)?)
}

pub fn run(a: CompareArgs) -> Result<ExitCode> {
    if a.list {
        for (name, desc) in lab::builtin::list() {
            println!("builtin:{name:<32} {desc}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    // every output can be written, before any run starts
    for (flag, path) in [
        ("--json", &a.json),
        ("--csv", &a.csv),
        ("--plot", &a.plot),
        ("--html", &a.html),
        ("--trace", &a.trace),
    ] {
        if let Some(p) = path {
            crate::output::check_writable(p).with_context(|| flag.to_string())?;
        }
    }
    if let Some((name, parts)) = a
        .experiment
        .as_deref()
        .and_then(|n| n.strip_prefix("builtin:"))
        .and_then(|n| lab::builtin::suite(n).map(|p| (n, p)))
    {
        return run_suite(&a, name, parts);
    }
    let (exp, records) = if !a.merge.is_empty() {
        runner::merge(&a.merge)?
    } else {
        let name = a.experiment.as_deref().expect("clap requires it");
        let mut exp = load(name, a.quick)?;
        if let Some(n) = a.iterations {
            exp.iterations = n;
        }
        if a.trace.is_some() {
            // the traced run exists and is simulated, before any runs
            crate::cmd_compare_trace::pick(&exp, a.trace_run.as_deref())?;
        }
        let log = match &a.log {
            Some(l) => l.clone(),
            None => default_log(&a, &exp),
        };
        let records = match run_experiment(&a, &exp, &log)? {
            Ok(r) => r,
            Err(code) => return Ok(code),
        };
        if let Some(s) = a.shard {
            eprintln!(
                "schedlab: shard {s}: {} runs in {}; build the report with `schedlab compare --merge` and every shard's log",
                records.len(),
                log.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        (exp, records)
    };
    write_report(&a, &exp, &records)?;
    if let Some(path) = &a.trace {
        crate::cmd_compare_trace::trace_run(
            &exp,
            a.trace_run.as_deref(),
            &a.bounds.bounds(),
            crate::cmd_sim::trace::TraceArgs {
                trace: Some(path.clone()),
                trace_from: a.trace_from,
                trace_to: a.trace_to,
            },
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The run log of `exp` when `--log` is not given: beside the first of
/// --json/--csv/--plot/--html, else here.
fn default_log(a: &CompareArgs, exp: &Experiment) -> PathBuf {
    let beside = [&a.json, &a.csv, &a.plot, &a.html]
        .into_iter()
        .flatten()
        .next()
        .and_then(|p| p.parent())
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    runner::default_log(&beside, exp, a.shard)
}

/// Run `exp` (or the shard of it `a` asks for) with a progress bar and
/// `log` as its run log. `Err(status)`: a native run was interrupted by a
/// signal (said on stderr; the runs done are in the log).
fn run_experiment(
    a: &CompareArgs,
    exp: &Experiment,
    log: &Path,
) -> Result<std::result::Result<Vec<RunRecord>, ExitCode>> {
    let jobs = match a.jobs {
        Some(j) => j as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} ({eta} left)",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(exp.name.clone());
    let opts = RunOptions {
        jobs,
        shard: a.shard,
        resume: a.resume,
        log: log.to_path_buf(),
        bounds: a.bounds.bounds(),
        on_start: &|todo, done| {
            bar.set_length((todo + done) as u64);
            bar.set_position(done as u64);
        },
        on_done: &|_| bar.inc(1),
    };
    let records = match runner::run(exp, &opts) {
        Ok(r) => r,
        Err(e) => {
            bar.finish_and_clear();
            // A native run stopped by SIGINT, SIGTERM or SIGHUP (its
            // tasks reaped): the shell's status for the signal, as
            // `bench` gives, and the runs done are in the log.
            if let Some(sig) = interrupt_signal(&e) {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "{}",
                    crate::output::one_line(&format!(
                        "schedlab: {e} (the finished runs are in {}: --resume continues)",
                        log.display()
                    ))
                );
                return Ok(Err(ExitCode::from(128 + sig as u8)));
            }
            return Err(e.into());
        }
    };
    bar.finish_and_clear();
    Ok(Ok(records))
}

/// `builtin:NAME` of a suite: each of its experiments in turn, with its
/// own run log (`--log F` becomes F's stem + `-EXPERIMENT`), then each
/// one's report under a header; `--json` holds every part (`parts`, each
/// as an experiment's `--json` holds it), `--csv` one table with an
/// `experiment` column ([`report::csv_suite`]), `--plot` and `--html`
/// one file per experiment (the path's stem + `-EXPERIMENT`).
fn run_suite(a: &CompareArgs, name: &str, parts: &[&str]) -> Result<ExitCode> {
    for (flag, given) in [
        ("--shard", a.shard.is_some()),
        ("--trace", a.trace.is_some()),
    ] {
        if given {
            anyhow::bail!(
                "builtin:{name} is a suite of {} experiments ({}): {flag} takes one of them, e.g. builtin:{}",
                parts.len(),
                parts.join(", "),
                parts[0]
            );
        }
    }
    let mut done = Vec::new();
    for p in parts {
        let mut exp = lab::builtin::load(p, a.quick)?;
        if let Some(n) = a.iterations {
            exp.iterations = n;
        }
        let log = match &a.log {
            Some(l) => part_path(l, &exp.name),
            None => default_log(a, &exp),
        };
        match run_experiment(a, &exp, &log)? {
            Ok(records) => done.push((exp, records)),
            Err(code) => return Ok(code),
        }
    }
    let mut built = Vec::new();
    for (exp, records) in done {
        let (spec, report, records) = build(&exp, &records)?;
        built.push((exp, spec, report, records));
    }
    if let Some(path) = &a.json {
        let mut jparts = Vec::new();
        for (exp, _, report, records) in &built {
            jparts.push(json!({
                "experiment": experiment_json(exp)?,
                "report": report.json(),
                "runs": records,
            }));
        }
        let v = json!({
            "schedlab": crate::cmd_sim::provenance(),
            "suite": format!("builtin:{name}"),
            "parts": jparts,
        });
        let text = serde_json::to_string_pretty(&v)? + "\n";
        write_atomic(path, text.as_bytes()).context("--json")?;
    }
    if let Some(path) = &a.csv {
        let tables: Vec<(&str, &report::ReportSpec, &[RunRecord])> = built
            .iter()
            .map(|(e, s, _, r)| (e.name.as_str(), s, &r[..]))
            .collect();
        write_atomic(path, report::csv_suite(&tables).as_bytes()).context("--csv")?;
    }
    for (exp, spec, report, _) in &built {
        if let Some(path) = &a.plot {
            write_plots(&part_path(path, &exp.name), spec, report)?;
        }
        if let Some(path) = &a.html {
            write_html(&part_path(path, &exp.name), exp, spec, report)?;
        }
    }
    let mut out = std::io::stdout().lock();
    for (i, (exp, _, report, _)) in built.iter().enumerate() {
        let head = format!(
            "{}== builtin:{name} {}/{}: builtin:{} ==\n\n",
            if i > 0 { "\n" } else { "" },
            i + 1,
            built.len(),
            exp.name
        );
        out.write_all(head.as_bytes())
            .and_then(|()| out.write_all(report.text().as_bytes()))
            .map_err(crate::output::StdoutError)?;
    }
    out.flush().map_err(crate::output::StdoutError)?;
    Ok(ExitCode::SUCCESS)
}

/// `out.svg` + `vcpu-preempted-tbench` -> `out-vcpu-preempted-tbench.svg`.
fn part_path(path: &Path, part: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("out".into(), |s| s.to_string_lossy().into_owned());
    match path.extension() {
        Some(ext) => path.with_file_name(format!("{stem}-{part}.{}", ext.to_string_lossy())),
        None => path.with_file_name(format!("{stem}-{part}")),
    }
}

/// The report of `exp`'s runs: its spec, the report, and the runs with
/// their stage shares filled in.
fn build(
    exp: &Experiment,
    records: &[RunRecord],
) -> Result<(report::ReportSpec, Report, Vec<RunRecord>)> {
    let mut records = records.to_vec();
    runner::fill_stage_shares(exp, &mut records);
    let spec = runner::report_spec(exp, &records);
    let report = Report::build(&spec, &records)?;
    Ok((spec, report, records))
}

/// An SVG of the first metric to `path`, of each other metric to
/// `path`'s stem + `-METRIC.svg`; and, when there is a variant besides the
/// baseline, the plot of the variants' gain per point with intervals of
/// each metric beside it, `-gain` after the metric's file's stem.
fn write_plots(path: &Path, spec: &report::ReportSpec, report: &Report) -> Result<()> {
    for (i, m) in spec.metrics.iter().enumerate() {
        let file = if i == 0 {
            path.to_path_buf()
        } else {
            plot_path(path, &m.name)
        };
        let svg = report::plot::svg(report, &m.name)?;
        write_atomic(&file, svg.as_bytes()).context("--plot")?;
        if let Some(gain) = report::plot::gain_svg(report, &m.name)? {
            write_atomic(&plot_path(&file, "gain"), gain.as_bytes()).context("--plot")?;
        }
    }
    Ok(())
}

/// The whole report of `exp` as one page.
fn write_html(
    path: &Path,
    exp: &Experiment,
    spec: &report::ReportSpec,
    report: &Report,
) -> Result<()> {
    let mut page = crate::cmd_compare_html::page(exp);
    page.internals = spec
        .metrics
        .iter()
        .map(|m| m.name.clone())
        .filter(|n| crate::cmd_compare_html::is_internal(n))
        .collect();
    let text = report::html::html(report, &page)?;
    write_atomic(path, text.as_bytes()).context("--html")?;
    Ok(())
}

fn write_report(a: &CompareArgs, exp: &Experiment, records: &[RunRecord]) -> Result<()> {
    let (spec, report, records) = build(exp, records)?;
    if let Some(path) = &a.json {
        let v = json!({
            "schedlab": crate::cmd_sim::provenance(),
            "experiment": experiment_json(exp)?,
            "report": report.json(),
            "runs": records,
        });
        let text = serde_json::to_string_pretty(&v)? + "\n";
        write_atomic(path, text.as_bytes()).context("--json")?;
    }
    if let Some(path) = &a.csv {
        write_atomic(path, report::csv(&spec, &records).as_bytes()).context("--csv")?;
    }
    if let Some(path) = &a.plot {
        write_plots(path, &spec, &report)?;
    }
    if let Some(path) = &a.html {
        write_html(path, exp, &spec, &report)?;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(report.text().as_bytes())
        .map_err(crate::output::StdoutError)?;
    out.flush().map_err(crate::output::StdoutError)?;
    Ok(())
}

/// The experiment as `--json` records it: every cell's run specification,
/// and for a simulated run under the Linux policy the kernel it modelled
/// with every feature value that differs from the profile's (`kernel`, as
/// `schedlab sim --json` records it).
fn experiment_json(exp: &Experiment) -> Result<serde_json::Value> {
    let mut v = exp.expanded_json();
    if let Some(cells) = v["cells"].as_array_mut() {
        for (json, cell) in cells.iter_mut().zip(exp.cells()) {
            let s = &cell.spec;
            if s.mode == lab::Mode::Sim && s.policy == lab::Policy::Linux {
                if let Ok(k) = s.kernel_name() {
                    json["kernel"] = json!(k);
                }
            }
        }
    }
    Ok(v)
}

/// `out.svg` + `tput` → `out-tput.svg`.
fn plot_path(path: &Path, metric: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("plot".into(), |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or("svg".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-{metric}.{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_paths_per_metric() {
        assert_eq!(
            plot_path(Path::new("d/out.svg"), "tput"),
            PathBuf::from("d/out-tput.svg")
        );
        assert_eq!(
            plot_path(Path::new("x"), "time"),
            PathBuf::from("x-time.svg")
        );
    }

    #[test]
    fn part_paths_per_experiment() {
        assert_eq!(
            part_path(Path::new("d/r.svg"), "vcpu-preempted-tbench"),
            PathBuf::from("d/r-vcpu-preempted-tbench.svg")
        );
        assert_eq!(part_path(Path::new("log"), "x"), PathBuf::from("log-x"));
    }

    #[test]
    fn shard_parses() {
        assert_eq!(parse_shard("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert!(parse_shard("0/4").is_err());
        assert!(parse_shard("5/4").is_err());
        assert!(parse_shard("x").is_err());
    }
}
