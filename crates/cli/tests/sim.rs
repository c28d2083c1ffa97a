//! `schedlab sim hackbench` from the outside.

mod common;
use common::{json, run, schedlab};

const BASE: &[&str] = &[
    "sim",
    "hackbench",
    "-p",
    "-T",
    "-g",
    "4",
    "-l",
    "100",
    "--machine",
    "kunpeng920-node",
    "--seed",
    "1",
];

#[test]
fn prints_the_rt_tests_lines_and_is_deterministic() {
    let a = run(BASE);
    let lines: Vec<&str> = a.lines().collect();
    assert_eq!(
        lines[0],
        "Running in threaded mode with 4 groups using 40 file descriptors each (== 160 tasks)"
    );
    assert_eq!(lines[1], "Each sender will pass 100 messages of 100 bytes");
    let t = lines[2].strip_prefix("Time: ").expect("Time line");
    let (s, ms) = t.split_once('.').unwrap();
    assert!(
        s.parse::<u64>().is_ok() && ms.len() == 3 && ms.parse::<u64>().is_ok(),
        "{t}"
    );
    assert!(lines[3].starts_with("Machine (kunpeng920-node): CPUs "));
    assert!(lines[4].starts_with("Placement ("));
    assert_eq!(a, run(BASE), "same command twice must print the same bytes");
}

#[test]
fn json_has_the_fields_and_byte_totals() {
    let v = json(BASE);
    for f in [
        "benchmark",
        "time_s",
        "sim_ns",
        "events",
        "wall_s",
        "events_per_s",
        "messages",
        "bytes_written",
        "bytes_read",
        "wakeups",
        "migrations",
        "context_switches",
        "placement",
        "cpus",
    ] {
        assert!(v.get(f).is_some(), "missing {f}");
    }
    for f in ["stages", "probes", "probe_cost_ns", "decision_digest"] {
        assert!(v["placement"].get(f).is_some(), "missing placement.{f}");
    }
    let total = 4 * 20 * 20 * 100 * 100u64;
    assert_eq!(v["bytes_written"].as_u64(), Some(total));
    assert_eq!(v["bytes_read"].as_u64(), Some(total));
    assert_eq!(v["benchmark"], "hackbench");
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 24);
    let sim_ns = v["sim_ns"].as_u64().unwrap();
    for c in cpus {
        assert_eq!(
            c["busy_ns"].as_u64().unwrap() + c["idle_ns"].as_u64().unwrap(),
            sim_ns
        );
    }
}

#[test]
fn time_grows_with_groups_and_with_fewer_cpus() {
    let time = |g: &str, extra: &[&str]| {
        let mut a = vec![
            "sim",
            "hackbench",
            "-p",
            "-T",
            "-g",
            g,
            "-l",
            "100",
            "--machine",
            "kunpeng920-node",
        ];
        a.extend_from_slice(extra);
        json(&a)["time_s"].as_f64().unwrap()
    };
    let t: Vec<f64> = ["1", "2", "4", "8"].iter().map(|g| time(g, &[])).collect();
    assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
    assert!(time("4", &["--node", "0"]) == t[2]);
}

