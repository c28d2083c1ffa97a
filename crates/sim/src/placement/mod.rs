//! Placement: choosing a CPU for a waking or new task.
//!
//! The engine calls a [`Placement`] policy with a [`WakeEnv`]: a narrow view of
//! machine state (run-queue summaries, the LLC shared blocks, per-task
//! placement fields) whose accessors charge every read of another CPU's state
//! through the cache-line model to the waking CPU. A policy therefore cannot
//! look at state without paying what the kernel pays for it; cost-only
//! changes show up as cost, and decisions stay comparable.
//!
//! Policies: [`scx::ScxDefault`] (the sched_ext built-in idle pick) and the
//! Linux wake-up path in [`linux`]. A policy outside this crate implements
//! [`Placement`] (naming its own stages with [`Placement::stage_names`])
//! and is run through a [`PolicyFactory`]
//! (`sim::run::PolicyChoice::Custom`); examples/custom-placement is the
//! guide.

use crate::cacheline::{LineId, LineTable};
use crate::costs::MachineCosts;
use crate::state::{CpuState, LlcShared, RqIdleStats, TaskPlacement};
use crate::Nanos;
use hdrhistogram::Histogram;
use serde::Serialize;
use topology::{SchedDomains, Topology};

pub mod linux;
pub mod scx;

/// Wake flags (kernel WF_*).
pub mod wf {
    /// Wakeup from exec.
    pub const EXEC: u32 = 0x02;
    /// Wakeup of a new task (fork/clone).
    pub const FORK: u32 = 0x04;
    /// A normal try_to_wake_up wakeup.
    pub const TTWU: u32 = 0x08;
    /// The waker is about to sleep (pipes, sockets).
    pub const SYNC: u32 = 0x10;
    /// The task moved CPU.
    pub const MIGRATED: u32 = 0x20;
}

