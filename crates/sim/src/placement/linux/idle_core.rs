//! Idle-core search and the LLC-shared hints: `select_idle_core()` (both
//! forms), `test_idle_cores()`, `set_idle_cores()`, `__update_idle_core()`
//! (kernel/sched/fair.c; `__update_idle_core()` runs from
//! `set_next_task_idle()` in kernel/sched/idle.c; the SMT gate of
//! `test_idle_cores()` is c8987ae5af79, v5.13). The SIS_UTIL scan budget
//! these scans read is produced by the load balancer
//! (`update_idle_cpu_scan()`, 70fb5ccf2ebb, v6.0:
//! `crate::balance::linux::sis_util_nr_scan`).

use super::LinuxPlacement;
use crate::placement::{Stage, WakeEnv};
use topology::{CpuMask, SchedDomain};

impl LinuxPlacement {
    /// `test_idle_cores(target)`: read sd_llc_shared[target]->has_idle_cores.
    /// With c8987ae5af79 (`test_idle_cores_smt_gate`, 5.13) nothing is read
    /// when SMT is absent: the hint can only be set by update_idle_core,
    /// which needs SMT, so the answer (false) is the same, only cheaper.
    pub(super) fn test_idle_cores(&self, env: &mut WakeEnv, target: usize) -> bool {
        if self.f.test_idle_cores_smt_gate && !env.sd.smt_present() {
            return false;
        }
        if env.sd.sd_llc(target).is_none() {
            return false;
        }
        env.read_has_idle_cores(target)
    }

    /// `set_idle_cores(cpu, v)`: write sd_llc_shared[cpu]->has_idle_cores.
    pub(super) fn set_idle_cores(&self, env: &mut WakeEnv, cpu: usize, v: bool) {
        if env.sd.sd_llc(cpu).is_some() {
            env.write_has_idle_cores(cpu, v);
        }
    }

    /// `__update_idle_core(rq)` (called as update_idle_core from
    /// set_next_task_idle, only with SMT): when `core` goes idle and every
    /// sibling is idle too, advertise an idle core in its LLC (unless the
    /// hint is already set).
    pub fn update_idle_core(&self, env: &mut WakeEnv, core: usize) {
        if env.sd.sd_llc(core).is_none() || env.read_has_idle_cores(core) {
            return;
        }
        let topo = env.topo;
        for s in topo.smt_mask(core).iter() {
            if s == core {
                continue;
            }
            if !env.available_idle_cpu(s) {
                return;
            }
        }
        self.set_idle_cores(env, core, true);
    }

    /// `select_idle_core(p, core, cpus, &idle_cpu)`, >= 5.12 per-core form
    /// (kernel/sched/fair.c, read at v6.1 and in the latest tree), called
    /// from select_idle_cpu in idle-core mode. Returns `core` when all its
    /// SMT siblings are available-idle; otherwise removes the
    /// whole core from `cpus` and, while no fallback is known, remembers the
    /// first allowed idle (or sched-idle) sibling in `idle_cpu` (tagged
    /// `stage`). With `select_idle_core_early_break` the sibling walk stops
    /// at a busy sibling once a fallback is known (the merged form always
    /// had this; turning it off visits every sibling: same answer, more
    /// probes). Without SMT (5.12's static-key branch) it is a plain probe.
    /// Records `select_idle_core_cost` and `select_idle_core_probes`.
    pub(super) fn select_idle_core(
        &self,
        env: &mut WakeEnv,
        p: u32,
        core: usize,
        cpus: &mut CpuMask,
        idle_cpu: &mut Option<(usize, Stage)>,
        stage: Stage,
    ) -> Option<usize> {
        let (c0, p0) = (env.cost_ns, env.probes);
        let r = self.select_idle_core_inner(env, p, core, cpus, idle_cpu, stage);
        let _ = env.stats.select_idle_core_cost.record(env.cost_ns - c0);
        let _ = env
            .stats
            .select_idle_core_probes
            .record((env.probes - p0) as u64);
        r
    }

    fn select_idle_core_inner(
        &self,
        env: &mut WakeEnv,
        p: u32,
        core: usize,
        cpus: &mut CpuMask,
        idle_cpu: &mut Option<(usize, Stage)>,
        stage: Stage,
    ) -> Option<usize> {
        if !env.sd.smt_present() {
            return self.choose_idle_cpu(env, core, p).then_some(core);
        }
        let topo = env.topo;
        let smt = topo.smt_mask(core);
        let early = self.f.select_idle_core_early_break;
        let mut idle = true;
        for s in smt.iter() {
            if !env.available_idle_cpu(s) {
                idle = false;
                if idle_cpu.is_none() {
                    if cpus.test(s) && self.sched_idle_ok(env, s, p) {
                        *idle_cpu = Some((s, stage));
                        if early {
                            break;
                        }
                    }
                    continue;
                }
                if early {
                    break;
                }
                continue;
            }
            if idle_cpu.is_none() && cpus.test(s) {
                *idle_cpu = Some((s, stage));
            }
        }
        if idle {
            return Some(core);
        }
        cpus.andnot_assign(smt);
        None
    }

    /// `select_idle_core(p, sd, target)`, 4.9-5.11 whole-LLC form
    /// (kernel/sched/fair.c, read at v5.8): only with SMT and the
    /// has_idle_cores hint (`hint` when the caller
    /// already read it); walks the cores of `sd_llc & p->cpus_ptr` from the
    /// scan start, returning the first whose siblings are all
    /// available-idle; clears the hint when none is. Before bec2860a2bd6
    /// (`select_idle_core_early_break` off) every sibling is probed and
    /// cleared one by one; after, the walk stops at the first busy sibling
    /// and the whole core is cleared at once: same answer, fewer probes.
    /// Records `select_idle_core_cost` and `select_idle_core_probes`.
    pub(super) fn select_idle_core_llc(
        &self,
        env: &mut WakeEnv,
        p: u32,
        llc: &SchedDomain,
        target: usize,
        hint: Option<bool>,
    ) -> Option<usize> {
        if !env.sd.smt_present() {
            return None;
        }
        let has = match hint {
            Some(h) => h,
            None => self.test_idle_cores(env, target),
        };
        if !has {
            return None;
        }
        let (c0, p0) = (env.cost_ns, env.probes);
        let topo = env.topo;
        let mut cpus = llc.span.and(&env.tasks[p as usize].cpus_allowed);
        let start = match self.f.scan_start {
            super::ScanStart::Target => target,
            super::ScanStart::TargetPlus1 => target + 1,
        };
        let mut found = None;
        let mut cur = cpus.first_wrap(start);
        while let Some(core) = cur {
            let mut idle = true;
            for s in topo.smt_mask(core).iter() {
                if self.f.select_idle_core_early_break {
                    if !env.available_idle_cpu(s) {
                        idle = false;
                        break;
                    }
                } else {
                    cpus.clear(s);
                    if !env.available_idle_cpu(s) {
                        idle = false;
                    }
                }
            }
            cpus.andnot_assign(topo.smt_mask(core));
            if idle {
                found = Some(core);
                break;
            }
            cur = cpus.next_wrap(core, start);
        }
        if found.is_none() {
            let at = if self.f.clear_idle_cores_on_waker {
                env.this_cpu
            } else {
                target
            };
            self.set_idle_cores(env, at, false);
        }
        let _ = env.stats.select_idle_core_cost.record(env.cost_ns - c0);
        let _ = env
            .stats
            .select_idle_core_probes
            .record((env.probes - p0) as u64);
        found
    }
}
