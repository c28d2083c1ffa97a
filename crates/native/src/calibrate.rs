//! Measures this host's OS and hardware costs, the figures a simulator cost
//! profile holds (`schedlab calibrate`).
//!
//! # Method
//! Every figure is the **median of B batches** (B = 7, or 3 with
//! [`CalibrateConfig::quick`]); a batch repeats the operation many times
//! back to back and divides its elapsed `CLOCK_MONOTONIC` time by the count.
//! Medians rather than means keep a batch that a hypervisor or another task
//! interrupted (common on a small VM) from moving the figure. The calling
//! thread is pinned to the first allowed CPU (`a`) while it measures, and a
//! partner that needs a CPU of its own goes to the second (`b`); the
//! caller's affinity is restored at the end.
//!
//! - `syscall`: `getppid()` (glibc does not cache it), n back to back.
//! - `pipe100`, `pipe4000`, `unix100`: `write` then `read` of 100 (4000)
//!   bytes on one pipe (unix stream socketpair) in one thread: two syscalls
//!   and two copies per pair. `*_write100` / `*_read100`: the same calls timed
//!   apart: 200 writes, then 200 reads, the clock read around each group.
//! - `pipe100_shared_fd`, `unix100_shared_fd`: `pipe100` and `unix100`
//!   again while a second thread of the process is alive (parked): the
//!   file table is then shared, so every call takes and drops a reference
//!   on its file (fs/file.c `__fget_light` takes the fast path only while
//!   `files->count` is 1), as threads of one process pay and forked
//!   processes do not.
//! - `pipe_depth`, `unix_depth`: `DEPTH_CHANNELS` (160) pipes
//!   (socketpairs) on CPU `a`, each written `k` 100 B messages in turn,
//!   then each read back, for `k` in `DEPTH_QUEUE` (1, 16, 64, 128, 200):
//!   ns per call with 16 KB, 256 KB, 1 MB, 2 MB and 3.2 MB of payload
//!   queued. The growth with `k` is what a call costs when the buffered
//!   data (pipe pages; a socket's skbs, about 768 B each for 100 B) no
//!   longer fits the CPU's caches, as in hackbench with many groups. The
//!   channels are non-blocking: a queue that cannot take `k` messages is
//!   an error, not a hang.
//! - `pipe_rotation`, `unix_rotation`: N pipes (socketpairs) on CPU `a`,
//!   one 100 B message written to each in turn, then each read back, for
//!   N in `ROTATION_CHANNELS` (1, 4, 16, 64, 160): between two calls on
//!   one channel the CPU makes N - 1 calls on the others, so the growth
//!   with N is what a call costs when the channel's kernel state, page or
//!   skbs were evicted by the other channels' calls (hackbench's senders
//!   write to every receiver in turn).
//! - `rtt_thread`, `rtt_process`: a 1-byte pipe ping-pong (two pipes) with
//!   an echoing thread (forked process) on the same CPU: per round trip two
//!   context switches and four pipe calls.
//! - `ring_thread`, `ring_process`: lmbench lat_ctx's method, a ring of
//!   N = 2, 4, 8, 16, 32, 64 threads (processes) on CPU `a`, each reading a
//!   byte from its pipe and writing it to the next one's; ns per hop (one
//!   pipe write, one read and one switch). Past the ring of two, each task
//!   runs again only after N - 1 others ran on the CPU, so the growth of the
//!   per-hop time with N is the cache (and, between processes, TLB) refill
//!   of a task's working set that the others evicted. getrusage counts the
//!   switches, since a woken member may preempt its writer (two switches
//!   for that hop): the profile divides by the count.
//! - `pipe_pair_alternating`, `unix_pair_alternating`,
//!   `tcp_pair_alternating`: two threads pinned
//!   to CPUs `a` and `b` take turns (a spin on a shared turn counter hands
//!   the turn over); on its turn a thread writes 100 bytes to one shared
//!   pipe (socketpair, loopback TCP connection) and reads them back, so
//!   every pair finds the
//!   channel's kernel state (lock, indices, wait queues, buffer page, file
//!   counts) last touched on the other CPU. `*_own`: the same turns, each
//!   thread with a channel of its own. The difference is what the shared
//!   channel's cache lines cost to pull over; the profile turns it into a
//!   number of lines at the pair's measured c2c latency. The shared and
//!   own turns alternate batch by batch and the difference is the median
//!   of the per-batch differences (`Plan::interleaved`): taken apart (the
//!   fastest batch of each, as before 2026-12-01), one slow spell on a
//!   2-vCPU guest gave 5, 15 and 35 lines for the same pipe in three runs.
//! - `fork_run` / `fork_exit`: `fork()` until the child runs (it writes a
//!   byte the parent reads), then from there until `waitpid` has reaped its
//!   `_exit`. `thread_run` / `thread_exit`: the same with `pthread_create` and
//!   `pthread_join`.
//! - `gettimeofday`: one vDSO `gettimeofday`.
//! - `futex_wake_nowaiter`: `FUTEX_WAKE_PRIVATE` on a word nobody waits on;
//!   `futex_wait_eagain`: `FUTEX_WAIT_PRIVATE` expecting 0 on a word holding
//!   1 (the kernel hashes the word, reads it and returns EAGAIN).
//! - `futex_rtt_same_cpu` / `futex_rtt_two_cpu`: schbench's fpost/fwait
//!   (compare-and-swap on a per-thread word, `FUTEX_WAKE` only when the word
//!   was blocked; wait takes the post or sleeps in `FUTEX_WAIT`) ping-pong
//!   between two threads, the partner on CPU `a` or on CPU `b`. On two CPUs
//!   each wake-up finds the other CPU idle, so it costs a wake-up IPI and the
//!   idle state's exit; `wake = (rtt_two_cpu - rtt_same_cpu) / 2` estimates
//!   that extra per wake-up (both sides switch and make the same calls).
//! - `ipi_rtt`: `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` with a
//!   thread of this process spinning on CPU `b` minus the same call with
//!   that thread asleep: the kernel interrupts every CPU running one of
//!   the process's threads and waits for each to answer, so the difference
//!   is an IPI's round trip (one way: half). Each batch times both, the
//!   partner confirming it spins on `b` (sched_getcpu); the figure is the
//!   median of the per-batch differences (two separate medians gave 18 ns,
//!   no IPI at all, in some runs on a 2-vCPU guest and 3.3-4.5 us in others).
//! - `tcp_*`: one connected loopback TCP pair (127.0.0.1, `TCP_NODELAY`),
//!   writes and reads of 100 and 65536 bytes timed apart in groups (200 and
//!   1 per group, so at most 20 KB is queued); a straight line through the
//!   two sizes gives per-call and per-byte figures for each side.
//! - `cas`: an uncontended compare-and-swap on a 64-bit word in its own
//!   line, each expecting the value the previous one stored.
//! - `matmul_madd`: schbench's `do_some_math` for its default 256 KB
//!   footprint (n = 104): i-j-k loops over u64, the running sum stored to C
//!   on every k (as gcc -O2 compiles schbench.c), ns per multiply-add.
//! - c2c: for every pair of allowed CPUs, the core-to-core latency of
//!   github.com/nviennot/core-to-core-latency: two threads pinned to the
//!   two CPUs hand one cache line back and forth with compare-and-swap
//!   (ping: false -> true, pong: true -> false); a sample is R round trips
//!   (1000; 100 quick), one way = sample time / R / 2; the first sample is
//!   a warm-up and dropped; the pair's figure is the median of S samples
//!   (300; 30 quick; nviennot reports the mean). `contended`: both threads
//!   increment one shared word with compare-and-swap retry loops at once,
//!   time / successful increments (what a contended lock word costs per
//!   acquisition; a line may serve several increments before it moves).
//! - `memory`: one thread's DRAM streaming, a PTE update, a fault that only
//!   installs a PTE and a first touch, each the fastest of 5 runs over 256
//!   MiB (3 over 64 MiB quick); the method is in [`mem`].

