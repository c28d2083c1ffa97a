//! SVG plots of one metric over the sweep, one line per variant, in the
//! spirit of mmtests' `graph-mmtests.sh` error-line plots.
//!
//! plotters draws with its SVG backend only: text becomes `<text>`
//! elements whose size plotters estimates itself, so no font files or
//! fontconfig are needed.

use crate::model::{MetricReport, Report, ReportError};
use crate::Better;
use plotters::prelude::*;
use std::ops::Range;

/// Plot size in pixels.
const SIZE: (u32, u32) = (800, 500);

/// Where the points sit on the x axis.
enum XAxis {
    /// The single sweep axis's numeric values, labelled with its name.
    Numeric(String, Vec<f64>),
    /// The point index, labelled with the point keys.
    Index(Vec<String>),
}

impl XAxis {
    fn of(report: &Report) -> XAxis {
        let spec = &report.spec;
        if spec.axes.len() == 1 {
            let xs: Option<Vec<f64>> = spec
                .points
                .iter()
                .map(|p| p.values.first().and_then(serde_json::Value::as_f64))
                .collect();
            if let Some(xs) = xs.filter(|xs| xs.iter().all(|x| x.is_finite())) {
                return XAxis::Numeric(spec.axes[0].clone(), xs);
            }
        }
        XAxis::Index(spec.points.iter().map(|p| p.key.clone()).collect())
    }

    fn x(&self, point: usize) -> f64 {
        match self {
            XAxis::Numeric(_, xs) => xs.get(point).copied().unwrap_or(point as f64),
            XAxis::Index(_) => point as f64,
        }
    }

    fn range(&self, points: usize) -> Range<f64> {
        match self {
            XAxis::Numeric(_, xs) => padded(xs.iter().copied(), 1.0),
            XAxis::Index(_) => -0.5..(points.max(1) as f64 - 0.5),
        }
    }
}

/// `lo..hi` of the values with 5% room at either end (`unit` either side
/// when there is no spread, 0..1 when there are no values).
fn padded(values: impl Iterator<Item = f64>, unit: f64) -> Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    if lo == hi {
        let d = if lo == 0.0 { unit } else { lo.abs() * 0.1 };
        return (lo - d)..(hi + d);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
}

/// Raise the top of `y` so that the legend, drawn in the upper right
/// corner, sits above every line: about 20 px per variant plus its frame,
/// out of the roughly 390 px of plotting height.
fn with_legend_room(y: Range<f64>, variants: usize) -> Range<f64> {
    let share = ((22.0 + 20.0 * variants as f64) / 390.0).min(0.6);
    let span = y.end - y.start;
    (y.start)..(y.end + span * share / (1.0 - share))
}

/// One point of a line: at `x`, the value `y` with a bar from `lo` to
/// `hi`, a filled dot when `filled` (else a hollow one).
#[derive(Clone, Copy)]
struct Pt {
    x: f64,
    y: f64,
    lo: f64,
    hi: f64,
    filled: bool,
}

/// One line: the variant's index in the spec (its colour) and its points.
struct Line {
    variant: usize,
    points: Vec<Pt>,
}

/// One variant's points: the mean ± stddev where the mean is finite.
fn series(m: &MetricReport, axis: &XAxis, variant: usize) -> Vec<Pt> {
    m.points
        .iter()
        .enumerate()
        .filter_map(|(p, row)| {
            let s = row.cells.get(variant)?.summary?;
            let sd = if s.stddev.is_finite() { s.stddev } else { 0.0 };
            s.mean.is_finite().then_some(Pt {
                x: axis.x(p),
                y: s.mean,
                lo: s.mean - sd,
                hi: s.mean + sd,
                filled: true,
            })
        })
        .collect()
}

/// One variant's gains over the baseline: the mean row's percentage with
/// its interval (the point alone without one), a filled dot where the
/// point is significant.
fn gain_series(m: &MetricReport, axis: &XAxis, variant: usize) -> Vec<Pt> {
    m.points
        .iter()
        .enumerate()
        .filter_map(|(p, row)| {
            let c = row.cells.get(variant)?;
            let y = c.pct?.mean;
            let (lo, hi) = c
                .gain_ci
                .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
                .unwrap_or((y, y));
            y.is_finite().then_some(Pt {
                x: axis.x(p),
                y,
                lo,
                hi,
                filled: c.significant,
            })
        })
        .collect()
}

