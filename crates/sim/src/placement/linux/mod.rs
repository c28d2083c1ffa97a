//! The Linux CFS/EEVDF wake-up placement path, version by version
//! (kernel/sched/fair.c, with the helpers of kernel/sched/core.c,
//! topology.c and idle.c). Trees read: "latest" is a v7.0-dev mainline tree
//! (the Puqns67/linux fork @b7a23feb); v6.1 (raspberrypi/linux); v5.8
//! (torvalds/linux @000619680c37); the commits named at each function or
//! toggle for the releases in between.
//!
//! Entry: [`LinuxPlacement::select_task_rq_fair`] (record_wakee, wake_wide,
//! the domain walk, wake_affine, then the fast path select_idle_sibling or
//! the fork slow path find_idlest_cpu). The pieces live where a reader of
//! fair.c expects them:
//! - [`features`]: kernel profiles and toggles (one per behaviour change,
//!   each naming its commit);
//! - `wake_affine.rs`: wake_affine, wake_affine_idle, wake_affine_weight;
//! - `select_idle.rs`: select_idle_sibling, select_idle_cpu (all forms),
//!   select_idle_smt, the cluster scans;
//! - `idle_core.rs`: select_idle_core (both forms), test_idle_cores,
//!   set_idle_cores, update_idle_core, update_idle_cpu_scan;
//! - `find_idlest.rs`: find_idlest_cpu, find_idlest_group,
//!   find_idlest_group_cpu.
//!
//! Every read of another CPU's state goes through [`WakeEnv`] accessors, so
//! it is charged to the waker; the waker's own run queue and idle
//! statistics are read directly (the kernel reads them from `this_rq()`).
//! Asymmetric capacity (select_idle_capacity, asym_fits, EAS) is not
//! modelled: every modelled machine is symmetric.

pub mod features;
mod find_idlest;
mod idle_core;
mod select_idle;
mod wake_affine;

#[cfg(test)]
mod tests;

pub use features::{
    FeatureError, Features, IdleCoreScanStyle, RecentUpdate, ScanStart, SisPropAvg, SmtMode,
    TtwuQueue,
};

use super::{wf, Decision, Placement, Stage, WakeEnv, WakeRequest};
use crate::Nanos;
use topology::sd_flags;

/// The Linux wake-up placement policy for one kernel profile.
pub struct LinuxPlacement {
    f: Features,
    /// `sd_llc->avg_scan_cost` of each CPU (SIS_PROP). The kernel keeps it in
    /// the per-CPU `struct sched_domain`, so each waker has its own; the
    /// last value written in an LLC is mirrored to `LlcShared::avg_scan_cost`
    /// for reports.
    avg_scan_cost: Vec<Nanos>,
}

impl LinuxPlacement {
    /// A policy following `features`.
    pub fn new(features: Features) -> Self {
        LinuxPlacement {
            f: features,
            avg_scan_cost: Vec::new(),
        }
    }

    /// The features in use.
    pub fn features(&self) -> &Features {
        &self.f
    }

    /// The idle test of the wake-up path for `cpu` and wakee `p`:
    /// `available_idle_cpu(c) || sched_idle_cpu(c)` (>= 5.4; the sched-idle
    /// half follows `env.sched_idle_as_idle`), or in the newest trees
    /// `choose_idle_cpu(c, p)`, where the sched-idle half only counts for a
    /// wakee that is not SCHED_IDLE itself. Inline in the scans that call
    /// it once per CPU probed (a call cost about 25 of its 90 instructions).
    #[inline(always)]
    fn choose_idle_cpu(&self, env: &mut WakeEnv, cpu: usize, p: u32) -> bool {
        if env.available_idle_cpu(cpu) {
            return true;
        }
        self.sched_idle_ok(env, cpu, p)
    }

    /// The sched-idle half of [`Self::choose_idle_cpu`]; reads the run-queue
    /// line the idle test just pulled in.
    fn sched_idle_ok(&self, env: &mut WakeEnv, cpu: usize, p: u32) -> bool {
        env.sched_idle_as_idle
            && env.sched_idle_cpu(cpu)
            && !(self.f.choose_idle_cpu && env.tasks[p as usize].idle_policy)
    }

