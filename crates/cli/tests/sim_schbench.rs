//! `schedlab sim schbench` from the outside.

mod common;
use common::{run, schedlab};
use serde_json::Value;

const BASE: &[&str] = &[
    "sim",
    "schbench",
    "-m",
    "2",
    "-t",
    "8",
    "-r",
    "2",
    "-w",
    "1",
    "--machine",
    "kunpeng920-node",
];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    let mut a = BASE.to_vec();
    a.extend_from_slice(extra);
    a
}

#[test]
fn prints_schbench_tables_and_is_deterministic() {
    let a = run(BASE);
    let lines: Vec<&str> = a.lines().collect();
    // -w is ignored under a 30 s runtime (schbench does so): no warm-up
    // line, and the tables cover the whole run
    assert!(
        lines[0].starts_with("Wakeup Latencies percentiles (usec) runtime 2 (s) ("),
        "{a}"
    );
    for (i, row) in [
        (1, "\t  50.0th: "),
        (2, "\t  90.0th: "),
        (3, "\t* 99.0th: "),
        (4, "\t  99.9th: "),
    ] {
        assert!(lines[i].starts_with(row), "{a}");
        assert!(lines[i].ends_with(" samples)"), "{a}");
    }
    assert!(lines[5].starts_with("\t  min="), "{a}");
    assert!(lines[6].starts_with("Request Latencies percentiles (usec) runtime 2 (s) ("));
    assert_eq!(
        lines[12],
        "RPS percentiles (requests) runtime 2 (s) (2 total samples)"
    );
    assert!(lines[14].starts_with("\t* 50.0th: "), "{a}");
    assert!(lines[17].starts_with("average rps: "), "{a}");
    assert!(lines[18].starts_with("Machine (kunpeng920-node): CPUs "));
    assert!(lines[19].starts_with("Placement ("));
    assert_eq!(a, run(BASE), "same command twice must print the same bytes");
}

#[test]
fn json_has_the_common_fields_and_the_tables() {
    let args = with(&["--json"]);
    let text = run(&args);
    let v: Value = serde_json::from_str(&text).unwrap();
    for f in [
        "benchmark",
        "machine",
        "mode",
        "time_s",
        "sim_ns",
        "events",
        "wall_s",
        "events_per_s",
        "wakeups",
        "migrations",
        "context_switches",
        "placement",
        "balance",
        "cpus",
        "params",
        "version",
        "message_threads",
        "worker_threads",
        "runtime_s",
        "average_rps",
    ] {
        assert!(v.get(f).is_some(), "missing {f}");
    }
    assert_eq!(v["benchmark"], "schbench");
    assert_eq!(v["version"], "new");
    assert_eq!(v["time_s"], 2.0);
    // the same names as `schedlab bench schbench --json`
    for table in ["wakeup_latency_us", "request_latency_us"] {
        for k in ["p50", "p90", "p99", "p99.9", "min", "max", "samples"] {
            assert!(v[table][k].is_u64(), "{table}.{k}: {}", v[table]);
        }
        let p = |k: &str| v[table][k].as_u64().unwrap();
        assert!(p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("p99.9"));
        assert!(p("samples") > 0);
    }
    for k in ["p20", "p50", "p90", "min", "max", "samples"] {
        assert!(v["rps"][k].is_u64(), "rps.{k}");
    }
    assert_eq!(v["rps"]["samples"], 2);
    // deterministic but for the two host measurements
    let mut w: Value = serde_json::from_str(&run(&args)).unwrap();
    let mut v = v;
    for x in [&mut v, &mut w] {
        x.as_object_mut().unwrap().remove("wall_s");
        x.as_object_mut().unwrap().remove("events_per_s");
    }
    assert_eq!(v, w);
}

#[test]
fn old_version_and_default_workers() {
    let a = run(&[
        "sim",
        "schbench",
        "--version",
        "old",
        "-t",
        "4",
        "-r",
        "1",
        "-s",
        "2000",
        "-c",
        "2000",
    ]);
    let lines: Vec<&str> = a.lines().collect();
    assert_eq!(lines[0], "Latency percentiles (usec)");
    assert!(lines[5].starts_with("\t*99.0th: "), "{a}");
    assert!(lines[8].starts_with("\tmin="), "{a}");
    assert!(lines[9].starts_with("Machine ("), "{a}");
    // the new schbench picks one worker per CPU of the machine and says so
    let a = run(&["sim", "schbench", "-r", "1", "--machine", "kvm-8vcpu"]);
    assert!(a.starts_with("setting worker threads to 8\n"), "{a}");
}

#[test]
fn bad_input_is_one_line_naming_the_flag_and_exit_2() {
    for (args, flag) in [
        (&["--version", "older"][..], "--version"),
        (&["-m", "0"], "-m"),
        (&["-m", "-1"], "-m"),
        (&["-t", "0"], "-t"),
        (&["-r", "0"], "-r/--runtime"),
        (&["-A", "50"], "-A/--auto-rps"),
        (&["--version", "old", "-R", "100"], "-R/--rps"),
        (&["--split", "101"], "--split"),
        (&["-c", "100"], "-c/--cputime"),
        (&["--version", "old", "-w", "5"], "-w/--warmuptime"),
        (&["--version", "old", "-F", "64"], "-F"),
        (&["--version", "old", "-s", "3"], "-s/--sleeptime"),
        (&["-p", "10"], "-p"),
    ] {
        let mut a = vec!["sim", "schbench"];
        a.extend_from_slice(args);
        let out = schedlab().args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{a:?}: {err}");
        assert!(err.starts_with("schedlab: error: "), "{err}");
        assert!(err.contains(flag), "{a:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// RPS mode prints the closed loop's tables; on an uncontended machine the
/// RPS table sits at the requested rate; reruns are identical.
#[test]
fn rps_mode_prints_the_tables_at_the_requested_rate() {
    let args = [
        "sim",
        "schbench",
        "-R",
        "2000",
        "-m",
        "1",
        "-t",
        "8",
        "-r",
        "3",
        "--machine",
        "kunpeng920-node",
    ];
    let a = run(&args);
    assert_eq!(a, run(&args), "not deterministic");
    let lines: Vec<&str> = a.lines().collect();
    assert!(
        lines[0].starts_with("Wakeup Latencies percentiles (usec) runtime 3 (s) ("),
        "{a}"
    );
    assert!(
        lines[6].starts_with("Request Latencies percentiles (usec) runtime 3 (s) ("),
        "{a}"
    );
    assert!(
        lines[12].starts_with("RPS percentiles (requests) runtime 3 (s) ("),
        "{a}"
    );
    assert!(lines[17].starts_with("average rps: "), "{a}");
    // -t 24: each worker gets 84 requests a cycle, below the 128 limit
    let mut args = args.to_vec();
    args[7] = "24";
    let a = run(&args);
    let median: f64 = a.lines().nth(14).unwrap()["\t* 50.0th: ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((median - 2000.0).abs() <= 200.0, "{a}");
}
