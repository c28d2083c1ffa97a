//! Invariants checked by `--check`.

use super::{Engine, InvariantError, Mode, TaskState};
use crate::rq::RunQueue;
use crate::task::TaskId;

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Check the modelling invariants (DESIGN.md) on the current state.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let err = |what: String| {
            Err(InvariantError {
                time: self.now,
                what,
            })
        };
        let mut on_rq = vec![0u32; self.tasks.len()];
        let mut delayed_on = vec![None; self.tasks.len()];
        for (c, cpu) in self.cpus.iter().enumerate() {
            // delayed sleepers (DELAY_DEQUEUE) are queued but not running
            let mut n = 0;
            let mut delayed = 0;
            for t in cpu.rq.queued().into_iter().map(TaskId) {
                if self.ents[t.idx()].delayed {
                    if delayed_on[t.idx()].replace(c).is_some() {
                        return err(format!("task {t}: delayed on two run queues"));
                    }
                    delayed += 1;
                } else {
                    on_rq[t.idx()] += 1;
                    n += 1;
                }
            }
            if let Some(cur) = cpu.rq.curr().map(TaskId) {
                if self.ents[cur.idx()].delayed {
                    if delayed_on[cur.idx()].replace(c).is_some() {
                        return err(format!("task {cur}: delayed on two run queues"));
                    }
                    delayed += 1;
                } else if self.ents[cur.idx()].on_rq {
                    on_rq[cur.idx()] += 1;
                    n += 1;
                }
            }
            if delayed != cpu.rq.nr_delayed() {
                return err(format!(
                    "cpu {c}: nr_delayed {} but {delayed} delayed tasks queued",
                    cpu.rq.nr_delayed()
                ));
            }
            if delayed > 0 && matches!(cpu.mode, Mode::Idle { .. }) {
                return err(format!("cpu {c}: idle with {delayed} delayed tasks queued"));
            }
            if n != cpu.rq.nr_running() {
                return err(format!(
                    "cpu {c}: nr_running {} but {n} tasks queued",
                    cpu.rq.nr_running()
                ));
            }
            if self.k.cpu_state[c].nr_running != cpu.rq.nr_running() {
                return err(format!("cpu {c}: placement view nr_running is stale"));
            }
            if cpu.rq.nr_running() > 0 && matches!(cpu.mode, Mode::Idle { .. }) {
                return err(format!(
                    "cpu {c}: idle with {} runnable tasks",
                    cpu.rq.nr_running()
                ));
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            let runnable = task.state == TaskState::Runnable;
            if self.ents[t].delayed
                && (!matches!(task.state, TaskState::Blocked(_)) || delayed_on[t] != Some(task.cpu))
            {
                return err(format!(
                    "task {t}: delayed, {:?}, queued on {:?}, task_cpu {}",
                    task.state, delayed_on[t], task.cpu
                ));
            }
            if runnable && on_rq[t] != 1 {
                return err(format!("task {t} runnable but on {} run queues", on_rq[t]));
            }
            if !runnable && on_rq[t] != 0 {
                return err(format!("task {t} not runnable but queued"));
            }
            if runnable
                && !self.cpus[task.cpu].rq.is_queued(t as u32)
                && self.cpus[task.cpu].rq.curr() != Some(t as u32)
            {
                return err(format!(
                    "task {t} is not on the run queue of task_cpu {}",
                    task.cpu
                ));
            }
            // cfs_tasks holds exactly the tasks enqueued on a run queue
            let listed = self.k.cfs_lists.cpu_of(t as u32);
            let enqueued = (on_rq[t] == 1).then_some(task.cpu);
            if listed != enqueued {
                return err(format!(
                    "task {t}: on the cfs_tasks list of {listed:?}, enqueued on {enqueued:?}"
                ));
            }
        }
        let mut running = vec![false; self.tasks.len()];
        for cpu in &self.cpus {
            if let (Mode::Busy, Some(t)) = (cpu.mode, cpu.seg.task) {
                if std::mem::replace(&mut running[t.idx()], true) {
                    return err(format!("task {t} runs on two CPUs"));
                }
            }
        }
        if let Some(what) = self.numa_invariant() {
            return err(what);
        }
        Ok(())
    }

    pub(super) fn check_final(&self, stopped: bool) -> Result<(), InvariantError> {
        let err = |what: String| {
            Err(InvariantError {
                time: self.now,
                what,
            })
        };
        let (w, r) = self.channel_bytes();
        let buffered: u64 = self.chans.iter().map(|c| c.buffered).sum();
        if w != r + buffered {
            return err(format!(
                "bytes written {w} != bytes read {r} + buffered {buffered}"
            ));
        }
        for (c, cpu) in self.cpus.iter().enumerate() {
            if cpu.time.busy_ns + cpu.time.idle_ns != self.now {
                return err(format!(
                    "cpu {c}: busy {} + idle {} != elapsed {}",
                    cpu.time.busy_ns, cpu.time.idle_ns, self.now
                ));
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            // a timed run stops with its tasks alive
            if !stopped && task.state != TaskState::Exited && task.state != TaskState::Unborn {
                return err(format!("task {t} never exited ({:?})", task.state));
            }
        }
        Ok(())
    }
}
