//! Engine primitives under the kernel's names (kernel/sched/core.c): moving a
//! task on and off a run queue, changing its CPU, and making a CPU
//! reschedule. The wake-up path is built from them, and the load balancer
//! (`engine/balance.rs`) migrates queued tasks with the same ones.

use super::{Engine, Mode};
use crate::event::{Event, Slot};
use crate::kernel::FairCpu;
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::Nanos;

impl<'t, R: RunQueue> Engine<'t, R> {
    /// activate_task (kernel/sched/core.c): put `t` on `cpu`'s run queue.
    ///
    /// The rq's PELT signals are brought to now first (update_load_avg in
    /// enqueue_entity); with `attach` the task's own signals are added to
    /// them, for a task that arrives from another CPU or is new
    /// (ENQUEUE_MIGRATED / post_init_entity_util_avg: attach_entity_load_avg).
    /// `initial` is ENQUEUE_INITIAL, a new task's first enqueue (under
    /// PLACE_DEADLINE_INITIAL place_entity gives it half a slice to its
    /// first deadline). Ends with the placement view of `cpu` in sync.
    ///
    /// Returns true when update_curr inside the enqueue found the current
    /// task past its deadline (update_deadline -> resched_curr); the caller
    /// decides how the resched reaches the CPU.
    pub(super) fn activate_task(
        &mut self,
        t: TaskId,
        cpu: usize,
        attach: bool,
        initial: bool,
    ) -> bool {
        let ti = t.idx();
        self.update_rq_pelt(cpu);
        if attach {
            let se = self.tasks[ti].pelt;
            self.cpus[cpu].pelt.attach(&se, self.ents[ti].weight);
        }
        // update_curr inside enqueue may find curr past its deadline
        // (update_deadline -> resched_curr)
        let deadline_resched =
            self.cpus[cpu]
                .rq
                .enqueue(&mut self.ents, t.0, self.now, initial, &self.cfg.eevdf);
        // account_entity_enqueue puts it at the head of cfs_tasks
        self.k.cfs_lists.push_front(cpu, t.0);
        self.sync_rq_state(cpu);
        self.note_nr_running(cpu);
        deadline_resched
    }

    /// After `t` was enqueued on `cpu` by `waker_cpu` (whose work so far is
    /// `lead`): kick an idle CPU, or check whether `t` preempts the running
    /// task (wakeup_preempt, check_preempt_curr before 6.6) and resched it.
    /// `deadline`: the enqueue already found curr past its deadline.
    pub(super) fn wakeup_preempt(
        &mut self,
        t: TaskId,
        cpu: usize,
        waker_cpu: usize,
        lead: Nanos,
        deadline: bool,
        from_irq: bool,
    ) {
        match self.cpus[cpu].mode {
            Mode::Idle { .. } => self.kick_idle_cpu(cpu, waker_cpu, lead),
            Mode::LeavingIdle => {}
            Mode::Busy => {
                // check_preempt_wakeup returns early when a resched is
                // already pending (no second check, no second IPI).
                if self.cpus[cpu].need_resched {
                    return;
                }
                let now = self.now;
                let rq = &mut self.cpus[cpu].rq;
                let preempt = deadline
                    || rq.curr().is_none()
                    || rq.check_preempt_wakeup(&mut self.ents, t.0, now, &self.cfg.eevdf);
                if !preempt {
                    return;
                }
                self.counters.preemptions += 1;
                self.resched_curr(cpu, waker_cpu, lead, from_irq);
            }
        }
    }

