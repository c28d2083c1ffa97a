//! `select_idle_sibling()`, `select_idle_cpu()` in its two shapes,
//! `select_idle_smt()` and the cluster scans (kernel/sched/fair.c; the
//! merged cluster scan is 8881e1639f1f and 22165f61d0c4, v6.7; the patch-era
//! variant is Barry Song / Yicong Yang's v2 series of 2022-01, based on
//! v5.17-rc1).

use super::features::{IdleCoreScanStyle, RecentUpdate, ScanStart, SisPropAvg, SmtMode};
use super::LinuxPlacement;
use crate::placement::{Decision, Stage, WakeEnv, WakeRequest};
use topology::{sd_flags, CpuMask, Level, SchedDomain, SchedDomains};

/// The CLS-level domain span of `cpu` (the v2 patch's `sd_cluster`), if the
/// level survived.
fn sd_cluster(sd: &SchedDomains, cpu: usize) -> Option<&CpuMask> {
    sd.domains(cpu)
        .iter()
        .find(|d| d.level == Level::Cls)
        .map(|d| &d.span)
}

/// The v2 patch's `cpus_share_resources()`: same cluster where a cluster
/// domain exists, else same LLC.
fn v2_share_resources(sd: &SchedDomains, a: usize, b: usize) -> bool {
    match sd_cluster(sd, a) {
        Some(span) => a == b || span.test(b),
        None => sd.cpus_share_cache(a, b),
    }
}

/// `update_avg()`: avg += (sample - avg) / 8, signed.
pub(super) fn update_avg(avg: &mut u64, sample: u64) {
    let diff = sample as i64 - *avg as i64;
    *avg = (*avg as i64 + diff / 8).max(0) as u64;
}

impl LinuxPlacement {
    fn scan_start(&self, target: usize) -> usize {
        match self.f.scan_start {
            ScanStart::Target => target,
            ScanStart::TargetPlus1 => target + 1,
        }
    }

