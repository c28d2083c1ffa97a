//! Built-in machines. Every number comes from the public source named in the
//! machine's comment (vendor specifications, kernel commits, LKML reports,
//! published lscpu/numactl dumps). CPU numbering follows Linux: SMT siblings
//! are `cpu` and `cpu + nr_cores` on x86, consecutive on arm64 and POWER.

use crate::builder::{CacheScope, SmtNumbering, TopologyBuilder};
use crate::error::TopologyError;
use crate::topology::{CacheKind, Topology};
use std::path::Path;

const MIB: u64 = 1024;

static PRESETS: &[(&str, &str)] = &[
    (
        "kunpeng920",
        "HiSilicon Kunpeng 920-4826, 2 sockets x 2 dies x 6 clusters x 4 cores, 96 CPUs, 4 nodes (sources: topology/src/presets.rs)",
    ),
    ("kunpeng920-1s", "one socket of kunpeng920: 2 dies/nodes, 48 CPUs (sources: topology/src/presets.rs)"),
    ("kunpeng920-node", "one die/node of kunpeng920: 6 clusters x 4 cores, 24 CPUs (sources: topology/src/presets.rs)"),
    (
        "power9-smt8",
        "IBM POWER9 scale-up chip, 12 SMT8 big cores = 24 SMT4 small cores, 96 CPUs (sources: topology/src/presets.rs)",
    ),
    ("xeon-12c24t", "dual Xeon X5650 (Westmere-EP), 2 x 6 cores x SMT2, 24 CPUs, 2 nodes (sources: topology/src/presets.rs)"),
    (
        "broadwell-ep",
        "dual Xeon E5-2699 v4 (Broadwell-EP), 2 sockets x 22 cores x SMT2, 88 CPUs, 2 nodes, SLIT 10/21 (sources: topology/src/presets.rs)",
    ),
    ("jacobsville", "Intel Atom P5900 (Tremont), 24 cores in 6 L2 clusters of 4, no SMT (sources: topology/src/presets.rs)"),
    ("epyc-zen3", "AMD EPYC 7763, 1 socket, 8 CCX x 8 cores x SMT2, 128 CPUs, NPS1 (sources: topology/src/presets.rs)"),
    (
        "epyc-zen3-2s",
        "dual AMD EPYC 7763, 2 sockets x 8 CCX x 8 cores x SMT2, 256 CPUs, NPS1: 2 nodes, SLIT 10/32 (sources: topology/src/presets.rs)",
    ),
    (
        "sapphire-rapids",
        "Intel Xeon 8480+, 2 sockets x 56 cores x SMT2, 224 CPUs, one LLC per socket (sources: topology/src/presets.rs)",
    ),
    ("altra", "Ampere Altra Q80-30, 80 Neoverse-N1 cores, 2-core clusters, no shared cache (sources: topology/src/presets.rs)"),
    ("kvm-8vcpu", "QEMU/KVM guest, -smp 8: 1 socket x 8 cores, socket-wide L3 (sources: topology/src/presets.rs)"),
    ("host", "this machine, read from /sys"),
];

/// Names and one-line descriptions (with source) of the built-in machines.
pub fn presets() -> &'static [(&'static str, &'static str)] {
    PRESETS
}

