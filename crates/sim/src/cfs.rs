//! CFS, the fair discipline of Linux 2.6.38 to 6.5, as the second set of
//! rules of [`CfsRq`] (the kernel's `struct cfs_rq` held either), in our own
//! words after kernel/sched/fair.c, features.h and core.c of those versions
//! (read at 4.19, 5.4, 5.10, 5.15, 6.1 and 6.5). Flat hierarchy (no
//! cgroups): every entity is a task.
//!
//! A queue runs CFS when [`EevdfParams::class`] is [`FairClass::Cfs`]
//! (`configure`): its entry points (`CfsRq::enqueue`, `dequeue`,
//! `dequeue_sleep`, `pick_next_task`, `pick_next`, `set_next`,
//! `update_curr`, `task_tick`, `check_preempt_wakeup`, `yield_task`,
//! `migrate_task_rq`, and the [`crate::rq::RunQueue`] methods, which call
//! them) then come here.
//! The queue is the same timeline as EEVDF's ([`crate::timeline`]): the
//! leftmost entity is the one with the smallest vruntime, the first queued
//! among equals (equal keys go right in the kernel's rbtree), and the
//! running entity is kept out of it. The EEVDF sums (`avg_vruntime`,
//! `avg_load`) are left at zero.
//!
//! # The rules, by kernel function
//! - `update_curr`: charge the running entity (sum_exec, and vruntime by
//!   calc_delta_fair) and move min_vruntime; it never asks for a resched.
//! - `entity_tick` ([`CfsRq::task_tick_cfs`]) and `check_preempt_tick`: the
//!   running entity is preempted once it has run its `sched_slice` since it
//!   was picked, or, after at least `sched_min_granularity`, once its
//!   vruntime is more than that slice ahead of the leftmost.
//! - `check_preempt_wakeup` and `wakeup_preempt_entity`: a wakee preempts
//!   when it is more than `wakeup_gran` (the wake-up granularity in its
//!   virtual time) behind the running entity; buddies mark who should run
//!   next.
//! - `place_entity`: a new task starts one virtual slice after min_vruntime
//!   (START_DEBIT), a waking one no further back than min_vruntime less the
//!   sleeper credit (half the latency with GENTLE_FAIR_SLEEPERS).
//! - `pick_next_entity`: the leftmost, unless the skip buddy is the leftmost
//!   and the second is close enough, or the next (then the last) buddy is
//!   close enough to the leftmost.
//! - `yield_task_fair`: the yielder becomes the skip buddy.
//!
//! # Version differences
//! Rules that changed between 4.x and 6.5 are fields of [`EevdfParams`],
//! defaulting to Linux 6.1:
//!
//! | field | 4.19, 5.4, 5.10 | 5.15 | 6.1, 6.2 | 6.3 to 6.5 | commit |
//! |---|---|---|---|---|---|
//! | `cfs_pick_clears_buddies` | true | false | false | false | 21f56ffe4482 (5.14) |
//! | `cfs_base_slice` | false | true | true | true | 0c2de3f054a5 (5.13) |
//! | `cfs_idle_granularity` | false | false | true | true | 2cae3948edd4, 51ce83ed523b (5.16) |
//! | `cfs_slice_cap` | false | false | false | true | 79ba1e607d68 (6.3) |
//! | `cfs_long_sleeper` | false | false | false | true | 829c1651e9c4, a53ce18cacb4 (6.3) |
//!
//! The tunables (6 ms, 0.75 ms and 1 ms times 1 + ilog2(min(ncpus, 8)),
//! sched_nr_latency 8) and the features (START_DEBIT, GENTLE_FAIR_SLEEPERS,
//! LAST_BUDDY and WAKEUP_PREEMPTION on, NEXT_BUDDY off) are the same in all
//! of them. ALT_PERIOD (5.13) counts the root queue's h_nr_running, which is
//! the queue's own count in a flat hierarchy: nothing to model.
//!
//! # Renormalisation across queues
//! In the kernel a queued task's vruntime is made relative to its queue's
//! min_vruntime when it leaves without sleeping (dequeue_entity) and a
//! sleeper's when its wake-up moves it (migrate_task_rq_fair); the enqueue
//! on the new queue adds that queue's min_vruntime (enqueue_entity's
//! renormalisation), so a task keeps its place relative to the floor of the
//! queue it is on, neither starved nor favoured by the move. A sleeper that
//! wakes where it slept keeps its vruntime and is only placed.
//!
//! Here, as EEVDF saves the lag at dequeue, every CFS dequeue saves the
//! relative position in `Entity::vlag` (as `min_vruntime - vruntime`):
//! - `dequeue` (migration, exit): relative to min_vruntime before the
//!   queue's floor moves, as dequeue_entity; the next enqueue renormalises
//!   and does not place.
//! - `dequeue_sleep`: the vruntime stays as it is, `Entity::sleep_rq` names
//!   the queue, and `vlag` is taken against the floor left after the
//!   dequeue. Woken on the same queue the vruntime is kept (then placed);
//!   on another one it is renormalised from `vlag` (then placed).
//! - `migrate_task_rq` (optional, on the old queue, when a wake-up changes
//!   the task's CPU): takes `vlag` again against that queue's floor now, as
//!   migrate_task_rq_fair does. Without it the floor at the time of the sleep
//!   is used: a sleeper that wakes elsewhere then gets no credit for the
//!   time the old queue advanced while it slept (the placement still bounds
//!   it to the new queue's floor less the credit).
//!
//! For all this the engine calls nothing new: `dequeue` or `dequeue_sleep`,
//! then `enqueue` on whichever queue, as for EEVDF. For the kernel's exact
//! measure of a wake-up migration it may also call `migrate_task_rq` on the
//! old queue in `set_task_cpu` (a waking task only).
//!
//! # Not modelled
//! - Wake flags: check_preempt_wakeup is not told WF_FORK, so NEXT_BUDDY's
//!   "not for a fork" test takes a task that has never run as forked.
//! - task_fork_fair places a child from its parent's vruntime on the
//!   parent's queue; here a new task is placed on the queue it is enqueued
//!   on, from `min_vruntime - vlag` (0 unless the caller sets `vlag` to the
//!   parent's `min_vruntime - vruntime`), with that queue's virtual slice.
//! - sysctl_sched_child_runs_first (off by default), SCHED_BATCH, cgroups
//!   (group entities, the next buddy dequeue_task_fair sets on a parent),
//!   bandwidth throttling, HRTICK, CACHE_HOT_BUDDY (a load-balancer rule).
//! - The kernel's 32-bit reciprocal in `__calc_delta`: slices are exact
//!   integer divisions (a few ns apart).

