//! Ticks, __schedule and what a CPU does between segments: continue its
//! task, switch, or go idle (`idle`).

use super::{Engine, Mode, TaskState};
use crate::event::Event;
use crate::rq::RunQueue;
use crate::task::TaskId;

impl<'t, R: RunQueue> Engine<'t, R> {
    pub(super) fn arm_tick(&mut self, c: usize) {
        if self.cpus[c].tick.armed {
            return;
        }
        self.cpus[c].tick.armed = true;
        let off = self.cpus[c].tick.offset;
        let next = ((self.now.saturating_sub(off)) / self.k.tick_ns + 1) * self.k.tick_ns + off;
        self.events.push(next, Event::Tick { cpu: c as u32 });
    }

    pub(super) fn tick(&mut self, c: usize) {
        self.cpus[c].tick.armed = false;
        // tick_do_update_jiffies64: the jiffy's first tick writes jiffies
        // (charged to a busy CPU; an idle one's interrupt costs no task)
        let jiffies = self.k.jiffies(self.now);
        let cost = self.k.tick_jiffies_lines(c, jiffies);
        if self.cpus[c].mode == Mode::Busy {
            self.cpus[c].debt += cost;
        }
        if self.cpus[c].mode != Mode::Busy {
            // An idle CPU whose tick still runs balances as idle; with the
            // tick stopped (NO_HZ idle) nothing happens.
            if let Mode::Idle {
                tick_stopped: false,
                ..
            } = self.cpus[c].mode
            {
                if self.k.balancer.is_some() {
                    self.idle_tick(c);
                }
            }
            return;
        }
        let now = self.now;
        if let Some(cur) = self.cpus[c].rq.curr().map(TaskId) {
            // task_tick_fair -> entity_tick
            let resched = self.cpus[c]
                .rq
                .task_tick(&mut self.ents, now, &self.cfg.eevdf);
            self.update_task_pelt(cur.idx(), true, true);
            if resched {
                // update_deadline (EEVDF) or check_preempt_tick (CFS) ->
                // resched_curr, from the tick interrupt
                self.resched_curr(c, c, 0, true);
            }
            if self.numa.is_some() {
                // task_tick_fair -> task_tick_numa
                self.task_tick_numa(c, cur);
            }
        }
        self.update_rq_pelt(c);
        if self.k.balancer.is_some() {
            let idle = self.cpus[c].seg.task.is_none() && self.cpus[c].rq.nr_running() == 0;
            self.balance_tick(c, idle);
        }
        self.arm_tick(c);
    }

    /// A CPU's segment ended: apply the op it ran, then go on.
    ///
    /// An event's common path (this, `apply_op`, `continue_cpu`, `start_op`,
    /// `start_segment_at`, `arm_segment`, `EventQueue::set_slot` and the
    /// channel calls) is inlined into the event loop, `#[inline(always)]`
    /// each, with the test for pending balance work (`run_pending_balance`)
    /// inline and the work out of line: the calls' register saves took
    /// `hackbench -p -T -g 10` at 24 CPUs from 1,127 to 1,038 instructions
    /// per event and 10.8 to 11.4 M events/s (docs/performance.md).
    #[inline(always)]
    pub(super) fn segment_done(&mut self, c: usize) {
        self.note_user_time(c);
        if self.numa.is_some() {
            // the op is done: its loop reached the rest of its chunks
            self.numa_sweep(c, super::numa::SweepTo::End);
            self.numa_release(c);
        }
        // one borrow of the segment: each `self.cpus[c]` after a store
        // would load and test the vector's bounds again
        let seg = &mut self.cpus[c].seg;
        let compute = if seg.user && !seg.spin {
            seg.work - seg.debt
        } else {
            0
        };
        seg.work = 0;
        seg.debt = 0;
        let task = seg.task;
        self.counters.compute_work_ns += compute;
        if let Some(t) = task {
            self.apply_op(c, t);
        }
        self.continue_cpu(c);
    }

    /// Decide what `c` does next: keep running its task's next op, switch,
    /// or go idle.
    #[inline(always)]
    pub(super) fn continue_cpu(&mut self, c: usize) {
        self.run_pending_balance(c);
        loop {
            let cpu = &self.cpus[c];
            let (curr, need_resched) = (cpu.rq.curr().map(TaskId), cpu.need_resched);
            let runnable = curr.is_some_and(|t| self.tasks[t.idx()].state == TaskState::Runnable);
            let t = match curr {
                Some(t) if runnable && !need_resched => t,
                _ => {
                    if !self.schedule(c) {
                        return; // went idle (or is working off debt first)
                    }
                    TaskId(self.cpus[c].rq.curr().expect("scheduled task"))
                }
            };
            if self.start_op(c, t) {
                return;
            }
        }
    }

