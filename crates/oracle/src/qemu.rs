//! A machine's topology as a qemu-system-x86_64 command line, and the
//! machine the guest kernel will actually see.
//!
//! QEMU numbers vCPUs socket by socket, die by die, (cluster by cluster,)
//! core by core, the threads of a core consecutively (`cpu_index`,
//! hw/core/machine-smp.c), and Linux on x86 numbers CPUs in the order of
//! the ACPI MADT, which QEMU writes in that order. A preset whose SMT
//! siblings are `cpu` and `cpu + cores` (as x86 firmware numbers them) is
//! therefore booted renumbered: the guest's machine is the same shape with
//! contiguous threads, and every comparison (domains, scenarios, the
//! simulator's side) is made on that machine, written as an `smp:` spec.
//!
//! What QEMU 7.2's x86 `-smp` can say: sockets, dies, cores, threads (an
//! L2 per core and an L3 per die from the CPU model's cache leaves,
//! target/i386/cpu.c); `clusters=` it refuses on x86 ("clusters not
//! supported by this machine's CPU topology"), which is passed through so
//! the user sees qemu's own refusal. NUMA nodes are `-numa node` with a
//! `memory-backend-ram` object each, the distance matrix `-numa dist`.

use crate::error::OracleError;
use std::fmt::Write as _;
use topology::{SmpSpec, SmtNumbering, Topology};

/// Guest memory per NUMA node (or in all, without NUMA), MiB, at least.
pub const MIB_PER_NODE: usize = 256;

/// The tracefs ring buffer per CPU, KiB: 48 MiB in all, between 256 KiB
/// and 4 MiB per CPU.
pub fn trace_kb(nr_cpus: usize) -> usize {
    (49152 / nr_cpus.max(1)).clamp(256, 4096)
}

/// The qemu shape of a machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QemuShape {
    /// The guest's machine as an `smp:` spec (contiguous threads).
    pub guest_spec: String,
    /// The same shape numbered as the source machine (to check the mapping).
    pub source_spec: String,
    /// Source CPU -> guest CPU (the identity for contiguous machines).
    pub to_guest: Vec<usize>,
    /// The parsed guest spec.
    pub smp: SmpSpec,
    /// Node distance matrix.
    pub slit: Vec<Vec<u32>>,
}

fn inexpressible(t: &Topology, why: impl Into<String>) -> OracleError {
    OracleError::Inexpressible {
        machine: t.name().to_string(),
        why: why.into(),
    }
}

