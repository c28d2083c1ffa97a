//! PELT updates of run queues and tasks, and the placement view's copy of
//! the run-queue state.

use super::{Cpu, Engine, Mode};
use crate::rq::RunQueue;
use crate::Nanos;

impl<R: RunQueue> Cpu<R> {
    /// Bring the run queue's PELT signals to `now` (update_cfs_rq_load_avg):
    /// load from the queued weight, runnable from the task count, running
    /// while the CPU runs a task.
    pub(super) fn update_pelt(&mut self, now: Nanos) {
        let running = self.rq.curr().is_some() && self.mode == Mode::Busy;
        self.pelt.update(
            now,
            self.rq.load_weight(),
            self.rq.nr_running() as u64,
            running,
            1,
        );
    }
}

impl<'t, R: RunQueue> Engine<'t, R> {
    pub(super) fn update_rq_pelt(&mut self, c: usize) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        cpu.update_pelt(now);
        let st = &mut self.k.cpu_state[c];
        st.load_avg = cpu.pelt.load_avg;
        st.util_avg = cpu.pelt.util_avg.min(1024);
        st.runnable_avg = cpu.pelt.runnable_avg;
    }

    /// Advance a task's PELT signals to now; `runnable`/`running` describe
    /// the interval that just elapsed, so callers update *before* changing
    /// the task's state (as the kernel's update_load_avg runs before the
    /// enqueue/dequeue it accounts for).
    pub(super) fn update_task_pelt(&mut self, t: usize, runnable: bool, running: bool) {
        let w = self.ents[t].weight;
        self.tasks[t]
            .pelt
            .update(self.now, runnable as u64, runnable as u64, running, w);
        self.k.tplace[t].load_avg = self.tasks[t].pelt.load_avg;
        self.k.tplace[t].util_avg = self.tasks[t].pelt.util_avg;
    }

    pub(super) fn sync_rq_state(&mut self, c: usize) {
        let rq = &self.cpus[c].rq;
        let st = &mut self.k.cpu_state[c];
        st.nr_running = rq.nr_running();
        st.nr_idle_tasks = rq.nr_idle();
        st.load_avg = self.cpus[c].pelt.load_avg;
        st.util_avg = self.cpus[c].pelt.util_avg.min(1024);
        st.runnable_avg = self.cpus[c].pelt.runnable_avg;
        self.note_idle_wait(c);
        if self.traced() {
            self.trace_nr_running(c);
        }
    }
}
