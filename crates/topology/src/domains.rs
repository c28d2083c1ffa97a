//! Linux sched-domain construction (linux-wakeup-path.md §1), modelled on
//! `build_sched_domains()` / `sd_init()` / `cpu_attach_domain()` /
//! `update_top_cache_domain()` in kernel/sched/topology.c as of v6.7+.
//!
//! Per CPU, the levels are built bottom-up: SMT (`cpu_smt_mask`), CLS
//! (`cpu_clustergroup_mask`, CONFIG_SCHED_CLUSTER, v5.16+), MC
//! (`cpu_coregroup_mask`, the LLC), PKG (`cpu_cpu_mask`, the CPU's node, as
//! on NUMA machines; called DIE before v6.7), then NODE and one NUMA level
//! per further distinct SLIT distance (`sched_init_numa()`). Degenerate
//! domains are then removed per CPU the way `cpu_attach_domain()` does, and
//! the per-CPU shortcuts (`sd_llc`, `sd_llc_id`, `sd_share_id`, ...) are
//! derived from what is left.

use crate::cpumask::CpuMask;
use crate::topology::Topology;
use serde::{Serialize, Serializer};
use std::fmt;

/// Sched-domain flags, one bit each, in the order of the kernel's
/// include/linux/sched/sd_flags.h (the values are ours).
pub mod sd_flags {
    /// Balance when about to become idle.
    pub const BALANCE_NEWIDLE: u32 = 1 << 0;
    /// Balance on exec.
    pub const BALANCE_EXEC: u32 = 1 << 1;
    /// Balance on fork/clone.
    pub const BALANCE_FORK: u32 = 1 << 2;
    /// Balance on wakeup (off on every level since v3.x).
    pub const BALANCE_WAKE: u32 = 1 << 3;
    /// Consider waking the task on the waker's CPU.
    pub const WAKE_AFFINE: u32 = 1 << 4;
    /// Groups have different max CPU capacities.
    pub const ASYM_CPUCAPACITY: u32 = 1 << 5;
    /// Every group sees the full capacity range.
    pub const ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
    /// Members share CPU capacity (SMT); SD_SHARE_CPUPOWER in <= 3.x.
    pub const SHARE_CPUCAPACITY: u32 = 1 << 7;
    /// Members share a cluster (L2 or L3 tag), v6.7+.
    pub const CLUSTER: u32 = 1 << 8;
    /// Members share the last-level cache; SD_SHARE_PKG_RESOURCES before ~v6.9.
    pub const SHARE_LLC: u32 = 1 << 9;
    /// Only one balance at a time on this level (NUMA).
    pub const SERIALIZE: u32 = 1 << 10;
    /// Place busy tasks earlier in the domain (POWER SMT, ITMT).
    pub const ASYM_PACKING: u32 = 1 << 11;
    /// Prefer to place tasks in a sibling domain.
    pub const PREFER_SIBLING: u32 = 1 << 12;
    /// Groups overlap (NUMA levels above NODE).
    pub const OVERLAP: u32 = 1 << 13;
    /// Cross-node balancing.
    pub const NUMA: u32 = 1 << 14;

    /// `(bit, kernel name without the SD_ prefix)`, lowest bit first.
    pub const NAMES: &[(u32, &str)] = &[
        (BALANCE_NEWIDLE, "BALANCE_NEWIDLE"),
        (BALANCE_EXEC, "BALANCE_EXEC"),
        (BALANCE_FORK, "BALANCE_FORK"),
        (BALANCE_WAKE, "BALANCE_WAKE"),
        (WAKE_AFFINE, "WAKE_AFFINE"),
        (ASYM_CPUCAPACITY, "ASYM_CPUCAPACITY"),
        (ASYM_CPUCAPACITY_FULL, "ASYM_CPUCAPACITY_FULL"),
        (SHARE_CPUCAPACITY, "SHARE_CPUCAPACITY"),
        (CLUSTER, "CLUSTER"),
        (SHARE_LLC, "SHARE_LLC"),
        (SERIALIZE, "SERIALIZE"),
        (ASYM_PACKING, "ASYM_PACKING"),
        (PREFER_SIBLING, "PREFER_SIBLING"),
        (OVERLAP, "OVERLAP"),
        (NUMA, "NUMA"),
    ];

