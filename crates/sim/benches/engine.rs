//! Hot-path benchmarks on kunpeng920-node: `hackbench -p -T -g 10 -l 2000`
//! (issue 3), one simulated second of `schbench -m 2 -t 16` and of
//! `tbench 16` (no warm-up); and the `scale` group: `hackbench -p -T -l 100`
//! with groups = CPUs / 10 (tasks = 4 x CPUs) on 24, 224 and 1024 CPUs,
//! reported as events per second, so that a per-event cost that grows with
//! the machine shows (`scripts/bench-scale.sh` splits it into the engine's
//! part and the modelled kernel's scans). The `engine` group reports time
//! per run; events/s is printed by `schedlab sim --json` (`events_per_s`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sim::run::{simulate_hackbench, simulate_schbench, simulate_tbench, SimOptions};
use sim::workload::hackbench::Hackbench;
use sim::workload::schbench::SchbenchSim;

fn hackbench_pipe_threads(c: &mut Criterion) {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let hb = Hackbench {
        groups: 10,
        loops: 2000,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.bench_function("hackbench -p -T -g 10 -l 2000 kunpeng920-node", |b| {
        b.iter(|| {
            simulate_hackbench(&topo, &hb, &SimOptions::default())
                .unwrap()
                .counters
                .events
        })
    });
    g.finish();
}

fn schbench_one_second(c: &mut Criterion) {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let mut sb = SchbenchSim::new_version();
    sb.bench.message_threads = 2;
    sb.bench.worker_threads = Some(16);
    sb.bench.runtime = 1;
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.bench_function("schbench -m 2 -t 16 -r 1 kunpeng920-node", |b| {
        b.iter(|| {
            simulate_schbench(&topo, &sb, &SimOptions::default())
                .unwrap()
                .counters
                .events
        })
    });
    g.finish();
}

fn tbench_one_second(c: &mut Criterion) {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let tb = benchspec::tbench::Tbench {
        clients: 16,
        time: 1,
        warmup: Some(0),
        loadfile: None,
    };
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.bench_function("tbench 16 -t 1 --warmup 0 kunpeng920-node", |b| {
        b.iter(|| {
            simulate_tbench(&topo, &tb, &SimOptions::default())
                .unwrap()
                .counters
                .events
        })
    });
    g.finish();
}

fn hackbench_scale(c: &mut Criterion) {
    let machines = [
        ("kunpeng920-node", "kunpeng920-node"),
        ("sapphire-rapids", "sapphire-rapids"),
        (
            "smp:sockets=8,cores=64,threads=2,nodes=8",
            "sapphire-rapids",
        ),
    ];
    let mut g = c.benchmark_group("scale");
    g.sample_size(10);
    for (machine, costs) in machines {
        let topo = match machine.strip_prefix("smp:") {
            Some(spec) => topology::SmpSpec::parse(spec)
                .and_then(|s| s.build(machine))
                .unwrap(),
            None => topology::preset(machine).unwrap(),
        };
        let hb = Hackbench {
            groups: (topo.nr_cpus() / 10).max(1) as u32,
            loops: 100,
            pipe: true,
            threads: true,
            ..Default::default()
        };
        let opt = SimOptions {
            costs_profile: Some(sim::costs::MachineCosts::for_machine(costs)),
            ..SimOptions::default()
        };
        let events = simulate_hackbench(&topo, &hb, &opt)
            .unwrap()
            .counters
            .events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(
            format!("hackbench -p -T -l 100 {} CPUs", topo.nr_cpus()),
            |b| {
                b.iter(|| {
                    simulate_hackbench(&topo, &hb, &opt)
                        .unwrap()
                        .counters
                        .events
                })
            },
        );
    }
    g.finish();
}

criterion_group!(
    benches,
    hackbench_scale,
    hackbench_pipe_threads,
    schbench_one_second,
    tbench_one_second
);
criterion_main!(benches);
