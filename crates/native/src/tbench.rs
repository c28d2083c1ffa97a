//! tbench, following dbench 4's `tbench` client (dbench.c, child.c,
//! sockio.c) and `tbench_srv` server (tbench_srv.c). Its parameters,
//! loadfiles and report lines are [`benchspec::tbench`]'s and
//! [`benchspec::loadfile`]'s, shared with the simulator.
//!
//! One run forks `N` client processes and `N` server processes, connected
//! pairwise over loopback TCP (`127.0.0.1`, a free port chosen by the
//! kernel, `TCP_NODELAY`). Where the C tools need `tbench_srv` started
//! first on port 7003, this port starts its own server side: one forked
//! server process per connection, exactly what `tbench_srv` does for each
//! accepted client.
//!
//! Each client replays an NBENCH loadfile ([`benchspec::loadfile`]): one
//! synchronous request/response exchange per line, rewinding at the end,
//! until the time limit. As in dbench's client, the request is one send,
//! the reply header is read with `MSG_WAITALL`, the reply payload is
//! received with `MSG_TRUNC` (dropped in the kernel, never copied out),
//! and the parent is probed with `kill(ppid, 0)` once per line. The server reads a 4-byte big-endian length `n`
//! and `n` bytes, whose first word is the reply length `m` the client
//! wants, and answers with `m` and `m` bytes.
//!
//! The parent releases all clients at once, prints one progress line per
//! second (warm-up, then execute), and after `time` seconds of execute
//! flags the clients done, reaps everything and prints dbench's operation
//! table and `Throughput X MB/sec  N clients  N procs  max_latency=Y ms`,
//! where X is the cumulative MB/s (10^6 bytes of ReadX/WriteX payload) at
//! the last execute tick.

use crate::cpus::{self, AffinityGuard, CpuSelection};
use crate::error::{Error, Result};
use crate::limits;
use crate::sys::{self, now_ns, Children, Event, Fd, SharedSlice, SignalGuard, ZeroShared};
use benchspec::loadfile::{self, Op, OpKind, OP_KINDS};
pub use benchspec::tbench::{format_g, OpStats, Tbench};
use benchspec::tbench::{Phase, Throughput};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::os::fd::{IntoRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A tbench run: the benchmark's own parameters (shared with the
/// simulator, dbench's defaults) plus how to run it on this host. Derefs
/// to the parameters, so `cfg.clients`, `cfg.header()` read through.
#[derive(Debug, Clone, PartialEq)]
pub struct TbenchConfig {
    /// `NCLIENTS -t --warmup -c`.
    pub bench: Tbench,
    /// `--cpus` / `--node`: affinity of every client and server process.
    pub cpus: CpuSelection,
    /// `--timeout`: give up (and reap everything) after this long.
    pub timeout: Option<Duration>,
}

impl Default for TbenchConfig {
    fn default() -> Self {
        TbenchConfig {
            bench: Tbench::default(),
            cpus: CpuSelection::Inherit,
            timeout: None,
        }
    }
}

impl std::ops::Deref for TbenchConfig {
    type Target = Tbench;
    fn deref(&self) -> &Tbench {
        &self.bench
    }
}

impl TbenchConfig {
    /// Checks the values, the loadfile (readable, text, parseable), the
    /// CPU selection and the fd/process limits.
    pub fn validate(&self) -> Result<()> {
        self.bench.validate()?;
        self.load_ops()?;
        cpus::resolve(&self.cpus)?;
        // The parent holds both ends of every connection while forking.
        limits::check_fds(8 + 3 * self.clients as u64, "NCLIENTS")?;
        limits::check_tasks(2 * self.clients as u64, "NCLIENTS")?;
        limits::check_memory(
            self.clients as u64 * 2 * loadfile::MAX_PACKET as u64,
            "NCLIENTS",
        )
    }
}

impl TbenchConfig {
    /// The operations one pass replays: the loadfile's, or the built-in
    /// mix. A file that is not text (a binary picked by mistake) is refused
    /// naming its line and the first offending byte, rather than parsed
    /// into an "unknown operation" quoting binary junk; a huge file (or
    /// /dev/zero) is refused before it fills memory.
    pub fn load_ops(&self) -> Result<Vec<Op>> {
        let Some(path) = &self.loadfile else {
            return Ok(loadfile::builtin());
        };
        let shown = path.display().to_string();
        let fail = |line, problem: String| {
            Error::Loadfile(benchspec::FileError {
                flag: "--loadfile",
                path: shown.clone(),
                line,
                problem,
            })
        };
        // a regular file only (a FIFO would block the open, a device never
        // ends), of at most the loadfile limit, as the simulator reads it
        let bytes = topology::input::read_capped(path, loadfile::MAX_LOADFILE_BYTES)
            .map_err(|problem| fail(None, problem))?;
        if bytes.starts_with(&[0x1f, 0x8b]) {
            // benchspec says what to do with a gzip'd loadfile.
            return Ok(loadfile::load(path)?);
        }
        if let Some((line, column, byte)) = first_binary_byte(&bytes) {
            return Err(fail(
                Some(line),
                format!("not a text file (byte 0x{byte:02x} at column {column})"),
            ));
        }
        let text = std::str::from_utf8(&bytes).expect("checked by first_binary_byte");
        Ok(loadfile::parse(text, &shown)?)
    }
}

/// The first byte that cannot be in a text loadfile: a control character
/// other than tab, CR, LF and form feed, or invalid UTF-8. Returns its
/// 1-based line and column (in bytes) and the byte.
fn first_binary_byte(bytes: &[u8]) -> Option<(usize, usize, u8)> {
    let bad_at = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) => e.valid_up_to(),
    };
    let control = bytes[..bad_at]
        .iter()
        .position(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)) || b == 0x7f);
    let at = control.unwrap_or(bad_at);
    if at == bytes.len() {
        return None;
    }
    let before = &bytes[..at];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = at
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    Some((line, column, bytes[at]))
}

