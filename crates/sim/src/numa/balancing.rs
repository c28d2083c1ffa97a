//! Automatic NUMA balancing's per-task arithmetic (kernel/sched/fair.c,
//! CONFIG_NUMA_BALANCING): the scan period bounds (`task_scan_min`,
//! `task_scan_max`, `task_scan_start`), the new thread's first-scan stagger
//! (`init_numa_balancing`), the fault statistics and the preferred node
//! (`task_numa_fault`, `task_numa_placement`), the scan-period adaptation
//! (`update_task_scan_period`) and the page-migration filter
//! (`should_numa_migrate_memory`). The engine calls these at the points the
//! kernel does (`crate::engine` numa glue); nothing here knows the engine.
//!
//! Versions: Linux 4.17 to 6.19 share this arithmetic except where a
//! toggle of [`NumaFeatures`] says otherwise. Task groups (`numa_group`,
//! [`NumaGroup`]) gather threads that fault on each other's pages; their
//! statistics choose the preferred node and filter page moves on direct
//! (two-level) topologies; the distance-weighted scores of glueless-mesh
//! and backplane topologies are not modelled.

use super::memory::CpuPid;
use crate::Nanos;

const MS: Nanos = 1_000_000;

/// The sysctl and debugfs knobs (kernel/sched/fair.c defaults; under
/// /proc/sys/kernel up to 5.12, /sys/kernel/debug/sched/numa_balancing/
/// from 5.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaParams {
    /// `kernel.numa_balancing`.
    pub enabled: bool,
    /// `scan_delay_ms`: the first scan's delay and a new task's period.
    pub scan_delay_ms: u64,
    /// `scan_period_min_ms`.
    pub scan_period_min_ms: u64,
    /// `scan_period_max_ms`.
    pub scan_period_max_ms: u64,
    /// `scan_size_mb`: PTE updates per scan pass step.
    pub scan_size_mb: u64,
    /// Memory is mapped with transparent huge pages (a chunk faults and is
    /// counted as one PMD) rather than base pages.
    pub thp: bool,
}

impl Default for NumaParams {
    fn default() -> Self {
        NumaParams {
            enabled: false,
            scan_delay_ms: 1000,
            scan_period_min_ms: 1000,
            scan_period_max_ms: 60000,
            scan_size_mb: 256,
            thp: false,
        }
    }
}

/// (name, range, meaning) of the knobs [`NumaParams::set`] takes.
pub static NUMA_PARAMS: &[(&str, (u64, u64), &str)] = &[
    (
        "scan_delay_ms",
        (0, 3_600_000),
        "first-scan delay and a new task's scan period, ms [1000]",
    ),
    (
        "scan_period_min_ms",
        (1, 3_600_000),
        "minimum scan period, ms (divided by the 256 MB windows of the resident set) [1000]",
    ),
    (
        "scan_period_max_ms",
        (1, 3_600_000),
        "maximum scan period, ms (likewise divided) [60000]",
    ),
    (
        "scan_size_mb",
        (1, 1 << 20),
        "address space marked per scan, MB [256]",
    ),
];

