//! Group statistics of a balance pass: `update_sg_lb_stats`,
//! `group_classify`, `update_sd_pick_busiest` and `update_sd_lb_stats`
//! (kernel/sched/fair.c; 5.5+ form, with the 5.7 runnable terms and the 6.6
//! SMT rules behind toggles, and the pre-5.5 form for the legacy algorithm).

use super::{LbAlgorithm, LinuxBalancer};
use crate::balance::{BalanceEnv, IdleType};
use topology::{sd_flags, CpuMask};

/// `enum group_type`, lowest priority first (5.5+; smt_balance 6.6). The
/// legacy algorithm uses HasSpare for its `group_other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(super) enum GroupType {
    #[default]
    HasSpare,
    FullyBusy,
    SmtBalance,
    Imbalanced,
    Overloaded,
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) enum MigrationType {
    #[default]
    Load,
    Util,
    Task,
}

/// `struct sg_lb_stats`.
#[derive(Clone, Debug, Default)]
pub(super) struct SgStats {
    pub avg_load: u64,
    pub group_load: u64,
    pub group_util: u64,
    pub group_runnable: u64,
    pub group_capacity: u64,
    pub sum_nr_running: u32,
    pub sum_h_nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_type: GroupType,
    /// Cores of the group (sg->cores, 6.6).
    pub cores: u32,
    /// The group is an SMT core (its flags have SD_SHARE_CPUCAPACITY).
    pub smt_group: bool,
    /// Some CPU had more than one task.
    pub overloaded: bool,
    /// Legacy: load per task.
    pub load_per_task: u64,
    /// Legacy: group_no_capacity (is_overloaded).
    pub no_capacity: bool,
    /// Legacy: group_has_capacity.
    pub has_capacity: bool,
}

/// `struct sd_lb_stats`: the local group, the busiest one and totals.
#[derive(Clone, Debug, Default)]
pub(super) struct SdStats {
    pub local: SgStats,
    pub busiest: Option<(usize, SgStats)>,
    pub total_load: u64,
    pub total_capacity: u64,
    pub avg_load: u64,
    pub prefer_sibling: bool,
}

/// The environment of one `sched_balance_rq` pass (`struct lb_env`).
#[derive(Clone, Debug)]
pub(super) struct Lb {
    /// The CPU pulling (may change through LBF_DST_PINNED).
    pub dst: usize,
    /// The CPU whose domains are walked (the original dst).
    pub owner: usize,
    /// Domain level index in `owner`'s hierarchy.
    pub level: usize,
    pub idle: IdleType,
    /// CPUs still eligible as source or destination.
    pub cpus: CpuMask,
    pub imbalance: i64,
    pub mtype: MigrationType,
    pub all_pinned: bool,
    pub some_pinned: bool,
    pub dst_pinned: bool,
    pub active_lb: bool,
    pub new_dst_cpu: usize,
    pub loop_: u32,
    pub loop_max: u32,
    pub src: usize,
    /// Legacy sd_idle (<= 2.6.38): no CPU of the domain runs anything.
    pub sd_idle: bool,
}

/// SCHED_CAPACITY_SCALE.
const SCALE: u64 = 1024;

/// The SIS_UTIL formula of `update_idle_cpu_scan()` (70fb5ccf2ebb, 6.0):
/// with x the average per-CPU utilisation of an LLC of `llc_weight` CPUs,
/// scan `llc_weight * (1024 - min(1024, x^2 pct^2 / (10000*1024))) / 1024`
/// CPUs, in integer arithmetic as the kernel does.
pub fn sis_util_nr_scan(sum_util: u64, llc_weight: u64, pct: u64) -> u32 {
    let w = llc_weight.max(1);
    let x = sum_util / w;
    let tmp = (x * x * pct * pct / (10000 * SCALE)).min(SCALE);
    let y = SCALE - tmp;
    (y * w / SCALE) as u32
}

