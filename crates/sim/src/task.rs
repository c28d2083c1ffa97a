//! Tasks as programs of operations.
//!
//! A program is a flat list of [`Op`]s with counted loops, interpreted by the
//! engine. Workloads build programs; the engine never knows which benchmark
//! it runs.

use crate::Nanos;

/// `idx()` for `u32` id newtypes: the id as an index into the table it
/// names (the one cast from `u32` to `usize` of each).
macro_rules! id_idx {
    ($($name:ident),*) => {
        $(
            impl $name {
                /// The id as an index into its table.
                #[inline]
                pub const fn idx(self) -> usize {
                    self.0 as usize
                }
            }
        )*
    };
}

/// A `u32` identifier as a newtype, in the style of [`CpuSetId`], with
/// `idx()` to index the table it names and `Display`/`Debug` that print the
/// bare number, as the `u32` it replaces printed.
macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        id_idx!($name);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}

id_newtype!(
    /// Task identifier (index into the engine's task table).
    TaskId
);
id_newtype!(
    /// Channel identifier.
    ChanId
);
id_newtype!(
    /// Futex word identifier.
    FutexId
);
id_newtype!(
    /// Wait-list identifier (a lock-free list of waiting tasks).
    ListId
);
id_newtype!(
    /// Identifier of a set of per-CPU locks.
    LockSetId
);
id_newtype!(
    /// A pthread mutex (`Engine::add_mutex`, [`Op::MutexLock`]).
    MutexId
);
id_newtype!(
    /// A pthread condition variable (`Engine::add_cond`, [`Op::CondWait`]).
    CondId
);
id_newtype!(
    /// An rt-app barrier (`Engine::add_barrier`, [`Op::BarrierWait`]).
    BarrierId
);
id_newtype!(
    /// An rt-app timer (`Engine::add_rt_timer`, [`Op::TimerWait`]).
    RtTimerId
);
/// Index of a per-task time variable (see [`Op::Stamp`]).
pub type VarId = u8;
/// Index of a recorded metric (see [`Op::RecordSince`]).
pub type MetricId = u8;

/// A CPU set a task may switch its affinity to (`Engine::add_cpuset`, see
/// [`Op::SetAffinity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSetId(pub u32);

/// A pool of declared tasks that [`Op::Fork`] starts one at a time
/// (`Engine::add_fork_pool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ForkPoolId(pub u32);

/// A task program: a flat list of ops, shared (cheaply cloned) between
/// the tasks that run it.
pub type Program = std::sync::Arc<[Op]>;

/// Per-task time variables.
pub const TASK_VARS: usize = 4;

/// The compute burst of rt-app's `runtime` event between its clock reads
/// (`loadwait(32)`, 32 us, rt-app v1.0 src/rt-app.c `run_event`).
pub const RUNTIME_BURST_NS: Nanos = 32_000;

/// An OpenMP barrier (a team's barrier or a pool's dock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OmpBarrierId(pub u32);

/// A point-to-point flag (a one-slot mailbox between two threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OmpFlagId(pub u32);

// the older ids keep their derived `Debug` (`CpuSetId(3)`)
id_idx!(CpuSetId, ForkPoolId, OmpBarrierId, OmpFlagId);