/// Declares [`Stage`] and its list of all variants from one list.
macro_rules! stages {
    ($($(#[$doc:meta])* $v:ident,)*) => {
        /// The step of the placement path that chose the CPU.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Stage {
            $($(#[$doc])* $v,)*
        }

        impl Stage {
            /// Every stage, in declaration order.
            pub const ALL: &'static [Stage] = &[$(Stage::$v,)*];
        }
    };
}

stages! {
    /// select_idle_sibling: the target itself was idle.
    TargetIdle,
    /// prev_cpu was idle (and shares cache with target).
    PrevIdle,
    /// Per-CPU kthread waker: stack on prev == this CPU.
    KthreadStack,
    /// p->recent_used_cpu was idle.
    RecentUsedCpu,
    /// An idle SMT sibling of prev (select_idle_smt).
    SmtSiblingOfPrev,
    /// A wholly idle core found by select_idle_core.
    IdleCore,
    /// An idle CPU found in the target's cluster.
    IdleCpuInCluster,
    /// An idle CPU found in the LLC.
    IdleCpuInLlc,
    /// An idle SMT sibling of the target (select_idle_smt, <=5.11, last).
    SmtSiblingOfTarget,
    /// prev or recent_used_cpu kept as a fallback after a failed scan (>=6.7).
    PrevRecentFallback,
    /// Nothing idle was found: the target (affine or prev) is used.
    NoIdleFound,
    /// The fork/exec slow path (find_idlest_cpu).
    SlowPath,
    /// WF_CURRENT_CPU or similar direct placement.
    CurrentCpu,
    /// sched_ext default: prev's whole core was idle.
    ScxPrevIdleCore,
    /// sched_ext default: a fully idle core in the LLC.
    ScxIdleCoreLlc,
    /// sched_ext default: a fully idle core in the node.
    ScxIdleCoreNode,
    /// sched_ext default: a fully idle core anywhere.
    ScxIdleCoreAny,
    /// sched_ext default: prev was idle.
    ScxPrevIdle,
    /// sched_ext default: an idle SMT sibling of prev.
    ScxPrevSibling,
    /// sched_ext default: an idle CPU in the LLC.
    ScxIdleCpuLlc,
    /// sched_ext default: an idle CPU in the node.
    ScxIdleCpuNode,
    /// sched_ext default: any idle CPU.
    ScxIdleCpuAny,
    /// sched_ext default: nothing idle, stay on prev.
    ScxStayPrev,
    // the policy's own stages: keep them last (Stage::policy_index)
    /// A policy's own stage 0, named by its [`Placement::stage_names`].
    Policy0,
    /// A policy's own stage 1.
    Policy1,
    /// A policy's own stage 2.
    Policy2,
    /// A policy's own stage 3.
    Policy3,
    /// A policy's own stage 4.
    Policy4,
    /// A policy's own stage 5.
    Policy5,
    /// A policy's own stage 6.
    Policy6,
    /// A policy's own stage 7.
    Policy7,
}

impl Stage {
    /// Number of stages.
    pub const COUNT: usize = Stage::ALL.len();
    /// The stages a policy outside the Linux path names itself
    /// ([`Placement::stage_names`]), in order: `Policy0` to `Policy7`.
    pub const POLICY: &'static [Stage] = &[
        Stage::Policy0,
        Stage::Policy1,
        Stage::Policy2,
        Stage::Policy3,
        Stage::Policy4,
        Stage::Policy5,
        Stage::Policy6,
        Stage::Policy7,
    ];
    /// All stages in order.
    pub fn all() -> impl Iterator<Item = Stage> {
        Stage::ALL.iter().copied()
    }
    /// snake_case name used in reports (`policy0` to `policy7` for the
    /// policy's own stages: [`Stage::name_for`] gives the names the policy
    /// chose).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
    /// The `i`-th of a policy's own stages (`None` past the last,
    /// [`Stage::POLICY`]`.len()`).
    pub const fn policy(i: usize) -> Option<Stage> {
        if i < Stage::POLICY.len() {
            Some(Stage::POLICY[i])
        } else {
            None
        }
    }
    /// Which of a policy's own stages this is (`None`: a stage of the
    /// Linux path or of sched_ext's default).
    pub fn policy_index(self) -> Option<usize> {
        (self as usize).checked_sub(Stage::Policy0 as usize)
    }
    /// The name reports give this stage under a policy whose own stages are
    /// `names` ([`Placement::stage_names`]): its entry there for a policy
    /// stage the policy named, else [`Stage::name`].
    pub fn name_for(self, names: &[&str]) -> String {
        match self.policy_index().and_then(|i| names.get(i)) {
            Some(n) => (*n).to_string(),
            None => self.name(),
        }
    }
}

/// The chosen CPU and the stage that chose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Chosen CPU.
    pub cpu: usize,
    /// Deciding stage.
    pub stage: Stage,
}

/// A wakeup to place.
#[derive(Clone, Copy, Debug)]
pub struct WakeRequest {
    /// The task being woken (or forked).
    pub task: u32,
    /// Its previous CPU (for a new task: the parent's CPU).
    pub prev_cpu: usize,
    /// WF_* flags.
    pub wake_flags: u32,
    /// The waking task, when the waker is a task (not an interrupt/timer).
    pub waker: Option<u32>,
}

/// Counters and distributions collected by the placement path.
pub struct PlacementStats {
    /// Wakeups per deciding stage.
    pub stages: [u64; Stage::COUNT],
    /// CPUs probed per wakeup.
    pub probes_per_wakeup: Histogram<u64>,
    /// Total probes.
    pub probes: u64,
    /// Total modelled cost of the placement path (ns).
    pub cost_ns: u64,
    /// Cost of each select_idle_cpu call (ns).
    pub select_idle_cpu_cost: Histogram<u64>,
    /// Probes in each select_idle_core call.
    pub select_idle_core_probes: Histogram<u64>,
    /// Cost of each select_idle_core call (ns).
    pub select_idle_core_cost: Histogram<u64>,
    /// Reads of has_idle_cores.
    pub has_idle_cores_reads: u64,
    /// Of which returned true.
    pub has_idle_cores_true: u64,
    /// Reads of nr_idle_scan.
    pub nr_idle_scan_reads: u64,
    /// select_idle_cpu calls that did not scan because nr_idle_scan was 0
    /// (SIS_UTIL judged the LLC overloaded).
    pub sis_util_no_scan: u64,
    /// Writes of the LLC shared line (set_idle_cores, nr_idle_scan, nr_busy).
    pub llc_shared_writes: u64,
    /// wake_affine chose this CPU.
    pub wake_affine_this: u64,
    /// wake_affine chose prev.
    pub wake_affine_prev: u64,
    /// wake_affine calls with WF_SYNC.
    pub wake_affine_sync: u64,
    /// wake_wide said "wide".
    pub wake_wide: u64,
    /// Decisions outside the allowed mask, fixed by select_fallback_rq.
    pub fallback_rq: u64,
    /// Task wake-ups (WF_TTWU with a waking task), by where the wakee landed
    /// relative to the waker's CPU: the same CPU, the same cluster
    /// (cpus_share_resources: cluster or, without clusters, LLC), the same
    /// LLC, elsewhere.
    pub wake_locality: [u64; 4],
    /// Idle CPUs that available_idle_cpu turned down because their vCPU
    /// was flagged pre-empted (the 4.18 check).
    pub preempted_idle_rejected: u64,
    /// Wake-ups in which the check turned down at least one idle CPU: the
    /// wake-ups it redirected (without it the path takes the first idle
    /// CPU it tests).
    pub wakeups_redirected: u64,
    /// FNV-1a hash of the (task, cpu) decision sequence.
    pub decision_digest: u64,
    /// The names of the policy's own stages ([`Placement::stage_names`]),
    /// for reports; set when the run builds its policy (`sim::run`).
    pub stage_names: &'static [&'static str],
}

