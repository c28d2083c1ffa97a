//! The Linux kernel's scheduler state of one machine, and the kernel's
//! entry points that read it, written once and used by every layer that
//! runs a kernel: the engine (a bare-metal machine or a guest), the VM host
//! (`host/`), and the kernel oracle's placement probe.
//!
//! [`Kernel`] holds what kernel/sched keeps beside the run queues: each
//! CPU's run-queue summary (`state::CpuState`, with its cache line), the
//! per-rq idle statistics, the LLC shared blocks (`sd_llc_shared`), the
//! per-task placement fields, each run queue's `cfs_tasks` list, the root
//! domain's line, the wake-up policy and the load balancer with their
//! statistics, and the machine's cost profile. The run queues themselves
//! stay with the layer that runs them (their CPUs differ: a guest CPU has a
//! workload segment, a host CPU a vCPU thread), reached through
//! [`FairCpu`].
//!
//! Entry points:
//! - [`Kernel::jiffies`]: the one clock of `jiffies`;
//! - [`Kernel::wake_env_call`]: a policy hook over a [`WakeEnv`];
//! - [`Kernel::select_task_rq`]: core.c's `select_task_rq` with
//!   `select_fallback_rq` and the placement statistics;
//! - [`Kernel::balance_call`]: a balancer hook over a [`BalanceEnv`].

pub(crate) mod cfs_tasks;
mod objects;

use crate::balance::{BalanceEnv, BalanceStats, Balancer, NumaLocality, Requests, RqTasks};
use crate::cacheline::{LineId, LineKind, LineTable};
use crate::costs::MachineCosts;
use crate::eevdf::Entity;
use crate::pelt::Pelt;
use crate::placement::{wf, Decision, Placement, PlacementStats, Stage, WakeEnv, WakeRequest};
use crate::rq::RunQueue;
use crate::state::{CpuState, LlcShared, RqIdleStats, TaskPlacement};
use crate::Nanos;
use cfs_tasks::CfsTaskLists;
use topology::{CpuMask, SchedDomains, Topology};

/// A task's kernel-stack record, after its task_struct record.
const STACK: LineId = 1;
/// A task's thread_info record (the task_struct's first line: thread_info
/// with its flags, then `__state`; x86 and arm64 keep thread_info in the
/// task_struct since 4.9 and 4.10, CONFIG_THREAD_INFO_IN_TASK), after its
/// stack.
const THREAD_INFO: LineId = 2;
/// Lines of the thread_info record.
const THREAD_INFO_LINES: u32 = 1;

/// The scheduler state of one machine's kernel (see the module doc).
pub struct Kernel<'t> {
    /// The machine.
    pub topo: &'t Topology,
    /// Its sched domains, as its kernel profile builds them.
    pub sd: &'t SchedDomains,
    /// The machine's cost profile.
    pub costs: MachineCosts,
    /// The cache lines the kernel's shared state lives in.
    pub lines: LineTable,
    /// Each CPU's run-queue summary (what other CPUs read of its rq).
    pub cpu_state: Vec<CpuState>,
    /// Per-rq idle statistics (avg_idle, max_idle_balance_cost, ...).
    pub idle_stats: Vec<RqIdleStats>,
    /// Per-LLC shared blocks, indexed by `sd.llc_index(cpu)`.
    pub llc: Vec<LlcShared>,
    /// Per-task placement fields, indexed by task id.
    pub tplace: Vec<TaskPlacement>,
    /// Each task's own kernel lines in the line model: its `task_struct`
    /// lines a wake-up writes but the first, at [`STACK`] after it its
    /// kernel stack's top lines, at [`THREAD_INFO`] the task_struct's first
    /// line (`costs::kernel_objects::task_lines`).
    pub task_lines: Vec<LineId>,
    /// Each task's `futex_q` record (`objects::NO_LINE` before its first
    /// futex wait).
    futex_q: Vec<LineId>,
    /// The first of each CPU's two kernel-object records: at
    /// `cpu_lines + 2 * cpu` its wake list, after it its idle task's
    /// `thread_info` flags (`objects`).
    cpu_lines: LineId,
    /// A remote waker queued to the CPU's wake list since its last switch.
    wake_list_pending: Vec<bool>,
    /// The `jiffies` line, and the last jiffy a tick wrote into it.
    jiffies_line: LineId,
    jiffies_written: u64,
    /// When a wake-up goes through the target's wake list.
    pub ttwu_queue: crate::placement::linux::TtwuQueue,
    /// Each CPU's cfs_tasks list.
    pub(crate) cfs_lists: CfsTaskLists,
    /// The root domain's cache line (rd->overload, the nohz mask).
    pub root_line: LineId,
    /// The wake-up policy (select_task_rq_fair for Linux).
    pub policy: Box<dyn Placement>,
    /// The load balancer (None: tasks move only when they wake).
    pub balancer: Option<Box<dyn Balancer>>,
    /// Placement statistics.
    pub pstats: PlacementStats,
    /// Balancing statistics.
    pub bstats: BalanceStats,
    /// Request lists lent to the balancer.
    pub breq: Requests,
    /// Scratch list lent to the balancer.
    pub bscratch: Vec<u32>,
    /// TICK_NSEC.
    pub tick_ns: Nanos,
    /// available_idle_cpu checks vcpu_is_preempted (kernel >= 4.18).
    pub vcpu_preempt_check: bool,
    /// sched_idle CPUs count as idle in the scans (kernel >= 5.4).
    pub sched_idle_as_idle: bool,
}

