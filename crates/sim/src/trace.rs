//! What a run shows a trace writer: the scheduler events a kernel capture
//! of the same run would hold (`sched_switch`, `sched_waking`,
//! `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`, `cpu_idle`),
//! plus what only the model knows (the placement stage and its probes and
//! cost, balancer passes, run-queue length, SIS_UTIL's `nr_idle_scan`).
//!
//! The engine calls a [`TraceSink`] at the points where the kernel fires
//! those tracepoints (`__schedule`, `try_to_wake_up`, `wake_up_new_task`,
//! `set_task_cpu`, the idle loop). With no sink set every hook is one test
//! of an `Option` that is `None`. The sink decides what to keep (a time
//! window) and how to write it: the Perfetto writer is the `simtrace` crate;
//! this module only defines the interface, so the simulator has no
//! dependency on a trace format.

use crate::placement::Stage;
use crate::task::TaskId;
use crate::Nanos;
use std::sync::{Arc, Mutex};

/// How the task that leaves a CPU at a switch is left (`prev_state` of
/// `sched_switch`, the kernel's `TASK_REPORT` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// Still runnable: it was preempted (`TASK_RUNNING`, 0).
    Runnable,
    /// Blocked: it sleeps on a channel, a futex, a timer or a child
    /// (`TASK_INTERRUPTIBLE`, 1).
    Sleeping,
    /// It exited; the task is gone (`EXIT_DEAD`, 0x10, for a thread) or
    /// waits for its parent (`EXIT_ZOMBIE`, 0x20, for a process).
    Dead {
        /// A process (its own mm) that stays a zombie until reaped.
        zombie: bool,
    },
}

impl PrevState {
    /// The `prev_state` value of `sched_switch` (include/linux/sched.h
    /// `TASK_REPORT` bits, as `__trace_sched_switch_state()` reports them
    /// since 4.14; a preempted task is reported as plain `TASK_RUNNING`
    /// here, not with the `TASK_REPORT_MAX` preemption bit).
    pub fn kernel_bits(self) -> i64 {
        match self {
            PrevState::Runnable => 0,
            PrevState::Sleeping => 1,
            PrevState::Dead { zombie: false } => 0x10,
            PrevState::Dead { zombie: true } => 0x20,
        }
    }
}

/// Who runs on a CPU after a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// The idle task (`swapper/N`, pid 0).
    Idle,
    /// A task of the workload.
    Task(TaskId),
    /// The CPU's stopper thread (`migration/N`), which runs the active
    /// balance (`active_load_balance_cpu_stop`).
    Stopper,
}

/// Why a task moved to another CPU (`sched_migrate_task`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrateCause {
    /// try_to_wake_up placed it on another CPU than the one it slept on.
    Wakeup,
    /// The load balancer moved it while it was queued (detach_task /
    /// attach_task).
    Balance,
}

/// One event of a run, at the time the sink is given with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// `sched_switch` on `cpu`: `prev` leaves (None: the CPU was idle or
    /// running its stopper), `next` runs.
    Switch {
        /// The CPU.
        cpu: u32,
        /// The task that leaves and how it is left.
        prev: Option<(TaskId, PrevState)>,
        /// What runs next.
        next: Runner,
    },
    /// `sched_waking`: try_to_wake_up starts on `cpu` for `task` (before
    /// placement; `target_cpu` is the CPU the task last ran on).
    Waking {
        /// The waker's CPU.
        cpu: u32,
        /// The task woken.
        task: TaskId,
        /// task_cpu() before placement.
        prev_cpu: u32,
    },
    /// `sched_wakeup` / `sched_wakeup_new`: `task` is runnable on
    /// `target_cpu`, chosen on `cpu` by select_task_rq at `stage` after
    /// `probes` run-queue probes costing `cost_ns` (what the kernel does
    /// not trace; `stage` is None when the task may run on one CPU only
    /// and no policy ran).
    Wakeup {
        /// The CPU that placed it (the waker's).
        cpu: u32,
        /// The task.
        task: TaskId,
        /// The CPU it will run on.
        target_cpu: u32,
        /// The CPU it was on before (a new task: its parent's).
        prev_cpu: u32,
        /// A new task (`wake_up_new_task`: `sched_wakeup_new`).
        new: bool,
        /// The deciding placement stage.
        stage: Option<Stage>,
        /// Run-queue probes the decision made.
        probes: u32,
        /// Modelled cost of the decision, ns.
        cost_ns: Nanos,
        /// A delayed task woken where it is queued (ttwu_runnable): no
        /// placement ran.
        in_place: bool,
    },
    /// `sched_migrate_task`: `task` moves from `orig` to `dest`, done on
    /// `cpu`.
    Migrate {
        /// The CPU that moved it.
        cpu: u32,
        /// The task.
        task: TaskId,
        /// Its CPU before.
        orig: u32,
        /// Its CPU after.
        dest: u32,
        /// Why.
        cause: MigrateCause,
    },
    /// `cpu_idle`: `cpu` enters idle state `state` (the driver's index;
    /// cpuidle's POLL is 0 where the driver registers it), or leaves idle
    /// (`state` None: the kernel's `PWR_EVENT_EXIT`).
    Idle {
        /// The CPU.
        cpu: u32,
        /// The state entered, None when leaving idle.
        state: Option<u32>,
    },
    /// A load-balancer pass on `cpu` that moved `moved` tasks (or asked
    /// for an active balance / nohz kick) and cost `cost_ns`.
    Balance {
        /// The balancing CPU.
        cpu: u32,
        /// Tasks moved.
        moved: u32,
        /// Modelled cost, ns.
        cost_ns: Nanos,
    },
    /// The number of runnable tasks on `cpu` (`rq->nr_running`) after an
    /// enqueue or dequeue (repeated values may be sent).
    NrRunning {
        /// The CPU.
        cpu: u32,
        /// Tasks on its run queue, the running one included.
        n: u32,
    },
    /// SIS_UTIL's `nr_idle_scan` of LLC `llc` (`sd_llc_shared`), sent after
    /// each balancer pass (repeated values may be sent).
    NrIdleScan {
        /// The LLC index (`SchedDomains::llc_index`).
        llc: u32,
        /// The scan budget.
        n: u32,
    },
}