#[test]
fn four_cpus_are_slower_than_twenty_four() {
    // the criterion: -p -T -g 4 -l 500 on kunpeng920-node
    let time = |extra: &[&str]| {
        let mut a = vec![
            "sim",
            "hackbench",
            "-p",
            "-T",
            "-g",
            "4",
            "-l",
            "500",
            "--machine",
            "kunpeng920-node",
        ];
        a.extend_from_slice(extra);
        json(&a)["time_s"].as_f64().unwrap()
    };
    let (all, four) = (time(&[]), time(&["--cpus", "0-3"]));
    assert!(four > all, "4 CPUs {four} vs 24 CPUs {all}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["sim", "hackbench", "-g", "0"][..],
        &["sim", "hackbench", "-l", "-1"],
        &["sim", "hackbench", "--machine", "nosuch"],
        &["sim", "hackbench", "--cpus", "0-99"],
        &["sim", "hackbench", "--cpus", "3-x"],
        &["sim", "hackbench", "--node", "7"],
        &["sim", "hackbench", "--bogus"],
        &["sim", "nosuchbench"],
        &["sim", "hackbench", "--kernel", "bogus"],
        &["sim", "hackbench", "--feature", "nosuch=on"],
        &["sim", "hackbench", "--feature", "sis_util=maybe"],
        &["sim", "hackbench", "--feature", "sis_util"],
        &[
            "sim",
            "hackbench",
            "--policy",
            "scx",
            "--feature",
            "sis_util=on",
        ],
        &["sim"],
    ] {
        let out = schedlab().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("schedlab: error: "), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// Every profile before 6.6 runs CFS, every later one EEVDF, and the list
/// says so.
#[test]
fn list_kernels_shows_each_profiles_fair_class() {
    let k = run(&["sim", "--list-kernels"]);
    let mut seen = 0;
    for l in k.lines() {
        let mut w = l.split_whitespace();
        let (Some(name), Some(class)) = (w.next(), w.next()) else {
            continue;
        };
        let version = if name == "latest" {
            Some((7, 0))
        } else {
            name.strip_prefix("linux-").map(|v| {
                let mut p = v.trim_end_matches("-rc1").split('.');
                let a: u32 = p.next().unwrap().parse().unwrap();
                let b: u32 = p.next().unwrap().parse().unwrap();
                (a, b)
            })
        };
        let Some(v) = version else { continue };
        let want = if v >= (6, 6) { "EEVDF" } else { "CFS" };
        assert_eq!(class, want, "{l}");
        seen += 1;
    }
    assert!(seen >= 19, "{k}");
}

#[test]
fn lists_kernels_and_features() {
    let k = run(&["sim", "--list-kernels"]);
    for name in [
        "linux-4.17",
        "linux-4.18",
        "linux-5.6",
        "linux-5.7",
        "linux-5.12",
        "linux-5.13",
        "linux-5.19",
        "linux-6.6",
        "linux-6.7",
        "linux-2.6.38",
        "linux-5.5",
        "latest",
    ] {
        assert!(
            k.lines().any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing"
        );
    }
    // the versions between the profiles are accepted, and the list says so
    assert!(
        k.contains("any other linux-X.Y from 4.16 to 6.14 is accepted"),
        "{k}"
    );
    for (kernel, ok) in [
        ("linux-4.16", true),
        ("linux-6.1", true),
        ("linux-6.14", true),
        ("linux-4.15", false),
        ("linux-6.15", false),
    ] {
        let out = schedlab()
            .args(["sim", "hackbench", "-g", "1", "-f", "2", "-l", "2"])
            .args(["--kernel", kernel])
            .output()
            .unwrap();
        assert_eq!(out.status.success(), ok, "{kernel}: {out:?}");
    }
    let f = run(&["sim", "--list-features"]);
    for name in [
        "sis_util",
        "sis_prop",
        "select_idle_core_early_break",
        "test_idle_cores_smt_gate",
        "cluster_scan",
        "vcpu_preempt_check",
        "sd_idle_legacy",
        "lb_algorithm",
        "load_balance",
        "newidle_gate",
    ] {
        assert!(
            f.lines().any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing"
        );
    }
}

#[test]
fn kernel_and_feature_change_the_run_and_costs_off_keeps_decisions() {
    let base = [
        "sim",
        "hackbench",
        "-p",
        "-T",
        "-g",
        "2",
        "-l",
        "100",
        "--machine",
        "kunpeng920-node",
        "--kernel",
        "linux-5.12",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        json(&a)
    };
    let off = with(&[
        "--feature",
        "test_idle_cores_smt_gate=off",
        "--costs",
        "off",
    ]);
    let on = with(&["--feature", "test_idle_cores_smt_gate=on", "--costs", "off"]);
    assert_eq!(
        off["placement"]["decision_digest"],
        on["placement"]["decision_digest"]
    );
    assert!(off["placement"]["has_idle_cores_reads"].as_u64().unwrap() > 0);
    assert_eq!(on["placement"]["has_idle_cores_reads"].as_u64(), Some(0));
    let scx = with(&["--policy", "scx"]);
    assert_eq!(scx["placement"]["policy"], "scx-default");
    assert_eq!(
        off["placement"]["policy"],
        "linux-5.12+test_idle_cores_smt_gate=off"
    );
}

/// The text report of a small run, byte for byte (review changes with
/// `cargo insta review`: any change to the model shows up here).
#[test]
fn text_report_snapshot() {
    let out = run(&[
        "sim",
        "hackbench",
        "-p",
        "-T",
        "-g",
        "1",
        "-l",
        "200",
        "--machine",
        "kunpeng920-node",
    ]);
    insta::assert_snapshot!(out);
}

/// The load balancer through the CLI: the oldest balancer profile runs, the
/// report names the balancer, `--json` carries the `balance` object, and a
/// bad balancer toggle value is one line with exit status 2.
#[test]
fn balancer_profiles_report_and_json() {
    let out = run(&[
        "sim",
        "hackbench",
        "-g",
        "2",
        "-l",
        "50",
        "--machine",
        "xeon-12c24t",
        "--kernel",
        "linux-2.6.38",
        "--check",
    ]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("Balance (linux-legacy): ")),
        "{out}"
    );
    const SPIN: &[&str] = &[
        "sim",
        "spin",
        "-n",
        "16",
        "-w",
        "20",
        "--machine",
        "kvm-8vcpu",
    ];
    let v = json(&[SPIN, &["--check"]].concat());
    let b = &v["balance"];
    assert_eq!(b["balancer"], "linux");
    assert!(b["moved"].as_u64().unwrap() > 0);
    assert!(b["first_all_busy_ns"].as_u64().is_some());
    for k in [
        "idle_while_work_waits_ns",
        "cost_ns",
        "ilb_kicks",
        "active_kicks",
        "newidle_entries",
    ] {
        assert!(b[k].is_u64(), "balance.{k} missing");
    }
    let mc = &b["levels"]["MC"];
    for kind in ["periodic", "newidle", "nohz", "active"] {
        for f in ["calls", "balanced", "imbalanced", "moved", "failed"] {
            assert!(mc[kind][f].is_u64(), "levels.MC.{kind}.{f} missing");
        }
    }
    assert_eq!(v["params"]["tasks"], 16);
    let spin = run(SPIN);
    let lines: Vec<&str> = spin.lines().collect();
    assert_eq!(
        lines[0],
        "16 compute-only tasks of 20 ms started on one CPU"
    );
    assert!(lines[1].starts_with("Time: "));
    let out = schedlab()
        .args(["sim", "spin", "--feature", "lb_algorithm=fast"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("lb_algorithm"), "{err}");
}

#[test]
fn stats_go_to_stderr_and_leave_stdout_unchanged() {
    let mut args = BASE.to_vec();
    args.push("--stats");
    let out = schedlab().args(&args).output().expect("runs");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        run(BASE),
        "--stats must not change what stdout prints"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    let line = err.lines().find(|l| l.starts_with("stats: ")).expect(&err);
    let field = |k: &str| -> f64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} in {line}"))
            .parse()
            .unwrap_or_else(|_| panic!("{k} is a number in {line}"))
    };
    let events = field("events");
    let v = json(BASE);
    assert_eq!(events, v["events"].as_u64().unwrap() as f64);
    // the split adds up: engine + placement + balancing = the whole
    let sum = field("engine_ns_per_event")
        + field("placement_ns_per_event")
        + field("balance_ns_per_event");
    assert!((sum - field("ns_per_event")).abs() < 0.5, "{line}");
    assert!(field("balance_rq_reads_per_event") > 0.0, "{line}");
    assert!(field("peak_rss_mib") > 0.0, "{line}");
}

