//! CFS's rules (Linux 2.6.38 to 6.5, `sim::cfs`) on a run queue built
//! directly: wake-up placement and preemption, START_DEBIT, the slice at the
//! tick, the buddies, SCHED_IDLE, and that the EEVDF class is untouched.
//!
//! Tunables are the 8+ CPU defaults: latency 24 ms, minimum granularity
//! 3 ms, wake-up granularity 4 ms, sched_nr_latency 8.

use sim::eevdf::{nice_to_weight, CfsRq, EevdfParams, Entity, FairClass, NICE_0_LOAD};
use sim::rq::RunQueue;

const MS: u64 = 1_000_000;

fn cfs() -> EevdfParams {
    EevdfParams {
        class: FairClass::Cfs,
        ..EevdfParams::default()
    }
}

/// `n` nice-0 entities and an empty queue configured by `p`.
fn queue(n: usize, p: &EevdfParams) -> (Vec<Entity>, CfsRq) {
    let e = (0..n)
        .map(|_| Entity::new(NICE_0_LOAD, p.base_slice))
        .collect();
    let mut rq = CfsRq::default();
    rq.configure(p);
    (e, rq)
}

/// __schedule: pick and switch.
fn schedule(rq: &mut CfsRq, e: &mut [Entity], now: u64, p: &EevdfParams) -> Option<u32> {
    let next = rq.pick_next_task(e, now, p);
    rq.set_next(e, next, now);
    next
}

/// Two tasks: 0 runs 1 ms, 1 runs 2 ms and sleeps at 3 ms (vruntime 2 ms),
/// then 0 runs alone from 3 ms (its vruntime is then 1 ms).
fn sleeper(p: &EevdfParams) -> (Vec<Entity>, CfsRq) {
    let (mut e, mut rq) = queue(2, p);
    rq.enqueue(&mut e, 0, 0, false, p);
    rq.enqueue(&mut e, 1, 0, false, p);
    rq.set_next(&mut e, Some(0), 0);
    rq.set_next(&mut e, Some(1), MS);
    rq.dequeue_sleep(&mut e, 1, 3 * MS, p);
    assert_eq!(e[1].vruntime, 2 * MS);
    rq.set_next(&mut e, Some(0), 3 * MS);
    (e, rq)
}

/// A short sleep keeps the sleeper's own vruntime (it is later than
/// min_vruntime less the credit); 1 ms behind the running task is within
/// the wake-up granularity: no preemption.
#[test]
fn a_sleeper_woken_within_the_wakeup_granularity_does_not_preempt() {
    let p = cfs();
    let (mut e, mut rq) = sleeper(&p);
    rq.enqueue(&mut e, 1, 5 * MS, false, &p);
    assert_eq!(e[0].vruntime, 3 * MS);
    assert_eq!(rq.min_vruntime, 3 * MS);
    assert_eq!(e[1].vruntime, 2 * MS, "its own vruntime");
    assert!(!rq.check_preempt_wakeup(&mut e, 1, 5 * MS, &p));
    assert_eq!((rq.next, rq.last), (None, None));
}

/// After a long sleep the sleeper's vruntime is far behind: it is placed
/// at min_vruntime less half the latency (GENTLE_FAIR_SLEEPERS), 12 ms
/// behind the running task, and preempts it, as the next buddy (no last
/// buddy: the queue holds fewer than sched_nr_latency tasks).
#[test]
fn a_long_sleeper_gets_half_the_latency_of_credit_and_preempts() {
    let p = cfs();
    let (mut e, mut rq) = sleeper(&p);
    rq.enqueue(&mut e, 1, 100 * MS, false, &p);
    assert_eq!(rq.min_vruntime, 98 * MS);
    assert_eq!(e[1].vruntime, 98 * MS - 12 * MS);
    assert!(rq.check_preempt_wakeup(&mut e, 1, 100 * MS, &p));
    assert_eq!((rq.next, rq.last), (Some(1), None));
    assert_eq!(schedule(&mut rq, &mut e, 100 * MS, &p), Some(1));
    assert_eq!(rq.next, None, "the switch clears the buddy");
}

