//! Memory placement and automatic NUMA balancing through the engine, on
//! the two-node xeon-12c24t preset (SLIT 10/20): the remote-memory
//! slowdown, balancing raising the local fault share, `off` leaving pages
//! alone, the 4.19 stagger of first scans, and the counters' consistency.

use sim::balance::linux::{LbFeatures, LinuxBalancer};
use sim::costs::MachineCosts;
use sim::engine::{Engine, EngineConfig};
use sim::numa::balancing::{stagger_delay, StaggerUnits};
use sim::numa::{MemPolicy, NumaCounters, NumaFeatures, NumaParams, Span};
use sim::placement::linux::{Features, LinuxPlacement};
use sim::task::{Op, TaskSpec};
use topology::{CpuMask, DomainOptions, SchedDomains, Topology};

const MS: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

fn machine() -> (Topology, SchedDomains) {
    let topo = topology::preset("xeon-12c24t").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    (topo, sd)
}

fn engine<'t>(topo: &'t Topology, sd: &'t SchedDomains) -> Engine<'t> {
    let mut cfg = EngineConfig::checked(topo.all_cpus().clone());
    cfg.time_limit = 600_000 * MS;
    let f = Features::kernel("linux-6.6").unwrap();
    let mut e: Engine = Engine::new(
        topo,
        sd,
        MachineCosts::for_machine(topo.name()),
        cfg,
        Box::new(LinuxPlacement::new(f)),
    );
    e.set_balancer(Box::new(LinuxBalancer::new(LbFeatures::for_version((
        6, 6,
    )))));
    e
}

fn spec(name: &str, program: Vec<Op>, mm: u32, cpu: usize, spawned: bool) -> TaskSpec {
    TaskSpec {
        name: name.into(),
        program: program.into(),
        mm,
        parent: None,
        spawned,
        start_cpu: Some(cpu),
        nice: 0,
        footprint_lines: 0,
    }
}

fn numa(enabled: bool) -> NumaParams {
    NumaParams {
        enabled,
        ..Default::default()
    }
}

/// One task on CPU 0 (node 0) streams 256 MiB that a membind policy put on
/// `node`; returns the run's time.
fn stream_time(node: u16, work: u64) -> u64 {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd);
    let r = e.add_region(1, "a", 256 * MIB);
    let a = e.add_access(&[Span {
        region: r,
        offset: 0,
        len: 256 * MIB,
        bytes: 256 * MIB,
        sweeps: 1,
    }]);
    e.add_task(spec(
        "s",
        vec![Op::ComputeMem { work, access: a }, Op::Exit],
        1,
        0,
        false,
    ));
    e.set_numa(
        numa(false),
        NumaFeatures::default(),
        MemPolicy::Bind(vec![node]),
    );
    e.run().unwrap();
    let c = e.numa_counters().unwrap();
    assert_eq!(c.numa_local + c.numa_other, 256 * MIB / 4096);
    e.now()
}

/// Memory on the other node costs its SLIT distance over the local one:
/// pure streaming runs 20/10 = 2x as long; with CPU work W alongside, the
/// time is W + 2M against W + M.
#[test]
fn remote_memory_runs_slower_by_the_distance() {
    let local = stream_time(0, 0);
    let remote = stream_time(1, 0);
    let ps = MachineCosts::for_machine("xeon-12c24t").mem_ps_per_byte;
    let m = 256 * MIB * ps / 1000;
    // the run also spans thread start and exit: a few tens of us
    assert!(local.abs_diff(m) < 200_000, "local {local} vs M {m}");
    let ratio = (remote - (local - m)) as f64 / m as f64;
    assert!((ratio - 2.0).abs() < 0.01, "remote/local streaming {ratio}");
    let w = 30 * MS;
    let (l, r) = (stream_time(0, w), stream_time(1, w));
    let expect = (w + 2 * m) as f64 / (w + m) as f64;
    let got = (r - (l - w - m)) as f64 / (w + m) as f64;
    assert!((got - expect).abs() < 0.01, "{got} vs {expect}");
}

