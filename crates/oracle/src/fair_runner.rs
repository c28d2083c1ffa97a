//! The guest's side of the fair-class scenarios ([`crate::fair`]): real
//! threads, named after their role (the names the trace analysis looks
//! for), pinned with sched_setaffinity. What the kernel did is read from
//! the trace afterwards; the runner only prints its header line.

use crate::error::OracleError;
use crate::fair::{FairSetup, Kind, CHILD_RUN_NS, FORK_GAP_NS, PINGPONG_PER_ROUND, SLEEPER_RUN_NS};
use crate::runner::{gettid, sleeping};
use crate::runner::{set_affinity, SETTLE_MS};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn sys(what: &str) -> OracleError {
    OracleError::Io(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// FUTEX_WAIT_PRIVATE on `w` while it holds `val`.
fn futex_wait(w: &AtomicU32, val: u32) {
    // SAFETY: w is a live, aligned u32; no timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// FUTEX_WAKE_PRIVATE one waiter of `w`.
fn futex_wake(w: &AtomicU32) {
    // SAFETY: w is a live, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// Clock `clock` now, ns.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes ts.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// This thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CLOCK_MONOTONIC, ns.
fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Spin until this thread has run `ns` more of CPU time (the simulator's
/// `Op::Compute`), however long it waits pre-empted meanwhile.
fn spin_for(ns: u64) {
    let t0 = thread_cpu_ns();
    while thread_cpu_ns() - t0 < ns {
        std::hint::spin_loop();
    }
}

fn named<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, OracleError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| OracleError::Io(format!("spawning {name}: {e}")))
}

/// A busy loop pinned to `cpu` until `stop`.
fn busy_loop(
    name: &str,
    cpu: usize,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, OracleError> {
    named(name, move || {
        let _ = set_affinity(&[cpu]);
        let mut x = 0u64;
        while !stop.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    })
}

fn join<T>(
    h: std::thread::JoinHandle<Result<T, OracleError>>,
    what: &str,
) -> Result<T, OracleError> {
    h.join()
        .map_err(|_| OracleError::Io(format!("{what} thread panicked")))?
}

/// Run `s` (its rounds and one warm-up round).
pub fn run(s: &FairSetup) -> Result<(), OracleError> {
    let all = crate::runner::allowed_cpus()?;
    for c in [s.cpu, s.other] {
        if !all.contains(&c) {
            return Err(OracleError::Arg {
                flag: "scenario".into(),
                why: format!("CPU {c} is not available here (allowed: {all:?})"),
            });
        }
    }
    let n = s.rounds + 1;
    let [busy, a, b] = s.comms();
    let stop = Arc::new(AtomicBool::new(false));
    let c = s.cpu;
    match s.kind {
        Kind::PingPong => {
            let mut fds = [0i32; 4];
            // SAFETY: pipe writes two descriptors each.
            if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0
                || unsafe { libc::pipe(fds.as_mut_ptr().add(2)) } != 0
            {
                return Err(sys("pipe"));
            }
            let (pr, pw, qr, qw) = (fds[0], fds[1], fds[2], fds[3]);
            let per = PINGPONG_PER_ROUND as usize * n;
            let side = move |rfd: i32, wfd: i32, first_write: bool| -> Result<(), OracleError> {
                set_affinity(&[c])?;
                let mut buf = [0u8; 1];
                for _ in 0..per {
                    // SAFETY: one byte from/into buf.
                    unsafe {
                        if first_write {
                            if libc::write(wfd, buf.as_ptr().cast(), 1) != 1 {
                                return Err(sys("write pipe"));
                            }
                            if libc::read(rfd, buf.as_mut_ptr().cast(), 1) != 1 {
                                return Err(sys("read pipe"));
                            }
                        } else {
                            if libc::read(rfd, buf.as_mut_ptr().cast(), 1) != 1 {
                                return Err(sys("read pipe"));
                            }
                            if libc::write(wfd, buf.as_ptr().cast(), 1) != 1 {
                                return Err(sys("write pipe"));
                            }
                        }
                    }
                }
                Ok(())
            };
            let pong = named(b, move || side(pr, qw, false))?;
            std::thread::sleep(Duration::from_millis(20));
            let ping = named(a, move || side(qr, pw, true))?;
            let r = join(ping, a).and(join(pong, b));
            for fd in fds {
                // SAFETY: our own descriptors.
                unsafe { libc::close(fd) };
            }
            r
        }
        Kind::Wake => {
            let bl = busy_loop(busy, c, stop.clone())?;
            std::thread::sleep(Duration::from_millis(SETTLE_MS));
            let word = Arc::new(AtomicU32::new(0));
            // the round the sleeper is about to sleep in, and when it blocks
            let ready = Arc::new(AtomicU32::new(0));
            let blocked_at = Arc::new(AtomicI64::new(0));
            let tid = Arc::new(AtomicI64::new(0));
            let (w2, r2, b2, t2) = (word.clone(), ready.clone(), blocked_at.clone(), tid.clone());
            let sleeper = named(a, move || -> Result<(), OracleError> {
                set_affinity(&[c])?;
                t2.store(gettid(), Ordering::SeqCst);
                for j in 0..n {
                    b2.store(monotonic_ns() as i64, Ordering::SeqCst);
                    r2.store(j as u32 + 1, Ordering::SeqCst);
                    while w2.load(Ordering::SeqCst) == 0 {
                        futex_wait(&w2, 0);
                    }
                    w2.store(0, Ordering::SeqCst);
                    spin_for(SLEEPER_RUN_NS);
                }
                Ok(())
            })?;
            let (sleep_ns, other) = (s.sleep_ns, s.other);
            let sleeper_done = Arc::new(AtomicBool::new(false));
            let sd = sleeper_done.clone();
            let waker = named(b, move || -> Result<(), OracleError> {
                set_affinity(&[other])?;
                for j in 0..n {
                    let j = j as u32 + 1;
                    // spinning until the sleeper is about to sleep in round
                    // j, then until its block plus the sleep: the sleep
                    // counts from the block, and this vCPU never idles
                    // (under TCG the wake-up of an idle vCPU, by futex or by
                    // its own timer, came 4-9 ms late and made the 1 ms
                    // sleep 5-10 ms long)
                    while ready.load(Ordering::SeqCst) < j && !sd.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                    }
                    if sd.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    let until = blocked_at.load(Ordering::SeqCst) as u64 + sleep_ns;
                    while monotonic_ns() < until {
                        std::hint::spin_loop();
                    }
                    // it must be asleep (state S) to be woken; if /proc
                    // cannot say within 5 s, wake it anyway (the futex
                    // word changes first, so a late waiter returns at once)
                    let t = tid.load(Ordering::SeqCst);
                    let give_up = monotonic_ns() + 5_000_000_000;
                    while !sleeping(t) && !sd.load(Ordering::SeqCst) && monotonic_ns() < give_up {
                        std::hint::spin_loop();
                    }
                    word.store(1, Ordering::SeqCst);
                    futex_wake(&word);
                }
                Ok(())
            })?;
            let r = join(sleeper, a);
            sleeper_done.store(true, Ordering::SeqCst);
            let r = r.and(join(waker, b));
            stop.store(true, Ordering::Relaxed);
            let _ = bl.join();
            r
        }
        Kind::Fork => {
            let bl = busy_loop(busy, c, stop.clone())?;
            std::thread::sleep(Duration::from_millis(SETTLE_MS));
            let child_name = b.to_string();
            let parent = named(a, move || -> Result<(), OracleError> {
                set_affinity(&[c])?;
                for _ in 0..n {
                    std::thread::sleep(Duration::from_nanos(FORK_GAP_NS));
                    // the child inherits the parent's affinity (CPU c)
                    let ch = named(&child_name, || spin_for(CHILD_RUN_NS))?;
                    ch.join()
                        .map_err(|_| OracleError::Io("child thread panicked".into()))?;
                }
                Ok(())
            })?;
            let r = join(parent, a);
            stop.store(true, Ordering::Relaxed);
            let _ = bl.join();
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fair scenario runs to its end on this host (it needs CPUs 0
    /// and 1; skipped, saying so, on a host without them).
    #[test]
    fn runs_on_the_host() {
        let all = crate::runner::allowed_cpus().unwrap();
        if !(all.contains(&0) && all.contains(&1)) {
            eprintln!("skipped: needs CPUs 0 and 1, allowed {all:?}");
            return;
        }
        let t = topology::machine("smp:cores=2").unwrap();
        for (n, _, _) in crate::fair::FAIR_SCENARIOS {
            let s = crate::fair::setup(n, &t, 1).unwrap();
            run(&s).unwrap_or_else(|e| panic!("{n}: {e}"));
        }
    }
}
