//! Where a run's host time goes, for `--stats`: the share spent inside the
//! modelled kernel's decisions (the placement policy's `select_task_rq` and
//! the load balancer's hooks) against the engine's own event handling.
//!
//! The decisions' cost grows with the machine by design: `select_idle_cpu`
//! probes up to an LLC's run queues and `update_sd_lb_stats` reads every run
//! queue of a domain, as the kernel does. The engine's own cost per event
//! should not grow with the machine; separating the two is how that is
//! checked (`scripts/bench-scale.sh`). Timing reads the host clock twice
//! per call, so it is off unless asked for ([`super::EngineConfig::phase_timing`]).

use std::time::Instant;

/// Host time and scan work of the policy's calls during one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Host ns inside the placement policy (wake-up and fork placement).
    pub placement_ns: u64,
    /// Placement calls.
    pub placement_calls: u64,
    /// Host ns inside the load balancer's hooks.
    pub balance_ns: u64,
    /// Balancer calls.
    pub balance_calls: u64,
    /// Run-queue reads by the balancer (`BalanceEnv::read_rq`): its scan
    /// work, counted like the placement's probes.
    pub balance_rq_reads: u64,
}

impl PhaseTimes {
    /// A placement call that started at `t0` (None: timing off) ended.
    #[inline]
    pub(super) fn placement(&mut self, t0: Option<Instant>) {
        self.placement_calls += 1;
        if let Some(t0) = t0 {
            self.placement_ns += t0.elapsed().as_nanos() as u64;
        }
    }

    /// A balancer call that started at `t0` ended after `rq_reads` run-queue
    /// reads.
    #[inline]
    pub(super) fn balance(&mut self, t0: Option<Instant>, rq_reads: u32) {
        self.balance_calls += 1;
        self.balance_rq_reads += rq_reads as u64;
        if let Some(t0) = t0 {
            self.balance_ns += t0.elapsed().as_nanos() as u64;
        }
    }

    /// Host ns in the modelled kernel's decisions, all kinds.
    pub fn policy_ns(&self) -> u64 {
        self.placement_ns + self.balance_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_reads_are_counted_without_timing() {
        let mut p = PhaseTimes::default();
        p.placement(None);
        p.balance(None, 7);
        p.balance(None, 3);
        assert_eq!(p.placement_calls, 1);
        assert_eq!(p.balance_calls, 2);
        assert_eq!(p.balance_rq_reads, 10);
        assert_eq!(p.policy_ns(), 0);
    }

    #[test]
    fn timed_calls_add_host_time() {
        let mut p = PhaseTimes::default();
        let t0 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        p.placement(Some(t0));
        assert!(p.placement_ns >= 2_000_000);
        assert_eq!(p.policy_ns(), p.placement_ns);
    }
}