/// The built-in machine `name` (see [`presets`]); `"host"` reads this
/// machine's `/sys`.
pub fn preset(name: &str) -> Result<Topology, TopologyError> {
    match name {
        "kunpeng920" => kunpeng920(name, 2, 2),
        "kunpeng920-1s" => kunpeng920(name, 1, 2),
        "kunpeng920-node" => kunpeng920(name, 1, 1),
        "power9-smt8" => power9_smt8(),
        "xeon-12c24t" => xeon_12c24t(),
        "broadwell-ep" => broadwell_ep(),
        "jacobsville" => jacobsville(),
        "epyc-zen3" => epyc_zen3(),
        "epyc-zen3-2s" => epyc_zen3_2s(),
        "sapphire-rapids" => sapphire_rapids(),
        "altra" => altra(),
        "kvm-8vcpu" => kvm_8vcpu(),
        "host" => crate::sysfs::from_sysfs(Path::new("/")).map(|t| t.renamed("host")),
        _ => Err(TopologyError::UnknownPreset {
            name: name.to_string(),
            valid: PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// Kunpeng 920-4826 (the lscpu/numactl dump in plantegg/plantegg.github.io
/// `source/_posts/Intel AMD 鲲鹏 海光 飞腾性能PK.md`; the same SLIT is in
/// Valentin Schneider's D06 report, LKML 2020-03-24; clusters: Barry Song,
/// RFC v3 0/2, 2021-01-06,
/// lists.infradead.org/pipermail/linux-arm-kernel/2021-January/628940.html):
/// a socket is 2 compute dies of 24 cores; a die is 6 clusters of 4 cores
/// (cluster = 4 cores sharing an L3 tag partition), one NUMA node and one
/// LLC (24 MB L3, 1 MB/core, shared by the die). L1 64 KB I + 64 KB D,
/// L2 512 KB private. The `dies`-sized slice of the SLIT below is the
/// lscpu/numactl table of the 2-socket box: 10 local, 12 other die of the
/// same socket, 20/22/24 across sockets.
fn kunpeng920(
    name: &str,
    sockets: usize,
    dies_per_socket: usize,
) -> Result<Topology, TopologyError> {
    const SLIT: [[u32; 4]; 4] = [
        [10, 12, 20, 22],
        [12, 10, 22, 24],
        [20, 22, 10, 12],
        [22, 24, 12, 10],
    ];
    let nodes = sockets * dies_per_socket;
    let dist = (0..nodes).map(|a| SLIT[a][..nodes].to_vec()).collect();
    TopologyBuilder::new(name)
        .packages(sockets)
        .cores_per_package(24 * dies_per_socket)
        .nodes_per_package(dies_per_socket)
        .cores_per_llc(24)
        .cores_per_cluster(4)
        .node_distance(dist)
        .cache(1, CacheKind::Instruction, Some(64), CacheScope::Core)
        .cache(1, CacheKind::Data, Some(64), CacheScope::Core)
        .cache(2, CacheKind::Unified, Some(512), CacheScope::Core)
        .cache(3, CacheKind::Unified, Some(24 * MIB), CacheScope::Llc)
        .build()
}

/// POWER9 scale-up (IBM "POWER9 SMT Deep Dive", Thompto 2018; the kernel
/// commits "powerpc/smp: Add Power9 scheduler topology" and "powerpc: Use
/// cpu_smallcore_sibling_mask at SMT level on bigcores"): 12 SMT8 cores,
/// each a fused pair of SMT4 cores. Linux (PowerVM big-core, `ibm,thread-groups`) puts the
/// 4-thread small core at the SMT level and the 8-thread big core, whose
/// two halves share a 512 KB L2 and a 10 MB L3 region, above it as the
/// cache-sharing level, so here core = small core and LLC = big core. No
/// clusters; one chip, one node.
fn power9_smt8() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("power9-smt8")
        .cores_per_package(24)
        .threads_per_core(4, SmtNumbering::Contiguous)
        .cores_per_llc(2)
        .cache(2, CacheKind::Unified, Some(512), CacheScope::Llc)
        .cache(3, CacheKind::Unified, Some(10 * MIB), CacheScope::Llc)
        .build()
}

/// Dual X5650 (Intel's X5650 specification; sibling numbering from the
/// per-pair minima of the nviennot/core-to-core-latency X5650 CSV): 2 x 6
/// cores x 2 threads, siblings cpu and cpu+12, 12 MB L3 per socket, one node
/// per socket. No published SLIT for this box was found; 20 is the kernel's
/// `REMOTE_DISTANCE`, what 2-socket BIOSes typically report.
fn xeon_12c24t() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("xeon-12c24t")
        .packages(2)
        .cores_per_package(6)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .node_distance(vec![vec![10, 20], vec![20, 10]])
        .cache(3, CacheKind::Unified, Some(12 * MIB), CacheScope::Package)
        .build()
}

/// Dual Xeon E5-2699 v4 (Broadwell-EP; Intel ARK: 22 cores, 44 threads,
/// 2.2 GHz base, 55 MB "Smart Cache" shared by the socket's cores, 4
/// DDR4-2400 channels; 256 KB L2 and 32 KB + 32 KB L1 per core, Intel's
/// Broadwell-EP platform brief), the common two-socket server of the
/// Broadwell/Skylake-EP generation: 2 x 22 cores x 2 threads = 88 CPUs,
/// one LLC and one NUMA node per socket (Cluster-on-Die off, the BIOS
/// default). Linux numbers the first threads of socket 0's cores 0-21,
/// socket 1's 22-43, and their siblings 44-65 and 66-87; BIOSes of such
/// two-socket Xeons report the SLIT as 10 local and 21 remote. Both are
/// what `numactl --hardware` prints on a two-socket 22-core Xeon of the
/// next generation in Rao Weibo's "Cisco CSR1000v KVM SRIOV Setting Guide
/// on Ubuntu 20.04" (Cisco, 2021-02: node 0 cpus 0-21,44-65, node 1
/// 22-43,66-87, distances 10/21); no dump of an E5-2699 v4 box itself was
/// found.
fn broadwell_ep() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("broadwell-ep")
        .packages(2)
        .cores_per_package(22)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .node_distance(vec![vec![10, 21], vec![21, 10]])
        .cache(1, CacheKind::Instruction, Some(32), CacheScope::Core)
        .cache(1, CacheKind::Data, Some(32), CacheScope::Core)
        .cache(2, CacheKind::Unified, Some(256), CacheScope::Core)
        .cache(3, CacheKind::Unified, Some(55 * MIB), CacheScope::Package)
        .build()
}

/// Jacobsville / Snow Ridge (Tim Chen, commit 66558b730f25 "sched: Add
/// cluster scheduler level for x86"): 24 Atom cores, 6 clusters of 4
/// sharing an L2 (4.5 MB, Intel spec, not re-verified), no SMT. No source
/// was found for a cross-module LLC, so its span is uncertain; we model one
/// LLC over all 24 cores, which is what the cluster commit's observation (load clumping inside
/// MC) implies.
fn jacobsville() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("jacobsville")
        .cores_per_package(24)
        .cores_per_cluster(4)
        .cache(2, CacheKind::Unified, Some(4608), CacheScope::Cluster)
        .build()
}

