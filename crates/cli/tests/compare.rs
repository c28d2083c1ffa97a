//! `schedlab compare`: experiment files and built-ins, the mmtests report,
//! its files, and identical results whatever the jobs, shards or resumes.

mod common;
use common::{fails, run, schedlab};
use serde_json::Value;
use std::path::Path;

/// A small experiment: hackbench on 6 CPUs, two group counts, two
/// variants, three iterations (12 runs of a few ms each).
const TINY: &str = r#"
name = "tiny"
description = "two group counts, SIS_UTIL on and off"
iterations = 3
seed = 7
metrics = ["time", "probes-per-wakeup", "stage-shares"]

[run]
machine = "xeon-12c24t"
cpus = "0-5"
kernel = "linux-6.6"
benchmark = "hackbench"
pipe = true
threads = true
fds = 4
loops = 20

[sweep]
groups = [1, 3]

[[variant]]
name = "6.6-vanilla"

[[variant]]
name = "6.6-nosisutil"
features = { sis_util = "off" }
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// `compare FILE` with `extra` flags, writing JSON and CSV into `dir` as
/// `tag.json` / `tag.csv`; returns (stdout, json, csv).
fn compare(dir: &Path, file: &str, tag: &str, extra: &[&str]) -> (String, String, String) {
    let j = dir.join(format!("{tag}.json"));
    let c = dir.join(format!("{tag}.csv"));
    let mut args = vec![
        "compare",
        file,
        "--json",
        j.to_str().unwrap(),
        "--csv",
        c.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    (out, read(&j), read(&c))
}

#[test]
fn list_shows_every_builtin() {
    let out = run(&["compare", "--list"]);
    let names = [
        "test-idle-cores-nosmt",
        "select-idle-core-early-break",
        "cluster-scan",
        "cluster-scan-2nodes",
        "sd-idle",
        "vcpu-preempted-hackbench",
        "vcpu-preempted-tbench",
        "vcpu-preempted-schbench",
        "numa-scan-stagger",
        "kernel-agreement",
        // the suite
        "vcpu-preempted",
    ];
    for n in names {
        assert!(out.contains(&format!("builtin:{n} ")), "{n}: {out}");
    }
    assert_eq!(out.lines().count(), names.len(), "{out}");
}

#[test]
fn builtin_quick_prints_mmtests_table_and_writes_json_csv_svg() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (j, c, s) = (d.join("r.json"), d.join("r.csv"), d.join("r.svg"));
    let out = run(&[
        "compare",
        "builtin:test-idle-cores-nosmt",
        "--quick",
        "--iterations",
        "1",
        "--json",
        j.to_str().unwrap(),
        "--csv",
        c.to_str().unwrap(),
        "--plot",
        s.to_str().unwrap(),
    ]);
    // the mmtests layout: a two-row header from the variant names, then
    // every Min row, every Amean row, ...
    assert!(out.contains("vanilla") && out.contains("smtgate"), "{out}");
    let time_rows: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" time-"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(time_rows.len(), 6 * 7, "{out}");
    assert_eq!(
        &time_rows[..8],
        ["Min"; 7]
            .iter()
            .chain(&["Amean"])
            .copied()
            .collect::<Vec<_>>()
    );
    assert!(out.contains("Amean     time-14 "), "{out}");
    let v: Value = serde_json::from_str(&read(&j)).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2 * 7);
    assert_eq!(v["experiment"]["name"], "test-idle-cores-nosmt");
    let csv = read(&c);
    assert!(
        csv.starts_with("variant,mode,groups,iteration,seed,time,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 2 * 7);
    let svg = read(&s);
    assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("5.12-vanilla") && svg.contains("groups"),
        "the plot names its variants and axis"
    );
    // one SVG per further metric beside it
    assert!(d.join("r-select-idle-cpu-cost.svg").exists());
    // and the gain per point of each, with intervals
    let gain = read(&d.join("r-gain.svg"));
    assert!(
        gain.contains("gain over 5.12-vanilla (%), + is better, 95% CI")
            && gain.contains("5.12-smtgate"),
        "{gain}"
    );
    assert!(d.join("r-select-idle-cpu-cost-gain.svg").exists());
    let stage = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("r-stage-") && n.ends_with("-gain.svg"))
        .expect("a stage's gain plot");
    assert!(read(&d.join(&stage)).contains("change from 5.12-vanilla (%), + is up"));
}

