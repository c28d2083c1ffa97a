//! Comparison reports the way mmtests prints them: per metric and sweep
//! point, Min, Amean or Hmean, Stddev, CoeffVar, Max and BAmean-95 for a
//! baseline and each variant, with percentage gains (positive is better)
//! and the significance marker, plus JSON, CSV and SVG plots.
//!
//! This crate never runs anything: it turns a [`ReportSpec`] (what was
//! asked) and the [`RunRecord`]s of finished runs into text and files.
//!
//! - [`stats`]: mmtests' summary statistics ([`summarise`]), [`pdiff`] /
//!   [`pndiff`], the `*` significance test ([`significant`]) and Welch's
//!   p-value ([`welch_p`]).
//! - [`Report::build`] checks the runs against the spec and computes every
//!   cell; [`Report::text`] prints mmtests' table, [`Report::json`] the same
//!   data as JSON.
//! - [`csv()`] lists every run; [`svg()`] plots one metric over the sweep;
//!   [`html::html`] puts the tables and plots on one self-contained page.
//! - [`fidelity`]: the score of simulated against published changes
//!   (`schedlab fidelity`).
//!
//! # Example
//! ```
//! use report::{Better, MetricInfo, PointInfo, Report, ReportSpec, RunRecord, VariantInfo};
//!
//! let spec = ReportSpec {
//!     name: "hackbench".into(),
//!     description: "pipes, process mode".into(),
//!     axes: vec!["groups".into()],
//!     points: vec![PointInfo { key: "4".into(), values: vec![4.into()] }],
//!     variants: vec![
//!         VariantInfo { name: "linux-6.8".into(), mode: "native".into() },
//!         VariantInfo { name: "sim-eevdf".into(), mode: "sim".into() },
//!     ],
//!     metrics: vec![MetricInfo {
//!         name: "time".into(),
//!         unit: "s".into(),
//!         better: Better::Lower,
//!         decimals: 4,
//!         description: "wall time".into(),
//!     }],
//!     iterations: 2,
//! };
//! let records: Vec<RunRecord> = [("linux-6.8", 0, 1.00), ("linux-6.8", 1, 1.02),
//!                                ("sim-eevdf", 0, 1.10), ("sim-eevdf", 1, 1.12)]
//!     .into_iter()
//!     .map(|(variant, iteration, time)| RunRecord {
//!         variant: variant.into(),
//!         point: "4".into(),
//!         iteration,
//!         seed: 42,
//!         metrics: [("time".to_string(), time)].into(),
//!     })
//!     .collect();
//!
//! let report = Report::build(&spec, &records)?;
//! let text = report.text();
//! // mmtests' layout: the mean row, the baseline at 0%, the sim 9.9% worse
//! // and significantly so (starred).
//! assert!(text.contains("Amean     time-4      1.0100 (   0.00%)      1.1100 *  -9.90%*"));
//! assert!(text.contains("Sim error vs linux-6.8: sim-eevdf  time-4: +9.90%  overall |err| 9.90%"));
//! assert_eq!(report.json()["metrics"][0]["points"][0]["cells"][1]["significant"], true);
//! assert!(report::csv(&spec, &records).starts_with("variant,mode,groups,iteration,seed,time\n"));
//! assert!(report::svg(&report, "time")?.contains("sim-eevdf"));
//! # Ok::<(), report::ReportError>(())
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod csv_rows;
pub mod fidelity;
#[cfg(test)]
mod fixtures;
pub mod html;
mod model;
pub mod plot;
pub mod stats;
mod table;
pub mod verdict;

pub use csv_rows::{csv, csv_suite};
pub use model::{
    Cell, MetricReport, PointError, PointRow, Report, ReportError, RowPcts, SimError, VariantError,
};
pub use plot::{gain_svg, svg};
pub use stats::{
    gain_interval, pchange, pdiff, pndiff, significant, summarise, welch_interval, welch_p, Summary,
};
pub use verdict::{Outcome, Verdict};

/// Which direction of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better (times, latencies, costs): Amean row.
    Lower,
    /// Higher is better (throughput): Hmean row.
    Higher,
    /// Neither direction is better (a share of wake-ups by placement
    /// stage): Amean row, and the percentages are the plain change from
    /// the baseline, positive when the value went up.
    Neither,
}

impl Better {
    /// `lower is better`, `higher is better` or `neither direction is
    /// better`: the words the table's heading and the plots use.
    pub fn phrase(self) -> &'static str {
        match self {
            Better::Lower => "lower is better",
            Better::Higher => "higher is better",
            Better::Neither => "neither direction is better",
        }
    }
}

/// A metric of interest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricInfo {
    /// Name, the operation prefix in the table (`time`, `tput`).
    pub name: String,
    /// Unit for plots and JSON (`s`, `MB/s`, `us`, `ns`, `%`).
    pub unit: String,
    /// Which direction is better.
    pub better: Better,
    /// Decimal places in the table (mmtests: hackbench and tbench 4, else 2).
    pub decimals: usize,
    /// One line saying what it is.
    pub description: String,
}

/// One point of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointInfo {
    /// Operation suffix, as mmtests names it: the axis values joined by `-`
    /// (`12`, or `12-4` for two axes; `""` without a sweep).
    pub key: String,
    /// The value of each sweep axis at this point, in axis order.
    pub values: Vec<serde_json::Value>,
}

/// One variant (a column of the table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantInfo {
    /// Name (the header splits it at its first `-`).
    pub name: String,
    /// `sim` or `native`.
    pub mode: String,
}

/// What was asked: the experiment's shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportSpec {
    /// Experiment name.
    pub name: String,
    /// One line describing it.
    pub description: String,
    /// Sweep axis names, in order (empty: one point).
    pub axes: Vec<String>,
    /// Sweep points, in order.
    pub points: Vec<PointInfo>,
    /// Variants, the baseline first.
    pub variants: Vec<VariantInfo>,
    /// Metrics, in the order to print.
    pub metrics: Vec<MetricInfo>,
    /// Iterations per (variant, point).
    pub iterations: u32,
}

/// One finished run, as the run log stores it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Variant name.
    pub variant: String,
    /// Sweep point key ([`PointInfo::key`]).
    pub point: String,
    /// Iteration, from 0.
    pub iteration: u32,
    /// The seed the run used.
    pub seed: u64,
    /// Metric values by name (a metric the run could not produce is absent).
    pub metrics: BTreeMap<String, f64>,
}
