//! `smp:` machines against machines built another way: by hand through
//! [`TopologyBuilder`], the presets, and the domains real kernels built for
//! the QEMU `-smp` lines of the kernel-domain fixtures.

use proptest::prelude::*;
use std::fs;
use std::path::PathBuf;
use topology::{
    from_smp, preset, Arch, DomainOptions, SchedDomains, SmpLevel, SmpSpec, SmtNumbering, Topology,
    TopologyBuilder,
};

/// The kernels the comparisons build domains for: the newest, one before
/// the cluster level (5.12), one with DIE and SD_CLUSTER (6.1), on both
/// level tables.
fn kernels() -> Vec<DomainOptions> {
    let mut v = Vec::new();
    for (major, minor) in [(7, 0), (5, 12), (6, 1)] {
        for arch in [Arch::Generic, Arch::X86] {
            v.push(DomainOptions {
                arch,
                ..DomainOptions::linux(major, minor)
            });
        }
    }
    v
}

fn same_domains(a: &Topology, b: &Topology) {
    for opts in kernels() {
        let (da, db) = (SchedDomains::build(a, &opts), SchedDomains::build(b, &opts));
        assert!(
            da == db,
            "{} and {} build different domains for {opts:?}:\n{}\n---\n{}",
            a.name(),
            b.name(),
            da.kernel_lines().join("\n"),
            db.kernel_lines().join("\n")
        );
    }
}

fn remote_matrix(nodes: usize) -> Vec<Vec<u32>> {
    (0..nodes)
        .map(|a| (0..nodes).map(|b| if a == b { 10 } else { 20 }).collect())
        .collect()
}

#[test]
fn smp_1024_cpus_equal_a_hand_built_machine() {
    let t = from_smp("smp:sockets=8,cores=64,threads=2,nodes=8").unwrap();
    assert_eq!(t.nr_cpus(), 1024);
    let hand = TopologyBuilder::new("hand")
        .packages(8)
        .cores_per_package(64)
        .threads_per_core(2, SmtNumbering::Contiguous)
        .nodes_per_package(1)
        .node_distance(remote_matrix(8))
        .build()
        .unwrap();
    assert!(t.same_structure(&hand));
    let sd = SchedDomains::build(&t, &DomainOptions::default());
    let levels: Vec<_> = sd
        .domains(1000)
        .iter()
        .map(|d| (d.name, d.span_weight))
        .collect();
    // the node is the package is the LLC: PKG degenerates into MC
    assert_eq!(levels, [("SMT", 2), ("MC", 128), ("NUMA", 1024)]);
    same_domains(&t, &hand);
}

#[test]
fn smp_with_dies_and_clusters_equals_a_hand_built_machine() {
    // 4 sockets x 2 dies x 4 clusters x 4 cores x 2 threads, a node and an
    // LLC per die; the builder counts in cores per package, node, LLC and
    // cluster, and takes the distances as a matrix.
    let t =
        from_smp("smp:sockets=4,dies=2,clusters=4,cores=4,threads=2,nodes=8,numbering=interleaved")
            .unwrap();
    assert_eq!(t.nr_cpus(), 256);
    let dist: Vec<Vec<u32>> = (0..8)
        .map(|a: usize| {
            (0..8)
                .map(|b: usize| match (a == b, a / 2 == b / 2) {
                    (true, _) => 10,
                    (false, true) => 12,
                    (false, false) => 20,
                })
                .collect()
        })
        .collect();
    let hand = TopologyBuilder::new("hand")
        .packages(4)
        .cores_per_package(32)
        .nodes_per_package(2)
        .cores_per_llc(16)
        .cores_per_cluster(4)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .node_distance(dist)
        .build()
        .unwrap();
    assert!(t.same_structure(&hand));
    same_domains(&t, &hand);
}

/// Presets and the `smp:` spec of the same shape.
const PRESET_SHAPES: &[(&str, &str)] = &[
    (
        "kunpeng920",
        "smp:sockets=2,dies=2,clusters=6,cores=4,nodes=4,slit=10:12:20:22/12:10:22:24/20:22:10:12/22:24:12:10",
    ),
    ("kunpeng920-1s", "smp:dies=2,clusters=6,cores=4,nodes=2"),
    ("kunpeng920-node", "smp:clusters=6,cores=4"),
    ("xeon-12c24t", "smp:sockets=2,cores=6,threads=2,numbering=interleaved,nodes=2"),
    ("jacobsville", "smp:clusters=6,cores=4,l2=cluster,llc=socket"),
    ("epyc-zen3", "smp:dies=8,cores=8,threads=2,numbering=interleaved"),
    ("sapphire-rapids", "smp:sockets=2,cores=56,threads=2,numbering=interleaved,nodes=2"),
    ("altra", "smp:clusters=40,cores=2,llc=core"),
    ("kvm-8vcpu", "smp:cores=8"),
];