pub use crate::eevdf::FairClass;
use crate::eevdf::{calc_delta_fair, CfsRq, EevdfParams, Entity, NICE_0_LOAD};
use crate::Nanos;
use std::sync::atomic::{AtomicU32, Ordering};

/// The sleep after which a 6.3+ CFS places a sleeper without comparing its
/// own vruntime (entity_is_long_sleeper, a53ce18cacb4): 2^63 / NICE_0_LOAD
/// ns, about 104 days.
pub const LONG_SLEEP_NS: Nanos = (1 << 63) / NICE_0_LOAD;

/// Identities of queues nobody named (`CfsRq::rq_id`; a queue built alone,
/// as a unit test builds one): only compared for equality. The engine and
/// the host name their queues by CPU (`CfsRq::set_rq_id`), so a run never
/// takes one of these and its state does not depend on the process.
static NEXT_RQ_ID: AtomicU32 = AtomicU32::new(u32::MAX / 2);

/// entity_before on vruntimes: `a` is strictly before `b` (wrapping).
#[inline]
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// max_vruntime: the later of two vruntimes (wrapping).
#[inline]
fn max_vruntime(a: u64, b: u64) -> u64 {
    if (b.wrapping_sub(a) as i64) > 0 {
        b
    } else {
        a
    }
}

impl CfsRq {
    /// Name this queue (never 0; distinct among the queues whose entities
    /// share a table): the engine and the host give CPU c's queue c + 1.
    pub fn set_rq_id(&mut self, id: u32) {
        debug_assert!(id != 0);
        self.rq_id = id;
    }

    /// This queue's identity, assigned at first use if nobody named it
    /// (never 0).
    fn cfs_rq_id(&mut self) -> u32 {
        if self.rq_id == 0 {
            let mut id = NEXT_RQ_ID.fetch_add(1, Ordering::Relaxed);
            if id == 0 {
                id = NEXT_RQ_ID.fetch_add(1, Ordering::Relaxed);
            }
            self.rq_id = id;
        }
        self.rq_id
    }

    /// The discipline this queue runs (set by `configure`).
    pub fn class(&self) -> FairClass {
        self.class
    }

    /// __sched_period (2.6.38..6.5): the latency shared by up to
    /// sched_nr_latency tasks, the minimum granularity each above that.
    pub fn sched_period(nr_running: u32, p: &EevdfParams) -> Nanos {
        if nr_running > p.sched_nr_latency {
            nr_running as u64 * p.sched_min_granularity
        } else {
            p.sched_latency
        }
    }

    /// sched_idle_cfs_rq (5.16): every runnable entity is SCHED_IDLE.
    fn sched_idle_rq(&self) -> bool {
        self.nr_running > 0 && self.nr_running == self.nr_idle
    }