/// What one `select_task_rq` decided.
#[derive(Clone, Copy, Debug)]
pub struct Selected {
    /// The CPU, after `select_fallback_rq`.
    pub cpu: usize,
    /// The stage of the policy that chose (`NoIdleFound` for a task with
    /// one allowed CPU: the policy is not called).
    pub stage: Stage,
    /// The modelled cost of the decision, charged to the waking CPU.
    pub cost: Nanos,
    /// Run-queue probes the policy made.
    pub probes: u32,
}

/// A CPU's run queue as the load balancer reaches it, whichever layer runs
/// it.
pub trait FairCpu {
    /// Its run-queue discipline.
    type Rq: RunQueue;
    /// The fair run queue.
    fn rq(&self) -> &Self::Rq;
    /// The PELT signals of the fair run queue.
    fn rq_pelt(&mut self) -> &mut Pelt;
    /// update_cfs_rq_load_avg (kernel/sched/fair.c): bring the run queue's
    /// PELT signals to `now` (what counts as running is the layer's: a
    /// guest CPU runs its current task only in a busy segment).
    fn update_cfs_rq_load_avg(&mut self, now: Nanos);

    /// update_blocked_averages: bring the CPU's PELT signals to `now` and
    /// return (load_avg, util_avg capped at 1024, runnable_avg).
    fn update_blocked_averages(&mut self, now: Nanos) -> (u64, u64, u64) {
        self.update_cfs_rq_load_avg(now);
        blocked_averages(self.rq_pelt())
    }

    /// migrate_task_rq_fair (kernel/sched/fair.c, 5.x-6.x), run on the old
    /// CPU of sleeping task `t` whose wake-up moves it elsewhere (from
    /// set_task_cpu): CFS measures its vruntime against this queue now
    /// (`RunQueue::migrate_task_rq`; nothing under EEVDF), and the signals
    /// `se` it left here as blocked load are taken out of the run queue's
    /// (remove_entity_load_avg; the kernel parks them in cfs_rq->removed
    /// for the next update_cfs_rq_load_avg, here they go at once, after
    /// the run queue's signals are brought to `now`). The new CPU adds them
    /// at the enqueue (attach_entity_load_avg). The caller then syncs its
    /// view of this CPU.
    fn migrate_task_rq_fair(&mut self, ents: &mut [Entity], t: u32, se: &Pelt, now: Nanos) {
        self.rq().migrate_task_rq(ents, t);
        self.update_cfs_rq_load_avg(now);
        self.rq_pelt().detach(se, ents[t as usize].weight);
    }
}

/// The signals `update_blocked_averages` returns, from a CPU's PELT.
pub fn blocked_averages(p: &Pelt) -> (u64, u64, u64) {
    (p.load_avg, p.util_avg.min(1024), p.runnable_avg)
}

/// The run queues as the balancer sees them.
struct RqView<'x, C> {
    cpus: &'x mut [C],
    ents: &'x [Entity],
    lists: &'x CfsTaskLists,
    now: Nanos,
}

impl<C: FairCpu> RqTasks for RqView<'_, C> {
    fn curr(&self, cpu: usize) -> Option<u32> {
        self.cpus[cpu]
            .rq()
            .curr()
            .filter(|&t| self.ents[t as usize].on_rq)
    }

    fn cfs_tasks(&self, cpu: usize, out: &mut Vec<u32>) {
        self.lists.all(cpu, out);
    }

    fn cfs_tasks_tail(&self, cpu: usize, max: usize, out: &mut Vec<u32>) {
        self.lists.tail(cpu, max, out);
    }

    fn update_blocked_averages(&mut self, cpu: usize) -> (u64, u64, u64) {
        self.cpus[cpu].update_blocked_averages(self.now)
    }
}

