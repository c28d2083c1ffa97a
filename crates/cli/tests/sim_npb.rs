//! `schedlab sim npb`: the NPB report lines, the JSON record, bad input,
//! and the built-in experiment's quick run.

mod common;
use common::{fails, json, run};

/// IS class S prints NPB's report and runs in a moment.
#[test]
fn is_class_s_prints_the_npb_report() {
    let out = run(&[
        "sim",
        "npb",
        "is",
        "--class",
        "S",
        "--machine",
        "broadwell-ep",
    ]);
    for line in [
        " IS Benchmark Completed.",
        " Class           =                        S",
        " Size            =                    65536",
        " Iterations      =                       10",
        " Total threads   =                       88",
        " Operation type  =              keys ranked",
        " Verification    =    NOT PERFORMED (simulated)",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    assert!(out.contains(" Time in seconds = "), "{out}");
    assert!(out.contains(" Mop/s total     = "), "{out}");
}

/// `--json` has the npb object; `--threads` is OMP_NUM_THREADS; the same
/// command gives the same record.
#[test]
fn json_record_names_the_run() {
    let args = [
        "sim",
        "npb",
        "lu",
        "--class",
        "S",
        "--threads",
        "6",
        "--machine",
        "xeon-12c24t",
    ];
    let a = json(&args);
    let npb = &a["npb"];
    assert_eq!(npb["bench"], "lu");
    assert_eq!(npb["class"], "S");
    assert_eq!(npb["threads"], 6);
    let t = npb["time_s"].as_f64().unwrap();
    assert!(t > 0.0 && t < 1.0, "{t}");
    assert!(npb["mops_total"].as_f64().unwrap() > 0.0);
    assert_eq!(a["time_s"], npb["time_s"]);
    assert_eq!(a["run"]["workload"]["bench"], "lu");
    let b = json(&args);
    assert_eq!(a["npb"], b["npb"]);
    assert_eq!(a["numa"], b["numa"]);
}

/// Unknown kernels and classes, and a zero thread count, are one line and
/// exit status 2.
#[test]
fn bad_input_is_one_line() {
    let e = fails(&["sim", "npb", "ft"]);
    assert!(
        e.contains("unknown NPB kernel \"ft\"") && e.contains("bt, cg"),
        "{e}"
    );
    let e = fails(&["sim", "npb", "bt", "--class", "E"]);
    assert!(e.contains("unknown NPB class \"E\""), "{e}");
    let e = fails(&["sim", "npb", "bt", "--threads", "0"]);
    assert!(e.contains("--threads"), "{e}");
}

/// The built-in experiment's quick run prints its table.
#[test]
fn numa_scan_stagger_quick_prints_a_table() {
    let out = run(&[
        "compare",
        "builtin:numa-scan-stagger",
        "--quick",
        "--iterations",
        "1",
    ]);
    for s in [
        "4.18",
        "stagger",
        "time-bt",
        "system-time-ua",
        "numa-hint-faults-cg",
        "numa-huge-pmd-updates-bt",
        "numa-page-range-updates-sp",
        "numa-pages-migrated-lu",
    ] {
        assert!(out.contains(s), "missing {s} in\n{out}");
    }
}
