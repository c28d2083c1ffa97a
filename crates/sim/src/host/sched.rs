//! The host's scheduler: its CPUs run the same EEVDF run queues as the
//! guests' ([`crate::eevdf::CfsRq`]), with vCPU threads and noisy
//! neighbours as host tasks, a periodic tick at the host's HZ, wake-up
//! preemption, and KVM's halt handling (virt/kvm/kvm_main.c
//! `kvm_vcpu_halt`, 6.x): a halted vCPU's thread polls for its adaptive
//! `halt_poll_ns` while it is the only task on its CPU, then sleeps until an
//! interrupt for the guest wakes it through the host's try_to_wake_up.
//!
//! Host placement of a waking thread: its only CPU when pinned (libvirt
//! `<vcpupin>`), otherwise its previous CPU when idle, else the first idle
//! CPU it may use after it, else the previous one: the outcome of
//! select_idle_sibling on a host with one LLC, without wake_affine, SIS
//! limits or load balancing (not modelled on the host).

use super::spec::{HostSpec, NoisySpec};
use crate::eevdf::{nice_to_weight, CfsRq, EevdfParams, Entity};
use crate::rq::RunQueue;
use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use topology::CpuMask;

/// KVM's halt-poll growth (virt/kvm/kvm_main.c module parameters,
/// unchanged from 5.x to 6.x): `halt_poll_ns_grow` 2,
/// `halt_poll_ns_grow_start` 10 us, `halt_poll_ns_shrink` 2.
pub const HALT_POLL_GROW: Nanos = 2;
/// `halt_poll_ns_grow_start`.
pub const HALT_POLL_GROW_START: Nanos = 10_000;
/// `halt_poll_ns_shrink`.
pub const HALT_POLL_SHRINK: Nanos = 2;

/// Where a host thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadState {
    /// Asleep (a vCPU that halted and stopped polling).
    Halted,
    /// Current on its CPU, polling for the halted guest (kvm_vcpu_halt).
    Polling,
    /// Runnable, waiting on a run queue (a vCPU's steal).
    Waiting,
    /// Current, switching in and entering the guest.
    Entering,
    /// Current, running guest code (or a noisy thread's work).
    Running,
}

/// Which guest CPU a host thread is, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadKind {
    /// vCPU `vcpu` of guest `guest`.
    Vcpu {
        /// Guest index.
        guest: usize,
        /// vCPU index in the guest.
        vcpu: usize,
    },
    /// A noisy-neighbour compute thread.
    Noisy,
}

/// A vCPU thread's time on the host, ns.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct VcpuTimes {
    /// Current on a host CPU for the guest (guest code, switch and entry).
    pub run_ns: Nanos,
    /// Of `run_ns`: switching in and entering the guest.
    pub entry_ns: Nanos,
    /// Runnable but not running: steal (the thread's run_delay).
    pub steal_ns: Nanos,
    /// Halted: polling on the host, or asleep.
    pub halted_ns: Nanos,
}

struct Thread {
    kind: ThreadKind,
    allowed: CpuMask,
    cpu: usize,
    state: ThreadState,
    since: Nanos,
    gen: u32,
    /// The vCPU's adaptive halt-poll window (vcpu->halt_poll_ns), 0 at boot.
    halt_poll_ns: Nanos,
    halt_start: Nanos,
    times: VcpuTimes,
    preemptions: u64,
    preempted_at: Option<Nanos>,
}

