//! The host's scheduler: its CPUs run the same EEVDF run queues as the
//! guests' ([`crate::eevdf::CfsRq`]), with vCPU threads and noisy
//! neighbours as host tasks, a periodic tick at the host's HZ and wake-up
//! preemption. KVM's halt handling (a halted vCPU's thread polls, then
//! sleeps until an interrupt for the guest wakes it) is `host/halt.rs`.
//!
//! Placement and balancing are the simulator's Linux code for the host
//! kernel profile, over the host's own state ([`super::linux`]): a waking
//! thread that may use several CPUs goes through select_task_rq_fair
//! (wake_affine, select_idle_sibling and its scans), a pinned one to its
//! CPU (select_task_rq calls the class only when `nr_cpus_allowed > 1`);
//! the load balancer runs from the host tick, when a host CPU finds
//! nothing to run (newidle) and for tickless idle CPUs (nohz idle
//! balance, active balance by the stopper): `host/balance.rs`. PELT
//! signals of host threads and CPUs feed both.
//!
//! Who wakes a halted vCPU's thread: an IPI from another vCPU is delivered
//! by the sending vCPU's thread, which calls kvm_vcpu_kick() ->
//! kvm_vcpu_wake_up() (a try_to_wake_up: swake_up_one in 5.x,
//! rcuwait_wake_up from 5.13) on its own host CPU, so the waker is that
//! thread and `this_cpu` its CPU (WF_TTWU, not sync); a guest timer is the
//! vCPU's emulated APIC timer, a host hrtimer whose callback
//! (arch/x86/kvm/lapic.c apic_timer_fn -> apic_timer_expired ->
//! kvm_vcpu_kick) runs on the CPU the thread last ran on, with no waking
//! task.

use super::kvm::PreemptedFlag;
use super::spec::{HostSpec, NoisySpec};
use crate::eevdf::{nice_to_weight, CfsRq, EevdfParams, Entity};
use crate::kernel::{FairCpu, Kernel};
use crate::pelt::Pelt;
use crate::placement::{wf, WakeRequest};
use crate::rq::RunQueue;
use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use topology::CpuMask;

#[path = "halt.rs"]
mod halt;

pub use halt::{HALT_POLL_GROW, HALT_POLL_GROW_START, HALT_POLL_SHRINK};

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

pub(super) struct Thread {
    kind: ThreadKind,
    pub(super) cpu: usize,
    pub(super) state: ThreadState,
    since: Nanos,
    gen: u32,
    /// The vCPU's adaptive halt-poll window (vcpu->halt_poll_ns), 0 at boot.
    halt_poll_ns: Nanos,
    halt_start: Nanos,
    times: VcpuTimes,
    preemptions: u64,
    preempted_at: Option<Nanos>,
    /// PELT signals of the thread (load, runnable, util).
    pub(super) pelt: Pelt,
    /// Times its host CPU changed (wake-up placement or balancing).
    pub(super) migrations: u64,
    /// The host CPU it last ran on (None before its first run).
    last_ran: Option<usize>,
    /// That CPU's switch count when it last switched in there.
    ran_at_switch: u64,
}

