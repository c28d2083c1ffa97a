//! A run's memory does not grow with its length: schbench keeps fixed-size
//! histograms, not its samples (issue: `-r 30 / 120 / 240` peaked at 25 /
//! 77 / 148 MB). One test in its own binary, so that no other test's child
//! moves the children's peak that `getrusage` reports.

mod common;
use common::{children_peak_kib, schedlab};

#[test]
fn schbench_peak_memory_does_not_grow_with_its_runtime() {
    let run = |r: &str| {
        let out = schedlab()
            .args(["sim", "schbench", "-m", "1", "-t", "2", "-r", r])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("30");
    let short = children_peak_kib();
    run("240");
    // the largest of both peaks
    let long = children_peak_kib();
    eprintln!("peak RSS: -r 30 {short} KiB, -r 240 {long} KiB");
    assert!(
        long * 100 <= short * 120,
        "-r 240 peaks at {long} KiB, more than 20 % over -r 30's {short} KiB"
    );
}