    /// __schedule: pick the next task on `c`. Returns false if the CPU went
    /// idle (or runs kernel debt before going idle).
    pub(super) fn schedule(&mut self, c: usize) -> bool {
        let now = self.now;
        self.cpus[c].need_resched = false;
        let prev = self.cpus[c].rq.curr().map(TaskId);
        if let Some(p) = prev {
            // clear_tsk_need_resched(prev): its thread_info line comes back
            // if another CPU set the flag
            self.cpus[c].debt += self.k.clear_need_resched_lines(p.idx(), c);
        }
        // prev ran until now (a blocked or exited prev was updated then)
        if let Some(p) = prev.filter(|&p| self.tasks[p.idx()].state == TaskState::Runnable) {
            self.update_task_pelt(p.idx(), true, true);
        }
        // the pick may dequeue delayed tasks (their load leaves the rq):
        // the rq's signals are brought to now first, as dequeue_entity does
        if self.cpus[c].rq.nr_delayed() > 0 {
            self.update_rq_pelt(c);
        }
        let next = self.cpus[c]
            .rq
            .pick_next_task(&mut self.ents, now, &self.cfg.eevdf)
            .map(TaskId);
        // next waited runnable until now
        if let Some(n) = next.filter(|&n| Some(n) != prev) {
            if self.many_tasks {
                // the switch reads its records one after another below
                self.prefetch_task_lines(n.idx());
            }
            self.update_task_pelt(n.idx(), true, false);
        }
        self.cpus[c]
            .rq
            .set_next(&mut self.ents, next.map(|n| n.0), now);
        self.prefetch_next_pick(c);
        self.update_rq_pelt(c);
        match next {
            None => {
                if self.traced() {
                    // to the idle task (a newidle pull then switches from
                    // it at the same instant; the sink drops a switch from
                    // idle to idle)
                    self.trace_switch(c, prev, crate::trace::Runner::Idle);
                }
                if self.balance_newidle(c) {
                    // pulled work: pick again (its cost is owed first)
                    return self.schedule(c);
                }
                if self.cpus[c].debt > 0 {
                    // finish kernel work, then come back here
                    self.start_segment(c, None, 0, false);
                    return false;
                }
                self.enter_idle(c);
                false
            }
            Some(n) => {
                let ni = n.idx();
                let was_idle = self.k.cpu_state[c].curr_is_idle;
                self.k.cpu_state[c].curr_is_idle = false;
                self.k.lines.set_running(c, true);
                self.cpus[c].bal.newidle_done = false;
                // set_next_task_fair moves it to the head of cfs_tasks
                self.k.cfs_lists.move_to_front(c, n.0);
                if prev != Some(n) {
                    if self.traced() {
                        self.trace_switch(c, prev, crate::trace::Runner::Task(n));
                    }
                    self.counters.context_switches += 1;
                    self.cpus[c].time.switches += 1;
                    let mm = self.tasks[ni].spec.mm;
                    let mm_changed = self.cpus[c].last_mm != Some(mm);
                    self.cpus[c].last_mm = Some(mm);
                    let seq = self.cpus[c].time.switches;
                    let last_ran = self.tasks[ni].last_ran;
                    let mut cost = self.k.costs.ctx_switch_ns
                        + self.k.costs.switch_in_extra(
                            last_ran,
                            c,
                            seq,
                            self.tasks[ni].ran_at_switch,
                            mm_changed,
                        );
                    // migrated: its data lines come from the old CPU at
                    // their distance
                    if let Some(from) = last_ran.filter(|&f| f != c) {
                        let d = self.k.topo.distance(from, c);
                        cost += self.tasks[ni].spec.footprint_lines as u64 * self.k.costs.c2c(d);
                    }
                    // its task_struct and kernel stack lines
                    cost += self.k.switch_in_task_lines(ni, c);
                    // sched_ttwu_pending: the wake list a remote waker
                    // filled; current_clr_polling on the way out of idle
                    cost += self.k.flush_wake_list_lines(c);
                    if was_idle {
                        cost += self.k.idle_thread_info_lines(c, c);
                    }
                    self.tasks[ni].ran_at_switch = seq;
                    self.cpus[c].debt += cost;
                    // the CPU's own run-queue line is written by the switch
                    let line = self.k.cpu_state[c].line;
                    self.cpus[c].debt += self.k.lines.write(line, c, self.k.topo, &self.k.costs);
                }
                self.tasks[ni].last_ran = Some(c);
                if self.vm.is_some() {
                    self.vm_note_run(n);
                }
                if self.cpus[c].mode != Mode::Busy {
                    self.set_mode(c, Mode::Busy);
                }
                self.arm_tick(c);
                true
            }
        }
    }
}
