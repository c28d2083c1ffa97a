//! The run-queue discipline interface. The engine is generic over it; the
//! one implementation is [`crate::eevdf::CfsRq`], named after the kernel's
//! `struct cfs_rq`, which holds either discipline: EEVDF (Linux 6.6 on,
//! `eevdf.rs`) or CFS (2.6.38 to 6.5, `cfs.rs`), chosen by
//! [`EevdfParams::class`] through `configure`. Each entry point (the
//! inherent `CfsRq` method of the same name, which this implementation
//! calls) tests the class once and runs that discipline's rules.

use crate::eevdf::{CfsRq, EevdfParams, Entity};
use crate::Nanos;

/// What the engine needs from a per-CPU fair run queue. Entities live in a
/// table indexed by task id, owned by the engine.
pub trait RunQueue: Default {
    /// Add a waking or new (`initial`) task. Returns true if the running
    /// task must be rescheduled (its slice ran out while accounting it).
    fn enqueue(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        initial: bool,
        p: &EevdfParams,
    ) -> bool;
    /// Take the rules that act inside the queue (the discipline, update_curr's
    /// rules) from `p`.
    fn configure(&mut self, p: &EevdfParams);
    /// Name the queue (CPU c's is c + 1): CFS tells a sleeper waking on the
    /// queue it slept on from one that moved by it.
    fn set_rq_id(&mut self, id: u32) {
        let _ = id;
    }
    /// Remove a task that exits or migrates (not a sleeper: see
    /// `dequeue_sleep`). Saves its place for the next enqueue, here or on
    /// another queue: its lag (EEVDF) or its vruntime relative to
    /// min_vruntime (CFS), from which that enqueue places it.
    fn dequeue(&mut self, ents: &mut [Entity], id: u32, now: Nanos, p: &EevdfParams);
    /// Remove a task that blocks, or keep it queued as delayed
    /// (DELAY_DEQUEUE); true if delayed.
    fn dequeue_sleep(&mut self, ents: &mut [Entity], id: u32, now: Nanos, p: &EevdfParams) -> bool;
    /// The task to run next, after dequeuing for good any delayed task the
    /// pick selects.
    fn pick_next_task(&mut self, ents: &mut [Entity], now: Nanos, p: &EevdfParams) -> Option<u32>;
    /// Wake a delayed task where it is queued (ttwu_runnable).
    fn requeue_delayed(&mut self, ents: &mut [Entity], id: u32, p: &EevdfParams);
    /// The task that should run next (may be the current one).
    fn pick_next(&self, ents: &[Entity], p: &EevdfParams) -> Option<u32>;
    /// Make `next` current, putting the previous current back if runnable.
    fn set_next(&mut self, ents: &mut [Entity], next: Option<u32>, now: Nanos);
    /// Account the current task's runtime; true if it should be preempted
    /// (EEVDF's update_deadline; never under CFS, whose update_curr only
    /// accounts).
    fn update_curr(&mut self, ents: &mut [Entity], now: Nanos) -> bool;
    /// The scheduler tick for the running task (entity_tick): account it,
    /// then true if it should be preempted. EEVDF: exactly `update_curr`.
    /// CFS: update_curr, then check_preempt_tick when another task is
    /// queued.
    fn task_tick(&mut self, ents: &mut [Entity], now: Nanos, p: &EevdfParams) -> bool {
        let _ = p;
        self.update_curr(ents, now)
    }
    /// migrate_task_rq_fair for a sleeping task whose wake-up moves it off
    /// this queue (called on the old queue, before the enqueue on the new
    /// one). CFS measures the sleeper's vruntime against this queue's
    /// min_vruntime now, as the kernel does at that point; without the call
    /// it is measured against the min_vruntime this queue had when the task
    /// went to sleep. EEVDF: nothing (the lag was saved at dequeue).
    fn migrate_task_rq(&self, ents: &mut [Entity], id: u32) {
        let _ = (ents, id);
    }
    /// Whether a newly queued `wakee` preempts the current task.
    fn check_preempt_wakeup(
        &mut self,
        ents: &mut [Entity],
        wakee: u32,
        now: Nanos,
        p: &EevdfParams,
    ) -> bool;
    /// sched_yield by the current task (yield_task_fair); the caller
    /// reschedules.
    fn yield_task(&mut self, ents: &mut [Entity], now: Nanos);
    /// The current task.
    fn curr(&self) -> Option<u32>;
    /// Queued tasks other than the current one, in the order they were
    /// queued (for checks and reports: it builds the list).
    fn queued(&self) -> Vec<u32>;
    /// Task `id` is queued, not as the current one.
    fn is_queued(&self, id: u32) -> bool;
    /// Runnable tasks including the current one.
    fn nr_running(&self) -> u32;
    /// Runnable SCHED_IDLE tasks.
    fn nr_idle(&self) -> u32;
    /// Delayed sleepers still queued (DELAY_DEQUEUE).
    fn nr_delayed(&self) -> u32;
    /// Total load weight of the runnable tasks.
    fn load_weight(&self) -> u64;
    /// A guess at the task the next pick takes, for prefetching its state
    /// (never for a decision): the leftmost queued one, whose deadline
    /// leads when the queued tasks' slices are equal. None: no guess.
    fn next_hint(&self) -> Option<u32> {
        None
    }
}