/// One operation of a task program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Run user code for this much work (ns at full core speed).
    Compute(Nanos),
    /// Run user code that streams memory: `work` ns of CPU work plus the
    /// DRAM traffic of `access` (`Engine::add_access`), timed by the SLIT
    /// distance of each chunk it touches (crates/sim/src/numa). Its first
    /// touches place pages, and marked chunks take NUMA hinting faults.
    ComputeMem {
        /// CPU work, ns at full core speed.
        work: Nanos,
        /// What it touches.
        access: crate::numa::AccessId,
    },
    /// write(2) `bytes` to a channel, retrying short writes; blocks while full.
    Write {
        /// Channel.
        chan: ChanId,
        /// Bytes.
        bytes: u32,
    },
    /// read(2) exactly `bytes` from a channel, retrying short reads; blocks
    /// while empty.
    Read {
        /// Channel.
        chan: ChanId,
        /// Bytes.
        bytes: u32,
    },
    /// poll(2) a channel for readability without consuming.
    Poll {
        /// Channel.
        chan: ChanId,
    },
    /// Sleep for a duration (nanosleep/usleep).
    Sleep(Nanos),
    /// Create task `child` (fork or pthread_create) and wake it up.
    Spawn {
        /// The child's task id (declared up front by the workload).
        child: TaskId,
    },
    /// wait(2) for any child to exit (process mode).
    WaitChild,
    /// pthread_join a task.
    Join {
        /// Task to wait for.
        task: TaskId,
    },
    /// Record the current time in mark slot `id` (gettimeofday).
    Mark(u32),
    /// gettimeofday into the task's time variable `var`.
    Stamp(VarId),
    /// gettimeofday, then record `now - var` as a sample of `metric`.
    RecordSince {
        /// Metric.
        metric: MetricId,
        /// The task's time variable.
        var: VarId,
    },
    /// Record `value` as a sample of `metric` (a counter, e.g. bytes or
    /// requests done), no syscall.
    Note {
        /// Metric.
        metric: MetricId,
        /// Value.
        value: u32,
    },
    /// Store to a futex word (plain write of its cache line): `blocked`
    /// sets FUTEX_BLOCKED, else FUTEX_RUNNING.
    FutexSet {
        /// The word.
        futex: FutexId,
        /// Value.
        blocked: bool,
    },
    /// A plain load of a futex word (a read of its cache line, nothing
    /// else): the reader side of a false-sharing loop.
    FutexLoad(FutexId),
    /// Post a futex word as schbench's fpost does: compare-and-swap
    /// BLOCKED -> RUNNING and, if it was BLOCKED, FUTEX_WAKE_PRIVATE one
    /// waiter.
    FutexPost(FutexId),
    /// Wait on a futex word as schbench's fwait does: compare-and-swap
    /// RUNNING -> BLOCKED, else FUTEX_WAIT_PRIVATE until posted, and retry.
    FutexWait(FutexId),
    /// Push this task, with its futex word, onto a lock-free list
    /// (compare-and-swap prepend).
    ListPush {
        /// The list.
        list: ListId,
        /// The futex word a taker posts to wake this task.
        futex: FutexId,
    },
    /// Take the whole list (atomic exchange), read the time once, store it
    /// into each listed task's variable `var`, and post each task's futex.
    ListTakeStampPost {
        /// The list.
        list: ListId,
        /// The variable of each listed task that receives the time.
        var: VarId,
    },
    /// Take the lock of the CPU the task runs on from a set of per-CPU
    /// pthread mutexes, by trylock and busy-spinning; if the task has moved
    /// to another CPU meanwhile, it lets go and retries there.
    LockCpu(LockSetId),
    /// Release the per-CPU lock the task holds in the set.
    UnlockCpu(LockSetId),
    /// usleep: a timed sleep whose hrtimer fires at the end of its slack
    /// (timer_slack_ns).
    USleep(Nanos),
    /// usleep the rest of a period that started at the time in the task's
    /// variable `var`: schbench's RPS message thread sleeps out what is
    /// left of its one-second cycle (`usleep(1s - elapsed)`, an hrtimer
    /// sleep with the timer slack). No sleep, and no syscall, when the
    /// period is already over.
    USleepRest {
        /// The period (ns).
        period: Nanos,
        /// The task's variable holding the period's start.
        var: VarId,
    },
    /// schbench's RPS back-off: if the request queue (a wait list used as
    /// a queue, see [`Op::ReqPush`]) holds more than `limit` requests,
    /// usleep `sleep_ns` and skip the next op (the push); else go on to
    /// the next op. Reading the count transfers the queue's cache line.
    /// The op after it must be a plain op (not `Loop`/`EndLoop`).
    ReqBackoff {
        /// The worker's request queue.
        queue: ListId,
        /// Pending requests allowed before backing off.
        limit: u32,
        /// The back-off sleep (ns, a usleep with the timer slack).
        sleep_ns: u32,
    },
    /// schbench's RPS hand-out: push one request onto a worker's queue
    /// (the lock-free list CAS and the pending-count increment), read the
    /// time once into the worker's variable `var` (its wake time) and
    /// post the worker's futex word as fpost does (FUTEX_WAKE_PRIVATE when
    /// it was BLOCKED: a plain wake-up, no WF_SYNC). Each push is counted
    /// as a sample of 1 of `metric` (no cost: bookkeeping of the model).
    ReqPush {
        /// The worker's request queue.
        queue: ListId,
        /// The worker.
        worker: TaskId,
        /// The worker's futex word.
        futex: FutexId,
        /// The worker's variable receiving the wake time.
        var: VarId,
        /// Metric counting the pushes.
        metric: MetricId,
    },
    /// schbench's RPS worker taking its next request: if its queue holds
    /// one, take it (atomic decrement) and go on, recording nothing;
    /// otherwise mark its futex word BLOCKED and FUTEX_WAIT_PRIVATE until
    /// a push posts it, then take the request and record `now - var` (the
    /// wake time the pusher wrote) as a sample of `metric`.
    ReqTakeOrWait {
        /// The task's own request queue.
        queue: ListId,
        /// The task's futex word.
        futex: FutexId,
        /// Metric of the wakeup latency.
        metric: MetricId,
        /// The task's variable holding the wake time.
        var: VarId,
    },
    /// pthread_mutex_lock (engine/pthread.rs): take the mutex, or sleep
    /// until its holder hands it over.
    MutexLock(MutexId),
    /// pthread_mutex_unlock: hand the mutex to its first waiter, if any.
    MutexUnlock(MutexId),
    /// pthread_cond_wait: release the mutex, sleep until signalled, return
    /// holding the mutex again.
    CondWait {
        /// The condition variable.
        cond: CondId,
        /// The mutex the caller holds.
        mutex: MutexId,
    },
    /// pthread_cond_signal: the first waiter goes back to its mutex.
    CondSignal(CondId),
    /// pthread_cond_broadcast: every waiter goes back to its mutex.
    CondBroadcast(CondId),
    /// rt-app's barrier: sleep until the barrier's last user arrives.
    BarrierWait(BarrierId),
    /// rt-app's timer event: advance the timer by `period` from its last
    /// deadline (from the thread's start the first time) and
    /// clock_nanosleep(TIMER_ABSTIME) until then; log the slack and the
    /// wake-up latency.
    TimerWait {
        /// The timer.
        timer: RtTimerId,
        /// Its period (ns).
        period: Nanos,
        /// Add the slack to the phase's instead of replacing it.
        cumulative: bool,
    },
    /// rt-app's initial delay: clock_nanosleep(TIMER_ABSTIME) until this
    /// time, which becomes the thread's timer origin.
    DelayUntil(Nanos),
    /// rt-app's `runtime` event (after `RunStart`): bursts of user compute
    /// of [`RUNTIME_BURST_NS`] each, with a clock read after each, until
    /// this much wall time has passed since the `RunStart`. Time the task
    /// spends preempted counts, so it may get less CPU than the duration.
    Runtime(Nanos),
    /// rt-app's log: a phase starts (clock_gettime).
    PhaseStart,
    /// rt-app's log: a run event starts (clock_gettime).
    RunStart,
    /// rt-app's log: a run event ends (clock_gettime); its time is added.
    RunEnd,
    /// rt-app's log: the phase (the workload's number) ends; its row is
    /// recorded.
    PhaseEnd(u32),
    /// Start of a loop body repeated `n` times.
    Loop(u32),
    /// End of the innermost loop body.
    EndLoop,
    /// sched_yield(2): give the CPU to another runnable task of the run
    /// queue, if there is one (yield_task_fair).
    Yield,
    /// exit(2).
    Exit,
    /// Wait at an OpenMP barrier as libgomp does (engine/omp.rs): arrive,
    /// spin for the barrier's spin budget, then FUTEX_WAIT until the last
    /// arrival; the last one wakes everyone.
    OmpBarrier(OmpBarrierId),
    /// Combine a reduction partial: an atomic update of the reduction
    /// line of this barrier.
    OmpReduce(OmpBarrierId),
    /// Spin until the flag is set, then clear it (LU's `sync_left`).
    OmpFlagWait(OmpFlagId),
    /// Spin until the flag is clear, then set it (LU's `sync_right`).
    OmpFlagPost(OmpFlagId),
    /// sched_setaffinity(2) on itself to this CPU set (intersected with the
    /// CPUs the run may use), made only when the set differs from the
    /// task's current one (the caller's own check, as rt-app's
    /// `set_thread_affinity` makes it). If the task's CPU is no longer
    /// allowed, the CPU's stopper moves it at once to the CPU
    /// `cpumask_any_and_distribute` picks (engine/affinity.rs).
    SetAffinity(CpuSetId),
    /// pthread_create of the next task of a fork pool, which inherits the
    /// caller's affinity and is placed as a new task (wake_up_new_task);
    /// the run ends with the pool's error once the pool is used up
    /// (engine/fork.rs).
    Fork(ForkPoolId),
}

