//! schbench, following the 2023+ rework of schbench.c. Its parameters,
//! histogram and report lines are [`benchspec::schbench`]'s, shared with the
//! simulator.
//!
//! `M` message threads each serve `T` worker threads. In the default
//! closed-loop mode a worker repeats one request: it queues itself on its
//! message thread (a lock-free list) and futex-waits; the message thread
//! takes the whole list, stamps every queued worker with **one** clock
//! reading and wakes them; the worker records its **wakeup latency**
//! (`now - wake stamp`). It then sleeps `sleep_usec`, takes the lock of the
//! CPU it runs on (spinning on trylock; retried if it migrated), does
//! `operations` naive `n x n` matrix multiplications (`n = sqrt(F KB * 1024
//! / 3 / 8)`; the work is in `schbench_math`, which runs the same machine
//! code as the C build), unlocks, and records the **request latency**
//! (sleep + lock + math). The main thread samples the request rate once a second into the
//! RPS histogram and prints the tables at the end (and every
//! `interval` seconds).
//!
//! RPS mode (`rps > 0`): each message thread hands out `rps / M` requests
//! per second round-robin to its workers (skipping a worker with more than
//! 128 pending); a worker drains its pending requests without waiting and
//! records a wakeup latency only when it had to sleep.
//!
//! Not ported: pipe mode (`-p`), auto-RPS (`-A`), CPU pinning of message
//! threads (`-M`/`-W`; use `--cpus`), `--split` and schbench's own JSON
//! file (`-j`; use `--json`).

use crate::cpus::{self, AffinityGuard, CpuSelection};
use crate::error::{Error, Result};
use crate::limits;
use crate::schbench_math::Matrices;
use crate::sys::{self, SignalGuard};
use benchspec::plat::Plat;
pub use benchspec::schbench::{LatencySummary, RpsSummary, Schbench};
use benchspec::schbench::{SchedDelay, Tables};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A schbench run: the benchmark's own parameters (shared with the
/// simulator, the new schbench's defaults) plus how to run it on this host.
/// Derefs to the parameters, so `cfg.runtime`, `cfg.warmup_secs()` read
/// through.
#[derive(Debug, Clone, PartialEq)]
pub struct SchbenchConfig {
    /// `-m -t -r -s -F -n -w -i -z -R -L -C`.
    pub bench: Schbench,
    /// `--cpus` / `--node`: affinity of every thread.
    pub cpus: CpuSelection,
    /// `--timeout`: give up (and join everything) after this long.
    pub timeout: Option<Duration>,
}

impl Default for SchbenchConfig {
    fn default() -> Self {
        SchbenchConfig {
            bench: Schbench::default(),
            cpus: CpuSelection::Inherit,
            timeout: None,
        }
    }
}

impl std::ops::Deref for SchbenchConfig {
    type Target = Schbench;
    fn deref(&self) -> &Schbench {
        &self.bench
    }
}

impl SchbenchConfig {
    /// Workers per message thread actually used, with this host's CPU
    /// count for the default.
    pub fn workers(&self) -> u32 {
        self.bench.workers(cpus::nprocs())
    }

    /// The line schbench prints first when it picks the worker count
    /// itself (no `-t`).
    pub fn setting_workers_line(&self) -> Option<String> {
        self.bench.setting_workers_line(cpus::nprocs())
    }

    /// Checks the values, the CPU selection and the thread limit.
    pub fn validate(&self) -> Result<()> {
        self.bench.validate()?;
        let threads = self.bench.threads(cpus::nprocs());
        if threads > 100_000 {
            return Err(Error::arg(
                "-m/-t",
                format!("{threads} threads is more than this port supports (100000)"),
            ));
        }
        if self.footprint_kb > 1 << 20 {
            return Err(Error::arg("-F", "more than 1 GiB of matrices per worker"));
        }
        if self.sleep_usec > 60_000_000 {
            return Err(Error::arg("-s", "more than 60 s of sleep per request"));
        }
        let n = self.matrix_size() as u64;
        limits::check_memory(threads * 3 * n * n * 8, "-F")?;
        cpus::resolve(&self.cpus)?;
        limits::check_tasks(threads, "-m/-t")
    }
}

