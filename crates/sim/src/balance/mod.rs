//! Load balancing: moving queued tasks between run queues after they were
//! placed, the other half of where tasks run.
//!
//! The engine calls a [`Balancer`] at the moments the kernel balances (a
//! scheduler tick, a CPU about to go idle, the nohz idle-balance kick, the
//! stopper of an active balance) with a [`BalanceEnv`]: a narrow view of the
//! run queues whose accessors charge every read of another CPU's state, and
//! every write of a shared line, through the cache-line model to the CPU doing
//! the work. The balancer answers with requests (tasks to move, an idle CPU to
//! kick, an active balance to start); the engine applies them with its
//! primitives (`deactivate_task`, `set_task_cpu`, `activate_task`).
//!
//! Policies: [`linux::LinuxBalancer`] (kernel/sched/fair.c, version by
//! version). sched_ext's default has none.
//!
//! ```
//! use sim::balance::{BalanceStats, Kind};
//! let mut s = BalanceStats::default();
//! s.count("MC", Kind::Periodic).calls += 1;
//! assert_eq!(s.levels["MC"].periodic.calls, 1);
//! ```

use crate::cacheline::LineTable;
use crate::costs::MachineCosts;
use crate::eevdf::Entity;
use crate::state::{CpuState, LlcShared, RqIdleStats, TaskPlacement};
use crate::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;
use topology::{SchedDomains, Topology};

pub mod linux;

/// `enum cpu_idle_type`: why a balance pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    /// Periodic balance of a CPU running a task (CPU_NOT_IDLE).
    Busy,
    /// Periodic or nohz balance of an idle CPU (CPU_IDLE).
    Idle,
    /// A CPU about to go idle (CPU_NEWLY_IDLE).
    NewlyIdle,
}

impl IdleType {
    /// Idle or newly idle.
    pub fn is_idle(self) -> bool {
        self != IdleType::Busy
    }
}

/// One task to move from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The task (queued on `src`, not running).
    pub task: u32,
    /// Its run queue now.
    pub src: usize,
    /// Where it goes.
    pub dst: usize,
}

/// The kinds of balancing, for attribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// From the tick, by the designated CPU of each group.
    Periodic,
    /// A CPU about to go idle.
    Newidle,
    /// The nohz idle balancer, on behalf of a tickless idle CPU.
    Nohz,
    /// The stopper pushing a running task.
    Active,
}

/// Counters of one kind of balancing at one domain level.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct KindCounts {
    /// `sched_balance_rq` passes (or stopper runs for active balance).
    pub calls: u64,
    /// Passes that found the level balanced (or were not this CPU's turn).
    pub balanced: u64,
    /// Passes that found an imbalance.
    pub imbalanced: u64,
    /// Tasks moved.
    pub moved: u64,
    /// Passes that found an imbalance but moved nothing.
    pub failed: u64,
}

impl KindCounts {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &KindCounts) {
        self.calls += other.calls;
        self.balanced += other.balanced;
        self.imbalanced += other.imbalanced;
        self.moved += other.moved;
        self.failed += other.failed;
    }
}

/// Counters of one domain level.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LevelCounts {
    /// Periodic balancing.
    pub periodic: KindCounts,
    /// Newidle balancing.
    pub newidle: KindCounts,
    /// Nohz idle balancing.
    pub nohz: KindCounts,
    /// Active balancing.
    pub active: KindCounts,
}

/// What the balancer did in a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct BalanceStats {
    /// Per domain level name (SMT, CLS, MC, PKG/DIE, NODE, NUMA-n).
    pub levels: BTreeMap<String, LevelCounts>,
    /// Tasks moved, all kinds.
    pub moved: u64,
    /// Newidle entries (a CPU found nothing to run).
    pub newidle_entries: u64,
    /// Newidle entries stopped by the gate before any level (no overloaded
    /// CPU, or avg_idle below the expected balance cost).
    pub newidle_gated: u64,
    /// Nohz idle-balance kicks sent.
    pub ilb_kicks: u64,
    /// Active balances started (stopper work queued).
    pub active_kicks: u64,
    /// Modelled balancing cost, ns (busy time of the balancing CPUs).
    pub cost_ns: u64,
}