struct HostCpu {
    rq: CfsRq,
    tick_armed: bool,
    tick_offset: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum HostEvent {
    Tick { cpu: u32 },
    PollEnd { thread: u32, gen: u32 },
    Enter { thread: u32, gen: u32 },
}

/// What the host does to the guests' CPUs.
pub trait GuestCpus {
    /// The thread of vCPU `vcpu` of `guest` stopped running guest code at
    /// `now`; `preempted`: the steal-time preempted flag is set.
    fn pause(&mut self, guest: usize, vcpu: usize, now: Nanos, preempted: bool);
    /// It runs guest code again at `now`.
    fn resume(&mut self, guest: usize, vcpu: usize, now: Nanos);
}

/// The host's costs, ns (all 0 under `--costs off`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostCosts {
    /// A host context switch (the host machine's `ctx_switch_ns`).
    pub switch_ns: Nanos,
    /// Waking an idle host CPU: its IPI plus its halt state's exit latency.
    pub wake_ns: Nanos,
    /// A VM exit plus entry ([`super::spec::EXIT_ENTRY_NS`] by default).
    pub exit_entry_ns: Nanos,
    /// The host tick, ns.
    pub tick_ns: Nanos,
}

/// The host: CPUs, threads, events.
pub struct Host {
    params: EevdfParams,
    costs: HostCosts,
    halt_poll_max: Nanos,
    ents: Vec<Entity>,
    threads: Vec<Thread>,
    cpus: Vec<HostCpu>,
    events: BinaryHeap<Reverse<(Nanos, u64, HostEvent)>>,
    seq: u64,
    now: Nanos,
    /// Per guest, per vCPU: the thread.
    vcpus: Vec<Vec<usize>>,
    /// Lengths of the pre-emptions of vCPUs that ran guest code, ns.
    pub preempt_lengths: hdrhistogram::Histogram<u64>,
    /// Host context switches.
    pub switches: u64,
}

impl Host {
    /// A host of `ncpus` CPUs running `spec`'s guests' vCPUs (asleep: the
    /// guests boot idle) and its noisy threads (runnable from time 0).
    pub fn new(
        spec: &HostSpec,
        ncpus: usize,
        params: EevdfParams,
        costs: HostCosts,
        seed: u64,
    ) -> Host {
        let mut rng = crate::rng::Rng::stream(seed, 7);
        let tick = costs.tick_ns.max(1);
        let cpus = (0..ncpus)
            .map(|_| HostCpu {
                rq: CfsRq::default(),
                tick_armed: false,
                // sched_skew_tick: per-CPU tick phase
                tick_offset: rng.below(tick),
            })
            .collect();
        let mut h = Host {
            params,
            costs,
            halt_poll_max: spec.halt_poll_ns,
            ents: Vec::new(),
            threads: Vec::new(),
            cpus,
            events: BinaryHeap::new(),
            seq: 0,
            now: 0,
            vcpus: Vec::new(),
            preempt_lengths: hdrhistogram::Histogram::new(3).expect("histogram"),
            switches: 0,
        };
        for (g, gs) in spec.guests.iter().enumerate() {
            let mut ids = Vec::new();
            for (v, aff) in gs.affinity.iter().enumerate() {
                ids.push(h.add_thread(ThreadKind::Vcpu { guest: g, vcpu: v }, aff.clone()));
            }
            h.vcpus.push(ids);
        }
        for n in &spec.noisy {
            h.add_noisy(n);
        }
        h
    }

    fn add_thread(&mut self, kind: ThreadKind, allowed: CpuMask) -> usize {
        let cpu = allowed.first().unwrap_or(0);
        self.ents
            .push(Entity::new(nice_to_weight(0), self.params.base_slice));
        self.threads.push(Thread {
            kind,
            allowed,
            cpu,
            state: ThreadState::Halted,
            since: 0,
            gen: 0,
            halt_poll_ns: 0,
            halt_start: 0,
            times: VcpuTimes::default(),
            preemptions: 0,
            preempted_at: None,
        });
        self.threads.len() - 1
    }

    fn add_noisy(&mut self, n: &NoisySpec) {
        let cpus: Vec<usize> = n.cpus.iter().collect();
        for i in 0..n.tasks as usize {
            let cpu = cpus[i % cpus.len()];
            let allowed = if n.pinned {
                CpuMask::from_cpus([cpu])
            } else {
                n.cpus.clone()
            };
            let t = self.add_thread(ThreadKind::Noisy, allowed);
            self.threads[t].cpu = cpu;
        }
    }

