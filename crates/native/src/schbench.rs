//! schbench, following the 2023+ rework (benchmarks.md §2.1 and §2.3).
//!
//! `M` message threads each serve `T` worker threads. In the default
//! closed-loop mode a worker repeats one request: it queues itself on its
//! message thread (a lock-free list) and futex-waits; the message thread
//! takes the whole list, stamps every queued worker with **one** clock
//! reading and wakes them; the worker records its **wakeup latency**
//! (`now - wake stamp`). It then sleeps `sleep_usec`, takes the lock of the
//! CPU it runs on (spinning on trylock; retried if it migrated), does
//! `operations` naive `n x n` matrix multiplications (`n = sqrt(F KB * 1024
//! / 3 / 8)`), unlocks, and records the **request latency** (sleep + lock +
//! math). The main thread samples the request rate once a second into the
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
use crate::plat::Plat;
use crate::sys::{self, SignalGuard};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Percentiles computed for every table.
const PCTS: [f64; 5] = [20.0, 50.0, 90.0, 99.0, 99.9];
const LAT_PCTS: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
const RPS_PCTS: [f64; 3] = [20.0, 50.0, 90.0];

/// A schbench run, with the new schbench's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct SchbenchConfig {
    /// `-m`: message threads (1).
    pub message_threads: u32,
    /// `-t`: workers per message thread; `None` means `ceil(nprocs / M)`.
    pub worker_threads: Option<u32>,
    /// `-r`: seconds to run (30); 0 runs until interrupted.
    pub runtime: u32,
    /// `-s`: microseconds each request sleeps (100).
    pub sleep_usec: u32,
    /// `-F`: cache footprint of the matrices in KB (256).
    pub footprint_kb: u32,
    /// `-n`: matrix multiplications per request (5).
    pub operations: u32,
    /// `-w`: warm-up seconds after which the statistics are zeroed once
    /// (0; forced to 0 when the runtime is under 30 s and in RPS mode).
    pub warmup: u32,
    /// `-i`: seconds between interval reports (10); 0 disables them.
    pub interval: u32,
    /// `-z`: zero the statistics every this many seconds (0: never).
    pub zerotime: u32,
    /// `-R`: requests per second over all message threads (0: closed loop).
    pub rps: u32,
    /// `-L`: no per-CPU lock around the math.
    pub no_locking: bool,
    /// `-C`: calibrate: implies `-L` and sleeps before the request clock
    /// starts, so the request time is the math alone.
    pub calibrate: bool,
    /// `--cpus` / `--node`: affinity of every thread.
    pub cpus: CpuSelection,
    /// `--timeout`: give up (and join everything) after this long.
    pub timeout: Option<Duration>,
}

impl Default for SchbenchConfig {
    fn default() -> Self {
        SchbenchConfig {
            message_threads: 1,
            worker_threads: None,
            runtime: 30,
            sleep_usec: 100,
            footprint_kb: 256,
            operations: 5,
            warmup: 0,
            interval: 10,
            zerotime: 0,
            rps: 0,
            no_locking: false,
            calibrate: false,
            cpus: CpuSelection::Inherit,
            timeout: None,
        }
    }
}

impl SchbenchConfig {
    /// Workers per message thread actually used.
    pub fn workers(&self) -> u32 {
        self.worker_threads
            .unwrap_or_else(|| (cpus::nprocs() as u32).div_ceil(self.message_threads.max(1)))
    }

    /// Warm-up actually used (schbench's rules).
    pub fn warmup_secs(&self) -> u32 {
        if self.runtime < 30 || self.rps > 0 {
            0
        } else {
            self.warmup
        }
    }

    /// Side of the square matrices, `floor(sqrt(F * 1024 / 3 / 8))`.
    pub fn matrix_size(&self) -> usize {
        ((self.footprint_kb as f64 * 1024.0 / 3.0 / 8.0).sqrt()) as usize
    }

    /// Checks the values, the CPU selection and the thread limit.
    pub fn validate(&self) -> Result<()> {
        if self.message_threads == 0 || self.message_threads > 10_000 {
            return Err(Error::arg("-m", "must be between 1 and 10000"));
        }
        let t = self.workers();
        if t == 0 {
            return Err(Error::arg("-t", "must be an integer > 0"));
        }
        let threads = self.message_threads as u64 * (t as u64 + 1);
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

/// One latency table in JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencySummary {
    /// 50th percentile, µs.
    pub p50: u32,
    /// 90th percentile, µs.
    pub p90: u32,
    /// 99th percentile, µs.
    pub p99: u32,
    /// 99.9th percentile, µs.
    pub p99_9: u32,
    /// Smallest sample, µs (0: none).
    pub min: u32,
    /// Largest sample, µs.
    pub max: u32,
    /// Number of samples.
    pub samples: u64,
}

/// The RPS table in JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RpsSummary {
    /// 20th percentile of the per-second request rate.
    pub p20: u32,
    /// Median.
    pub p50: u32,
    /// 90th percentile.
    pub p90: u32,
    /// Smallest one-second rate.
    pub min: u32,
    /// Largest one-second rate.
    pub max: u32,
    /// Number of one-second samples.
    pub samples: u64,
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
            m.multiply(self.n);
        }
        if let Some(l) = lock {
            l.0.store(false, Ordering::Release);
        }
        now_us().saturating_sub(start)
    }
}

