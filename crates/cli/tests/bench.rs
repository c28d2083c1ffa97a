//! `schedlab bench ...`: the native benchmarks, driven through the binary.
//!
//! Every run here is tiny (a few hundred messages, a 1-2 s runtime) and no
//! assertion depends on how fast the host is.

use assert_cmd::Command;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn stdout_of(args: &[&str]) -> (String, String) {
    let out = schedlab()
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let so = String::from_utf8(out.stdout).unwrap();
    let se = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{args:?} failed: {so}\n{se}");
    (so, se)
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let (so, _) = stdout_of(args);
    serde_json::from_str(&so)
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {so}"))
}

/// Runs and expects exit status 2 with a single `schedlab: error:` line
/// mentioning `needle`.
fn fails_with(args: &[&str], needle: &str) {
    let out = schedlab()
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let se = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {se}");
    let err: Vec<&str> = se
        .lines()
        .filter(|l| l.starts_with("schedlab: error:"))
        .collect();
    assert_eq!(err.len(), 1, "{args:?}: {se}");
    assert!(
        err[0].contains(needle),
        "{args:?}: expected {needle:?} in {se}"
    );
    assert!(!se.contains("panicked"), "{se}");
}

// ---------------------------------------------------------------------------
// hackbench

#[test]
fn hackbench_prints_the_rt_tests_lines() {
    let (so, _) = stdout_of(&["bench", "hackbench", "-p", "-T", "-g", "2", "-l", "200"]);
    let lines: Vec<&str> = so.lines().collect();
    assert_eq!(lines.len(), 3, "{so}");
    assert_eq!(
        lines[0],
        "Running in threaded mode with 2 groups using 40 file descriptors each (== 80 tasks)"
    );
    assert_eq!(lines[1], "Each sender will pass 200 messages of 100 bytes");
    let t = lines[2].strip_prefix("Time: ").expect(lines[2]);
    let (s, ms) = t.split_once('.').unwrap();
    assert!(
        s.parse::<u64>().is_ok() && ms.len() == 3 && ms.parse::<u32>().is_ok(),
        "{t}"
    );
}

#[test]
fn hackbench_process_mode_sockets_json() {
    let v = json_of(&[
        "bench",
        "hackbench",
        "-g",
        "2",
        "-f",
        "4",
        "-l",
        "50",
        "-s",
        "32",
        "--json",
    ]);
    assert_eq!(v["benchmark"], "hackbench");
    assert_eq!(v["mode"], "native");
    assert_eq!(v["threads"], false);
    assert_eq!(v["pipe"], false);
    assert_eq!(v["groups"], 2);
    assert_eq!(v["fds"], 4);
    assert_eq!(v["loops"], 50);
    assert_eq!(v["datasize"], 32);
    assert_eq!(v["messages"], 2 * 4 * 4 * 50);
    assert_eq!(v["bytes_written"], 2 * 4 * 4 * 50 * 32);
    assert_eq!(v["bytes_read"], v["bytes_written"]);
    let (t, w) = (v["time_s"].as_f64().unwrap(), v["wall_s"].as_f64().unwrap());
    assert!(t > 0.0 && w >= t, "{v}");
}

#[test]
fn hackbench_json_sends_the_text_to_stderr_and_output_file_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hb.json");
    let (so, se) = stdout_of(&[
        "bench",
        "--json",
        "hackbench",
        "-T",
        "-g",
        "1",
        "-f",
        "2",
        "-l",
        "10",
        "--cpus",
        "0",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert!(
        so.trim_start().starts_with('{') && !so.contains("Running"),
        "{so}"
    );
    assert!(
        se.contains("Running in threaded mode with 1 groups") && se.contains("Time: "),
        "{se}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["cpus"], "0");
    assert_eq!(v["messages"], 2 * 2 * 10);
    // Only the final file, no temporary left over.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn hackbench_bad_input_is_one_line_exit_2() {
    fails_with(
        &["bench", "hackbench", "-g", "0"],
        "-g/--groups: must be an integer > 0",
    );
    fails_with(
        &["bench", "hackbench", "-l", "0"],
        "-l/--loops: must be an integer > 0",
    );
    fails_with(&["bench", "hackbench", "--cpus", "1-0"], "--cpus: ");
    fails_with(
        &["bench", "hackbench", "--cpus", "1000"],
        "--cpus: CPU 1000 is not online",
    );
    fails_with(
        &["bench", "hackbench", "--node", "999"],
        "--node: NUMA node 999 does not exist",
    );
    fails_with(
        &["bench", "hackbench", "--cpus", "0", "--node", "0"],
        "--cpus and --node",
    );
    fails_with(&["bench", "hackbench", "--timeout", "-1"], "--timeout");
    // An unwritable --output leaves nothing behind and says which flag.
    fails_with(
        &[
            "bench",
            "hackbench",
            "-g",
            "1",
            "-f",
            "1",
            "-l",
            "1",
            "--output",
            "/nonexistent/x.json",
        ],
        "--output",
    );
}

#[test]
fn hackbench_fd_limit_is_checked_up_front() {
    // 200 groups of 100 in threads need 40000 fds at once; cap the limit
    // low so the check must trip whatever the host's default is.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec {} bench hackbench -T -g 200 -f 100 -l 1",
            assert_cmd::cargo::cargo_bin("schedlab").display()
        ))
        .output()
        .unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(
        se.contains("RLIMIT_NOFILE is 256") && se.contains("ulimit -n"),
        "{se}"
    );
    // Nothing was started: not even the header was printed.
    assert!(out.stdout.is_empty());
}