    /// Start the noisy threads (runnable at time 0).
    pub fn start(&mut self, g: &mut dyn GuestCpus) {
        for t in 0..self.threads.len() {
            if self.threads[t].kind == ThreadKind::Noisy {
                let cpu = self.threads[t].cpu;
                self.enqueue(t, cpu, true, g);
            }
        }
    }

    /// The time of the next host event.
    pub fn next_time(&self) -> Option<Nanos> {
        self.events.peek().map(|Reverse((t, _, _))| *t)
    }

    fn push(&mut self, t: Nanos, ev: HostEvent) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    fn set_state(&mut self, t: usize, s: ThreadState) {
        let now = self.now;
        let th = &mut self.threads[t];
        let d = now - th.since;
        match th.state {
            ThreadState::Running => th.times.run_ns += d,
            ThreadState::Entering => {
                th.times.run_ns += d;
                th.times.entry_ns += d;
            }
            ThreadState::Waiting => th.times.steal_ns += d,
            ThreadState::Halted | ThreadState::Polling => th.times.halted_ns += d,
        }
        th.since = now;
        th.state = s;
    }

    /// Process the next host event.
    pub fn step(&mut self, g: &mut dyn GuestCpus) {
        let Some(Reverse((t, _, ev))) = self.events.pop() else {
            return;
        };
        self.now = self.now.max(t);
        match ev {
            HostEvent::Tick { cpu } => self.tick(cpu as usize, g),
            HostEvent::PollEnd { thread, gen } => {
                let th = thread as usize;
                if self.threads[th].gen == gen && self.threads[th].state == ThreadState::Polling {
                    // the poll window passed without a wake-up: sleep
                    self.block(th, g);
                }
            }
            HostEvent::Enter { thread, gen } => {
                let th = thread as usize;
                if self.threads[th].gen == gen && self.threads[th].state == ThreadState::Entering {
                    self.enter_guest(th, g);
                }
            }
        }
    }

    fn enter_guest(&mut self, th: usize, g: &mut dyn GuestCpus) {
        self.set_state(th, ThreadState::Running);
        if let Some(at) = self.threads[th].preempted_at.take() {
            let _ = self.preempt_lengths.record(self.now - at);
        }
        if let ThreadKind::Vcpu { guest, vcpu } = self.threads[th].kind {
            g.resume(guest, vcpu, self.now);
        }
    }

    fn arm_tick(&mut self, c: usize) {
        if self.cpus[c].tick_armed {
            return;
        }
        self.cpus[c].tick_armed = true;
        let tick = self.costs.tick_ns.max(1);
        let off = self.cpus[c].tick_offset;
        let next = (self.now.saturating_sub(off) / tick + 1) * tick + off;
        self.push(next, HostEvent::Tick { cpu: c as u32 });
    }

    fn tick(&mut self, c: usize, g: &mut dyn GuestCpus) {
        self.cpus[c].tick_armed = false;
        if self.cpus[c].rq.curr().is_none() {
            return;
        }
        if self.cpus[c].rq.update_curr(&mut self.ents, self.now) {
            // update_deadline -> resched_curr from the tick
            self.schedule(c, 0, g);
        }
        if self.cpus[c].rq.curr().is_some() {
            self.arm_tick(c);
        }
    }

    /// select_task_rq of a waking host thread (see the module doc).
    fn select_cpu(&self, t: usize) -> usize {
        let th = &self.threads[t];
        if th.allowed.weight() == 1 {
            return th.allowed.first().unwrap_or(th.cpu);
        }
        let idle = |c: usize| self.cpus[c].rq.nr_running() == 0;
        if th.allowed.test(th.cpu) && idle(th.cpu) {
            return th.cpu;
        }
        th.allowed
            .iter_wrap(th.cpu)
            .find(|&c| idle(c))
            .unwrap_or(if th.allowed.test(th.cpu) {
                th.cpu
            } else {
                th.allowed.first().unwrap_or(0)
            })
    }