impl<'t> Kernel<'t> {
    /// The kernel of `topo` (domains `sd`, costs `costs`) at boot: every
    /// CPU idle, no task yet, `policy` placing wake-ups.
    pub fn boot(
        topo: &'t Topology,
        sd: &'t SchedDomains,
        costs: MachineCosts,
        policy: Box<dyn Placement>,
    ) -> Self {
        let n = topo.nr_cpus();
        let mut lines = LineTable::new(n);
        let cpu_state = (0..n)
            .map(|_| CpuState::boot(lines.alloc_of(LineKind::Rq, 1)))
            .collect();
        let llc = (0..sd.nr_llcs())
            .map(|_| LlcShared {
                line: lines.alloc_of(LineKind::SchedDomainShared, 1),
                ..Default::default()
            })
            .collect();
        let root_line = lines.alloc_of(LineKind::RootDomain, 1);
        let wake_list = crate::costs::kernel_objects::wake_list_lines();
        let cpu_lines = lines.len() as LineId;
        for _ in 0..n {
            lines.alloc_of(LineKind::WakeList, wake_list);
            lines.alloc_of(LineKind::IdleThreadInfo, 1);
        }
        let jiffies_line = lines.alloc_of(LineKind::Jiffies, 1);
        let tick_ns = 1_000_000_000 / costs.hz.max(1);
        let mut idle_stats = vec![RqIdleStats::boot(); n];
        for s in &mut idle_stats {
            // sched_init: rq->wake_stamp = jiffies
            s.wake_stamp = crate::balance::jiffies_at(0, tick_ns, costs.hz);
        }
        Kernel {
            topo,
            sd,
            lines,
            cpu_state,
            idle_stats,
            llc,
            tplace: Vec::new(),
            task_lines: Vec::new(),
            futex_q: Vec::new(),
            cpu_lines,
            wake_list_pending: vec![false; n],
            jiffies_line,
            jiffies_written: 0,
            ttwu_queue: crate::placement::linux::TtwuQueue::CrossLlcOrIdle,
            cfs_lists: CfsTaskLists::new(n),
            root_line,
            policy,
            balancer: None,
            pstats: PlacementStats::default(),
            bstats: BalanceStats::default(),
            breq: Requests::default(),
            bscratch: Vec::new(),
            tick_ns,
            vcpu_preempt_check: false,
            sched_idle_as_idle: false,
            costs,
        }
    }

    /// Jiffies at simulated time `now` ([`crate::balance::jiffies_at`]):
    /// the one clock of the wake-up path (`record_wakee`'s flip decay,
    /// SIS_PROP's `wake_stamp`) and the balancer (intervals).
    #[inline]
    pub fn jiffies(&self, now: Nanos) -> u64 {
        crate::balance::jiffies_at(now, self.tick_ns, self.costs.hz)
    }

    /// Run a policy hook with a fresh view for `this_cpu` at `now`; returns
    /// the hook's result, the modelled cost and the run-queue probes made.
    #[inline]
    pub fn wake_env_call<T>(
        &mut self,
        this_cpu: usize,
        now: Nanos,
        f: impl FnOnce(&mut dyn Placement, &mut WakeEnv) -> T,
    ) -> (T, Nanos, u32) {
        let jiffies = self.jiffies(now);
        let mut env = WakeEnv::new(
            self.topo,
            self.sd,
            &self.costs,
            &self.cpu_state,
            &mut self.idle_stats,
            &mut self.llc,
            &mut self.tplace,
            &mut self.lines,
            &mut self.pstats,
            this_cpu,
            (now, jiffies, self.costs.hz),
            (self.vcpu_preempt_check, self.sched_idle_as_idle),
        );
        let r = f(self.policy.as_mut(), &mut env);
        (r, env.cost_ns, env.probes)
    }