/// What a tbench run measured. Field names match the simulator's JSON
/// where the meaning is the same.
#[derive(Debug, Clone, Serialize)]
pub struct TbenchReport {
    /// Always `"tbench"`.
    pub benchmark: &'static str,
    /// Always `"native"`.
    pub mode: &'static str,
    /// Decimal MB/s of ReadX/WriteX payload over the execute phase, as of
    /// the last execute tick (dbench's `Throughput`).
    pub throughput_mb_s: f64,
    /// Clients (`NPROCS x clients per process`, here one per process).
    pub clients: u32,
    /// Client processes.
    pub procs: u32,
    /// Worst per-tick latency of any client during execute, ms.
    pub max_latency_ms: f64,
    /// `--time`.
    pub time_limit_s: u32,
    /// Warm-up used, seconds.
    pub warmup_s: u32,
    /// Execute-phase seconds the throughput figure covers.
    pub execute_s: f64,
    /// Payload bytes moved during the execute phase.
    pub bytes: u64,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// `"builtin"` or the loadfile path.
    pub loadfile: String,
    /// Operations in one pass of the loadfile.
    pub loadfile_ops: usize,
    /// Per-operation statistics of the execute phase, by dbench name.
    #[serde(rename = "ops")]
    pub operations: BTreeMap<&'static str, OpStats>,
    /// The CPU list the tasks were pinned to, if any.
    pub cpus: Option<String>,
    #[serde(skip)]
    table_order: Vec<(&'static str, OpStats)>,
}

impl TbenchReport {
    /// dbench's final operation table and throughput line.
    pub fn summary(&self) -> String {
        benchspec::tbench::final_report(&self.table_order, &self.throughput())
    }

    /// `Throughput X MB/sec  N clients  N procs  max_latency=Y ms`.
    pub fn throughput_line(&self) -> String {
        self.throughput().line()
    }