/// Without GENTLE_FAIR_SLEEPERS the credit is the full latency.
#[test]
fn without_gentle_fair_sleepers_the_credit_is_the_full_latency() {
    let p = EevdfParams {
        gentle_fair_sleepers: false,
        ..cfs()
    };
    let (mut e, mut rq) = sleeper(&p);
    rq.enqueue(&mut e, 1, 100 * MS, false, &p);
    assert_eq!(e[1].vruntime, 98 * MS - 24 * MS);
}

/// From 5.16 a SCHED_IDLE sleeper's credit is half the minimum granularity
/// (2cae3948edd4); before, half the latency like any other.
#[test]
fn a_sched_idle_sleeper_gets_less_credit_from_5_16() {
    for (rule, credit) in [(true, 3 * MS / 2), (false, 12 * MS)] {
        let p = EevdfParams {
            cfs_idle_granularity: rule,
            ..cfs()
        };
        let (mut e, mut rq) = sleeper(&p);
        e[1].idle_policy = true;
        e[1].weight = 3;
        rq.enqueue(&mut e, 1, 100 * MS, false, &p);
        assert_eq!(e[1].vruntime, 98 * MS - credit, "5.16 rule {rule}");
    }
}

/// wakeup_preempt_entity: strictly more than the granularity, which is in
/// the wakee's virtual time (a heavy wakee preempts from closer).
#[test]
fn the_wakeup_granularity_is_strict_and_in_the_wakees_virtual_time() {
    let p = cfs();
    for (nice, behind, preempts) in [
        (0, 4 * MS, false),
        (0, 4 * MS + 1, true),
        // nice -5: 4 ms * 1024 / 3121 = 1.31 ms
        (-5, 1_312_400, true),
        (-5, 1_312_000, false),
        // nice 5: 4 ms * 1024 / 335 = 12.2 ms
        (5, 12 * MS, false),
        (5, 12_300_000, true),
    ] {
        let (mut e, mut rq) = queue(2, &p);
        e[1].weight = nice_to_weight(nice);
        rq.enqueue(&mut e, 0, 0, false, &p);
        rq.set_next(&mut e, Some(0), 0);
        rq.update_curr(&mut e, 50 * MS);
        // a task migrated here `behind` ns behind the floor (curr's)
        e[1].vlag = behind as i64;
        rq.enqueue(&mut e, 1, 50 * MS, false, &p);
        assert_eq!(e[0].vruntime - e[1].vruntime, behind);
        assert_eq!(
            rq.check_preempt_wakeup(&mut e, 1, 50 * MS, &p),
            preempts,
            "nice {nice}, {behind} ns behind"
        );
    }
}

/// WAKEUP_PREEMPTION off: no wake-up preempts a normal task.
#[test]
fn without_wakeup_preemption_nothing_preempts() {
    let p = EevdfParams {
        wakeup_preemption: false,
        ..cfs()
    };
    let (mut e, mut rq) = sleeper(&p);
    rq.enqueue(&mut e, 1, 100 * MS, false, &p);
    assert!(!rq.check_preempt_wakeup(&mut e, 1, 100 * MS, &p));
}

/// START_DEBIT: a new task starts one virtual slice (its share of the
/// period with itself counted) after min_vruntime, and does not preempt.
/// Without it, at min_vruntime, here 6 ms behind the running task: it
/// preempts.
#[test]
fn a_new_task_starts_one_vslice_after_the_floor_and_does_not_preempt() {
    for debit in [true, false] {
        let p = EevdfParams {
            start_debit: debit,
            ..cfs()
        };
        let (mut e, mut rq) = queue(4, &p);
        for t in 0..3 {
            rq.enqueue(&mut e, t, 0, true, &p);
        }
        schedule(&mut rq, &mut e, 0, &p);
        rq.update_curr(&mut e, 10 * MS);
        let floor = rq.min_vruntime;
        rq.enqueue(&mut e, 3, 10 * MS, true, &p);
        // four tasks: 24 ms / 4
        let want = if debit { floor + 6 * MS } else { floor };
        assert_eq!(e[3].vruntime, want, "START_DEBIT {debit}");
        assert_eq!(rq.check_preempt_wakeup(&mut e, 3, 10 * MS, &p), !debit);
    }
}

