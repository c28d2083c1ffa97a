//! `--trace FILE [--trace-from S] [--trace-to S]` of every `sim` command: a
//! Perfetto trace of the run (docs/visualising.md), streamed to a temporary
//! file beside FILE and renamed into place once the run has ended well.

use anyhow::{bail, Result};
use clap::Args;
use sim::trace::TraceSlot;
use simtrace::{PerfettoWriter, TraceStats, Window};
use std::path::PathBuf;

/// The trace flags.
#[derive(Args, Debug, Clone)]
pub struct TraceArgs {
    /// Write a Perfetto trace of the run to FILE (open it in ui.perfetto.dev): every CPU's switches, wake-ups with their placement stage, probes and cost, migrations, idle states, balancer passes, run-queue lengths and nr_idle_scan.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Keep only events from S simulated seconds on (a decimal number).
    #[arg(long, value_name = "S", requires = "trace", value_parser = sim_seconds)]
    pub trace_from: Option<u64>,
    /// Keep only events before S simulated seconds (a decimal number).
    #[arg(long, value_name = "S", requires = "trace", value_parser = sim_seconds)]
    pub trace_to: Option<u64>,
}

/// The most simulated seconds a window bound takes (`--time-limit`'s own
/// maximum).
const MAX_S: f64 = 1e9;

/// A decimal number of simulated seconds, as nanoseconds.
pub fn sim_seconds(s: &str) -> Result<u64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_S).contains(&v) => Ok((v * 1e9).round() as u64),
        _ => Err(format!("{s} is not a number of seconds in 0..={MAX_S}")),
    }
}

/// An open trace: the slot the run writes through, and where it goes.
pub struct OpenTrace {
    slot: TraceSlot,
    path: PathBuf,
}

impl TraceArgs {
    /// Open the trace file (its temporary name) before the run, so a path
    /// that cannot be written fails at once; None without `--trace`.
    pub fn open(&self) -> Result<Option<OpenTrace>> {
        let Some(path) = &self.trace else {
            return Ok(None);
        };
        let window = Window {
            from: self.trace_from.unwrap_or(0),
            to: self.trace_to.unwrap_or(u64::MAX),
        };
        if window.from >= window.to {
            bail!("--trace-from must be before --trace-to");
        }
        let w =
            PerfettoWriter::create(path, window).map_err(|e| anyhow::anyhow!("--trace: {e}"))?;
        Ok(Some(OpenTrace {
            slot: TraceSlot::new(Box::new(w)),
            path: path.clone(),
        }))
    }
}

impl OpenTrace {
    /// The slot to hand the run.
    pub fn slot(&self) -> TraceSlot {
        self.slot.clone()
    }

    /// After the run: write the rest and move the file into place.
    pub fn finish(self) -> Result<TraceStats> {
        let Some(sink) = self.slot.take() else {
            bail!("--trace {}: the run kept its trace", self.path.display());
        };
        let Ok(w) = sink.into_any().downcast::<PerfettoWriter>() else {
            bail!("--trace {}: not a Perfetto writer", self.path.display());
        };
        w.finish().map_err(|e| anyhow::anyhow!("--trace: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_decimal_and_bounded() {
        assert_eq!(sim_seconds("1.5"), Ok(1_500_000_000));
        assert_eq!(sim_seconds("0"), Ok(0));
        assert!(sim_seconds("-1").is_err());
        assert!(sim_seconds("nan").is_err());
        assert!(sim_seconds("inf").is_err());
        assert!(sim_seconds("2e9").is_err());
        assert!(sim_seconds("x").is_err());
    }
}