impl RunQueue for CfsRq {
    fn enqueue(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        initial: bool,
        p: &EevdfParams,
    ) -> bool {
        CfsRq::enqueue(self, ents, id, now, initial, p)
    }
    fn dequeue(&mut self, ents: &mut [Entity], id: u32, now: Nanos, p: &EevdfParams) {
        CfsRq::dequeue(self, ents, id, now, p)
    }
    fn pick_next(&self, ents: &[Entity], p: &EevdfParams) -> Option<u32> {
        CfsRq::pick_next(self, ents, p)
    }
    fn configure(&mut self, p: &EevdfParams) {
        CfsRq::configure(self, p)
    }
    fn set_rq_id(&mut self, id: u32) {
        CfsRq::set_rq_id(self, id)
    }
    fn dequeue_sleep(&mut self, ents: &mut [Entity], id: u32, now: Nanos, p: &EevdfParams) -> bool {
        CfsRq::dequeue_sleep(self, ents, id, now, p)
    }
    fn pick_next_task(&mut self, ents: &mut [Entity], now: Nanos, p: &EevdfParams) -> Option<u32> {
        CfsRq::pick_next_task(self, ents, now, p)
    }
    fn requeue_delayed(&mut self, ents: &mut [Entity], id: u32, p: &EevdfParams) {
        // EEVDF's only: CFS never delays a sleeper
        CfsRq::requeue_delayed(self, ents, id, p)
    }
    fn set_next(&mut self, ents: &mut [Entity], next: Option<u32>, now: Nanos) {
        CfsRq::set_next(self, ents, next, now)
    }
    fn update_curr(&mut self, ents: &mut [Entity], now: Nanos) -> bool {
        CfsRq::update_curr(self, ents, now)
    }
    fn task_tick(&mut self, ents: &mut [Entity], now: Nanos, p: &EevdfParams) -> bool {
        CfsRq::task_tick(self, ents, now, p)
    }
    fn migrate_task_rq(&self, ents: &mut [Entity], id: u32) {
        CfsRq::migrate_task_rq(self, ents, id)
    }
    fn check_preempt_wakeup(
        &mut self,
        ents: &mut [Entity],
        wakee: u32,
        now: Nanos,
        p: &EevdfParams,
    ) -> bool {
        CfsRq::check_preempt_wakeup(self, ents, wakee, now, p)
    }
    fn yield_task(&mut self, ents: &mut [Entity], now: Nanos) {
        CfsRq::yield_task(self, ents, now)
    }
    fn curr(&self) -> Option<u32> {
        self.curr
    }
    fn queued(&self) -> Vec<u32> {
        CfsRq::queued(self)
    }
    fn is_queued(&self, id: u32) -> bool {
        CfsRq::is_queued(self, id)
    }
    fn nr_running(&self) -> u32 {
        self.nr_running
    }
    fn nr_idle(&self) -> u32 {
        self.nr_idle
    }
    fn nr_delayed(&self) -> u32 {
        self.nr_delayed
    }
    fn load_weight(&self) -> u64 {
        self.load_weight
    }
    #[inline]
    fn next_hint(&self) -> Option<u32> {
        self.timeline.first().map(|(id, _)| id)
    }
}
