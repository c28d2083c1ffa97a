//! The real rt-app on this host (Debian's `rt-app` package, release 1.0;
//! github.com/scheduler-tools/rt-app): the file is given to it with its
//! `logdir` pointed at a private temporary directory, and its per-thread
//! logs are read back into the same summary the simulator reports
//! (benchspec's `rtapp::log`). Unlike the ports, rt-app is a separate
//! program: it pins nothing here (its file's `cpus` do), and it must be
//! installed (`apt-get install rt-app`).

use crate::{Error, Result};
use benchspec::rtapp::log::{self, ThreadSummary};
use benchspec::rtapp::{self as grammar, LogSize, RtApp};
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to run an rt-app file.
#[derive(Clone, Debug)]
pub struct RtappConfig {
    /// The file's text.
    pub text: String,
    /// Kill rt-app after this long (None: the file's duration plus 60 s).
    pub timeout: Option<Duration>,
    /// Copy rt-app's logs here when it is done.
    pub keep_logs: Option<PathBuf>,
    /// Start rt-app in a session of its own at this nice value, its
    /// autogroup too (setsid, setpriority and /proc/self/autogroup before
    /// exec; its threads inherit it unless the file gives them a
    /// `priority`): -20 shields the measurement from other load on a shared
    /// host. Lowering nice needs CAP_SYS_NICE.
    pub nice: Option<i32>,
}

/// What a native rt-app run gives: per-thread summaries of its logs.
#[derive(Clone, Debug, Serialize)]
pub struct RtappReport {
    /// "rtapp".
    pub benchmark: &'static str,
    /// "native".
    pub mode: &'static str,
    /// Wall time of the rt-app process, s.
    pub time_s: f64,
    /// rt-app's calibration (its "pLoad = N ns" line), when it calibrated.
    pub ns_per_loop: Option<u64>,
    /// The per-thread summaries, as the simulator's `rtapp` field.
    pub rtapp: RtappThreads,
}

/// Per-thread summaries.
#[derive(Clone, Debug, Serialize)]
pub struct RtappThreads {
    /// One per thread, in rt-app's order.
    pub threads: Vec<ThreadSummary>,
}

/// The rt-app binary on PATH.
pub fn find_rtapp() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("rt-app"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::Task(
                "rt-app is not installed (no `rt-app` on PATH; Debian/Ubuntu: apt-get install rt-app)"
                    .into(),
            )
        })
}

fn invalid(problem: String) -> Error {
    Error::InvalidArg {
        flag: "rt-app file",
        problem,
    }
}