/// The first of new tasks enqueued together starts one whole latency after
/// the floor (alone on the queue), the next half of it (two), and so on:
/// they run in enqueue order.
#[test]
fn new_tasks_are_staggered_by_their_slices() {
    let p = cfs();
    let (mut e, mut rq) = queue(3, &p);
    for t in 0..3 {
        rq.enqueue(&mut e, t, 0, true, &p);
    }
    assert_eq!(e[0].vruntime, 24 * MS);
    assert_eq!(e[1].vruntime, 12 * MS);
    assert_eq!(e[2].vruntime, 8 * MS);
    assert_eq!(rq.pick_next(&e, &p), Some(2));
}

/// N equal tasks, ticks every `tick` ns from the first pick: the time of the
/// first tick that asks for a resched.
fn first_resched(n: usize, tick: u64, p: &EevdfParams) -> u64 {
    let (mut e, mut rq) = queue(n, p);
    for t in 0..n as u32 {
        rq.enqueue(&mut e, t, 0, false, p);
    }
    assert_eq!(schedule(&mut rq, &mut e, 0, p), Some(0));
    let mut now = 0;
    loop {
        now += tick;
        if rq.task_tick(&mut e, now, p) {
            return now;
        }
        assert!(now < 100 * MS, "never preempted");
    }
}

/// A busy queue: the running task is preempted at the first tick after
/// its sched_slice, the period (24 ms up to 8 tasks, 3 ms a task above)
/// over N. With 4 ms ticks a 12 ms slice ends at 16 ms (12 is not past 12).
#[test]
fn a_busy_queue_preempts_at_the_tick_after_the_slice() {
    let p = cfs();
    for (n, tick, at) in [
        (2, MS, 13 * MS),
        (3, MS, 9 * MS),
        (4, MS, 7 * MS),
        // 24 / 5 = 4.8 ms
        (5, MS, 5 * MS),
        (8, MS, 4 * MS),
        // 9 * 3 ms / 9
        (9, MS, 4 * MS),
        (16, MS, 4 * MS),
        (2, 4 * MS, 16 * MS),
        (3, 4 * MS, 12 * MS),
        (16, 4 * MS, 4 * MS),
    ] {
        assert_eq!(first_resched(n, tick, &p), at, "{n} tasks, tick {tick}");
    }
    // a task alone is never preempted by the tick
    let (mut e, mut rq) = queue(1, &p);
    rq.enqueue(&mut e, 0, 0, false, &p);
    schedule(&mut rq, &mut e, 0, &p);
    assert!(!rq.task_tick(&mut e, 500 * MS, &p));
    assert_eq!(e[0].sum_exec, 500 * MS);
}

/// Far ahead of the leftmost, the running task is still not preempted
/// before it has run the minimum granularity since it was picked.
#[test]
fn no_tick_preemption_before_the_minimum_granularity() {
    let p = cfs();
    let (mut e, mut rq) = queue(2, &p);
    rq.enqueue(&mut e, 0, 0, false, &p);
    rq.set_next(&mut e, Some(0), 0);
    // 1 arrives from another queue 20 ms behind its floor
    e[1].vlag = (20 * MS) as i64;
    rq.enqueue(&mut e, 1, 0, false, &p);
    assert_eq!(e[1].vruntime, 0u64.wrapping_sub(20 * MS));
    for ms in 1..3 {
        assert!(
            !rq.task_tick(&mut e, ms * MS, &p),
            "{ms} ms: under the minimum granularity"
        );
    }
    // 3 ms: 23 ms ahead of the leftmost, past the 12 ms slice
    assert!(rq.task_tick(&mut e, 3 * MS, &p));
    assert_eq!(schedule(&mut rq, &mut e, 3 * MS, &p), Some(1));
}

/// Eight tasks and a sleeper: six run 2 ms each, then 0 runs 5 ms; the
/// sleeper wakes at the floor less the credit, 5 ms behind 0, and preempts
/// it (it becomes the next buddy, 0 the last: the queue is loaded). When
/// the sleeper blocks again, 0 is 3 ms ahead of the leftmost, within the
/// granularity: the last buddy gets the CPU back.
fn last_buddy_case(p: &EevdfParams, others: u32) -> Option<u32> {
    let w = others + 1;
    let (mut e, mut rq) = queue(others as usize + 2, p);
    for t in 0..=w {
        rq.enqueue(&mut e, t, 0, false, p);
    }
    rq.dequeue_sleep(&mut e, w, 0, p);
    let mut now = 0;
    for t in 1..=others {
        rq.set_next(&mut e, Some(t), now);
        now += 2 * MS;
    }
    rq.set_next(&mut e, Some(0), now);
    now += 5 * MS;
    rq.enqueue(&mut e, w, now, false, p);
    assert_eq!(e[w as usize].vruntime, 0);
    assert!(rq.check_preempt_wakeup(&mut e, w, now, p));
    assert_eq!(rq.next, Some(w));
    assert_eq!(schedule(&mut rq, &mut e, now, p), Some(w));
    rq.dequeue_sleep(&mut e, w, now + MS, p);
    schedule(&mut rq, &mut e, now + MS, p)
}

