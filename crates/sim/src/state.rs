//! Machine state that placement and balancing may read: per-CPU run-queue
//! summaries, per-LLC shared blocks (`sched_domain_shared`) and per-task
//! placement fields. The engine owns and updates it; policies read it through
//! [`crate::placement::WakeEnv`], which charges every remote read.

use crate::cacheline::LineId;
use crate::Nanos;
use topology::CpuMask;

/// What placement can see of one CPU's run queue (`struct rq` fields).
#[derive(Clone, Debug, Default)]
pub struct CpuState {
    /// CFS tasks on the run queue, including the running one.
    pub nr_running: u32,
    /// Of those, SCHED_IDLE tasks (cfs h_nr_idle).
    pub nr_idle_tasks: u32,
    /// `rq->curr` is the idle task.
    pub curr_is_idle: bool,
    /// A remote wakeup is queued for this CPU (TTWU_QUEUE wake list).
    pub ttwu_pending: bool,
    /// The vCPU is preempted by the host (`vcpu_is_preempted`).
    pub vcpu_preempted: bool,
    /// PELT load of the CFS run queue (cpu_load).
    pub load_avg: u64,
    /// PELT utilisation of the CFS run queue (cpu_util_cfs).
    pub util_avg: u64,
    /// PELT runnable average of the run queue.
    pub runnable_avg: u64,
    /// CPU capacity (1024 without asymmetry).
    pub capacity: u64,
    /// rq->idle_stamp: when the CPU last went idle (0 when busy).
    pub idle_stamp: Nanos,
    /// Exit latency of the idle state the CPU sits in (0 when busy).
    pub idle_exit_latency: Nanos,
    /// The CPU's `sd_llc->nohz_idle`: it is not counted in its LLC's
    /// `nr_busy_cpus` ([`LlcShared::set_cpu_sd_state`] keeps both).
    pub nohz_idle: bool,
    /// The cache line of this run queue.
    pub line: LineId,
}

impl CpuState {
    /// A run queue as it boots: idle (its tick stopped, so not counted in
    /// `nr_busy_cpus`, which starts at 0), full capacity, its line `line`.
    pub fn boot(line: LineId) -> Self {
        CpuState {
            curr_is_idle: true,
            nohz_idle: true,
            capacity: 1024,
            line,
            ..Default::default()
        }
    }
}

/// Per-rq idle-time statistics (`rq->avg_idle` and friends). Written by the
/// engine on wake-up (ttwu_do_wakeup) and by SIS_PROP in select_idle_cpu,
/// which reads them on the waker's own CPU.
#[derive(Clone, Debug, Default)]
pub struct RqIdleStats {
    /// rq->avg_idle (ns).
    pub avg_idle: Nanos,
    /// rq->max_idle_balance_cost (ns).
    pub max_idle_balance_cost: Nanos,
    /// rq->wake_avg_idle (5.14-6.6 SIS_PROP).
    pub wake_avg_idle: Nanos,
    /// rq->wake_stamp in jiffies.
    pub wake_stamp: u64,
}

impl RqIdleStats {
    /// ttwu_do_activate (kernel/sched/core.c): a wake-up ends an idle
    /// period of `delta` ns; fold it into avg_idle (update_avg, 1/8 weight,
    /// capped at twice max_idle_balance_cost) and, for 5.14-6.6 SIS_PROP,
    /// wake_avg_idle; `jiffies` is the wake-up's time.
    pub fn ttwu_fold_idle(&mut self, delta: Nanos, jiffies: u64) {
        let max = 2 * self.max_idle_balance_cost;
        let avg = self.avg_idle as i64 + (delta as i64 - self.avg_idle as i64) / 8;
        self.avg_idle = (avg.max(0) as u64).min(max);
        self.wake_stamp = jiffies;
        self.wake_avg_idle = self.avg_idle / 2;
    }

    /// sched_init(): avg_idle = 2 * sysctl_sched_migration_cost (1 ms),
    /// max_idle_balance_cost = sysctl_sched_migration_cost (0.5 ms).
    pub fn boot() -> Self {
        RqIdleStats {
            avg_idle: 1_000_000,
            max_idle_balance_cost: 500_000,
            wake_avg_idle: 0,
            wake_stamp: 0,
        }
    }
}

/// `struct sched_domain_shared` of one LLC, plus the LLC domain's
/// `avg_scan_cost` (SIS_PROP). The block is one cache line of its own:
/// which slab neighbours may share it (kmalloc-16 on x86-64 and on arm64
/// from 6.5 with swiotlb, none on arm64 up to 6.4's kmalloc-128) is known
/// but not modelled, see docs/costs.md.
#[derive(Clone, Debug, Default)]
pub struct LlcShared {
    /// nr_busy_cpus (nohz accounting).
    pub nr_busy_cpus: u32,
    /// has_idle_cores hint.
    pub has_idle_cores: bool,
    /// nr_idle_scan budget (SIS_UTIL); starts at 0 as in the kernel.
    pub nr_idle_scan: u32,
    /// sd_llc->avg_scan_cost (SIS_PROP), ns.
    pub avg_scan_cost: Nanos,
    /// The cache line holding the shared block.
    pub line: LineId,
}

impl LlcShared {
    /// set_cpu_sd_state_busy / set_cpu_sd_state_idle (kernel/sched/fair.c,
    /// 4.x-6.x): the CPU whose run-queue summary is `rq` counts as busy in
    /// this LLC's `nr_busy_cpus` again (`busy`), or no longer; each happens
    /// once per idle period, guarded by the CPU's `sd_llc->nohz_idle`.
    /// The one writer of both, for the engine (without a balancer) and the
    /// balancer alike. Returns true when the count changed: the caller
    /// charges the atomic on this block's line.
    pub fn set_cpu_sd_state(&mut self, rq: &mut CpuState, busy: bool) -> bool {
        if rq.nohz_idle != busy {
            return false;
        }
        rq.nohz_idle = !busy;
        if busy {
            self.nr_busy_cpus += 1;
        } else {
            self.nr_busy_cpus = self.nr_busy_cpus.saturating_sub(1);
        }
        true
    }
}

/// Per-task fields the wake-up path reads and writes.
#[derive(Clone, Debug)]
pub struct TaskPlacement {
    /// CPUs the task may run on.
    pub cpus_allowed: CpuMask,
    /// p->recent_used_cpu.
    pub recent_used_cpu: usize,
    /// p->wakee_flips.
    pub wakee_flips: u32,
    /// p->wakee_flip_decay_ts (jiffies).
    pub wakee_flip_decay_ts: u64,
    /// p->last_wakee.
    pub last_wakee: Option<u32>,
    /// A per-CPU kernel thread (for the kthread stacking rule).
    pub per_cpu_kthread: bool,
    /// SCHED_IDLE policy.
    pub idle_policy: bool,
    /// PELT load of the task (task_h_load without cgroups).
    pub load_avg: u64,
    /// PELT utilisation of the task.
    pub util_avg: u64,
}

impl TaskPlacement {
    /// A new task's fields: allowed on `cpus_allowed`, last used `cpu`, no
    /// wakee history, no PELT signal yet, a normal (non-kthread, non-idle)
    /// task.
    pub fn new(cpus_allowed: CpuMask, cpu: usize) -> Self {
        TaskPlacement {
            cpus_allowed,
            recent_used_cpu: cpu,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            per_cpu_kthread: false,
            idle_policy: false,
            load_avg: 0,
            util_avg: 0,
        }
    }
}
