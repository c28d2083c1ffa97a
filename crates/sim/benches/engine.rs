//! Hot-path benchmarks on kunpeng920-node: `hackbench -p -T -g 10 -l 2000`
//! (issue 3), one simulated second of `schbench -m 2 -t 16` and of
//! `tbench 16` (no warm-up). Reports
//! time per run; events/s is printed by `schedlab sim --json`
//! (`events_per_s`).

use criterion::{criterion_group, criterion_main, Criterion};
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

criterion_group!(
    benches,
    hackbench_pipe_threads,
    schbench_one_second,
    tbench_one_second
);
criterion_main!(benches);
