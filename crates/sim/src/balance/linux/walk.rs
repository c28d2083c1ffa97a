//! The periodic walk: `sched_balance_trigger` (`trigger_load_balance`) on
//! every tick, and the softirq's `sched_balance_domains`
//! (`rebalance_domains`), with each level's interval
//! (`get_sd_balance_interval`) and the newidle cost decay
//! (`update_newidle_cost`).

use super::LinuxBalancer;
use crate::balance::{BalanceEnv, IdleType, Kind};
use topology::SchedDomain;

/// One minute in jiffies, the farthest next_balance looks ahead.
fn sixty_seconds(hz: u64) -> u64 {
    60 * hz
}

impl LinuxBalancer {
    /// sched_balance_trigger, then the softirq: rebalance when due, and
    /// consider kicking the nohz idle balancer.
    pub(super) fn sched_balance_trigger(&mut self, env: &mut BalanceEnv, cpu: usize, idle: bool) {
        // in the tick: raise the softirq if due, then the nohz kick test
        let due = env.jiffies >= self.rq[cpu].next_balance;
        if !idle {
            self.nohz_balancer_kick(env, cpu);
        }
        if due {
            // the softirq refreshes this CPU's blocked load first
            env.update_blocked_averages(cpu);
            let it = if idle { IdleType::Idle } else { IdleType::Busy };
            self.sched_balance_domains(env, cpu, it, Kind::Periodic);
        }
    }

    /// get_sd_balance_interval in jiffies.
    pub(super) fn balance_interval_jiffies(
        &self,
        env: &BalanceEnv,
        sd: &SchedDomain,
        interval_ms: u64,
        busy: bool,
    ) -> u64 {
        let ms = interval_ms * if busy { sd.busy_factor as u64 } else { 1 };
        // msecs_to_jiffies rounds up
        let mut j = (ms * env.hz).div_ceil(1000);
        if busy && self.f.busy_interval_minus_one {
            j = j.saturating_sub(1);
        }
        // max_load_balance_interval: HZ * online CPUs / 10
        let max = (env.hz * env.sd.nr_cpus() as u64 / 10).max(1);
        j.clamp(1, max)
    }

    /// update_newidle_cost: raise the level's max cost, or decay it by
    /// about 1 % once a second. Returns true when it decayed. Up to 5.15
    /// newidle only raised it and the periodic walk decayed it (`decay`).
    pub(super) fn update_newidle_cost(
        &mut self,
        env: &BalanceEnv,
        cpu: usize,
        level: usize,
        cost: u64,
        decay: bool,
    ) -> bool {
        let hz = env.hz;
        let waits = self.f.newidle_gate_lb_cost;
        let d = &mut self.dom[cpu][level];
        if cost > d.max_newidle_lb_cost {
            d.max_newidle_lb_cost = cost;
            // 5.16: a raise restarts the one-second wait
            if waits {
                d.last_decay = env.jiffies;
            }
            return false;
        }
        if decay && env.jiffies > d.last_decay + hz {
            d.max_newidle_lb_cost = d.max_newidle_lb_cost * 253 / 256;
            d.last_decay = env.jiffies;
            return true;
        }
        false
    }

    /// sched_balance_domains: walk `cpu`'s domains bottom-up and balance
    /// each level whose interval has passed. `env.this_cpu` pays (the CPU
    /// itself, or the nohz idle balancer acting for it).
    pub(super) fn sched_balance_domains(
        &mut self,
        env: &mut BalanceEnv,
        cpu: usize,
        mut idle: IdleType,
        kind: Kind,
    ) {
        let sched_idle = {
            let s = &env.cpus[cpu];
            s.nr_running > 0 && s.nr_running == s.nr_idle_tasks
        };
        let mut busy = idle != IdleType::Idle && !sched_idle;
        let mut next = env.jiffies + sixty_seconds(env.hz);
        let mut continue_balancing = true;
        let mut need_decay = false;
        let mut max_cost = 0;
        let mut visited = false;
        for level in 0..env.sd.domains(cpu).len() {
            let sd = &env.sd.domains(cpu)[level];
            // 5.16+ keeps walking only while each level decays; before,
            // one decayed level was enough
            let decayed = self.update_newidle_cost(env, cpu, level, 0, true);
            if self.f.newidle_gate_lb_cost {
                need_decay = decayed;
            } else {
                need_decay |= decayed;
            }
            max_cost += self.dom[cpu][level].max_newidle_lb_cost;
            if !continue_balancing {
                if need_decay {
                    continue;
                }
                break;
            }
            visited = true;
            let mut interval =
                self.balance_interval_jiffies(env, sd, self.dom[cpu][level].balance_interval, busy);
            if env.jiffies >= self.dom[cpu][level].last_balance + interval {
                let r = self.sched_balance_rq(env, cpu, level, idle, &mut continue_balancing, kind);
                if r.moved > 0 {
                    // the destination may have changed state
                    idle = if env.idle_cpu(cpu) {
                        IdleType::Idle
                    } else {
                        IdleType::Busy
                    };
                    let s = &env.cpus[cpu];
                    let sched_idle = s.nr_running > 0 && s.nr_running == s.nr_idle_tasks;
                    busy = idle != IdleType::Idle && !sched_idle;
                } else if r.sibling_busy {
                    // <= 2.6.38: a busy SMT sibling makes the CPU balance
                    // the higher levels as a busy one
                    idle = IdleType::Busy;
                    busy = true;
                }
                self.dom[cpu][level].last_balance = env.jiffies;
                interval = self.balance_interval_jiffies(
                    env,
                    sd,
                    self.dom[cpu][level].balance_interval,
                    busy,
                );
            }
            next = next.min(self.dom[cpu][level].last_balance + interval);
        }
        if need_decay {
            let st = &mut env.idle_stats[cpu];
            st.max_idle_balance_cost = max_cost.max(self.f.migration_cost_ns);
        }
        if visited {
            self.rq[cpu].next_balance = next;
        }
    }
}