    /// Names of the flags set in `flags`, lowest bit first.
    pub fn names(flags: u32) -> Vec<&'static str> {
        NAMES
            .iter()
            .filter(|(b, _)| flags & b != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

use sd_flags::*;

/// The kernel's `node_reclaim_distance` default (`RECLAIM_DISTANCE`):
/// NUMA levels farther than this lose exec/fork balancing and wake-affine.
pub const NODE_RECLAIM_DISTANCE: u32 = 30;

/// Kernel configuration / version choices that change the domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainOptions {
    /// CONFIG_SCHED_CLUSTER: build the CLS level (kernels >= 5.16).
    pub cluster_level: bool,
    /// Put SD_CLUSTER on the CLS level (kernels >= 6.7; 5.16-6.6 had only
    /// SD_SHARE_PKG_RESOURCES there).
    pub cluster_flag: bool,
    /// `sd_init()`'s default imbalance_pct: 117 since ~v5.10, 125 before.
    pub imbalance_pct: u32,
}

impl Default for DomainOptions {
    /// The latest kernel: cluster level with SD_CLUSTER, imbalance_pct 117.
    fn default() -> Self {
        DomainOptions {
            cluster_level: true,
            cluster_flag: true,
            imbalance_pct: 117,
        }
    }
}

/// A topology level (`struct sched_domain_topology_level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Hardware threads of a core.
    Smt,
    /// Cluster (cores sharing an L2 / L3 tag).
    Cls,
    /// Multi-core: CPUs sharing the LLC.
    Mc,
    /// The CPU's node within its package (DIE before v6.7).
    Pkg,
    /// `Numa(0)` is the NODE level (local distance); `Numa(k)` the level of
    /// the k-th larger distinct SLIT distance.
    Numa(u8),
}

