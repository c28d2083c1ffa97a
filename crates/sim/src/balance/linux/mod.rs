//! The Linux load balancer, in our own words after kernel/sched/fair.c,
//! version by version:
//! - [`walk`]: the periodic walk (`sched_balance_trigger`,
//!   `sched_balance_domains`, formerly `trigger_load_balance` /
//!   `rebalance_domains`) and the balance intervals;
//! - [`newidle`]: `sched_balance_newidle` (`newidle_balance`, `idle_balance`
//!   before 5.x) with its cost gate;
//! - [`nohz`]: tickless idle CPUs, `nohz_balancer_kick`, `kick_ilb` and
//!   `_nohz_idle_balance`;
//! - [`balance_rq`]: `sched_balance_rq` (`load_balance`), `should_we_balance`,
//!   `need_active_balance` and the stopper (`active_load_balance_cpu_stop`);
//! - [`stats`]: `update_sg_lb_stats`, `group_classify`,
//!   `update_sd_pick_busiest`, `update_sd_lb_stats` (with SIS_UTIL's
//!   `update_idle_cpu_scan`);
//! - [`imbalance`]: `find_busiest_group` and `calculate_imbalance` of the
//!   5.5+ algorithm; [`legacy`]: the same before 5.5 with
//!   `fix_small_imbalance`;
//! - [`detach`]: `find_busiest_queue`, `detach_tasks`, `can_migrate_task`,
//!   `task_hot`.
//!
//! Machines are symmetric (every CPU has capacity 1024, no RT/IRQ pressure),
//! so misfit, asym packing and reduced-capacity rules never fire and are not
//! modelled; NUMA balancing's fbq classification and
//! `migrate_degrades_locality` are not modelled either.

mod balance_rq;
mod detach;
pub mod features;
mod imbalance;
mod legacy;
mod newidle;
mod nohz;
mod stats;
pub use stats::sis_util_nr_scan;
mod walk;

pub use features::{LbAlgorithm, LbFeatures, NumaImbalance, LB_FEATURES};

use super::{BalanceEnv, Balancer};
use topology::{CpuMask, SchedDomain};

/// The longest balance interval after repeated all-pinned failures
/// (MAX_PINNED_INTERVAL), ms.
const MAX_PINNED_INTERVAL_MS: u64 = 512;

/// Per CPU and domain level: the mutable part of `struct sched_domain`.
#[derive(Clone, Debug)]
struct DomState {
    /// sd->balance_interval, ms.
    balance_interval: u64,
    /// sd->nr_balance_failed.
    nr_balance_failed: u32,
    /// sd->last_balance, jiffies.
    last_balance: u64,
    /// sd->max_newidle_lb_cost, ns.
    max_newidle_lb_cost: u64,
    /// sd->last_decay_max_lb_cost (5.16+) or next_decay_max_lb_cost, jiffies.
    last_decay: u64,
}

/// Per CPU: the balancer's fields of `struct rq`.
#[derive(Clone, Debug, Default)]
struct RqLb {
    /// rq->next_balance, jiffies.
    next_balance: u64,
    /// rq->nohz_tick_stopped.
    nohz_tick_stopped: bool,
    /// A nohz idle-balance kick is on its way (nohz_flags).
    kick_pending: bool,
    /// rq->active_balance: stopper work queued.
    active_balance: bool,
}

/// The global `nohz` state.
#[derive(Clone, Debug, Default)]
struct Nohz {
    idle_cpus: CpuMask,
    nr_cpus: u32,
    next_balance: u64,
}

/// The Linux load balancer of one kernel profile.
pub struct LinuxBalancer {
    f: LbFeatures,
    dom: Vec<Vec<DomState>>,
    rq: Vec<RqLb>,
    nohz: Nohz,
    /// rd->overload: some CPU had a second runnable task.
    overloaded: bool,
    /// sgc->imbalance of groups, at domain level index x CPUs + the
    /// group's first CPU (grown when first set; absent is false): a child
    /// level could not fix an imbalance because of affinity. A flat table,
    /// not a map: every group of every balancing pass reads it.
    group_imbalance: Vec<bool>,
    /// Reused buffer for group statistics.
    task_buf: Vec<u32>,
}

