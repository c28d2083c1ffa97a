//! `sched_balance_newidle` (`newidle_balance` 5.x, `idle_balance` 4.x): a CPU
//! about to run its idle task tries to pull work, level by level, as long
//! as its expected idle time (`avg_idle`) exceeds what balancing has cost.
//!
//! The cost is the modelled cost of the pass itself (its run-queue reads and
//! writes), measured on the balancing CPU's clock exactly as the kernel
//! measures it with sched_clock, so the gate closes when balancing a level
//! costs more than the CPU usually stays idle.

use super::LinuxBalancer;
use crate::balance::{BalanceEnv, IdleType, Kind};
use topology::sd_flags;

impl LinuxBalancer {
    /// sched_balance_newidle; true if tasks were pulled to `cpu`.
    pub(super) fn sched_balance_newidle(&mut self, env: &mut BalanceEnv, cpu: usize) -> bool {
        env.stats.newidle_entries += 1;
        let ndom = env.sd.domains(cpu).len();
        if ndom == 0 {
            return false;
        }
        let avg_idle = env.idle_stats[cpu].avg_idle;
        // rd->overload is read from the root domain's line
        env.read_root();
        let gate = if self.f.newidle_gate_lb_cost {
            // 5.16+: the first level's cost
            avg_idle < self.dom[cpu][0].max_newidle_lb_cost
        } else {
            // <= 5.15: sysctl_sched_migration_cost
            avg_idle < self.f.migration_cost_ns
        };
        let mut next_balance = env.jiffies + env.hz;
        if !self.overloaded || gate {
            env.stats.newidle_gated += 1;
            let sd0 = &env.sd.domains(cpu)[0];
            let i =
                self.balance_interval_jiffies(env, sd0, self.dom[cpu][0].balance_interval, false);
            next_balance = next_balance.min(self.dom[cpu][0].last_balance + i);
            self.rq[cpu].next_balance = self.rq[cpu].next_balance.min(next_balance);
            return false;
        }
        env.update_blocked_averages(cpu);
        let mut t0 = env.cost_ns;
        let mut cost_sum = 0;
        let mut pulled = false;
        let mut continue_balancing = true;
        for level in 0..ndom {
            let sd = &env.sd.domains(cpu)[level];
            let i = self.balance_interval_jiffies(
                env,
                sd,
                self.dom[cpu][level].balance_interval,
                false,
            );
            next_balance = next_balance.min(self.dom[cpu][level].last_balance + i);
            if avg_idle < cost_sum + self.dom[cpu][level].max_newidle_lb_cost {
                break;
            }
            if sd.flags & sd_flags::BALANCE_NEWIDLE != 0 {
                let r = self.sched_balance_rq(
                    env,
                    cpu,
                    level,
                    IdleType::NewlyIdle,
                    &mut continue_balancing,
                    Kind::Newidle,
                );
                let t1 = env.cost_ns;
                let d = t1 - t0;
                self.update_newidle_cost(env, cpu, level, d, self.f.newidle_gate_lb_cost);
                cost_sum += d;
                t0 = t1;
                // <= 2.6.38: a busy sibling counts as pulled (stop walking)
                pulled = r.moved > 0 || r.sibling_busy;
            }
            if pulled || !continue_balancing {
                break;
            }
        }
        let st = &mut env.idle_stats[cpu];
        st.max_idle_balance_cost = st.max_idle_balance_cost.max(cost_sum);
        self.rq[cpu].next_balance = self.rq[cpu].next_balance.min(next_balance);
        !env.req.moves.is_empty()
    }
}
