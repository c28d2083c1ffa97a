//! `cpu_attach_domain()`: remove the domains that add nothing
//! (`sd_degenerate()`, `sd_parent_degenerate()`), pass SD_PREFER_SIBLING
//! down, and keep the groups' flags in step with the children that remain.
//! CPUs are attached in ascending order, as `build_sched_domains()` does;
//! that order matters where CPUs share a group.

use super::build::RawDomain;
use super::groups::{RawLists, SharedFlags};
use super::options::{DomainOptions, GroupFlagSync};
use super::sd_flags::*;

/// What `cpu_attach_domain()` keeps of one CPU's chain: (level table entry,
/// domain flags after the SD_PREFER_SIBLING transfer), bottom-up.
pub(crate) type Kept = Vec<(usize, u32)>;

/// `sd_degenerate()`: a single CPU, or a single group and no flag that
/// works without groups (SD_WAKE_AFFINE).
fn sd_degenerate(d: &RawDomain, flags: u32, nr_groups: usize, opts: &DomainOptions) -> bool {
    if d.span.weight() == 1 {
        return true;
    }
    let needs_groups = if opts.degenerate_by_metadata {
        NEEDS_GROUPS
    } else {
        LEGACY_NEEDS_GROUPS
    };
    if flags & needs_groups != 0 && nr_groups > 1 {
        return false;
    }
    flags & WAKE_AFFINE == 0
}

/// `sd_parent_degenerate()`: the parent is degenerate itself, or spans the
/// child's CPUs with no flag the child lacks (flags that need groups do
/// not count when the parent has one group).
#[allow(clippy::too_many_arguments)]
fn sd_parent_degenerate(
    child: &RawDomain,
    cflags: u32,
    parent: &RawDomain,
    pflags: u32,
    parent_groups: usize,
    opts: &DomainOptions,
    nr_node_ids: usize,
) -> bool {
    if sd_degenerate(parent, pflags, parent_groups, opts) {
        return true;
    }
    if child.span != parent.span {
        return false;
    }
    let mut pflags = pflags;
    if parent_groups == 1 {
        if opts.degenerate_by_metadata {
            pflags &= !NEEDS_GROUPS;
        } else {
            pflags &= !LEGACY_PARENT_IGNORED;
            if nr_node_ids == 1 {
                pflags &= !SERIALIZE;
            }
        }
    }
    !cflags & pflags == 0
}

/// Attach `cpu`'s chain; returns what it keeps. Group flags change in
/// `groups` (private groups) and `shared`. The number of groups of a
/// domain and its first group are all it reads of the lists. Call it for
/// every CPU in ascending order, as `build_sched_domains()` attaches them:
/// a shared group's flags are left by the last CPU to change them.
pub(crate) fn attach_cpu(
    chains: &[Vec<RawDomain>],
    cpu: usize,
    groups: &mut RawLists,
    shared: &mut SharedFlags,
    opts: &DomainOptions,
    nr_node_ids: usize,
) -> Kept {
    let chain = &chains[cpu];
    {
        let mut flags: Vec<u32> = chain.iter().map(|d| d.flags).collect();
        let mut kept: Vec<usize> = (0..chain.len()).collect();
        let mut pos = 0;
        while pos + 1 < kept.len() {
            let (t, p) = (kept[pos], kept[pos + 1]);
            let degenerate = sd_parent_degenerate(
                &chain[t],
                flags[t],
                &chain[p],
                flags[p],
                groups.len(cpu, p),
                opts,
                nr_node_ids,
            );
            if !degenerate {
                pos += 1;
                continue;
            }
            // The grandparent's first group was built from the parent
            // being removed.
            if let Some(&gp) = kept.get(pos + 2) {
                let child = flags[t];
                if let Some(f) = groups.first_flags_mut(shared, cpu, gp) {
                    match opts.degenerate_group_flags {
                        GroupFlagSync::None => {}
                        GroupFlagSync::ShareCpuCapacity => *f |= child & SHARE_CPUCAPACITY,
                        GroupFlagSync::ChildFlags => *f = child,
                    }
                }
            }
            // The spans match, so the parent's SD_PREFER_SIBLING holds for
            // the child.
            flags[t] |= flags[p] & PREFER_SIBLING;
            kept.remove(pos + 1);
        }
        if let Some(&b) = kept.first() {
            if sd_degenerate(&chain[b], flags[b], groups.len(cpu, b), opts) {
                kept.remove(0);
                // The new bottom's groups held the removed child's flags;
                // the kernel clears those of its first group (v5.16+).
                if let Some(&nb) = kept.first() {
                    if opts.group_flags {
                        if let Some(f) = groups.first_flags_mut(shared, cpu, nb) {
                            *f = 0;
                        }
                    }
                }
            }
        }
        kept.into_iter().map(|l| (l, flags[l])).collect()
    }
}
