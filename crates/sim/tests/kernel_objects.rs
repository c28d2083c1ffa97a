//! The kernel objects of the futex, wake-list and idle paths in whole runs
//! (crates/sim/src/kernel/objects.rs): each is moved by the runs that use
//! its path, at the distances the placement gives, and the wake list
//! follows the profile's ttwu_queue rule.

use sim::cacheline::LineKind;
use sim::placement::linux::Features;
use sim::run::{simulate_hackbench, simulate_schbench, PolicyChoice, SimOptions, SimResult};
use sim::workload::hackbench::Hackbench;

fn opts(kernel: &str, overrides: &[(&str, &str)]) -> SimOptions {
    let mut f = Features::kernel(kernel).unwrap();
    for (k, v) in overrides {
        f.set(k, v).unwrap();
    }
    SimOptions {
        policy: PolicyChoice::Linux(Box::new(f)),
        ..Default::default()
    }
}

fn moved(r: &SimResult, kind: LineKind) -> u64 {
    r.counters.line_transfers_by.0[kind as usize].iter().sum()
}

fn hackbench(machine: &str, kernel: &str, overrides: &[(&str, &str)]) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let hb = Hackbench {
        groups: 4,
        loops: 100,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    simulate_hackbench(&topo, &hb, &opts(kernel, overrides)).unwrap()
}

#[test]
fn schbench_moves_futex_buckets_and_futex_q_lines() {
    let topo = topology::preset("epyc-zen3").unwrap();
    let mut s = sim::workload::schbench::SchbenchSim::new_version();
    s.bench.message_threads = 2;
    s.bench.worker_threads = Some(8);
    s.bench.runtime = 1;
    let r = simulate_schbench(&topo, &s, &opts("linux-6.1", &[])).unwrap();
    assert!(moved(&r, LineKind::FutexHashBucket) > 0);
    assert!(moved(&r, LineKind::FutexQ) > 0);
    // the message threads wake idle CPUs: their idle tasks' flags move
    assert!(moved(&r, LineKind::IdleThreadInfo) > 0);
}

#[test]
fn the_wake_list_moves_only_under_its_rule() {
    // two LLCs (Kunpeng 920: one per die): wake-ups between them queue
    let cross = hackbench("kunpeng920", "linux-5.10", &[]);
    assert!(moved(&cross, LineKind::WakeList) > 0);
    let off = hackbench("kunpeng920", "linux-5.10", &[("ttwu_queue", "off")]);
    assert_eq!(moved(&off, LineKind::WakeList), 0);
    // one LLC: 5.10 never queues; 6.1 queues wake-ups of idle CPUs
    let one_llc_old = hackbench("kunpeng920-node", "linux-5.10", &[]);
    assert_eq!(moved(&one_llc_old, LineKind::WakeList), 0);
    let one_llc_new = hackbench(
        "kunpeng920-node",
        "linux-5.10",
        &[("ttwu_queue", "cross-llc-or-idle")],
    );
    assert!(moved(&one_llc_new, LineKind::WakeList) > 0);
    // hackbench takes no futex
    assert_eq!(moved(&cross, LineKind::FutexHashBucket), 0);
}
