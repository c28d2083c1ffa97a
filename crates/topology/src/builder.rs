//! `TopologyBuilder`: regular machines described by counts.
//!
//! Every level is given as a number of *cores* (cores per cluster, per LLC,
//! per node, per package), so the levels need not nest in the usual order:
//! Ampere Altra has 2-core clusters around 1-core "LLCs". `from_places`
//! validates the result.

use crate::cpumask::CpuMask;
use crate::error::TopologyError;
use crate::topology::{CacheInfo, CacheKind, CpuPlace, Topology, LOCAL_DISTANCE};

/// How Linux numbers the hardware threads of a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtNumbering {
    /// x86 (ACPI MADT order): first thread of every core, then the second
    /// thread of every core, so siblings are `cpu` and `cpu + nr_cores`
    /// machine-wide (2-socket X5650: cpu and cpu+12).
    Interleaved,
    /// arm64, POWER: a core's threads are consecutive CPUs.
    Contiguous,
}

/// Which group of CPUs one instance of a cache serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheScope {
    /// Private to a core (shared by its SMT threads).
    Core,
    /// One per cluster.
    Cluster,
    /// One per LLC group.
    Llc,
    /// One per node.
    Node,
    /// One per package.
    Package,
}

#[derive(Clone, Debug)]
struct CacheSpec {
    level: u8,
    kind: CacheKind,
    size_kib: Option<u64>,
    scope: CacheScope,
}

/// Builds a regular [`Topology`] from counts.
///
/// ```
/// use topology::{SmtNumbering, TopologyBuilder};
/// // 2 sockets x 6 cores x 2 threads, x86 numbering, one node per socket.
/// let t = TopologyBuilder::new("xeon")
///     .packages(2)
///     .cores_per_package(6)
///     .threads_per_core(2, SmtNumbering::Interleaved)
///     .nodes_per_package(1)
///     .build()
///     .unwrap();
/// assert_eq!(t.nr_cpus(), 24);
/// assert_eq!(t.smt_mask(0).to_string(), "0,12");
/// assert_eq!(t.llc_mask(0).to_string(), "0-5,12-17");
/// assert_eq!(t.node_distance(0, 1), 20);
/// ```
#[derive(Clone, Debug)]
pub struct TopologyBuilder {
    name: String,
    packages: usize,
    cores_per_package: usize,
    nodes_per_package: usize,
    cores_per_llc: Option<usize>,
    cores_per_cluster: usize,
    threads_per_core: usize,
    numbering: SmtNumbering,
    node_distance: Option<Vec<Vec<u32>>>,
    caches: Vec<CacheSpec>,
}

impl TopologyBuilder {
    /// One package of one single-threaded core, one node; set the counts.
    pub fn new(name: &str) -> Self {
        TopologyBuilder {
            name: name.to_string(),
            packages: 1,
            cores_per_package: 1,
            nodes_per_package: 1,
            cores_per_llc: None,
            cores_per_cluster: 1,
            threads_per_core: 1,
            numbering: SmtNumbering::Contiguous,
            node_distance: None,
            caches: Vec::new(),
        }
    }

    /// Number of packages (sockets). Default 1.
    pub fn packages(mut self, n: usize) -> Self {
        self.packages = n;
        self
    }

    /// Cores per package. Default 1.
    pub fn cores_per_package(mut self, n: usize) -> Self {
        self.cores_per_package = n;
        self
    }

    /// NUMA nodes per package (each an equal share of its cores). Default 1.
    pub fn nodes_per_package(mut self, n: usize) -> Self {
        self.nodes_per_package = n;
        self
    }

    /// Cores sharing one last-level cache. Default: the whole node.
    pub fn cores_per_llc(mut self, n: usize) -> Self {
        self.cores_per_llc = Some(n);
        self
    }

    /// Cores per cluster. Default 1 (no clusters: the cluster is the core).
    pub fn cores_per_cluster(mut self, n: usize) -> Self {
        self.cores_per_cluster = n;
        self
    }

