//! Inputs that must fail fast with one line (exit status 2): input files
//! that are not regular files or are too large, runs too large for memory
//! or past their bounds, number flags out of range, conflicting repeats.

mod common;
use common::{fails, schedlab};
use std::path::Path;
use std::time::Duration;

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A sysfs tree whose `cpu/online` is made by `make`.
fn sysfs_tree(make: impl FnOnce(&Path)) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let cpu = d.path().join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    make(&cpu.join("online"));
    d
}

/// `fails`, but a run that hangs fails the test instead of the suite.
fn fails_soon(args: &[&str]) -> String {
    let out = schedlab()
        .args(args)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err
}

#[test]
fn hwloc_file_must_be_a_small_regular_file() {
    let e = fails(&["topology", "show", "--hwloc", "/dev/zero"]);
    assert_eq!(
        e.trim(),
        "schedlab: error: /dev/zero: not a regular file (a character device)"
    );
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo.xml");
    mkfifo(&fifo);
    let e = fails_soon(&["topology", "show", "--hwloc", fifo.to_str().unwrap()]);
    assert!(e.contains("fifo.xml: not a regular file (a FIFO)"), "{e}");
    let big = d.path().join("big.xml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((64 << 20) + 1).unwrap(); // sparse: no disk used
    let e = fails(&["topology", "show", "--hwloc", big.to_str().unwrap()]);
    assert!(
        e.contains("big.xml: larger than the limit of 64 MiB for this input"),
        "{e}"
    );
}

#[test]
fn sysfs_files_must_be_small_regular_files() {
    let zero = sysfs_tree(|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap());
    let e = fails(&["topology", "show", "--sysfs", zero.path().to_str().unwrap()]);
    assert!(
        e.contains("cpu/online: not a regular file (a character device)"),
        "{e}"
    );
    let fifo = sysfs_tree(mkfifo);
    let e = fails_soon(&["topology", "show", "--sysfs", fifo.path().to_str().unwrap()]);
    assert!(e.contains("cpu/online: not a regular file (a FIFO)"), "{e}");
    let big = sysfs_tree(|p| {
        std::fs::File::create(p)
            .unwrap()
            .set_len((1 << 20) + 1)
            .unwrap()
    });
    let e = fails(&["topology", "show", "--sysfs", big.path().to_str().unwrap()]);
    assert!(
        e.contains("cpu/online: larger than the limit of 1 MiB for this input"),
        "{e}"
    );
}

#[test]
fn tbench_loadfile_must_be_a_regular_file() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("client.txt");
    mkfifo(&fifo);
    let big = d.path().join("big.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((256 << 20) + 1)
        .unwrap();
    // the simulator and the native port read it alike
    for mode in ["sim", "bench"] {
        let e = fails_soon(&[mode, "tbench", "2", "-t", "1", "-c", "/dev/zero"]);
        assert_eq!(
            e.trim(),
            "schedlab: error: --loadfile /dev/zero: not a regular file (a character device)",
            "{mode}"
        );
        let e = fails_soon(&[mode, "tbench", "2", "-t", "1", "-c", fifo.to_str().unwrap()]);
        assert!(
            e.contains("client.txt: not a regular file (a FIFO)"),
            "{mode}: {e}"
        );
        let e = fails_soon(&[mode, "tbench", "2", "-t", "1", "-c", big.to_str().unwrap()]);
        assert!(
            e.contains("big.txt: larger than the limit of 256 MiB for this input"),
            "{mode}: {e}"
        );
    }
}

#[test]
fn a_run_too_large_for_memory_is_refused_before_it_starts() {
    let e = fails_soon(&[
        "sim",
        "hackbench",
        "-g",
        "4",
        "-f",
        "100000",
        "--max-memory",
        "1024",
    ]);
    assert!(
        e.starts_with("schedlab: error: -g/-f: the run needs an estimated ")
            && e.trim_end().ends_with(
                "MiB of memory, more than the limit of 1024 MiB (raise it with --max-memory MIB)"
            ),
        "{e}"
    );
    // a million tasks do not fit the default limit either
    let e = fails_soon(&["sim", "hackbench", "-g", "25000"]);
    assert!(e.contains("more than the limit of 4096 MiB"), "{e}");
    let e = fails_soon(&["sim", "spin", "-n", "1000000", "--max-memory", "16"]);
    assert!(
        e.contains("-n/--tasks and --mem-mib: the run needs an estimated"),
        "{e}"
    );
}

#[test]
fn a_run_past_its_bounds_stops_with_the_flag_to_raise() {
    let long = ["sim", "hackbench", "-l", "4294967295", "-s", "1"];
    let mut a = long.to_vec();
    a.extend(["--max-events", "100000"]);
    let e = fails_soon(&a);
    assert!(
        e.starts_with(
            "schedlab: error: --max-events: the run reached the limit of 100000 events at "
        ) && e
            .trim_end()
            .ends_with("tasks alive (raise it with --max-events N)"),
        "{e}"
    );
    let mut a = long.to_vec();
    a.extend(["--time-limit", "1"]);
    let e = fails_soon(&a);
    assert!(
        e.starts_with(
            "schedlab: error: --time-limit: the run reached the simulated-time limit of 1 s with "
        ) && e.trim_end().ends_with("(raise it with --time-limit S)"),
        "{e}"
    );
    // a run within its bounds is unchanged by them
    let plain = common::run(&["sim", "hackbench", "-g", "2", "-l", "10"]);
    let bounded = common::run(&[
        "sim",
        "hackbench",
        "-g",
        "2",
        "-l",
        "10",
        "--max-events",
        "10000000",
        "--time-limit",
        "10",
    ]);
    assert_eq!(plain, bounded);
}

/// Every number flag of `sim` and `topology` says the same thing about a
/// value out of its range, negative ones included.
#[test]
fn number_flags_name_their_range() {
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["sim", "hackbench", "-l", "99999999999"],
            "--loops <N>",
            "99999999999 is not in 1..=4294967295",
        ),
        (
            &["sim", "hackbench", "-g", "-1"],
            "--groups <N>",
            "-1 is not in 1..=4294967295",
        ),
        (
            &["sim", "hackbench", "-f", "0"],
            "--fds <N>",
            "0 is not in 1..=4294967295",
        ),
        (
            &["sim", "hackbench", "-s", "x"],
            "--datasize <N>",
            "x is not in 1..=4294967295",
        ),
        (
            &["sim", "hackbench", "--seed", "-1"],
            "--seed <N>",
            "-1 is not in 0..=18446744073709551615",
        ),
        (
            &["sim", "hackbench", "--node", "-1"],
            "--node <N>",
            "-1 is not in 0..=1023",
        ),
        (
            &["sim", "hackbench", "--max-events", "0"],
            "--max-events <N>",
            "0 is not in 1..=18446744073709551615",
        ),
        (
            &["sim", "hackbench", "--time-limit", "-5"],
            "--time-limit <S>",
            "-5 is not in 1..=1000000000",
        ),
        (
            &["sim", "hackbench", "--max-memory", "0"],
            "--max-memory <MIB>",
            "0 is not in 1..=16777216",
        ),
        (
            &["sim", "spin", "-n", "-3"],
            "--tasks <N>",
            "-3 is not in 1..=1000000",
        ),
        (
            &["sim", "spin", "-w", "0"],
            "--work-ms <MS>",
            "0 is not in 1..=4294967295",
        ),
        (
            &["sim", "falseshare", "-n", "-1"],
            "--iterations <N>",
            "-1 is not in 1..=4294967295",
        ),
        (
            &["sim", "schbench", "-m", "-1"],
            "--message-threads <N>",
            "-1 is not in 1..=10000",
        ),
        (
            &["sim", "schbench", "-r", "-1"],
            "--runtime <S>",
            "-1 is not in 0..=4294967295",
        ),
        (
            &["sim", "schbench", "--split", "101"],
            "--split <PCT>",
            "101 is not in 0..=100",
        ),
        (
            &["sim", "tbench", "-5"],
            "<NCLIENTS>",
            "-5 is not in 1..=4294967295",
        ),
        (
            &["sim", "tbench", "2", "-t", "-1"],
            "--time <S>",
            "-1 is not in 1..=4294967295",
        ),
        (
            &["sim", "tbench", "2", "--warmup", "-1"],
            "--warmup <S>",
            "-1 is not in 0..=4294967295",
        ),
        (
            &["topology", "show", "--imbalance-pct", "-5"],
            "--imbalance-pct <PCT>",
            "-5 is not in 100..=1000",
        ),
        (
            &["topology", "show", "--imbalance-pct", "1001"],
            "--imbalance-pct <PCT>",
            "1001 is not in 100..=1000",
        ),
    ];
    // main.rs shortens clap's "invalid value 'V' for '--flag <N>': ..." to
    // "--flag: V is not in MIN..=MAX", one form for every number flag
    for (args, flag, problem) in cases {
        let name = flag.split(' ').next().unwrap().trim_matches(['<', '>']);
        assert_eq!(
            fails(args).trim_end(),
            format!("schedlab: error: {name}: {problem}"),
            "{args:?}"
        );
    }
}