#[test]
fn the_comparison_starts_with_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("v.runs.jsonl");
    let out = run(&[
        "compare",
        "builtin:test-idle-cores-nosmt",
        "--quick",
        "--iterations",
        "2",
        "--log",
        log.to_str().unwrap(),
    ]);
    assert!(
        out.starts_with("Verdict on test-idle-cores-nosmt: "),
        "{out}"
    );
    let block: Vec<&str> = out.split("\n\n").next().unwrap().lines().collect();
    assert!(
        block[1].starts_with("  each variant against 5.12-vanilla at 7 points, 2 iterations each"),
        "{out}"
    );
    assert!(
        block[2].contains("95% confidence interval of the gain"),
        "{out}"
    );
    // one line per metric (one variant after the baseline), each a verdict
    let tables = out.matches(" is better").count() - 1;
    assert_eq!(block.len() - 3, tables, "{out}");
    for line in &block[3..] {
        let words = line.split_whitespace().nth(1).unwrap();
        assert_eq!(words, "5.12-smtgate", "{line}");
        assert!(
            [
                "better at ",
                "worse at ",
                "mixed: better at ",
                "higher at ",
                "lower at ",
                "both ways: ",
                "no significant difference at any of 7 points"
            ]
            .iter()
            .any(|w| line.contains(w)),
            "{line}"
        );
    }
    // the time is hackbench's, and no table says two directions
    assert!(
        out.contains(
            "time: s, lower is better (hackbench Time: seconds until every task exited)\n"
        ),
        "{out}"
    );
    assert!(!out.contains("NPB"), "{out}");
    for heading in out
        .lines()
        .filter(|l| l.starts_with("stage-") && l.contains(": %,"))
    {
        assert!(
            heading.contains("neither direction is better") && !heading.contains("lower is better"),
            "{heading}"
        );
    }
}

#[test]
fn same_json_whatever_the_jobs_shards_or_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = write(d, "tiny.toml", TINY);
    let (text1, json1, csv1) = compare(d, &file, "j1", &["--jobs", "1"]);
    let (text2, json2, csv2) = compare(d, &file, "j2", &["--jobs", "2"]);
    assert_eq!(json1, json2);
    assert_eq!(csv1, csv2);
    assert_eq!(text1, text2);
    assert!(text1.contains("Amean     time-3 "), "{text1}");

    // two shards, each with its own log, then the merge
    let logs: Vec<String> = (1..=2)
        .map(|i| {
            let log = d.join(format!("s{i}.runs.jsonl"));
            let shard = format!("{i}/2");
            let out = run(&[
                "compare",
                &file,
                "--shard",
                &shard,
                "--log",
                log.to_str().unwrap(),
            ]);
            assert!(out.is_empty(), "a shard prints no report: {out}");
            log.to_str().unwrap().to_string()
        })
        .collect();
    let (j, c) = (d.join("m.json"), d.join("m.csv"));
    let merged = run(&[
        "compare",
        "--merge",
        &logs[0],
        &logs[1],
        "--json",
        j.to_str().unwrap(),
        "--csv",
        c.to_str().unwrap(),
    ]);
    assert_eq!(merged, text1);
    assert_eq!(read(&j), json1);
    assert_eq!(read(&c), csv1);

    // a merge of one shard alone is incomplete: an error naming a missing run
    let e = fails(&["compare", "--merge", &logs[0]]);
    assert!(e.contains("missing"), "{e}");

    // an interrupted run: the log keeps its header and 5 runs, and a torn
    // sixth line; --resume redoes only the other 7
    let log = d.join("tiny.runs.jsonl");
    let full = read(&log);
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 1 + 12);
    let cut = lines[..6].join("\n") + "\n" + &lines[6][..lines[6].len() / 2];
    std::fs::write(&log, cut).unwrap();
    let (text3, json3, csv3) = compare(d, &file, "j1", &["--resume", "--jobs", "2"]);
    assert_eq!((text3, json3, csv3), (text1, json1.clone(), csv1));
    let resumed = read(&log);
    assert_eq!(
        resumed.lines().count(),
        1 + 12,
        "the torn line is dropped, the 7 missing runs appended"
    );

    // resuming a log of another experiment is refused
    let other = write(d, "other.toml", &TINY.replace("seed = 7", "seed = 8"));
    let e = fails(&[
        "compare",
        &other,
        "--resume",
        "--log",
        log.to_str().unwrap(),
    ]);
    assert!(e.contains("another experiment"), "{e}");
}

