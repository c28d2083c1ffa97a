//! `sim ... --trace FILE` (a Perfetto trace whose events match the run's
//! counters) and `compare ... --html FILE` (one self-contained page).

mod common;
use common::{fails, json, run};
use std::collections::BTreeMap;
use std::path::Path;

/// The issue's command: `sim hackbench -g 2 -l 100 --trace t.pftrace`.
#[test]
fn sim_trace_counts_match_the_json_counters() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.pftrace");
    let v = json(&[
        "sim",
        "hackbench",
        "-g",
        "2",
        "-l",
        "100",
        "--trace",
        t.to_str().unwrap(),
    ]);
    let s = simtrace::read::summarize(&std::fs::read(&t).unwrap()).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap();
    assert!(n("context_switches") > 0);
    assert_eq!(s.switches_to_task, n("context_switches"));
    assert_eq!(s.wakeup + s.wakeup_new, n("wakeups"));
    assert_eq!(s.waking, s.wakeup);
    let moved = v["balance"]["moved"].as_u64().unwrap();
    assert_eq!(s.migrate + s.fork_moves, n("migrations") + moved);
    // nothing else is left beside it
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["t.pftrace"]);
    // tracing changes nothing the run prints
    let plain = json(&["sim", "hackbench", "-g", "2", "-l", "100"]);
    assert_eq!(plain["placement"], v["placement"]);
    assert_eq!(plain["time_s"], v["time_s"]);
}

#[test]
fn a_trace_window_keeps_its_events_only() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("w.pftrace");
    let args = [
        "sim",
        "hackbench",
        "-g",
        "2",
        "-l",
        "100",
        "--trace",
        t.to_str().unwrap(),
    ];
    let mut windowed = args.to_vec();
    windowed.extend(["--trace-from", "0.005", "--trace-to", "0.006"]);
    run(&windowed);
    let s = simtrace::read::summarize(&std::fs::read(&t).unwrap()).unwrap();
    assert!(
        s.first_ts.unwrap() >= 5_000_000 && s.last_ts.unwrap() < 6_000_000,
        "{s:?}"
    );
    assert!(s.switches_to_task > 0);
}

#[test]
fn bad_trace_flags_exit_2_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = d.join("x.pftrace");
    let ts = t.to_str().unwrap();
    let base = ["sim", "hackbench", "-g", "1", "-l", "5"];
    let with = |extra: &[&str]| -> String {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        fails(&a)
    };
    assert!(with(&["--trace-from", "1"]).contains("--trace"));
    let e = with(&["--trace", ts, "--trace-from", "2", "--trace-to", "1"]);
    assert!(e.contains("--trace-from must be before --trace-to"), "{e}");
    let e = with(&["--trace", ts, "--trace-to", "-1"]);
    assert!(e.contains("--trace-to"), "{e}");
    let e = with(&["--trace", "/nonexistent/dir/t.pftrace"]);
    assert!(e.contains("--trace") && e.contains("does not exist"), "{e}");
    let e = with(&["--trace", d.to_str().unwrap()]);
    assert!(e.contains("--trace"), "{e}");
    // a run that fails leaves no trace and no temporary file
    let e = with(&["--trace", ts, "--max-events", "10"]);
    assert!(e.contains("--max-events"), "{e}");
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 0);
}

/// A small experiment with a native variant (so the page has the
/// simulator-vs-native table).
const TINY: &str = r#"
name = "tiny-html"
description = "two group counts <and> a native run"
iterations = 2
seed = 7
metrics = ["time", "probes-per-wakeup", "stage-shares"]

[run]
machine = "xeon-12c24t"
kernel = "linux-6.6"
benchmark = "hackbench"
pipe = true
threads = true
fds = 2
loops = 10

[sweep]
groups = [1, 2]

[[variant]]
name = "6.6-vanilla"

[[variant]]
name = "host-native"
mode = "native"
"#;

