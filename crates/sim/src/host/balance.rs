//! The host's load balancer: the simulator's Linux balancer
//! ([`crate::balance::linux::LinuxBalancer`], the host kernel profile's)
//! driven the way `engine/balance.rs` drives it for a bare-metal machine:
//!
//! - from the host tick of a CPU running a thread (sched_tick ->
//!   sched_balance_trigger: periodic balancing at each domain's interval,
//!   and the nohz balancer kick);
//! - when a host CPU finds nothing to run (sched_balance_newidle, from
//!   __schedule);
//! - for tickless idle host CPUs: an idle host CPU stops its tick
//!   (nohz_balance_enter_idle) and a kicked one balances for all of them
//!   (the kick IPI -> nohz_csd_func -> _nohz_idle_balance);
//! - the stopper of an active balance (active_load_balance_cpu_stop),
//!   which pre-empts the thread running on the busiest CPU.
//!
//! Its requests are applied as the engine applies them: a queued thread is
//! detached from its run queue and attached to the destination's (PELT
//! signals with it), which it may pre-empt or wake. Moving a vCPU thread
//! changes only the host CPU it runs on; its guest CPU keeps its identity.
//!
//! Costs: a pass's modelled cost (its run-queue and shared-line accesses
//! through the host's line table) is the lead of what it asked for: a
//! moved thread starts, an IPI leaves, that much later. It is not taken
//! from the thread running on the balancing CPU (the host tick's own VM
//! exit is not modelled either); the root domain's overload flag and the
//! nohz bookkeeping at idle entry are not charged, as in the engine.

use super::sched::{GuestCpus, Host, HostCpu, HostEvent, ThreadState};
use crate::balance::{BalanceEnv, Balancer, Requests};
use crate::rq::RunQueue;
use crate::Nanos;

impl crate::kernel::FairCpu for HostCpu {
    type Rq = crate::eevdf::CfsRq;
    fn rq(&self) -> &Self::Rq {
        &self.rq
    }
    fn rq_pelt(&mut self) -> &mut crate::pelt::Pelt {
        &mut self.pelt
    }
    /// A host CPU runs whenever it has a current thread.
    fn update_cfs_rq_load_avg(&mut self, now: Nanos) {
        self.pelt.update(
            now,
            self.rq.load_weight(),
            self.rq.nr_running() as u64,
            self.rq.curr().is_some(),
            1,
        );
    }
}

