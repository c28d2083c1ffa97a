//! CPU lists (`0-3,8,10-11`), NUMA node CPUs from sysfs, and the affinity
//! that every benchmark task inherits (the equivalent of `taskset -c LIST`
//! or `numactl -N NODE` in front of the C benchmark).
//!
//! Lists are parsed and printed with `topology::CpuMask`; the native ports
//! keep them as sorted vectors of CPU numbers.

use crate::error::{Error, Result};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::path::Path;
use topology::CpuMask;

/// Which CPUs the benchmark tasks may run on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CpuSelection {
    /// Whatever affinity the caller already has.
    #[default]
    Inherit,
    /// An explicit CPU list (`--cpus LIST`).
    Cpus(Vec<usize>),
    /// The CPUs of one NUMA node (`--node N`).
    Node(u32),
}

/// Parses a Linux CPU list such as `0-3,8,10-11` (also `0-7:2`, taskset's
/// stride form) into a sorted, deduplicated list, with the topology crate's
/// parser. `flag` names the flag for the error message; CPUs beyond what
/// `sched_setaffinity` can express are rejected.
pub fn parse_cpu_list(s: &str, flag: &'static str) -> Result<Vec<usize>> {
    let mask = CpuMask::parse_list(s).map_err(|e| Error::arg(flag, e.to_string()))?;
    if mask.is_empty() {
        return Err(Error::arg(flag, "empty CPU list"));
    }
    let max = CpuSet::count();
    let cpus: Vec<usize> = mask.iter().collect();
    if let Some(&hi) = cpus.last().filter(|&&hi| hi >= max) {
        return Err(Error::arg(
            flag,
            format!(
                "CPU {hi} is beyond the largest supported CPU number {}",
                max - 1
            ),
        ));
    }
    Ok(cpus)
}

/// Formats a CPU list back into the compact `0-3,8` form.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    CpuMask::from_cpus(cpus.iter().copied()).to_string()
}

/// The online CPUs (`/sys/devices/system/cpu/online`), or `None` when sysfs
/// is not readable.
pub fn online_cpus() -> Option<Vec<usize>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    parse_cpu_list(&s, "online").ok()
}

/// The number of online CPUs (what glibc's `get_nprocs` reports).
pub fn nprocs() -> usize {
    online_cpus()
        .map(|c| c.len())
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .max(1)
}

/// Reads the CPU list of NUMA node `node` under a sysfs root (normally
/// `/sys`). A machine without NUMA support in sysfs has one node, 0, with
/// every online CPU.
pub fn node_cpus_in(sysfs: &Path, node: u32) -> Result<Vec<usize>> {
    let path = sysfs.join(format!("devices/system/node/node{node}/cpulist"));
    match std::fs::read_to_string(&path) {
        Ok(s) => {
            let cpus = parse_cpu_list(&s, "--node")?;
            if cpus.is_empty() {
                return Err(Error::arg("--node", format!("node {node} has no CPUs")));
            }
            Ok(cpus)
        }
        Err(_) => {
            let nodes = sysfs.join("devices/system/node");
            if node == 0 && !nodes.exists() {
                let online = std::fs::read_to_string(sysfs.join("devices/system/cpu/online"))
                    .map_err(|e| Error::io("--node 0: cannot read the online CPUs", e))?;
                return parse_cpu_list(&online, "--node");
            }
            Err(Error::arg(
                "--node",
                format!(
                    "NUMA node {node} does not exist on this host ({} is missing)",
                    path.display()
                ),
            ))
        }
    }
}

/// Resolves a selection into a concrete CPU list (`None` for
/// [`CpuSelection::Inherit`]), checking that every CPU is online.
pub fn resolve(sel: &CpuSelection) -> Result<Option<Vec<usize>>> {
    let (cpus, flag) = match sel {
        CpuSelection::Inherit => return Ok(None),
        CpuSelection::Cpus(c) => (c.clone(), "--cpus"),
        CpuSelection::Node(n) => (node_cpus_in(Path::new("/sys"), *n)?, "--node"),
    };
    if cpus.is_empty() {
        return Err(Error::arg(flag, "empty CPU list"));
    }
    if let Some(online) = online_cpus() {
        if let Some(bad) = cpus.iter().find(|c| online.binary_search(c).is_err()) {
            return Err(Error::arg(
                flag,
                format!(
                    "CPU {bad} is not online (online CPUs: {})",
                    format_cpu_list(&online)
                ),
            ));
        }
    }
    Ok(Some(cpus))
}

/// Sets the calling thread's affinity for the duration of a run and
/// restores the previous one on drop. Threads created and processes forked
/// while it is alive inherit the mask.
pub(crate) struct AffinityGuard {
    old: Option<CpuSet>,
}

impl AffinityGuard {
    pub(crate) fn set(cpus: Option<&[usize]>, flag: &'static str) -> Result<Self> {
        let Some(cpus) = cpus else {
            return Ok(AffinityGuard { old: None });
        };
        let old =
            sched_getaffinity(Pid::from_raw(0)).map_err(|e| Error::sys("sched_getaffinity", e))?;
        let mut set = CpuSet::new();
        for &c in cpus {
            set.set(c)
                .map_err(|_| Error::arg(flag, format!("CPU {c} is out of range")))?;
        }
        sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| {
            Error::arg(
                flag,
                format!(
                    "cannot pin to CPUs {}: {e} (outside this process's allowed CPUs?)",
                    format_cpu_list(cpus)
                ),
            )
        })?;
        Ok(AffinityGuard { old: Some(old) })
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            let _ = sched_setaffinity(Pid::from_raw(0), old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_ranges_singles_and_strides() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11", "--cpus").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(
            parse_cpu_list("0-7:2\n", "--cpus").unwrap(),
            vec![0, 2, 4, 6]
        );
        assert_eq!(parse_cpu_list("3,1,3", "--cpus").unwrap(), vec![1, 3]);
    }

    #[test]
    fn rejects_bad_lists_naming_the_flag() {
        for bad in ["", "a", "3-1", "1-", "0-4:0", "99999"] {
            let e = parse_cpu_list(bad, "--cpus").unwrap_err().to_string();
            assert!(e.starts_with("--cpus: "), "{bad:?} -> {e}");
        }
    }

    #[test]
    fn node_cpus_from_a_fake_sysfs() {
        let dir = std::env::temp_dir().join(format!("native-sysfs-{}", std::process::id()));
        let node = dir.join("devices/system/node/node1");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("cpulist"), "4-5\n").unwrap();
        assert_eq!(node_cpus_in(&dir, 1).unwrap(), vec![4, 5]);
        let e = node_cpus_in(&dir, 2).unwrap_err().to_string();
        assert!(e.starts_with("--node: NUMA node 2 does not exist"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(set in proptest::collection::btree_set(0usize..200, 1..40)) {
            let v: Vec<usize> = set.into_iter().collect();
            let s = format_cpu_list(&v);
            prop_assert_eq!(parse_cpu_list(&s, "--cpus").unwrap(), v);
        }
    }
}
