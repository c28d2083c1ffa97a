//! `schedlab sim tbench` from the outside: dbench's lines, `--json`,
//! determinism, and bad input (exit 2, one line).

mod common;
use common::{fails, run};
use serde_json::Value;

const BASE: &[&str] = &[
    "sim",
    "tbench",
    "4",
    "-t",
    "3",
    "--machine",
    "kunpeng920-node",
];

#[test]
fn prints_dbench_lines_and_is_deterministic() {
    let a = run(BASE);
    let lines: Vec<&str> = a.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "Running for 3 seconds with load 'builtin' and minimum warmup 0 secs",
            "4 of 4 processes prepared for launch   0 sec",
            "releasing clients",
        ]
    );
    for (i, s) in [(3, "1"), (4, "2")] {
        let f: Vec<&str> = lines[i].split_whitespace().collect();
        assert_eq!(
            (f[0], f[3], f[4], f[5], f[6], f[7]),
            ("4", "MB/sec", "execute", s, "sec", "latency"),
            "{}",
            lines[i]
        );
        assert!(f[1].parse::<u64>().is_ok() && f[2].parse::<f64>().is_ok());
        assert!(lines[i].ends_with(" ms"));
    }
    assert_eq!(lines[5], "   4  cleanup   3 sec");
    assert_eq!(lines[6], "   0  cleanup   3 sec");
    assert_eq!(lines[8], " Operation      Count    AvgLat    MaxLat");
    assert_eq!(lines[9], " ----------------------------------------");
    let tp = lines
        .iter()
        .position(|l| l.starts_with("Throughput "))
        .expect("Throughput line");
    assert_eq!(lines[tp - 1], "");
    let t = lines[tp];
    assert!(
        t.contains(" MB/sec  4 clients  4 procs  max_latency=") && t.ends_with(" ms"),
        "{t}"
    );
    // the simulator's summary follows dbench's lines
    assert!(lines[tp + 1].starts_with("Machine (kunpeng920-node): CPUs "));
    assert_eq!(a, run(BASE), "same command twice must print the same bytes");
}

#[test]
fn json_is_valid_and_matches_the_text() {
    let mut args = BASE.to_vec();
    args.push("--json");
    let v: Value = serde_json::from_str(&run(&args)).unwrap();
    assert_eq!(v["benchmark"], "tbench");
    assert_eq!(v["mode"], "sim");
    for f in [
        "throughput_mb_s",
        "max_latency_ms",
        "ops",
        "clients",
        "procs",
        "execute_s",
        "bytes",
        "loadfile",
        "time_s",
        "sim_ns",
        "wall_s",
        "placement",
        "cpus",
        "params",
    ] {
        assert!(v.get(f).is_some(), "missing {f}");
    }
    assert_eq!(v["sim_ns"], 3_000_000_000u64);
    assert_eq!(v["params"]["clients"], 4);
    let text = run(BASE);
    let line = text.lines().find(|l| l.starts_with("Throughput ")).unwrap();
    let printed: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let x = v["throughput_mb_s"].as_f64().unwrap();
    assert!((printed - x).abs() <= x * 1e-5, "{printed} vs {x}");
    let lat = format!(
        "max_latency={:.3} ms",
        v["max_latency_ms"].as_f64().unwrap()
    );
    assert!(line.ends_with(&lat), "{line} vs {lat}");
    let reads = &v["ops"]["ReadX"];
    assert!(text.contains(&format!(
        "\n ReadX      {:>9} ",
        reads["count"].as_u64().unwrap()
    )));
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let e = fails(&["sim", "tbench", "0", "-t", "1"]);
    assert!(e.contains("NCLIENTS"), "{e}");
    let e = fails(&[
        "sim",
        "tbench",
        "2",
        "-t",
        "1",
        "--loadfile",
        "/nonexistent/client.txt",
    ]);
    assert!(e.contains("--loadfile /nonexistent/client.txt: "), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.txt");
    std::fs::write(&path, "Close 1 NT_STATUS_OK\n\nFrobnicate 3\n").unwrap();
    let p = path.to_str().unwrap();
    let e = fails(&["sim", "tbench", "2", "-t", "1", "-c", p]);
    assert!(
        e.contains(&format!(
            "--loadfile {p}: line 3: unknown operation \"Frobnicate\""
        )),
        "{e}"
    );
    let e = fails(&["sim", "tbench", "2", "-t", "0"]);
    assert!(e.contains("--time"), "{e}");
    let e = fails(&["sim", "tbench", "2", "-t", "1", "--costs", "off"]);
    assert!(e.contains("--costs off"), "{e}");
    let e = fails(&["sim", "tbench", "2", "-t", "1", "--machine", "nosuch"]);
    assert!(e.contains("--machine"), "{e}");
    fails(&["sim", "tbench"]);
}

#[test]
fn common_flags_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.txt");
    std::fs::write(
        &path,
        "NTCreateX \"\\clients\\client1\\f\" 0x1 0x2 1 NT_STATUS_OK\nReadX 1 0 4096 4096 NT_STATUS_OK\nClose 1 NT_STATUS_OK\n",
    )
    .unwrap();
    let out = run(&[
        "sim",
        "tbench",
        "2",
        "--time",
        "1",
        "--warmup",
        "1",
        "--loadfile",
        path.to_str().unwrap(),
        "--machine",
        "kvm-8vcpu",
        "--cpus",
        "0-3",
        "--kernel",
        "linux-5.15",
        "--feature",
        "sis_util=off",
        "--seed",
        "3",
        "--check",
    ]);
    assert!(out.contains(" MB/sec  warmup   1 sec  latency "), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with(" ----"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(rows, ["NTCreateX", "Close", "ReadX"]);
    let v: Value = serde_json::from_str(&run(&[
        "sim", "tbench", "1", "-t", "1", "--policy", "scx", "--node", "0", "--json",
    ]))
    .unwrap();
    assert_eq!(v["placement"]["policy"], "scx-default");
}