impl NumaParams {
    /// Set knob `name` (one of [`NUMA_PARAMS`]) from its text; errors name
    /// the knob and its range.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let Some(&(_, (lo, hi), _)) = NUMA_PARAMS.iter().find(|p| p.0 == name) else {
            return Err(format!(
                "unknown NUMA balancing knob '{name}' (known: {})",
                NUMA_PARAMS
                    .iter()
                    .map(|p| p.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let v: u64 = value
            .parse()
            .ok()
            .filter(|v| (lo..=hi).contains(v))
            .ok_or_else(|| format!("{name}={value}: expected an integer in {lo}..={hi}"))?;
        match name {
            "scan_delay_ms" => self.scan_delay_ms = v,
            "scan_period_min_ms" => self.scan_period_min_ms = v,
            "scan_period_max_ms" => self.scan_period_max_ms = v,
            _ => self.scan_size_mb = v,
        }
        if self.scan_period_max_ms < self.scan_period_min_ms {
            return Err(format!(
                "scan_period_max_ms {} is below scan_period_min_ms {}",
                self.scan_period_max_ms, self.scan_period_min_ms
            ));
        }
        Ok(())
    }
}

/// `MAX_SCAN_WINDOW`: the scanner covers at most 2560 MB per second.
const MAX_SCAN_WINDOW_MB: u64 = 2560;
/// `NUMA_PERIOD_SLOTS` and `NUMA_PERIOD_THRESHOLD`.
const PERIOD_SLOTS: u64 = 10;
const PERIOD_THRESHOLD: u64 = 7;

/// How the 4.19 stagger computes a new thread's delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaggerUnits {
    /// As merged (137844759843) and still in 6.19: `task_scan_max()` is in
    /// ms but compared with a delay in ns, so the minimum is the ms figure
    /// read as ns and every thread's delay is about two ticks.
    Bug,
    /// Both terms in ns, as the changelog describes (the fixes proposed on
    /// LKML, not merged): thread k waits about k scan periods.
    Fixed,
}

crate::toggles! {
    /// NUMA balancing's version-dependent rules, as toggles of a kernel
    /// profile.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct NumaFeatures {}
    /// (name, values, description) of every NUMA-balancing toggle.
    table pub NUMA_FEATURES;
    defaults(_name, _v, ge);
    fn for_version = "The rules of kernel version `v`.";
    fn set = "Set toggle `name` to `value`. Ok(false): not a NUMA toggle; \
        Err(valid values): a bad value.";
    impl Default = (7, 0), "The latest tree's.";
    toggles {
        /// 137844759843 (4.19): a new thread's first scan is delayed by its
        /// position in the mm (`init_numa_balancing`).
        pub scan_stagger: bool = ge(4, 19), "numa_scan_stagger"
            => "a new thread's first NUMA scan waits for its place in the mm (137844759843, 4.19)";
        /// The stagger's units.
        pub stagger_units: StaggerUnits = StaggerUnits::Bug,
            "numa_stagger_units" ("bug|fixed": "bug" => StaggerUnits::Bug, "fixed" => StaggerUnits::Fixed)
            => "the stagger compares task_scan_max() in ms with ns, so every thread waits ~2 ticks (bug, as merged and in 6.19), or thread k waits ~k scan periods (fixed, proposed on LKML)";
        /// 37355bdc5a12 (4.19): pages of a task without a preferred node, or in
        /// its first 4 scan passes, migrate on the first fault that is private
        /// or unset, without the two-stage filter.
        pub early_migrate: bool = ge(4, 19), "numa_early_migrate"
            => "pages of a task with no preferred node or in its first 4 scan passes migrate on a private or first fault (37355bdc5a12, 4.19)";
        /// b6a60cf36d49 (4.19): placement runs only when the migrate retry time
        /// has passed; before, every fault ran it.
        pub placement_at_retry: bool = ge(4, 19), "numa_placement_at_retry"
            => "task_numa_placement runs only once the migrate retry time passed (b6a60cf36d49, 4.19), else at every fault";
    }
}

/// Per-task NUMA state (`task_struct`'s numa_* fields).
#[derive(Clone, Debug)]
pub struct TaskNuma {
    /// `numa_scan_period`, ms (0: never set).
    pub scan_period_ms: u64,
    /// `numa_scan_period_max`, ms.
    pub scan_period_max_ms: u64,
    /// `node_stamp`: the task runtime at which the next scan is due, ns.
    pub node_stamp: Nanos,
    /// `numa_scan_seq`: the mm's pass count at the last placement.
    pub scan_seq: u32,
    /// A `task_numa_work` is queued (runs on return to user).
    pub work_pending: bool,
    /// `numa_preferred_nid`.
    pub preferred: Option<u16>,
    /// `numa_migrate_retry`, simulated time.
    pub migrate_retry: Nanos,
    /// `numa_faults`: {MEM, CPU, MEMBUF, CPUBUF} x node x {shared, private}.
    pub faults: Vec<u64>,
    /// `total_numa_faults`.
    pub total_faults: u64,
    /// `numa_faults_locality`: remote, local, migrate-failed.
    pub locality: [u64; 3],
    /// Runtime and time at the last placement (`last_sum_exec_runtime`,
    /// `last_task_numa_placement`).
    pub last_exec: Nanos,
    /// See `last_exec`.
    pub last_time: Nanos,
    /// When this task's runtime first passed its node stamp plus period
    /// (its first scan request, whether or not the mm-wide limit let it
    /// scan): (time, task runtime).
    pub first_scan: Option<(Nanos, Nanos)>,
    /// Pages migrated on this task's faults.
    pub pages_migrated: u64,
    /// Its `numa_group` (an index of the engine's groups).
    pub group: Option<u32>,
    /// It has taken a hinting fault (the kernel allocates `numa_faults`
    /// then).
    pub faulted: bool,
}

/// `ACTIVE_NODE_FRACTION`: a node is active for a group when its CPU
/// faults exceed a third of the busiest node's.
const ACTIVE_NODE_FRACTION: u64 = 3;

/// A `numa_group`: tasks that share pages, with their summed statistics.
#[derive(Clone, Debug)]
pub struct NumaGroup {
    /// Members.
    pub nr_tasks: u32,
    /// {MEM, CPU} x node x {shared, private}.
    pub faults: Vec<u64>,
    /// Sum of the MEM faults.
    pub total_faults: u64,
    /// Nodes with CPU faults above 1/3 of the busiest's.
    pub active_nodes: u32,
    /// CPU faults of the busiest node.
    pub max_faults_cpu: u64,
    /// `gid`: the creating task's id.
    pub gid: u32,
}

impl NumaGroup {
    /// A group holding `tn`'s statistics alone (`task_numa_group`'s first
    /// call for a task).
    pub fn of_task(tn: &TaskNuma, gid: u32) -> NumaGroup {
        let n = tn.nodes();
        let mut g = NumaGroup {
            nr_tasks: 1,
            faults: vec![0; 2 * n * 2],
            total_faults: tn.total_faults,
            active_nodes: 1,
            max_faults_cpu: 0,
            gid,
        };
        for s in [FaultStat::Mem, FaultStat::Cpu] {
            for node in 0..n {
                for p in [false, true] {
                    let i = g.idx(s, node, p);
                    g.faults[i] = tn.faults[tn.idx(s, node, p)];
                }
            }
        }
        g
    }