#[test]
fn a_feature_given_twice_must_keep_its_value() {
    let e = fails(&[
        "sim",
        "hackbench",
        "--feature",
        "sis_util=on",
        "--feature",
        "sis_util=off",
    ]);
    assert_eq!(
        e.trim_end(),
        "schedlab: error: --feature sis_util: given twice, as sis_util=on and sis_util=off"
    );
    let e = fails(&[
        "sim",
        "hackbench",
        "--kernel-config",
        "SCHED_SMT=y",
        "--kernel-config",
        "SCHED_SMT=n",
    ]);
    assert!(
        e.contains("--kernel-config SCHED_SMT: given twice, as SCHED_SMT=y and SCHED_SMT=n"),
        "{e}"
    );
    let e = fails(&[
        "topology",
        "show",
        "--kernel-config",
        "SCHED_MC=y",
        "--kernel-config",
        "SCHED_MC=n",
    ]);
    assert!(
        e.contains("--kernel-config SCHED_MC: given twice, as SCHED_MC=y and SCHED_MC=n"),
        "{e}"
    );
    // the same value twice is harmless
    common::run(&[
        "sim",
        "hackbench",
        "-g",
        "1",
        "-l",
        "1",
        "--feature",
        "sis_util=on",
        "--feature",
        "sis_util=on",
    ]);
}

