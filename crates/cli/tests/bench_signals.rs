//! `schedlab bench` stopped by a signal: SIGHUP and SIGTERM are handled
//! like SIGINT (every task reaped, the shell's status 128 + N), and a
//! SIGKILLed run takes its forked tasks with it. Checked through /proc.
#![cfg(target_os = "linux")]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `/proc/PID/stat` fields after the command name: state, ppid, pgrp, ...
fn stat_of(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(String::from).collect())
}

/// Live processes (zombies excluded: they run nothing, and an orphan's
/// zombie waits for init to reap it) for which `pick(ppid, pgrp)` holds.
fn processes(pick: impl Fn(u32, u32) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Some(f) = stat_of(pid) else { continue };
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u32>().ok());
        if f[0] != "Z" && f[0] != "X" && pick(num(1).unwrap_or(0), num(2).unwrap_or(0)) {
            out.push(pid);
        }
    }
    out
}

fn children_of(pid: u32) -> Vec<u32> {
    processes(|ppid, _| ppid == pid)
}

/// Starts `args` in a process group of its own (so that what is left of
/// it can be found by group) and waits until it has `kids` children.
fn start(args: &[&str], kids: usize) -> Child {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while children_of(child.id()).len() < kids {
        assert!(child.try_wait().unwrap().is_none(), "{args:?} exited early");
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} never started its {kids} processes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Waits (at most a minute) for `child` to exit.
fn wait(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{what}: did not stop");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls for two seconds until no live process of group `pgrp` and none of
/// `kids` is left.
fn assert_all_gone(pgrp: u32, kids: &[u32], what: &str) {
    let t0 = Instant::now();
    loop {
        let left: Vec<u32> = processes(|_, g| g == pgrp)
            .into_iter()
            .chain(
                kids.iter()
                    .copied()
                    .filter(|&k| stat_of(k).is_some_and(|f| f[0] != "Z" && f[0] != "X")),
            )
            .collect();
        if left.is_empty() {
            return;
        }
        if t0.elapsed() > Duration::from_secs(2) {
            for &p in &left {
                // SAFETY: cleaning up the processes this test started.
                unsafe { libc::kill(p as i32, libc::SIGKILL) };
            }
            panic!("{what}: processes left running: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// hackbench with enough work to run for minutes: 4 groups of 20 senders
/// and 20 receivers, 160 forked processes.
const HACKBENCH: &[&str] = &["bench", "hackbench", "-g", "4", "-l", "200000000"];

/// Sends `sig` to the schedlab process only and checks the exit status,
/// the message and that every forked task is gone.
fn stop_with(sig: i32, name: &str, status: i32, args: &[&str], kids: usize) {
    let mut child = start(args, kids);
    let pid = child.id();
    let forked = children_of(pid);
    // SAFETY: signalling the process we spawned.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
    let st = wait(&mut child, name);
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(st.code(), Some(status), "{args:?} after {name}: {err}");
    assert!(
        err.contains(&format!("interrupted by {name}")),
        "{args:?}: {err}"
    );
    assert_all_gone(pid, &forked, &format!("{args:?} after {name}"));
}

#[test]
fn sighup_stops_hackbench_exit_129_reaps_everything() {
    stop_with(libc::SIGHUP, "SIGHUP", 129, HACKBENCH, 160);
}

#[test]
fn sigterm_stops_hackbench_exit_143_reaps_everything() {
    stop_with(libc::SIGTERM, "SIGTERM", 143, HACKBENCH, 160);
}

#[test]
fn sigint_still_exits_130() {
    stop_with(libc::SIGINT, "SIGINT", 130, HACKBENCH, 160);
}

#[test]
fn sighup_and_sigterm_stop_tbench() {
    // 2 clients + 2 server processes.
    let tbench = ["bench", "tbench", "2", "--time", "600"];
    stop_with(libc::SIGHUP, "SIGHUP", 129, &tbench, 4);
    stop_with(libc::SIGTERM, "SIGTERM", 143, &tbench, 4);
}

#[test]
fn sighup_to_the_whole_group_as_a_terminal_hangup_sends_it() {
    // The children get the SIGHUP too and die of it; the run still reports
    // the interruption, not a failed task.
    let mut child = start(HACKBENCH, 160);
    let pid = child.id();
    let forked = children_of(pid);
    // SAFETY: signalling the process group of the process we spawned.
    assert_eq!(unsafe { libc::kill(-(pid as i32), libc::SIGHUP) }, 0);
    let st = wait(&mut child, "group SIGHUP");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(st.code(), Some(129), "{err}");
    assert!(err.contains("interrupted by SIGHUP"), "{err}");
    assert_all_gone(pid, &forked, "group SIGHUP");
}

/// SIGKILL cannot be caught: the forked tasks must die with the parent
/// (their parent-death signal), not run on as orphans.
fn sigkill_takes_the_children(args: &[&str], kids: usize) {
    let mut child = start(args, kids);
    let pid = child.id();
    let forked = children_of(pid);
    assert!(forked.len() >= kids);
    child.kill().unwrap(); // SIGKILL
    let st = wait(&mut child, "SIGKILL");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(libc::SIGKILL)
    );
    assert_all_gone(pid, &forked, &format!("{args:?} after SIGKILL"));
}

#[test]
fn sigkill_of_hackbench_leaves_no_process() {
    sigkill_takes_the_children(HACKBENCH, 160);
}

#[test]
fn sigkill_of_tbench_leaves_no_process() {
    sigkill_takes_the_children(&["bench", "tbench", "2", "--time", "600"], 4);
}

/// tbench prints a progress line every second: once its reader has gone
/// (`| head`), the next line fails with EPIPE and the run stops there,
/// every task reaped, exit 0 and nothing said, instead of running out its
/// minute.
#[test]
fn tbench_stops_when_its_stdout_reader_goes_away() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let args = ["bench", "tbench", "2", "--time", "60"];
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    // read up to the first progress line of the warm-up: mid-run, with
    // the 2 clients and 2 servers forked
    let mut line = String::new();
    while !line.contains("MB/sec  warmup") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "stdout ended before a progress line"
        );
    }
    let forked = children_of(pid);
    assert_eq!(forked.len(), 4, "{forked:?}");
    let t0 = Instant::now();
    drop(out); // the reader goes away
    let st = wait(&mut child, "closed stdout");
    let took = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(st.code(), Some(0), "{err}");
    assert_eq!(err, "", "a closed stdout is not an error");
    // a generous bound: the next progress line is due within a second
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_all_gone(pid, &forked, "tbench after its stdout closed");
}

/// `compare` with a native variant: a signal during its native run stops
/// it as it stops `bench` (every task reaped, the shell's status 128 + N),
/// and the runs done so far stay in the log.
#[test]
fn sigterm_and_sighup_stop_a_native_compare() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("native.toml");
    std::fs::write(
        &exp,
        "name = \"nat\"\niterations = 1\nmetrics = [\"time\"]\n\
         [run]\nmachine = \"xeon-12c24t\"\nbenchmark = \"hackbench\"\ngroups = 4\nloops = 200000000\n\
         [[variant]]\nname = \"native\"\nmode = \"native\"\n",
    )
    .unwrap();
    for (sig, name, status) in [
        (libc::SIGTERM, "SIGTERM", 143),
        (libc::SIGHUP, "SIGHUP", 129),
    ] {
        let log = dir.path().join(format!("{name}.jsonl"));
        let args = [
            "compare",
            exp.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ];
        stop_with(sig, name, status, &args, 160);
        assert!(log.exists(), "{name}: the log was written");
    }
}
