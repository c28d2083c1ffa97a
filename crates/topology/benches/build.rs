//! Building large synthetic machines and their sched domains (issue 14:
//! at 4096 CPUs both should take well under 2 s in a release build).
//! `cargo bench -p topology --bench build`; timing lives here, never in a
//! test.

use criterion::{criterion_group, criterion_main, Criterion};
use topology::{from_smp, DomainOptions, SchedDomains};

/// 1024 and 4096 CPUs: sockets of one LLC and node, many dies with
/// clusters, and one flat 4096-CPU LLC (the shape whose MC level has a
/// group per core).
const SPECS: &[(&str, &str)] = &[
    ("1024 8s", "smp:sockets=8,cores=64,threads=2,nodes=8"),
    ("4096 16s", "smp:sockets=16,cores=128,threads=2,nodes=16"),
    (
        "4096 4s2d8c",
        "smp:sockets=4,dies=2,clusters=8,cores=32,threads=2,nodes=8",
    ),
    ("4096 flat", "smp:cores=4096"),
];

fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("smp");
    g.sample_size(10);
    for (label, spec) in SPECS {
        g.bench_function(format!("topology {label}"), |b| {
            b.iter(|| from_smp(spec).unwrap().nr_cpus())
        });
        let t = from_smp(spec).unwrap();
        g.bench_function(format!("domains {label}"), |b| {
            b.iter(|| SchedDomains::build(&t, &DomainOptions::default()).nr_llcs())
        });
    }
    g.finish();
}

criterion_group!(benches, build);
criterion_main!(benches);
