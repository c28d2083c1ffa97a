//! EEVDF run queue, one per CPU, in our own words after Linux 6.6
//! kernel/sched/fair.c (`avg_vruntime`, `entity_eligible`, `place_entity`,
//! `update_entity_lag`, `update_deadline`, `pick_eevdf`,
//! `check_preempt_wakeup`). Flat hierarchy (no cgroups).
//!
//! DELAY_DEQUEUE with DELAY_ZERO and ENQUEUE_DELAYED (6.12) is modelled
//! (`EevdfParams::delay_dequeue`, on for 6.12+ profiles: `dequeue_sleep`,
//! `pick_next_task`, `requeue_delayed`). Not modelled yet: PREEMPT_SHORT and
//! custom slices (every task has the base slice, so it would never act),
//! 6.17's protection limited to the shortest queued slice (the deadline
//! again with equal slices), PLACE_REL_DEADLINE, NEXT_BUDDY (off by
//! default). 6.17's resched at the end of protection is modelled
//! (`EevdfParams::resched_unprotected`). docs/fair-class.md.
//!
//! The run-queue discipline sits behind [`CfsRq`], which also holds CFS,
//! the discipline of kernels 2.6.38 to 6.5 ([`crate::cfs`]), chosen per
//! queue by [`EevdfParams::class`] (`configure`). The queue's entry points
//! (`CfsRq::enqueue`, `dequeue`, ..., which the [`crate::rq::RunQueue`]
//! implementation calls) test it once and run EEVDF's rules here (the
//! `*_eevdf` methods) or CFS's in [`crate::cfs`].
//!
//! The queued entities are kept in vruntime order, augmented with the
//! earliest deadline, as the kernel's rbtree is ([`crate::timeline`]): a
//! pick, the leftmost and min_vruntime cost O(log n) or O(1) however many
//! tasks are queued.

use crate::timeline::Timeline;
use crate::Nanos;

/// Load weight of nice 0 (NICE_0_LOAD after scale_load_down).
pub const NICE_0_LOAD: u64 = 1024;

/// Load weight for a nice value (sched_prio_to_weight).
pub fn nice_to_weight(nice: i32) -> u64 {
    // The kernel's sched_prio_to_weight values (nice -20 ..= 19): each step
    // is ~1.25x, rounded as the kernel rounded them. Integer data, so the
    // result never depends on floating-point library behaviour.
    const WEIGHTS: [u64; 40] = [
        88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100,
        4904, 3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172,
        137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
    ];
    WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// Scheduling entity state (the EEVDF part of `struct sched_entity`).
/// 64 bytes, line-aligned: an entity is read at every enqueue, dequeue and
/// pick, and with tens of thousands of tasks the table is beyond the
/// private caches, where an entity straddling two lines would cost two
/// misses.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub struct Entity {
    /// Load weight.
    pub weight: u64,
    /// Virtual runtime.
    pub vruntime: u64,
    /// Virtual deadline.
    pub deadline: u64,
    /// Lag saved at dequeue (V - v, clamped). Under CFS: `min_vruntime - v`
    /// saved at dequeue, the kernel's relative vruntime with the sign of a
    /// lag, from which another queue renormalises it ([`crate::cfs`]).
    pub vlag: i64,
    /// Requested slice (ns).
    pub slice: u64,
    /// Queued on a run queue (including as current).
    pub on_rq: bool,
    /// Start of the current execution stretch.
    pub exec_start: Nanos,
    /// Total CPU time consumed.
    pub sum_exec: Nanos,
    /// RUN_TO_PARITY protection: set when picked, cleared when the deadline
    /// moves (the kernel marks this with vlag == deadline).
    pub protected: bool,
    /// SCHED_IDLE policy.
    pub idle_policy: bool,
    /// DELAY_DEQUEUE (6.12): it blocked while not eligible and stays on the
    /// queue (`se->sched_delayed`), not runnable, until a pick selects it
    /// or it is woken in place.
    pub delayed: bool,
    /// CFS only: the id of the queue this entity went to sleep on
    /// (`dequeue_sleep`), so that its next enqueue is a wake-up (placed by
    /// place_entity), with its vruntime kept as it is when it wakes there
    /// and renormalised from `vlag` elsewhere; 0 when its last dequeue was
    /// not a sleep (a migration: the next enqueue only renormalises) or it
    /// was never dequeued. Fills the entity's spare bytes (it stays 64).
    pub sleep_rq: u32,
}

// one line, as the alignment above assumes
const _: () = assert!(std::mem::size_of::<Entity>() == 64);

impl Entity {
    /// A fresh entity with the given weight and slice.
    pub fn new(weight: u64, slice: u64) -> Self {
        Entity {
            weight,
            slice,
            ..Default::default()
        }
    }
}

/// delta scaled by NICE_0_LOAD / weight (calc_delta_fair).
#[inline]
pub fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        delta
    } else {
        ((delta as u128 * NICE_0_LOAD as u128) / weight as u128) as u64
    }
}

/// The largest key an entity may have and be eligible (entity_eligible:
/// `avg >= key * load`), or None when no key is: for load > 0 that is
/// exactly `key <= floor(avg / load)`, which a scan tests with one division
/// instead of a 128-bit product per entity.
#[inline]
fn max_eligible_key(avg: i64, load: i64) -> Option<i64> {
    if load > 0 {
        Some(avg.div_euclid(load))
    } else if avg >= 0 {
        Some(i64::MAX)
    } else {
        None
    }
}

/// The fair class's discipline: which rules a [`CfsRq`] follows (the kernel's
/// `struct cfs_rq` held either, by version).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FairClass {
    /// CFS, Linux 2.6.38 to 6.5 ([`crate::cfs`]).
    Cfs,
    /// EEVDF, Linux 6.6 on (this module).
    #[default]
    Eevdf,
}