    /// `select_idle_sibling(p, prev, target)` (kernel/sched/fair.c, the
    /// latest tree; older shapes by version below). One function for every
    /// version; the feature set picks the shape:
    /// - target, prev, per-CPU-kthread stacking (`kthread_stack`, ~5.11),
    ///   recent_used_cpu (4.16; swap until 5.15, prev-always from 5.16);
    /// - from 6.7 (`cluster_prev_fallback`): an idle prev/recent in the LLC
    ///   but another cluster is only a fallback after the scan;
    /// - v2 cluster patch: prev/recent must share the cluster;
    /// - <= 5.11: select_idle_core, select_idle_cpu, select_idle_smt(target);
    /// - 5.12: select_idle_cpu (idle-core mode inside);
    /// - >= 5.13: test_idle_cores, select_idle_smt(prev), select_idle_cpu.
    pub(super) fn select_idle_sibling(
        &mut self,
        env: &mut WakeEnv,
        req: WakeRequest,
        prev: usize,
        target: usize,
    ) -> Decision {
        let p = req.task;
        let sd: &SchedDomains = env.sd;
        let d = |cpu, stage| Decision { cpu, stage };
        if self.choose_idle_cpu(env, target, p) {
            return d(target, Stage::TargetIdle);
        }
        let cluster_fallback = self.f.cluster_prev_fallback && sd.cluster_active();
        let near = |a: usize, b: usize| {
            if self.f.cluster_scan_v2 {
                v2_share_resources(sd, a, b)
            } else {
                sd.cpus_share_cache(a, b)
            }
        };

        let mut prev_aff = None;
        if prev != target && near(prev, target) && self.choose_idle_cpu(env, prev, p) {
            if !cluster_fallback || sd.cpus_share_resources(prev, target) {
                return d(prev, Stage::PrevIdle);
            }
            prev_aff = Some(prev);
        }

        // A per-CPU kthread waker (IO completion) stacks the wakee on its
        // own CPU when that is prev and runs nothing else. A wakeup from no
        // task context is never a kthread's (in_task()).
        if self.f.kthread_stack {
            if let Some(w) = req.waker {
                if env.tasks[w as usize].per_cpu_kthread
                    && prev == env.this_cpu
                    && env.cpus[env.this_cpu].nr_running <= 1
                {
                    return d(prev, Stage::KthreadStack);
                }
            }
        }

        let mut recent = None;
        if self.f.recent_used_cpu {
            let r = env.tasks[p as usize].recent_used_cpu;
            let swap = self.f.recent_used_cpu_update == RecentUpdate::Swap;
            if !swap {
                env.tasks[p as usize].recent_used_cpu = prev;
            }
            if r < env.cpus.len()
                && r != prev
                && r != target
                && near(r, target)
                && self.choose_idle_cpu(env, r, p)
                && env.tasks[p as usize].cpus_allowed.test(r)
            {
                if swap {
                    // Replace recent_used_cpu with prev as it is a potential
                    // candidate for the next wake.
                    env.tasks[p as usize].recent_used_cpu = prev;
                    return d(r, Stage::RecentUsedCpu);
                }
                if !cluster_fallback || sd.cpus_share_resources(r, target) {
                    return d(r, Stage::RecentUsedCpu);
                }
                recent = Some(r);
            }
        }

        let Some(llc) = sd.sd_llc(target) else {
            return d(target, Stage::NoIdleFound);
        };

        // >= 5.13: the idle-core hint and an idle sibling of prev, before
        // the scan, only when SMT is active (c722f35b513f: the caller is
        // gated by sched_smt_active(), so without SMT nothing is read even
        // with c8987ae5af79 reverted).
        let mut hint = None;
        if self.f.select_idle_smt_mode == SmtMode::PrevBeforeScan && !sd.smt_present() {
            hint = Some(false);
        } else if self.f.select_idle_smt_mode == SmtMode::PrevBeforeScan {
            let has = self.f.idle_core_search && self.test_idle_cores(env, target);
            if !has && sd.cpus_share_cache(prev, target) {
                let skip_self = self.f.smt_skip_self();
                if let Some(i) =
                    self.select_idle_smt(env, p, llc, prev, self.f.smt_llc_span_check, skip_self)
                {
                    return d(i, Stage::SmtSiblingOfPrev);
                }
            }
            hint = Some(has);
        }

        let found = match self.f.idle_core_scan_style {
            IdleCoreScanStyle::Separate => {
                let core = if self.f.idle_core_search {
                    self.select_idle_core_llc(env, p, llc, target, hint)
                } else {
                    None
                };
                match core {
                    Some(c) => Some((c, Stage::IdleCore)),
                    None => self
                        .select_idle_cpu_separate(env, p, llc, target)
                        .map(|c| (c, Stage::IdleCpuInLlc)),
                }
            }
            IdleCoreScanStyle::Merged => {
                let has = match hint {
                    Some(h) => h,
                    // 5.12: the hint is read inside select_idle_cpu.
                    None => self.f.idle_core_search && self.test_idle_cores(env, target),
                };
                self.select_idle_cpu(env, p, llc, has, prev, target)
            }
        };
        if let Some((c, stage)) = found {
            return d(c, stage);
        }
        if self.f.select_idle_smt_mode == SmtMode::TargetLast && sd.smt_present() {
            if let Some(i) = self.select_idle_smt(env, p, llc, target, false, false) {
                return d(i, Stage::SmtSiblingOfTarget);
            }
        }
        if let Some(c) = prev_aff.or(recent) {
            return d(c, Stage::PrevRecentFallback);
        }
        d(target, Stage::NoIdleFound)
    }

    /// `select_idle_smt()`: the first idle (or sched-idle) allowed SMT
    /// sibling of `cpu`. <= 5.11: sibling of target, last resort, whole mask
    /// probed; >= 5.13: sibling of prev before the scan, with the LLC-span
    /// check in 5.13-5.19 and >= 6.8, and prev itself skipped from 6.0.
    pub(super) fn select_idle_smt(
        &self,
        env: &mut WakeEnv,
        p: u32,
        llc: &SchedDomain,
        cpu: usize,
        span_check: bool,
        skip_self: bool,
    ) -> Option<usize> {
        let topo = env.topo;
        for s in topo.smt_mask(cpu).iter() {
            if !env.tasks[p as usize].cpus_allowed.test(s)
                || (skip_self && s == cpu)
                || (span_check && !llc.span.test(s))
            {
                continue;
            }
            if self.choose_idle_cpu(env, s, p) {
                return Some(s);
            }
        }
        None
    }

