//! The comparison itself: per metric, sweep point and variant, the samples,
//! their summary and how each row compares with the baseline, the way
//! mmtests' `bin/compare-mmtests.pl` builds it (Summarise.pm then
//! Compare.pm), plus the simulator-versus-native error.

use crate::stats::{self, pndiff, Summary};
use crate::verdict::{self, Verdict};
use crate::{Better, MetricInfo, ReportSpec, RunRecord};
use serde::Serialize;
use std::collections::HashMap;
use thiserror::Error;

/// Why a report could not be built or drawn.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ReportError {
    /// A run names a variant the spec does not have.
    #[error(
        "run record names unknown variant `{variant}` (point `{point}`, iteration {iteration})"
    )]
    UnknownVariant {
        /// The unknown variant name.
        variant: String,
        /// The run's point key.
        point: String,
        /// The run's iteration.
        iteration: u32,
    },
    /// A run names a sweep point the spec does not have.
    #[error(
        "run record of variant `{variant}` names unknown point `{point}` (iteration {iteration})"
    )]
    UnknownPoint {
        /// The run's variant.
        variant: String,
        /// The unknown point key.
        point: String,
        /// The run's iteration.
        iteration: u32,
    },
    /// A run's iteration is not below the spec's iteration count.
    #[error(
        "run record of variant `{variant}` at point `{point}` has iteration {iteration}, \
         but the spec asks for {iterations} iterations (0..{iterations})"
    )]
    IterationOutOfRange {
        /// The run's variant.
        variant: String,
        /// The run's point key.
        point: String,
        /// The out-of-range iteration.
        iteration: u32,
        /// [`ReportSpec::iterations`].
        iterations: u32,
    },
    /// Two runs claim the same (variant, point, iteration).
    #[error("duplicate run record: variant `{variant}`, point `{point}`, iteration {iteration}")]
    Duplicate {
        /// Variant.
        variant: String,
        /// Point key.
        point: String,
        /// Iteration.
        iteration: u32,
    },
    /// A (variant, point, iteration) the spec asks for has no run; the
    /// first one missing in variant, point, iteration order is named.
    #[error("missing run: variant `{variant}`, point `{point}`, iteration {iteration} ({total} run(s) missing in all)")]
    Missing {
        /// Variant of the first missing run.
        variant: String,
        /// Point key of the first missing run.
        point: String,
        /// Iteration of the first missing run.
        iteration: u32,
        /// How many runs are missing altogether.
        total: usize,
    },
    /// The spec names a variant or a point key twice.
    #[error("the spec names {what} `{name}` twice")]
    DuplicateInSpec {
        /// `variant` or `point`.
        what: &'static str,
        /// The repeated name or key.
        name: String,
    },
    /// A plot was asked for a metric the spec does not have.
    #[error("unknown metric `{0}`")]
    UnknownMetric(String),
    /// The plotting library failed.
    #[error("plot: {0}")]
    Plot(String),
}

/// A row's percentage difference from the baseline column, positive when
/// better. Min, mean, Max and B?mean-95 follow the metric's direction
/// (`pdiff` for higher, `pndiff` for lower); Stddev and CoeffVar always use
/// `pndiff` (`Stat.pm`'s `stat_compare`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RowPcts {
    /// Min row.
    pub min: f64,
    /// Amean/Hmean row.
    pub mean: f64,
    /// Stddev row.
    pub stddev: f64,
    /// CoeffVar row.
    pub coeffvar: f64,
    /// Max row.
    pub max: f64,
    /// B?mean-95 row.
    pub bmean95: f64,
}

impl RowPcts {
    /// All zero: the baseline column, which mmtests always prints as
    /// `(   0.00%)`.
    pub const ZERO: RowPcts = RowPcts {
        min: 0.0,
        mean: 0.0,
        stddev: 0.0,
        coeffvar: 0.0,
        max: 0.0,
        bmean95: 0.0,
    };

