//! The simulator's side of a scenario: the machine state a [`Setup`]
//! describes, handed to the simulator's Linux wake-up path
//! (`sim::placement::linux::LinuxPlacement::select_task_rq_fair`) for the
//! chosen kernel profile. The state is what the guest holds at the moment
//! of the wake-up: busy loops and the waker running (nr_running 1, PELT
//! load and utilisation at their ceiling, 1024), every other CPU idle;
//! `has_idle_cores` set in an LLC with a wholly idle core (as
//! update_idle_core leaves it when the last thread of a core goes idle);
//! SIS_UTIL's `nr_idle_scan` from the LLC's utilisation as its periodic
//! balance would compute it; the wakee's `recent_used_cpu` from the setup.

use crate::error::OracleError;
use crate::scenario::{Setup, Wake};
use sim::balance::linux::sis_util_nr_scan;
use sim::costs::MachineCosts;
use sim::kernel::Kernel;
use sim::placement::linux::{Features, LinuxPlacement};
use sim::placement::{wf, Decision, WakeRequest};
use topology::{SchedDomains, Topology};

/// The simulator's decision for `s` on `t` with kernel profile `kernel`.
pub fn decide(t: &Topology, s: &Setup, kernel: &str) -> Result<Decision, OracleError> {
    let f = Features::kernel(kernel).map_err(|e| OracleError::Arg {
        flag: "--sim-kernel".into(),
        why: e.to_string(),
    })?;
    Ok(decide_with(t, s, f))
}

/// The simulator's decision for `s` on `t` with the wake-up path's
/// features `f` (a kernel profile with any overrides applied): the
/// kernel's `select_task_rq` ([`sim::kernel::Kernel`], as a run calls it)
/// on a kernel whose state is set as the module doc says.
pub fn decide_with(t: &Topology, s: &Setup, f: Features) -> Decision {
    let sd = SchedDomains::build(t, &f.domain_options());
    let mut costs = MachineCosts::for_machine(t.name()).zeroed();
    // HZ 250: the flip decay below counts in its jiffies
    costs.hz = 250;
    let mut k = Kernel::boot(t, &sd, costs, Box::new(LinuxPlacement::new(f.clone())));
    k.vcpu_preempt_check = f.vcpu_preempt_check();
    k.sched_idle_as_idle = f.sched_idle_as_idle();
    let busy = |c: usize| s.busy.contains(&c) || (c == s.waker);
    for (c, st) in k.cpu_state.iter_mut().enumerate() {
        if busy(c) {
            st.nr_running = 1;
            st.curr_is_idle = false;
            st.load_avg = 1024;
            st.util_avg = 1024;
            st.runnable_avg = 1024;
        }
    }
    for &first in sd.llc_ids() {
        let l = sd.llc_index(first);
        let Some(dom) = sd.sd_llc(first) else {
            continue;
        };
        let span: Vec<usize> = dom.span.iter().collect();
        let sum_util: u64 = span.iter().map(|&c| k.cpu_state[c].util_avg).sum();
        let llc = &mut k.llc[l];
        llc.nr_busy_cpus = span.iter().filter(|&&c| busy(c)).count() as u32;
        llc.has_idle_cores =
            sd.smt_present() && span.iter().any(|&c| t.smt_mask(c).iter().all(|x| !busy(x)));
        llc.nr_idle_scan =
            sis_util_nr_scan(sum_util, dom.span_weight as u64, dom.imbalance_pct as u64);
    }
    let now = 1000 * k.tick_ns;
    let jiffies = k.jiffies(now);
    // task 0: the wakee; task 1: the waker
    k.add_task(t.all_cpus().clone(), s.prev);
    k.add_task(t.all_cpus().clone(), s.waker);
    k.tplace[0].recent_used_cpu = s.recent.unwrap_or(s.prev);
    if let Some((n_waker, n_wakee)) = s.flips {
        // the flips of one round (record_wakee adds the wakee itself)
        k.tplace[1].wakee_flips = n_waker;
        k.tplace[1].wakee_flip_decay_ts = jiffies;
        k.tplace[0].wakee_flips = n_wakee;
        k.tplace[0].wakee_flip_decay_ts = jiffies;
    }
    let flags = match s.wake {
        Wake::Futex => wf::TTWU,
        Wake::Pipe => wf::TTWU | wf::SYNC,
        Wake::Fork => wf::FORK,
    };
    let sel = k.select_task_rq(
        WakeRequest {
            task: 0,
            prev_cpu: s.prev,
            wake_flags: flags,
            waker: Some(1),
        },
        s.waker,
        now,
    );
    Decision {
        cpu: sel.cpu,
        stage: sel.stage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::setup;
    use sim::placement::Stage;

    fn xeon() -> Topology {
        topology::machine("smp:sockets=2,cores=6,threads=2,nodes=2,slit=10:20/20:10").unwrap()
    }

    /// Each scenario reaches the stage it is named after in the 6.1 model
    /// (worked out by hand from the setups in scenario.rs).
    #[test]
    fn scenarios_reach_their_stage_in_6_1() {
        let t = xeon();
        let d = |n: &str| decide(&t, &setup(n, &t).unwrap(), "linux-6.1").unwrap();
        assert_eq!(
            d("target-idle"),
            Decision {
                cpu: 2,
                stage: Stage::TargetIdle
            }
        );
        assert_eq!(
            d("prev-idle"),
            Decision {
                cpu: 2,
                stage: Stage::PrevIdle
            }
        );
        assert_eq!(
            d("recent-used"),
            Decision {
                cpu: 10,
                stage: Stage::RecentUsedCpu
            }
        );
        let ic = d("idle-core");
        assert_eq!(ic.stage, Stage::IdleCore);
        assert!(ic.cpu == 10 || ic.cpu == 11, "{ic:?}");
        let il = d("idle-cpu-llc");
        assert_eq!(il.stage, Stage::IdleCpuInLlc);
        assert_eq!(il.cpu % 2, 1, "an idle sibling: {il:?}");
        let ws = d("wake-affine-sync");
        assert!(ws.cpu < 12, "the waker's LLC: {ws:?}");
        assert_eq!(
            d("wake-affine-prev"),
            Decision {
                cpu: 12,
                stage: Stage::TargetIdle
            }
        );
        // wake_wide: no affine target, prev (idle, remote) is kept
        assert_eq!(
            d("wake-wide"),
            Decision {
                cpu: 12,
                stage: Stage::TargetIdle
            }
        );
        let fk = d("fork");
        assert_eq!(fk.stage, Stage::SlowPath);
        assert!(fk.cpu >= 12, "the idle node: {fk:?}");
    }
}
