//! The fidelity corpus: published A/B results of real kernel changes on
//! real machines, each an ordinary experiment (the machine preset, kernel
//! profile, benchmark, sweep and variants that stand for the published
//! setup) plus an `[expect]` block with the published figures, where they
//! come from and what is known to be missing from the model. `schedlab
//! fidelity` runs them and the `report` crate scores the simulator against
//! the figures ([`report::fidelity`]). docs/fidelity.md is the guide and
//! the score.
//!
//! Every entry is checked before anything runs: an error names the entry
//! and the field, on one line.

use crate::experiment::{Experiment, ExperimentError};
use crate::spec::Mode;
use report::fidelity::{EntryInfo, PublishedTable};
use serde::Deserialize;
use toml::{Table, Value};

/// The built-in corpus: (name, file text), in the order scored (by name);
/// each is `crates/lab/src/fidelity/NAME.toml`.
pub const CORPUS: &[(&str, &str)] = &[
    (
        "classify-runnable-hackbench-arm64-8c",
        include_str!("fidelity/classify-runnable-hackbench-arm64-8c.toml"),
    ),
    (
        "classify-runnable-hackbench-power9-2s",
        include_str!("fidelity/classify-runnable-hackbench-power9-2s.toml"),
    ),
    (
        "cpuset-unavailable-poc-hackbench-2vm",
        include_str!("fidelity/cpuset-unavailable-poc-hackbench-2vm.toml"),
    ),
    (
        "eevdf-rfc-hackbench-zen3-2s",
        include_str!("fidelity/eevdf-rfc-hackbench-zen3-2s.toml"),
    ),
    (
        "eevdf-rfc-schbench-zen3-2s",
        include_str!("fidelity/eevdf-rfc-schbench-zen3-2s.toml"),
    ),
    (
        "eevdf-rfc-tbench-zen3-2s",
        include_str!("fidelity/eevdf-rfc-tbench-zen3-2s.toml"),
    ),
    (
        "lb-rework-hackbench-arm64-8c",
        include_str!("fidelity/lb-rework-hackbench-arm64-8c.toml"),
    ),
    (
        "lb-rework-hackbench-power9-2s",
        include_str!("fidelity/lb-rework-hackbench-power9-2s.toml"),
    ),
    (
        "llc-spread-schbench-hikey",
        include_str!("fidelity/llc-spread-schbench-hikey.toml"),
    ),
    (
        "merge-idle-core-cpu-hackbench-pipes-4s-intel",
        include_str!("fidelity/merge-idle-core-cpu-hackbench-pipes-4s-intel.toml"),
    ),
    (
        "merge-idle-core-cpu-hackbench-sockets-4s-intel",
        include_str!("fidelity/merge-idle-core-cpu-hackbench-sockets-4s-intel.toml"),
    ),
    (
        "numa-imb-consistent-tbench-zen3",
        include_str!("fidelity/numa-imb-consistent-tbench-zen3.toml"),
    ),
    (
        "numa-imb-nr-ep-zen3",
        include_str!("fidelity/numa-imb-nr-ep-zen3.toml"),
    ),
    (
        "numa-imb-pair-schbench-hsw",
        include_str!("fidelity/numa-imb-pair-schbench-hsw.toml"),
    ),
    (
        "numa-lb-reconcile-nas-mpi-8node",
        include_str!("fidelity/numa-lb-reconcile-nas-mpi-8node.toml"),
    ),
    (
        "numa-pan-scan-tbench-milan",
        include_str!("fidelity/numa-pan-scan-tbench-milan.toml"),
    ),
    (
        "numa-vma-scan-pids-nas-mpi-milan",
        include_str!("fidelity/numa-vma-scan-pids-nas-mpi-milan.toml"),
    ),
    (
        "paravirt-cpus-schbench-shared-lpar",
        include_str!("fidelity/paravirt-cpus-schbench-shared-lpar.toml"),
    ),
    (
        "select-idle-smt-prev-tbench-csl",
        include_str!("fidelity/select-idle-smt-prev-tbench-csl.toml"),
    ),
    (
        "sis-prop-avg-idle-hackbench-bdw",
        include_str!("fidelity/sis-prop-avg-idle-hackbench-bdw.toml"),
    ),
    (
        "sis-prop-avg-idle-hackbench-thunderx2",
        include_str!("fidelity/sis-prop-avg-idle-hackbench-thunderx2.toml"),
    ),
    (
        "sis-prop-avg-idle-tbench-bdw",
        include_str!("fidelity/sis-prop-avg-idle-tbench-bdw.toml"),
    ),
    (
        "vcpu-dedicated-nonpreempt-schbench-power9",
        include_str!("fidelity/vcpu-dedicated-nonpreempt-schbench-power9.toml"),
    ),
];

