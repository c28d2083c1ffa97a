//! What the simulator knows of each CPU's timers: the sleep of every task
//! that sleeps there (`nanosleep`/`usleep`, schbench's usleeps and back-off,
//! tbench's parent), an hrtimer on the CPU that armed it
//! (`hrtimer_nanosleep`, kernel/time/hrtimer.c), which is where the
//! `Event::Timer` fires.
//!
//! The idle governors ask for the time to the next one
//! (`tick_nohz_get_sleep_length()`, kernel/time/tick-sched.c, which takes
//! the earliest hrtimer besides the tick into account). The test that
//! decides whether the tick may stop at all (`tick_nohz_next_event()`: the
//! next timer more than a tick away) does not see them: with high
//! resolution timers, which every distribution kernel enables, it looks at
//! the timer wheel only (kernel/time/timer.c `cmp_next_hrtimer_event()`:
//! "If high resolution timers are enabled hrtimer_get_next_event() returns
//! KTIME_MAX"), and no modelled workload arms a timer-wheel timer (those
//! are kernel timers: TCP's delayed-ACK and retransmit timers, 40 ms and
//! 200 ms at least, `schedule_timeout()`), so it never keeps the tick.
//!
//! Kept cheap for the hot path: a min-heap of expiry times per CPU, filled
//! when a task goes to sleep, pruned lazily when the CPU asks or arms
//! another.

use super::Engine;
use crate::event::Event;
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The pending timers of each CPU, as expiry times.
#[derive(Default)]
pub(super) struct CpuTimers {
    q: Vec<BinaryHeap<Reverse<Nanos>>>,
}

impl CpuTimers {
    /// No timers on `n` CPUs.
    pub(super) fn new(n: usize) -> Self {
        CpuTimers {
            q: (0..n).map(|_| BinaryHeap::new()).collect(),
        }
    }

    /// A timer armed on `cpu` for `at` at time `now`, dropping those of
    /// `cpu` that fired before `now` (a CPU that never idles never asks
    /// for its next timer: without this its heap would grow with the run).
    pub(super) fn arm(&mut self, cpu: usize, at: Nanos, now: Nanos) {
        self.next(cpu, now);
        self.q[cpu].push(Reverse(at));
    }

    /// The earliest timer of `cpu` not yet past at `now` (one due at `now`
    /// is still to fire), dropping those that fired.
    pub(super) fn next(&mut self, cpu: usize, now: Nanos) -> Option<Nanos> {
        let q = &mut self.q[cpu];
        while let Some(&Reverse(t)) = q.peek() {
            if t >= now {
                return Some(t);
            }
            q.pop();
        }
        None
    }
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Task `t`, going to sleep on CPU `c`, arms its timer for `at`.
    pub(super) fn arm_timer(&mut self, c: usize, t: TaskId, at: Nanos) {
        self.timers.arm(c, at, self.now);
        self.events.push(at, Event::Timer { task: t });
    }

    /// Time from now to `c`'s next timer (`Nanos::MAX`: none).
    pub(super) fn time_to_next_timer(&mut self, c: usize) -> Nanos {
        self.timers
            .next(c, self.now)
            .map_or(Nanos::MAX, |t| t - self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::CpuTimers;

    #[test]
    fn next_is_the_earliest_pending_timer_of_that_cpu() {
        let mut t = CpuTimers::new(2);
        assert_eq!(t.next(0, 0), None);
        t.arm(0, 500, 0);
        t.arm(0, 200, 0);
        t.arm(1, 100, 0);
        assert_eq!(t.next(0, 0), Some(200));
        assert_eq!(t.next(1, 0), Some(100));
        // one due now is still pending; past ones are dropped
        assert_eq!(t.next(0, 200), Some(200));
        assert_eq!(t.next(0, 201), Some(500));
        assert_eq!(t.next(1, 101), None);
        assert_eq!(t.next(0, 600), None);
        assert_eq!(t.q[0].len(), 0);
        // arming drops the timers that fired
        t.arm(1, 700, 0);
        t.arm(1, 900, 800);
        assert_eq!(t.q[1].len(), 1);
    }
}
