//! The guest's side of a scenario (`schedlab kernel scenario ...`, run
//! inside the guest): real threads with CPU affinity. Busy loops are pinned
//! to the setup's busy CPUs; the waker is pinned to its CPU; before every
//! round the wakee pins itself to `prev` (sched_setaffinity migrates it
//! there at once), widens its affinity to every CPU again and blocks (with
//! `recent`, a first, unreported wake-up from `recent` while a busy loop
//! holds that CPU makes the kernel record `recent_used_cpu` = `recent`:
//! select_idle_sibling sets it to prev whenever it gets past its early
//! returns, 5.16+); the waker waits until the
//! wakee is asleep (state `S` in /proc), wakes it, and the wakee reports
//! `sched_getcpu()`. A fork round has the waker create a thread that
//! reports where it first runs. One warm-up round is not reported.

use crate::error::OracleError;
use crate::scenario::{Setup, Wake};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time the busy loops run before the first round, ms.
pub const SETTLE_MS: u64 = 300;

/// One round as the guest saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// Round number (from 1).
    pub round: usize,
    /// The CPU the waker ran on when it woke.
    pub waker: usize,
    /// The CPU the wakee slept on.
    pub prev: usize,
    /// The CPU the wakee woke up on.
    pub chosen: usize,
}

impl Round {
    /// `round K waker W prev P chosen C`.
    pub fn line(&self) -> String {
        format!(
            "round {} waker {} prev {} chosen {}",
            self.round, self.waker, self.prev, self.chosen
        )
    }

    /// Parse [`Round::line`]'s output.
    pub fn parse(line: &str) -> Option<Round> {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() != 8 || t[0] != "round" || t[2] != "waker" || t[4] != "prev" || t[6] != "chosen"
        {
            return None;
        }
        Some(Round {
            round: t[1].parse().ok()?,
            waker: t[3].parse().ok()?,
            prev: t[5].parse().ok()?,
            chosen: t[7].parse().ok()?,
        })
    }
}