#[test]
fn a_changed_seed_changes_the_runs() {
    // the identity above is not because runs ignore their seed
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = write(d, "a.toml", TINY);
    let b = write(d, "b.toml", &TINY.replace("seed = 7", "seed = 8"));
    let (_, ja, _) = compare(d, &a, "a", &[]);
    let (_, jb, _) = compare(d, &b, "b", &[]);
    let runs = |j: &str| serde_json::from_str::<Value>(j).unwrap()["runs"].clone();
    assert_ne!(runs(&ja), runs(&jb));
}

#[test]
fn a_native_variant_adds_the_simulator_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = TINY
        .replace("iterations = 3", "iterations = 2")
        .replace(
            "[[variant]]\nname = \"6.6-nosisutil\"\nfeatures = { sis_util = \"off\" }",
            "[[variant]]\nname = \"host-native\"\nmode = \"native\"",
        )
        .replace("cpus = \"0-5\"\n", "");
    let file = write(d, "n.toml", &text);
    let (out, json, _) = compare(d, &file, "n", &["--jobs", "2"]);
    assert!(out.contains("Sim error vs host-native"), "{out}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let modes: Vec<&str> = v["experiment"]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["sim", "native"]);
}

#[test]
fn malformed_experiments_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // (what, text in TINY, replaced by, what the message must name)
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "unknown top-level field",
            "seed = 7",
            "seed = 7\nsed = 1",
            &["line 6", "unknown field `sed`"],
        ),
        (
            "unknown workload field",
            "loops = 20",
            "loops = 20\ngrups = 2",
            &["variant \"6.6-vanilla\"", "grups", "unknown field"],
        ),
        (
            "wrong type",
            "fds = 4",
            "fds = \"four\"",
            &["fds", "invalid type"],
        ),
        ("negative count", "fds = 4", "fds = -4", &["fds"]),
        (
            "empty sweep",
            "groups = [1, 3]",
            "groups = []",
            &["sweep.groups", "empty"],
        ),
        (
            "unknown machine",
            "machine = \"xeon-12c24t\"",
            "machine = \"cray-1\"",
            &["machine", "cray-1"],
        ),
        (
            "unknown kernel",
            "kernel = \"linux-6.6\"",
            "kernel = \"linux-1.0\"",
            &["kernel", "linux-1.0"],
        ),
        (
            "unknown feature",
            "sis_util = \"off\"",
            "sis_utl = \"off\"",
            &["features.sis_utl", "sis_utl"],
        ),
        (
            "unknown metric",
            "\"probes-per-wakeup\"",
            "\"probes\"",
            &["metrics", "\"probes\""],
        ),
        (
            "native with a simulator field",
            "features = { sis_util = \"off\" }",
            "mode = \"native\"\nfeatures = { sis_util = \"off\" }",
            &["6.6-nosisutil", "features", "simulator only"],
        ),
        ("unknown table", "[[variant]]", "[[nothing]]", &["nothing"]),
        (
            "zero count",
            "fds = 4",
            "fds = 0",
            &[
                "variant \"6.6-vanilla\", point 1",
                "-f/--fds",
                "must be an integer > 0",
            ],
        ),
        (
            "a metric of another benchmark",
            "\"probes-per-wakeup\"",
            "\"tput\"",
            &["metrics", "tbench metric"],
        ),
        (
            "a metric twice",
            "\"probes-per-wakeup\"",
            "\"time\"",
            &["listed twice"],
        ),
        (
            "a bad [quick], without --quick",
            "[sweep]",
            "[quick]\nlops = 1\n[sweep]",
            &["with --quick", "lops"],
        ),
        (
            "an axis that cannot be swept",
            "groups = [1, 3]",
            "groups = [1, 3]\nbenchmark = [\"tbench\"]",
            &["sweep.benchmark", "cannot be swept"],
        ),
        (
            "too many runs",
            "iterations = 3",
            "iterations = 4000000000",
            &["more than 10000000"],
        ),
    ];
    for (what, from, to, needles) in cases {
        assert!(TINY.contains(from), "{what}: the fixture has {from:?}");
        let file = write(d, "bad.toml", &TINY.replacen(from, to, 1));
        let e = fails(&["compare", &file]);
        assert!(e.contains("bad.toml"), "{what}: names the file: {e}");
        for n in *needles {
            assert!(e.contains(n), "{what}: {e:?} should contain {n:?}");
        }
    }
    let e = fails(&["compare", "builtin:nosuch"]);
    assert!(
        e.contains("builtin:nosuch") && e.contains("test-idle-cores-nosmt"),
        "{e}"
    );
    let e = fails(&["compare", &d.join("missing.toml").to_string_lossy()]);
    assert!(e.contains("missing.toml"), "{e}");
    fails(&["compare", "builtin:tiny", "--shard", "3/2"]);
    fails(&[
        "compare",
        "--iterations",
        "0",
        "builtin:test-idle-cores-nosmt",
    ]);
    // nothing was written for a failed experiment
    let names: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn no_partial_output_on_error() {
    let out = schedlab()
        .args([
            "compare",
            "builtin:nosuch",
            "--json",
            "/nonexistent-dir/x.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn merge_refuses_logs_that_disagree_and_resume_adds_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = write(d, "tiny.toml", TINY);
    let log = d.join("a.runs.jsonl");
    let l = log.to_str().unwrap();
    run(&["compare", &file, "--iterations", "2", "--log", l]);
    assert_eq!(read(&log).lines().count(), 1 + 8);
    // asking for a third iteration keeps the 8 runs and adds 4
    let (text, json, csv) = compare(d, &file, "r", &["--resume", "--log", l]);
    assert_eq!(read(&log).lines().count(), 1 + 12);
    let (text0, json0, csv0) = compare(d, &file, "fresh", &[]);
    assert_eq!((text, json, csv), (text0, json0, csv0));

    // a copy of the log with one value changed (and its checksum made
    // again) cannot be merged with it
    let changed = d.join("b.runs.jsonl");
    let lines: Vec<String> = read(&log).lines().map(String::from).collect();
    let mut rec: Value = serde_json::from_str(&lines[1]).unwrap();
    rec["metrics"]["time"] = Value::from(999.0);
    rec.as_object_mut().unwrap().remove("sum");
    let mut out = lines.clone();
    out[1] = lab::runlog::seal(&rec.to_string());
    std::fs::write(&changed, out.join("\n") + "\n").unwrap();
    let e = fails(&["compare", "--merge", l, changed.to_str().unwrap()]);
    assert!(e.contains("appears twice with different results"), "{e}");
    // an identical copy merges
    std::fs::write(&changed, lines.join("\n") + "\n").unwrap();
    run(&["compare", "--merge", l, changed.to_str().unwrap()]);

    // a log cut short before its header: --resume starts it afresh
    std::fs::write(&log, "{\"schedlab_runl").unwrap();
    run(&["compare", &file, "--resume", "--log", l]);
    assert_eq!(read(&log).lines().count(), 1 + 12);
    // a log of an unknown format is refused
    let bumped = read(&log).replacen(
        &format!("\"schedlab_runlog\":{}", lab::runlog::FORMAT),
        "\"schedlab_runlog\":99",
        1,
    );
    std::fs::write(&log, bumped).unwrap();
    let e = fails(&["compare", "--merge", l]);
    assert!(e.contains("run-log format 99"), "{e}");
}

/// A real interruption: SIGINT once a few runs are in the log, then
/// `--resume` redoes only the rest and the report is the uninterrupted one.
#[test]
fn ctrl_c_then_resume_gives_the_same_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let slow = TINY.replace("loops = 20", "loops = 4000");
    let file = write(d, "slow.toml", &slow);
    let log = d.join("slow.runs.jsonl");
    let bin = assert_cmd::cargo::cargo_bin("schedlab");
    let mut child = std::process::Command::new(&bin)
        .args([
            "compare",
            &file,
            "--jobs",
            "1",
            "--log",
            log.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(120) {
        let runs = std::fs::read_to_string(&log).map_or(0, |t| t.lines().count().saturating_sub(1));
        if runs >= 3 || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    let kept = read(&log).lines().count() - 1;
    eprintln!("interrupted after {kept} of 12 runs");
    let (text, json, csv) = compare(
        d,
        &file,
        "resumed",
        &["--resume", "--log", log.to_str().unwrap()],
    );
    assert_eq!(read(&log).lines().count(), 1 + 12, "{kept} runs were kept");
    let (text0, json0, csv0) = compare(
        d,
        &file,
        "fresh",
        &["--log", d.join("other.jsonl").to_str().unwrap()],
    );
    assert_eq!((text, json, csv), (text0, json0, csv0));
}

/// An output that cannot be written stops the command before any run.
#[test]
fn unwritable_outputs_fail_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.runs.jsonl");
    for flag in ["--json", "--csv", "--plot"] {
        let e = fails(&[
            "compare",
            "builtin:select-idle-core-early-break",
            "--quick",
            flag,
            "/nonexistent-dir/out",
            "--log",
            log.to_str().unwrap(),
        ]);
        assert!(e.contains(flag) && e.contains("/nonexistent-dir"), "{e}");
        assert!(!log.exists(), "{flag}: a run started");
    }
}

#[test]
fn the_vcpu_preempted_suite_runs_its_three_setups_into_one_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (j, c, p) = (d.join("s.json"), d.join("s.csv"), d.join("s.svg"));
    let args = [
        "compare",
        "builtin:vcpu-preempted",
        "--quick",
        "--json",
        j.to_str().unwrap(),
        "--csv",
        c.to_str().unwrap(),
        "--plot",
        p.to_str().unwrap(),
    ];
    let out = run(&args);
    let parts = [
        "vcpu-preempted-hackbench",
        "vcpu-preempted-tbench",
        "vcpu-preempted-schbench",
    ];
    for (i, part) in parts.iter().enumerate() {
        let head = format!("== builtin:vcpu-preempted {}/3: builtin:{part} ==", i + 1);
        assert!(out.contains(&head), "{head}: {out}");
    }
    // each part's own table: hackbench's time, tbench's throughput over
    // both guests, schbench's latency over both guests
    for m in ["time-1 ", "vm-tput-1 ", "vm-wakeup-p99-1 "] {
        assert!(out.contains(m), "{m}: {out}");
    }
    let v: Value = serde_json::from_str(&read(&j)).unwrap();
    assert_eq!(v["suite"], "builtin:vcpu-preempted");
    let jp = v["parts"].as_array().unwrap();
    let names: Vec<&str> = jp
        .iter()
        .map(|x| x["experiment"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, parts);
    for x in jp {
        let runs = x["runs"].as_array().unwrap();
        assert!(!runs.is_empty());
        // both variants, without and with the check
        let variants: std::collections::BTreeSet<&str> = runs
            .iter()
            .map(|r| r["variant"].as_str().unwrap())
            .collect();
        assert_eq!(variants.len(), 2, "{variants:?}");
    }
    let csv = read(&c);
    assert!(csv.starts_with("experiment,variant,mode,"), "{csv}");
    let rows: usize = jp.iter().map(|x| x["runs"].as_array().unwrap().len()).sum();
    assert_eq!(csv.lines().count(), 1 + rows);
    for part in parts {
        assert!(csv.contains(&format!("\n{part},")), "{part}");
        assert!(d.join(format!("s-{part}.svg")).exists(), "{part}");
    }
    // deterministic, and the single parts still run alone
    assert_eq!(out, run(&args));
    let alone = run(&["compare", "builtin:vcpu-preempted-tbench", "--quick"]);
    assert!(alone.contains("vm-tput-1 "), "{alone}");
    // one experiment's flags are refused for the suite, in one line
    let err = fails(&[
        "compare",
        "builtin:vcpu-preempted",
        "--quick",
        "--shard",
        "1/2",
    ]);
    assert!(err.contains("--shard takes one of them"), "{err}");
}

/// A run log edited by hand is refused by `--resume` and `--merge`, in one
/// line naming the file and the line, instead of changing the report.
#[test]
fn an_edited_run_log_is_refused_by_resume_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = write(d, "tiny.toml", TINY);
    let log = d.join("a.runs.jsonl");
    let l = log.to_str().unwrap();
    run(&["compare", &file, "--iterations", "1", "--log", l]);
    let text = read(&log);
    let lines: Vec<&str> = text.lines().collect();
    // the third line's time, as a hand would change it in an editor
    let rec: Value = serde_json::from_str(lines[2]).unwrap();
    let time = &rec["metrics"]["time"];
    let twice = Value::from(time.as_f64().unwrap() * 2.0);
    let mut edited: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    edited[2] = lines[2].replacen(&format!("\"time\":{time}"), &format!("\"time\":{twice}"), 1);
    assert_ne!(edited[2], lines[2]);
    std::fs::write(&log, edited.join("\n") + "\n").unwrap();
    let want = format!("{l}: line 3: run line: changed since schedlab wrote it");
    let e = fails(&[
        "compare",
        &file,
        "--iterations",
        "2",
        "--resume",
        "--log",
        l,
    ]);
    assert!(e.contains(&want), "{e}");
    assert_eq!(
        read(&log),
        edited.join("\n") + "\n",
        "the log is left alone"
    );
    let e = fails(&["compare", "--merge", l]);
    assert!(e.contains(&want), "{e}");
}

/// A run log that cannot be created is named once, in one line (the I/O
/// error was printed twice).
#[test]
fn a_log_that_cannot_be_created_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "tiny.toml", TINY);
    let e = fails(&["compare", &file, "--log", "/nonexistent/x.jsonl"]);
    assert!(
        e.starts_with("schedlab: error: /nonexistent/x.jsonl: "),
        "{e}"
    );
    assert_eq!(e.matches("(os error 2)").count(), 1, "{e}");
}