    /// sched_slice (2.6.38..6.5): the entity's share of the period by
    /// weight, counting it in the queue if it is not on it yet. With
    /// BASE_SLICE (5.13, 0c2de3f054a5) at least the minimum granularity,
    /// which from 5.16 (51ce83ed523b) is the idle one for a SCHED_IDLE
    /// entity on a queue that also holds non-idle ones.
    pub fn sched_slice(&self, se: &Entity, p: &EevdfParams) -> Nanos {
        let (nr, load) = if se.on_rq {
            (self.nr_running, self.load_weight)
        } else {
            (self.nr_running + 1, self.load_weight + se.weight)
        };
        let period = Self::sched_period(nr, p);
        let mut slice = if load == 0 {
            period
        } else {
            (period as u128 * se.weight as u128 / load as u128) as u64
        };
        if p.cfs_base_slice {
            let floor = if p.cfs_idle_granularity && se.idle_policy && !self.sched_idle_rq() {
                p.sched_idle_min_granularity
            } else {
                p.sched_min_granularity
            };
            slice = slice.max(floor);
        }
        slice
    }

    /// sched_vslice: the slice in the entity's virtual time.
    pub fn sched_vslice(&self, se: &Entity, p: &EevdfParams) -> u64 {
        calc_delta_fair(self.sched_slice(se, p), se.weight)
    }

    /// wakeup_gran (2.6.38..6.5): the wake-up granularity in the virtual
    /// time of `se`, the entity that would preempt (a light one needs more).
    pub fn wakeup_gran(se: &Entity, p: &EevdfParams) -> u64 {
        calc_delta_fair(p.sched_wakeup_granularity, se.weight)
    }

    /// wakeup_preempt_entity (2.6.38..6.5): -1 if `se` is not behind `curr`,
    /// 1 if it is behind by more than its wake-up granularity, else 0.
    pub fn wakeup_preempt_entity(curr: &Entity, se: &Entity, p: &EevdfParams) -> i32 {
        let vdiff = curr.vruntime.wrapping_sub(se.vruntime) as i64;
        if vdiff <= 0 {
            return -1;
        }
        if vdiff > Self::wakeup_gran(se, p) as i64 {
            1
        } else {
            0
        }
    }

    /// __pick_first_entity: the leftmost queued entity (not the running
    /// one), the first queued among equal vruntimes.
    pub fn pick_first_entity(&self) -> Option<u32> {
        self.timeline.first().map(|(t, _)| t)
    }

    /// __pick_next_entity: the queued entity after `se` in tree order
    /// (vruntime, then queue order).
    fn pick_next_after(&self, se: u32) -> Option<u32> {
        self.timeline.next_after(se)
    }

    /// The running entity, if it is on the queue.
    fn curr_if_on_rq(&self, ents: &[Entity]) -> Option<u32> {
        self.curr.filter(|&c| ents[c as usize].on_rq)
    }

    /// pick_next_entity (2.6.38..6.5, with the running entity as `curr`):
    /// the leftmost of the queued and the running entity; if that is the
    /// skip buddy, the second one instead when it is within its wake-up
    /// granularity of the leftmost; then the next buddy, else the last
    /// buddy, when within theirs. (Next over last is 5.10's order; 4.x
    /// tested last first and let next override: the same outcome.) Leaves
    /// the buddies as they are.
    pub fn pick_next_entity(&self, ents: &[Entity], p: &EevdfParams) -> Option<u32> {
        let curr = self.curr_if_on_rq(ents);
        let first = self.pick_first_entity();
        let with_curr = |o: Option<u32>| match (o, curr) {
            (Some(s), Some(c)) if before(ents[c as usize].vruntime, ents[s as usize].vruntime) => {
                Some(c)
            }
            (None, c) => c,
            (s, _) => s,
        };
        let left = with_curr(first)?;
        let le = &ents[left as usize];
        let close = |b: u32| Self::wakeup_preempt_entity(&ents[b as usize], le, p) < 1;
        let mut se = left;
        if self.skip == Some(left) {
            let second = if Some(left) == curr {
                first
            } else {
                with_curr(self.pick_next_after(left))
            };
            if let Some(s) = second.filter(|&s| close(s)) {
                se = s;
            }
        }
        if let Some(n) = self.next.filter(|&n| close(n)) {
            se = n;
        } else if let Some(l) = self.last.filter(|&l| close(l)) {
            se = l;
        }
        Some(se)
    }

    /// pick_next_task_fair's pick: bring the running entity up to `now`
    /// (when it is on the queue), pick, and before 5.14
    /// (`cfs_pick_clears_buddies`) clear the picked entity's buddies.
    #[inline(never)]
    pub fn pick_next_task_cfs(
        &mut self,
        ents: &mut [Entity],
        now: Nanos,
        p: &EevdfParams,
    ) -> Option<u32> {
        if self.curr_if_on_rq(ents).is_some() {
            self.update_curr_cfs(ents, now);
        }
        let se = self.pick_next_entity(ents, p);
        if p.cfs_pick_clears_buddies {
            if let Some(s) = se {
                self.clear_buddies(s);
            }
        }
        se
    }

