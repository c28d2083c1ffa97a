//! `schedlab sim rtapp FILE.json` from the outside: the per-thread table,
//! rt-app's logs in the log directory, `--json`, determinism, the examples,
//! and bad files (exit 2, one line naming the key).

mod common;
use common::{fails, json, run, schedlab};

const PERIODIC: &str = r#"{"global": {"duration": 1, "calibration": 10},
  "tasks": {"tick": {"instance": 2, "run": 1000, "timer": {"ref": "unique", "period": 10000}}}}"#;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn prints_a_table_writes_logs_and_is_deterministic() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "p.json", PERIODIC);
    let logs = d.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let args = [
        "sim",
        "rtapp",
        &f,
        "--machine",
        "host",
        "--logdir",
        logs.to_str().unwrap(),
    ];
    let out = run(&args);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("thread "), "{out}");
    assert!(lines[1].starts_with("tick-0 "), "{out}");
    assert!(lines[2].starts_with("tick-1 "), "{out}");
    // 10 % each: 1 ms of 10 ms
    let share: f64 = lines[1].split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!((9.9..=10.5).contains(&share), "{out}");
    let log = std::fs::read_to_string(logs.join("rt-app-tick-1.log")).unwrap();
    let mut l = log.lines();
    assert_eq!(l.next(), Some("# Policy : SCHED_OTHER priority : 0"));
    assert!(l
        .next()
        .unwrap()
        .starts_with("#idx     perf      run   period"));
    let row: Vec<&str> = l.next().unwrap().split_whitespace().collect();
    assert_eq!(row.len(), 11);
    assert_eq!(
        (row[0], row[1], row[8], row[9]),
        ("1", "100000", "1000", "10000")
    );
    assert_eq!(out, run(&args), "same command twice, same bytes");
}

#[test]
fn json_summarises_each_thread() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "p.json", PERIODIC);
    let v = json(&["sim", "rtapp", &f, "--machine", "host"]);
    assert_eq!(v["benchmark"], "rtapp");
    let t = &v["rtapp"]["threads"];
    assert_eq!(t[0]["thread"], "tick-0");
    assert!(t[0]["rows"].as_u64().unwrap() >= 98);
    assert!(t[1]["wu_lat_us"]["p99"].as_u64().unwrap() < 1000);
    assert_eq!(v["run"]["workload"]["file"], f.as_str());
    // no logdir given: no log written next to the file
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

#[test]
fn the_examples_run() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/rtapp");
    for f in ["periodic", "producer-consumer", "thread-pool", "phases"] {
        let path = format!("{root}/{f}.json");
        let v = json(&["sim", "rtapp", &path, "--machine", "host"]);
        let threads = v["rtapp"]["threads"].as_array().unwrap();
        assert!(threads.len() >= 2, "{f}");
        for t in threads {
            assert!(t["rows"].as_u64().unwrap() > 10, "{f}: {t}");
        }
    }
}

#[test]
fn bad_files_name_the_key() {
    let d = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            r#"{"tasks": {"t": {"run": 1, "walk": 3}}}"#,
            "`tasks.t.walk`: not supported",
        ),
        (
            r#"{"tasks": {"t": {"iorun": 3}}}"#,
            "`tasks.t.iorun`: not supported",
        ),
        (
            r#"{"tasks": {"t": {"run": 1, "fork": "x"}}}"#,
            "`tasks.t.fork`: not supported",
        ),
        (
            r#"{"tasks": {"t": {"policy": "SCHED_FIFO", "run": 1}}}"#,
            "SCHED_FIFO is not supported",
        ),
        (r#"{"tasks": {"t": {"run": 1}}"#, "not JSON"),
    ] {
        let f = write(d.path(), "bad.json", text);
        let e = fails(&["sim", "rtapp", &f, "--machine", "host"]);
        assert!(e.contains(want) && e.contains("bad.json"), "{text}: {e}");
    }
    let e = fails(&["sim", "rtapp", "/nonexistent/x.json"]);
    assert!(e.contains("/nonexistent/x.json"), "{e}");
    let f = write(d.path(), "ok.json", PERIODIC);
    let e = fails(&[
        "sim",
        "rtapp",
        &f,
        "--machine",
        "host",
        "--logdir",
        "/nonexistent",
    ]);
    assert!(e.contains("--logdir /nonexistent"), "{e}");
}

#[test]
fn mem_follows_the_memory_policy_and_phases_change_cpus() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "m.json",
        r#"{"tasks": {"w": {"cpus": [0], "loop": 10, "mem": 2097152, "run": 50}}}"#,
    );
    let period = |policy: &str| {
        let v = json(&[
            "sim",
            "rtapp",
            &f,
            "--machine",
            "xeon-12c24t",
            "--mem-policy",
            policy,
        ]);
        assert_eq!(
            v["numa"]["numa_local"].as_u64().unwrap() + v["numa"]["numa_other"].as_u64().unwrap(),
            512
        );
        v["time_ns"].as_u64().unwrap()
    };
    let (local, remote) = (period("membind=0"), period("membind=1"));
    assert!(
        remote > local * 3 / 2,
        "local {local} ns, remote {remote} ns"
    );
    // a phase set with no CPU the run may use is refused before the run
    let f = write(
        d.path(),
        "p.json",
        r#"{"tasks": {"t": {"phases": {"a": {"run": 10}, "b": {"cpus": [5], "run": 10}}}}}"#,
    );
    let e = fails(&["sim", "rtapp", &f, "--machine", "host", "--cpus", "0-1"]);
    assert!(e.contains("tasks.t.phases.b.cpus"), "{e}");
}

#[test]
fn native_without_rt_app_fails_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "p.json", PERIODIC);
    let exp = write(
        d.path(),
        "e.toml",
        &format!(
            "name = \"x\"\n[run]\nbenchmark = \"rtapp\"\nfile = {f:?}\n[[variant]]\nname = \"n\"\nmode = \"native\"\n"
        ),
    );
    let out = schedlab()
        .args(["compare", &exp])
        .env("PATH", d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rt-app is not installed"), "{err}");
}

/// The printed table and one thread's log, pinned: a producer and a
/// consumer on the 2-CPU host preset.
#[test]
fn text_and_log_snapshot() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "pc.json",
        r#"{"global": {"duration": 1, "calibration": 12, "log_basename": "pc"},
            "tasks": {
              "producer": {"lock": "q", "run": 500, "signal": "item", "unlock": "q",
                           "timer": {"ref": "unique", "period": 100000}},
              "consumer": {"lock": "q", "wait": {"ref": "item", "mutex": "q"}, "unlock": "q", "run": 3000}}}"#,
    );
    let out = run(&[
        "sim",
        "rtapp",
        &f,
        "--machine",
        "host",
        "--logdir",
        d.path().to_str().unwrap(),
    ]);
    let log = std::fs::read_to_string(d.path().join("pc-consumer-1.log")).unwrap();
    insta::assert_snapshot!(format!("{out}\n--- pc-consumer-1.log\n{log}"));
}
