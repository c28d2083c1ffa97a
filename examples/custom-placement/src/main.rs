//! Register `prev-or-idle` (src/lib.rs), run an experiment comparing it
//! with `linux` and `scx` (experiment.toml, or the file given), and print
//! the comparison table, as `schedlab compare` prints it.
//!
//! Usage: `custom-placement [--quick] [EXPERIMENT.toml]`.

use lab::runner::{self, RunOptions};
use lab::Experiment;
use std::error::Error;
use std::io::Write;
use std::process::ExitCode;

/// The experiment run without a file.
const EXPERIMENT: &str = include_str!("../experiment.toml");

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Err(e) => {
            eprintln!("custom-placement: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The comparison table of the experiment the arguments name.
fn run(args: Vec<String>) -> Result<String, Box<dyn Error>> {
    let mut quick = false;
    let mut file = None;
    for a in args {
        match a.as_str() {
            "--quick" => quick = true,
            s if s.starts_with('-') => {
                return Err(format!(
                    "unknown option {s} (usage: custom-placement [--quick] [EXPERIMENT.toml])"
                )
                .into())
            }
            _ if file.is_some() => return Err("give one experiment file".into()),
            _ => file = Some(std::path::PathBuf::from(a)),
        }
    }
    // before the experiment is parsed: parsing builds every variant's policy
    custom_placement::register()?;
    let exp = match &file {
        Some(path) => Experiment::read(path, quick)?,
        None => Experiment::parse("experiment.toml", EXPERIMENT, quick)?,
    };
    // the runner logs every run (what `schedlab compare --resume` reads);
    // this program keeps no log
    let log = std::env::temp_dir().join(format!(
        "custom-placement-{}-{}.runs.jsonl",
        exp.name,
        std::process::id()
    ));
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ran = runner::run(
        &exp,
        &RunOptions {
            jobs,
            shard: None,
            resume: false,
            log: log.clone(),
            bounds: lab::exec::Bounds::default(),
            on_start: &|_, _| {},
            on_done: &|_| {},
        },
    );
    let _ = std::fs::remove_file(&log);
    let mut records = ran?;
    // as `schedlab compare` builds its report
    runner::fill_stage_shares(&exp, &mut records);
    let spec = runner::report_spec(&exp, &records);
    let report = report::Report::build(&spec, &records)?;
    Ok(report.text())
}
