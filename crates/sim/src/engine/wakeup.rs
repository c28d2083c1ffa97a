//! Wake-up: placement (select_task_rq through the [`Placement`] policy),
//! wake_up_new_task and try_to_wake_up, and the enqueue that ends both.

use super::{Engine, TaskState};
use crate::pelt::Pelt;
use crate::placement::{wf, WakeRequest};
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::trace::MigrateCause;
use crate::Nanos;

impl<'t, R: RunQueue> Engine<'t, R> {
    /// From this many tasks a wake-up prefetches the wakee's records (about
    /// 540 bytes a task: 2,048 tasks fill this host's 1 MiB L2).
    pub(super) const PREFETCH_TASKS_FROM: usize = 2048;

    /// select_task_rq (kernel/sched/core.c, [`crate::kernel::Kernel::select_task_rq`]):
    /// place `t` with the policy, charging the modelled cost of the
    /// decision to `waker_cpu`; returns the CPU and that cost.
    pub(super) fn select_task_rq(
        &mut self,
        t: TaskId,
        waker_cpu: usize,
        waker: Option<TaskId>,
        flags: u32,
    ) -> (usize, Nanos) {
        let req = WakeRequest {
            task: t.0,
            prev_cpu: self.tasks[t.idx()].cpu,
            wake_flags: flags,
            waker: waker.map(|w| w.0),
        };
        let t0 = self.cfg.phase_timing.then(std::time::Instant::now);
        let sel = self.k.select_task_rq(req, waker_cpu, self.now);
        self.phases.placement(t0);
        if self.traced() {
            self.trace_pick(Some(sel.stage), sel.probes, sel.cost);
        }
        self.cpus[waker_cpu].debt += sel.cost;
        if let Some(n) = self.task_counts(t) {
            n.stages[sel.stage as usize] += 1;
        }
        (sel.cpu, sel.cost)
    }

    pub(super) fn wake_up_new_task(&mut self, t: TaskId, parent_cpu: usize) {
        let ti = t.idx();
        self.tasks[ti].cpu = parent_cpu;
        // wake_up_new_task (4.16+): p->recent_used_cpu = task_cpu(p)
        self.k.tplace[ti].recent_used_cpu = parent_cpu;
        let (cpu, lead) = self.select_task_rq(t, parent_cpu, None, wf::FORK);
        self.start_new_task(t, cpu, parent_cpu, lead);
    }

    /// A task runnable at time 0 enqueued on `cpu` as it is (no fork
    /// placement): see `TaskSpec::start_cpu`.
    pub(super) fn enqueue_new_task_on(&mut self, t: TaskId, cpu: usize) {
        let ti = t.idx();
        self.tasks[ti].cpu = cpu;
        self.k.tplace[ti].recent_used_cpu = cpu;
        if self.traced() {
            // no placement ran
            self.trace_pick(None, 0, 0);
        }
        self.start_new_task(t, cpu, cpu, 0);
    }

    /// The rest of wake_up_new_task once the CPU is chosen.
    fn start_new_task(&mut self, t: TaskId, cpu: usize, parent_cpu: usize, lead: Nanos) {
        let ti = t.idx();
        if self.numa.is_some() {
            self.init_numa_balancing(t);
        }
        self.tasks[ti].cpu = cpu;
        self.tasks[ti].state = TaskState::Runnable;
        self.tasks[ti].pelt = Pelt::new(self.now);
        // init_entity_runnable_average: a new task starts with full load;
        // post_init_entity_util_avg gives it a share of the rq's spare util.
        let rq_util = self.k.cpu_state[cpu].util_avg;
        let rq_load = self.k.cpu_state[cpu].load_avg;
        let w = self.ents[ti].weight;
        let cap = (1024u64.saturating_sub(rq_util)) / 2;
        let util = if rq_util != 0 {
            (rq_util * w / (rq_load + 1)).min(cap)
        } else {
            cap
        };
        self.tasks[ti].pelt.load_avg = w;
        self.tasks[ti].pelt.util_avg = util;
        let div = self.tasks[ti].pelt.divider();
        self.tasks[ti].pelt.util_sum = util * div;
        self.tasks[ti].pelt.load_sum = div;
        self.tasks[ti].pelt.runnable_avg = util;
        self.tasks[ti].pelt.runnable_sum = util * div;
        self.counters.wakeups += 1;
        if cpu != parent_cpu {
            self.counters.migrations += 1;
        }
        if self.traced() {
            // sched_wakeup_new (wake_up_new_task; its __set_task_cpu
            // fires no sched_migrate_task)
            self.trace_wakeup(t, parent_cpu, cpu, parent_cpu, true, false);
        }
        self.ttwu_do_activate(t, cpu, parent_cpu, true, lead, false);
    }