/// A sparse file of `len` bytes (no disk used), for the size caps.
fn sparse(p: &Path, len: u64) {
    std::fs::File::create(p).unwrap().set_len(len).unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn cost_profile_must_be_a_small_regular_file() {
    let hb = ["sim", "hackbench", "-g", "1", "-l", "1", "--cost-profile"];
    let with = |f: &str| {
        let mut a = hb.to_vec();
        a.push(f);
        fails_soon(&a)
    };
    assert_eq!(
        with("/dev/zero").trim_end(),
        "schedlab: error: --cost-profile: /dev/zero: (file): not a regular file (a character device)"
    );
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo.toml");
    mkfifo(&fifo);
    let e = with(s(&fifo));
    assert!(
        e.contains("fifo.toml: (file): not a regular file (a FIFO)"),
        "{e}"
    );
    let big = d.path().join("big.toml");
    sparse(&big, (1 << 20) + 1);
    let e = with(s(&big));
    assert!(
        e.contains("big.toml: (file): larger than the limit of 1 MiB for this input"),
        "{e}"
    );
    // an experiment's cost_profile goes through the same reader
    let exp = d.path().join("exp.toml");
    std::fs::write(
        &exp,
        format!("{}cost_profile = {:?}\n", tiny_experiment(), s(&fifo)),
    )
    .unwrap();
    let e = fails_soon(&["compare", s(&exp), "--log", s(&d.path().join("l.jsonl"))]);
    assert!(
        e.contains("exp.toml") && e.contains("fifo.toml: (file): not a regular file (a FIFO)"),
        "{e}"
    );
}

#[test]
fn replay_result_must_be_a_small_regular_file() {
    assert_eq!(
        fails_soon(&["sim", "--replay", "/dev/zero"]).trim_end(),
        "schedlab: error: --replay /dev/zero: not a regular file (a character device)"
    );
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo.json");
    mkfifo(&fifo);
    let e = fails_soon(&["sim", "--replay", s(&fifo)]);
    assert!(e.contains("fifo.json: not a regular file (a FIFO)"), "{e}");
    let big = d.path().join("big.json");
    sparse(&big, (64 << 20) + 1);
    let e = fails_soon(&["sim", "--replay", s(&big)]);
    assert!(
        e.contains("big.json: larger than the limit of 64 MiB for this input"),
        "{e}"
    );
    let e = fails_soon(&["sim", "--replay", s(&d.path().join("none.json"))]);
    assert!(e.contains("none.json: missing file"), "{e}");
}

/// A valid experiment of a few ms, ending in its `[run]` table (a test may
/// append a key to it).
fn tiny_experiment() -> &'static str {
    "name = \"tiny\"\niterations = 1\nmetrics = [\"time\"]\n[[variant]]\nname = \"a\"\n\
     [run]\nmachine = \"xeon-12c24t\"\ncpus = \"0-3\"\nbenchmark = \"hackbench\"\n\
     pipe = true\nfds = 2\nloops = 5\n"
}

