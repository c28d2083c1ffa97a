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
    let e = fails(&["sim", "tbench", "2", "-t", "1", "-c", "/dev/zero"]);
    assert_eq!(
        e.trim(),
        "schedlab: error: --loadfile /dev/zero: not a regular file (a character device)"
    );
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("client.txt");
    mkfifo(&fifo);
    let e = fails_soon(&[
        "sim",
        "tbench",
        "2",
        "-t",
        "1",
        "-c",
        fifo.to_str().unwrap(),
    ]);
    assert!(e.contains("client.txt: not a regular file (a FIFO)"), "{e}");
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
    assert!(e.contains("-n/--tasks: the run needs an estimated"), "{e}");
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