impl Default for PlacementStats {
    fn default() -> Self {
        let h = || Histogram::<u64>::new(3).expect("histogram");
        PlacementStats {
            stages: [0; Stage::COUNT],
            probes_per_wakeup: h(),
            probes: 0,
            cost_ns: 0,
            select_idle_cpu_cost: h(),
            select_idle_core_probes: h(),
            select_idle_core_cost: h(),
            has_idle_cores_reads: 0,
            has_idle_cores_true: 0,
            nr_idle_scan_reads: 0,
            sis_util_no_scan: 0,
            llc_shared_writes: 0,
            wake_affine_this: 0,
            wake_affine_prev: 0,
            wake_affine_sync: 0,
            wake_wide: 0,
            fallback_rq: 0,
            wake_locality: [0; 4],
            preempted_idle_rejected: 0,
            wakeups_redirected: 0,
            decision_digest: 0xcbf2_9ce4_8422_2325,
            stage_names: &[],
        }
    }
}

impl PlacementStats {
    /// Fold one decision into the digest.
    pub fn digest(&mut self, task: u32, cpu: usize) {
        for b in task
            .to_le_bytes()
            .into_iter()
            .chain((cpu as u32).to_le_bytes())
        {
            self.decision_digest ^= b as u64;
            self.decision_digest = self.decision_digest.wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// The view of the machine a policy works on, for one call. Every accessor
/// that reads another CPU's state charges the read to `this_cpu`. Outside
/// this crate (a custom policy) the view is narrow: the machine, its
/// domains and costs, and the accessors below; the kernel's state itself
/// (run queues, LLC blocks, the task fields, the lines and the counters) is
/// reached only through them, so a policy can neither skip the cost model
/// nor change what the kernel's own entry points rely on:
///
/// ```compile_fail
/// fn widen(env: &mut sim::placement::WakeEnv, task: usize) {
///     // a task's allowed CPUs are the kernel's: not writable from a policy
///     env.tasks[task].cpus_allowed = topology::CpuMask::new();
/// }
/// ```
///
/// ```
/// fn allowed(env: &sim::placement::WakeEnv, task: usize, cpu: usize) -> bool {
///     env.task(task).cpus_allowed.test(cpu)
/// }
/// ```
pub struct WakeEnv<'a> {
    /// The machine.
    pub topo: &'a Topology,
    /// Its sched domains.
    pub sd: &'a SchedDomains,
    /// Cost profile.
    pub costs: &'a MachineCosts,
    /// Per-CPU run-queue summaries. Reading them here is free: a policy
    /// reads another CPU's through [`WakeEnv::read_rq`] and the idle tests,
    /// which charge the read.
    pub(crate) cpus: &'a [CpuState],
    /// Per-rq idle statistics (avg_idle, wake_avg_idle, ...): SIS_PROP reads
    /// and writes the waker's own entry (no remote cost).
    pub(crate) idle_stats: &'a mut [RqIdleStats],
    /// Per-LLC shared blocks, indexed by `sd.llc_index(cpu)`.
    pub(crate) llc: &'a mut [LlcShared],
    /// Per-task placement fields.
    pub(crate) tasks: &'a mut [TaskPlacement],
    /// Cache lines.
    pub(crate) lines: &'a mut LineTable,
    /// Statistics.
    pub(crate) stats: &'a mut PlacementStats,
    /// Current time.
    pub(crate) now: Nanos,
    /// Current time in jiffies.
    pub(crate) jiffies: u64,
    /// Ticks per second.
    pub(crate) hz: u64,
    /// The CPU doing the work (the waker's CPU).
    pub(crate) this_cpu: usize,
    /// Cost charged during this call (ns).
    pub(crate) cost_ns: Nanos,
    /// Run-queue probes during this call.
    pub(crate) probes: u32,
    /// Whether available_idle_cpu checks vcpu_is_preempted (kernel >= 4.18).
    pub(crate) vcpu_preempt_check: bool,
    /// Whether sched_idle CPUs count as idle in the scans (kernel >= 5.4).
    pub(crate) sched_idle_as_idle: bool,
}

impl<'a> WakeEnv<'a> {
    /// A fresh view, nothing charged nor probed yet, for a call on
    /// `this_cpu` at `now` (`jiffies`, with `hz` ticks a second), lending
    /// the kernel's state: the machine `topo` with its domains `sd` and
    /// costs, the run-queue summaries `cpus`, `idle_stats`, the LLC blocks
    /// `llc`, the task fields `tasks`, the `lines` and the counters
    /// `stats`; `vcpu_preempt_check` and `sched_idle_as_idle` are the
    /// kernel profile's. The one place a view is built: the kernel's
    /// `Kernel::wake_env_call` and the placement tests' fixture.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        topo: &'a Topology,
        sd: &'a SchedDomains,
        costs: &'a MachineCosts,
        cpus: &'a [CpuState],
        idle_stats: &'a mut [RqIdleStats],
        llc: &'a mut [LlcShared],
        tasks: &'a mut [TaskPlacement],
        lines: &'a mut LineTable,
        stats: &'a mut PlacementStats,
        this_cpu: usize,
        (now, jiffies, hz): (Nanos, u64, u64),
        (vcpu_preempt_check, sched_idle_as_idle): (bool, bool),
    ) -> Self {
        WakeEnv {
            topo,
            sd,
            costs,
            cpus,
            idle_stats,
            llc,
            tasks,
            lines,
            stats,
            now,
            jiffies,
            hz,
            this_cpu,
            cost_ns: 0,
            probes: 0,
            vcpu_preempt_check,
            sched_idle_as_idle,
        }
    }

    /// The task's placement fields, read-only: its allowed CPUs, the CPU
    /// it last ran on, its wakee flips and recent_used_cpu. (The kernel's
    /// state is written only by the kernel's own entry points, so a policy
    /// outside this crate cannot make the fallback pick a CPU the task may
    /// not use.)
    #[inline]
    pub fn task(&self, task: usize) -> &TaskPlacement {
        &self.tasks[task]
    }

    /// The current time, ns.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The current time in jiffies.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        self.jiffies
    }

