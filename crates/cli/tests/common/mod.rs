//! Helpers shared by the CLI tests: run `schedlab` and check how it ended.
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;

/// The `schedlab` binary under test.
pub fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

/// Run with `args`; it must succeed. Returns stdout.
pub fn run(args: &[&str]) -> String {
    let out = schedlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Run with `args` and `--json`; stdout must be one JSON value.
pub fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&run(&a)).unwrap()
}

/// Run with `args`; it must fail with exit status 2, nothing on stdout
/// and one line on stderr, which is returned.
pub fn fails(args: &[&str]) -> String {
    let out = schedlab().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err
}

/// The largest peak resident set of this process's waited-for children,
/// KiB (getrusage RUSAGE_CHILDREN): for tests that bound a run's memory,
/// each in a binary of its own so that no other test's child sets the peak.
pub fn children_peak_kib() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0);
    ru.ru_maxrss as u64
}