/// Tunables of the fair discipline that vary by kernel version: EEVDF's, and
/// from `class` on CFS's (ignored by EEVDF). The CFS defaults are those of a
/// machine with 8 or more CPUs (SCHED_TUNABLESCALING_LOG, factor
/// 1 + ilog2(min(ncpus, 8)) = 4) and, for rules that changed between 4.x and
/// 6.5, of Linux 6.1; each such rule names its commit ([`crate::cfs`]).
#[derive(Clone, Copy, Debug)]
pub struct EevdfParams {
    /// sched_base_slice (ns).
    pub base_slice: Nanos,
    /// TICK_NSEC.
    pub tick_ns: Nanos,
    /// PLACE_LAG feature.
    pub place_lag: bool,
    /// PLACE_DEADLINE_INITIAL feature.
    pub place_deadline_initial: bool,
    /// RUN_TO_PARITY feature.
    pub run_to_parity: bool,
    /// WAKEUP_PREEMPTION feature.
    pub wakeup_preemption: bool,
    /// DELAY_DEQUEUE with DELAY_ZERO and ENQUEUE_DELAYED (6.12).
    pub delay_dequeue: bool,
    /// update_curr reschedules a running entity whose slice protection
    /// has ended, eligible or not (6.17, 0b9ca2dcabc3 "sched/fair: Always
    /// trigger resched at the end of a protected period").
    pub resched_unprotected: bool,
    /// The discipline: CFS (kernels before 6.6) or EEVDF (the default).
    pub class: FairClass,
    /// CFS: sysctl_sched_latency, the period shared among up to
    /// `sched_nr_latency` tasks (6 ms x factor; default 24 ms).
    pub sched_latency: Nanos,
    /// CFS: sysctl_sched_min_granularity (0.75 ms x factor; default 3 ms).
    pub sched_min_granularity: Nanos,
    /// CFS: sysctl_sched_wakeup_granularity (1 ms x factor; default 4 ms).
    pub sched_wakeup_granularity: Nanos,
    /// CFS: sysctl_sched_idle_min_granularity, the floor of a SCHED_IDLE
    /// entity's slice (0.75 ms, not scaled; 5.16+, see `cfs_idle_granularity`).
    pub sched_idle_min_granularity: Nanos,
    /// CFS: sched_nr_latency (8): above it the period grows by
    /// `sched_min_granularity` a task, and from it buddies are set.
    pub sched_nr_latency: u32,
    /// CFS feature START_DEBIT (on): a new task starts one virtual slice
    /// after min_vruntime.
    pub start_debit: bool,
    /// CFS feature GENTLE_FAIR_SLEEPERS (on): a sleeper's credit is half
    /// the latency.
    pub gentle_fair_sleepers: bool,
    /// CFS feature NEXT_BUDDY (off): a wakee that does not preempt is still
    /// made the next buddy once the queue is loaded.
    pub next_buddy: bool,
    /// CFS feature LAST_BUDDY (on): the task a wake-up preempts is made the
    /// last buddy once the queue is loaded.
    pub last_buddy: bool,
    /// CFS feature BASE_SLICE (5.13, 0c2de3f054a5 "sched,fair: Alternative
    /// sched_slice()"): sched_slice is at least `sched_min_granularity`.
    /// Off before 5.13 (4.x, 5.4, 5.10; 5.10.y stable took it later).
    pub cfs_base_slice: bool,
    /// CFS, 5.16 (2cae3948edd4 "sched: adjust sleeper credit for SCHED_IDLE
    /// entities", 51ce83ed523b "sched: reduce sched slice for SCHED_IDLE
    /// entities"): a SCHED_IDLE sleeper's credit is built from
    /// `sched_min_granularity` instead of the latency, and its slice floor
    /// is `sched_idle_min_granularity` while the queue holds non-idle tasks.
    pub cfs_idle_granularity: bool,
    /// CFS before 5.14: pick_next_entity clears the picked entity's buddies,
    /// even when it re-picks the running one; from 5.14 (21f56ffe4482
    /// "sched: Introduce sched_class::pick_task()") set_next_entity does, so
    /// only a switch clears them.
    pub cfs_pick_clears_buddies: bool,
    /// CFS, 6.3 (79ba1e607d68 "sched/fair: Limit sched slice duration"):
    /// check_preempt_tick's ideal runtime is at most `sched_latency`.
    pub cfs_slice_cap: bool,
    /// CFS, 6.3 (829c1651e9c4 "sched/fair: sanitize vruntime of entity being
    /// placed" with a53ce18cacb4 "sched/fair: Sanitize vruntime of entity
    /// being migrated"): a sleeper that slept more than 2^63 / 1024 ns
    /// (about 104 days) is placed at min_vruntime less its credit whatever
    /// its own vruntime. Stable 5.4.y to 6.2.y took both in 2023.
    pub cfs_long_sleeper: bool,
}

impl Default for EevdfParams {
    fn default() -> Self {
        EevdfParams {
            base_slice: 3_000_000,
            tick_ns: 4_000_000,
            place_lag: true,
            place_deadline_initial: true,
            run_to_parity: true,
            wakeup_preemption: true,
            delay_dequeue: false,
            resched_unprotected: false,
            class: FairClass::Eevdf,
            sched_latency: 24_000_000,
            sched_min_granularity: 3_000_000,
            sched_wakeup_granularity: 4_000_000,
            sched_idle_min_granularity: 750_000,
            sched_nr_latency: 8,
            start_debit: true,
            gentle_fair_sleepers: true,
            next_buddy: false,
            last_buddy: true,
            cfs_base_slice: true,
            cfs_idle_granularity: true,
            cfs_pick_clears_buddies: false,
            cfs_slice_cap: false,
            cfs_long_sleeper: false,
        }
    }
}