impl QemuShape {
    /// The shape of `t`, or why qemu cannot be asked for it.
    pub fn of(t: &Topology) -> Result<QemuShape, OracleError> {
        let n = t.nr_cpus();
        let sockets = t.nr_packages();
        let threads = t.threads_per_core();
        let cores = t.nr_cores();
        if threads == 0 || cores * threads != n || !cores.is_multiple_of(sockets) {
            return Err(inexpressible(
                t,
                "cores of unequal size or sockets of unequal core counts",
            ));
        }
        let cores_per_socket = cores / sockets;
        let numbering = if threads > 1 && !t.smt_mask(0).test(1) {
            SmtNumbering::Interleaved
        } else {
            SmtNumbering::Contiguous
        };
        let has_clusters = t.nr_clusters() < cores;
        let llcs_per_socket = t.nr_llcs() / sockets;
        let clusters_per_socket = t.nr_clusters() / sockets;
        // The LLC: per socket, per die (several per socket), per cluster or per core.
        let (dies, llc, clusters) = if t.nr_llcs() == cores && !has_clusters {
            (1, "core", None)
        } else if has_clusters && t.nr_llcs() == t.nr_clusters() {
            (1, "cluster", Some(clusters_per_socket))
        } else if llcs_per_socket == 1 {
            (1, "die", has_clusters.then_some(clusters_per_socket))
        } else {
            if !cores_per_socket.is_multiple_of(llcs_per_socket) {
                return Err(inexpressible(t, "LLCs of unequal size"));
            }
            if has_clusters && !clusters_per_socket.is_multiple_of(llcs_per_socket) {
                return Err(inexpressible(t, "an LLC smaller than a cluster"));
            }
            let c = has_clusters.then(|| clusters_per_socket / llcs_per_socket);
            (llcs_per_socket, "die", c)
        };
        let cores_in = cores_per_socket / dies / clusters.unwrap_or(1);
        let l2 = if has_clusters { "cluster" } else { "core" };
        let slit: Vec<Vec<u32>> = t.node_distances().to_vec();
        let slit_s: Vec<String> = slit
            .iter()
            .map(|r| {
                r.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(":")
            })
            .collect();
        let mut base = format!("smp:sockets={sockets},dies={dies}");
        if let Some(c) = clusters {
            let _ = write!(base, ",clusters={c}");
        }
        let _ = write!(
            base,
            ",cores={cores_in},threads={threads},nodes={},l2={l2},llc={llc}",
            t.nr_nodes()
        );
        if t.nr_nodes() > 1 {
            let _ = write!(base, ",slit={}", slit_s.join("/"));
        }
        let source_spec = match numbering {
            SmtNumbering::Interleaved => format!("{base},numbering=interleaved"),
            _ => base.clone(),
        };
        let guest_spec = base;
        let src = topology::machine(&source_spec)
            .map_err(|e| inexpressible(t, format!("as {source_spec}: {e}")))?;
        if !src.same_structure(t) {
            return Err(inexpressible(
                t,
                format!("its nearest qemu shape ({source_spec}) is another machine"),
            ));
        }
        let smp = SmpSpec::parse(guest_spec.strip_prefix("smp:").unwrap_or(&guest_spec))
            .map_err(|e| inexpressible(t, format!("as {guest_spec}: {e}")))?;
        let guest = topology::machine(&guest_spec)
            .map_err(|e| inexpressible(t, format!("as {guest_spec}: {e}")))?;
        // Source CPU -> guest CPU: the guest CPU with the same place
        // (package, core index within the machine, thread index in the core).
        let to_guest = map_cpus(t, &guest);
        Ok(QemuShape {
            guest_spec,
            source_spec,
            to_guest,
            smp,
            slit,
        })
    }

    /// Total vCPUs.
    pub fn nr_cpus(&self) -> usize {
        self.smp.nr_cpus()
    }

    /// The guest's machine.
    pub fn guest_topology(&self) -> Topology {
        // guest_spec was built and parsed in `of`.
        topology::machine(&self.guest_spec).expect("checked in QemuShape::of")
    }

    /// qemu's machine arguments: `-smp`, memory, NUMA nodes and distances.
    pub fn args(&self) -> Vec<String> {
        let s = &self.smp;
        let guest = self.guest_topology();
        let mut smp = format!("{},sockets={},dies={}", s.nr_cpus(), s.sockets, s.dies);
        if let Some(c) = s.clusters {
            let _ = write!(smp, ",clusters={c}");
        }
        let _ = write!(smp, ",cores={},threads={}", s.cores, s.threads);
        let nodes = guest.nr_nodes();
        // room for the kernel's per-CPU data and the trace buffers
        let need = 192 + 2 * s.nr_cpus() + trace_kb(s.nr_cpus()) * s.nr_cpus() / 1024;
        let per_node = MIB_PER_NODE.max(need.div_ceil(nodes).div_ceil(16) * 16);
        let mut a: Vec<String> = vec![
            "-smp".into(),
            smp,
            "-m".into(),
            format!("{}M", per_node * nodes),
        ];
        if nodes > 1 {
            for node in 0..nodes {
                a.push("-object".into());
                a.push(format!("memory-backend-ram,size={per_node}M,id=m{node}"));
                let mut arg = format!("node,memdev=m{node},nodeid={node}");
                for (lo, hi) in ranges(guest.node_cpus(node).iter()) {
                    if lo == hi {
                        let _ = write!(arg, ",cpus={lo}");
                    } else {
                        let _ = write!(arg, ",cpus={lo}-{hi}");
                    }
                }
                a.push("-numa".into());
                a.push(arg);
            }
            for (i, row) in self.slit.iter().enumerate() {
                for (j, d) in row.iter().enumerate() {
                    if i != j {
                        a.push("-numa".into());
                        a.push(format!("dist,src={i},dst={j},val={d}"));
                    }
                }
            }
        }
        a
    }
}