    /// set_next_buddy: a SCHED_IDLE entity is never the next buddy.
    pub fn set_next_buddy(&mut self, ents: &[Entity], id: u32) {
        let se = &ents[id as usize];
        if se.on_rq && !se.idle_policy {
            self.next = Some(id);
        }
    }

    /// set_last_buddy: a SCHED_IDLE entity is never the last buddy.
    pub fn set_last_buddy(&mut self, ents: &[Entity], id: u32) {
        let se = &ents[id as usize];
        if se.on_rq && !se.idle_policy {
            self.last = Some(id);
        }
    }

    /// set_skip_buddy.
    pub fn set_skip_buddy(&mut self, id: u32) {
        self.skip = Some(id);
    }

    /// clear_buddies: `id` stops being any buddy.
    pub fn clear_buddies(&mut self, id: u32) {
        if self.last == Some(id) {
            self.last = None;
        }
        if self.next == Some(id) {
            self.next = None;
        }
        if self.skip == Some(id) {
            self.skip = None;
        }
    }

    /// update_curr (2.6.38..6.5): charge the running entity for the time up
    /// to `now` (sum_exec, and vruntime by calc_delta_fair) and move
    /// min_vruntime. CFS's update_curr never asks for a resched: false.
    #[inline(never)]
    pub fn update_curr_cfs(&mut self, ents: &mut [Entity], now: Nanos) -> bool {
        if Self::account_curr(self.curr, ents, now).is_some() {
            self.update_min_vruntime(ents);
        }
        false
    }

    /// entity_tick (2.6.38..6.5): update_curr, then check_preempt_tick when
    /// another entity is runnable. True: resched the running task.
    #[inline(never)]
    pub fn task_tick_cfs(&mut self, ents: &mut [Entity], now: Nanos, p: &EevdfParams) -> bool {
        self.update_curr_cfs(ents, now);
        self.nr_running > 1 && self.check_preempt_tick(ents, p)
    }

    /// check_preempt_tick (2.6.38..6.5): the ideal runtime is the running
    /// entity's sched_slice (at most sched_latency from 6.3, 79ba1e607d68).
    /// Past it since the entity was picked: resched, and it stops being a
    /// buddy. Before the minimum granularity: never. Otherwise resched when
    /// its vruntime is ahead of the leftmost's by more than the ideal
    /// runtime (a virtual difference against a real time, as the kernel
    /// compares them).
    pub fn check_preempt_tick(&mut self, ents: &[Entity], p: &EevdfParams) -> bool {
        let Some(c) = self.curr_if_on_rq(ents) else {
            return false;
        };
        let curr = &ents[c as usize];
        let mut ideal = self.sched_slice(curr, p);
        if p.cfs_slice_cap {
            ideal = ideal.min(p.sched_latency);
        }
        let delta_exec = curr.sum_exec.saturating_sub(self.prev_sum_exec);
        if delta_exec > ideal {
            self.clear_buddies(c);
            return true;
        }
        if delta_exec < p.sched_min_granularity {
            return false;
        }
        let Some(first) = self.pick_first_entity() else {
            return false;
        };
        let delta = curr.vruntime.wrapping_sub(ents[first as usize].vruntime) as i64;
        delta > ideal as i64
    }

    /// check_preempt_wakeup (2.6.38..6.5): should the newly queued `wakee`
    /// preempt the running entity? The caller has already returned when a
    /// resched is pending (test_tsk_need_resched).
    ///
    /// With NEXT_BUDDY, on a loaded queue (at least sched_nr_latency
    /// entities) the wakee becomes the next buddy unless it was forked
    /// (taken here as: it has never run). A SCHED_IDLE running entity is
    /// preempted by a non-idle wakee; a SCHED_IDLE wakee (any policy other
    /// than SCHED_NORMAL) never preempts, nor does anyone without
    /// WAKEUP_PREEMPTION. Otherwise, after update_curr, the wakee preempts
    /// when wakeup_preempt_entity says 1, and becomes the next buddy. On a
    /// preemption the running entity, if still queued and not SCHED_IDLE,
    /// becomes the last buddy (LAST_BUDDY, loaded queue).
    #[inline(never)]
    pub fn check_preempt_wakeup_cfs(
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
        let scale = self.nr_running >= p.sched_nr_latency;
        let mut next_marked = false;
        if p.next_buddy && scale && ents[wakee as usize].sum_exec > 0 {
            self.set_next_buddy(ents, wakee);
            next_marked = true;
        }
        let (ci, wi) = (
            ents[c as usize].idle_policy,
            ents[wakee as usize].idle_policy,
        );
        // a SCHED_IDLE running entity is preempted by a non-idle wakee at
        // once; otherwise the wakee must be a normal task and far enough
        // behind
        if !ci || wi {
            if wi || !p.wakeup_preemption {
                return false;
            }
            self.update_curr_cfs(ents, now);
            if Self::wakeup_preempt_entity(&ents[c as usize], &ents[wakee as usize], p) != 1 {
                return false;
            }
            if !next_marked {
                self.set_next_buddy(ents, wakee);
            }
        }
        if p.last_buddy && scale && ents[c as usize].on_rq {
            self.set_last_buddy(ents, c);
        }
        true
    }