struct Matrices {
    a: Vec<u64>,
    b: Vec<u64>,
    c: Vec<u64>,
}

impl Matrices {
    fn new(n: usize) -> Self {
        let fill = |k: u64| (0..n * n).map(|i| i as u64 ^ k).collect::<Vec<u64>>();
        Matrices {
            a: fill(1),
            b: fill(2),
            c: vec![0; n * n],
        }
    }

    /// Naive `c = a * b`.
    fn multiply(&mut self, n: usize) {
        for i in 0..n {
            for j in 0..n {
                let mut sum = 0u64;
                for k in 0..n {
                    sum = sum.wrapping_add(self.a[i * n + k].wrapping_mul(self.b[k * n + j]));
                }
                self.c[i * n + j] = sum;
            }
        }
        std::hint::black_box(&mut self.c);
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

fn summarize(p: &Plat) -> LatencySummary {
    let r = p.percentiles(&PCTS);
    LatencySummary {
        p50: r[1].value,
        p90: r[2].value,
        p99: r[3].value,
        p99_9: r[4].value,
        min: p.min,
        max: p.max,
        samples: p.samples,
    }
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
        let report_text = |stats_secs: u64, rps_hist: &Plat| {
            let (wake, req) = collect();
            let mut txt = wake.table(
                "Wakeup Latencies percentiles (usec)",
                stats_secs,
                &LAT_PCTS,
                99.0,
            );
            txt.push_str(&req.table(
                "Request Latencies percentiles (usec)",
                stats_secs,
                &LAT_PCTS,
                99.0,
            ));
            txt.push_str(&rps_hist.table(
                "RPS percentiles (requests)",
                stats_secs,
                &RPS_PCTS,
                50.0,
            ));
            (txt, wake, req)
        };
        let delays = || {
            (
                sched_delay_us(sh.msgs.iter().map(|x| x.tid.load(Ordering::SeqCst))),
                sched_delay_us(sh.workers.iter().map(|w| w.tid.load(Ordering::SeqCst))),
            )
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
                let (txt, _, _) = report_text((now - stats_start).as_secs(), &rps_hist);
                let (dm, dw) = delays();
                progress(&format!(
                    "{txt}sched delay: message {dm} (usec) worker {dw} (usec)\ncurrent rps: {current_rps:.2}\n"
                ));
            }
        }
        // Read the schedstat delays while the threads still exist.
        let (dm, dw) = delays();
        let end = Instant::now();
        stop_all(handles);
        let stats_secs = (end - stats_start).as_secs();
        let (mut txt, wake, req) = report_text(stats_secs, &rps_hist);
        let run_secs = (end - start).as_secs_f64();
        let average_rps = if run_secs > 0.0 {
            total_loops() as f64 / run_secs
        } else {
            0.0
        };
        txt.push_str(&format!("average rps: {average_rps:.2}\n"));
        txt.push_str(&format!(
            "sched delay: message {dm} (usec) worker {dw} (usec)\n"
        ));
        let r = rps_hist.percentiles(&RPS_PCTS);
        Ok(SchbenchReport {
            benchmark: "schbench",
            mode: "native",
            message_threads: cfg.message_threads,
            worker_threads: t as u32,
            runtime_s: stats_secs,
            wakeup_latency_us: summarize(&wake),
            request_latency_us: summarize(&req),
            rps: RpsSummary {
                p20: r[0].value,
                p50: r[1].value,
                p90: r[2].value,
                min: rps_hist.min,
                max: rps_hist.max,
                samples: rps_hist.samples,
            },
            average_rps,
            sched_delay_message_us: dm,
            sched_delay_worker_us: dw,
            wall_s: wall0.elapsed().as_secs_f64(),
            cpus: pinned.map(|c| cpus::format_cpu_list(&c)),
            text: txt,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> SchbenchConfig {
        SchbenchConfig {
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

    #[test]
    fn defaults_follow_the_new_schbench() {
        let c = SchbenchConfig::default();
        assert_eq!(c.matrix_size(), 104);
        assert_eq!(c.workers(), cpus::nprocs() as u32);
        assert_eq!(
            SchbenchConfig {
                runtime: 29,
                warmup: 5,
                ..c.clone()
            }
            .warmup_secs(),
            0
        );
        assert_eq!(
            SchbenchConfig {
                runtime: 30,
                warmup: 5,
                ..c.clone()
            }
            .warmup_secs(),
            5
        );
        assert_eq!(
            SchbenchConfig {
                runtime: 60,
                warmup: 5,
                rps: 10,
                ..c
            }
            .warmup_secs(),
            0
        );
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (cfg, flag) in [
            (
                SchbenchConfig {
                    message_threads: 0,
                    ..quick()
                },
                "-m: ",
            ),
            (
                SchbenchConfig {
                    worker_threads: Some(0),
                    ..quick()
                },
                "-t: ",
            ),
            (
                SchbenchConfig {
                    footprint_kb: u32::MAX,
                    ..quick()
                },
                "-F: ",
            ),
        ] {
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
                rps: 200,
                no_locking: true,
                ..quick()
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
            runtime: 0,
            timeout: Some(Duration::from_millis(200)),
            ..quick()
        };
        assert!(matches!(
            run(&cfg, &mut |_| {}).unwrap_err(),
            Error::Timeout(_)
        ));
    }
}