    /// The percentages of `new` against `base` for a metric whose direction
    /// is `better`.
    pub fn compare(better: Better, base: &Summary, new: &Summary) -> RowPcts {
        let dir = |b: f64, n: f64| stats::pct(better, b, n);
        RowPcts {
            min: dir(base.min, new.min),
            mean: dir(base.mean, new.mean),
            stddev: pndiff(base.stddev, new.stddev),
            coeffvar: pndiff(base.coeffvar, new.coeffvar),
            max: dir(base.max, new.max),
            bmean95: dir(base.bmean95, new.bmean95),
        }
    }
}

/// One variant's cell at one metric and point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// Variant name.
    pub variant: String,
    /// The metric's values in iteration order (runs without the metric are
    /// skipped).
    pub values: Vec<f64>,
    /// Their summary; `None` when there are no values (printed `n/a`).
    pub summary: Option<Summary>,
    /// Each row against the baseline; `None` when either side has no
    /// values. Always all zero for the baseline itself.
    pub pct: Option<RowPcts>,
    /// mmtests' `*` marker on the mean row ([`stats::significant`]);
    /// never set on the baseline.
    pub significant: bool,
    /// Welch's t-test p-value against the baseline's values; `None` for the
    /// baseline and when either side has fewer than two values.
    pub welch_p: Option<f64>,
    /// The [`stats::CONFIDENCE`] interval of the mean row's percentage
    /// ([`stats::gain_interval`]); `None` for the baseline, with fewer than
    /// two values a side, or when the baseline's mean is 0.
    pub gain_ci: Option<(f64, f64)>,
}

/// One sweep point of a metric: a cell per variant, baseline first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointRow {
    /// The point's key ([`crate::PointInfo::key`]).
    pub key: String,
    /// The operation label mmtests prints: `<metric>-<key>`, or just the
    /// metric's name when the key is empty.
    pub operation: String,
    /// One cell per variant, in the spec's order.
    pub cells: Vec<Cell>,
}

/// One sim variant's error against the native reference at one point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointError {
    /// Point key.
    pub key: String,
    /// `(sim mean − native mean)/native mean·100`; `None` when either mean
    /// is missing or NaN, or the native mean is 0.
    pub error_pct: Option<f64>,
}

/// One sim variant's error against the native reference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantError {
    /// The sim variant.
    pub variant: String,
    /// Per point, in the spec's order.
    pub points: Vec<PointError>,
    /// The mean of `|error_pct|` over the points that have one.
    pub overall_abs_pct: Option<f64>,
}

/// How far each sim variant's means are from the first native variant's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimError {
    /// The native reference: the spec's first variant of mode `native`.
    pub native: String,
    /// One entry per variant of mode `sim`, in the spec's order.
    pub variants: Vec<VariantError>,
}

/// The comparison for one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricReport {
    /// The metric.
    pub metric: MetricInfo,
    /// `amean` or `hmean`: which mean the `mean` fields hold.
    pub mean_kind: &'static str,
    /// One row per sweep point, in the spec's order.
    pub points: Vec<PointRow>,
    /// Present when the spec has both a native and a sim variant.
    pub sim_error: Option<SimError>,
    /// One verdict per variant after the baseline, in the spec's order.
    pub verdicts: Vec<Verdict>,
}

/// A whole comparison: what was asked and, per metric, the table's data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The spec the report was built from.
    pub spec: ReportSpec,
    /// One entry per metric, in the spec's order.
    pub metrics: Vec<MetricReport>,
}

