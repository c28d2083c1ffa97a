//! Periodic LLC balance (SIS_UTIL producer).

use super::{Engine, Mode};
use crate::event::Event;
use crate::rq::RunQueue;

impl<'t, R: RunQueue> Engine<'t, R> {
    /// The periodic balance at the LLC level, one check per child group of
    /// the LLC domain per tick: should_we_balance lets the group's first
    /// idle CPU (else its first CPU) balance, when balance_interval (span
    /// weight ms, × busy_factor if that CPU is busy) has passed since the
    /// group last balanced. Until load balancing is modelled, the pass only
    /// runs the policy's hook (update_idle_cpu_scan for SIS_UTIL). The
    /// kernel re-checks on every tick of the balancing CPU or via nohz idle
    /// balance; here every group is checked at tick rate.
    pub(super) fn llc_balance(&mut self, l: usize, g: usize) {
        let Some(dom) = self.sd.llc_ids().get(l).and_then(|&f| self.sd.sd_llc(f)) else {
            return;
        };
        let group = &dom.groups[g].span;
        let cpu = group
            .iter()
            .find(|&c| self.cpu_state[c].curr_is_idle && self.cpu_state[c].nr_running == 0)
            .or(group.first())
            .unwrap_or(0);
        let busy = self.cpus[cpu].mode == Mode::Busy;
        let interval_ms =
            dom.min_interval_ms.max(1) * if busy { dom.busy_factor as u64 } else { 1 };
        let due =
            self.llc_last_balance[l][g].is_none_or(|t| self.now >= t + interval_ms * 1_000_000);
        if due {
            self.llc_last_balance[l][g] = Some(self.now);
            // refresh the signals the balancer reads
            for c in dom.span.iter() {
                self.update_rq_pelt(c);
            }
            // Load balancing is not modelled yet, so the sweep's reads are
            // not charged (a kernel pays them with or without SIS_UTIL) and
            // are not placement cost; the nr_idle_scan write still lands on
            // the LLC line from this CPU, so later readers pay the transfer.
            let _ = self.wake_env_call(cpu, |p, env| p.llc_balance(env, cpu));
        }
        self.events.push(
            self.now + self.tick_ns,
            Event::LlcBalance {
                llc: l as u32,
                group: g as u32,
            },
        );
    }
}
