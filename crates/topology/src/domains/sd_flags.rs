//! Sched-domain flags, one bit each. The bit values are ours; [`NAMES`]
//! lists them in the order of the kernel's include/linux/sched/sd_flags.h
//! (and of the older `#define SD_*` block), which is the order the kernel
//! prints them in. How a given kernel version names them is
//! [`crate::DomainOptions::flag_names`].

/// Load-balance this domain at all; every domain had it until v5.8 (commit
/// "sched/topology: Kill SD_LOAD_BALANCE").
pub const LOAD_BALANCE: u32 = 1 << 15;
/// Balance when about to become idle.
pub const BALANCE_NEWIDLE: u32 = 1 << 0;
/// Balance on exec.
pub const BALANCE_EXEC: u32 = 1 << 1;
/// Balance on fork/clone.
pub const BALANCE_FORK: u32 = 1 << 2;
/// Balance on wakeup (off on every level since v3.x).
pub const BALANCE_WAKE: u32 = 1 << 3;
/// Consider waking the task on the waker's CPU.
pub const WAKE_AFFINE: u32 = 1 << 4;
/// Groups have different max CPU capacities.
pub const ASYM_CPUCAPACITY: u32 = 1 << 5;
/// Every group sees the full capacity range.
pub const ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
/// Members share CPU capacity (SMT); SD_SHARE_CPUPOWER in <= 3.x.
pub const SHARE_CPUCAPACITY: u32 = 1 << 7;
/// Members share a cluster (L2 or L3 tag), v6.7+.
pub const CLUSTER: u32 = 1 << 8;
/// Members share the last-level cache; SD_SHARE_PKG_RESOURCES before v6.9.
pub const SHARE_LLC: u32 = 1 << 9;
/// Only one balance at a time on this level (NUMA).
pub const SERIALIZE: u32 = 1 << 10;
/// Place busy tasks earlier in the domain (POWER SMT, ITMT).
pub const ASYM_PACKING: u32 = 1 << 11;
/// Prefer to place tasks in a sibling domain.
pub const PREFER_SIBLING: u32 = 1 << 12;
/// Groups overlap (NUMA levels above NODE).
pub const OVERLAP: u32 = 1 << 13;
/// Cross-node balancing.
pub const NUMA: u32 = 1 << 14;

/// `(bit, newest kernel name without the SD_ prefix)`, in the kernel's
/// order.
pub const NAMES: &[(u32, &str)] = &[
    (LOAD_BALANCE, "LOAD_BALANCE"),
    (BALANCE_NEWIDLE, "BALANCE_NEWIDLE"),
    (BALANCE_EXEC, "BALANCE_EXEC"),
    (BALANCE_FORK, "BALANCE_FORK"),
    (BALANCE_WAKE, "BALANCE_WAKE"),
    (WAKE_AFFINE, "WAKE_AFFINE"),
    (ASYM_CPUCAPACITY, "ASYM_CPUCAPACITY"),
    (ASYM_CPUCAPACITY_FULL, "ASYM_CPUCAPACITY_FULL"),
    (SHARE_CPUCAPACITY, "SHARE_CPUCAPACITY"),
    (CLUSTER, "CLUSTER"),
    (SHARE_LLC, "SHARE_LLC"),
    (SERIALIZE, "SERIALIZE"),
    (ASYM_PACKING, "ASYM_PACKING"),
    (PREFER_SIBLING, "PREFER_SIBLING"),
    (OVERLAP, "OVERLAP"),
    (NUMA, "NUMA"),
];

/// Names (newest kernel's) of the flags set in `flags`, in the kernel's
/// order.
pub fn names(flags: u32) -> Vec<&'static str> {
    NAMES
        .iter()
        .filter(|(b, _)| flags & b != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// Flags that only mean something with two or more groups, from v5.10 on
/// (`SD_DEGENERATE_GROUPS_MASK`: the SDF_NEEDS_GROUPS metaflag of
/// sd_flags.h, commit "sched/topology: Use prebuilt SD flag degeneration
/// mask"): every flag but SD_WAKE_AFFINE.
pub(crate) const NEEDS_GROUPS: u32 = BALANCE_NEWIDLE
    | BALANCE_EXEC
    | BALANCE_FORK
    | BALANCE_WAKE
    | ASYM_CPUCAPACITY
    | ASYM_CPUCAPACITY_FULL
    | SHARE_CPUCAPACITY
    | CLUSTER
    | SHARE_LLC
    | SERIALIZE
    | ASYM_PACKING
    | PREFER_SIBLING
    | OVERLAP
    | NUMA;

/// Before v5.10, `sd_degenerate()` listed the flags that keep a domain with
/// two or more groups by hand (SD_SHARE_POWERDOMAIN, never set by the
/// topologies modelled here, is left out).
pub(crate) const LEGACY_NEEDS_GROUPS: u32 = LOAD_BALANCE
    | BALANCE_NEWIDLE
    | BALANCE_FORK
    | BALANCE_EXEC
    | SHARE_CPUCAPACITY
    | ASYM_CPUCAPACITY
    | SHARE_LLC;

/// Before v5.10, `sd_parent_degenerate()` ignored these flags of a parent
/// with a single group (plus SD_SERIALIZE on a single-node machine).
pub(crate) const LEGACY_PARENT_IGNORED: u32 = LEGACY_NEEDS_GROUPS | PREFER_SIBLING;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_kernel_order() {
        assert_eq!(names(SHARE_LLC | CLUSTER), ["CLUSTER", "SHARE_LLC"]);
        assert_eq!(
            names(LOAD_BALANCE | BALANCE_NEWIDLE | NUMA),
            ["LOAD_BALANCE", "BALANCE_NEWIDLE", "NUMA"]
        );
        let all = NAMES.iter().fold(0, |a, (b, _)| a | b);
        assert_eq!(all.count_ones() as usize, NAMES.len(), "one bit each");
        assert_eq!(NEEDS_GROUPS & WAKE_AFFINE, 0);
    }
}