/// A thread on node 0 first-touches 512 MiB and exits; a second thread of
/// the process, pinned to node 1, then streams it for `secs` seconds in
/// 10 ms steps. Returns the counters and the pages on each node.
fn remote_worker(enabled: bool, secs: u64, pinned: bool) -> (NumaCounters, Vec<u64>, usize) {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd);
    let r = e.add_region(1, "a", 512 * MIB);
    let all = e.add_access(&[Span {
        region: r,
        offset: 0,
        len: 512 * MIB,
        bytes: 512 * MIB,
        sweeps: 1,
    }]);
    // 10 ms of work touching a 1/8 slice of the array at a time
    let slices: Vec<_> = (0..8)
        .map(|i| {
            e.add_access(&[Span {
                region: r,
                offset: i * 64 * MIB,
                len: 64 * MIB,
                bytes: 8 * MIB,
                sweeps: 1,
            }])
        })
        .collect();
    let mut worker = Vec::new();
    let steps = secs * 100 / 8;
    worker.push(Op::Loop(steps as u32));
    for &a in &slices {
        worker.push(Op::ComputeMem {
            work: 10 * MS,
            access: a,
        });
    }
    worker.push(Op::EndLoop);
    worker.push(Op::Exit);
    let w = e.add_task(spec("worker", worker, 1, 1, true));
    let init = vec![
        Op::ComputeMem {
            work: 0,
            access: all,
        },
        Op::Spawn { child: w },
        Op::Join { task: w },
        Op::Exit,
    ];
    let i = e.add_task(spec("init", init, 1, 0, false));
    e.set_cpus_allowed(i, &topo.node_cpus(0).clone());
    let node1: CpuMask = topo.node_cpus(1).clone();
    if pinned {
        e.set_cpus_allowed(w, &node1);
    }
    e.set_numa(numa(enabled), NumaFeatures::default(), MemPolicy::Local);
    e.run().unwrap();
    let node = topo.place(e.task_cpu(w)).node;
    (e.numa_counters().unwrap(), e.pages_per_node(), node)
}

fn local_share(c: &NumaCounters) -> f64 {
    c.numa_hint_faults_local as f64 / c.numa_hint_faults.max(1) as f64
}

/// Balancing on: the pinned worker's remote pages are marked, fault and
/// migrate to node 1, so the local share of its faults rises with time
/// and most pages end on node 1. Off: no scan, no fault, every page stays
/// on node 0.
#[test]
fn balancing_raises_the_local_fault_share_and_off_leaves_pages() {
    let (short, _, _) = remote_worker(true, 6, true);
    let (long, pages, _) = remote_worker(true, 30, true);
    assert!(
        short.numa_hint_faults > 0 && short.numa_pages_migrated > 0,
        "{short:?}"
    );
    assert!(
        local_share(&long) > local_share(&short),
        "local share {:.3} after 30 s vs {:.3} after 6 s",
        local_share(&long),
        local_share(&short)
    );
    assert!(pages[1] > pages[0], "pages per node {pages:?}");
    check_consistent(&long);
    let (off, pages, _) = remote_worker(false, 6, true);
    assert_eq!(
        (
            off.numa_pte_updates,
            off.numa_hint_faults,
            off.numa_pages_migrated
        ),
        (0, 0, 0)
    );
    assert_eq!(pages, vec![512 * MIB / 4096, 0]);
}

/// Unpinned, the worker is on whichever node the balancers leave it; with
/// NUMA balancing its faults end up mostly local either way (pages came
/// to it, or it went to them).
#[test]
fn an_unpinned_worker_ends_local() {
    let (c, pages, node) = remote_worker(true, 30, false);
    let on_its_node = pages[node] as f64 / pages.iter().sum::<u64>() as f64;
    assert!(
        on_its_node > 0.5,
        "worker on node {node}, pages {pages:?}, {c:?}"
    );
    check_consistent(&c);
}

fn check_consistent(c: &NumaCounters) {
    assert!(c.numa_hint_faults <= c.numa_pte_updates, "{c:?}");
    assert!(c.numa_hint_faults_local <= c.numa_hint_faults, "{c:?}");
    assert!(c.numa_pages_migrated <= c.numa_hint_faults, "{c:?}");
}