    /// Hardware threads per core and how Linux numbers them. Default 1.
    pub fn threads_per_core(mut self, n: usize, numbering: SmtNumbering) -> Self {
        self.threads_per_core = n;
        self.numbering = numbering;
        self
    }

    /// Node distance matrix. Default: 10 locally, 20 (the kernel's
    /// `REMOTE_DISTANCE`, what Linux assumes without a SLIT) elsewhere.
    pub fn node_distance(mut self, d: Vec<Vec<u32>>) -> Self {
        self.node_distance = Some(d);
        self
    }

    /// Add one cache instance per `scope` group.
    pub fn cache(
        mut self,
        level: u8,
        kind: CacheKind,
        size_kib: Option<u64>,
        scope: CacheScope,
    ) -> Self {
        self.caches.push(CacheSpec {
            level,
            kind,
            size_kib,
            scope,
        });
        self
    }

    /// Build and validate.
    pub fn build(self) -> Result<Topology, TopologyError> {
        let bad = |p: String| TopologyError::invalid(&self.name, p);
        let cpp = self.cores_per_package;
        let cpn = cpp.checked_div(self.nodes_per_package).unwrap_or(0);
        let cpl = self.cores_per_llc.unwrap_or(cpn);
        let cpc = self.cores_per_cluster;
        let tpc = self.threads_per_core;
        if [self.packages, cpp, self.nodes_per_package, cpl, cpc, tpc].contains(&0) {
            return Err(bad("every count must be at least 1".into()));
        }
        if !cpp.is_multiple_of(self.nodes_per_package) {
            return Err(bad(format!(
                "{cpp} cores per package do not split into {} nodes",
                self.nodes_per_package
            )));
        }
        for (what, n) in [("LLC", cpl), ("cluster", cpc)] {
            if !cpp.is_multiple_of(n) {
                return Err(bad(format!(
                    "{cpp} cores per package are not a multiple of {n} cores per {what}"
                )));
            }
        }
        let nr_cores = self.packages * cpp;
        let nr_cpus = nr_cores.saturating_mul(tpc);
        if nr_cpus > CpuMask::MAX_CPUS {
            return Err(bad(format!(
                "{nr_cpus} CPUs, more than the maximum {}",
                CpuMask::MAX_CPUS
            )));
        }
        let mut places = vec![
            CpuPlace {
                core: 0,
                cluster: 0,
                llc: 0,
                node: 0,
                package: 0
            };
            nr_cpus
        ];
        for core in 0..nr_cores {
            for t in 0..tpc {
                let cpu = match self.numbering {
                    SmtNumbering::Interleaved => t * nr_cores + core,
                    SmtNumbering::Contiguous => core * tpc + t,
                };
                places[cpu] = CpuPlace {
                    core,
                    cluster: core / cpc,
                    llc: core / cpl,
                    node: core / cpn,
                    package: core / cpp,
                };
            }
        }
        let nr_nodes = self.packages * self.nodes_per_package;
        let node_distance = self.node_distance.clone().unwrap_or_else(|| {
            (0..nr_nodes)
                .map(|a| {
                    (0..nr_nodes)
                        .map(|b| if a == b { LOCAL_DISTANCE } else { 20 })
                        .collect()
                })
                .collect()
        });
        let mut caches = Vec::new();
        for spec in &self.caches {
            let per = match spec.scope {
                CacheScope::Core => 1,
                CacheScope::Cluster => cpc,
                CacheScope::Llc => cpl,
                CacheScope::Node => cpn,
                CacheScope::Package => cpp,
            };
            for group in 0..nr_cores / per {
                let shared_cpus = (0..nr_cpus)
                    .filter(|&c| places[c].core / per == group)
                    .collect();
                caches.push(CacheInfo {
                    level: spec.level,
                    kind: spec.kind,
                    size_kib: spec.size_kib,
                    shared_cpus,
                });
            }
        }
        Topology::from_places(&self.name, places, node_distance, caches)
    }
}
