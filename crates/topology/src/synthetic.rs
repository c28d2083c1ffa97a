//! Synthetic machines from a shape string, in the spirit of QEMU's `-smp`:
//! `smp:sockets=4,dies=2,cores=32,threads=2,nodes=8`.
//!
//! # Syntax
//!
//! `smp:KEY=VALUE,KEY=VALUE,...` (a bare number first is `cpus=`, as in
//! `-smp 8`). Keys, each at most once:
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `cpus` | total CPUs (hardware threads); only used to fill in `cores` or `sockets` | the product |
//! | `sockets` | packages | 1 (or `cpus` / the rest when `cores` is given) |
//! | `dies` | dies per socket | 1 |
//! | `clusters` | clusters per die; given: a cluster level exists | none: no cluster level |
//! | `cores` | cores per cluster (per die without `clusters`) | 1 (or `cpus` / the rest) |
//! | `threads` | hardware threads per core, 1..=8 | 1 |
//! | `nodes` | NUMA nodes, equal blocks of consecutive cores | 1 |
//! | `numbering` | `contiguous` (a core's threads are consecutive CPUs) or `interleaved` (siblings `cpu` and `cpu + cores`, as x86 firmware numbers them) | contiguous |
//! | `l2` | the CPUs one L2 serves: `core` or `cluster` | core |
//! | `llc` | the CPUs one last-level cache serves: `core`, `cluster`, `die` or `socket`, not below `l2` | die |
//! | `distance` | the node distance rule, `local:10,die:D,socket:S,remote:R` (any of the four) | `local:10,die:11,socket:12,remote:20` |
//! | `slit` | the whole distance matrix instead, rows split by `/`, entries by `:` (`slit=10:12/12:10`) | |
//! | `cost` | the cost profile a simulation of this machine charges: a preset name or a cost-profile file | none (read by the simulator, not here) |
//!
//! # Semantics
//!
//! As QEMU's `-smp` (hw/core/machine-smp.c, `machine_parse_smp_config()`,
//! QEMU 6.2 and later, which prefer cores over sockets): `cores` counts the
//! cores of one cluster, so the machine has `sockets * dies * clusters *
//! cores * threads` CPUs. An omitted `dies`, `clusters` or `threads` is 1;
//! without `cpus` an omitted `sockets` or `cores` is 1; with `cpus`, an
//! omitted `cores` is what is left of `cpus` (with `sockets` 1 if omitted
//! too), else an omitted `sockets` is, and the product must equal `cpus`.
//! QEMU builds an ACPI cluster level only when `clusters` was given
//! (`smp.has_clusters`); so does this: without `clusters` each core is its
//! own cluster, as on machines without clusters. On x86, QEMU calls the
//! level between die and core a *module*; Linux x86 builds its cluster
//! level from the L2-sharing group, so `clusters=` with `l2=cluster` is
//! that machine.
//!
//! CPUs are numbered socket by socket, die by die, cluster by cluster, core
//! by core (QEMU's `cpu_index` order), the threads of a core consecutively
//! unless `numbering=interleaved`. Nodes are equal blocks of consecutive
//! cores that respect the hierarchy: a node is a whole number of sockets,
//! or a whole number of dies of one socket, or a whole number of clusters
//! of one die (of cores of one die without clusters). Any other `nodes` is
//! an error listing the counts that fit. At most 1024 nodes (the kernel's
//! MAX_NUMNODES with the largest NODES_SHIFT, 10).
//!
//! # Distances
//!
//! ACPI SLIT conventions (and the kernel's `slit_valid()`,
//! drivers/acpi/numa/srat.c): a node is 10 (`LOCAL_DISTANCE`) from itself
//! and more than 10 from any other; entries are 11..=254 (255 means
//! unreachable). The default rule: 11 between nodes of one die (the
//! nearest distance ACPI allows), 12 between nodes on different dies of one
//! socket (the Kunpeng 920 SLIT between the dies of a socket, the
//! `kunpeng920` preset's source), 20 between sockets (the kernel's
//! `REMOTE_DISTANCE`, what Linux assumes without a SLIT). `distance=`
//! replaces any of them; `slit=` gives every entry (for asymmetric tables
//! such as Kunpeng 920's 20/22/24 between sockets).
//!
//! # Caches
//!
//! One L2 per `l2` group and, when `llc` is above `l2`, one L3 per `llc`
//! group; when `llc` equals `l2` the L2 is the last level. Sizes are not
//! given. The LLC groups are the topology's LLCs, which the kernel's MC
//! level spans (within the node).
//!
//! `cost=` is kept as given ([`SmpSpec::cost`]): this crate knows nothing
//! of the simulator; whoever simulates the machine resolves it.

