//! `schedlab fidelity`: the corpus list, bad entries refused before any
//! run, and the score's arithmetic checked by hand against the runs it
//! reports.

mod common;
use common::{fails, run, schedlab};
use serde_json::Value;

/// A corpus entry small enough for a test: hackbench on 4 CPUs, two
/// points, three iterations, made-up published figures.
const TINY: &str = r#"
name = "tiny-entry"
iterations = 3
metrics = ["time"]
[run]
machine = "xeon-12c24t"
cpus = "0-3"
kernel = "linux-6.6"
benchmark = "hackbench"
pipe = true
threads = true
fds = 4
loops = 20
[sweep]
groups = [1, 3]
[[variant]]
name = "base"
[[variant]]
name = "nosisutil"
features = { sis_util = "off", select_idle_smt_mode = "none" }
[quick]
iterations = 2
sweep = { groups = [3] }
[expect]
change = "made up"
commit = ""
machine = "four CPUs"
family = "other"
kernel = "6.6"
benchmark = "hackbench -p -T -f 4 -l 20"
url = "https://example.org/tiny"
date = "2026-12-06"
baseline = "base"
variants = ["base", "nosisutil"]
miss_cause = "a test"
[[expect.table]]
metric = "time"
statistic = "Amean"
points = { "1" = [2.0, 1.5], "3" = [4.0, 4.4] }
"#;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// The runs of `variant` at `point`, by iteration.
fn runs(entry: &Value, variant: &str, point: &str) -> Vec<f64> {
    entry["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["variant"] == variant && r["point"] == point)
        .map(|r| r["metrics"]["time"].as_f64().unwrap())
        .collect()
}

#[test]
fn the_score_of_a_tiny_entry_is_the_arithmetic_of_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = dir.path().join("score.json");
    let html = dir.path().join("score.html");
    let text = run(&[
        "fidelity",
        file.to_str().unwrap(),
        "--jobs",
        "2",
        "--json",
        out.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let entry = &v["entries"][0];
    assert_eq!(entry["info"]["name"], "tiny-entry");
    let c = &v["comparisons"][0];
    assert_eq!(
        (c["baseline"].as_str(), c["variant"].as_str()),
        (Some("base"), Some("nosisutil"))
    );
    let mut logs = Vec::new();
    let mut ratios = Vec::new();
    for (i, (point, published)) in [("1", -25.0), ("3", 10.0)].into_iter().enumerate() {
        let p = &c["points"][i];
        assert_eq!(p["point"], point);
        // published: 100 (1.5 - 2) / 2 = -25 %, 100 (4.4 - 4) / 4 = +10 %
        assert!(close(p["published_pct"].as_f64().unwrap(), published));
        // simulated, by hand from the runs the JSON lists
        let b = runs(entry, "base", point);
        let x = runs(entry, "nosisutil", point);
        assert_eq!((b.len(), x.len()), (3, 3));
        let mb = b.iter().sum::<f64>() / 3.0;
        let mx = x.iter().sum::<f64>() / 3.0;
        let sim = 100.0 * (mx - mb) / mb;
        assert!(close(p["simulated_pct"].as_f64().unwrap(), sim), "{p}");
        // the interval: t(2, 0.975) = 4.302652729911275 over the paired
        // differences' standard error
        let d: Vec<f64> = b.iter().zip(&x).map(|(b, x)| x - b).collect();
        let md = d.iter().sum::<f64>() / 3.0;
        let sd = (d.iter().map(|v| (v - md).powi(2)).sum::<f64>() / 2.0).sqrt();
        let half = 4.302652729911275 * sd / 3f64.sqrt();
        let ci = p["simulated_ci"].as_array().unwrap();
        assert!((ci[0].as_f64().unwrap() - 100.0 * (md - half) / mb).abs() < 1e-6);
        assert!((ci[1].as_f64().unwrap() - 100.0 * (md + half) / mb).abs() < 1e-6);
        let agree = published.signum() == sim.signum() || (sim == 0.0 && published == 0.0);
        assert_eq!(p["signs_agree"], agree);
        let ratio = sim.abs() / published.abs();
        assert!(close(p["ratio"].as_f64().unwrap(), ratio));
        assert_eq!(p["within_2x"], agree && (0.5..=2.0).contains(&ratio));
        ratios.push((b, x));
        logs.push(if ratio == 0.0 {
            f64::INFINITY
        } else {
            ratio.log2().abs()
        });
    }
    // overall: the geometric mean of the two ratios, less 1
    let pub_overall = 100.0 * ((0.75f64 * 1.1).sqrt() - 1.0);
    assert!(close(
        c["published_overall_pct"].as_f64().unwrap(),
        pub_overall
    ));
    let sim_ratio = |(b, x): &(Vec<f64>, Vec<f64>)| x.iter().sum::<f64>() / b.iter().sum::<f64>();
    let sim_overall = 100.0 * ((sim_ratio(&ratios[0]) * sim_ratio(&ratios[1])).sqrt() - 1.0);
    assert!(close(
        c["simulated_overall_pct"].as_f64().unwrap(),
        sim_overall
    ));
    // summary: one comparison, two points, the median of two |log2 ratio|
    let s = &v["summary"];
    assert_eq!(
        (
            s["entries"].as_u64(),
            s["comparisons"].as_u64(),
            s["points"].as_u64()
        ),
        (Some(1), Some(1), Some(2))
    );
    let median = (logs[0] + logs[1]) / 2.0;
    if median.is_finite() {
        assert!(close(s["median_abs_log2_ratio"].as_f64().unwrap(), median));
    } else {
        assert_eq!(s["median_abs_log2_ratio"], "inf");
    }
    // the text holds the same figures and the summary
    assert!(text.contains("tiny-entry: patch made up"), "{text}");
    assert!(
        text.contains("-25.00%") && text.contains("+10.00%"),
        "{text}"
    );
    assert!(
        text.contains("summary: 1 entries, 1 comparisons, 2 points"),
        "{text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("tiny-entry") && !page.contains("<script"));
    // --quick runs its one point and says which it left out
    let q = run(&["fidelity", "--quick", file.to_str().unwrap()]);
    assert!(q.contains("not run (--quick): 1"), "{q}");
}

#[test]
fn the_list_names_every_entry_with_its_change_machine_and_source() {
    let out = run(&["fidelity", "--list"]);
    assert!(out.lines().count() >= 16, "{out}");
    for line in out.lines() {
        let name = line.split_whitespace().next().unwrap();
        assert!(
            !name.is_empty() && line.contains(" | ") && line.contains("http"),
            "{line}"
        );
    }
    assert!(
        out.contains("lb-rework-hackbench-power9-2s  0b0695f2b34a"),
        "{out}"
    );
}

#[test]
fn bad_entries_fail_before_anything_runs_naming_entry_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let no_figure = put("a.toml", TINY.replace("\"1\" = [2.0, 1.5], ", ""));
    let e = fails(&["fidelity", &no_figure]);
    assert!(
        e.contains("a.toml: expect.table[0].points: sweep point \"1\" has no published figure"),
        "{e}"
    );
    let bad_preset = put("b.toml", TINY.replace("xeon-12c24t", "xeon-99"));
    let e = fails(&["fidelity", &bad_preset]);
    assert!(
        e.contains("b.toml") && e.contains("machine") && e.contains("xeon-99"),
        "{e}"
    );
    // a guest setup is resolved before any run: an unknown host preset
    let bad_host = put(
        "h.toml",
        TINY.replace(
            "machine = \"xeon-12c24t\"\ncpus = \"0-3\"",
            "host = \"no-such-host\"",
        ),
    );
    let e = fails(&["fidelity", &bad_host]);
    assert!(
        e.contains("h.toml") && e.contains("host") && e.contains("no-such-host"),
        "{e}"
    );
    // a good entry first, a bad one after: nothing runs, no output file
    let good = put("c.toml", TINY.to_string());
    let json = dir.path().join("out.json");
    let e = fails(&[
        "fidelity",
        &good,
        &bad_preset,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(e.contains("b.toml"), "{e}");
    assert!(!json.exists());
    let e = fails(&["fidelity", "no-such-entry"]);
    assert!(
        e.contains("fidelity:no-such-entry: no such corpus entry"),
        "{e}"
    );
    let out = schedlab()
        .args(["fidelity", "--iterations", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The smallest built-in entry under --quick: its published changes are
/// the file's figures' arithmetic.
#[test]
fn a_built_in_entry_runs_quick_and_prints_its_published_changes() {
    let out = run(&[
        "fidelity",
        "--quick",
        "lb-rework-hackbench-arm64-8c",
        "--jobs",
        "2",
    ]);
    // published: groups 1: 1.579 -> 1.41 = -10.70 %; 8: 1.117 -> 1.123 = +0.54 %;
    // 16: 1.176 -> 1.164 = -1.02 %
    for (point, pct) in [("1", "-10.70%"), ("8", "+0.54%"), ("16", "-1.02%")] {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(point))
            .unwrap_or_else(|| panic!("{point}: {out}"));
        assert!(line.contains(pct), "{line}");
    }
    assert!(out.contains("not run (--quick): 4"), "{out}");
    assert!(
        out.contains("summary: 1 entries, 1 comparisons, 3 points"),
        "{out}"
    );
}

/// `fidelity` takes the run bounds its error messages name, as `sim` and
/// `compare` do.
#[test]
fn fidelity_takes_the_run_bounds_its_messages_name() {
    let e = fails(&[
        "fidelity",
        "sis-prop-avg-idle-hackbench-bdw",
        "--quick",
        "--max-events",
        "1000",
    ]);
    assert!(
        e.contains("--max-events: the run reached the limit of 1000 events"),
        "{e}"
    );
    assert!(
        e.trim_end().ends_with("(raise it with --max-events N)"),
        "{e}"
    );
}
