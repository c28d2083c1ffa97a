//! Time accounting and the segment clock, with SMT speed: a segment's
//! remaining work is re-timed whenever the number of busy threads of its
//! core changes.

use super::{Engine, Mode};
use crate::event::{Event, Slot};
use crate::rq::RunQueue;
use crate::task::{ChanId, Op, TaskId};
use crate::Nanos;

impl<'t, R: RunQueue> Engine<'t, R> {
    pub(super) fn account(&mut self, c: usize, now: Nanos) {
        let cpu = &mut self.cpus[c];
        let d = now - cpu.time.since;
        if cpu.mode == Mode::Busy {
            cpu.time.busy_ns += d;
        } else {
            cpu.time.idle_ns += d;
        }
        cpu.time.since = now;
    }

    pub(super) fn set_mode(&mut self, c: usize, mode: Mode) {
        let was_busy = self.cpus[c].mode == Mode::Busy;
        if !was_busy && mode == Mode::Busy && self.traced() {
            // cpu_idle(PWR_EVENT_EXIT): the CPU is out of its idle state
            self.trace_idle_exit(c);
        }
        self.account(c, self.now);
        self.cpus[c].mode = mode;
        self.note_idle_wait(c);
        let is_busy = mode == Mode::Busy;
        if was_busy != is_busy {
            let core = self.cpu_core[c] as usize;
            if is_busy {
                self.core_busy[core] += 1;
            } else {
                self.core_busy[core] -= 1;
            }
            if self.k.topo.threads_per_core() > 1 {
                self.retime_core(c);
            }
        }
    }

    /// Busy hardware threads of `c`'s core: a count per core kept by
    /// `set_mode` (the only place a CPU becomes busy or stops being so),
    /// so a segment start reads two small arrays rather than the topology's
    /// sibling list and every sibling's CPU record.
    pub(super) fn busy_threads(&self, c: usize) -> usize {
        let n = self.core_busy[self.cpu_core[c] as usize] as usize;
        debug_assert_eq!(
            n,
            self.k
                .topo
                .smt_siblings(c)
                .iter()
                .filter(|&&s| self.cpus[s as usize].mode == Mode::Busy)
                .count()
        );
        n
    }

    /// The number of busy threads of `c`'s core changed: settle every
    /// sibling's running segment at its old speed and re-time it.
    pub(super) fn retime_core(&mut self, c: usize) {
        let busy = self.busy_threads(c);
        let smt = self.k.costs.smt_speed_1024(busy);
        let topo = self.k.topo;
        for &s in topo.smt_siblings(c) {
            let s = s as usize;
            let speed = (smt * self.cpus[s].seg.mem_speed / 1024).max(1);
            if s == c || self.cpus[s].mode != Mode::Busy || self.cpus[s].seg.speed == speed {
                continue;
            }
            if self.vm.is_some() && self.vm_run_state(s) != super::vcpu::VcpuRun::Running {
                // a guest CPU whose vCPU is off: its segment is settled and
                // disarmed; it runs at the new speed when re-armed
                self.cpus[s].seg.speed = speed;
                continue;
            }
            let done = self.settle_segment(s);
            if let Some(t) = self.cpus[s].seg.task {
                let op_left = &mut self.tasks[t.idx()].op_left;
                *op_left = op_left.saturating_sub(done);
            }
            self.cpus[s].seg.speed = speed;
            self.arm_segment(s);
        }
        if self.cpus[c].mode == Mode::Busy {
            self.cpus[c].seg.speed = (smt * self.cpus[c].seg.mem_speed / 1024).max(1);
        }
    }

    /// Count the user time of `c`'s segment from its start to now: the
    /// time past its debt (kernel work, done first). Call before the clock
    /// moves on.
    pub(super) fn note_user_time(&mut self, c: usize) {
        let cpu = &self.cpus[c];
        if !cpu.seg.user {
            return;
        }
        let elapsed = self.now - cpu.seg.start;
        let debt_wall = if cpu.seg.speed == 1024 {
            cpu.seg.debt
        } else {
            cpu.seg.debt.saturating_mul(1024) / cpu.seg.speed.max(1)
        };
        self.counters.user_ns += elapsed.saturating_sub(debt_wall);
    }

    /// Bring the segment clock of `c` to now: work done so far is removed.
    pub(super) fn settle_segment(&mut self, c: usize) -> Nanos {
        self.note_user_time(c);
        let now = self.now;
        let cpu = &mut self.cpus[c];
        let elapsed = now - cpu.seg.start;
        let done = if cpu.seg.speed == 1024 {
            elapsed
        } else {
            elapsed * cpu.seg.speed / 1024
        }
        .min(cpu.seg.work);
        cpu.seg.work -= done;
        cpu.seg.start = now;
        let from_debt = done.min(cpu.seg.debt);
        cpu.seg.debt -= from_debt;
        if cpu.seg.user && !cpu.seg.spin {
            self.counters.compute_work_ns += done - from_debt;
        }
        done - from_debt
    }

