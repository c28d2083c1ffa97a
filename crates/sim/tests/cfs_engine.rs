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

/// One sender and one receiver on a socket pair on one CPU (`sim
/// hackbench -T -g 1 -f 1 -l 20000 --cpus 0`): under a CFS profile the woken
/// receiver is within the wake-up granularity of the sender and does not
/// pre-empt it, so the sender fills the socket buffer before the receiver
/// runs (a switch per ~hundred messages); under EEVDF the eligible
/// receiver with the earlier deadline runs as soon as the sender's
/// protection ends (a switch every few messages). The same profile with `fair_class` switched
/// gives the other class's figure exactly: the class alone decides.
#[test]
fn a_socket_ping_pong_on_one_cpu_batches_under_cfs_and_not_under_eevdf() {
    use sim::placement::linux::Features;
    let topo = topology::preset("kunpeng920-node").unwrap();
    let hb = Hackbench {
        groups: 1,
        fds: 1,
        loops: 20_000,
        pipe: false,
        threads: true,
        ..Default::default()
    };
    let run = |kernel: &str, class: Option<&str>| {
        let mut f = Features::kernel(kernel).unwrap();
        if let Some(c) = class {
            f.set("fair_class", c).unwrap();
        }
        let opt = SimOptions {
            policy: PolicyChoice::Linux(Box::new(f)),
            cpus: Some(CpuMask::from_cpus([0])),
            check: true,
            ..Default::default()
        };
        let r = simulate_hackbench(&topo, &hb, &opt).unwrap();
        r.counters.context_switches as f64 / r.counters.messages as f64
    };
    let cfs = run("linux-5.12", None);
    let eevdf = run("linux-6.6", None);
    assert!(cfs < 0.02, "CFS: {cfs} switches a message");
    assert!(eevdf > 0.2, "EEVDF: {eevdf} switches a message");
    assert_eq!(run("linux-5.12", Some("eevdf")), eevdf);
    assert_eq!(run("linux-6.6", Some("cfs")), cfs);
}
