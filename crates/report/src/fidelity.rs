//! The fidelity score: published A/B results of real kernel changes held
//! against the simulator's runs of the same setups (`schedlab fidelity`).
//!
//! This module only does arithmetic and printing; the corpus and the runs
//! are the `lab` crate's. For each corpus entry, each published table (one
//! metric), each published variant other than the baseline and each sweep
//! point it scores:
//!
//! - the **published change**: `100 (fig_v - fig_base) / fig_base`, from the
//!   figures as printed (whatever statistic the table used);
//! - the **simulated change**: `100 (mean(x) - mean(b)) / mean(b)` over the
//!   iterations, where `b` and `x` are the baseline's and the variant's runs
//!   of the point. Iteration `i` of every variant of a point runs with the
//!   same seed, so the runs are paired; the 95 % interval is Student's t over
//!   the paired differences `x_i - b_i`, divided by `mean(b)` (taken as
//!   exact, a first-order interval). With one iteration there is none.
//!   A table with `sum_points` compares one figure with the per-iteration
//!   sum over every point (mmtests' vmstat totals of one NAS run);
//! - **signs agree**: both changes are positive, both negative, or both
//!   zero;
//! - the **ratio of the magnitudes**, `|sim| / |published|` (none when the
//!   published change is 0), within a factor of 2 when the signs agree and
//!   `0.5 <= ratio <= 2`, and `|log2 ratio|` (infinite for a simulated
//!   change of exactly 0).
//!
//! A comparison (entry, table, variant) has an **overall** change on each
//! side: the geometric mean over its points of `fig_v / fig_base` (of
//! `mean(x) / mean(b)` for the simulator), less 1. Its **direction agrees**
//! when the two overall changes have the same sign. The summary counts
//! comparisons whose direction agrees, points within a factor of 2, and the
//! median `|log2 ratio|` over every point that has a ratio.

use crate::html::escape;
use crate::stats::amean;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One published table of an entry: a metric over the sweep points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PublishedTable {
    /// The schedlab metric the figures are compared with.
    pub metric: String,
    /// The table's statistic as published (Amean, Hmean, median, total...).
    pub statistic: String,
    /// The unit as published.
    pub unit: String,
    /// One figure per variant compares with the sum over every point.
    pub sum_points: bool,
    /// (point key, one figure per published variant), in sweep order; the
    /// key is `sum` for a `sum_points` table.
    pub points: Vec<(String, Vec<f64>)>,
}

/// What the scoreboard knows of one corpus entry besides the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntryInfo {
    /// The entry's name.
    pub name: String,
    /// The change: the commit's or patch's title.
    pub change: String,
    /// The commit (empty for a patch that was never merged).
    pub commit: String,
    /// The machine as its source describes it.
    pub machine: String,
    /// The machine family (intel-smt2, amd-epyc, arm64, power, other).
    pub family: String,
    /// The kernel version as published.
    pub kernel: String,
    /// The benchmark and its parameters as published.
    pub benchmark: String,
    /// Where the figures are.
    pub url: String,
    /// The date of that source.
    pub date: String,
    /// A known reason the model misses (empty: none known).
    pub miss_cause: String,
    /// The published variants in order; each is a variant of the runs.
    pub variants: Vec<String>,
    /// The published baseline (one of `variants`).
    pub baseline: String,
    /// The sweep points the runs cover (all of them, or `--quick`'s).
    pub points_run: Vec<String>,
    /// The published tables.
    pub tables: Vec<PublishedTable>,
}

/// One scored point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointScore {
    /// The point key (`sum` for a `sum_points` table).
    pub point: String,
    /// The published baseline and variant figures.
    pub published: [f64; 2],
    /// The published change, %.
    pub published_pct: f64,
    /// The simulated baseline and variant means.
    pub simulated: [f64; 2],
    /// The simulated change, % (infinite when the baseline's mean is 0
    /// and the variant's is not; `"inf"`/`"-inf"` in JSON).
    #[serde(serialize_with = "signed_inf")]
    pub simulated_pct: f64,
    /// The 95 % interval of the simulated change, % (none with one run).
    pub simulated_ci: Option<[f64; 2]>,
    /// Paired iterations behind the simulated figures.
    pub n: usize,
    /// Both changes have the same sign (or both are 0).
    pub signs_agree: bool,
    /// `|simulated| / |published|` (none when the published change is 0).
    pub ratio: Option<f64>,
    /// Signs agree and the ratio is within [0.5, 2].
    pub within_2x: bool,
    /// `|log2 ratio|` (infinite when the simulated change is 0).
    #[serde(serialize_with = "finite_or_null")]
    pub abs_log2_ratio: Option<f64>,
}