impl Report {
    /// Check the runs against the spec and compute every cell.
    ///
    /// Every (variant, point, iteration) of the spec must have exactly one
    /// run, and every run must belong to the spec. A metric missing from
    /// some runs only thins out those cells.
    pub fn build(spec: &ReportSpec, records: &[RunRecord]) -> Result<Report, ReportError> {
        let variant_index = index_of(spec.variants.iter().map(|v| v.name.as_str()), "variant")?;
        let point_index = index_of(spec.points.iter().map(|p| p.key.as_str()), "point")?;
        let iterations = spec.iterations as usize;
        let (nv, np) = (spec.variants.len(), spec.points.len());
        let slot = |v: usize, p: usize, i: usize| (v * np + p) * iterations + i;

        let mut grid: Vec<Option<&RunRecord>> = vec![None; nv * np * iterations];
        for r in records {
            let v = *variant_index.get(r.variant.as_str()).ok_or_else(|| {
                ReportError::UnknownVariant {
                    variant: r.variant.clone(),
                    point: r.point.clone(),
                    iteration: r.iteration,
                }
            })?;
            let p =
                *point_index
                    .get(r.point.as_str())
                    .ok_or_else(|| ReportError::UnknownPoint {
                        variant: r.variant.clone(),
                        point: r.point.clone(),
                        iteration: r.iteration,
                    })?;
            if r.iteration >= spec.iterations {
                return Err(ReportError::IterationOutOfRange {
                    variant: r.variant.clone(),
                    point: r.point.clone(),
                    iteration: r.iteration,
                    iterations: spec.iterations,
                });
            }
            let s = &mut grid[slot(v, p, r.iteration as usize)];
            if s.is_some() {
                return Err(ReportError::Duplicate {
                    variant: r.variant.clone(),
                    point: r.point.clone(),
                    iteration: r.iteration,
                });
            }
            *s = Some(r);
        }
        let missing = grid.iter().filter(|s| s.is_none()).count();
        if let Some(first) = grid.iter().position(Option::is_none) {
            let (v, rest) = (first / (np * iterations), first % (np * iterations));
            return Err(ReportError::Missing {
                variant: spec.variants[v].name.clone(),
                point: spec.points[rest / iterations].key.clone(),
                iteration: (rest % iterations) as u32,
                total: missing,
            });
        }

        let metrics = spec
            .metrics
            .iter()
            .map(|m| {
                let points = spec
                    .points
                    .iter()
                    .enumerate()
                    .map(|(p, point)| {
                        let values: Vec<Vec<f64>> = (0..nv)
                            .map(|v| {
                                (0..iterations)
                                    .filter_map(|i| grid[slot(v, p, i)])
                                    .filter_map(|r| r.metrics.get(&m.name).copied())
                                    .collect()
                            })
                            .collect();
                        point_row(spec, m, &point.key, values)
                    })
                    .collect::<Vec<_>>();
                let sim_error = sim_error(spec, &points);
                let verdicts = (1..nv)
                    .map(|v| verdict::verdict(m.better, &points, v))
                    .collect();
                MetricReport {
                    metric: m.clone(),
                    mean_kind: match m.better {
                        Better::Lower | Better::Neither => "amean",
                        Better::Higher => "hmean",
                    },
                    points,
                    sim_error,
                    verdicts,
                }
            })
            .collect();
        Ok(Report {
            spec: spec.clone(),
            metrics,
        })
    }

    /// The metric named `name`.
    pub fn metric(&self, name: &str) -> Option<&MetricReport> {
        self.metrics.iter().find(|m| m.metric.name == name)
    }

    /// The whole report as JSON: `{"spec": …, "metrics": [{"metric": …,
    /// "mean_kind": …, "points": [{"key", "operation", "cells": [{"variant",
    /// "values", "summary", "pct", "significant", "welch_p", "gain_ci"}]}],
    /// "sim_error": …, "verdicts": [{"variant", "outcome", "compared",
    /// "points", "better", "worse", "best", "worst"}]}]}`.
    ///
    /// Deterministic: everything is in the spec's order and maps are
    /// `BTreeMap`s. NaN and infinite floats become `null` (JSON has no NaN);
    /// so do absent summaries, percentages and p-values.
    pub fn json(&self) -> serde_json::Value {
        // serde_json turns non-finite floats into null, both in `to_value`
        // and when writing text, so the NaN of an Hmean over a 0 sample or
        // a `nan` cell cannot make serialisation fail. Serialising these
        // plain structs has no other failure mode.
        serde_json::to_value(self).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }
}

