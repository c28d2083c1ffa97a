//! The synchronisation and recording ops through the engine: futex posts
//! and waits, the wait-list batch with one time stamp, per-CPU spin locks,
//! usleep's timer slack, latency samples and timed runs.

use sim::costs::MachineCosts;
use sim::engine::{Engine, EngineConfig};
use sim::placement::scx::ScxDefault;
use sim::task::{Op, TaskId, TaskSpec};
use topology::{DomainOptions, SchedDomains, Topology};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn engine<'t>(topo: &'t Topology, sd: &'t SchedDomains, costs: bool) -> Engine<'t> {
    let cfg = EngineConfig::checked(topo.all_cpus().clone());
    let c = MachineCosts::for_machine(topo.name());
    Engine::new(
        topo,
        sd,
        if costs { c } else { c.zeroed() },
        cfg,
        Box::new(ScxDefault),
    )
}

fn task(program: Vec<Op>, cpu: usize) -> TaskSpec {
    TaskSpec {
        name: "t".into(),
        program: program.into(),
        mm: 0,
        parent: None,
        spawned: false,
        start_cpu: Some(cpu),
        nice: 0,
        footprint_lines: 0,
    }
}

fn machine() -> (Topology, SchedDomains) {
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    (topo, sd)
}

/// A worker waits on its futex; a poster posts it after 1 ms: the wait
/// returns after the post. A post with nobody waiting is not lost: the
/// poster posts again while the worker computes, and the worker's next
/// wait returns at once.
#[test]
fn futex_post_wakes_the_waiter_and_is_not_lost() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, true);
    let f = e.add_futex();
    let waiter = vec![
        Op::FutexSet {
            futex: f,
            blocked: true,
        },
        Op::Stamp(0),
        Op::FutexWait(f),
        Op::RecordSince { metric: 0, var: 0 },
        Op::Mark(1),
        Op::Compute(5 * MS),
        Op::FutexWait(f),
        Op::Mark(2),
        Op::Exit,
    ];
    let poster = vec![
        Op::Compute(MS),
        Op::FutexPost(f),
        Op::Compute(MS),
        Op::FutexPost(f),
        Op::Exit,
    ];
    e.add_task(task(waiter, 1));
    e.add_task(task(poster, 2));
    e.run().unwrap();
    let woke = e.mark(1).unwrap();
    assert!(woke > MS, "woke at {woke}");
    let s = &e.all_samples()[0];
    assert_eq!(s.len(), 1);
    assert!(s[0].1 >= MS, "waited {} ns", s[0].1);
    // the second wait did not block: only the 5 ms of compute in between
    // (plus the CAS)
    let second = e.mark(2).unwrap() - woke;
    assert!((5 * MS..5 * MS + 100 * US).contains(&second), "{second}");
}

/// The message-thread batch: workers push themselves and sleep; one
/// ListTakeStampPost stamps every listed worker with one time and posts
/// them all; each worker's wake-up latency (now - stamp) is >= 0, and the
/// later wakes of the batch leave after the earlier ones' work.
#[test]
fn wait_list_batch_stamps_once_and_wakes_everyone() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, true);
    let list = e.add_wait_list();
    let msg_futex = e.add_futex();
    let n = 4;
    let mut futexes = Vec::new();
    for _ in 0..n {
        futexes.push(e.add_futex());
    }
    // the message thread: wait until all have queued (a short sleep), then
    // one batch
    let msg = vec![
        Op::Sleep(2 * MS),
        Op::ListTakeStampPost { list, var: 1 },
        Op::Exit,
    ];
    e.add_task(task(msg, 0));
    for (i, &f) in futexes.iter().enumerate() {
        let w = vec![
            Op::FutexSet {
                futex: f,
                blocked: true,
            },
            Op::ListPush { list, futex: f },
            Op::FutexPost(msg_futex),
            Op::FutexWait(f),
            Op::RecordSince { metric: 3, var: 1 },
            Op::Exit,
        ];
        e.add_task(task(w, i + 1));
    }
    e.run().unwrap();
    let s = &e.all_samples()[3];
    assert_eq!(s.len(), n, "a wake-up was lost");
    // one stamp for the batch: sample time - latency is the same instant
    let stamps: Vec<u64> = s.iter().map(|(t, v)| t - v).collect();
    assert!(stamps.iter().all(|&x| x == stamps[0]), "{stamps:?}");
    assert!(stamps[0] >= 2 * MS);
    // every latency covers at least a wake-up (IPI)
    let ipi = MachineCosts::for_machine("kvm-8vcpu").ipi_ns;
    assert!(s.iter().all(|&(_, v)| v >= ipi), "{s:?}");
}

