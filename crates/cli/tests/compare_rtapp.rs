//! `schedlab compare` with an rt-app workload simulated and run by the real
//! rt-app: the report prints both, per thread. It needs rt-app, which
//! .ci/run installs: ignored where the build did not find it (build.rs),
//! and, asked for anyway, fails saying so.

mod common;
use common::run;

#[test]
#[cfg_attr(
    not(has_rt_app),
    ignore = "needs rt-app (apt-get install rt-app; .ci/run installs it), absent when this test was built"
)]
fn sim_and_rt_app_side_by_side() {
    native::rtapp::find_rtapp().expect("this test needs rt-app (apt-get install rt-app)");
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("w.json");
    std::fs::write(
        &file,
        r#"{"global": {"duration": 1, "calibration": 12},
            "tasks": {"tick": {"runtime": 1000, "timer": {"ref": "unique", "period": 10000}}}}"#,
    )
    .unwrap();
    let exp = d.path().join("e.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"rt\"\niterations = 1\n[run]\nbenchmark = \"rtapp\"\nfile = {:?}\nmachine = \"host\"\n\
             [[variant]]\nname = \"sim\"\n[[variant]]\nname = \"rt-app\"\nmode = \"native\"\n",
            file.to_str().unwrap()
        ),
    )
    .unwrap();
    let json = d.path().join("r.json");
    let out = run(&[
        "compare",
        exp.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.contains("cpu-share:tick-0: %"), "{out}");
    assert!(out.contains("Sim error vs rt-app"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = v.to_string();
    // both variants measured the thread's CPU share: about 10 %
    let shares: Vec<f64> = out
        .lines()
        .filter(|l| l.starts_with("Hmean") && l.contains("cpu-share:tick-0"))
        .flat_map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.parse::<f64>().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(shares.len() >= 2, "{out}");
    assert!((9.0..12.0).contains(&shares[0]), "sim {out}");
    assert!(shares[1] > 2.0 && shares[1] < 30.0, "rt-app {out}");
    assert!(text.contains("rt-app"), "{text}");
}