pub mod mem;

use crate::error::{Error, Result};
use crate::sys::now_ns;
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

/// What to measure and how long.
#[derive(Clone, Debug, Default)]
pub struct CalibrateConfig {
    /// Fewer and shorter batches (a second or two in all): for tests and a
    /// first look, not for a profile to trust.
    pub quick: bool,
    /// Measure the c2c latency of at most this many CPUs (the first ones
    /// allowed; None: all).
    pub max_c2c_cpus: Option<usize>,
}

/// One pair's core-to-core latency, ns one way.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct C2cPair {
    /// The pinging CPU.
    pub a: usize,
    /// The ponging CPU.
    pub b: usize,
    /// CAS ping-pong, one way (round trip / 2), median of the samples.
    pub uncontended_ns: f64,
    /// Both CPUs incrementing the line at once, per successful increment.
    pub contended_ns: f64,
}

/// Channels of the `*_depth` measurements.
pub const DEPTH_CHANNELS: usize = 160;
/// Messages queued on each channel in the `*_depth` measurements.
pub const DEPTH_QUEUE: [u64; 5] = [1, 16, 64, 128, 200];

/// Channels of the `*_rotation` measurements (one message each).
pub const ROTATION_CHANNELS: [usize; 5] = [1, 4, 16, 64, 160];

/// Ring sizes of the `ring_*` measurements.
pub const RING_SIZES: [usize; 6] = [2, 4, 8, 16, 32, 64];

/// Every raw figure, ns unless named otherwise (see the module's method).
#[derive(Clone, Debug, Default, serde::Serialize)]
#[allow(missing_docs)]
pub struct Measurements {
    /// Batches per figure.
    pub batches: usize,
    /// The CPUs used (the first is `a`, the second `b`).
    pub cpus: Vec<usize>,
    pub syscall_ns: f64,
    pub pipe100_ns: f64,
    pub pipe4000_ns: f64,
    pub unix100_ns: f64,
    pub pipe_write100_ns: f64,
    pub pipe_read100_ns: f64,
    pub unix_write100_ns: f64,
    pub unix_read100_ns: f64,
    /// `pipe100` with the file table shared by a second live thread.
    pub pipe100_shared_fd_ns: f64,
    /// `unix100` with the file table shared by a second live thread.
    pub unix100_shared_fd_ns: f64,
    /// ns per pipe call for each of `DEPTH_QUEUE` messages queued on each
    /// of `DEPTH_CHANNELS` pipes.
    pub pipe_depth_ns: Vec<f64>,
    /// The same on unix socketpairs.
    pub unix_depth_ns: Vec<f64>,
    /// ns per pipe call, one message at a time over each of
    /// `ROTATION_CHANNELS` pipes in turn.
    pub pipe_rotation_ns: Vec<f64>,
    /// The same on unix socketpairs.
    pub unix_rotation_ns: Vec<f64>,
    pub rtt_thread_same_cpu_ns: f64,
    pub rtt_process_same_cpu_ns: f64,
    /// ns per hop for each of `RING_SIZES`, threads.
    pub ring_thread_ns: Vec<f64>,
    /// ns per hop for each of `RING_SIZES`, processes.
    pub ring_process_ns: Vec<f64>,
    /// Context switches per hop, as `ring_thread_ns`.
    pub ring_thread_switches: Vec<f64>,
    /// Context switches per hop, as `ring_process_ns`.
    pub ring_process_switches: Vec<f64>,
    pub fork_run_ns: f64,
    pub fork_exit_ns: f64,
    pub thread_run_ns: f64,
    pub thread_exit_ns: f64,
    pub gettimeofday_ns: f64,
    pub futex_wake_nowaiter_ns: f64,
    pub futex_wait_eagain_ns: f64,
    pub futex_rtt_same_cpu_ns: f64,
    /// None with a single CPU.
    pub futex_rtt_two_cpu_ns: Option<f64>,
    /// None with a single CPU or without membarrier.
    pub ipi_rtt_ns: Option<f64>,
    pub tcp_write100_ns: f64,
    pub tcp_read100_ns: f64,
    pub tcp_write65536_ns: f64,
    pub tcp_read65536_ns: f64,
    pub cas_ns: f64,
    pub matmul_madd_ns: f64,
    /// Every measured pair, a < b.
    pub c2c: Vec<C2cPair>,
    /// A 100 B pipe write+read on alternating CPUs, ns per turn (None with
    /// a single CPU).
    pub pipe_pair_alternating_ns: Option<f64>,
    /// The same on a unix socketpair.
    pub unix_pair_alternating_ns: Option<f64>,
    /// The same turns with a pipe of each thread's own.
    pub pipe_pair_alternating_own_ns: Option<f64>,
    /// The same turns with a socketpair of each thread's own.
    pub unix_pair_alternating_own_ns: Option<f64>,
    /// The same on one loopback TCP connection (TCP_NODELAY): each turn
    /// sends 100 B on one end and receives them on the other.
    pub tcp_pair_alternating_ns: Option<f64>,
    /// The same turns with a connection of each thread's own.
    pub tcp_pair_alternating_own_ns: Option<f64>,
    /// Memory streaming, PTE updates and page faults (see [`mem`]).
    pub memory: mem::MemoryFigures,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn sys_err(what: &str) -> Error {
    Error::io(what.to_string(), std::io::Error::last_os_error())
}

fn pin(cpu: usize) -> Result<()> {
    let mut s = CpuSet::new();
    s.set(cpu).map_err(|e| Error::sys("CPU set", e))?;
    sched_setaffinity(Pid::from_raw(0), &s)
        .map_err(|e| Error::sys(format!("pinning to CPU {cpu}"), e))
}

/// The calling thread's affinity comes back when this is dropped.
struct Restore(CpuSet);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = sched_setaffinity(Pid::from_raw(0), &self.0);
    }
}

