//! The POSIX thread primitives and clock reads rt-app's events are built
//! on (rt-app v1.0, src/rt-app.c `run_event` and `thread_body`):
//! - mutexes (`pthread_mutex_lock`/`unlock`): a taken mutex puts the
//!   caller to sleep in FUTEX_WAIT; unlocking a contended one hands it to
//!   the first waiter and wakes it with FUTEX_WAKE (a plain wake-up, no
//!   WF_SYNC, kernel/futex/waitwake.c). glibc's default mutex instead
//!   lets the woken waiter race for it; the hand-off keeps the model
//!   simple and is what a PI (rt_mutex) lock does;
//! - condition variables (`pthread_cond_wait`/`signal`/`broadcast`): the
//!   waiter releases its mutex and sleeps; a signalled waiter is requeued
//!   onto the mutex (woken now if the mutex is free, else when it is handed
//!   over), as glibc's requeue-free condvars amount to;
//! - rt-app's barrier (its own mutex, counter and condvar): the last of
//!   its users to arrive wakes the others;
//! - rt-app's timers: `clock_nanosleep(TIMER_ABSTIME)` until the timer's
//!   next period, with the slack and wake-up latency rt-app records;
//! - rt-app's per-phase log: the clock readings around each phase and
//!   each run event.
//!
//! Every structure here is created by a workload that uses it; other
//! workloads allocate nothing and never reach this file.

use super::{Block, Engine};
use crate::cacheline::LineId;
use crate::rq::RunQueue;
use crate::task::{BarrierId, CondId, MutexId, Op, RtTimerId, TaskId};
use crate::Nanos;
use std::collections::VecDeque;

/// A pthread mutex.
#[derive(Debug)]
pub(super) struct Mutex {
    owner: Option<TaskId>,
    waiters: VecDeque<TaskId>,
    line: LineId,
}

/// A pthread condition variable: its waiters and the mutex each waits with.
#[derive(Debug)]
pub(super) struct Cond {
    waiters: VecDeque<(TaskId, MutexId)>,
    line: LineId,
}

/// rt-app's barrier.
#[derive(Debug)]
pub(super) struct Barrier {
    users: u32,
    arrived: Vec<TaskId>,
    line: LineId,
}

/// An rt-app timer: the absolute time of its next period.
#[derive(Debug)]
pub(super) struct RtTimer {
    next: Option<Nanos>,
    relative: bool,
}

/// A thread's log state for the phase it is in.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PhaseState {
    /// When the thread's timers start (rt-app's `t_first`: the start of
    /// the run plus the thread's delay).
    first: Nanos,
    start: Nanos,
    run_since: Nanos,
    run_us: u64,
    slack_us: i64,
    wu_lat_us: u64,
    /// The deadline of the timer the thread sleeps on.
    deadline: Nanos,
}

/// One logged phase (see benchspec's `rtapp::log::Row` for the columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseRow {
    /// The thread.
    pub task: TaskId,
    /// Which phase of the thread's (the workload's numbering).
    pub phase: u32,
    /// Start, ns.
    pub start: Nanos,
    /// End, ns.
    pub end: Nanos,
    /// Time spent in run events, us (summed per event, truncated, as rt-app).
    pub run_us: u64,
    /// Slack of the last (or every, cumulative) timer, us.
    pub slack_us: i64,
    /// Sum of wake-up latencies after timers, us.
    pub wu_lat_us: u64,
}

/// What one logged phase costs by the end of the run: its [`PhaseRow`],
/// the report's row built from it and its line of the thread's log (about
/// 110 bytes of text), rounded up.
pub(crate) const PHASE_ROW_REPORT_BYTES: u64 = 256;

/// The pthread state of a run (empty unless a workload creates some).
#[derive(Debug, Default)]
pub(super) struct Pthreads {
    mutexes: Vec<Mutex>,
    conds: Vec<Cond>,
    barriers: Vec<Barrier>,
    timers: Vec<RtTimer>,
    phase: Vec<PhaseState>,
    rows: Vec<PhaseRow>,
}