/// Five threads of one process compute for 6 s each; the time of each
/// thread's first scan request (its runtime then) follows the stagger:
/// without it every thread asks after one scan delay of its own runtime;
/// with the fixed units thread k (k threads already in the mm when it was
/// created) waits min(scan max, k periods) + 2 ticks more; with the bug,
/// only the 2 ticks and the scan maximum read as ns.
#[test]
fn stagger_spreads_the_first_scans() {
    let first_scans = |stagger: bool, units: StaggerUnits| -> Vec<u64> {
        let (topo, sd) = machine();
        let mut e = engine(&topo, &sd);
        let r = e.add_region(1, "a", 64 * MIB);
        let a = e.add_access(&[Span {
            region: r,
            offset: 0,
            len: 64 * MIB,
            bytes: MIB,
            sweeps: 1,
        }]);
        let body = [
            Op::Loop(600),
            Op::ComputeMem {
                work: 10 * MS,
                access: a,
            },
            Op::EndLoop,
        ];
        // the threads compute without touching memory: a hinting fault
        // before a thread's first scan request would run its placement and
        // adapt its scan period (the mm's passes by then are the others')
        let kid_body = vec![Op::Loop(600), Op::Compute(10 * MS), Op::EndLoop, Op::Exit];
        let kids: Vec<_> = (0..4)
            .map(|k| e.add_task(spec(&format!("t{k}"), kid_body.clone(), 1, 2 + 2 * k, true)))
            .collect();
        let mut main = vec![];
        for &k in &kids {
            main.push(Op::Spawn { child: k });
        }
        main.extend(body[..3].iter().cloned());
        main.push(Op::EndLoop);
        for &k in &kids {
            main.push(Op::Join { task: k });
        }
        main.push(Op::Exit);
        let m = e.add_task(spec("main", main, 1, 0, false));
        let f = NumaFeatures {
            scan_stagger: stagger,
            stagger_units: units,
            ..Default::default()
        };
        e.set_numa(numa(true), f, MemPolicy::Local);
        e.run().unwrap();
        std::iter::once(m)
            .chain(kids)
            .map(|t| e.task_numa(t).unwrap().first_scan.unwrap().1)
            .collect()
    };
    let tick = 1_000_000_000 / MachineCosts::for_machine("xeon-12c24t").hz;
    let delay = 1000 * MS;
    // the first scan asks once runtime passes stamp + period (checked each
    // tick): within one tick after it
    let within = |got: u64, at: u64| got > at && got <= at + tick + MS;
    let off = first_scans(false, StaggerUnits::Bug);
    for (k, &s) in off.iter().enumerate() {
        assert!(within(s, delay), "thread {k}: {s} without stagger");
    }
    let fixed = first_scans(true, StaggerUnits::Fixed);
    assert!(within(fixed[0], delay), "main {}", fixed[0]);
    for (k, &s) in fixed.iter().enumerate().skip(1) {
        let st = stagger_delay(60000, 1000, k as u64, tick, StaggerUnits::Fixed);
        assert!(within(s, st + delay), "thread {k}: {s} vs {}", st + delay);
    }
    let bug = first_scans(true, StaggerUnits::Bug);
    for (k, &s) in bug.iter().enumerate().skip(1) {
        let st = stagger_delay(60000, 1000, k as u64, tick, StaggerUnits::Bug);
        assert!(within(s, st + delay), "thread {k}: {s} vs {}", st + delay);
    }
}

/// `n` tasks on distinct cores of node 0 (no SMT sharing) each stream
/// 64 MiB bound to node 0 at once; returns the run's time.
fn parallel_stream(n: usize) -> u64 {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd);
    for i in 0..n {
        let mm = i as u32 + 1;
        let r = e.add_region(mm, "a", 64 * MIB);
        let a = e.add_access(&[Span {
            region: r,
            offset: 0,
            len: 64 * MIB,
            bytes: 64 * MIB,
            sweeps: 1,
        }]);
        let t = e.add_task(spec(
            "s",
            vec![Op::ComputeMem { work: 0, access: a }, Op::Exit],
            mm,
            i,
            false,
        ));
        e.set_cpus_allowed(t, &CpuMask::from_cpus([i]));
    }
    e.set_numa(
        numa(false),
        NumaFeatures::default(),
        MemPolicy::Bind(vec![0]),
    );
    e.run().unwrap();
    e.now()
}

/// Streams share their node's bandwidth: one stream runs at the thread's
/// own rate (116 ps/B, 8.6 GB/s, under the node's 32 GB/s), six together
/// at a sixth of the node each: 6 x 10^6 / 31,992 MB/s = 187.6 ps/B, so
/// 1.617 times as long.
#[test]
fn streams_share_a_nodes_bandwidth() {
    let c = MachineCosts::for_machine("xeon-12c24t");
    assert_eq!(c.node_mem_mb_s, 3 * 1333 * 8);
    let one = parallel_stream(1);
    let six = parallel_stream(6);
    let expect = (6.0e6 / c.node_mem_mb_s as f64) / (c.mem_ps_per_byte as f64);
    let got = six as f64 / one as f64;
    assert!(
        (got - expect).abs() < 0.02,
        "six streams {got:.3}x one, expected {expect:.3}x"
    );
}