/// An SVG plot of `metric`'s mean (Amean or Hmean, as the table) per sweep
/// point, ±1 stddev (HStddev for an Hmean) as error bars, one line per
/// variant with a legend, 800×500.
///
/// The x axis is the sweep axis's values when the spec has exactly one
/// axis and every point's value is a number, otherwise the point index
/// labelled with the point keys. The y axis reads `<metric> (<unit>), lower
/// is better` (or higher, or neither direction). Cells without values are
/// left out.
pub fn svg(report: &Report, metric: &str) -> Result<String, ReportError> {
    let m = report
        .metric(metric)
        .ok_or_else(|| ReportError::UnknownMetric(metric.to_string()))?;
    let axis = XAxis::of(report);
    let lines: Vec<Line> = (0..report.spec.variants.len())
        .map(|v| Line {
            variant: v,
            points: series(m, &axis, v),
        })
        .collect();
    let y_desc = format!(
        "{} ({}), {}",
        m.metric.name,
        m.metric.unit,
        m.metric.better.phrase()
    );
    let title = format!("{}: {}", report.spec.name, m.metric.name);
    plot(report, &axis, &title, &y_desc, &lines, false)
}

/// An SVG plot of each variant's gain over the baseline in `metric`, per
/// sweep point: the table's mean-row percentage (positive is better; for a
/// metric with no better direction, the change, positive is up) with its
/// [`stats::CONFIDENCE`](crate::stats::CONFIDENCE) interval as the error
/// bar ([`stats::gain_interval`](crate::stats::gain_interval)), a filled
/// dot where the difference is significant (the table's `*`), a hollow one
/// elsewhere, and a line at 0; one line per variant after the baseline, in
/// the colours of [`svg`], 800×500, the x axis as [`svg`]'s.
///
/// `Ok(None)` when the spec has no variant besides the baseline.
pub fn gain_svg(report: &Report, metric: &str) -> Result<Option<String>, ReportError> {
    let m = report
        .metric(metric)
        .ok_or_else(|| ReportError::UnknownMetric(metric.to_string()))?;
    let Some(base) = report.spec.variants.first() else {
        return Ok(None);
    };
    if report.spec.variants.len() < 2 {
        return Ok(None);
    }
    let axis = XAxis::of(report);
    let lines: Vec<Line> = (1..report.spec.variants.len())
        .map(|v| Line {
            variant: v,
            points: gain_series(m, &axis, v),
        })
        .collect();
    let conf = crate::stats::CONFIDENCE * 100.0;
    let y_desc = match m.metric.better {
        Better::Neither => format!("change from {} (%), + is up, {conf:.0}% CI", base.name),
        _ => format!("gain over {} (%), + is better, {conf:.0}% CI", base.name),
    };
    let title = format!("{}: {}, gain per point", report.spec.name, m.metric.name);
    plot(report, &axis, &title, &y_desc, &lines, true).map(Some)
}

/// The plot of `lines` (see [`svg`] and [`gain_svg`]).
fn plot(
    report: &Report,
    axis: &XAxis,
    title: &str,
    y_desc: &str,
    lines: &[Line],
    zero: bool,
) -> Result<String, ReportError> {
    let zero_value = zero.then_some(0.0);
    let y_range = padded(
        lines
            .iter()
            .flat_map(|l| &l.points)
            .flat_map(|p| [p.lo, p.hi])
            .chain(zero_value),
        1.0,
    );
    let y_range = with_legend_room(y_range, lines.len());
    let x_range = axis.range(report.spec.points.len());
    let mut buf = String::new();
    draw(
        &mut buf, title, axis, x_range, y_range, y_desc, report, lines, zero,
    )
    .map_err(ReportError::Plot)?;
    Ok(buf)
}