fn us(ns: Nanos) -> u64 {
    ns / 1000
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// A free pthread mutex.
    pub fn add_mutex(&mut self) -> MutexId {
        let line = self.k.alloc_futex_word();
        let p = &mut self.pthreads.mutexes;
        p.push(Mutex {
            owner: None,
            waiters: VecDeque::new(),
            line,
        });
        MutexId((p.len() - 1) as u32)
    }

    /// A condition variable nobody waits on.
    pub fn add_cond(&mut self) -> CondId {
        let line = self.k.alloc_futex_word();
        let p = &mut self.pthreads.conds;
        p.push(Cond {
            waiters: VecDeque::new(),
            line,
        });
        CondId((p.len() - 1) as u32)
    }

    /// A barrier of `users` arrivals.
    pub fn add_barrier(&mut self, users: u32) -> BarrierId {
        let line = self.k.alloc_futex_word();
        let p = &mut self.pthreads.barriers;
        p.push(Barrier {
            users: users.max(1),
            arrived: Vec::new(),
            line,
        });
        BarrierId((p.len() - 1) as u32)
    }

    /// An rt-app timer, not started; `relative`: a missed period re-bases
    /// the timer on the time it was found missed.
    pub fn add_rt_timer(&mut self, relative: bool) -> RtTimerId {
        let p = &mut self.pthreads.timers;
        p.push(RtTimer {
            next: None,
            relative,
        });
        RtTimerId((p.len() - 1) as u32)
    }

    /// Every phase logged so far, in the order they ended.
    pub fn phase_rows(&self) -> &[PhaseRow] {
        &self.pthreads.rows
    }

    fn phase_state(&mut self, t: TaskId) -> &mut PhaseState {
        let ti = t.idx();
        let p = &mut self.pthreads.phase;
        if p.len() <= ti {
            p.resize(ti + 1, PhaseState::default());
        }
        &mut p[ti]
    }

    /// Time since `t`'s last `RunStart` (rt-app's `runtime` loop test).
    pub(super) fn run_elapsed(&self, t: TaskId) -> Nanos {
        let since = self.pthreads.phase.get(t.idx()).map_or(0, |p| p.run_since);
        self.now.saturating_sub(since)
    }

    /// The CPU work of a pthread op about to start for `t`.
    pub(super) fn pthread_work(&mut self, t: TaskId, op: Op) -> Nanos {
        let c = &self.k.costs;
        let resumed = self.tasks[t.idx()].resumed;
        let p = &self.pthreads;
        match op {
            Op::MutexLock(m) => {
                let owner = p.mutexes[m.idx()].owner;
                if resumed || owner.is_none() || owner == Some(t) {
                    c.atomic_ns
                } else {
                    c.atomic_ns + c.futex_wait_ns
                }
            }
            Op::MutexUnlock(m) => {
                let contended = !p.mutexes[m.idx()].waiters.is_empty();
                c.atomic_ns + if contended { c.futex_wake_ns } else { 0 }
            }
            Op::CondWait { mutex, .. } => {
                if resumed {
                    c.atomic_ns
                } else {
                    let contended = !p.mutexes[mutex.idx()].waiters.is_empty();
                    2 * c.atomic_ns + c.futex_wait_ns + if contended { c.futex_wake_ns } else { 0 }
                }
            }
            Op::CondSignal(cv) | Op::CondBroadcast(cv) => {
                let n = p.conds[cv.idx()].waiters.len() as u64;
                let woken = if matches!(op, Op::CondSignal(_)) {
                    n.min(1)
                } else {
                    n
                };
                c.atomic_ns + woken * c.futex_wake_ns
            }
            Op::BarrierWait(b) => {
                let bar = &p.barriers[b.idx()];
                if resumed {
                    c.atomic_ns
                } else if bar.arrived.len() as u32 + 1 >= bar.users {
                    c.atomic_ns + bar.arrived.len() as u64 * c.futex_wake_ns
                } else {
                    c.atomic_ns + c.futex_wait_ns
                }
            }
            // clock_gettime, and clock_nanosleep unless the time is past
            Op::TimerWait { .. } | Op::DelayUntil(_) => {
                if resumed {
                    c.gettimeofday_ns
                } else {
                    c.gettimeofday_ns + c.syscall_ns
                }
            }
            Op::PhaseStart | Op::RunStart | Op::RunEnd | Op::PhaseEnd(_) => c.gettimeofday_ns,
            _ => unreachable!("not a pthread op: {op:?}"),
        }
    }

    fn touch_line(&mut self, c: usize, line: LineId) {
        self.cpus[c].debt += self.k.lines.write(line, c, self.k.topo, &self.k.costs);
    }

    /// `t` on `c` sleeps in FUTEX_WAIT on the word `line`: the hash
    /// bucket and its futex_q (`Kernel::futex_wait_lines`), then blocks.
    fn futex_sleep(&mut self, c: usize, t: TaskId, line: LineId) {
        self.cpus[c].debt += self.k.futex_wait_lines(line, t.idx(), c);
        self.block(c, t, Block::Pthread);
    }

    /// FUTEX_WAKE on `c` of waiter `w` of the word `line`: the hash
    /// bucket and the waiter's futex_q (`Kernel::futex_wake_lines`).
    fn futex_unqueue(&mut self, c: usize, line: LineId, w: TaskId) {
        self.cpus[c].debt += self.k.futex_wake_lines(line, c, Some(w.idx()));
    }

    /// Give mutex `m` to `w` (a waiter already asleep) and wake it, or
    /// queue it on the mutex if the mutex is taken.
    fn mutex_give_or_queue(&mut self, c: usize, waker: TaskId, m: MutexId, w: TaskId) {
        let mx = &mut self.pthreads.mutexes[m.idx()];
        if mx.owner.is_none() {
            mx.owner = Some(w);
            self.try_to_wake_up(w, c, Some(waker), 0, false);
        } else {
            mx.waiters.push_back(w);
        }
    }

    /// Release mutex `m` held by `t`: hand it to its first waiter.
    fn mutex_release(&mut self, c: usize, t: TaskId, m: MutexId) {
        let line = self.pthreads.mutexes[m.idx()].line;
        self.touch_line(c, line);
        let mx = &mut self.pthreads.mutexes[m.idx()];
        if mx.owner != Some(t) {
            // unlocking a mutex one does not hold: EPERM for an
            // error-checking mutex, nothing changes here
            return;
        }
        match mx.waiters.pop_front() {
            Some(w) => {
                mx.owner = Some(w);
                self.futex_unqueue(c, line, w);
                self.try_to_wake_up(w, c, Some(t), 0, false);
            }
            None => mx.owner = None,
        }
    }

    /// Apply a pthread op of `t` on `c`; true when it completed (the
    /// program moves on), false when `t` blocked (the op is retried when it
    /// is woken, with `resumed` set).
    pub(super) fn pthread_apply(&mut self, c: usize, t: TaskId, op: Op) -> bool {
        let ti = t.idx();
        let resumed = self.tasks[ti].resumed;
        let now = self.now;
        match op {
            Op::MutexLock(m) => {
                let line = self.pthreads.mutexes[m.idx()].line;
                self.touch_line(c, line);
                let mx = &mut self.pthreads.mutexes[m.idx()];
                match mx.owner {
                    None => {
                        mx.owner = Some(t);
                        true
                    }
                    Some(o) if o == t => true,
                    Some(_) => {
                        mx.waiters.push_back(t);
                        self.futex_sleep(c, t, line);
                        false
                    }
                }
            }
            Op::MutexUnlock(m) => {
                self.mutex_release(c, t, m);
                true
            }
            Op::CondWait { cond, mutex } => {
                if resumed {
                    // signalled, and the mutex is ours again
                    return true;
                }
                let line = self.pthreads.conds[cond.idx()].line;
                self.touch_line(c, line);
                self.pthreads.conds[cond.idx()]
                    .waiters
                    .push_back((t, mutex));
                self.mutex_release(c, t, mutex);
                self.futex_sleep(c, t, line);
                false
            }
            Op::CondSignal(cv) | Op::CondBroadcast(cv) => {
                let line = self.pthreads.conds[cv.idx()].line;
                self.touch_line(c, line);
                let all = matches!(op, Op::CondBroadcast(_));
                while let Some((w, m)) = self.pthreads.conds[cv.idx()].waiters.pop_front() {
                    self.futex_unqueue(c, line, w);
                    self.mutex_give_or_queue(c, t, m, w);
                    if !all {
                        break;
                    }
                }
                true
            }
            Op::BarrierWait(b) => {
                if resumed {
                    return true;
                }
                let line = self.pthreads.barriers[b.idx()].line;
                self.touch_line(c, line);
                let bar = &mut self.pthreads.barriers[b.idx()];
                if bar.arrived.len() as u32 + 1 >= bar.users {
                    // the last user: everyone goes on
                    let arrived = std::mem::take(&mut bar.arrived);
                    for w in arrived {
                        self.futex_unqueue(c, line, w);
                        self.try_to_wake_up(w, c, Some(t), 0, false);
                    }
                    true
                } else {
                    bar.arrived.push(t);
                    self.futex_sleep(c, t, line);
                    false
                }
            }
            Op::TimerWait {
                timer,
                period,
                cumulative,
            } => {
                if resumed {
                    let ps = self.phase_state(t);
                    ps.wu_lat_us += us(now.saturating_sub(ps.deadline));
                    return true;
                }
                let first = self.phase_state(t).first;
                let tm = &mut self.pthreads.timers[timer.idx()];
                let next = tm.next.unwrap_or(first) + period;
                tm.next = Some(next);
                let relative = tm.relative;
                let slack = if next >= now {
                    us(next - now) as i64
                } else {
                    -(us(now - next) as i64)
                };
                let ps = self.phase_state(t);
                if cumulative {
                    ps.slack_us += slack;
                } else {
                    ps.slack_us = slack;
                }
                if now < next {
                    ps.deadline = next;
                    // an hrtimer sleep of a fair task: its timer slack
                    self.arm_timer(c, t, next + super::ops::TIMER_SLACK_NS);
                    self.block(c, t, Block::Sleep);
                    false
                } else {
                    ps.wu_lat_us = 0;
                    if relative {
                        self.pthreads.timers[timer.idx()].next = Some(now);
                    }
                    true
                }
            }
            Op::DelayUntil(at) => {
                self.phase_state(t).first = at;
                if resumed || now >= at {
                    return true;
                }
                self.arm_timer(c, t, at + super::ops::TIMER_SLACK_NS);
                self.block(c, t, Block::Sleep);
                false
            }
            Op::PhaseStart => {
                let ps = self.phase_state(t);
                *ps = PhaseState {
                    first: ps.first,
                    start: now,
                    ..PhaseState::default()
                };
                true
            }
            Op::RunStart => {
                self.phase_state(t).run_since = now;
                true
            }
            Op::RunEnd => {
                let ps = self.phase_state(t);
                ps.run_us += us(now.saturating_sub(ps.run_since));
                true
            }
            Op::PhaseEnd(phase) => {
                let ps = *self.phase_state(t);
                // the row, and the log line and summary the report makes
                // of it
                self.record_bytes += PHASE_ROW_REPORT_BYTES;
                self.pthreads.rows.push(PhaseRow {
                    task: t,
                    phase,
                    start: ps.start,
                    end: now,
                    run_us: ps.run_us,
                    slack_us: ps.slack_us,
                    wu_lat_us: ps.wu_lat_us,
                });
                true
            }
            _ => unreachable!("not a pthread op: {op:?}"),
        }
    }
}
