//! A sweep of a million points is accepted, and its first run started, or
//! refused, in little memory: the sweep is never expanded and the run
//! log's header holds the experiment as given (issue 38 item 3: expanded,
//! 100 x 100 x 100 points took 2.6 GB and 54 s to reach its first run and
//! wrote a 296 MB header). Its own test binary, so that no other test's
//! child moves the children's peak that `getrusage` reports.

mod common;
use common::children_peak_kib;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most a million-point sweep may take to be accepted or refused.
const LIMIT_KIB: u64 = 200 * 1024;

/// A child's peak resident set so far (`VmHWM`), KiB.
fn hwm_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run `schedlab args` in `dir`; stop it as soon as its peak passes
/// [`LIMIT_KIB`] (so that an expanding build fails in seconds, not
/// after minutes and gigabytes) or after a generous `timeout` (a safety
/// net, not a measure). Returns (exit code, stderr, peak KiB).
fn run_bounded(dir: &Path, args: &[&str], timeout: Duration) -> (Option<i32>, String, u64) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        peak = peak.max(hwm_kib(child.id()).unwrap_or(0));
        if peak > LIMIT_KIB || t0.elapsed() > timeout {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let peak = peak.max(children_peak_kib());
    assert!(
        peak <= LIMIT_KIB,
        "{args:?}: peak RSS {peak} KiB, more than {LIMIT_KIB} KiB (stopped: {}); {err}",
        status.is_none()
    );
    assert!(
        status.is_some(),
        "{args:?}: still running after {timeout:?}"
    );
    (status.and_then(|s| s.code()), err, peak)
}

/// 100 x 100 x 100 points of hackbench, one variant; `last_groups` is
/// the last value of the first axis.
fn million(last_groups: &str) -> String {
    let list = |n: u32| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let groups: Vec<String> = (1..100)
        .map(|i| i.to_string())
        .chain([last_groups.to_string()])
        .collect();
    format!(
        "name = \"million\"\niterations = 1\n[run]\nmachine = \"xeon-12c24t\"\nbenchmark = \"hackbench\"\nloops = 10\n\
         [sweep]\ngroups = [{}]\nfds = [{}]\ndatasize = [{}]\n[[variant]]\nname = \"a\"\n",
        groups.join(", "),
        list(100),
        list(100)
    )
}

#[test]
fn a_million_point_sweep_starts_its_first_run_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("million.toml"), million("100")).unwrap();
    // --max-events 1 stops the first run as soon as it starts: the
    // experiment was accepted, its log started and a run begun
    let (code, err, peak) = run_bounded(
        dir.path(),
        &[
            "compare",
            "million.toml",
            "--jobs",
            "1",
            "--max-events",
            "1",
        ],
        Duration::from_secs(300),
    );
    eprintln!("accepted and started: peak RSS {peak} KiB");
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("variant \"a\", point 1-1-1, iteration 0: --max-events: the run reached the limit of 1 events"),
        "{err}"
    );
    // the log's header holds the experiment, not a million runs
    let log = std::fs::read_to_string(dir.path().join("million.runs.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "only the header");
    assert!(log.len() < 16 << 10, "a header of {} bytes", log.len());
    assert!(
        log.contains("\"axes\":[\"groups\",\"fds\",\"datasize\"]"),
        "{log}"
    );
}

#[test]
fn a_million_point_sweep_with_a_wrong_value_is_refused_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("million.toml"), million("0")).unwrap();
    // groups = 0, the last value of the first axis: point 0-1-1 is the
    // 990 001st of the sweep
    let (code, err, peak) = run_bounded(
        dir.path(),
        &["compare", "million.toml", "--jobs", "1"],
        Duration::from_secs(300),
    );
    eprintln!("refused: peak RSS {peak} KiB");
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "million.toml: variant \"a\", point 0-1-1: -g/--groups must be an integer > 0"
        ),
        "{err}"
    );
    // nothing written
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["million.toml"]);
}