impl LinuxBalancer {
    /// The domain of a pass.
    pub(super) fn sd<'e>(&self, env: &BalanceEnv<'e>, lb: &Lb) -> &'e topology::SchedDomain {
        &env.sd.domains(lb.owner)[lb.level]
    }

    /// cpu_load() of the chosen algorithm: PELT load_avg (5.5+, with
    /// blocked load) or the runnable load of the queued tasks (before).
    pub(super) fn cpu_load(&mut self, env: &mut BalanceEnv, cpu: usize) -> u64 {
        match self.f.algorithm {
            LbAlgorithm::Modern => env.cpus[cpu].load_avg,
            LbAlgorithm::Legacy => {
                self.task_buf.clear();
                env.rqs.cfs_tasks(cpu, &mut self.task_buf);
                self.task_buf
                    .iter()
                    .map(|&t| env.tasks[t as usize].load_avg)
                    .sum()
            }
        }
    }

    /// update_sg_lb_stats for group `g` of the pass's domain.
    fn update_sg_lb_stats(&mut self, env: &mut BalanceEnv, lb: &mut Lb, g: usize) -> SgStats {
        let sd = self.sd(env, lb);
        let group = &sd.groups[g];
        let local = g == 0;
        let pct = sd.imbalance_pct as u64;
        let mut s = SgStats {
            smt_group: self.child_flags(env, lb) & sd_flags::SHARE_CPUCAPACITY != 0
                && group.span.weight() > 1,
            cores: group.cores as u32,
            ..Default::default()
        };
        for &i in group.cpus.iter() {
            let i = i as usize;
            s.group_capacity += env.cpus[i].capacity;
            s.group_weight += 1;
            if !lb.cpus.test(i) {
                continue;
            }
            let (nr, util, runnable, idle) = {
                let r = env.read_rq(i);
                (
                    r.nr_running,
                    r.util_avg.min(r.capacity),
                    r.runnable_avg,
                    r.curr_is_idle && r.nr_running == 0 && !r.ttwu_pending,
                )
            };
            s.group_load += self.cpu_load(env, i);
            s.group_util += util;
            s.group_runnable += runnable;
            s.sum_h_nr_running += nr;
            s.sum_nr_running += nr;
            if nr > 1 {
                s.overloaded = true;
            }
            if nr == 0 && idle {
                s.idle_cpus += 1;
            }
            // legacy sd_idle: any CPU running something makes the domain busy
            if nr > 0 || !idle {
                lb.sd_idle = false;
            }
        }
        if self.f.algorithm == LbAlgorithm::Legacy {
            s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
            s.load_per_task = if s.sum_h_nr_running > 0 {
                s.group_load / s.sum_h_nr_running as u64
            } else {
                0
            };
            s.no_capacity =
                s.sum_h_nr_running > s.group_weight && s.group_capacity * 100 < s.group_util * pct;
            s.has_capacity =
                s.sum_h_nr_running < s.group_weight || s.group_capacity * 100 > s.group_util * pct;
            s.group_type = if s.no_capacity {
                GroupType::Overloaded
            } else if self.group_imbalanced(lb, g, env) {
                GroupType::Imbalanced
            } else {
                GroupType::HasSpare
            };
            return s;
        }
        // group_smt_balance (6.6): a non-local SMT group with more than one
        // task, seen by an idle CPU
        let smt_balance = self.f.smt_aware_lb
            && !local
            && lb.idle.is_idle()
            && s.smt_group
            && s.sum_h_nr_running > 1;
        s.group_type = self.group_classify(pct, &s, smt_balance, self.group_imbalanced(lb, g, env));
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
        }
        s
    }

    /// The flags of the pass's child domain (0 at the lowest level): what a
    /// group of this domain is made of.
    fn child_flags(&self, env: &BalanceEnv, lb: &Lb) -> u32 {
        if lb.level == 0 {
            0
        } else {
            env.sd.domains(lb.owner)[lb.level - 1].flags
        }
    }

    /// sgc->imbalance of group `g` of the pass's domain.
    fn group_imbalanced(&self, lb: &Lb, g: usize, env: &BalanceEnv) -> bool {
        if self.group_imbalance.is_empty() {
            // no pass has set one (no task's affinity stopped a child
            // level): the common case, without finding the group's CPU
            return false;
        }
        let sd = self.sd(env, lb);
        let first = sd.groups[g].span.first().unwrap_or(0);
        self.group_imbalance
            .get(lb.level * env.cpus.len() + first)
            .copied()
            .unwrap_or(false)
    }

    /// group_is_overloaded (5.5+; runnable term 5.7).
    fn group_is_overloaded(&self, pct: u64, s: &SgStats) -> bool {
        if s.sum_nr_running <= s.group_weight {
            return false;
        }
        if s.group_capacity * 100 < s.group_util * pct {
            return true;
        }
        self.f.classify_runnable && s.group_capacity * pct < s.group_runnable * 100
    }

    /// group_has_capacity (5.5+; runnable term 5.7).
    fn group_has_capacity(&self, pct: u64, s: &SgStats) -> bool {
        if s.sum_nr_running < s.group_weight {
            return true;
        }
        if self.f.classify_runnable && s.group_capacity * pct < s.group_runnable * 100 {
            return false;
        }
        s.group_capacity * 100 > s.group_util * pct
    }

    /// group_classify (5.5+): the first matching type, highest first.
    fn group_classify(
        &self,
        pct: u64,
        s: &SgStats,
        smt_balance: bool,
        imbalanced: bool,
    ) -> GroupType {
        if self.group_is_overloaded(pct, s) {
            GroupType::Overloaded
        } else if imbalanced {
            GroupType::Imbalanced
        } else if smt_balance {
            GroupType::SmtBalance
        } else if !self.group_has_capacity(pct, s) {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        }
    }

    /// update_sd_pick_busiest: is `sg` busier than the current busiest?
    fn update_sd_pick_busiest(&self, sg: &SgStats, busiest: Option<&SgStats>) -> bool {
        if self.f.algorithm == LbAlgorithm::Legacy {
            let (bt, bl) = busiest.map_or((GroupType::HasSpare, 0), |b| (b.group_type, b.avg_load));
            if sg.group_type != bt {
                return sg.group_type > bt;
            }
            return sg.avg_load > bl;
        }
        if sg.sum_h_nr_running == 0 {
            return false;
        }
        let Some(b) = busiest else {
            // the initial busiest_stat: has_spare with idle_cpus = UINT_MAX
            return true;
        };
        if sg.group_type != b.group_type {
            return sg.group_type > b.group_type;
        }
        let smt_vs_nonsmt = self.f.smt_aware_lb && sg.smt_group != b.smt_group;
        let has_spare = |sg: &SgStats, b: &SgStats| {
            if smt_vs_nonsmt {
                // do not pull the lone task off an SMT core (6.6)
                return !(sg.smt_group && sg.sum_h_nr_running <= 1);
            }
            if sg.idle_cpus != b.idle_cpus {
                return sg.idle_cpus < b.idle_cpus;
            }
            sg.sum_nr_running > b.sum_nr_running
        };
        let fully_busy = |sg: &SgStats, b: &SgStats| {
            if self.f.smt_aware_lb {
                // 6.6: equal avg_load keeps an SMT busiest, else takes sg
                if sg.avg_load < b.avg_load {
                    return false;
                }
                !(sg.avg_load == b.avg_load && b.smt_group)
            } else {
                sg.avg_load > b.avg_load
            }
        };
        match sg.group_type {
            GroupType::Overloaded => sg.avg_load > b.avg_load,
            GroupType::Imbalanced => false,
            GroupType::SmtBalance => {
                if sg.idle_cpus != 0 || b.idle_cpus != 0 {
                    has_spare(sg, b)
                } else {
                    fully_busy(sg, b)
                }
            }
            GroupType::FullyBusy => fully_busy(sg, b),
            GroupType::HasSpare => has_spare(sg, b),
        }
    }

    /// update_sd_lb_stats: every group of the pass's domain, local first.
    pub(super) fn update_sd_lb_stats(&mut self, env: &mut BalanceEnv, lb: &mut Lb) -> SdStats {
        let sd = self.sd(env, lb);
        let ngroups = sd.groups.len();
        let pct = sd.imbalance_pct as u64;
        // prefer_sibling: the child domain has SD_PREFER_SIBLING (6.6+ reads
        // the busiest group's flags, a copy of the child's on symmetric
        // machines; groups carry no flags before 5.16)
        let prefer_sibling = self.child_flags(env, lb) & sd_flags::PREFER_SIBLING != 0;
        let mut sds = SdStats {
            prefer_sibling,
            ..Default::default()
        };
        let mut overloaded = false;
        let mut sum_util = 0;
        for g in 0..ngroups {
            let mut s = self.update_sg_lb_stats(env, lb, g);
            sum_util += s.group_util;
            sds.total_load += s.group_load;
            sds.total_capacity += s.group_capacity;
            overloaded |= s.overloaded;
            if g == 0 {
                sds.local = s;
                continue;
            }
            if self.f.algorithm == LbAlgorithm::Legacy
                && prefer_sibling
                && sds.local.has_capacity
                && s.sum_h_nr_running > sds.local.sum_h_nr_running + 1
            {
                // pre-5.5: a sibling with two tasks more than us counts as
                // having no capacity, so it is pulled from
                s.no_capacity = true;
                if s.group_type < GroupType::Overloaded {
                    s.group_type = GroupType::Overloaded;
                }
            }
            if self.update_sd_pick_busiest(&s, sds.busiest.as_ref().map(|b| &b.1)) {
                sds.busiest = Some((g, s));
            }
        }
        // the root domain records whether any CPU is overloaded
        if env.sd.domains(lb.owner).len() == lb.level + 1 && self.overloaded != overloaded {
            env.write_root();
            self.overloaded = overloaded;
        }
        // SIS_UTIL (6.0): the LLC-level periodic pass produces nr_idle_scan
        if self.f.sis_util
            && lb.idle != IdleType::NewlyIdle
            && sd.span_weight == env.sd.sd_llc_size(lb.dst)
        {
            let nr = sis_util_nr_scan(sum_util, sd.span_weight as u64, pct);
            let l = env.sd.llc_index(lb.dst);
            if env.llc[l].nr_idle_scan != nr {
                env.write_llc(lb.dst);
                env.llc[l].nr_idle_scan = nr;
            }
        }
        sds
    }
}