use crate::builder::SmtNumbering;
use crate::cpumask::CpuMask;
use crate::error::TopologyError;
use crate::topology::{CacheInfo, CacheKind, CpuPlace, Topology, LOCAL_DISTANCE};
use std::fmt;

/// The prefix of a synthetic machine spec.
pub const SMP_PREFIX: &str = "smp:";

/// The most NUMA nodes a spec may have: MAX_NUMNODES with NODES_SHIFT=10,
/// the largest the kernel's Kconfig allows on x86 and arm64.
pub const MAX_NODES: usize = 1024;

/// The most threads per core: POWER's SMT8, the widest Linux runs on.
pub const MAX_THREADS: usize = 8;

/// The largest SLIT entry short of "unreachable" (255).
pub const MAX_DISTANCE: u32 = 254;

/// A hardware level a cache can be shared at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SmpLevel {
    /// One core (its hardware threads).
    Core,
    /// One cluster.
    Cluster,
    /// One die.
    Die,
    /// One socket.
    Socket,
}

impl SmpLevel {
    /// The name used in a spec.
    pub fn name(self) -> &'static str {
        match self {
            SmpLevel::Core => "core",
            SmpLevel::Cluster => "cluster",
            SmpLevel::Die => "die",
            SmpLevel::Socket => "socket",
        }
    }

    fn parse(key: &str, v: &str, allowed: &[SmpLevel]) -> Result<SmpLevel, TopologyError> {
        allowed
            .iter()
            .copied()
            .find(|l| l.name() == v)
            .ok_or_else(|| {
                let names: Vec<&str> = allowed.iter().map(|l| l.name()).collect();
                smp_err(key, v, format!("must be one of {}", names.join(", ")))
            })
    }
}

/// How the distance between two nodes is decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeDistances {
    /// By where the nodes sit: on one die, on one socket, or not.
    Rule {
        /// Two nodes of one die.
        die: u32,
        /// Two nodes on different dies of one socket.
        socket: u32,
        /// Two nodes on different sockets.
        remote: u32,
    },
    /// The whole SLIT, `[from][to]`.
    Slit(Vec<Vec<u32>>),
}

/// The default distance rule (see the module documentation).
pub const DEFAULT_DISTANCES: NodeDistances = NodeDistances::Rule {
    die: 11,
    socket: 12,
    remote: 20,
};

/// A parsed `smp:` machine spec, every default filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmpSpec {
    /// Packages.
    pub sockets: usize,
    /// Dies per socket.
    pub dies: usize,
    /// Clusters per die, when the machine has a cluster level.
    pub clusters: Option<usize>,
    /// Cores per cluster (per die without clusters).
    pub cores: usize,
    /// Hardware threads per core.
    pub threads: usize,
    /// NUMA nodes.
    pub nodes: usize,
    /// How Linux numbers the threads of a core.
    pub numbering: SmtNumbering,
    /// The group one L2 serves.
    pub l2: SmpLevel,
    /// The group one last-level cache serves.
    pub llc: SmpLevel,
    /// Node distances.
    pub distances: NodeDistances,
    /// The `cost=` value as given (a preset name or a file), if any.
    pub cost: Option<String>,
}

/// An error about `key` (with its `value` when there is one). Both are
/// escaped (`escape_debug`), so that a line break typed into a spec keeps
/// the error on one line.
fn smp_err(key: &str, value: &str, problem: impl Into<String>) -> TopologyError {
    let (key, value) = (key.escape_debug(), value.escape_debug());
    TopologyError::Smp {
        key: if value.to_string().is_empty() {
            key.to_string()
        } else {
            format!("{key}={value}")
        },
        problem: problem.into(),
    }
}

const KEYS: &[&str] = &[
    "cpus",
    "sockets",
    "dies",
    "clusters",
    "cores",
    "threads",
    "nodes",
    "numbering",
    "l2",
    "llc",
    "distance",
    "slit",
    "cost",
];

fn count(key: &str, v: &str, max: usize) -> Result<usize, TopologyError> {
    match v.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(smp_err(
            key,
            v,
            format!("must be a whole number in 1..={max}"),
        )),
    }
}

