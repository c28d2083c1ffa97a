//! Every run as one CSV row, for spreadsheets and other tools.

use crate::{ReportSpec, RunRecord};
use std::collections::HashMap;

/// One row per run: `variant,mode,<axis names…>,iteration,seed,<metric
/// names…>`.
///
/// Rows follow the spec: variant order, then point order, then iteration.
/// A metric a run lacks is an empty cell. Runs the spec does not know (an
/// unknown variant or point, which [`crate::Report::build`] refuses) are not
/// dropped: they come last, in name order, with empty mode and axis cells.
/// Floats print in Rust's shortest round-trip form.
pub fn csv(spec: &ReportSpec, records: &[RunRecord]) -> String {
    let variant_index: HashMap<&str, usize> = spec
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (v.name.as_str(), i))
        .collect();
    let point_index: HashMap<&str, usize> = spec
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (p.key.as_str(), i))
        .collect();
    let unknown = usize::MAX;
    let mut rows: Vec<&RunRecord> = records.iter().collect();
    rows.sort_by(|a, b| {
        let key = |r: &RunRecord| {
            (
                variant_index
                    .get(r.variant.as_str())
                    .copied()
                    .unwrap_or(unknown),
                point_index
                    .get(r.point.as_str())
                    .copied()
                    .unwrap_or(unknown),
            )
        };
        key(a)
            .cmp(&key(b))
            .then_with(|| a.variant.cmp(&b.variant))
            .then_with(|| a.point.cmp(&b.point))
            .then_with(|| a.iteration.cmp(&b.iteration))
            .then_with(|| a.seed.cmp(&b.seed))
    });

    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["variant".into(), "mode".into()];
    header.extend(spec.axes.iter().cloned());
    header.extend(["iteration".to_string(), "seed".to_string()]);
    header.extend(spec.metrics.iter().map(|m| m.name.clone()));
    // Writing to a Vec only fails on a record of the wrong length, and every
    // row below has the header's length, so the results can be ignored.
    let _ = w.write_record(&header);
    for r in rows {
        let mut row: Vec<String> = Vec::with_capacity(header.len());
        row.push(r.variant.clone());
        let variant = variant_index
            .get(r.variant.as_str())
            .map(|&i| &spec.variants[i]);
        row.push(variant.map(|v| v.mode.clone()).unwrap_or_default());
        let point = point_index.get(r.point.as_str()).map(|&i| &spec.points[i]);
        for a in 0..spec.axes.len() {
            let value = point.and_then(|p| p.values.get(a));
            row.push(match value {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            });
        }
        row.push(r.iteration.to_string());
        row.push(r.seed.to_string());
        for m in &spec.metrics {
            row.push(
                r.metrics
                    .get(&m.name)
                    .map(f64::to_string)
                    .unwrap_or_default(),
            );
        }
        let _ = w.write_record(&row);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// One CSV for several experiments run together (a suite): a first
/// column `experiment` naming each row's experiment, then the union of the
/// experiments' [`csv()`] columns in the order they first appear; a cell an
/// experiment has no column for is empty. Rows keep each experiment's
/// order, experiments the order given.
pub fn csv_suite(parts: &[(&str, &ReportSpec, &[RunRecord])]) -> String {
    let mut header: Vec<String> = vec!["experiment".into()];
    let mut tables = Vec::new();
    for (name, spec, records) in parts {
        let text = csv(spec, records);
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let cols: Vec<String> = r
            .headers()
            .map(|h| h.iter().map(str::to_string).collect())
            .unwrap_or_default();
        for c in &cols {
            if !header.contains(c) {
                header.push(c.clone());
            }
        }
        let rows: Vec<Vec<String>> = r
            .records()
            .filter_map(Result::ok)
            .map(|rec| rec.iter().map(str::to_string).collect())
            .collect();
        tables.push((*name, cols, rows));
    }
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(&header);
    for (name, cols, rows) in tables {
        let at: Vec<usize> = cols
            .iter()
            .map(|c| header.iter().position(|h| h == c).unwrap_or(0))
            .collect();
        for row in rows {
            let mut out = vec![String::new(); header.len()];
            out[0] = name.to_string();
            for (v, &i) in row.into_iter().zip(&at) {
                out[i] = v;
            }
            let _ = w.write_record(&out);
        }
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{records, run, spec};

    #[test]
    fn one_row_per_run_in_spec_order() {
        let text = csv(&spec(), &records());
        let expected = "\
variant,mode,groups,iteration,seed,time,tput
native-6.8,native,1,0,1000,1,100
native-6.8,native,1,1,1001,1.1,110
native-6.8,native,1,2,1002,1.05,105
native-6.8,native,4,0,1000,2,300
native-6.8,native,4,1,1001,2.02,310
native-6.8,native,4,2,1002,2.01,305
sim-eevdf,sim,1,0,1000,1.02,120
sim-eevdf,sim,1,1,1001,1.12,118
sim-eevdf,sim,1,2,1002,1.07,122
sim-eevdf,sim,4,0,1000,2.5,290
sim-eevdf,sim,4,1,1001,2.52,320
sim-eevdf,sim,4,2,1002,2.51,
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_suite_is_one_table_over_the_union_of_columns() {
        let a = spec();
        let mut b = spec();
        b.axes = vec!["clients".into()];
        b.metrics.retain(|m| m.name == "tput");
        let ra = records();
        let rb: Vec<RunRecord> = records().into_iter().take(1).collect();
        let text = csv_suite(&[("one", &a, &ra), ("two", &b, &rb)]);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("experiment,variant,mode,groups,iteration,seed,time,tput,clients")
        );
        assert_eq!(lines.next(), Some("one,native-6.8,native,1,0,1000,1,100,"));
        // part two's row: its own columns filled, part one's empty
        let own = csv(&b, &rb);
        let row: Vec<&str> = own.lines().nth(1).unwrap().split(',').collect();
        // variant,mode,clients,iteration,seed,tput
        let expected = format!(
            "two,{},{},,{},{},,{},{}",
            row[0], row[1], row[3], row[4], row[5], row[2]
        );
        assert_eq!(text.lines().last().unwrap(), expected);
        assert_eq!(text.lines().count(), 1 + ra.len() + rb.len());
    }

    #[test]
    fn quoting_string_axes_and_unknown_runs() {
        let mut s = spec();
        s.axes = vec!["placement, mode".into()];
        s.points[0].values = vec![serde_json::json!("spread,smt")];
        s.points[1].values = vec![serde_json::json!("pack \"llc\"")];
        let recs = vec![
            run("stray", "1", 0, &[("time", 3.0)]),
            run("sim-eevdf", "4", 0, &[("tput", 1.5)]),
            run("native-6.8", "1", 0, &[("time", 0.25)]),
        ];
        let text = csv(&s, &recs);
        let expected = "\
variant,mode,\"placement, mode\",iteration,seed,time,tput
native-6.8,native,\"spread,smt\",0,1000,0.25,
sim-eevdf,sim,\"pack \"\"llc\"\"\",0,1000,,1.5
stray,,\"spread,smt\",0,1000,3,
";
        assert_eq!(text, expected);
    }
}