    /// try_to_wake_up: place a blocked task and enqueue it. `from_irq`: the
    /// wake-up comes from interrupt context (a timer) on `waker_cpu`, not
    /// from the task running there.
    pub(super) fn try_to_wake_up(
        &mut self,
        t: TaskId,
        waker_cpu: usize,
        waker: Option<TaskId>,
        flags: u32,
        from_irq: bool,
    ) {
        let ti = t.idx();
        self.prefetch_wakee(ti);
        if !matches!(self.tasks[ti].state, TaskState::Blocked(_)) {
            return;
        }
        // The blocked time decays the signals (not runnable), then it wakes.
        self.update_task_pelt(ti, false, false);
        self.tasks[ti].state = TaskState::Runnable;
        self.tasks[ti].resumed = true;
        let prev = self.tasks[ti].cpu;
        if self.traced() {
            self.trace_waking(waker_cpu, t, prev);
        }
        if self.ents[ti].delayed {
            self.ttwu_runnable(t, prev, waker_cpu, from_irq);
            return;
        }
        // the waker writes the wakee's task_struct lines (pi_lock, state)
        let lines = self.k.ttwu_task_lines(ti, waker_cpu);
        self.cpus[waker_cpu].debt += lines;
        let (cpu, lead) = self.select_task_rq(t, waker_cpu, waker, flags | wf::TTWU);
        let lead = lead + lines;
        if self.vm.is_some() {
            self.vm_note_wakeup(t, cpu);
        }
        // the A/A check's dummy cost: waker CPU time that decides nothing
        self.cpus[waker_cpu].debt += self.k.costs.dummy_wakeup_ns;
        self.counters.wakeups += 1;
        if cpu != prev {
            self.counters.migrations += 1;
            if self.traced() {
                self.trace_migrate(waker_cpu, t, prev, cpu, MigrateCause::Wakeup);
            }
            self.set_task_cpu(t, cpu);
        }
        if self.traced() {
            // ttwu_do_activate: sched_wakeup follows the enqueue and the
            // preemption check, before any switch they cause
            self.trace_wakeup(t, waker_cpu, cpu, prev, false, false);
        }
        self.ttwu_do_activate(t, cpu, waker_cpu, cpu != prev, lead, from_irq);
    }

    /// Ask for the lines of task `ti`'s records that a wake-up reads, all
    /// at once: with tens of thousands of tasks they are beyond the private
    /// caches, and read one after another as the wake-up goes they would
    /// miss one after another (its state and CPU, its PELT signals, its
    /// entity, its placement fields). A hint only.
    #[inline(always)]
    pub(super) fn prefetch_wakee(&self, ti: usize) {
        if !self.many_tasks {
            return;
        }
        self.prefetch_wakee_lines(ti);
    }

    /// [`Self::prefetch_wakee`] without the test of the task count.
    #[inline(always)]
    pub(super) fn prefetch_wakee_lines(&self, ti: usize) {
        self.prefetch_task_lines(ti);
        crate::prefetch::prefetch(&self.ents[ti], 1);
    }

    /// Ask for the lines of task `ti`'s engine record and placement fields
    /// that a wake-up or a switch to it reads, its cfs_tasks links, and the
    /// line model's records of its task_struct and stack, which both write.
    #[inline(always)]
    pub(super) fn prefetch_task_lines(&self, ti: usize) {
        self.k.prefetch_task_line_records(ti);
        let task = &self.tasks[ti];
        crate::prefetch::prefetch(&task.state, 1);
        crate::prefetch::prefetch(&task.cpu, 1);
        crate::prefetch::prefetch(&task.pelt, 2);
        crate::prefetch::prefetch(&self.k.tplace[ti], 2);
        self.k.cfs_lists.prefetch(ti as u32);
    }

    /// After a pick on a run queue of thousands: ask for the state of the
    /// task the next pick there will likely take (`RunQueue::next_hint`),
    /// so that it is in the caches by then instead of missing as the pick
    /// reads its entity and the switch its task.
    #[inline(always)]
    pub(super) fn prefetch_next_pick(&self, c: usize) {
        if !self.many_tasks {
            return;
        }
        if let Some(h) = self.cpus[c].rq.next_hint() {
            let hi = h as usize;
            crate::prefetch::prefetch(&self.ents[hi], 1);
            self.prefetch_task_lines(hi);
        }
    }