fn distance_value(name: &str, v: &str) -> Result<u32, TopologyError> {
    let key = format!("distance {name}");
    match v.parse::<u32>() {
        Ok(d) if (LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&d) => Ok(d),
        _ => Err(smp_err(
            &key,
            v,
            format!(
                "must be a whole number in {}..={MAX_DISTANCE} (more than the local distance {LOCAL_DISTANCE}; 255 is unreachable)",
                LOCAL_DISTANCE + 1
            ),
        )),
    }
}

/// The keys as given, before defaults.
#[derive(Default)]
struct Given {
    cpus: Option<usize>,
    sockets: Option<usize>,
    dies: Option<usize>,
    clusters: Option<usize>,
    cores: Option<usize>,
    threads: Option<usize>,
    nodes: Option<usize>,
    numbering: Option<SmtNumbering>,
    l2: Option<SmpLevel>,
    llc: Option<SmpLevel>,
    distance: Vec<(String, u32)>,
    slit: Option<Vec<Vec<u32>>>,
    cost: Option<String>,
}

fn parse_slit(v: &str) -> Result<Vec<Vec<u32>>, TopologyError> {
    let mut rows = Vec::new();
    for row in v.split('/') {
        let mut r = Vec::new();
        for e in row.split(':') {
            let d = match e.trim().parse::<u32>() {
                Ok(d) if (LOCAL_DISTANCE..=MAX_DISTANCE).contains(&d) => d,
                _ => {
                    return Err(smp_err(
                        "slit",
                        "",
                        format!(
                            "entry {e:?}: must be a whole number in {LOCAL_DISTANCE}..={MAX_DISTANCE} (rows split by '/', entries by ':')"
                        ),
                    ))
                }
            };
            r.push(d);
        }
        rows.push(r);
    }
    Ok(rows)
}

impl SmpSpec {
    /// Parse the part of a machine spec after `smp:`.
    ///
    /// ```
    /// use topology::SmpSpec;
    /// let s = SmpSpec::parse("sockets=4,dies=2,cores=32,threads=2,nodes=8").unwrap();
    /// assert_eq!(s.nr_cpus(), 512);
    /// let t = s.build("smp:sockets=4,dies=2,cores=32,threads=2,nodes=8").unwrap();
    /// assert_eq!(t.nr_nodes(), 8);
    /// assert_eq!(t.node_distance(0, 1), 12); // the other die of socket 0
    /// assert_eq!(t.node_distance(0, 2), 20); // socket 1
    /// let e = SmpSpec::parse("sockets=4,cores=6,nodes=3").unwrap_err();
    /// assert!(e.to_string().contains("nodes=3"), "{e}");
    /// ```
    pub fn parse(spec: &str) -> Result<SmpSpec, TopologyError> {
        let mut g = Given::default();
        let mut seen: Vec<&str> = Vec::new();
        let mut last_key = "";
        let spec = spec.trim();
        let items: Vec<&str> = if spec.is_empty() {
            Vec::new()
        } else {
            spec.split(',').collect()
        };
        for (i, item) in items.iter().enumerate() {
            let item = item.trim();
            let Some((key, v)) = item.split_once('=') else {
                if i == 0 && !item.is_empty() && item.bytes().all(|b| b.is_ascii_digit()) {
                    // `-smp 8`: a bare count first is cpus=
                    g.cpus = Some(count("cpus", item, CpuMask::MAX_CPUS)?);
                    seen.push("cpus");
                    last_key = "cpus";
                    continue;
                }
                if let (true, Some((name, d))) = (last_key == "distance", item.split_once(':')) {
                    // distance=local:10,socket:12,...: the rule goes on
                    let d = Self::rule_value(name.trim(), d.trim())?;
                    g.distance.push((name.trim().to_string(), d));
                    continue;
                }
                return Err(smp_err(
                    &format!("item {}", i + 1),
                    "",
                    format!("{item:?}: expected KEY=VALUE (keys: {})", KEYS.join(", ")),
                ));
            };
            let (key, v) = (key.trim(), v.trim());
            let Some(&known) = KEYS.iter().find(|&&k| k == key) else {
                return Err(smp_err(
                    key,
                    "",
                    format!("unknown key (keys: {})", KEYS.join(", ")),
                ));
            };
            if seen.contains(&known) {
                return Err(smp_err(key, "", "given twice"));
            }
            seen.push(known);
            last_key = known;
            let max = CpuMask::MAX_CPUS;
            match known {
                "cpus" => g.cpus = Some(count(key, v, max)?),
                "sockets" => g.sockets = Some(count(key, v, max)?),
                "dies" => g.dies = Some(count(key, v, max)?),
                "clusters" => g.clusters = Some(count(key, v, max)?),
                "cores" => g.cores = Some(count(key, v, max)?),
                "threads" => g.threads = Some(count(key, v, MAX_THREADS)?),
                "nodes" => g.nodes = Some(count(key, v, MAX_NODES)?),
                "numbering" => {
                    g.numbering = Some(match v {
                        "contiguous" => SmtNumbering::Contiguous,
                        "interleaved" => SmtNumbering::Interleaved,
                        _ => return Err(smp_err(key, v, "must be contiguous or interleaved")),
                    })
                }
                "l2" => {
                    g.l2 = Some(SmpLevel::parse(
                        key,
                        v,
                        &[SmpLevel::Core, SmpLevel::Cluster],
                    )?)
                }
                "llc" => {
                    g.llc = Some(SmpLevel::parse(
                        key,
                        v,
                        &[
                            SmpLevel::Core,
                            SmpLevel::Cluster,
                            SmpLevel::Die,
                            SmpLevel::Socket,
                        ],
                    )?)
                }
                "distance" => {
                    let Some((name, d)) = v.split_once(':') else {
                        return Err(smp_err(
                            key,
                            v,
                            "expected NAME:VALUE, NAME local, die, socket or remote (distance=local:10,socket:12,remote:20)",
                        ));
                    };
                    let d = Self::rule_value(name.trim(), d.trim())?;
                    g.distance.push((name.trim().to_string(), d));
                }
                "slit" => g.slit = Some(parse_slit(v)?),
                "cost" => {
                    if v.is_empty() {
                        return Err(smp_err(
                            key,
                            "",
                            "empty (give a preset name or a cost-profile file)",
                        ));
                    }
                    g.cost = Some(v.to_string())
                }
                _ => unreachable!("every key in KEYS is matched"),
            }
        }
        Self::from_given(g)
    }