/// One comparison: an entry's table, one published variant against the
/// published baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The entry.
    pub entry: String,
    /// The metric.
    pub metric: String,
    /// The table's statistic as published.
    pub statistic: String,
    /// The baseline variant.
    pub baseline: String,
    /// The variant held against it.
    pub variant: String,
    /// Every point scored (the points the runs cover).
    pub points: Vec<PointScore>,
    /// Published points left out because the runs did not cover them
    /// (`--quick`), or all of them when the model does not produce the
    /// metric for this workload.
    pub points_not_run: Vec<String>,
    /// The model does not produce the metric for this workload (e.g. NUMA
    /// counters of a workload that declares no memory): nothing is scored.
    pub not_produced: bool,
    /// Geometric mean over the points of the published ratio, less 1, %.
    pub published_overall_pct: Option<f64>,
    /// The same for the simulated means.
    pub simulated_overall_pct: Option<f64>,
    /// The two overall changes have the same sign.
    pub direction_agrees: Option<bool>,
    /// The entry's known cause, printed when the comparison misses
    /// (direction or a point outside 2x); empty when none is known.
    pub miss_cause: String,
}

/// The summary over every comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Corpus entries scored.
    pub entries: usize,
    /// Comparisons with an overall change on both sides.
    pub comparisons: usize,
    /// Of those, the ones whose direction agrees.
    pub directions_agree: usize,
    /// Points scored.
    pub points: usize,
    /// Points whose signs agree.
    pub signs_agree: usize,
    /// Points within a factor of 2 of the published magnitude.
    pub within_2x: usize,
    /// Points with a ratio (the published change is not 0).
    pub points_with_ratio: usize,
    /// Comparisons whose metric the model does not produce (not scored).
    pub not_produced: usize,
    /// Median `|log2 ratio|` over those (infinite when more than half of
    /// them simulate no change at all).
    #[serde(serialize_with = "finite_or_null")]
    pub median_abs_log2_ratio: Option<f64>,
}

/// The whole score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Score {
    /// Every entry, in the order scored.
    pub entries: Vec<EntryInfo>,
    /// Every comparison, entry by entry.
    pub comparisons: Vec<Comparison>,
    /// The summary.
    pub summary: Summary,
}

/// What cannot be scored: the runs do not match the entry.
#[derive(Debug, thiserror::Error)]
#[error("fidelity entry {entry}: {message}")]
pub struct ScoreError {
    /// The entry.
    pub entry: String,
    /// What is wrong.
    pub message: String,
}

fn signed_inf<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else if *v > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

fn finite_or_null<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.is_finite() => s.serialize_f64(*x),
        Some(_) => s.serialize_str("inf"),
        None => s.serialize_none(),
    }
}

/// Student's t quantile for a two-sided 95 % interval with `df` degrees of
/// freedom.
fn t_975(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|d| d.inverse_cdf(0.975))
        .unwrap_or(f64::NAN)
}

fn sign(x: f64) -> i8 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

/// The published change of `new` against `base`, %.
pub fn change_pct(base: f64, new: f64) -> f64 {
    100.0 * (new - base) / base
}

/// The simulated change and its interval from paired runs `(b_i, x_i)`.
pub fn paired_change(pairs: &[(f64, f64)]) -> (f64, f64, f64, Option<[f64; 2]>) {
    let b: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let x: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let (mb, mx) = (amean(&b), amean(&x));
    let n = pairs.len();
    if mb == 0.0 {
        // a counter the model never moves in the baseline: no change when
        // it stays at 0, an unbounded one when the variant moves it
        let pct = if mx == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(mx)
        };
        return (mb, mx, pct, None);
    }
    let pct = change_pct(mb, mx);
    let ci = (n >= 2).then(|| {
        let d: Vec<f64> = pairs.iter().map(|p| p.1 - p.0).collect();
        let md = amean(&d);
        let var = d.iter().map(|v| (v - md) * (v - md)).sum::<f64>() / (n as f64 - 1.0);
        let half = t_975(n as f64 - 1.0) * (var / n as f64).sqrt();
        [100.0 * (md - half) / mb, 100.0 * (md + half) / mb]
    });
    (mb, mx, pct, ci)
}