    fn throughput(&self) -> Throughput {
        Throughput {
            mb_s: self.throughput_mb_s,
            clients: self.clients,
            procs: self.procs,
            max_latency_ms: self.max_latency_ms,
        }
    }
}

/// Per-client statistics in memory shared with the forked client.
#[repr(C, align(64))]
struct ClientSlot {
    bytes: AtomicU64,
    lines: AtomicU64,
    /// Start of the operation in flight (ns), 0 when none.
    inflight: AtomicU64,
    /// Largest gap between consecutive operation completions since the
    /// parent last looked (ns).
    max_gap: AtomicU64,
    /// Per op kind: count, total ns, max ns.
    ops: [[AtomicU64; 3]; OP_KINDS],
}

// SAFETY: only atomics, valid when zero.
unsafe impl ZeroShared for ClientSlot {}

/// Shared control words: [done, epoch].
const CTL_DONE: usize = 0;
const CTL_EPOCH: usize = 1;

/// Runs tbench. Progress lines are passed to `progress` as they happen
/// (dbench prints them on stdout); the final table is
/// [`TbenchReport::summary`]. When `progress` answers `Break` (its output
/// is gone: `| head -1`), the run stops at once: every client and server
/// is killed and reaped, and the result is [`Error::Stopped`].
pub fn run(
    cfg: &TbenchConfig,
    progress: &mut dyn FnMut(&str) -> ControlFlow<()>,
) -> Result<TbenchReport> {
    cfg.validate()?;
    let ops = cfg.load_ops()?;
    let pinned = cpus::resolve(&cfg.cpus)?;
    let flag = if matches!(cfg.cpus, CpuSelection::Node(_)) {
        "--node"
    } else {
        "--cpus"
    };
    let wall0 = Instant::now();
    let _aff = AffinityGuard::set(pinned.as_deref(), flag)?;
    let sig = SignalGuard::install()?;
    run_with(cfg, progress, &sig, &ops, pinned, wall0).map_err(|e| sig.explain(e))
}

/// The body of [`run`], once the affinity and the signal handlers are set.
fn run_with(
    cfg: &TbenchConfig,
    progress: &mut dyn FnMut(&str) -> ControlFlow<()>,
    sig: &SignalGuard,
    ops: &[Op],
    pinned: Option<Vec<usize>>,
    wall0: Instant,
) -> Result<TbenchReport> {
    // A `Break` from `progress` returns Stopped; dropping `kids` on the
    // way out kills and reaps every child, as for a signal.
    let mut progress = |line: &str| match progress(line) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(Error::Stopped),
    };
    let deadline = cfg.timeout.map(|t| wall0 + t);
    let timeout_err = || Error::Timeout(cfg.timeout.unwrap_or_default());
    let n = cfg.clients as usize;

    // Connect every client socket to its server socket here, before any
    // fork, so that each child only has to drop the fds it does not own.
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("binding 127.0.0.1", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("getsockname", e))?;
    let mut conns: Vec<(Fd, Fd)> = Vec::with_capacity(n);
    for _ in 0..n {
        let c = std::net::TcpStream::connect(addr)
            .map_err(|e| socket_error("connecting to the tbench server", e))?;
        let (s, _) = listener
            .accept()
            .map_err(|e| socket_error("accepting a tbench client", e))?;
        for sock in [&c, &s] {
            sock.set_nodelay(true)
                .map_err(|e| Error::io("TCP_NODELAY", e))?;
        }
        conns.push((Fd(c.into_raw_fd()), Fd(s.into_raw_fd())));
    }
    drop(listener);
    let all_fds: Vec<RawFd> = conns.iter().flat_map(|(c, s)| [c.raw(), s.raw()]).collect();

    let slots = SharedSlice::<ClientSlot>::new(n)?;
    let ctl = SharedSlice::<AtomicU64>::new(2)?;
    let (ready_rd, ready_wr) = sys::pipe()?;
    let (wake_rd, wake_wr) = sys::pipe()?;
    let (ready_r, ready_w, wake_r, wake_w) =
        (ready_rd.raw(), ready_wr.raw(), wake_rd.raw(), wake_wr.raw());
    let mut buf = vec![0u8; loadfile::MAX_PACKET as usize + 8];
    let mut kids = Children::new()?;
    let close_others = |keep: RawFd| {
        for &fd in &all_fds {
            if fd != keep {
                // SAFETY: closing this child's copy of another pair's fd.
                unsafe { libc::close(fd) };
            }
        }
        // SAFETY: closing the child's copies of the parent-only pipe ends.
        unsafe {
            libc::close(ready_r);
            libc::close(wake_w);
        }
    };