impl BalanceStats {
    /// The counters of `level` for `kind`.
    pub fn count(&mut self, level: &str, kind: Kind) -> &mut KindCounts {
        if !self.levels.contains_key(level) {
            self.levels
                .insert(level.to_string(), LevelCounts::default());
        }
        let l = self.levels.get_mut(level).expect("inserted above");
        match kind {
            Kind::Periodic => &mut l.periodic,
            Kind::Newidle => &mut l.newidle,
            Kind::Nohz => &mut l.nohz,
            Kind::Active => &mut l.active,
        }
    }
}

/// The run queues' task lists, as the balancer may see them.
pub trait RqTasks {
    /// The task running on `cpu` (None: idle).
    fn curr(&self, cpu: usize) -> Option<u32>;
    /// The fair tasks of `cpu` (queued and running) in the order of the
    /// kernel's `rq->cfs_tasks` list: most recently enqueued or picked
    /// first, so `detach_tasks` walks it from the end.
    fn cfs_tasks(&self, cpu: usize, out: &mut Vec<u32>);
    /// The tail of that list: its `max` least recently enqueued or picked
    /// tasks, in list order (appended to `out`). `detach_tasks` walks at
    /// most `loop_max` entries from the tail (sched_nr_migrate, 32), so a
    /// run queue of a thousand tasks need not be ordered whole for it.
    fn cfs_tasks_tail(&self, cpu: usize, max: usize, out: &mut Vec<u32>) {
        let start = out.len();
        self.cfs_tasks(cpu, out);
        let n = out.len() - start;
        if n > max {
            out.drain(start..start + n - max);
        }
    }
    /// update_blocked_averages(cpu): bring `cpu`'s PELT signals to now and
    /// return (load_avg, util_avg, runnable_avg).
    fn update_blocked_averages(&mut self, cpu: usize) -> (u64, u64, u64);
}

/// What the balancer asks the engine to do after a call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// Tasks to move, in order.
    pub moves: Vec<Migration>,
    /// Tasks skipped by detach_tasks, rotated to the head of their list.
    pub rotated: Vec<(usize, u32)>,
    /// Send the nohz idle-balance IPI to this CPU.
    pub kick_ilb: Option<usize>,
    /// Queue the stopper on `.0` to push a task to `.1` (active balance),
    /// one entry per busy CPU kicked.
    pub active: Vec<(usize, usize)>,
}

impl Requests {
    /// Forget everything, keeping the allocations.
    pub fn clear(&mut self) {
        self.moves.clear();
        self.rotated.clear();
        self.kick_ilb = None;
        self.active.clear();
    }
}

/// Jiffies since boot at simulated time `now`: a run starts on a machine up
/// (and idle) for 300 s, so every balance interval has long passed
/// (`sd->last_balance` and `rq->next_balance` start in the past). The engine
/// and the host's scheduler both count time this way.
pub fn jiffies_at(now: Nanos, tick_ns: Nanos, hz: u64) -> u64 {
    now / tick_ns + 300 * hz
}

