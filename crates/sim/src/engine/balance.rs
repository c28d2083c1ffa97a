//! The load balancer's hooks and the migrations it asks for.
//!
//! The kernel balances at four moments, each a hook of [`Balancer`]:
//! a scheduler tick (`sched_balance_trigger` and its softirq; an idle CPU
//! whose tick still runs balances as idle), a CPU about to go idle
//! (`sched_balance_newidle`, from `__schedule`), the nohz idle-balance IPI
//! (`kick_ilb` -> `nohz_csd_func`) and the stopper of an active balance
//! (`active_load_balance_cpu_stop`). The balancer sees a [`BalanceEnv`]
//! whose reads and writes of other CPUs' lines are charged to the CPU doing
//! the work; that cost becomes the CPU's busy time (its debt) before it
//! runs anything else. The moves it returns are applied here with the
//! engine primitives (`deactivate_task`, then `activate_task` on the
//! destination and the wake-up preemption check there, as
//! `attach_task` -> `wakeup_preempt` does).

use super::{CpuBalance, Engine, Mode, TaskState};
use crate::balance::{BalanceEnv, Balancer, Requests};
use crate::event::Event;
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::Nanos;

impl<R: RunQueue> crate::kernel::FairCpu for super::Cpu<R> {
    type Rq = R;
    fn rq(&self) -> &R {
        &self.rq
    }
    fn rq_pelt(&mut self) -> &mut crate::pelt::Pelt {
        &mut self.pelt
    }
    fn update_cfs_rq_load_avg(&mut self, now: Nanos) {
        self.update_pelt(now);
    }
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Install a load balancer ([`crate::kernel::Kernel::set_balancer`]);
    /// each CPU, idle with its tick stopped, then enters nohz idle.
    pub fn set_balancer(&mut self, b: Box<dyn Balancer>) {
        self.k.set_balancer(b);
        for c in 0..self.cpus.len() {
            // boot work: not charged
            let (req, _) = self.balance_call(c, |b, env| b.nohz_enter_idle(env, c));
            self.k.recycle(req);
        }
    }

    /// Whether a balancer is installed.
    pub fn has_balancer(&self) -> bool {
        self.k.balancer.is_some()
    }

    /// Time some allowed CPU sat idle while another had a task waiting, ns.
    pub fn idle_while_work_waits_ns(&self) -> Nanos {
        let w = &self.idle_wait_clock;
        w.total
            + if w.idle_cpus > 0 && w.waiting_cpus > 0 {
                self.now - w.since
            } else {
                0
            }
    }

    /// Run a balancer hook for `this_cpu` with a fresh view
    /// ([`crate::kernel::Kernel::balance_call`]); returns its requests and
    /// the modelled cost (not yet charged).
    pub(super) fn balance_call(
        &mut self,
        this_cpu: usize,
        f: impl FnOnce(&mut dyn Balancer, &mut BalanceEnv),
    ) -> (Requests, Nanos) {
        if self.k.balancer.is_none() {
            return (Requests::default(), 0);
        }
        let t0 = self.cfg.phase_timing.then(std::time::Instant::now);
        let numa = self.numa.as_deref().and_then(|s| s.locality());
        let (req, cost, reads) =
            self.k
                .balance_call(this_cpu, self.now, &mut self.cpus, &self.ents, numa, f);
        self.phases.balance(t0, reads);
        if self.traced() {
            self.trace_nr_idle_scan();
        }
        (req, cost)
    }

    /// Charge `cost` to `c` and apply the balancer's requests, which `c`
    /// issued after that much work.
    fn apply_balance(&mut self, c: usize, req: Requests, cost: Nanos) {
        if self.traced()
            && (!req.moves.is_empty() || req.kick_ilb.is_some() || !req.active.is_empty())
        {
            self.trace_balance(c, req.moves.len(), cost);
        }
        self.cpus[c].debt += cost;
        self.k.bstats.cost_ns += cost;
        for &(src, t) in &req.rotated {
            // detach_tasks' list_move to the head of the source's list
            self.k.cfs_lists.move_to_front(src, t);
        }
        for m in &req.moves {
            self.migrate_queued_task(TaskId(m.task), m.src, m.dst, c, cost);
        }
        if let Some(ilb) = req.kick_ilb {
            if self.vm.is_some() {
                self.vm_note_kick(ilb, c);
            }
            self.events.push(
                self.now + cost + self.k.costs.ipi_ns,
                Event::IlbKick { cpu: ilb as u32 },
            );
        }
        for &(src, dst) in &req.active {
            // cpu_stop_queue_work wakes the source's stopper thread
            self.events.push(
                self.now + cost + self.k.costs.ipi_ns,
                Event::Stopper {
                    src: src as u32,
                    dst: dst as u32,
                },
            );
        }
        // the view's copies of the run queues are re-synced
        for m in &req.moves {
            self.sync_rq_state(m.src);
            self.sync_rq_state(m.dst);
        }
        self.k.recycle(req);
    }