    fn nodes(&self) -> usize {
        self.faults.len() / 4
    }

    /// Index of a MEM or CPU statistic.
    pub fn idx(&self, s: FaultStat, node: usize, private: bool) -> usize {
        debug_assert!(matches!(s, FaultStat::Mem | FaultStat::Cpu));
        2 * (s as usize * self.nodes() + node) + private as usize
    }

    /// `group_faults`: memory faults on `node`.
    pub fn mem_faults(&self, node: usize) -> u64 {
        self.faults[self.idx(FaultStat::Mem, node, false)]
            + self.faults[self.idx(FaultStat::Mem, node, true)]
    }

    /// `group_faults_cpu`: CPU faults on `node`.
    pub fn cpu_faults(&self, node: usize) -> u64 {
        self.faults[self.idx(FaultStat::Cpu, node, false)]
            + self.faults[self.idx(FaultStat::Cpu, node, true)]
    }

    /// `numa_is_active_node`.
    pub fn is_active(&self, node: usize) -> bool {
        self.cpu_faults(node) * ACTIVE_NODE_FRACTION > self.max_faults_cpu
    }

    /// `numa_group_count_active_nodes`.
    pub fn count_active_nodes(&mut self) {
        self.max_faults_cpu = (0..self.nodes())
            .map(|n| self.cpu_faults(n))
            .max()
            .unwrap_or(0);
        self.active_nodes = (0..self.nodes()).filter(|&n| self.is_active(n)).count() as u32;
    }

    /// Move `tn`'s statistics out of (`sign` false) or into (true) the
    /// group, with the member count.
    pub fn transfer(&mut self, tn: &TaskNuma, into: bool) {
        for s in [FaultStat::Mem, FaultStat::Cpu] {
            for node in 0..self.nodes() {
                for p in [false, true] {
                    let i = self.idx(s, node, p);
                    let v = tn.faults[tn.idx(s, node, p)];
                    self.faults[i] = if into {
                        self.faults[i] + v
                    } else {
                        self.faults[i].saturating_sub(v)
                    };
                }
            }
        }
        if into {
            self.total_faults += tn.total_faults;
            self.nr_tasks += 1;
        } else {
            self.total_faults = self.total_faults.saturating_sub(tn.total_faults);
            self.nr_tasks -= 1;
        }
    }
}

/// `group_weight` (direct topologies): the share of the group's memory
/// faults on `node`, in 1/1000.
pub fn group_weight(g: &NumaGroup, node: usize) -> i64 {
    if g.total_faults == 0 {
        return 0;
    }
    (1000 * g.mem_faults(node) / g.total_faults) as i64
}

/// Index into `TaskNuma::faults`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultStat {
    /// Decayed memory-node faults.
    Mem = 0,
    /// Decayed CPU-node faults, weighted by CPU use.
    Cpu = 1,
    /// This pass's memory-node faults.
    MemBuf = 2,
    /// This pass's CPU-node faults.
    CpuBuf = 3,
}