/// EPYC 7763 (Zen 3 Milan; AMD's specification, and the 8-CPU blocks of the
/// 7R13 results in nviennot/core-to-core-latency): 8 CCDs of one 8-core CCX,
/// SMT2, 128 threads, 32 MB L3 per CCX = the LLC. AMD leaves l2c_id unset, so
/// the cluster falls back to the SMT core (commit 55409ac5c371). NPS1: one
/// node.
fn epyc_zen3() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("epyc-zen3")
        .cores_per_package(64)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .cores_per_llc(8)
        .cache(3, CacheKind::Unified, Some(32 * MIB), CacheScope::Llc)
        .build()
}

/// Two EPYC 7763 (Zen 3 Milan), the AMD test machine of many LKML
/// scheduler reports ("dual socket 3rd Generation EPYC, 2 x 64C/128T",
/// K Prateek Nayak), in NPS1: each socket one node of 8 CCXs of 8 cores,
/// SMT2, 32 MB L3 per CCX (AMD's specification, as `epyc-zen3`). Linux
/// numbers socket 0's first threads 0-63, socket 1's 64-127 and their
/// siblings 128-191 and 192-255. SLIT 10 local, 32 remote: the value of
/// every Zen machine Matt Fleming had, a two-socket one among them
/// (LKML 2019-06-19, "Re: [PATCH] sched/topology: Improve load balancing
/// on AMD EPYC", Message-ID 20190619213437.GA6909@codeblueprint.co.uk),
/// and of the two-socket NPS1 Zen box in Bharata B Rao's NUMA RFC mail.
fn epyc_zen3_2s() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("epyc-zen3-2s")
        .packages(2)
        .cores_per_package(64)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .cores_per_llc(8)
        .node_distance(vec![vec![10, 32], vec![32, 10]])
        .cache(3, CacheKind::Unified, Some(32 * MIB), CacheScope::Llc)
        .build()
}