/// What a schbench run measured. Field names match the simulator's JSON
/// where the meaning is the same.
#[derive(Debug, Clone, Serialize)]
pub struct SchbenchReport {
    /// Always `"schbench"`.
    pub benchmark: &'static str,
    /// Always `"native"`.
    pub mode: &'static str,
    /// `-m`.
    pub message_threads: u32,
    /// Workers per message thread.
    pub worker_threads: u32,
    /// Seconds covered by the statistics (since the last zeroing).
    pub runtime_s: u64,
    /// Wakeup latency table.
    pub wakeup_latency_us: LatencySummary,
    /// Request latency table.
    pub request_latency_us: LatencySummary,
    /// Requests-per-second table.
    pub rps: RpsSummary,
    /// Requests completed per second over the whole run.
    pub average_rps: f64,
    /// Average scheduling delay per run of the message threads, µs.
    pub sched_delay_message_us: u64,
    /// Average scheduling delay per run of the workers, µs.
    pub sched_delay_worker_us: u64,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// The CPU list the threads were pinned to, if any.
    pub cpus: Option<String>,
    #[serde(skip)]
    text: String,
}

impl SchbenchReport {
    /// The final report, as schbench prints it (on stderr).
    pub fn text(&self) -> &str {
        &self.text
    }
}

// ---------------------------------------------------------------------------
// Futex-based sleeping and waking.

const RUNNING: u32 = 0;
const BLOCKED: u32 = 1;

fn futex_wait(word: &AtomicU32, val: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as _,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT on a live atomic word with an optional relative
    // timeout; spurious returns are handled by the callers' loops.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            tsp,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live atomic word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// Wakes the owner of `word` if it is blocked (schbench's `fpost`).
#[inline]
fn post(word: &AtomicU32) {
    if word.swap(RUNNING, Ordering::SeqCst) == BLOCKED {
        futex_wake(word);
    }
}

/// Waits until `word` is posted (schbench's `fwait`); the caller set it to
/// BLOCKED first.
#[inline]
fn wait(word: &AtomicU32) {
    while word.load(Ordering::SeqCst) == BLOCKED {
        futex_wait(word, BLOCKED, None);
    }
}

#[inline]
fn now_us() -> u64 {
    sys::now_ns() / 1000
}

fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

// ---------------------------------------------------------------------------
// Shared state.

#[repr(align(64))]
struct CpuLock(AtomicBool);

struct Stats {
    wakeup: Plat,
    request: Plat,
}

#[repr(align(64))]
struct Worker {
    futex: AtomicU32,
    /// Next worker index + 1 on the message thread's list (0: end).
    next: AtomicUsize,
    wake_time: AtomicU64,
    /// RPS mode: requests handed out and not yet served.
    pending: AtomicU64,
    loop_count: AtomicU64,
    tid: AtomicI32,
    stats: Mutex<Stats>,
}

#[repr(align(64))]
struct MsgThread {
    futex: AtomicU32,
    /// Head of the list of waiting workers: index + 1, 0 when empty.
    head: AtomicUsize,
    tid: AtomicI32,
}

struct Shared<'a> {
    cfg: &'a SchbenchConfig,
    workers: Vec<Worker>,
    msgs: Vec<MsgThread>,
    locks: Vec<CpuLock>,
    stopping: AtomicBool,
    per_msg: usize,
    n: usize,
}

impl Shared<'_> {
    fn lock_cpu(&self) -> &CpuLock {
        loop {
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
            let l = &self.locks[cpu % self.locks.len()];
            if l.0
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: as above.
                if unsafe { libc::sched_getcpu() }.max(0) as usize == cpu {
                    return l;
                }
                l.0.store(false, Ordering::Release);
            }
            std::hint::spin_loop();
        }
    }

    /// The request: sleep, lock, multiply, unlock. Returns the request
    /// latency in µs.
    fn request(&self, m: &mut Matrices) -> u64 {
        let cfg = self.cfg;
        if cfg.calibrate && cfg.sleep_usec > 0 {
            std::thread::sleep(Duration::from_micros(cfg.sleep_usec as u64));
        }
        let start = now_us();
        if !cfg.calibrate && cfg.sleep_usec > 0 {
            std::thread::sleep(Duration::from_micros(cfg.sleep_usec as u64));
        }
        let lock = (!cfg.no_locking && !cfg.calibrate).then(|| self.lock_cpu());
        for _ in 0..cfg.operations {
            m.multiply();
        }
        if let Some(l) = lock {
            l.0.store(false, Ordering::Release);
        }
        now_us().saturating_sub(start)
    }
}