impl Host<'_> {
    /// Run a balancer hook for `this_cpu` with a fresh view of the host
    /// ([`crate::kernel::Kernel::balance_call`]); returns its requests and
    /// modelled cost.
    fn balance_call(
        &mut self,
        this_cpu: usize,
        f: impl FnOnce(&mut dyn Balancer, &mut BalanceEnv),
    ) -> (Requests, Nanos) {
        if self.k.balancer.is_none() {
            return (Requests::default(), 0);
        }
        self.k.lines.now = self.now;
        let (req, cost, _) =
            self.k
                .balance_call(this_cpu, self.now, &mut self.cpus, &self.ents, None, f);
        (req, cost)
    }

    /// Boot: every host CPU is idle with its tick stopped, so each enters
    /// nohz idle, as `Engine::set_balancer` does.
    pub(super) fn boot_balancer(&mut self) {
        let Some(b) = self.k.balancer.take() else {
            return;
        };
        self.k.set_balancer(b);
        for c in 0..self.cpus.len() {
            self.nohz_enter(c);
        }
    }

    /// The tick of idle host CPU `c` stops: nohz_balance_enter_idle (not
    /// charged).
    pub(super) fn nohz_enter(&mut self, c: usize) {
        let (req, _) = self.balance_call(c, |b, env| b.nohz_enter_idle(env, c));
        self.k.recycle(req);
    }

    /// add_nr_running: a second runnable thread on `c` sets rd->overload.
    pub(super) fn note_overloaded(&mut self, c: usize) {
        let (req, _) = self.balance_call(c, |b, env| b.rq_overloaded(env));
        self.k.recycle(req);
    }

    /// The tick of host CPU `c`, which runs a thread.
    pub(super) fn balance_tick(&mut self, c: usize, g: &mut dyn GuestCpus) {
        let (req, cost) = self.balance_call(c, |b, env| b.tick(env, c, false));
        self.apply_balance(c, req, cost, g);
    }

    /// Host CPU `c` found nothing to run: sched_balance_newidle. Returns
    /// true if it pulled a thread (already enqueued and scheduled).
    pub(super) fn balance_newidle(&mut self, c: usize, g: &mut dyn GuestCpus) -> bool {
        if self.k.balancer.is_none() {
            return false;
        }
        let (req, cost) = self.balance_call(c, |b, env| {
            b.newidle(env, c);
        });
        // pulled: a move was applied, not merely requested
        self.apply_balance(c, req, cost, g) > 0
    }

    /// The nohz kick IPI reaches `cpu`: if it is still idle it balances for
    /// every tickless idle CPU.
    pub(super) fn ilb_kick_arrives(&mut self, cpu: usize, g: &mut dyn GuestCpus) {
        let (req, cost) = self.balance_call(cpu, |b, env| b.nohz_idle_balance(env, cpu));
        self.apply_balance(cpu, req, cost, g);
    }

    /// The stopper of `src` runs: it pre-empts the thread there, the
    /// balancer pushes one queued thread to `dst`, and `src` schedules
    /// again after switching to the stopper and back.
    pub(super) fn run_stopper(&mut self, src: usize, dst: usize, g: &mut dyn GuestCpus) {
        self.preempt_for_stopper(src, g);
        let switch = 2 * self.costs.switch_ns;
        let (req, cost) = self.balance_call(src, |b, env| b.active_stop(env, src, dst));
        self.apply_balance(src, req, cost + switch, g);
        if self.running(src).is_none() {
            self.schedule(src, switch + cost, g);
        }
    }

    /// Apply the requests host CPU `c` made after `cost` ns of work;
    /// returns how many moves were applied.
    fn apply_balance(
        &mut self,
        c: usize,
        req: Requests,
        cost: Nanos,
        g: &mut dyn GuestCpus,
    ) -> usize {
        self.k.bstats.cost_ns += cost;
        for &(src, t) in &req.rotated {
            // detach_tasks' list_move to the head of the source's list
            self.k.cfs_lists.move_to_front(src, t);
        }
        let mut applied = 0;
        for m in &req.moves {
            applied += self.migrate_queued(m.task as usize, m.src, m.dst, c, cost, g) as usize;
        }
        let ipi = self.k.costs.ipi_ns;
        if let Some(ilb) = req.kick_ilb {
            self.push(
                self.now + cost + ipi,
                HostEvent::IlbKick { cpu: ilb as u32 },
            );
        }
        for &(src, dst) in &req.active {
            // cpu_stop_queue_work wakes the source's stopper thread
            self.push(
                self.now + cost + ipi,
                HostEvent::Stopper {
                    src: src as u32,
                    dst: dst as u32,
                },
            );
        }
        self.k.recycle(req);
        applied
    }

    /// detach_task + attach_task: move queued thread `t` from `src` to
    /// `dst` for CPU `by` (whose work so far is `lead`); false if the move
    /// was dropped. The balancer asks only for threads queued on `src` and
    /// allowed on `dst`, and the host applies its requests at once, so a
    /// dropped move is a bug: it is counted in `Host::dropped_moves`, which
    /// `--check` requires to stay 0.
    fn migrate_queued(
        &mut self,
        t: usize,
        src: usize,
        dst: usize,
        by: usize,
        lead: Nanos,
        g: &mut dyn GuestCpus,
    ) -> bool {
        let queued = self.threads[t].state == ThreadState::Waiting
            && self.threads[t].cpu == src
            && self.cpus[src].rq.curr() != Some(t as u32)
            && self.k.tplace[t].cpus_allowed.test(dst);
        if !queued {
            self.dropped_moves += 1;
            return false;
        }
        self.k.pstats.digest(t as u32, dst);
        self.update_thread_pelt(t);
        self.update_cpu_pelt(src);
        self.cpus[src]
            .rq
            .dequeue(&mut self.ents, t as u32, self.now, &self.params);
        self.k.cfs_lists.unlink(t as u32);
        let se = self.threads[t].pelt;
        self.cpus[src].pelt.detach(&se, self.ents[t].weight);
        self.sync_cpu(src);
        self.threads[t].migrations += 1;
        let resched = self.activate_task(t, dst, true, false);
        // an idle destination other than the balancing CPU gets the resched
        // IPI and leaves its idle state
        let wake = if dst != by { self.costs.wake_ns } else { 0 };
        self.wakeup_preempt(t, dst, resched, lead, wake, g);
        true
    }
}