    /// `select_task_rq_fair()` (kernel/sched/fair.c). Follows the latest
    /// tree; differences of older kernels (SD_LOAD_BALANCE, explicit sd_flag, EAS) do not
    /// change placement on symmetric machines. In 4.16-5.15
    /// (`recent_used_cpu_update = swap`) an affine waker records its CPU in
    /// its own `recent_used_cpu` after the fast path.
    pub fn select_task_rq_fair(&mut self, env: &mut WakeEnv, req: WakeRequest) -> Decision {
        let p = req.task;
        let prev = req.prev_cpu;
        let cpu = env.this_cpu;
        let wake_flags = req.wake_flags;
        // current exiting is not modelled.
        let sync = wake_flags & wf::SYNC != 0 && self.f.sync_wakeups;
        // WF_TTWU/WF_FORK/WF_EXEC select SD_BALANCE_WAKE/FORK/EXEC.
        let mut sd_flag = 0;
        if wake_flags & wf::TTWU != 0 {
            sd_flag |= sd_flags::BALANCE_WAKE;
        }
        if wake_flags & wf::FORK != 0 {
            sd_flag |= sd_flags::BALANCE_FORK;
        }
        if wake_flags & wf::EXEC != 0 {
            sd_flag |= sd_flags::BALANCE_EXEC;
        }
        let ttwu = wake_flags & wf::TTWU != 0;
        let mut want_affine = false;
        if ttwu {
            self.record_wakee(env, req);
            let wide = self.f.wake_wide && self.wake_wide(env, req);
            if wide {
                env.stats.wake_wide += 1;
            }
            want_affine = !wide && env.tasks[p as usize].cpus_allowed.test(cpu);
        }

        let mut new_cpu = prev;
        let mut slow: Option<usize> = None; // index of sd in domains(cpu)
        let sd = env.sd;
        let doms = sd.domains(cpu);
        for (i, tmp) in doms.iter().enumerate() {
            if want_affine && tmp.has(sd_flags::WAKE_AFFINE) && tmp.span.test(prev) {
                if cpu != prev {
                    new_cpu = self.wake_affine(env, tmp, p, req.waker, cpu, prev, sync);
                }
                slow = None;
                break;
            }
            if tmp.flags & sd_flag != 0 {
                slow = Some(i);
            } else if !want_affine {
                break;
            }
        }

        if let Some(level) = slow {
            let c = self.find_idlest_cpu(env, cpu, level, p, prev, sd_flag);
            return Decision {
                cpu: c,
                stage: Stage::SlowPath,
            };
        }
        if ttwu {
            let d = self.select_idle_sibling(env, req, prev, new_cpu);
            if want_affine
                && self.f.recent_used_cpu
                && self.f.recent_used_cpu_update == RecentUpdate::Swap
            {
                if let Some(w) = req.waker {
                    env.tasks[w as usize].recent_used_cpu = cpu;
                }
            }
            return d;
        }
        Decision {
            cpu: new_cpu,
            stage: if new_cpu == cpu {
                Stage::CurrentCpu
            } else {
                Stage::NoIdleFound
            },
        }
    }

    /// `record_wakee()` (kernel/sched/fair.c), in the waker's context: halve
    /// the waker's flips once per second, count a flip when the wakee changes. Wakeups
    /// from no task context (timers) record nothing.
    pub fn record_wakee(&self, env: &mut WakeEnv, req: WakeRequest) {
        let Some(w) = req.waker else { return };
        let (jiffies, hz) = (env.jiffies, env.hz.max(1));
        let cur = &mut env.tasks[w as usize];
        if jiffies > cur.wakee_flip_decay_ts + hz {
            cur.wakee_flips >>= 1;
            cur.wakee_flip_decay_ts = jiffies;
        }
        if cur.last_wakee != Some(req.task) {
            cur.last_wakee = Some(req.task);
            cur.wakee_flips += 1;
        }
    }

    /// `wake_wide()` (kernel/sched/fair.c): both partners flip at least
    /// `sd_llc_size` times and one `sd_llc_size` times more than the other.
    pub fn wake_wide(&self, env: &mut WakeEnv, req: WakeRequest) -> bool {
        let master = req.waker.map_or(0, |w| env.tasks[w as usize].wakee_flips);
        let slave = env.tasks[req.task as usize].wakee_flips;
        let (hi, lo) = (master.max(slave) as u64, master.min(slave) as u64);
        let factor = env.sd.sd_llc_size(env.this_cpu) as u64;
        lo >= factor && hi >= lo * factor
    }

    fn scan_cost_slot(&mut self, env: &WakeEnv, cpu: usize) -> &mut Nanos {
        if self.avg_scan_cost.len() < env.cpus.len() {
            self.avg_scan_cost.resize(env.cpus.len(), 0);
        }
        &mut self.avg_scan_cost[cpu]
    }
}

impl Placement for LinuxPlacement {
    fn name(&self) -> String {
        self.f.name()
    }

    fn select_task_rq(&mut self, env: &mut WakeEnv, req: WakeRequest) -> Decision {
        self.select_task_rq_fair(env, req)
    }

    /// set_next_task_idle -> update_idle_core (only with SMT).
    fn cpu_enters_idle(&mut self, env: &mut WakeEnv, cpu: usize) {
        if self.f.idle_core_search && env.sd.smt_present() {
            self.update_idle_core(env, cpu);
        }
    }
}