/// The view of the machine a balancer works on, for one call. Accessors that
/// read another CPU's state charge the read to `this_cpu`, the CPU doing the
/// work (which differs from the CPU balanced for under nohz idle balance).
pub struct BalanceEnv<'a> {
    /// The machine.
    pub topo: &'a Topology,
    /// Its sched domains.
    pub sd: &'a SchedDomains,
    /// Cost profile.
    pub costs: &'a MachineCosts,
    /// Per-CPU run-queue summaries. The balancer updates the copies of the
    /// CPUs it moves tasks between, so later levels of the same pass see the
    /// move; the engine re-syncs them when it applies the requests.
    pub cpus: &'a mut [CpuState],
    /// Per-rq idle statistics (avg_idle, max_idle_balance_cost).
    pub idle_stats: &'a mut [RqIdleStats],
    /// Per-LLC shared blocks (nr_busy_cpus, nr_idle_scan).
    pub llc: &'a mut [LlcShared],
    /// Per-task placement fields (affinity, PELT load and util).
    pub tasks: &'a [TaskPlacement],
    /// Scheduling entities (exec_start for cache hotness).
    pub ents: &'a [Entity],
    /// The run queues' task lists.
    pub rqs: &'a mut dyn RqTasks,
    /// Cache lines.
    pub lines: &'a mut LineTable,
    /// The root domain's line (rd->overload, the nohz mask and flags).
    pub root_line: crate::cacheline::LineId,
    /// Counters.
    pub stats: &'a mut BalanceStats,
    /// Current time.
    pub now: Nanos,
    /// Current time in jiffies since boot (the engine's runs start on a
    /// machine that has been up for a while, so no interval is pending).
    pub jiffies: u64,
    /// Ticks per second.
    pub hz: u64,
    /// The CPU doing the work.
    pub this_cpu: usize,
    /// Cost charged during this call (ns).
    pub cost_ns: Nanos,
    /// Run-queue reads during this call ([`BalanceEnv::read_rq`]): the
    /// modelled kernel's own scan work, which grows with the domains.
    pub rq_reads: u32,
    /// What to do afterwards.
    pub req: Requests,
    /// Scratch list for task walks (kept to avoid allocation).
    pub scratch: Vec<u32>,
    /// NUMA balancing's view of the tasks (None: it is off or the workload
    /// has no memory).
    pub numa: Option<&'a dyn NumaLocality>,
}

/// What the load balancer reads of automatic NUMA balancing
/// (`migrate_degrades_locality`): a task's preferred node and how its (or
/// its group's) memory faults spread over the nodes.
pub trait NumaLocality {
    /// `numa_preferred_nid` (None: no preference).
    fn preferred(&self, p: u32) -> Option<u16>;
    /// The task's group weight (grouped) or task weight on `node`, 1/1000
    /// (None: the task has no fault statistics).
    fn weight(&self, p: u32, node: usize) -> Option<i64>;
}

impl<'a> BalanceEnv<'a> {
    /// Charge a read of `cpu`'s run-queue line and return its state.
    #[inline]
    pub fn read_rq(&mut self, cpu: usize) -> &CpuState {
        let line = self.cpus[cpu].line;
        self.rq_reads += 1;
        self.cost_ns += self.lines.read(line, self.this_cpu, self.topo, self.costs);
        &self.cpus[cpu]
    }

    /// Charge a write of `cpu`'s run-queue line (taking its lock, changing
    /// its queue).
    #[inline]
    pub fn write_rq(&mut self, cpu: usize) {
        let line = self.cpus[cpu].line;
        self.cost_ns += self.lines.write(line, self.this_cpu, self.topo, self.costs);
    }

    /// Charge a read of the root domain's line.
    #[inline]
    pub fn read_root(&mut self) {
        self.cost_ns += self
            .lines
            .read(self.root_line, self.this_cpu, self.topo, self.costs);
    }

    /// Charge a write of the root domain's line.
    #[inline]
    pub fn write_root(&mut self) {
        self.cost_ns += self
            .lines
            .write(self.root_line, self.this_cpu, self.topo, self.costs);
    }

    /// Charge a write of `cpu`'s LLC shared line.
    #[inline]
    pub fn write_llc(&mut self, cpu: usize) {
        let l = self.sd.llc_index(cpu);
        self.cost_ns += self
            .lines
            .write(self.llc[l].line, self.this_cpu, self.topo, self.costs);
    }

    /// Charge a read of `cpu`'s LLC shared line.
    #[inline]
    pub fn read_llc(&mut self, cpu: usize) {
        let l = self.sd.llc_index(cpu);
        self.cost_ns += self
            .lines
            .read(self.llc[l].line, self.this_cpu, self.topo, self.costs);
    }