    /// The CPU doing the work (the waker's): every read is charged from it.
    #[inline]
    pub fn this_cpu(&self) -> usize {
        self.this_cpu
    }

    /// The cost charged so far in this call, ns.
    #[inline]
    pub fn cost_ns(&self) -> Nanos {
        self.cost_ns
    }

    /// The run-queue probes made so far in this call.
    #[inline]
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// A new cache line for state of the policy's own that CPUs share (a
    /// global cursor, a per-LLC mask): allocate once, then read and write
    /// it with [`WakeEnv::read_line`] and [`WakeEnv::write_line`].
    pub fn alloc_line(&mut self) -> LineId {
        self.lines.alloc()
    }

    /// Read a line of the policy's own from `this_cpu`, charged.
    #[inline]
    pub fn read_line(&mut self, line: LineId) -> Nanos {
        let c = self.lines.read(line, self.this_cpu, self.topo, self.costs);
        self.cost_ns += c;
        c
    }

    /// Write a line of the policy's own from `this_cpu`, charged.
    #[inline]
    pub fn write_line(&mut self, line: LineId) -> Nanos {
        let c = self.lines.write(line, self.this_cpu, self.topo, self.costs);
        self.cost_ns += c;
        c
    }

    /// Charge a read of `cpu`'s run-queue line and return its state.
    #[inline]
    pub fn read_rq(&mut self, cpu: usize) -> &'a CpuState {
        let s = &self.cpus[cpu];
        self.cost_ns += self
            .lines
            .read(s.line, self.this_cpu, self.topo, self.costs);
        self.probes += 1;
        s
    }

    /// idle_cpu(): the CPU runs the idle task, has nothing queued and no
    /// pending remote wakeup.
    #[inline]
    pub fn idle_cpu(&mut self, cpu: usize) -> bool {
        let s = self.read_rq(cpu);
        s.curr_is_idle && s.nr_running == 0 && !s.ttwu_pending
    }

    /// available_idle_cpu() (4.18+): idle and, when the vCPU check is on, not
    /// a preempted vCPU.
    #[inline]
    pub fn available_idle_cpu(&mut self, cpu: usize) -> bool {
        if !self.idle_cpu(cpu) {
            return false;
        }
        if self.vcpu_preempt_check && self.cpus[cpu].vcpu_preempted {
            self.stats.preempted_idle_rejected += 1;
            return false;
        }
        true
    }

    /// sched_idle_cpu() (5.4+): only SCHED_IDLE tasks are queued. Reads the
    /// run-queue line (usually already pulled in by the idle test).
    #[inline]
    pub fn sched_idle_cpu(&mut self, cpu: usize) -> bool {
        let s = &self.cpus[cpu];
        s.nr_running > 0 && s.nr_running == s.nr_idle_tasks
    }

    /// The idle test of the scans: available_idle_cpu, or sched_idle_cpu when
    /// that counts as idle.
    #[inline]
    pub fn is_idle_for_placement(&mut self, cpu: usize) -> bool {
        self.available_idle_cpu(cpu) || (self.sched_idle_as_idle && self.sched_idle_cpu(cpu))
    }

    /// Index of `cpu`'s LLC shared block.
    #[inline]
    pub fn llc_of(&self, cpu: usize) -> usize {
        self.sd.llc_index(cpu)
    }

    /// Read `sd_llc_shared[cpu]->has_idle_cores` (charged).
    pub fn read_has_idle_cores(&mut self, cpu: usize) -> bool {
        let l = self.llc_of(cpu);
        self.cost_ns += self
            .lines
            .read(self.llc[l].line, self.this_cpu, self.topo, self.costs);
        self.stats.has_idle_cores_reads += 1;
        let v = self.llc[l].has_idle_cores;
        if v {
            self.stats.has_idle_cores_true += 1;
        }
        v
    }

    /// Write `sd_llc_shared[cpu]->has_idle_cores` (charged).
    pub fn write_has_idle_cores(&mut self, cpu: usize, v: bool) {
        let l = self.llc_of(cpu);
        self.cost_ns += self
            .lines
            .write(self.llc[l].line, self.this_cpu, self.topo, self.costs);
        self.stats.llc_shared_writes += 1;
        self.llc[l].has_idle_cores = v;
    }

    /// Read `sd_llc_shared[cpu]->nr_idle_scan` (charged).
    pub fn read_nr_idle_scan(&mut self, cpu: usize) -> u32 {
        let l = self.llc_of(cpu);
        self.cost_ns += self
            .lines
            .read(self.llc[l].line, self.this_cpu, self.topo, self.costs);
        self.stats.nr_idle_scan_reads += 1;
        self.llc[l].nr_idle_scan
    }
}

