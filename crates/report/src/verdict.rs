//! The verdict: per metric and variant, whether the variant is better or
//! worse than the baseline, at how many points, and its largest
//! significant gain (and loss) with the gain's confidence interval.
//!
//! A point counts when its mean differs significantly from the baseline's
//! by the tables' own test ([`stats::significant`], mmtests' `*`). The
//! interval is [`stats::gain_interval`]: Welch's [`stats::CONFIDENCE`]
//! interval of the difference of the means, as a percentage of the
//! baseline's mean, in the form of the table's mean-row percentage (a gain,
//! positive when better; for a metric with no better direction, the change,
//! positive when up).

use crate::model::{MetricReport, PointRow, Report};
use crate::stats;
use crate::{Better, PointInfo};
use serde::Serialize;
use std::fmt::Write;

/// What a variant did to one metric, over the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Significantly better at some point and worse at none.
    Better,
    /// Significantly worse at some point and better at none.
    Worse,
    /// Significantly better at some points, worse at others.
    Mixed,
    /// No direction is better: significantly higher somewhere, lower nowhere.
    Higher,
    /// No direction is better: significantly lower somewhere, higher nowhere.
    Lower,
    /// No direction is better: higher at some points, lower at others.
    Moved,
    /// No point differs significantly.
    NoSignificantDifference,
    /// No point has values on both sides.
    NotCompared,
}

impl Outcome {
    fn words(self) -> &'static str {
        match self {
            Outcome::Better => "better",
            Outcome::Worse => "worse",
            Outcome::Mixed => "mixed",
            Outcome::Higher => "higher",
            Outcome::Lower => "lower",
            Outcome::Moved => "both ways",
            Outcome::NoSignificantDifference => "no significant difference",
            Outcome::NotCompared => "not compared",
        }
    }
}

/// One significant point: its percentage and interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Extreme {
    /// The point's key.
    pub key: String,
    /// The mean row's percentage: the gain (positive is better), or the
    /// change (positive is up) when no direction is better.
    pub pct: f64,
    /// Its [`stats::CONFIDENCE`] interval ([`stats::gain_interval`]);
    /// `None` with fewer than two values a side or a baseline mean of 0.
    pub interval: Option<(f64, f64)>,
}

/// One variant's verdict on one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The variant.
    pub variant: String,
    /// The verdict.
    pub outcome: Outcome,
    /// Points where both the variant and the baseline have a (finite) mean.
    pub compared: usize,
    /// Points in the sweep.
    pub points: usize,
    /// Points where the variant is significantly better (higher, when no
    /// direction is better).
    pub better: usize,
    /// Points where it is significantly worse (lower, when no direction is
    /// better).
    pub worse: usize,
    /// The largest significant gain (rise): the point of the largest
    /// percentage among the `better` ones.
    pub best: Option<Extreme>,
    /// The largest significant loss (fall): the point of the smallest
    /// percentage among the `worse` ones.
    pub worst: Option<Extreme>,
}

/// The verdict of the variant in column `v` (not the baseline's, 0).
pub(crate) fn verdict(better: Better, points: &[PointRow], v: usize) -> Verdict {
    let mut out = Verdict {
        variant: String::new(),
        outcome: Outcome::NotCompared,
        compared: 0,
        points: points.len(),
        better: 0,
        worse: 0,
        best: None,
        worst: None,
    };
    for row in points {
        let (Some(base), Some(cell)) = (row.cells.first(), row.cells.get(v)) else {
            continue;
        };
        out.variant.clone_from(&cell.variant);
        let (Some(b), Some(s), Some(pct)) = (base.summary, cell.summary, cell.pct) else {
            continue;
        };
        // an Hmean over a 0 is NaN: nothing to compare there
        if !(b.mean.is_finite() && s.mean.is_finite()) {
            continue;
        }
        out.compared += 1;
        if !cell.significant {
            continue;
        }
        // by the means, not the percentage (pdiff of a 0 is 0)
        let up = s.mean > b.mean;
        let good = match better {
            Better::Lower => !up,
            Better::Higher | Better::Neither => up,
        };
        let here = Extreme {
            key: row.key.clone(),
            pct: pct.mean,
            interval: cell.gain_ci,
        };
        if good {
            out.better += 1;
            if out.best.as_ref().is_none_or(|e| here.pct > e.pct) {
                out.best = Some(here);
            }
        } else {
            out.worse += 1;
            if out.worst.as_ref().is_none_or(|e| here.pct < e.pct) {
                out.worst = Some(here);
            }
        }
    }
    let directed = better != Better::Neither;
    out.outcome = match (out.compared, out.better > 0, out.worse > 0) {
        (0, ..) => Outcome::NotCompared,
        (_, false, false) => Outcome::NoSignificantDifference,
        (_, true, false) if directed => Outcome::Better,
        (_, false, true) if directed => Outcome::Worse,
        (_, true, true) if directed => Outcome::Mixed,
        (_, true, false) => Outcome::Higher,
        (_, false, true) => Outcome::Lower,
        (_, true, true) => Outcome::Moved,
    };
    out
}