/// Score one point from its published figures and its paired runs.
pub fn score_point(point: &str, published: [f64; 2], pairs: &[(f64, f64)]) -> PointScore {
    let published_pct = change_pct(published[0], published[1]);
    let (mb, mx, simulated_pct, simulated_ci) = paired_change(pairs);
    let signs_agree = sign(published_pct) == sign(simulated_pct);
    let ratio = (published_pct != 0.0).then(|| simulated_pct.abs() / published_pct.abs());
    let within_2x = signs_agree && ratio.is_some_and(|r| (0.5..=2.0).contains(&r));
    let abs_log2_ratio = ratio.map(|r| {
        if r == 0.0 {
            f64::INFINITY
        } else {
            r.log2().abs()
        }
    });
    PointScore {
        point: point.to_string(),
        published,
        published_pct,
        simulated: [mb, mx],
        simulated_pct,
        simulated_ci,
        n: pairs.len(),
        signs_agree,
        ratio,
        within_2x,
        abs_log2_ratio,
    }
}

/// The geometric mean of the ratios, less 1, % (none if a ratio is not
/// positive and finite).
fn overall(ratios: impl Iterator<Item = f64>) -> Option<f64> {
    let mut sum = 0.0;
    let mut n = 0usize;
    for r in ratios {
        if !(r.is_finite() && r > 0.0) {
            return None;
        }
        sum += r.ln();
        n += 1;
    }
    (n > 0).then(|| 100.0 * ((sum / n as f64).exp() - 1.0))
}

/// The median of values that may be infinite (the mean of the two middle
/// values for an even count; infinite if either is).
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Runs by (metric, variant, point), then iteration.
type Runs = BTreeMap<String, BTreeMap<u32, f64>>;

fn run_key(metric: &str, variant: &str, point: &str) -> String {
    format!("{metric}\u{0}{variant}\u{0}{point}")
}

fn lookup<'m>(
    runs: &'m Runs,
    metric: &str,
    variant: &str,
    point: &str,
) -> Option<&'m BTreeMap<u32, f64>> {
    runs.get(&run_key(metric, variant, point))
}

