//! Provenance of `schedlab sim --json` and `schedlab compare --json`, and
//! `schedlab sim --replay`: a result file says which run made it and
//! reruns it.

mod common;
use common::{fails, run, schedlab};
use serde_json::Value;
use std::path::Path;

/// One small run of every benchmark.
const RUNS: &[&[&str]] = &[
    &[
        "hackbench",
        "-g",
        "1",
        "-l",
        "10",
        "--feature",
        "sis_util=off",
    ],
    &["spin", "-n", "4", "-w", "5", "--cpus", "0-3"],
    &["schbench", "-r", "1", "-m", "1", "-t", "2"],
    &["tbench", "2", "-t", "1", "--warmup", "0"],
    &["falseshare", "-n", "1000", "--cpus", "0,4"],
];

fn sim_args<'a>(bench: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sim"];
    a.extend_from_slice(bench);
    a.extend_from_slice(&["--machine", "xeon-12c24t", "--seed", "3"]);
    a.extend_from_slice(extra);
    a
}

/// The record without the lines of the fields that measure the host
/// (`wall_s`, `events_per_s`: the replay measures its own).
fn without_host_lines(json: &str) -> String {
    json.lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with("\"wall_s\":") && !l.starts_with("\"events_per_s\":")
        })
        .map(|l| format!("{}\n", l.trim_end_matches(',')))
        .collect()
}

fn replay(file: &Path, extra: &[&str]) -> std::process::Output {
    schedlab()
        .args(["sim", "--replay", file.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn every_benchmark_replays_to_the_same_json_and_text() {
    let dir = tempfile::tempdir().unwrap();
    for bench in RUNS {
        let json = run(&sim_args(bench, &["--json"]));
        let text = run(&sim_args(bench, &[]));
        let file = dir.path().join(format!("{}.json", bench[0]));
        std::fs::write(&file, &json).unwrap();

        let out = replay(&file, &[]);
        assert!(out.status.success(), "{bench:?}: {:?}", out);
        assert!(out.stderr.is_empty(), "{bench:?}: {:?}", out);
        let again = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            without_host_lines(&again),
            without_host_lines(&json),
            "{bench:?}"
        );
        // every line but the host's is the same byte for byte, and the
        // host's fields are there, measured again
        assert_eq!(again.lines().count(), json.lines().count(), "{bench:?}");
        let v: Value = serde_json::from_str(&again).unwrap();
        assert!(v["wall_s"].as_f64().unwrap() > 0.0, "{bench:?}");

        let out = replay(&file, &["--replay-format", "text"]);
        assert!(out.status.success(), "{bench:?}: {:?}", out);
        assert_eq!(String::from_utf8(out.stdout).unwrap(), text, "{bench:?}");
    }
}

#[test]
fn sim_json_records_schedlab_the_run_and_the_kernel() {
    let v: Value = serde_json::from_str(&run(&sim_args(
        RUNS[0],
        &[
            "--json",
            "--kernel",
            "linux-5.12",
            "--feature",
            "sis_prop=on",
            "--feature",
            "wa_bias=off",
            "--kernel-config",
            "SCHED_CLUSTER=n",
        ],
    )))
    .unwrap();
    assert_eq!(v["schedlab"]["version"], env!("CARGO_PKG_VERSION"));
    let commit = v["schedlab"]["commit"].as_str().unwrap();
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    let r = &v["run"];
    assert_eq!(r["machine"], "xeon-12c24t");
    assert_eq!(r["kernel"], "linux-5.12");
    assert_eq!(r["seed"], 3);
    assert_eq!(r["features"]["sis_util"], "off");
    assert_eq!(r["features"]["sis_prop"], "on");
    assert_eq!(r["kernel_config"]["SCHED_CLUSTER"], "n");
    assert_eq!(r["workload"]["benchmark"], "hackbench");
    assert_eq!(r["workload"]["groups"], 1);
    // 5.12 has SIS_PROP on, SIS_UTIL off and no cluster level: only
    // WA_BIAS differs from the profile
    assert_eq!(v["kernel"], "linux-5.12+wa_bias=off");
    // sched_ext's default uses no kernel profile
    let v: Value =
        serde_json::from_str(&run(&sim_args(RUNS[1], &["--json", "--policy", "scx"]))).unwrap();
    assert_eq!(v["run"]["policy"], "scx");
    assert!(v.get("kernel").is_none());
}

#[test]
fn a_replay_that_differs_says_so_with_exit_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let json = run(&sim_args(RUNS[0], &["--json"]));
    let mut v: Value = serde_json::from_str(&json).unwrap();
    v["migrations"] = Value::from(v["migrations"].as_u64().unwrap() + 1);
    v["schedlab"]["commit"] = Value::from("0000000000000000000000000000000000000000");
    let file = dir.path().join("r.json");
    std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = replay(&file, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("differs from the recorded result in migrations"),
        "{err}"
    );
    assert!(
        err.contains("commit 0000000000000000000000000000000000000000"),
        "{err}"
    );
    // the rerun is printed all the same
    assert_eq!(
        without_host_lines(&String::from_utf8(out.stdout).unwrap()),
        without_host_lines(&json)
    );
}

#[test]
fn a_file_without_a_run_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let none = f("none.json", "{\"time_s\": 1}");
    assert!(fails(&["sim", "--replay", &none]).contains("no \"run\" field"));
    let bad = f("bad.json", "not json");
    assert!(fails(&["sim", "--replay", &bad]).contains("not a JSON result"));
    let unknown = f(
        "unknown.json",
        r#"{"run": {"workload": {"benchmark": "hackbench"}, "bogus": 1}}"#,
    );
    assert!(fails(&["sim", "--replay", &unknown]).contains("bad \"run\" field"));
    let native = f(
        "native.json",
        r#"{"run": {"mode": "native", "workload": {"benchmark": "hackbench"}}}"#,
    );
    assert!(fails(&["sim", "--replay", &native]).contains("only simulated runs replay"));
    fails(&["sim", "--replay", "/nonexistent/r.json"]);
    fails(&["sim", "--replay", &none, "hackbench"]);
    fails(&["sim", "--replay-format", "text"]);
}

#[test]
fn compare_json_records_schedlab_and_every_cells_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        r#"
name = "prov"
iterations = 1
metrics = ["time"]
[run]
machine = "xeon-12c24t"
cpus = "0-3"
benchmark = "hackbench"
pipe = true
fds = 2
loops = 5
[[variant]]
name = "latest"
[[variant]]
name = "no-sis-util"
features = { sis_util = "off", wa_idle = "on" }
"#,
    )
    .unwrap();
    let j = dir.path().join("r.json");
    run(&[
        "compare",
        exp.to_str().unwrap(),
        "--jobs",
        "1",
        "--json",
        j.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["schedlab"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(v["schedlab"]["commit"].is_string());
    let cells = v["experiment"]["cells"].as_array().unwrap();
    let kernels: Vec<&str> = cells
        .iter()
        .map(|c| c["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(kernels, ["latest", "latest+sis_util=off"]);
    assert_eq!(cells[1]["spec"]["features"]["wa_idle"], "on");
}
