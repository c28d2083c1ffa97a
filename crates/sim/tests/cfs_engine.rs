//! CFS run queues (`sim::cfs`) inside the engine: whole runs with every
//! CPU's queue configured for CFS (`EevdfParams::class`), under the
//! invariant checker (`check`: a broken invariant fails the run), end with
//! every message delivered; CPU-bound tasks sharing a CPU take turns.

use sim::eevdf::{EevdfParams, FairClass};
use sim::run::{simulate_hackbench, simulate_spin, PolicyChoice, SimOptions};
use sim::workload::hackbench::Hackbench;
use sim::workload::spin::Spin;
use topology::CpuMask;

/// Options for a checked run whose run queues follow `class`. The placement
/// is sched_ext's built-in one, whose runs take the fair class from
/// `SimOptions::eevdf` (a Linux profile brings its own).
fn opts(class: FairClass, cpus: Option<&[usize]>) -> SimOptions {
    SimOptions {
        policy: PolicyChoice::ScxDefault,
        eevdf: EevdfParams {
            class,
            ..EevdfParams::default()
        },
        cpus: cpus.map(|c| CpuMask::from_cpus(c.iter().copied())),
        check: true,
        ..Default::default()
    }
}

/// hackbench, threads and processes, pipes and sockets, on 8 CPUs and on
/// one: every byte written, the run checked throughout.
#[test]
fn hackbench_runs_to_the_end_on_cfs_queues() {
    let topo = topology::preset("kvm-8vcpu").unwrap();
    for (pipe, threads) in [(true, true), (false, false), (true, false)] {
        for cpus in [None, Some(&[0usize][..])] {
            let hb = Hackbench {
                groups: 2,
                fds: 4,
                loops: 50,
                pipe,
                threads,
                ..Default::default()
            };
            let r = simulate_hackbench(&topo, &hb, &opts(FairClass::Cfs, cpus)).unwrap();
            assert_eq!(r.counters.bytes_written, hb.total_bytes());
            assert!(r.time_ns > 0);
        }
    }
}

/// Three CPU-bound tasks of 200 ms on one CPU: the tick (250 Hz here)
/// preempts each once it has run its slice (24 ms / 3 = 8 ms), at the tick
/// after it, so they take turns of 12 ms, about 50 switches; run one after
/// the other they would switch twice.
#[test]
fn cpu_bound_tasks_on_one_cpu_take_turns() {
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let sp = Spin {
        tasks: 3,
        work_ns: 200_000_000,
        mem_mib: 0,
    };
    let r = simulate_spin(&topo, &sp, &opts(FairClass::Cfs, Some(&[0]))).unwrap();
    let switches = r.counters.context_switches;
    assert!((40..=60).contains(&switches), "{switches} switches");
    assert!(r.sim_ns >= 600_000_000);
}