    /// yield_task_fair (2.6.38..6.5): unless the running entity is alone,
    /// it stops being a buddy, is charged up to `now` and becomes the skip
    /// buddy; the caller reschedules.
    #[inline(never)]
    pub fn yield_task_fair(&mut self, ents: &mut [Entity], now: Nanos) {
        if self.nr_running <= 1 {
            return;
        }
        let Some(c) = self.curr else { return };
        self.clear_buddies(c);
        self.update_curr_cfs(ents, now);
        self.set_skip_buddy(c);
    }

    /// entity_is_long_sleeper (6.3, a53ce18cacb4): an entity that has run
    /// (exec_start set) and last ran more than [`LONG_SLEEP_NS`] ago.
    fn is_long_sleeper(se: &Entity, now: Nanos) -> bool {
        se.exec_start != 0 && now > se.exec_start && now - se.exec_start > LONG_SLEEP_NS
    }

    /// place_entity (2.6.38..6.5), returning the entity's vruntime. From
    /// min_vruntime: a new task (`initial`) one virtual slice later with
    /// START_DEBIT; a waking one earlier by the sleeper credit, the latency
    /// (the minimum granularity for a SCHED_IDLE one from 5.16,
    /// 2cae3948edd4), halved with GENTLE_FAIR_SLEEPERS. The entity keeps its
    /// own vruntime if that is later (it never gains by being placed
    /// backwards), except, from 6.3 (829c1651e9c4, a53ce18cacb4), after a
    /// sleep longer than [`LONG_SLEEP_NS`].
    pub fn place_entity_cfs(&self, se: &Entity, initial: bool, now: Nanos, p: &EevdfParams) -> u64 {
        let mut vruntime = self.min_vruntime;
        if initial && p.start_debit {
            vruntime = vruntime.wrapping_add(self.sched_vslice(se, p));
        }
        if !initial {
            let mut thresh = if p.cfs_idle_granularity && se.idle_policy {
                p.sched_min_granularity
            } else {
                p.sched_latency
            };
            if p.gentle_fair_sleepers {
                thresh >>= 1;
            }
            vruntime = vruntime.wrapping_sub(thresh);
        }
        if p.cfs_long_sleeper && Self::is_long_sleeper(se, now) {
            vruntime
        } else {
            max_vruntime(se.vruntime, vruntime)
        }
    }

    /// enqueue_entity (2.6.38..6.5) for task `id`; `initial` marks a new
    /// task (wake_up_new_task after task_fork_fair). The vruntime is
    /// renormalised to this queue (`min_vruntime - vlag`) unless the task
    /// wakes on the queue it slept on; the running entity is charged first
    /// (after the renormalisation if the task is the running one, as the
    /// kernel orders them). A new or waking task is then placed
    /// (place_entity). Returns false: CFS's update_curr never reschedules.
    #[inline(never)]
    pub fn enqueue_cfs(
        &mut self,
        ents: &mut [Entity],
        id: u32,
        now: Nanos,
        initial: bool,
        p: &EevdfParams,
    ) -> bool {
        let is_curr = self.curr == Some(id);
        let before_update = ents[id as usize];
        debug_assert!(!before_update.on_rq, "task {id} enqueued twice");
        let wakeup = !initial && before_update.sleep_rq != 0;
        let renorm = !wakeup || before_update.sleep_rq != self.rq_id;
        if renorm && is_curr {
            let se = &mut ents[id as usize];
            se.vruntime = self.min_vruntime.wrapping_sub(se.vlag as u64);
        }
        self.update_curr_cfs(ents, now);
        let mut se = ents[id as usize];
        if renorm && !is_curr {
            se.vruntime = self.min_vruntime.wrapping_sub(se.vlag as u64);
        }
        if initial || wakeup {
            se.vruntime = self.place_entity_cfs(&se, initial, now, p);
        }
        se.on_rq = true;
        se.sleep_rq = 0;
        ents[id as usize] = se;
        if !is_curr {
            self.queue_push(ents, id);
        }
        self.load_weight += se.weight;
        self.nr_running += 1;
        if se.idle_policy {
            self.nr_idle += 1;
        }
        false
    }