/// LAST_BUDDY: the task a wake-up preempted runs again when it is within
/// the granularity of the leftmost; not without the feature, nor on a
/// queue of fewer than sched_nr_latency tasks.
#[test]
fn the_last_buddy_is_picked_back_after_a_wakeup_preemption() {
    let p = cfs();
    assert_eq!(last_buddy_case(&p, 6), Some(0), "last buddy");
    let off = EevdfParams {
        last_buddy: false,
        ..p
    };
    assert_eq!(
        last_buddy_case(&off, 6),
        Some(1),
        "LAST_BUDDY off: leftmost"
    );
    assert_eq!(last_buddy_case(&p, 5), Some(1), "7 tasks: no buddy");
}

/// NEXT_BUDDY (off by default): on a loaded queue a wakee that does not
/// preempt is still made the next buddy, and is picked at the next
/// schedule while within the granularity of the leftmost.
#[test]
fn next_buddy_marks_a_wakee_that_does_not_preempt() {
    for feature in [false, true] {
        let p = EevdfParams {
            next_buddy: feature,
            ..cfs()
        };
        let (mut e, mut rq) = queue(9, &p);
        for t in 0..9 {
            rq.enqueue(&mut e, t, 0, false, &p);
        }
        // 8 runs 3 ms and sleeps; 1..=7 run 1 ms each; 0 runs 4 ms
        rq.set_next(&mut e, Some(8), 0);
        rq.dequeue_sleep(&mut e, 8, 3 * MS, &p);
        let mut now = 3 * MS;
        for t in 1..=7 {
            rq.set_next(&mut e, Some(t), now);
            now += MS;
        }
        rq.set_next(&mut e, Some(0), now);
        now += 4 * MS;
        rq.enqueue(&mut e, 8, now, false, &p);
        // 8 keeps its 3 ms: 1 ms behind 0, 2 ms ahead of the leftmost
        assert_eq!(e[8].vruntime, 3 * MS);
        assert!(!rq.check_preempt_wakeup(&mut e, 8, now, &p));
        assert_eq!(rq.next, feature.then_some(8));
        let want = if feature { 8 } else { 1 };
        assert_eq!(schedule(&mut rq, &mut e, now, &p), Some(want));
    }
}

/// Three tasks: 1 and 2 run `ahead` ns each, then 0 runs 1 ms; the pick
/// after 0 yields (or not).
fn yield_case(ahead: u64, yields: bool) -> (Option<u32>, Option<u32>) {
    let p = cfs();
    let (mut e, mut rq) = queue(3, &p);
    for t in 0..3 {
        rq.enqueue(&mut e, t, 0, false, &p);
    }
    rq.set_next(&mut e, Some(1), 0);
    rq.set_next(&mut e, Some(2), ahead);
    rq.set_next(&mut e, Some(0), 2 * ahead);
    let now = 2 * ahead + MS;
    if yields {
        rq.yield_task(&mut e, now);
        assert_eq!(rq.skip, Some(0));
    }
    (schedule(&mut rq, &mut e, now, &p), rq.skip)
}

/// yield_task_fair: the yielder becomes the skip buddy, and the second
/// entity runs instead when it is within the granularity of it (the
/// yielder, 1 ms, is still the leftmost); too far ahead, the yielder runs
/// again. A task alone does not become the skip buddy.
#[test]
fn the_skip_buddy_yields_to_a_close_second() {
    assert_eq!(yield_case(2 * MS, false), (Some(0), None));
    assert_eq!(yield_case(2 * MS, true), (Some(1), Some(0)));
    // 10 ms ahead: not close enough; the re-pick keeps the buddy (5.14+)
    assert_eq!(yield_case(10 * MS, true), (Some(0), Some(0)));
    let p = cfs();
    let (mut e, mut rq) = queue(1, &p);
    rq.enqueue(&mut e, 0, 0, false, &p);
    schedule(&mut rq, &mut e, 0, &p);
    rq.yield_task(&mut e, MS);
    assert_eq!(rq.skip, None);
}