/// A task description given by a workload. Laid out in the order written
/// (`repr(C)`): the program and the mm, which the engine reads at every op,
/// come first.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct TaskSpec {
    /// The program, shared by the tasks that run the same one (hackbench's
    /// senders of a group: each sender's program names every channel of
    /// its group, so private copies would grow with the square of the
    /// group size).
    pub program: Program,
    /// Address space id: threads of a process share one.
    pub mm: u32,
    /// Name (comm).
    pub name: String,
    /// Parent task (None for the initial task).
    pub parent: Option<TaskId>,
    /// Created by `Spawn` (false: runnable at time 0).
    pub spawned: bool,
    /// For a task runnable at time 0: enqueue it on this CPU as it is,
    /// without fork placement (a task created while pinned there and then
    /// released), so only the load balancer can spread such tasks. None:
    /// placed like a fork from the first allowed CPU.
    pub start_cpu: Option<usize>,
    /// Nice value.
    pub nice: i32,
    /// Cache lines of working set refilled after a migration.
    pub footprint_lines: u32,
}

/// Program counter with a loop stack.
#[derive(Clone, Debug, Default)]
pub struct Pc {
    /// Index of the next op.
    pub pc: u32,
    /// The innermost loop, (index of the first op of the body, iterations
    /// left), kept in the task's record: every `EndLoop` reads it, and a
    /// stack on the heap was one more cache line per op on large machines.
    /// Iterations left is 0 when no loop is open (an open loop has at
    /// least one left: `Loop(0)` is skipped).
    top: (u32, u32),
    /// The enclosing loops, outermost first.
    outer: Vec<(u32, u32)>,
}