/// A few simulated seconds of compute on two CPUs (a handful of events).
const SPIN: &str = r#"
name = "spin"
iterations = 1
[run]
machine = "xeon-12c24t"
cpus = "0-1"
benchmark = "spin"
tasks = 2
work_ms = 1500
[[variant]]
name = "a"
"#;

/// The bounds a run's messages tell the user to raise are `compare`'s own
/// options, taken and checked as `sim` takes them, and applied to every
/// simulated run of the experiment.
#[test]
fn compare_takes_the_run_bounds_its_messages_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiny = write(d, "tiny.toml", TINY);
    let spin = write(d, "spin.toml", SPIN);
    let log = d.join("x.runs.jsonl");
    let l = log.to_str().unwrap();
    let e = fails(&["compare", &tiny, "--max-events", "1000", "--log", l]);
    assert!(
        e.contains("--max-events: the run reached the limit of 1000 events")
            && e.trim_end().ends_with("(raise it with --max-events N)"),
        "{e}"
    );
    let e = fails(&["compare", &spin, "--time-limit", "1", "--log", l]);
    assert!(
        e.contains("--time-limit: the run reached the simulated-time limit of 1 s")
            && e.trim_end().ends_with("(raise it with --time-limit S)"),
        "{e}"
    );
    let big = write(
        d,
        "big.toml",
        &TINY
            .replace("fds = 4", "fds = 40")
            .replace("groups = [1, 3]", "groups = [20]"),
    );
    let e = fails(&["compare", &big, "--max-memory", "1", "--log", l]);
    assert!(
        e.trim_end().ends_with("(raise it with --max-memory MIB)"),
        "{e}"
    );
    // raised, the same runs finish
    let out = run(&["compare", &spin, "--time-limit", "3", "--log", l]);
    assert!(out.starts_with("Verdict on spin"), "{out}");
    run(&["compare", &tiny, "--max-events", "100000000", "--log", l]);
    // the same validation as sim's, in the same words
    for (flag, bad) in [
        ("--time-limit", "0"),
        ("--time-limit", "1000000001"),
        ("--max-events", "0"),
        ("--max-memory", "x"),
    ] {
        let c = fails(&["compare", &tiny, flag, bad, "--log", l]);
        let s = fails(&["sim", "hackbench", flag, bad]);
        assert_eq!(c, s, "{flag} {bad}");
        assert!(c.contains(flag), "{c}");
    }
}