#[test]
fn hackbench_task_limit_is_checked_up_front() {
    // 4 million tasks: more than threads-max (or pid_max, or the pids
    // cgroup) allows on any ordinary machine.
    let out = schedlab()
        .args(["bench", "hackbench", "-g", "200000", "-f", "10"])
        .output()
        .unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(
        se.contains("this run starts 4000000 tasks but") && se.contains("or lower -g/-f"),
        "{se}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn hackbench_timeout_reaps_and_exits_2() {
    let t0 = Instant::now();
    fails_with(
        &[
            "bench",
            "hackbench",
            "-g",
            "1",
            "-f",
            "2",
            "-l",
            "100000000",
            "--timeout",
            "0.3",
        ],
        "--timeout",
    );
    assert!(t0.elapsed() < Duration::from_secs(30));
}

// ---------------------------------------------------------------------------
// tbench

#[test]
fn tbench_prints_progress_table_and_throughput() {
    let (so, _) = stdout_of(&["bench", "tbench", "2", "--time", "2", "--warmup", "1"]);
    let lines: Vec<&str> = so.lines().collect();
    assert_eq!(
        lines[0], "Running for 2 seconds with load 'builtin' and minimum warmup 1 secs",
        "{so}"
    );
    // "   2      1234   567.89 MB/sec  warmup   1 sec  latency 0.123 ms"
    for phase in ["warmup", "execute"] {
        let want = format!(" MB/sec  {phase} ");
        assert!(
            lines.iter().any(|l| l.starts_with("   2  ")
                && l.contains(&want)
                && l.contains(" sec  latency ")
                && l.ends_with(" ms")),
            "{so}"
        );
    }
    assert!(
        lines.contains(&" Operation      Count    AvgLat    MaxLat"),
        "{so}"
    );
    assert!(lines.iter().any(|l| l.starts_with(" ReadX ")), "{so}");
    let last = lines.last().unwrap();
    let rest = last.strip_prefix("Throughput ").expect(last);
    let (mbs, tail) = rest.split_once(" MB/sec  ").unwrap();
    assert!(mbs.parse::<f64>().unwrap() > 0.0, "{last}");
    assert!(
        tail.starts_with("2 clients  2 procs  max_latency=") && tail.ends_with(" ms"),
        "{last}"
    );
}

#[test]
fn tbench_json_and_custom_loadfile() {
    let dir = tempfile::tempdir().unwrap();
    let lf = dir.path().join("mini.txt");
    std::fs::write(
        &lf,
        "NTCreateX \"\\clients\\client1\\a b.doc\" 0x1 0x2 7 NT_STATUS_OK\n\
         ReadX 7 0 4096 4096 NT_STATUS_OK\n\
         WriteX 7 0 1000 1000 NT_STATUS_OK\n\
         Close 7 NT_STATUS_OK\n",
    )
    .unwrap();
    let v = json_of(&[
        "bench",
        "tbench",
        "1",
        "-t",
        "1",
        "--warmup",
        "0",
        "-c",
        lf.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["benchmark"], "tbench");
    assert_eq!(v["mode"], "native");
    assert_eq!(v["clients"], 1);
    assert_eq!(v["procs"], 1);
    assert_eq!(v["loadfile_ops"], 4);
    assert!(v["throughput_mb_s"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["max_latency_ms"].as_f64().unwrap() >= 0.0, "{v}");
    let ops = v["ops"].as_object().unwrap();
    let names: Vec<&str> = ops.keys().map(|k| k.as_str()).collect();
    assert_eq!(names, ["Close", "NTCreateX", "ReadX", "WriteX"], "{v}");
    // Every pass does one of each, so the counts differ by at most one.
    let c = |k: &str| ops[k]["count"].as_u64().unwrap();
    assert!(c("NTCreateX") >= c("ReadX") && c("ReadX") >= c("WriteX") && c("WriteX") >= c("Close"));
    assert!(c("NTCreateX") - c("Close") <= 1, "{v}");
    // A pass moves 4096 (ReadX) + 1000 (WriteX) payload bytes, the read
    // first: whenever the throughput was sampled, the byte count was a
    // whole number of passes, or that plus one read.
    let bytes = v["bytes"].as_u64().unwrap();
    assert!(bytes > 0 && matches!(bytes % 5096, 0 | 4096), "{bytes}");
    assert!(
        bytes <= 5096 * c("NTCreateX"),
        "{bytes} for {} passes",
        c("NTCreateX")
    );
}

#[test]
fn tbench_bad_input_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let lf = dir.path().join("bad.txt");
    std::fs::write(&lf, "Close 1 NT_STATUS_OK\nFrobnicate 2\n").unwrap();
    fails_with(
        &[
            "bench",
            "tbench",
            "1",
            "-t",
            "1",
            "-c",
            lf.to_str().unwrap(),
        ],
        "line 2: unknown operation",
    );
    fails_with(
        &[
            "bench",
            "tbench",
            "1",
            "-t",
            "1",
            "-c",
            "/nonexistent/client.txt",
        ],
        "--loadfile /nonexistent/client.txt",
    );
    fails_with(
        &["bench", "tbench", "0"],
        "NCLIENTS: 0 is not in 1..=100000",
    );
    fails_with(
        &["bench", "tbench", "1", "--time", "0"],
        "--time: must be an integer > 0",
    );
}

// ---------------------------------------------------------------------------
// schbench

/// A small, quick schbench: 2 workers, tiny matrices, 1 second.
const SCHBENCH_QUICK: [&str; 12] = [
    "bench", "schbench", "-m", "1", "-t", "2", "-r", "1", "-F", "16", "-n", "1",
];

#[test]
fn schbench_prints_the_latency_tables_on_stderr() {
    let (so, se) = stdout_of(&SCHBENCH_QUICK);
    assert!(so.is_empty(), "schbench reports on stderr: {so}");
    let lines: Vec<&str> = se.lines().collect();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix:?} missing in\n{se}"))
    };
    for (title, rows) in [
        (
            "Wakeup Latencies percentiles (usec) runtime ",
            [
                "\t  50.0th: ",
                "\t  90.0th: ",
                "\t* 99.0th: ",
                "\t  99.9th: ",
            ],
        ),
        (
            "Request Latencies percentiles (usec) runtime ",
            [
                "\t  50.0th: ",
                "\t  90.0th: ",
                "\t* 99.0th: ",
                "\t  99.9th: ",
            ],
        ),
    ] {
        let i = at(title);
        assert!(
            lines[i].contains(" (s) (") && lines[i].ends_with(" total samples)"),
            "{se}"
        );
        for (k, row) in rows.iter().enumerate() {
            assert!(
                lines[i + 1 + k].starts_with(row) && lines[i + 1 + k].ends_with(" samples)"),
                "{se}"
            );
        }
        assert!(lines[i + 5].starts_with("\t  min="), "{se}");
    }
    let i = at("RPS percentiles (requests) runtime ");
    assert!(
        lines[i + 1].starts_with("\t  20.0th: ") && lines[i + 2].starts_with("\t* 50.0th: "),
        "{se}"
    );
    assert!(lines[at("average rps: ")].len() > "average rps: ".len());
    assert!(lines[at("sched delay: message ")].ends_with(" (usec)"));
}

