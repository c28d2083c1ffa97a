//! Affinity changes during a run and the stopper's move of a task.
//!
//! - `Op::SetAffinity`: a task calls sched_setaffinity(2) on itself
//!   (kernel/sched/core.c `__sched_setaffinity` ->
//!   `__set_cpus_allowed_ptr_locked`, Linux 6.6). The new mask is stored
//!   (`__do_set_cpus_allowed`); the kernel has already picked a
//!   destination with `cpumask_any_and_distribute` (lib/cpumask.c: the
//!   next allowed CPU after the last one this CPU handed out, wrapping;
//!   5.7+, commit 46a87b3851f0). `affine_move_task` then leaves a task whose
//!   CPU is still allowed where it is; a running one (always the case here:
//!   the caller is the task) is handed to its CPU's stopper
//!   (`stop_one_cpu_nowait`), which runs as the syscall re-enables
//!   preemption and, in `migration_cpu_stop`, moves the still-queued task
//!   to the destination (`__migrate_task` -> `move_queued_task`).
//! - [`Engine::migration_cpu_stop`]: that move, shared with NUMA
//!   balancing's `migrate_task_to` / `migrate_swap` (engine/numa.rs).
//!
//! Not modelled: before 5.7 the destination was the first allowed CPU
//! (`cpumask_any_and`), and before 5.11 it was picked only when the task had
//! to move; changing another task's affinity (a queued or sleeping task).

use super::{Engine, TaskState};
use crate::rq::RunQueue;
use crate::task::{CpuSetId, TaskId};
use crate::Nanos;
use topology::CpuMask;

/// CPU sets tasks may switch to, and each CPU's last
/// `cpumask_any_and_distribute` pick.
#[derive(Debug, Default)]
pub(super) struct AffinityState {
    sets: Vec<CpuMask>,
    /// `distribute_cpu_mask_prev`, per CPU (0 at boot, so the first pick
    /// skips CPU 0).
    distribute_prev: Vec<usize>,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Declare a CPU set for `Op::SetAffinity`.
    pub fn add_cpuset(&mut self, cpus: &CpuMask) -> CpuSetId {
        self.affinity.sets.push(cpus.clone());
        CpuSetId(self.affinity.sets.len() as u32 - 1)
    }

    /// The mask `Op::SetAffinity(set)` gives: the set within the CPUs the
    /// run may use.
    fn affinity_mask(&self, set: CpuSetId) -> CpuMask {
        self.affinity.sets[set.idx()].and(&self.cfg.allowed)
    }

    /// Work of `t`'s `Op::SetAffinity(set)`: the syscall, or nothing when
    /// the mask is unchanged (the caller does not make the call) or empty
    /// (the kernel refuses it with EINVAL before changing anything).
    pub(super) fn set_affinity_work(&self, t: TaskId, set: CpuSetId) -> Nanos {
        let mask = self.affinity_mask(set);
        if mask.is_empty() || mask == self.k.tplace[t.idx()].cpus_allowed {
            0
        } else {
            self.k.costs.syscall_ns
        }
    }

    /// The effect of `t`'s `Op::SetAffinity(set)` on `c`, where it runs.
    pub(super) fn set_affinity_apply(&mut self, c: usize, t: TaskId, set: CpuSetId) {
        let ti = t.idx();
        self.tasks[ti].pc.advance();
        let mask = self.affinity_mask(set);
        if mask.is_empty() || mask == self.k.tplace[ti].cpus_allowed {
            return;
        }
        let dst = self.cpumask_any_and_distribute(c, &mask);
        self.k.tplace[ti].cpus_allowed = mask;
        if self.k.tplace[ti].cpus_allowed.test(self.tasks[ti].cpu) {
            return;
        }
        // affine_move_task: the task runs here, so this CPU's stopper
        // preempts it and moves it before it returns to user space
        self.migration_cpu_stop(c, t, dst);
    }

    /// lib/cpumask.c `cpumask_any_and_distribute` called on CPU `c`: the
    /// first CPU of `mask` after the one `c` picked last, wrapping.
    fn cpumask_any_and_distribute(&mut self, c: usize, mask: &CpuMask) -> usize {
        let n = self.k.topo.nr_cpus();
        let prev = &mut self.affinity.distribute_prev;
        if prev.len() < n {
            prev.resize(n, 0);
        }
        let next = mask
            .first_wrap(prev[c] + 1)
            .expect("the caller checked the mask is not empty");
        prev[c] = next;
        next
    }

    /// `migration_cpu_stop` on `c`'s stopper: move `t` to `dst` if it is
    /// still on `c`, runnable and allowed there (the running task is first
    /// put back in the queue: the stopper preempted it), then
    /// `move_queued_task`.
    pub(super) fn migration_cpu_stop(&mut self, c: usize, t: TaskId, dst: usize) {
        let ti = t.idx();
        if self.tasks[ti].state != TaskState::Runnable
            || self.tasks[ti].cpu != c
            || !self.k.tplace[ti].cpus_allowed.test(dst)
        {
            return;
        }
        if self.cpus[c].rq.curr() == Some(t.0) {
            self.update_task_pelt(ti, true, true);
            self.cpus[c].rq.set_next(&mut self.ents, None, self.now);
            self.update_rq_pelt(c);
        }
        // switching to the stopper thread and back
        self.cpus[c].debt += self.k.costs.ctx_switch_ns;
        self.migrate_queued_task(t, c, dst, c, 0);
        self.sync_rq_state(c);
        self.sync_rq_state(dst);
    }
}