pub(super) struct HostCpu {
    pub(super) rq: CfsRq,
    /// PELT signals of the CPU's fair run queue.
    pub(super) pelt: Pelt,
    /// In the idle loop (entered through `enter_idle`), not just between
    /// two threads.
    idle: bool,
    tick_armed: bool,
    tick_offset: Nanos,
    /// Switches to a thread on this CPU so far (the refill's reuse distance).
    switch_seq: u64,
    /// The process whose address space the CPU last ran (a guest's QEMU
    /// process, or a noisy thread's own).
    last_proc: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum HostEvent {
    Tick {
        cpu: u32,
    },
    PollEnd {
        thread: u32,
        gen: u32,
    },
    Enter {
        thread: u32,
        gen: u32,
    },
    /// The nohz idle-balance IPI reaches `cpu`.
    IlbKick {
        cpu: u32,
    },
    /// The stopper of `src` pushes a thread to `dst` (active balance).
    Stopper {
        src: u32,
        dst: u32,
    },
    /// vCPU `from` of `guest` sends an IPI to its halted vCPU `vcpu`
    /// (kvm_vcpu_kick in the sender's thread).
    Kick {
        guest: u32,
        vcpu: u32,
        from: u32,
    },
}

/// What the host does to the guests' CPUs.
pub trait GuestCpus {
    /// The thread of vCPU `vcpu` of `guest` stopped running guest code at
    /// `now`; `preempted`: the steal-time preempted flag is set.
    fn pause(&mut self, guest: usize, vcpu: usize, now: Nanos, preempted: bool);
    /// It runs guest code again at `now`.
    fn resume(&mut self, guest: usize, vcpu: usize, now: Nanos);
    /// The host set the preempted flag of halted vCPU `vcpu` of `guest` as
    /// its thread was scheduled out (the 4.9-5.18 rule,
    /// [`super::kvm::PreemptedFlag::VcpuPut`]); `polled`: it was
    /// halt-polling, else it blocked in HLT at once.
    fn flag_halted(&mut self, guest: usize, vcpu: usize, polled: bool);
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
pub struct Host<'h> {
    pub(super) params: EevdfParams,
    pub(super) costs: HostCosts,
    halt_poll_max: Nanos,
    pub(super) ents: Vec<Entity>,
    pub(super) threads: Vec<Thread>,
    pub(super) cpus: Vec<HostCpu>,
    events: BinaryHeap<Reverse<(Nanos, u64, HostEvent)>>,
    seq: u64,
    pub(super) now: Nanos,
    /// The host kernel's placement and balancing state.
    pub(super) k: Kernel<'h>,
    /// Per guest, per vCPU: the thread.
    vcpus: Vec<Vec<usize>>,
    /// Lengths of the pre-emptions of vCPUs that ran guest code, ns.
    pub preempt_lengths: hdrhistogram::Histogram<u64>,
    /// Host context switches.
    pub switches: u64,
    /// Balancer moves the run queues did not allow when applied (a bug if
    /// ever non-zero; `--check` fails on it).
    pub dropped_moves: u64,
    /// The host kernel's KVM rules.
    kvm: super::kvm::KvmFeatures,
    /// Halted vCPUs flagged pre-empted since the guests were last told:
    /// (guest, vCPU, it was polling).
    flagged: Vec<(usize, usize, bool)>,
}

impl<'h> Host<'h> {
    /// A host running `spec`'s guests' vCPUs (asleep: the guests boot idle)
    /// and its noisy threads (runnable from time 0) on the CPUs of `k`.
    pub fn new(
        spec: &HostSpec,
        k: Kernel<'h>,
        params: EevdfParams,
        costs: HostCosts,
        seed: u64,
    ) -> Host<'h> {
        let mut rng = crate::rng::Rng::stream(seed, 7);
        let tick = costs.tick_ns.max(1);
        let cpus = (0..k.topo.nr_cpus())
            .map(|c| HostCpu {
                rq: {
                    // the host kernel's discipline and its rules
                    let mut rq = CfsRq::default();
                    rq.configure(&params);
                    rq.set_rq_id(c as u32 + 1);
                    rq
                },
                pelt: Pelt::new(0),
                idle: true,
                tick_armed: false,
                // sched_skew_tick: per-CPU tick phase
                tick_offset: rng.below(tick),
                switch_seq: 0,
                last_proc: None,
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
            k,
            vcpus: Vec::new(),
            preempt_lengths: hdrhistogram::Histogram::new(3).expect("histogram"),
            switches: 0,
            dropped_moves: 0,
            kvm: super::kvm::KvmFeatures::for_version(
                crate::placement::linux::Features::kernel(&spec.kernel)
                    .map_or((7, 0), |f| f.version()),
            ),
            flagged: Vec::new(),
        };
        for (g, gs) in spec.guests.iter().enumerate() {
            let mut ids = Vec::new();
            for (v, aff) in gs.affinity.iter().enumerate() {
                let cpu = aff.first().unwrap_or(0);
                ids.push(h.add_thread(ThreadKind::Vcpu { guest: g, vcpu: v }, aff.clone(), cpu));
            }
            h.vcpus.push(ids);
        }
        for n in &spec.noisy {
            h.add_noisy(n);
        }
        h.boot_balancer();
        h
    }