impl TaskNuma {
    /// A task's state at fork (`init_numa_balancing`): period = scan delay,
    /// no node stamp; `stagger_ns` from [`stagger_delay`] for a new thread.
    pub fn new(
        nodes: usize,
        params: &NumaParams,
        stagger_ns: Nanos,
        preferred: Option<u16>,
    ) -> Self {
        TaskNuma {
            scan_period_ms: params.scan_delay_ms,
            scan_period_max_ms: 0,
            node_stamp: stagger_ns,
            scan_seq: 0,
            work_pending: false,
            preferred,
            migrate_retry: 0,
            faults: vec![0; 4 * nodes * 2],
            total_faults: 0,
            locality: [0; 3],
            last_exec: 0,
            last_time: 0,
            first_scan: None,
            pages_migrated: 0,
            group: None,
            faulted: false,
        }
    }

    fn nodes(&self) -> usize {
        self.faults.len() / 8
    }

    /// `task_faults_idx`.
    pub fn idx(&self, s: FaultStat, node: usize, private: bool) -> usize {
        2 * (s as usize * self.nodes() + node) + private as usize
    }

    /// Faults of `s` on `node`, both kinds.
    pub fn faults_on(&self, s: FaultStat, node: usize) -> u64 {
        self.faults[self.idx(s, node, false)] + self.faults[self.idx(s, node, true)]
    }
}

/// Windows of `scan_size` in a resident set of `rss_bytes` (at least one).
fn windows(rss_bytes: u64, p: &NumaParams) -> u64 {
    let size = p.scan_size_mb.max(1) << 20;
    rss_bytes.div_ceil(size).max(1)
}

/// `task_scan_min`: ms.
pub fn task_scan_min(rss_bytes: u64, p: &NumaParams) -> u64 {
    // at most MAX_SCAN_WINDOW MB a second: the scan sizes that fit in it,
    // then a second over that (two integer divisions, as the kernel does)
    let size = p.scan_size_mb.max(1);
    let per_second = if size < MAX_SCAN_WINDOW_MB {
        MAX_SCAN_WINDOW_MB / size
    } else {
        1
    };
    (1000 / per_second).max(p.scan_period_min_ms / windows(rss_bytes, p))
}

/// `task_scan_max`: ms.
pub fn task_scan_max(rss_bytes: u64, p: &NumaParams) -> u64 {
    task_scan_min(rss_bytes, p).max(p.scan_period_max_ms / windows(rss_bytes, p))
}

/// `task_scan_start` without a numa_group: the minimum.
pub fn task_scan_start(rss_bytes: u64, p: &NumaParams) -> u64 {
    task_scan_min(rss_bytes, p)
}

/// A period scaled by a group's sharing: times its members, times
/// (shared + 1) / (private + shared + 1) of its memory faults.
fn group_scaled(period: u64, g: &NumaGroup) -> u64 {
    let (mut shared, mut private) = (0u64, 0u64);
    for n in 0..g.nodes() {
        shared += g.faults[g.idx(FaultStat::Mem, n, false)];
        private += g.faults[g.idx(FaultStat::Mem, n, true)];
    }
    (period as u128 * g.nr_tasks.max(1) as u128 * (shared as u128 + 1)
        / (private as u128 + shared as u128 + 1)) as u64
}

/// `task_scan_max` of a task in `group`: the maximum grows with the
/// group's members and shared faults.
pub fn task_scan_max_grouped(rss_bytes: u64, p: &NumaParams, group: Option<&NumaGroup>) -> u64 {
    let smin = task_scan_min(rss_bytes, p);
    let smax = p.scan_period_max_ms / windows(rss_bytes, p);
    let smax = group.map_or(smax, |g| smax.max(group_scaled(smax, g)));
    smin.max(smax)
}