/// A task as the trace names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceTask {
    /// The task's id in the run.
    pub id: TaskId,
    /// Its name (its `comm`).
    pub name: String,
    /// The task that leads its thread group: the first task declared with
    /// the same mm.
    pub leader: TaskId,
    /// Its parent (for the process tree).
    pub parent: Option<TaskId>,
    /// Its priority as the tracepoints give it (`p->prio`: 120 + nice).
    pub prio: i32,
}

/// What a sink learns when the run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSetup {
    /// CPUs of the machine.
    pub nr_cpus: u32,
    /// Each CPU's LLC index.
    pub cpu_llc: Vec<u32>,
    /// The idle states of the driver, by index (names).
    pub idle_states: Vec<String>,
    /// The workload's tasks, by id.
    pub tasks: Vec<TraceTask>,
    /// The report name of every placement stage, by `Stage as usize` (a
    /// policy's own stages under its names, `Placement::stage_names`).
    pub stage_names: Vec<String>,
}

/// Where the engine sends a run's events. Implementations must not panic
/// on any sequence of events; I/O errors are kept and reported by the
/// owner when the run is over.
pub trait TraceSink: Send + 'static {
    /// The run starts (every task is declared by now).
    fn begin(&mut self, setup: &TraceSetup);
    /// An event at simulated time `now` (non-decreasing from call to call).
    fn event(&mut self, now: Nanos, ev: &TraceEvent);
    /// The run ended at `now` (called once, also after a run stopped by
    /// an error).
    fn end(&mut self, now: Nanos);
    /// The sink as `Any`, for its owner to get the concrete writer back
    /// (and finish it) after the run.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

/// A sink handed to a run through [`crate::run::SimOptions`]: the run
/// takes it out when it starts and puts it back when it ends, so the owner
/// can finish it (and see its errors) afterwards. Cloning shares the slot.
#[derive(Clone, Default)]
pub struct TraceSlot(Arc<Mutex<Option<Box<dyn TraceSink>>>>);

impl std::fmt::Debug for TraceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceSlot")
    }
}

impl TraceSlot {
    /// A slot holding `sink`.
    pub fn new(sink: Box<dyn TraceSink>) -> Self {
        TraceSlot(Arc::new(Mutex::new(Some(sink))))
    }

    /// Take the sink out (None: already taken).
    pub fn take(&self) -> Option<Box<dyn TraceSink>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Put a sink (back) in.
    pub fn put(&self, sink: Box<dyn TraceSink>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(u32);
    impl TraceSink for Count {
        fn begin(&mut self, _: &TraceSetup) {}
        fn event(&mut self, _: Nanos, _: &TraceEvent) {
            self.0 += 1;
        }
        fn end(&mut self, _: Nanos) {}
        fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
            self
        }
    }

    #[test]
    fn a_slot_gives_its_sink_once_and_takes_it_back() {
        let s = TraceSlot::new(Box::new(Count(0)));
        let shared = s.clone();
        let mut k = s.take().expect("the sink");
        assert!(shared.take().is_none());
        k.event(0, &TraceEvent::NrRunning { cpu: 0, n: 1 });
        shared.put(k);
        assert!(s.take().is_some());
    }

    #[test]
    fn prev_state_bits_are_the_kernels() {
        assert_eq!(PrevState::Runnable.kernel_bits(), 0);
        assert_eq!(PrevState::Sleeping.kernel_bits(), 1);
        assert_eq!(PrevState::Dead { zombie: false }.kernel_bits(), 0x10);
        assert_eq!(PrevState::Dead { zombie: true }.kernel_bits(), 0x20);
    }
}
