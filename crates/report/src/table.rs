//! The text table, laid out as mmtests' `bin/lib/MMTests/PrintGeneric.pm`
//! prints `bin/compare-mmtests.pl`'s comparison (formats from Compare.pm's
//! `_generateRenderTable` and `_generateHeaderTable`).

use crate::model::{Cell, MetricReport, Report, RowPcts};
use crate::stats::Summary;
use crate::Better;
use std::fmt::Write;

/// Width of a value: Compare.pm's default `_FieldLength`.
const FIELD: usize = 12;
/// Width of the percentage: current Compare.pm's `_CompareLength` (7).
const COMPARE: usize = 7;
/// Width of one variant's whole column: value, then ` (%7.2f%%)`.
/// Compare.pm's header cells are `FieldLength + CompareLength + 4` wide.
const COLUMN: usize = FIELD + COMPARE + 4;

/// One statistic row of the table.
#[derive(Clone, Copy)]
enum Stat {
    Min,
    Mean,
    Stddev,
    CoeffVar,
    Max,
    BMean95,
}

/// Summarise.pm's Multiops order; the table prints every operation's Min
/// row, then every operation's mean row, and so on (Compare.pm's
/// `_generateTitleTable` loops over the statistic first).
const ROWS: [Stat; 6] = [
    Stat::Min,
    Stat::Mean,
    Stat::Stddev,
    Stat::CoeffVar,
    Stat::Max,
    Stat::BMean95,
];

impl Stat {
    /// The row label, from `Stat.pm`'s `stat_names`. mmtests labels the
    /// Hmean set's HStddev and HCoeffVar `Stddev` and `CoeffVar` as well.
    fn label(self, better: Better) -> &'static str {
        match (self, better) {
            (Stat::Min, _) => "Min",
            (Stat::Mean, Better::Lower | Better::Neither) => "Amean",
            (Stat::Mean, Better::Higher) => "Hmean",
            (Stat::Stddev, _) => "Stddev",
            (Stat::CoeffVar, _) => "CoeffVar",
            (Stat::Max, _) => "Max",
            (Stat::BMean95, Better::Lower | Better::Neither) => "BAmean-95",
            (Stat::BMean95, Better::Higher) => "BHmean-95",
        }
    }

    fn value(self, s: &Summary) -> f64 {
        match self {
            Stat::Min => s.min,
            Stat::Mean => s.mean,
            Stat::Stddev => s.stddev,
            Stat::CoeffVar => s.coeffvar,
            Stat::Max => s.max,
            Stat::BMean95 => s.bmean95,
        }
    }

    fn pct(self, p: &RowPcts) -> f64 {
        match self {
            Stat::Min => p.min,
            Stat::Mean => p.mean,
            Stat::Stddev => p.stddev,
            Stat::CoeffVar => p.coeffvar,
            Stat::Max => p.max,
            Stat::BMean95 => p.bmean95,
        }
    }
}

/// `%{width}.{decimals}f`, except that NaN prints `nan` (Rust would print
/// `NaN`).
fn fixed(x: f64, width: usize, decimals: usize) -> String {
    if x.is_nan() {
        format!("{:>width$}", "nan")
    } else {
        format!("{x:>width$.decimals$}")
    }
}

/// Split a variant name at its first `-` into the two header rows
/// (Compare.pm's `_generateHeaderTable`); a name without `-` fills the
/// first row and leaves the second empty.
fn header_parts(name: &str) -> (&str, &str) {
    name.split_once('-').unwrap_or((name, ""))
}

/// One variant's cell of one row: the value, then the percentage in
/// parentheses, or between `*` when the cell is significant (PrintGeneric's
/// `:SIG:` handling). A cell without values prints `n/a`, and a missing
/// percentage prints blank, as PrintGeneric blanks undefined columns.
fn cell_text(out: &mut String, stat: Stat, cell: &Cell, decimals: usize) {
    let Some(summary) = &cell.summary else {
        let _ = write!(out, "{:>FIELD$}{:COMPARE$}    ", "n/a", "");
        return;
    };
    out.push_str(&fixed(stat.value(summary), FIELD, decimals));
    match &cell.pct {
        Some(p) => {
            let (open, close) = if matches!(stat, Stat::Mean) && cell.significant {
                ('*', '*')
            } else {
                ('(', ')')
            };
            let _ = write!(out, " {open}{}%{close}", fixed(stat.pct(p), COMPARE, 2));
        }
        None => {
            let _ = write!(out, "{:width$}", "", width = COMPARE + 4);
        }
    }
}

/// `name: unit, lower is better (description)`; with no better direction
/// `name: unit, neither direction is better, % is the change (+ up)
/// (description)`.
fn metric_heading(m: &MetricReport) -> String {
    let info = &m.metric;
    let mut line = format!("{}: {}, {}", info.name, info.unit, info.better.phrase());
    if info.better == Better::Neither {
        line.push_str(", % is the change (+ up)");
    }
    if !info.description.is_empty() {
        let _ = write!(line, " ({})", info.description);
    }
    line
}

/// A signed percentage, `+3.21%`, or `n/a`.
fn signed_pct(x: Option<f64>) -> String {
    match x {
        Some(x) => format!("{x:+.2}%"),
        None => "n/a".to_string(),
    }
}