    /// Enqueue runnable thread `t` on `cpu` and kick or preempt the CPU.
    fn enqueue(&mut self, t: usize, cpu: usize, initial: bool, g: &mut dyn GuestCpus) {
        self.threads[t].cpu = cpu;
        self.set_state(t, ThreadState::Waiting);
        let idle = self.cpus[cpu].rq.curr().is_none();
        // a vCPU polling there stops: kvm_vcpu_can_poll needs
        // single_task_running()
        if let Some(cur) = self.cpus[cpu].rq.curr() {
            if self.threads[cur as usize].state == ThreadState::Polling {
                self.block(cur as usize, g);
            }
        }
        let resched =
            self.cpus[cpu]
                .rq
                .enqueue(&mut self.ents, t as u32, self.now, initial, &self.params);
        let now = self.now;
        if idle || self.cpus[cpu].rq.curr().is_none() {
            let delay = if idle { self.costs.wake_ns } else { 0 };
            self.schedule(cpu, delay, g);
        } else if resched
            || self.cpus[cpu]
                .rq
                .check_preempt_wakeup(&mut self.ents, t as u32, now, &self.params)
        {
            self.schedule(cpu, 0, g);
        }
    }

    /// __schedule on host CPU `c`; the next thread starts after `delay`
    /// (an idle CPU's wake-up) plus the switch and, for a vCPU, the entry.
    fn schedule(&mut self, c: usize, delay: Nanos, g: &mut dyn GuestCpus) {
        let now = self.now;
        let prev = self.cpus[c].rq.curr();
        let next = self.cpus[c].rq.pick_next(&self.ents, &self.params);
        self.cpus[c].rq.set_next(&mut self.ents, next, now);
        if prev == next {
            return;
        }
        if let Some(p) = prev.map(|p| p as usize) {
            // a still-runnable prev goes back to waiting
            let st = self.threads[p].state;
            if matches!(st, ThreadState::Running | ThreadState::Entering) {
                self.threads[p].gen = self.threads[p].gen.wrapping_add(1);
                self.set_state(p, ThreadState::Waiting);
                if st == ThreadState::Running {
                    if let ThreadKind::Vcpu { guest, vcpu } = self.threads[p].kind {
                        // scheduled out while running guest code: the
                        // steal-time preempted flag is set
                        self.threads[p].preemptions += 1;
                        self.threads[p].preempted_at = Some(now);
                        g.pause(guest, vcpu, now, true);
                    }
                }
            }
        }
        let Some(n) = next.map(|n| n as usize) else {
            return;
        };
        self.switches += 1;
        self.threads[n].gen = self.threads[n].gen.wrapping_add(1);
        let start = delay + self.costs.switch_ns;
        match self.threads[n].kind {
            ThreadKind::Noisy => self.set_state(n, ThreadState::Running),
            ThreadKind::Vcpu { .. } => {
                self.set_state(n, ThreadState::Entering);
                let at = start + self.costs.exit_entry_ns;
                if at == 0 {
                    self.enter_guest(n, g);
                } else {
                    let gen = self.threads[n].gen;
                    self.push(
                        now + at,
                        HostEvent::Enter {
                            thread: n as u32,
                            gen,
                        },
                    );
                }
            }
        }
        self.arm_tick(c);
    }

