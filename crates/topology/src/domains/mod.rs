//! Linux sched-domain construction, modelled on `build_sched_domains()`,
//! `sd_init()`, `build_sched_groups()`, `build_overlap_sched_groups()`,
//! `cpu_attach_domain()` and `update_top_cache_domain()` in
//! kernel/sched/topology.c, version by version (4.16 to the newest tree;
//! [`DomainOptions`] holds what varies).
//!
//! The steps, each in its own file:
//! - `levels` — the level table: SMT (`cpu_smt_mask`), CLS
//!   (`cpu_clustergroup_mask`, CONFIG_SCHED_CLUSTER, v5.16+), MC
//!   (`cpu_coregroup_mask`: the LLC within the node), DIE/PKG
//!   (`cpu_cpu_mask`: the node; left out on x86 when a package holds
//!   several nodes), then NODE and one NUMA level per further distinct
//!   SLIT distance (`sched_init_numa()`).
//! - `build` — every CPU's chain as built: `sd_init()` flags and
//!   parameters, the stop at the first level spanning every CPU,
//!   `imb_numa_nr`.
//! - `groups`, `overlap` — the groups of every built domain, from the
//!   chains before anything is removed (so a group is a *raw* child span):
//!   shared groups below NUMA, per-domain groups with balance masks at the
//!   NUMA levels.
//! - `attach` — degenerate domains removed per CPU, SD_PREFER_SIBLING
//!   passed down, group flags kept in step.
//! - here — the result, and the per-CPU shortcuts of the wake-up path
//!   (`sd_llc`, `sd_llc_id`, `sd_share_id`, ...); `print` — the kernel's
//!   own listing.

mod attach;
mod build;
mod group_list;
mod groups;
mod levels;
mod options;
mod overlap;
mod print;
pub mod sd_flags;
#[cfg(test)]
mod tests;

pub use build::NODE_RECLAIM_DISTANCE;
pub use group_list::Groups;
pub use levels::Level;
pub use options::{Arch, ConfigOption, DomainOptions, GroupFlagSync, ImbNumaNr, LATEST_VERSION};

use crate::cpumask::CpuMask;
use crate::topology::Topology;
use groups::{GroupId, SharedFlags};
use sd_flags::*;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// One group of a domain (`struct sched_group`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchedGroup {
    /// CPUs of the group: the span of a child domain (of this CPU or, at
    /// the NUMA levels, of the CPU the group was built from).
    pub span: CpuMask,
    /// `sg->flags` (v5.16+): the flags of the child domain the group was
    /// built from, as `cpu_attach_domain()` left them (0 before 5.16; 0 at
    /// the bottom level).
    pub flags: u32,
    /// `group_balance_mask()`: the CPUs for which this group is the local
    /// group one level down, the only ones that may balance the domain on
    /// its behalf (`should_we_balance()`, `group_balance_cpu()`). The span
    /// itself for a non-overlapping group; at a NUMA level the CPUs of the
    /// span whose own child domain is exactly this span
    /// (`build_balance_mask()`).
    pub balance_mask: CpuMask,
    /// `sg->cores` (v6.6): SMT cores in the group, for `sibling_imbalance()`.
    pub cores: usize,
    /// The span's CPUs in ascending order, for walks over the group (the
    /// load balancer's statistics read every CPU of every group of a
    /// domain at each pass; a list walks in a third of the mask's time).
    #[serde(skip)]
    pub cpus: Arc<[u32]>,
}

impl SchedGroup {
    /// `sg->group_weight`: CPUs in the group.
    pub fn weight(&self) -> usize {
        self.span.weight()
    }

    /// `group_balance_cpu()`: the first CPU of the balance mask.
    pub fn balance_cpu(&self) -> Option<usize> {
        self.balance_mask.first()
    }
}

/// One CPU's domain at one level (`struct sched_domain`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchedDomain {
    /// The topology level it was built from.
    pub level: Level,
    /// The level's name as the modelled kernel prints it (`DIE` before
    /// v6.7, `PKG` after; `NODE`, `NUMA`, ...).
    pub name: &'static str,
    /// CPUs covered.
    pub span: CpuMask,
    /// `span.weight()`.
    pub span_weight: usize,
    /// `sd_flags` bits (topology part plus `sd_init()` behaviour bits),
    /// after `cpu_attach_domain()`.
    pub flags: u32,
    /// Groups in the kernel's list order: the first holds this CPU (the
    /// child domain); the rest follow around the ring of the span (in
    /// wrapped CPU order from the span's last CPU, which is wrapped CPU
    /// order from this CPU on any machine whose groups are placed
    /// regularly). Indexes and iterates like a slice.
    pub groups: Groups,
    /// Load-balance imbalance threshold, percent (SMT 110, LLC 117, else
    /// the version's default).
    pub imbalance_pct: u32,
    /// `sd->cache_nice_tries`: SMT 0, LLC and package/node levels 1, NUMA 2.
    pub cache_nice_tries: u32,
    /// Interval multiplier when the CPU is busy (16 from v5.10, 32 before).
    pub busy_factor: u32,
    /// `sd->min_interval`, ms: the weight of the level's topology mask.
    /// `sd->balance_interval` starts here.
    pub min_interval_ms: u64,
    /// `sd->max_interval`, ms: twice that.
    pub max_interval_ms: u64,
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
    opts: DomainOptions,
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

