//! Balancing for tickless idle CPUs (kernel/sched/fair.c, CONFIG_NO_HZ_COMMON):
//! `nohz_balance_enter_idle` when the idle loop stops the tick,
//! `nohz_balance_exit_idle` at the first busy tick, `nohz_balancer_kick` /
//! `kick_ilb` from a busy CPU's tick, and `_nohz_idle_balance` run by the
//! kicked idle CPU on behalf of every tickless one.
//!
//! The blocked-load-only kicks (NOHZ_STATS_KICK without BALANCE, and the
//! newidle NOHZ_NEWILB_KICK) are not sent; blocked load is refreshed for
//! each CPU a balance pass walks. The NOHZ_NEXT_KICK (5.16), which only
//! refreshes nohz.next_balance, is folded into the idle entry: a CPU
//! entering tickless idle lowers nohz.next_balance to its own next_balance.

use super::LinuxBalancer;
use crate::balance::{BalanceEnv, IdleType, Kind};

impl LinuxBalancer {
    /// nohz_balance_enter_idle: the tick of idle `cpu` stopped.
    pub(super) fn nohz_balance_enter_idle(&mut self, env: &mut BalanceEnv, cpu: usize) {
        if self.rq[cpu].nohz_tick_stopped {
            return;
        }
        self.rq[cpu].nohz_tick_stopped = true;
        self.nohz.idle_cpus.set(cpu);
        self.nohz.nr_cpus += 1;
        env.write_root();
        // from 4.17 (00357f5ec5d6); up to 4.16 the idle loop had done it at
        // idle entry already and this finds the flag set
        self.sd_state_idle(env, cpu);
        self.nohz.next_balance = self.nohz.next_balance.min(self.rq[cpu].next_balance);
    }

    /// set_cpu_sd_state_idle: `cpu` leaves its LLC's nr_busy_cpus (once:
    /// sd_llc->nohz_idle).
    pub(super) fn sd_state_idle(&mut self, env: &mut BalanceEnv, cpu: usize) {
        Self::set_cpu_sd_state(env, cpu, false);
    }

    /// `LlcShared::set_cpu_sd_state` on `cpu`'s LLC, its line write
    /// charged when the count changed.
    fn set_cpu_sd_state(env: &mut BalanceEnv, cpu: usize, busy: bool) {
        let l = env.sd.llc_index(cpu);
        if env.llc[l].set_cpu_sd_state(&mut env.cpus[cpu], busy) {
            env.write_llc(cpu);
        }
    }

    /// nohz_balance_exit_idle: the first busy tick after tickless idle.
    /// set_cpu_sd_state_busy runs whenever the CPU was counted idle: from
    /// 4.17 that is only together with a stopped tick (both are set in
    /// nohz_balance_enter_idle), while 4.16's nohz_kick_needed called it at
    /// every busy tick, for a CPU that idled with its tick running too.
    fn nohz_balance_exit_idle(&mut self, env: &mut BalanceEnv, cpu: usize) {
        if self.rq[cpu].nohz_tick_stopped {
            self.rq[cpu].nohz_tick_stopped = false;
            self.nohz.idle_cpus.clear(cpu);
            self.nohz.nr_cpus -= 1;
            env.write_root();
        }
        Self::set_cpu_sd_state(env, cpu, true);
    }

    /// nohz_balancer_kick, at the tick of a CPU running a task.
    pub(super) fn nohz_balancer_kick(&mut self, env: &mut BalanceEnv, cpu: usize) {
        self.nohz_balance_exit_idle(env, cpu);
        env.read_root();
        if self.nohz.nr_cpus == 0 || env.jiffies < self.nohz.next_balance {
            return;
        }
        let mut kick = env.cpus[cpu].nr_running >= 2;
        if !kick {
            // more than one busy CPU in this LLC: some other LLC may be able
            // to take load, or this one needs spreading
            env.read_llc(cpu);
            kick = env.llc[env.sd.llc_index(cpu)].nr_busy_cpus > 1;
        }
        if kick {
            self.kick_ilb(env, cpu);
        }
    }

    /// kick_ilb: pick an idle CPU (find_new_ilb) and send it the IPI.
    fn kick_ilb(&mut self, env: &mut BalanceEnv, cpu: usize) {
        self.nohz.next_balance = env.jiffies + 1;
        let mask = self.nohz.idle_cpus.clone();
        let Some(ilb) = mask.iter().find(|&c| c != cpu && env.idle_cpu(c)) else {
            return;
        };
        if self.rq[ilb].kick_pending {
            return;
        }
        self.rq[ilb].kick_pending = true;
        env.write_rq(ilb);
        env.req.kick_ilb = Some(ilb);
        env.stats.ilb_kicks += 1;
    }

    /// nohz_csd_func: the kick IPI reached `ilb`; if it is still idle it
    /// balances every tickless idle CPU (_nohz_idle_balance).
    pub(super) fn nohz_csd_func(&mut self, env: &mut BalanceEnv, ilb: usize) {
        self.rq[ilb].kick_pending = false;
        if !env.idle_cpu(ilb) {
            return;
        }
        let mut next = env.jiffies + 60 * env.hz;
        // from ilb+1, wrapping, so the balancer itself comes last
        let start = (ilb + 1) % env.sd.nr_cpus().max(1);
        let mask = self.nohz.idle_cpus.clone();
        for b in mask.iter_wrap(start) {
            if !env.idle_cpu(b) {
                continue;
            }
            env.update_blocked_averages(b);
            if env.jiffies >= self.rq[b].next_balance {
                self.sched_balance_domains(env, b, IdleType::Idle, Kind::Nohz);
            }
            next = next.min(self.rq[b].next_balance);
        }
        self.nohz.next_balance = next;
    }
}
