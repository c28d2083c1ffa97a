//! hackbench, following rt-tests `hackbench` (src/hackbench/hackbench.c).
//!
//! `G` groups of `F` senders and `F` receivers. Each receiver owns one
//! channel (a unix stream socketpair, or a pipe with `-p`); every sender of
//! the group writes `loops` messages of `datasize` bytes to every receiver
//! of the group, and each receiver reads `F * loops` messages. Tasks are
//! forked processes (the default, `-P`) or threads (`-T`).
//!
//! Start protocol: every task writes one byte to a shared "ready" pipe and
//! then polls a shared "wake" pipe; the main task collects one ready byte
//! per task, takes the start time and writes one byte to the wake pipe
//! that nobody consumes, so every task becomes runnable at once. `Time:`
//! runs from that write until every task has exited and been reaped.
//!
//! Process mode forks every task before the run starts any thread, and a
//! child only runs raw read/write/poll loops on memory prepared before the
//! fork, then `_exit`s (async-signal-safe work only).

use crate::cpus::{self, AffinityGuard, CpuSelection};
use crate::error::{Error, Result};
use crate::limits;
use crate::sys::{self, Children, Event, Fd, SharedSlice, SignalGuard, ThreadDone};
pub use benchspec::hackbench::Hackbench;
use serde::Serialize;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Stack size of a thread-mode task. rt-tests uses PTHREAD_STACK_MIN
/// (16 KiB); Rust's thread start-up needs a little more headroom.
const THREAD_STACK: usize = 64 * 1024;

/// A hackbench run: the benchmark's own parameters (shared with the
/// simulator, rt-tests' defaults) plus how to run it on this host. Derefs to
/// the parameters, so `cfg.groups`, `cfg.header()` read through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HackbenchConfig {
    /// `-g -f -l -s -p -T/-P`.
    pub bench: Hackbench,
    /// `--cpus` / `--node`: affinity of every task.
    pub cpus: CpuSelection,
    /// `--timeout`: give up (and reap everything) after this long.
    pub timeout: Option<Duration>,
}

impl Default for HackbenchConfig {
    fn default() -> Self {
        HackbenchConfig {
            bench: Hackbench::default(),
            cpus: CpuSelection::Inherit,
            timeout: None,
        }
    }
}

impl std::ops::Deref for HackbenchConfig {
    type Target = Hackbench;
    fn deref(&self) -> &Hackbench {
        &self.bench
    }
}

impl HackbenchConfig {
    /// Checks every value (rt-tests requires integers > 0), the derived
    /// sizes, the CPU selection and the fd/process limits, naming the flag
    /// or limit at fault. [`run`] calls it too.
    pub fn validate(&self) -> Result<()> {
        self.bench.validate()?;
        if self.tasks() > 1 << 22 {
            return Err(Error::arg(
                "-g/-f",
                format!(
                    "{} tasks is more than this port supports (4194304)",
                    self.tasks()
                ),
            ));
        }
        limits::check_memory(self.tasks() * self.datasize as u64, "-s")?;
        cpus::resolve(&self.cpus)?;
        // A process-mode parent holds one group's channels at a time; a
        // thread run holds them all. Plus the ready, wake and exit pipes.
        let fds_needed =
            6 + 2 * self.fds as u64 * if self.threads { self.groups as u64 } else { 1 };
        limits::check_fds(fds_needed, "-g/-f")?;
        limits::check_tasks(self.tasks(), "-g/-f")
    }
}

/// What a hackbench run measured. Field names match the simulator's JSON
/// where the meaning is the same.
#[derive(Debug, Clone, Serialize)]
pub struct HackbenchReport {
    /// Always `"hackbench"`.
    pub benchmark: &'static str,
    /// Always `"native"`.
    pub mode: &'static str,
    /// The `Time:` figure in seconds (full precision; the text line
    /// truncates to milliseconds).
    pub time_s: f64,
    /// Wall time of the whole run including task creation, in seconds.
    pub wall_s: f64,
    /// Messages received.
    pub messages: u64,
    /// Payload bytes written by all senders.
    pub bytes_written: u64,
    /// Payload bytes read by all receivers.
    pub bytes_read: u64,
    /// `-g`.
    pub groups: u32,
    /// `-f`.
    pub fds: u32,
    /// `-l`.
    pub loops: u32,
    /// `-s`.
    pub datasize: u32,
    /// `-T`.
    pub threads: bool,
    /// `-p`.
    pub pipe: bool,
    /// `2 * F * G`.
    pub tasks: u64,
    /// The CPU list the tasks were pinned to, if any.
    pub cpus: Option<String>,
    #[serde(skip)]
    time: Duration,
}