/// Xeon 8480+ (Intel's Sapphire Rapids specification; "112 CPUs per LLC
/// domain" from Chen Yu's SIS_UTIL series, commit 70fb5ccf2ebb): 56 cores x
/// 2 threads per socket, 2 MB L2 per core, 105 MB L3 per socket; by default
/// (no SNC) the socket is one LLC of 112 CPUs and one node. No published
/// SLIT was found; 20 is the kernel's `REMOTE_DISTANCE` default.
fn sapphire_rapids() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("sapphire-rapids")
        .packages(2)
        .cores_per_package(56)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .node_distance(vec![vec![10, 20], vec![20, 10]])
        .cache(2, CacheKind::Unified, Some(2 * MIB), CacheScope::Core)
        .cache(3, CacheKind::Unified, Some(105 * MIB), CacheScope::Package)
        .build()
}

/// Altra Q80-30 (Ampere's specification): 80 Neoverse-N1 cores, no SMT, 64 KB
/// L1I/D and 1 MB L2 per core. PPTT declares 2-core clusters, but no
/// processor-side cache is shared, so every `cpu_coregroup_mask` has weight
/// 1: we model LLC = one CPU inside a 2-core cluster. With the cluster level
/// that gives CLS[2] -> PKG[80] (Darren Hart, "arm64: smp: Skip MC domain
/// for SoCs without shared cache", 2022). Later kernels clip the cluster to
/// the coregroup ("arch_topology: Limit span of cpu_clustergroup_mask()"),
/// which would leave PKG alone; the domain builder models the former.
fn altra() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("altra")
        .cores_per_package(80)
        .cores_per_cluster(2)
        .cores_per_llc(1)
        .cache(1, CacheKind::Instruction, Some(64), CacheScope::Core)
        .cache(1, CacheKind::Data, Some(64), CacheScope::Core)
        .cache(2, CacheKind::Unified, Some(MIB), CacheScope::Core)
        .build()
}

