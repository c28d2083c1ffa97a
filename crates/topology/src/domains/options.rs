//! What makes one kernel build other domains than another: its build
//! options (Kconfig), its architecture's level table, and the rules and
//! names of its version. [`DomainOptions::linux`] derives all of them from
//! a version; each field can then be changed on its own.

use super::sd_flags;
use serde::Serialize;
use std::fmt;

/// The newest modelled tree (~7.0-dev), what [`DomainOptions::default`]
/// builds.
pub const LATEST_VERSION: (u32, u32) = (7, 0);

/// The architecture's table of topology levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum Arch {
    /// `default_topology[]` of kernel/sched/topology.c (arm64, riscv, ...):
    /// SMT, CLS, MC and the package level, then the NUMA levels.
    #[default]
    Generic,
    /// x86 (arch/x86/kernel/smpboot.c): the same levels, except that the
    /// package level is left out when a package holds CPUs of more than one
    /// node (`x86_has_numa_in_package`, set by `set_cpu_sibling_map()`;
    /// present in every modelled kernel). The NODE level then stands where
    /// DIE/PKG would, so only the level's name differs.
    X86,
}

impl Arch {
    /// `generic` or `x86`.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Generic => "generic",
            Arch::X86 => "x86",
        }
    }

    /// The architecture named `name` (`generic`, `arm64`, `x86`, `x86_64`).
    pub fn from_name(name: &str) -> Option<Arch> {
        match name {
            "generic" | "arm64" | "aarch64" => Some(Arch::Generic),
            "x86" | "x86_64" | "x86-64" => Some(Arch::X86),
            _ => None,
        }
    }
}

/// A kernel build option (Kconfig) that changes the domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigOption {
    /// CONFIG_SCHED_SMT: the SMT level (and `sched_smt_present`).
    SchedSmt,
    /// CONFIG_SCHED_CLUSTER (v5.16+): the CLS level. x86 defaults it to y;
    /// arm64 has no default and Debian's arm64 kernels leave it off.
    SchedCluster,
    /// CONFIG_SCHED_MC: the MC (last-level cache) level.
    SchedMc,
    /// CONFIG_NUMA: the NODE and NUMA levels; without it the package level
    /// spans every CPU and an LLC is not limited to a node.
    Numa,
}

impl ConfigOption {
    /// Every option, in level order.
    pub const ALL: [ConfigOption; 4] = [
        ConfigOption::SchedSmt,
        ConfigOption::SchedCluster,
        ConfigOption::SchedMc,
        ConfigOption::Numa,
    ];

