//! `wake_affine()` and its two tests (kernel/sched/fair.c, the latest tree;
//! the WA_IDLE, WA_WEIGHT and WA_BIAS toggles are kernel/sched/features.h).

use super::LinuxPlacement;
use crate::placement::WakeEnv;
use topology::SchedDomain;

impl LinuxPlacement {
    /// `wake_affine()`: WA_IDLE, then WA_WEIGHT when that had no opinion;
    /// the waker's CPU when either picked it, prev otherwise (all kernels
    /// modelled: "t == this ? this : prev" and "t == NONE ? prev : t" give
    /// the same CPU).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn wake_affine(
        &self,
        env: &mut WakeEnv,
        sd: &SchedDomain,
        p: u32,
        waker: Option<u32>,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
    ) -> usize {
        let mut target = None;
        if self.f.wa_idle {
            target = self.wake_affine_idle(env, this_cpu, prev_cpu, sync);
        }
        if self.f.wa_weight && target.is_none() {
            target = self.wake_affine_weight(env, sd, p, waker, this_cpu, prev_cpu, sync);
        }
        if sync {
            env.stats.wake_affine_sync += 1;
        }
        if target == Some(this_cpu) {
            env.stats.wake_affine_this += 1;
            this_cpu
        } else {
            env.stats.wake_affine_prev += 1;
            prev_cpu
        }
    }

    /// `wake_affine_idle()`: an idle waker CPU sharing the LLC with prev
    /// wins (prev if that is idle too); a sync wakeup from a CPU running only
    /// the waker stacks on it; from ~5.11 (`wake_affine_prev_idle`) an idle
    /// prev is kept. None: no opinion.
    pub(super) fn wake_affine_idle(
        &self,
        env: &mut WakeEnv,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
    ) -> Option<usize> {
        // this_cpu's own rq: available_idle_cpu(this) is still the kernel's
        // test (it can be false for a preempted vCPU in an interrupt).
        if env.available_idle_cpu(this_cpu) && env.sd.cpus_share_cache(this_cpu, prev_cpu) {
            return Some(if env.available_idle_cpu(prev_cpu) {
                prev_cpu
            } else {
                this_cpu
            });
        }
        if sync && env.cpus[this_cpu].nr_running == 1 {
            return Some(this_cpu);
        }
        if self.f.wake_affine_prev_idle && env.available_idle_cpu(prev_cpu) {
            return Some(prev_cpu);
        }
        None
    }

    /// `wake_affine_weight()`: compare the waker CPU's load plus p's
    /// against prev's load minus p's, scaled by the other side's capacity,
    /// with the WA_BIAS handicap on prev; a sync wakeup discounts the
    /// waker's own load and breaks ties towards this CPU. Loads are the
    /// run queues' PELT load_avg (cpu_load); kernels before 5.x used the
    /// wake_idx load indices, which are not modelled.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn wake_affine_weight(
        &self,
        env: &mut WakeEnv,
        sd: &SchedDomain,
        p: u32,
        waker: Option<u32>,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
    ) -> Option<usize> {
        let this_rq = &env.cpus[this_cpu];
        let (this_load, this_cap) = (this_rq.load_avg as i128, this_rq.capacity as i128);
        let mut this_eff = this_load;
        if sync {
            let current_load = waker.map_or(0, |w| env.tasks[w as usize].load_avg) as i128;
            if current_load > this_eff {
                return Some(this_cpu);
            }
            this_eff -= current_load;
        }
        let task_load = env.tasks[p as usize].load_avg as i128;
        this_eff += task_load;
        if self.f.wa_bias {
            this_eff *= 100;
        }
        let prev_rq = env.read_rq(prev_cpu);
        let (prev_load, prev_cap) = (prev_rq.load_avg as i128, prev_rq.capacity as i128);
        this_eff *= prev_cap;
        let mut prev_eff = prev_load - task_load;
        if self.f.wa_bias {
            prev_eff *= 100 + (sd.imbalance_pct as i128 - 100) / 2;
        }
        prev_eff *= this_cap;
        if sync {
            prev_eff += 1;
        }
        (this_eff < prev_eff).then_some(this_cpu)
    }
}
