//! `Topology`: which CPUs share a core, a cluster, a last-level cache, a
//! NUMA node and a package, plus node distances and (optional) cache sizes.
//!
//! The levels are the ones Linux derives sched domains from
//! (`cpu_smt_mask`, `cpu_clustergroup_mask`, `cpu_coregroup_mask`,
//! `cpumask_of_node`, the package).

use crate::cpumask::CpuMask;
use crate::error::TopologyError;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// Topological distance class of two CPUs, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Distance {
    /// The same CPU.
    SameCpu,
    /// Hardware threads of one core.
    Smt,
    /// Different cores of one cluster (shared L2 or L3 tag).
    Cluster,
    /// Different clusters sharing the last-level cache.
    Llc,
    /// Same package, different LLC (another CCX, die or node of the socket).
    Package,
    /// Different packages.
    Remote,
}

impl Distance {
    /// Every class, nearest first (each at its own index: `d as usize`).
    pub const ALL: [Distance; 6] = [
        Distance::SameCpu,
        Distance::Smt,
        Distance::Cluster,
        Distance::Llc,
        Distance::Package,
        Distance::Remote,
    ];
}

/// Where a CPU sits: dense, 0-based, machine-wide ids of its core, cluster,
/// LLC, NUMA node and package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CpuPlace {
    /// Core (the SMT sibling group as Linux sees it).
    pub core: usize,
    /// Cluster; equals a core-sized group on machines without clusters.
    pub cluster: usize,
    /// Last-level cache instance.
    pub llc: usize,
    /// NUMA node.
    pub node: usize,
    /// Physical package (socket).
    pub package: usize,
}

/// What a cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum CacheKind {
    /// Data only.
    Data,
    /// Instructions only.
    Instruction,
    /// Both.
    Unified,
}

impl fmt::Display for CacheKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheKind::Data => "d",
            CacheKind::Instruction => "i",
            CacheKind::Unified => "",
        })
    }
}

/// One cache instance (optional descriptive data: the domain construction
/// does not read it; importers use it to find the LLC).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CacheInfo {
    /// 1 for L1, 2 for L2, ...
    pub level: u8,
    /// Data, instruction or unified.
    pub kind: CacheKind,
    /// Size in KiB, when known.
    pub size_kib: Option<u64>,
    /// CPUs sharing this instance.
    pub shared_cpus: CpuMask,
}

impl CacheInfo {
    /// Short label such as `L1d 64K`, `L3 24M` or `L2` (size unknown).
    pub fn label(&self) -> String {
        let mut s = format!("L{}{}", self.level, self.kind);
        if let Some(k) = self.size_kib {
            if k >= 1024 && k % 1024 == 0 {
                s += &format!(" {}M", k / 1024);
            } else if k >= 1024 {
                s += &format!(" {:.1}M", k as f64 / 1024.0);
            } else {
                s += &format!(" {k}K");
            }
        }
        s
    }
}

/// A machine: CPUs `0..nr_cpus()` and how they are grouped.
///
/// Built with [`Topology::from_places`], a [`crate::TopologyBuilder`], a
/// [`crate::preset`] or an importer. All per-CPU queries are O(1) lookups.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Topology {
    name: String,
    nr_cpus: usize,
    places: Vec<CpuPlace>,
    node_distance: Vec<Vec<u32>>,
    caches: Vec<CacheInfo>,
    #[serde(skip)]
    all: CpuMask,
    #[serde(skip)]
    core_masks: Vec<CpuMask>,
    /// Each core's CPUs as a list, for walks that must not cost a whole
    /// mask's words on a large machine.
    #[serde(skip)]
    core_cpus: Vec<Box<[u32]>>,
    #[serde(skip)]
    cluster_masks: Vec<CpuMask>,
    #[serde(skip)]
    llc_masks: Vec<CpuMask>,
    #[serde(skip)]
    node_masks: Vec<CpuMask>,
    #[serde(skip)]
    package_masks: Vec<CpuMask>,
    #[serde(skip)]
    threads_per_core: usize,
    /// Each CPU's core, cluster, LLC and package ids as four 16-bit fields
    /// of one word ([`distance_key`]): `distance` reads 8 bytes per CPU
    /// instead of a 40-byte place (at 1024 CPUs 8 KiB instead of 40 KiB,
    /// which the simulator's hot path reads on every line transfer).
    #[serde(skip)]
    distance_keys: Vec<u64>,
    /// On a machine of at most [`DISTANCE_TABLE_MAX_CPUS`] CPUs, the
    /// distance of every pair, `[a * nr_cpus + b]` (at most 16 KiB): one
    /// load where the keys take two and eight operations, on the line
    /// model's chain from a line's writer to its cost (bench-scale's
    /// 24-CPU run asks about two distances an event). Empty on a larger
    /// machine, whose table would not stay in a first-level cache.
    #[serde(skip)]
    distance_table: Box<[Distance]>,
}