impl LinuxBalancer {
    /// A balancer with the toggles `f`.
    pub fn new(f: LbFeatures) -> Self {
        LinuxBalancer {
            f,
            dom: Vec::new(),
            rq: Vec::new(),
            nohz: Nohz::default(),
            overloaded: false,
            group_imbalance: Vec::new(),
            task_buf: Vec::new(),
        }
    }

    /// The toggles.
    pub fn features(&self) -> &LbFeatures {
        &self.f
    }

    /// rd->overload, as the engine's add_nr_running sets it.
    pub fn set_overloaded(&mut self) {
        self.overloaded = true;
    }

    /// Whether rd->overload is set.
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// Boot state (domains attached at time 0), sized on first use.
    fn ensure_init(&mut self, env: &mut BalanceEnv) {
        if !self.dom.is_empty() {
            return;
        }
        let n = env.sd.nr_cpus();
        self.dom = (0..n)
            .map(|c| {
                env.sd
                    .domains(c)
                    .iter()
                    .map(|d| DomState {
                        balance_interval: d.min_interval_ms.max(1),
                        nr_balance_failed: 0,
                        last_balance: 0,
                        max_newidle_lb_cost: 0,
                        last_decay: 0,
                    })
                    .collect()
            })
            .collect();
        self.rq = vec![RqLb::default(); n];
        self.nohz.idle_cpus = CpuMask::new();
        // The run starts on a machine that has been idle, not one that just
        // booted: its last LLC-level balance saw no utilisation, so SIS_UTIL
        // lets the first wake-ups scan the whole LLC (a fresh kernel would
        // hold 0 until its first periodic balance).
        if self.f.sis_util {
            for &first in env.sd.llc_ids() {
                if let Some(llc) = env.sd.sd_llc(first) {
                    let w = llc.span_weight as u64;
                    let l = env.sd.llc_index(first);
                    env.llc[l].nr_idle_scan =
                        stats::sis_util_nr_scan(0, w, llc.imbalance_pct as u64);
                }
            }
        }
    }
}

/// `sd->cache_nice_tries` (sd_init: SMT 0, NUMA 2, others 1).
fn cache_nice_tries(d: &SchedDomain) -> u32 {
    d.cache_nice_tries
}

/// The local group's balance mask: the CPUs that balance for it (the group
/// span, or for overlapping NUMA groups the subset build_balance_mask
/// gives).
fn balance_mask(d: &SchedDomain) -> &CpuMask {
    &d.groups[0].balance_mask
}

impl Balancer for LinuxBalancer {
    fn name(&self) -> String {
        match self.f.algorithm {
            LbAlgorithm::Modern => "linux".into(),
            LbAlgorithm::Legacy => "linux-legacy".into(),
        }
    }

    fn tick(&mut self, env: &mut BalanceEnv, cpu: usize, idle: bool) {
        self.ensure_init(env);
        self.sched_balance_trigger(env, cpu, idle);
    }

    fn newidle(&mut self, env: &mut BalanceEnv, cpu: usize) -> bool {
        self.ensure_init(env);
        self.sched_balance_newidle(env, cpu)
    }

    fn nohz_enter_idle(&mut self, env: &mut BalanceEnv, cpu: usize) {
        self.ensure_init(env);
        self.nohz_balance_enter_idle(env, cpu);
    }

    fn set_cpu_sd_state_idle(&mut self, env: &mut BalanceEnv, cpu: usize) {
        self.ensure_init(env);
        self.sd_state_idle(env, cpu);
    }

    fn nohz_idle_balance(&mut self, env: &mut BalanceEnv, cpu: usize) {
        self.ensure_init(env);
        self.nohz_csd_func(env, cpu);
    }

    fn active_stop(&mut self, env: &mut BalanceEnv, src: usize, dst: usize) {
        self.ensure_init(env);
        self.active_load_balance_cpu_stop(env, src, dst);
    }

    /// add_nr_running: set rd->overload if it is clear (READ_ONCE first).
    fn rq_overloaded(&mut self, env: &mut BalanceEnv) {
        env.read_root();
        if !self.overloaded {
            env.write_root();
            self.overloaded = true;
        }
    }
}

#[cfg(test)]
mod tests;