/// `--feature` as the kernel's sched_features spells it (upper case,
/// `NO_` for off, as written to /sys/kernel/debug/sched/features) is the
/// same run as schedlab's own spelling; an unknown bare name is one line.
#[test]
fn features_in_the_kernels_spelling() {
    let run_with = |feature: &[&str]| {
        let mut a = vec![
            "sim",
            "hackbench",
            "-p",
            "-T",
            "-g",
            "1",
            "-l",
            "20",
            "--machine",
            "kunpeng920-node",
            "--kernel",
            "linux-5.15",
            "--costs",
            "off",
        ];
        for f in feature {
            a.extend_from_slice(&["--feature", f]);
        }
        json(&a)
    };
    let ours = run_with(&["sis_prop=off", "wa_bias=on"]);
    assert_eq!(
        ours["kernel"], "linux-5.15+sis_prop=off",
        "{}",
        ours["kernel"]
    );
    for kernels in [["SIS_PROP=off", "WA_BIAS=on"], ["NO_SIS_PROP", "WA_BIAS"]] {
        let v = run_with(&kernels);
        assert_eq!(v["kernel"], ours["kernel"], "{kernels:?}");
        assert_eq!(
            v["placement"]["decision_digest"], ours["placement"]["decision_digest"],
            "{kernels:?}"
        );
    }
    // a kernel name that schedlab spells differently (CFS BASE_SLICE)
    let v = run_with(&["NO_BASE_SLICE"]);
    assert_eq!(v["kernel"], "linux-5.15+cfs_base_slice=off");
    let e = common::fails(&["sim", "hackbench", "--feature", "NO_SUCH_FEATURE"]);
    assert!(
        e.contains("--feature \"NO_SUCH_FEATURE\": expected NAME=VALUE"),
        "{e}"
    );
    let e = common::fails(&["sim", "hackbench", "--feature", "SIS_PROP=maybe"]);
    assert!(e.contains("--feature sis_prop"), "{e}");
}