impl HackbenchReport {
    /// The measured interval (go until every task exited).
    pub fn time(&self) -> Duration {
        self.time
    }

    /// rt-tests' last line: `Time: %lu.%03lu` with truncated milliseconds.
    pub fn time_line(&self) -> String {
        format_time_line(self.time)
    }
}

/// `Time: S.mmm` with the milliseconds truncated, not rounded.
pub fn format_time_line(d: Duration) -> String {
    Hackbench::time_line(d.as_nanos() as u64)
}

/// Runs hackbench with `cfg`. Prints nothing; see
/// [`Hackbench::header`] and [`HackbenchReport::time_line`].
pub fn run(cfg: &HackbenchConfig) -> Result<HackbenchReport> {
    cfg.validate()?;
    let pinned = cpus::resolve(&cfg.cpus)?;
    let flag = if matches!(cfg.cpus, CpuSelection::Node(_)) {
        "--node"
    } else {
        "--cpus"
    };

    let wall0 = Instant::now();
    let deadline = cfg.timeout.map(|t| wall0 + t);
    let _aff = AffinityGuard::set(pinned.as_deref(), flag)?;
    let sig = SignalGuard::install()?;
    let counters = SharedSlice::<AtomicU64>::new(3)?;
    let time = if cfg.threads {
        run_threads(cfg, &sig, deadline, &counters)
    } else {
        run_processes(cfg, &sig, deadline, &counters)
    }
    .map_err(|e| sig.explain(e))?;
    let wall = wall0.elapsed();
    let (written, read, messages) = (
        counters[0].load(Ordering::SeqCst),
        counters[1].load(Ordering::SeqCst),
        counters[2].load(Ordering::SeqCst),
    );
    if written != read || messages != cfg.messages() {
        return Err(Error::Task(format!(
            "hackbench accounting mismatch: {written} bytes written, {read} read, {messages} of {} messages",
            cfg.messages()
        )));
    }
    Ok(HackbenchReport {
        benchmark: "hackbench",
        mode: "native",
        time_s: time.as_secs_f64(),
        wall_s: wall.as_secs_f64(),
        messages,
        bytes_written: written,
        bytes_read: read,
        groups: cfg.groups,
        fds: cfg.fds,
        loops: cfg.loops,
        datasize: cfg.datasize,
        threads: cfg.threads,
        pipe: cfg.pipe,
        tasks: cfg.tasks(),
        cpus: pinned.map(|c| cpus::format_cpu_list(&c)),
        time,
    })
}

fn channel(pipe: bool) -> Result<(Fd, Fd)> {
    if pipe {
        sys::pipe()
    } else {
        sys::socketpair()
    }
}

/// The messaging part of a receiver: `count` messages of `buf.len()`.
#[inline]
fn receive(
    fd: RawFd,
    buf: &mut [u8],
    count: u64,
    stop: Option<&AtomicBool>,
    counters: &[AtomicU64],
) -> bool {
    for _ in 0..count {
        if !sys::read_full(fd, buf, stop) {
            return false;
        }
    }
    counters[1].fetch_add(count * buf.len() as u64, Ordering::Relaxed);
    counters[2].fetch_add(count, Ordering::Relaxed);
    true
}

/// The messaging part of a sender: `loops` rounds over every channel.
#[inline]
fn send(
    fds: &[RawFd],
    buf: &[u8],
    loops: u32,
    stop: Option<&AtomicBool>,
    counters: &[AtomicU64],
) -> bool {
    for _ in 0..loops {
        for &fd in fds {
            if !sys::write_full(fd, buf, stop) {
                return false;
            }
        }
    }
    counters[0].fetch_add(
        loops as u64 * fds.len() as u64 * buf.len() as u64,
        Ordering::Relaxed,
    );
    true
}