/// A queued skip buddy that is the leftmost is passed over for the entity
/// after it in the tree, or the running one if that is before it.
#[test]
fn a_queued_skip_buddy_is_passed_over_for_the_next_in_the_tree() {
    let p = cfs();
    let (mut e, mut rq) = queue(3, &p);
    for t in 0..3 {
        rq.enqueue(&mut e, t, 0, false, &p);
    }
    rq.set_next(&mut e, Some(1), 0);
    rq.set_next(&mut e, Some(2), 2 * MS);
    rq.set_next(&mut e, Some(0), 4 * MS);
    rq.yield_task(&mut e, 5 * MS);
    assert_eq!(schedule(&mut rq, &mut e, 5 * MS, &p), Some(1));
    // 1 runs 0.5 ms (2.5 ms); 0 (1 ms, the skip buddy) is the leftmost,
    // then 2 (2 ms), then the running 1: 2 is picked
    assert_eq!(rq.skip, Some(0));
    assert_eq!(schedule(&mut rq, &mut e, 5 * MS + MS / 2, &p), Some(2));
}

/// SCHED_IDLE: a non-idle wakee preempts an idle task at once (even
/// without WAKEUP_PREEMPTION), an idle wakee never preempts (not even an
/// idle task), and an idle task is never made a buddy.
#[test]
fn sched_idle_tasks_preempt_and_are_preempted_by_policy() {
    let idle = |e: &mut Entity| {
        e.idle_policy = true;
        e.weight = 3;
    };
    for wp in [true, false] {
        let p = EevdfParams {
            wakeup_preemption: wp,
            ..cfs()
        };
        // idle curr, normal wakee far ahead of it
        let (mut e, mut rq) = queue(10, &p);
        idle(&mut e[0]);
        for t in 0..9 {
            rq.enqueue(&mut e, t, 0, false, &p);
        }
        rq.set_next(&mut e, Some(0), 0);
        e[9].vlag = -((100 * MS) as i64);
        rq.enqueue(&mut e, 9, MS, false, &p);
        assert!(rq.check_preempt_wakeup(&mut e, 9, MS, &p), "wp {wp}");
        assert_eq!(rq.last, None, "an idle task is not the last buddy");
    }
    let p = cfs();
    for idle_curr in [false, true] {
        let (mut e, mut rq) = queue(2, &p);
        if idle_curr {
            idle(&mut e[0]);
        }
        idle(&mut e[1]);
        rq.enqueue(&mut e, 0, 0, false, &p);
        rq.set_next(&mut e, Some(0), 0);
        rq.update_curr(&mut e, 100 * MS);
        e[1].vlag = (50 * MS) as i64;
        rq.enqueue(&mut e, 1, 100 * MS, false, &p);
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 100 * MS, &p));
        assert_eq!(rq.next, None, "an idle task is not the next buddy");
    }
}

/// DELAY_DEQUEUE is EEVDF's: under CFS a sleeper always leaves.
#[test]
fn a_cfs_sleeper_is_never_delayed() {
    let p = EevdfParams {
        delay_dequeue: true,
        ..cfs()
    };
    let (mut e, mut rq) = queue(2, &p);
    rq.enqueue(&mut e, 0, 0, false, &p);
    rq.enqueue(&mut e, 1, 0, false, &p);
    rq.set_next(&mut e, Some(0), 0);
    assert!(!rq.dequeue_sleep(&mut e, 0, 10 * MS, &p));
    assert!(!e[0].on_rq && !e[0].delayed);
    assert_eq!((rq.nr_running, rq.nr_delayed), (1, 0));
}