    /// select_task_rq (kernel/sched/core.c) of `req.task` on `this_cpu`:
    /// the policy (select_task_rq_fair for Linux) when the task may use
    /// more than one CPU, else its only CPU, as the kernel calls the class
    /// hook only when `p->nr_cpus_allowed > 1`; a choice outside the
    /// affinity goes through select_fallback_rq (an allowed CPU on prev's
    /// node, else any). Counts the decision, its probes and cost, and where
    /// a task's wake-up landed relative to its waker's CPU.
    #[inline]
    pub fn select_task_rq(&mut self, req: WakeRequest, this_cpu: usize, now: Nanos) -> Selected {
        let t = req.task as usize;
        let mut sel = Selected {
            cpu: req.prev_cpu,
            stage: Stage::NoIdleFound,
            cost: 0,
            probes: 0,
        };
        if self.tplace[t].cpus_allowed.weight() == 1 {
            sel.cpu = self.tplace[t].cpus_allowed.first().unwrap_or(req.prev_cpu);
        } else {
            let rejected = self.pstats.preempted_idle_rejected;
            let (d, cost, probes): (Decision, _, _) =
                self.wake_env_call(this_cpu, now, |p, env| p.select_task_rq(env, req));
            if self.pstats.preempted_idle_rejected > rejected {
                self.pstats.wakeups_redirected += 1;
            }
            let _ = self.pstats.probes_per_wakeup.record(probes as u64);
            self.pstats.probes += probes as u64;
            self.pstats.cost_ns += cost;
            sel = Selected {
                cpu: d.cpu,
                stage: d.stage,
                cost,
                probes,
            };
        }
        let allowed = &self.tplace[t].cpus_allowed;
        if sel.cpu >= self.topo.nr_cpus() || !allowed.test(sel.cpu) {
            // select_fallback_rq
            self.pstats.fallback_rq += 1;
            sel.cpu = allowed
                .and(self.topo.node_mask(req.prev_cpu))
                .first()
                .or(allowed.first())
                .unwrap_or(req.prev_cpu);
        }
        self.pstats.stages[sel.stage as usize] += 1;
        self.pstats.digest(req.task, sel.cpu);
        if req.waker.is_some() && req.wake_flags & wf::TTWU != 0 {
            self.note_locality(this_cpu, sel.cpu);
        }
        sel
    }

    /// A task's wake-up on `this_cpu` placed its wakee on `cpu`: count
    /// where, relative to the waker (`PlacementStats::wake_locality`).
    fn note_locality(&mut self, this_cpu: usize, cpu: usize) {
        let where_ = if cpu == this_cpu {
            0
        } else if self.topo.cluster_mask(this_cpu).test(cpu) {
            1
        } else if self.sd.cpus_share_cache(this_cpu, cpu) {
            2
        } else {
            3
        };
        self.pstats.wake_locality[where_] += 1;
    }

    /// Run a balancer hook for `this_cpu` at `now` with a fresh view of the
    /// run queues `cpus` (entities `ents`); returns its requests, the
    /// modelled cost (not yet charged) and the run-queue reads it made.
    pub fn balance_call<C: FairCpu>(
        &mut self,
        this_cpu: usize,
        now: Nanos,
        cpus: &mut [C],
        ents: &[Entity],
        numa: Option<&dyn NumaLocality>,
        f: impl FnOnce(&mut dyn Balancer, &mut BalanceEnv),
    ) -> (Requests, Nanos, u32) {
        let jiffies = self.jiffies(now);
        let Some(b) = self.balancer.as_mut() else {
            return (Requests::default(), 0, 0);
        };
        let mut view = RqView {
            cpus,
            ents,
            lists: &self.cfs_lists,
            now,
        };
        let mut env = BalanceEnv {
            topo: self.topo,
            sd: self.sd,
            costs: &self.costs,
            cpus: &mut self.cpu_state,
            idle_stats: &mut self.idle_stats,
            llc: &mut self.llc,
            tasks: &self.tplace,
            ents,
            rqs: &mut view,
            lines: &mut self.lines,
            root_line: self.root_line,
            stats: &mut self.bstats,
            now,
            jiffies,
            hz: self.costs.hz,
            this_cpu,
            cost_ns: 0,
            rq_reads: 0,
            req: std::mem::take(&mut self.breq),
            scratch: std::mem::take(&mut self.bscratch),
            numa,
        };
        env.req.clear();
        f(b.as_mut(), &mut env);
        let (req, cost, reads) = (std::mem::take(&mut env.req), env.cost_ns, env.rq_reads);
        self.bscratch = std::mem::take(&mut env.scratch);
        (req, cost, reads)
    }