impl Pc {
    /// The innermost open loop.
    #[inline]
    fn top_mut(&mut self) -> Option<&mut (u32, u32)> {
        (self.top.1 > 0).then_some(&mut self.top)
    }

    /// Open a loop of `n` (> 0) iterations whose body starts at `body`.
    fn push_loop(&mut self, body: u32, n: u32) {
        if self.top.1 > 0 {
            self.outer.push(self.top);
        }
        self.top = (body, n);
    }

    /// Close the innermost loop.
    fn pop_loop(&mut self) {
        self.top = self.outer.pop().unwrap_or((0, 0));
    }

    /// Resolve loop structure and return the next real op, or None at the end
    /// of the program. Does not advance past the returned op.
    #[inline]
    pub fn current<'p>(&mut self, prog: &'p [Op]) -> Option<&'p Op> {
        // the common case, an op that is no loop marker, inline at the
        // caller; loop bookkeeping out of line
        match prog.get(self.pc as usize) {
            Some(op) if !matches!(op, Op::Loop(_) | Op::EndLoop) => Some(op),
            Some(Op::EndLoop) => {
                // the end of a loop body that goes round again (a receiver's
                // one-op loop meets this at every other op): back to the
                // body's first op, which is usually a plain one
                if let Some(top) = self.top_mut().filter(|top| top.1 > 1) {
                    top.1 -= 1;
                    self.pc = top.0;
                    if let Some(op) = prog.get(self.pc as usize) {
                        if !matches!(op, Op::Loop(_) | Op::EndLoop) {
                            return Some(op);
                        }
                    }
                }
                self.resolve_loops(prog)
            }
            _ => self.resolve_loops(prog),
        }
    }

    /// [`Self::current`] at a loop marker or the end of the program.
    #[inline(never)]
    fn resolve_loops<'p>(&mut self, prog: &'p [Op]) -> Option<&'p Op> {
        loop {
            let op = prog.get(self.pc as usize)?;
            match *op {
                Op::Loop(n) => {
                    if n == 0 {
                        // skip to the matching EndLoop
                        let mut depth = 0;
                        let mut i = self.pc as usize;
                        loop {
                            match prog.get(i)? {
                                Op::Loop(_) => depth += 1,
                                Op::EndLoop => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                            i += 1;
                        }
                        self.pc = i as u32 + 1;
                    } else {
                        self.push_loop(self.pc + 1, n);
                        self.pc += 1;
                    }
                }
                Op::EndLoop => {
                    let top = self.top_mut()?;
                    top.1 -= 1;
                    if top.1 == 0 {
                        self.pop_loop();
                        self.pc += 1;
                    } else {
                        self.pc = top.0;
                    }
                }
                _ => return Some(op),
            }
        }
    }

    /// Move past the current op.
    pub fn advance(&mut self) {
        self.pc += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(prog: &[Op]) -> Vec<Op> {
        let mut pc = Pc::default();
        let mut out = vec![];
        while let Some(&op) = pc.current(prog) {
            out.push(op);
            pc.advance();
            assert!(out.len() < 1000);
        }
        out
    }

    #[test]
    fn nested_loops_expand() {
        let p = [
            Op::Loop(2),
            Op::Mark(1),
            Op::Loop(3),
            Op::Mark(2),
            Op::EndLoop,
            Op::EndLoop,
            Op::Exit,
        ];
        let ops = run(&p);
        let marks: Vec<_> = ops
            .iter()
            .map(|o| if let Op::Mark(m) = o { *m } else { 0 })
            .collect();
        assert_eq!(marks, vec![1, 2, 2, 2, 1, 2, 2, 2, 0]);
    }

    #[test]
    fn zero_loop_is_skipped() {
        let p = [
            Op::Loop(0),
            Op::Mark(1),
            Op::Loop(2),
            Op::EndLoop,
            Op::EndLoop,
            Op::Exit,
        ];
        assert_eq!(run(&p), vec![Op::Exit]);
    }
}