    /// deactivate_task (kernel/sched/core.c): take `t` off `cpu`'s run queue
    /// for good, with its PELT signals detached from the rq's (the kernel
    /// detaches a migrating task's load on its way off the old rq, and
    /// removes an exiting one's in task_dead_fair: remove_entity_load_avg),
    /// and the placement view in sync.
    ///
    /// A task that goes to sleep is dequeued by `block` instead: its signals
    /// stay on the rq as blocked load until it wakes elsewhere
    /// (`set_task_cpu` removes them then) or exits. A task taken off with
    /// deactivate_task has nothing left on `cpu`, so moving it must not
    /// detach it again there.
    pub(super) fn deactivate_task(&mut self, t: TaskId, cpu: usize) {
        let ti = t.idx();
        self.update_rq_pelt(cpu);
        self.cpus[cpu]
            .rq
            .dequeue(&mut self.ents, t.0, self.now, &self.cfg.eevdf);
        self.k.cfs_lists.unlink(t.0);
        let se = self.tasks[ti].pelt;
        self.cpus[cpu].pelt.detach(&se, self.ents[ti].weight);
        self.sync_rq_state(cpu);
    }

    /// set_task_cpu (kernel/sched/core.c): make `new_cpu` the task's CPU
    /// (task_cpu()). When it changes, the old CPU runs
    /// [`crate::kernel::FairCpu::migrate_task_rq_fair`] (the signals a
    /// sleeping task left there are removed from that rq) and its placement
    /// view is synced; `activate_task(.., attach)` adds them on the new CPU.
    ///
    /// The migration itself costs nothing here: the cache refill of the
    /// task's working set is charged to the new CPU at its next context
    /// switch to the task (`schedule`, from `last_ran`), and the write of the
    /// new CPU's run-queue line to whoever enqueues it (`activate`).
    pub(super) fn set_task_cpu(&mut self, t: TaskId, new_cpu: usize) {
        let ti = t.idx();
        let prev = self.tasks[ti].cpu;
        if prev != new_cpu {
            if self.numa.is_some() {
                self.numa_update_scan_period(t, prev, new_cpu);
            }
            if let Some(n) = self.task_counts(t) {
                n.migrations += 1;
            }
            let se = self.tasks[ti].pelt;
            self.cpus[prev].migrate_task_rq_fair(&mut self.ents, t.0, &se, self.now);
            self.sync_rq_state(prev);
        }
        self.tasks[ti].cpu = new_cpu;
    }

    /// resched_curr (kernel/sched/core.c): make `cpu` reschedule, asked from
    /// `waker_cpu` after `lead` ns of its work. TIF_NEED_RESCHED is set at
    /// once, under the rq lock; the IPI (smp_send_reschedule) only makes a
    /// remote CPU notice it sooner, preempting user code when it lands
    /// (`Event::Resched`). On the CPU itself, a request `from_irq` (timer
    /// interrupt, tick) preempts user code on interrupt exit; otherwise the
    /// flag is honoured at the next syscall return or segment end.
    pub(super) fn resched_curr(
        &mut self,
        cpu: usize,
        waker_cpu: usize,
        mut lead: Nanos,
        from_irq: bool,
    ) {
        self.cpus[cpu].need_resched = true;
        if let Some(curr) = self.cpus[cpu].rq.curr() {
            // the flag is a bit of the running task's thread_info, set by
            // an atomic OR from whichever CPU asks (set_tsk_need_resched,
            // set_nr_and_not_polling): from another CPU the line comes
            // from the target, before the IPI is sent
            let c = self.k.resched_curr_lines(curr as usize, waker_cpu);
            self.cpus[waker_cpu].debt += c;
            lead += c;
        }
        if cpu != waker_cpu {
            self.events.push(
                self.now + lead + self.k.costs.ipi_ns,
                Event::Resched { cpu: cpu as u32 },
            );
        } else if from_irq && self.cpus[cpu].seg.user {
            // a timer interrupt preempts user code on interrupt exit
            self.preempt_segment(cpu);
        }
    }

