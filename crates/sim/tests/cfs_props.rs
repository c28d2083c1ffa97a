//! Properties of CFS run queues (`sim::cfs`) under random operations:
//! min_vruntime never decreases, the tick charges the running task exactly
//! the time since it was last charged, the counts, loads and buddies stay
//! consistent, a migration keeps a task's distance to the floor, the CPU
//! time handed out adds up, and with equal weights and only the tick
//! preempting, no runnable task waits longer than the period times the
//! number of tasks plus a tick.

use proptest::prelude::*;
use sim::eevdf::{nice_to_weight, CfsRq, EevdfParams, Entity, FairClass};

const MS: u64 = 1_000_000;

fn cfs() -> EevdfParams {
    EevdfParams {
        class: FairClass::Cfs,
        ..EevdfParams::default()
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// The tick on queue `q` (resched: schedule).
    Tick { q: usize },
    /// The running task of `q` blocks; `q` schedules.
    Sleep { q: usize },
    /// Sleeper number `t` (of the sleepers) wakes on `q`; the old queue is
    /// told first (`migrate_task_rq`) when `hook`.
    Wake { t: usize, q: usize, hook: bool },
    /// Queued task number `t` (of the queued) moves to the other queue.
    Migrate { t: usize },
    /// The running task of `q` yields; `q` schedules.
    Yield { q: usize },
    /// `q` schedules.
    Pick { q: usize },
}

fn op() -> impl Strategy<Value = (u64, Op)> {
    let q = 0..2usize;
    let kind = prop_oneof![
        4 => q.clone().prop_map(|q| Op::Tick { q }),
        2 => q.clone().prop_map(|q| Op::Sleep { q }),
        3 => (0..8usize, q.clone(), any::<bool>()).prop_map(|(t, q, hook)| Op::Wake { t, q, hook }),
        1 => (0..8usize).prop_map(|t| Op::Migrate { t }),
        1 => q.clone().prop_map(|q| Op::Yield { q }),
        1 => q.prop_map(|q| Op::Pick { q }),
    ];
    (0..4 * MS, kind)
}

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    Queue(usize),
    Asleep(usize),
}

struct World {
    p: EevdfParams,
    e: Vec<Entity>,
    rq: [CfsRq; 2],
    at: Vec<At>,
    now: u64,
    /// Time each queue has had a running task, and since when.
    busy: [u64; 2],
    busy_since: [Option<u64>; 2],
}

impl World {
    fn schedule(&mut self, q: usize) {
        let now = self.now;
        let next = self.rq[q].pick_next_task(&mut self.e, now, &self.p);
        self.rq[q].set_next(&mut self.e, next, now);
        match (self.busy_since[q], next) {
            (Some(s), None) => {
                self.busy[q] += now - s;
                self.busy_since[q] = None;
            }
            (None, Some(_)) => self.busy_since[q] = Some(now),
            _ => {}
        }
    }

