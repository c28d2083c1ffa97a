//! Where output and input go wrong outside schedlab: stdout a closed pipe
//! (`| head`) or a full disk (/dev/full), an `--output` path that cannot be
//! written, a loadfile that is missing or not text, and usage errors that
//! clap reports over several lines.

use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("schedlab"))
}

/// Runs `args` with stdout the write end of a pipe whose read end is
/// already closed: every write fails with EPIPE, deterministically.
fn to_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// Runs `args` with stdout /dev/full: every write fails with ENOSPC.
fn to_full_disk(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

const SIM: &[&str] = &[
    "sim",
    "hackbench",
    "-p",
    "-T",
    "-g",
    "2",
    "-l",
    "20",
    "--machine",
    "kunpeng920-node",
    "--seed",
    "1",
];
const HACKBENCH: &[&str] = &["bench", "hackbench", "-g", "1", "-f", "2", "-l", "10"];

/// Every command that prints on stdout, one of each kind of printing.
fn stdout_commands() -> Vec<Vec<&'static str>> {
    let mut json_bench = HACKBENCH.to_vec();
    json_bench.push("--json");
    let mut json_sim = SIM.to_vec();
    json_sim.push("--json");
    vec![
        vec!["sim", "--list-features"],
        vec!["sim", "--list-kernels"],
        SIM.to_vec(),
        json_sim,
        vec!["topology", "list"],
        vec!["topology", "show", "kunpeng920"],
        HACKBENCH.to_vec(),
        json_bench,
        vec!["--help"],
        vec!["bench", "tbench", "--help"],
    ]
}

#[test]
fn a_closed_stdout_stops_quietly_with_status_0() {
    for args in stdout_commands() {
        let out = to_closed_pipe(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
    }
}

#[test]
fn a_full_disk_is_one_error_line_naming_stdout_status_2() {
    for args in stdout_commands() {
        let out = to_full_disk(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("schedlab:")).collect();
        assert_eq!(
            lines,
            ["schedlab: error: writing to stdout: No space left on device (os error 28)"],
            "{args:?}: {err}"
        );
    }
}

#[test]
fn bench_with_a_closed_stdout_still_writes_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let mut args = HACKBENCH.to_vec();
    args.extend(["--output", file.to_str().unwrap()]);
    let out = to_closed_pipe(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["benchmark"], "hackbench");
}

/// Exit status 2 and exactly one `schedlab: error:` line on stderr, which
/// is returned; stdout stays empty (nothing was run or printed).
fn one_error_line(args: &[&str]) -> String {
    let out = bin().args(args).stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "{args:?} printed before failing"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].starts_with("schedlab: error: "), "{err}");
    lines[0].to_string()
}

#[test]
fn an_unwritable_output_fails_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // A benchmark that would run for 10 minutes: the check must come first.
    let long = ["bench", "tbench", "1", "-t", "600", "--output"];
    let cases = [
        (
            "/nonexistent/dir/x.json".to_string(),
            "--output: cannot write /nonexistent/dir/x.json: directory /nonexistent/dir does not exist"
                .to_string(),
        ),
        (
            format!("{d}"),
            format!("--output: cannot write {d}: it is a directory"),
        ),
    ];
    for (path, want) in cases {
        let mut args = long.to_vec();
        args.push(&path);
        let t0 = std::time::Instant::now();
        let line = one_error_line(&args);
        assert_eq!(line, format!("schedlab: error: {want}"));
        assert!(t0.elapsed().as_secs() < 30, "the run started");
    }
    // A read-only directory (unless we are root, who may write anyway).
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o555);
    std::fs::set_permissions(&ro, perm).unwrap();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let path = ro.join("x.json");
        let mut args = long.to_vec();
        args.push(path.to_str().unwrap());
        let line = one_error_line(&args);
        assert!(
            line.contains("cannot create a file in") && line.contains("Permission denied"),
            "{line}"
        );
    }
    // Nothing was left in the directories that were checked.
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
}

#[test]
fn calibrate_checks_its_output_before_measuring() {
    assert_eq!(
        one_error_line(&["calibrate", "-o", "/nonexistent/dir/host.toml"]),
        "schedlab: error: --output: cannot write /nonexistent/dir/host.toml: directory /nonexistent/dir does not exist"
    );
}

#[test]
fn a_bad_loadfile_fails_before_anything_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, b"\x7fELF\x02\x01\x01\0\0\0\x1b[31m\xff\xfe").unwrap();
    let bad_utf8 = dir.path().join("latin1.txt");
    std::fs::write(&bad_utf8, b"Close 1 NT_STATUS_OK\nReadX 1 0 caf\xe9\n").unwrap();
    let (e, j, b) = (
        empty.display().to_string(),
        junk.display().to_string(),
        bad_utf8.display().to_string(),
    );
    for (path, want) in [
        (
            "missing.txt",
            "--loadfile missing.txt: missing file".to_string(),
        ),
        (
            e.as_str(),
            format!("--loadfile {e}: no operations in the file"),
        ),
        (
            j.as_str(),
            format!("--loadfile {j}: line 1: not a text file (byte 0x7f at column 1)"),
        ),
        (
            b.as_str(),
            format!("--loadfile {b}: line 2: not a text file (byte 0xe9 at column 14)"),
        ),
    ] {
        let line = one_error_line(&["bench", "tbench", "1", "-t", "1", "-c", path]);
        assert_eq!(line, format!("schedlab: error: {want}"));
        assert!(
            line.chars().all(|c| !c.is_control()),
            "raw bytes in {line:?}"
        );
    }
}

#[test]
fn control_characters_in_messages_are_escaped() {
    // A path is echoed back in its error; an escape sequence in it must not
    // reach the terminal raw.
    let line = one_error_line(&["bench", "tbench", "1", "-c", "/nonexistent/\x1b[2J\x07.txt"]);
    assert_eq!(
        line,
        "schedlab: error: --loadfile /nonexistent/\\x1b[2J\\x07.txt: missing file"
    );
}

#[test]
fn usage_errors_are_one_line_naming_the_argument_and_range() {
    assert_eq!(
        one_error_line(&["bench", "tbench", "-1"]),
        "schedlab: error: NCLIENTS: -1 is not in 1..=100000"
    );
    assert_eq!(
        one_error_line(&["bench", "tbench", "0"]),
        "schedlab: error: NCLIENTS: 0 is not in 1..=100000"
    );
    assert_eq!(
        one_error_line(&["bench", "tbench", "100001"]),
        "schedlab: error: NCLIENTS: 100001 is not in 1..=100000"
    );
    assert_eq!(
        one_error_line(&["bench", "tbench"]),
        "schedlab: error: the following required arguments were not provided: <NCLIENTS>"
    );
    assert_eq!(
        one_error_line(&["bench", "hackbench", "-g", "-1"]),
        "schedlab: error: --groups: -1 is not in 0..=4294967295"
    );
    assert_eq!(
        one_error_line(&["bench", "schbench", "-m", "-2"]),
        "schedlab: error: --message-threads: -2 is not in 0..=4294967295"
    );
    // A message that does not repeat the value keeps clap's wording.
    assert_eq!(
        one_error_line(&["bench", "hackbench", "-g", "x"]),
        "schedlab: error: invalid value 'x' for '--groups <N>': invalid digit found in string"
    );
}