/// Write and read timed apart: in each of `batches` batches, `groups`
/// times, `k` writes of `size` bytes to `w` then `k` reads from `r`; the
/// median over the batches of the mean ns per write and per read.
fn write_then_read(
    w: RawFd,
    r: RawFd,
    size: usize,
    k: u64,
    groups: u64,
    batches: usize,
    buf: &mut [u8],
) -> Result<(f64, f64)> {
    let mut ws = Vec::new();
    let mut rs = Vec::new();
    for _ in 0..batches {
        let (mut tw, mut tr) = (0u64, 0u64);
        for _ in 0..groups {
            let t0 = now_ns();
            for _ in 0..k {
                wr(w, &buf[..size])?;
            }
            let t1 = now_ns();
            for _ in 0..k {
                rd(r, &mut buf[..size])?;
            }
            let t2 = now_ns();
            tw += t1 - t0;
            tr += t2 - t1;
        }
        ws.push(tw as f64 / (groups * k) as f64);
        rs.push(tr as f64 / (groups * k) as f64);
    }
    Ok((median(ws), median(rs)))
}

fn wr(fd: RawFd, buf: &[u8]) -> Result<()> {
    // SAFETY: writing from a valid buffer.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n != buf.len() as isize {
        return Err(sys_err("write"));
    }
    Ok(())
}

fn rd(fd: RawFd, buf: &mut [u8]) -> Result<()> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled tail of a valid buffer.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n <= 0 {
            return Err(sys_err("read"));
        }
        got += n as usize;
    }
    Ok(())
}

struct Fds([RawFd; 2]);
impl Drop for Fds {
    fn drop(&mut self) {
        for fd in self.0 {
            // SAFETY: we own both fds.
            unsafe { libc::close(fd) };
        }
    }
}

fn pipe() -> Result<Fds> {
    let mut f = [0; 2];
    // SAFETY: pipe writes two fds.
    if unsafe { libc::pipe(f.as_mut_ptr()) } != 0 {
        return Err(sys_err("pipe"));
    }
    Ok(Fds(f))
}

fn socketpair() -> Result<Fds> {
    let mut f = [0; 2];
    // SAFETY: socketpair writes two fds.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, f.as_mut_ptr()) } != 0 {
        return Err(sys_err("socketpair"));
    }
    Ok(Fds(f))
}

fn futex(w: &AtomicI32, op: i32, val: i32) -> libc::c_long {
    // SAFETY: the futex word is a valid, aligned i32 for the call's duration.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            op,
            val,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        )
    }
}

const FUTEX_WAIT_PRIVATE: i32 = libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG;
const FUTEX_WAKE_PRIVATE: i32 = libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG;
const BLOCKED: i32 = 0;
const RUNNING: i32 = 1;

/// schbench's fpost: wake only when the word was blocked.
fn fpost(w: &AtomicI32) {
    if w.compare_exchange(BLOCKED, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        futex(w, FUTEX_WAKE_PRIVATE, 1);
    }
}

/// schbench's fwait: take the post, else sleep while blocked.
fn fwait(w: &AtomicI32) {
    while w
        .compare_exchange(RUNNING, BLOCKED, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        futex(w, FUTEX_WAIT_PRIVATE, BLOCKED);
    }
}

#[repr(align(128))]
#[derive(Default)]
struct Line<T>(T);

/// Scale of the iteration counts.
struct Plan {
    batches: usize,
    div: u64,
}

impl Plan {
    fn n(&self, full: u64) -> u64 {
        (full / self.div).max(1)
    }
    fn median(&self, mut f: impl FnMut() -> Result<f64>) -> Result<f64> {
        let mut v = Vec::with_capacity(self.batches);
        for _ in 0..self.batches {
            v.push(f()?);
        }
        Ok(median(v))
    }
    /// Two measurements taken in turn, batch by batch: the median of the
    /// second, and the first as that plus the median of the per-batch
    /// differences, so a slow spell of the machine moves both sides of a
    /// difference together instead of one.
    fn interleaved(
        &self,
        mut first: impl FnMut() -> Result<f64>,
        mut second: impl FnMut() -> Result<f64>,
    ) -> Result<(f64, f64)> {
        let (mut diffs, mut seconds) = (Vec::new(), Vec::new());
        for _ in 0..self.batches {
            let x = first()?;
            let y = second()?;
            diffs.push(x - y);
            seconds.push(y);
        }
        let y = median(seconds);
        Ok((y + median(diffs), y))
    }
}