/// The largest machine whose pairs' distances [`Topology`] keeps in a
/// table (128 CPUs: 16 KiB).
pub const DISTANCE_TABLE_MAX_CPUS: usize = 128;

/// A place's core, cluster, LLC and package ids packed low to high, 16 bits
/// each (ids are dense and below [`CpuMask::MAX_CPUS`], 4096): two CPUs
/// share a level exactly when that field of their keys' XOR is zero.
fn distance_key(p: &CpuPlace) -> u64 {
    let field = |id: usize| {
        debug_assert!(id < 1 << 16);
        id as u64 & 0xffff
    };
    field(p.core) | field(p.cluster) << 16 | field(p.llc) << 32 | field(p.package) << 48
}

/// The distance class of CPUs `a` and `b` from their keys
/// ([`distance_key`]).
#[inline(always)]
fn distance_by_keys(keys: &[u64], a: usize, b: usize) -> Distance {
    // The nearest level the two share is the lowest 16-bit field of
    // their keys' XOR that is zero: the same core gives Smt, the same
    // cluster Cluster, and so on; none, Remote. Found without a branch
    // (the simulator asks at every line transfer, where the answer
    // varies from one call to the next and a chain of tests
    // mispredicts): `(x - LOW) & !x & HIGH` sets the top bit of every
    // zero field, exactly for the lowest one (a borrow can only set
    // the top bits of fields above it).
    const LOW: u64 = 0x0001_0001_0001_0001;
    const HIGH: u64 = 0x8000_8000_8000_8000;
    let x = keys[a] ^ keys[b];
    let zero_fields = x.wrapping_sub(LOW) & !x & HIGH;
    // 0..=4 (4: no zero field), then 1..=5; the same CPU, whose XOR
    // is zero, gives 1 less 1
    let i = 1 + (zero_fields.trailing_zeros() / 16) as usize - usize::from(a == b);
    Distance::ALL[i.min(5)]
}

/// The kernel's `LOCAL_DISTANCE`: a node's SLIT distance to itself.
pub const LOCAL_DISTANCE: u32 = 10;

fn level_masks(
    name: &str,
    what: &str,
    places: &[CpuPlace],
    id: impl Fn(&CpuPlace) -> usize,
) -> Result<Vec<CpuMask>, TopologyError> {
    let max = places.iter().map(&id).max().unwrap_or(0);
    if max >= places.len() {
        return Err(TopologyError::invalid(
            name,
            format!("{what} id {max} is not dense (only {} CPUs)", places.len()),
        ));
    }
    let mut masks = vec![CpuMask::new(); max + 1];
    for (cpu, p) in places.iter().enumerate() {
        masks[id(p)].set(cpu);
    }
    if let Some(hole) = masks.iter().position(|m| m.is_empty()) {
        return Err(TopologyError::invalid(
            name,
            format!(
                "{what} ids must be dense 0..{}: {what} {hole} has no CPU",
                max + 1
            ),
        ));
    }
    Ok(masks)
}