fn sys(what: &str) -> OracleError {
    OracleError::Io(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// Parse the guest's output (`schedlab kernel scenario ...`): a
/// `scenario NAME` line, then its `round ...` lines, per scenario.
pub fn parse_output(text: &str) -> Vec<(String, Vec<Round>)> {
    let mut out: Vec<(String, Vec<Round>)> = Vec::new();
    for l in text.lines() {
        if let Some(n) = l.strip_prefix("scenario ") {
            out.push((n.trim().to_string(), Vec::new()));
        } else if let (Some(r), Some(last)) = (Round::parse(l), out.last_mut()) {
            last.1.push(r);
        }
    }
    out
}

/// Pin the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> Result<(), OracleError> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for
    // c < CPU_SETSIZE (checked); sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(OracleError::Arg {
                    flag: "cpu".into(),
                    why: format!("{c} is beyond CPU_SETSIZE"),
                });
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(sys(&format!("sched_setaffinity {cpus:?}")));
        }
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Result<Vec<usize>, OracleError> {
    // SAFETY: as in set_affinity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(sys("sched_getaffinity"));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// The CPU the caller runs on.
pub fn current_cpu() -> usize {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

pub(crate) fn gettid() -> i64 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

/// Whether thread `tid` of this process is asleep (state S in /proc).
pub(crate) fn sleeping(tid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        == Some("S")
}

/// A thread that does nothing but sleep until woken: a partner for
/// wake-ups that only set the waker's placement fields. It may run on two
/// CPUs: the kernel calls select_task_rq_fair (and so record_wakee) only
/// for a task allowed on more than one CPU (try_to_wake_up ->
/// select_task_rq).
struct Helper {
    handle: std::thread::JoinHandle<()>,
    tid: Arc<AtomicI64>,
    quit: Arc<AtomicBool>,
}

impl Helper {
    fn spawn(cpus: Vec<usize>) -> Helper {
        let tid = Arc::new(AtomicI64::new(0));
        let quit = Arc::new(AtomicBool::new(false));
        let (t, q) = (tid.clone(), quit.clone());
        let handle = std::thread::spawn(move || {
            let _ = set_affinity(&cpus);
            t.store(gettid(), Ordering::SeqCst);
            while !q.load(Ordering::SeqCst) {
                std::thread::park();
            }
        });
        Helper { handle, tid, quit }
    }

    /// Wait until it sleeps.
    fn wait_asleep(&self) {
        loop {
            let t = self.tid.load(Ordering::SeqCst);
            if (t != 0 && sleeping(t)) || self.handle.is_finished() {
                break;
            }
            std::hint::spin_loop();
        }
    }

    /// Wake it once it sleeps, so that the wake-up is a real
    /// try_to_wake_up (an unpark of a running thread wakes nothing).
    fn wake(&self) {
        self.wait_asleep();
        self.handle.thread().unpark();
    }

    fn stop(self) {
        self.quit.store(true, Ordering::SeqCst);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

/// `n` wake-ups alternating between two helpers: `n` wakee flips
/// (record_wakee counts a flip whenever the wakee differs from the last);
/// returns once both sleep again.
fn flip(helpers: &[Helper; 2], n: u32) {
    for i in 0..n {
        helpers[(i % 2) as usize].wake();
    }
    helpers[0].wait_asleep();
    helpers[1].wait_asleep();
}

/// A busy loop on one CPU that can be switched on and off.
struct Spinner {
    handle: std::thread::JoinHandle<()>,
    on: Arc<AtomicBool>,
    quit: Arc<AtomicBool>,
    tid: Arc<AtomicI64>,
}

impl Spinner {
    fn spawn(cpu: usize) -> Spinner {
        let on = Arc::new(AtomicBool::new(false));
        let quit = Arc::new(AtomicBool::new(false));
        let tid = Arc::new(AtomicI64::new(0));
        let (o, q, t) = (on.clone(), quit.clone(), tid.clone());
        let handle = std::thread::spawn(move || {
            let _ = set_affinity(&[cpu]);
            t.store(gettid(), Ordering::SeqCst);
            while !q.load(Ordering::SeqCst) {
                if o.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                } else {
                    std::thread::park();
                }
            }
        });
        Spinner {
            handle,
            on,
            quit,
            tid,
        }
    }

    /// Busy (running) or idle (asleep), returning once it is so.
    fn set(&self, busy: bool) {
        self.on.store(busy, Ordering::SeqCst);
        if busy {
            self.handle.thread().unpark();
        }
        loop {
            let t = self.tid.load(Ordering::SeqCst);
            if self.handle.is_finished() || (t != 0 && sleeping(t) != busy) {
                break;
            }
            std::hint::spin_loop();
        }
    }

    fn stop(self) {
        self.quit.store(true, Ordering::SeqCst);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

/// Run `s` for `rounds` rounds; every round is passed to `report` as it ends.
pub fn run(s: &Setup, rounds: usize, mut report: impl FnMut(Round)) -> Result<(), OracleError> {
    let all = allowed_cpus()?;
    for &c in s
        .busy
        .iter()
        .chain([&s.waker, &s.prev])
        .chain(s.recent.iter())
    {
        if !all.contains(&c) {
            return Err(OracleError::Arg {
                flag: "scenario".into(),
                why: format!("CPU {c} is not available here (allowed: {all:?})"),
            });
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut busy = Vec::new();
    for &c in &s.busy {
        let stop = stop.clone();
        busy.push(std::thread::spawn(move || {
            let _ = set_affinity(&[c]);
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }));
    }
    // Let the busy loops' PELT load and utilisation settle (half-life
    // 32 ms: 97 % after 160 ms) before the first round, as the simulator's
    // side assumes them at 1024.
    std::thread::sleep(Duration::from_millis(SETTLE_MS));
    set_affinity(&[s.waker])?;
    let out = match s.wake {
        Wake::Fork => fork_rounds(s, rounds, &all, &mut report),
        Wake::Futex | Wake::Pipe => wake_rounds(s, rounds, &all, &mut report),
    };
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        let _ = b.join();
    }
    set_affinity(&all)?;
    out
}

fn fork_rounds(
    s: &Setup,
    rounds: usize,
    all: &[usize],
    report: &mut impl FnMut(Round),
) -> Result<(), OracleError> {
    for k in 0..=rounds {
        set_affinity(&[s.waker])?;
        set_affinity(all)?; // still running on the waker's CPU
        let waker = current_cpu();
        let child = std::thread::spawn(current_cpu);
        let chosen = child
            .join()
            .map_err(|_| OracleError::Io("forked thread panicked".into()))?;
        if k > 0 {
            report(Round {
                round: k,
                waker,
                prev: waker,
                chosen,
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn wake_rounds(
    s: &Setup,
    rounds: usize,
    all: &[usize],
    report: &mut impl FnMut(Round),
) -> Result<(), OracleError> {
    // With `recent`, every round is two wake-ups: the first from `recent`
    // while a busy loop holds it (so select_idle_sibling gets past its
    // early returns and records recent_used_cpu = prev, 5.16+), the second,
    // reported, from `prev` with `recent` idle again.
    let per_round = if s.recent.is_some() { 2 } else { 1 };
    let steps = (rounds + 1) * per_round;
    let ready = Arc::new(AtomicUsize::new(0)); // step the wakee is about to sleep in
    let done = Arc::new(AtomicUsize::new(0)); // step the wakee reported
    let chosen = Arc::new(AtomicI64::new(-1));
    let prev_seen = Arc::new(AtomicI64::new(-1));
    let tid = Arc::new(AtomicI64::new(0));
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two descriptors into fds.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(sys("pipe"));
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    let spinner = Arc::new(s.recent.map(Spinner::spawn));
    // The pairs whose wake-ups raise the waker's and the wakee's wakee_flips.
    // Both allowed on the waker's CPU and prev (two CPUs, so that their
    // wake-ups go through select_task_rq_fair).
    let pair = || {
        let cpus = vec![s.waker, s.prev];
        [Helper::spawn(cpus.clone()), Helper::spawn(cpus)]
    };
    let waker_pair = s.flips.map(|_| pair());
    let wakee_pair = Arc::new(s.flips.map(|_| pair()));
    let (spinner_w, wakee_pair_w) = (spinner.clone(), wakee_pair.clone());
    let (sw, all_w) = (s.clone(), all.to_vec());
    let (ready_w, done_w, chosen_w, prev_w, tid_w) = (
        ready.clone(),
        done.clone(),
        chosen.clone(),
        prev_seen.clone(),
        tid.clone(),
    );
    let wakee = std::thread::spawn(move || -> Result<(), OracleError> {
        tid_w.store(gettid(), Ordering::SeqCst);
        for j in 0..steps {
            let first_of_two = per_round == 2 && j % 2 == 0;
            if let (Some(r), Some(sp)) = (sw.recent, spinner_w.as_ref()) {
                if first_of_two {
                    sp.set(true);
                    set_affinity(&[r])?;
                } else {
                    sp.set(false);
                }
            }
            if !first_of_two {
                set_affinity(&[sw.prev])?;
                if let (Some((_, n)), Some(pair)) = (sw.flips, wakee_pair_w.as_ref()) {
                    flip(pair, n);
                }
            }
            prev_w.store(current_cpu() as i64, Ordering::SeqCst);
            set_affinity(&all_w)?;
            ready_w.store(j + 1, Ordering::SeqCst);
            match sw.wake {
                Wake::Pipe => {
                    let mut b = [0u8; 1];
                    // SAFETY: reads one byte into b.
                    if unsafe { libc::read(rfd, b.as_mut_ptr().cast(), 1) } != 1 {
                        return Err(sys("read pipe"));
                    }
                }
                _ => std::thread::park(),
            }
            chosen_w.store(current_cpu() as i64, Ordering::SeqCst);
            done_w.store(j + 1, Ordering::SeqCst);
        }
        Ok(())
    });
    let wakee_thread = wakee.thread().clone();
    let mut result = Ok(());
    for j in 0..steps {
        while ready.load(Ordering::SeqCst) != j + 1 && !wakee.is_finished() {
            std::hint::spin_loop();
        }
        let t = tid.load(Ordering::SeqCst);
        while !sleeping(t) && !wakee.is_finished() {
            std::hint::spin_loop();
        }
        if wakee.is_finished() {
            break;
        }
        let reported = per_round == 1 || j % 2 == 1;
        if let (true, Some((n, _)), Some(pair)) = (reported, s.flips, waker_pair.as_ref()) {
            flip(pair, n);
        }
        let waker = current_cpu();
        // read before the wake: once woken, the wakee may start its next step
        let prev = prev_seen.load(Ordering::SeqCst).max(0) as usize;
        match s.wake {
            Wake::Pipe => {
                let b = [1u8];
                // SAFETY: writes one byte from b.
                if unsafe { libc::write(wfd, b.as_ptr().cast(), 1) } != 1 {
                    result = Err(sys("write pipe"));
                    break;
                }
            }
            _ => wakee_thread.unpark(),
        }
        // keep the waker's CPU busy until the wakee has run
        while done.load(Ordering::SeqCst) != j + 1 && !wakee.is_finished() {
            std::hint::spin_loop();
        }
        let round = j / per_round;
        if reported && round > 0 {
            report(Round {
                round,
                waker,
                prev,
                chosen: chosen.load(Ordering::SeqCst).max(0) as usize,
            });
        }
    }
    let w = wakee
        .join()
        .map_err(|_| OracleError::Io("wakee thread panicked".into()))?;
    if let Some(sp) = Arc::try_unwrap(spinner).ok().flatten() {
        sp.stop();
    }
    let wakee_helpers = Arc::try_unwrap(wakee_pair)
        .ok()
        .flatten()
        .into_iter()
        .flatten();
    for h in wakee_helpers.chain(waker_pair.into_iter().flatten()) {
        h.stop();
    }
    // SAFETY: closing our own descriptors.
    unsafe {
        libc::close(rfd);
        libc::close(wfd);
    }
    result.and(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_lines() {
        let r = Round {
            round: 3,
            waker: 0,
            prev: 2,
            chosen: 10,
        };
        assert_eq!(Round::parse(&r.line()), Some(r));
        assert_eq!(Round::parse("round x"), None);
    }

    /// A real run on this host with whatever CPU it has: the wakee is
    /// reported every round and its prev is where it was pinned.
    #[test]
    fn runs_on_the_host() {
        let all = allowed_cpus().unwrap();
        let (cpu, prev) = (all[0], all[all.len() - 1]);
        for wake in [Wake::Futex, Wake::Pipe, Wake::Fork] {
            let prev = if wake == Wake::Fork { cpu } else { prev };
            let s = Setup {
                name: "t".into(),
                busy: vec![],
                waker: cpu,
                prev,
                recent: None,
                flips: None,
                wake,
            };
            let mut got = Vec::new();
            run(&s, 3, |r| got.push(r)).unwrap();
            assert_eq!(got.len(), 3, "{wake:?}");
            assert!(got
                .iter()
                .all(|r| r.prev == prev && all.contains(&r.chosen)));
        }
        // the helpers: a recent CPU and both partners' flips
        let s = Setup {
            name: "t".into(),
            busy: vec![],
            waker: cpu,
            prev,
            recent: Some(cpu),
            flips: Some((6, 3)),
            wake: Wake::Pipe,
        };
        let mut n = 0;
        run(&s, 2, |_| n += 1).unwrap();
        assert_eq!(n, 2);
    }
}
