//! The sched_ext built-in idle pick (`scx_select_cpu_dfl()`,
//! kernel/sched/ext_idle.c, mainline as of 2026, which includes 2197cecdb02c
//! "sched_ext: idle: Prioritize idle SMT sibling" for the prev-sibling step):
//! a simple, documented comparator for the Linux path. No has_idle_cores hint: the
//! cascade probes CPUs directly (the kernel keeps idle cpumasks; each probe
//! here stands for a read of that mask's state for the CPU).

use super::{Decision, Placement, Stage, WakeEnv, WakeRequest};
use topology::CpuMask;

/// `scx_select_cpu_dfl` cascade.
#[derive(Default)]
pub struct ScxDefault;

impl ScxDefault {
    fn whole_core_idle(env: &mut WakeEnv, cpu: usize) -> bool {
        let smt = env.topo.smt_mask(cpu);
        smt.iter().all(|s| env.idle_cpu(s))
    }

    fn find_idle_core(
        env: &mut WakeEnv,
        span: &CpuMask,
        allowed: &CpuMask,
        from: usize,
    ) -> Option<usize> {
        let mut seen = CpuMask::new();
        for c in span.iter_wrap(from) {
            if !allowed.test(c) || seen.test(c) {
                continue;
            }
            seen.or_assign(env.topo.smt_mask(c));
            if Self::whole_core_idle(env, c) {
                return Some(c);
            }
        }
        None
    }

    fn find_idle_cpu(
        env: &mut WakeEnv,
        span: &CpuMask,
        allowed: &CpuMask,
        from: usize,
    ) -> Option<usize> {
        span.iter_wrap(from)
            .filter(|&c| allowed.test(c))
            .find(|&c| env.idle_cpu(c))
    }
}

impl Placement for ScxDefault {
    fn name(&self) -> String {
        "scx-default".into()
    }

    fn select_task_rq(&mut self, env: &mut WakeEnv, req: WakeRequest) -> Decision {
        let prev = req.prev_cpu;
        let allowed = env.tasks[req.task as usize].cpus_allowed.clone();
        let llc = env.topo.llc_mask(prev).clone();
        let node = env.topo.node_mask(prev).clone();
        let all = env.topo.all_cpus().clone();
        let d = |cpu, stage| Decision { cpu, stage };
        let smt = env.sd.smt_present();
        if smt {
            if allowed.test(prev) && Self::whole_core_idle(env, prev) {
                return d(prev, Stage::ScxPrevIdleCore);
            }
            for (span, stage) in [
                (&llc, Stage::ScxIdleCoreLlc),
                (&node, Stage::ScxIdleCoreNode),
                (&all, Stage::ScxIdleCoreAny),
            ] {
                if let Some(c) = Self::find_idle_core(env, span, &allowed, prev) {
                    return d(c, stage);
                }
            }
        }
        if allowed.test(prev) && env.idle_cpu(prev) {
            return d(prev, Stage::ScxPrevIdle);
        }
        if smt {
            let sib = env.topo.smt_mask(prev).clone();
            for s in sib.iter() {
                if s != prev && allowed.test(s) && env.idle_cpu(s) {
                    return d(s, Stage::ScxPrevSibling);
                }
            }
        }
        for (span, stage) in [
            (&llc, Stage::ScxIdleCpuLlc),
            (&node, Stage::ScxIdleCpuNode),
            (&all, Stage::ScxIdleCpuAny),
        ] {
            if let Some(c) = Self::find_idle_cpu(env, span, &allowed, prev) {
                return d(c, stage);
            }
        }
        d(prev, Stage::ScxStayPrev)
    }
}