/// The fair run queue of one CPU. Laid out in the order written
/// (`repr(C)`): the current entity, which the engine reads at every event,
/// first.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct CfsRq {
    /// The entity currently running (may be off the queue while it blocks).
    pub curr: Option<u32>,
    /// Delayed entities (DELAY_DEQUEUE): still queued (in the timeline or as
    /// `curr`), in the sums and in `load_weight`, but not in `nr_running`.
    pub nr_delayed: u32,
    /// `EevdfParams::resched_unprotected`, set by `configure`.
    resched_unprotected: bool,
    /// The discipline, set by `configure` (EEVDF unless told): read by every
    /// entry point, so it sits in the first line beside `curr`.
    pub(crate) class: FairClass,
    /// Monotonic floor of vruntime; keys are relative to it.
    pub min_vruntime: u64,
    /// Sum over the queued entities of key * weight (kernel avg_vruntime).
    avg_vruntime: i64,
    /// Sum over the queued entities of weight (kernel avg_load).
    avg_load: i64,
    /// Total weight of on-rq entities including curr.
    pub load_weight: u64,
    /// On-rq entities including curr.
    pub nr_running: u32,
    /// On-rq SCHED_IDLE entities (h_nr_idle).
    pub nr_idle: u32,
    /// CFS: this queue's identity for a sleeper's same-queue test
    /// (`Entity::sleep_rq`), assigned at its first sleeper; 0 unassigned. A
    /// clone keeps it: it is a copy of the same queue (with the entities'
    /// table, a snapshot), not another queue of the same machine.
    pub(crate) rq_id: u32,
    /// CFS next buddy (`cfs_rq->next`): the wakee that preempted.
    pub next: Option<u32>,
    /// CFS last buddy (`cfs_rq->last`): the task a wake-up preempted.
    pub last: Option<u32>,
    /// CFS skip buddy (`cfs_rq->skip`): the task that yielded.
    pub skip: Option<u32>,
    /// CFS: the current entity's sum_exec when it was made current
    /// (`curr->prev_sum_exec_runtime`, set by set_next_entity): only the
    /// running entity's is ever read, so the queue keeps it.
    pub prev_sum_exec: Nanos,
    /// Queued entities other than the current one, in vruntime order
    /// (tasks_timeline); last, as the engine's per-event reads are the
    /// fields above.
    pub(crate) timeline: Timeline,
}

/// The entry points of the queue (the [`crate::rq::RunQueue`] methods and
/// every other caller's): each tests the discipline once and runs its rules,
/// EEVDF's in this file (`*_eevdf`), CFS's in [`crate::cfs`].
impl CfsRq {
    /// Enqueue task `id` (enqueue_entity); `initial` marks a new task.
    /// Returns true if the update of the running entity found it past its
    /// deadline with others queued (EEVDF's update_deadline; never CFS).
    #[inline]
    pub fn enqueue(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        initial: bool,
        p: &EevdfParams,
    ) -> bool {
        self.timeline.prefetch_entry(id);
        if self.class == FairClass::Cfs {
            return self.enqueue_cfs(ents, id, now, initial, p);
        }
        self.enqueue_eevdf(ents, id, now, initial, p)
    }

    /// Dequeue task `id` that exits or migrates (dequeue_entity), saving
    /// its place for the next enqueue: its lag (EEVDF), its vruntime
    /// relative to min_vruntime (CFS). If it is curr it stays curr (off the
    /// queue) until the next pick.
    #[inline]
    pub fn dequeue(&mut self, ents: &mut [Entity], id: u32, now: Nanos, p: &EevdfParams) {
        self.timeline.prefetch_entry(id);
        if self.class == FairClass::Cfs {
            return self.dequeue_cfs(ents, id, now, false);
        }
        self.dequeue_eevdf(ents, id, now, p)
    }

    /// dequeue_entity for a task that blocks (DEQUEUE_SLEEP); true if it
    /// stays queued as delayed (EEVDF's DELAY_DEQUEUE; never CFS).
    #[inline]
    pub fn dequeue_sleep(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        p: &EevdfParams,
    ) -> bool {
        self.timeline.prefetch_entry(id);
        if self.class == FairClass::Cfs {
            self.dequeue_cfs(ents, id, now, true);
            return false;
        }
        self.dequeue_sleep_eevdf(ents, id, now, p)
    }

    /// The task to run next (pick_next_task_fair's pick): EEVDF's, which
    /// first dequeues delayed tasks it selects, or CFS's pick_next_entity.
    #[inline]
    pub fn pick_next_task(
        &mut self,
        ents: &mut [Entity],
        now: Nanos,
        p: &EevdfParams,
    ) -> Option<u32> {
        let next = if self.class == FairClass::Cfs {
            self.pick_next_task_cfs(ents, now, p)
        } else {
            self.pick_next_task_eevdf(ents, now, p)
        };
        // set_next takes it out of the timeline next, after the caller's
        // updates of its task: its id-table line comes in meanwhile
        if let Some(n) = next {
            self.timeline.prefetch_entry(n);
        }
        next
    }

    /// The task that should run next, changing nothing (pick_eevdf, or
    /// CFS's pick_next_entity).
    #[inline]
    pub fn pick_next(&self, ents: &[Entity], p: &EevdfParams) -> Option<u32> {
        if self.class == FairClass::Cfs {
            return self.pick_next_entity(ents, p);
        }
        self.pick_eevdf(ents, p)
    }

    /// Put the current entity back (put_prev_entity) and make `next` current
    /// (set_next_entity). `next` must be queued or be curr.
    #[inline]
    pub fn set_next(&mut self, ents: &mut [Entity], next: Option<u32>, now: Nanos) {
        if self.class == FairClass::Cfs {
            return self.set_next_cfs(ents, next, now);
        }
        self.set_next_eevdf(ents, next, now)
    }

    /// Charge the running entity for time up to `now` (update_curr); true if
    /// it should be preempted (EEVDF's update_deadline; never CFS).
    #[inline]
    pub fn update_curr(&mut self, ents: &mut [Entity], now: Nanos) -> bool {
        if self.class == FairClass::Cfs {
            return self.update_curr_cfs(ents, now);
        }
        self.update_curr_eevdf(ents, now)
    }

    /// The tick for the running entity (entity_tick): EEVDF, exactly
    /// `update_curr`; CFS, update_curr then check_preempt_tick.
    #[inline]
    pub fn task_tick(&mut self, ents: &mut [Entity], now: Nanos, p: &EevdfParams) -> bool {
        if self.class == FairClass::Cfs {
            return self.task_tick_cfs(ents, now, p);
        }
        self.update_curr_eevdf(ents, now)
    }

