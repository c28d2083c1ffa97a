use super::*;
use crate::presets::preset;
use crate::{SmtNumbering, TopologyBuilder};

fn shape(sd: &SchedDomains, cpu: usize) -> Vec<(&'static str, usize)> {
    sd.domains(cpu)
        .iter()
        .map(|d| (d.name, d.span_weight))
        .collect()
}

fn spans(d: &SchedDomain) -> Vec<String> {
    d.groups.iter().map(|g| g.span.to_string()).collect()
}

fn build(name: &str) -> (Topology, SchedDomains) {
    let t = preset(name).unwrap();
    let sd = SchedDomains::build(&t, &DomainOptions::default());
    (t, sd)
}

/// 8 two-core sockets, one node each, on a ring: SLIT 10 + 10 per hop.
fn ring8() -> Topology {
    let d = (0..8)
        .map(|a: i32| {
            (0..8)
                .map(|b: i32| {
                    let hops = (a - b).rem_euclid(8).min((b - a).rem_euclid(8));
                    10 + 10 * hops as u32
                })
                .collect()
        })
        .collect();
    TopologyBuilder::new("ring8")
        .packages(8)
        .cores_per_package(2)
        .node_distance(d)
        .build()
        .unwrap()
}

/// Invariants every preset must satisfy.
fn check_invariants(t: &Topology, sd: &SchedDomains) {
    let o = sd.options();
    for cpu in 0..t.nr_cpus() {
        let doms = sd.domains(cpu);
        let mut prev: Option<&SchedDomain> = None;
        for d in doms {
            let what = format!("{} cpu {cpu} {}", t.name(), d.name);
            assert!(d.span.test(cpu), "{what}: not in its span");
            assert_eq!(d.span_weight, d.span.weight());
            if o.degenerate_by_metadata {
                assert!(d.groups.len() >= 2, "{what}: one group");
            }
            assert!(d.groups[0].span.test(cpu), "{what}: first group lacks cpu");
            for g in d.groups.iter() {
                let listed: Vec<usize> = g.cpus.iter().map(|&c| c as usize).collect();
                assert_eq!(listed, g.span.iter().collect::<Vec<_>>(), "{what}: cpus");
            }
            let union = d
                .groups
                .iter()
                .fold(CpuMask::new(), |acc, g| acc.or(&g.span));
            if o.descended_sibling {
                assert_eq!(union, d.span, "{what}: groups do not cover the span");
            } else {
                assert!(d.span.is_subset(&union), "{what}: groups miss CPUs");
            }
            for g in &d.groups {
                assert!(!g.balance_mask.is_empty(), "{what}: empty balance mask");
                assert!(g.balance_mask.is_subset(&g.span));
                assert!(g.cores >= 1 && g.cores <= g.weight());
            }
            if let Some(p) = prev {
                assert!(p.span.is_subset(&d.span) && p.span != d.span);
                assert_eq!(
                    d.groups[0].span, p.span,
                    "{what}: first group is not the child"
                );
                if o.degenerate_group_flags == GroupFlagSync::ChildFlags {
                    assert_eq!(d.groups[0].flags, p.flags, "{what}: first group flags");
                }
            } else if o.group_flags {
                assert_eq!(d.groups[0].flags & !PREFER_SIBLING, 0, "{what}");
            }
            assert!(d.min_interval_ms as usize <= d.span_weight);
            assert_eq!(d.max_interval_ms, 2 * d.min_interval_ms);
            assert_eq!(d.busy_factor, o.busy_factor);
            assert_eq!(d.flags & BALANCE_WAKE, 0);
            assert_eq!(d.flags & BALANCE_NEWIDLE, BALANCE_NEWIDLE);
            let cnt = if d.flags & SHARE_CPUCAPACITY != 0 {
                0
            } else if d.flags & NUMA != 0 {
                2
            } else {
                1
            };
            assert_eq!(d.cache_nice_tries, cnt, "{what}");
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
fn invariants_hold_on_every_preset_and_version() {
    let mut machines: Vec<Topology> = crate::presets()
        .iter()
        .filter(|(name, _)| *name != "host")
        .map(|(name, _)| preset(name).unwrap())
        .collect();
    machines.push(ring8());
    for t in &machines {
        for v in [
            (4, 17),
            (5, 4),
            (5, 12),
            (5, 16),
            (6, 1),
            (6, 5),
            (6, 6),
            (7, 0),
        ] {
            let sd = SchedDomains::build(t, &DomainOptions::linux(v.0, v.1));
            check_invariants(t, &sd);
        }
        let x86 = DomainOptions {
            arch: Arch::X86,
            ..DomainOptions::default()
        };
        check_invariants(t, &SchedDomains::build(t, &x86));
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
    assert_eq!(spans(cls), ["5", "6", "7", "4"]);
    let mc = &sd.domains(5)[1];
    assert_eq!(mc.groups.len(), 6);
    assert_eq!(mc.groups[0].span.to_string(), "4-7");
    assert_eq!(mc.groups[1].span.to_string(), "8-11");
    assert_eq!(mc.groups[5].span.to_string(), "0-3");
    assert_eq!(mc.groups[0].flags, cls.flags);
    assert_eq!(
        mc.groups[3].flags, cls.flags,
        "shared groups carry CLS flags too"
    );
    assert_eq!(mc.cache_nice_tries, 1);
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
    assert_eq!(numa.cache_nice_tries, 2);
    assert_eq!(spans(numa), ["0-23", "24-47"]);
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
    let v5_16 = SchedDomains::build(&t, &DomainOptions::linux(5, 16));
    assert_eq!(shape(&v5_16, 0), [("CLS", 4), ("MC", 24)]);
    assert!(!v5_16.cluster_active());
    assert_eq!(
        v5_16.sd_share_id(5),
        0,
        "no SD_CLUSTER: share id is the LLC id"
    );
    assert!(v5_16.cpus_share_resources(0, 23));
    let v5_15 = SchedDomains::build(&t, &DomainOptions::linux(5, 15));
    assert_eq!(shape(&v5_15, 0), [("MC", 24)]);
    assert_eq!(v5_15.sd_llc_level(0), Some(0));
    // Debian's arm64 6.1: the same kernel without CONFIG_SCHED_CLUSTER.
    let mut debian = DomainOptions::linux(6, 1);
    debian.set_config(ConfigOption::SchedCluster, false);
    assert_eq!(shape(&SchedDomains::build(&t, &debian), 0), [("MC", 24)]);
}

#[test]
fn power9_smt8() {
    let (_, sd) = build("power9-smt8");
    assert_eq!(shape(&sd, 9), [("SMT", 4), ("MC", 8), ("PKG", 96)]);
    assert!(sd.smt_present() && !sd.cluster_active());
    let smt = &sd.domains(9)[0];
    assert_eq!(smt.imbalance_pct, 110);
    assert_eq!(smt.cache_nice_tries, 0);
    assert_eq!(
        smt.flags & (SHARE_CPUCAPACITY | SHARE_LLC),
        SHARE_CPUCAPACITY | SHARE_LLC
    );
    assert_eq!(spans(smt), ["9", "10", "11", "8"]);
    assert_eq!(smt.groups[0].flags, 0);
    assert_eq!(sd.sd_llc_size(9), 8);
    assert_eq!(sd.sd_llc_id(9), 8);
    assert_eq!(sd.sd_share_id(9), 8);
    let mc = &sd.domains(9)[1];
    assert_eq!(
        mc.groups.iter().map(|g| g.cores).collect::<Vec<_>>(),
        [1, 1]
    );
    let pkg = &sd.domains(9)[2];
    assert_eq!(pkg.groups.len(), 12);
    assert_eq!(pkg.groups[0].cores, 2, "an SMT8 big core is two SMT4 cores");
    assert_eq!(pkg.flags & (SHARE_LLC | NUMA), 0);
    assert_eq!(pkg.imbalance_pct, 117);
    assert_eq!(pkg.flags & PREFER_SIBLING, PREFER_SIBLING);
    let old = SchedDomains::build(&preset("power9-smt8").unwrap(), &DomainOptions::linux(6, 1));
    assert_eq!(shape(&old, 9), [("SMT", 4), ("MC", 8), ("DIE", 96)]);
}

#[test]
fn xeon_12c24t() {
    let (_, sd) = build("xeon-12c24t");
    assert_eq!(shape(&sd, 0), [("SMT", 2), ("MC", 12), ("NUMA", 24)]);
    assert_eq!(shape(&sd, 23), [("SMT", 2), ("MC", 12), ("NUMA", 24)]);
    assert_eq!(sd.domains(0)[0].span.to_string(), "0,12");
    assert_eq!(sd.domains(18)[1].span.to_string(), "6-11,18-23");
    let mc = &sd.domains(13)[1];
    assert_eq!(spans(mc), ["1,13", "2,14", "3,15", "4,16", "5,17", "0,12"]);
    assert!(mc.groups.iter().all(|g| g.cores == 1));
    let numa = &sd.domains(13)[2];
    assert_eq!(numa.groups[0].cores, 6);
    assert_eq!(numa.groups[1].balance_mask.to_string(), "6-11,18-23");
    assert_eq!(sd.nr_llcs(), 2);
    assert_eq!(sd.llc_ids(), &[0, 6]);
    assert!(sd.smt_present() && !sd.cluster_active());
}

/// The MC groups of an SMT machine are built from the CLS level (each
/// core's L2), which `cpu_attach_domain()` then removes: before v6.5 they
/// keep the CLS flags, v6.5 adds SD_SHARE_CPUCAPACITY to the local group,
/// v6.6 copies the SMT domain's flags (and the groups are shared, so every
/// CPU's update reaches all of them).
#[test]
fn group_flags_follow_the_surviving_child_by_version() {
    let t = preset("xeon-12c24t").unwrap();
    let smt = |v: (u32, u32)| {
        let sd = SchedDomains::build(&t, &DomainOptions::linux(v.0, v.1));
        let mc = &sd.domains(13)[1];
        mc.groups
            .iter()
            .map(|g| g.flags & SHARE_CPUCAPACITY != 0)
            .collect::<Vec<_>>()
    };
    assert_eq!(smt((6, 1)), [false; 6]);
    assert_eq!(smt((6, 5)), [true; 6]);
    assert_eq!(smt((6, 6)), [true; 6]);
    let sd = SchedDomains::build(&t, &DomainOptions::linux(6, 1));
    let mc = &sd.domains(13)[1];
    assert_eq!(mc.groups[2].flags & SHARE_LLC, SHARE_LLC);
    let sd = SchedDomains::build(&t, &DomainOptions::linux(5, 15));
    assert_eq!(
        sd.domains(13)[1].groups[0].flags,
        0,
        "no sg->flags before 5.16"
    );
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
    let t = TopologyBuilder::new("far")
        .packages(2)
        .cores_per_package(4)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .node_distance(vec![vec![10, 40], vec![40, 10]])
        .build()
        .unwrap();
    let sd = SchedDomains::build(&t, &DomainOptions::linux(5, 9));
    let top = sd.domains(0).last().unwrap();
    assert_eq!(top.level, Level::Numa(1));
    assert_eq!(top.flags & (WAKE_AFFINE | BALANCE_EXEC | BALANCE_FORK), 0);
    assert_eq!(top.flags & BALANCE_NEWIDLE, BALANCE_NEWIDLE);
    assert_eq!(top.imbalance_pct, 125);
    assert_eq!(top.busy_factor, 32);
    assert_eq!(sd.domains(0)[1].imbalance_pct, 117, "LLC level stays 117");
    assert_eq!(sd.domains(0)[0].imbalance_pct, 110);
}

#[test]
fn single_cpu_has_no_domains() {
    let t = TopologyBuilder::new("uni").build().unwrap();
    let sd = SchedDomains::build(&t, &DomainOptions::default());
    assert!(sd.domains(0).is_empty());
    assert_eq!(
        (sd.sd_llc_size(0), sd.sd_llc_id(0), sd.sd_share_id(0)),
        (1, 0, 0)
    );
    assert!(sd.cpus_share_cache(0, 0));
    assert!(sd.kernel_lines().is_empty());
}

/// imb_numa_nr is computed on the full domain chain before degeneration
/// (kunpeng920: PKG[24] over MC[24] gives 24 >> 3 = 3, scaled by span /
/// 48 above; xeon-12c24t: 12 >> 3 = 1); 5.18-5.19 used a quarter; before
/// 5.18 there is none.
#[test]
fn imb_numa_nr_on_the_raw_chain() {
    let numa = |sd: &SchedDomains| -> Vec<(usize, u32)> {
        sd.domains(0)
            .iter()
            .filter(|d| d.flags & NUMA != 0)
            .map(|d| (d.span_weight, d.imb_numa_nr))
            .collect()
    };
    let (t, sd) = build("kunpeng920");
    assert_eq!(numa(&sd), vec![(48, 3), (72, 3), (96, 6)]);
    let q = SchedDomains::build(&t, &DomainOptions::linux(5, 19));
    assert_eq!(numa(&q), vec![(48, 6), (72, 6), (96, 12)]);
    let none = SchedDomains::build(&t, &DomainOptions::linux(5, 17));
    assert_eq!(numa(&none), vec![(48, 0), (72, 0), (96, 0)]);
    let (_, sd) = build("xeon-12c24t");
    let top = sd.domains(0).last().unwrap();
    assert_eq!((top.span_weight, top.imb_numa_nr), (24, 1));
    assert_eq!(sd.domains(0)[0].imb_numa_nr, 0);
}

/// An L3 shared by two nodes (sub-NUMA clustering): the MC domain stops
/// at the node, and without CONFIG_NUMA it does not.
#[test]
fn llc_spanning_nodes_is_limited_to_the_node() {
    let t = TopologyBuilder::new("snc")
        .cores_per_package(8)
        .nodes_per_package(2)
        .cores_per_llc(8)
        .build()
        .unwrap();
    assert_eq!(t.llc_mask(0).to_string(), "0-7");
    let sd = SchedDomains::build(&t, &DomainOptions::linux(6, 1));
    assert_eq!(shape(&sd, 0), [("MC", 4), ("NUMA", 8)]);
    assert_eq!(spans(&sd.domains(1)[0]), ["1", "2", "3", "0"]);
    assert_eq!(spans(&sd.domains(5)[1]), ["4-7", "0-3"]);
    assert_eq!(sd.sd_llc_size(5), 4);
    assert!(!sd.cpus_share_cache(0, 4));
    let mut no_numa = DomainOptions::linux(6, 1);
    no_numa.set_config(ConfigOption::Numa, false);
    let sd = SchedDomains::build(&t, &no_numa);
    assert_eq!(shape(&sd, 0), [("MC", 8)]);
    assert!(sd.numa_distances().is_empty());
}

/// A ring of 8 nodes has NUMA levels 3 and 4 hops wide, where a remote
/// sibling's child domain reaches out of the domain: from v5.13 the group
/// comes from the sibling's descendant that fits; before, the child is
/// taken whole.
#[test]
fn ring_groups_come_from_descended_siblings() {
    let t = ring8();
    let sd = SchedDomains::build(&t, &DomainOptions::linux(6, 1));
    let d = &sd.domains(0)[2];
    assert_eq!(d.span.to_string(), "0-5,12-15");
    assert_eq!(spans(d), ["0-3,14-15", "4-5", "12-13"]);
    // The local group is local only for CPUs whose own 1-hop domain it
    // is; the remote groups are built one level lower, where 4-5 is the
    // NODE child of CPUs 4 and 5.
    let masks: Vec<String> = d
        .groups
        .iter()
        .map(|g| g.balance_mask.to_string())
        .collect();
    assert_eq!(masks, ["0-1", "4-5", "12-13"]);
    let top = &sd.domains(0)[4];
    assert_eq!(spans(top), ["0-7,10-15", "2-15"]);
    let old = SchedDomains::build(&t, &DomainOptions::linux(5, 12));
    assert_eq!(spans(&old.domains(0)[2]), ["0-3,14-15", "2-7", "10-15"]);
}

/// Before v5.10 a NUMA domain with a single group survives when it has
/// NUMA flags its child lacks and keeps SD_WAKE_AFFINE (node 2 below has
/// no node at distance 20); the metadata-based check removes it.
#[test]
fn single_group_numa_domain_survives_before_5_10() {
    let t = TopologyBuilder::new("lopsided")
        .packages(3)
        .cores_per_package(2)
        .node_distance(vec![vec![10, 20, 30], vec![20, 10, 30], vec![30, 30, 10]])
        .build()
        .unwrap();
    let new = SchedDomains::build(&t, &DomainOptions::linux(5, 10));
    assert_eq!(shape(&new, 4), [("MC", 2), ("NUMA", 6)]);
    let old = SchedDomains::build(&t, &DomainOptions::linux(5, 9));
    assert_eq!(shape(&old, 4), [("MC", 2), ("NUMA", 2), ("NUMA", 6)]);
    assert_eq!(old.domains(4)[1].groups.len(), 1);
    assert_eq!(old.domains(4)[1].flags & LOAD_BALANCE, 0, "gone in 5.8");
    let older = SchedDomains::build(&t, &DomainOptions::linux(5, 7));
    assert_eq!(older.domains(4)[1].flags & LOAD_BALANCE, LOAD_BALANCE);
}

/// x86 leaves the package level out when a package spans nodes, so the
/// node level is named NODE instead of DIE.
#[test]
fn x86_numa_in_package_names_node() {
    let t = TopologyBuilder::new("npsx2")
        .cores_per_package(8)
        .nodes_per_package(2)
        .cores_per_llc(2)
        .build()
        .unwrap();
    let generic = SchedDomains::build(&t, &DomainOptions::linux(6, 1));
    assert_eq!(shape(&generic, 0), [("MC", 2), ("DIE", 4), ("NUMA", 8)]);
    let x86 = SchedDomains::build(
        &t,
        &DomainOptions {
            arch: Arch::X86,
            ..DomainOptions::linux(6, 1)
        },
    );
    assert_eq!(shape(&x86, 0), [("MC", 2), ("NODE", 4), ("NUMA", 8)]);
    assert_eq!(
        generic.domains(0)[1].flags,
        x86.domains(0)[1].flags,
        "only the name differs"
    );
}

#[test]
fn build_options_remove_levels() {
    let t = preset("xeon-12c24t").unwrap();
    let with = |o: ConfigOption| {
        let mut opts = DomainOptions::linux(6, 1);
        opts.set_config(o, false);
        SchedDomains::build(&t, &opts)
    };
    // Without SMT the cluster mask (the L2, here the core's two threads)
    // is still built: a CLS level over the threads, without SMT flags.
    let sd = with(ConfigOption::SchedSmt);
    assert_eq!(shape(&sd, 0), [("CLS", 2), ("MC", 12), ("NUMA", 24)]);
    assert!(!sd.smt_present());
    assert_eq!(sd.domains(0)[0].flags & SHARE_CPUCAPACITY, 0);
    assert!(sd.domains(0)[2].groups.iter().all(|g| g.cores == 12));
    let mut neither = DomainOptions::linux(6, 1);
    neither.set_config(ConfigOption::SchedSmt, false);
    neither.set_config(ConfigOption::SchedCluster, false);
    let sd = SchedDomains::build(&t, &neither);
    assert_eq!(shape(&sd, 0), [("MC", 12), ("NUMA", 24)]);
    assert_eq!(sd.domains(0)[0].groups.len(), 12);
    let sd = with(ConfigOption::SchedMc);
    assert_eq!(shape(&sd, 0), [("SMT", 2), ("DIE", 12), ("NUMA", 24)]);
    assert_eq!(sd.sd_llc_size(0), 2, "the LLC domain is now SMT");
    let sd = with(ConfigOption::Numa);
    assert_eq!(shape(&sd, 0), [("SMT", 2), ("MC", 12), ("DIE", 24)]);
    assert_eq!(sd.domains(0)[2].flags & NUMA, 0);
}

#[test]
fn kernel_lines_use_the_version_names() {
    let t = preset("xeon-12c24t").unwrap();
    let sd = SchedDomains::build(&t, &DomainOptions::linux(6, 1));
    let lines = sd.kernel_lines();
    assert_eq!(lines.len(), 24 * 3);
    assert_eq!(
        lines[0],
        "cpu0 domain0 name=SMT span=0,12 imb=110 min_int=2 max_int=4 \
         flags=BALANCE_NEWIDLE,BALANCE_EXEC,BALANCE_FORK,WAKE_AFFINE,SHARE_CPUCAPACITY,SHARE_PKG_RESOURCES,PREFER_SIBLING \
         groups=0|12"
    );
    let latest = SchedDomains::build(&t, &DomainOptions::default());
    assert!(latest.kernel_lines()[1].contains(",SHARE_LLC,"));
}

/// The shared rings give every CPU the list its own `build_sched_groups()`
/// pass builds wherever groups are placed regularly, and the NUMA lists
/// CPUs share are those each CPU's `build_overlap_sched_groups()` builds:
/// every preset, and `smp:` shapes with contiguous and interleaved
/// numbering.
#[test]
fn shared_lists_equal_each_cpus_own_pass() {
    let mut machines: Vec<Topology> = crate::presets::presets()
        .iter()
        .filter(|p| p.0 != "host")
        .map(|p| preset(p.0).unwrap())
        .collect();
    for spec in [
        "smp:sockets=2,dies=2,clusters=3,cores=2,threads=2,nodes=4",
        "smp:sockets=2,dies=2,clusters=3,cores=2,threads=2,nodes=4,numbering=interleaved",
        "smp:sockets=3,cores=5,threads=4,numbering=interleaved,nodes=3,llc=socket",
        "smp:cores=12,nodes=3,distance=die:15",
        "smp:sockets=4,dies=2,cores=3,threads=2,nodes=8,numbering=interleaved",
    ] {
        machines.push(crate::synthetic::from_smp(spec).unwrap());
    }
    machines.push(ring8());
    // 16 nodes of 2 CPUs on a ring, 10 more per hop: NUMA levels whose
    // groups overlap
    let ring16: Vec<String> = (0..16i32)
        .map(|a| {
            (0..16i32)
                .map(|b| (10 + 10 * (a - b).rem_euclid(16).min((b - a).rem_euclid(16))).to_string())
                .collect::<Vec<_>>()
                .join(":")
        })
        .collect();
    let spec = format!("smp:cores=32,nodes=16,slit={}", ring16.join("/"));
    machines.push(crate::synthetic::from_smp(&spec).unwrap());
    for t in &machines {
        for opts in [DomainOptions::default(), DomainOptions::linux(5, 4)] {
            let sd = SchedDomains::build(t, &opts);
            let (tl, _) = levels::topology_levels(t, &opts);
            let chains = build::raw_chains(&tl, t.all_cpus(), &opts);
            let mut shared = SharedFlags::new();
            for cpu in 0..t.nr_cpus() {
                for d in sd.domains(cpu) {
                    let k = tl.iter().position(|l| l.level == d.level).unwrap();
                    if tl[k].overlap {
                        let own = overlap::build_overlap_sched_groups(
                            &chains,
                            cpu,
                            k,
                            &opts,
                            &mut overlap::BalanceMasks::new(),
                        );
                        let own: Vec<(String, String)> = own
                            .iter()
                            .map(|g| (g.span.to_string(), g.balance_mask.to_string()))
                            .collect();
                        let ours: Vec<(String, String)> = d
                            .groups
                            .iter()
                            .map(|g| (g.span.to_string(), g.balance_mask.to_string()))
                            .collect();
                        assert_eq!(ours, own, "{} cpu {cpu} {}", t.name(), d.name);
                        continue;
                    }
                    let own: Vec<String> =
                        groups::build_sched_groups(&chains, cpu, k, &opts, &mut shared)
                            .iter()
                            .map(|g| g.span.to_string())
                            .collect();
                    assert_eq!(spans(d), own, "{} cpu {cpu} {}", t.name(), d.name);
                }
            }
        }
    }
}