/// Name → position, refusing repeats.
fn index_of<'a>(
    names: impl Iterator<Item = &'a str>,
    what: &'static str,
) -> Result<HashMap<&'a str, usize>, ReportError> {
    let mut map = HashMap::new();
    for (i, name) in names.enumerate() {
        if map.insert(name, i).is_some() {
            return Err(ReportError::DuplicateInSpec {
                what,
                name: name.to_string(),
            });
        }
    }
    Ok(map)
}

/// The operation label: mmtests' shellpack extractors name it
/// `metric-factor` (`time-12`, `tput-64`).
fn operation(metric: &str, key: &str) -> String {
    if key.is_empty() {
        metric.to_string()
    } else {
        format!("{metric}-{key}")
    }
}

/// One point's cells, comparing each variant with the first (Compare.pm's
/// `_generateComparisonTable`).
fn point_row(spec: &ReportSpec, m: &MetricInfo, key: &str, values: Vec<Vec<f64>>) -> PointRow {
    let summaries: Vec<Option<Summary>> = values
        .iter()
        .map(|vs| (!vs.is_empty()).then(|| stats::summarise(vs, m.better)))
        .collect();
    let base_values = values.first().cloned().unwrap_or_default();
    let base = summaries.first().copied().flatten();
    let cells = spec
        .variants
        .iter()
        .zip(values)
        .zip(&summaries)
        .enumerate()
        .map(|(v, ((variant, vals), summary))| {
            let (pct, significant, welch_p, gain_ci) = if v == 0 {
                (summary.map(|_| RowPcts::ZERO), false, None, None)
            } else {
                match (&base, summary) {
                    (Some(b), Some(s)) => (
                        Some(RowPcts::compare(m.better, b, s)),
                        stats::significant(b, s),
                        stats::welch_p(&base_values, &vals),
                        stats::gain_interval(m.better, b, s),
                    ),
                    _ => (None, false, None, None),
                }
            };
            Cell {
                variant: variant.name.clone(),
                values: vals,
                summary: *summary,
                pct,
                significant,
                welch_p,
                gain_ci,
            }
        })
        .collect();
    PointRow {
        key: key.to_string(),
        operation: operation(&m.name, key),
        cells,
    }
}

/// Mode of a variant run on the host.
const NATIVE: &str = "native";
/// Mode of a variant run in the simulator.
const SIM: &str = "sim";

