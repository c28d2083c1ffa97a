//! `schedlab fidelity [NAME | FILE]...`: run the fidelity corpus (published
//! A/B results of real kernel changes, `lab::fidelity`) and score the
//! simulator against the published figures (`report::fidelity`): per
//! result and point the published change, the simulated change with its
//! 95 % interval, whether the signs agree and the ratio of the magnitudes;
//! then the summary. docs/fidelity.md is the guide and holds the score.

use crate::output::{check_writable, write_atomic};
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lab::fidelity::{self, Entry};
use report::fidelity::Score;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct FidelityArgs {
    /// Corpus entries to run (names from --list, or files: an experiment with an [expect] block) [default: the whole corpus].
    #[arg(value_name = "NAME | FILE")]
    pub entries: Vec<String>,
    /// List the corpus, one line per entry (name, commit and title, machine, source), and exit.
    #[arg(long, conflicts_with_all = ["entries", "quick", "json", "html"])]
    pub list: bool,
    /// A fast look: each entry's [quick] settings (fewer points, shorter runs, fewer iterations).
    #[arg(long)]
    pub quick: bool,
    /// Simulations to run at once [default: every core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Iterations per variant and point (overrides every entry's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub iterations: Option<u32>,
    /// Write the score as JSON: every entry, comparison and point, the summary, and the schedlab commit.
    #[arg(long, value_name = "F")]
    pub json: Option<PathBuf>,
    /// Write the score as one self-contained HTML page.
    #[arg(long, value_name = "F.html")]
    pub html: Option<PathBuf>,
    /// The bounds of every simulated run, as `sim` takes them.
    #[command(flatten)]
    pub bounds: crate::args::BoundArgs,
}

/// Is `s` a file rather than a corpus name?
fn is_file(s: &str) -> bool {
    s.ends_with(".toml") || s.contains('/') || Path::new(s).is_file()
}

/// Every entry asked for, parsed and checked before anything runs.
fn entries(a: &FidelityArgs) -> Result<Vec<Entry>> {
    let names: Vec<String> = if a.entries.is_empty() {
        fidelity::CORPUS.iter().map(|c| c.0.to_string()).collect()
    } else {
        a.entries.clone()
    };
    let mut out: Vec<Entry> = Vec::new();
    for n in &names {
        let mut e = if is_file(n) {
            fidelity::read(Path::new(n), a.quick)?
        } else {
            fidelity::load(n, a.quick)?
        };
        if out.iter().any(|o| o.info.name == e.info.name) {
            anyhow::bail!("fidelity entry {}: given twice", e.info.name);
        }
        if let Some(i) = a.iterations {
            e.experiment.iterations = i;
        }
        out.push(e);
    }
    Ok(out)
}

pub fn run(a: FidelityArgs) -> Result<ExitCode> {
    if a.list {
        let mut out = std::io::stdout().lock();
        for line in fidelity::list_lines()? {
            writeln!(out, "{line}").map_err(crate::output::StdoutError)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    for (flag, path) in [("--json", &a.json), ("--html", &a.html)] {
        if let Some(p) = path {
            check_writable(p).with_context(|| flag.to_string())?;
        }
    }
    let entries = entries(&a)?;
    if entries.is_empty() {
        anyhow::bail!("the corpus is empty");
    }
    let jobs = match a.jobs {
        Some(j) => j as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let exps: Vec<&lab::Experiment> = entries.iter().map(|e| &e.experiment).collect();
    let total = lab::runner::distinct_runs(&exps);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "fidelity [{bar:30}] {pos}/{len} runs, {elapsed} ({eta} left)",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let records = lab::runner::run_all(&exps, jobs, &a.bounds.bounds(), &|_| bar.inc(1));
    bar.finish_and_clear();
    let records = records?;
    let score = Score::build(
        entries
            .iter()
            .zip(&records)
            .map(|(e, r)| (e.info.clone(), r.clone()))
            .collect(),
    )?;
    let provenance = crate::cmd_sim::provenance();
    if let Some(path) = &a.json {
        let v = json!({
            "schedlab": provenance,
            "quick": a.quick,
            "entries": score.entries.iter().zip(&entries).zip(&records).map(|((i, e), r)| json!({
                "info": i,
                "note": e.note,
                "iterations": e.experiment.iterations,
                "runs": r,
            })).collect::<Vec<_>>(),
            "comparisons": score.comparisons,
            "summary": score.summary,
        });
        let text = serde_json::to_string_pretty(&v)? + "\n";
        write_atomic(path, text.as_bytes()).context("--json")?;
    }
    if let Some(path) = &a.html {
        let generator = format!(
            "schedlab {} ({}){}",
            provenance["version"].as_str().unwrap_or(""),
            provenance["commit"].as_str().unwrap_or(""),
            if a.quick { ", --quick" } else { "" }
        );
        write_atomic(path, score.html("schedlab fidelity", &generator).as_bytes())
            .context("--html")?;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(score.text().as_bytes())
        .map_err(crate::output::StdoutError)?;
    Ok(ExitCode::SUCCESS)
}