/// Check that `app` can run natively and end by itself.
pub fn validate(app: &RtApp) -> Result<()> {
    // rt-app 1.0 (Debian's, the one run here) has no `fork` event (it came
    // later: rt-app master, commit 3a7f07a) and needs every task to make a
    // thread at start: refused rather than run differently
    if let Some(t) = app.forked_tasks().first() {
        return Err(invalid(format!(
            "a `fork` event (of `{}`): rt-app 1.0, which the native run uses, has no fork event; simulate the file with `schedlab sim rtapp` instead",
            t.name
        )));
    }
    if let Some(t) = app.tasks.iter().find(|t| t.instance == 0) {
        return Err(invalid(format!(
            "`tasks.{}.instance` is 0: rt-app 1.0, which the native run uses, needs at least 1 (templates for `fork` are newer)",
            t.name
        )));
    }
    if app.global.log_size == LogSize::Disable {
        return Err(invalid(
            "`global.log_size` is \"disable\": rt-app would write no log to read".into(),
        ));
    }
    let finite = app
        .tasks
        .iter()
        .all(|t| t.loops.is_some() && t.phases.iter().all(|p| p.loops.is_some()));
    if app.global.duration_s.is_none() && !finite {
        return Err(invalid(
            "`global.duration` is -1 and a task loops forever: the run would never end".into(),
        ));
    }
    Ok(())
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sys(what: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Sys {
        what: what.to_string(),
        source,
    }
}

/// Run rt-app on the file and read its logs.
pub fn run(cfg: &RtappConfig) -> Result<RtappReport> {
    let app = grammar::parse(&cfg.text).map_err(|e| invalid(e.to_string()))?;
    validate(&app)?;
    let bin = find_rtapp()?;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("schedlab-rtapp-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(sys("creating rt-app's log directory"))?;
    let dir = TempDir(dir);
    let text = grammar::with_logdir(&cfg.text, &dir.0.to_string_lossy())
        .map_err(|e| invalid(e.to_string()))?;
    let file = dir.0.join("workload.json");
    std::fs::write(&file, text).map_err(sys("writing rt-app's file"))?;
    let out = std::fs::File::create(dir.0.join("output")).map_err(sys("rt-app output"))?;
    let err = out.try_clone().map_err(sys("rt-app output"))?;
    let mut cmd = Command::new(&bin);
    cmd.arg(&file).stdin(Stdio::null()).stdout(out).stderr(err);
    if let Some(n) = cfg.nice {
        if !(-20..=19).contains(&n) {
            return Err(invalid(format!("nice {n}: must be -20..19")));
        }
    }
    let nice = cfg.nice;
    // the autogroup's nice, formatted before the fork
    let group_nice = nice.map(|n| n.to_string().into_bytes());
    // SAFETY: prctl, setsid, setpriority, open, write and close are
    // async-signal-safe, and nothing is allocated after the fork; rt-app
    // dies with this process.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if let (Some(n), Some(g)) = (nice, &group_nice) {
                // With autogroup scheduling (CONFIG_SCHED_AUTOGROUP,
                // kernel.sched_autogroup_enabled, kernel/sched/autogroup.c)
                // each session's tasks share one group entity and a thread's
                // nice only weighs inside its group: a session of its own
                // whose group has the nice value too.
                libc::setsid();
                if libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let fd = libc::open(c"/proc/self/autogroup".as_ptr(), libc::O_WRONLY);
                if fd >= 0 {
                    libc::write(fd, g.as_ptr().cast(), g.len());
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    let timeout = cfg.timeout.unwrap_or_else(|| {
        Duration::from_secs(app.global.duration_s.map_or(3600, |d| d as u64) + 60)
    });
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(sys("starting rt-app"))?;
    let mut threads_seen = BTreeMap::new();
    let status = loop {
        sample_threads(child.id(), &mut threads_seen);
        if let Some(s) = child.try_wait().map_err(sys("waiting for rt-app"))? {
            break s;
        }
        if t0.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Timeout(timeout));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let time_s = t0.elapsed().as_secs_f64();
    let output = std::fs::read_to_string(dir.0.join("output")).unwrap_or_default();
    if !status.success() {
        let last = output
            .lines()
            .rev()
            .find(|l| l.contains("<crit>") || l.contains("<error>"))
            .or_else(|| output.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("no output");
        return Err(Error::Task(format!(
            "rt-app failed ({status}): {}",
            last.trim()
        )));
    }
    let ns_per_loop = output.lines().find_map(|l| {
        let rest = l.split("pLoad = ").nth(1)?;
        rest.split("ns").next()?.trim().parse().ok()
    });
    let cpu = cpu_times(&app, &threads_seen);
    let mut threads = Vec::new();
    for th in app.threads() {
        let name = format!("{}-{}.log", app.global.log_basename, th.label());
        let path = dir.0.join(&name);
        let text =
            std::fs::read_to_string(&path).map_err(sys(&format!("reading rt-app's log {name}")))?;
        let rows = log::parse(&text).map_err(|e| Error::Task(format!("rt-app log {name}: {e}")))?;
        let mut summary = ThreadSummary::of(&th.label(), &rows);
        if let Some(ns) = cpu.as_ref().map(|c| c[th.ind as usize]) {
            summary = summary.with_cpu_time(&rows, ns);
        }
        threads.push(summary);
        if let Some(keep) = &cfg.keep_logs {
            copy_log(&path, &keep.join(&name))?;
        }
    }
    Ok(RtappReport {
        benchmark: "rtapp",
        mode: "native",
        time_s,
        ns_per_loop,
        rtapp: RtappThreads { threads },
    })
}

/// Record, for every thread of process `pid`, its name and the CPU time
/// it has consumed (`/proc/PID/task/TID/schedstat`'s first field, the
/// scheduler's sum_exec_runtime in ns). Sampled every 20 ms while rt-app
/// runs, so a thread's last 20 ms before it exits may be missed.
fn sample_threads(pid: u32, seen: &mut BTreeMap<u32, (String, u64)>) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let base = e.path();
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(base.join("comm")),
            std::fs::read_to_string(base.join("schedstat")),
        ) else {
            continue;
        };
        let Some(ns) = stat.split_whitespace().next().and_then(|v| v.parse().ok()) else {
            continue;
        };
        let entry = seen.entry(tid).or_insert((String::new(), 0));
        entry.0 = comm.trim_end().to_string();
        entry.1 = entry.1.max(ns);
    }
}

/// The CPU time of each rt-app thread by its index: rt-app names each
/// thread after its task (`pthread_setname_np`, 15 characters at most) and
/// creates them in index order, so the instances of a task are its named
/// threads in the order of their ids. None when the threads seen do not
/// match the file (a name too long to set, a thread never sampled).
fn cpu_times(app: &RtApp, seen: &BTreeMap<u32, (String, u64)>) -> Option<Vec<u64>> {
    let mut out = vec![0; app.nr_threads() as usize];
    for def in &app.tasks {
        let comm: String = def.name.chars().take(15).collect();
        let tids: Vec<u64> = seen
            .values()
            .filter(|(c, _)| *c == comm)
            .map(|(_, ns)| *ns)
            .collect();
        let inds: Vec<u32> = app
            .threads()
            .filter(|t| std::ptr::eq(t.def, def))
            .map(|t| t.ind)
            .collect();
        if tids.len() != inds.len() {
            return None;
        }
        for (ind, ns) in inds.into_iter().zip(tids) {
            out[ind as usize] = ns;
        }
    }
    Some(out)
}

fn copy_log(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(sys(&format!("copying the log to {}", to.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_never_ends_is_refused() {
        let app = grammar::parse(r#"{"tasks": {"t": {"run": 1}}}"#).unwrap();
        assert!(validate(&app)
            .unwrap_err()
            .to_string()
            .contains("never end"));
        let app = grammar::parse(r#"{"tasks": {"t": {"loop": 3, "run": 1}}}"#).unwrap();
        assert!(validate(&app).is_ok());
        let app = grammar::parse(
            r#"{"global": {"duration": 1, "log_size": "disable"}, "tasks": {"t": {"run": 1}}}"#,
        )
        .unwrap();
        assert!(validate(&app).unwrap_err().to_string().contains("log_size"));
        let app = grammar::parse(
            r#"{"tasks": {"main": {"loop": 2, "fork": "w", "run": 1}, "w": {"instance": 0, "loop": 1, "run": 1}}}"#,
        )
        .unwrap();
        let e = validate(&app).unwrap_err().to_string();
        assert!(e.contains("fork") && e.contains("rt-app 1.0"), "{e}");
    }

    /// The real rt-app (CI installs it: .ci/run).
    #[test]
    #[cfg_attr(
        not(has_rt_app),
        ignore = "needs rt-app (apt-get install rt-app; .ci/run installs it), absent when this test was built"
    )]
    fn runs_the_real_rt_app() {
        find_rtapp().expect("this test needs rt-app (apt-get install rt-app)");
        let cfg = RtappConfig {
            text: r#"{"global": {"duration": 1, "calibration": 20},
                      "tasks": {"t": {"instance": 2, "run": 1000, "timer": {"ref": "unique", "period": 10000}}}}"#
                .into(),
            timeout: None,
            keep_logs: None,
            nice: None,
        };
        let r = run(&cfg).unwrap();
        assert_eq!(r.rtapp.threads.len(), 2);
        assert_eq!(r.rtapp.threads[1].thread, "t-1");
        for t in &r.rtapp.threads {
            // about 100 periods of 10 ms in 1 s (fewer on a busy host)
            assert!(t.rows >= 20 && t.rows <= 101, "{t:?}");
            // 1 ms of 10: about 10 % of a CPU, measured from /proc
            let cpu = t.cpu_time_pct.expect("sampled");
            assert!(cpu > 2.0 && cpu < 30.0, "{t:?}");
        }
    }
}