/// A thread that does nothing until dropped: while it lives, the process's
/// file table is shared.
struct ParkedThread {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ParkedThread {
    fn spawn() -> ParkedThread {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Acquire) {
                std::thread::park();
            }
        });
        ParkedThread {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for ParkedThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// `DEPTH_CHANNELS` channels made by `make` (write end, read end), set
/// non-blocking; for each of `DEPTH_QUEUE`, the median over the batches of
/// ns per call with that many 100 B messages queued on every channel
/// (about `calls` calls per batch).
fn depth_table(plan: &Plan, calls: u64, make: fn() -> Result<Fds>) -> Result<Vec<f64>> {
    DEPTH_QUEUE
        .iter()
        .map(|&k| rotate(plan, calls, make, DEPTH_CHANNELS, k))
        .collect()
}

/// For each of `ROTATION_CHANNELS`: that many channels made by `make`,
/// each written one 100 B message in turn and then each read back, the
/// median over the batches of ns per call (about `calls` calls per batch).
/// Between two calls on one channel the CPU makes N - 1 calls on the
/// others: the growth with N is what a call costs when the channel's
/// kernel state (and its pipe page or skb) was evicted by the others'.
fn rotation_table(plan: &Plan, calls: u64, make: fn() -> Result<Fds>) -> Result<Vec<f64>> {
    ROTATION_CHANNELS
        .iter()
        .map(|&n| rotate(plan, calls, make, n, 1))
        .collect()
}

/// `n` channels made by `make`, non-blocking; each written `k` 100 B
/// messages in turn, then each read back: the median over the batches of
/// ns per call (about `calls` calls per batch).
fn rotate(plan: &Plan, calls: u64, make: fn() -> Result<Fds>, n: usize, k: u64) -> Result<f64> {
    let chans = (0..n).map(|_| make()).collect::<Result<Vec<_>>>()?;
    for c in &chans {
        for fd in c.0 {
            // SAFETY: fcntl on an fd we own.
            let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
                return Err(sys_err("fcntl O_NONBLOCK"));
            }
        }
    }
    // a pipe's ends are [read, write], a socketpair's are symmetric
    let ends: Vec<(RawFd, RawFd)> = chans.iter().map(|c| (c.0[1], c.0[0])).collect();
    let mut buf = [b'-'; 100];
    let per_round = 2 * n as u64 * k;
    let rounds = (calls / per_round).max(1);
    plan.median(|| {
        let t = now_ns();
        for _ in 0..rounds {
            for &(w, _) in &ends {
                for _ in 0..k {
                    wr(w, &buf)?;
                }
            }
            for &(_, r) in &ends {
                for _ in 0..k {
                    rd(r, &mut buf)?;
                }
            }
        }
        Ok((now_ns() - t) as f64 / (rounds * per_round) as f64)
    })
}

/// Times `n` calls of `f`, ns per call.
fn per_call(n: u64, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let t = now_ns();
    for _ in 0..n {
        f()?;
    }
    Ok((now_ns() - t) as f64 / n as f64)
}