fn worker_closed_loop(sh: &Shared<'_>, idx: usize) {
    let w = &sh.workers[idx];
    let msg = &sh.msgs[idx / sh.per_msg];
    let mut m = Matrices::new(sh.n);
    loop {
        w.futex.store(BLOCKED, Ordering::SeqCst);
        if sh.stopping.load(Ordering::SeqCst) {
            break;
        }
        // Queue on the message thread (a lock-free prepend) and post it.
        let mut head = msg.head.load(Ordering::SeqCst);
        loop {
            w.next.store(head, Ordering::SeqCst);
            match msg
                .head
                .compare_exchange(head, idx + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        post(&msg.futex);
        wait(&w.futex);
        let now = now_us();
        let delta = now.saturating_sub(w.wake_time.load(Ordering::SeqCst));
        if sh.stopping.load(Ordering::SeqCst) {
            break;
        }
        let req = sh.request(&mut m);
        {
            let mut st = w.stats.lock().unwrap_or_else(|e| e.into_inner());
            if delta > 0 {
                st.wakeup.add(delta.min(u32::MAX as u64) as u32);
            }
            st.request.add(req.min(u32::MAX as u64) as u32);
        }
        w.loop_count.fetch_add(1, Ordering::Relaxed);
    }
}

fn message_closed_loop(sh: &Shared<'_>, mi: usize) {
    let me = &sh.msgs[mi];
    loop {
        me.futex.store(BLOCKED, Ordering::SeqCst);
        let mut list = me.head.swap(0, Ordering::SeqCst);
        if list != 0 {
            // One clock reading for the whole batch, on purpose.
            let now = now_us();
            while list != 0 {
                let w = &sh.workers[list - 1];
                let next = w.next.load(Ordering::SeqCst);
                w.wake_time.store(now, Ordering::SeqCst);
                post(&w.futex);
                list = next;
            }
        }
        if sh.stopping.load(Ordering::SeqCst) {
            break;
        }
        wait(&me.futex);
    }
}

fn worker_rps(sh: &Shared<'_>, idx: usize) {
    let w = &sh.workers[idx];
    let mut m = Matrices::new(sh.n);
    let mut slept_at = None::<u64>;
    loop {
        if sh.stopping.load(Ordering::SeqCst) {
            break;
        }
        if w.pending.load(Ordering::SeqCst) > 0 {
            w.pending.fetch_sub(1, Ordering::SeqCst);
            let req = sh.request(&mut m);
            let mut st = w.stats.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(now) = slept_at.take() {
                let delta = now.saturating_sub(w.wake_time.load(Ordering::SeqCst));
                if delta > 0 {
                    st.wakeup.add(delta.min(u32::MAX as u64) as u32);
                }
            }
            st.request.add(req.min(u32::MAX as u64) as u32);
            drop(st);
            w.loop_count.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        w.futex.store(BLOCKED, Ordering::SeqCst);
        if w.pending.load(Ordering::SeqCst) > 0 || sh.stopping.load(Ordering::SeqCst) {
            w.futex.store(RUNNING, Ordering::SeqCst);
            continue;
        }
        wait(&w.futex);
        slept_at = Some(now_us());
    }
}

fn message_rps(sh: &Shared<'_>, mi: usize) {
    let me = &sh.msgs[mi];
    let m = sh.cfg.message_threads as u64;
    let per_sec = (sh.cfg.rps as u64 / m).max(1);
    let first = mi * sh.per_msg;
    let mut cur = 0usize;
    while !sh.stopping.load(Ordering::SeqCst) {
        let cycle = Instant::now();
        for _ in 0..per_sec {
            if sh.stopping.load(Ordering::SeqCst) {
                return;
            }
            let w = &sh.workers[first + cur % sh.per_msg];
            cur += 1;
            if w.pending.load(Ordering::SeqCst) > 128 {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            w.pending.fetch_add(1, Ordering::SeqCst);
            w.wake_time.store(now_us(), Ordering::SeqCst);
            post(&w.futex);
        }
        // Sleep out the rest of the second (woken early when stopping).
        loop {
            let left = Duration::from_secs(1).saturating_sub(cycle.elapsed());
            if left.is_zero() || sh.stopping.load(Ordering::SeqCst) {
                break;
            }
            me.futex.store(BLOCKED, Ordering::SeqCst);
            if sh.stopping.load(Ordering::SeqCst) {
                break;
            }
            futex_wait(&me.futex, BLOCKED, Some(left));
        }
    }
}

/// Average `run_delay / pcount` over threads, in µs, from schedstat.
fn sched_delay_us(tids: impl Iterator<Item = i32>) -> u64 {
    let (mut sum, mut k) = (0u64, 0u64);
    for tid in tids.filter(|&t| t > 0) {
        let Ok(s) = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")) else {
            continue;
        };
        let f: Vec<u64> = s
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if let [_, delay, pcount, ..] = f[..] {
            if let Some(per_run) = delay.checked_div(pcount) {
                sum += per_run;
                k += 1;
            }
        }
    }
    sum.checked_div(k).unwrap_or(0) / 1000
}

/// Runs schbench. Interval reports are passed to `progress` as they
/// happen (schbench prints them on stderr); the final report is
/// [`SchbenchReport::text`].
pub fn run(cfg: &SchbenchConfig, progress: &mut dyn FnMut(&str)) -> Result<SchbenchReport> {
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

    let t = cfg.workers() as usize;
    let m = cfg.message_threads as usize;
    // SAFETY: sysconf has no preconditions.
    let ncpu_conf = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
    let sh = Shared {
        cfg,
        workers: (0..m * t)
            .map(|_| Worker {
                futex: AtomicU32::new(RUNNING),
                next: AtomicUsize::new(0),
                wake_time: AtomicU64::new(0),
                pending: AtomicU64::new(0),
                loop_count: AtomicU64::new(0),
                tid: AtomicI32::new(0),
                stats: Mutex::new(Stats {
                    wakeup: Plat::default(),
                    request: Plat::default(),
                }),
            })
            .collect(),
        msgs: (0..m)
            .map(|_| MsgThread {
                futex: AtomicU32::new(RUNNING),
                head: AtomicUsize::new(0),
                tid: AtomicI32::new(0),
            })
            .collect(),
        locks: (0..ncpu_conf.max(cpus::nprocs()))
            .map(|_| CpuLock(AtomicBool::new(false)))
            .collect(),
        stopping: AtomicBool::new(false),
        per_msg: t,
        n: cfg.matrix_size(),
    };
    let rps_mode = cfg.rps > 0;

    std::thread::scope(|s| -> Result<SchbenchReport> {
        let sh = &sh;
        let mut handles = Vec::with_capacity(m * (t + 1));
        let mut spawn_err = None;
        for mi in 0..m {
            let r = std::thread::Builder::new()
                .name("schbench-msg".into())
                .spawn_scoped(s, move || {
                    sh.msgs[mi].tid.store(gettid(), Ordering::SeqCst);
                    if rps_mode {
                        message_rps(sh, mi)
                    } else {
                        message_closed_loop(sh, mi)
                    }
                });
            match r {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_err = Some(e);
                    break;
                }
            }
        }
        for wi in 0..m * t {
            if spawn_err.is_some() {
                break;
            }
            let r = std::thread::Builder::new()
                .name("schbench-worker".into())
                .spawn_scoped(s, move || {
                    sh.workers[wi].tid.store(gettid(), Ordering::SeqCst);
                    if rps_mode {
                        worker_rps(sh, wi)
                    } else {
                        worker_closed_loop(sh, wi)
                    }
                });
            match r {
                Ok(h) => handles.push(h),
                Err(e) => spawn_err = Some(e),
            }
        }
        let stop_all = |handles: Vec<std::thread::ScopedJoinHandle<'_, ()>>| {
            sh.stopping.store(true, Ordering::SeqCst);
            while handles.iter().any(|h| !h.is_finished()) {
                for x in &sh.msgs {
                    post(&x.futex);
                }
                for w in &sh.workers {
                    post(&w.futex);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            for h in handles {
                let _ = h.join();
            }
        };
        if let Some(e) = spawn_err {
            let started = handles.len();
            stop_all(handles);
            return Err(Error::Limit(format!(
                "cannot create thread {} of {}: {e}; raise the thread limit (ulimit -u, \
                 /proc/sys/kernel/threads-max) or lower -m/-t",
                started + 1,
                m * (t + 1)
            )));
        }

        let total_loops = || {
            sh.workers
                .iter()
                .map(|w| w.loop_count.load(Ordering::Relaxed))
                .sum::<u64>()
        };
        let collect = || {
            let (mut wake, mut req) = (Plat::default(), Plat::default());
            for w in &sh.workers {
                let st = w.stats.lock().unwrap_or_else(|e| e.into_inner());
                wake.merge(&st.wakeup);
                req.merge(&st.request);
            }
            (wake, req)
        };
        let zero = |rps_hist: &mut Plat| {
            for w in &sh.workers {
                let mut st = w.stats.lock().unwrap_or_else(|e| e.into_inner());
                st.wakeup.clear();
                st.request.clear();
            }
            rps_hist.clear();
        };
        let delays = || SchedDelay {
            message_us: sched_delay_us(sh.msgs.iter().map(|x| x.tid.load(Ordering::SeqCst))),
            worker_us: sched_delay_us(sh.workers.iter().map(|w| w.tid.load(Ordering::SeqCst))),
        };

        let start = Instant::now();
        let warmup = cfg.warmup_secs();
        let mut rps_hist = Plat::default();
        let mut stats_start = start;
        let mut last_zero = start;
        let mut last_interval = start;
        let (mut last_t, mut last_loops) = (start, 0u64);
        let mut warmed = warmup == 0;
        let mut tick = 0u64;
        loop {
            tick += 1;
            let due = start + Duration::from_secs(tick);
            let wake_at = match deadline {
                Some(d) if d < due => d,
                _ => due,
            };
            match sys::wait_event(&sig, &[], Some(wake_at)) {
                Ok(sys::Event::Signal(name)) => {
                    stop_all(handles);
                    return Err(Error::Interrupted(name));
                }
                Ok(_) if Instant::now() < due => {
                    stop_all(handles);
                    return Err(Error::Timeout(cfg.timeout.unwrap_or_default()));
                }
                Ok(_) => {}
                Err(e) => {
                    stop_all(handles);
                    return Err(e);
                }
            }
            let now = Instant::now();
            let loops = total_loops();
            let dt = (now - last_t).as_secs_f64();
            let current_rps = if dt > 0.0 {
                (loops - last_loops) as f64 / dt
            } else {
                0.0
            };
            rps_hist.add(current_rps.round().min(u32::MAX as f64) as u32);
            (last_t, last_loops) = (now, loops);
            let elapsed = (now - start).as_secs();
            if !warmed && elapsed >= warmup as u64 {
                warmed = true;
                zero(&mut rps_hist);
                stats_start = now;
                last_zero = now;
            }
            if cfg.zerotime > 0 && (now - last_zero).as_secs() >= cfg.zerotime as u64 {
                zero(&mut rps_hist);
                stats_start = now;
                last_zero = now;
            }
            if cfg.runtime > 0 && elapsed >= cfg.runtime as u64 {
                break;
            }
            if cfg.interval > 0 && (now - last_interval).as_secs() >= cfg.interval as u64 {
                last_interval = now;
                let (wake, req) = collect();
                let tables = Tables {
                    wakeup: &wake,
                    request: &req,
                    rps: &rps_hist,
                    runtime_s: (now - stats_start).as_secs(),
                };
                progress(&tables.interval_report(delays(), current_rps));
            }
        }
        // Read the schedstat delays while the threads still exist.
        let delay = delays();
        let end = Instant::now();
        stop_all(handles);
        let stats_secs = (end - stats_start).as_secs();
        let (wake, req) = collect();
        let run_secs = (end - start).as_secs_f64();
        let average_rps = if run_secs > 0.0 {
            total_loops() as f64 / run_secs
        } else {
            0.0
        };
        let tables = Tables {
            wakeup: &wake,
            request: &req,
            rps: &rps_hist,
            runtime_s: stats_secs,
        };
        let text = tables.final_report(average_rps, delay);
        Ok(SchbenchReport {
            benchmark: "schbench",
            mode: "native",
            message_threads: cfg.message_threads,
            worker_threads: t as u32,
            runtime_s: stats_secs,
            wakeup_latency_us: LatencySummary::of(&wake),
            request_latency_us: LatencySummary::of(&req),
            rps: RpsSummary::of(&rps_hist),
            average_rps,
            sched_delay_message_us: delay.message_us,
            sched_delay_worker_us: delay.worker_us,
            wall_s: wall0.elapsed().as_secs_f64(),
            cpus: pinned.map(|c| cpus::format_cpu_list(&c)),
            text,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick_bench() -> Schbench {
        Schbench {
            message_threads: 1,
            worker_threads: Some(2),
            runtime: 1,
            footprint_kb: 16,
            operations: 1,
            sleep_usec: 50,
            interval: 0,
            ..Default::default()
        }
    }

    fn quick() -> SchbenchConfig {
        SchbenchConfig {
            bench: quick_bench(),
            ..Default::default()
        }
    }

    #[test]
    fn default_workers_are_this_hosts_cpus() {
        let c = SchbenchConfig::default();
        assert_eq!(c.workers(), cpus::nprocs() as u32);
        assert_eq!(
            c.setting_workers_line(),
            Some(format!("setting worker threads to {}\n", cpus::nprocs()))
        );
        assert_eq!(quick().setting_workers_line(), None);
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (bench, flag) in [
            (
                Schbench {
                    message_threads: 0,
                    ..quick_bench()
                },
                "-m: ",
            ),
            (
                Schbench {
                    worker_threads: Some(0),
                    ..quick_bench()
                },
                "-t: ",
            ),
            (
                Schbench {
                    footprint_kb: u32::MAX,
                    ..quick_bench()
                },
                "-F: ",
            ),
        ] {
            let cfg = SchbenchConfig {
                bench,
                ..Default::default()
            };
            let e = run(&cfg, &mut |_| {}).unwrap_err().to_string();
            assert!(e.starts_with(flag), "{e}");
        }
    }

    #[test]
    fn closed_loop_records_both_latencies() {
        let r = run(&quick(), &mut |_| {}).unwrap();
        assert!(r.request_latency_us.samples > 0, "{r:?}");
        // Every request sleeps 50 us before the math.
        assert!(r.request_latency_us.min >= 50, "{r:?}");
        assert!(r.wakeup_latency_us.samples <= r.request_latency_us.samples + 2);
        assert!(r.rps.samples >= 1 && r.average_rps > 0.0, "{r:?}");
        let txt = r.text();
        for needle in [
            "Wakeup Latencies percentiles (usec) runtime ",
            "Request Latencies percentiles (usec) runtime ",
            "RPS percentiles (requests) runtime ",
            "\t* 99.0th: ",
            "\t* 50.0th: ",
            "average rps: ",
            "sched delay: message ",
        ] {
            assert!(txt.contains(needle), "{needle:?} missing from\n{txt}");
        }
    }

    #[test]
    fn rps_mode_serves_requests() {
        let r = run(
            &SchbenchConfig {
                bench: Schbench {
                    rps: 200,
                    no_locking: true,
                    ..quick_bench()
                },
                ..Default::default()
            },
            &mut |_| {},
        )
        .unwrap();
        // 200 requests are handed out per second (a second burst may start as the run stops).
        assert!(
            r.request_latency_us.samples > 0 && r.request_latency_us.samples <= 400,
            "{r:?}"
        );
    }

    #[test]
    fn timeout_stops_a_forever_run() {
        let cfg = SchbenchConfig {
            bench: Schbench {
                runtime: 0,
                ..quick_bench()
            },
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        };
        assert!(matches!(
            run(&cfg, &mut |_| {}).unwrap_err(),
            Error::Timeout(_)
        ));
    }
}
