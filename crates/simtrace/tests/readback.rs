//! A written trace, decoded again, holds as many switches, wake-ups and
//! migrations as the run's own counters say; tracing changes no decision;
//! a window keeps only its events.

use sim::run::{simulate_hackbench, simulate_spin, SimOptions, SimResult};
use sim::trace::TraceSlot;
use sim::workload::hackbench::Hackbench;
use simtrace::read::{summarize, Summary};
use simtrace::{PerfettoWriter, Window};
use std::path::Path;

fn traced<F>(path: &Path, window: Window, run: F) -> (SimResult, Summary, u64)
where
    F: FnOnce(&SimOptions) -> SimResult,
{
    let w = PerfettoWriter::create(path, window).unwrap();
    let slot = TraceSlot::new(Box::new(w));
    let opt = SimOptions {
        trace: Some(slot.clone()),
        ..Default::default()
    };
    let r = run(&opt);
    let w = slot
        .take()
        .expect("the run gives the sink back")
        .into_any()
        .downcast::<PerfettoWriter>()
        .unwrap();
    let stats = w.finish().unwrap();
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(stats.bytes, bytes.len() as u64);
    (r, summarize(&bytes).unwrap(), stats.bytes)
}

fn hb(groups: u32, loops: u32) -> Hackbench {
    Hackbench {
        groups,
        loops,
        ..Default::default()
    }
}

#[test]
fn hackbench_trace_counts_match_the_runs_counters() {
    let dir = tempfile::tempdir().unwrap();
    let topo = topology::preset("kunpeng920-node").unwrap();
    let path = dir.path().join("t.pftrace");
    let (r, s, _) = traced(&path, Window::default(), |o| {
        simulate_hackbench(&topo, &hb(2, 100), o).unwrap()
    });
    let c = &r.counters;
    assert!(c.context_switches > 1000, "{c:?}");
    assert_eq!(s.switches_to_task, c.context_switches);
    assert_eq!(s.wakeup + s.wakeup_new, c.wakeups);
    // every try_to_wake_up that placed a task began with sched_waking
    assert_eq!(s.waking, s.wakeup);
    // sched_migrate_task: wake-up and balancer moves; a fork placement
    // moves silently (__set_task_cpu), as in the kernel
    let balance_moved = r.balance.stats.moved;
    assert_eq!(s.migrate + s.fork_moves, c.migrations + balance_moved);
    assert_eq!(s.balance_moves, balance_moved);
    // one placement instant per wake-up (a delayed task's is woken where it
    // is queued, without one), its stage as the summary counts
    assert_eq!(s.woken_in_place, c.wakeups_in_place);
    assert!(s.woken_in_place > 0, "latest has delayed dequeue");
    assert_eq!(
        s.placements.values().sum::<u64>() + s.woken_in_place,
        c.wakeups
    );
    for (stage, n) in &r.placement.stages {
        assert_eq!(s.stages.get(stage), Some(n), "stage {stage}");
    }
    // every idle exit follows an entry; the CPUs leave idle as the engine
    // counts (kicked and polled wake-ups)
    // (each CPU's boot in idle is an entry at time 0)
    assert!(s.idle_enter >= s.idle_exit && s.idle_exit > 0, "{s:?}");
    assert_eq!(s.out_of_order, 0);
    assert_eq!(s.last_ts, Some(s.last_ts.unwrap().min(r.sim_ns)));
    // counters: one run-queue track per CPU that ran anything
    assert!(
        s.counters.keys().any(|k| k == "CPU 0 nr_running"),
        "{:?}",
        s.counters
    );
}

#[test]
fn tracing_changes_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    let topo = topology::preset("kunpeng920-node").unwrap();
    let plain = simulate_hackbench(&topo, &hb(2, 50), &SimOptions::default()).unwrap();
    let (r, _, _) = traced(&dir.path().join("a.pftrace"), Window::default(), |o| {
        simulate_hackbench(&topo, &hb(2, 50), o).unwrap()
    });
    assert_eq!(r.placement, plain.placement);
    assert_eq!(r.time_ns, plain.time_ns);
    assert_eq!(r.sim_ns, plain.sim_ns);
    assert_eq!(r.counters.events, plain.counters.events);
}