/// Score one entry against its runs: every record of the entry's
/// experiment (variant, point, iteration, metrics).
pub fn score_entry(
    info: &EntryInfo,
    records: &[crate::RunRecord],
) -> Result<Vec<Comparison>, ScoreError> {
    let err = |message: String| ScoreError {
        entry: info.name.clone(),
        message,
    };
    // metric -> variant -> point -> iteration -> value
    let mut runs: Runs = BTreeMap::new();
    for r in records {
        for (m, v) in &r.metrics {
            runs.entry(run_key(m, &r.variant, &r.point))
                .or_default()
                .insert(r.iteration, *v);
        }
    }
    let base_i = info
        .variants
        .iter()
        .position(|v| *v == info.baseline)
        .ok_or_else(|| err(format!("baseline {:?} is not a variant", info.baseline)))?;
    let series = |metric: &str, variant: &str, point: &str| {
        lookup(&runs, metric, variant, point).ok_or_else(|| {
            err(format!(
                "no runs of variant {variant:?} at point {point:?} report metric {metric:?}"
            ))
        })
    };
    let mut out = Vec::new();
    for table in &info.tables {
        let produced = records
            .iter()
            .any(|r| r.metrics.contains_key(&table.metric));
        for (vi, variant) in info.variants.iter().enumerate() {
            if vi == base_i {
                continue;
            }
            let not_produced = !produced && !records.is_empty();
            let mut points = Vec::new();
            let mut not_run = Vec::new();
            for (key, figs) in &table.points {
                if not_produced {
                    // nothing to compare the figures with
                    not_run.push(key.clone());
                    continue;
                }
                let published = [figs[base_i], figs[vi]];
                let pairs: Vec<(f64, f64)> = if table.sum_points {
                    if info.points_run.is_empty() {
                        not_run.push(key.clone());
                        continue;
                    }
                    // per iteration, the sum over every point run
                    let mut b: BTreeMap<u32, f64> = BTreeMap::new();
                    let mut x: BTreeMap<u32, f64> = BTreeMap::new();
                    for p in &info.points_run {
                        for (i, v) in series(&table.metric, &info.baseline, p)? {
                            *b.entry(*i).or_default() += v;
                        }
                        for (i, v) in series(&table.metric, variant, p)? {
                            *x.entry(*i).or_default() += v;
                        }
                    }
                    b.iter()
                        .filter_map(|(i, bv)| x.get(i).map(|xv| (*bv, *xv)))
                        .collect()
                } else {
                    if !info.points_run.contains(key) {
                        not_run.push(key.clone());
                        continue;
                    }
                    let b = series(&table.metric, &info.baseline, key)?;
                    let x = series(&table.metric, variant, key)?;
                    b.iter()
                        .filter_map(|(i, bv)| x.get(i).map(|xv| (*bv, *xv)))
                        .collect()
                };
                if pairs.is_empty() {
                    return Err(err(format!(
                        "no paired iterations of {:?} and {variant:?} at point {key:?}",
                        info.baseline
                    )));
                }
                points.push(score_point(key, published, &pairs));
            }
            let published_overall_pct =
                overall(points.iter().map(|p| p.published[1] / p.published[0]));
            let simulated_overall_pct =
                overall(points.iter().map(|p| p.simulated[1] / p.simulated[0]));
            let direction_agrees = match (published_overall_pct, simulated_overall_pct) {
                (Some(a), Some(b)) => Some(sign(a) == sign(b)),
                _ => None,
            };
            out.push(Comparison {
                entry: info.name.clone(),
                metric: table.metric.clone(),
                statistic: table.statistic.clone(),
                baseline: info.baseline.clone(),
                variant: variant.clone(),
                points,
                points_not_run: not_run,
                not_produced,
                published_overall_pct,
                simulated_overall_pct,
                direction_agrees,
                miss_cause: info.miss_cause.clone(),
            });
        }
    }
    Ok(out)
}

/// The summary over scored comparisons.
pub fn summarise(entries: usize, comparisons: &[Comparison]) -> Summary {
    let mut s = Summary {
        entries,
        ..Summary::default()
    };
    let mut logs = Vec::new();
    for c in comparisons {
        s.not_produced += c.not_produced as usize;
        if let Some(agree) = c.direction_agrees {
            s.comparisons += 1;
            s.directions_agree += agree as usize;
        }
        for p in &c.points {
            s.points += 1;
            s.signs_agree += p.signs_agree as usize;
            s.within_2x += p.within_2x as usize;
            if let Some(l) = p.abs_log2_ratio {
                logs.push(l);
            }
        }
    }
    s.points_with_ratio = logs.len();
    s.median_abs_log2_ratio = median(logs);
    s
}

/// A point's simulated interval as printed: `[lo%, hi%]` or `-`.
fn fmt_ci(p: &PointScore) -> String {
    p.simulated_ci
        .map_or("-".into(), |[lo, hi]| format!("[{lo:+.2}%, {hi:+.2}%]"))
}

/// A point's magnitude ratio as printed, or `-`.
fn fmt_ratio(p: &PointScore) -> String {
    p.ratio.map_or("-".into(), |r| format!("{r:.2}"))
}

/// An overall change as printed, or `-`.
fn fmt_pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:+.2}%"))
}