    /// `select_idle_cpu()`, >= 5.12 form (kernel/sched/fair.c, read at v6.1
    /// and in the latest tree; the merged shape is 9fe1f127b913, v5.12): one
    /// wrapped pass over `sd_llc(target) & p->cpus_ptr` that looks for a whole idle core in
    /// idle-core mode (remembering the first idle CPU seen) or for an idle
    /// CPU otherwise, bounded by SIS_PROP (5.12-6.6; not in idle-core mode)
    /// and/or SIS_UTIL (>= 6.0; a zero budget means no scan at all). With
    /// the cluster scan (>= 6.7) the target's cluster (`sd->groups`, flagged
    /// SD_CLUSTER) is walked first, sharing the budget; with the 2022 v2
    /// patch an uncounted pre-scan of the cluster comes first (!SMT only).
    /// Records `select_idle_cpu_cost`.
    pub(super) fn select_idle_cpu(
        &mut self,
        env: &mut WakeEnv,
        p: u32,
        llc: &SchedDomain,
        has_idle_core: bool,
        prev: usize,
        target: usize,
    ) -> Option<(usize, Stage)> {
        let c0 = env.cost_ns;
        let r = self.select_idle_cpu_merged(env, p, llc, has_idle_core, prev, target);
        let _ = env.stats.select_idle_cpu_cost.record(env.cost_ns - c0);
        r
    }

    fn select_idle_cpu_merged(
        &mut self,
        env: &mut WakeEnv,
        p: u32,
        llc: &SchedDomain,
        has_idle_core: bool,
        prev: usize,
        target: usize,
    ) -> Option<(usize, Stage)> {
        let sd: &SchedDomains = env.sd;
        let this = env.this_cpu;
        let mut cpus = llc.span.and(&env.tasks[p as usize].cpus_allowed);

        // 2022 v2 patch (scan_cluster): before SIS_PROP, not counted.
        if self.f.cluster_scan_v2 && !sd.smt_present() {
            if let Some(cls) = sd_cluster(sd, target) {
                for c in cpus.and(cls).iter() {
                    if self.choose_idle_cpu(env, c, p) {
                        return Some((c, Stage::IdleCpuInCluster));
                    }
                }
                if self.f.cluster_v2_pingpong && v2_share_resources(sd, target, prev) {
                    return Some((target, Stage::NoIdleFound));
                }
                cpus.andnot_assign(cls);
            }
        }

        let mut nr: i64 = i64::MAX;
        let mut prop_t0 = None;
        if self.f.sis_prop && !has_idle_core {
            sd.sd_llc(this)?;
            let avg_idle = match self.f.sis_prop_avg {
                SisPropAvg::AvgIdle512 => env.idle_stats[this].avg_idle / 512,
                SisPropAvg::WakeAvgIdle => {
                    // Age the waker's predicted idle time: one halving per
                    // jiffy since it was last woken.
                    let st = &mut env.idle_stats[this];
                    while st.wake_stamp < env.jiffies && st.wake_avg_idle != 0 {
                        st.wake_stamp += 1;
                        st.wake_avg_idle >>= 1;
                    }
                    st.wake_avg_idle
                }
            };
            let avg_cost = *self.scan_cost_slot(env, this) + 1;
            let span_avg = llc.span_weight as u64 * avg_idle;
            nr = if span_avg > 4 * avg_cost {
                (span_avg / avg_cost) as i64
            } else {
                4
            };
            prop_t0 = Some(env.cost_ns);
        }
        if self.f.sis_util {
            nr = env.read_nr_idle_scan(target) as i64 + 1;
            if nr == 1 {
                env.stats.sis_util_no_scan += 1;
                return None;
            }
        }

        let start = self.scan_start(target);
        let mut idle_cpu: Option<(usize, Stage)> = None;

        // >= 6.7: the target's cluster first (first group of sd_llc).
        let g = &llc.groups[0];
        if self.f.cluster_scan && sd.cluster_active() && g.flags & sd_flags::CLUSTER != 0 {
            for c in g.span.iter_wrap(start) {
                if !cpus.test(c) {
                    continue;
                }
                if has_idle_core {
                    let i = self.select_idle_core(
                        env,
                        p,
                        c,
                        &mut cpus,
                        &mut idle_cpu,
                        Stage::IdleCpuInCluster,
                    );
                    if let Some(i) = i {
                        return Some((i, Stage::IdleCore));
                    }
                } else {
                    nr -= 1;
                    if nr <= 0 {
                        return None;
                    }
                    if self.choose_idle_cpu(env, c, p) {
                        return Some((c, Stage::IdleCpuInCluster));
                    }
                }
            }
            cpus.andnot_assign(&g.span);
        }

        let mut cur = cpus.first_wrap(start);
        while let Some(c) = cur {
            if has_idle_core {
                let i =
                    self.select_idle_core(env, p, c, &mut cpus, &mut idle_cpu, Stage::IdleCpuInLlc);
                if let Some(i) = i {
                    return Some((i, Stage::IdleCore));
                }
            } else {
                nr -= 1;
                if nr <= 0 {
                    return None;
                }
                if self.choose_idle_cpu(env, c, p) {
                    idle_cpu = Some((c, Stage::IdleCpuInLlc));
                    break;
                }
            }
            cur = cpus.next_wrap(c, start);
        }

        if has_idle_core {
            let at = if self.f.clear_idle_cores_on_waker {
                this
            } else {
                target
            };
            self.set_idle_cores(env, at, false);
        }
        if let Some(t0) = prop_t0 {
            // The scan's modelled time "spends" predicted idle time and
            // feeds the waker's avg_scan_cost.
            let dt = env.cost_ns - t0;
            if self.f.sis_prop_avg == SisPropAvg::WakeAvgIdle {
                let st = &mut env.idle_stats[this];
                st.wake_avg_idle -= st.wake_avg_idle.min(dt);
            }
            self.update_scan_cost(env, this, dt);
        }
        idle_cpu
    }