    for (_, s) in &conns {
        let (fd, buf) = (s.raw(), &mut buf);
        kids.spawn(move |_ctx| {
            close_others(fd);
            // SAFETY: the server needs neither start pipe.
            unsafe {
                libc::close(ready_w);
                libc::close(wake_r);
            }
            serve(fd, buf)
        })?;
    }
    for (id, (c, _)) in conns.iter().enumerate() {
        let (fd, buf) = (c.raw(), &mut buf);
        let (slot, ctl) = (&slots[id], &ctl[..]);
        kids.spawn(move |_ctx| {
            close_others(fd);
            client(fd, id, buf, ops, slot, ctl, ready_w, wake_r)
        })?;
    }
    kids.all_spawned();
    drop(conns);
    drop(ready_wr);

    // Start barrier: every client says it is connected and ready.
    let mut got = 0usize;
    let mut b = [0u8; 256];
    while got < n {
        match sys::wait_event(sig, &[ready_r, kids.exit_fd()], deadline)? {
            Event::Ready(0) => {
                let want = (n - got).min(b.len());
                // SAFETY: poll said readable; reading into a local buffer.
                let r = unsafe { libc::read(ready_r, b.as_mut_ptr().cast(), want) };
                if r <= 0 {
                    return Err(Error::Task(format!(
                        "{} tbench clients exited before they were ready",
                        n - got
                    )));
                }
                got += r as usize;
            }
            Event::Ready(_) => {
                return Err(Error::Task("a tbench process failed while starting".into()))
            }
            Event::Signal(s) => return Err(Error::Interrupted(s)),
            Event::Deadline => return Err(timeout_err()),
        }
    }
    progress(&benchspec::tbench::launch_lines(cfg.clients))?;
    let start = Instant::now();
    if !sys::write_full(wake_w, b"G", None) {
        return Err(Error::io(
            "releasing the clients",
            std::io::Error::last_os_error(),
        ));
    }

    // The per-second ticks.
    let warmup = cfg.warmup_secs();
    let mut exec_start = start;
    let mut in_warmup = warmup > 0;
    let mut warm_bytes = vec![0u64; n];
    let mut tick = 0u32; // ticks in the current phase
    let mut throughput = None::<(f64, f64, u64)>; // (MB/s, seconds, bytes)
    let mut max_latency_ns = 0u64;
    let sum_bytes = |base: &[u64]| -> u64 {
        slots
            .iter()
            .zip(base)
            .map(|(s, b)| s.bytes.load(Ordering::Relaxed).saturating_sub(*b))
            .sum()
    };
    loop {
        tick += 1;
        let due = exec_start + Duration::from_secs(tick as u64);
        let wake_at = match deadline {
            Some(d) if d < due => d,
            _ => due,
        };
        match sys::wait_event(sig, &[kids.exit_fd()], Some(wake_at))? {
            Event::Deadline if Instant::now() >= due => {}
            Event::Deadline => return Err(timeout_err()),
            Event::Ready(_) => {
                return Err(Error::Task("a tbench process failed during the run".into()))
            }
            Event::Signal(s) => return Err(Error::Interrupted(s)),
        }
        let now = Instant::now();
        let now_n = now_ns();
        let mut lat = 0u64;
        for s in slots.iter() {
            let inflight = s.inflight.load(Ordering::Relaxed);
            let age = if inflight != 0 {
                now_n.saturating_sub(inflight)
            } else {
                0
            };
            lat = lat.max(s.max_gap.swap(0, Ordering::Relaxed)).max(age);
        }
        let lines = slots
            .iter()
            .map(|s| s.lines.load(Ordering::Relaxed))
            .sum::<u64>()
            / n as u64;
        if in_warmup {
            let t = (now - start).as_secs_f64();
            let mbs = 1e-6 * sum_bytes(&vec![0; n]) as f64 / t;
            progress(&benchspec::tbench::progress_line(
                cfg.clients,
                lines,
                mbs,
                Phase::Warmup,
                t,
                lat as f64 / 1e6,
            ))?;
            if tick >= warmup {
                // End of warm-up: restart the clock and the statistics.
                in_warmup = false;
                exec_start = Instant::now();
                tick = 0;
                for (w, s) in warm_bytes.iter_mut().zip(slots.iter()) {
                    *w = s.bytes.load(Ordering::Relaxed);
                }
                ctl[CTL_EPOCH].fetch_add(1, Ordering::SeqCst);
            }
            continue;
        }
        let t = (now - exec_start).as_secs_f64();
        let bytes = sum_bytes(&warm_bytes);
        let mbs = 1e-6 * bytes as f64 / t;
        if tick >= cfg.time {
            // Like dbench, the tick that reaches the limit ends the run and
            // does not update the throughput, unless there was no other.
            if throughput.is_none() {
                throughput = Some((mbs, t, bytes));
                max_latency_ns = max_latency_ns.max(lat);
            }
            ctl[CTL_DONE].store(1, Ordering::SeqCst);
            progress(&benchspec::tbench::cleanup_line(cfg.clients, t))?;
            break;
        }
        max_latency_ns = max_latency_ns.max(lat);
        throughput = Some((mbs, t, bytes));
        progress(&benchspec::tbench::progress_line(
            cfg.clients,
            lines,
            mbs,
            Phase::Execute,
            t,
            lat as f64 / 1e6,
        ))?;
    }

