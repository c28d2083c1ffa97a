//! Every CPU's domain chain as `build_sched_domains()` builds it before
//! any domain is removed: `sd_init()` per level, the "arch topology
//! borken" fix-up of `build_sched_domain()`, the stop at the first level
//! that spans every CPU, and `imb_numa_nr`.

use super::levels::TopoLevel;
use super::options::{DomainOptions, ImbNumaNr};
use super::sd_flags::*;
use crate::cpumask::CpuMask;

/// The kernel's `node_reclaim_distance` default (`RECLAIM_DISTANCE`):
/// NUMA levels farther than this lose exec/fork balancing and wake-affine.
pub const NODE_RECLAIM_DISTANCE: u32 = 30;

/// One CPU's domain at one level, as built (`struct sched_domain` before
/// `cpu_attach_domain()`).
#[derive(Clone, Debug)]
pub(crate) struct RawDomain {
    pub span: CpuMask,
    /// `cpumask_weight(tl->mask(cpu))`, what `sd_init()` derives the
    /// intervals from.
    pub tl_weight: usize,
    pub flags: u32,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    pub imb_numa_nr: u32,
}

/// `sd_init()`: the behaviour flags and parameters of a level, from its
/// topology flags.
fn sd_init(tl: &TopoLevel, cpu: usize, cpus: &CpuMask, opts: &DomainOptions) -> RawDomain {
    let mut flags = BALANCE_NEWIDLE
        | BALANCE_EXEC
        | BALANCE_FORK
        | WAKE_AFFINE
        | PREFER_SIBLING
        | tl.topo_flags;
    if opts.load_balance_flag {
        flags |= LOAD_BALANCE;
    }
    let mut imbalance_pct = opts.imbalance_pct;
    let mut cache_nice_tries = 0;
    if flags & SHARE_CPUCAPACITY != 0 {
        imbalance_pct = 110;
    } else if flags & SHARE_LLC != 0 {
        // 117 both before and after the default changed (v5.10).
        imbalance_pct = 117;
        cache_nice_tries = 1;
    } else if flags & NUMA != 0 {
        cache_nice_tries = 2;
        flags &= !PREFER_SIBLING;
        flags |= SERIALIZE;
        if tl.numa_distance.is_some_and(|d| d > NODE_RECLAIM_DISTANCE) {
            flags &= !(BALANCE_EXEC | BALANCE_FORK | WAKE_AFFINE);
        }
    } else {
        cache_nice_tries = 1;
    }
    // build_sched_domains() adds SD_OVERLAP for SDTL_OVERLAP levels.
    if tl.overlap {
        flags |= OVERLAP;
    }
    RawDomain {
        span: tl.masks[cpu].and(cpus),
        tl_weight: tl.masks[cpu].weight(),
        flags,
        imbalance_pct,
        cache_nice_tries,
        imb_numa_nr: 0,
    }
}

/// Every CPU's raw chain, bottom-up: `chain[cpu][k]` is the domain of
/// level table entry `k`. A chain ends at the first domain that spans
/// every CPU of `cpus`, so chains can differ in length on asymmetric NUMA
/// machines (build_sched_domains()).
pub(crate) fn raw_chains(
    tl: &[TopoLevel],
    cpus: &CpuMask,
    opts: &DomainOptions,
) -> Vec<Vec<RawDomain>> {
    let n = tl.first().map_or(0, |l| l.masks.len());
    let mut chains = Vec::with_capacity(n);
    for cpu in 0..n {
        let mut chain: Vec<RawDomain> = Vec::with_capacity(tl.len());
        if !cpus.test(cpu) {
            chains.push(chain);
            continue;
        }
        for level in tl {
            let mut sd = sd_init(level, cpu, cpus, opts);
            // build_sched_domain(): a child not inside its parent ("BUG:
            // arch topology borken") widens the parent.
            if let Some(child) = chain.last() {
                if !child.span.is_subset(&sd.span) {
                    sd.span.or_assign(&child.span);
                }
            }
            let full = sd.span == *cpus;
            chain.push(sd);
            if full {
                break;
            }
        }
        set_imb_numa_nr(&mut chain, opts);
        chains.push(chain);
    }
    chains
}

/// `imb_numa_nr`, set by build_sched_domains() on the chain as built (5.18+):
/// on the first level above the LLC, the number of LLCs it spans (a
/// fraction of its span when that is one LLC); above, that times the span
/// over the span of the first NUMA level.
fn set_imb_numa_nr(chain: &mut [RawDomain], opts: &DomainOptions) {
    if opts.imb_numa_nr == ImbNumaNr::None {
        return;
    }
    let (mut imb, mut imb_span) = (0usize, 1usize);
    for l in 0..chain.len() {
        let w = chain[l].span.weight();
        let child_llc = l > 0 && chain[l - 1].flags & SHARE_LLC != 0;
        if chain[l].flags & SHARE_LLC == 0 && child_llc {
            let nr_llcs = w / chain[l - 1].span.weight().max(1);
            imb = if nr_llcs > 1 {
                nr_llcs
            } else if opts.imb_numa_nr == ImbNumaNr::Quarter {
                w >> 2
            } else {
                (w >> 3).max(1)
            };
            imb_span = chain[l + 1..]
                .iter()
                .find(|t| t.flags & NUMA != 0)
                .map_or(w, |t| t.span.weight());
            chain[l].imb_numa_nr = imb as u32;
        } else {
            chain[l].imb_numa_nr = (imb * (w / imb_span.max(1)).max(1)) as u32;
        }
    }
}