    /// ttwu_runnable (kernel/sched/core.c, 6.12+): a delayed task is still
    /// queued on `cpu`, so it wakes there, with no placement and no
    /// migration (requeue_delayed_entity), and is checked against the
    /// running task unless it is the running task.
    fn ttwu_runnable(&mut self, t: TaskId, cpu: usize, waker_cpu: usize, from_irq: bool) {
        // the A/A check's dummy cost, as for every wake-up
        self.cpus[waker_cpu].debt += self.k.costs.dummy_wakeup_ns;
        // the waker writes the wakee's task_struct lines (pi_lock, state)
        let lines = self.k.ttwu_task_lines(t.idx(), waker_cpu);
        self.cpus[waker_cpu].debt += lines;
        self.counters.wakeups += 1;
        self.counters.wakeups_in_place += 1;
        self.update_rq_pelt(cpu);
        self.cpus[cpu]
            .rq
            .requeue_delayed(&mut self.ents, t.0, &self.cfg.eevdf);
        // enqueued again: back on cfs_tasks (block took it off)
        self.k.cfs_lists.push_front(cpu, t.0);
        self.sync_rq_state(cpu);
        self.note_nr_running(cpu);
        // the waker takes the task's run-queue lock
        let line = self.k.cpu_state[cpu].line;
        let c = self
            .k
            .lines
            .write(line, waker_cpu, self.k.topo, &self.k.costs);
        self.cpus[waker_cpu].debt += c;
        let lead = self.batch_lead + lines + c;
        if self.traced() {
            // no placement ran
            self.trace_pick(None, 0, 0);
            self.trace_wakeup(t, waker_cpu, cpu, cpu, false, true);
        }
        if self.vm.is_some() {
            self.vm_note_wakeup(t, cpu);
        }
        if self.cpus[cpu].rq.curr() != Some(t.0) {
            // check_preempt_wakeup_fair's update_curr may itself ask for a
            // pick (deadline passed, or protection over from 6.17); the
            // requeue did not charge curr first
            let now = self.now;
            let resched = self.cpus[cpu].rq.update_curr(&mut self.ents, now);
            self.wakeup_preempt(t, cpu, waker_cpu, lead, resched, from_irq);
        }
    }

    /// ttwu_do_activate (kernel/sched/core.c; also the tail of
    /// wake_up_new_task): enqueue `t` on `cpu` and
    /// kick or preempt the CPU. `lead` is the waker's modelled work before
    /// the IPI goes out (the placement scan, already charged to it);
    /// `attach`: the task's PELT signals join `cpu`'s (a new task, or one
    /// that `set_task_cpu` moved here).
    pub(super) fn ttwu_do_activate(
        &mut self,
        t: TaskId,
        cpu: usize,
        waker_cpu: usize,
        attach: bool,
        lead: Nanos,
        from_irq: bool,
    ) {
        let ti = t.idx();
        let now = self.now;
        // never ran and at its first op: a new task. `last_ran` first: it
        // shares a line with `cpu`, which the wake-up has read, while the
        // program counter's line is cold with tens of thousands of tasks
        let initial = self.tasks[ti].last_ran.is_none() && self.tasks[ti].pc.pc == 0;
        // ttwu_queue: a wake-up (not a new task) that ttwu_queue_cond
        // sends to the target's wake list leaves the enqueue to the
        // target; otherwise the waker locks the target's run queue
        let queued = !initial
            && self
                .k
                .ttwu_queue_cond(waker_cpu, cpu, self.k.cpu_state[cpu].nr_running);
        let deadline_resched = self.activate_task(t, cpu, attach, initial);
        // the waker's earlier wakes of a batch go out first
        let lead = lead + self.batch_lead;
        let c = if queued {
            self.k.queue_wake_list_lines(cpu, waker_cpu)
        } else {
            // The waker writes the target run queue (remote enqueue).
            let line = self.k.cpu_state[cpu].line;
            self.k
                .lines
                .write(line, waker_cpu, self.k.topo, &self.k.costs)
        };
        self.cpus[waker_cpu].debt += c;
        let lead = lead + c;
        // ttwu_do_activate: fold the idle period into avg_idle (wake-ups
        // only, not new tasks).
        let idle_stamp = self.k.cpu_state[cpu].idle_stamp;
        if idle_stamp != 0 && !initial {
            let jiffies = self.k.jiffies(now);
            self.k.idle_stats[cpu].ttwu_fold_idle(now.saturating_sub(idle_stamp), jiffies);
            self.k.cpu_state[cpu].idle_stamp = 0;
        }
        self.wakeup_preempt(t, cpu, waker_cpu, lead, deadline_resched, from_irq);
    }
}
