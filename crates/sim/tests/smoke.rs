use sim::run::{simulate_hackbench, SimOptions};
use sim::workload::hackbench::Hackbench;

#[test]
fn smoke() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let hb = Hackbench {
        groups: 2,
        loops: 50,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    let r = simulate_hackbench(
        &topo,
        &hb,
        &SimOptions {
            check: true,
            ..Default::default()
        },
    )
    .unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&r).unwrap());
}