#[test]
fn schbench_json_uses_the_shared_field_names() {
    let mut args = SCHBENCH_QUICK.to_vec();
    args.extend(["--json", "-s", "200"]);
    let v = json_of(&args);
    assert_eq!(v["benchmark"], "schbench");
    assert_eq!(v["mode"], "native");
    assert_eq!(v["worker_threads"], 2);
    for table in ["wakeup_latency_us", "request_latency_us"] {
        for k in ["p50", "p90", "p99", "p99.9", "min", "max", "samples"] {
            assert!(v[table][k].is_u64(), "{table}.{k} in {v}");
        }
    }
    // The request includes the 200 us sleep; percentiles are ordered.
    let req = &v["request_latency_us"];
    assert!(
        req["samples"].as_u64().unwrap() > 0 && req["min"].as_u64().unwrap() >= 200,
        "{v}"
    );
    let p = |k: &str| req[k].as_u64().unwrap();
    assert!(
        p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("p99.9"),
        "{v}"
    );
    for k in ["p20", "p50", "p90", "min", "max", "samples"] {
        assert!(v["rps"][k].is_u64(), "rps.{k} in {v}");
    }
    assert!(v["average_rps"].as_f64().unwrap() > 0.0);
}

#[test]
fn schbench_bad_input_is_one_line_exit_2() {
    fails_with(
        &["bench", "schbench", "-m", "0", "-r", "1"],
        "-m: must be between 1 and 10000",
    );
    fails_with(
        &["bench", "schbench", "-t", "0", "-r", "1"],
        "-t: must be an integer > 0",
    );
    fails_with(
        &["bench", "schbench", "-m", "1000", "-t", "1000", "-r", "1"],
        "-m/-t: ",
    );
}