/// The drawing proper; plotters' errors become their message.
#[allow(clippy::too_many_arguments)]
fn draw(
    buf: &mut String,
    title: &str,
    axis: &XAxis,
    x_range: Range<f64>,
    y_range: Range<f64>,
    y_desc: &str,
    report: &Report,
    lines: &[Line],
    zero: bool,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::with_string(buf, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range.clone(), y_range)
        .map_err(|e| err(&e))?;

    let index_label = |x: &f64| match axis {
        XAxis::Index(keys) => {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                keys.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        XAxis::Numeric(..) => format!("{x}"),
    };
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(y_desc);
    match axis {
        XAxis::Numeric(name, _) => {
            mesh.x_desc(name.as_str());
        }
        XAxis::Index(keys) => {
            mesh.x_desc("point")
                .x_labels(keys.len().max(1))
                .x_label_formatter(&index_label);
        }
    }
    mesh.draw().map_err(|e| err(&e))?;

    if zero {
        chart
            .draw_series(LineSeries::new(
                [(x_range.start, 0.0), (x_range.end, 0.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
    }
    for line in lines {
        let name = report
            .spec
            .variants
            .get(line.variant)
            .map_or("", |v| v.name.as_str());
        let pts = &line.points;
        let color = Palette99::pick(line.variant).to_rgba();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.x, p.y)),
                color.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                pts.iter()
                    .map(|p| ErrorBar::new_vertical(p.x, p.lo, p.y, p.hi, color, 8)),
            )
            .map_err(|e| err(&e))?;
        chart
            .draw_series(pts.iter().map(|p| {
                let style = if p.filled {
                    color.filled()
                } else {
                    WHITE.filled()
                };
                Circle::new((p.x, p.y), 3, style)
            }))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(
                pts.iter()
                    .filter(|p| !p.filled)
                    .map(|p| Circle::new((p.x, p.y), 3, color.stroke_width(1))),
            )
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{records, spec};

    /// All the text of the SVG, after checking that it is well-formed XML.
    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).expect("the SVG is XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert_eq!(doc.root_element().attribute("width"), Some("800"));
        assert_eq!(doc.root_element().attribute("height"), Some("500"));
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect()
    }

    #[test]
    fn numeric_sweep_axis_plot() {
        let r = Report::build(&spec(), &records()).expect("complete runs");
        let svg = svg(&r, "time").expect("plot");
        let t = texts(&svg);
        for want in [
            "native-6.8",
            "sim-eevdf",
            "time (s), lower is better",
            "groups",
            "hackbench-pipes: time",
        ] {
            assert!(t.iter().any(|s| s == want), "no text {want:?} in {t:?}");
        }
        let tput = texts(&svg_of(&r, "tput"));
        assert!(tput.iter().any(|s| s == "tput (MB/s), higher is better"));
    }

    fn svg_of(r: &Report, m: &str) -> String {
        svg(r, m).expect("plot")
    }

    #[test]
    fn index_axis_labelled_with_point_keys() {
        let mut s = spec();
        s.axes = vec!["groups".into(), "loops".into()];
        s.points[0].values.push(serde_json::json!(10));
        s.points[1].values.push(serde_json::json!(10));
        let r = Report::build(&s, &records()).expect("complete runs");
        let t = texts(&svg_of(&r, "time"));
        assert!(t.iter().any(|s| s == "point"), "{t:?}");
        assert!(
            t.iter().any(|s| s == "1") && t.iter().any(|s| s == "4"),
            "{t:?}"
        );
    }

    #[test]
    fn gain_plot_has_a_line_per_variant_and_names_the_baseline() {
        let r = Report::build(&spec(), &records()).expect("complete runs");
        let svg = gain_svg(&r, "time").expect("plot").expect("two variants");
        let t = texts(&svg);
        for want in [
            "sim-eevdf",
            "gain over native-6.8 (%), + is better, 95% CI",
            "hackbench-pipes: time, gain per point",
            "groups",
        ] {
            assert!(t.iter().any(|s| s == want), "no text {want:?} in {t:?}");
        }
        // the baseline is no line of its own
        assert!(!t.iter().any(|s| s == "native-6.8"), "{t:?}");
        // the y axis reaches the interval at 4 groups, about −26%
        let ticks: Vec<f64> = t.iter().filter_map(|s| s.parse().ok()).collect();
        assert!(ticks.iter().any(|&y| y <= -25.0), "{ticks:?}");
        // one variant: nothing to plot
        let mut s = spec();
        s.variants.truncate(1);
        let recs: Vec<_> = records()
            .into_iter()
            .filter(|x| x.variant == "native-6.8")
            .collect();
        let one = Report::build(&s, &recs).expect("complete runs");
        assert_eq!(gain_svg(&one, "time"), Ok(None));
        assert!(gain_svg(&one, "nope").is_err());
    }

    #[test]
    fn unknown_metric_is_an_error() {
        let r = Report::build(&spec(), &records()).expect("complete runs");
        assert_eq!(
            svg(&r, "nope"),
            Err(ReportError::UnknownMetric("nope".into()))
        );
    }
}