impl SchedDomains {
    /// Build every CPU's domains for `topo` as a kernel configured by
    /// `opts` would.
    ///
    /// ```
    /// use topology::{preset, DomainOptions, SchedDomains};
    /// let t = preset("kunpeng920").unwrap();
    /// let sd = SchedDomains::build(&t, &DomainOptions::default());
    /// let names: Vec<_> = sd.domains(0).iter().map(|d| (d.name, d.span_weight)).collect();
    /// assert_eq!(names, [("CLS", 4), ("MC", 24), ("NUMA", 48), ("NUMA", 72), ("NUMA", 96)]);
    /// assert_eq!(sd.sd_llc_size(0), 24);
    /// assert!(sd.cpus_share_resources(0, 3) && !sd.cpus_share_resources(0, 4));
    /// ```
    pub fn build(topo: &Topology, opts: &DomainOptions) -> SchedDomains {
        let n = topo.nr_cpus();
        let all = topo.all_cpus();
        let (tl, dists) = levels::topology_levels(topo, opts);
        let chains = build::raw_chains(&tl, all, opts);

        // Groups of every built domain, from the chains as built: one
        // shared ring per span at the non-overlapping levels, a list per
        // CPU at the NUMA ones.
        let mut shared = SharedFlags::new();
        let mut lists = groups::RawLists::for_chains(&chains);
        for (k, level) in tl.iter().enumerate() {
            if !level.overlap {
                groups::build_level_rings(&chains, k, opts, &mut shared, &mut lists);
            }
        }

        // The raw groups as the public ones. sg->cores by span: many
        // lists hold the same groups. `first` replaces the first group's
        // flags (a private list's, as cpu_attach_domain() left them).
        let mut cores: HashMap<CpuMask, usize> = HashMap::new();
        let mut convert = |ring: &[groups::RawGroup],
                           shared: &SharedFlags,
                           first: Option<u32>|
         -> Arc<[SchedGroup]> {
            ring.iter()
                .enumerate()
                .map(|(i, g)| SchedGroup {
                    flags: match (g.id, first) {
                        (_, Some(f)) if i == 0 => f,
                        (GroupId::Shared(l, first), _) => shared[&(l, first)],
                        (GroupId::Private, _) => g.flags,
                    },
                    cores: *cores
                        .entry(g.span.clone())
                        .or_insert_with(|| groups::group_cores(topo, &g.span, opts)),
                    balance_mask: g.balance_mask.clone(),
                    cpus: g.span.iter().map(|c| c as u32).collect(),
                    span: g.span.clone(),
                })
                .collect()
        };

        // CPU by CPU in ascending order: the NUMA levels' groups (which
        // read only the chains), cpu_attach_domain(), then those groups
        // in their final form. A CPU whose NUMA domain and child domain
        // are those of the CPU before it at that level, with only CPUs of
        // that child between them, gets the same list (the walk from
        // either covers the child first and then meets the same CPUs), so
        // it shares that CPU's raw list; equal final lists are shared too.
        struct Reuse {
            cpu: usize,
            ring: usize,
            lists: Vec<(u32, Arc<[SchedGroup]>)>,
        }
        let nr_node_ids = if opts.numa { topo.nr_nodes() } else { 1 };
        let mut balance_masks = overlap::BalanceMasks::new();
        let mut reuse: HashMap<usize, Reuse> = HashMap::new();
        let mut last_list: HashMap<usize, Arc<[SchedGroup]>> = HashMap::new();
        let mut numa_lists: Vec<Vec<Option<Arc<[SchedGroup]>>>> =
            chains.iter().map(|c| vec![None; c.len()]).collect();
        let mut kept = Vec::with_capacity(n);
        for cpu in 0..n {
            let overlap_levels: Vec<usize> =
                (0..chains[cpu].len()).filter(|&k| tl[k].overlap).collect();
            for &k in &overlap_levels {
                let span = &chains[cpu][k].span;
                let same = k > 0
                    && reuse.get(&k).is_some_and(|r| {
                        let (p, child) = (r.cpu, &chains[cpu][k - 1].span);
                        chains[p][k].span == *span
                            && chains[p][k - 1].span == *child
                            && span
                                .iter_wrap(p)
                                .take_while(|&c| c != cpu)
                                .all(|c| child.test(c))
                    });
                match reuse.get_mut(&k) {
                    Some(r) if same => {
                        r.cpu = cpu;
                        lists.lists[cpu][k] = (r.ring, 0);
                    }
                    _ => {
                        // every CPU of the list it replaces is done
                        if let Some(old) = reuse.remove(&k) {
                            lists.rings[old.ring] = Vec::new();
                        }
                        let ring = overlap::build_overlap_sched_groups(
                            &chains,
                            cpu,
                            k,
                            opts,
                            &mut balance_masks,
                        );
                        lists.push_private(cpu, k, ring);
                        reuse.insert(
                            k,
                            Reuse {
                                cpu,
                                ring: lists.rings.len() - 1,
                                lists: Vec::new(),
                            },
                        );
                    }
                }
            }
            let cpu_kept =
                attach::attach_cpu(&chains, cpu, &mut lists, &mut shared, opts, nr_node_ids);
            for &k in &overlap_levels {
                if !cpu_kept.iter().any(|&(l, _)| l == k) {
                    continue;
                }
                let Some(r) = reuse.get_mut(&k) else { continue };
                let raw = &lists.rings[r.ring];
                let first = lists
                    .first_flags
                    .get(&(cpu, k))
                    .copied()
                    .or(raw.first().map(|g| g.flags))
                    .unwrap_or(0);
                let list = match r.lists.iter().find(|(f, _)| *f == first) {
                    Some((_, a)) => a.clone(),
                    None => {
                        let mut a = convert(raw, &shared, Some(first));
                        match last_list.get(&k) {
                            Some(prev) if **prev == *a => a = prev.clone(),
                            _ => {
                                last_list.insert(k, a.clone());
                            }
                        }
                        r.lists.push((first, a.clone()));
                        a
                    }
                };
                numa_lists[cpu][k] = Some(list);
            }
            kept.push(cpu_kept);
        }

        // The non-overlapping levels' rings, each converted once, now
        // that every shared group's flags are final.
        let mut converted: Vec<Option<Arc<[SchedGroup]>>> = vec![None; lists.rings.len()];
        let mut per_cpu: Vec<Vec<SchedDomain>> = Vec::with_capacity(n);
        for cpu in 0..n {
            let mut doms = Vec::with_capacity(kept[cpu].len());
            for &(k, flags) in &kept[cpu] {
                let raw = &chains[cpu][k];
                let (r, start) = lists.lists[cpu][k];
                let ring = match (&numa_lists[cpu][k], &converted[r]) {
                    (Some(a), _) | (None, Some(a)) => a.clone(),
                    (None, None) => {
                        let a = convert(&lists.rings[r], &shared, None);
                        converted[r] = Some(a.clone());
                        a
                    }
                };
                doms.push(SchedDomain {
                    level: tl[k].level,
                    name: tl[k].name,
                    span: raw.span.clone(),
                    span_weight: raw.span.weight(),
                    flags,
                    groups: Groups::new(ring, start),
                    imbalance_pct: raw.imbalance_pct,
                    cache_nice_tries: raw.cache_nice_tries,
                    busy_factor: opts.busy_factor,
                    min_interval_ms: raw.tl_weight as u64,
                    max_interval_ms: 2 * raw.tl_weight as u64,
                    imb_numa_nr: raw.imb_numa_nr,
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
            opts: *opts,
            per_cpu,
            llc_level,
            llc_size,
            llc_id,
            share_id,
            llc_index,
            llc_ids,
            numa_distances: dists,
            // sched_smt_present exists only with CONFIG_SCHED_SMT.
            smt_present: opts.sched_smt && topo.threads_per_core() >= 2,
            cluster_active,
        }
    }

    /// The options the domains were built with.
    pub fn options(&self) -> &DomainOptions {
        &self.opts
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

    /// `sched_smt_present`: CONFIG_SCHED_SMT and some core has two or more
    /// threads.
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
    /// for distance `numa_distances()[k]` (empty without CONFIG_NUMA).
    pub fn numa_distances(&self) -> &[u32] {
        &self.numa_distances
    }

    /// Names of `flags` as the modelled kernel prints them.
    pub fn flag_names(&self, flags: u32) -> Vec<&'static str> {
        self.opts.flag_names(flags)
    }
}