    fn add_thread(&mut self, kind: ThreadKind, allowed: CpuMask, cpu: usize) -> usize {
        self.ents
            .push(Entity::new(nice_to_weight(0), self.params.base_slice));
        self.k.add_task(allowed, cpu);
        self.threads.push(Thread {
            kind,
            cpu,
            state: ThreadState::Halted,
            since: 0,
            gen: 0,
            halt_poll_ns: 0,
            halt_start: 0,
            times: VcpuTimes::default(),
            preemptions: 0,
            preempted_at: None,
            pelt: Pelt::new(0),
            migrations: 0,
            last_ran: None,
            ran_at_switch: 0,
        });
        self.threads.len() - 1
    }

    fn add_noisy(&mut self, n: &NoisySpec) {
        let cpus: Vec<usize> = n.cpus.iter().collect();
        for i in 0..n.tasks as usize {
            let cpu = n.start.unwrap_or(cpus[i % cpus.len()]);
            let allowed = if n.pinned {
                CpuMask::from_cpus([cpu])
            } else {
                n.cpus.clone()
            };
            self.add_thread(ThreadKind::Noisy, allowed, cpu);
        }
    }

    /// Start the noisy threads (runnable at time 0). The guests boot idle:
    /// each vCPU thread is asleep after a HLT exit, flagged pre-empted under
    /// the 4.9-5.18 rule as its block in HLT left it.
    pub fn start(&mut self, g: &mut dyn GuestCpus) {
        for t in 0..self.threads.len() {
            if let ThreadKind::Vcpu { guest, vcpu } = self.threads[t].kind {
                if self.kvm.kvm_preempted_flag == PreemptedFlag::VcpuPut {
                    self.flagged.push((guest, vcpu, false));
                }
            }
        }
        for t in 0..self.threads.len() {
            if self.threads[t].kind == ThreadKind::Noisy {
                let cpu = self.threads[t].cpu;
                self.set_state(t, ThreadState::Waiting);
                let resched = self.activate_task(t, cpu, false, true);
                self.wakeup_preempt(t, cpu, resched, 0, self.costs.wake_ns, g);
            }
        }
        self.tell_flags(g);
    }

    /// Tell the guests which of their halted vCPUs the host flagged
    /// pre-empted since they were last told (the flag is written as the
    /// thread is scheduled out, in the host's step that did it; the guests
    /// run only between the host's steps, so none reads it late).
    pub(super) fn tell_flags(&mut self, g: &mut dyn GuestCpus) {
        for (guest, vcpu, polled) in self.flagged.drain(..) {
            g.flag_halted(guest, vcpu, polled);
        }
    }

    /// The time of the next host event.
    pub fn next_time(&self) -> Option<Nanos> {
        self.events.peek().map(|Reverse((t, _, _))| *t)
    }

    pub(super) fn push(&mut self, t: Nanos, ev: HostEvent) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    /// Advance thread `t`'s PELT signals to now over the state it was in
    /// (runnable unless halted; running while current on its CPU, polling
    /// included).
    pub(super) fn update_thread_pelt(&mut self, t: usize) {
        let th = &mut self.threads[t];
        let runnable = th.state != ThreadState::Halted;
        let running = matches!(
            th.state,
            ThreadState::Polling | ThreadState::Entering | ThreadState::Running
        );
        th.pelt.update(
            self.now,
            runnable as u64,
            runnable as u64,
            running,
            self.ents[t].weight,
        );
        let tp = &mut self.k.tplace[t];
        tp.load_avg = th.pelt.load_avg;
        tp.util_avg = th.pelt.util_avg;
    }

    /// Advance host CPU `c`'s run-queue PELT signals to now, then refresh
    /// what placement and balancing see of it.
    pub(super) fn update_cpu_pelt(&mut self, c: usize) {
        self.cpus[c].update_cfs_rq_load_avg(self.now);
        self.sync_cpu(c);
    }

    /// The thread current on host CPU `c`, unless it just left the run
    /// queue (a thread that sleeps stays `curr` until the next pick).
    pub(super) fn running(&self, c: usize) -> Option<u32> {
        self.cpus[c]
            .rq
            .curr()
            .filter(|&p| self.ents[p as usize].on_rq)
    }

