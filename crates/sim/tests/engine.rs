//! Engine-level tests: invariants on every workload variant, blocking and
//! wake-up on full and empty channels, determinism.

use sim::channel::ChanKind;
use sim::costs::MachineCosts;
use sim::engine::{Engine, EngineConfig};
use sim::placement::scx::ScxDefault;
use sim::run::{simulate_hackbench, SimOptions};
use sim::task::{ChanId, Op, TaskSpec};
use sim::workload::hackbench::Hackbench;
use topology::{DomainOptions, SchedDomains};

#[test]
fn invariants_hold_on_every_hackbench_variant() {
    for machine in ["kunpeng920-node", "power9-smt8", "xeon-12c24t"] {
        let topo = topology::preset(machine).unwrap();
        for pipe in [false, true] {
            for threads in [false, true] {
                let hb = Hackbench {
                    groups: 2,
                    fds: 5,
                    loops: 40,
                    pipe,
                    threads,
                    ..Default::default()
                };
                let r = simulate_hackbench(
                    &topo,
                    &hb,
                    &SimOptions {
                        check: true,
                        ..Default::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{machine} pipe={pipe} threads={threads}: {e}"));
                assert_eq!(r.counters.bytes_written, hb.total_bytes(), "{machine}");
                assert_eq!(r.counters.bytes_read, hb.total_bytes(), "{machine}");
                assert_eq!(r.counters.messages, (2 * 5 * 5 * 40) as u64);
                for c in &r.cpus {
                    assert_eq!(c.busy_ns + c.idle_ns, r.sim_ns, "{machine} cpu {}", c.cpu);
                }
                assert!(r.time_ns > 0 && r.time_ns <= r.sim_ns);
                let stages: u64 = r.placement.stages.values().sum();
                // every wakeup (and every fork) was placed exactly once,
                // but for a delayed task's, woken where it is queued
                assert_eq!(stages + r.counters.wakeups_in_place, r.counters.wakeups);
            }
        }
    }
}

#[test]
fn same_seed_same_result_and_cpu_restriction_is_honoured() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let hb = Hackbench {
        groups: 2,
        loops: 30,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    let a = simulate_hackbench(&topo, &hb, &SimOptions::default()).unwrap();
    let b = simulate_hackbench(&topo, &hb, &SimOptions::default()).unwrap();
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let cpus = topology::CpuMask::parse_list("4-7").unwrap();
    let r = simulate_hackbench(
        &topo,
        &hb,
        &SimOptions {
            cpus: Some(cpus.clone()),
            check: true,
            ..Default::default()
        },
    )
    .unwrap();
    for c in &r.cpus {
        if !cpus.test(c.cpu) {
            // it may balance for others (nohz idle balance), never run a task
            assert_eq!(
                c.context_switches, 0,
                "cpu {} outside --cpus ran a task",
                c.cpu
            );
        }
    }
    assert!(
        r.time_ns > a.time_ns,
        "4 CPUs ({}) should be slower than 24 ({})",
        r.time_ns,
        a.time_ns
    );
}

/// Two tasks on one machine with a custom program; returns the engine after
/// the run for inspection of marks.
fn two_tasks(kind: ChanKind, a: Vec<Op>, b: Vec<Op>) -> (Option<u64>, Option<u64>, u64) {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let cfg = EngineConfig::checked(topo.all_cpus().clone());
    let mut e: Engine = Engine::new(
        &topo,
        &sd,
        MachineCosts::for_machine("kunpeng920-node"),
        cfg,
        Box::new(ScxDefault),
    );
    let ch = e.add_channel(kind, true);
    let fix = |p: Vec<Op>| -> Vec<Op> {
        p.into_iter()
            .map(|op| match op {
                Op::Write { bytes, .. } => Op::Write { chan: ch, bytes },
                Op::Read { bytes, .. } => Op::Read { chan: ch, bytes },
                o => o,
            })
            .collect()
    };
    for (name, p) in [("a", fix(a)), ("b", fix(b))] {
        e.add_task(TaskSpec {
            name: name.into(),
            program: p.into(),
            mm: 0,
            parent: None,
            spawned: false,
            start_cpu: None,
            nice: 0,
            footprint_lines: 1,
        });
    }
    e.run().unwrap();
    assert_eq!(e.live_tasks(), 0);
    let (w, r) = e.channel_bytes();
    assert_eq!(w, r);
    (e.mark(0), e.mark(1), w)
}

const MS: u64 = 1_000_000;

/// A writer sends `n` messages of `bytes` at once; the reader sleeps 5 ms
/// first, then reads them. Returns (writer done, reader started, bytes).
fn producer_consumer(kind: ChanKind, n: u32, bytes: u32) -> (u64, u64, u64) {
    let writer = vec![
        Op::Loop(n),
        Op::Write {
            chan: ChanId(0),
            bytes,
        },
        Op::EndLoop,
        Op::Mark(0),
        Op::Exit,
    ];
    let reader = vec![
        Op::Sleep(5 * MS),
        Op::Mark(1),
        Op::Loop(n),
        Op::Read {
            chan: ChanId(0),
            bytes,
        },
        Op::EndLoop,
        Op::Exit,
    ];
    let (w_done, r_start, total) = two_tasks(kind, writer, reader);
    (w_done.unwrap(), r_start.unwrap(), total)
}

#[test]
fn full_pipe_blocks_the_writer_until_the_reader_drains() {
    // 20 pages do not fit the 16-page pipe: the writer blocks until the
    // reader, asleep for 5 ms, starts reading.
    let (w_done, r_start, bytes) = producer_consumer(ChanKind::Pipe, 20, 4096);
    assert_eq!(bytes, 20 * 4096);
    assert!(
        w_done > r_start,
        "writer finished at {w_done} before the reader started at {r_start}"
    );
    // 16 pages fit: no blocking, the writer is done long before 5 ms.
    let (w_done, r_start, _) = producer_consumer(ChanKind::Pipe, 16, 4096);
    assert!(w_done < r_start);
}

#[test]
fn empty_channel_blocks_the_reader_until_a_write() {
    for kind in [ChanKind::Pipe, ChanKind::UnixStream] {
        let writer = vec![
            Op::Sleep(3 * MS),
            Op::Mark(0),
            Op::Write {
                chan: ChanId(0),
                bytes: 100,
            },
            Op::Exit,
        ];
        let reader = vec![
            Op::Read {
                chan: ChanId(0),
                bytes: 100,
            },
            Op::Mark(1),
            Op::Exit,
        ];
        let (w_start, r_done, bytes) = two_tasks(kind, writer, reader);
        assert_eq!(bytes, 100);
        assert!(
            r_done.unwrap() > w_start.unwrap(),
            "{kind:?}: reader returned before the write"
        );
        assert!(r_done.unwrap() >= 3 * MS);
    }
}

#[test]
fn socket_send_buffer_blocks_the_sender() {
    // 300 messages of 100 B exceed the 212992-byte sndbuf (278 skbs of 768).
    let (w_done, r_start, _) = producer_consumer(ChanKind::UnixStream, 300, 100);
    assert!(w_done > r_start);
    let (w_done, r_start, _) = producer_consumer(ChanKind::UnixStream, 270, 100);
    assert!(w_done < r_start);
}

#[test]
fn compute_takes_its_time_and_two_tasks_share_a_cpu() {
    // One CPU allowed: two 10 ms compute tasks take 20 ms in total.
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let cfg = EngineConfig::checked(topology::CpuMask::from_cpus([3]));
    let mut e: Engine = Engine::new(
        &topo,
        &sd,
        MachineCosts::for_machine("kunpeng920-node").zeroed(),
        cfg,
        Box::new(ScxDefault),
    );
    for m in 0..2 {
        e.add_task(TaskSpec {
            name: "spin".into(),
            program: vec![Op::Compute(10 * MS), Op::Mark(m), Op::Exit].into(),
            mm: 0,
            parent: None,
            spawned: false,
            start_cpu: None,
            nice: 0,
            footprint_lines: 0,
        });
    }
    e.run().unwrap();
    let (a, b) = (e.mark(0).unwrap(), e.mark(1).unwrap());
    assert_eq!(a.max(b), 20 * MS);
    // EEVDF time-slices them (3 ms slices, 4 ms ticks): neither finishes
    // before the other has run more than one slice.
    assert!(a.min(b) > 10 * MS, "{a} {b}");
    assert_eq!(e.cpu_times()[3].0, 20 * MS);
}

fn engine_on<'a>(
    topo: &'a topology::Topology,
    sd: &'a SchedDomains,
    cpus: &[usize],
    costs: MachineCosts,
) -> Engine<'a> {
    let cfg = EngineConfig::checked(topology::CpuMask::from_cpus(cpus.iter().copied()));
    Engine::new(topo, sd, costs, cfg, Box::new(ScxDefault))
}