    fn check(&self, last_min: &mut [u64; 2]) -> Result<(), TestCaseError> {
        for (q, (rq, last)) in self.rq.iter().zip(last_min.iter_mut()).enumerate() {
            let d = rq.min_vruntime.wrapping_sub(*last) as i64;
            prop_assert!(d >= 0, "queue {q}: min_vruntime went back by {}", -d);
            *last = rq.min_vruntime;
            let curr = rq.curr.filter(|&c| self.e[c as usize].on_rq);
            prop_assert_eq!(rq.curr, curr, "the running task is runnable");
            let on: Vec<u32> = rq.queued().into_iter().chain(curr).collect();
            prop_assert_eq!(rq.nr_running as usize, on.len());
            let w: u64 = on.iter().map(|&t| self.e[t as usize].weight).sum();
            prop_assert_eq!(rq.load_weight, w);
            let idle = on
                .iter()
                .filter(|&&t| self.e[t as usize].idle_policy)
                .count();
            prop_assert_eq!(rq.nr_idle as usize, idle);
            for &t in &on {
                prop_assert!(self.e[t as usize].on_rq);
                prop_assert_eq!(self.at[t as usize], At::Queue(q));
            }
            for b in [rq.next, rq.last, rq.skip].into_iter().flatten() {
                prop_assert!(on.contains(&b), "queue {q}: buddy {b} is not on it");
            }
        }
        for (t, a) in self.at.iter().enumerate() {
            if let At::Asleep(_) = a {
                prop_assert!(!self.e[t].on_rq);
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random ticks, sleeps, wake-ups (on either queue), migrations, yields
    /// and picks on two queues of 2 to 8 tasks of random weights (some
    /// SCHED_IDLE).
    #[test]
    fn random_operations_keep_the_queues_consistent(
        nices in prop::collection::vec(-5i32..=5, 2..=8),
        idle in prop::collection::vec(prop::bool::weighted(0.15), 8),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let p = cfs();
        let n = nices.len();
        let e: Vec<Entity> = nices
            .iter()
            .zip(&idle)
            .map(|(&nice, &i)| {
                let mut se = Entity::new(if i { 3 } else { nice_to_weight(nice) }, p.base_slice);
                se.idle_policy = i;
                se
            })
            .collect();
        let mut rq = [CfsRq::default(), CfsRq::default()];
        for r in &mut rq {
            r.configure(&p);
        }
        let mut w = World {
            p,
            e,
            rq,
            at: (0..n).map(|t| At::Queue(t % 2)).collect(),
            now: 0,
            busy: [0; 2],
            busy_since: [None; 2],
        };
        for t in 0..n {
            let q = t % 2;
            w.rq[q].enqueue(&mut w.e, t as u32, 0, true, &w.p);
        }
        w.schedule(0);
        w.schedule(1);
        let mut last_min = [w.rq[0].min_vruntime, w.rq[1].min_vruntime];
        w.check(&mut last_min)?;
        for (dt, op) in ops {
            w.now += dt;
            let now = w.now;
            match op {
                Op::Tick { q } => {
                    let before = w.rq[q].curr.map(|c| {
                        let se = &w.e[c as usize];
                        (c, se.sum_exec, se.exec_start)
                    });
                    let resched = w.rq[q].task_tick(&mut w.e, now, &w.p);
                    if let Some((c, sum, start)) = before {
                        prop_assert_eq!(
                            w.e[c as usize].sum_exec,
                            sum + (now - start),
                            "the tick charges the time since the last charge"
                        );
                    } else {
                        prop_assert!(!resched);
                    }
                    if resched {
                        w.schedule(q);
                    }
                }
                Op::Sleep { q } => {
                    if let Some(c) = w.rq[q].curr {
                        prop_assert!(!w.rq[q].dequeue_sleep(&mut w.e, c, now, &w.p));
                        w.at[c as usize] = At::Asleep(q);
                        w.schedule(q);
                    }
                }
                Op::Wake { t, q, hook } => {
                    let asleep: Vec<usize> = (0..n)
                        .filter(|&i| matches!(w.at[i], At::Asleep(_)))
                        .collect();
                    if !asleep.is_empty() {
                        let id = asleep[t % asleep.len()];
                        let At::Asleep(old) = w.at[id] else { unreachable!() };
                        if hook && old != q {
                            w.rq[old].migrate_task_rq(&mut w.e, id as u32);
                        }
                        prop_assert!(!w.rq[q].enqueue(&mut w.e, id as u32, now, false, &w.p));
                        w.at[id] = At::Queue(q);
                        // placed no further back than the floor less the
                        // credit (half the latency; 1.5 ms for SCHED_IDLE)
                        let credit = if w.e[id].idle_policy { 3 * MS / 2 } else { 12 * MS };
                        let behind = w.rq[q].min_vruntime.wrapping_sub(w.e[id].vruntime) as i64;
                        prop_assert!(behind <= credit as i64, "{behind} ns behind the floor");
                        if w.rq[q].curr.is_none()
                            || w.rq[q].check_preempt_wakeup(&mut w.e, id as u32, now, &w.p)
                        {
                            w.schedule(q);
                        }
                    }
                }
                Op::Migrate { t } => {
                    let queued: Vec<(usize, u32)> = (0..2)
                        .flat_map(|q| w.rq[q].queued().into_iter().map(move |i| (q, i)))
                        .collect();
                    if !queued.is_empty() {
                        let (from, id) = queued[t % queued.len()];
                        let to = 1 - from;
                        w.rq[from].update_curr(&mut w.e, now);
                        w.rq[to].update_curr(&mut w.e, now);
                        let rel = w.e[id as usize].vruntime.wrapping_sub(w.rq[from].min_vruntime) as i64;
                        w.rq[from].dequeue(&mut w.e, id, now, &w.p);
                        w.rq[to].enqueue(&mut w.e, id, now, false, &w.p);
                        w.at[id as usize] = At::Queue(to);
                        let rel2 = w.e[id as usize].vruntime.wrapping_sub(w.rq[to].min_vruntime) as i64;
                        prop_assert_eq!(rel, rel2, "the distance to the floor is kept");
                        if w.rq[to].curr.is_none()
                            || w.rq[to].check_preempt_wakeup(&mut w.e, id, now, &w.p)
                        {
                            w.schedule(to);
                        }
                    }
                }
                Op::Yield { q } => {
                    w.rq[q].yield_task(&mut w.e, now);
                    w.schedule(q);
                }
                Op::Pick { q } => w.schedule(q),
            }
            w.check(&mut last_min)?;
        }
        // every nanosecond a queue had a running task was charged to one
        let now = w.now;
        for q in 0..2 {
            w.rq[q].update_curr(&mut w.e, now);
            if let Some(s) = w.busy_since[q] {
                w.busy[q] += now - s;
            }
        }
        let charged: u64 = w.e.iter().map(|se| se.sum_exec).sum();
        prop_assert_eq!(charged, w.busy[0] + w.busy[1]);
    }

    /// Equal-weight tasks on one queue driven only by the tick (HZ 1000,
    /// 250 or 100), placed as new tasks (START_DEBIT) or as arrivals up to
    /// half the latency either side of the floor: once every task has run,
    /// none waits longer than the period times the number of tasks plus a
    /// tick between two turns; before its first turn a task may also wait
    /// for the others to work off the spread of the placements (N - 1
    /// times it). With unequal weights a light task legitimately waits far
    /// longer: its share is small.
    #[test]
    fn ticks_bound_the_wait_of_every_runnable_task(
        arrivals in prop::collection::vec(prop::option::of(-12_000_000i64..=12_000_000), 1..=20),
        hz in prop::sample::select(vec![1_000u64, 250, 100]),
        phase in 0..10 * MS,
    ) {
        let p = cfs();
        let tick = 1_000_000_000 / hz;
        let n = arrivals.len();
        let mut e: Vec<Entity> = (0..n).map(|_| Entity::new(1024, p.base_slice)).collect();
        let mut rq = CfsRq::default();
        rq.configure(&p);
        for (t, a) in arrivals.iter().enumerate() {
            match a {
                None => {
                    rq.enqueue(&mut e, t as u32, 0, true, &p);
                }
                Some(lag) => {
                    e[t].vlag = *lag;
                    rq.enqueue(&mut e, t as u32, 0, false, &p);
                }
            }
        }
        let rel = |se: &Entity| se.vruntime.wrapping_sub(rq.min_vruntime) as i64;
        let spread = (e.iter().map(rel).max().unwrap() - e.iter().map(rel).min().unwrap()) as u64;
        let bound = CfsRq::sched_period(n as u32, &p) * n as u64 + tick;
        let first_bound = bound + (n as u64 - 1) * spread;
        let mut waiting_since = vec![0u64; n];
        let mut ran = vec![false; n];
        let mut curr = rq.pick_next_task(&mut e, 0, &p);
        rq.set_next(&mut e, curr, 0);
        ran[curr.unwrap() as usize] = true;
        let end = 2_000 * MS;
        let mut now = phase % tick;
        let check = |t: usize, waited: u64, ran: bool| -> Result<(), TestCaseError> {
            let b = if ran { bound } else { first_bound };
            prop_assert!(
                waited <= b,
                "task {t} waited {waited} ns (ran before: {ran}), bound {b} ns ({n} tasks, tick {tick})"
            );
            Ok(())
        };
        while now < end {
            if rq.task_tick(&mut e, now, &p) {
                let next = rq.pick_next_task(&mut e, now, &p);
                rq.set_next(&mut e, next, now);
                if next != curr {
                    if let Some(c) = curr {
                        waiting_since[c as usize] = now;
                    }
                    let t = next.unwrap() as usize;
                    check(t, now - waiting_since[t], ran[t])?;
                    ran[t] = true;
                    curr = next;
                }
            }
            now += tick;
        }
        for t in 0..n {
            if Some(t as u32) != curr {
                check(t, end - waiting_since[t], ran[t])?;
            }
        }
    }
}