    // Clients stop after their current operation; servers see EOF.
    let grace = Instant::now() + Duration::from_secs(30);
    let stop_by = match deadline {
        Some(d) if d < grace => d,
        _ => grace,
    };
    match sys::wait_event(sig, &[kids.exit_fd()], Some(stop_by))? {
        Event::Ready(_) => {
            if kids.failure_reported() {
                return Err(Error::Task("a tbench process failed while stopping".into()));
            }
            if let Some(bad) = kids.reap_all() {
                return Err(Error::Task(bad));
            }
        }
        Event::Signal(s) => return Err(Error::Interrupted(s)),
        Event::Deadline => return Err(timeout_err()),
    }
    let t_end = (Instant::now() - exec_start).as_secs_f64();
    progress(&benchspec::tbench::cleanup_line(0, t_end))?;

    let mut table_order = Vec::new();
    for kind in OpKind::ALL {
        let k = kind as usize;
        let count: u64 = slots
            .iter()
            .map(|s| s.ops[k][0].load(Ordering::Relaxed))
            .sum();
        if count == 0 {
            continue;
        }
        let total: u64 = slots
            .iter()
            .map(|s| s.ops[k][1].load(Ordering::Relaxed))
            .sum();
        let max = slots
            .iter()
            .map(|s| s.ops[k][2].load(Ordering::Relaxed))
            .max()
            .unwrap_or(0);
        table_order.push((
            kind.name(),
            OpStats {
                count,
                avg_ms: total as f64 / count as f64 / 1e6,
                max_ms: max as f64 / 1e6,
            },
        ));
    }
    let (mbs, secs, bytes) = throughput.unwrap_or((0.0, 0.0, 0));
    Ok(TbenchReport {
        benchmark: "tbench",
        mode: "native",
        throughput_mb_s: mbs,
        clients: cfg.clients,
        procs: cfg.clients,
        max_latency_ms: max_latency_ns as f64 / 1e6,
        time_limit_s: cfg.time,
        warmup_s: warmup,
        execute_s: secs,
        bytes,
        wall_s: wall0.elapsed().as_secs_f64(),
        loadfile: cfg.loadfile_name(),
        loadfile_ops: ops.len(),
        operations: table_order.iter().cloned().collect(),
        cpus: pinned.map(|c| cpus::format_cpu_list(&c)),
        table_order,
    })
}

fn socket_error(what: &str, e: std::io::Error) -> Error {
    if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
        return Error::Limit(format!(
            "{what}: {e}; raise the open-files limit (ulimit -n) or use fewer clients"
        ));
    }
    Error::io(what.to_string(), e)
}

