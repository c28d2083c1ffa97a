//! Comparison reports the way mmtests prints them: per metric and sweep
//! point, Min, Amean or Hmean, Stddev, CoeffVar, Max and BAmean-95 for a
//! baseline and each variant, with percentage gains (positive is better)
//! and the significance marker, plus JSON, CSV and SVG plots.
//!
//! This crate never runs anything: it turns a [`ReportSpec`] (what was
//! asked) and the [`RunRecord`]s of finished runs into text and files.
//!
//! # Example
//! ```ignore
//! let spec = ReportSpec { .. };
//! let report = Report::build(&spec, &records)?;
//! print!("{}", report.text());
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod stats;

pub use stats::{pdiff, pndiff, significant, summarise, welch_p, Summary};

/// Which direction of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better (times, latencies, costs): Amean row.
    Lower,
    /// Higher is better (throughput): Hmean row.
    Higher,
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