/// One metric's table, followed by its sim error lines if any.
fn metric_table(out: &mut String, m: &MetricReport, variants: &[crate::VariantInfo]) {
    let better = m.metric.better;
    let stat_w = ROWS
        .iter()
        .map(|s| s.label(better).len())
        .max()
        .unwrap_or(0);
    let op_w = m
        .points
        .iter()
        .map(|p| p.operation.len())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = Vec::new();

    for row in 0..2 {
        let mut line = format!("{:w$}", "", w = stat_w + 1 + op_w);
        for v in variants {
            let (top, bottom) = header_parts(&v.name);
            let _ = write!(line, "{:>COLUMN$}", if row == 0 { top } else { bottom });
        }
        lines.push(line);
    }
    for stat in ROWS {
        for point in &m.points {
            let mut line = format!("{:<stat_w$} {:<op_w$}", stat.label(better), point.operation);
            for cell in &point.cells {
                cell_text(&mut line, stat, cell, m.metric.decimals);
            }
            lines.push(line);
        }
    }
    if let Some(se) = &m.sim_error {
        for v in &se.variants {
            let mut line = format!("Sim error vs {}: {}", se.native, v.variant);
            for (p, point) in v.points.iter().zip(&m.points) {
                let _ = write!(line, "  {}: {}", point.operation, signed_pct(p.error_pct));
            }
            let overall = match v.overall_abs_pct {
                Some(x) => format!("{x:.2}%"),
                None => "n/a".to_string(),
            };
            let _ = write!(line, "  overall |err| {overall}");
            lines.push(line);
        }
    }
    out.push_str(&metric_heading(m));
    out.push('\n');
    for line in lines {
        // mmtests pads the header's empty cells; trailing blanks carry
        // nothing, so they go.
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

impl Report {
    /// The report as mmtests prints a comparison, after a verdict: the
    /// verdict block ([`Report::verdict_text`], which names the experiment
    /// first), then per metric a line naming it and its table.
    ///
    /// Each table has a two-row header (variant names split at their first
    /// `-`, right-aligned over their columns), then the rows Min, Amean or
    /// Hmean, Stddev, CoeffVar, Max, BAmean-95 or BHmean-95, each for every
    /// point in turn. A cell is the value (`%12.Nf`, N = the metric's
    /// decimals) then its difference from the baseline, ` (%7.2f%%)`, with
    /// `*` for parentheses where the mean differs significantly. For a
    /// higher-is-better metric the Stddev and CoeffVar rows hold HStddev and
    /// HCoeffVar. When the spec has native and sim variants, lines
    /// `Sim error vs <native>: <sim>  <op>: +x.xx%  …  overall |err| y.yy%`
    /// follow the table: each sim mean's error relative to the native mean
    /// at each point, then the mean of their absolute values.
    pub fn text(&self) -> String {
        let mut out = self.verdict_text();
        for m in &self.metrics {
            out.push('\n');
            metric_table(&mut out, m, &self.spec.variants);
        }
        out
    }
}

impl Report {
    /// One metric's table as [`Report::text`] prints it (its header line,
    /// the table, and the sim-error lines when there are any).
    pub fn metric_text(&self, m: &MetricReport) -> String {
        let mut out = String::new();
        metric_table(&mut out, m, &self.spec.variants);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_splits_at_the_first_dash() {
        assert_eq!(header_parts("linux-5.12"), ("linux", "5.12"));
        assert_eq!(header_parts("sim-eevdf-nolb"), ("sim", "eevdf-nolb"));
        assert_eq!(header_parts("baseline"), ("baseline", ""));
    }

    #[test]
    fn nan_prints_lower_case_in_the_same_width() {
        assert_eq!(fixed(f64::NAN, 12, 2), "         nan");
        assert_eq!(fixed(1.5, 12, 4), "      1.5000");
        assert_eq!(fixed(-2.346, 7, 2), "  -2.35");
    }
}

#[cfg(test)]
mod snapshot_tests {
    use crate::fixtures::{records, run, spec};
    use crate::{Better, MetricInfo, PointInfo, Report, ReportSpec, VariantInfo};

    #[test]
    fn table_layout() {
        let r = Report::build(&spec(), &records()).expect("complete runs");
        insta::assert_snapshot!(r.text());
    }

    /// Names without `-`, no sweep, a cell without values, an Hmean of NaN.
    #[test]
    fn table_edge_cases() {
        let s = ReportSpec {
            name: "single".into(),
            description: String::new(),
            axes: vec![],
            points: vec![PointInfo {
                key: String::new(),
                values: vec![],
            }],
            variants: vec![
                VariantInfo {
                    name: "base".into(),
                    mode: "sim".into(),
                },
                VariantInfo {
                    name: "new".into(),
                    mode: "sim".into(),
                },
            ],
            metrics: vec![
                MetricInfo {
                    name: "ops".into(),
                    unit: "ops/s".into(),
                    better: Better::Higher,
                    decimals: 2,
                    description: String::new(),
                },
                MetricInfo {
                    name: "lat".into(),
                    unit: "us".into(),
                    better: Better::Lower,
                    decimals: 2,
                    description: String::new(),
                },
            ],
            iterations: 2,
        };
        let recs = vec![
            run("base", "", 0, &[("ops", 0.0), ("lat", 5.0)]),
            run("base", "", 1, &[("ops", 10.0), ("lat", 5.0)]),
            run("new", "", 0, &[("ops", 12.0)]),
            run("new", "", 1, &[("ops", 11.0)]),
        ];
        let r = Report::build(&s, &recs).expect("complete runs");
        insta::assert_snapshot!(r.text());
    }
}