    fn rule_value(name: &str, v: &str) -> Result<u32, TopologyError> {
        match name {
            "local" => {
                if v == LOCAL_DISTANCE.to_string() {
                    Ok(LOCAL_DISTANCE)
                } else {
                    Err(smp_err(
                        "distance local",
                        v,
                        format!("must be {LOCAL_DISTANCE} (LOCAL_DISTANCE, a node's distance to itself)"),
                    ))
                }
            }
            "die" | "socket" | "remote" => distance_value(name, v),
            _ => Err(smp_err(
                "distance",
                &format!("{name}:{v}"),
                "unknown class; classes: local, die, socket, remote",
            )),
        }
    }

    fn from_given(g: Given) -> Result<SmpSpec, TopologyError> {
        let dies = g.dies.unwrap_or(1);
        let threads = g.threads.unwrap_or(1);
        let clusters_n = g.clusters.unwrap_or(1);
        let inner = dies * clusters_n * threads; // each at most 4096: no overflow
        let (sockets, cores) = match (g.cpus, g.sockets, g.cores) {
            (None, s, c) => (s.unwrap_or(1), c.unwrap_or(1)),
            (Some(cpus), s, None) => {
                let s = s.unwrap_or(1);
                let per = s * inner;
                if !cpus.is_multiple_of(per) {
                    return Err(smp_err(
                        "cpus",
                        &cpus.to_string(),
                        format!("not a multiple of sockets*dies*clusters*threads = {per}, so cores cannot be derived"),
                    ));
                }
                (s, cpus / per)
            }
            (Some(cpus), None, Some(c)) => {
                let per = c * inner;
                if !cpus.is_multiple_of(per) {
                    return Err(smp_err(
                        "cpus",
                        &cpus.to_string(),
                        format!("not a multiple of dies*clusters*cores*threads = {per}, so sockets cannot be derived"),
                    ));
                }
                (cpus / per, c)
            }
            (Some(_), Some(s), Some(c)) => (s, c),
        };
        let total = [sockets, dies, clusters_n, cores, threads]
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .unwrap_or(usize::MAX);
        if let Some(cpus) = g.cpus {
            if total != cpus {
                return Err(smp_err(
                    "cpus",
                    &cpus.to_string(),
                    format!("sockets*dies*clusters*cores*threads = {sockets}*{dies}*{clusters_n}*{cores}*{threads} = {total}, not {cpus}"),
                ));
            }
        }
        if total > CpuMask::MAX_CPUS {
            return Err(smp_err(
                "sockets*dies*clusters*cores*threads",
                "",
                format!(
                    "{sockets}*{dies}*{clusters_n}*{cores}*{threads} = {total} CPUs, more than the maximum {}",
                    CpuMask::MAX_CPUS
                ),
            ));
        }
        let l2 = g.l2.unwrap_or(SmpLevel::Core);
        let llc = g.llc.unwrap_or(SmpLevel::Die);
        for (key, level) in [("l2", l2), ("llc", llc)] {
            if level == SmpLevel::Cluster && g.clusters.is_none() {
                return Err(smp_err(
                    key,
                    "cluster",
                    "the machine has no clusters (give clusters=)",
                ));
            }
        }
        if llc < l2 {
            return Err(smp_err(
                "llc",
                llc.name(),
                format!(
                    "below l2={} (the last-level cache is at least the L2's group)",
                    l2.name()
                ),
            ));
        }
        let spec = SmpSpec {
            sockets,
            dies,
            clusters: g.clusters,
            cores,
            threads,
            nodes: g.nodes.unwrap_or(1),
            numbering: g.numbering.unwrap_or(SmtNumbering::Contiguous),
            l2,
            llc,
            distances: DEFAULT_DISTANCES,
            cost: g.cost,
        };
        let allowed = spec.allowed_nodes();
        if !allowed.contains(&spec.nodes) {
            let list: Vec<String> = allowed.iter().map(|n| n.to_string()).collect();
            return Err(smp_err(
                "nodes",
                &spec.nodes.to_string(),
                format!(
                    "must be one of {} (a node is whole sockets, whole dies of one socket or whole {} of one die)",
                    list.join(", "),
                    if spec.clusters.is_some() { "clusters" } else { "cores" }
                ),
            ));
        }
        let distances = match (g.slit, g.distance.is_empty()) {
            (Some(_), false) => {
                return Err(smp_err("slit", "", "give distance= or slit=, not both"))
            }
            (Some(m), true) => {
                spec.check_slit(&m)?;
                NodeDistances::Slit(m)
            }
            (None, _) => {
                let NodeDistances::Rule {
                    mut die,
                    mut socket,
                    mut remote,
                } = DEFAULT_DISTANCES
                else {
                    unreachable!("the default is a rule")
                };
                let mut named: Vec<&str> = Vec::new();
                for (name, d) in &g.distance {
                    if named.contains(&name.as_str()) {
                        return Err(smp_err(&format!("distance {name}"), "", "given twice"));
                    }
                    named.push(name);
                    match name.as_str() {
                        "die" => die = *d,
                        "socket" => socket = *d,
                        "remote" => remote = *d,
                        _ => {} // local: checked to be 10
                    }
                }
                NodeDistances::Rule {
                    die,
                    socket,
                    remote,
                }
            }
        };
        Ok(SmpSpec { distances, ..spec })
    }