#[cfg(test)]
mod tests {
    use super::sis_util_nr_scan;

    #[test]
    fn update_idle_cpu_scan_matches_patch_table() {
        // 70fb5ccf2ebb: 112-CPU LLC, util% 0/15/35/55/75/85 ->
        // 112/108/92/64/24/0 (the patch computed in reals; integer rounding
        // moves some entries by one).
        let table = [(0, 112), (15, 108), (35, 92), (55, 64), (75, 24), (85, 0)];
        for (pct, want) in table {
            let x = pct * 1024 / 100;
            let nr = sis_util_nr_scan(x * 112, 112, 117);
            assert!((nr as i64 - want).abs() <= 1, "util {pct}%: {nr} vs {want}");
        }
        assert_eq!(sis_util_nr_scan(0, 112, 117), 112);
        assert_eq!(sis_util_nr_scan(870 * 112, 112, 117), 1);
        assert_eq!(sis_util_nr_scan(876 * 112, 112, 117), 0);
        assert_eq!(sis_util_nr_scan(1024 * 112, 112, 117), 0);
        // kunpeng920-node, 24 CPUs at util 512: x = 512, t = 512^2*117^2 /
        // (10000*1024) = 350, y = 674, nr = 674*24/1024 = 15.
        assert_eq!(sis_util_nr_scan(512 * 24, 24, 117), 15);
    }
}
