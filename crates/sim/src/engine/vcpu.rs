//! A guest's side of the host layer (see `crate::host`): the engine run as
//! a KVM guest whose CPUs are vCPU threads of a host. A guest CPU's clock
//! runs only while its vCPU thread runs guest code on the host:
//!
//! - when the host schedules the thread out (`vm_pause`), the CPU's running
//!   segment is settled and disarmed, and the current task's clock_task
//!   stops (its `exec_start` is parked), as CONFIG_PARAVIRT_TIME_ACCOUNTING
//!   subtracts steal from the task clock (kernel/sched/core.c
//!   `update_rq_clock_task`); a thread scheduled out while it ran guest code
//!   sets the steal-time preempted flag that `vcpu_is_preempted()` reads
//!   (arch/x86/kvm/x86.c `kvm_steal_time_set_preempted`);
//! - an idle guest CPU that halts (HLT / WFI: a non-polling idle state)
//!   exits to the host, which polls, then puts the thread to sleep;
//! - every event addressed to a CPU whose thread is not running guest code
//!   (an IPI, a tick, a timer) waits for it; one addressed to a halted vCPU
//!   first wakes its thread through the host's wake-up path;
//! - `vm_resume` re-arms the segment, restarts the task clock and delivers
//!   what waited, in the order it arrived.
//!
//! The co-simulation (`crate::host::cosim`) steps the engine one event at
//! a time with `vm_peek` / `vm_step` instead of `run`, so bare-metal runs
//! keep their loop untouched; the two hooks in the wake-up path and in
//! `schedule` test one `Option` when no host is configured.

use super::{Engine, InvariantError, Mode, RunError, POLL_STATE};
use crate::event::{Event, Slot};
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::Nanos;

/// Where a guest CPU's vCPU thread is, as the guest sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcpuRun {
    /// Running guest code.
    Running,
    /// Halted: exited to the host on HLT / WFI (polling or asleep there).
    Halted,
    /// Scheduled out by the host (runnable there, or switching back in).
    Preempted,
}

/// What a guest recorded about its vCPUs and the wake-ups they received.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct GuestVmStats {
    /// Task wake-ups placed on a vCPU whose preempted flag was set.
    pub wakeups_on_preempted: u64,
    /// Their wait from the wake-up until the task ran, summed, ns.
    pub wait_on_preempted_ns: u64,
    /// Wait from wake-up to running, summed over every task wake-up, ns.
    pub wakeup_wait_ns: u64,
    /// Task wake-ups whose wait was measured.
    pub wakeups_measured: u64,
    /// Per vCPU: time its thread was not running guest code, ns.
    pub off_ns: Vec<Nanos>,
    /// Times the host flagged a vCPU pre-empted, by what the vCPU was
    /// doing.
    pub flagged: FlaggedBy,
}

/// Times a vCPU was flagged pre-empted (the steal-time flag set as its
/// thread was scheduled out), by what it was doing then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FlaggedBy {
    /// Running a task, or the kernel between tasks.
    pub running: u64,
    /// Idle in the guest but not yet halted: its idle entry path before
    /// the HLT exit (or polling in guest idle).
    pub idle_entry: u64,
    /// Halt-polling on the host after a HLT exit, then scheduled out
    /// (host kernels up to 5.18).
    pub halt_polling: u64,
    /// Blocked in HLT without polling (host kernels up to 5.18; every
    /// vCPU once at boot).
    pub halted: u64,
}