/// Whether every `inner` group lies inside a single `outer` group; returns
/// the first counter-example (inner id, cpu a, cpu b) otherwise.
fn nests(
    places: &[CpuPlace],
    inner: impl Fn(&CpuPlace) -> usize,
    outer: impl Fn(&CpuPlace) -> usize,
) -> Result<(), (usize, usize, usize)> {
    let mut seen: HashMap<usize, (usize, usize)> = HashMap::new();
    for (cpu, p) in places.iter().enumerate() {
        let (i, o) = (inner(p), outer(p));
        match seen.get(&i) {
            Some(&(o0, cpu0)) if o0 != o => return Err((i, cpu0, cpu)),
            Some(_) => {}
            None => {
                seen.insert(i, (o, cpu));
            }
        }
    }
    Ok(())
}

impl Topology {
    /// Build a topology from one [`CpuPlace`] per CPU (index = CPU number),
    /// the node distance matrix (SLIT, `node_distance[a][b]`) and optional
    /// cache descriptions.
    ///
    /// Validates: 1..=`CpuMask::MAX_CPUS` CPUs; ids dense per level; each
    /// core inside one cluster and one LLC; the cluster and LLC nested one
    /// way or the other (an LLC inside a cluster happens on Ampere Altra,
    /// whose 2-core clusters share no cache); each cluster inside one node;
    /// the LLC and node nested one way or the other (an L3 shared by several
    /// nodes, as with sub-NUMA clustering; the kernel's LLC domain then
    /// stops at the node); node and package nested (a node inside a package, or a
    /// package inside a node as in a multi-socket VM with one node); the
    /// distance matrix square with side = number of nodes, positive, with
    /// [`LOCAL_DISTANCE`] on the diagonal; cache spans non-empty and inside
    /// the machine.
    pub fn from_places(
        name: &str,
        places: Vec<CpuPlace>,
        node_distance: Vec<Vec<u32>>,
        caches: Vec<CacheInfo>,
    ) -> Result<Topology, TopologyError> {
        let bad = |p: String| TopologyError::invalid(name, p);
        if places.is_empty() {
            return Err(bad("no CPUs".into()));
        }
        if places.len() > CpuMask::MAX_CPUS {
            return Err(bad(format!(
                "{} CPUs, more than the maximum {}",
                places.len(),
                CpuMask::MAX_CPUS
            )));
        }
        let core_masks = level_masks(name, "core", &places, |p| p.core)?;
        let cluster_masks = level_masks(name, "cluster", &places, |p| p.cluster)?;
        let llc_masks = level_masks(name, "LLC", &places, |p| p.llc)?;
        let node_masks = level_masks(name, "node", &places, |p| p.node)?;
        let package_masks = level_masks(name, "package", &places, |p| p.package)?;

        let span_err = |inner: &str, outer: &str, (i, a, b): (usize, usize, usize)| {
            bad(format!("{inner} {i} spans two {outer}s (CPUs {a} and {b})"))
        };
        nests(&places, |p| p.core, |p| p.cluster).map_err(|e| span_err("core", "cluster", e))?;
        nests(&places, |p| p.core, |p| p.llc).map_err(|e| span_err("core", "LLC", e))?;
        if let Err(e) = nests(&places, |p| p.cluster, |p| p.llc) {
            nests(&places, |p| p.llc, |p| p.cluster).map_err(|_| {
                bad(format!(
                    "cluster {} and the LLCs of CPUs {} and {} overlap without nesting",
                    e.0, e.1, e.2
                ))
            })?;
        }
        nests(&places, |p| p.cluster, |p| p.node).map_err(|e| span_err("cluster", "node", e))?;
        if let Err(e) = nests(&places, |p| p.llc, |p| p.node) {
            nests(&places, |p| p.node, |p| p.llc).map_err(|_| {
                bad(format!(
                    "LLC {} and the nodes of CPUs {} and {} overlap without nesting",
                    e.0, e.1, e.2
                ))
            })?;
        }
        nests(&places, |p| p.core, |p| p.package).map_err(|e| span_err("core", "package", e))?;
        if let Err(e) = nests(&places, |p| p.node, |p| p.package) {
            nests(&places, |p| p.package, |p| p.node).map_err(|_| {
                bad(format!(
                    "node {} and the packages of CPUs {} and {} overlap without nesting",
                    e.0, e.1, e.2
                ))
            })?;
        }

        let nr_nodes = node_masks.len();
        if node_distance.len() != nr_nodes {
            return Err(bad(format!(
                "distance matrix has {} rows for {nr_nodes} nodes",
                node_distance.len()
            )));
        }
        for (a, row) in node_distance.iter().enumerate() {
            if row.len() != nr_nodes {
                return Err(bad(format!(
                    "distance matrix row {a} has {} entries for {nr_nodes} nodes (not square)",
                    row.len()
                )));
            }
            if row[a] != LOCAL_DISTANCE {
                return Err(bad(format!(
                    "distance from node {a} to itself is {}, expected {LOCAL_DISTANCE}",
                    row[a]
                )));
            }
            if let Some(b) = row.iter().position(|&d| d == 0) {
                return Err(bad(format!("distance from node {a} to node {b} is 0")));
            }
        }
        let all = CpuMask::from_range(0, places.len() - 1);
        for (i, c) in caches.iter().enumerate() {
            if c.shared_cpus.is_empty() || !c.shared_cpus.is_subset(&all) {
                return Err(bad(format!(
                    "cache #{i} (L{}) is shared by CPUs \"{}\", not a non-empty subset of 0-{}",
                    c.level,
                    c.shared_cpus,
                    places.len() - 1
                )));
            }
        }
        // Canonical cache order, so that equal machines compare equal
        // whatever order their description listed caches in.
        let mut caches = caches;
        caches.sort_by_key(|c| (c.level, c.kind as u8, c.shared_cpus.first()));
        let threads_per_core = core_masks.iter().map(CpuMask::weight).max().unwrap_or(1);
        let core_cpus = core_masks
            .iter()
            .map(|m| m.iter().map(|c| c as u32).collect())
            .collect();
        let distance_keys: Vec<u64> = places.iter().map(distance_key).collect();
        let n = places.len();
        let distance_table = if n <= DISTANCE_TABLE_MAX_CPUS {
            (0..n * n)
                .map(|i| distance_by_keys(&distance_keys, i / n, i % n))
                .collect()
        } else {
            Box::default()
        };
        Ok(Topology {
            name: name.to_string(),
            nr_cpus: places.len(),
            distance_keys,
            distance_table,
            places,
            node_distance,
            caches,
            all,
            core_masks,
            core_cpus,
            cluster_masks,
            llc_masks,
            node_masks,
            package_masks,
            threads_per_core,
        })
    }