fn spec(program: Vec<Op>) -> TaskSpec {
    TaskSpec {
        name: "t".into(),
        program: program.into(),
        mm: 0,
        parent: None,
        spawned: false,
        start_cpu: None,
        nice: 0,
        footprint_lines: 0,
    }
}

/// SMT siblings slow each other down and segments are re-timed whenever
/// the core's busy count changes: the work performed must still equal the
/// work the programs asked for (none lost, none repeated).
#[test]
fn smt_retiming_conserves_work() {
    let topo = topology::preset("xeon-12c24t").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let mut e = engine_on(
        &topo,
        &sd,
        &[0, 12],
        MachineCosts::for_machine("xeon-12c24t"),
    );
    for _ in 0..3 {
        e.add_task(spec(vec![Op::Compute(30 * MS), Op::Exit]));
    }
    e.add_task(spec(vec![
        Op::Loop(20),
        Op::Compute(MS / 2),
        Op::Sleep(MS / 2),
        Op::EndLoop,
        Op::Exit,
    ]));
    e.run().unwrap();
    assert_eq!(e.counters.compute_work_ns, 3 * 30 * MS + 20 * MS / 2);
    // two busy siblings run at 0.65 each: 100 ms of work needs > 100/2 ms
    assert!(e.now() > 100 * MS / 2);
}

