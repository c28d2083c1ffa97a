//! The topology levels a kernel builds domains from, bottom-up: the
//! architecture's table (`default_topology[]` in kernel/sched/topology.c,
//! `x86_topology[]` in arch/x86/kernel/smpboot.c) followed by the NODE and
//! NUMA levels `sched_init_numa()` appends. Each level has a mask function
//! (here: every CPU's mask, precomputed) and its topology flags.

use super::options::{Arch, DomainOptions};
use super::sd_flags::*;
use crate::cpumask::CpuMask;
use crate::topology::Topology;
use serde::{Serialize, Serializer};
use std::fmt;

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
    /// The newest kernel's level name: SMT, CLS, MC, PKG, NODE, NUMA (a
    /// domain's [`super::SchedDomain::name`] is the name of the kernel it
    /// was built for).
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

/// One entry of the level table.
pub(crate) struct TopoLevel {
    pub level: Level,
    /// `SD_INIT_NAME()` as the modelled kernel spells it.
    pub name: &'static str,
    /// What `tl->sd_flags()` returns.
    pub topo_flags: u32,
    /// SDTL_OVERLAP: the NUMA levels above NODE.
    pub overlap: bool,
    /// The SLIT distance of a NUMA level (`sched_domains_numa_distance[]`).
    pub numa_distance: Option<u32>,
    /// `tl->mask(cpu)` for every CPU.
    pub masks: Vec<CpuMask>,
}

/// The levels `topo` gets under `opts`, bottom-up, and the distinct SLIT
/// distances (empty without CONFIG_NUMA).
pub(crate) fn topology_levels(topo: &Topology, opts: &DomainOptions) -> (Vec<TopoLevel>, Vec<u32>) {
    let n = topo.nr_cpus();
    let mut tl = Vec::new();
    let mut push = |level: Level, name: &'static str, topo_flags: u32, masks: Vec<CpuMask>| {
        tl.push(TopoLevel {
            level,
            name,
            topo_flags,
            overlap: false,
            numa_distance: None,
            masks,
        })
    };

    // cpu_coregroup_mask(): the CPUs sharing the LLC, limited to the CPU's
    // node when CONFIG_NUMA is on. x86 set_cpu_sibling_map() links two CPUs
    // in cpu_llc_shared_mask only if match_llc() holds, and match_llc()
    // (through topology_sane(), in every modelled version) refuses CPUs of
    // different nodes: on sub-NUMA-clustering parts the L3 spans several
    // nodes while the kernel's LLC mask stops at the node (the SNC test in
    // match_llc() only spares the warning). arm64's cpu_coregroup_mask()
    // takes the LLC siblings only when they fit inside the node. Without
    // NUMA every CPU is on node 0 and the LLC is taken whole.
    let coregroup: Vec<CpuMask> = (0..n)
        .map(|c| {
            if opts.numa {
                topo.llc_mask(c).and(topo.node_mask(c))
            } else {
                topo.llc_mask(c).clone()
            }
        })
        .collect();

    if opts.sched_smt {
        // cpu_smt_flags() (x86_smt_flags() without ITMT).
        push(
            Level::Smt,
            "SMT",
            SHARE_CPUCAPACITY | SHARE_LLC,
            (0..n).map(|c| topo.smt_mask(c).clone()).collect(),
        );
    }
    if opts.cluster_level {
        // cpu_clustergroup_mask(). Where the cluster equals the core or the
        // LLC it is the SMT mask (arm64 "arch_topology: Limit span of
        // cpu_clustergroup_mask()"), so the level degenerates. A cluster
        // strictly above the LLC (Altra) is kept, which matches the
        // v5.17-era domains of such parts (CLS[2] -> DIE[80]).
        let cls_flags = SHARE_LLC | if opts.cluster_flag { CLUSTER } else { 0 };
        let masks = (0..n)
            .map(|c| {
                let cl = topo.cluster_mask(c);
                if cl != topo.smt_mask(c) && *cl != coregroup[c] {
                    cl.clone()
                } else {
                    topo.smt_mask(c).clone()
                }
            })
            .collect();
        push(Level::Cls, "CLS", cls_flags, masks);
    }
    if opts.sched_mc {
        push(Level::Mc, "MC", SHARE_LLC, coregroup);
    }
    // cpu_cpu_mask(): cpumask_of_node(cpu_to_node(cpu)), every CPU without
    // NUMA. x86 leaves the level out when a package spans nodes.
    let numa_in_package =
        opts.numa && (0..n).any(|c| !topo.package_mask(c).is_subset(topo.node_mask(c)));
    if !(opts.arch == Arch::X86 && numa_in_package) {
        let masks = (0..n)
            .map(|c| {
                if opts.numa {
                    topo.node_mask(c).clone()
                } else {
                    topo.all_cpus().clone()
                }
            })
            .collect();
        push(Level::Pkg, opts.pkg_name, 0, masks);
    }

    if !opts.numa {
        return (tl, Vec::new());
    }
    // sched_init_numa(): one level per distinct distance; the first (the
    // local distance) is NODE without flags, the others SD_NUMA with
    // overlapping groups. A node's mask at distance d holds the nodes at
    // most d away from it.
    let nodes = topo.nr_nodes();
    let mut dists: Vec<u32> = (0..nodes)
        .flat_map(|a| (0..nodes).map(move |b| (a, b)))
        .map(|(a, b)| topo.node_distance(a, b))
        .collect();
    dists.sort_unstable();
    dists.dedup();
    for (k, &d) in dists.iter().enumerate() {
        let node_masks: Vec<CpuMask> = (0..nodes)
            .map(|me| {
                let mut m = CpuMask::new();
                for j in 0..nodes {
                    if topo.node_distance(me, j) <= d {
                        m.or_assign(topo.node_cpus(j));
                    }
                }
                m
            })
            .collect();
        tl.push(TopoLevel {
            level: Level::Numa(k.min(u8::MAX as usize) as u8),
            name: if k == 0 { "NODE" } else { "NUMA" },
            topo_flags: if k == 0 { 0 } else { NUMA },
            overlap: k > 0,
            numa_distance: (k > 0).then_some(d),
            masks: (0..n)
                .map(|c| node_masks[topo.place(c).node].clone())
                .collect(),
        });
    }
    (tl, dists)
}