    fn update_scan_cost(&mut self, env: &mut WakeEnv, this: usize, dt: u64) {
        let slot = self.scan_cost_slot(env, this);
        update_avg(slot, dt);
        let v = *slot;
        let l = env.llc_of(this);
        env.llc[l].avg_scan_cost = v;
    }

    /// `select_idle_cpu()`, 4.13-5.11 form (kernel/sched/fair.c, read at
    /// v5.8, torvalds/linux @000619680c37): a plain idle-CPU scan of
    /// the LLC from `target`, bounded by SIS_PROP (avg_idle/512 of the
    /// waker's rq over the waker's avg_scan_cost, min 4; `!--nr` so at most
    /// nr-1 probes), optionally skipped by SIS_AVG_CPU. In <= 5.2
    /// (`scan_counts_disallowed`) the walk covers the whole span and
    /// disallowed CPUs use up budget. avg_scan_cost is updated only when the
    /// scan finds a CPU or exhausts the mask. Records
    /// `select_idle_cpu_cost`.
    pub(super) fn select_idle_cpu_separate(
        &mut self,
        env: &mut WakeEnv,
        p: u32,
        llc: &SchedDomain,
        target: usize,
    ) -> Option<usize> {
        let c0 = env.cost_ns;
        let r = self.select_idle_cpu_separate_inner(env, p, llc, target);
        let _ = env.stats.select_idle_cpu_cost.record(env.cost_ns - c0);
        r
    }

    fn select_idle_cpu_separate_inner(
        &mut self,
        env: &mut WakeEnv,
        p: u32,
        llc: &SchedDomain,
        target: usize,
    ) -> Option<usize> {
        let sd: &SchedDomains = env.sd;
        let this = env.this_cpu;
        sd.sd_llc(this)?;
        let avg_idle = match self.f.sis_prop_avg {
            SisPropAvg::AvgIdle512 => env.idle_stats[this].avg_idle / 512,
            SisPropAvg::WakeAvgIdle => env.idle_stats[this].wake_avg_idle,
        };
        let avg_cost = *self.scan_cost_slot(env, this) + 1;
        if self.f.sis_avg_cpu && avg_idle < avg_cost {
            return None;
        }
        let mut nr: i64 = i64::MAX;
        if self.f.sis_prop {
            let span_avg = llc.span_weight as u64 * avg_idle;
            nr = if span_avg > 4 * avg_cost {
                (span_avg / avg_cost) as i64
            } else {
                4
            };
        }
        if self.f.sis_util {
            nr = env.read_nr_idle_scan(target) as i64 + 1;
            if nr == 1 {
                env.stats.sis_util_no_scan += 1;
                return None;
            }
        }
        let t0 = env.cost_ns;
        let allowed = env.tasks[p as usize].cpus_allowed.clone();
        let cpus = if self.f.scan_counts_disallowed {
            llc.span.clone()
        } else {
            llc.span.and(&allowed)
        };
        let mut found = None;
        for c in cpus.iter_wrap(self.scan_start(target)) {
            nr -= 1;
            if nr <= 0 {
                return None;
            }
            if !allowed.test(c) {
                continue;
            }
            if self.choose_idle_cpu(env, c, p) {
                found = Some(c);
                break;
            }
        }
        let dt = env.cost_ns - t0;
        self.update_scan_cost(env, this, dt);
        found
    }
}