    /// migrate_task_rq_fair for a sleeper whose wake-up moves it off this
    /// queue: CFS takes its vruntime relative to this queue's min_vruntime
    /// now; EEVDF does nothing (the lag was saved at dequeue).
    #[inline]
    pub fn migrate_task_rq(&self, ents: &mut [Entity], id: u32) {
        if self.class == FairClass::Cfs {
            self.migrate_task_rq_cfs(ents, id);
        }
    }

    /// check_preempt_wakeup: should the newly queued `wakee` preempt the
    /// running entity?
    #[inline]
    pub fn check_preempt_wakeup(
        &mut self,
        ents: &mut [Entity],
        wakee: u32,
        now: Nanos,
        p: &EevdfParams,
    ) -> bool {
        if self.class == FairClass::Cfs {
            return self.check_preempt_wakeup_cfs(ents, wakee, now, p);
        }
        self.check_preempt_wakeup_eevdf(ents, wakee, now, p)
    }

    /// sched_yield by the running entity (yield_task_fair); the caller
    /// reschedules.
    #[inline]
    pub fn yield_task(&mut self, ents: &mut [Entity], now: Nanos) {
        if self.class == FairClass::Cfs {
            return self.yield_task_fair(ents, now);
        }
        self.yield_task_eevdf(ents, now)
    }
}

impl CfsRq {
    #[inline]
    fn key(&self, se: &Entity) -> i64 {
        se.vruntime.wrapping_sub(self.min_vruntime) as i64
    }

    fn sum_add(&mut self, se: &Entity) {
        let w = se.weight as i64;
        self.avg_vruntime += self.key(se) * w;
        self.avg_load += w;
    }

    fn sum_sub(&mut self, se: &Entity) {
        let w = se.weight as i64;
        self.avg_vruntime -= self.key(se) * w;
        self.avg_load -= w;
    }

    /// Add queued (not current) `id` to the timeline (__enqueue_entity),
    /// with its vruntime and deadline as they are now.
    pub(crate) fn queue_push(&mut self, ents: &[Entity], id: u32) {
        let se = &ents[id as usize];
        self.timeline.insert(id, se.vruntime, se.deadline);
    }

    /// Take `id` out of the timeline (__dequeue_entity).
    pub(crate) fn queue_remove(&mut self, id: u32) {
        let found = self.timeline.remove(id);
        assert!(found, "task {id} taken out of a queue it is not in");
    }

    /// The queued tasks other than the current one, in the order they were
    /// queued.
    pub fn queued(&self) -> Vec<u32> {
        self.timeline.ids()
    }

    /// Task `id` is queued, not as the current one.
    pub fn is_queued(&self, id: u32) -> bool {
        self.timeline.contains(id)
    }