/// PELT follows what the task did: 1 ms of compute per 10 ms gives load
/// and utilisation of about a tenth of the scale, not the sleeping time.
#[test]
fn pelt_tracks_running_not_sleeping() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let mut e = engine_on(
        &topo,
        &sd,
        &[0],
        MachineCosts::for_machine("kunpeng920-node").zeroed(),
    );
    let t = e.add_task(spec(vec![
        Op::Loop(100),
        Op::Compute(MS),
        Op::Sleep(9 * MS),
        Op::EndLoop,
        Op::Exit,
    ]));
    e.run().unwrap();
    let (load, util) = e.task_signals(t);
    assert!((60..160).contains(&util), "util {util}");
    assert!((60..160).contains(&load), "load {load}");
}

/// Every built-in machine (SMT8, clusters, a one-CPU LLC, 224 CPUs, ...)
/// runs both policies with the invariants checked.
#[test]
fn every_preset_runs_both_policies_with_checks() {
    use sim::run::PolicyChoice;
    let hb = Hackbench {
        groups: 2,
        fds: 5,
        loops: 30,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    for &(name, _) in topology::presets() {
        if name == "host" {
            continue; // depends on the machine running the tests
        }
        let topo = topology::preset(name).unwrap();
        for policy in [PolicyChoice::default(), PolicyChoice::ScxDefault] {
            let opt = SimOptions {
                check: true,
                policy,
                ..Default::default()
            };
            let r = simulate_hackbench(&topo, &hb, &opt).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(r.counters.bytes_read, hb.total_bytes(), "{name}");
        }
    }
}
