//! One self-contained HTML page of a comparison: the verdict
//! ([`Report::verdict_text`]), what the experiment was (facts the caller
//! gives: machine, kernel variants, workload, sweep, iterations, the
//! schedlab that ran it), then each metric's plot of the means, its plot
//! of each variant's gain per point with intervals
//! ([`crate::plot::gain_svg`]) and its mmtests table (inline SVG and
//! text), the benchmark's metrics first and the
//! scheduler internals after them, and the simulator's error against the
//! native runs where the experiment has both. The page loads nothing: no
//! script, no style sheet, no font, no image from elsewhere.

use crate::model::{MetricReport, Report, ReportError};
use std::fmt::Write;

/// What the page says besides the report's own data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HtmlPage {
    /// The experiment's facts, in order: (label, value).
    pub facts: Vec<(String, String)>,
    /// Metrics to show under "Scheduler internals" instead of "Results".
    pub internals: Vec<String>,
    /// Who made the page (the footer), e.g. `schedlab 0.1.0 (abc123)`.
    pub generator: String,
}

/// Escape text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:70em;color:#222}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:2em}\
table.facts td{padding:.15em 1em .15em 0;vertical-align:top}table.facts td:first-child{font-weight:bold}\
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.85em}\
figure{margin:1em 0}svg{max-width:100%;height:auto}\
table.err{border-collapse:collapse}table.err td,table.err th{border:1px solid #ccc;padding:.2em .6em;text-align:right}\
footer{margin-top:3em;color:#777;font-size:.85em}";

/// The page (see the module doc).
pub fn html(report: &Report, page: &HtmlPage) -> Result<String, ReportError> {
    let spec = &report.spec;
    let mut o = String::new();
    let title = escape(&spec.name);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    if !spec.description.is_empty() {
        let _ = writeln!(o, "<p>{}</p>", escape(&spec.description));
    }
    let _ = writeln!(
        o,
        "<h2 id=\"verdict\">Verdict</h2>\n<pre class=\"verdict\" data-compared=\"{}\">{}</pre>",
        spec.variants.len().saturating_sub(1),
        escape(&report.verdict_text())
    );
    o.push_str("<h2 id=\"experiment\">Experiment</h2>\n<table class=\"facts\">\n");
    for (k, v) in &page.facts {
        let _ = writeln!(o, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(v));
    }
    o.push_str("</table>\n");
    let (internal, results): (Vec<&MetricReport>, Vec<&MetricReport>) = report
        .metrics
        .iter()
        .partition(|m| page.internals.contains(&m.metric.name));
    for (id, heading, list) in [
        ("results", "Results", &results),
        ("internals", "Scheduler internals", &internal),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(o, "<h2 id=\"{id}\">{heading}</h2>");
        for m in list.iter() {
            metric_section(&mut o, report, m)?;
        }
    }
    sim_error_section(&mut o, report);
    let _ = write!(
        o,
        "<footer>Made by {}.</footer>\n</body></html>\n",
        escape(&page.generator)
    );
    Ok(o)
}

fn metric_section(o: &mut String, report: &Report, m: &MetricReport) -> Result<(), ReportError> {
    let name = &m.metric.name;
    let _ = writeln!(
        o,
        "<h3 id=\"metric-{}\">{} ({})</h3>\n<p>{}</p>",
        escape(name),
        escape(name),
        escape(&m.metric.unit),
        escape(&m.metric.description)
    );
    let svg = crate::plot::svg(report, name)?;
    let _ = writeln!(o, "<figure>{}</figure>", inline(&svg));
    if let Some(gain) = crate::plot::gain_svg(report, name)? {
        let _ = writeln!(o, "<figure class=\"gain\">{}</figure>", inline(&gain));
    }
    let _ = writeln!(o, "<pre>{}</pre>", escape(&report.metric_text(m)));
    Ok(())
}

/// An SVG to inline: the XML declaration, if any, has no place in HTML.
fn inline(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn sim_error_section(o: &mut String, report: &Report) {
    let with: Vec<&MetricReport> = report
        .metrics
        .iter()
        .filter(|m| m.sim_error.is_some())
        .collect();
    if with.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"sim-error\">Simulator against native</h2>\n<p>Each simulated variant's mean relative to the native reference's, per point: (sim &minus; native) / native.</p>\n");
    for m in with {
        let Some(e) = &m.sim_error else { continue };
        let _ = writeln!(
            o,
            "<h3>{} against {}</h3>\n<table class=\"err\"><tr><th>variant</th>",
            escape(&m.metric.name),
            escape(&e.native)
        );
        for p in &report.spec.points {
            let _ = write!(o, "<th>{}</th>", escape(&p.key));
        }
        o.push_str("<th>mean |error|</th></tr>\n");
        let pct = |v: Option<f64>, sign: bool| match v {
            Some(x) if sign => format!("{x:+.2}%"),
            Some(x) => format!("{x:.2}%"),
            None => "n/a".into(),
        };
        for v in &e.variants {
            let _ = write!(o, "<tr><td>{}</td>", escape(&v.variant));
            for p in &v.points {
                let _ = write!(o, "<td>{}</td>", pct(p.error_pct, true));
            }
            let _ = writeln!(o, "<td>{}</td></tr>", pct(v.overall_abs_pct, false));
        }
        o.push_str("</table>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{records, spec};

    fn page() -> HtmlPage {
        HtmlPage {
            facts: vec![
                ("machine".into(), "kunpeng920 <node 0>".into()),
                ("iterations".into(), "3".into()),
            ],
            internals: vec![],
            generator: "schedlab test".into(),
        }
    }

    #[test]
    fn the_page_is_whole_and_loads_nothing() {
        let r = Report::build(&spec(), &records()).unwrap();
        let h = html(&r, &page()).unwrap();
        assert!(h.starts_with("<!doctype html>"));
        assert!(h.trim_end().ends_with("</html>"));
        // every metric: a plot of the means, one of the gains and a table
        assert_eq!(h.matches("<figure><svg").count(), r.metrics.len());
        assert_eq!(
            h.matches("<figure class=\"gain\"><svg").count(),
            r.metrics.len()
        );
        assert_eq!(h.matches("<pre>").count(), r.metrics.len());
        // the verdict first, before the experiment's facts
        let verdict = h
            .find("<pre class=\"verdict\" data-compared=\"1\">Verdict on")
            .unwrap();
        assert!(verdict < h.find("id=\"experiment\"").unwrap());
        assert!(
            h.contains(
                "time  sim-eevdf  worse at 1 of 2 points: -24.88% [-26.00%, -23.75%] at groups=4"
            ),
            "{h}"
        );
        // facts escaped
        assert!(h.contains("kunpeng920 &lt;node 0&gt;"));
        // nothing fetched: no script, no external reference
        for bad in ["<script", "src=", "href=\"http", "@import", "url("] {
            assert!(!h.contains(bad), "{bad}");
        }
        // the plots are inline SVG without an XML declaration
        assert!(!h.contains("<?xml"));
    }

    #[test]
    fn internals_get_their_own_section_and_sim_error_its_table() {
        let r = Report::build(&spec(), &records()).unwrap();
        let mut p = page();
        p.internals = vec![r.metrics.last().unwrap().metric.name.clone()];
        let h = html(&r, &p).unwrap();
        let results = h.find("id=\"results\"").unwrap();
        let internals = h.find("id=\"internals\"").unwrap();
        assert!(results < internals);
        let last = format!("id=\"metric-{}\"", r.metrics.last().unwrap().metric.name);
        assert!(h.find(&last).unwrap() > internals);
        let has_err = r.metrics.iter().any(|m| m.sim_error.is_some());
        assert_eq!(h.contains("id=\"sim-error\""), has_err);
    }

    #[test]
    fn one_variant_has_no_gain_plot() {
        let mut s = spec();
        s.variants.truncate(1);
        let recs: Vec<_> = records()
            .into_iter()
            .filter(|r| r.variant == s.variants[0].name)
            .collect();
        let r = Report::build(&s, &recs).unwrap();
        let h = html(&r, &page()).unwrap();
        assert_eq!(h.matches("<svg").count(), r.metrics.len());
        assert!(!h.contains("class=\"gain\""));
        assert!(h.contains("data-compared=\"0\""));
        assert!(h.contains("one variant (native-6.8): nothing to compare it with"));
    }

    #[test]
    fn escape_covers_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
