//! # topology: CPU masks, machine shapes and Linux sched domains
//!
//! This crate describes the machine a scheduler places tasks on, the way
//! Linux sees it:
//!
//! - [`CpuMask`]: a set of CPUs (kernel `struct cpumask`), inline up to 256
//!   CPUs, with the kernel's list format (`"0-3,8"`) and wrapped iteration
//!   (`for_each_cpu_wrap`, `cpumask_next_wrap`).
//! - [`Topology`]: which CPUs share a core (SMT), a cluster, the
//!   last-level cache, a NUMA node and a package, node distances, caches.
//!   Built from [`CpuPlace`]s, a [`TopologyBuilder`], a [`preset`], a
//!   synthetic `smp:` shape ([`SmpSpec`], in the spirit of QEMU's `-smp`),
//!   a sysfs tree ([`from_sysfs`]) or hwloc XML ([`from_hwloc_xml`]);
//!   [`machine`] takes any of them as one string.
//! - [`SchedDomains`]: the per-CPU sched-domain hierarchy Linux builds from
//!   that (SMT, CLS, MC, DIE/PKG, NODE/NUMA levels with the kernel's flags,
//!   groups, balance masks and degenerate-domain removal) and the per-CPU
//!   shortcuts the wake-up path reads (`sd_llc`, `sd_llc_size`,
//!   `sd_llc_id`, `sd_share_id`, `cpus_share_cache`,
//!   `cpus_share_resources`), for the kernel version and build options in
//!   [`DomainOptions`].
//!
//! ```
//! use topology::{preset, Distance, DomainOptions, SchedDomains};
//!
//! let t = preset("xeon-12c24t")?;            // 2 x 6 cores x SMT2
//! assert_eq!(t.nr_cpus(), 24);
//! assert_eq!(t.smt_mask(0).to_string(), "0,12"); // x86 sibling numbering
//! assert_eq!(t.distance(0, 12), Distance::Smt);
//! assert_eq!(t.distance(0, 6), Distance::Remote);
//!
//! let sd = SchedDomains::build(&t, &DomainOptions::default());
//! let levels: Vec<_> = sd.domains(0).iter().map(|d| (d.name, d.span_weight)).collect();
//! assert_eq!(levels, [("SMT", 2), ("MC", 12), ("NUMA", 24)]);
//! assert_eq!(sd.sd_llc_size(0), 12);
//! assert!(sd.cpus_share_cache(0, 17) && !sd.cpus_share_cache(0, 6));
//! # Ok::<(), topology::TopologyError>(())
//! ```
//!
//! Nothing here is kernel source: the construction is written from
//! kernel/sched/topology.c and the architectures' topology code in our own
//! words, and each function names the kernel function and version it
//! models.

#![warn(missing_docs)]

mod builder;
mod cpumask;
pub mod domains;
mod error;
mod hwloc;
pub mod input;
mod machine;
mod presets;
mod synthetic;
mod sysfs;
mod topology;

pub use builder::{CacheScope, SmtNumbering, TopologyBuilder};
pub use cpumask::{BitIter, CpuMask};
pub use domains::{
    sd_flags, Arch, ConfigOption, DomainOptions, GroupFlagSync, Groups, ImbNumaNr, Level,
    SchedDomain, SchedDomains, SchedGroup, LATEST_VERSION, NODE_RECLAIM_DISTANCE,
};
pub use error::TopologyError;
pub use hwloc::from_hwloc_xml;
pub use machine::machine;
pub use presets::{preset, presets};
pub use synthetic::{
    from_smp, NodeDistances, SmpLevel, SmpSpec, DEFAULT_DISTANCES, MAX_DISTANCE, MAX_NODES,
    MAX_THREADS, SMP_PREFIX,
};
pub use sysfs::{from_sysfs, write_sysfs};
pub use topology::{CacheInfo, CacheKind, CpuPlace, Distance, Topology, LOCAL_DISTANCE};