    /// The guest halted vCPU `vcpu` of `guest` (HLT / WFI exit): poll while
    /// the thread is alone on its CPU and its window is open, else sleep.
    pub fn halt(&mut self, guest: usize, vcpu: usize, now: Nanos, g: &mut dyn GuestCpus) {
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
    fn block(&mut self, t: usize, g: &mut dyn GuestCpus) {
        let c = self.threads[t].cpu;
        self.set_state(t, ThreadState::Halted);
        self.threads[t].gen = self.threads[t].gen.wrapping_add(1);
        let now = self.now;
        self.cpus[c]
            .rq
            .dequeue(&mut self.ents, t as u32, now, &self.params);
        if self.cpus[c].rq.curr().is_none() || self.cpus[c].rq.curr() == Some(t as u32) {
            self.schedule(c, 0, g);
        }
    }

    /// kvm_vcpu_halt's adaptation of the vCPU's poll window to a halt that
    /// lasted `halt_ns` (grow_halt_poll_ns / shrink_halt_poll_ns).
    fn adapt_poll(&mut self, t: usize, halt_ns: Nanos) {
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
    pub fn wake(&mut self, guest: usize, vcpu: usize, now: Nanos, g: &mut dyn GuestCpus) {
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
                let cpu = self.select_cpu(t);
                self.enqueue(t, cpu, false, g);
            }
            _ => {}
        }
    }

    /// Guest `guest` finished: its vCPUs halt for good.
    pub fn retire(&mut self, guest: usize, now: Nanos, g: &mut dyn GuestCpus) {
        self.now = self.now.max(now);
        for v in 0..self.vcpus[guest].len() {
            let t = self.vcpus[guest][v];
            match self.threads[t].state {
                ThreadState::Halted => {}
                ThreadState::Waiting => {
                    let c = self.threads[t].cpu;
                    self.set_state(t, ThreadState::Halted);
                    self.threads[t].gen = self.threads[t].gen.wrapping_add(1);
                    let now = self.now;
                    self.cpus[c]
                        .rq
                        .dequeue(&mut self.ents, t as u32, now, &self.params);
                }
                _ => self.block(t, g),
            }
        }
    }

    /// Bring every thread's accounting to `now`.
    pub fn finish(&mut self, now: Nanos) {
        self.now = self.now.max(now);
        for t in 0..self.threads.len() {
            let s = self.threads[t].state;
            self.set_state(t, s);
        }
    }

    /// Current host time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The host time of vCPU `vcpu` of `guest`.
    pub fn vcpu_times(&self, guest: usize, vcpu: usize) -> VcpuTimes {
        self.threads[self.vcpus[guest][vcpu]].times
    }

    /// Times the host scheduled vCPU `vcpu` of `guest` out while it ran
    /// guest code.
    pub fn vcpu_preemptions(&self, guest: usize, vcpu: usize) -> u64 {
        self.threads[self.vcpus[guest][vcpu]].preemptions
    }

    /// Whether a vCPU thread is on its way back into its guest (runnable
    /// or entering): the host must run for the guests to go on.
    pub fn vcpus_pending(&self) -> bool {
        self.threads.iter().any(|t| {
            matches!(t.kind, ThreadKind::Vcpu { .. })
                && matches!(t.state, ThreadState::Waiting | ThreadState::Entering)
        })
    }

    /// The host state of a vCPU thread.
    pub fn vcpu_state(&self, guest: usize, vcpu: usize) -> ThreadState {
        self.threads[self.vcpus[guest][vcpu]].state
    }

    /// The `--check` accounting identity: for every vCPU, guest time plus
    /// steal plus halted time equals the host time elapsed.
    pub fn check_accounting(&self) -> Result<(), String> {
        for (g, ids) in self.vcpus.iter().enumerate() {
            for (v, &t) in ids.iter().enumerate() {
                let x = self.threads[t].times;
                let sum = x.run_ns + x.steal_ns + x.halted_ns;
                if sum != self.now {
                    return Err(format!(
                        "guest {g} vCPU {v}: guest {} + steal {} + halted {} != host time {}",
                        x.run_ns, x.steal_ns, x.halted_ns, self.now
                    ));
                }
            }
        }
        Ok(())
    }
}
