//! The host kernel's scheduler state that the simulator's Linux code reads
//! and writes: the host machine, its sched domains (built for the host
//! kernel profile as a bare-metal run builds them), its cost profile and
//! cache lines, a `state::CpuState` per host CPU, the per-rq idle
//! statistics, the LLC shared blocks, a `state::TaskPlacement` per host
//! thread, each run queue's `cfs_tasks` list, and the wake-up policy
//! (`placement::linux::LinuxPlacement`) and load balancer
//! (`balance::linux::LinuxBalancer`) of that profile.
//!
//! [`HostLinux::select`] is select_task_rq_fair over a [`WakeEnv`] of the
//! host; the balancer's view ([`crate::balance::BalanceEnv`]) is built by
//! the host scheduler (`host/balance.rs`), which owns the run queues.

use crate::balance::{BalanceStats, Balancer, Requests};
use crate::cacheline::{LineId, LineTable};
use crate::costs::MachineCosts;
use crate::engine::cfs_tasks::CfsTaskLists;
use crate::placement::linux::{Features, LinuxPlacement};
use crate::placement::{Decision, Placement, PlacementStats, WakeEnv, WakeRequest};
use crate::state::{CpuState, LlcShared, RqIdleStats, TaskPlacement};
use crate::Nanos;
use topology::{CpuMask, SchedDomains, Topology};

/// The host kernel's scheduler state (see the module doc).
pub struct HostLinux {
    pub(super) topo: Topology,
    pub(super) sd: SchedDomains,
    /// The host's cost profile (zeroed when the host layer is free).
    pub(super) mc: MachineCosts,
    pub(super) lines: LineTable,
    pub(super) cpu_state: Vec<CpuState>,
    pub(super) idle_stats: Vec<RqIdleStats>,
    pub(super) llc: Vec<LlcShared>,
    pub(super) tplace: Vec<TaskPlacement>,
    pub(super) lists: CfsTaskLists,
    pub(super) root_line: LineId,
    policy: LinuxPlacement,
    pub(super) balancer: Option<Box<dyn Balancer>>,
    pub(super) pstats: PlacementStats,
    pub(super) bstats: BalanceStats,
    /// Reused request list and task scratch of the balancer.
    pub(super) breq: Requests,
    pub(super) bscratch: Vec<u32>,
    vcpu_preempt_check: bool,
    sched_idle_as_idle: bool,
    pub(super) tick_ns: Nanos,
}

impl HostLinux {
    /// The state of host kernel `f` on `topo` with costs `mc`: domains as
    /// that kernel builds them, every CPU idle, no thread yet.
    pub fn new(topo: Topology, f: &Features, mc: MachineCosts) -> HostLinux {
        let sd = SchedDomains::build(&topo, &f.domain_options());
        let n = topo.nr_cpus();
        let mut lines = LineTable::new(n);
        let cpu_state = (0..n).map(|_| CpuState::boot(lines.alloc())).collect();
        let llc = (0..sd.nr_llcs())
            .map(|_| LlcShared {
                line: lines.alloc(),
                ..Default::default()
            })
            .collect();
        let root_line = lines.alloc();
        let tick_ns = 1_000_000_000 / mc.hz.max(1);
        HostLinux {
            sd,
            lines,
            cpu_state,
            idle_stats: vec![RqIdleStats::boot(); n],
            llc,
            tplace: Vec::new(),
            lists: CfsTaskLists::new(n),
            root_line,
            policy: LinuxPlacement::new(f.clone()),
            balancer: crate::run::make_balancer(&crate::run::PolicyChoice::Linux(Box::new(
                f.clone(),
            ))),
            pstats: PlacementStats::default(),
            bstats: BalanceStats::default(),
            breq: Requests::default(),
            bscratch: Vec::new(),
            vcpu_preempt_check: f.vcpu_preempt_check(),
            sched_idle_as_idle: f.sched_idle_as_idle(),
            tick_ns,
            mc,
            topo,
        }
    }