    /// The machine's name (preset name, or where it was imported from).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Return the same topology under another name.
    pub fn renamed(mut self, name: &str) -> Topology {
        self.name = name.to_string();
        self
    }

    /// Number of CPUs; they are numbered `0..nr_cpus()`.
    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// Every CPU.
    pub fn all_cpus(&self) -> &CpuMask {
        &self.all
    }

    /// Where `cpu` sits. Panics if `cpu >= nr_cpus()`.
    #[inline]
    pub fn place(&self, cpu: usize) -> CpuPlace {
        self.places[cpu]
    }

    /// All places, indexed by CPU.
    pub fn places(&self) -> &[CpuPlace] {
        &self.places
    }

    /// Hardware threads of `cpu`'s core, including `cpu` (`cpu_smt_mask`).
    #[inline]
    pub fn smt_mask(&self, cpu: usize) -> &CpuMask {
        &self.core_masks[self.places[cpu].core]
    }

    /// The hardware threads of `cpu`'s core as a list, in CPU order (the
    /// CPUs of [`Topology::smt_mask`], at the cost of their number rather
    /// than of the machine's).
    #[inline]
    pub fn smt_siblings(&self, cpu: usize) -> &[u32] {
        &self.core_cpus[self.places[cpu].core]
    }

    /// CPUs of `cpu`'s cluster (sharing an L2 or L3 tag;
    /// `cpu_clustergroup_mask`). On machines without clusters this is the
    /// core, as Linux falls back to the SMT mask.
    #[inline]
    pub fn cluster_mask(&self, cpu: usize) -> &CpuMask {
        &self.cluster_masks[self.places[cpu].cluster]
    }