/// `task_scan_start` of a task in `group`.
pub fn task_scan_start_grouped(rss_bytes: u64, p: &NumaParams, group: Option<&NumaGroup>) -> u64 {
    let smin = task_scan_min(rss_bytes, p);
    smin.max(group.map_or(smin, |g| group_scaled(smin, g)))
}

/// The first-scan delay of a new thread (`init_numa_balancing`, 4.19+):
/// min(the creator's scan maximum, its period x mm_users) plus two ticks,
/// ns. With [`StaggerUnits::Bug`] the maximum (ms) is read as ns.
pub fn stagger_delay(
    creator_scan_max_ms: u64,
    creator_period_ms: u64,
    mm_users: u64,
    tick_ns: Nanos,
    units: StaggerUnits,
) -> Nanos {
    let max = match units {
        StaggerUnits::Bug => creator_scan_max_ms,
        StaggerUnits::Fixed => creator_scan_max_ms * MS,
    };
    max.min(creator_period_ms * mm_users * MS) + 2 * tick_ns
}

/// `update_task_scan_period`: adapt the period to the last pass's faults
/// (`shared`, `private`), within [min, max]; returns true when the caller
/// must push the mm's next scan out by the new period (the slow-down case
/// with no local or shared faults, or a failed migration).
pub fn update_task_scan_period(
    tn: &mut TaskNuma,
    shared: u64,
    private: u64,
    min: u64,
    max: u64,
) -> bool {
    let [remote, local, failed] = tn.locality;
    if local + shared == 0 || failed > 0 {
        // slow down; the counts are kept (the kernel returns before
        // clearing them)
        tn.scan_period_ms = tn.scan_period_max_ms.min(2 * tn.scan_period_ms);
        return true;
    }
    let slot = tn.scan_period_ms.div_ceil(PERIOD_SLOTS).max(1) as i64;
    let lr = (PERIOD_SLOTS * local / (local + remote).max(1)) as i64;
    let ps = (PERIOD_SLOTS * private / (private + shared).max(1)) as i64;
    let th = PERIOD_THRESHOLD as i64;
    let diff = if ps >= th {
        // mostly private faults: slow down
        (ps - th).max(1) * slot
    } else if lr >= th {
        // mostly local faults: slow down
        (lr - th).max(1) * slot
    } else {
        // shared and remote: speed up
        -(th - lr.max(ps)) * slot
    };
    let p = (tn.scan_period_ms as i64 + diff).clamp(min as i64, max.max(min) as i64);
    tn.scan_period_ms = p as u64;
    tn.locality = [0; 3];
    false
}

/// What `task_numa_placement` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaPlacement {
    /// The node with the most memory faults (None: no faults yet).
    pub max_node: Option<u16>,
    /// Faults of this pass by kind: shared, private.
    pub shared: u64,
    /// See `shared`.
    pub private: u64,
}