    fn check_slit(&self, m: &[Vec<u32>]) -> Result<(), TopologyError> {
        let n = self.nodes;
        if m.len() != n || m.iter().any(|r| r.len() != n) {
            return Err(smp_err(
                "slit",
                "",
                format!(
                    "must be {n} rows of {n} entries (one per node); got {} rows of {}",
                    m.len(),
                    m.iter()
                        .map(|r| r.len().to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                ),
            ));
        }
        for (a, row) in m.iter().enumerate() {
            for (b, &d) in row.iter().enumerate() {
                if (a == b) != (d == LOCAL_DISTANCE) {
                    return Err(smp_err(
                        "slit",
                        "",
                        format!(
                            "entry [{a}][{b}] = {d}: the diagonal must be {LOCAL_DISTANCE} and every other entry 11..={MAX_DISTANCE}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Clusters per die, 1 without a cluster level.
    fn clusters_per_die(&self) -> usize {
        self.clusters.unwrap_or(1)
    }

    /// Number of CPUs: sockets x dies x clusters x cores x threads.
    pub fn nr_cpus(&self) -> usize {
        self.nr_cores() * self.threads
    }

    /// Number of cores.
    pub fn nr_cores(&self) -> usize {
        self.sockets * self.dies * self.clusters_per_die() * self.cores
    }

    /// The node counts this shape allows, ascending: the divisors of
    /// `sockets`; `sockets` times the divisors of `dies`; `sockets * dies`
    /// times the divisors of the clusters of a die (of its cores without
    /// clusters); none above [`MAX_NODES`].
    pub fn allowed_nodes(&self) -> Vec<usize> {
        let divisors = |n: usize| (1..=n).filter(move |d| n.is_multiple_of(*d));
        let unit = match self.clusters {
            Some(c) => c,
            None => self.cores,
        };
        let (s, d) = (self.sockets, self.dies);
        let mut v: Vec<usize> = divisors(s)
            .chain(divisors(d).map(|k| s * k))
            .chain(divisors(unit).map(|k| s * d * k))
            .filter(|&n| n <= MAX_NODES)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The spec with every default written out (without `cost=`), as
    /// `parse` reads it back.
    pub fn canonical(&self) -> String {
        let mut s = format!("sockets={},dies={}", self.sockets, self.dies);
        if let Some(c) = self.clusters {
            s += &format!(",clusters={c}");
        }
        s += &format!(
            ",cores={},threads={},nodes={},numbering={},l2={},llc={}",
            self.cores,
            self.threads,
            self.nodes,
            match self.numbering {
                SmtNumbering::Contiguous => "contiguous",
                SmtNumbering::Interleaved => "interleaved",
            },
            self.l2.name(),
            self.llc.name()
        );
        match &self.distances {
            NodeDistances::Rule {
                die,
                socket,
                remote,
            } => {
                s += &format!(
                    ",distance=local:{LOCAL_DISTANCE},die:{die},socket:{socket},remote:{remote}"
                )
            }
            NodeDistances::Slit(m) => {
                let rows: Vec<String> = m
                    .iter()
                    .map(|r| {
                        r.iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join(":")
                    })
                    .collect();
                s += &format!(",slit={}", rows.join("/"));
            }
        }
        s
    }

    /// The machine, named `name`.
    pub fn build(&self, name: &str) -> Result<Topology, TopologyError> {
        let cores_per_cluster = self.cores;
        let cores_per_die = self.clusters_per_die() * cores_per_cluster;
        let cores_per_socket = self.dies * cores_per_die;
        let nr_cores = self.nr_cores();
        let nr_cpus = self.nr_cpus();
        let t = self.threads;
        let cores_per_node = nr_cores / self.nodes;
        let scope = |level: SmpLevel| match level {
            SmpLevel::Core => 1,
            SmpLevel::Cluster => cores_per_cluster,
            SmpLevel::Die => cores_per_die,
            SmpLevel::Socket => cores_per_socket,
        };
        let cpl = scope(self.llc);
        let cluster_cores = if self.clusters.is_some() {
            cores_per_cluster
        } else {
            1
        };
        let cpu_of = |core: usize, thread: usize| match self.numbering {
            SmtNumbering::Contiguous => core * t + thread,
            SmtNumbering::Interleaved => thread * nr_cores + core,
        };
        let mut places = vec![
            CpuPlace {
                core: 0,
                cluster: 0,
                llc: 0,
                node: 0,
                package: 0,
            };
            nr_cpus
        ];
        for core in 0..nr_cores {
            for thread in 0..t {
                places[cpu_of(core, thread)] = CpuPlace {
                    core,
                    cluster: core / cluster_cores,
                    llc: core / cpl,
                    node: core / cores_per_node,
                    package: core / cores_per_socket,
                };
            }
        }
        // Where each node's first core sits decides its distances: a node
        // never straddles a die unless it holds whole sockets.
        let first = |n: usize| n * cores_per_node;
        let distance = |a: usize, b: usize| match &self.distances {
            _ if a == b => LOCAL_DISTANCE,
            NodeDistances::Slit(m) => m[a][b],
            NodeDistances::Rule {
                die,
                socket,
                remote,
            } => {
                let (x, y) = (first(a), first(b));
                if x / cores_per_die == y / cores_per_die {
                    *die
                } else if x / cores_per_socket == y / cores_per_socket {
                    *socket
                } else {
                    *remote
                }
            }
        };
        let node_distance = (0..self.nodes)
            .map(|a| (0..self.nodes).map(|b| distance(a, b)).collect())
            .collect();
        let mut caches = Vec::new();
        let mut add = |level: u8, per: usize| {
            let mut groups = vec![CpuMask::new(); nr_cores / per];
            for (cpu, p) in places.iter().enumerate() {
                groups[p.core / per].set(cpu);
            }
            caches.extend(groups.into_iter().map(|shared_cpus| CacheInfo {
                level,
                kind: CacheKind::Unified,
                size_kib: None,
                shared_cpus,
            }));
        };
        add(2, scope(self.l2));
        if self.llc > self.l2 {
            add(3, cpl);
        }
        Topology::from_places(name, places, node_distance, caches)
    }
}

impl fmt::Display for SmpSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SMP_PREFIX}{}", self.canonical())
    }
}

/// The machine an `smp:` spec describes, named by the spec as given
/// (`spec` with or without the `smp:` prefix).
pub fn from_smp(spec: &str) -> Result<Topology, TopologyError> {
    let body = spec.strip_prefix(SMP_PREFIX).unwrap_or(spec);
    SmpSpec::parse(body)?.build(&format!("{SMP_PREFIX}{}", body.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Distance;

    fn err(spec: &str) -> String {
        SmpSpec::parse(spec).unwrap_err().to_string()
    }

    #[test]
    fn qemu_defaults() {
        let s = SmpSpec::parse("").unwrap();
        assert_eq!(
            (s.sockets, s.dies, s.cores, s.threads, s.nodes),
            (1, 1, 1, 1, 1)
        );
        // -smp 8: cores preferred over sockets
        let s = SmpSpec::parse("8").unwrap();
        assert_eq!((s.sockets, s.cores), (1, 8));
        let s = SmpSpec::parse("cpus=16,sockets=2,threads=2").unwrap();
        assert_eq!((s.sockets, s.cores, s.threads), (2, 4, 2));
        let s = SmpSpec::parse("cpus=16,cores=4").unwrap();
        assert_eq!((s.sockets, s.cores), (4, 4));
        let s = SmpSpec::parse("sockets=2,dies=2,clusters=3,cores=4,threads=2").unwrap();
        assert_eq!(s.nr_cpus(), 96);
        assert_eq!(s.clusters, Some(3));
        assert_eq!(SmpSpec::parse("cores=4").unwrap().clusters, None);
    }

    #[test]
    fn errors_name_the_key_and_the_range() {
        assert!(err("threads=9").contains("threads=9: must be a whole number in 1..=8"));
        assert!(err("cores=0").contains("cores=0: must be a whole number in 1..=4096"));
        assert!(err("cores=x").contains("cores=x"));
        assert!(err("sockets=2,sockets=2").contains("sockets: given twice"));
        assert!(err("socket=2").contains("socket: unknown key (keys: cpus, sockets"));
        assert!(err("cores=4,bogus").contains("expected KEY=VALUE"));
        assert!(err("cpus=10,sockets=4").contains("cpus=10: not a multiple"));
        assert!(err("cpus=10,sockets=2,cores=4").contains("= 8, not 10"));
        assert!(err("sockets=64,cores=128").contains("more than the maximum 4096"));
        assert!(err("sockets=4096,cores=4096,threads=8").contains("more than the maximum 4096"));
        assert!(err("cores=4,nodes=3").contains("nodes=3: must be one of 1, 2, 4"));
        assert!(err("nodes=2048,sockets=2048")
            .contains("nodes=2048: must be a whole number in 1..=1024"));
        assert!(err("llc=cluster").contains("llc=cluster: the machine has no clusters"));
        assert!(err("l2=die").contains("l2=die: must be one of core, cluster"));
        assert!(err("clusters=2,l2=cluster,llc=core").contains("llc=core: below l2=cluster"));
        assert!(err("numbering=x86").contains("numbering=x86: must be contiguous or interleaved"));
        assert!(err("sockets=2,nodes=2,distance=remote:300")
            .contains("distance remote=300: must be a whole number in 11..=254"));
        assert!(
            err("sockets=2,nodes=2,distance=local:12").contains("distance local=12: must be 10")
        );
        assert!(err("sockets=2,nodes=2,distance=near:12").contains("unknown class"));
        assert!(err("sockets=2,nodes=2,distance=remote:30,remote:32")
            .contains("distance remote: given twice"));
        assert!(
            err("sockets=2,nodes=2,slit=10:20/20").contains("slit: must be 2 rows of 2 entries")
        );
        assert!(err("sockets=2,nodes=2,slit=10:10/10:10").contains("entry [0][1] = 10"));
        assert!(err("sockets=2,nodes=2,slit=10:20/20:10,distance=remote:30").contains("not both"));
        assert!(err("cost=").contains("cost: empty"));
        // a line break in a key or value is escaped (found by the fuzz target)
        assert!(err("s\np:cores=2").contains("smp: s\\np:cores: unknown key"));
        assert!(err("numbering=a\rb").contains("numbering=a\\rb"));
        for spec in [
            "threads=9",
            "cores=4,nodes=3",
            "slit=1:2/3",
            "s\np:x=1",
            "llc=\n",
        ] {
            assert!(!err(spec).contains('\n'));
            assert!(err(spec).starts_with("smp: "), "{}", err(spec));
        }
    }

    #[test]
    fn allowed_nodes_follow_the_hierarchy() {
        let s = SmpSpec::parse("sockets=2,dies=2,clusters=6,cores=4").unwrap();
        assert_eq!(s.allowed_nodes(), [1, 2, 4, 8, 12, 24]);
        let s = SmpSpec::parse("sockets=4,cores=6").unwrap();
        assert_eq!(s.allowed_nodes(), [1, 2, 4, 8, 12, 24]);
    }

    #[test]
    fn shape_numbering_and_distances() {
        let t = from_smp("smp:sockets=2,dies=2,cores=4,threads=2,nodes=8").unwrap();
        assert_eq!(t.name(), "smp:sockets=2,dies=2,cores=4,threads=2,nodes=8");
        assert_eq!(t.nr_cpus(), 32);
        assert_eq!(t.smt_mask(3).to_string(), "2-3");
        assert_eq!(t.llc_mask(0).to_string(), "0-7"); // llc=die
        assert_eq!(t.node_mask(5).to_string(), "4-7");
        assert_eq!(t.package_mask(9).to_string(), "0-15");
        assert_eq!(t.cluster_mask(4), t.smt_mask(4)); // no clusters
        assert_eq!(t.node_distance(0, 1), 11); // same die
        assert_eq!(t.node_distance(0, 2), 12); // other die, same socket
        assert_eq!(t.node_distance(0, 4), 20); // other socket
        let l2: Vec<_> = t.caches().iter().filter(|c| c.level == 2).collect();
        assert_eq!(l2.len(), 16);
        assert_eq!(t.caches().iter().filter(|c| c.level == 3).count(), 4);
        let x = from_smp("sockets=2,cores=4,threads=2,numbering=interleaved,nodes=2").unwrap();
        assert_eq!(x.smt_mask(1).to_string(), "1,9");
        assert_eq!(x.node_mask(1).to_string(), "0-3,8-11");
        assert_eq!(x.distance(0, 4), Distance::Remote);
        // a node holding two sockets
        let v = from_smp("sockets=4,cores=2,nodes=2,distance=remote:32").unwrap();
        assert_eq!(v.node_mask(2).to_string(), "0-3");
        assert_eq!(v.node_distance(0, 1), 32);
        // clusters with a shared L2 and the LLC per socket
        let j = from_smp("clusters=6,cores=4,l2=cluster,llc=socket").unwrap();
        assert_eq!(j.cluster_mask(5).to_string(), "4-7");
        assert_eq!(j.llc_mask(5).to_string(), "0-23");
        let l2: Vec<_> = j.caches().iter().filter(|c| c.level == 2).collect();
        assert_eq!(l2[1].shared_cpus.to_string(), "4-7");
        // llc equal to l2: the L2 is the last level
        let a = from_smp("clusters=2,cores=2,l2=cluster,llc=cluster").unwrap();
        assert!(a.caches().iter().all(|c| c.level == 2));
    }

    #[test]
    fn distance_items_continue_after_commas() {
        let s =
            SmpSpec::parse("sockets=2,dies=2,nodes=4,distance=die:13,socket:14,remote:40,cores=2")
                .unwrap();
        assert_eq!(
            s.distances,
            NodeDistances::Rule {
                die: 13,
                socket: 14,
                remote: 40
            }
        );
        assert_eq!(s.cores, 2);
        let back = SmpSpec::parse(&s.canonical()).unwrap();
        assert_eq!(back, s);
        let slit = SmpSpec::parse("sockets=2,nodes=2,slit=10:21/31:10,cost=x.toml").unwrap();
        assert_eq!(
            slit.distances,
            NodeDistances::Slit(vec![vec![10, 21], vec![31, 10]])
        );
        assert_eq!(slit.cost.as_deref(), Some("x.toml"));
        let mut no_cost = slit.clone();
        no_cost.cost = None;
        assert_eq!(SmpSpec::parse(&slit.canonical()).unwrap(), no_cost);
    }
}