/// A placement policy.
pub trait Placement {
    /// Short name.
    fn name(&self) -> String;
    /// Choose a CPU for a waking or new task (select_task_rq).
    fn select_task_rq(&mut self, env: &mut WakeEnv, req: WakeRequest) -> Decision;
    /// `cpu` switches to its idle task (set_next_task_idle ->
    /// update_idle_core). `env.this_cpu == cpu`.
    fn cpu_enters_idle(&mut self, _env: &mut WakeEnv, _cpu: usize) {}
    /// The names of the policy's own stages: entry `i` names
    /// [`Stage::policy`]`(i)` (`Stage::Policy0` ...) in reports, so a
    /// policy outside the Linux path declares its steps without adding to
    /// [`Stage`]. At most [`Stage::POLICY`]`.len()` are used; a policy stage
    /// left unnamed is reported as `policy0` .... A run refuses names that
    /// [`check_stage_names`] refuses: more than [`Stage::POLICY`]`.len()`,
    /// an empty one, one given twice, or another stage's name (a built-in
    /// stage's, or `policyN` for another stage), as their counts would merge
    /// in reports. Snake_case names read best (`stage-NAME` metrics are
    /// made from them).
    fn stage_names(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Stage names a policy may not declare ([`Placement::stage_names`],
/// checked by [`check_stage_names`]). Each names the policy and the name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StageNameError {
    /// More names than [`Stage::POLICY`] has stages.
    #[error("policy {policy}: stage name {name:?} (stage {index}): a policy names at most {max} stages (Policy0 to Policy{last})", max = Stage::POLICY.len(), last = Stage::POLICY.len() - 1)]
    TooMany {
        /// The policy (its factory's name).
        policy: String,
        /// The first name past the last stage.
        name: String,
        /// Its index.
        index: usize,
    },
    /// An empty (or blank) name.
    #[error("policy {policy}: stage name {name:?} (stage {index}): the name is empty")]
    Empty {
        /// The policy.
        policy: String,
        /// The name as given.
        name: String,
        /// Its index.
        index: usize,
    },
    /// A name given twice.
    #[error(
        "policy {policy}: stage name {name:?} (stage {index}): given twice (also stage {first})"
    )]
    Duplicate {
        /// The policy.
        policy: String,
        /// The name.
        name: String,
        /// The second stage that has it.
        index: usize,
        /// The first.
        first: usize,
    },
    /// The name of a stage of the Linux path, of sched_ext's default, or
    /// the default name of another policy stage.
    #[error("policy {policy}: stage name {name:?} (stage {index}): {owner} has a stage of this name (their counts would merge in reports); choose another")]
    Builtin {
        /// The policy.
        policy: String,
        /// The name.
        name: String,
        /// Its index.
        index: usize,
        /// Whose stage has the name: `the Linux wake-up path`,
        /// `sched_ext's default` or `every policy (an unnamed stage)`.
        owner: &'static str,
    },
}

