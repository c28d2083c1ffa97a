//! The fork/exec slow path: `find_idlest_cpu()`, `find_idlest_group()`,
//! `find_idlest_group_cpu()` (kernel/sched/fair.c, the latest tree; called
//! sched_balance_find_dst_* since ~6.10). The group logic follows the 5.5
//! rework (57abff067a08) as in the latest tree; kernels before 5.5 compared
//! runnable/avg load with a different rule, which is not modelled.
//!
//! Group statistics are taken "without p". The slow path is only entered
//! for WF_FORK here (no level carries SD_BALANCE_WAKE, and the engine does
//! not model exec), and a new task is on no run queue, so nothing is
//! subtracted.

use super::LinuxPlacement;
use crate::placement::WakeEnv;
use topology::{sd_flags, CpuMask, SchedDomain, SchedDomains, SchedGroup};

/// `enum group_type`, in the kernel's order (lower is less busy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    HasSpare,
    FullyBusy,
    #[allow(dead_code)]
    MisfitTask,
    #[allow(dead_code)]
    SmtBalance,
    #[allow(dead_code)]
    AsymPacking,
    #[allow(dead_code)]
    Imbalanced,
    Overloaded,
}

/// `struct sg_lb_stats` as filled by update_sg_wakeup_stats.
#[derive(Clone, Copy, Debug)]
pub(super) struct SgStats {
    pub avg_load: u64,
    pub group_load: u64,
    pub group_util: u64,
    pub group_runnable: u64,
    pub group_capacity: u64,
    pub sum_nr_running: u64,
    pub idle_cpus: u64,
    pub group_weight: u64,
    pub group_type: GroupType,
}

/// `group_is_overloaded()`.
fn group_is_overloaded(pct: u64, s: &SgStats) -> bool {
    if s.sum_nr_running <= s.group_weight {
        return false;
    }
    s.group_capacity * 100 < s.group_util * pct || s.group_capacity * pct < s.group_runnable * 100
}

/// `group_has_capacity()`.
fn group_has_capacity(pct: u64, s: &SgStats) -> bool {
    if s.sum_nr_running < s.group_weight {
        return true;
    }
    if s.group_capacity * pct < s.group_runnable * 100 {
        return false;
    }
    s.group_capacity * 100 > s.group_util * pct
}

/// `group_classify()` for the wake-up statistics (no imbalanced, asym,
/// SMT-balance or misfit groups on symmetric machines in this path).
fn group_classify(pct: u64, s: &SgStats) -> GroupType {
    if group_is_overloaded(pct, s) {
        GroupType::Overloaded
    } else if !group_has_capacity(pct, s) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `update_pick_idlest()`: whether `sgs` beats the current idlest.
fn update_pick_idlest(idlest: &SgStats, sgs: &SgStats) -> bool {
    if sgs.group_type < idlest.group_type {
        return true;
    }
    if sgs.group_type > idlest.group_type {
        return false;
    }
    match sgs.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => idlest.avg_load > sgs.avg_load,
        GroupType::HasSpare => {
            if idlest.idle_cpus > sgs.idle_cpus {
                return false;
            }
            !(idlest.idle_cpus == sgs.idle_cpus && idlest.group_util <= sgs.group_util)
        }
        _ => false,
    }
}

impl LinuxPlacement {
    /// `find_idlest_cpu(sd, p, cpu, prev, sd_flag)`: starting from
    /// `domains(cpu)[level]`, descend: pick the idlest group, the idlest CPU
    /// in it, then continue from that CPU's highest domain below the current
    /// weight that carries `sd_flag`.
    pub(super) fn find_idlest_cpu(
        &self,
        env: &mut WakeEnv,
        cpu: usize,
        level: usize,
        p: u32,
        prev: usize,
        sd_flag: u32,
    ) -> usize {
        let sd: &SchedDomains = env.sd;
        if !sd.domains(cpu)[level]
            .span
            .intersects(&env.tasks[p as usize].cpus_allowed)
        {
            return prev;
        }
        let mut cpu = cpu;
        let mut new_cpu = cpu;
        let mut lvl = Some(level);
        while let Some(l) = lvl {
            let d = &sd.domains(cpu)[l];
            let child = l.checked_sub(1);
            if d.flags & sd_flag == 0 {
                lvl = child;
                continue;
            }
            let Some(g) = self.find_idlest_group(env, d, cpu, l, p) else {
                lvl = child;
                continue;
            };
            new_cpu = self.find_idlest_group_cpu(env, &g.span, p, cpu);
            if new_cpu == cpu {
                lvl = child;
                continue;
            }
            cpu = new_cpu;
            let weight = d.span_weight;
            lvl = None;
            for (i, tmp) in sd.domains(cpu).iter().enumerate() {
                if weight <= tmp.span_weight {
                    break;
                }
                if tmp.flags & sd_flag != 0 {
                    lvl = Some(i);
                }
            }
        }
        new_cpu
    }

    /// `update_sg_wakeup_stats()`: one probe per CPU of the group.
    pub(super) fn update_sg_wakeup_stats(
        &self,
        env: &mut WakeEnv,
        d: &SchedDomain,
        span: &CpuMask,
    ) -> SgStats {
        let mut s = SgStats {
            avg_load: 0,
            group_load: 0,
            group_util: 0,
            group_runnable: 0,
            group_capacity: 0,
            sum_nr_running: 0,
            idle_cpus: 0,
            group_weight: span.weight() as u64,
            group_type: GroupType::HasSpare,
        };
        for i in span.iter() {
            let idle = env.idle_cpu(i);
            // The same run-queue line the probe just pulled in.
            let rq = &env.cpus[i];
            let cap = if rq.capacity > 0 { rq.capacity } else { 1024 };
            s.group_load += rq.load_avg;
            s.group_util += rq.util_avg.min(cap);
            s.group_runnable += rq.runnable_avg;
            s.group_capacity += cap;
            s.sum_nr_running += rq.nr_running as u64;
            if rq.nr_running == 0 && idle {
                s.idle_cpus += 1;
            }
        }
        let pct = d.imbalance_pct as u64;
        s.group_type = group_classify(pct, &s);
        if matches!(s.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
        }
        s
    }

