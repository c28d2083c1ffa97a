//! EEVDF's DELAY_DEQUEUE (Linux 6.12, with DELAY_ZERO and ENQUEUE_DELAYED)
//! behind `--feature delay_dequeue=on`: a task that blocks while not
//! eligible stays queued, keeps its vruntime and is woken in place.
//!
//! The case that shows it is one sender and one receiver on one CPU over a
//! unix socket (`hackbench -T -g 1 -f 1`). Under 6.6's rules the receiver
//! carries a positive lag across each sleep and pre-empts the sender at
//! every write, one message per switch, for tens of messages at a time.
//! Under 6.12's the sender's lead is paid off while it sleeps delayed, so
//! the two run in long phases. On a 6.18 kernel (the development VM,
//! `perf record -e sched:sched_switch`, docs/fair-class.md) the run takes 780 to
//! 1,365 switches for 80,000 messages.

use sim::placement::linux::Features;
use sim::run::{simulate_hackbench, PolicyChoice, SimOptions};
use sim::workload::hackbench::Hackbench;
use topology::CpuMask;

fn run(delay_dequeue: bool, hb: &Hackbench, cpus: &[usize], seed: u64) -> sim::run::SimResult {
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let mut f = Features::kernel("latest").unwrap();
    f.fair.delay_dequeue = delay_dequeue;
    let opt = SimOptions {
        policy: PolicyChoice::Linux(Box::new(f)),
        cpus: Some(CpuMask::from_cpus(cpus.iter().copied())),
        check: true,
        seed,
        ..Default::default()
    };
    simulate_hackbench(&topo, hb, &opt).unwrap()
}

fn pair(loops: u32) -> Hackbench {
    Hackbench {
        groups: 1,
        fds: 1,
        loops,
        threads: true,
        ..Default::default()
    }
}

/// One CPU, one socket pair, 20,000 messages: the one-message ping-pong of
/// 6.6's rules gives several thousand switches, DELAY_DEQUEUE a few hundred
/// at most (the phases end when the sender's socket buffer fills).
#[test]
fn a_socket_pair_on_one_cpu_alternates_in_phases_with_delay_dequeue() {
    let hb = pair(20_000);
    let old = run(false, &hb, &[0], 1).counters.context_switches;
    let new = run(true, &hb, &[0], 1).counters.context_switches;
    assert!(old > 2_000, "6.6 rules: {old} switches");
    assert!(new < 400, "DELAY_DEQUEUE: {new} switches");
    assert!(new * 10 < old, "{new} against {old}");
}

/// The invariant checker (`check: true`: a broken invariant fails the run)
/// accepts delayed tasks on eight CPUs, with sockets and pipes, threads and
/// processes and the load balancer running, and every run ends (every
/// message delivered, every task exited).
#[test]
fn delayed_sleepers_keep_the_invariants_on_many_cpus() {
    let mut in_place = 0;
    for (pipe, threads) in [(true, true), (false, false), (false, true)] {
        let hb = Hackbench {
            groups: 4,
            loops: 40,
            pipe,
            threads,
            ..Default::default()
        };
        for seed in 1..=3 {
            let r = run(true, &hb, &[0, 1, 2, 3, 4, 5, 6, 7], seed);
            assert!(r.time_ns > 0);
            assert!(r.counters.wakeups > 0);
            in_place += r.counters.wakeups_in_place;
        }
    }
    // the runs did exercise delayed tasks
    assert!(in_place > 100, "{in_place} wake-ups in place");
}