// ---------------------------------------------------------------------------
// SIGINT: no child survives.

/// Pids whose parent is `pid` (from /proc/*/stat).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // Field 4 (ppid) follows the ")" that closes the command name.
        let Some(rest) = stat.rsplit_once(')').map(|x| x.1) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(1).and_then(|x| x.parse::<u32>().ok()) == Some(pid) {
            out.push(p);
        }
    }
    out
}

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Starts `args`, waits until `ready` says the run is under way, sends
/// SIGINT to the schedlab process only, and checks that it exits 130 and
/// that none of the processes it forked is left.
fn sigint_leaves_nothing(args: &[&str], ready: impl Fn(u32) -> bool) {
    sigint_case(args, ready, false)
}

/// As [`sigint_leaves_nothing`], but the run gets its own process group
/// and SIGINT goes to the whole group, as Ctrl-C in a terminal does: the
/// forked children get it too.
fn ctrl_c_leaves_nothing(args: &[&str], ready: impl Fn(u32) -> bool) {
    sigint_case(args, ready, true)
}

fn sigint_case(args: &[&str], ready: impl Fn(u32) -> bool, to_group: bool) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("schedlab"));
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    if to_group {
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    while !ready(pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{args:?} never got under way"
        );
        assert!(child.try_wait().unwrap().is_none(), "{args:?} exited early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kids = children_of(pid);
    let target = if to_group { -(pid as i32) } else { pid as i32 };
    // SAFETY: signalling the child we spawned (or its own process group).
    assert_eq!(unsafe { libc::kill(target, libc::SIGINT) }, 0);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{args:?}: {err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    for k in kids {
        assert!(
            !std::path::Path::new(&format!("/proc/{k}")).exists(),
            "{args:?}: child {k} survived"
        );
    }
}

fn cpus_allowed(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

#[test]
fn sigint_hackbench_processes_leaves_no_child() {
    // 2 groups of 3 senders + 3 receivers: 12 forked children, all pinned
    // to CPU 0 by --cpus.
    sigint_leaves_nothing(
        &[
            "bench",
            "hackbench",
            "-g",
            "2",
            "-f",
            "3",
            "-l",
            "100000000",
            "--cpus",
            "0",
        ],
        |pid| {
            let kids = children_of(pid);
            if kids.len() < 12 {
                return false;
            }
            for k in kids {
                assert_eq!(
                    cpus_allowed(k).as_deref(),
                    Some("0"),
                    "child {k} is not pinned"
                );
            }
            true
        },
    );
}

#[test]
fn sigint_hackbench_threads_stops_cleanly() {
    sigint_leaves_nothing(
        &[
            "bench",
            "hackbench",
            "-T",
            "-p",
            "-g",
            "2",
            "-f",
            "3",
            "-l",
            "100000000",
        ],
        |pid| threads_of(pid) >= 13,
    );
}

#[test]
fn sigint_tbench_leaves_no_child() {
    // 2 clients + 2 server processes.
    sigint_leaves_nothing(&["bench", "tbench", "2", "--time", "600"], |pid| {
        children_of(pid).len() == 4
    });
}

#[test]
fn sigint_schbench_stops_cleanly() {
    // 1 message thread + 2 workers + main.
    sigint_leaves_nothing(
        &[
            "bench", "schbench", "-t", "2", "-r", "0", "-F", "16", "-n", "1",
        ],
        |pid| threads_of(pid) >= 4,
    );
}

#[test]
fn ctrl_c_hackbench_processes_leaves_no_child() {
    ctrl_c_leaves_nothing(
        &[
            "bench",
            "hackbench",
            "-p",
            "-g",
            "2",
            "-f",
            "3",
            "-l",
            "100000000",
        ],
        |pid| children_of(pid).len() == 12,
    );
}

#[test]
fn ctrl_c_tbench_leaves_no_child() {
    ctrl_c_leaves_nothing(&["bench", "tbench", "2", "--time", "600"], |pid| {
        children_of(pid).len() == 4
    });
}