/// `task_numa_placement`'s statistics step: halve the decayed counts, add
/// this pass's buffers (the CPU counts weighted by the task's share of CPU
/// time since the last placement), and find the node with the most memory
/// faults. `runtime` and `period` are the CPU time and wall time since the
/// last placement.
pub fn task_numa_placement(
    tn: &mut TaskNuma,
    mut group: Option<&mut NumaGroup>,
    runtime: Nanos,
    period: Nanos,
) -> NumaPlacement {
    let nodes = tn.nodes();
    let total = tn.locality[0] + tn.locality[1];
    // the CPU-use weight of this pass, 16.16 fixed point
    let f_weight = (runtime.min(period) << 16) / (period + 1);
    let mut kinds = [0u64; 2];
    let mut best: Option<(u64, u16)> = None;
    for n in 0..nodes {
        let mut node_faults = 0;
        for private in [false, true] {
            let mem = tn.idx(FaultStat::Mem, n, private);
            let membuf = tn.idx(FaultStat::MemBuf, n, private);
            let cpu = tn.idx(FaultStat::Cpu, n, private);
            let cpubuf = tn.idx(FaultStat::CpuBuf, n, private);
            let add = tn.faults[membuf];
            let half = tn.faults[mem] / 2;
            kinds[private as usize] += add;
            let w = f_weight * tn.faults[cpubuf] / (total + 1);
            let cpu_half = tn.faults[cpu] / 2;
            tn.faults[mem] = tn.faults[mem] - half + add;
            tn.faults[cpu] = tn.faults[cpu] - cpu_half + w;
            tn.faults[membuf] = 0;
            tn.faults[cpubuf] = 0;
            tn.total_faults = tn.total_faults - half + add;
            node_faults += tn.faults[mem];
            if let Some(g) = group.as_deref_mut() {
                // the same deltas, added to the group's sums
                let (gm, gc) = (
                    g.idx(FaultStat::Mem, n, private),
                    g.idx(FaultStat::Cpu, n, private),
                );
                g.faults[gm] = (g.faults[gm] + add).saturating_sub(half);
                g.faults[gc] = (g.faults[gc] + w).saturating_sub(cpu_half);
                g.total_faults = (g.total_faults + add).saturating_sub(half);
            }
        }
        if let Some(g) = group.as_deref() {
            node_faults = g.mem_faults(n);
        }
        if node_faults > 0 && best.is_none_or(|(f, _)| node_faults > f) {
            best = Some((node_faults, n as u16));
        }
    }
    if let Some(g) = group {
        g.count_active_nodes();
    }
    NumaPlacement {
        max_node: best.map(|b| b.1),
        shared: kinds[0],
        private: kinds[1],
    }
}

/// `task_weight`: the share of the task's memory faults on `node`, in
/// 1/1000 (direct topologies: no distance weighting).
pub fn task_weight(tn: &TaskNuma, node: usize) -> i64 {
    if tn.total_faults == 0 {
        return 0;
    }
    (1000 * tn.faults_on(FaultStat::Mem, node) / tn.total_faults) as i64
}