    /// Wake an idle `cpu` that was just given work from `waker_cpu` (after
    /// `lead` ns of the waker's work): the resched IPI (ttwu_queue /
    /// smp_send_reschedule; none when the wake happens on this CPU, e.g. its
    /// own timer) plus the idle state's exit latency, after which the CPU
    /// runs (`Event::IdleExit`). Leaving a nohz idle state marks the CPU busy
    /// again (set_cpu_sd_state_busy). Does nothing to a CPU that is not idle
    /// (one already waking needs no second kick).
    pub(super) fn kick_idle_cpu(&mut self, cpu: usize, waker_cpu: usize, mut lead: Nanos) {
        let Mode::Idle { since, state, .. } = self.cpus[cpu].mode else {
            return;
        };
        let now = self.now;
        // Kick: IPI (unless the wake happens on this CPU, e.g. its own
        // timer) plus the idle state's exit latency.
        let mut exit = match self.k.costs.idle_states.get(state) {
            Some(s) if self.k.costs.charge_idle_exit => s.exit_latency_ns,
            _ => 0,
        };
        // A polling CPU (TIF_POLLING_NRFLAG) sees need_resched without an
        // IPI (set_nr_if_polling in ttwu_queue_wakelist / resched_curr).
        let polling = state == super::POLL_STATE
            || self
                .k
                .costs
                .idle_states
                .get(state)
                .is_some_and(|s| s.polls());
        let mut ipi = if waker_cpu != cpu && !polling {
            self.k.costs.ipi_ns
        } else {
            0
        };
        if waker_cpu != cpu {
            // set_nr_if_polling / resched_curr: the waker sets
            // TIF_NEED_RESCHED in the idle task's flags, a line the idle
            // CPU wrote at idle entry
            let c = self.k.idle_thread_info_lines(cpu, waker_cpu);
            self.cpus[waker_cpu].debt += c;
            lead += c;
        }
        if self.vm.is_some() {
            self.vm_note_kick(cpu, waker_cpu);
            self.vm_kick_halted(cpu, waker_cpu, now + lead);
            if let Some(left) = self.vm_entry_left(cpu, now) {
                // a guest CPU still in its idle entry path has not halted:
                // it sees need_resched at its next check, without an IPI
                // or an exit from any state
                (ipi, exit) = (0, 0);
                lead = lead.max(left);
            }
        }
        self.counters.polled_wakeups += polling as u64;
        if let Some(h) = self.cpus[cpu].idle.halt_since.take() {
            if self.cfg.cpuidle.driver == crate::cpuidle::Driver::Haltpoll {
                self.haltpoll_reflect(cpu, now - h);
            }
        }
        if self.cpus[cpu].bal.idle_tick && self.cpus[cpu].idle.sleep_ns > self.k.tick_ns {
            // a tick woke an idle CPU whose next timer was further: menu
            // counts a long sleep (9/10 of MAX_INTERESTING), teo an
            // artificial wake-up (long), so the next idle entry may stop
            // the tick
            let long = match self.cfg.cpuidle.governor {
                crate::cpuidle::Governor::Teo => super::idle::LONG_IDLE_NS,
                _ => super::idle::MENU_TICK_WAKEUP_NS,
            };
            self.record_idle(cpu, long);
        } else {
            self.record_idle(cpu, now - since);
        }
        self.account(cpu, now);
        self.cpus[cpu].mode = Mode::LeavingIdle;
        self.note_idle_wait(cpu);
        self.cpus[cpu].gen = self.cpus[cpu].gen.wrapping_add(1);
        self.k.cpu_state[cpu].idle_exit_latency = 0;
        if self.k.balancer.is_none() {
            // Without a balancer, nr_busy_cpus is kept at idle entry and
            // exit; with one, nohz_balance_exit_idle runs at the first busy
            // tick (nohz_balancer_kick), as in the kernel.
            self.set_cpu_sd_state_busy(cpu);
        }
        let gen = self.cpus[cpu].gen;
        // IPI delivery and idle exit vary from one wake-up to the next
        // (the measured spread in costs.rs); the seed decides the draws
        let wake = if ipi + exit > 0 {
            let u = self.jitter.next_u64();
            self.k.costs.spread_wake_latency(ipi + exit, u)
        } else {
            0
        };
        self.events.set_slot(
            cpu,
            Slot::Main,
            now + lead + wake,
            Event::IdleExit {
                cpu: cpu as u32,
                gen,
            },
        );
    }
}
