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

/// Every CPU's group list at every level of its chain, as the index of a
/// ring in `rings` and the position its list starts at: `lists[cpu][k] =
/// (ring, start)`. CPUs sharing a non-overlapping domain share its ring;
/// an overlapping (NUMA) domain's groups are a ring of their own.
#[derive(Default)]
pub(crate) struct RawLists {
    pub rings: Vec<Vec<RawGroup>>,
    pub lists: Vec<Vec<(usize, usize)>>,
    /// `cpu_attach_domain()`'s changes to the flags of the first group of
    /// a private list, by (cpu, level): kept aside so that CPUs can share
    /// one raw list.
    pub first_flags: HashMap<(usize, usize), u32>,
}

impl RawLists {
    /// Room for `chains`: one unset entry per CPU and built level.
    pub fn for_chains(chains: &[Vec<RawDomain>]) -> RawLists {
        RawLists {
            rings: Vec::new(),
            lists: chains
                .iter()
                .map(|c| vec![(usize::MAX, 0); c.len()])
                .collect(),
            first_flags: HashMap::new(),
        }
    }

    /// Give `cpu`'s domain at level `k` a ring of its own.
    pub fn push_private(&mut self, cpu: usize, k: usize, ring: Vec<RawGroup>) {
        self.lists[cpu][k] = (self.rings.len(), 0);
        self.rings.push(ring);
    }

    /// The groups of `cpu`'s domain at level `k`, how many.
    pub fn len(&self, cpu: usize, k: usize) -> usize {
        self.rings[self.lists[cpu][k].0].len()
    }

    /// The flags of the first group of `cpu`'s domain at level `k`
    /// (`sd->groups->flags`): in `shared` for a shared group, else this
    /// CPU's own.
    pub fn first_flags_mut<'a>(
        &'a mut self,
        shared: &'a mut SharedFlags,
        cpu: usize,
        k: usize,
    ) -> Option<&'a mut u32> {
        let (r, start) = self.lists[cpu][k];
        let g = self.rings[r].get(start)?;
        match g.id {
            GroupId::Shared(l, first) => shared.get_mut(&(l, first)),
            GroupId::Private => {
                let flags = g.flags;
                Some(self.first_flags.entry((cpu, k)).or_insert(flags))
            }
        }
    }
}

/// The groups of non-overlapping level `k` for every CPU: per domain span,
/// one ring, the list `build_sched_groups()` builds for the span's last CPU
/// (the kernel relinks the shared groups on each CPU's pass, so the last
/// pass's order is the one left), and each CPU's list starts at its own
/// group. Where the spans of the level, or of the level below, do not
/// partition the CPUs (a topology the kernel calls broken), each CPU of
/// the span keeps the list its own pass builds.
pub(crate) fn build_level_rings(
    chains: &[Vec<RawDomain>],
    k: usize,
    opts: &DomainOptions,
    shared: &mut SharedFlags,
    out: &mut RawLists,
) {
    let n = chains.len();
    let mut done = vec![false; n];
    let mut start_of = vec![0usize; n];
    for cpu in 0..n {
        if done[cpu] || chains[cpu].len() <= k {
            continue;
        }
        let span = &chains[cpu][k].span;
        let mut members = Vec::new();
        let mut sane = true;
        for j in span.iter() {
            if chains[j].len() > k {
                if chains[j][k].span == *span {
                    members.push(j);
                } else {
                    sane = false;
                }
            }
        }
        if sane {
            let last = *members.last().unwrap_or(&cpu);
            let ring = build_sched_groups(chains, last, k, opts, shared);
            for (gi, g) in ring.iter().enumerate() {
                for c in g.span.iter() {
                    start_of[c] = gi;
                }
            }
            // each CPU's own group must be its child span, as its own
            // pass would start with
            let own = |m: usize| {
                let g = &ring[start_of[m]].span;
                g.test(m) && (k == 0 || chains[m][k - 1].span == *g)
            };
            if members.iter().all(|&m| own(m)) {
                for &m in &members {
                    out.lists[m][k] = (out.rings.len(), start_of[m]);
                    done[m] = true;
                }
                out.rings.push(ring);
                continue;
            }
        }
        let ring = build_sched_groups(chains, cpu, k, opts, shared);
        out.push_private(cpu, k, ring);
        done[cpu] = true;
    }
}

/// `sg->cores` (v6.6, "sched/topology: Record number of cores in sched
/// group"): the group's CPUs counted once per SMT core
/// (`init_sched_groups_capacity()` walks the span and drops each CPU's SMT
/// siblings as it counts it; each CPU is a core without CONFIG_SCHED_SMT).
/// The same count, taken as the CPUs of the span with no lower SMT sibling
/// in the span, which costs the span's weight instead of a mask operation
/// per core.
pub(crate) fn group_cores(topo: &Topology, span: &CpuMask, opts: &DomainOptions) -> usize {
    if !opts.sched_smt {
        return span.weight();
    }
    span.iter()
        .filter(|&c| {
            !topo
                .smt_mask(c)
                .iter()
                .take_while(|&s| s < c)
                .any(|s| span.test(s))
        })
        .count()
}