    /// CPUs sharing `cpu`'s last-level cache, as the hardware reports it.
    /// The kernel's `cpu_coregroup_mask` (the MC domain) is this within
    /// `cpu`'s node.
    #[inline]
    pub fn llc_mask(&self, cpu: usize) -> &CpuMask {
        &self.llc_masks[self.places[cpu].llc]
    }

    /// CPUs of `cpu`'s NUMA node (`cpumask_of_node(cpu_to_node(cpu))`).
    #[inline]
    pub fn node_mask(&self, cpu: usize) -> &CpuMask {
        &self.node_masks[self.places[cpu].node]
    }

    /// CPUs of `cpu`'s package.
    #[inline]
    pub fn package_mask(&self, cpu: usize) -> &CpuMask {
        &self.package_masks[self.places[cpu].package]
    }

    /// Number of cores.
    pub fn nr_cores(&self) -> usize {
        self.core_masks.len()
    }

    /// Number of clusters.
    pub fn nr_clusters(&self) -> usize {
        self.cluster_masks.len()
    }

    /// Number of last-level caches.
    pub fn nr_llcs(&self) -> usize {
        self.llc_masks.len()
    }

    /// Number of NUMA nodes.
    pub fn nr_nodes(&self) -> usize {
        self.node_masks.len()
    }

    /// Number of packages.
    pub fn nr_packages(&self) -> usize {
        self.package_masks.len()
    }

    /// CPUs of core `core`.
    pub fn core_cpus(&self, core: usize) -> &CpuMask {
        &self.core_masks[core]
    }

    /// CPUs of cluster `cluster`.
    pub fn cluster_cpus(&self, cluster: usize) -> &CpuMask {
        &self.cluster_masks[cluster]
    }

    /// CPUs of LLC `llc`.
    pub fn llc_cpus(&self, llc: usize) -> &CpuMask {
        &self.llc_masks[llc]
    }

    /// CPUs of node `node`.
    pub fn node_cpus(&self, node: usize) -> &CpuMask {
        &self.node_masks[node]
    }

    /// CPUs of package `package`.
    pub fn package_cpus(&self, package: usize) -> &CpuMask {
        &self.package_masks[package]
    }

    /// SLIT distance from node `a` to node `b` (`node_distance`).
    #[inline]
    pub fn node_distance(&self, a_node: usize, b_node: usize) -> u32 {
        self.node_distance[a_node][b_node]
    }

    /// The whole distance matrix, `[from][to]`.
    pub fn node_distances(&self) -> &[Vec<u32>] {
        &self.node_distance
    }

    /// Distance class of two CPUs. O(1): a table's entry on a machine of
    /// up to 128 CPUs (`DISTANCE_TABLE_MAX_CPUS`), else the precomputed ids
    /// compared. Always inlined: the line model asks it at nearly every
    /// event.
    #[inline(always)]
    pub fn distance(&self, a: usize, b: usize) -> Distance {
        debug_assert!(a < self.nr_cpus && b < self.nr_cpus);
        match self.distance_table.get(a * self.nr_cpus + b) {
            Some(&d) => d,
            None => distance_by_keys(&self.distance_keys, a, b),
        }
    }

    /// Largest number of hardware threads of any core.
    pub fn threads_per_core(&self) -> usize {
        self.threads_per_core
    }

    /// Cache instances, where known, ordered by level, kind and first CPU.
    pub fn caches(&self) -> &[CacheInfo] {
        &self.caches
    }