/// The engine's convention, through the trait: a task that leaves a queue
/// whose floor is high (`dequeue`) for one whose floor is low keeps its
/// distance to the floor (not starved far ahead of it), and one that goes
/// the other way too (not favoured far behind it); a sleeper that wakes on
/// the other queue is placed there against that queue's floor.
#[test]
fn moves_between_queues_keep_the_place_relative_to_the_floor() {
    fn moved<R: RunQueue>(
        from: &mut R,
        to: &mut R,
        e: &mut [Entity],
        t: u32,
        now: u64,
        p: &EevdfParams,
    ) {
        from.dequeue(e, t, now, p);
        to.enqueue(e, t, now, false, p);
    }
    let p = cfs();
    let (mut e, mut hi) = queue(4, &p);
    let mut lo = CfsRq::default();
    lo.configure(&p);
    // hi: 0 has run 1 s, 1 is queued at the floor; lo: 2 has run 2 ms
    hi.enqueue(&mut e, 0, 0, false, &p);
    hi.set_next(&mut e, Some(0), 0);
    hi.update_curr(&mut e, 1_000 * MS);
    hi.enqueue(&mut e, 1, 1_000 * MS, false, &p);
    lo.enqueue(&mut e, 2, 998 * MS, false, &p);
    lo.set_next(&mut e, Some(2), 998 * MS);
    lo.update_curr(&mut e, 1_000 * MS);
    assert_eq!((hi.min_vruntime, lo.min_vruntime), (1_000 * MS, 2 * MS));
    assert_eq!(e[1].vruntime, 1_000 * MS);
    moved(&mut hi, &mut lo, &mut e, 1, 1_000 * MS, &p);
    assert_eq!(e[1].vruntime, 2 * MS, "at lo's floor, not 998 ms ahead");
    moved(&mut lo, &mut hi, &mut e, 1, 1_000 * MS, &p);
    assert_eq!(
        e[1].vruntime,
        1_000 * MS,
        "at hi's floor, not 998 ms behind"
    );
    // 3 sleeps on lo 1 ms ahead of its floor and wakes on hi
    lo.enqueue(&mut e, 3, 1_000 * MS, false, &p);
    lo.set_next(&mut e, Some(3), 1_000 * MS);
    lo.dequeue_sleep(&mut e, 3, 1_001 * MS, &p);
    assert_eq!(e[3].vlag, -(MS as i64));
    lo.migrate_task_rq(&mut e, 3);
    hi.enqueue(&mut e, 3, 1_001 * MS, false, &p);
    assert_eq!(hi.min_vruntime, 1_000 * MS);
    assert_eq!(e[3].vruntime, 1_001 * MS);
}

/// The EEVDF class is the default, and its tick is exactly update_curr:
/// the same operations on two EEVDF queues, one ticked by `update_curr`
/// and the other by `task_tick`, give the same answers and the same state.
#[test]
fn the_eevdf_class_is_the_default_and_its_tick_is_update_curr() {
    assert_eq!(FairClass::default(), FairClass::Eevdf);
    assert_eq!(EevdfParams::default().class, FairClass::Eevdf);
    let p = EevdfParams::default();
    let run = |tick: bool| {
        let mut e: Vec<Entity> = (0..4).map(|_| Entity::new(NICE_0_LOAD, 3 * MS)).collect();
        let mut rq = CfsRq::default();
        RunQueue::configure(&mut rq, &p);
        let mut out = Vec::new();
        for t in 0..4 {
            RunQueue::enqueue(&mut rq, &mut e, t, 0, t % 2 == 0, &p);
        }
        let mut now = 0;
        for step in 0..200u64 {
            now += 700_000 + (step * 7_919) % 900_000;
            let r = if tick {
                RunQueue::task_tick(&mut rq, &mut e, now, &p)
            } else {
                RunQueue::update_curr(&mut rq, &mut e, now)
            };
            out.push(r);
            if r || RunQueue::curr(&rq).is_none() {
                let n = RunQueue::pick_next_task(&mut rq, &mut e, now, &p);
                RunQueue::set_next(&mut rq, &mut e, n, now);
                out.push(n.is_some());
            }
            if step % 13 == 5 {
                if let Some(c) = RunQueue::curr(&rq) {
                    RunQueue::dequeue_sleep(&mut rq, &mut e, c, now, &p);
                    let n = RunQueue::pick_next_task(&mut rq, &mut e, now, &p);
                    RunQueue::set_next(&mut rq, &mut e, n, now);
                    RunQueue::enqueue(&mut rq, &mut e, c, now + 1, false, &p);
                }
            }
        }
        (out, format!("{rq:?}"), format!("{e:?}"))
    };
    assert_eq!(run(true), run(false));
}