/// Two threads of one process on different nodes read the same array
/// (every chunk faults for both): their shared faults put them in one
/// numa group, which they leave with their statistics when they exit. A
/// separate process touching its own array stays out of it.
#[test]
fn threads_sharing_pages_form_one_group() {
    let (topo, sd) = machine();
    let mut e = engine(&topo, &sd);
    let r = e.add_region(1, "shared", 256 * MIB);
    let a = e.add_access(&[Span {
        region: r,
        offset: 0,
        len: 256 * MIB,
        bytes: 16 * MIB,
        sweeps: 1,
    }]);
    let body = vec![
        Op::Loop(1500),
        Op::ComputeMem {
            work: 10 * MS,
            access: a,
        },
        Op::EndLoop,
        Op::Exit,
    ];
    let b = e.add_task(spec("b", body.clone(), 1, 6, true));
    let mut main = vec![Op::Spawn { child: b }];
    main.extend(body[..3].iter().cloned());
    main.extend([Op::Join { task: b }, Op::Exit]);
    let m = e.add_task(spec("a", main, 1, 0, false));
    e.set_cpus_allowed(m, &CpuMask::from_cpus([0]));
    e.set_cpus_allowed(b, &CpuMask::from_cpus([6]));
    let r2 = e.add_region(2, "own", 64 * MIB);
    let a2 = e.add_access(&[Span {
        region: r2,
        offset: 0,
        len: 64 * MIB,
        bytes: MIB,
        sweeps: 1,
    }]);
    let other = e.add_task(spec(
        "p",
        vec![
            Op::Loop(1500),
            Op::ComputeMem {
                work: 10 * MS,
                access: a2,
            },
            Op::EndLoop,
            Op::Exit,
        ],
        2,
        1,
        false,
    ));
    e.set_numa(numa(true), NumaFeatures::default(), MemPolicy::Local);
    e.run().unwrap();
    let ga = e.task_numa_group_of(m).expect("a has a group");
    let gb = e.task_numa_group_of(b).expect("b has a group");
    assert_eq!(ga.gid, gb.gid);
    // both have exited: task_numa_free took their statistics out again
    assert_eq!((ga.nr_tasks, ga.total_faults), (0, 0));
    assert!(e.task_numa_group_of(other).is_none());
    check_consistent(&e.numa_counters().unwrap());
}

/// Kernel time owed for faults, migrations and scans is all spent, also
/// when tasks on remote memory preempt each other (their segments hold the
/// owed time at the memory speed): system time covers numa_kernel_ns.
#[test]
fn numa_kernel_time_survives_preemption() {
    for n in [1usize, 3] {
        let (topo, sd) = machine();
        let mut e = engine(&topo, &sd);
        for i in 0..n {
            let mm = i as u32 + 1;
            let r = e.add_region(mm, "a", 256 * MIB);
            let slices: Vec<_> = (0..4)
                .map(|k| {
                    e.add_access(&[Span {
                        region: r,
                        offset: k * 64 * MIB,
                        len: 64 * MIB,
                        bytes: 64 * MIB,
                        sweeps: 1,
                    }])
                })
                .collect();
            let mut p = vec![Op::Loop(200)];
            p.extend(slices.iter().map(|&a| Op::ComputeMem {
                work: 5 * MS,
                access: a,
            }));
            p.extend([Op::EndLoop, Op::Exit]);
            let t = e.add_task(spec("s", p, mm, 0, false));
            e.set_cpus_allowed(t, &CpuMask::from_cpus([0]));
        }
        e.set_numa(
            numa(true),
            NumaFeatures::default(),
            MemPolicy::Bind(vec![1]),
        );
        e.run().unwrap();
        let k = e.numa_counters().unwrap();
        assert!(k.numa_kernel_ns > 0, "{k:?}");
        let busy: u64 = e.cpu_times().iter().map(|c| c.0).sum();
        let system = busy - e.counters.user_ns;
        assert!(
            system as f64 >= 0.999 * k.numa_kernel_ns as f64,
            "{n} tasks: system {system} ns < NUMA kernel work {} ns",
            k.numa_kernel_ns
        );
    }
}