/// Two tasks on one CPU share its lock: the holder is preempted inside the
/// critical section; the other spins until its slice ends, then the holder
/// finishes and lets go. Nobody is in the critical section twice, the
/// spin is not counted as program work, and both finish.
#[test]
fn per_cpu_lock_spins_until_the_holder_lets_go() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, false);
    let locks = e.add_cpu_locks();
    let body = |m: u32| {
        vec![
            Op::LockCpu(locks),
            Op::Mark(m),
            Op::Compute(10 * MS),
            Op::Mark(m + 1),
            Op::UnlockCpu(locks),
            Op::Exit,
        ]
    };
    e.add_task(task(body(0), 3));
    e.add_task(task(body(2), 3));
    e.run().unwrap();
    let (a0, a1, b0, b1) = (
        e.mark(0).unwrap(),
        e.mark(1).unwrap(),
        e.mark(2).unwrap(),
        e.mark(3).unwrap(),
    );
    // critical sections do not overlap
    assert!(a1 <= b0 || b1 <= a0, "{a0}-{a1} and {b0}-{b1} overlap");
    assert_eq!(
        e.counters.compute_work_ns,
        20 * MS,
        "spinning counted as work"
    );
    // the spinner burnt slices of the one CPU while the holder was
    // preempted, so the pair took longer than its 20 ms of work
    assert!(e.now() > 20 * MS + MS, "no spinning seen: {}", e.now());
}

/// usleep fires at the end of the timer slack (50 us); a timed run stops
/// at its time with tasks alive.
#[test]
fn usleep_has_slack_and_timed_runs_stop() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, false);
    e.add_task(task(vec![Op::USleep(100 * US), Op::Mark(0), Op::Exit], 1));
    e.add_task(task(vec![Op::Compute(10_000 * MS), Op::Exit], 2));
    e.set_stop_at(5 * MS);
    e.run().unwrap();
    assert_eq!(e.mark(0), Some(150 * US));
    assert_eq!(e.now(), 5 * MS);
    assert_eq!(e.live_tasks(), 1);
}

/// USleepRest sleeps out what is left of the period since the stamp (with
/// usleep's timer slack), and not at all once the period is over.
#[test]
fn usleep_rest_sleeps_out_the_period() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, false);
    let rest = |work, mark| {
        vec![
            Op::Stamp(2),
            Op::Compute(work),
            Op::USleepRest { period: MS, var: 2 },
            Op::Mark(mark),
            Op::Exit,
        ]
    };
    e.add_task(task(rest(300 * US, 0), 1));
    e.add_task(task(rest(2 * MS, 1), 2));
    e.run().unwrap();
    assert_eq!(e.mark(0), Some(MS + 50 * US));
    assert_eq!(e.mark(1), Some(2 * MS), "slept past an overrun period");
}

/// A request queue: requests pushed while the worker is busy are taken
/// without waiting and without a wakeup sample; on an empty queue the
/// worker sleeps on its futex until the next push, then takes that request
/// and records `now - wake time` (the push's time stamp). Nothing is lost.
#[test]
fn request_queue_drains_then_waits_and_samples_only_the_wait() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, true);
    let q = e.add_req_queue();
    let f = e.add_futex();
    let take = Op::ReqTakeOrWait {
        queue: q,
        futex: f,
        metric: 0,
        var: 0,
    };
    let taken = Op::Note {
        metric: 1,
        value: 1,
    };
    // task 0: the worker; busy while the first three requests arrive
    let worker = vec![
        Op::Compute(2 * MS),
        Op::Loop(4),
        take,
        taken,
        Op::EndLoop,
        Op::Mark(0),
        Op::Exit,
    ];
    let push = Op::ReqPush {
        queue: q,
        worker: TaskId(0),
        futex: f,
        var: 0,
        metric: 2,
    };
    let pusher = vec![
        Op::Compute(MS),
        push,
        push,
        push,
        Op::Compute(4 * MS),
        push,
        Op::Exit,
    ];
    e.add_task(task(worker, 1));
    e.add_task(task(pusher, 2));
    e.run().unwrap();
    assert_eq!(e.all_samples()[2].len(), 4, "pushes counted");
    assert_eq!(e.all_samples()[1].len(), 4, "a request was lost");
    assert_eq!(e.req_pending(q), 0);
    let wake = &e.all_samples()[0];
    assert_eq!(wake.len(), 1, "drained requests were sampled: {wake:?}");
    // the wait ended after the last push (at ~5 ms), and covers a wake-up
    let ipi = MachineCosts::for_machine("kvm-8vcpu").ipi_ns;
    let (at, lat) = wake[0];
    assert!(at - lat >= 5 * MS && lat >= ipi, "{wake:?}");
    assert!(e.mark(0).unwrap() >= at);
}

/// ReqBackoff: a queue holding more than `limit` requests costs the pusher
/// a usleep of `sleep_ns` (plus slack) and the push after it is skipped;
/// below the limit the push goes ahead.
#[test]
fn req_backoff_skips_the_push_to_a_full_queue() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd, false);
    let q = e.add_req_queue();
    let f = e.add_futex();
    let mut p = vec![Op::Loop(5)];
    p.extend([
        Op::ReqBackoff {
            queue: q,
            limit: 2,
            sleep_ns: 100_000,
        },
        Op::ReqPush {
            queue: q,
            worker: TaskId(0),
            futex: f,
            var: 0,
            metric: 0,
        },
    ]);
    p.extend([Op::EndLoop, Op::Mark(0), Op::Exit]);
    // nobody takes: pushes at 0, 1 and 2 pending go in, then two back-offs
    e.add_task(task(p, 1));
    e.run().unwrap();
    assert_eq!(e.req_pending(q), 3);
    assert_eq!(e.all_samples()[0].len(), 3);
    assert_eq!(e.mark(0), Some(2 * (100 * US + 50 * US)));
}