    /// detach_task + attach_task: move queued `t` from `src` to `dst` for
    /// `by` (whose work so far is `lead`).
    pub(super) fn migrate_queued_task(
        &mut self,
        t: TaskId,
        src: usize,
        dst: usize,
        by: usize,
        lead: Nanos,
    ) {
        let ti = t.idx();
        if self.cfg.check {
            let queued = self.tasks[ti].state == TaskState::Runnable
                && self.tasks[ti].cpu == src
                && self.cpus[src].rq.is_queued(t.0);
            if !queued || self.cpus[src].rq.curr() == Some(t.0) {
                self.violation.get_or_insert(super::InvariantError {
                    time: self.now,
                    what: format!(
                        "balancer moved task {t} which is not queued (idle) on CPU {src} (state {:?}, cpu {}, curr {:?}, queued {:?})",
                        self.tasks[ti].state,
                        self.tasks[ti].cpu,
                        self.cpus[src].rq.curr(),
                        self.cpus[src].rq.queued()
                    ),
                });
                return;
            }
            if !self.k.tplace[ti].cpus_allowed.test(dst) {
                self.violation.get_or_insert(super::InvariantError {
                    time: self.now,
                    what: format!("balancer moved task {t} to CPU {dst} outside its affinity"),
                });
                return;
            }
        }
        // a balancer move is a placement decision too
        self.k.pstats.digest(t.0, dst);
        // it waited runnable until now
        self.update_task_pelt(ti, true, false);
        if self.traced() {
            self.trace_migrate(by, t, src, dst, crate::trace::MigrateCause::Balance);
        }
        self.deactivate_task(t, src);
        if let Some(n) = self.task_counts(t) {
            n.migrations += 1;
        }
        self.tasks[ti].cpu = dst;
        if self.numa.is_some() {
            self.numa_update_scan_period(t, src, dst);
        }
        let deadline_resched = self.activate_task(t, dst, true, false);
        self.wakeup_preempt(t, dst, by, lead, deadline_resched, false);
        if self.cfg.check {
            let on_dst = self.cpus[dst].rq.is_queued(t.0);
            let on_src = self.cpus[src].rq.is_queued(t.0);
            if !on_dst || on_src {
                self.violation.get_or_insert(super::InvariantError {
                    time: self.now,
                    what: format!("migrated task {t} is not on exactly one run queue"),
                });
            }
        }
    }

    /// add_nr_running: a second runnable task on `cpu` sets rd->overload
    /// (one read of the root line, a write when it was clear).
    pub(super) fn note_nr_running(&mut self, cpu: usize) {
        if self.k.balancer.is_none() || self.cpus[cpu].rq.nr_running() != 2 {
            return;
        }
        let (req, cost) = self.balance_call(cpu, |b, env| b.rq_overloaded(env));
        self.k.recycle(req);
        self.cpus[cpu].debt += cost;
    }

    /// The scheduler tick of `c` with a balancer: `idle` when it hit the
    /// idle task.
    pub(super) fn balance_tick(&mut self, c: usize, idle: bool) {
        let (req, cost) = self.balance_call(c, |b, env| b.tick(env, c, idle));
        self.apply_balance(c, req, cost);
    }

    /// __schedule found nothing to run on `c`: newidle balance, once per
    /// idle entry. Returns true if tasks were pulled.
    pub(super) fn balance_newidle(&mut self, c: usize) -> bool {
        if self.k.balancer.is_none() || self.cpus[c].bal.newidle_done {
            return false;
        }
        self.cpus[c].bal.newidle_done = true;
        let (req, cost) = self.balance_call(c, |b, env| {
            b.newidle(env, c);
        });
        let pulled = !req.moves.is_empty();
        self.apply_balance(c, req, cost);
        pulled
    }

    /// Balancing work `c` owes before it schedules: an idle tick, the nohz
    /// idle balance, the stopper. Returns true when it did any (the CPU
    /// then goes back to idle without a newidle pass, as the idle loop
    /// does).
    #[inline(always)]
    pub(super) fn run_pending_balance(&mut self, c: usize) -> bool {
        // the test on every event inline (`take_pending`), the work out of
        // line
        let Some(p) = self.cpus[c].bal.take_pending() else {
            return false;
        };
        self.run_pending_balance_work(c, p)
    }