/// Whether a direction agrees, as printed.
fn fmt_agrees(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

impl Score {
    /// Score every entry against its runs.
    pub fn build(entries: Vec<(EntryInfo, Vec<crate::RunRecord>)>) -> Result<Score, ScoreError> {
        let mut comparisons = Vec::new();
        let mut infos = Vec::new();
        for (info, records) in entries {
            comparisons.extend(score_entry(&info, &records)?);
            infos.push(info);
        }
        let summary = summarise(infos.len(), &comparisons);
        Ok(Score {
            entries: infos,
            comparisons,
            summary,
        })
    }

    /// Whether comparison `c` misses: its direction disagrees, or a point
    /// is outside a factor of 2.
    pub fn misses(c: &Comparison) -> bool {
        c.direction_agrees == Some(false) || c.points.iter().any(|p| !p.within_2x)
    }

    /// The printed report: per entry its comparisons, point by point, then
    /// the summary.
    pub fn text(&self) -> String {
        let mut o = String::new();
        for e in &self.entries {
            let commit = if e.commit.is_empty() {
                "patch".to_string()
            } else {
                e.commit.clone()
            };
            let _ = writeln!(o, "{}: {} {}", e.name, commit, e.change);
            let _ = writeln!(
                o,
                "  {} ({}), {}; kernel {}",
                e.machine, e.family, e.benchmark, e.kernel
            );
            let _ = writeln!(o, "  {} ({})", e.url, e.date);
            for c in self.comparisons.iter().filter(|c| c.entry == e.name) {
                let _ = writeln!(
                    o,
                    "  {} ({}): {} against {}",
                    c.metric, c.statistic, c.variant, c.baseline
                );
                let _ = writeln!(
                    o,
                    "    {:<10} {:>10} {:>10} {:>22} {:>5} {:>7}",
                    "point", "published", "simulated", "95% interval", "signs", "ratio"
                );
                for p in &c.points {
                    let (ci, ratio) = (fmt_ci(p), fmt_ratio(p));
                    let _ = writeln!(
                        o,
                        "    {:<10} {:>+9.2}% {:>+9.2}% {:>22} {:>5} {:>7}",
                        p.point,
                        p.published_pct,
                        p.simulated_pct,
                        ci,
                        if p.signs_agree { "yes" } else { "no" },
                        ratio
                    );
                }
                if c.not_produced {
                    let _ = writeln!(
                        o,
                        "    not produced by the model for this workload: nothing scored ({} published points)",
                        c.points_not_run.len()
                    );
                } else if !c.points_not_run.is_empty() {
                    let _ = writeln!(o, "    not run (--quick): {}", c.points_not_run.join(", "));
                }
                let _ = writeln!(
                    o,
                    "    {:<10} {:>10} {:>10} {:>22} {:>5}",
                    "overall",
                    fmt_pct(c.published_overall_pct),
                    fmt_pct(c.simulated_overall_pct),
                    "",
                    fmt_agrees(c.direction_agrees)
                );
                if Self::misses(c) && !c.miss_cause.is_empty() {
                    let _ = writeln!(o, "    known cause of the miss: {}", c.miss_cause);
                }
            }
            o.push('\n');
        }
        o.push_str(&self.summary_text());
        o
    }

    /// The summary lines.
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        let pct = |a: usize, b: usize| {
            if b == 0 {
                "-".to_string()
            } else {
                format!("{:.1}%", 100.0 * a as f64 / b as f64)
            }
        };
        let median = match s.median_abs_log2_ratio {
            Some(m) if m.is_finite() => format!("{m:.2}"),
            Some(_) => "inf".into(),
            None => "-".into(),
        };
        format!(
            "summary: {} entries, {} comparisons, {} points\n\
             \x20 directions agree:          {:>4} of {:<4} comparisons ({})\n\
             \x20 signs agree:               {:>4} of {:<4} points ({})\n\
             \x20 within 2x of published:    {:>4} of {:<4} points ({})\n\
             \x20 median |log2 ratio|:       {} (over {} points with a published change)\n\
             \x20 not produced by the model: {} comparisons (metrics the simulated workload has none of)\n",
            s.entries,
            s.comparisons,
            s.points,
            s.directions_agree,
            s.comparisons,
            pct(s.directions_agree, s.comparisons),
            s.signs_agree,
            s.points,
            pct(s.signs_agree, s.points),
            s.within_2x,
            s.points,
            pct(s.within_2x, s.points),
            median,
            s.points_with_ratio,
            s.not_produced
        )
    }

    /// The score as a self-contained HTML page (no script, style inline).
    pub fn html(&self, title: &str, generator: &str) -> String {
        let mut o = String::new();
        let t = escape(title);
        let _ = write!(
            o,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
             <style>body{{font-family:sans-serif;margin:2em auto;max-width:80em;color:#222}}\
             table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:.2em .5em;text-align:right}}\
             td.l,th.l{{text-align:left}}.no{{background:#fbe3e3}}.yes{{background:#e3f5e3}}\
             pre{{background:#f6f6f6;padding:.6em}}footer{{margin-top:3em;color:#777;font-size:.85em}}</style>\
             </head><body>\n<h1>{t}</h1>\n<pre>{}</pre>\n",
            escape(&self.summary_text())
        );
        for e in &self.entries {
            let _ = writeln!(
                o,
                "<h2 id=\"{n}\">{n}</h2>\n<p>{commit} {change}<br>{machine} ({family}); {bench}; kernel {kernel}<br>\
                 <a href=\"{url}\">{url}</a> ({date})</p>",
                n = escape(&e.name),
                commit = escape(&e.commit),
                change = escape(&e.change),
                machine = escape(&e.machine),
                family = escape(&e.family),
                bench = escape(&e.benchmark),
                kernel = escape(&e.kernel),
                url = escape(&e.url),
                date = escape(&e.date)
            );
            for c in self.comparisons.iter().filter(|c| c.entry == e.name) {
                if c.not_produced {
                    let _ = writeln!(
                        o,
                        "<p>{} ({}): {} against {}: not produced by the model for this workload; nothing scored.</p>",
                        escape(&c.metric),
                        escape(&c.statistic),
                        escape(&c.variant),
                        escape(&c.baseline)
                    );
                    continue;
                }
                let _ = writeln!(
                    o,
                    "<table><caption>{} ({}): {} against {}</caption>\n<tr><th class=\"l\">point</th><th>published</th>\
                     <th>simulated</th><th>95% interval</th><th>signs agree</th><th>ratio</th></tr>",
                    escape(&c.metric),
                    escape(&c.statistic),
                    escape(&c.variant),
                    escape(&c.baseline)
                );
                for p in &c.points {
                    let (ci, ratio) = (fmt_ci(p), fmt_ratio(p));
                    let class = if p.within_2x { "yes" } else { "no" };
                    let _ = writeln!(
                        o,
                        "<tr class=\"{class}\"><td class=\"l\">{}</td><td>{:+.2}%</td><td>{:+.2}%</td><td>{ci}</td>\
                         <td>{}</td><td>{ratio}</td></tr>",
                        escape(&p.point),
                        p.published_pct,
                        p.simulated_pct,
                        if p.signs_agree { "yes" } else { "no" }
                    );
                }
                let _ = writeln!(
                    o,
                    "<tr><td class=\"l\">overall</td><td>{}</td><td>{}</td><td></td><td>{}</td><td></td></tr>\n</table>",
                    fmt_pct(c.published_overall_pct),
                    fmt_pct(c.simulated_overall_pct),
                    fmt_agrees(c.direction_agrees)
                );
                if Self::misses(c) && !c.miss_cause.is_empty() {
                    let _ = writeln!(
                        o,
                        "<p>Known cause of the miss: {}</p>",
                        escape(&c.miss_cause)
                    );
                }
            }
        }
        let _ = writeln!(o, "<footer>{}</footer>\n</body></html>", escape(generator));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunRecord;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    fn rec(variant: &str, point: &str, iteration: u32, metric: &str, v: f64) -> RunRecord {
        RunRecord {
            variant: variant.into(),
            point: point.into(),
            iteration,
            seed: 0,
            metrics: [(metric.to_string(), v)].into(),
        }
    }

    fn info(tables: Vec<PublishedTable>, points_run: &[&str]) -> EntryInfo {
        EntryInfo {
            name: "e".into(),
            change: "c".into(),
            commit: "0123456789ab".into(),
            machine: "m".into(),
            family: "intel-smt2".into(),
            kernel: "5.10".into(),
            benchmark: "hackbench".into(),
            url: "https://example.org".into(),
            date: "2020-01-01".into(),
            miss_cause: "not modelled".into(),
            variants: vec!["base".into(), "new".into()],
            baseline: "base".into(),
            points_run: points_run.iter().map(|s| s.to_string()).collect(),
            tables,
        }
    }

    #[test]
    fn a_point_by_hand() {
        // published 2.0 -> 1.8: -10 %. Runs (b, x): (1.0, 0.9), (1.2, 1.0),
        // (1.1, 1.0). mean b = 1.1, mean x = 0.9667; change -12.1212 %.
        // d = -0.1, -0.2, -0.1: mean -0.13333, sample sd 0.057735,
        // se 0.033333, t(2, .975) = 4.302653; half = 0.143422;
        // interval 100 (-0.133333 -+ 0.143422) / 1.1 = [-25.1596, 0.9172].
        let p = score_point("4", [2.0, 1.8], &[(1.0, 0.9), (1.2, 1.0), (1.1, 1.0)]);
        assert!(close(p.published_pct, -10.0));
        assert!(close(p.simulated_pct, 100.0 * (2.9 / 3.0 - 1.1) / 1.1));
        let [lo, hi] = p.simulated_ci.unwrap();
        assert!((lo - -25.1596).abs() < 1e-3, "{lo}");
        assert!((hi - 0.9172).abs() < 1e-3, "{hi}");
        assert!(p.signs_agree);
        let r = p.ratio.unwrap();
        assert!(close(r, 1.2121212121212122), "{r}");
        assert!(p.within_2x);
        assert!(close(p.abs_log2_ratio.unwrap(), r.log2()));
    }

    #[test]
    fn no_simulated_change_is_an_infinite_log_ratio_and_a_sign_miss() {
        let p = score_point("1", [1.0, 1.1], &[(2.0, 2.0)]);
        assert!(!p.signs_agree);
        assert_eq!(p.ratio, Some(0.0));
        assert!(!p.within_2x);
        assert_eq!(p.abs_log2_ratio, Some(f64::INFINITY));
        assert!(p.simulated_ci.is_none());
        // a published change of 0: no ratio; signs agree only with 0
        let q = score_point("1", [1.0, 1.0], &[(2.0, 2.0)]);
        assert!(q.signs_agree && q.ratio.is_none() && !q.within_2x);
        // the opposite sign at the right magnitude is not within 2x
        let w = score_point("1", [1.0, 1.1], &[(1.0, 0.9)]);
        assert!(!w.signs_agree && !w.within_2x);
        assert!(close(w.ratio.unwrap(), 1.0));
    }

    #[test]
    fn an_entry_by_hand_with_a_summed_table_and_a_point_not_run() {
        let tables = vec![
            PublishedTable {
                metric: "time".into(),
                statistic: "Amean".into(),
                unit: "s".into(),
                sum_points: false,
                points: vec![
                    ("1".into(), vec![1.0, 0.5]),
                    ("2".into(), vec![2.0, 2.2]),
                    ("3".into(), vec![3.0, 3.0]),
                ],
            },
            PublishedTable {
                metric: "faults".into(),
                statistic: "total".into(),
                unit: "".into(),
                sum_points: true,
                points: vec![("sum".into(), vec![100.0, 50.0])],
            },
        ];
        let e = info(tables, &["1", "2"]);
        let mut recs = Vec::new();
        for i in 0..2 {
            // time: point 1 base 1, new 0.8 (-20 %); point 2 base 2, new 2.4 (+20 %)
            recs.push(rec("base", "1", i, "time", 1.0));
            recs.push(rec("new", "1", i, "time", 0.8));
            recs.push(rec("base", "2", i, "time", 2.0));
            recs.push(rec("new", "2", i, "time", 2.4));
            // faults: sums 10+30 = 40 -> 5+15 = 20: -50 %
            recs.push(rec("base", "1", i, "faults", 10.0));
            recs.push(rec("new", "1", i, "faults", 5.0));
            recs.push(rec("base", "2", i, "faults", 30.0));
            recs.push(rec("new", "2", i, "faults", 15.0));
        }
        let s = Score::build(vec![(e, recs)]).unwrap();
        assert_eq!(s.comparisons.len(), 2);
        let t = &s.comparisons[0];
        assert_eq!(t.points_not_run, ["3"]);
        assert!(close(t.points[0].simulated_pct, -20.0));
        assert!(close(t.points[1].simulated_pct, 20.0));
        // constant differences: a zero-width interval
        assert_eq!(
            t.points[0].simulated_ci.unwrap()[0],
            t.points[0].simulated_ci.unwrap()[1]
        );
        // published overall: sqrt(0.5 * 1.1) - 1 = -25.84 %; simulated
        // sqrt(0.8 * 1.2) - 1 = -2.02 %: same direction
        assert!(close(
            t.published_overall_pct.unwrap(),
            100.0 * ((0.55f64).sqrt() - 1.0)
        ));
        assert!(close(
            t.simulated_overall_pct.unwrap(),
            100.0 * ((0.96f64).sqrt() - 1.0)
        ));
        assert_eq!(t.direction_agrees, Some(true));
        // point 1: -50 % vs -20 %: ratio 0.4, out; point 2: +10 % vs +20 %: 2.0, in
        assert!(close(t.points[0].ratio.unwrap(), 0.4));
        assert!(!t.points[0].within_2x);
        assert!(close(t.points[1].ratio.unwrap(), 2.0));
        assert!(t.points[1].within_2x);
        let f = &s.comparisons[1];
        assert_eq!(f.points.len(), 1);
        assert!(close(f.points[0].simulated[0], 40.0));
        assert!(close(f.points[0].simulated_pct, -50.0));
        assert!(f.points[0].within_2x);
        // summary: 2 comparisons agreeing, 3 points, 2 within 2x; the
        // log2 ratios 1.3219, 1.0, 0.0: median 1.0
        let sm = &s.summary;
        assert_eq!((sm.entries, sm.comparisons, sm.directions_agree), (1, 2, 2));
        assert_eq!((sm.points, sm.signs_agree, sm.within_2x), (3, 3, 2));
        assert!(close(sm.median_abs_log2_ratio.unwrap(), 1.0));
        let text = s.text();
        assert!(
            text.contains("known cause of the miss: not modelled"),
            "{text}"
        );
        assert!(text.contains("not run (--quick): 3"), "{text}");
        assert!(
            text.contains("within 2x of published:       2 of 3"),
            "{text}"
        );
        let html = s.html("t", "g");
        assert!(html.contains("<h2 id=\"e\">e</h2>") && !html.contains("<script"));
    }

    #[test]
    fn a_metric_the_model_does_not_produce_is_not_scored() {
        let tables = vec![PublishedTable {
            metric: "faults".into(),
            statistic: "total".into(),
            unit: "".into(),
            sum_points: true,
            points: vec![("sum".into(), vec![100.0, 50.0])],
        }];
        let recs = vec![
            rec("base", "1", 0, "time", 1.0),
            rec("new", "1", 0, "time", 1.0),
        ];
        let s = Score::build(vec![(info(tables, &["1"]), recs)]).unwrap();
        let c = &s.comparisons[0];
        assert!(c.not_produced && c.points.is_empty() && c.direction_agrees.is_none());
        assert_eq!(c.points_not_run, ["sum"]);
        assert_eq!(
            (
                s.summary.comparisons,
                s.summary.points,
                s.summary.not_produced
            ),
            (0, 0, 1)
        );
        assert!(s
            .text()
            .contains("not produced by the model for this workload"));
    }

    #[test]
    fn missing_runs_are_an_error_naming_the_entry() {
        let tables = vec![PublishedTable {
            metric: "time".into(),
            statistic: "Amean".into(),
            unit: "s".into(),
            sum_points: false,
            points: vec![("1".into(), vec![1.0, 0.5])],
        }];
        let e = Score::build(vec![(
            info(tables, &["1"]),
            vec![rec("base", "1", 0, "time", 1.0)],
        )])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "fidelity entry e: no runs of variant \"new\" at point \"1\" report metric \"time\""
        );
    }

    #[test]
    fn a_counter_the_model_leaves_at_zero() {
        // both sides 0: no simulated change, so a published one is missed
        let p = score_point("sum", [100.0, 50.0], &[(0.0, 0.0), (0.0, 0.0)]);
        assert_eq!(p.simulated_pct, 0.0);
        assert!(!p.signs_agree && p.simulated_ci.is_none());
        assert_eq!(p.abs_log2_ratio, Some(f64::INFINITY));
        // only the variant moves it: an unbounded change of its sign
        let q = score_point("sum", [100.0, 150.0], &[(0.0, 3.0)]);
        assert_eq!(q.simulated_pct, f64::INFINITY);
        assert!(q.signs_agree && !q.within_2x);
        assert_eq!(serde_json::to_value(&q).unwrap()["simulated_pct"], "inf");
    }

    #[test]
    fn the_median_of_an_even_count_and_of_infinities() {
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(
            median(vec![f64::INFINITY, 1.0, f64::INFINITY]),
            Some(f64::INFINITY)
        );
        assert_eq!(median(vec![]), None);
    }
}
