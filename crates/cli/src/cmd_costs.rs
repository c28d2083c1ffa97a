//! `schedlab costs show PRESET [--toml]`: a machine preset's cost profile,
//! each value with its meaning and its source. The `--toml` form is a file
//! to edit and load back with `schedlab sim ... --cost-profile FILE`.

use anyhow::{bail, Result};
use clap::Subcommand;
use sim::cost_profile;
use sim::costs::MachineCosts;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum CostsCommand {
    /// Print a machine preset's cost profile with the source of each value.
    Show {
        /// Machine preset (see `schedlab topology list`).
        preset: String,
        /// Print it as a TOML cost profile (sources as comments), to edit and load back with --cost-profile.
        #[arg(long)]
        toml: bool,
    },
}

pub fn run(cmd: CostsCommand) -> Result<ExitCode> {
    match cmd {
        CostsCommand::Show { preset, toml } => show(&preset, toml),
    }
}

fn show(preset: &str, toml: bool) -> Result<ExitCode> {
    let names: Vec<&str> = topology::presets().iter().map(|p| p.0).collect();
    if !names.contains(&preset) {
        bail!(
            "unknown machine preset {preset:?} (presets: {})",
            names.join(", ")
        );
    }
    let costs = MachineCosts::for_machine(preset);
    let sources = cost_profile::preset_sources(preset);
    if toml {
        let header = format!(
            "schedlab cost profile of the {preset} preset (`schedlab costs show {preset} --toml`)"
        );
        print!("{}", cost_profile::to_toml(&costs, &header, &sources));
        return Ok(ExitCode::SUCCESS);
    }
    println!("{preset}: cost profile (`--toml` prints it as a file to edit and load with --cost-profile FILE)");
    let table = match toml_value(&costs) {
        ::toml::Value::Table(t) => t,
        _ => unreachable!("a struct serialises to a table"),
    };
    for (key, value) in table {
        println!();
        println!(
            "{key} = {}",
            cost_profile::value_text(&value).replace('\n', "\n  ")
        );
        if let Some(m) = cost_profile::meaning(&key) {
            println!("  {m}");
        }
        if let Some(s) = sources.get(&key) {
            println!("  source: {s}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn toml_value(c: &MachineCosts) -> ::toml::Value {
    ::toml::Value::try_from(c).expect("a cost profile serialises")
}