    /// Caches of `cpu`, lowest level first.
    pub fn caches_of(&self, cpu: usize) -> impl Iterator<Item = &CacheInfo> + '_ {
        let mut v: Vec<&CacheInfo> = self
            .caches
            .iter()
            .filter(|c| c.shared_cpus.test(cpu))
            .collect();
        v.sort_by_key(|c| (c.level, c.kind as u8));
        v.into_iter()
    }

    /// Whether two topologies describe the same machine: the same number
    /// of CPUs, the same core / cluster / LLC / node / package masks for
    /// every CPU and the same distance between the nodes of every pair of
    /// CPUs. Names, caches and the numbering of group ids are ignored.
    pub fn same_structure(&self, other: &Topology) -> bool {
        if self.nr_cpus != other.nr_cpus || self.nr_nodes() != other.nr_nodes() {
            return false;
        }
        let masks_equal = (0..self.nr_cpus).all(|c| {
            self.smt_mask(c) == other.smt_mask(c)
                && self.cluster_mask(c) == other.cluster_mask(c)
                && self.llc_mask(c) == other.llc_mask(c)
                && self.node_mask(c) == other.node_mask(c)
                && self.package_mask(c) == other.package_mask(c)
        });
        // Node masks agree, so map each of our nodes to the other's node of
        // its first CPU and compare the matrices under that mapping.
        let map: Vec<usize> = self
            .node_masks
            .iter()
            .map(|m| other.place(m.first().unwrap_or(0)).node)
            .collect();
        masks_equal
            && (0..self.nr_nodes()).all(|a| {
                (0..self.nr_nodes())
                    .all(|b| self.node_distance(a, b) == other.node_distance(map[a], map[b]))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smt_siblings_list_the_smt_mask_of_every_preset_cpu() {
        for (name, _) in crate::presets() {
            if *name == "host" {
                continue;
            }
            let t = crate::preset(name).expect("preset builds");
            for cpu in 0..t.nr_cpus() {
                let from_mask: Vec<u32> = t.smt_mask(cpu).iter().map(|c| c as u32).collect();
                assert_eq!(t.smt_siblings(cpu), &from_mask[..], "{name} cpu {cpu}");
            }
        }
    }

    fn place(core: usize, cluster: usize, llc: usize, node: usize, package: usize) -> CpuPlace {
        CpuPlace {
            core,
            cluster,
            llc,
            node,
            package,
        }
    }

    fn two_core() -> Vec<CpuPlace> {
        vec![
            place(0, 0, 0, 0, 0),
            place(0, 0, 0, 0, 0),
            place(1, 1, 0, 0, 0),
            place(1, 1, 0, 0, 0),
        ]
    }

    #[test]
    fn masks_and_distance() {
        let t = Topology::from_places("t", two_core(), vec![vec![10]], vec![]).unwrap();
        assert_eq!(t.nr_cpus(), 4);
        assert_eq!(t.smt_mask(1).to_string(), "0-1");
        assert_eq!(t.cluster_mask(2).to_string(), "2-3");
        assert_eq!(t.llc_mask(0).to_string(), "0-3");
        assert_eq!(t.threads_per_core(), 2);
        assert_eq!(t.distance(0, 0), Distance::SameCpu);
        assert_eq!(t.distance(0, 1), Distance::Smt);
        assert_eq!(t.distance(0, 3), Distance::Llc);
    }

    #[test]
    fn rejects_inconsistent_input() {
        let err = |places: Vec<CpuPlace>, d: Vec<Vec<u32>>| {
            Topology::from_places("t", places, d, vec![])
                .unwrap_err()
                .to_string()
        };
        assert!(err(vec![], vec![]).contains("no CPUs"));
        let mut p = two_core();
        p[1].cluster = 1; // core 0 in two clusters
        assert!(err(p, vec![vec![10]]).contains("core 0 spans two clusters"));
        let mut p = two_core();
        p[3].llc = 1;
        p[3].cluster = 1;
        assert!(err(p, vec![vec![10]]).contains("core 1 spans two LLCs"));
        let mut p = two_core();
        p[2].core = 5;
        assert!(err(p, vec![vec![10]]).contains("not dense"));
        assert!(err(two_core(), vec![vec![10, 20]]).contains("not square"));
        assert!(err(two_core(), vec![vec![10], vec![10]]).contains("2 rows for 1 nodes"));
        assert!(err(two_core(), vec![vec![12]]).contains("expected 10"));
        let many = vec![place(0, 0, 0, 0, 0); CpuMask::MAX_CPUS + 1];
        assert!(err(many, vec![vec![10]]).contains("more than the maximum"));
        // An LLC and a node overlapping without nesting.
        let p = vec![
            place(0, 0, 0, 0, 0),
            place(1, 1, 0, 1, 0),
            place(2, 2, 1, 1, 0),
        ];
        assert!(err(p, vec![vec![10, 20], vec![20, 10]]).contains("overlap without nesting"));
        // Cluster and LLC overlapping without nesting.
        let p = vec![
            place(0, 0, 0, 0, 0),
            place(1, 0, 1, 0, 0),
            place(2, 1, 1, 0, 0),
        ];
        assert!(err(p, vec![vec![10]]).contains("overlap without nesting"));
    }

    #[test]
    fn llc_across_nodes_is_allowed() {
        // Sub-NUMA clustering: one L3 for two nodes.
        let p = vec![place(0, 0, 0, 0, 0), place(1, 1, 0, 1, 0)];
        let t = Topology::from_places("t", p, vec![vec![10, 20], vec![20, 10]], vec![]).unwrap();
        assert_eq!(t.llc_mask(0).to_string(), "0-1");
        assert_eq!(t.node_mask(0).to_string(), "0");
    }

    #[test]
    fn llc_inside_cluster_is_allowed() {
        // Ampere Altra: 2-core cluster, per-core "LLC".
        let p = vec![place(0, 0, 0, 0, 0), place(1, 0, 1, 0, 0)];
        let t = Topology::from_places("t", p, vec![vec![10]], vec![]).unwrap();
        assert_eq!(t.distance(0, 1), Distance::Cluster);
    }
}

#[cfg(test)]
mod distance_tests {
    use super::*;

    /// The rule `distance` encodes, on the places themselves.
    fn by_places(t: &Topology, a: usize, b: usize) -> Distance {
        let (pa, pb) = (t.place(a), t.place(b));
        if a == b {
            Distance::SameCpu
        } else if pa.core == pb.core {
            Distance::Smt
        } else if pa.cluster == pb.cluster {
            Distance::Cluster
        } else if pa.llc == pb.llc {
            Distance::Llc
        } else if pa.package == pb.package {
            Distance::Package
        } else {
            Distance::Remote
        }
    }

    /// The packed keys give the places' distance for every pair of CPUs
    /// of every preset and of synthetic machines with clusters, dies and
    /// LLCs per cluster (ids above 255, so every key byte is exercised).
    #[test]
    fn packed_keys_match_the_places() {
        let mut machines: Vec<Topology> = crate::presets()
            .iter()
            .map(|(n, _)| crate::preset(n).unwrap())
            .collect();
        for spec in [
            "sockets=2,dies=2,clusters=4,cores=4,threads=2,nodes=4,llc=cluster",
            "sockets=4,cores=96,threads=2,nodes=8",
        ] {
            machines.push(crate::SmpSpec::parse(spec).unwrap().build(spec).unwrap());
        }
        for t in &machines {
            let n = t.nr_cpus();
            for a in 0..n {
                for b in (0..n).step_by(if n > 256 { 7 } else { 1 }) {
                    let want = by_places(t, a, b);
                    assert_eq!(t.distance(a, b), want, "{} {a} {b}", t.name());
                    // the keys too where the table answers
                    let keys = distance_by_keys(&t.distance_keys, a, b);
                    assert_eq!(keys, want, "{} {a} {b} (keys)", t.name());
                }
            }
        }
    }

    /// Small machines answer from the table, large ones from the keys.
    #[test]
    fn the_table_is_kept_up_to_its_limit() {
        for (spec, table) in [
            ("sockets=2,cores=32,threads=2", true),
            ("sockets=2,cores=33,threads=2", false),
        ] {
            let t = crate::SmpSpec::parse(spec).unwrap().build(spec).unwrap();
            let n = t.nr_cpus();
            assert_eq!(
                t.distance_table.len(),
                if table { n * n } else { 0 },
                "{spec}"
            );
            assert_eq!(n <= DISTANCE_TABLE_MAX_CPUS, table, "{spec}");
        }
    }
}
