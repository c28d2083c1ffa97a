//! The engine's side of tracing ([`crate::trace`]): the sink, the run's
//! setup it is given, and the small helpers the hooks in `schedule`,
//! `wakeup`, `idle`, `balance` and `pelt` call. Every hook first tests
//! `self.trace.is_some()`, so a run without a sink pays one branch per
//! hook and builds no event.

use super::{Engine, Mode, TaskState, POLL_STATE};
use crate::placement::Stage;
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::trace::{MigrateCause, PrevState, Runner, TraceEvent, TraceSetup, TraceSink, TraceTask};
use crate::Nanos;

/// The placement of the wake-up in progress, kept between select_task_rq
/// and the `sched_wakeup` event (only while tracing).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PickNote {
    pub(super) stage: Option<Stage>,
    pub(super) probes: u32,
    pub(super) cost_ns: Nanos,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Send the run's events to `sink` (None: no tracing, the default).
    pub fn set_trace(&mut self, sink: Option<Box<dyn TraceSink>>) {
        self.trace = sink;
    }

    /// Take the sink back after the run.
    pub fn take_trace(&mut self) -> Option<Box<dyn TraceSink>> {
        self.trace.take()
    }

    /// Whether a sink is set.
    #[inline(always)]
    pub(super) fn traced(&self) -> bool {
        self.trace.is_some()
    }

    /// Send `ev` at the current time (only call when [`Self::traced`]).
    pub(super) fn emit(&mut self, ev: TraceEvent) {
        if let Some(s) = self.trace.as_mut() {
            s.event(self.now, &ev);
        }
    }

    /// The run starts: tell the sink the machine and the tasks.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_begin(&mut self) {
        if !self.traced() {
            return;
        }
        let mut leader_of_mm = std::collections::HashMap::new();
        let tasks = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| TraceTask {
                id: TaskId(i as u32),
                name: t.spec.name.clone(),
                leader: *leader_of_mm.entry(t.spec.mm).or_insert(TaskId(i as u32)),
                parent: t.spec.parent,
                prio: 120 + t.spec.nice,
            })
            .collect();
        let mut idle_states: Vec<String> = self
            .k
            .costs
            .idle_states
            .iter()
            .map(|s| s.name.to_string())
            .collect();
        // haltpoll's poll step is not in the table (see `POLL_STATE`)
        idle_states.push("POLL".into());
        let setup = TraceSetup {
            nr_cpus: self.cpus.len() as u32,
            cpu_llc: (0..self.cpus.len())
                .map(|c| self.k.sd.llc_index(c) as u32)
                .collect(),
            idle_states,
            tasks,
            stage_names: crate::placement::Stage::all()
                .map(|s| s.name_for(self.k.pstats.stage_names))
                .collect(),
        };
        if let Some(s) = self.trace.as_mut() {
            s.begin(&setup);
        }
        // every CPU boots idle, in its driver's boot state
        for c in 0..self.cpus.len() {
            self.trace_idle_enter(c);
        }
    }

    /// The run is over (or stopped).
    pub(super) fn trace_end(&mut self) {
        let now = self.now;
        if let Some(s) = self.trace.as_mut() {
            s.end(now);
        }
    }

    /// How `t` is left when it leaves its CPU now.
    fn prev_state(&self, t: TaskId) -> PrevState {
        let task = &self.tasks[t.idx()];
        match task.state {
            TaskState::Runnable | TaskState::Unborn => PrevState::Runnable,
            TaskState::Blocked(_) => PrevState::Sleeping,
            TaskState::Exited => PrevState::Dead {
                // a process (not a thread of its parent) stays a zombie
                zombie: task
                    .spec
                    .parent
                    .is_some_and(|p| self.tasks[p.idx()].spec.mm != task.spec.mm),
            },
        }
    }

    /// `sched_switch` on `c` from `prev` (the rq's current task, None when
    /// the CPU was idle or in its stopper) to `next`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_switch(&mut self, c: usize, prev: Option<TaskId>, next: Runner) {
        let prev = prev.map(|p| (p, self.prev_state(p)));
        self.emit(TraceEvent::Switch {
            cpu: c as u32,
            prev,
            next,
        });
    }

    /// `cpu_idle` entry of `c` in its current idle state.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_idle_enter(&mut self, c: usize) {
        if let Mode::Idle { state, .. } = self.cpus[c].mode {
            let state = if state == POLL_STATE {
                self.k.costs.idle_states.len()
            } else {
                state
            };
            self.emit(TraceEvent::Idle {
                cpu: c as u32,
                state: Some(state as u32),
            });
        }
    }

    /// The run-queue length of `c` (after an enqueue or dequeue).
    #[cold]
    #[inline(never)]
    pub(super) fn trace_nr_running(&mut self, c: usize) {
        let n = self.cpus[c].rq.nr_running();
        self.emit(TraceEvent::NrRunning { cpu: c as u32, n });
    }

    /// Every LLC's nr_idle_scan (after a balancer pass).
    #[cold]
    #[inline(never)]
    pub(super) fn trace_nr_idle_scan(&mut self) {
        for l in 0..self.k.llc.len() {
            let n = self.k.llc[l].nr_idle_scan;
            self.emit(TraceEvent::NrIdleScan { llc: l as u32, n });
        }
    }

    /// `sched_wakeup` / `sched_wakeup_new` of `t` on `cpu`, placed on
    /// `by` (the placement kept in `pick_note`); `in_place`: a delayed task
    /// woken where it is queued (ttwu_runnable), no placement ran.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_wakeup(
        &mut self,
        t: TaskId,
        by: usize,
        cpu: usize,
        prev: usize,
        new: bool,
        in_place: bool,
    ) {
        let n = self.pick_note;
        self.emit(TraceEvent::Wakeup {
            cpu: by as u32,
            task: t,
            target_cpu: cpu as u32,
            prev_cpu: prev as u32,
            new,
            stage: n.stage,
            probes: n.probes,
            cost_ns: n.cost_ns,
            in_place,
        });
    }

    /// The placement of the wake-up in progress, for its `sched_wakeup`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_pick(&mut self, stage: Option<Stage>, probes: u32, cost_ns: Nanos) {
        self.pick_note = PickNote {
            stage,
            probes,
            cost_ns,
        };
    }

    /// `sched_waking` of `t`, woken on `cpu`, last on `prev`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_waking(&mut self, cpu: usize, t: TaskId, prev: usize) {
        self.emit(TraceEvent::Waking {
            cpu: cpu as u32,
            task: t,
            prev_cpu: prev as u32,
        });
    }

    /// `sched_migrate_task` of `t` from `orig` to `dest`, done on `by`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_migrate(
        &mut self,
        by: usize,
        t: TaskId,
        orig: usize,
        dest: usize,
        cause: MigrateCause,
    ) {
        self.emit(TraceEvent::Migrate {
            cpu: by as u32,
            task: t,
            orig: orig as u32,
            dest: dest as u32,
            cause,
        });
    }

    /// `cpu_idle(PWR_EVENT_EXIT)` on `c`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_idle_exit(&mut self, c: usize) {
        self.emit(TraceEvent::Idle {
            cpu: c as u32,
            state: None,
        });
    }

    /// A balancer pass of `c` that moved `moved` tasks (or kicked).
    #[cold]
    #[inline(never)]
    pub(super) fn trace_balance(&mut self, c: usize, moved: usize, cost_ns: Nanos) {
        self.emit(TraceEvent::Balance {
            cpu: c as u32,
            moved: moved as u32,
            cost_ns,
        });
    }
}