/// Check the names a policy gives its own stages
/// ([`Placement::stage_names`]): at most [`Stage::POLICY`]`.len()`, none
/// empty, none twice, and none the name of another stage (a stage of the
/// Linux wake-up path or of sched_ext's default, or `policyN`, the name of
/// an unnamed policy stage N other than its own): those share the result's
/// stage map and the lab's `stage-NAME` metrics, so such a name would merge
/// two counts. `policy` names the policy in the error.
pub fn check_stage_names(policy: &str, names: &[&str]) -> Result<(), StageNameError> {
    let policy = policy.to_string();
    for (index, &name) in names.iter().enumerate() {
        let Some(own) = Stage::policy(index) else {
            return Err(StageNameError::TooMany {
                policy,
                name: name.to_string(),
                index,
            });
        };
        if name.trim().is_empty() {
            return Err(StageNameError::Empty {
                policy,
                name: name.to_string(),
                index,
            });
        }
        if let Some(first) = names[..index].iter().position(|n| *n == name) {
            return Err(StageNameError::Duplicate {
                policy,
                name: name.to_string(),
                index,
                first,
            });
        }
        if let Some(other) = Stage::all().find(|&s| s != own && s.name() == name) {
            let owner = if other.policy_index().is_some() {
                "every policy (an unnamed stage)"
            } else if (Stage::ScxPrevIdleCore..=Stage::ScxStayPrev).contains(&other) {
                "sched_ext's default"
            } else {
                "the Linux wake-up path"
            };
            return Err(StageNameError::Builtin {
                policy,
                name: name.to_string(),
                index,
                owner,
            });
        }
    }
    Ok(())
}