/// Ready/go: one byte to the ready pipe, then wait for the wake pipe.
#[inline]
fn ready_and_wait(ready_wr: RawFd, wake_rd: RawFd, stop: Option<&AtomicBool>) -> bool {
    sys::write_full(ready_wr, b"R", stop) && sys::wait_readable(wake_rd, stop)
}

/// Collects one ready byte per task. `fail_fd` becoming readable means a
/// task failed (or, in process mode, every task is gone).
fn collect_ready(
    sig: &SignalGuard,
    ready_rd: RawFd,
    fail_fd: RawFd,
    tasks: u64,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
) -> Result<()> {
    let mut got = 0u64;
    let mut buf = [0u8; 512];
    while got < tasks {
        match sys::wait_event(sig, &[ready_rd, fail_fd], deadline)? {
            Event::Ready(0) => {
                let want = (tasks - got).min(buf.len() as u64) as usize;
                // SAFETY: reading into a local buffer; poll said readable.
                let n = unsafe { libc::read(ready_rd, buf.as_mut_ptr().cast(), want) };
                if n == 0 {
                    return Err(Error::Task(format!(
                        "{} hackbench tasks exited before they were ready",
                        tasks - got
                    )));
                }
                if n > 0 {
                    got += n as u64;
                }
            }
            Event::Ready(_) => {
                return Err(Error::Task("a hackbench task failed while starting".into()))
            }
            Event::Signal(s) => return Err(Error::Interrupted(s)),
            Event::Deadline => return Err(timeout_error(timeout)),
        }
    }
    Ok(())
}

fn timeout_error(timeout: Option<Duration>) -> Error {
    Error::Timeout(timeout.unwrap_or_default())
}