    pub(crate) fn curr_on_rq<'a>(&self, ents: &'a [Entity]) -> Option<&'a Entity> {
        self.curr.map(|c| &ents[c as usize]).filter(|e| e.on_rq)
    }

    /// The weighted average vruntime V of the queue, including curr.
    pub fn avg_vruntime(&self, ents: &[Entity]) -> u64 {
        let mut avg = self.avg_vruntime;
        let mut load = self.avg_load;
        if let Some(c) = self.curr_on_rq(ents) {
            let w = c.weight as i64;
            avg += self.key(c) * w;
            load += w;
        }
        if load > 0 {
            // floor division, as the kernel does for negative sums
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.min_vruntime.wrapping_add(avg as u64)
    }

    /// Eligible: the entity's vruntime is at or before V (lag >= 0).
    pub fn entity_eligible(&self, ents: &[Entity], se: &Entity) -> bool {
        let (avg, load) = self.avg_and_load(ents);
        avg as i128 >= self.key(se) as i128 * load as i128
    }

    /// (sum of key * weight, sum of weight) over the queue including curr.
    #[inline]
    fn avg_and_load(&self, ents: &[Entity]) -> (i64, i64) {
        let mut avg = self.avg_vruntime;
        let mut load = self.avg_load;
        if let Some(c) = self.curr_on_rq(ents) {
            let w = c.weight as i64;
            avg += self.key(c) * w;
            load += w;
        }
        (avg, load)
    }

    /// update_min_vruntime (the same rule in CFS and EEVDF): the floor
    /// moves up to the smaller of the running and the leftmost queued
    /// vruntimes, never down.
    pub(crate) fn update_min_vruntime(&mut self, ents: &[Entity]) {
        let curr = self.curr_on_rq(ents).map(|c| c.vruntime);
        let tree_min = self.timeline.first().map(|(_, v)| v);
        let mut v = self.min_vruntime;
        match (curr, tree_min) {
            (Some(c), Some(t)) => v = if (c.wrapping_sub(t) as i64) < 0 { c } else { t },
            (Some(c), None) => v = c,
            (None, Some(t)) => v = t,
            (None, None) => {}
        }
        let delta = v.wrapping_sub(self.min_vruntime) as i64;
        if delta > 0 {
            // keys shrink by delta: keep the weighted sum consistent
            self.avg_vruntime -= self.avg_load * delta;
            self.min_vruntime = v;
        }
    }

    /// Charge the running entity for time up to `now`; returns true if its
    /// slice ran out and another entity is queued (resched needed:
    /// update_deadline).
    fn update_curr_eevdf(&mut self, ents: &mut [Entity], now: Nanos) -> bool {
        let Some(c) = Self::account_curr(self.curr, ents, now) else {
            return false;
        };
        let se = &mut ents[c as usize];
        let mut resched = false;
        // cfs_rq->nr_queued counts delayed entities (6.12+)
        let others = self.nr_running + self.nr_delayed > 1;
        if se.on_rq && (se.vruntime.wrapping_sub(se.deadline) as i64) >= 0 {
            se.deadline = se
                .vruntime
                .wrapping_add(calc_delta_fair(se.slice, se.weight));
            se.protected = false;
            resched = others;
        } else if self.resched_unprotected && se.on_rq && !se.protected {
            // 6.17: protection over (the deadline passed and the same entity
            // was picked again, which does not renew it): every update asks
            // for a pick while others are queued
            resched = others;
        }
        self.update_min_vruntime(ents);
        resched
    }

    /// Place an entity that joins the queue (place_entity, 6.6).
    fn place_entity(&self, ents: &[Entity], se: &mut Entity, initial: bool, p: &EevdfParams) {
        let v = self.avg_vruntime(ents);
        let mut lag: i64 = 0;
        if p.place_lag && self.nr_running > 0 {
            lag = se.vlag;
            let mut load = self.avg_load;
            if let Some(c) = self.curr_on_rq(ents) {
                load += c.weight as i64;
            }
            let scaled = lag as i128 * (load + se.weight as i64) as i128;
            lag = (scaled / load.max(1) as i128) as i64;
        }
        se.vruntime = v.wrapping_sub(lag as u64);
        let mut vslice = calc_delta_fair(se.slice, se.weight);
        if p.place_deadline_initial && initial {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// Enqueue task `id` (enqueue_entity). `initial` marks a new task.
    /// Returns true if the update of the running entity found it past its
    /// deadline with others queued (update_deadline's resched_curr).
    fn enqueue_eevdf(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        initial: bool,
        p: &EevdfParams,
    ) -> bool {
        let resched = self.update_curr_eevdf(ents, now);
        let mut se = ents[id as usize];
        debug_assert!(!se.on_rq, "task {id} enqueued twice");
        self.place_entity(ents, &mut se, initial, p);
        se.on_rq = true;
        ents[id as usize] = se;
        self.sum_add(&se);
        self.queue_push(ents, id);
        self.load_weight += se.weight;
        self.nr_running += 1;
        if se.idle_policy {
            self.nr_idle += 1;
        }
        self.update_min_vruntime(ents);
        resched
    }

    /// Dequeue task `id` (dequeue_entity): saves its lag. If it is curr it
    /// stays curr (off the queue) until the next pick.
    fn dequeue_eevdf(&mut self, ents: &mut [Entity], id: u32, now: Nanos, p: &EevdfParams) {
        self.update_curr_eevdf(ents, now);
        let lag = self.entity_lag(ents, id, p);
        if self.curr != Some(id) {
            self.unqueue(ents, id);
        }
        let se = &mut ents[id as usize];
        se.vlag = lag;
        se.on_rq = false;
        self.load_weight -= se.weight;
        self.nr_running -= 1;
        if se.idle_policy {
            self.nr_idle -= 1;
        }
        self.update_min_vruntime(ents);
    }

    /// update_entity_lag: V - v of `id`, clamped to two slices (at least a
    /// tick) of its virtual time.
    fn entity_lag(&self, ents: &[Entity], id: u32, p: &EevdfParams) -> i64 {
        let v = self.avg_vruntime(ents);
        let se = &ents[id as usize];
        let limit = calc_delta_fair((2 * se.slice).max(p.tick_ns), se.weight) as i64;
        (v.wrapping_sub(se.vruntime) as i64).clamp(-limit, limit)
    }

    /// Take queued (not current) `id` out of the queue and the sums
    /// (__dequeue_entity and avg_vruntime_sub).
    fn unqueue(&mut self, ents: &[Entity], id: u32) {
        let se = ents[id as usize];
        self.queue_remove(id);
        self.sum_sub(&se);
    }

    /// Take the run-queue rules that live in the queue itself from `p`: the
    /// discipline ([`FairClass`]), to be chosen while the queue is empty,
    /// and EEVDF's `resched_unprotected`.
    pub fn configure(&mut self, p: &EevdfParams) {
        debug_assert!(
            self.class == p.class || (self.nr_running == 0 && self.curr.is_none()),
            "the discipline changes on a queue in use"
        );
        self.class = p.class;
        self.resched_unprotected = p.resched_unprotected;
    }

    /// dequeue_entity for a task that blocks (DEQUEUE_SLEEP). Under
    /// DELAY_DEQUEUE (6.12, kernel/sched/fair.c `dequeue_entity`) a sleeper
    /// that is not eligible is only marked delayed: it keeps its vruntime
    /// and stays in the queue, in V and in the load, so the service it is
    /// ahead by is paid off while others run. Returns true if delayed;
    /// otherwise it is dequeued as before and keeps its lag.
    fn dequeue_sleep_eevdf(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        p: &EevdfParams,
    ) -> bool {
        if p.delay_dequeue {
            self.update_curr_eevdf(ents, now);
            if !self.entity_eligible(ents, &ents[id as usize]) {
                let se = &mut ents[id as usize];
                se.delayed = true;
                self.nr_running -= 1;
                self.nr_delayed += 1;
                if se.idle_policy {
                    self.nr_idle -= 1;
                }
                return true;
            }
        }
        self.dequeue_eevdf(ents, id, now, p);
        false
    }

    /// pick_next_entity (6.12+): a delayed entity that the pick selects is
    /// dequeued for good (`finish_delayed_dequeue_entity`: its lag is taken
    /// now, a positive one clipped to 0 under DELAY_ZERO) and the pick is
    /// made again.
    fn pick_next_task_eevdf(
        &mut self,
        ents: &mut [Entity],
        now: Nanos,
        p: &EevdfParams,
    ) -> Option<u32> {
        loop {
            match self.pick_eevdf(ents, p) {
                Some(id) if ents[id as usize].delayed => {
                    // back among the counted, so that dequeue takes it out
                    self.undelay(&mut ents[id as usize]);
                    self.dequeue_eevdf(ents, id, now, p);
                    let se = &mut ents[id as usize];
                    se.vlag = se.vlag.min(0);
                }
                next => return next,
            }
        }
    }

    /// A delayed entity is woken where it is (ttwu_runnable ->
    /// requeue_delayed_entity, 6.12+): with a positive lag (it has been
    /// paid) it is placed again at zero lag (DELAY_ZERO), otherwise it keeps
    /// its vruntime and deadline. Like Linux 6.18 this takes the lag without
    /// charging the running entity first.
    pub fn requeue_delayed(&mut self, ents: &mut [Entity], id: u32, p: &EevdfParams) {
        debug_assert!(ents[id as usize].delayed);
        debug_assert!(
            self.curr != Some(id),
            "a delayed curr is requeued by the pick, never woken"
        );
        let lag = self.entity_lag(ents, id, p);
        // (a delayed curr, which the engine never wakes, would only become
        // runnable again where it is)
        if lag > 0 && self.curr != Some(id) {
            self.unqueue(ents, id);
            let mut se = ents[id as usize];
            se.vlag = 0;
            self.place_entity(ents, &mut se, false, p);
            ents[id as usize] = se;
            self.sum_add(&se);
            self.queue_push(ents, id);
        }
        self.undelay(&mut ents[id as usize]);
        self.update_min_vruntime(ents);
    }

    /// A delayed entity counts as runnable again (it stays queued).
    fn undelay(&mut self, se: &mut Entity) {
        se.delayed = false;
        self.nr_delayed -= 1;
        self.nr_running += 1;
        if se.idle_policy {
            self.nr_idle += 1;
        }
    }

    /// yield_task_fair (6.6, kernel/sched/fair.c): unless the current
    /// entity is alone on the queue, charge it up to `now` and push its
    /// deadline one slice on, so that the pick that follows (do_sched_yield
    /// calls schedule) prefers any other eligible entity. That also ends
    /// RUN_TO_PARITY's protection, whose marker no longer holds.
    fn yield_task_eevdf(&mut self, ents: &mut [Entity], now: Nanos) {
        if self.nr_running <= 1 {
            return;
        }
        let Some(c) = self.curr else { return };
        self.update_curr_eevdf(ents, now);
        let se = &mut ents[c as usize];
        se.deadline = se
            .deadline
            .wrapping_add(calc_delta_fair(se.slice, se.weight));
        se.protected = false;
    }

    /// pick_eevdf (6.6): the eligible entity with the earliest deadline;
    /// RUN_TO_PARITY keeps a protected, eligible curr.
    pub fn pick_eevdf(&self, ents: &[Entity], p: &EevdfParams) -> Option<u32> {
        let curr = self
            .curr
            .filter(|&c| ents[c as usize].on_rq && self.entity_eligible(ents, &ents[c as usize]));
        if let Some(c) = curr {
            if p.run_to_parity && ents[c as usize].protected {
                return Some(c);
            }
        }
        // eligibility: avg >= key * load, with (avg, load) fixed for the
        // pick; for load > 0 exactly key <= floor(avg / load), one division
        // instead of a 128-bit product per entity. The eligible entities
        // are a prefix of the vruntime order, searched in one descent of the
        // timeline for the earliest deadline (the first queued among equals)
        let (avg, load) = self.avg_and_load(ents);
        let mut best = max_eligible_key(avg, load)
            .and_then(|m| self.timeline.earliest_eligible(self.min_vruntime, m));
        if let Some(c) = curr {
            let cd = ents[c as usize].deadline;
            if best.is_none_or(|b| (ents[b as usize].deadline.wrapping_sub(cd) as i64) > 0) {
                best = Some(c);
            }
        }
        best.or_else(|| self.timeline.earliest_deadline())
            .or(self.curr.filter(|&c| ents[c as usize].on_rq))
    }

    /// Put the current entity back (put_prev_entity) and make `next` current
    /// (set_next_entity). `next` must be queued or be curr.
    fn set_next_eevdf(&mut self, ents: &mut [Entity], next: Option<u32>, now: Nanos) {
        self.update_curr_eevdf(ents, now);
        let (put, taken) = self.switch_curr(ents, next);
        if let Some(c) = put {
            let se = ents[c as usize];
            self.sum_add(&se);
        }
        if let Some(n) = taken {
            let se = ents[n as usize];
            self.sum_sub(&se);
            // set_next_entity marks the RUN_TO_PARITY protection; a
            // re-pick of the same entity does not renew it
            ents[n as usize].protected = true;
        }
        if let Some(n) = next {
            ents[n as usize].exec_start = now;
        }
        self.update_min_vruntime(ents);
    }

    /// update_curr's accounting, the same in both disciplines: the running
    /// entity `curr`'s time since it was last charged goes to its sum_exec
    /// and, scaled by calc_delta_fair, to its vruntime. Returns it, or None
    /// when nothing ran since (or nothing runs).
    #[inline(always)]
    pub(crate) fn account_curr(curr: Option<u32>, ents: &mut [Entity], now: Nanos) -> Option<u32> {
        let c = curr?;
        let se = &mut ents[c as usize];
        let delta = now.saturating_sub(se.exec_start);
        if delta == 0 {
            return None;
        }
        se.exec_start = now;
        se.sum_exec += delta;
        se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta, se.weight));
        Some(c)
    }

    /// The queue moves of put_prev_entity and set_next_entity, the same in
    /// both disciplines: the running entity goes back into the queue if it
    /// is still runnable and is not `next`; `next`, unless it is already
    /// current, leaves the queue and becomes current. Returns (the entity
    /// put back, the entity taken) for the discipline's own accounting.
    pub(crate) fn switch_curr(
        &mut self,
        ents: &[Entity],
        next: Option<u32>,
    ) -> (Option<u32>, Option<u32>) {
        let mut put = None;
        if let Some(c) = self.curr.take() {
            let se = &ents[c as usize];
            if se.on_rq && Some(c) != next {
                self.queue_push(ents, c);
                put = Some(c);
            } else if se.on_rq {
                self.curr = Some(c);
            }
        }
        let mut taken = None;
        if let Some(n) = next {
            if self.curr != Some(n) {
                self.queue_remove(n);
                self.curr = Some(n);
                taken = Some(n);
            }
        }
        (put, taken)
    }

    /// check_preempt_wakeup (6.6): should the newly queued `wakee` preempt
    /// the running entity?
    fn check_preempt_wakeup_eevdf(
        &mut self,
        ents: &mut [Entity],
        wakee: u32,
        now: Nanos,
        p: &EevdfParams,
    ) -> bool {
        let Some(c) = self.curr else { return true };
        if c == wakee {
            return false;
        }
        let (ci, wi) = (
            ents[c as usize].idle_policy,
            ents[wakee as usize].idle_policy,
        );
        if ci && !wi {
            return true;
        }
        if wi && !ci {
            return false;
        }
        if !p.wakeup_preemption {
            return false;
        }
        self.update_curr_eevdf(ents, now);
        self.pick_eevdf(ents, p) == Some(wakee)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two new equal entities queued on a run queue configured by `p`.
    fn two_queued(p: &EevdfParams) -> (Vec<Entity>, CfsRq) {
        let mut e = ents(2);
        let mut rq = CfsRq::default();
        rq.configure(p);
        rq.enqueue(&mut e, 0, 0, false, p);
        rq.enqueue(&mut e, 1, 0, false, p);
        (e, rq)
    }

    fn ents(n: usize) -> Vec<Entity> {
        (0..n)
            .map(|_| Entity::new(NICE_0_LOAD, 3_000_000))
            .collect()
    }

    #[test]
    fn the_eligible_key_bound_is_the_products_rule() {
        use proptest::prelude::*;
        proptest!(|(avg in any::<i64>(), load in 0i64..1 << 40, key in any::<i64>())| {
            let product = avg as i128 >= key as i128 * load as i128;
            let bound = max_eligible_key(avg, load).is_some_and(|m| key <= m);
            prop_assert_eq!(bound, product, "avg {} load {} key {}", avg, load, key);
        });
        // the edges: keys around the bound, negative sums
        for (avg, load) in [
            (-7i64, 2i64),
            (7, 2),
            (-1, 3),
            (0, 1),
            (0, 0),
            (-5, 0),
            (i64::MIN, 1),
        ] {
            for key in [-5i64, -4, -3, -1, 0, 1, 3, 4, i64::MIN, i64::MAX] {
                let product = avg as i128 >= key as i128 * load as i128;
                assert_eq!(
                    max_eligible_key(avg, load).is_some_and(|m| key <= m),
                    product
                );
            }
        }
    }

    #[test]
    fn nice_weights_follow_kernel_table() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(1), 820);
        assert_eq!(nice_to_weight(-1), 1277);
        assert_eq!(nice_to_weight(19), 15);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(-99), 88761);
    }

    /// DELAY_DEQUEUE: a sleeper ahead of V stays queued and in V with its
    /// vruntime; woken before it is paid off it keeps that vruntime; a pick
    /// that selects it once it is eligible dequeues it for good with its
    /// positive lag clipped to 0. A sleeper behind V leaves at once with
    /// its positive lag, as in 6.6.
    #[test]
    fn delayed_dequeue_keeps_an_ineligible_sleeper_queued() {
        let p = EevdfParams {
            delay_dequeue: true,
            ..EevdfParams::default()
        };
        let (mut e, mut rq) = two_queued(&p);
        // 0 runs 1 ms: ahead of V by 0.5 ms, so not eligible
        rq.set_next(&mut e, Some(0), 0);
        let v0 = e[0].vruntime + 1_000_000;
        assert!(rq.dequeue_sleep(&mut e, 0, 1_000_000, &p), "delayed");
        assert!(e[0].delayed && e[0].on_rq);
        assert_eq!(e[0].vruntime, v0);
        assert_eq!((rq.nr_running, rq.nr_delayed), (1, 1));
        // still counted in V: (v0 + v1) / 2
        assert_eq!(rq.avg_vruntime(&e), (v0 + e[1].vruntime) / 2);
        // woken at once: not paid off, so it keeps its vruntime
        rq.set_next(&mut e, Some(1), 1_000_000);
        rq.update_curr(&mut e, 1_200_000);
        rq.requeue_delayed(&mut e, 0, &p);
        assert!(!e[0].delayed);
        assert_eq!(e[0].vruntime, v0);
        assert_eq!((rq.nr_running, rq.nr_delayed), (2, 0));
        // 0 runs again, sleeps ahead again, and 1 runs long enough to pass it
        rq.set_next(&mut e, Some(0), 1_200_000);
        assert!(rq.dequeue_sleep(&mut e, 0, 2_400_000, &p));
        rq.set_next(&mut e, Some(1), 2_400_000);
        rq.update_curr(&mut e, 6_000_000);
        assert!(rq.entity_eligible(&e, &e[0]), "paid off");
        // 1 (now ahead, not eligible) is resched: the pick selects 0,
        // delayed, dequeues it for good (its lag of +0.8 ms clipped to 0)
        // and picks again, finding only 1
        assert!(!rq.entity_eligible(&e, &e[1]));
        assert_eq!(rq.pick_next_task(&mut e, 6_000_000, &p), Some(1));
        assert!(!e[0].on_rq && !e[0].delayed);
        assert_eq!(e[0].vlag, 0, "a positive lag is clipped (DELAY_ZERO)");
        assert_eq!((rq.nr_running, rq.nr_delayed), (1, 0));
    }

    /// 6.17: once the running entity's protection has ended (its deadline
    /// passed and the pick chose it again, which does not renew it), every
    /// update asks for a pick while another entity is queued; 6.6 asks only
    /// when the deadline passes.
    #[test]
    fn an_unprotected_curr_is_resched_at_every_update_from_6_17() {
        for rule in [false, true] {
            let p = EevdfParams {
                resched_unprotected: rule,
                ..EevdfParams::default()
            };
            let (mut e, mut rq) = two_queued(&p);
            // 1 runs 10 ms first: far ahead, not eligible for a long time
            rq.set_next(&mut e, Some(1), 0);
            rq.update_curr(&mut e, 10_000_000);
            rq.set_next(&mut e, Some(0), 10_000_000);
            assert!(e[0].protected);
            // 0 passes its deadline (3 ms): resched either way
            assert!(rq.update_curr(&mut e, 13_000_000));
            assert!(!e[0].protected);
            // the pick keeps 0 (1 is still ahead), without renewing protection
            assert_eq!(rq.pick_next_task(&mut e, 13_000_000, &p), Some(0));
            rq.set_next(&mut e, Some(0), 13_000_000);
            assert!(!e[0].protected);
            // a later update before the new deadline
            assert_eq!(rq.update_curr(&mut e, 14_000_000), rule, "rule {rule}");
        }
    }

    /// Without DELAY_DEQUEUE a sleeper ahead of V leaves with its negative
    /// lag, as in 6.6.
    #[test]
    fn without_delayed_dequeue_a_sleeper_leaves_with_its_lag() {
        let p = EevdfParams::default();
        let (mut e, mut rq) = two_queued(&p);
        rq.set_next(&mut e, Some(0), 0);
        assert!(!rq.dequeue_sleep(&mut e, 0, 1_000_000, &p));
        assert!(!e[0].on_rq && !e[0].delayed);
        assert_eq!(e[0].vlag, -500_000);
    }

    /// Three equal new tasks: each is placed at V with half a slice of
    /// deadline, so they run in enqueue order; after A runs its slice, B and
    /// C (earlier deadlines, eligible) come before A.
    #[test]
    fn pick_order_equal_weights() {
        let p = EevdfParams::default();
        let mut e = ents(3);
        let mut rq = CfsRq::default();
        for t in 0..3 {
            rq.enqueue(&mut e, t, 0, true, &p);
        }
        // All at V=0 with deadline 1.5 ms: ties keep the first queued.
        let a = rq.pick_eevdf(&e, &p).unwrap();
        assert_eq!(a, 0);
        rq.set_next(&mut e, Some(a), 0);
        // A runs 1.5 ms: reaches its deadline, gets a new one, resched.
        assert!(rq.update_curr(&mut e, 1_500_000));
        assert_eq!(e[0].deadline, 1_500_000 + 3_000_000);
        // A is now ahead of V (not eligible): B is picked.
        assert!(!rq.entity_eligible(&e, &e[0]));
        let b = rq.pick_eevdf(&e, &p).unwrap();
        assert_eq!(b, 1);
        rq.set_next(&mut e, Some(b), 1_500_000);
        rq.update_curr(&mut e, 3_000_000);
        let c = rq.pick_eevdf(&e, &p).unwrap();
        assert_eq!(c, 2);
    }

    /// A heavier task accrues vruntime more slowly and gets more turns.
    #[test]
    fn weight_scales_vruntime() {
        let p = EevdfParams::default();
        let mut e = ents(2);
        e[1].weight = 2048;
        let mut rq = CfsRq::default();
        rq.enqueue(&mut e, 1, 0, false, &p);
        rq.set_next(&mut e, Some(1), 0);
        rq.update_curr(&mut e, 1_000_000);
        assert_eq!(e[1].vruntime, 500_000);
        assert_eq!(e[1].sum_exec, 1_000_000);
    }

    /// Lag is saved at dequeue and restored (scaled) at enqueue.
    #[test]
    fn lag_is_preserved_across_sleep() {
        let p = EevdfParams::default();
        let (mut e, mut rq) = two_queued(&p);
        let first = rq.pick_eevdf(&e, &p).unwrap();
        rq.set_next(&mut e, Some(first), 0);
        rq.update_curr(&mut e, 1_000_000);
        // The task that ran is ahead of V by half its runtime: negative lag.
        let other = 1 - first;
        rq.dequeue(&mut e, first, 1_000_000, &p);
        assert_eq!(e[first as usize].vlag, -500_000);
        assert!(!e[first as usize].on_rq);
        rq.set_next(&mut e, Some(other), 1_000_000);
        rq.enqueue(&mut e, first, 1_000_000, false, &p);
        // Placed with its lag -500000 scaled by (W + w) / W = 2 against
        // V = 0 (only the other task, at 0): v = 1000000. After the join V
        // is 500000, so the task is again exactly its lag ahead of V.
        assert_eq!(e[first as usize].vruntime, 1_000_000);
        let v = rq.avg_vruntime(&e);
        assert_eq!(v, 500_000);
        assert_eq!(v as i64 - e[first as usize].vruntime as i64, -500_000);
    }

    /// Wakeup preemption: a wakee with no lag does not preempt a curr still
    /// protected by RUN_TO_PARITY and eligible; a wakee with positive lag is
    /// placed behind V, pulls V below curr (curr no longer eligible) and
    /// preempts; WAKEUP_PREEMPTION off never preempts.
    #[test]
    fn wakeup_preemption() {
        let p = EevdfParams::default();
        let setup = |lag: i64| {
            let mut e = ents(2);
            let mut rq = CfsRq::default();
            rq.enqueue(&mut e, 0, 0, false, &p);
            rq.set_next(&mut e, Some(0), 0);
            rq.update_curr(&mut e, 100_000);
            e[1].vlag = lag;
            rq.enqueue(&mut e, 1, 100_000, false, &p);
            (e, rq)
        };
        let (mut e, mut rq) = setup(0);
        assert!(rq.entity_eligible(&e, &e[0]));
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 100_000, &p));
        let (mut e, mut rq) = setup(1_000_000);
        // lag 1 ms scaled by (1024 + 1024) / 1024: placed 2 ms behind V
        assert_eq!(e[1].vruntime.wrapping_sub(e[0].vruntime) as i64, -2_000_000);
        assert!(!rq.entity_eligible(&e, &e[0]));
        assert!(rq.check_preempt_wakeup(&mut e, 1, 100_000, &p));
        let q = EevdfParams {
            wakeup_preemption: false,
            ..p
        };
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 100_000, &q));
    }

    #[test]
    fn counts_track_enqueue_dequeue() {
        let p = EevdfParams::default();
        let mut e = ents(4);
        let mut rq = CfsRq::default();
        for t in 0..4 {
            rq.enqueue(&mut e, t, 0, true, &p);
        }
        assert_eq!(rq.nr_running, 4);
        assert_eq!(rq.load_weight, 4 * 1024);
        rq.dequeue(&mut e, 2, 0, &p);
        assert_eq!(rq.nr_running, 3);
        assert!(!rq.is_queued(2) && rq.queued() == [0, 1, 3]);
    }
}