/// `should_numa_migrate_memory` without numa groups or memory tiers: should
/// a page last faulted by `last` (swapped for this fault's CPU and task,
/// `now_cpupid`) move to `dst_node`? `node_of(cpu)` is the CPU's node.
#[allow(clippy::too_many_arguments)]
pub fn should_numa_migrate_memory(
    tn: &TaskNuma,
    group: Option<&NumaGroup>,
    features: &NumaFeatures,
    last: Option<CpuPid>,
    now_cpupid: CpuPid,
    src_node: u16,
    dst_node: u16,
    node_of: impl Fn(usize) -> u16,
) -> bool {
    let own = |c: CpuPid| c.pid8 == now_cpupid.pid8;
    // 37355bdc5a12: early in the task's life, private or first faults move
    // the page at once
    if features.early_migrate
        && (tn.preferred.is_none() || tn.scan_seq <= 4)
        && last.is_none_or(own)
    {
        return true;
    }
    if let Some(l) = last {
        // the two-stage filter: a page moves only after two consecutive
        // faults from the same node
        if node_of(l.cpu as usize) != dst_node {
            return false;
        }
        if own(l) {
            // private
            return true;
        }
    }
    let Some(g) = group else {
        return true;
    };
    let (src, dst) = (src_node as usize, dst_node as usize);
    // a shared page moves toward a node the group uses much more
    if g.cpu_faults(dst) > 3 * g.cpu_faults(src) {
        return true;
    }
    // otherwise with a 25% hysteresis on CPU use per memory fault
    3 * g.cpu_faults(dst) as u128 * g.mem_faults(src) as u128
        > 4 * g.cpu_faults(src) as u128 * g.mem_faults(dst) as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> NumaParams {
        NumaParams {
            enabled: true,
            ..Default::default()
        }
    }

    #[test]
    fn scan_periods_scale_with_the_resident_set() {
        let p = params();
        // RSS <= 256 MB: min 1000, max 60000
        assert_eq!(task_scan_min(100 << 20, &p), 1000);
        assert_eq!(task_scan_max(100 << 20, &p), 60000);
        // RSS 4 GB: 16 windows, min max(100, 62) = 100, max 3750
        assert_eq!(task_scan_min(4 << 30, &p), 100);
        assert_eq!(task_scan_max(4 << 30, &p), 3750);
        // a group of 4 with half its faults shared: x 4 x 0.5
        let mut tn = TaskNuma::new(2, &p, 0, None);
        let (a, b) = (
            tn.idx(FaultStat::Mem, 0, false),
            tn.idx(FaultStat::Mem, 1, true),
        );
        tn.faults[a] = 99;
        tn.faults[b] = 100;
        let mut g = NumaGroup::of_task(&tn, 1);
        g.nr_tasks = 4;
        assert_eq!(
            task_scan_max_grouped(4 << 30, &p, Some(&g)),
            3750 * 4 * 100 / 200
        );
        assert_eq!(
            task_scan_start_grouped(4 << 30, &p, Some(&g)),
            100 * 4 * 100 / 200
        );
        assert_eq!(task_scan_start_grouped(4 << 30, &p, None), 100);
        // nothing resident counts as one window
        assert_eq!(task_scan_min(0, &p), 1000);
        // other scan sizes: 2560/300 = 8 a second -> 125 ms; 4096 -> 1 s
        let q = |mb| NumaParams {
            scan_size_mb: mb,
            scan_period_min_ms: 1,
            ..p
        };
        assert_eq!(task_scan_min(1 << 40, &q(300)), 125);
        assert_eq!(task_scan_min(1 << 40, &q(4096)), 1000);
    }

    #[test]
    fn knobs_set_within_their_ranges() {
        let mut p = params();
        p.set("scan_size_mb", "64").unwrap();
        p.set("scan_delay_ms", "0").unwrap();
        assert_eq!((p.scan_size_mb, p.scan_delay_ms), (64, 0));
        assert!(p.set("scan_size_mb", "0").unwrap_err().contains("1..="));
        assert!(p
            .set("scan_bogus", "1")
            .unwrap_err()
            .contains("known: scan_delay_ms"));
        assert!(p
            .set("scan_period_max_ms", "500")
            .unwrap_err()
            .contains("below"));
    }

    #[test]
    fn stagger_units() {
        let tick = 4_000_000;
        // the bug: the 60000 ms maximum read as 60000 ns
        assert_eq!(
            stagger_delay(60000, 1000, 5, tick, StaggerUnits::Bug),
            60_000 + 2 * tick
        );
        // fixed: thread 5 waits 5 periods
        assert_eq!(
            stagger_delay(60000, 1000, 5, tick, StaggerUnits::Fixed),
            5_000 * MS + 2 * tick
        );
        // capped by the maximum
        assert_eq!(
            stagger_delay(3000, 1000, 50, tick, StaggerUnits::Fixed),
            3000 * MS + 2 * tick
        );
    }

    #[test]
    fn scan_period_slows_for_private_and_speeds_for_shared_remote() {
        let p = params();
        let mut tn = TaskNuma::new(2, &p, 0, None);
        tn.scan_period_ms = 1000;
        tn.scan_period_max_ms = 60000;
        // all private, half local: ps = 10 -> +3 slots
        tn.locality = [50, 50, 0];
        assert!(!update_task_scan_period(&mut tn, 0, 100, 100, 60000));
        assert_eq!(tn.scan_period_ms, 1300);
        // all shared, all remote: local + shared > 0, lr = ps = 0 -> -7 slots
        tn.locality = [100, 0, 0];
        update_task_scan_period(&mut tn, 100, 0, 100, 60000);
        assert_eq!(tn.scan_period_ms, 1300 - 7 * 130);
        // no local and no shared faults: double, push the mm's scan out,
        // and keep the counts for the next pass
        tn.locality = [100, 0, 0];
        assert!(update_task_scan_period(&mut tn, 0, 100, 100, 60000));
        assert_eq!(tn.scan_period_ms, 780);
        assert_eq!(tn.locality, [100, 0, 0]);
    }

    #[test]
    fn placement_decays_and_prefers_the_node_with_most_faults() {
        let p = params();
        let mut tn = TaskNuma::new(2, &p, 0, None);
        let b1 = tn.idx(FaultStat::MemBuf, 1, true);
        tn.faults[b1] = 512;
        tn.locality = [512, 0, 0];
        let pl = task_numa_placement(&mut tn, None, 10, 10);
        assert_eq!(pl.max_node, Some(1));
        assert_eq!((pl.shared, pl.private), (0, 512));
        assert_eq!(tn.total_faults, 512);
        // a later pass with 300 faults on node 0: node 1 decays to 256
        let b0 = tn.idx(FaultStat::MemBuf, 0, true);
        tn.faults[b0] = 300;
        let pl = task_numa_placement(&mut tn, None, 10, 10);
        assert_eq!(pl.max_node, Some(0));
        assert_eq!(tn.total_faults, 556);
        assert_eq!(task_weight(&tn, 0), 1000 * 300 / 556);
    }

    #[test]
    fn two_stage_filter() {
        let p = params();
        let f = NumaFeatures {
            early_migrate: false,
            ..Default::default()
        };
        let tn = TaskNuma::new(2, &p, 0, Some(1));
        let node_of = |cpu: usize| (cpu / 4) as u16;
        let me = CpuPid::of(4, 9);
        // first fault ever: moves
        assert!(should_numa_migrate_memory(
            &tn, None, &f, None, me, 0, 1, node_of
        ));
        // last fault from node 0: does not move to node 1 yet
        assert!(!should_numa_migrate_memory(
            &tn,
            None,
            &f,
            Some(CpuPid::of(0, 9)),
            me,
            0,
            1,
            node_of
        ));
        // last fault from node 1 by another task: moves (no groups)
        assert!(should_numa_migrate_memory(
            &tn,
            None,
            &f,
            Some(CpuPid::of(5, 3)),
            me,
            0,
            1,
            node_of
        ));
        // early migration skips the filter for the task's own pages
        let early = NumaFeatures::default();
        assert!(should_numa_migrate_memory(
            &tn,
            None,
            &early,
            Some(CpuPid::of(0, 9)),
            me,
            0,
            1,
            node_of
        ));
    }

    #[test]
    fn group_rules_for_shared_pages() {
        let p = params();
        let f = NumaFeatures {
            early_migrate: false,
            ..Default::default()
        };
        let mut tn = TaskNuma::new(2, &p, 0, Some(1));
        let node_of = |cpu: usize| (cpu / 4) as u16;
        let me = CpuPid::of(4, 9);
        // a shared fault (last by task 3 on node 1) moving 0 -> 1
        let last = Some(CpuPid::of(5, 3));
        let set = |tn: &mut TaskNuma, s: FaultStat, node: usize, v: u64| {
            let i = tn.idx(s, node, false);
            tn.faults[i] = v;
            if s == FaultStat::Mem {
                tn.total_faults += v;
            }
        };
        // node 1 used 4x as much by the group's CPUs: moves
        set(&mut tn, FaultStat::Cpu, 0, 100);
        set(&mut tn, FaultStat::Cpu, 1, 400);
        set(&mut tn, FaultStat::Mem, 0, 500);
        set(&mut tn, FaultStat::Mem, 1, 500);
        let g = NumaGroup::of_task(&tn, 9);
        assert!(should_numa_migrate_memory(
            &tn,
            Some(&g),
            &f,
            last,
            me,
            0,
            1,
            node_of
        ));
        // CPU use 1.2x, memory already 2x on node 1: 3*120*200 > 4*100*400 is false
        let mut tn = TaskNuma::new(2, &p, 0, Some(1));
        set(&mut tn, FaultStat::Cpu, 0, 100);
        set(&mut tn, FaultStat::Cpu, 1, 120);
        set(&mut tn, FaultStat::Mem, 0, 200);
        set(&mut tn, FaultStat::Mem, 1, 400);
        let mut g = NumaGroup::of_task(&tn, 9);
        assert!(!should_numa_migrate_memory(
            &tn,
            Some(&g),
            &f,
            last,
            me,
            0,
            1,
            node_of
        ));
        // without a group a shared fault moves
        assert!(should_numa_migrate_memory(
            &tn, None, &f, last, me, 0, 1, node_of
        ));
        // both nodes active: CPU faults 100 and 120 are each above 120/3
        g.count_active_nodes();
        assert_eq!((g.active_nodes, g.max_faults_cpu), (2, 120));
        // moving the task out and in again restores the sums
        let before = g.clone();
        g.transfer(&tn, false);
        assert_eq!((g.nr_tasks, g.total_faults), (0, 0));
        g.transfer(&tn, true);
        assert_eq!(g.faults, before.faults);
    }
}