/// The guest-side state of the host layer.
pub(super) struct VmState {
    /// The guest's idle loop never exits to the host (`idle=poll`).
    idle_poll: bool,
    run: Vec<VcpuRun>,
    /// When the vCPU stopped running guest code.
    off_since: Vec<Nanos>,
    /// Events that arrived while the vCPU was not running, in order.
    deferred: Vec<Vec<Event>>,
    /// Per vCPU: its task was spinning for a lock that was released while
    /// the vCPU was off; it retries when the vCPU runs again.
    retry_spin: Vec<bool>,
    /// Per task: when it was woken and whether onto a preempted vCPU.
    woken: Vec<Option<(Nanos, bool)>>,
    /// Halts found since the co-simulation last asked.
    halts: Vec<usize>,
    /// IPIs sent to halted vCPUs since the co-simulation last asked: (the
    /// vCPU, the sender, when it was sent).
    kicks: Vec<(usize, usize, Nanos)>,
    /// Per vCPU: the vCPU whose IPI last kicked it out of idle (None: its
    /// own timer or tick), so the host knows who wakes its thread.
    kicked_by: Vec<Option<usize>>,
    /// The guest's idle entry path before a HLT exit, ns (0: it halts as
    /// it goes idle).
    entry_ns: Nanos,
    /// Per vCPU: when its idle entry path reaches HLT (the path runs).
    halt_due: Vec<Option<Nanos>>,
    /// Per vCPU: what is left of its idle entry path (the host pre-empted
    /// the vCPU in it).
    entry_left: Vec<Option<Nanos>>,
    stats: GuestVmStats,
    stopped: bool,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Run this engine as a guest of a host: every vCPU starts halted (the
    /// guest boots idle). `idle_poll`: the guest runs with `idle=poll`;
    /// `entry_ns`: its idle entry path before a HLT exit, guest code the
    /// host can pre-empt.
    pub fn vm_enable(&mut self, idle_poll: bool, entry_ns: Nanos) {
        let n = self.cpus.len();
        self.vm = Some(Box::new(VmState {
            idle_poll,
            run: vec![VcpuRun::Halted; n],
            off_since: vec![0; n],
            deferred: vec![Vec::new(); n],
            retry_spin: vec![false; n],
            woken: Vec::new(),
            halts: Vec::new(),
            kicks: Vec::new(),
            kicked_by: vec![None; n],
            entry_ns,
            halt_due: vec![None; n],
            entry_left: vec![None; n],
            stats: GuestVmStats {
                off_ns: vec![0; n],
                ..Default::default()
            },
            stopped: false,
        }));
    }

    /// The host layer's view of the guest: its vCPU states and statistics
    /// (None on bare metal).
    pub fn vm_stats(&self) -> Option<&GuestVmStats> {
        self.vm.as_ref().map(|v| &v.stats)
    }

    /// The machine's CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The spinner on guest CPU `c`, whose vCPU is off, saw its lock
    /// released: it retries when the vCPU runs again (`vm_resume`).
    pub(super) fn vm_retry_spin(&mut self, c: usize) {
        if let Some(v) = self.vm.as_mut() {
            v.retry_spin[c] = true;
        }
    }

    /// Where the thread of guest CPU `c` is, as the guest sees it.
    pub fn vm_run_state(&self, c: usize) -> VcpuRun {
        self.vm.as_ref().map_or(VcpuRun::Running, |v| v.run[c])
    }

    /// Start the initial tasks (what `run` does first).
    pub fn vm_start(&mut self) {
        for t in 0..self.tasks.len() {
            if !self.tasks[t].spec.spawned {
                self.live_tasks += 1;
                match self.tasks[t].spec.start_cpu {
                    Some(cpu) => self.enqueue_new_task_on(TaskId(t as u32), cpu),
                    None => {
                        let cpu = self.tasks[t].cpu;
                        self.wake_up_new_task(TaskId(t as u32), cpu);
                    }
                }
            }
        }
        self.vm_scan_halts();
    }

    /// Whether the guest is done: every task exited, or its stop time passed.
    pub fn vm_done(&self) -> bool {
        self.live_tasks == 0 || self.vm.as_ref().is_some_and(|v| v.stopped)
    }

    /// The next thing that happens in the guest: an event at a time,
    /// addressed to a guest CPU (`Some(cpu)`), or the end of a timed run
    /// (`None`: call `vm_stop`). None: nothing pending (the guest waits for
    /// the host to run its vCPUs again, or is done).
    pub fn vm_peek(&mut self) -> Option<(Nanos, Option<usize>)> {
        if self.vm_done() {
            return None;
        }
        match (self.events.peek(), self.stop_at) {
            (Some((t, _)), Some(s)) if t > s => Some((s, None)),
            (Some((t, ev)), _) => Some((t, Some(self.event_cpu(&ev)))),
            (None, Some(s)) => Some((s.max(self.now), None)),
            (None, None) => None,
        }
    }

    /// A timed run reached its stop time.
    pub fn vm_stop(&mut self) {
        if let Some(s) = self.stop_at {
            self.now = s.max(self.now);
        }
        if let Some(v) = self.vm.as_mut() {
            v.stopped = true;
        }
    }

    /// Per vCPU: the time its thread was off guest code, up to `now`.
    pub fn vm_off_at(&self, now: Nanos) -> Vec<Nanos> {
        let Some(v) = self.vm.as_ref() else {
            return Vec::new();
        };
        (0..v.run.len())
            .map(|c| {
                v.stats.off_ns[c]
                    + if v.run[c] == VcpuRun::Running {
                        0
                    } else {
                        now.saturating_sub(v.off_since[c])
                    }
            })
            .collect()
    }

    /// Events waiting for vCPUs that do not run.
    pub fn vm_waiting(&self) -> usize {
        self.vm
            .as_ref()
            .map_or(0, |v| v.deferred.iter().map(Vec::len).sum())
    }

    fn event_cpu(&self, ev: &Event) -> usize {
        match *ev {
            Event::SegmentDone { cpu, .. }
            | Event::IdleExit { cpu, .. }
            | Event::PollEnd { cpu, .. }
            | Event::VcpuHalt { cpu, .. }
            | Event::Resched { cpu }
            | Event::Tick { cpu }
            | Event::IlbKick { cpu }
            | Event::NumaStopper { cpu } => cpu as usize,
            Event::Timer { task } => self.tasks[task.idx()].cpu,
            Event::Stopper { src, .. } => src as usize,
        }
    }

    /// Who sends the next event: the guest CPU whose IPI it is (the kick of
    /// an idle CPU by a wake-up or by the nohz balancer), or None for the
    /// CPU's own timers and tick (and the rare resched or stopper IPI that
    /// finds its target halted: its sender is not recorded). For a halted vCPU
    /// this is what wakes its host thread: an IPI makes the sender's thread
    /// call kvm_vcpu_kick() on its host CPU, a timer is the host hrtimer
    /// of the vCPU's emulated APIC timer (virt/kvm/kvm_main.c
    /// `kvm_vcpu_kick`, arch/x86/kvm/lapic.c `apic_timer_expired`).
    pub fn vm_wake_source(&mut self) -> Option<usize> {
        let (_, ev) = self.events.peek()?;
        let c = self.event_cpu(&ev);
        match ev {
            Event::IdleExit { .. } | Event::IlbKick { .. } => self.vm.as_ref()?.kicked_by[c],
            _ => None,
        }
    }

    /// Hook of the IPIs that can reach an idle vCPU: `src` kicked `dst`.
    pub(super) fn vm_note_kick(&mut self, dst: usize, src: usize) {
        if let Some(v) = self.vm.as_mut() {
            v.kicked_by[dst] = (src != dst).then_some(src);
        }
    }

    /// Hook of the wake-up IPI: `src` sends it to idle `dst` at `at`. When
    /// `dst` has halted, the sending vCPU's thread wakes its thread as it
    /// handles the ICR write (`kvm_vcpu_kick`, virt/kvm/kvm_main.c), at send
    /// time, not when the guest's idle exit would complete: the host's
    /// wake-up and entry run meanwhile.
    pub(super) fn vm_kick_halted(&mut self, dst: usize, src: usize, at: Nanos) {
        if let Some(v) = self.vm.as_mut() {
            if src != dst && v.run[dst] == VcpuRun::Halted {
                v.kicks.push((dst, src, at));
            }
        }
    }

    /// The IPIs to halted vCPUs sent since the last call (the co-simulation
    /// has the host wake their threads).
    pub fn vm_take_kicks(&mut self) -> Vec<(usize, usize, Nanos)> {
        self.vm
            .as_mut()
            .map_or(Vec::new(), |v| std::mem::take(&mut v.kicks))
    }

    /// Take the next event, addressed to a vCPU that does not run, and keep
    /// it for when it does. A segment end of such a CPU cannot happen
    /// (`vm_pause` disarms it): under `--check` it is a violation.
    pub fn vm_defer_next(&mut self) -> Result<(), RunError> {
        let Some((t, ev)) = self.events.pop() else {
            return Ok(());
        };
        let c = self.event_cpu(&ev);
        if let Event::SegmentDone { gen, .. } = ev {
            if self.cfg.check && self.cpus[c].gen == gen && self.cpus[c].mode == Mode::Busy {
                return Err(InvariantError {
                    time: t,
                    what: format!("guest CPU {c} ran a task while its vCPU thread was not running"),
                }
                .into());
            }
        }
        if let Some(v) = self.vm.as_mut() {
            v.deferred[c].push(ev);
        }
        Ok(())
    }

    /// Process the next event (addressed to a running vCPU), with the
    /// bounds and checks of `run`.
    pub fn vm_step(&mut self) -> Result<(), RunError> {
        let Some((t, ev)) = self.events.pop() else {
            return Ok(());
        };
        self.check_bounds(t)?;
        let c = self.event_cpu(&ev);
        if self.cfg.check && self.vm_run_state(c) != VcpuRun::Running {
            return Err(InvariantError {
                time: t,
                what: format!(
                    "guest CPU {c} handled an event while its vCPU thread was not running"
                ),
            }
            .into());
        }
        self.handle_event(t, ev)?;
        self.vm_scan_halts();
        Ok(())
    }

    /// Running vCPUs whose guest CPU just entered a halting idle state.
    fn vm_scan_halts(&mut self) {
        let Some(v) = self.vm.as_mut() else { return };
        if v.idle_poll {
            return;
        }
        for c in 0..self.cpus.len() {
            if v.run[c] != VcpuRun::Running {
                continue;
            }
            if let Mode::Idle { state, .. } = self.cpus[c].mode {
                let polls = state == POLL_STATE
                    || self
                        .k
                        .costs
                        .idle_states
                        .get(state)
                        .is_some_and(|s| s.polls());
                if polls || v.halt_due[c].is_some() || v.entry_left[c].is_some() {
                    continue;
                }
                if v.entry_ns == 0 {
                    v.run[c] = VcpuRun::Halted;
                    v.off_since[c] = self.now;
                    v.halts.push(c);
                } else {
                    // do_idle runs its entry path (the governor, the tick
                    // stop, RCU) in guest mode before the HLT exits
                    let due = self.now + v.entry_ns;
                    v.halt_due[c] = Some(due);
                    let gen = self.cpus[c].gen;
                    self.events.set_slot(
                        c,
                        Slot::Main,
                        due,
                        Event::VcpuHalt { cpu: c as u32, gen },
                    );
                }
            }
        }
    }

    /// Guest CPU `c`'s idle entry path reached HLT (`Event::VcpuHalt`): it
    /// exits to the host.
    pub(super) fn vm_halt(&mut self, c: usize) {
        let now = self.now;
        if let Some(v) = self.vm.as_mut() {
            if v.halt_due[c].take().is_some() && v.run[c] == VcpuRun::Running {
                v.run[c] = VcpuRun::Halted;
                v.off_since[c] = now;
                v.halts.push(c);
            }
        }
    }

    /// A wake-up kicks idle guest CPU `c` at `now`: if its idle entry path
    /// has not reached HLT yet, what is left of it (the idle loop, polling
    /// until just before it halts, sees need_resched at its next check
    /// without an IPI; no halt, no exit latency). None: it had halted, or
    /// runs on bare metal.
    pub(super) fn vm_entry_left(&mut self, c: usize, now: Nanos) -> Option<Nanos> {
        let v = self.vm.as_mut()?;
        if let Some(due) = v.halt_due[c].take() {
            return Some(due.saturating_sub(now));
        }
        v.entry_left[c].take()
    }

    /// The host flagged halted guest CPU `c` pre-empted as its thread was
    /// scheduled out (`polled`: it was halt-polling).
    pub fn vm_flag_halted(&mut self, c: usize, polled: bool) {
        let Some(v) = self.vm.as_mut() else { return };
        if v.run[c] != VcpuRun::Halted {
            return;
        }
        self.k.cpu_state[c].vcpu_preempted = true;
        if polled {
            v.stats.flagged.halt_polling += 1;
        } else {
            v.stats.flagged.halted += 1;
        }
    }

    /// The guest CPUs that halted since the last call (their threads exit
    /// to the host).
    pub fn vm_take_halts(&mut self) -> Vec<usize> {
        self.vm
            .as_mut()
            .map_or(Vec::new(), |v| std::mem::take(&mut v.halts))
    }

    /// The host scheduled out the thread of guest CPU `c` at `now` while it
    /// ran guest code (`preempted`: the steal-time flag is set).
    pub fn vm_pause(&mut self, c: usize, now: Nanos, preempted: bool) {
        if self
            .vm
            .as_ref()
            .is_none_or(|v| v.run[c] != VcpuRun::Running)
        {
            return;
        }
        self.now = self.now.max(now);
        self.k.lines.now = self.now;
        if self.cpus[c].mode == Mode::Busy {
            // settle the segment and disarm it: no work is done while the
            // vCPU is off the host CPU
            let done = self.settle_segment(c);
            if let Some(t) = self.cpus[c].seg.task {
                let ti = t.idx();
                self.tasks[ti].op_left = self.tasks[ti].op_left.saturating_sub(done);
            }
            self.cpus[c].gen = self.cpus[c].gen.wrapping_add(1);
            self.events.clear_slot(c, Slot::Main);
        }
        if let Some(cur) = self.cpus[c].rq.curr().map(TaskId) {
            // clock_task stops: account up to now, then park exec_start so
            // an update_curr from another vCPU charges nothing
            self.cpus[c].rq.update_curr(&mut self.ents, self.now);
            self.ents[cur.idx()].exec_start = Nanos::MAX;
        }
        self.k.cpu_state[c].vcpu_preempted = preempted;
        let now = self.now;
        let idle = matches!(self.cpus[c].mode, Mode::Idle { .. });
        if let Some(v) = self.vm.as_mut() {
            v.run[c] = VcpuRun::Preempted;
            v.off_since[c] = now;
            if let Some(due) = v.halt_due[c].take() {
                // pre-empted in its idle entry path: the rest runs when it
                // is back
                v.entry_left[c] = Some(due.saturating_sub(now));
                self.events.clear_slot(c, Slot::Main);
            }
            if preempted {
                if idle {
                    v.stats.flagged.idle_entry += 1;
                } else {
                    v.stats.flagged.running += 1;
                }
            }
        }
    }

    /// The thread of guest CPU `c` runs guest code again at `now`: the
    /// segment is re-armed, the task clock restarts and what waited is
    /// delivered now, in order.
    pub fn vm_resume(&mut self, c: usize, now: Nanos) {
        let Some(v) = self.vm.as_mut() else { return };
        if v.run[c] == VcpuRun::Running {
            return;
        }
        let now = self.now.max(now);
        v.stats.off_ns[c] += now - v.off_since[c];
        v.run[c] = VcpuRun::Running;
        let deferred = std::mem::take(&mut v.deferred[c]);
        let retry_spin = std::mem::take(&mut v.retry_spin[c]);
        if let Some(left) = v.entry_left[c].take() {
            // the idle entry path goes on where the host stopped it
            v.halt_due[c] = Some(now + left);
            let gen = self.cpus[c].gen;
            self.events.set_slot(
                c,
                Slot::Main,
                now + left,
                Event::VcpuHalt { cpu: c as u32, gen },
            );
        }
        self.now = now;
        self.k.lines.now = now;
        self.k.cpu_state[c].vcpu_preempted = false;
        if let Some(cur) = self.cpus[c].rq.curr().map(TaskId) {
            if self.ents[cur.idx()].exec_start == Nanos::MAX {
                self.ents[cur.idx()].exec_start = now;
            }
        }
        if retry_spin && self.cpus[c].mode == Mode::Busy {
            // the lock it spun for was released meanwhile: retry now, as
            // release_spinners does for a running spinner
            self.cpus[c].seg.start = now;
            self.continue_cpu(c);
        } else if self.cpus[c].mode == Mode::Busy {
            self.cpus[c].seg.start = now;
            self.arm_segment(c);
        }
        for ev in deferred {
            self.events.push(now, ev);
        }
    }

    /// Account the vCPUs' time off up to the end of the run and check the
    /// final invariants (what `run` does last).
    pub fn vm_finish(&mut self) -> Result<(), RunError> {
        let now = self.now;
        if let Some(v) = self.vm.as_mut() {
            for c in 0..v.run.len() {
                if v.run[c] != VcpuRun::Running {
                    v.stats.off_ns[c] += now - v.off_since[c];
                    v.off_since[c] = now;
                }
            }
        }
        let stopped = self.vm.as_ref().is_some_and(|v| v.stopped);
        self.end_run(stopped)
    }

    /// Hook of try_to_wake_up: task `t` was placed on `cpu`.
    pub(super) fn vm_note_wakeup(&mut self, t: TaskId, cpu: usize) {
        let preempted = self.k.cpu_state[cpu].vcpu_preempted;
        let now = self.now;
        if let Some(v) = self.vm.as_mut() {
            let ti = t.idx();
            if v.woken.len() <= ti {
                v.woken.resize(ti + 1, None);
            }
            v.woken[ti] = Some((now, preempted));
            v.stats.wakeups_on_preempted += preempted as u64;
        }
    }

    /// Hook of schedule: task `t` is switched in.
    pub(super) fn vm_note_run(&mut self, t: TaskId) {
        let now = self.now;
        if let Some(v) = self.vm.as_mut() {
            if let Some(Some((at, preempted))) = v.woken.get_mut(t.idx()).map(Option::take) {
                let wait = now - at;
                v.stats.wakeup_wait_ns += wait;
                v.stats.wakeups_measured += 1;
                if preempted {
                    v.stats.wait_on_preempted_ns += wait;
                }
            }
        }
    }
}