/// Measure this host (see the module's method). `progress` gets a short
/// line as each group of figures starts.
pub fn measure(cfg: &CalibrateConfig, progress: &mut dyn FnMut(&str)) -> Result<Measurements> {
    let own =
        sched_getaffinity(Pid::from_raw(0)).map_err(|e| Error::sys("sched_getaffinity", e))?;
    let _restore = Restore(own);
    let cpus: Vec<usize> = (0..CpuSet::count())
        .filter(|&c| own.is_set(c).unwrap_or(false))
        .collect();
    let (a, b) = (cpus[0], cpus.get(1).copied());
    let plan = Plan {
        batches: if cfg.quick { 3 } else { 7 },
        div: if cfg.quick { 50 } else { 1 },
    };
    let mut m = Measurements {
        batches: plan.batches,
        cpus: cpus.clone(),
        ..Default::default()
    };
    pin(a)?;
    progress("syscalls, pipes, unix sockets");
    let n = plan.n(200_000);
    m.syscall_ns = plan.median(|| {
        per_call(n, || {
            // SAFETY: getppid has no arguments and cannot fail.
            unsafe { libc::getppid() };
            Ok(())
        })
    })?;
    let mut buf = vec![b'-'; 4096];
    let p = pipe()?;
    let s = socketpair()?;
    let pair = |w: RawFd, r: RawFd, size: usize, buf: &mut [u8]| {
        plan.median(|| {
            per_call(n, || {
                wr(w, &buf[..size])?;
                rd(r, &mut buf[..size])
            })
        })
    };
    m.pipe100_ns = pair(p.0[1], p.0[0], 100, &mut buf)?;
    m.pipe4000_ns = pair(p.0[1], p.0[0], 4000, &mut buf)?;
    m.unix100_ns = pair(s.0[0], s.0[1], 100, &mut buf)?;
    let apart = |w: RawFd, r: RawFd, k: u64, size: usize, count: u64, buf: &mut [u8]| {
        let groups = (count / k).max(1);
        write_then_read(w, r, size, k, groups, plan.batches, buf)
    };
    (m.unix_write100_ns, m.unix_read100_ns) = apart(s.0[0], s.0[1], 200, 100, n, &mut buf)?;
    (m.pipe_write100_ns, m.pipe_read100_ns) = apart(p.0[1], p.0[0], 200, 100, n, &mut buf)?;
    {
        // the same pairs while another thread shares the file table
        let _other = ParkedThread::spawn();
        m.pipe100_shared_fd_ns = pair(p.0[1], p.0[0], 100, &mut buf)?;
        m.unix100_shared_fd_ns = pair(s.0[0], s.0[1], 100, &mut buf)?;
    }
    drop((p, s));
    progress("pipes and sockets with data queued");
    let calls = plan.n(100_000);
    m.pipe_depth_ns = depth_table(&plan, calls, pipe)?;
    m.unix_depth_ns = depth_table(&plan, calls, socketpair)?;
    progress("pipes and sockets used in turn");
    m.pipe_rotation_ns = rotation_table(&plan, calls, pipe)?;
    m.unix_rotation_ns = rotation_table(&plan, calls, socketpair)?;

    progress("context switches");
    let iters = plan.n(50_000);
    m.rtt_thread_same_cpu_ns = plan.median(|| pipe_pingpong(iters, a, false))?;
    m.rtt_process_same_cpu_ns = plan.median(|| pipe_pingpong(iters, a, true))?;
    progress("context switches in rings of 2 to 64 tasks");
    for process in [false, true] {
        let (mut v, mut sw) = (Vec::new(), Vec::new());
        for n in RING_SIZES {
            let rounds = (plan.n(60_000) / n as u64).max(2);
            // the median batch by time, with that batch's switch count
            let mut b = (0..plan.batches)
                .map(|_| pipe_ring(n, rounds, a, process))
                .collect::<Result<Vec<_>>>()?;
            b.sort_by(|x, y| x.0.total_cmp(&y.0));
            v.push(b[b.len() / 2].0);
            sw.push(b[b.len() / 2].1);
        }
        if process {
            (m.ring_process_ns, m.ring_process_switches) = (v, sw);
        } else {
            (m.ring_thread_ns, m.ring_thread_switches) = (v, sw);
        }
    }

    progress("fork, clone, exit");
    let nf = plan.n(2000);
    let mut runs = Vec::new();
    let mut exits = Vec::new();
    for _ in 0..plan.batches {
        let (r, e) = fork_lifetime(nf)?;
        runs.push(r);
        exits.push(e);
    }
    (m.fork_run_ns, m.fork_exit_ns) = (median(runs), median(exits));
    let mut runs = Vec::new();
    let mut exits = Vec::new();
    for _ in 0..plan.batches {
        let (r, e) = thread_lifetime(nf)?;
        runs.push(r);
        exits.push(e);
    }
    (m.thread_run_ns, m.thread_exit_ns) = (median(runs), median(exits));

    progress("clock, futex, wake-ups, IPIs");
    let nc = plan.n(2_000_000);
    m.gettimeofday_ns = plan.median(|| {
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        per_call(nc, || {
            // SAFETY: gettimeofday writes the timeval we pass.
            unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
            Ok(())
        })
    })?;
    let w = AtomicI32::new(1);
    m.futex_wake_nowaiter_ns = plan.median(|| {
        per_call(n, || {
            futex(&w, FUTEX_WAKE_PRIVATE, 1);
            Ok(())
        })
    })?;
    m.futex_wait_eagain_ns = plan.median(|| {
        per_call(n, || {
            futex(&w, FUTEX_WAIT_PRIVATE, 0);
            Ok(())
        })
    })?;
    m.futex_rtt_same_cpu_ns = plan.median(|| futex_pingpong(plan.n(50_000), a, a))?;
    if let Some(b) = b {
        m.futex_rtt_two_cpu_ns = Some(plan.median(|| futex_pingpong(plan.n(10_000), a, b))?);
        m.ipi_rtt_ns = ipi_rtt(&plan, b)?;
    }

    if let Some(b) = b {
        progress("channels used from two CPUs in turn");
        let turns = plan.n(200_000);
        let (p, q) = (pipe()?, pipe()?);
        let (s, u) = (socketpair()?, socketpair()?);
        let (pp, pq) = ((p.0[1], p.0[0]), (q.0[1], q.0[0]));
        let (ss, su) = ((s.0[0], s.0[1]), (u.0[0], u.0[1]));
        let (shared, own) = plan.interleaved(
            || alternating(Some([pp, pp]), a, b, turns),
            || alternating(Some([pp, pq]), a, b, turns),
        )?;
        (m.pipe_pair_alternating_ns, m.pipe_pair_alternating_own_ns) = (Some(shared), Some(own));
        let (shared, own) = plan.interleaved(
            || alternating(Some([ss, ss]), a, b, turns),
            || alternating(Some([ss, su]), a, b, turns),
        )?;
        (m.unix_pair_alternating_ns, m.unix_pair_alternating_own_ns) = (Some(shared), Some(own));
        let (c, d) = (tcp_connection()?, tcp_connection()?);
        let (cc, cd) = (
            (c.0.as_raw_fd(), c.1.as_raw_fd()),
            (d.0.as_raw_fd(), d.1.as_raw_fd()),
        );
        let (shared, own) = plan.interleaved(
            || alternating(Some([cc, cc]), a, b, turns),
            || alternating(Some([cc, cd]), a, b, turns),
        )?;
        (m.tcp_pair_alternating_ns, m.tcp_pair_alternating_own_ns) = (Some(shared), Some(own));
    }

    progress("loopback TCP");
    let (w100, r100, w64k, r64k) = tcp(&plan)?;
    (m.tcp_write100_ns, m.tcp_read100_ns) = (w100, r100);
    (m.tcp_write65536_ns, m.tcp_read65536_ns) = (w64k, r64k);

    progress("compare-and-swap, matrix multiply");
    let word = Line(AtomicU64::new(0));
    let ncas = plan.n(10_000_000);
    m.cas_ns = plan.median(|| {
        word.0.store(0, Ordering::Relaxed);
        let t = now_ns();
        for i in 0..ncas {
            if word
                .0
                .compare_exchange(i, i + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                return Err(Error::Task("an uncontended CAS failed".into()));
            }
        }
        Ok((now_ns() - t) as f64 / ncas as f64)
    })?;
    m.matmul_madd_ns = matmul_madd(&plan);

    progress("memory streaming, PTE updates, page faults");
    m.memory = if cfg.quick {
        mem::measure_memory(64 << 20, 3)?
    } else {
        mem::measure_memory(256 << 20, 5)?
    };

    let c2c_cpus: Vec<usize> = cpus
        .iter()
        .copied()
        .take(cfg.max_c2c_cpus.unwrap_or(usize::MAX))
        .collect();
    if c2c_cpus.len() >= 2 {
        progress("core-to-core latency");
        let (rt, samples) = if cfg.quick { (100, 30) } else { (1000, 300) };
        for (i, &x) in c2c_cpus.iter().enumerate() {
            for &y in &c2c_cpus[i + 1..] {
                let uncontended_ns = c2c_pingpong(x, y, rt, samples)?;
                let contended_ns = c2c_contended(x, y, &plan)?;
                m.c2c.push(C2cPair {
                    a: x,
                    b: y,
                    uncontended_ns,
                    contended_ns,
                });
            }
        }
    }
    Ok(m)
}

/// One batch of the same-CPU pipe ping-pong, ns per round trip.
fn pipe_pingpong(iters: u64, cpu: usize, process: bool) -> Result<f64> {
    let p1 = pipe()?;
    let p2 = pipe()?;
    let (r1, w2) = (p1.0[0], p2.0[1]);
    let echo = move || {
        let mut c = [0u8];
        for _ in 0..iters {
            if rd(r1, &mut c).is_err() || wr(w2, &c).is_err() {
                return false;
            }
        }
        true
    };
    let mut c = [b'x'];
    let run = |c: &mut [u8; 1]| {
        let t = now_ns();
        for _ in 0..iters {
            wr(p1.0[1], c)?;
            rd(p2.0[0], c)?;
        }
        Ok::<_, Error>((now_ns() - t) as f64 / iters as f64)
    };
    if process {
        // SAFETY: getpid is always safe.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child only makes raw syscalls and _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(sys_err("fork"));
        }
        if pid == 0 {
            // Die with the parent, and keep only the pipe ends the echo
            // uses: a signal that kills the parent must not leave the echo
            // blocked in read on a pipe whose write end it holds itself.
            // SAFETY: prctl, getppid, close and _exit are async-signal-safe.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                libc::close(p1.0[1]);
                libc::close(p2.0[0]);
            }
            let ok = echo();
            // SAFETY: leaving the child without running the parent's destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let r = run(&mut c);
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        r
    } else {
        let h = std::thread::spawn(move || {
            let _ = pin(cpu);
            echo()
        });
        let r = run(&mut c);
        let _ = h.join();
        r
    }
}

