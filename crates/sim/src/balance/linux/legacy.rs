//! The balancer's decision before the 5.5 rework (as in 4.19 and 5.4
//! kernel/sched/fair.c): `find_busiest_group` comparing average loads,
//! `calculate_imbalance` in load units and `fix_small_imbalance`, which
//! moves one task's worth of load when the difference is small.
//!
//! The per-level cpu_load[] smoothing of kernels up to 5.2 (load_idx,
//! LB_BIAS) is not modelled: the current runnable load is used at every
//! level, as 5.3 and 5.4 do.

use super::stats::{GroupType, Lb, MigrationType, SgStats};
use super::LinuxBalancer;
use crate::balance::{BalanceEnv, IdleType};

impl LinuxBalancer {
    /// find_busiest_group, pre-5.5.
    pub(super) fn find_busiest_group_legacy(
        &mut self,
        env: &mut BalanceEnv,
        lb: &mut Lb,
    ) -> Option<usize> {
        let sds = self.update_sd_lb_stats(env, lb);
        let (bidx, busiest) = sds.busiest.clone()?;
        if busiest.sum_h_nr_running == 0 {
            return None;
        }
        let local = sds.local.clone();
        let sd_avg = sds.total_load * 1024 / sds.total_capacity.max(1);
        let pct = self.sd(env, lb).imbalance_pct as u64;
        let force = busiest.group_type == GroupType::Imbalanced
            || (lb.idle != IdleType::Busy && local.has_capacity && busiest.no_capacity);
        if !force {
            if local.avg_load >= busiest.avg_load || local.avg_load >= sd_avg {
                return None;
            }
            if lb.idle == IdleType::Idle {
                if busiest.group_type != GroupType::Overloaded
                    && local.idle_cpus <= busiest.idle_cpus + 1
                {
                    return None;
                }
            } else if 100 * busiest.avg_load <= pct * local.avg_load {
                return None;
            }
        }
        self.calculate_imbalance_legacy(env, lb, sd_avg, &local, &busiest);
        (lb.imbalance > 0).then_some(bidx)
    }

    /// calculate_imbalance, pre-5.5: always load units.
    fn calculate_imbalance_legacy(
        &mut self,
        env: &mut BalanceEnv,
        lb: &mut Lb,
        sd_avg: u64,
        local: &SgStats,
        busiest: &SgStats,
    ) {
        lb.mtype = MigrationType::Load;
        let mut busiest = busiest.clone();
        if busiest.group_type == GroupType::Imbalanced {
            busiest.load_per_task = busiest.load_per_task.min(sd_avg);
        }
        if busiest.avg_load <= sd_avg || local.avg_load >= sd_avg {
            lb.imbalance = 0;
            return self.fix_small_imbalance(env, lb, local, &busiest);
        }
        let mut cap_excess = u64::MAX;
        if busiest.group_type == GroupType::Overloaded && local.group_type == GroupType::Overloaded
        {
            let x = busiest.sum_h_nr_running as u64 * 1024;
            if x > busiest.group_capacity {
                cap_excess = (x - busiest.group_capacity) * 1024 / busiest.group_capacity.max(1);
            }
        }
        let max_pull = (busiest.avg_load - sd_avg).min(cap_excess);
        let imb = (max_pull.saturating_mul(busiest.group_capacity))
            .min((sd_avg - local.avg_load) * local.group_capacity)
            / 1024;
        lb.imbalance = imb as i64;
        if (lb.imbalance as u64) < busiest.load_per_task {
            self.fix_small_imbalance(env, lb, local, &busiest);
        }
    }

    /// fix_small_imbalance: move one task's load when that evens out the
    /// groups or raises the capacity in use.
    fn fix_small_imbalance(
        &mut self,
        env: &mut BalanceEnv,
        lb: &mut Lb,
        local: &SgStats,
        busiest: &SgStats,
    ) {
        let mut imbn = 2u64;
        let mut l_lpt = local.load_per_task;
        if local.sum_h_nr_running == 0 {
            // cpu_avg_load_per_task of the destination
            let nr = env.cpus[lb.dst].nr_running as u64;
            l_lpt = self.cpu_load(env, lb.dst).checked_div(nr).unwrap_or(0);
        } else if busiest.load_per_task > l_lpt {
            imbn = 1;
        }
        let b_lpt = busiest.load_per_task;
        let (bc, lc) = (busiest.group_capacity.max(1), local.group_capacity.max(1));
        let s = b_lpt * 1024 / bc;
        if busiest.avg_load + s >= local.avg_load + s * imbn {
            lb.imbalance = b_lpt as i64;
            return;
        }
        let now = (bc * b_lpt.min(busiest.avg_load) + lc * l_lpt.min(local.avg_load)) / 1024;
        let mut mv = if busiest.avg_load > s {
            bc * b_lpt.min(busiest.avg_load - s)
        } else {
            0
        };
        let t = if busiest.avg_load * bc < b_lpt * 1024 {
            busiest.avg_load * bc / lc
        } else {
            b_lpt * 1024 / lc
        };
        mv = (mv + lc * l_lpt.min(local.avg_load + t)) / 1024;
        if mv > now {
            lb.imbalance = b_lpt as i64;
        }
    }
}