    /// The Kconfig name without `CONFIG_`: `SCHED_SMT`, `SCHED_CLUSTER`,
    /// `SCHED_MC`, `NUMA`.
    pub fn name(self) -> &'static str {
        match self {
            ConfigOption::SchedSmt => "SCHED_SMT",
            ConfigOption::SchedCluster => "SCHED_CLUSTER",
            ConfigOption::SchedMc => "SCHED_MC",
            ConfigOption::Numa => "NUMA",
        }
    }

    /// One line: what the option changes.
    pub fn description(self) -> &'static str {
        match self {
            ConfigOption::SchedSmt => "SMT level (cpu_smt_mask) and sched_smt_present",
            ConfigOption::SchedCluster => {
                "CLS level (cpu_clustergroup_mask), from 5.16; Debian's arm64 kernels build without it"
            }
            ConfigOption::SchedMc => "MC level (cpu_coregroup_mask, the LLC)",
            ConfigOption::Numa => {
                "NODE and NUMA levels (sched_init_numa); without it the package level spans every CPU"
            }
        }
    }

    /// The option named `name`, with or without the `CONFIG_` prefix.
    pub fn from_name(name: &str) -> Option<ConfigOption> {
        let n = name.strip_prefix("CONFIG_").unwrap_or(name);
        ConfigOption::ALL.into_iter().find(|o| o.name() == n)
    }

    /// The valid names, comma-separated.
    pub fn valid_names() -> String {
        ConfigOption::ALL
            .iter()
            .map(|o| o.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parse a Kconfig value: `y` or `n`.
    pub fn parse_value(value: &str) -> Option<bool> {
        match value {
            "y" => Some(true),
            "n" => Some(false),
            _ => None,
        }
    }
}

impl fmt::Display for ConfigOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How `build_sched_domains()` sets `sd->imb_numa_nr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ImbNumaNr {
    /// Not there (before v5.18): every domain has 0.
    None,
    /// v5.18-5.19 (commit e496132ebedd): one LLC per node allows span / 4.
    Quarter,
    /// v6.0+ (commit 026b98a93bbd): span / 8, at least 1.
    Eighth,
}

/// What `cpu_attach_domain()` does to the first group of the grandparent
/// when it removes a degenerate parent (the group was built from the
/// removed domain and carries its flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum GroupFlagSync {
    /// Nothing (before v6.5).
    None,
    /// v6.5 (commit bf2dc42d6beb "sched/topology: Propagate SMT flags when
    /// removing degenerate domain"): add SD_SHARE_CPUCAPACITY if the child
    /// has it.
    ShareCpuCapacity,
    /// v6.6+ (commit 4efcc8bc7e08 "sched/topology: Align group flags when
    /// removing degenerate domain"): copy the child's flags.
    ChildFlags,
}

/// How a kernel builds its domains: build options, architecture, and the
/// rules and names of its version. [`DomainOptions::linux`] gives a
/// version's values; the fields can then be changed one by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DomainOptions {
    /// CONFIG_SCHED_SMT: build the SMT level.
    pub sched_smt: bool,
    /// CONFIG_SCHED_CLUSTER: build the CLS level (kernels >= 5.16).
    pub cluster_level: bool,
    /// CONFIG_SCHED_MC: build the MC level.
    pub sched_mc: bool,
    /// CONFIG_NUMA: build the NODE and NUMA levels.
    pub numa: bool,
    /// Put SD_CLUSTER on the CLS level (kernels >= 6.7; 5.16-6.6 had only
    /// SD_SHARE_PKG_RESOURCES there).
    pub cluster_flag: bool,
    /// `sd_init()`'s default imbalance_pct (levels without SMT or LLC
    /// sharing): 117 from v5.10 ("sched/fair: Reduce minimal imbalance
    /// threshold"), 125 before.
    pub imbalance_pct: u32,
    /// `sd->busy_factor`: 16 from v5.10 ("sched/fair: Reduce busy load
    /// balance interval"), 32 before.
    pub busy_factor: u32,
    /// The package level's name: `DIE` until v6.7 renamed it `PKG` (commit
    /// f577cd57bfaa "sched/topology: Rename 'DIE' domain to 'PKG'").
    pub pkg_name: &'static str,
    /// The LLC flag's name: `SHARE_PKG_RESOURCES` until v6.9 renamed it
    /// `SHARE_LLC` (commit 54de44274703).
    pub llc_flag_name: &'static str,
    /// Every domain carries SD_LOAD_BALANCE (before v5.8).
    pub load_balance_flag: bool,
    /// Degenerate domains are found with the SDF_NEEDS_GROUPS metadata
    /// (v5.10+); before, with hand-written flag lists under which a NUMA
    /// level with one group but NUMA-only flags survives.
    pub degenerate_by_metadata: bool,
    /// `build_overlap_sched_groups()` builds a remote group from the
    /// sibling's descendant whose child fits in the domain
    /// (`find_descended_sibling()`, commit 585b6d2723dc, v5.13); before,
    /// the sibling's child is taken whole, even where it spans out of the
    /// domain.
    pub descended_sibling: bool,
    /// Groups carry their child domain's flags (`sg->flags`, commit
    /// 16d364ba6ef2, v5.16); 0 before.
    pub group_flags: bool,
    /// What `cpu_attach_domain()` does to the grandparent's first group
    /// when it removes a degenerate parent.
    pub degenerate_group_flags: GroupFlagSync,
    /// The `imb_numa_nr` rule.
    pub imb_numa_nr: ImbNumaNr,
    /// The architecture's level table.
    pub arch: Arch,
}

impl Default for DomainOptions {
    /// The newest modelled kernel ([`LATEST_VERSION`]) on a generic
    /// architecture.
    fn default() -> Self {
        DomainOptions::linux(LATEST_VERSION.0, LATEST_VERSION.1)
    }
}

impl DomainOptions {
    /// The domains of Linux `major.minor` as built by its default
    /// configuration (SCHED_SMT, SCHED_MC, NUMA on; SCHED_CLUSTER on from
    /// 5.16, where it appeared), on [`Arch::Generic`].
    ///
    /// ```
    /// use topology::DomainOptions;
    /// let v6_1 = DomainOptions::linux(6, 1);
    /// assert_eq!((v6_1.pkg_name, v6_1.llc_flag_name), ("DIE", "SHARE_PKG_RESOURCES"));
    /// assert_eq!((v6_1.busy_factor, v6_1.imbalance_pct), (16, 117));
    /// assert_eq!(DomainOptions::linux(5, 4).busy_factor, 32);
    /// ```
    pub fn linux(major: u32, minor: u32) -> DomainOptions {
        let ge = |a: u32, b: u32| (major, minor) >= (a, b);
        DomainOptions {
            sched_smt: true,
            cluster_level: ge(5, 16),
            sched_mc: true,
            numa: true,
            cluster_flag: ge(6, 7),
            imbalance_pct: if ge(5, 10) { 117 } else { 125 },
            busy_factor: if ge(5, 10) { 16 } else { 32 },
            pkg_name: if ge(6, 7) { "PKG" } else { "DIE" },
            llc_flag_name: if ge(6, 9) {
                "SHARE_LLC"
            } else {
                "SHARE_PKG_RESOURCES"
            },
            load_balance_flag: !ge(5, 8),
            degenerate_by_metadata: ge(5, 10),
            descended_sibling: ge(5, 13),
            group_flags: ge(5, 16),
            degenerate_group_flags: if ge(6, 6) {
                GroupFlagSync::ChildFlags
            } else if ge(6, 5) {
                GroupFlagSync::ShareCpuCapacity
            } else {
                GroupFlagSync::None
            },
            imb_numa_nr: if ge(6, 0) {
                ImbNumaNr::Eighth
            } else if ge(5, 18) {
                ImbNumaNr::Quarter
            } else {
                ImbNumaNr::None
            },
            arch: Arch::Generic,
        }
    }

    /// Whether build option `o` is on.
    pub fn config(&self, o: ConfigOption) -> bool {
        match o {
            ConfigOption::SchedSmt => self.sched_smt,
            ConfigOption::SchedCluster => self.cluster_level,
            ConfigOption::SchedMc => self.sched_mc,
            ConfigOption::Numa => self.numa,
        }
    }

    /// Turn build option `o` on or off.
    pub fn set_config(&mut self, o: ConfigOption, on: bool) {
        match o {
            ConfigOption::SchedSmt => self.sched_smt = on,
            ConfigOption::SchedCluster => self.cluster_level = on,
            ConfigOption::SchedMc => self.sched_mc = on,
            ConfigOption::Numa => self.numa = on,
        }
    }

    /// The build options as `SCHED_SMT=y SCHED_CLUSTER=y SCHED_MC=y NUMA=y`.
    pub fn config_string(&self) -> String {
        ConfigOption::ALL
            .iter()
            .map(|&o| format!("{o}={}", if self.config(o) { "y" } else { "n" }))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Names of the flags set in `flags` as this kernel prints them
    /// (without the SD_ prefix), in the kernel's order.
    pub fn flag_names(&self, flags: u32) -> Vec<&'static str> {
        sd_flags::NAMES
            .iter()
            .filter(|(b, _)| flags & b != 0)
            .map(|&(b, n)| {
                if b == sd_flags::SHARE_LLC {
                    self.llc_flag_name
                } else {
                    n
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let o = DomainOptions::linux(4, 17);
        assert!(o.load_balance_flag && !o.cluster_level && !o.descended_sibling);
        assert_eq!((o.imbalance_pct, o.busy_factor), (125, 32));
        assert_eq!(o.imb_numa_nr, ImbNumaNr::None);
        assert!(!DomainOptions::linux(5, 8).load_balance_flag);
        assert!(DomainOptions::linux(5, 10).degenerate_by_metadata);
        assert!(!DomainOptions::linux(5, 12).descended_sibling);
        assert!(DomainOptions::linux(5, 13).descended_sibling);
        let o = DomainOptions::linux(5, 16);
        assert!(o.cluster_level && !o.cluster_flag && o.group_flags);
        assert_eq!(DomainOptions::linux(5, 19).imb_numa_nr, ImbNumaNr::Quarter);
        assert_eq!(
            DomainOptions::linux(6, 5).degenerate_group_flags,
            GroupFlagSync::ShareCpuCapacity
        );
        assert_eq!(
            DomainOptions::linux(6, 6).degenerate_group_flags,
            GroupFlagSync::ChildFlags
        );
        let o = DomainOptions::linux(6, 7);
        assert_eq!(
            (o.pkg_name, o.llc_flag_name),
            ("PKG", "SHARE_PKG_RESOURCES")
        );
        assert!(o.cluster_flag);
        assert_eq!(DomainOptions::linux(6, 9).llc_flag_name, "SHARE_LLC");
        assert_eq!(DomainOptions::default(), DomainOptions::linux(7, 0));
    }

    #[test]
    fn config_and_names() {
        let mut o = DomainOptions::linux(6, 1);
        assert_eq!(
            o.config_string(),
            "SCHED_SMT=y SCHED_CLUSTER=y SCHED_MC=y NUMA=y"
        );
        let c = ConfigOption::from_name("CONFIG_SCHED_CLUSTER").unwrap();
        o.set_config(c, false);
        assert!(!o.cluster_level && !o.config(c));
        assert_eq!(ConfigOption::from_name("NUMA"), Some(ConfigOption::Numa));
        assert_eq!(ConfigOption::from_name("SCHED_FOO"), None);
        assert_eq!(ConfigOption::parse_value("y"), Some(true));
        assert_eq!(ConfigOption::parse_value("m"), None);
        assert_eq!(
            o.flag_names(sd_flags::SHARE_LLC | sd_flags::PREFER_SIBLING),
            ["SHARE_PKG_RESOURCES", "PREFER_SIBLING"]
        );
        assert_eq!(Arch::from_name("x86_64"), Some(Arch::X86));
    }
}