/// Consecutive runs of a sorted CPU list.
fn ranges(cpus: impl Iterator<Item = usize>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for c in cpus {
        match out.last_mut() {
            Some((_, hi)) if *hi + 1 == c => *hi = c,
            _ => out.push((c, c)),
        }
    }
    out
}

/// For each CPU of `src`, the CPU of `guest` at the same place: the k-th
/// thread of the m-th core (cores ordered by their lowest CPU).
fn map_cpus(src: &Topology, guest: &Topology) -> Vec<usize> {
    let order = |t: &Topology| -> Vec<Vec<usize>> {
        let mut cores: Vec<Vec<usize>> = (0..t.nr_cores())
            .map(|c| t.core_cpus(c).iter().collect())
            .collect();
        cores.sort();
        cores
    };
    let (s, g) = (order(src), order(guest));
    let mut map = vec![0; src.nr_cpus()];
    for (sc, gc) in s.iter().zip(&g) {
        for (a, b) in sc.iter().zip(gc) {
            map[*a] = *b;
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use topology::preset;

    #[test]
    fn xeon_is_renumbered_contiguously() {
        let s = QemuShape::of(&preset("xeon-12c24t").unwrap()).unwrap();
        assert_eq!(
            s.guest_spec,
            "smp:sockets=2,dies=1,cores=6,threads=2,nodes=2,l2=core,llc=die,slit=10:20/20:10"
        );
        assert!(s.source_spec.ends_with(",numbering=interleaved"));
        // siblings 0 and 12 in the preset are guest CPUs 0 and 1
        assert_eq!(s.to_guest[0], 0);
        assert_eq!(s.to_guest[12], 1);
        assert_eq!(s.to_guest[1], 2);
        let a = s.args().join(" ");
        assert_eq!(
            a,
            "-smp 24,sockets=2,dies=1,cores=6,threads=2 -m 512M \
             -object memory-backend-ram,size=256M,id=m0 -numa node,memdev=m0,nodeid=0,cpus=0-11 \
             -object memory-backend-ram,size=256M,id=m1 -numa node,memdev=m1,nodeid=1,cpus=12-23 \
             -numa dist,src=0,dst=1,val=20 -numa dist,src=1,dst=0,val=20"
        );
    }

    #[test]
    fn big_machines_get_memory_for_their_cpus() {
        let s = QemuShape::of(&preset("power9-smt8").unwrap()).unwrap();
        // 96 CPUs: 192 + 192 + 512 KiB x 96 = 432 MiB
        assert_eq!(trace_kb(96), 512);
        assert!(s.args().join(" ").contains("-m 432M"), "{:?}", s.args());
    }

    #[test]
    fn kvm_8vcpu_has_no_numa() {
        let s = QemuShape::of(&preset("kvm-8vcpu").unwrap()).unwrap();
        assert_eq!(
            s.args().join(" "),
            "-smp 8,sockets=1,dies=1,cores=8,threads=1 -m 256M"
        );
    }

    #[test]
    fn ccx_llcs_become_dies() {
        let s = QemuShape::of(&preset("epyc-zen3").unwrap()).unwrap();
        assert!(s
            .guest_spec
            .starts_with("smp:sockets=1,dies=8,cores=8,threads=2"));
    }

    #[test]
    fn clusters_are_passed_for_qemu_to_judge() {
        let s = QemuShape::of(&preset("jacobsville").unwrap()).unwrap();
        assert!(s.args()[1].contains("clusters=6,cores=4"), "{:?}", s.args());
    }

    #[test]
    fn every_preset_maps_or_says_why() {
        for (name, _) in topology::presets() {
            if *name == "host" {
                continue;
            }
            match QemuShape::of(&preset(name).unwrap()) {
                Ok(s) => {
                    let g = s.guest_topology();
                    assert_eq!(g.nr_cpus(), s.to_guest.len());
                    let mut seen = s.to_guest.clone();
                    seen.sort();
                    seen.dedup();
                    assert_eq!(seen.len(), g.nr_cpus(), "{name}: mapping is a bijection");
                }
                Err(e) => assert!(e.to_string().contains("qemu cannot express"), "{e}"),
            }
        }
    }
}