#[test]
fn compare_html_is_one_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let html = d.join("r.html");
    run(&[
        "compare",
        file.to_str().unwrap(),
        "--jobs",
        "2",
        "--html",
        html.to_str().unwrap(),
    ]);
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.starts_with("<!doctype html>") && h.trim_end().ends_with("</html>"));
    // the experiment: machine, variants with their kernels, workload,
    // sweep, iterations, the schedlab that ran it
    for fact in [
        "<td>machine</td><td>this host (native runs); xeon-12c24t</td>",
        "<td>baseline</td><td>6.6-vanilla: simulated, kernel linux-6.6</td>",
        "<td>variant</td><td>host-native: native, this host&#39;s kernel</td>",
        "<td>sweep</td><td>groups = 1, 2</td>",
        "<td>iterations</td><td>2</td>",
        "two group counts &lt;and&gt; a native run",
    ] {
        assert!(h.contains(fact), "{fact}");
    }
    assert!(h.contains("<td>workload</td><td>hackbench "), "{h}");
    assert!(h.contains("<td>schedlab</td><td>schedlab "));
    // a plot and a table per metric; time under results, the wake-up
    // path's metrics under the internals; the simulator's error
    let metrics = h.matches("<h3 id=\"metric-").count();
    assert!(metrics >= 3);
    assert_eq!(h.matches("<figure><svg").count(), metrics);
    assert_eq!(h.matches("<pre>").count(), metrics);
    let at = |s: &str| h.find(s).unwrap_or_else(|| panic!("{s}"));
    assert!(at("id=\"results\"") < at("id=\"metric-time\""));
    assert!(at("id=\"internals\"") < at("id=\"metric-probes-per-wakeup\""));
    assert!(at("id=\"metric-time\"") < at("id=\"internals\""));
    assert!(h.contains("id=\"sim-error\"") && h.contains("time against host-native"));
    for bad in ["<script", "src=", "href=", "url("] {
        assert!(!h.contains(bad), "{bad}");
    }
}

#[test]
fn compare_html_to_an_unwritable_place_fails_before_running() {
    let e = fails(&[
        "compare",
        "builtin:test-idle-cores-nosmt",
        "--quick",
        "--html",
        "/nonexistent/dir/r.html",
    ]);
    assert!(e.contains("--html") && e.contains("does not exist"), "{e}");
    assert!(!Path::new("/nonexistent/dir/r.html").exists());
}

/// `compare --trace`: the traced run is the run the report holds (its
/// placement stages give the same shares as the report's record of it).
#[test]
fn compare_trace_is_the_reported_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("sim.toml");
    let sim_only = TINY.replace(
        "[[variant]]\nname = \"host-native\"\nmode = \"native\"",
        "[[variant]]\nname = \"6.6-nosisutil\"\nfeatures = { sis_util = \"off\" }",
    );
    std::fs::write(&file, sim_only).unwrap();
    let (t, j) = (d.join("c.pftrace"), d.join("c.json"));
    run(&[
        "compare",
        file.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
        "--trace",
        t.to_str().unwrap(),
        "--trace-run",
        "6.6-nosisutil,2,1",
    ]);
    let s = simtrace::read::summarize(&std::fs::read(&t).unwrap()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let rec = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == "6.6-nosisutil" && r["point"] == "2" && r["iteration"] == 1)
        .expect("the run");
    let placed: BTreeMap<&String, &u64> = s
        .stages
        .iter()
        .filter(|(k, _)| !k.starts_with("none"))
        .collect();
    let total: u64 = placed.values().copied().sum();
    assert!(total > 0);
    for (stage, n) in placed {
        let share = 100.0 * *n as f64 / total as f64;
        let want = rec["metrics"][format!("stage-{stage}")].as_f64().unwrap();
        assert!((share - want).abs() < 1e-9, "{stage}: {share} vs {want}");
    }
    // a native run cannot be traced; refused before anything runs
    let n = d.join("n.toml");
    std::fs::write(&n, TINY).unwrap();
    let e = fails(&[
        "compare",
        n.to_str().unwrap(),
        "--trace",
        d.join("n.pftrace").to_str().unwrap(),
        "--trace-run",
        "host-native",
    ]);
    assert!(e.contains("only simulated runs are traced"), "{e}");
    assert!(!d.join("n.pftrace").exists());
}