fn go(wake_wr: &Fd) -> Result<Instant> {
    let start = Instant::now();
    if !sys::write_full(wake_wr.raw(), b"G", None) {
        return Err(Error::io(
            "writing the wake pipe",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(start)
}

fn run_processes(
    cfg: &HackbenchConfig,
    sig: &SignalGuard,
    deadline: Option<Instant>,
    counters: &SharedSlice<AtomicU64>,
) -> Result<Duration> {
    let (ready_rd, ready_wr) = sys::pipe()?;
    let (wake_rd, wake_wr) = sys::pipe()?;
    let mut kids = Children::new()?;
    let ds = cfg.datasize as usize;
    let send_buf = vec![b'-'; ds];
    let mut recv_buf = vec![0u8; ds];
    let count = cfg.fds as u64 * cfg.loops as u64;
    let (ready_w, ready_r, wake_r, wake_w) =
        (ready_wr.raw(), ready_rd.raw(), wake_rd.raw(), wake_wr.raw());
    let ctr: &[AtomicU64] = counters;

    for _g in 0..cfg.groups {
        let chans = (0..cfg.fds)
            .map(|_| channel(cfg.pipe))
            .collect::<Result<Vec<_>>>()?;
        // Prepared before forking: the children must not allocate.
        let rfds: Vec<RawFd> = chans.iter().map(|c| c.0.raw()).collect();
        let wfds: Vec<RawFd> = chans.iter().map(|c| c.1.raw()).collect();
        let close = |keep: RawFd, list: &[RawFd]| {
            for &fd in list {
                if fd != keep {
                    // SAFETY: closing the child's copies of unused fds.
                    unsafe { libc::close(fd) };
                }
            }
        };
        let start = || {
            // SAFETY: closing the child's copies of the parent-only ends.
            unsafe {
                libc::close(ready_r);
                libc::close(wake_w);
            }
            let ok = ready_and_wait(ready_w, wake_r, None);
            // SAFETY: the ready pipe is no longer needed.
            unsafe { libc::close(ready_w) };
            ok
        };
        for j in 0..cfg.fds as usize {
            let (rfds, wfds, buf) = (&rfds, &wfds, &mut recv_buf);
            kids.spawn(move |_ctx| {
                close(rfds[j], rfds);
                close(-1, wfds);
                start() && receive(rfds[j], buf, count, None, ctr)
            })?;
        }
        for _j in 0..cfg.fds {
            let (rfds, wfds, buf) = (&rfds, &wfds, &send_buf);
            kids.spawn(move |_ctx| {
                close(-1, rfds);
                start() && send(wfds, buf, cfg.loops, None, ctr)
            })?;
        }
        drop(chans);
    }
    kids.all_spawned();
    drop(ready_wr);
    collect_ready(
        sig,
        ready_r,
        kids.exit_fd(),
        cfg.tasks(),
        deadline,
        cfg.timeout,
    )?;
    let start = go(&wake_wr)?;
    match sys::wait_event(sig, &[kids.exit_fd()], deadline)? {
        Event::Ready(_) => {
            if kids.failure_reported() {
                kids.kill_all();
                return Err(Error::Task("a hackbench task failed during the run".into()));
            }
            if let Some(bad) = kids.reap_all() {
                return Err(Error::Task(bad));
            }
            Ok(start.elapsed())
        }
        Event::Signal(s) => Err(Error::Interrupted(s)),
        Event::Deadline => Err(timeout_error(cfg.timeout)),
    }
    // `kids` is dropped here on every path: unreaped children are killed
    // and reaped.
}

fn run_threads(
    cfg: &HackbenchConfig,
    sig: &SignalGuard,
    deadline: Option<Instant>,
    counters: &SharedSlice<AtomicU64>,
) -> Result<Duration> {
    let (ready_rd, ready_wr) = sys::pipe()?;
    let (wake_rd, wake_wr) = sys::pipe()?;
    let mut groups = Vec::with_capacity(cfg.groups as usize);
    for _ in 0..cfg.groups {
        let chans = (0..cfg.fds)
            .map(|_| channel(cfg.pipe))
            .collect::<Result<Vec<_>>>()?;
        let rfds: Vec<RawFd> = chans.iter().map(|c| c.0.raw()).collect();
        let wfds: Vec<RawFd> = chans.iter().map(|c| c.1.raw()).collect();
        groups.push((chans, rfds, wfds));
    }
    let tasks = cfg.tasks() as usize;
    let done = ThreadDone::new(tasks)?;
    // pthread_t of each task, 0 until the task has registered itself; used
    // to interrupt blocked system calls when the run is cancelled.
    let tids: Vec<AtomicU64> = (0..tasks).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let ctr: &[AtomicU64] = counters;
    let (ready_w, wake_r) = (ready_wr.raw(), wake_rd.raw());
    let ds = cfg.datasize as usize;
    let count = cfg.fds as u64 * cfg.loops as u64;

    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(tasks);
        let mut spawn_err = None;
        'spawn: for (_, rfds, wfds) in &groups {
            for &fd in rfds {
                let (stop, done) = (&stop, &done);
                let tid = &tids[handles.len()];
                let r = std::thread::Builder::new()
                    .stack_size(THREAD_STACK)
                    .spawn_scoped(s, move || {
                        // SAFETY: pthread_self cannot fail.
                        tid.store(unsafe { libc::pthread_self() } as u64, Ordering::SeqCst);
                        let mut buf = vec![0u8; ds];
                        let ok = ready_and_wait(ready_w, wake_r, Some(stop))
                            && receive(fd, &mut buf, count, Some(stop), ctr);
                        done.finish(ok);
                    });
                match r {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        spawn_err = Some(e);
                        break 'spawn;
                    }
                }
            }
            for _ in 0..cfg.fds {
                let (stop, done) = (&stop, &done);
                let tid = &tids[handles.len()];
                let r = std::thread::Builder::new()
                    .stack_size(THREAD_STACK)
                    .spawn_scoped(s, move || {
                        // SAFETY: pthread_self cannot fail.
                        tid.store(unsafe { libc::pthread_self() } as u64, Ordering::SeqCst);
                        let buf = vec![b'-'; ds];
                        let ok = ready_and_wait(ready_w, wake_r, Some(stop))
                            && send(wfds, &buf, cfg.loops, Some(stop), ctr);
                        done.finish(ok);
                    });
                match r {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        spawn_err = Some(e);
                        break 'spawn;
                    }
                }
            }
        }
        let cancel = |handles: &[std::thread::ScopedJoinHandle<'_, ()>]| {
            stop.store(true, Ordering::SeqCst);
            while handles.iter().any(|h| !h.is_finished()) {
                for (h, tid) in handles.iter().zip(&tids) {
                    let tid = tid.load(Ordering::SeqCst);
                    if tid != 0 && !h.is_finished() {
                        // SAFETY: the thread is not joined yet, so its
                        // pthread_t is valid; the kick has a no-op handler.
                        unsafe { libc::pthread_kill(tid as libc::pthread_t, sys::SIG_KICK) };
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        if let Some(e) = spawn_err {
            done.forget(tasks - handles.len());
            cancel(&handles);
            return Err(Error::Limit(format!(
                "cannot create thread {} of {tasks}: {e}; raise the thread limit (ulimit -u, \
                 /proc/sys/kernel/threads-max) or lower -g/-f",
                handles.len() + 1
            )));
        }
        if let Err(e) = collect_ready(
            sig,
            ready_rd.raw(),
            done.fd(),
            cfg.tasks(),
            deadline,
            cfg.timeout,
        ) {
            cancel(&handles);
            return Err(e);
        }
        let start = match go(&wake_wr) {
            Ok(t) => t,
            Err(e) => {
                cancel(&handles);
                return Err(e);
            }
        };
        match sys::wait_event(sig, &[done.fd()], deadline) {
            Ok(Event::Ready(_)) if !done.failed.load(Ordering::SeqCst) => {
                for h in handles {
                    let _ = h.join();
                }
                Ok(start.elapsed())
            }
            Ok(Event::Ready(_)) => {
                cancel(&handles);
                Err(Error::Task(
                    "a hackbench thread failed during the run".into(),
                ))
            }
            Ok(Event::Signal(sname)) => {
                cancel(&handles);
                Err(Error::Interrupted(sname))
            }
            Ok(Event::Deadline) => {
                cancel(&handles);
                Err(timeout_error(cfg.timeout))
            }
            Err(e) => {
                cancel(&handles);
                Err(e)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(bench: Hackbench) -> HackbenchConfig {
        HackbenchConfig {
            bench,
            ..Default::default()
        }
    }

    fn small(threads: bool, pipe: bool) -> HackbenchConfig {
        config(Hackbench {
            threads,
            pipe,
            groups: 2,
            fds: 3,
            loops: 20,
            datasize: 64,
        })
    }

    #[test]
    fn time_line_truncates_milliseconds() {
        assert_eq!(
            format_time_line(Duration::from_micros(1_234_999)),
            "Time: 1.234"
        );
        assert_eq!(format_time_line(Duration::from_micros(999)), "Time: 0.000");
        assert_eq!(format_time_line(Duration::from_secs(12)), "Time: 12.000");
    }

    #[test]
    fn zero_values_are_rejected_naming_the_flag() {
        for (bench, flag) in [
            (
                Hackbench {
                    groups: 0,
                    ..Default::default()
                },
                "-g/--groups",
            ),
            (
                Hackbench {
                    loops: 0,
                    ..Default::default()
                },
                "-l/--loops",
            ),
        ] {
            let e = run(&config(bench)).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{flag}: ")), "{e}");
        }
    }

    #[test]
    fn all_four_modes_move_every_byte() {
        for threads in [false, true] {
            for pipe in [false, true] {
                let cfg = small(threads, pipe);
                let r = run(&cfg).unwrap();
                assert_eq!(r.messages, 2 * 3 * 3 * 20, "threads={threads} pipe={pipe}");
                assert_eq!(r.bytes_written, r.messages * 64);
                assert_eq!(r.bytes_read, r.bytes_written);
                assert!(r.wall_s >= r.time_s);
            }
        }
    }

    #[test]
    fn timeout_reaps_everything() {
        // Enough work that 1 ms cannot finish it.
        for threads in [false, true] {
            let bench = Hackbench {
                groups: 2,
                fds: 4,
                loops: 1_000_000,
                threads,
                ..Default::default()
            };
            let cfg = HackbenchConfig {
                bench,
                timeout: Some(Duration::from_millis(1)),
                ..Default::default()
            };
            let e = run(&cfg).unwrap_err();
            assert!(matches!(e, Error::Timeout(_)), "{e}");
        }
    }
}