#[test]
fn experiment_file_must_be_a_small_regular_file() {
    assert_eq!(
        fails_soon(&["compare", "/dev/zero"]).trim_end(),
        "schedlab: error: /dev/zero: not a regular file (a character device)"
    );
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo.toml");
    mkfifo(&fifo);
    let e = fails_soon(&["compare", s(&fifo)]);
    assert!(e.contains("fifo.toml: not a regular file (a FIFO)"), "{e}");
    let big = d.path().join("big.toml");
    sparse(&big, (16 << 20) + 1);
    let e = fails_soon(&["compare", s(&big)]);
    assert!(
        e.contains("big.toml: larger than the limit of 16 MiB for this input"),
        "{e}"
    );
    let bin = d.path().join("bin.toml");
    std::fs::write(&bin, b"name = \"\xff\"\n").unwrap();
    let e = fails_soon(&["compare", s(&bin)]);
    assert!(e.contains("bin.toml: not UTF-8 text"), "{e}");
    // nothing was written beside them (no run log)
    let mut names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["big.toml", "bin.toml", "fifo.toml"]);
}

/// Run logs: `--resume` and `--merge` read them capped and only if regular
/// files, and a log that is a device or a FIFO is never replaced (the
/// device is reached through a symbolic link in a temporary directory, so
/// even a failure of this test cannot replace /dev/zero itself).
#[test]
fn run_logs_must_be_small_regular_files() {
    let d = tempfile::tempdir().unwrap();
    let exp = d.path().join("tiny.toml");
    std::fs::write(&exp, tiny_experiment()).unwrap();
    let zero = d.path().join("zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let fifo = d.path().join("fifo.jsonl");
    mkfifo(&fifo);
    let big = d.path().join("big.jsonl");
    sparse(&big, (1 << 30) + 1);
    for resume in [true, false] {
        for (log, what) in [
            (&zero, "zero.jsonl: not a regular file (a character device)"),
            (&fifo, "fifo.jsonl: not a regular file (a FIFO)"),
        ] {
            let mut a = vec!["compare", s(&exp), "--log", s(log)];
            if resume {
                a.push("--resume");
            }
            let e = fails_soon(&a);
            assert!(e.contains(what), "{a:?}: {e}");
        }
    }
    let e = fails_soon(&["compare", s(&exp), "--resume", "--log", s(&big)]);
    assert!(
        e.contains("big.jsonl: larger than the limit of 1 GiB for this input"),
        "{e}"
    );
    for (log, what) in [
        (&zero, "zero.jsonl: not a regular file (a character device)"),
        (&fifo, "fifo.jsonl: not a regular file (a FIFO)"),
        (
            &big,
            "big.jsonl: larger than the limit of 1 GiB for this input",
        ),
    ] {
        let e = fails_soon(&["compare", "--merge", s(log)]);
        assert!(e.contains(what), "--merge {log:?}: {e}");
    }
    // the link, the FIFO and the large log are as they were
    assert!(std::fs::symlink_metadata(&zero).unwrap().is_symlink());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(std::fs::metadata(&big).unwrap().len(), (1 << 30) + 1);
}

/// A result is written atomically (a temporary file, then a rename), which
/// a FIFO or a device cannot be: refused before the run, and left alone.
#[test]
fn results_are_not_written_over_a_fifo() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("out.json");
    mkfifo(&fifo);
    let e = fails_soon(&[
        "compare",
        "builtin:test-idle-cores-nosmt",
        "--quick",
        "--json",
        s(&fifo),
    ]);
    assert!(
        e.contains("--json: cannot write") && e.contains("out.json: not a regular file (a FIFO)"),
        "{e}"
    );
    let e = fails_soon(&[
        "bench",
        "hackbench",
        "-g",
        "1",
        "-l",
        "1",
        "--output",
        s(&fifo),
    ]);
    assert!(
        e.contains("--output: cannot write") && e.contains("out.json: not a regular file (a FIFO)"),
        "{e}"
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn an_endless_schbench_is_refused_by_its_memory_estimate() {
    // -r 4294967295 reports every 10 s: the text of its reports alone is
    // past any limit, so it is refused at once
    let e = fails_soon(&["sim", "schbench", "-r", "4294967295", "--max-memory", "100"]);
    assert!(
        e.starts_with("schedlab: error: -m/-t/-r/-i: the run needs an estimated ")
            && e.trim_end().ends_with("(raise it with --max-memory MIB)"),
        "{e}"
    );
}

#[test]
fn rtapp_phase_rows_past_the_memory_limit_stop_the_run() {
    // one thread logging a phase every 100 us for a minute: 600,000 rows
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fast.json");
    std::fs::write(
        &p,
        r#"{"global": {"duration": 60}, "tasks": {"t": {"loop": -1, "run": 10, "timer": {"ref": "t", "period": 100}}}}"#,
    )
    .unwrap();
    let e = fails_soon(&["sim", "rtapp", p.to_str().unwrap(), "--max-memory", "1"]);
    assert!(
        e.starts_with("schedlab: error: --max-memory: what the run records ")
            && e.trim_end().ends_with("(raise it with --max-memory MIB)"),
        "{e}"
    );
}
