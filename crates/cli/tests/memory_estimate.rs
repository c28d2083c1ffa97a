//! The memory estimate bounds what a run uses: an rt-app file of 8,192
//! threads is estimated at no less than the peak resident memory it adds
//! over a one-thread file (the issue: 891 MiB estimated, 1.55 GB used). One
//! test in its own binary, so that no other test's child moves the
//! children's peak that `getrusage` reports.

mod common;
use common::{children_peak_kib, schedlab};

fn rtapp_file(dir: &std::path::Path, name: &str, templates: u32, instances: u32) -> String {
    let tasks: Vec<String> = (0..templates)
        .map(|i| format!(r#""t{i}": {{"instance": {instances}, "loop": 1, "run": 10}}"#))
        .collect();
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{{}}}}}"#,
            tasks.join(", ")
        ),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn the_rtapp_estimate_bounds_the_peak_memory() {
    let dir = tempfile::tempdir().unwrap();
    let one = rtapp_file(dir.path(), "one.json", 1, 1);
    let big = rtapp_file(dir.path(), "big.json", 8, 1024);
    let out = schedlab().args(["sim", "rtapp", &one]).output().unwrap();
    assert!(out.status.success());
    let base = children_peak_kib();
    let out = schedlab().args(["sim", "rtapp", &big]).output().unwrap();
    assert!(out.status.success());
    let peak = children_peak_kib();
    // the estimate, as the refusal states it
    let out = schedlab()
        .args(["sim", "rtapp", &big, "--max-memory", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    let mib: u64 = err
        .split("needs an estimated ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    let used_kib = peak.saturating_sub(base);
    eprintln!("estimated {mib} MiB, used {used_kib} KiB over a one-thread run");
    assert!(
        mib * 1024 >= used_kib,
        "estimated {mib} MiB < used {used_kib} KiB"
    );
}