    /// A new task allowed on `allowed`, last on `cpu`: its placement
    /// fields and its place in the cfs_tasks lists.
    pub fn add_task(&mut self, allowed: CpuMask, cpu: usize) {
        let mut p = TaskPlacement::new(allowed, cpu);
        // the flips start decaying from the run's start
        p.wakee_flip_decay_ts = self.jiffies(0);
        self.tplace.push(p);
        self.cfs_lists.add_task();
        let (task_struct, stack) = crate::costs::kernel_objects::task_lines();
        // the task_struct's first line (thread_info's flags, __state) is a
        // record of its own: resched_curr on another CPU writes it alone
        // (see `resched_curr_lines`); the waker and the switch-in write it
        // with the rest, so a wake-up or a switch moves as many lines as
        // one record of them all did
        let first = self
            .lines
            .alloc_of(LineKind::TaskStruct, task_struct - THREAD_INFO_LINES);
        self.lines.alloc_of(LineKind::KernelStack, stack);
        self.lines.alloc_of(LineKind::TaskStruct, THREAD_INFO_LINES);
        self.task_lines.push(first);
        self.futex_q.push(objects::NO_LINE);
    }

    /// try_to_wake_up on `waker_cpu`: the waker takes the wakee's pi_lock
    /// and writes its state, wake_cpu and sched entity, lines last written
    /// where the wakee slept (or by its previous waker). Returns the cost.
    #[inline]
    pub fn ttwu_task_lines(&mut self, task: usize, waker_cpu: usize) -> Nanos {
        let line = self.task_lines[task];
        self.lines.write(line, waker_cpu, self.topo, &self.costs)
            + self
                .lines
                .write(line + THREAD_INFO, waker_cpu, self.topo, &self.costs)
    }

    /// Ask for `task`'s three line records (a hint; see
    /// `LineTable::prefetch`).
    #[inline(always)]
    pub fn prefetch_task_line_records(&self, task: usize) {
        self.lines
            .prefetch(self.task_lines[task], THREAD_INFO as usize + 1);
    }

    /// resched_curr on `cpu` for its running `task` (set_tsk_need_resched,
    /// or set_nr_and_not_polling from another CPU): an atomic OR into the
    /// task's thread_info flags, the first task_struct line, which the
    /// task's own CPU holds. Returns the cost.
    #[inline]
    pub fn resched_curr_lines(&mut self, task: usize, cpu: usize) -> Nanos {
        let line = self.task_lines[task] + THREAD_INFO;
        self.lines.write(line, cpu, self.topo, &self.costs)
    }

    /// __schedule on `c` clears `prev`'s TIF_NEED_RESCHED
    /// (clear_tsk_need_resched): free unless another CPU set it since
    /// (`resched_curr_lines`), whose line then comes back. Returns the
    /// cost.
    #[inline]
    pub fn clear_need_resched_lines(&mut self, prev: usize, c: usize) -> Nanos {
        self.resched_curr_lines(prev, c)
    }

    /// context_switch to `task` on `c`: prepare_task and set_next_entity
    /// write its task_struct lines (last written by its waker), and
    /// switch_to pops its kernel stack (last written where it ran).
    /// Returns the cost.
    #[inline]
    pub fn switch_in_task_lines(&mut self, task: usize, c: usize) -> Nanos {
        let line = self.task_lines[task];
        self.lines.write(line, c, self.topo, &self.costs)
            + self.lines.write(line + STACK, c, self.topo, &self.costs)
            + self
                .lines
                .write(line + THREAD_INFO, c, self.topo, &self.costs)
    }

    /// set_next_task_idle -> update_idle_core: `c` goes idle at `now` (its
    /// line reads and the has_idle_cores write are made and counted; the
    /// time is not charged: the CPU is on its way to idle).
    pub fn cpu_enters_idle(&mut self, c: usize, now: Nanos) {
        let ((), cost, probes) = self.wake_env_call(c, now, |p, env| p.cpu_enters_idle(env, c));
        self.pstats.probes += probes as u64;
        self.pstats.cost_ns += cost;
    }

    /// Install a load balancer. Every CPU starts idle with its tick
    /// stopped, so each enters nohz idle at boot: every CPU counts busy in
    /// its LLC's nr_busy_cpus first, as sched_init_domains leaves them, and
    /// the caller runs each CPU's `nohz_enter_idle`, which brings the count
    /// to 0.
    pub fn set_balancer(&mut self, b: Box<dyn Balancer>) {
        self.balancer = Some(b);
        for c in 0..self.topo.nr_cpus() {
            let l = self.sd.llc_index(c);
            self.llc[l].set_cpu_sd_state(&mut self.cpu_state[c], true);
        }
    }

    /// Give a request list back for reuse.
    #[inline]
    pub fn recycle(&mut self, req: Requests) {
        if req.moves.capacity() >= self.breq.moves.capacity() {
            self.breq = req;
        }
    }
}
