//! Low-level plumbing shared by the three benchmarks: the clock, signal
//! handling (SIGINT/SIGTERM/SIGHUP through a self-pipe), shared memory for forked
//! children, child-process supervision, and raw read/write loops that are
//! safe to run in a child of a multi-threaded parent.
//!
//! # Why no signal masks
//! A run never blocks signals or waits for SIGCHLD: both are process-wide
//! and would misbehave when the library runs inside a multi-threaded host
//! (a test harness, for one). Instead:
//! - SIGINT/SIGTERM/SIGHUP handlers write the signal number into a self-pipe that
//!   the supervising thread polls;
//! - every forked child inherits the write end of an *exit pipe*: the read
//!   end reports POLLHUP when the last child has exited (the kernel closes
//!   a task's files as it exits), and a failing child writes one byte into
//!   it first, so the supervisor learns about a failure at once.

use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Monotonic clock in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`, which
/// is async-signal-safe and so usable in forked children).
#[inline]
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// ---------------------------------------------------------------------------
// Signals.

static SIG_PIPE_RD: AtomicI32 = AtomicI32::new(-1);
static SIG_PIPE_WR: AtomicI32 = AtomicI32::new(-1);
static SIG_USERS: Mutex<usize> = Mutex::new(0);
static SIG_OLD: Mutex<Vec<(i32, libc::sigaction)>> = Mutex::new(Vec::new());

/// The signal that interrupts a worker thread blocked in a system call when
/// a thread-mode run is cancelled. Its handler does nothing; the point is
/// the EINTR.
pub(crate) const SIG_KICK: i32 = libc::SIGUSR2;

extern "C" fn on_stop_signal(sig: libc::c_int) {
    let fd = SIG_PIPE_WR.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; the fd is a non-blocking pipe.
        unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
    }
}

extern "C" fn on_kick(_sig: libc::c_int) {}

/// The signals that stop a run (and that a forked child leaves at their
/// default action): Ctrl-C, `kill`, and the hang-up of the terminal.
pub(crate) const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// While alive, SIGINT, SIGTERM and SIGHUP are caught and reported through
/// [`SignalGuard::fd`] instead of killing the process; the previous
/// dispositions come back when the last guard is dropped.
pub(crate) struct SignalGuard(());

impl SignalGuard {
    pub(crate) fn install() -> Result<Self> {
        let mut users = SIG_USERS.lock().unwrap_or_else(|e| e.into_inner());
        if SIG_PIPE_RD.load(Ordering::Relaxed) < 0 {
            let mut fds = [0; 2];
            // SAFETY: pipe2 writes two fds into the array.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
                return Err(Error::io(
                    "creating the signal pipe",
                    std::io::Error::last_os_error(),
                ));
            }
            SIG_PIPE_RD.store(fds[0], Ordering::Relaxed);
            SIG_PIPE_WR.store(fds[1], Ordering::Relaxed);
        }
        if *users == 0 {
            let mut old = SIG_OLD.lock().unwrap_or_else(|e| e.into_inner());
            old.clear();
            let stop = STOP_SIGNALS
                .map(|sig| (sig, on_stop_signal as *const () as usize, libc::SA_RESTART));
            // No SA_RESTART: the kick must interrupt blocking calls.
            let kick = (SIG_KICK, on_kick as *const () as usize, 0);
            for (sig, handler, flags) in stop.into_iter().chain([kick]) {
                // SAFETY: sigaction with a zeroed struct, a valid handler and
                // an empty mask; the old action is saved for restoring.
                unsafe {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = handler;
                    sa.sa_flags = flags;
                    libc::sigemptyset(&mut sa.sa_mask);
                    let mut prev: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(sig, &sa, &mut prev);
                    old.push((sig, prev));
                }
            }
            // Drain stale bytes from an earlier run.
            let mut buf = [0u8; 64];
            // SAFETY: non-blocking read into a local buffer.
            while unsafe {
                libc::read(
                    SIG_PIPE_RD.load(Ordering::Relaxed),
                    buf.as_mut_ptr().cast(),
                    64,
                )
            } > 0
            {}
        }
        *users += 1;
        Ok(SignalGuard(()))
    }

    /// The read end of the self-pipe: readable once a stop signal came.
    pub(crate) fn fd(&self) -> RawFd {
        SIG_PIPE_RD.load(Ordering::Relaxed)
    }

    /// Turns a task failure into [`Error::Interrupted`] when a stop signal
    /// is pending: a Ctrl-C from the terminal reaches the whole process
    /// group, so forked children may die of it before the supervisor has
    /// seen its own copy.
    pub(crate) fn explain(&self, e: Error) -> Error {
        match e {
            Error::Task(msg) => match self.take() {
                Some(s) => Error::Interrupted(s),
                None => Error::Task(msg),
            },
            e => e,
        }
    }

    /// Reads which signal arrived (after [`Self::fd`] polled readable).
    pub(crate) fn take(&self) -> Option<&'static str> {
        let mut b = 0u8;
        // SAFETY: non-blocking one-byte read into a local.
        let n = unsafe { libc::read(self.fd(), (&mut b as *mut u8).cast(), 1) };
        match (n, b as i32) {
            (1, libc::SIGTERM) => Some("SIGTERM"),
            (1, libc::SIGHUP) => Some("SIGHUP"),
            (1, _) => Some("SIGINT"),
            _ => None,
        }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        let mut users = SIG_USERS.lock().unwrap_or_else(|e| e.into_inner());
        *users -= 1;
        if *users == 0 {
            let old = SIG_OLD.lock().unwrap_or_else(|e| e.into_inner());
            for (sig, prev) in old.iter() {
                // SAFETY: restores an action previously returned by sigaction.
                unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
            }
        }
    }
}

/// What a supervisor's poll saw.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// One of the watched fds is ready (index into the list).
    Ready(usize),
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(&'static str),
    /// The deadline passed.
    Deadline,
}

/// Polls `fds` (for POLLIN; POLLHUP and POLLERR count as ready) plus the
/// signal pipe until something happens or `deadline` passes.
pub(crate) fn wait_event(
    sig: &SignalGuard,
    fds: &[RawFd],
    deadline: Option<Instant>,
) -> Result<Event> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .chain(std::iter::once(&sig.fd()))
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let timeout = match deadline {
            None => -1,
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Ok(Event::Deadline);
                }
                // Round up so we never spin on a sub-millisecond remainder.
                let ms = (d - now).as_micros().div_ceil(1000);
                ms.min(i32::MAX as u128) as i32
            }
        };
        // SAFETY: pfds is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(Error::io("poll", e));
        }
        if n == 0 {
            continue; // re-check the deadline
        }
        let last = pfds.len() - 1;
        if pfds[last].revents != 0 {
            if let Some(s) = sig.take() {
                return Ok(Event::Signal(s));
            }
        }
        if let Some(i) = pfds[..last].iter().position(|p| p.revents != 0) {
            return Ok(Event::Ready(i));
        }
    }
}

// ---------------------------------------------------------------------------
// Pipes and raw I/O.

/// An owned fd closed on drop (a plain integer so forked children can use
/// it without touching Rust ownership machinery).
#[derive(Debug)]
pub(crate) struct Fd(pub(crate) RawFd);

impl Fd {
    pub(crate) fn raw(&self) -> RawFd {
        self.0
    }
    pub(crate) fn close(mut self) {
        self.close_now();
    }
    fn close_now(&mut self) {
        if self.0 >= 0 {
            // SAFETY: we own this fd.
            unsafe { libc::close(self.0) };
            self.0 = -1;
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        self.close_now();
    }
}

fn fd_error(what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) {
        return Error::Limit(format!(
            "{what}: too many open files ({e}); raise the open-files limit (ulimit -n) or use fewer tasks"
        ));
    }
    Error::io(what.to_string(), e)
}

/// `pipe()`; returns (read end, write end).
pub(crate) fn pipe() -> Result<(Fd, Fd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two fds into the array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(fd_error("pipe"));
    }
    Ok((Fd(fds[0]), Fd(fds[1])))
}

/// `socketpair(AF_UNIX, SOCK_STREAM)`; returns (read end, write end) the way
/// hackbench uses them.
pub(crate) fn socketpair() -> Result<(Fd, Fd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two fds into the array.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } != 0 {
        return Err(fd_error("socketpair"));
    }
    Ok((Fd(fds[0]), Fd(fds[1])))
}

/// Reads exactly `buf.len()` bytes, retrying short reads and EINTR (unless
/// `stop` says the run is cancelled). Returns false on EOF, error or stop.
/// Async-signal-safe.
#[inline]
pub(crate) fn read_full(
    fd: RawFd,
    buf: &mut [u8],
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: reading into the unfilled tail of a valid buffer.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n > 0 {
            done += n as usize;
        } else if n == 0
            || errno() != libc::EINTR
            || stop.is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return false;
        }
    }
    true
}

/// Writes all of `buf`, retrying short writes and EINTR (unless `stop`
/// says the run is cancelled). Async-signal-safe.
#[inline]
pub(crate) fn write_full(
    fd: RawFd,
    buf: &[u8],
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: writing from a valid buffer.
        let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done) };
        if n > 0 {
            done += n as usize;
        } else if n < 0
            && (errno() != libc::EINTR || stop.is_some_and(|s| s.load(Ordering::Relaxed)))
        {
            return false;
        }
    }
    true
}

/// Blocks until `fd` is readable (the start signal). Async-signal-safe.
pub(crate) fn wait_readable(fd: RawFd, stop: Option<&std::sync::atomic::AtomicBool>) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, -1) };
        if n > 0 {
            return true;
        }
        if n < 0 && (errno() != libc::EINTR || stop.is_some_and(|s| s.load(Ordering::Relaxed))) {
            return false;
        }
    }
}

#[inline]
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Shared memory for forked children.

/// Types that are valid when all-zero and safe to share between processes
/// (atomics, and arrays and structs of them).
///
/// # Safety
/// The all-zero bit pattern must be a valid value, and the type must hold
/// no pointers.
pub(crate) unsafe trait ZeroShared: Sync {}
// SAFETY: atomics are valid when zero and hold no pointers.
unsafe impl ZeroShared for std::sync::atomic::AtomicU64 {}
// SAFETY: as above.
unsafe impl ZeroShared for std::sync::atomic::AtomicU32 {}

/// A zeroed `[T]` in a `MAP_SHARED | MAP_ANONYMOUS` mapping: forked children
/// and the parent see the same memory.
pub(crate) struct SharedSlice<T: ZeroShared> {
    ptr: *mut T,
    len: usize,
    bytes: usize,
}

// SAFETY: T is Sync and the mapping lives as long as the struct.
unsafe impl<T: ZeroShared> Send for SharedSlice<T> {}
// SAFETY: as above.
unsafe impl<T: ZeroShared> Sync for SharedSlice<T> {}

impl<T: ZeroShared> SharedSlice<T> {
    pub(crate) fn new(len: usize) -> Result<Self> {
        let bytes = (len.max(1) * std::mem::size_of::<T>()).max(1);
        // SAFETY: a fresh anonymous mapping; the kernel zero-fills it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io(
                "mmap of the shared statistics",
                std::io::Error::last_os_error(),
            ));
        }
        Ok(SharedSlice {
            ptr: ptr.cast(),
            len,
            bytes,
        })
    }
}

impl<T: ZeroShared> std::ops::Deref for SharedSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the mapping holds `len` zero-initialised (valid) T.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: ZeroShared> Drop for SharedSlice<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.bytes) };
    }
}

// ---------------------------------------------------------------------------
// Child processes.

/// The forked children of one run. Dropping it SIGKILLs and reaps every
/// child that has not been reaped yet, so no error path (and no panic) can
/// leave a stray process behind.
pub(crate) struct Children {
    pids: Vec<libc::pid_t>,
    /// Write end of the exit pipe, held until every child is forked.
    exit_wr: Option<Fd>,
    exit_rd: Fd,
}

/// The per-child part of [`Children`] needed after `fork`.
#[derive(Clone, Copy)]
pub(crate) struct ChildCtx {
    pub(crate) exit_wr: RawFd,
    parent: libc::pid_t,
}

impl ChildCtx {
    /// First thing a child does: die with the parent, default signal
    /// handling. Async-signal-safe.
    pub(crate) fn prologue(&self) {
        // SAFETY: prctl, signal and getppid are async-signal-safe syscalls.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != self.parent {
                libc::_exit(1);
            }
            for sig in STOP_SIGNALS {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }

    /// Reports a failure to the supervisor and exits. Async-signal-safe.
    pub(crate) fn fail(&self) -> ! {
        let b = b'F';
        // SAFETY: write and _exit are async-signal-safe.
        unsafe {
            libc::write(self.exit_wr, (&b as *const u8).cast(), 1);
            libc::_exit(1)
        }
    }

    /// Exits successfully. Async-signal-safe.
    pub(crate) fn exit_ok(&self) -> ! {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(0) }
    }
}

impl Children {
    pub(crate) fn new() -> Result<Self> {
        let (rd, wr) = pipe()?;
        Ok(Children {
            pids: Vec::new(),
            exit_wr: Some(wr),
            exit_rd: rd,
        })
    }

    /// Forks a child that runs `body` and then `_exit`s: status 0 when the
    /// body returns true, a reported failure otherwise. The body runs in a
    /// copy of a possibly multi-threaded process, so it may only do
    /// async-signal-safe work: raw syscalls on memory prepared before the
    /// fork, no allocation, no locks.
    pub(crate) fn spawn(&mut self, body: impl FnOnce(ChildCtx) -> bool) -> Result<libc::pid_t> {
        let exit_wr = self.exit_wr.as_ref().map(|f| f.raw()).unwrap_or(-1);
        // SAFETY: getpid is always safe.
        let parent = unsafe { libc::getpid() };
        let ctx = ChildCtx { exit_wr, parent };
        // SAFETY: the child only runs `body`, which the caller guarantees is
        // async-signal-safe and ends with _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EAGAIN) {
                Error::Limit(format!(
                    "fork failed after {} processes: {e}; raise the process limit (ulimit -u, \
                     /proc/sys/kernel/threads-max, pids cgroup) or use fewer tasks",
                    self.pids.len()
                ))
            } else {
                Error::io("fork", e)
            });
        }
        if pid == 0 {
            ctx.prologue();
            if body(ctx) {
                ctx.exit_ok()
            }
            ctx.fail()
        }
        self.pids.push(pid);
        Ok(pid)
    }

    /// Call once every child is forked: drops the parent's write end of the
    /// exit pipe so that [`Self::exit_fd`] hangs up when the last exits.
    pub(crate) fn all_spawned(&mut self) {
        if let Some(f) = self.exit_wr.take() {
            f.close();
        }
    }

    /// Readable when a child failed (one byte) or every child has exited
    /// (hang-up).
    pub(crate) fn exit_fd(&self) -> RawFd {
        self.exit_rd.raw()
    }

    /// True when a child reported a failure through the exit pipe (as
    /// opposed to all of them having exited).
    pub(crate) fn failure_reported(&self) -> bool {
        let mut b = 0u8;
        // SAFETY: poll then a one-byte read; never blocks.
        unsafe {
            let mut p = libc::pollfd {
                fd: self.exit_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut p, 1, 0) <= 0 {
                return false;
            }
            let fl = libc::fcntl(self.exit_fd(), libc::F_GETFL);
            libc::fcntl(self.exit_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            let n = libc::read(self.exit_fd(), (&mut b as *mut u8).cast(), 1);
            libc::fcntl(self.exit_fd(), libc::F_SETFL, fl);
            n == 1
        }
    }

    /// Reaps every child (blocking), returning a description of the first
    /// one that did not exit with status 0.
    pub(crate) fn reap_all(&mut self) -> Option<String> {
        let mut first_bad = None;
        for pid in std::mem::take(&mut self.pids) {
            let mut status = 0;
            loop {
                // SAFETY: waiting for our own child.
                let r = unsafe { libc::waitpid(pid, &mut status, 0) };
                if r >= 0 || errno() != libc::EINTR {
                    break;
                }
            }
            let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            if !ok && first_bad.is_none() {
                first_bad = Some(if libc::WIFSIGNALED(status) {
                    format!(
                        "benchmark process {pid} was killed by signal {}",
                        libc::WTERMSIG(status)
                    )
                } else {
                    format!(
                        "benchmark process {pid} failed (exit status {})",
                        libc::WEXITSTATUS(status)
                    )
                });
            }
        }
        first_bad
    }

    /// SIGKILLs every unreaped child and reaps them all.
    pub(crate) fn kill_all(&mut self) {
        for &pid in &self.pids {
            // SAFETY: signalling our own unreaped child (the pid cannot have
            // been recycled: it is still our zombie at worst).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        self.reap_all();
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Counts live worker threads of a thread-mode run and lets the last one
/// (or a failing one) wake the supervisor through a pipe.
pub(crate) struct ThreadDone {
    pub(crate) remaining: AtomicUsize,
    pub(crate) failed: std::sync::atomic::AtomicBool,
    rd: Fd,
    wr: Fd,
}

impl ThreadDone {
    pub(crate) fn new(n: usize) -> Result<Self> {
        let (rd, wr) = pipe()?;
        Ok(ThreadDone {
            remaining: AtomicUsize::new(n),
            failed: Default::default(),
            rd,
            wr,
        })
    }
    pub(crate) fn fd(&self) -> RawFd {
        self.rd.raw()
    }
    fn poke(&self) {
        let b = 1u8;
        // SAFETY: one-byte write to our pipe.
        unsafe { libc::write(self.wr.raw(), (&b as *const u8).cast(), 1) };
    }
    /// A worker finished (successfully or not).
    pub(crate) fn finish(&self, ok: bool) {
        if !ok && !self.failed.swap(true, Ordering::SeqCst) {
            self.poke();
        }
        if self.remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.poke();
        }
    }
    /// Registers a thread that never started (spawn failed).
    pub(crate) fn forget(&self, n: usize) {
        if n > 0 && self.remaining.fetch_sub(n, Ordering::SeqCst) == n {
            self.poke();
        }
    }
}