    /// The host's CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus()
    }

    /// A new host thread allowed on `allowed`, last on `cpu`.
    pub(super) fn add_thread(&mut self, allowed: CpuMask, cpu: usize) {
        self.tplace.push(TaskPlacement::new(allowed, cpu));
        self.lists.add_task();
    }

    /// Run a placement hook with a fresh view of the host for `this_cpu`
    /// at `now`; returns its result, cost and run-queue probes.
    fn wake_env_call<T>(
        &mut self,
        this_cpu: usize,
        now: Nanos,
        f: impl FnOnce(&mut LinuxPlacement, &mut WakeEnv) -> T,
    ) -> (T, Nanos, u32) {
        self.lines.now = now;
        let mut env = WakeEnv {
            topo: &self.topo,
            sd: &self.sd,
            costs: &self.mc,
            cpus: &self.cpu_state,
            idle_stats: &mut self.idle_stats,
            llc: &mut self.llc,
            tasks: &mut self.tplace,
            lines: &mut self.lines,
            stats: &mut self.pstats,
            now,
            jiffies: now / self.tick_ns,
            hz: self.mc.hz,
            this_cpu,
            cost_ns: 0,
            probes: 0,
            vcpu_preempt_check: self.vcpu_preempt_check,
            sched_idle_as_idle: self.sched_idle_as_idle,
        };
        let r = f(&mut self.policy, &mut env);
        (r, env.cost_ns, env.probes)
    }

    /// select_task_rq (kernel/sched/core.c) of host thread `req.task`, run
    /// on `this_cpu`: the fair class's select_task_rq_fair when the thread
    /// may use more than one CPU, else its only CPU, as the kernel calls
    /// the class hook only when `p->nr_cpus_allowed > 1`; a choice outside
    /// the affinity goes through select_fallback_rq. Returns the CPU and
    /// the modelled cost of the decision.
    pub(super) fn select(
        &mut self,
        req: WakeRequest,
        this_cpu: usize,
        now: Nanos,
    ) -> (usize, Nanos) {
        let t = req.task as usize;
        if self.tplace[t].cpus_allowed.weight() == 1 {
            return (
                self.tplace[t].cpus_allowed.first().unwrap_or(req.prev_cpu),
                0,
            );
        }
        let (d, cost, probes): (Decision, _, _) =
            self.wake_env_call(this_cpu, now, |p, env| p.select_task_rq(env, req));
        let _ = self.pstats.probes_per_wakeup.record(probes as u64);
        self.pstats.probes += probes as u64;
        self.pstats.cost_ns += cost;
        let mut cpu = d.cpu;
        let allowed = &self.tplace[t].cpus_allowed;
        if cpu >= self.topo.nr_cpus() || !allowed.test(cpu) {
            self.pstats.fallback_rq += 1;
            cpu = allowed
                .and(self.topo.node_mask(req.prev_cpu))
                .first()
                .or(allowed.first())
                .unwrap_or(req.prev_cpu);
        }
        self.pstats.stages[d.stage as usize] += 1;
        self.pstats.digest(req.task, cpu);
        (cpu, cost)
    }

    /// A wake-up by a waking thread on `this_cpu` placed its wakee on
    /// `cpu`: where, relative to the waker (the engine's `wake_locality`).
    pub(super) fn note_locality(&mut self, this_cpu: usize, cpu: usize) {
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

    /// set_next_task_idle -> update_idle_core: host CPU `c` goes idle (its
    /// line writes are made; the time is not charged, as the engine does
    /// for a CPU on its way to idle).
    pub(super) fn cpu_enters_idle(&mut self, c: usize, now: Nanos) {
        let ((), cost, probes) = self.wake_env_call(c, now, |p, env| p.cpu_enters_idle(env, c));
        self.pstats.probes += probes as u64;
        self.pstats.cost_ns += cost;
    }
}