/// The server side of one connection (a forked child; async-signal-safe).
/// Returns true on a clean end of stream.
fn serve(fd: RawFd, buf: &mut [u8]) -> bool {
    loop {
        if !sys::read_full(fd, &mut buf[..4], None) {
            return true; // the client closed the connection
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if !(4..=loadfile::MAX_PACKET as usize).contains(&len)
            || !sys::read_full(fd, &mut buf[4..4 + len], None)
        {
            return false;
        }
        let want = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
        if want > loadfile::MAX_PACKET {
            return false;
        }
        buf[..4].copy_from_slice(&want.to_be_bytes());
        if !sys::write_full(fd, &buf[..4 + want as usize], None) {
            return false;
        }
    }
}

/// `recv(MSG_WAITALL)` of exactly `len` bytes into `buf`, or, with
/// `discard`, `MSG_TRUNC` as well: the kernel drops the bytes without
/// copying them out, as dbench's client does with reply payloads.
/// Async-signal-safe.
#[inline]
fn recv_exact(fd: RawFd, buf: &mut [u8], len: usize, discard: bool) -> bool {
    let flags = libc::MSG_WAITALL | if discard { libc::MSG_TRUNC } else { 0 };
    let mut done = 0;
    while done < len {
        let want = len - done;
        // With MSG_TRUNC nothing is written; either way `buf` is large
        // enough for `want` bytes.
        let at = if discard { 0 } else { done };
        // SAFETY: `buf[at..at + want]` is in bounds (len <= buf.len()).
        let n = unsafe { libc::recv(fd, buf[at..at + want].as_mut_ptr().cast(), want, flags) };
        if n > 0 {
            done += n as usize;
        } else if n == 0 || sys::errno() != libc::EINTR {
            return false;
        }
    }
    true
}

/// One request/response exchange of `send` and `recv` bytes (headers
/// included): one send, the 4-byte reply header, then the payload,
/// discarded in the kernel. Async-signal-safe.
#[inline]
fn exchange(fd: RawFd, buf: &mut [u8], send: u32, recv: u32) -> bool {
    buf[..4].copy_from_slice(&(send - 4).to_be_bytes());
    buf[4..8].copy_from_slice(&(recv - 4).to_be_bytes());
    if !sys::write_full(fd, &buf[..send as usize], None) || !recv_exact(fd, buf, 4, false) {
        return false;
    }
    let m = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    m == recv - 4 && (m as usize) <= buf.len() && recv_exact(fd, buf, m as usize, true)
}

/// A client (a forked child; async-signal-safe: raw socket I/O, the
/// monotonic clock and atomics in shared memory only).
#[allow(clippy::too_many_arguments)]
fn client(
    fd: RawFd,
    id: usize,
    buf: &mut [u8],
    ops: &[Op],
    slot: &ClientSlot,
    ctl: &[AtomicU64],
    ready_w: RawFd,
    wake_r: RawFd,
) -> bool {
    // The 8/8-byte hello, then the start barrier.
    if !exchange(fd, buf, 8, 8)
        || !sys::write_full(ready_w, b"R", None)
        || !sys::wait_readable(wake_r, None)
    {
        return false;
    }
    let mut digits = 1u32;
    let mut x = id;
    while x >= 10 {
        digits += 1;
        x /= 10;
    }
    let extra_digits = digits - 1; // the loadfile says client1
                                   // SAFETY: getppid cannot fail.
    let parent = unsafe { libc::getppid() };
    let mut epoch = 0u64;
    let mut prev = now_ns();
    loop {
        for op in ops {
            if ctl[CTL_DONE].load(Ordering::Relaxed) != 0 {
                return true;
            }
            // Like dbench, check once per line that the parent is alive.
            // SAFETY: signal 0 only probes for the process.
            if unsafe { libc::kill(parent, 0) } != 0 {
                return false;
            }
            let e = ctl[CTL_EPOCH].load(Ordering::Relaxed);
            if e != epoch {
                epoch = e;
                for k in &slot.ops {
                    for v in k {
                        v.store(0, Ordering::Relaxed);
                    }
                }
            }
            let t0 = now_ns();
            if op.send != 0 {
                slot.inflight.store(t0, Ordering::Relaxed);
                let send = op.send + op.grow_per_digit * extra_digits;
                if !exchange(fd, buf, send, op.recv) {
                    return false;
                }
            }
            let t1 = now_ns();
            slot.inflight.store(0, Ordering::Relaxed);
            let st = &slot.ops[op.kind as usize];
            st[0].fetch_add(1, Ordering::Relaxed);
            st[1].fetch_add(t1 - t0, Ordering::Relaxed);
            st[2].fetch_max(t1 - t0, Ordering::Relaxed);
            slot.max_gap.fetch_max(t1 - prev, Ordering::Relaxed);
            prev = t1;
            slot.bytes.fetch_add(op.bytes as u64, Ordering::Relaxed);
            slot.lines.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(bench: Tbench) -> TbenchConfig {
        TbenchConfig {
            bench,
            ..Default::default()
        }
    }

    #[test]
    fn bad_values_name_the_flag() {
        let e = run(
            &config(Tbench {
                clients: 0,
                ..Default::default()
            }),
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("NCLIENTS: "), "{e}");
        let e = run(
            &config(Tbench {
                time: 0,
                ..Default::default()
            }),
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("--time: "), "{e}");
    }

    #[test]
    fn a_bad_loadfile_is_named_with_its_line() {
        let path = std::env::temp_dir().join(format!("native-lf-{}.txt", std::process::id()));
        std::fs::write(&path, "Close 1 NT_STATUS_OK\nFrobnicate 2\n").unwrap();
        let e = run(
            &config(Tbench {
                time: 1,
                loadfile: Some(path.clone()),
                ..Default::default()
            }),
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(e, Error::Loadfile(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "--loadfile {}: line 2: unknown operation \"Frobnicate\"",
                path.display()
            )
        );
    }

    #[test]
    fn a_binary_loadfile_is_refused_naming_the_byte() {
        assert_eq!(first_binary_byte(b"Close 1\n\tok\r\n"), None);
        assert_eq!(first_binary_byte(b"\x7fELF\x02"), Some((1, 1, 0x7f)));
        assert_eq!(first_binary_byte(b"Close 1\nab\0c"), Some((2, 3, 0)));
        assert_eq!(first_binary_byte(b"ok\n\xff\xfe"), Some((2, 1, 0xff)));
        assert_eq!(first_binary_byte("é".as_bytes()), None);

        let path = std::env::temp_dir().join(format!("native-bin-{}.txt", std::process::id()));
        std::fs::write(&path, b"Close 1 NT_STATUS_OK\n\x7fELF\x02\x01\x01\0\0").unwrap();
        let cfg = config(Tbench {
            time: 1,
            loadfile: Some(path.clone()),
            ..Default::default()
        });
        let e = cfg.validate().unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "--loadfile {}: line 2: not a text file (byte 0x7f at column 1)",
                path.display()
            )
        );
    }

    #[test]
    fn validate_reads_the_loadfile() {
        let e = config(Tbench {
            loadfile: Some("/nonexistent/client.txt".into()),
            ..Default::default()
        })
        .validate()
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--loadfile /nonexistent/client.txt: "),
            "{e}"
        );
    }

    #[test]
    fn two_clients_one_second() {
        let cfg = config(Tbench {
            clients: 2,
            time: 1,
            warmup: Some(0),
            ..Default::default()
        });
        let mut lines = String::new();
        let r = run(&cfg, &mut |s| {
            lines.push_str(s);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert!(
            lines.contains("2 of 2 processes prepared for launch"),
            "{lines}"
        );
        assert!(
            lines.contains("   2  cleanup ") && lines.contains("   0  cleanup "),
            "{lines}"
        );
        assert!(r.throughput_mb_s > 0.0 && r.bytes > 0, "{r:?}");
        let reads = &r.operations["ReadX"];
        assert!(reads.count > 0 && reads.max_ms >= reads.avg_ms);
        assert!(
            r.summary().contains("\nThroughput ")
                && r.summary().contains("  2 clients  2 procs  max_latency=")
        );
    }

    #[test]
    fn timeout_stops_a_long_run() {
        let cfg = TbenchConfig {
            bench: Tbench {
                clients: 1,
                time: 600,
                ..Default::default()
            },
            timeout: Some(Duration::from_millis(300)),
            ..Default::default()
        };
        let e = run(&cfg, &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert!(matches!(e, Error::Timeout(_)), "{e}");
    }

    /// A progress callback that answers `Break` (its reader is gone) stops
    /// a ten-minute run at that line.
    #[test]
    fn a_break_from_progress_stops_the_run() {
        let cfg = config(Tbench {
            clients: 2,
            time: 600,
            warmup: Some(0),
            ..Default::default()
        });
        let mut lines = Vec::new();
        let e = run(&cfg, &mut |s| {
            lines.push(s.to_string());
            if lines.len() < 2 {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        })
        .unwrap_err();
        assert!(matches!(e, Error::Stopped), "{e}");
        // the launch lines, then the first progress line, which stopped it
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[1].contains("  execute "), "{lines:?}");
    }
}