    #[inline(always)]
    pub(super) fn arm_segment(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        cpu.gen = cpu.gen.wrapping_add(1);
        // full speed (no busy SMT sibling) is the common case: no division
        let dur = if cpu.seg.speed == 1024 {
            cpu.seg.work
        } else {
            // a spin segment's work is SPIN_WORK (Nanos::MAX / 4): saturate
            cpu.seg
                .work
                .saturating_mul(1024)
                .div_ceil(cpu.seg.speed.max(1))
        };
        let gen = cpu.gen;
        self.events.set_slot(
            c,
            Slot::Main,
            self.now + dur,
            Event::SegmentDone { cpu: c as u32, gen },
        );
    }

    pub(super) fn start_segment(
        &mut self,
        c: usize,
        task: Option<TaskId>,
        work: Nanos,
        user: bool,
    ) {
        self.start_segment_at(c, task, work, user, 1024);
    }

    /// `start_segment` for user work that runs at `mem_speed`/1024 of its
    /// local-memory speed (`Op::ComputeMem` on remote pages). The debt
    /// (kernel work) before it is scaled so that it still takes its own
    /// time.
    #[inline(always)]
    pub(super) fn start_segment_at(
        &mut self,
        c: usize,
        task: Option<TaskId>,
        work: Nanos,
        user: bool,
        mem_speed: u64,
    ) {
        let smt = if self.k.topo.threads_per_core() > 1 {
            self.k.costs.smt_speed_1024(self.busy_threads(c))
        } else {
            1024
        };
        let cpu = &mut self.cpus[c];
        let debt = if mem_speed == 1024 {
            cpu.debt
        } else {
            cpu.debt * mem_speed / 1024
        };
        cpu.seg.start = self.now;
        cpu.seg.debt = debt;
        cpu.seg.work = work + debt;
        cpu.debt = 0;
        cpu.seg.mem_speed = mem_speed;
        let speed = if mem_speed == 1024 {
            smt
        } else {
            (smt * mem_speed / 1024).max(1)
        };
        cpu.seg.speed = speed;
        cpu.seg.user = user;
        cpu.seg.spin = false;
        cpu.seg.task = task;
        if let Some(t) = task {
            self.note_next_hint(c, t);
        }
        self.arm_segment(c);
    }

    /// Note what `c`'s next event will probably touch (large machines
    /// only; see `Engine::next_hint`): the segment's task, the channel of
    /// the op it runs (whose effect the segment's end applies) and that of
    /// the op after it in the program (which the task starts then).
    #[inline]
    fn note_next_hint(&mut self, c: usize, t: TaskId) {
        if self.next_hint.is_empty() {
            return;
        }
        let task = &self.tasks[t.idx()];
        let chan_of = |op: Option<&Op>| match op {
            Some(Op::Write { chan, .. } | Op::Read { chan, .. }) => *chan,
            _ => ChanId(u32::MAX),
        };
        let chan = chan_of(Some(&task.op));
        let then = chan_of(task.spec.program.get(task.pc.pc as usize + 1));
        self.next_hint[c] = super::NextHint {
            task: t,
            chan,
            then,
        };
    }

    pub(super) fn preempt_segment(&mut self, c: usize) {
        // Stop user compute now; the rest of the op stays with the task.
        if self.numa.is_some() {
            // the op's loop reached its chunks up to now
            self.numa_sweep(c, super::numa::SweepTo::NowAndStop);
        }
        let done = self.settle_segment(c);
        if self.numa.is_some() {
            self.numa_release(c);
        }
        if let Some(t) = self.cpus[c].seg.task {
            let ti = t.idx();
            self.tasks[ti].op_left = self.tasks[ti].op_left.saturating_sub(done);
        }
        self.cpus[c].gen = self.cpus[c].gen.wrapping_add(1);
        self.events.clear_slot(c, Slot::Main);
        // The debt part not yet worked off goes back to the CPU, in ns (a
        // memory-slowed segment holds it scaled by its memory speed).
        let seg = &self.cpus[c].seg;
        self.cpus[c].debt += if seg.mem_speed == 1024 {
            seg.debt
        } else {
            (seg.debt * 1024).div_ceil(seg.mem_speed.max(1))
        };
        self.cpus[c].seg.debt = 0;
        self.cpus[c].seg.work = 0;
        self.continue_cpu(c);
    }
}
