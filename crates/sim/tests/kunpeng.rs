//! Kunpeng 920 against the published measurements of Barry Song's RFC v3 of
//! the cluster scheduler (linux-arm-kernel, 2021-01-06,
//! lists.infradead.org/pipermail/linux-arm-kernel/2021-January/628940.html):
//! `hackbench -p -T -l 20000 -g 1` (40 threads) took 4.285 s on CPUs 0-3
//! (one cluster) and 5.524 s on CPUs 0,4,8,12 (four clusters of one die).
//! The first figure is the one Kunpeng's OS-cost factor was fitted to
//! (`costs::KUNPENG_OS_SCALE_MILLI`); the second is left to the model.
//! Runs use `-l 2000` and scale by 10, averaging three seeds.

use sim::run::{simulate_hackbench, SimOptions};
use sim::workload::hackbench::Hackbench;

const ONE_CLUSTER_S: f64 = 4.285;
const FOUR_CLUSTERS_S: f64 = 5.524;

fn hackbench_l20000_s(cpus: &str) -> f64 {
    let topo = topology::preset("kunpeng920").unwrap();
    let hb = Hackbench {
        groups: 1,
        loops: 2000,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    let total: f64 = (1..=3)
        .map(|seed| {
            let opt = SimOptions {
                cpus: Some(topology::CpuMask::parse_list(cpus).unwrap()),
                seed,
                ..Default::default()
            };
            simulate_hackbench(&topo, &hb, &opt).unwrap().time_ns as f64 / 1e9
        })
        .sum();
    10.0 * total / 3.0
}

fn within(model: f64, measured: f64, tolerance: f64) -> bool {
    (model - measured).abs() <= tolerance * measured
}

/// The fitted figure holds (a change elsewhere in the model would show
/// here first), and the four-cluster time is within 25 % of the measured.
#[test]
fn absolute_times_within_25_percent() {
    let one = hackbench_l20000_s("0-3");
    let four = hackbench_l20000_s("0,4,8,12");
    assert!(
        within(one, ONE_CLUSTER_S, 0.25),
        "one cluster: model {one:.3} s, measured {ONE_CLUSTER_S}"
    );
    assert!(
        within(four, FOUR_CLUSTERS_S, 0.25),
        "four clusters: model {four:.3} s, measured {FOUR_CLUSTERS_S}"
    );
}

/// Measured: +29 % over four clusters. The model gives about +1.4 %: the
/// contended hand-offs it charges are a small part of a message's cost, and
/// what else makes cross-cluster traffic slower on this machine is not
/// modelled yet (docs/costs.md).
#[test]
#[ignore = "fails today: the model shows +1.4 % over four clusters against +29 % measured"]
fn four_clusters_slower_than_one_by_15_to_45_percent() {
    let margin = hackbench_l20000_s("0,4,8,12") / hackbench_l20000_s("0-3") - 1.0;
    assert!(
        (0.15..=0.45).contains(&margin),
        "margin {:.1} %",
        margin * 100.0
    );
}