/// Each sim variant's mean against the first native variant's, per point.
fn sim_error(spec: &ReportSpec, points: &[PointRow]) -> Option<SimError> {
    let native = spec.variants.iter().position(|v| v.mode == NATIVE)?;
    let sims: Vec<usize> = (0..spec.variants.len())
        .filter(|&v| spec.variants[v].mode == SIM)
        .collect();
    if sims.is_empty() {
        return None;
    }
    let mean_of = |row: &PointRow, v: usize| {
        row.cells
            .get(v)
            .and_then(|c| c.summary)
            .map(|s| s.mean)
            .filter(|m| m.is_finite())
    };
    let variants = sims
        .into_iter()
        .map(|v| {
            let pts: Vec<PointError> = points
                .iter()
                .map(|row| {
                    let error_pct = match (mean_of(row, v), mean_of(row, native)) {
                        (Some(sim), Some(nat)) if nat != 0.0 => Some((sim - nat) / nat * 100.0),
                        _ => None,
                    };
                    PointError {
                        key: row.key.clone(),
                        error_pct,
                    }
                })
                .collect();
            let errs: Vec<f64> = pts.iter().filter_map(|p| p.error_pct).collect();
            let overall_abs_pct = (!errs.is_empty())
                .then(|| errs.iter().map(|e| e.abs()).sum::<f64>() / errs.len() as f64);
            VariantError {
                variant: spec.variants[v].name.clone(),
                points: pts,
                overall_abs_pct,
            }
        })
        .collect();
    Some(SimError {
        native: spec.variants[native].name.clone(),
        variants,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{records, run, spec};

    fn report() -> Report {
        Report::build(&spec(), &records()).expect("complete runs")
    }

    #[test]
    fn cells_hold_values_in_iteration_order_and_compare_with_the_baseline() {
        let r = report();
        let time = r.metric("time").expect("time");
        assert_eq!(time.mean_kind, "amean");
        let p4 = &time.points[1];
        assert_eq!((p4.key.as_str(), p4.operation.as_str()), ("4", "time-4"));
        let (base, sim) = (&p4.cells[0], &p4.cells[1]);
        assert_eq!(base.values, vec![2.00, 2.02, 2.01]);
        assert_eq!(sim.values, vec![2.50, 2.52, 2.51]);
        assert_eq!(base.pct, Some(RowPcts::ZERO));
        assert!(!base.significant && base.welch_p.is_none());
        // Lower is better: mean 2.51 vs 2.01, pndiff = 100 − 251/2.01 = −24.875…
        let pct = sim.pct.expect("both sides have values");
        assert!((pct.mean - (100.0 - 2.51 * 100.0 / 2.01)).abs() < 1e-9);
        // Both stddevs are 0.01: pndiff(0.01, 0.01) = 0.
        assert!(pct.stddev.abs() < 1e-9);
        // Intervals 2.01 ± 0.0196 and 2.51 ± 0.0196 are far apart.
        assert!(sim.significant);
        assert!(sim.welch_p.expect("three values each") < 1e-4);
        // At one group the sim is within the spread: not significant.
        assert!(!time.points[0].cells[1].significant);
    }

    #[test]
    fn an_absent_metric_thins_the_cell() {
        let r = report();
        let tput = r.metric("tput").expect("tput");
        assert_eq!(tput.mean_kind, "hmean");
        let sim4 = &tput.points[1].cells[1];
        assert_eq!(sim4.values, vec![290.0, 320.0]);
        assert_eq!(sim4.summary.map(|s| s.n), Some(2));
    }

    #[test]
    fn a_cell_without_values_has_no_summary() {
        let mut recs = records();
        for r in &mut recs {
            if r.variant == "sim-eevdf" && r.point == "1" {
                r.metrics.remove("tput");
            }
        }
        let r = Report::build(&spec(), &recs).expect("complete runs");
        let cell = &r.metric("tput").expect("tput").points[0].cells[1];
        assert!(cell.values.is_empty());
        assert_eq!((cell.summary, cell.pct, cell.welch_p), (None, None, None));
        assert!(!cell.significant);
    }

    #[test]
    fn sim_error_is_relative_to_the_first_native_variant() {
        let r = report();
        let se = r
            .metric("time")
            .and_then(|m| m.sim_error.clone())
            .expect("native and sim");
        assert_eq!(se.native, "native-6.8");
        assert_eq!(se.variants.len(), 1);
        let v = &se.variants[0];
        assert_eq!(v.variant, "sim-eevdf");
        // Point 1: (1.07 − 1.05)/1.05·100 = 1.9048%; point 4: (2.51 −
        // 2.01)/2.01·100 = 24.8756%; overall (1.9048 + 24.8756)/2 = 13.3902%.
        let e1 = v.points[0].error_pct.expect("both means");
        let e4 = v.points[1].error_pct.expect("both means");
        assert!((e1 - 2.0 / 1.05).abs() < 1e-9, "{e1}");
        assert!((e4 - 50.0 / 2.01).abs() < 1e-9, "{e4}");
        let overall = v.overall_abs_pct.expect("two points");
        assert!((overall - (e1 + e4) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn no_sim_error_without_both_modes() {
        let mut s = spec();
        s.variants[1].mode = "native".into();
        let r = Report::build(&s, &records()).expect("complete runs");
        assert!(r.metrics.iter().all(|m| m.sim_error.is_none()));
    }

    #[test]
    fn unknown_variant_or_point_is_refused() {
        let mut recs = records();
        recs.push(run("sim-cfs", "1", 0, &[]));
        assert_eq!(
            Report::build(&spec(), &recs),
            Err(ReportError::UnknownVariant {
                variant: "sim-cfs".into(),
                point: "1".into(),
                iteration: 0
            })
        );
        let mut recs = records();
        recs.push(run("sim-eevdf", "8", 2, &[]));
        let err = Report::build(&spec(), &recs).expect_err("unknown point");
        assert_eq!(
            err.to_string(),
            "run record of variant `sim-eevdf` names unknown point `8` (iteration 2)"
        );
    }

    #[test]
    fn duplicate_and_out_of_range_runs_are_refused() {
        let mut recs = records();
        recs.push(run("native-6.8", "4", 1, &[("time", 1.0)]));
        assert_eq!(
            Report::build(&spec(), &recs),
            Err(ReportError::Duplicate {
                variant: "native-6.8".into(),
                point: "4".into(),
                iteration: 1
            })
        );
        let mut recs = records();
        recs.push(run("native-6.8", "4", 3, &[]));
        assert!(matches!(
            Report::build(&spec(), &recs),
            Err(ReportError::IterationOutOfRange {
                iteration: 3,
                iterations: 3,
                ..
            })
        ));
    }

    #[test]
    fn missing_runs_name_the_first_and_count_them_all() {
        let recs: Vec<RunRecord> = records()
            .into_iter()
            .filter(|r| !(r.variant == "sim-eevdf" && r.iteration >= 1))
            .collect();
        let err = Report::build(&spec(), &recs).expect_err("missing runs");
        assert_eq!(
            err,
            ReportError::Missing {
                variant: "sim-eevdf".into(),
                point: "1".into(),
                iteration: 1,
                total: 4
            }
        );
        assert_eq!(
            err.to_string(),
            "missing run: variant `sim-eevdf`, point `1`, iteration 1 (4 run(s) missing in all)"
        );
    }

    #[test]
    fn a_spec_naming_a_variant_twice_is_refused() {
        let mut s = spec();
        s.variants[1].name = "native-6.8".into();
        assert_eq!(
            Report::build(&s, &[]),
            Err(ReportError::DuplicateInSpec {
                what: "variant",
                name: "native-6.8".into()
            })
        );
    }

    #[test]
    fn json_is_deterministic_and_nan_is_null() {
        let mut recs = records();
        // A 0 throughput makes the Hmean NaN.
        for r in &mut recs {
            if r.variant == "native-6.8" && r.point == "1" && r.iteration == 0 {
                r.metrics.insert("tput".into(), 0.0);
            }
        }
        let r = Report::build(&spec(), &recs).expect("complete runs");
        let j = r.json();
        assert_eq!(j, r.json());
        let cell = &j["metrics"][1]["points"][0]["cells"][0];
        assert_eq!(cell["variant"], "native-6.8");
        assert!(cell["summary"]["mean"].is_null());
        assert_eq!(cell["summary"]["min"], 0.0);
        assert!(cell["welch_p"].is_null());
        let text = serde_json::to_string(&j).expect("JSON text");
        assert!(!text.contains("NaN"));
        // The sim column's percentages against a NaN Hmean are NaN: null too.
        assert!(j["metrics"][1]["points"][0]["cells"][1]["pct"]["mean"].is_null());
    }

    #[test]
    fn json_snapshot() {
        insta::assert_json_snapshot!(report().json());
    }
}
