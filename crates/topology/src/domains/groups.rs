//! Groups of the non-overlapping levels (`build_sched_groups()` and
//! `get_group()` in kernel/sched/topology.c), and what both kinds of
//! group share: identity, flags and core count.

use super::build::RawDomain;
use super::options::DomainOptions;
use crate::cpumask::CpuMask;
use crate::topology::Topology;
use std::collections::HashMap;

/// Which kernel object a group is. A group of a non-overlapping level is
/// one `struct sched_group` shared by every CPU whose domain lists it
/// (`get_group()` takes the group of the child span's first CPU), so a
/// change one CPU makes to it is seen by all; an overlapping (NUMA) group
/// belongs to one CPU's domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum GroupId {
    /// Shared: (level table entry, first CPU of the child span).
    Shared(usize, usize),
    /// Private to the domain.
    Private,
}

/// A group as built.
#[derive(Clone, Debug)]
pub(crate) struct RawGroup {
    pub span: CpuMask,
    /// `sg->flags` when built: the child domain's flags (v5.16+), else 0.
    pub flags: u32,
    /// `group_balance_mask()`.
    pub balance_mask: CpuMask,
    pub id: GroupId,
}

/// The flags of shared groups, which `cpu_attach_domain()` may change.
pub(crate) type SharedFlags = HashMap<(usize, usize), u32>;

/// `sg->flags` of a group built from `child`: its flags from v5.16, when
/// the field appeared.
pub(crate) fn child_flags(child: &RawDomain, opts: &DomainOptions) -> u32 {
    if opts.group_flags {
        child.flags
    } else {
        0
    }
}

/// `build_sched_groups()`: walk the domain's span from `cpu` with
/// wrap-around; every CPU not yet covered brings the group of its child
/// span (`get_group()`), a single CPU at the bottom level. The balance mask
/// of such a group is its span.
pub(crate) fn build_sched_groups(
    chains: &[Vec<RawDomain>],
    cpu: usize,
    k: usize,
    opts: &DomainOptions,
    shared: &mut SharedFlags,
) -> Vec<RawGroup> {
    let span = &chains[cpu][k].span;
    let mut covered = CpuMask::new();
    let mut groups = Vec::new();
    for i in span.iter_wrap(cpu) {
        if covered.test(i) {
            continue;
        }
        // A CPU whose chain stopped below this level has a zeroed domain
        // here: no child, so its group is the CPU itself.
        let child = (k > 0 && chains[i].len() > k).then(|| &chains[i][k - 1]);
        let (g, flags) = match child {
            Some(c) => (c.span.clone(), child_flags(c, opts)),
            None => (CpuMask::from_cpus([i]), 0),
        };
        let first = g.first().unwrap_or(i);
        // The first CPU to build a shared group initialises it.
        let flags = *shared.entry((k, first)).or_insert(flags);
        covered.or_assign(&g);
        groups.push(RawGroup {
            balance_mask: g.clone(),
            span: g,
            flags,
            id: GroupId::Shared(k, first),
        });
    }
    groups
}

/// `sg->cores` (v6.6, "sched/topology: Record number of cores in sched
/// group"): the group's CPUs counted once per SMT core
/// (`init_sched_groups_capacity()`; each CPU is a core without
/// CONFIG_SCHED_SMT).
pub(crate) fn group_cores(topo: &Topology, span: &CpuMask, opts: &DomainOptions) -> usize {
    if !opts.sched_smt {
        return span.weight();
    }
    let mut left = span.clone();
    let mut cores = 0;
    while let Some(c) = left.first() {
        cores += 1;
        left.andnot_assign(topo.smt_mask(c));
        left.clear(c);
    }
    cores
}
