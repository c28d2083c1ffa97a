//! Threads created during the run from pools of declared tasks
//! ([`Op::Fork`](crate::task::Op::Fork)): a workload whose threads create
//! others at run time, in an order only the run decides (rt-app's `fork`
//! event, where every thread that forks task NAME takes the next of NAME's
//! forks), declares as many tasks as can be forked and groups them in a
//! pool; each fork starts the pool's next task.
//!
//! What a fork does, as pthread_create does it: clone(CLONE_THREAD) copies
//! the caller's affinity to the new thread (Linux `dup_task_struct` copies
//! `cpus_mask`), and `wake_up_new_task` places it from the caller's CPU
//! (`select_task_rq` with WF_FORK). Its cost is the profile's
//! `thread_create_ns`, as for `Op::Spawn` of a thread.
//!
//! A fork that finds its pool used up ends the run with the pool's error
//! (rt-app exits there: its fork limit).

use super::{Engine, RunError};
use crate::rq::RunQueue;
use crate::task::{ForkPoolId, TaskId};

/// One pool: its tasks in the order forks start them.
#[derive(Debug, Default)]
struct Pool {
    tasks: Vec<TaskId>,
    next: usize,
    /// The error of the fork that finds the pool used up.
    exhausted: String,
}

/// Every pool, and the tasks forked so far in the order they were.
#[derive(Debug, Default)]
pub(super) struct ForkPools {
    pools: Vec<Pool>,
    order: Vec<TaskId>,
    /// A fork found its pool used up: the run ends with this.
    failed: Option<String>,
}

/// The error a run ends with when a workload's own limit stops it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} (at {:.6} s simulated)", *at as f64 / 1e9)]
pub struct WorkloadFailed {
    /// The workload's message.
    pub what: String,
    /// When, ns.
    pub at: crate::Nanos,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// A pool of declared tasks (each declared with `spawned: true`) that
    /// [`Op::Fork`](crate::task::Op::Fork) starts in this order;
    /// `exhausted` is the error of a fork past the last one.
    pub fn add_fork_pool(&mut self, tasks: Vec<TaskId>, exhausted: String) -> ForkPoolId {
        self.forks.pools.push(Pool {
            tasks,
            next: 0,
            exhausted,
        });
        ForkPoolId(self.forks.pools.len() as u32 - 1)
    }

    /// The tasks forked from pools, in the order they were forked.
    pub fn forked_tasks(&self) -> &[TaskId] {
        &self.forks.order
    }

    /// Apply `Op::Fork(pool)` made by `t` on `c`: start the pool's next task.
    pub(super) fn fork_apply(&mut self, c: usize, t: TaskId, pool: ForkPoolId) {
        let ti = t.idx();
        self.tasks[ti].pc.advance();
        let p = &mut self.forks.pools[pool.idx()];
        let Some(&child) = p.tasks.get(p.next) else {
            self.forks.failed = Some(p.exhausted.clone());
            return;
        };
        p.next += 1;
        self.forks.order.push(child);
        // the new thread inherits the caller's affinity
        self.k.tplace[child.idx()].cpus_allowed = self.k.tplace[ti].cpus_allowed.clone();
        self.live_tasks += 1;
        self.wake_up_new_task(child, c);
    }

    /// The error of a fork that found its pool used up (once).
    pub(super) fn take_fork_failure(&mut self) -> Result<(), RunError> {
        if self.forks.failed.is_none() {
            // the common case, without storing `None` back
            return Ok(());
        }
        match self.forks.failed.take() {
            None => Ok(()),
            Some(what) => Err(WorkloadFailed { what, at: self.now }.into()),
        }
    }
}