/// QEMU `-smp 8` on machine types >= 6.2 (QEMU hw/core/machine-smp.c,
/// "prefer cores over sockets since 6.2"): 1 socket x 8 cores x 1 thread;
/// x86 CPU models expose a socket-wide L3 (the `l3-cache` property defaults
/// to true in target/i386/cpu.c; size left unset here), so the LLC covers
/// all 8 vCPUs; no NUMA.
fn kvm_8vcpu() -> Result<Topology, TopologyError> {
    TopologyBuilder::new("kvm-8vcpu")
        .cores_per_package(8)
        .cache(3, CacheKind::Unified, None, CacheScope::Llc)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Distance;

    #[test]
    fn every_static_preset_builds() {
        for (name, desc) in presets() {
            assert!(!desc.is_empty());
            if *name == "host" {
                continue;
            }
            let t = preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(t.name(), *name);
        }
    }

    #[test]
    fn unknown_preset_lists_valid_names() {
        let e = preset("nope").unwrap_err().to_string();
        assert!(
            e.contains("\"nope\"") && e.contains("kunpeng920") && e.contains("altra"),
            "{e}"
        );
    }

    #[test]
    fn kunpeng920_shape() {
        let t = preset("kunpeng920").unwrap();
        assert_eq!(t.nr_cpus(), 96);
        assert_eq!(t.nr_nodes(), 4);
        assert_eq!(t.nr_packages(), 2);
        assert_eq!(t.threads_per_core(), 1);
        assert_eq!(t.cluster_mask(5).to_string(), "4-7");
        assert_eq!(t.llc_mask(30).to_string(), "24-47");
        assert_eq!(t.node_mask(30).to_string(), "24-47");
        assert_eq!(t.package_mask(30).to_string(), "0-47");
        assert_eq!(t.node_distance(1, 3), 24);
        assert_eq!(t.distance(0, 3), Distance::Cluster);
        assert_eq!(t.distance(0, 4), Distance::Llc);
        assert_eq!(t.distance(0, 24), Distance::Package);
        assert_eq!(t.distance(0, 48), Distance::Remote);
        let l3: Vec<_> = t.caches().iter().filter(|c| c.level == 3).collect();
        assert_eq!(l3.len(), 4);
        assert_eq!(l3[1].shared_cpus.to_string(), "24-47");
        let t1 = preset("kunpeng920-1s").unwrap();
        assert_eq!((t1.nr_cpus(), t1.nr_nodes()), (48, 2));
        assert_eq!(t1.node_distances(), &[vec![10, 12], vec![12, 10]]);
        let tn = preset("kunpeng920-node").unwrap();
        assert_eq!((tn.nr_cpus(), tn.nr_nodes(), tn.nr_clusters()), (24, 1, 6));
    }

    #[test]
    fn x86_siblings_interleave() {
        let t = preset("xeon-12c24t").unwrap();
        assert_eq!(t.smt_mask(3).to_string(), "3,15");
        assert_eq!(t.llc_mask(15).to_string(), "0-5,12-17");
        assert_eq!(t.node_mask(20).to_string(), "6-11,18-23");
        assert_eq!(t.distance(3, 15), Distance::Smt);
        assert_eq!(t.distance(0, 6), Distance::Remote);
        let e = preset("epyc-zen3").unwrap();
        assert_eq!(e.smt_mask(0).to_string(), "0,64");
        assert_eq!(e.llc_mask(70).to_string(), "0-7,64-71");
        assert_eq!(e.cluster_mask(70), e.smt_mask(70));
        let d = preset("epyc-zen3-2s").unwrap();
        assert_eq!((d.nr_cpus(), d.nr_nodes(), d.nr_packages()), (256, 2, 2));
        assert_eq!(d.smt_mask(64).to_string(), "64,192");
        assert_eq!(d.llc_mask(200).to_string(), "72-79,200-207");
        assert_eq!(d.node_mask(1).to_string(), "0-63,128-191");
        assert_eq!(d.distance(0, 64), Distance::Remote);
        let s = preset("sapphire-rapids").unwrap();
        assert_eq!(s.nr_cpus(), 224);
        assert_eq!(s.smt_mask(1).to_string(), "1,113");
        assert_eq!(s.llc_mask(1).weight(), 112);
    }

    #[test]
    fn broadwell_ep_shape() {
        let t = preset("broadwell-ep").unwrap();
        assert_eq!(t.nr_cpus(), 88);
        assert_eq!(
            (t.nr_nodes(), t.nr_packages(), t.threads_per_core()),
            (2, 2, 2)
        );
        assert_eq!(t.smt_mask(3).to_string(), "3,47");
        assert_eq!(t.node_mask(0).to_string(), "0-21,44-65");
        assert_eq!(t.node_mask(30).to_string(), "22-43,66-87");
        assert_eq!(t.llc_mask(70).to_string(), "22-43,66-87");
        assert_eq!(t.node_distance(0, 1), 21);
        assert_eq!(t.distance(0, 44), Distance::Smt);
        assert_eq!(t.distance(0, 21), Distance::Llc);
        assert_eq!(t.distance(0, 22), Distance::Remote);
    }

    #[test]
    fn power9_altra_jacobsville_kvm() {
        let p = preset("power9-smt8").unwrap();
        assert_eq!(p.nr_cpus(), 96);
        assert_eq!(p.smt_mask(9).to_string(), "8-11");
        assert_eq!(p.llc_mask(9).to_string(), "8-15");
        assert_eq!(p.threads_per_core(), 4);
        let a = preset("altra").unwrap();
        assert_eq!(a.cluster_mask(3).to_string(), "2-3");
        assert_eq!(a.llc_mask(3).to_string(), "3");
        let j = preset("jacobsville").unwrap();
        assert_eq!(j.cluster_mask(5).to_string(), "4-7");
        assert_eq!(j.llc_mask(5).weight(), 24);
        let k = preset("kvm-8vcpu").unwrap();
        assert_eq!(k.llc_mask(0).to_string(), "0-7");
        assert_eq!(k.cluster_mask(3).to_string(), "3");
    }
}
