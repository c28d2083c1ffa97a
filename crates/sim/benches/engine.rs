//! Hot-path benchmark: `hackbench -p -T -g 10 -l 2000` on kunpeng920-node
//! (issue 3). Reports time per run; events/s is printed by `schedlab sim
//! --json` (`events_per_s`).

use criterion::{criterion_group, criterion_main, Criterion};
use sim::run::{simulate_hackbench, SimOptions};
use sim::workload::hackbench::Hackbench;

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

criterion_group!(benches, hackbench_pipe_threads);
criterion_main!(benches);