    /// dequeue_entity (2.6.38..6.5) for task `id`, a sleeper (`sleep`:
    /// DEQUEUE_SLEEP) or not (a migration or an exit). The running entity is
    /// charged, `id` stops being a buddy and leaves the queue (if it is the
    /// running one it stays current, off the queue, until the next
    /// set_next). A task that does not sleep has its vruntime saved
    /// relative to min_vruntime before the floor moves; a sleeper keeps its
    /// vruntime, is marked as sleeping on this queue, and its relative
    /// position is taken against the floor after the move (see the module
    /// doc).
    #[inline(never)]
    pub fn dequeue_cfs(&mut self, ents: &mut [Entity], id: u32, now: Nanos, sleep: bool) {
        self.update_curr_cfs(ents, now);
        self.clear_buddies(id);
        if self.curr != Some(id) {
            self.queue_remove(id);
        }
        let sleep_rq = if sleep { self.cfs_rq_id() } else { 0 };
        let floor = self.min_vruntime;
        let se = &mut ents[id as usize];
        se.on_rq = false;
        se.sleep_rq = sleep_rq;
        if !sleep {
            se.vlag = floor.wrapping_sub(se.vruntime) as i64;
        }
        self.load_weight -= se.weight;
        self.nr_running -= 1;
        if se.idle_policy {
            self.nr_idle -= 1;
        }
        self.update_min_vruntime(ents);
        if sleep {
            let se = &mut ents[id as usize];
            se.vlag = self.min_vruntime.wrapping_sub(se.vruntime) as i64;
        }
    }

    /// migrate_task_rq_fair (2.6.38..6.5) for a sleeper leaving this queue
    /// at its wake-up: its vruntime relative to this queue's min_vruntime
    /// now (TASK_WAKING). Nothing for a task that did not sleep here (its
    /// dequeue made it relative already).
    pub fn migrate_task_rq_cfs(&self, ents: &mut [Entity], id: u32) {
        let se = &mut ents[id as usize];
        if !se.on_rq && se.sleep_rq != 0 && se.sleep_rq == self.rq_id {
            se.vlag = self.min_vruntime.wrapping_sub(se.vruntime) as i64;
        }
    }