    /// `find_idlest_group(sd, p, this_cpu)` (5.5+ form): the least busy
    /// non-local group allowed for p, or None to stay in the local group.
    pub(super) fn find_idlest_group<'s>(
        &self,
        env: &mut WakeEnv,
        d: &'s SchedDomain,
        this_cpu: usize,
        level: usize,
        p: u32,
    ) -> Option<&'s SchedGroup> {
        let allowed = env.tasks[p as usize].cpus_allowed.clone();
        let mut idlest: Option<&SchedGroup> = None;
        // Initial idlest_sgs: overloaded with an infinite load.
        let mut idlest_sgs = SgStats {
            avg_load: u64::MAX,
            group_load: 0,
            group_util: 0,
            group_runnable: 0,
            group_capacity: 0,
            sum_nr_running: 0,
            idle_cpus: 0,
            group_weight: 0,
            group_type: GroupType::Overloaded,
        };
        let mut local: Option<(&SchedGroup, SgStats)> = None;
        for g in &d.groups {
            if !g.span.intersects(&allowed) {
                continue;
            }
            let is_local = g.span.test(this_cpu);
            let sgs = self.update_sg_wakeup_stats(env, d, &g.span);
            if is_local {
                local = Some((g, sgs));
            } else if update_pick_idlest(&idlest_sgs, &sgs) {
                idlest = Some(g);
                idlest_sgs = sgs;
            }
        }
        let idlest = idlest?;
        let Some((local_g, local_sgs)) = local else {
            return Some(idlest);
        };
        if local_sgs.group_type < idlest_sgs.group_type {
            return None;
        }
        if local_sgs.group_type > idlest_sgs.group_type {
            return Some(idlest);
        }
        let pct = d.imbalance_pct as u64;
        let numa = d.flags & sd_flags::NUMA != 0;
        match local_sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = 1024 * (pct - 100) / 100;
                if numa && idlest_sgs.avg_load + imbalance >= local_sgs.avg_load {
                    return None;
                }
                if idlest_sgs.avg_load >= local_sgs.avg_load + imbalance {
                    return None;
                }
                if 100 * local_sgs.avg_load <= pct * idlest_sgs.avg_load {
                    return None;
                }
            }
            GroupType::HasSpare => {
                if numa {
                    // No NUMA-balancing preferred node is modelled.
                    let nr = env.sd.domains(this_cpu)[level].imb_numa_nr as u64;
                    let local_allowed = local_g.span.and(&allowed).weight() as u64;
                    let imb_numa = nr.min(local_allowed);
                    let imbalance = local_sgs.idle_cpus.abs_diff(idlest_sgs.idle_cpus);
                    // adjust_numa_imbalance(): allowed while the destination
                    // stays at or below imb_numa_nr running tasks, for an
                    // imbalance of at most NUMA_IMBALANCE_MIN (2).
                    let dst_running = local_sgs.sum_nr_running + 1;
                    let adjusted = if dst_running <= imb_numa && imbalance <= 2 {
                        0
                    } else {
                        imbalance
                    };
                    if adjusted == 0 {
                        return None;
                    }
                }
                if local_sgs.idle_cpus >= idlest_sgs.idle_cpus {
                    return None;
                }
            }
            _ => return None,
        }
        Some(idlest)
    }

    /// `find_idlest_group_cpu(group, p, this_cpu)`: a sched-idle CPU at
    /// once; else the idle CPU in the shallowest idle state (smallest exit
    /// latency; ties: the most recent idle_stamp); else the least loaded
    /// CPU (default this_cpu).
    pub(super) fn find_idlest_group_cpu(
        &self,
        env: &mut WakeEnv,
        span: &CpuMask,
        p: u32,
        this_cpu: usize,
    ) -> usize {
        if span.weight() == 1 {
            return span.first().unwrap_or(this_cpu);
        }
        let allowed = env.tasks[p as usize].cpus_allowed.clone();
        let mut min_load = u64::MAX;
        let mut least_loaded = this_cpu;
        let mut shallowest: Option<usize> = None;
        let mut min_exit = u64::MAX;
        let mut latest_stamp = 0u64;
        for i in span.iter() {
            if !allowed.test(i) {
                continue;
            }
            let avail = env.available_idle_cpu(i);
            if !avail && self.sched_idle_ok(env, i, p) {
                return i;
            }
            // The same run-queue line the probe just pulled in.
            let rq = &env.cpus[i];
            if avail {
                let exit = rq.idle_exit_latency;
                if exit < min_exit {
                    min_exit = exit;
                    latest_stamp = rq.idle_stamp;
                    shallowest = Some(i);
                } else if exit == min_exit && rq.idle_stamp > latest_stamp {
                    latest_stamp = rq.idle_stamp;
                    shallowest = Some(i);
                }
            } else if shallowest.is_none() && rq.load_avg < min_load {
                min_load = rq.load_avg;
                least_loaded = i;
            }
        }
        shallowest.unwrap_or(least_loaded)
    }
}