    /// [`Self::run_pending_balance`] with the requests `p` taken.
    #[inline(never)]
    fn run_pending_balance_work(&mut self, c: usize, p: CpuBalance) -> bool {
        if p.numa_stop {
            self.run_numa_stopper(c);
        }
        if p.idle_tick {
            let idle = self.cpus[c].rq.nr_running() == 0;
            self.balance_tick(c, idle);
        }
        if p.ilb {
            let (req, cost) = self.balance_call(c, |b, env| b.nohz_idle_balance(env, c));
            self.apply_balance(c, req, cost);
        }
        if let Some(dst) = p.stopper {
            self.run_stopper(c, dst as usize);
        }
        // after an idle tick or the nohz balance the idle loop goes on
        // without a newidle pass; after the stopper, __schedule runs one
        if p.idle_tick || p.ilb {
            self.cpus[c].bal.newidle_done = true;
        }
        self.cpus[c].need_resched = true;
        true
    }

    /// The tick of an idle CPU whose tick still runs: it leaves its idle
    /// state (exit latency, no IPI) to run the softirq.
    pub(super) fn idle_tick(&mut self, c: usize) {
        self.cpus[c].bal.request_idle_tick();
        self.kick_idle_cpu(c, c, 0);
    }

    /// The nohz kick IPI reaches `cpu`: an idle CPU wakes to balance for the
    /// tickless ones; a busy one drops the kick.
    pub(super) fn ilb_kick_arrives(&mut self, cpu: usize) {
        match self.cpus[cpu].mode {
            Mode::Idle { .. } => {
                self.cpus[cpu].bal.request_ilb();
                // the IPI was sent earlier; only the exit latency is left
                self.kick_idle_cpu(cpu, cpu, 0);
            }
            Mode::LeavingIdle if self.k.cpu_state[cpu].nr_running == 0 => {
                self.cpus[cpu].bal.request_ilb();
            }
            _ => {
                let (req, cost) = self.balance_call(cpu, |b, env| b.nohz_idle_balance(env, cpu));
                self.apply_balance(cpu, req, cost);
            }
        }
    }

    /// The stopper of `src` is woken: it preempts whatever runs there.
    pub(super) fn stopper_wakes(&mut self, src: usize, dst: usize) {
        self.cpus[src].bal.request_stopper(dst as u32);
        match self.cpus[src].mode {
            Mode::Idle { .. } => self.kick_idle_cpu(src, src, 0),
            Mode::LeavingIdle => {}
            Mode::Busy => {
                self.cpus[src].need_resched = true;
                if self.cpus[src].seg.user {
                    self.preempt_segment(src);
                }
                // a syscall segment runs to its end first
            }
        }
    }

    /// active_load_balance_cpu_stop on `src`: the running task goes back to
    /// the queue (the stopper preempted it), then the balancer picks the
    /// task to push to `dst`.
    fn run_stopper(&mut self, src: usize, dst: usize) {
        if let Some(cur) = self.cpus[src].rq.curr().map(TaskId) {
            if self.tasks[cur.idx()].state == TaskState::Runnable {
                self.update_task_pelt(cur.idx(), true, true);
            }
            if self.traced() {
                self.trace_switch(src, Some(cur), crate::trace::Runner::Stopper);
            }
            self.cpus[src].rq.set_next(&mut self.ents, None, self.now);
            self.update_rq_pelt(src);
        }
        // switching to the stopper thread and back
        self.cpus[src].debt += self.k.costs.ctx_switch_ns;
        let (req, cost) = self.balance_call(src, |b, env| b.active_stop(env, src, dst));
        self.apply_balance(src, req, cost);
    }

    /// Keep the idle-while-work-waits clock: `c` is idle / has a task
    /// waiting.
    pub(super) fn note_idle_wait(&mut self, c: usize) {
        if !self.cfg.allowed.test(c) {
            return;
        }
        let idle = matches!(self.cpus[c].mode, Mode::Idle { .. });
        let waiting = self.cpus[c].rq.nr_running() >= 2;
        let b = self.cpus[c].bal;
        if b.idle == idle && b.waiting == waiting {
            return;
        }
        let w = &mut self.idle_wait_clock;
        if w.idle_cpus > 0 && w.waiting_cpus > 0 {
            w.total += self.now - w.since;
        }
        w.since = self.now;
        if b.idle != idle {
            if idle {
                w.idle_cpus += 1;
            } else {
                w.idle_cpus -= 1;
            }
        }
        if b.waiting != waiting {
            if waiting {
                w.waiting_cpus += 1;
            } else {
                w.waiting_cpus -= 1;
            }
        }
        if w.idle_cpus == 0 && w.all_busy_at.is_none() {
            w.all_busy_at = Some(self.now);
        }
        self.cpus[c].bal.idle = idle;
        self.cpus[c].bal.waiting = waiting;
    }

    /// When every allowed CPU was first out of idle at once (None: never).
    pub fn first_all_busy_ns(&self) -> Option<Nanos> {
        self.idle_wait_clock.all_busy_at
    }
}