#[test]
fn smp_shapes_of_the_presets_build_the_presets_domains() {
    for (name, spec) in PRESET_SHAPES {
        let p = preset(name).unwrap();
        let s = from_smp(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert!(s.same_structure(&p), "{spec} is not {name}");
        same_domains(&s, &p);
    }
    // POWER9's 8-thread LLC as a 2-core cluster sharing L2 and L3: the
    // preset has no clusters, so the shapes differ, but the cluster equals
    // the LLC, the CLS level degenerates and the domains are the same.
    let p = preset("power9-smt8").unwrap();
    let s = from_smp("smp:clusters=12,cores=2,threads=4,l2=cluster,llc=cluster").unwrap();
    assert!(!s.same_structure(&p));
    same_domains(&s, &p);
}

/// Kernel-domain fixtures and their QEMU `-smp`/`-numa` lines as `smp:`
/// specs (QEMU without `-numa dist` leaves the SLIT out, so Linux takes 20
/// between any two nodes).
const QEMU_CASES: &[(&str, &str, &str)] = &[
    (
        "kernel-6.1-domains",
        "a_skx_2s2c2t_2node",
        "smp:8,sockets=2,cores=2,threads=2,nodes=2",
    ),
    (
        "kernel-6.1-domains",
        "d_skx_1s8c_2node_llc_spans_nodes",
        "smp:8,sockets=1,cores=8,threads=1,nodes=2,distance=die:20",
    ),
    (
        "kernel-6.1-domains",
        "e_skx_8s2c_8node_ring",
        "smp:16,sockets=8,cores=2,threads=1,nodes=8,slit=10:20:30:40:50:40:30:20/20:10:20:30:40:50:40:30/30:20:10:20:30:40:50:40/40:30:20:10:20:30:40:50/50:40:30:20:10:20:30:40/40:50:40:30:20:10:20:30/30:40:50:40:30:20:10:20/20:30:40:50:40:30:20:10",
    ),
    (
        "kernel-6.1-domains-arm64",
        "kp920_1node_24c_schedcluster",
        "smp:24,sockets=1,clusters=6,cores=4,threads=1",
    ),
];

#[test]
fn qemu_smp_lines_build_what_the_booted_kernel_built() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel-domains");
    for (set, case, spec) in QEMU_CASES {
        let dir = root.join(set).join(case);
        let cmdline = fs::read_to_string(dir.join("cmdline.txt")).unwrap();
        let smp = spec
            .trim_start_matches("smp:")
            .split(",nodes")
            .next()
            .unwrap();
        assert!(
            cmdline.contains(&format!("-smp {smp}")),
            "{case}: {cmdline}"
        );
        let arch = if cmdline.starts_with("qemu-system-x86_64") {
            Arch::X86
        } else {
            Arch::Generic
        };
        let opts = DomainOptions {
            arch,
            ..DomainOptions::linux(6, 1)
        };
        let t = from_smp(spec).unwrap();
        let ours = SchedDomains::build(&t, &opts).kernel_lines();
        let want = fs::read_to_string(dir.join("kernel_domains.txt")).unwrap();
        let want: Vec<&str> = want.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(ours, want, "{case}");
    }
}

/// A valid spec: counts, a node count the shape allows, cache levels that
/// fit, and the CPU total under `max_cpus`.
fn valid_spec(max_cpus: usize) -> impl Strategy<Value = String> {
    (
        1usize..=4,
        1usize..=3,
        prop::option::of(1usize..=4),
        1usize..=6,
        1usize..=4,
        any::<prop::sample::Index>(),
        any::<bool>(),
        0usize..4,
        0usize..4,
    )
        .prop_filter("too many CPUs", move |(s, d, c, n, t, ..)| {
            s * d * c.unwrap_or(1) * n * t <= max_cpus
        })
        .prop_map(|(s, d, c, n, t, pick, interleaved, l2, llc)| {
            let mut spec = format!("smp:sockets={s},dies={d},cores={n},threads={t}");
            if let Some(c) = c {
                spec += &format!(",clusters={c}");
            }
            let shape = SmpSpec::parse(spec.trim_start_matches("smp:")).unwrap();
            let nodes = shape.allowed_nodes();
            spec += &format!(",nodes={}", nodes[pick.index(nodes.len())]);
            if interleaved {
                spec += ",numbering=interleaved";
            }
            let levels: Vec<SmpLevel> = [
                SmpLevel::Core,
                SmpLevel::Cluster,
                SmpLevel::Die,
                SmpLevel::Socket,
            ]
            .into_iter()
            .filter(|l| *l != SmpLevel::Cluster || c.is_some())
            .collect();
            let l2_choices: Vec<SmpLevel> = levels
                .iter()
                .copied()
                .filter(|l| *l <= SmpLevel::Cluster)
                .collect();
            let l2 = l2_choices[l2 % l2_choices.len()];
            let llc_choices: Vec<SmpLevel> = levels.into_iter().filter(|l| *l >= l2).collect();
            let llc = llc_choices[llc % llc_choices.len()];
            spec += &format!(",l2={},llc={}", l2.name(), llc.name());
            spec
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_valid_spec_builds_with_its_domains(spec in valid_spec(256)) {
        let s = SmpSpec::parse(spec.trim_start_matches("smp:")).unwrap();
        let t = from_smp(&spec).unwrap();
        let product = s.sockets * s.dies * s.clusters.unwrap_or(1) * s.cores * s.threads;
        prop_assert_eq!(t.nr_cpus(), product);
        prop_assert_eq!(t.nr_packages(), s.sockets);
        prop_assert_eq!(t.nr_nodes(), s.nodes);
        prop_assert_eq!(t.threads_per_core(), s.threads);
        // the canonical form reads back as the same machine
        let again = from_smp(&s.to_string()).unwrap();
        prop_assert!(again.same_structure(&t));
        for opts in [DomainOptions::default(), DomainOptions { arch: Arch::X86, ..DomainOptions::linux(6, 1) }] {
            let sd = SchedDomains::build(&t, &opts);
            for cpu in 0..t.nr_cpus() {
                let doms = sd.domains(cpu);
                // every chain ends spanning the machine (none on 1 CPU)
                if t.nr_cpus() > 1 {
                    prop_assert_eq!(doms.last().map(|d| d.span_weight), Some(t.nr_cpus()));
                }
                for w in doms.windows(2) {
                    prop_assert!(w[0].span.is_subset(&w[1].span));
                }
            }
        }
    }
}