/// Makes a fresh policy for each run: how a policy outside the Linux path
/// is chosen (`sim::run::PolicyChoice::Custom`) without a variant of its
/// own in the engine. A factory holds the policy's options already parsed;
/// it must be cheap to share between threads (runs go in parallel).
///
/// A run of such a policy is a sched_ext-like run: no load balancer (tasks
/// move only when they wake), the default sched domains, the run's EEVDF
/// parameters, no automatic NUMA balancing — as
/// [`scx::ScxDefault`]'s, so `scx` is the like-for-like comparison and
/// `linux` the comparison with the whole kernel.
pub trait PolicyFactory: Send + Sync {
    /// The name the policy is known by (an experiment file's `policy`).
    fn name(&self) -> &str;
    /// A policy for one run on `topo`, whose sched domains are `sd`.
    fn build(&self, topo: &Topology, sd: &SchedDomains) -> Box<dyn Placement>;
}

impl std::fmt::Debug for dyn PolicyFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PolicyFactory").field(&self.name()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(names: &[&str]) -> String {
        check_stage_names("mine", names).unwrap_err().to_string()
    }

    #[test]
    fn good_stage_names_pass() {
        check_stage_names("mine", &[]).unwrap();
        check_stage_names("mine", &["prev_is_idle", "llc_idle", "stay"]).unwrap();
        // eight names, the last one its own default name
        let eight = ["a", "b", "c", "d", "e", "f", "g", "policy7"];
        check_stage_names("mine", &eight).unwrap();
    }

    #[test]
    fn more_than_eight_stage_names_are_refused() {
        let nine = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        assert_eq!(
            err(&nine),
            "policy mine: stage name \"i\" (stage 8): a policy names at most 8 stages (Policy0 to Policy7)"
        );
    }

    #[test]
    fn an_empty_stage_name_is_refused() {
        assert_eq!(
            err(&["a", ""]),
            "policy mine: stage name \"\" (stage 1): the name is empty"
        );
        assert_eq!(
            err(&[" "]),
            "policy mine: stage name \" \" (stage 0): the name is empty"
        );
    }

    #[test]
    fn a_stage_name_given_twice_is_refused() {
        assert_eq!(
            err(&["a", "b", "a"]),
            "policy mine: stage name \"a\" (stage 2): given twice (also stage 0)"
        );
    }

    #[test]
    fn a_built_in_stage_name_is_refused() {
        assert_eq!(
            err(&["prev_idle"]),
            "policy mine: stage name \"prev_idle\" (stage 0): the Linux wake-up path has a stage of this name (their counts would merge in reports); choose another"
        );
        // every stage of the Linux path, whatever its position
        for s in Stage::all().filter(|s| *s < Stage::ScxPrevIdleCore) {
            let name = s.name();
            let e = err(&["x", &name]);
            assert!(e.contains("the Linux wake-up path"), "{e}");
        }
        assert!(err(&["scx_stay_prev"]).contains("sched_ext's default has a stage"));
        // policy1 is the name of an unnamed stage 1, not of stage 0
        assert!(err(&["policy1"]).contains("every policy (an unnamed stage)"));
        // errors are one line
        assert!(!err(&["prev_idle"]).contains('\n'));
    }
}