    /// idle_cpu() (charged): the CPU runs its idle task with nothing queued
    /// and no wake-up pending.
    #[inline]
    pub fn idle_cpu(&mut self, cpu: usize) -> bool {
        let s = self.read_rq(cpu);
        s.curr_is_idle && s.nr_running == 0 && !s.ttwu_pending
    }

    /// update_blocked_averages(cpu): refresh `cpu`'s PELT signals in the
    /// view (the CPU updates its own, or the nohz balancer an idle one).
    pub fn update_blocked_averages(&mut self, cpu: usize) {
        let (l, u, r) = self.rqs.update_blocked_averages(cpu);
        let s = &mut self.cpus[cpu];
        s.load_avg = l;
        s.util_avg = u;
        s.runnable_avg = r;
    }

    /// The fair tasks of `src` in cfs_tasks order, into `self.scratch`, as
    /// they stand after this call's earlier moves: tasks moved away are
    /// gone, tasks moved here are at the head (most recent first), as
    /// attach_task's enqueue puts them. Only the list's last `walk` entries
    /// are needed (a walk from the tail that looks at no more than that):
    /// of `src`'s own tasks, that many plus the ones this call moved away
    /// are taken.
    pub fn load_cfs_tasks(&mut self, src: usize, walk: u32) {
        self.scratch.clear();
        for m in self.req.moves.iter().rev() {
            if m.dst == src {
                self.scratch.push(m.task);
            }
        }
        let arrived = self.scratch.len();
        let own = (walk as usize).saturating_add(self.req.moves.len());
        self.rqs.cfs_tasks_tail(src, own, &mut self.scratch);
        if !self.req.moves.is_empty() {
            let moves = &self.req.moves;
            let mut i = 0;
            self.scratch.retain(|&t| {
                i += 1;
                // a task may have arrived and left again: keep only its
                // latest place
                let last = moves.iter().rev().find(|m| m.task == t);
                match last {
                    Some(m) => m.dst == src && i <= arrived,
                    None => true,
                }
            });
        }
    }
}

/// A load-balancing policy.
pub trait Balancer {
    /// Short name.
    fn name(&self) -> String;
    /// A scheduler tick on `cpu`; `idle` when it interrupted the idle task
    /// (sched_tick -> sched_balance_trigger, then the softirq).
    fn tick(&mut self, env: &mut BalanceEnv, cpu: usize, idle: bool);
    /// `cpu` found nothing to run (sched_balance_newidle). Returns true if it
    /// pulled tasks (in `env.req.moves`).
    fn newidle(&mut self, env: &mut BalanceEnv, cpu: usize) -> bool;
    /// The idle loop of `cpu` stopped its tick (nohz_balance_enter_idle).
    fn nohz_enter_idle(&mut self, env: &mut BalanceEnv, cpu: usize);
    /// `cpu` entered the idle loop of a kernel up to 4.16, which counted it
    /// idle in its LLC's `nr_busy_cpus` at every idle entry, tick stopped
    /// or not (`set_cpu_sd_state_idle()` from `tick_nohz_idle_enter()`).
    fn set_cpu_sd_state_idle(&mut self, _env: &mut BalanceEnv, _cpu: usize) {}
    /// The nohz idle-balance IPI reached idle `cpu` (nohz_csd_func ->
    /// nohz_idle_balance).
    fn nohz_idle_balance(&mut self, env: &mut BalanceEnv, cpu: usize);
    /// The stopper runs on `src` to push a task to `dst`
    /// (active_load_balance_cpu_stop); the task that was running is queued
    /// again. Moves go to `env.req.moves`.
    fn active_stop(&mut self, env: &mut BalanceEnv, src: usize, dst: usize);
    /// A run queue got its second runnable task (add_nr_running: the root
    /// domain's overload flag).
    fn rq_overloaded(&mut self, _env: &mut BalanceEnv) {}
}