/// Context switches (voluntary and involuntary) that `who` has made.
fn switches(who: i32) -> u64 {
    // SAFETY: an all-zero rusage is valid and getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct we pass.
    unsafe { libc::getrusage(who, &mut u) };
    (u.ru_nvcsw + u.ru_nivcsw) as u64
}

/// One batch of the ring of `n` tasks on `cpu` (the caller is member 0):
/// `rounds` trips of one byte around the ring: (ns per hop, context
/// switches per hop). A hop is not always one switch: a woken member may
/// preempt the writer before it blocks, which then runs again only to
/// block; getrusage counts them all (every member's switches out; on one
/// busy CPU that is every switch).
fn pipe_ring(n: usize, rounds: u64, cpu: usize, process: bool) -> Result<(f64, f64)> {
    let pipes = (0..n).map(|_| pipe()).collect::<Result<Vec<_>>>()?;
    // member i reads pipes[i] and writes pipes[(i + 1) % n]
    let ends: Vec<(RawFd, RawFd)> = (0..n)
        .map(|i| (pipes[i].0[0], pipes[(i + 1) % n].0[1]))
        .collect();
    let member = move |(r, w): (RawFd, RawFd)| {
        let mut c = [0u8];
        for _ in 0..rounds {
            if rd(r, &mut c).is_err() || wr(w, &c).is_err() {
                return false;
            }
        }
        true
    };
    let mut children = Vec::new();
    let mut threads = Vec::new();
    // SAFETY: getpid is always safe.
    let parent = unsafe { libc::getpid() };
    for &e in &ends[1..] {
        if process {
            // SAFETY: the child only makes raw syscalls and _exits.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(sys_err("fork"));
            }
            if pid == 0 {
                // Die with the parent, as the ping-pong's echo does: a
                // member left behind would wait on the ring forever.
                // SAFETY: prctl, getppid and _exit are async-signal-safe.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                }
                let ok = member(e);
                // SAFETY: leaving the child without running the parent's destructors.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            children.push(pid);
        } else {
            threads.push(std::thread::spawn(move || {
                let _ = pin(cpu);
                member(e)
            }));
        }
    }
    let (r0, w0) = ends[0];
    let mut c = [b'x'];
    let (self0, children0) = (switches(libc::RUSAGE_SELF), switches(libc::RUSAGE_CHILDREN));
    let t = now_ns();
    let mut res = Ok(());
    for _ in 0..rounds {
        res = wr(w0, &c).and_then(|_| rd(r0, &mut c));
        if res.is_err() {
            break;
        }
    }
    let hops = (rounds * n as u64) as f64;
    let per_hop = (now_ns() - t) as f64 / hops;
    for pid in children {
        if res.is_err() {
            // SAFETY: signalling our own child, which may wait on the ring.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    }
    if res.is_ok() {
        // every member reads and writes `rounds` bytes, so all are done
        for h in threads {
            let _ = h.join();
        }
    }
    // RUSAGE_SELF covers the threads, joined or not; the children's
    // counts arrive with their reaping. Each member's first block and last
    // exit are a few switches outside the timed hops, negligible against
    // the thousands counted.
    let sw = switches(libc::RUSAGE_SELF) - self0 + switches(libc::RUSAGE_CHILDREN) - children0;
    res.map(|_| (per_hop, sw as f64 / hops))
}

static RUN_PIPE_W: AtomicI32 = AtomicI32::new(-1);

extern "C" fn signal_run(_: *mut libc::c_void) -> *mut libc::c_void {
    let c = [b'r'];
    let _ = wr(RUN_PIPE_W.load(Ordering::Relaxed), &c);
    std::ptr::null_mut()
}

/// `n` forks: (until the child runs, from then until reaped), ns each.
fn fork_lifetime(n: u64) -> Result<(f64, f64)> {
    let p = pipe()?;
    let (mut run, mut ex) = (0u64, 0u64);
    let mut c = [0u8];
    for _ in 0..n {
        let t0 = now_ns();
        // SAFETY: the child makes one write and _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(sys_err("fork"));
        }
        if pid == 0 {
            let _ = wr(p.0[1], b"r");
            // SAFETY: see above.
            unsafe { libc::_exit(0) };
        }
        rd(p.0[0], &mut c)?;
        let t1 = now_ns();
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        let t2 = now_ns();
        run += t1 - t0;
        ex += t2 - t1;
    }
    Ok((run as f64 / n as f64, ex as f64 / n as f64))
}

/// `n` pthread_create/join: (until the thread runs, from then until
/// joined), ns each.
fn thread_lifetime(n: u64) -> Result<(f64, f64)> {
    let p = pipe()?;
    RUN_PIPE_W.store(p.0[1], Ordering::Relaxed);
    let (mut run, mut ex) = (0u64, 0u64);
    let mut c = [0u8];
    for _ in 0..n {
        // SAFETY: pthread_t is plain data, written by pthread_create.
        let mut th: libc::pthread_t = unsafe { std::mem::zeroed() };
        let t0 = now_ns();
        // SAFETY: a default-attribute thread running an extern "C" function
        // that only writes one byte to a pipe.
        if unsafe {
            libc::pthread_create(&mut th, std::ptr::null(), signal_run, std::ptr::null_mut())
        } != 0
        {
            return Err(Error::Task("pthread_create failed".into()));
        }
        rd(p.0[0], &mut c)?;
        let t1 = now_ns();
        // SAFETY: joining the thread just created.
        unsafe { libc::pthread_join(th, std::ptr::null_mut()) };
        let t2 = now_ns();
        run += t1 - t0;
        ex += t2 - t1;
    }
    Ok((run as f64 / n as f64, ex as f64 / n as f64))
}

/// One batch of schbench's fpost/fwait ping-pong, the caller on `a`, the
/// partner on `b`: ns per round trip.
fn futex_pingpong(it: u64, a: usize, b: usize) -> Result<f64> {
    pin(a)?;
    let words = Arc::new([Line(AtomicI32::new(BLOCKED)), Line(AtomicI32::new(BLOCKED))]);
    let w2 = words.clone();
    let h = std::thread::spawn(move || {
        let pinned = pin(b);
        for _ in 0..=it {
            fwait(&w2[1].0);
            fpost(&w2[0].0);
        }
        pinned
    });
    // one untimed round: the partner's start-up
    fpost(&words[1].0);
    fwait(&words[0].0);
    let t = now_ns();
    for _ in 0..it {
        fpost(&words[1].0);
        fwait(&words[0].0);
    }
    let r = (now_ns() - t) as f64 / it as f64;
    h.join()
        .map_err(|_| Error::Task("futex partner panicked".into()))??;
    Ok(r)
}

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: i32 = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: i32 = 1 << 4;

fn membarrier(cmd: i32) -> libc::c_long {
    // SAFETY: membarrier takes a command and flags only.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) }
}

/// Expedited membarrier with and without a spinning thread on `b`: the
/// difference, ns (None when the kernel lacks the command).
fn ipi_rtt(plan: &Plan, b: usize) -> Result<Option<f64>> {
    if membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0 {
        return Ok(None);
    }
    let n = plan.n(20_000);
    let call = || {
        per_call(n, || {
            membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
            Ok(())
        })
    };
    // The partner on b: asleep (PARK) or spinning (SPIN) on command, and
    // it says which it is doing (`at`) once it does it on CPU b.
    const PARK: u64 = 0;
    const SPIN: u64 = 1;
    const STOP: u64 = 2;
    let want = Arc::new(AtomicU64::new(PARK));
    let at = Arc::new(AtomicU64::new(u64::MAX));
    let (w2, a2) = (want.clone(), at.clone());
    let h = std::thread::spawn(move || -> Result<()> {
        pin(b)?;
        loop {
            match w2.load(Ordering::Acquire) {
                STOP => return Ok(()),
                SPIN => {
                    // SAFETY: sched_getcpu has no arguments.
                    let on_b = unsafe { libc::sched_getcpu() } == b as i32;
                    a2.store(if on_b { SPIN } else { u64::MAX }, Ordering::Release);
                    while w2.load(Ordering::Relaxed) == SPIN {
                        std::hint::spin_loop();
                    }
                }
                _ => {
                    a2.store(PARK, Ordering::Release);
                    std::thread::park_timeout(std::time::Duration::from_millis(1));
                }
            }
        }
    });
    let set = |mode: u64| {
        want.store(mode, Ordering::Release);
        h.thread().unpark();
        while at.load(Ordering::Acquire) != mode {
            h.thread().unpark();
            std::thread::yield_now();
        }
    };
    // Each batch measures the call with the partner asleep, then spinning,
    // back to back: the median of the per-batch differences is robust to
    // drift and to a batch in which the partner lost its CPU.
    let mut diffs = Vec::with_capacity(plan.batches);
    let mut failed = None;
    for _ in 0..plan.batches {
        set(PARK);
        // let it go to sleep: a parked thread leaves CPU b idle
        std::thread::sleep(std::time::Duration::from_micros(200));
        let alone = call();
        set(SPIN);
        let busy = call();
        match (alone, busy) {
            (Ok(a), Ok(bz)) => diffs.push((bz - a).max(0.0)),
            (Err(e), _) | (_, Err(e)) => {
                failed = Some(e);
                break;
            }
        }
    }
    want.store(STOP, Ordering::Release);
    h.thread().unpark();
    h.join()
        .map_err(|_| Error::Task("IPI partner panicked".into()))??;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(Some(median(diffs)))
}

/// Loopback TCP writes and reads of 100 and 65536 B timed apart:
/// (write100, read100, write65536, read65536), ns per call.
/// A connected loopback TCP pair with TCP_NODELAY: (sending end,
/// receiving end).
fn tcp_connection() -> Result<(std::net::TcpStream, std::net::TcpStream)> {
    let io = |what: &str, e: std::io::Error| Error::io(what.to_string(), e);
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| io("TCP listen", e))?;
    let tx = std::net::TcpStream::connect(l.local_addr().map_err(|e| io("TCP address", e))?)
        .map_err(|e| io("TCP connect", e))?;
    let (rx, _) = l.accept().map_err(|e| io("TCP accept", e))?;
    tx.set_nodelay(true).map_err(|e| io("TCP_NODELAY", e))?;
    rx.set_nodelay(true).map_err(|e| io("TCP_NODELAY", e))?;
    Ok((tx, rx))
}