/// Machine families an entry may name.
pub const FAMILIES: [&str; 5] = ["intel-smt2", "amd-epyc", "arm64", "power", "other"];

/// A corpus entry: the experiment to run and what was published.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The experiment (with `--quick`'s settings when asked).
    pub experiment: Experiment,
    /// The published side, ready to score (its `points_run` are the
    /// experiment's points).
    pub info: EntryInfo,
    /// Anything a reader must know about the entry.
    pub note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFile {
    change: String,
    commit: String,
    machine: String,
    family: String,
    kernel: String,
    benchmark: String,
    url: String,
    date: String,
    baseline: String,
    variants: Vec<String>,
    #[serde(default)]
    miss_cause: String,
    #[serde(default)]
    note: String,
    table: Vec<TableFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    metric: String,
    statistic: String,
    #[serde(default)]
    unit: String,
    #[serde(default)]
    sum_points: bool,
    points: Table,
}

/// The text of built-in entry `name`.
pub fn text(name: &str) -> Option<&'static str> {
    CORPUS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Load built-in entry `name`.
pub fn load(name: &str, quick: bool) -> Result<Entry, ExperimentError> {
    match text(name) {
        Some(t) => parse(&format!("fidelity:{name}"), t, quick),
        None => Err(ExperimentError {
            origin: format!("fidelity:{name}"),
            message: format!(
                "no such corpus entry (schedlab fidelity --list shows them: {})",
                CORPUS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Read an entry from a file (an experiment file with an `[expect]`
/// block), with the limits of [`Experiment::read`].
pub fn read(path: &std::path::Path, quick: bool) -> Result<Entry, ExperimentError> {
    let origin = path.display().to_string();
    let bytes = topology::input::read_capped(path, crate::experiment::MAX_EXPERIMENT_BYTES)
        .map_err(|message| ExperimentError {
            origin: origin.clone(),
            message,
        })?;
    let text = String::from_utf8(bytes).map_err(|_| ExperimentError {
        origin: origin.clone(),
        message: "not UTF-8 text".into(),
    })?;
    parse(&origin, &text, quick)
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// Parse an entry's text: the experiment, then the `[expect]` block
/// against the whole (not `--quick`) experiment, so that every sweep point
/// has its published figures whatever `--quick` runs.
pub fn parse(origin: &str, text: &str, quick: bool) -> Result<Entry, ExperimentError> {
    let err = |message: String| ExperimentError {
        origin: origin.to_string(),
        message: message.replace('\n', " "),
    };
    let mut table: Table = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| {
                format!(
                    "line {}: ",
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                )
            })
            .unwrap_or_default();
        err(format!("{line}{}", e.message().trim()))
    })?;
    let expect = match table.remove("expect") {
        Some(Value::Table(t)) => t,
        Some(other) => return Err(err(format!("expect: expected a table, got {other}"))),
        None => {
            return Err(err(
                "expect: missing: a corpus entry holds the published figures in [expect]".into(),
            ))
        }
    };
    let rest = toml::to_string(&table).map_err(|e| err(e.to_string()))?;
    let full = Experiment::parse(origin, &rest, false)?;
    let mut experiment = if quick {
        Experiment::parse(origin, &rest, true)?
    } else {
        full.clone()
    };
    let e: ExpectFile = serde_path_to_error::deserialize(Value::Table(expect)).map_err(|e| {
        let path = e.path().to_string();
        err(format!(
            "expect.{path}: {}",
            e.into_inner().message().trim()
        ))
    })?;
    for (field, v) in [
        ("change", &e.change),
        ("machine", &e.machine),
        ("kernel", &e.kernel),
        ("benchmark", &e.benchmark),
        ("url", &e.url),
    ] {
        if v.trim().is_empty() {
            return Err(err(format!("expect.{field}: must not be empty")));
        }
    }
    if !(e.commit.is_empty()
        || (e.commit.len() >= 12 && e.commit.bytes().all(|c| c.is_ascii_hexdigit())))
    {
        return Err(err(format!(
            "expect.commit: {:?} is not a commit id of at least 12 hex digits (or \"\" for a patch that was not merged)",
            e.commit
        )));
    }
    if !FAMILIES.contains(&e.family.as_str()) {
        return Err(err(format!(
            "expect.family: {:?} is not one of {}",
            e.family,
            FAMILIES.join(", ")
        )));
    }
    if !(e.url.starts_with("https://") || e.url.starts_with("http://")) {
        return Err(err(format!(
            "expect.url: {:?} is not an http(s) address",
            e.url
        )));
    }
    if !is_date(&e.date) {
        return Err(err(format!("expect.date: {:?} is not YYYY-MM-DD", e.date)));
    }
    for v in &full.variants {
        if v.mode != Mode::Sim {
            return Err(err(format!(
                "variant {:?}: mode: a corpus entry's variants are simulated",
                v.name
            )));
        }
    }
    if e.variants.len() < 2 {
        return Err(err(
            "expect.variants: name the published baseline and at least one other variant".into(),
        ));
    }
    for (i, v) in e.variants.iter().enumerate() {
        if !full.variants.iter().any(|x| x.name == *v) {
            return Err(err(format!(
                "expect.variants[{i}]: {v:?} is not a [[variant]] of the experiment"
            )));
        }
        if e.variants[..i].contains(v) {
            return Err(err(format!("expect.variants[{i}]: {v:?} appears twice")));
        }
    }
    if !e.variants.contains(&e.baseline) {
        return Err(err(format!(
            "expect.baseline: {:?} is not one of expect.variants",
            e.baseline
        )));
    }
    if e.table.is_empty() {
        return Err(err(
            "expect.table: give at least one [[expect.table]] of published figures".into(),
        ));
    }
    let mut tables = Vec::new();
    for (ti, t) in e.table.iter().enumerate() {
        let at = format!("expect.table[{ti}]");
        if !crate::metrics::known(&t.metric) {
            return Err(err(format!(
                "{at}.metric: unknown metric {:?} (one of {})",
                t.metric,
                crate::metrics::names()
            )));
        }
        if t.statistic.trim().is_empty() {
            return Err(err(format!("{at}.statistic: must not be empty")));
        }
        let mut points = Vec::new();
        for (key, figs) in &t.points {
            let Value::Array(vs) = figs else {
                return Err(err(format!(
                    "{at}.points.{key}: expected an array of {} figures, got {figs}",
                    e.variants.len()
                )));
            };
            if vs.len() != e.variants.len() {
                return Err(err(format!(
                    "{at}.points.{key}: {} figures for {} published variants",
                    vs.len(),
                    e.variants.len()
                )));
            }
            let mut nums = Vec::new();
            for v in vs {
                let x = match v {
                    Value::Float(f) => *f,
                    Value::Integer(i) => *i as f64,
                    other => {
                        return Err(err(format!("{at}.points.{key}: {other} is not a number")))
                    }
                };
                if !x.is_finite() {
                    return Err(err(format!(
                        "{at}.points.{key}: {x} is not a finite figure"
                    )));
                }
                nums.push(x);
            }
            let base = nums[e
                .variants
                .iter()
                .position(|v| *v == e.baseline)
                .unwrap_or(0)];
            if base == 0.0 {
                return Err(err(format!(
                    "{at}.points.{key}: the baseline's figure is 0, so no change can be computed"
                )));
            }
            if t.sum_points {
                if key != "sum" {
                    return Err(err(format!(
                        "{at}.points.{key}: a sum_points table has one point, \"sum\""
                    )));
                }
            } else if !full.points().any(|p| p.key == *key) {
                return Err(err(format!(
                    "{at}.points.{key}: not a point of the sweep ({})",
                    full.points().map(|p| p.key).collect::<Vec<_>>().join(", ")
                )));
            }
            points.push((key.clone(), nums));
        }
        if t.sum_points && points.len() != 1 {
            return Err(err(format!(
                "{at}.points: a sum_points table has one point, \"sum\""
            )));
        }
        if !t.sum_points {
            if let Some(p) = full
                .points()
                .find(|p| !points.iter().any(|(k, _)| *k == p.key))
            {
                return Err(err(format!(
                    "{at}.points: sweep point {:?} has no published figure",
                    p.key
                )));
            }
            // sweep order
            points.sort_by_key(|(k, _)| full.points().position(|p| p.key == *k));
        }
        if !experiment.metrics.contains(&t.metric) {
            experiment.metrics.push(t.metric.clone());
        }
        tables.push(PublishedTable {
            metric: t.metric.clone(),
            statistic: t.statistic.clone(),
            unit: t.unit.clone(),
            sum_points: t.sum_points,
            points,
        });
    }
    // A summed table compares with the sum over every point: --quick
    // scores it only when it runs them all.
    let points_run: Vec<String> = experiment.points().map(|p| p.key.clone()).collect();
    let all_run = full.points().all(|p| points_run.contains(&p.key));
    let info = EntryInfo {
        name: experiment.name.clone(),
        change: e.change,
        commit: e.commit,
        machine: e.machine,
        family: e.family,
        kernel: e.kernel,
        benchmark: e.benchmark,
        url: e.url,
        date: e.date,
        miss_cause: e.miss_cause,
        variants: e.variants,
        baseline: e.baseline,
        points_run: points_run.clone(),
        tables: tables
            .into_iter()
            .map(|mut t| {
                if t.sum_points && !all_run {
                    // nothing to compare the total with
                    t.points.clear();
                }
                t
            })
            .collect(),
    };
    Ok(Entry {
        experiment,
        info,
        note: e.note,
    })
}

/// One line per built-in entry: name, the change's commit and title, the
/// machine and the source.
pub fn list_lines() -> Result<Vec<String>, ExperimentError> {
    CORPUS
        .iter()
        .map(|(n, _)| {
            let e = load(n, false)?;
            let i = &e.info;
            let commit = if i.commit.is_empty() {
                "patch"
            } else {
                &i.commit[..12]
            };
            Ok(format!(
                "{n}  {commit} {} | {} | {} ({})",
                i.change, i.machine, i.url, i.date
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "tiny"
metrics = ["time"]
iterations = 2
[run]
machine = "xeon-12c24t"
cpus = "0-3"
benchmark = "hackbench"
pipe = true
fds = 2
loops = 5
[sweep]
groups = [1, 2]
[[variant]]
name = "base"
[[variant]]
name = "new"
features = { sis_util = "off" }
[quick]
sweep = { groups = [1] }
[expect]
change = "a change"
commit = "0123456789ab"
machine = "a box"
family = "intel-smt2"
kernel = "6.0"
benchmark = "hackbench -p"
url = "https://example.org/x"
date = "2022-01-31"
baseline = "base"
variants = ["base", "new"]
[[expect.table]]
metric = "time"
statistic = "Amean"
points = { "2" = [2.0, 1.5], "1" = [1.0, 0.9] }
[[expect.table]]
metric = "migrations"
statistic = "total"
sum_points = true
points = { sum = [10, 12] }
"#;

    #[test]
    fn a_good_entry_parses_full_and_quick() {
        let e = parse("t.toml", GOOD, false).unwrap();
        assert_eq!(e.info.points_run, ["1", "2"]);
        // sweep order, not file order
        assert_eq!(e.info.tables[0].points[0].0, "1");
        assert!(e.experiment.metrics.contains(&"migrations".to_string()));
        let q = parse("t.toml", GOOD, true).unwrap();
        assert_eq!(q.info.points_run, ["1"]);
        // the total needs every point: nothing to score under --quick
        assert!(q.info.tables[1].points.is_empty());
    }

    fn bad(from: &str, to: &str) -> String {
        let text = GOOD.replacen(from, to, 1);
        assert_ne!(text, GOOD, "{from}");
        parse("t.toml", &text, false).unwrap_err().to_string()
    }

    #[test]
    fn bad_entries_name_the_field() {
        assert_eq!(
            bad("points = { \"2\" = [2.0, 1.5], ", "points = { "),
            "t.toml: expect.table[0].points: sweep point \"2\" has no published figure"
        );
        assert_eq!(
            bad("machine = \"xeon-12c24t\"", "machine = \"xeon-99\""),
            parse(
                "t.toml",
                &GOOD.replace("machine = \"xeon-12c24t\"", "machine = \"xeon-99\""),
                false
            )
            .unwrap_err()
            .to_string()
        );
        assert!(bad("machine = \"xeon-12c24t\"", "machine = \"xeon-99\"").contains("xeon-99"));
        assert_eq!(
            bad("family = \"intel-smt2\"", "family = \"sparc\""),
            "t.toml: expect.family: \"sparc\" is not one of intel-smt2, amd-epyc, arm64, power, other"
        );
        assert_eq!(
            bad("[2.0, 1.5]", "[2.0]"),
            "t.toml: expect.table[0].points.2: 1 figures for 2 published variants"
        );
        assert_eq!(
            bad(
                "variants = [\"base\", \"new\"]",
                "variants = [\"base\", \"neu\"]"
            ),
            "t.toml: expect.variants[1]: \"neu\" is not a [[variant]] of the experiment"
        );
        assert_eq!(
            bad("metric = \"time\"", "metric = \"speed\"")
                .split(" (one of")
                .next()
                .unwrap(),
            "t.toml: expect.table[0].metric: unknown metric \"speed\""
        );
        assert_eq!(
            bad("date = \"2022-01-31\"", "date = \"Jan 2022\""),
            "t.toml: expect.date: \"Jan 2022\" is not YYYY-MM-DD"
        );
        assert_eq!(
            bad("commit = \"0123456789ab\"", "commit = \"abc\""),
            "t.toml: expect.commit: \"abc\" is not a commit id of at least 12 hex digits (or \"\" for a patch that was not merged)"
        );
        assert_eq!(
            bad("points = { sum = [10, 12] }", "points = { all = [10, 12] }"),
            "t.toml: expect.table[1].points.all: a sum_points table has one point, \"sum\""
        );
        assert_eq!(
            bad("\"1\" = [1.0, 0.9]", "\"1\" = [0, 0.9]"),
            "t.toml: expect.table[0].points.1: the baseline's figure is 0, so no change can be computed"
        );
        assert_eq!(
            bad("statistic = \"Amean\"\n", "statistics = \"Amean\"\n"),
            "t.toml: expect.table[0].statistics: unknown field `statistics`, expected one of `metric`, `statistic`, `unit`, `sum_points`, `points`"
        );
        let no_expect = &GOOD[..GOOD.find("[expect]").unwrap()];
        assert_eq!(
            parse("t.toml", no_expect, false).unwrap_err().to_string(),
            "t.toml: expect: missing: a corpus entry holds the published figures in [expect]"
        );
    }

    #[test]
    fn every_file_of_the_corpus_folder_is_built_in_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fidelity");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|f| f.strip_suffix(".toml").map(str::to_string))
            .collect();
        files.sort();
        let names: Vec<&str> = CORPUS.iter().map(|c| c.0).collect();
        assert_eq!(names, files);
    }

    #[test]
    fn every_corpus_entry_parses_full_and_quick_under_its_own_name() {
        for (name, _) in CORPUS {
            let full = load(name, false).unwrap_or_else(|e| panic!("{e}"));
            let quick = load(name, true).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&full.info.name, name);
            assert!(
                quick.experiment.runs().len() <= full.experiment.runs().len(),
                "{name}"
            );
        }
    }
}