impl Level {
    /// The kernel's level name: SMT, CLS, MC, PKG, NODE, NUMA.
    pub fn name(&self) -> &'static str {
        match self {
            Level::Smt => "SMT",
            Level::Cls => "CLS",
            Level::Mc => "MC",
            Level::Pkg => "PKG",
            Level::Numa(0) => "NODE",
            Level::Numa(_) => "NUMA",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One group of a domain (`struct sched_group`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchedGroup {
    /// CPUs of the group: a child-domain span.
    pub span: CpuMask,
    /// The child domain's flags (`sg->flags = child->flags`, v6.1+), 0 at
    /// the bottom level.
    pub flags: u32,
}

/// One CPU's domain at one level (`struct sched_domain`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchedDomain {
    /// The topology level it was built from.
    pub level: Level,
    /// CPUs covered.
    pub span: CpuMask,
    /// `span.weight()`.
    pub span_weight: usize,
    /// `sd_flags` bits (topology part plus `sd_init()` behaviour bits).
    pub flags: u32,
    /// Groups; the first is the child span containing this CPU, the rest
    /// follow in wrapped CPU order from this CPU (`build_sched_groups`).
    pub groups: Vec<SchedGroup>,
    /// Load-balance imbalance threshold, percent.
    pub imbalance_pct: u32,
    /// Balance interval lower bound (= span weight), ms.
    pub min_interval_ms: u64,
    /// Balance interval upper bound (= 2 x span weight), ms.
    pub max_interval_ms: u64,
    /// Interval multiplier when busy.
    pub busy_factor: u32,
    /// `sd->imb_numa_nr` (5.18+): tasks a NUMA-level group may run above
    /// its share before fork/wake balancing moves them; 0 below the LLC.
    pub imb_numa_nr: u32,
}

impl SchedDomain {
    /// Whether all of `flags` are set.
    #[inline]
    pub fn has(&self, flags: u32) -> bool {
        self.flags & flags == flags
    }
}

/// The domain hierarchy of every CPU plus the kernel's per-CPU shortcuts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomains {
    per_cpu: Vec<Vec<SchedDomain>>,
    llc_level: Vec<Option<usize>>,
    llc_size: Vec<usize>,
    llc_id: Vec<usize>,
    share_id: Vec<usize>,
    llc_index: Vec<usize>,
    llc_ids: Vec<usize>,
    numa_distances: Vec<u32>,
    smt_present: bool,
    cluster_active: bool,
}

/// A level before degeneration: its flags and every CPU's span.
struct RawLevel {
    level: Level,
    flags: u32,
    imbalance_pct: u32,
    spans: Vec<CpuMask>,
}

/// `sd_init()`: topology flags plus behaviour flags, and imbalance_pct.
fn sd_init(topo_flags: u32, numa_distance: Option<u32>, opts: &DomainOptions) -> (u32, u32) {
    let mut flags =
        topo_flags | BALANCE_NEWIDLE | BALANCE_EXEC | BALANCE_FORK | WAKE_AFFINE | PREFER_SIBLING;
    let mut imb = opts.imbalance_pct;
    if flags & SHARE_CPUCAPACITY != 0 {
        imb = 110;
    } else if flags & SHARE_LLC != 0 {
        // Fixed at 117 both before and after the default changed (~v5.10).
        imb = 117;
    } else if flags & NUMA != 0 {
        flags &= !PREFER_SIBLING;
        flags |= SERIALIZE;
        if numa_distance.is_some_and(|d| d > NODE_RECLAIM_DISTANCE) {
            flags &= !(BALANCE_EXEC | BALANCE_FORK | WAKE_AFFINE);
        }
    }
    (flags, imb)
}

impl SchedDomains {
    /// Build every CPU's domains for `topo` as a kernel configured by
    /// `opts` would.
    ///
    /// ```
    /// use topology::{preset, DomainOptions, SchedDomains};
    /// let t = preset("kunpeng920").unwrap();
    /// let sd = SchedDomains::build(&t, &DomainOptions::default());
    /// let names: Vec<_> = sd.domains(0).iter().map(|d| (d.level.name(), d.span_weight)).collect();
    /// assert_eq!(names, [("CLS", 4), ("MC", 24), ("NUMA", 48), ("NUMA", 72), ("NUMA", 96)]);
    /// assert_eq!(sd.sd_llc_size(0), 24);
    /// assert!(sd.cpus_share_resources(0, 3) && !sd.cpus_share_resources(0, 4));
    /// ```
    pub fn build(topo: &Topology, opts: &DomainOptions) -> SchedDomains {
        let n = topo.nr_cpus();
        let all = topo.all_cpus();
        let mut raw: Vec<RawLevel> = Vec::new();

        let mut push =
            |level: Level, topo_flags: u32, dist: Option<u32>, mask: &dyn Fn(usize) -> CpuMask| {
                let (flags, imbalance_pct) = sd_init(topo_flags, dist, opts);
                raw.push(RawLevel {
                    level,
                    flags,
                    imbalance_pct,
                    spans: (0..n).map(mask).collect(),
                });
            };

        // x86 cpu_smt_flags() / arm64 default_topology: SMT shares capacity
        // and the LLC.
        push(Level::Smt, SHARE_CPUCAPACITY | SHARE_LLC, None, &|c| {
            topo.smt_mask(c).clone()
        });
        if opts.cluster_level {
            // cpu_clustergroup_mask(). The level exists where the cluster
            // differs from both the core and the LLC; elsewhere the span is
            // the SMT mask, so it degenerates. A cluster equal to the LLC
            // collapses as linux-wakeup-path.md §1 says. A cluster strictly
            // above the LLC (Altra) is kept, which matches the v5.17-era
            // domains calibration.md quotes (CLS[2] -> DIE[80]); later
            // kernels ("arch_topology: Limit span of
            // cpu_clustergroup_mask()") clip it to the SMT mask instead.
            let cls_flags = SHARE_LLC | if opts.cluster_flag { CLUSTER } else { 0 };
            push(Level::Cls, cls_flags, None, &|c| {
                let cl = topo.cluster_mask(c);
                if cl != topo.smt_mask(c) && cl != topo.llc_mask(c) {
                    cl.clone()
                } else {
                    topo.smt_mask(c).clone()
                }
            });
        }
        push(Level::Mc, SHARE_LLC, None, &|c| topo.llc_mask(c).clone());
        // cpu_cpu_mask() is cpumask_of_node(cpu_to_node(cpu)).
        push(Level::Pkg, 0, None, &|c| topo.node_mask(c).clone());

        // sched_init_numa(): one level per distinct distance; the first
        // (local distance) is NODE and has no SD_NUMA; the others are
        // SD_NUMA with overlapping groups.
        let nodes = topo.nr_nodes();
        let mut dists: Vec<u32> = (0..nodes)
            .flat_map(|a| (0..nodes).map(move |b| (a, b)))
            .map(|(a, b)| topo.node_distance(a, b))
            .collect();
        dists.sort_unstable();
        dists.dedup();
        for (k, &d) in dists.iter().enumerate() {
            let topo_flags = if k == 0 { 0 } else { NUMA | OVERLAP };
            let level = Level::Numa(k.min(u8::MAX as usize) as u8);
            push(
                level,
                topo_flags,
                if k == 0 { None } else { Some(d) },
                &|c| {
                    let me = topo.place(c).node;
                    let mut m = CpuMask::new();
                    for j in 0..nodes {
                        if topo.node_distance(me, j) <= d {
                            m.or_assign(topo.node_cpus(j));
                        }
                    }
                    m
                },
            );
        }

        // build_sched_domain(): restrict to the CPU map, and if a child is
        // not inside its parent ("BUG: arch topology borken"), widen the
        // parent to cover it.
        for l in 0..raw.len() {
            for c in 0..n {
                raw[l].spans[c].and_assign(all);
                if l > 0 && !raw[l - 1].spans[c].is_subset(&raw[l].spans[c]) {
                    let child = raw[l - 1].spans[c].clone();
                    raw[l].spans[c].or_assign(&child);
                }
            }
        }

        let mut per_cpu = Vec::with_capacity(n);
        for cpu in 0..n {
            // build_sched_domains() sets imb_numa_nr on the full chain,
            // before cpu_attach_domain() removes degenerate levels: on the
            // first level above the LLC, the LLCs it spans (1/8 of its span
            // when it is one LLC); above, that times span / (span of the
            // first NUMA level).
            let mut imb_raw = vec![0u32; raw.len()];
            let (mut imb, mut imb_span) = (0usize, 1usize);
            for l in 0..raw.len() {
                let w = raw[l].spans[cpu].weight();
                let child_llc = l > 0 && raw[l - 1].flags & SHARE_LLC != 0;
                if raw[l].flags & SHARE_LLC == 0 && child_llc {
                    let nr_llcs = w / raw[l - 1].spans[cpu].weight().max(1);
                    imb = if nr_llcs == 1 { w >> 3 } else { nr_llcs }.max(1);
                    imb_span = raw[l + 1..]
                        .iter()
                        .find(|t| t.flags & NUMA != 0)
                        .map_or(w, |t| t.spans[cpu].weight());
                    imb_raw[l] = imb as u32;
                } else {
                    imb_raw[l] = (imb * (w / imb_span.max(1)).max(1)) as u32;
                }
            }
            // cpu_attach_domain(): drop each parent whose span equals its
            // child's (sd_parent_degenerate; for the levels built here an
            // equal span always means the parent adds nothing), passing
            // PREFER_SIBLING down; then drop the bottom domain if it has a
            // single CPU (sd_degenerate). A bottom domain of >1 CPU has >1
            // group, so nothing else is degenerate.
            let mut kept: Vec<(usize, u32)> = Vec::new(); // (raw level, flags)
            for (l, rl) in raw.iter().enumerate() {
                match kept.last_mut() {
                    Some((cl, cflags)) if raw[*cl].spans[cpu] == rl.spans[cpu] => {
                        *cflags |= rl.flags & PREFER_SIBLING;
                    }
                    _ => kept.push((l, rl.flags)),
                }
            }
            if kept
                .first()
                .is_some_and(|&(l, _)| raw[l].spans[cpu].weight() == 1)
            {
                kept.remove(0);
            }
            let mut doms: Vec<SchedDomain> = Vec::with_capacity(kept.len());
            for &(l, flags) in &kept {
                let span = raw[l].spans[cpu].clone();
                // The surviving child's flags go on the groups (v6.1+ sets
                // sg->flags from the child and clears them when the child
                // is removed).
                let gflags = doms.last().map_or(0, |d| d.flags);
                // build_sched_groups() / build_overlap_sched_groups(): walk
                // the span from this CPU with wrap-around; each uncovered
                // CPU contributes its child-level span (its raw level below,
                // which equals the surviving child where one was removed).
                // For NUMA levels the kernel additionally handles spans that
                // do not contain the sibling and asymmetric distances
                // (find_descended_sibling); that refinement is not modelled.
                let mut groups = Vec::new();
                let mut covered = CpuMask::new();
                for i in span.iter_wrap(cpu) {
                    if covered.test(i) {
                        continue;
                    }
                    let g = if l == 0 {
                        CpuMask::from_cpus([i])
                    } else {
                        raw[l - 1].spans[i].and(&span)
                    };
                    covered.or_assign(&g);
                    groups.push(SchedGroup {
                        span: g,
                        flags: gflags,
                    });
                }
                let w = span.weight();
                doms.push(SchedDomain {
                    level: raw[l].level,
                    span,
                    span_weight: w,
                    flags,
                    groups,
                    imbalance_pct: raw[l].imbalance_pct,
                    min_interval_ms: w as u64,
                    max_interval_ms: 2 * w as u64,
                    busy_factor: 16,
                    imb_numa_nr: imb_raw[l],
                });
            }
            per_cpu.push(doms);
        }

        // update_top_cache_domain().
        let mut llc_level = vec![None; n];
        let mut llc_size = vec![1; n];
        let mut llc_id: Vec<usize> = (0..n).collect();
        let mut share_id = vec![0; n];
        let mut cluster_active = false;
        for cpu in 0..n {
            let doms = &per_cpu[cpu];
            if let Some(i) = doms.iter().rposition(|d| d.flags & SHARE_LLC != 0) {
                llc_level[cpu] = Some(i);
                llc_size[cpu] = doms[i].span_weight;
                llc_id[cpu] = doms[i].span.first().unwrap_or(cpu);
            }
            share_id[cpu] = match doms.iter().find(|d| d.flags & CLUSTER != 0) {
                Some(d) => {
                    cluster_active = true;
                    d.span.first().unwrap_or(cpu)
                }
                None => llc_id[cpu],
            };
        }
        let mut llc_ids = llc_id.clone();
        llc_ids.sort_unstable();
        llc_ids.dedup();
        let llc_index = llc_id
            .iter()
            .map(|id| llc_ids.binary_search(id).unwrap_or(0))
            .collect();

        SchedDomains {
            per_cpu,
            llc_level,
            llc_size,
            llc_id,
            share_id,
            llc_index,
            llc_ids,
            numa_distances: dists,
            smt_present: topo.threads_per_core() >= 2,
            cluster_active,
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.per_cpu.len()
    }

    /// `cpu`'s domains, bottom-up, after degenerate removal.
    #[inline]
    pub fn domains(&self, cpu: usize) -> &[SchedDomain] {
        &self.per_cpu[cpu]
    }

    /// `sd_llc[cpu]`: the highest domain with SD_SHARE_LLC.
    #[inline]
    pub fn sd_llc(&self, cpu: usize) -> Option<&SchedDomain> {
        self.llc_level[cpu].map(|i| &self.per_cpu[cpu][i])
    }

    /// Index of `sd_llc(cpu)` in `domains(cpu)`.
    #[inline]
    pub fn sd_llc_level(&self, cpu: usize) -> Option<usize> {
        self.llc_level[cpu]
    }

    /// `sd_llc_size[cpu]`: weight of the LLC domain, 1 without one.
    #[inline]
    pub fn sd_llc_size(&self, cpu: usize) -> usize {
        self.llc_size[cpu]
    }

    /// `sd_llc_id[cpu]`: first CPU of the LLC domain, or `cpu`.
    #[inline]
    pub fn sd_llc_id(&self, cpu: usize) -> usize {
        self.llc_id[cpu]
    }

    /// `sd_share_id[cpu]` (v6.7+): first CPU of the lowest SD_CLUSTER
    /// domain, else `sd_llc_id`.
    #[inline]
    pub fn sd_share_id(&self, cpu: usize) -> usize {
        self.share_id[cpu]
    }

    /// `sd_numa[cpu]`: the lowest SD_NUMA domain.
    pub fn sd_numa(&self, cpu: usize) -> Option<&SchedDomain> {
        self.lowest_flag_domain(cpu, NUMA)
    }

    /// `lowest_flag_domain()`: the lowest domain of `cpu` with all `flags`.
    pub fn lowest_flag_domain(&self, cpu: usize, flags: u32) -> Option<&SchedDomain> {
        self.per_cpu[cpu].iter().find(|d| d.has(flags))
    }

    /// `highest_flag_domain()`: the highest domain of `cpu` with all `flags`
    /// (the kernel stops at the first domain without them, which gives the
    /// same result for the SHARED_CHILD flags it is used with).
    pub fn highest_flag_domain(&self, cpu: usize, flags: u32) -> Option<&SchedDomain> {
        self.per_cpu[cpu].iter().rev().find(|d| d.has(flags))
    }

    /// `cpus_share_cache()`: same CPU or same `sd_llc_id`.
    #[inline]
    pub fn cpus_share_cache(&self, a: usize, b: usize) -> bool {
        a == b || self.llc_id[a] == self.llc_id[b]
    }

    /// `cpus_share_resources()` (v6.7+): same CPU or same `sd_share_id`.
    #[inline]
    pub fn cpus_share_resources(&self, a: usize, b: usize) -> bool {
        a == b || self.share_id[a] == self.share_id[b]
    }

    /// `sched_smt_present`: some core has two or more threads.
    pub fn smt_present(&self) -> bool {
        self.smt_present
    }

    /// `sched_cluster_active` (v6.7+): some CPU kept an SD_CLUSTER domain.
    pub fn cluster_active(&self) -> bool {
        self.cluster_active
    }

    /// Distinct `sd_llc_id` values, ascending.
    pub fn llc_ids(&self) -> &[usize] {
        &self.llc_ids
    }

    /// Dense index (`0..nr_llcs()`) of `cpu`'s `sd_llc_id`, for per-LLC
    /// arrays such as `sched_domain_shared`.
    #[inline]
    pub fn llc_index(&self, cpu: usize) -> usize {
        self.llc_index[cpu]
    }

    /// Number of distinct `sd_llc_id` values.
    pub fn nr_llcs(&self) -> usize {
        self.llc_ids.len()
    }

    /// The distinct SLIT distances, ascending; `Level::Numa(k)` is built
    /// for distance `numa_distances()[k]`.
    pub fn numa_distances(&self) -> &[u32] {
        &self.numa_distances
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    fn shape(sd: &SchedDomains, cpu: usize) -> Vec<(&'static str, usize)> {
        sd.domains(cpu)
            .iter()
            .map(|d| (d.level.name(), d.span_weight))
            .collect()
    }

    fn build(name: &str) -> (Topology, SchedDomains) {
        let t = preset(name).unwrap();
        let sd = SchedDomains::build(&t, &DomainOptions::default());
        (t, sd)
    }

    /// Invariants every preset must satisfy.
    fn check_invariants(t: &Topology, sd: &SchedDomains) {
        for cpu in 0..t.nr_cpus() {
            let doms = sd.domains(cpu);
            let mut prev: Option<&SchedDomain> = None;
            for d in doms {
                assert!(
                    d.span.test(cpu),
                    "{}: cpu {cpu} not in its {} span",
                    t.name(),
                    d.level
                );
                assert_eq!(d.span_weight, d.span.weight());
                assert!(
                    d.groups.len() >= 2,
                    "{}: cpu {cpu} {} has one group",
                    t.name(),
                    d.level
                );
                assert!(
                    d.groups[0].span.test(cpu),
                    "{}: first group lacks cpu {cpu}",
                    t.name()
                );
                let union = d
                    .groups
                    .iter()
                    .fold(CpuMask::new(), |acc, g| acc.or(&g.span));
                assert_eq!(
                    union,
                    d.span,
                    "{}: groups do not cover {}",
                    t.name(),
                    d.level
                );
                if let Some(p) = prev {
                    assert!(p.span.is_subset(&d.span) && p.span != d.span);
                    assert_eq!(
                        d.groups[0].span,
                        p.span,
                        "{}: first group is not the child",
                        t.name()
                    );
                    assert_eq!(d.groups[0].flags, p.flags);
                }
                assert_eq!(d.min_interval_ms, d.span_weight as u64);
                assert_eq!(d.max_interval_ms, 2 * d.span_weight as u64);
                assert_eq!(d.busy_factor, 16);
                assert_eq!(d.flags & BALANCE_WAKE, 0);
                assert_eq!(d.flags & BALANCE_NEWIDLE, BALANCE_NEWIDLE);
                prev = Some(d);
            }
            if !doms.is_empty() {
                assert_eq!(
                    doms.last().unwrap().span,
                    *t.all_cpus(),
                    "{}: top is not the machine",
                    t.name()
                );
            }
            assert!(sd.cpus_share_cache(cpu, sd.sd_llc_id(cpu)));
            assert_eq!(sd.llc_ids()[sd.llc_index(cpu)], sd.sd_llc_id(cpu));
        }
    }

    #[test]
    fn invariants_hold_on_every_preset() {
        for (name, _) in crate::presets() {
            if *name == "host" {
                continue;
            }
            let (t, sd) = build(name);
            check_invariants(&t, &sd);
            let old = SchedDomains::build(
                &t,
                &DomainOptions {
                    cluster_level: false,
                    cluster_flag: false,
                    imbalance_pct: 125,
                },
            );
            check_invariants(&t, &old);
        }
    }

    #[test]
    fn kunpeng920() {
        let (_, sd) = build("kunpeng920");
        let want = [
            ("CLS", 4),
            ("MC", 24),
            ("NUMA", 48),
            ("NUMA", 72),
            ("NUMA", 96),
        ];
        for cpu in [0, 30, 50, 95] {
            assert_eq!(shape(&sd, cpu), want, "cpu {cpu}");
        }
        // Node 0 reaches node 2 (distance 20) before node 3; node 1 reaches
        // node 2 only at 22 and node 3 at 24.
        assert_eq!(sd.domains(0)[3].span.to_string(), "0-71");
        assert_eq!(sd.domains(30)[3].span.to_string(), "0-71");
        assert_eq!(sd.domains(50)[3].span.to_string(), "0-23,48-95");
        assert_eq!(sd.numa_distances(), &[10, 12, 20, 22, 24]);
        assert_eq!(sd.domains(0)[2].level, Level::Numa(1));
        assert_eq!(sd.domains(0)[3].level, Level::Numa(2));
        assert_eq!(sd.domains(0)[4].level, Level::Numa(3));
        assert_eq!(sd.domains(30)[3].level, Level::Numa(3));
        assert_eq!(sd.domains(30)[4].level, Level::Numa(4));
        assert!(!sd.smt_present());
        assert!(sd.cluster_active());
        let cls = &sd.domains(5)[0];
        assert_eq!(cls.flags & (CLUSTER | SHARE_LLC), CLUSTER | SHARE_LLC);
        assert_eq!(cls.span.to_string(), "4-7");
        assert_eq!(cls.imbalance_pct, 117);
        assert_eq!(
            cls.groups
                .iter()
                .map(|g| g.span.to_string())
                .collect::<Vec<_>>(),
            ["5", "6", "7", "4"]
        );
        let mc = &sd.domains(5)[1];
        assert_eq!(mc.groups.len(), 6);
        assert_eq!(mc.groups[0].span.to_string(), "4-7");
        assert_eq!(mc.groups[1].span.to_string(), "8-11");
        assert_eq!(mc.groups[5].span.to_string(), "0-3");
        assert_eq!(mc.groups[0].flags, cls.flags);
        let numa = &sd.domains(5)[2];
        assert_eq!(
            numa.flags & (NUMA | SERIALIZE | OVERLAP),
            NUMA | SERIALIZE | OVERLAP
        );
        assert_eq!(numa.flags & PREFER_SIBLING, 0);
        assert_eq!(
            numa.flags & WAKE_AFFINE,
            WAKE_AFFINE,
            "distance 12 <= 30 keeps wake-affine"
        );
        assert_eq!(
            numa.groups
                .iter()
                .map(|g| g.span.to_string())
                .collect::<Vec<_>>(),
            ["0-23", "24-47"]
        );
        assert_eq!(sd.sd_llc_level(5), Some(1));
        assert_eq!(sd.sd_llc(5).unwrap().span.to_string(), "0-23");
        assert_eq!(
            (sd.sd_llc_size(30), sd.sd_llc_id(30), sd.sd_share_id(30)),
            (24, 24, 28)
        );
        assert!(sd.cpus_share_cache(0, 23) && !sd.cpus_share_cache(0, 24));
        assert!(sd.cpus_share_resources(28, 31) && !sd.cpus_share_resources(27, 28));
        assert_eq!(sd.nr_llcs(), 4);
        assert_eq!(sd.llc_index(50), 2);
        assert_eq!(sd.sd_numa(0).unwrap().span_weight, 48);
    }

    #[test]
    fn kunpeng_before_cluster_flag_and_before_cls() {
        let t = preset("kunpeng920-node").unwrap();
        let v5_16 = SchedDomains::build(
            &t,
            &DomainOptions {
                cluster_flag: false,
                ..DomainOptions::default()
            },
        );
        assert_eq!(shape(&v5_16, 0), [("CLS", 4), ("MC", 24)]);
        assert!(!v5_16.cluster_active());
        assert_eq!(
            v5_16.sd_share_id(5),
            0,
            "no SD_CLUSTER: share id is the LLC id"
        );
        assert!(v5_16.cpus_share_resources(0, 23));
        let v5_15 = SchedDomains::build(
            &t,
            &DomainOptions {
                cluster_level: false,
                cluster_flag: false,
                imbalance_pct: 117,
            },
        );
        assert_eq!(shape(&v5_15, 0), [("MC", 24)]);
        assert_eq!(v5_15.sd_llc_level(0), Some(0));
    }

    #[test]
    fn power9_smt8() {
        let (_, sd) = build("power9-smt8");
        assert_eq!(shape(&sd, 9), [("SMT", 4), ("MC", 8), ("PKG", 96)]);
        assert!(sd.smt_present() && !sd.cluster_active());
        let smt = &sd.domains(9)[0];
        assert_eq!(smt.imbalance_pct, 110);
        assert_eq!(
            smt.flags & (SHARE_CPUCAPACITY | SHARE_LLC),
            SHARE_CPUCAPACITY | SHARE_LLC
        );
        assert_eq!(
            smt.groups
                .iter()
                .map(|g| g.span.to_string())
                .collect::<Vec<_>>(),
            ["9", "10", "11", "8"]
        );
        assert_eq!(smt.groups[0].flags, 0);
        assert_eq!(sd.sd_llc_size(9), 8);
        assert_eq!(sd.sd_llc_id(9), 8);
        assert_eq!(sd.sd_share_id(9), 8);
        let pkg = &sd.domains(9)[2];
        assert_eq!(pkg.groups.len(), 12);
        assert_eq!(pkg.flags & (SHARE_LLC | NUMA), 0);
        assert_eq!(pkg.imbalance_pct, 117);
        assert_eq!(pkg.flags & PREFER_SIBLING, PREFER_SIBLING);
    }

    #[test]
    fn xeon_12c24t() {
        let (_, sd) = build("xeon-12c24t");
        assert_eq!(shape(&sd, 0), [("SMT", 2), ("MC", 12), ("NUMA", 24)]);
        assert_eq!(shape(&sd, 23), [("SMT", 2), ("MC", 12), ("NUMA", 24)]);
        assert_eq!(sd.domains(0)[0].span.to_string(), "0,12");
        assert_eq!(sd.domains(18)[1].span.to_string(), "6-11,18-23");
        let mc = &sd.domains(13)[1];
        assert_eq!(
            mc.groups
                .iter()
                .map(|g| g.span.to_string())
                .collect::<Vec<_>>(),
            ["1,13", "2,14", "3,15", "4,16", "5,17", "0,12"]
        );
        assert_eq!(sd.nr_llcs(), 2);
        assert_eq!(sd.llc_ids(), &[0, 6]);
        assert!(sd.smt_present() && !sd.cluster_active());
    }

    #[test]
    fn altra_keeps_cls_as_llc() {
        let (_, sd) = build("altra");
        assert_eq!(shape(&sd, 0), [("CLS", 2), ("PKG", 80)]);
        assert_eq!(sd.sd_llc_size(7), 2);
        assert_eq!(sd.sd_llc_id(7), 6);
        assert_eq!(sd.sd_share_id(7), 6);
        assert!(sd.cluster_active());
        let old = SchedDomains::build(
            &preset("altra").unwrap(),
            &DomainOptions {
                cluster_level: false,
                ..Default::default()
            },
        );
        assert_eq!(shape(&old, 0), [("PKG", 80)]);
        assert_eq!(old.sd_llc(0), None);
        assert_eq!((old.sd_llc_size(7), old.sd_llc_id(7)), (1, 7));
        assert!(!old.cpus_share_cache(6, 7));
    }

    #[test]
    fn other_presets() {
        let (_, sd) = build("jacobsville");
        assert_eq!(shape(&sd, 0), [("CLS", 4), ("MC", 24)]);
        let (_, sd) = build("epyc-zen3");
        assert_eq!(shape(&sd, 0), [("SMT", 2), ("MC", 16), ("PKG", 128)]);
        assert_eq!(sd.nr_llcs(), 8);
        assert_eq!(sd.sd_share_id(65), 0);
        let (_, sd) = build("sapphire-rapids");
        assert_eq!(shape(&sd, 0), [("SMT", 2), ("MC", 112), ("NUMA", 224)]);
        let (_, sd) = build("kvm-8vcpu");
        assert_eq!(shape(&sd, 0), [("MC", 8)]);
        assert!(!sd.smt_present());
    }

    #[test]
    fn far_numa_drops_affine_and_old_default_imbalance() {
        use crate::{SmtNumbering, TopologyBuilder};
        let t = TopologyBuilder::new("far")
            .packages(2)
            .cores_per_package(4)
            .threads_per_core(2, SmtNumbering::Interleaved)
            .node_distance(vec![vec![10, 40], vec![40, 10]])
            .build()
            .unwrap();
        let sd = SchedDomains::build(
            &t,
            &DomainOptions {
                imbalance_pct: 125,
                ..Default::default()
            },
        );
        let top = sd.domains(0).last().unwrap();
        assert_eq!(top.level, Level::Numa(1));
        assert_eq!(top.flags & (WAKE_AFFINE | BALANCE_EXEC | BALANCE_FORK), 0);
        assert_eq!(top.flags & BALANCE_NEWIDLE, BALANCE_NEWIDLE);
        assert_eq!(top.imbalance_pct, 125);
        assert_eq!(sd.domains(0)[1].imbalance_pct, 117, "LLC level stays 117");
        assert_eq!(sd.domains(0)[0].imbalance_pct, 110);
    }

    #[test]
    fn single_cpu_has_no_domains() {
        let t = crate::TopologyBuilder::new("uni").build().unwrap();
        let sd = SchedDomains::build(&t, &DomainOptions::default());
        assert!(sd.domains(0).is_empty());
        assert_eq!(
            (sd.sd_llc_size(0), sd.sd_llc_id(0), sd.sd_share_id(0)),
            (1, 0, 0)
        );
        assert!(sd.cpus_share_cache(0, 0));
    }

    #[test]
    fn flag_names() {
        assert_eq!(
            sd_flags::names(SHARE_LLC | CLUSTER),
            ["CLUSTER", "SHARE_LLC"]
        );
    }

    /// imb_numa_nr is computed on the full chain before degeneration
    /// (kunpeng920: PKG[24] over MC[24] gives 24 >> 3 = 3, scaled by span /
    /// 48 above; xeon-12c24t: 12 >> 3 = 1).
    #[test]
    fn imb_numa_nr_on_the_raw_chain() {
        let (_, sd) = build("kunpeng920");
        let numa: Vec<(usize, u32)> = sd
            .domains(0)
            .iter()
            .filter(|d| d.flags & NUMA != 0)
            .map(|d| (d.span_weight, d.imb_numa_nr))
            .collect();
        assert_eq!(numa, vec![(48, 3), (72, 3), (96, 6)]);
        let (_, sd) = build("xeon-12c24t");
        let top = sd.domains(0).last().unwrap();
        assert_eq!((top.span_weight, top.imb_numa_nr), (24, 1));
        assert_eq!(sd.domains(0)[0].imb_numa_nr, 0);
    }
}
