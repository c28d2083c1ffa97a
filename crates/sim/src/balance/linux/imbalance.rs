//! The decision of the 5.5+ balancer (0b0695f2b34a and its series):
//! `find_busiest_group` (`sched_balance_find_src_group` since 6.10) and
//! `calculate_imbalance`, with `sibling_imbalance` (6.6) and the NUMA
//! allowance (`adjust_numa_imbalance`, 5.6 / 5.18 / 6.0 forms).

use super::stats::{GroupType, Lb, MigrationType, SdStats, SgStats};
use super::{LinuxBalancer, NumaImbalance};
use crate::balance::{BalanceEnv, IdleType};
use topology::sd_flags;

/// NUMA_IMBALANCE_MIN: a pair of communicating tasks may share a node.
const NUMA_IMBALANCE_MIN: i64 = 2;

impl LinuxBalancer {
    /// find_busiest_group, 5.5+: the busiest group's index and `lb.imbalance`
    /// / `lb.mtype`, or None when the level is balanced.
    pub(super) fn find_busiest_group_modern(
        &mut self,
        env: &mut BalanceEnv,
        lb: &mut Lb,
    ) -> Option<usize> {
        let mut sds = self.update_sd_lb_stats(env, lb);
        let (bidx, busiest) = sds.busiest.clone()?;
        let local = sds.local.clone();
        let pct = self.sd(env, lb).imbalance_pct as u64;
        let force = 'decide: {
            if busiest.group_type == GroupType::Imbalanced {
                break 'decide true;
            }
            if local.group_type > busiest.group_type {
                return None;
            }
            if local.group_type == GroupType::Overloaded {
                if local.avg_load >= busiest.avg_load {
                    return None;
                }
                sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
                if local.avg_load >= sds.avg_load {
                    return None;
                }
                if 100 * busiest.avg_load <= pct * local.avg_load {
                    return None;
                }
            }
            // try to move all excess tasks to a sibling of the busiest
            // group's child domain
            if sds.prefer_sibling && local.group_type == GroupType::HasSpare {
                let more = if self.f.smt_aware_lb {
                    self.sibling_imbalance(lb, &busiest, &local) > 1
                } else {
                    busiest.sum_nr_running > local.sum_nr_running + 1
                };
                if more {
                    break 'decide true;
                }
            }
            if busiest.group_type != GroupType::Overloaded {
                // busy CPUs only fix overload; idle ones also spread
                if lb.idle == IdleType::Busy {
                    return None;
                }
                if busiest.group_type == GroupType::SmtBalance
                    && local.smt_group != busiest.smt_group
                {
                    break 'decide true;
                }
                if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                    return None;
                }
                if busiest.sum_h_nr_running == 1 {
                    return None;
                }
            }
            true
        };
        debug_assert!(force);
        self.calculate_imbalance(env, lb, &mut sds, &local, &busiest);
        (lb.imbalance > 0).then_some(bidx)
    }

    /// sibling_imbalance (6.6): tasks to move between groups of different
    /// core counts so that tasks per core even out; twice the tasks to
    /// move (halved by the caller).
    pub(super) fn sibling_imbalance(&self, lb: &Lb, busiest: &SgStats, local: &SgStats) -> i64 {
        if lb.idle == IdleType::Busy || busiest.sum_nr_running == 0 {
            return 0;
        }
        let (cb, cl) = (busiest.cores as i64, local.cores as i64);
        let (nb, nl) = (busiest.sum_nr_running as i64, local.sum_nr_running as i64);
        if cb == cl {
            return (nb - nl).max(0);
        }
        let mut imb = (cl * nb - cb * nl).max(0);
        imb = (2 * imb + cl + cb) / (cl + cb);
        if imb <= 1 && nl == 0 && nb > 1 {
            imb = 2;
        }
        imb
    }

    /// adjust_numa_imbalance: the NUMA allowance of the profile.
    fn adjust_numa_imbalance(
        &self,
        imb: i64,
        local: &SgStats,
        busiest: &SgStats,
        imb_numa_nr: u32,
    ) -> i64 {
        let small = imb <= NUMA_IMBALANCE_MIN;
        let allow = match self.f.numa_imbalance {
            NumaImbalance::None => return imb,
            // a pair of tasks may stay on the busiest node
            NumaImbalance::Pair => {
                return if busiest.sum_nr_running as i64 <= NUMA_IMBALANCE_MIN {
                    0
                } else {
                    imb
                }
            }
            NumaImbalance::QuarterBusiest => busiest.sum_nr_running < busiest.group_weight / 4,
            NumaImbalance::QuarterLocal => local.sum_nr_running + 1 < local.group_weight / 4,
            // the destination runs local + 1 tasks after the move
            NumaImbalance::ImbNumaNr => local.sum_nr_running < imb_numa_nr,
        };
        if allow && small {
            0
        } else {
            imb
        }
    }

    /// calculate_imbalance, 5.5+: how much to move and in which unit.
    fn calculate_imbalance(
        &self,
        env: &BalanceEnv,
        lb: &mut Lb,
        sds: &mut SdStats,
        local: &SgStats,
        busiest: &SgStats,
    ) {
        let sd = self.sd(env, lb);
        match busiest.group_type {
            GroupType::SmtBalance | GroupType::Imbalanced => {
                lb.mtype = MigrationType::Task;
                lb.imbalance = 1;
                return;
            }
            _ => {}
        }
        if local.group_type == GroupType::HasSpare {
            let in_llc = sd.flags & sd_flags::SHARE_LLC != 0;
            if busiest.group_type > GroupType::FullyBusy
                && !(self.f.llc_no_util_migration && in_llc)
            {
                // fill the local group's spare capacity
                lb.mtype = MigrationType::Util;
                lb.imbalance =
                    local.group_capacity.max(local.group_util) as i64 - local.group_util as i64;
                if lb.idle.is_idle() && lb.imbalance == 0 {
                    lb.mtype = MigrationType::Task;
                    lb.imbalance = 1;
                }
                return;
            }
            lb.mtype = MigrationType::Task;
            lb.imbalance = if busiest.group_weight == 1 || sds.prefer_sibling {
                if self.f.smt_aware_lb {
                    self.sibling_imbalance(lb, busiest, local)
                } else {
                    (busiest.sum_nr_running as i64 - local.sum_nr_running as i64).max(0)
                }
            } else {
                (local.idle_cpus as i64 - busiest.idle_cpus as i64).max(0)
            };
            // the number of tasks to move is half the difference; before
            // 6.0 the NUMA allowance looked at the halved value
            if self.f.numa_halve_first {
                lb.imbalance >>= 1;
            }
            if sd.flags & sd_flags::NUMA != 0 {
                lb.imbalance =
                    self.adjust_numa_imbalance(lb.imbalance, local, busiest, sd.imb_numa_nr);
            }
            if !self.f.numa_halve_first {
                lb.imbalance >>= 1;
            }
            return;
        }
        let mut local_avg = local.avg_load;
        if local.group_type < GroupType::Overloaded {
            // local will become overloaded: compare average loads
            local_avg = local.group_load * 1024 / local.group_capacity.max(1);
            if local_avg >= busiest.avg_load {
                lb.imbalance = 0;
                return;
            }
            sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
            if self.f.local_sd_avg_test && local_avg >= sds.avg_load {
                lb.imbalance = 0;
                return;
            }
        }
        if sds.avg_load == 0 {
            sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
        }
        lb.mtype = MigrationType::Load;
        let pull = (busiest.avg_load as i64 - sds.avg_load as i64) * busiest.group_capacity as i64;
        let push = if local_avg > sds.avg_load && !self.f.local_sd_avg_test {
            // before the overflow fix the unsigned difference wrapped to a
            // huge value, so only the pull side counted
            i64::MAX
        } else {
            (sds.avg_load as i64 - local_avg as i64) * local.group_capacity as i64
        };
        lb.imbalance = pull.min(push).max(0) / 1024;
    }
}