    /// The placement view of host CPU `c` in sync with its run queue.
    pub(super) fn sync_cpu(&mut self, c: usize) {
        let idle = self.running(c).is_none();
        let cpu = &self.cpus[c];
        let st = &mut self.k.cpu_state[c];
        st.nr_running = cpu.rq.nr_running();
        st.nr_idle_tasks = 0;
        st.curr_is_idle = idle;
        st.load_avg = cpu.pelt.load_avg;
        st.util_avg = cpu.pelt.util_avg.min(1024);
        st.runnable_avg = cpu.pelt.runnable_avg;
    }

    fn set_state(&mut self, t: usize, s: ThreadState) {
        self.update_thread_pelt(t);
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
        self.step_event(g);
        self.tell_flags(g);
    }

    fn step_event(&mut self, g: &mut dyn GuestCpus) {
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
            HostEvent::IlbKick { cpu } => self.ilb_kick_arrives(cpu as usize, g),
            HostEvent::Stopper { src, dst } => self.run_stopper(src as usize, dst as usize, g),
            HostEvent::Kick { guest, vcpu, from } => {
                let now = self.now;
                self.wake_thread(guest as usize, vcpu as usize, now, Some(from as usize), g);
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
        let Some(cur) = self.cpus[c].rq.curr() else {
            // tickless idle
            return;
        };
        // task_tick_fair -> entity_tick
        let resched = self.cpus[c]
            .rq
            .task_tick(&mut self.ents, self.now, &self.params);
        self.update_thread_pelt(cur as usize);
        if resched {
            // update_deadline (EEVDF) or check_preempt_tick (CFS) ->
            // resched_curr from the tick
            self.schedule(c, 0, g);
        }
        self.update_cpu_pelt(c);
        // sched_tick -> sched_balance_trigger (the CPU runs a thread)
        self.balance_tick(c, g);
        if self.cpus[c].rq.curr().is_some() {
            self.arm_tick(c);
        }
    }

    /// try_to_wake_up of halted thread `t` by `waker` (a host thread) on
    /// `this_cpu`: select_task_rq, then the enqueue. The decision and the
    /// waker's write of the target run queue are work done before the
    /// wakee can start (its lead); an idle target CPU adds its IPI and
    /// exit latency.
    fn try_to_wake_up(
        &mut self,
        t: usize,
        waker: Option<usize>,
        this_cpu: usize,
        g: &mut dyn GuestCpus,
    ) {
        let prev = self.threads[t].cpu;
        let req = WakeRequest {
            task: t as u32,
            prev_cpu: prev,
            wake_flags: wf::TTWU,
            waker: waker.map(|w| w as u32),
        };
        self.k.lines.now = self.now;
        let sel = self.k.select_task_rq(req, this_cpu, self.now);
        let (cpu, cost) = (sel.cpu, sel.cost);
        self.set_state(t, ThreadState::Waiting);
        if cpu != prev {
            // set_task_cpu -> migrate_task_rq_fair on prev
            let se = self.threads[t].pelt;
            self.cpus[prev].migrate_task_rq_fair(&mut self.ents, t as u32, &se, self.now);
            self.sync_cpu(prev);
            self.threads[t].migrations += 1;
        }
        self.threads[t].cpu = cpu;
        let write = {
            let k = &mut self.k;
            k.lines.now = self.now;
            k.lines
                .write(k.cpu_state[cpu].line, this_cpu, k.topo, &k.costs)
        };
        let resched = self.activate_task(t, cpu, cpu != prev, false);
        self.wakeup_preempt(t, cpu, resched, cost + write, self.costs.wake_ns, g);
    }

    /// activate_task: put runnable thread `t` on `cpu`'s run queue (its
    /// signals join the CPU's with `attach`: it arrives from another CPU);
    /// `initial`: a new thread's first enqueue (ENQUEUE_INITIAL); a vCPU
    /// polling there stops (kvm_vcpu_can_poll needs single_task_running())
    /// and sleeps. Returns true when the enqueue's update_curr found the
    /// current thread past its deadline.
    pub(super) fn activate_task(
        &mut self,
        t: usize,
        cpu: usize,
        attach: bool,
        initial: bool,
    ) -> bool {
        self.threads[t].cpu = cpu;
        if let Some(cur) = self.cpus[cpu].rq.curr() {
            if self.threads[cur as usize].state == ThreadState::Polling {
                self.sleep(cur as usize);
            }
        }
        self.update_cpu_pelt(cpu);
        if attach {
            let se = self.threads[t].pelt;
            self.cpus[cpu].pelt.attach(&se, self.ents[t].weight);
        }
        let resched =
            self.cpus[cpu]
                .rq
                .enqueue(&mut self.ents, t as u32, self.now, initial, &self.params);
        self.k.cfs_lists.push_front(cpu, t as u32);
        // ttwu_do_activate: the idle period ends
        let stamp = self.k.cpu_state[cpu].idle_stamp;
        if stamp != 0 {
            let jiffies = self.k.jiffies(self.now);
            self.k.idle_stats[cpu].ttwu_fold_idle(self.now.saturating_sub(stamp), jiffies);
            self.k.cpu_state[cpu].idle_stamp = 0;
            self.k.cpu_state[cpu].idle_exit_latency = 0;
        }
        self.sync_cpu(cpu);
        if self.cpus[cpu].rq.nr_running() == 2 {
            self.note_overloaded(cpu);
        }
        resched
    }

    /// After `t` was enqueued on `cpu` with `lead` ns of the enqueuer's
    /// work before it: an idle CPU schedules after the lead plus `wake`
    /// (its IPI and exit latency), a busy one is pre-empted when the
    /// wakee should run first (wakeup_preempt).
    pub(super) fn wakeup_preempt(
        &mut self,
        t: usize,
        cpu: usize,
        resched: bool,
        lead: Nanos,
        wake: Nanos,
        g: &mut dyn GuestCpus,
    ) {
        let now = self.now;
        if self.running(cpu).is_none() {
            let delay = if self.cpus[cpu].idle {
                lead + wake
            } else {
                lead
            };
            self.schedule(cpu, delay, g);
        } else if resched
            || self.cpus[cpu]
                .rq
                .check_preempt_wakeup(&mut self.ents, t as u32, now, &self.params)
        {
            self.schedule(cpu, lead, g);
        }
    }

    /// Thread `p`, current until now on its CPU and still runnable, goes
    /// back to waiting; a vCPU that ran guest code is flagged pre-empted.
    fn switch_out(&mut self, p: usize, g: &mut dyn GuestCpus) {
        let now = self.now;
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

    /// The stopper thread pre-empts whatever runs on `c` (the thread goes
    /// back to its queue, or a polling vCPU to sleep).
    pub(super) fn preempt_for_stopper(&mut self, c: usize, g: &mut dyn GuestCpus) {
        let Some(cur) = self.cpus[c].rq.curr().map(|p| p as usize) else {
            return;
        };
        if self.threads[cur].state == ThreadState::Polling {
            self.sleep(cur);
            return;
        }
        self.update_cpu_pelt(c);
        self.cpus[c].rq.set_next(&mut self.ents, None, self.now);
        self.switch_out(cur, g);
        self.sync_cpu(c);
    }

    /// __schedule on host CPU `c`; the next thread starts after `delay`
    /// (an idle CPU's wake-up) plus the switch and, for a vCPU, the entry.
    /// A CPU left with nothing to run tries a newidle balance, then goes
    /// idle.
    pub(super) fn schedule(&mut self, c: usize, delay: Nanos, g: &mut dyn GuestCpus) {
        let now = self.now;
        let prev = self.cpus[c].rq.curr();
        let next = self.cpus[c].rq.pick_next(&self.ents, &self.params);
        self.update_cpu_pelt(c);
        self.cpus[c].rq.set_next(&mut self.ents, next, now);
        if prev != next {
            if let Some(p) = prev.map(|p| p as usize) {
                // a still-runnable prev goes back to waiting
                self.switch_out(p, g);
            }
        }
        self.sync_cpu(c);
        let Some(n) = next.map(|n| n as usize) else {
            if !self.cpus[c].idle {
                // sched_balance_newidle: a pulled thread is scheduled by
                // its enqueue; otherwise the CPU goes idle
                if !self.balance_newidle(c, g) && self.cpus[c].rq.curr().is_none() {
                    self.enter_idle(c);
                }
            }
            return;
        };
        self.cpus[c].idle = false;
        if prev == next {
            return;
        }
        // set_next_task_fair moves it to the head of cfs_tasks
        self.k.cfs_lists.move_to_front(c, n as u32);
        self.switches += 1;
        self.threads[n].gen = self.threads[n].gen.wrapping_add(1);
        let start = delay + self.costs.switch_ns + self.switch_in_refill(c, n);
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

    /// What thread `n` pays to switch in on host CPU `c` beyond the switch
    /// itself, as the engine charges a task (engine/schedule.rs): the mm
    /// switch when the CPU last ran another process (the vCPUs of one guest
    /// are threads of its QEMU process; a noisy thread is a process of its
    /// own), and the cache refill of the host machine's profile, by reuse
    /// distance when it last ran here and the full refill when it last ran
    /// elsewhere (a host migration). What a vCPU's guest state spans beyond
    /// that (its guest's working set) is not known, so no lines are charged
    /// for the distance it moved.
    fn switch_in_refill(&mut self, c: usize, n: usize) -> Nanos {
        let proc_ = match self.threads[n].kind {
            ThreadKind::Vcpu { guest, .. } => guest,
            ThreadKind::Noisy => self.vcpus.len() + n,
        };
        let cpu = &mut self.cpus[c];
        cpu.switch_seq += 1;
        let seq = cpu.switch_seq;
        let mm_changed = cpu.last_proc != Some(proc_);
        cpu.last_proc = Some(proc_);
        let t = &mut self.threads[n];
        let cost = self
            .k
            .costs
            .switch_in_extra(t.last_ran, c, seq, t.ran_at_switch, mm_changed);
        t.last_ran = Some(c);
        t.ran_at_switch = seq;
        cost
    }

    /// Host CPU `c` enters its idle loop: idle_stamp, the halt state's exit
    /// latency, the tick stops (nohz_balance_enter_idle) and
    /// update_idle_core runs.
    fn enter_idle(&mut self, c: usize) {
        self.cpus[c].idle = true;
        let st = &mut self.k.cpu_state[c];
        st.idle_stamp = self.now.max(1);
        st.idle_exit_latency = self
            .k
            .costs
            .idle_states
            .get(self.k.costs.halt_state())
            .map_or(0, |s| s.exit_latency_ns);
        self.nohz_enter(c);
        self.k.lines.now = self.now;
        self.k.cpu_enters_idle(c, self.now);
    }

    /// Guest `guest` finished: its vCPUs halt for good.
    pub fn retire(&mut self, guest: usize, now: Nanos, g: &mut dyn GuestCpus) {
        self.now = self.now.max(now);
        for v in 0..self.vcpus[guest].len() {
            let t = self.vcpus[guest][v];
            match self.threads[t].state {
                ThreadState::Halted => {}
                ThreadState::Waiting => self.sleep(t),
                _ => self.block(t, g),
            }
        }
        self.tell_flags(g);
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

    /// Times the host moved vCPU `vcpu` of `guest` to another host CPU,
    /// and the host CPU it is on (or last ran on).
    pub fn vcpu_migrations(&self, guest: usize, vcpu: usize) -> (u64, usize) {
        let th = &self.threads[self.vcpus[guest][vcpu]];
        (th.migrations, th.cpu)
    }

    /// The host CPU each noisy thread is on at the end.
    pub fn noisy_cpus(&self) -> Vec<usize> {
        self.threads
            .iter()
            .filter(|t| t.kind == ThreadKind::Noisy)
            .map(|t| t.cpu)
            .collect()
    }

    /// The host's placement statistics (a thread with one allowed CPU is
    /// counted as `no_idle_found`, as a bare-metal run counts such a task).
    pub fn placement_stats(&self) -> &crate::placement::PlacementStats {
        &self.k.pstats
    }

    /// What the host's load balancer did.
    pub fn balance_stats(&self) -> &crate::balance::BalanceStats {
        &self.k.bstats
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