fn tcp(plan: &Plan) -> Result<(f64, f64, f64, f64)> {
    let (tx, rx) = tcp_connection()?;
    let (w, r) = (tx.as_raw_fd(), rx.as_raw_fd());
    let mut buf = vec![b'm'; 65536];
    let mut one = |size: usize, count: u64| -> Result<(f64, f64)> {
        let k = (20_000 / size as u64).clamp(1, 200);
        let groups = (plan.n(count) / k).max(1);
        write_then_read(w, r, size, k, groups, plan.batches, &mut buf)
    };
    let (w100, r100) = one(100, 50_000)?;
    let (w64k, r64k) = one(65536, 4000)?;
    Ok((w100, r100, w64k, r64k))
}

/// schbench's multiply over `mem` (A, B, C of n x n u64 one after
/// another): the running sum is stored to C on every k, as gcc -O2 builds
/// schbench.c (a load, a multiply with a memory operand, an add and a
/// store per k); the volatile store keeps any optimisation level from
/// vectorising or sinking it.
#[inline(never)]
fn matmul(mem: &mut [u64], n: usize) {
    let (ab, c) = mem.split_at_mut(2 * n * n);
    let (a, b) = ab.split_at(n * n);
    for i in 0..n {
        for j in 0..n {
            let cij: *mut u64 = &mut c[i * n + j];
            let mut sum = 0u64;
            // SAFETY: cij points into c, which we hold mutably.
            unsafe { std::ptr::write_volatile(cij, 0) };
            for k in 0..n {
                sum = sum.wrapping_add(a[i * n + k].wrapping_mul(b[k * n + j]));
                // SAFETY: as above.
                unsafe { std::ptr::write_volatile(cij, sum) };
            }
        }
    }
}

/// ns per multiply-add of schbench's default footprint (256 KB: n = 104).
fn matmul_madd(plan: &Plan) -> f64 {
    let v = 256 * 1024 / 3 / 8;
    let n = (1..).take_while(|x| x * x <= v).last().unwrap_or(1);
    // schbench never writes A and B: zero pages, as in its fresh malloc
    let mut mem = vec![0u64; 3 * n * n];
    let n3 = (n * n * n) as f64;
    let reps = ((60e6 / plan.div as f64) / n3) as u64 + 1;
    matmul(&mut mem, n);
    let r = plan.median(|| {
        let t = now_ns();
        for _ in 0..reps {
            matmul(std::hint::black_box(&mut mem), n);
        }
        Ok((now_ns() - t) as f64 / reps as f64)
    });
    r.unwrap_or(0.0) / n3
}