    /// put_prev_entity and set_next_entity (2.6.38..6.5): charge the running
    /// entity, put it back in the queue if it is still runnable and not
    /// `next`, and make `next` current. A switch clears `next`'s buddies
    /// (set_next_entity from 5.14; before, the pick had) and records its
    /// sum_exec as the start of its slice (prev_sum_exec_runtime). A re-pick
    /// of the running entity changes neither, as in pick_next_task_fair
    /// with group scheduling (prev == p: no set_next_entity).
    #[inline(never)]
    pub fn set_next_cfs(&mut self, ents: &mut [Entity], next: Option<u32>, now: Nanos) {
        self.update_curr_cfs(ents, now);
        if let (_, Some(n)) = self.switch_curr(ents, next) {
            self.clear_buddies(n);
            self.prev_sum_exec = ents[n as usize].sum_exec;
        }
        if let Some(n) = next {
            ents[n as usize].exec_start = now;
        }
        self.update_min_vruntime(ents);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfs() -> EevdfParams {
        EevdfParams {
            class: FairClass::Cfs,
            ..EevdfParams::default()
        }
    }

    fn setup(n: usize, p: &EevdfParams) -> (Vec<Entity>, CfsRq) {
        let e = (0..n)
            .map(|_| Entity::new(NICE_0_LOAD, p.base_slice))
            .collect();
        let mut rq = CfsRq::default();
        rq.configure(p);
        (e, rq)
    }

    /// __sched_period: the latency up to 8 tasks, 3 ms a task above.
    #[test]
    fn the_period_stretches_past_sched_nr_latency() {
        let p = cfs();
        assert_eq!(CfsRq::sched_period(1, &p), 24_000_000);
        assert_eq!(CfsRq::sched_period(8, &p), 24_000_000);
        assert_eq!(CfsRq::sched_period(9, &p), 27_000_000);
        assert_eq!(CfsRq::sched_period(20, &p), 60_000_000);
    }

    /// sched_slice: the weight's share, counting an entity not yet queued;
    /// BASE_SLICE (5.13) floors it at the minimum granularity, and from 5.16
    /// at the idle one for a SCHED_IDLE entity beside non-idle ones.
    #[test]
    fn slices_by_weight_with_the_version_floors() {
        let p = cfs();
        let (mut e, mut rq) = setup(3, &p);
        e[1].weight = 3; // SCHED_IDLE weight
        e[1].idle_policy = true;
        rq.enqueue(&mut e, 0, 0, false, &p);
        // a new entity counts itself: 24 ms over two
        assert_eq!(rq.sched_slice(&e[2], &p), 12_000_000);
        assert_eq!(rq.sched_vslice(&e[2], &p), 12_000_000);
        rq.enqueue(&mut e, 1, 0, false, &p);
        // 24 ms * 3 / 1027 = 70 us, floored
        assert_eq!(rq.sched_slice(&e[1], &p), 750_000, "5.16+: idle floor");
        let q = EevdfParams {
            cfs_idle_granularity: false,
            ..p
        };
        assert_eq!(rq.sched_slice(&e[1], &q), 3_000_000, "5.13..5.15");
        let q = EevdfParams {
            cfs_base_slice: false,
            ..p
        };
        assert_eq!(
            rq.sched_slice(&e[1], &q),
            24_000_000 * 3 / 1027,
            "before 5.13"
        );
        assert_eq!(rq.sched_slice(&e[0], &q), 24_000_000 * 1024 / 1027);
        // an idle-only queue floors an idle entity at the minimum granularity
        rq.dequeue(&mut e, 0, 0, &p);
        assert_eq!(rq.sched_slice(&e[1], &p), 24_000_000);
        e[2].weight = 3;
        e[2].idle_policy = true;
        rq.enqueue(&mut e, 2, 0, false, &p);
        let q = EevdfParams {
            sched_latency: 2_000_000,
            ..p
        };
        assert_eq!(rq.sched_slice(&e[1], &q), 3_000_000);
    }

    /// 6.3's cap (79ba1e607d68): a heavy task among many light ones is
    /// preempted after the latency instead of after its large share of a
    /// long period.
    #[test]
    fn the_slice_cap_of_6_3_limits_the_ideal_runtime() {
        for cap in [false, true] {
            let p = EevdfParams {
                cfs_slice_cap: cap,
                ..cfs()
            };
            let (mut e, mut rq) = setup(20, &p);
            for se in &mut e[1..] {
                se.weight = 15; // nice 19
            }
            for t in 0..20 {
                rq.enqueue(&mut e, t as u32, 0, false, &p);
            }
            rq.set_next(&mut e, Some(0), 0);
            // period 60 ms, task 0's share 60 * 1024 / 1309 = 46.9 ms
            let slice = rq.sched_slice(&e[0], &p);
            assert_eq!(slice, 60_000_000 * 1024 / 1309);
            // at 30 ms: past the latency, short of the share; task 0's
            // vruntime is 30 ms ahead of the leftmost, under the share
            let r = rq.task_tick(&mut e, 30_000_000, &p);
            assert_eq!(r, cap, "cap {cap}");
        }
    }

    /// 6.3's long-sleeper rule: after more than ~104 days asleep the
    /// sleeper is placed at min_vruntime less its credit even if its own
    /// vruntime is later (which a wrapped comparison could make it look).
    #[test]
    fn a_very_long_sleeper_is_placed_from_the_floor_from_6_3() {
        for rule in [false, true] {
            let p = EevdfParams {
                cfs_long_sleeper: rule,
                ..cfs()
            };
            let (mut e, mut rq) = setup(1, &p);
            rq.enqueue(&mut e, 0, 0, false, &p);
            rq.set_next(&mut e, Some(0), 0);
            // alone: it is the floor when it sleeps, and the idle queue's
            // floor stays there
            rq.dequeue_sleep(&mut e, 0, 50_000_000, &p);
            rq.set_next(&mut e, None, 50_000_000);
            assert_eq!(rq.min_vruntime, 50_000_000);
            rq.enqueue(&mut e, 0, 50_000_000 + LONG_SLEEP_NS + 1, false, &p);
            let want = if rule { 38_000_000 } else { 50_000_000 };
            assert_eq!(e[0].vruntime, want, "rule {rule}");
            // a sleep of exactly the limit is not long
            rq.set_next(&mut e, Some(0), 0);
            rq.dequeue_sleep(&mut e, 0, 100_000_000, &p);
            rq.set_next(&mut e, None, 100_000_000);
            let v = e[0].vruntime;
            rq.enqueue(&mut e, 0, 100_000_000 + LONG_SLEEP_NS, false, &p);
            assert_eq!(e[0].vruntime, v);
        }
    }

    /// Before 5.14 the pick clears the picked entity's buddies even when it
    /// re-picks the running one; from 5.14 only a switch does.
    #[test]
    fn buddies_of_a_re_picked_task_survive_from_5_14() {
        for old in [false, true] {
            let p = EevdfParams {
                cfs_pick_clears_buddies: old,
                ..cfs()
            };
            let (mut e, mut rq) = setup(2, &p);
            rq.enqueue(&mut e, 0, 0, false, &p);
            rq.enqueue(&mut e, 1, 0, false, &p);
            rq.set_next(&mut e, Some(1), 0);
            rq.set_next(&mut e, Some(0), 10_000_000);
            // 0 (1 ms) yields with 1 (10 ms) too far ahead to run instead
            rq.yield_task(&mut e, 11_000_000);
            assert_eq!(rq.skip, Some(0));
            assert_eq!(rq.pick_next_task(&mut e, 11_000_000, &p), Some(0));
            rq.set_next(&mut e, Some(0), 11_000_000);
            let want = if old { None } else { Some(0) };
            assert_eq!(rq.skip, want, "old {old}");
            // a switch clears the new current's buddies in both
            rq.set_next(&mut e, Some(1), 11_000_000);
            rq.yield_task(&mut e, 11_000_000);
            assert_eq!(rq.skip, Some(1));
            rq.set_next(&mut e, Some(0), 11_000_000);
            assert_eq!(rq.skip, Some(1));
            rq.set_next(&mut e, Some(1), 11_000_000);
            assert_eq!(rq.skip, None);
        }
    }

    /// A task migrated without sleeping keeps its distance to the floor: it
    /// is neither starved (placed far ahead on a queue whose floor is low)
    /// nor favoured (far behind on one whose floor is high).
    #[test]
    fn a_migrated_task_keeps_its_place_relative_to_the_floor() {
        let p = cfs();
        let (mut e, mut a) = setup(4, &p);
        let mut b = CfsRq::default();
        b.configure(&p);
        // a: 0 runs 100 ms, then 1 runs 3 ms: a's floor is 1's 3 ms and 0
        // is queued 97 ms ahead of it
        a.enqueue(&mut e, 0, 0, false, &p);
        a.enqueue(&mut e, 1, 0, false, &p);
        a.set_next(&mut e, Some(0), 0);
        a.set_next(&mut e, Some(1), 100_000_000);
        a.update_curr(&mut e, 103_000_000);
        assert_eq!(a.min_vruntime, 3_000_000);
        // b: 2 has run 500 ms alone, 3 is queued 1 ms behind it
        b.enqueue(&mut e, 2, 0, false, &p);
        b.set_next(&mut e, Some(2), 0);
        b.update_curr(&mut e, 500_000_000);
        e[3].vlag = 1_000_000;
        b.enqueue(&mut e, 3, 500_000_000, false, &p);
        assert_eq!(e[3].vruntime, 499_000_000);
        // the floor never moves back
        assert_eq!(b.min_vruntime, 500_000_000);
        // 0 moves from a to b: 97 ms ahead of b's floor too
        a.dequeue(&mut e, 0, 103_000_000, &p);
        assert_eq!(e[0].vlag, -97_000_000);
        b.enqueue(&mut e, 0, 103_000_000, false, &p);
        assert_eq!(e[0].vruntime, 500_000_000 + 97_000_000);
        // and 3 moves from b to a: 1 ms behind a's floor
        b.dequeue(&mut e, 3, 103_000_000, &p);
        a.enqueue(&mut e, 3, 103_000_000, false, &p);
        assert_eq!(e[3].vruntime, 2_000_000);
    }

    /// A sleeper that wakes on another queue is renormalised there, with
    /// the old queue's floor at the sleep, or at the wake-up when
    /// migrate_task_rq is called.
    #[test]
    fn a_sleeper_waking_elsewhere_is_renormalised() {
        for hook in [false, true] {
            let p = cfs();
            let (mut e, mut a) = setup(3, &p);
            let mut b = CfsRq::default();
            b.configure(&p);
            a.enqueue(&mut e, 0, 0, false, &p);
            a.enqueue(&mut e, 1, 0, false, &p);
            a.set_next(&mut e, Some(0), 0);
            a.update_curr(&mut e, 2_000_000);
            // 0 sleeps 2 ms ahead of 1 (the floor, 0 ms)
            a.dequeue_sleep(&mut e, 0, 2_000_000, &p);
            assert_eq!(e[0].vlag, -2_000_000);
            a.set_next(&mut e, Some(1), 2_000_000);
            // 1 runs 40 ms: a's floor moves to 40 ms
            a.update_curr(&mut e, 42_000_000);
            b.enqueue(&mut e, 2, 0, false, &p);
            b.set_next(&mut e, Some(2), 0);
            b.update_curr(&mut e, 42_000_000);
            if hook {
                a.migrate_task_rq(&mut e, 0);
                assert_eq!(e[0].vlag, 38_000_000);
            }
            b.enqueue(&mut e, 0, 42_000_000, false, &p);
            // b's floor 42 ms; hook: 38 ms behind it, bounded by the credit
            // (12 ms); without: 2 ms ahead of it
            let want = if hook { 30_000_000 } else { 44_000_000 };
            assert_eq!(e[0].vruntime, want, "hook {hook}");
        }
    }
}
