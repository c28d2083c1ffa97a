//! KVM's halt handling for the host's vCPU threads (virt/kvm/kvm_main.c
//! `kvm_vcpu_halt`, 6.x): a halted vCPU's thread polls for its adaptive
//! `halt_poll_ns` (`grow_halt_poll_ns` / `shrink_halt_poll_ns`) while it is
//! the only task on its CPU, then sleeps until an interrupt for the guest
//! (`kvm_vcpu_kick`) wakes it through the host's try_to_wake_up. The host's
//! scheduler itself is the parent module.

use super::*;

/// KVM's halt-poll growth (virt/kvm/kvm_main.c module parameters,
/// unchanged from 5.x to 6.x): `halt_poll_ns_grow` 2,
/// `halt_poll_ns_grow_start` 10 us, `halt_poll_ns_shrink` 2.
pub const HALT_POLL_GROW: Nanos = 2;
/// `halt_poll_ns_grow_start`.
pub const HALT_POLL_GROW_START: Nanos = 10_000;
/// `halt_poll_ns_shrink`.
pub const HALT_POLL_SHRINK: Nanos = 2;

impl Host<'_> {
    /// The guest halted vCPU `vcpu` of `guest` (HLT / WFI exit): poll while
    /// the thread is alone on its CPU and its window is open, else sleep.
    pub fn halt(&mut self, guest: usize, vcpu: usize, now: Nanos, g: &mut dyn GuestCpus) {
        self.halt_thread(guest, vcpu, now, g);
        self.tell_flags(g);
    }

    fn halt_thread(&mut self, guest: usize, vcpu: usize, now: Nanos, g: &mut dyn GuestCpus) {
        self.now = self.now.max(now);
        let t = self.vcpus[guest][vcpu];
        if self.threads[t].state != ThreadState::Running {
            return;
        }
        self.threads[t].halt_start = self.now;
        let c = self.threads[t].cpu;
        let window = self.threads[t].halt_poll_ns;
        if window > 0 && self.cpus[c].rq.nr_running() == 1 {
            self.set_state(t, ThreadState::Polling);
            self.threads[t].gen = self.threads[t].gen.wrapping_add(1);
            let gen = self.threads[t].gen;
            self.push(
                self.now + window,
                HostEvent::PollEnd {
                    thread: t as u32,
                    gen,
                },
            );
        } else {
            self.block(t, g);
        }
    }

    /// The polling or running vCPU thread `t` sleeps: off its run queue,
    /// and its CPU schedules.
    pub(super) fn block(&mut self, t: usize, g: &mut dyn GuestCpus) {
        let c = self.threads[t].cpu;
        self.sleep(t);
        if self.cpus[c].rq.curr().is_none() || self.cpus[c].rq.curr() == Some(t as u32) {
            self.schedule(c, 0, g);
        }
    }

    /// Thread `t` sleeps and leaves its run queue (its signals stay there
    /// as blocked load); the caller schedules.
    pub(super) fn sleep(&mut self, t: usize) {
        let c = self.threads[t].cpu;
        let was = self.threads[t].state;
        if let ThreadKind::Vcpu { guest, vcpu } = self.threads[t].kind {
            // kvm_sched_out -> kvm_arch_vcpu_put: up to 5.18 the put writes
            // the preempted flag whatever the thread was doing, so a vCPU
            // that stops polling, or blocks in HLT at once, is flagged
            if self.kvm.kvm_preempted_flag == PreemptedFlag::VcpuPut
                && matches!(was, ThreadState::Polling | ThreadState::Running)
            {
                self.flagged
                    .push((guest, vcpu, was == ThreadState::Polling));
            }
        }
        self.set_state(t, ThreadState::Halted);
        self.threads[t].gen = self.threads[t].gen.wrapping_add(1);
        self.update_cpu_pelt(c);
        let now = self.now;
        // dequeue_task(DEQUEUE_SLEEP): under CFS the thread keeps its
        // vruntime for place_entity's sleeper credit when it wakes (the
        // host does not model DELAY_DEQUEUE: `host_params` turns it off)
        let delayed = self.cpus[c]
            .rq
            .dequeue_sleep(&mut self.ents, t as u32, now, &self.params);
        debug_assert!(!delayed, "the host layer runs without DELAY_DEQUEUE");
        self.k.cfs_lists.unlink(t as u32);
        self.sync_cpu(c);
    }

    /// kvm_vcpu_halt's adaptation of the vCPU's poll window to a halt that
    /// lasted `halt_ns` (grow_halt_poll_ns / shrink_halt_poll_ns).
    pub(super) fn adapt_poll(&mut self, t: usize, halt_ns: Nanos) {
        let max = self.halt_poll_max;
        let th = &mut self.threads[t];
        if max == 0 {
            th.halt_poll_ns = 0;
        } else if halt_ns <= th.halt_poll_ns {
            // the poll caught it: keep the window
        } else if th.halt_poll_ns > 0 && halt_ns > max {
            let v = th.halt_poll_ns / HALT_POLL_SHRINK;
            th.halt_poll_ns = if v < HALT_POLL_GROW_START { 0 } else { v };
        } else if th.halt_poll_ns < max && halt_ns < max {
            let v = (th.halt_poll_ns * HALT_POLL_GROW).max(HALT_POLL_GROW_START);
            th.halt_poll_ns = v.min(max);
        }
    }

    /// An interrupt for halted vCPU `vcpu` of `guest` (kvm_vcpu_kick): a
    /// polling thread re-enters the guest; a sleeping one is woken through
    /// the host's try_to_wake_up.
    /// `from`: the vCPU of the same guest whose IPI it is (its thread does
    /// the wake-up on its host CPU); None: the vCPU's own timer (a host
    /// hrtimer on the CPU the thread last ran on).
    pub fn wake(
        &mut self,
        guest: usize,
        vcpu: usize,
        now: Nanos,
        from: Option<usize>,
        g: &mut dyn GuestCpus,
    ) {
        self.wake_thread(guest, vcpu, now, from, g);
        self.tell_flags(g);
    }

    /// vCPU `from` of `guest` sent an IPI to its halted vCPU `vcpu` at
    /// `at`: its thread wakes the halted one then (a host event, so that
    /// it happens in time order).
    pub fn kick(&mut self, guest: usize, vcpu: usize, at: Nanos, from: usize) {
        self.push(
            at.max(self.now),
            HostEvent::Kick {
                guest: guest as u32,
                vcpu: vcpu as u32,
                from: from as u32,
            },
        );
    }

    pub(super) fn wake_thread(
        &mut self,
        guest: usize,
        vcpu: usize,
        now: Nanos,
        from: Option<usize>,
        g: &mut dyn GuestCpus,
    ) {
        self.now = self.now.max(now);
        let t = self.vcpus[guest][vcpu];
        match self.threads[t].state {
            ThreadState::Polling => {
                let halt = self.now - self.threads[t].halt_start;
                self.adapt_poll(t, halt);
                self.threads[t].gen = self.threads[t].gen.wrapping_add(1);
                self.set_state(t, ThreadState::Entering);
                if self.costs.exit_entry_ns == 0 {
                    self.enter_guest(t, g);
                } else {
                    let gen = self.threads[t].gen;
                    self.push(
                        self.now + self.costs.exit_entry_ns,
                        HostEvent::Enter {
                            thread: t as u32,
                            gen,
                        },
                    );
                }
            }
            ThreadState::Halted => {
                let halt = self.now - self.threads[t].halt_start;
                self.adapt_poll(t, halt);
                let waker = from.map(|v| self.vcpus[guest][v]);
                let this_cpu = self.threads[waker.unwrap_or(t)].cpu;
                self.try_to_wake_up(t, waker, this_cpu, g);
            }
            _ => {}
        }
    }
}