/// An NPB-like loop, and hinting faults counted as the kernel counts them.
/// Two threads of one process: `a` runs one 4 s op whose loop walks a
/// 9 MiB array (four 2 MiB chunks and a 1 MiB tail of 256 pages) `sweeps`
/// times in address order; `b` computes without memory. The array is
/// bound to node 0, where `a` runs (no page moves). The scanner's first
/// pass (one scan delay, 1 s, into the run) marks the whole array; the
/// scan period is then 10 s, so there is no second scan before the op
/// ends. A chunk faults only if the loop reaches it after the mark: in one
/// walk, the loop is 1/4 through at the scan, past chunks 0 and 1 (reached
/// at 0 and 1/5 of the op), so chunks 2, 3 and the tail fault; in two walks
/// every chunk is reached again. /proc/vmstat: `numa_pte_updates` counts
/// pages (a huge PMD 512), `numa_huge_pte_updates` PMDs, `numa_hint_faults`
/// one per base page or huge page; the tail is never a huge page.
#[test]
fn hint_faults_follow_the_pages_touched_after_a_scan() {
    let run = |thp: bool, sweeps: u32| -> (NumaCounters, u64) {
        let (topo, sd) = machine();
        let mut e = engine(&topo, &sd);
        let bytes = 9 * MIB;
        let r = e.add_region(1, "a", bytes);
        let a = e.add_access(&[Span {
            region: r,
            offset: 0,
            len: bytes,
            bytes,
            sweeps,
        }]);
        let ps = MachineCosts::for_machine("xeon-12c24t").mem_ps_per_byte;
        let work = 4000 * MS - bytes * ps / 1000;
        let main = e.add_task(spec(
            "a",
            vec![Op::ComputeMem { work, access: a }, Op::Exit],
            1,
            0,
            false,
        ));
        e.add_task(spec(
            "b",
            vec![Op::Loop(400), Op::Compute(10 * MS), Op::EndLoop, Op::Exit],
            1,
            2,
            false,
        ));
        let params = NumaParams {
            enabled: true,
            thp,
            scan_period_min_ms: 10_000,
            ..Default::default()
        };
        e.set_numa(params, NumaFeatures::default(), MemPolicy::Bind(vec![0]));
        e.run().unwrap();
        assert_eq!(topo.place(e.task_cpu(main)).node, 0);
        (e.numa_counters().unwrap(), e.now())
    };
    let full = 4 * 512;
    let tail = 256;
    // base pages, one walk: 2 chunks and the tail fault, page by page
    let (c, _) = run(false, 1);
    assert_eq!(c.numa_scans, 1, "{c:?}");
    assert_eq!(c.numa_pte_updates, full + tail, "{c:?}");
    assert_eq!(c.numa_huge_pte_updates, 0);
    assert_eq!(c.numa_hint_faults, 2 * 512 + tail, "{c:?}");
    assert_eq!(c.numa_hint_faults_local, c.numa_hint_faults);
    assert_eq!(c.numa_pages_migrated, 0);
    assert_eq!(c.base_page_pte_updates, full + tail);
    assert_eq!(c.mmtests_numa_pte_updates, full + tail);
    // huge pages: the same chunks, one fault per PMD, the tail's pages
    // one by one; mmtests' page range adds the PMDs' 512 a second time
    let (c, _) = run(true, 1);
    assert_eq!(c.numa_pte_updates, full + tail, "{c:?}");
    assert_eq!(c.numa_huge_pte_updates, 4);
    assert_eq!(c.numa_hint_faults, 2 + tail, "{c:?}");
    assert_eq!(c.numa_hint_faults_local, 2 + tail);
    assert_eq!(c.base_page_pte_updates, tail);
    assert_eq!(c.mmtests_numa_pte_updates, full + tail + 4 * 512);
    // two walks: the second reaches chunks 0 and 1 after the mark
    let (c, _) = run(false, 2);
    assert_eq!(c.numa_hint_faults, full + tail, "{c:?}");
    let (c, _) = run(true, 2);
    assert_eq!(c.numa_hint_faults, 4 + tail, "{c:?}");
    // a gather reaches every page all through the op
    let (c, _) = run(false, Span::ANY_ORDER);
    assert_eq!(c.numa_hint_faults, full + tail, "{c:?}");
}
