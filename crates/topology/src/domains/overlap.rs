//! Groups of the overlapping (NUMA) levels: `build_overlap_sched_groups()`,
//! `find_descended_sibling()` and `build_balance_mask()` of
//! kernel/sched/topology.c.
//!
//! A NUMA domain spans the nodes within some distance of the CPU's node,
//! so the domains of CPUs on different nodes overlap, and so do the groups
//! built from them: a group is the child domain of some CPU of the span,
//! which covers nodes near *that* CPU. On machines whose NUMA diameter is
//! three hops or more the sibling's child can reach out of the domain;
//! since v5.13 the kernel then walks down the sibling's chain to the first
//! domain whose child fits (the "descended sibling").

use super::build::RawDomain;
use super::groups::{child_flags, GroupId, RawGroup};
use super::options::DomainOptions;
use crate::cpumask::CpuMask;
use std::collections::HashMap;

/// Balance masks already built, by level and group span: within one build
/// the mask depends on nothing else, and on a large machine every CPU of a
/// node asks for the same few.
pub(crate) type BalanceMasks = HashMap<usize, HashMap<CpuMask, CpuMask>>;

/// `find_descended_sibling()` (v5.13, commit 585b6d2723dc): starting at
/// level `k` of CPU `i`'s chain, go down while the child domain is not
/// inside `span`; then on past children equal to their parent (levels
/// `cpu_attach_domain()` will remove). Returns the level reached.
fn find_descended_sibling(chain: &[RawDomain], k: usize, span: &CpuMask) -> usize {
    let mut l = k;
    while l > 0 && !chain[l - 1].span.is_subset(span) {
        l -= 1;
    }
    while l > 0 && chain[l - 1].span == chain[l].span {
        l -= 1;
    }
    l
}

/// `build_balance_mask()`: the CPUs of group span `sg` that reach this
/// group from below, i.e. whose own domain at `level` has a child spanning
/// exactly `sg`. They are the CPUs for which the group is the local one,
/// and only they go on balancing the level (`should_we_balance()`).
fn build_balance_mask(chains: &[Vec<RawDomain>], level: usize, sg: &CpuMask) -> CpuMask {
    let mut mask = CpuMask::new();
    if level == 0 {
        return mask;
    }
    for j in sg.iter() {
        // A CPU whose chain stopped below `level` has no domain (hence no
        // child) there.
        if chains[j].len() > level && chains[j][level - 1].span == *sg {
            mask.set(j);
        }
    }
    mask
}

/// `build_overlap_sched_groups()` for the domain of `cpu` at level `k`.
pub(crate) fn build_overlap_sched_groups(
    chains: &[Vec<RawDomain>],
    cpu: usize,
    k: usize,
    opts: &DomainOptions,
    masks: &mut BalanceMasks,
) -> Vec<RawGroup> {
    let span = &chains[cpu][k].span;
    let mut covered = CpuMask::new();
    let mut groups = Vec::new();
    for i in span.iter_wrap(cpu) {
        if covered.test(i) {
            continue;
        }
        // The sibling's domain at this level is empty when its chain
        // stopped below (asymmetric NUMA): skip it.
        let chain = &chains[i];
        if chain.len() <= k || !chain[k].span.test(i) {
            continue;
        }
        let mut level = k;
        if opts.descended_sibling && k > 0 && !chain[k - 1].span.is_subset(span) {
            level = find_descended_sibling(chain, k, span);
        }
        // build_group_from_child_sched_domain(): the sibling's child span
        // (before v5.13 even where it reaches out of `span`), or the
        // sibling's own span at the bottom level.
        let (g, flags) = if level > 0 {
            let child = &chain[level - 1];
            (child.span.clone(), child_flags(child, opts))
        } else {
            (chain[level].span.clone(), 0)
        };
        covered.or_assign(&g);
        // init_overlap_sched_group() builds the mask at the sibling's level.
        let at_level = masks.entry(level).or_default();
        let balance_mask = match at_level.get(&g) {
            Some(m) => m.clone(),
            None => {
                let m = build_balance_mask(chains, level, &g);
                at_level.insert(g.clone(), m.clone());
                m
            }
        };
        groups.push(RawGroup {
            span: g,
            flags,
            balance_mask,
            id: GroupId::Private,
        });
    }
    groups
}