/// `1 point`, `7 points`.
fn n_points(n: usize) -> String {
    if n == 1 {
        "1 point".into()
    } else {
        format!("{n} points")
    }
}

/// `+4.62% [+2.10%, +7.14%]`.
fn pct_with_interval(e: &Extreme) -> String {
    let mut s = format!("{:+.2}%", e.pct);
    match e.interval {
        Some((lo, hi)) => {
            let _ = write!(s, " [{lo:+.2}%, {hi:+.2}%]");
        }
        None => s.push_str(" [no interval]"),
    }
    s
}

/// `groups=12`, `groups=2,loops=10`, or `""` without a sweep.
pub(crate) fn point_label(axes: &[String], points: &[PointInfo], key: &str) -> String {
    let Some(p) = points.iter().find(|p| p.key == key) else {
        return key.to_string();
    };
    if axes.is_empty() || p.values.len() != axes.len() {
        return key.to_string();
    }
    axes.iter()
        .zip(&p.values)
        .map(|(a, v)| match v {
            serde_json::Value::String(s) => format!("{a}={s}"),
            v => format!("{a}={v}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

impl Report {
    /// The verdict block [`Report::text`] starts with: `Verdict on NAME:
    /// DESCRIPTION`, two lines saying what is compared and how, then one
    /// line per metric and variant:
    ///
    /// `time  5.12-smtgate  better at 2 of 7 points: +4.62% [+2.10%, +7.14%] at groups=2`
    ///
    /// i.e. the outcome (better, worse, mixed; higher, lower or both ways
    /// for a metric with no better direction; no significant difference),
    /// at how many points it holds, and the largest significant gain (and,
    /// when mixed, loss) with its interval and point.
    pub fn verdict_text(&self) -> String {
        let spec = &self.spec;
        let mut out = format!("Verdict on {}", spec.name);
        if !spec.description.is_empty() {
            let _ = write!(out, ": {}", spec.description);
        }
        out.push('\n');
        let Some(base) = spec.variants.first() else {
            out.push_str("  no variants\n");
            return out;
        };
        if spec.variants.len() < 2 {
            let _ = writeln!(
                out,
                "  one variant ({}): nothing to compare it with",
                base.name
            );
            return out;
        }
        let iters = if spec.iterations == 1 {
            "1 iteration".to_string()
        } else {
            format!("{} iterations", spec.iterations)
        };
        let conf = stats::CONFIDENCE * 100.0;
        let _ = writeln!(
            out,
            "  each variant against {} at {}, {iters} each; a point counts where its mean \
             differs significantly (the tables' *)",
            base.name,
            n_points(spec.points.len())
        );
        let _ = writeln!(
            out,
            "  [a, b]: the {conf:.0}% confidence interval of the gain (Welch's t on the difference \
             of the means, as % of {}'s mean); + is better, or up where neither direction is",
            base.name
        );
        let name_w = self
            .metrics
            .iter()
            .map(|m| m.metric.name.len())
            .max()
            .unwrap_or(0);
        let var_w = spec.variants[1..]
            .iter()
            .map(|v| v.name.len())
            .max()
            .unwrap_or(0);
        for m in &self.metrics {
            for v in &m.verdicts {
                let _ = writeln!(
                    out,
                    "  {:<name_w$}  {:<var_w$}  {}",
                    m.metric.name,
                    v.variant,
                    self.verdict_line(m, v)
                );
            }
        }
        out
    }

    /// One verdict's words, after the metric and variant names.
    fn verdict_line(&self, m: &MetricReport, v: &Verdict) -> String {
        let spec = &self.spec;
        let at = |e: &Extreme| {
            let label = point_label(&spec.axes, &spec.points, &e.key);
            if label.is_empty() {
                pct_with_interval(e)
            } else {
                format!("{} at {label}", pct_with_interval(e))
            }
        };
        let (good, bad) = match m.metric.better {
            Better::Neither => ("higher", "lower"),
            _ => ("better", "worse"),
        };
        let of = if v.compared == v.points {
            n_points(v.points)
        } else {
            format!("{} of {} compared", v.compared, n_points(v.points))
        };
        match v.outcome {
            Outcome::NotCompared => "not compared: no point has a mean on both sides".to_string(),
            Outcome::NoSignificantDifference => {
                format!("no significant difference at any of {of}")
            }
            Outcome::Better | Outcome::Higher => {
                let e = v.best.as_ref().map(at).unwrap_or_default();
                format!("{} at {} of {of}: {e}", v.outcome.words(), v.better)
            }
            Outcome::Worse | Outcome::Lower => {
                let e = v.worst.as_ref().map(at).unwrap_or_default();
                format!("{} at {} of {of}: {e}", v.outcome.words(), v.worse)
            }
            Outcome::Mixed | Outcome::Moved => {
                let b = v.best.as_ref().map(at).unwrap_or_default();
                let w = v.worst.as_ref().map(at).unwrap_or_default();
                format!(
                    "{}: {good} at {}, {bad} at {} of {of}: {b}; {w}",
                    v.outcome.words(),
                    v.better,
                    v.worse
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::run;
    use crate::{MetricInfo, ReportSpec, RunRecord, VariantInfo};
    use serde_json::json;

    /// Three points of `cpus` (2, 4, 8), a baseline and a variant, three
    /// iterations, a lower-is-better `lat` and a `share` of no direction.
    /// The variant's `lat` is far lower at 2 (better), far higher at 8
    /// (worse), level at 4; its `share` far higher at 4 only.
    fn fixture() -> Report {
        let spec = ReportSpec {
            name: "v".into(),
            description: String::new(),
            axes: vec!["cpus".into()],
            points: [2, 4, 8]
                .map(|c| PointInfo {
                    key: c.to_string(),
                    values: vec![json!(c)],
                })
                .into(),
            variants: ["base", "new"]
                .map(|n| VariantInfo {
                    name: n.into(),
                    mode: "sim".into(),
                })
                .into(),
            metrics: vec![
                MetricInfo {
                    name: "lat".into(),
                    unit: "us".into(),
                    better: Better::Lower,
                    decimals: 2,
                    description: String::new(),
                },
                MetricInfo {
                    name: "share".into(),
                    unit: "%".into(),
                    better: Better::Neither,
                    decimals: 2,
                    description: String::new(),
                },
            ],
            iterations: 3,
        };
        // (variant, point, lat values, share values)
        let table: [(&str, &str, [f64; 3], [f64; 3]); 6] = [
            ("base", "2", [100.0, 101.0, 102.0], [10.0, 11.0, 12.0]),
            ("base", "4", [200.0, 202.0, 204.0], [10.0, 11.0, 12.0]),
            ("base", "8", [400.0, 404.0, 408.0], [10.0, 11.0, 12.0]),
            ("new", "2", [80.0, 81.0, 82.0], [10.0, 12.0, 11.0]),
            ("new", "4", [201.0, 203.0, 205.0], [30.0, 31.0, 32.0]),
            ("new", "8", [420.0, 424.0, 428.0], [11.0, 10.0, 12.0]),
        ];
        let recs: Vec<RunRecord> = table
            .iter()
            .flat_map(|(v, p, lat, share)| {
                (0..3).map(move |i| run(v, p, i as u32, &[("lat", lat[i]), ("share", share[i])]))
            })
            .collect();
        Report::build(&spec, &recs).expect("complete runs")
    }

    #[test]
    fn mixed_gain_and_loss_with_their_intervals() {
        let r = fixture();
        let v = &r.metric("lat").expect("lat").verdicts[0];
        assert_eq!(v.variant, "new");
        assert_eq!(v.outcome, Outcome::Mixed);
        assert_eq!((v.compared, v.points, v.better, v.worse), (3, 3, 1, 1));
        // At 2: means 101 and 81, both stddevs 1: gain 100 − 8100/101 =
        // 19.80%; Welch: se = sqrt(2/3), df = 4, t = 2.776445, half =
        // 2.266958, as % of 101: ±2.2445, so [17.5575%, 22.0465%].
        let best = v.best.as_ref().expect("a gain");
        assert_eq!(best.key, "2");
        assert!((best.pct - (100.0 - 8100.0 / 101.0)).abs() < 1e-9);
        let (lo, hi) = best.interval.expect("three values a side");
        assert!(
            (lo - 17.5575).abs() < 1e-3 && (hi - 22.0465).abs() < 1e-3,
            "{lo} {hi}"
        );
        // At 8: 404 against 424, stddev 4 each: −4.95%.
        let worst = v.worst.as_ref().expect("a loss");
        assert_eq!(worst.key, "8");
        assert!((worst.pct - (100.0 - 42400.0 / 404.0)).abs() < 1e-9);
        let text = r.verdict_text();
        assert!(
            text.contains(
                "  lat    new  mixed: better at 1, worse at 1 of 3 points: \
                 +19.80% [+17.56%, +22.05%] at cpus=2; -4.95% ["
            ),
            "{text}"
        );
    }

    #[test]
    fn no_direction_says_higher_or_lower_and_its_table_says_the_change() {
        let r = fixture();
        let m = r.metric("share").expect("share");
        let v = &m.verdicts[0];
        assert_eq!(v.outcome, Outcome::Higher);
        assert_eq!((v.better, v.worse), (1, 0));
        // 31 against 11: (31 − 11)·100/11 = +181.82%, the plain change
        let best = v.best.as_ref().expect("a rise");
        assert!((best.pct - 2000.0 / 11.0).abs() < 1e-9);
        let text = r.text();
        assert!(
            text.contains("  share  new  higher at 1 of 3 points: +181.82% ["),
            "{text}"
        );
        assert!(text.contains("share: %, neither direction is better, % is the change (+ up)\n"));
        assert!(!text.contains("share: %, lower is better"));
        assert!(
            text.contains("Amean     share-4       11.00 (   0.00%)       31.00 * 181.82%*"),
            "{text}"
        );
        assert_eq!(m.mean_kind, "amean");
    }

    #[test]
    fn the_verdict_comes_first() {
        let text = fixture().text();
        assert!(
            text.starts_with(
                "Verdict on v\n  each variant against base at 3 points, 3 iterations each;"
            ),
            "{text}"
        );
        let verdict_end = text.find("\n\n").expect("a blank line after the verdict");
        assert!(text.find("lat: us, lower is better").expect("lat's table") > verdict_end);
    }

    #[test]
    fn point_labels_name_the_axes() {
        let points = vec![
            PointInfo {
                key: "2-x".into(),
                values: vec![json!(2), json!("x")],
            },
            PointInfo {
                key: String::new(),
                values: vec![],
            },
        ];
        let axes = vec!["cpus".to_string(), "mode".to_string()];
        assert_eq!(point_label(&axes, &points, "2-x"), "cpus=2,mode=x");
        assert_eq!(point_label(&[], &points, ""), "");
        assert_eq!(point_label(&axes, &points, "nope"), "nope");
    }
}
