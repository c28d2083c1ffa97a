//! Memory and automatic NUMA balancing.
//!
//! - [`memory`]: address spaces of regions cut into 2 MiB chunks, placed
//!   on nodes by first touch or a numactl policy; the accesses ops declare;
//!   the /proc/vmstat-style counters.
//! - [`balancing`]: the per-task arithmetic of kernel/sched/fair.c's NUMA
//!   balancing (scan periods, the 4.19 stagger, fault statistics, the
//!   preferred node, the page-migration filter) and its toggles.
//!
//! The engine drives them (crates/sim/src/engine/numa.rs): an
//! `Op::ComputeMem` first-touches its chunks, takes the hinting faults of
//! marked ones and runs slower by the SLIT distance of the pages it
//! streams; the tick queues `task_numa_work`, which marks the next
//! `scan_size` of the address space. docs/numa.md describes the model.
//!
//! ```
//! use sim::numa::balancing::{task_scan_max, task_scan_min, NumaParams};
//! let p = NumaParams { enabled: true, ..Default::default() };
//! // a 4 GB resident set is 16 scan windows: periods 100 ms .. 3.75 s
//! assert_eq!((task_scan_min(4 << 30, &p), task_scan_max(4 << 30, &p)), (100, 3750));
//! ```

pub mod balancing;
pub mod memory;

pub use balancing::{NumaFeatures, NumaParams, StaggerUnits, NUMA_FEATURES, NUMA_PARAMS};
pub use memory::{AccessId, MemPolicy, NumaCounters, RegionId, Span};