/// nviennot's single-line CAS ping-pong between CPUs `x` and `y`: median
/// over `samples` samples (after one warm-up sample) of the one-way time.
fn c2c_pingpong(x: usize, y: usize, rt: u64, samples: usize) -> Result<f64> {
    let flag = Arc::new(Line(AtomicBool::new(false)));
    let f2 = flag.clone();
    let total = rt * (samples as u64 + 1);
    let pong = std::thread::spawn(move || {
        pin(y)?;
        for _ in 0..total {
            while f2
                .0
                .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {}
        }
        Ok::<_, Error>(())
    });
    let ping = std::thread::spawn(move || {
        pin(x)?;
        let mut out = Vec::with_capacity(samples + 1);
        for _ in 0..=samples {
            let t = now_ns();
            for _ in 0..rt {
                while flag
                    .0
                    .compare_exchange(true, false, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {}
            }
            out.push((now_ns() - t) as f64 / rt as f64 / 2.0);
        }
        out.remove(0);
        Ok::<_, Error>(median(out))
    });
    let panicked = |_| Error::Task("c2c thread panicked".into());
    pong.join().map_err(panicked)??;
    ping.join().map_err(panicked)?
}

/// Two threads on CPUs `x` and `y` take `turns` turns, handed over by a
/// spin on a shared counter; on its turn a thread writes 100 bytes to its
/// channel of `io` (the first thread `io[0]`, the second `io[1]`: one
/// channel or two) and reads them back. ns per turn, timed by the first
/// thread from its first turn until the last turn is done. The spin has no
/// PAUSE, so that a hypervisor's pause-loop exiting cannot stop it.
fn alternating(io: Option<[(RawFd, RawFd); 2]>, x: usize, y: usize, turns: u64) -> Result<f64> {
    /// The counter's value once a thread failed: the other stops.
    const FAILED: u64 = u64::MAX;
    let turn = Arc::new(Line(AtomicU64::new(0)));
    let spawn = |cpu: usize, parity: u64| {
        let t = turn.clone();
        std::thread::spawn(move || {
            let run = || {
                pin(cpu)?;
                let mut buf = [b'-'; 100];
                let mut start = None;
                let mut k = parity;
                while k < turns {
                    loop {
                        match t.0.load(Ordering::Acquire) {
                            v if v == k => break,
                            FAILED => return Ok(None),
                            _ => {}
                        }
                    }
                    start.get_or_insert_with(now_ns);
                    if let Some(io) = io {
                        let (w, r) = io[parity as usize];
                        wr(w, &buf)?;
                        rd(r, &mut buf)?;
                    }
                    t.0.store(k + 1, Ordering::Release);
                    k += 2;
                }
                // the timing thread waits for the other's last turn
                while parity == 0 && t.0.load(Ordering::Acquire) < turns {}
                Ok::<_, Error>(start.map(|s| now_ns() - s))
            };
            let r = run();
            if r.is_err() {
                t.0.store(FAILED, Ordering::Release);
            }
            r
        })
    };
    let (first, second) = (spawn(x, 0), spawn(y, 1));
    let panicked = |_| Error::Task("alternating thread panicked".into());
    let elapsed = first.join().map_err(panicked)??;
    second.join().map_err(panicked)??;
    let elapsed = elapsed.ok_or_else(|| Error::Task("alternating turns stopped".into()))?;
    Ok(elapsed as f64 / turns as f64)
}

/// Both CPUs increment one word with CAS retry loops at once: ns per
/// successful increment, median over the batches.
fn c2c_contended(x: usize, y: usize, plan: &Plan) -> Result<f64> {
    let per_thread = plan.n(200_000);
    plan.median(|| {
        let word = Arc::new(Line(AtomicU64::new(0)));
        let ready = Arc::new(AtomicU64::new(0));
        let spawn = |cpu: usize| {
            let (w, g) = (word.clone(), ready.clone());
            std::thread::spawn(move || {
                pin(cpu)?;
                // start together: a sleeping barrier would wake them tens
                // of microseconds apart on a VM
                g.fetch_add(1, Ordering::AcqRel);
                while g.load(Ordering::Acquire) < 2 {
                    std::hint::spin_loop();
                }
                let start = now_ns();
                for _ in 0..per_thread {
                    let mut v = w.0.load(Ordering::Relaxed);
                    while let Err(now) =
                        w.0.compare_exchange(v, v + 1, Ordering::Relaxed, Ordering::Relaxed)
                    {
                        v = now;
                    }
                }
                Ok::<_, Error>((start, now_ns()))
            })
        };
        let (hx, hy) = (spawn(x), spawn(y));
        let panicked = |_| Error::Task("c2c thread panicked".into());
        let (sx, ex) = hx.join().map_err(panicked)??;
        let (sy, ey) = hy.join().map_err(panicked)??;
        Ok((ex.max(ey) - sx.min(sy)) as f64 / (2 * per_thread) as f64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Not a test on its own: the process that
    /// `the_process_echo_dies_with_calibrate` starts (this test binary run
    /// again with `SCHEDLAB_ECHO_HELPER` set) runs a process ping-pong of
    /// a practically endless batch, to be killed in the middle of it.
    #[test]
    fn echo_helper() {
        if std::env::var_os("SCHEDLAB_ECHO_HELPER").is_none() {
            return;
        }
        let _ = pipe_pingpong(u64::MAX / 2, 0, true);
    }

    /// Forked children of `pid`'s threads.
    fn children(pid: u32) -> Vec<u32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|s| {
                s.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect()
    }

    /// Alive: in /proc and neither a zombie nor dead.
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            let state = s.rsplit_once(')').map(|(_, r)| r.trim_start());
            !matches!(state.and_then(|r| r.chars().next()), Some('Z' | 'X') | None)
        })
    }

    /// The echo process of the process round trip dies with calibrate,
    /// here SIGKILLed mid-batch (no handler runs), instead of waiting
    /// forever in read on a pipe whose write end it held itself.
    #[test]
    fn the_process_echo_dies_with_calibrate() {
        let mut helper = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "calibrate::tests::echo_helper",
                "--test-threads=1",
            ])
            .env("SCHEDLAB_ECHO_HELPER", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let echo = loop {
            if let Some(&k) = children(helper.id()).first() {
                break k;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the helper never forked its echo"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        helper.kill().unwrap();
        helper.wait().unwrap();
        let t0 = Instant::now();
        while alive(echo) {
            if t0.elapsed() > Duration::from_secs(5) {
                // SAFETY: cleaning up the process this test made.
                unsafe { libc::kill(echo as i32, libc::SIGKILL) };
                panic!("the echo {echo} outlived its parent");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