#[test]
fn the_same_run_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let topo = topology::preset("kunpeng920-node").unwrap();
    let run = |name: &str| {
        let p = dir.path().join(name);
        traced(&p, Window::default(), |o| {
            simulate_hackbench(&topo, &hb(1, 20), o).unwrap()
        });
        std::fs::read(p).unwrap()
    };
    assert_eq!(run("a.pftrace"), run("b.pftrace"));
}

#[test]
fn a_window_keeps_only_its_events_and_the_counters_at_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let topo = topology::preset("kunpeng920-node").unwrap();
    let (full_r, full, full_bytes) =
        traced(&dir.path().join("f.pftrace"), Window::default(), |o| {
            simulate_hackbench(&topo, &hb(2, 100), o).unwrap()
        });
    let mid = full_r.sim_ns / 2;
    let window = Window {
        from: mid,
        to: mid + full_r.sim_ns / 10,
    };
    let (_, part, part_bytes) = traced(&dir.path().join("w.pftrace"), window, |o| {
        simulate_hackbench(&topo, &hb(2, 100), o).unwrap()
    });
    assert!(part.first_ts.unwrap() >= window.from);
    assert!(part.last_ts.unwrap() < window.to);
    assert!(part.switches_to_task > 0 && part_bytes < full_bytes);
    // the windows before and after it hold the rest of the run's switches:
    // every switch is in exactly one of the three
    let before = Window {
        from: 0,
        to: window.from,
    };
    let after = Window {
        from: window.to,
        to: u64::MAX,
    };
    let count = |name: &str, w: Window| {
        traced(&dir.path().join(name), w, |o| {
            simulate_hackbench(&topo, &hb(2, 100), o).unwrap()
        })
        .1
        .switches_to_task
    };
    let (b, a) = (count("b.pftrace", before), count("a.pftrace", after));
    assert!(b > 0 && a > 0);
    assert_eq!(
        b + part.switches_to_task + a,
        full.switches_to_task,
        "{b} + {} + {a}",
        part.switches_to_task
    );
    // each CPU's run-queue length is stated at the window's start
    assert!(part.counters.len() >= topo.nr_cpus());
}

#[test]
fn balancer_moves_and_the_stopper_show() {
    // spin: every task starts on one CPU, only the balancer spreads them
    let dir = tempfile::tempdir().unwrap();
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sp = sim::workload::spin::Spin {
        tasks: 8,
        work_ns: 20_000_000,
        mem_mib: 0,
    };
    let (r, s, _) = traced(&dir.path().join("s.pftrace"), Window::default(), |o| {
        simulate_spin(&topo, &sp, o).unwrap()
    });
    assert!(r.balance.stats.moved > 0);
    assert_eq!(s.balance_moves, r.balance.stats.moved);
    assert_eq!(s.switches_to_task, r.counters.context_switches);
    assert!(
        s.counters.keys().any(|k| k.ends_with("nr_idle_scan")),
        "{:?}",
        s.counters
    );
}

mod invariants {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

        /// Whatever the run, its trace holds one switch per context switch,
        /// one wake-up event per wake-up, and every migration.
        #[test]
        fn trace_counts_equal_the_counters(
            groups in 1u32..4,
            loops in 1u32..40,
            seed in 0u64..1000,
            pipe in any::<bool>(),
            threads in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let topo = topology::preset("kunpeng920-node").unwrap();
            let h = Hackbench { groups, loops, pipe, threads, ..Default::default() };
            let (r, s, _) = traced(&dir.path().join("p.pftrace"), Window::default(), |o| {
                let o = SimOptions { seed, ..o.clone() };
                simulate_hackbench(&topo, &h, &o).unwrap()
            });
            let c = &r.counters;
            prop_assert_eq!(s.switches_to_task, c.context_switches);
            prop_assert_eq!(s.wakeup + s.wakeup_new, c.wakeups);
            prop_assert_eq!(s.waking, s.wakeup);
            prop_assert_eq!(s.migrate + s.fork_moves, c.migrations + r.balance.stats.moved);
            prop_assert_eq!(s.out_of_order, 0);
        }
    }
}
