//! Memory placement and NUMA balancing from the command line: the flags,
//! their errors, and the counters in `--json`.

mod common;
use common::{fails, json};

fn spin(work_ms: &str, extra: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "sim",
        "spin",
        "-n",
        "4",
        "-w",
        work_ms,
        "--mem-mib",
        "64",
        "--machine",
        "xeon-12c24t",
        "--node",
        "0",
    ];
    a.extend_from_slice(extra);
    json(&a)
}

/// Memory bound to the other node makes the same run slower; the counters
/// say where the pages went.
#[test]
fn membind_places_pages_and_remote_memory_is_slower() {
    let local = spin("200", &["--mem-policy", "membind=0"]);
    let remote = spin("200", &["--mem-policy", "membind=1"]);
    let pages = 4 * 64 * 256;
    assert_eq!(local["numa"]["numa_local"], pages);
    assert_eq!(remote["numa"]["numa_other"], pages);
    let (l, r) = (
        local["time_s"].as_f64().unwrap(),
        remote["time_s"].as_f64().unwrap(),
    );
    assert!(r > l * 1.05, "remote {r} s vs local {l} s");
    assert!(local["user_s"].as_f64().unwrap() > 0.0);
    assert!(local["system_s"].as_f64().unwrap() >= 0.0);
}

/// Counters are consistent, and with balancing off nothing is scanned.
#[test]
fn balancing_counters_are_consistent_and_off_scans_nothing() {
    let on = spin("3000", &["--numa-balancing", "on"]);
    let n = &on["numa"];
    let get = |k: &str| n[k].as_u64().unwrap();
    assert!(get("numa_hint_faults") <= get("numa_pte_updates"));
    assert!(get("numa_hint_faults_local") <= get("numa_hint_faults"));
    assert!(get("numa_pages_migrated") <= get("numa_hint_faults"));
    assert!(get("numa_scans") > 0, "{n}");
    let off = spin("3000", &["--numa-balancing", "off"]);
    assert_eq!(off["numa"]["numa_scans"], 0);
    assert_eq!(off["numa"]["numa_pte_updates"], 0);
    // a run without memory has no numa object
    let plain = json(&[
        "sim",
        "spin",
        "-n",
        "2",
        "-w",
        "10",
        "--machine",
        "xeon-12c24t",
    ]);
    assert!(plain.get("numa").is_none());
}

#[test]
fn bad_numa_input_is_one_line() {
    let e = fails(&[
        "sim",
        "spin",
        "--machine",
        "kunpeng920-node",
        "--numa-balancing",
        "on",
    ]);
    assert!(
        e.contains("--numa-balancing") && e.contains("one NUMA node"),
        "{e}"
    );
    let e = fails(&[
        "sim",
        "spin",
        "--machine",
        "xeon-12c24t",
        "--mem-policy",
        "membind=4",
    ]);
    assert!(e.contains("--mem-policy") && e.contains("nodes 0-1"), "{e}");
    let e = fails(&[
        "sim",
        "spin",
        "--machine",
        "xeon-12c24t",
        "--mem-policy",
        "preferred=0",
    ]);
    assert!(e.contains("--mem-policy"), "{e}");
    let e = fails(&[
        "sim",
        "spin",
        "--machine",
        "xeon-12c24t",
        "--numa-balancing",
        "maybe",
    ]);
    assert!(e.contains("--numa-balancing"), "{e}");
}

/// The scan knobs reach the model: a smaller scan size marks fewer pages
/// per scan; bad knobs are one line naming the flag.
#[test]
fn numa_params_set_the_scan() {
    let base = spin(
        "3000",
        &["--numa-balancing", "on", "--mem-policy", "membind=1"],
    );
    let small = spin(
        "3000",
        &[
            "--numa-balancing",
            "on",
            "--mem-policy",
            "membind=1",
            "--numa-param",
            "scan_size_mb=8",
        ],
    );
    let per_scan = |v: &serde_json::Value| {
        v["numa"]["numa_pte_updates"].as_f64().unwrap() / v["numa"]["numa_scans"].as_f64().unwrap()
    };
    assert!(
        per_scan(&base) > per_scan(&small),
        "{} vs {}",
        per_scan(&base),
        per_scan(&small)
    );
    assert!(per_scan(&small) <= 8.0 * 256.0, "{}", per_scan(&small));
    let e = fails(&[
        "sim",
        "spin",
        "--machine",
        "xeon-12c24t",
        "--numa-param",
        "scan_size_mb=0",
    ]);
    assert!(
        e.contains("--numa-param scan_size_mb") && e.contains("1..="),
        "{e}"
    );
    let e = fails(&[
        "sim",
        "spin",
        "--machine",
        "xeon-12c24t",
        "--numa-param",
        "bogus=1",
    ]);
    assert!(e.contains("--numa-param bogus"), "{e}");
}

/// Memory that would not fit is refused before anything is allocated.
#[test]
fn too_much_memory_is_refused_up_front() {
    let e = fails(&[
        "sim",
        "spin",
        "-n",
        "1000",
        "-w",
        "1",
        "--mem-mib",
        "1048576",
        "--machine",
        "xeon-12c24t",
    ]);
    assert!(e.contains("--mem-mib") && e.contains("--max-memory"), "{e}");
    let e = fails(&[
        "sim",
        "spin",
        "--mem-mib",
        "1048577",
        "--machine",
        "xeon-12c24t",
    ]);
    assert!(e.contains("--mem-mib"), "{e}");
}
