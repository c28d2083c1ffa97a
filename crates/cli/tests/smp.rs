//! `smp:` machines from the outside: `topology show`, its help, and `sim`
//! with the cost profile an smp machine must name.

mod common;
use common::{fails, json, run};

#[test]
fn text_of_a_small_smp_machine() {
    let text = run(&[
        "topology",
        "show",
        "smp:sockets=2,dies=2,clusters=2,cores=2,threads=2,nodes=4",
    ]);
    insta::assert_snapshot!(text);
}

#[test]
fn smp_1024_cpus_json() {
    let v = json(&[
        "topology",
        "show",
        "smp:sockets=8,cores=64,threads=2,nodes=8",
    ]);
    assert_eq!(v["name"], "smp:sockets=8,cores=64,threads=2,nodes=8");
    assert_eq!(v["nr_cpus"], 1024);
    assert_eq!(v["nr_nodes"], 8);
    assert_eq!(v["llc_size"], 128);
    let names: Vec<&str> = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["SMT", "MC", "NUMA"]);
    assert_eq!(
        v["smp"],
        "smp:sockets=8,dies=1,cores=64,threads=2,nodes=8,numbering=contiguous,l2=core,llc=die,distance=local:10,die:11,socket:12,remote:20"
    );
}

#[test]
fn domains_of_an_smp_shape_are_the_presets() {
    for (preset, spec) in [
        ("kunpeng920-node", "smp:clusters=6,cores=4"),
        (
            "xeon-12c24t",
            "smp:sockets=2,cores=6,threads=2,numbering=interleaved,nodes=2",
        ),
    ] {
        for kernel in ["latest", "linux-5.4"] {
            let a = run(&["topology", "show", preset, "--domains", "--kernel", kernel]);
            let b = run(&["topology", "show", spec, "--domains", "--kernel", kernel]);
            assert_eq!(a, b, "{spec} against {preset}, {kernel}");
        }
    }
}

#[test]
fn bad_specs_exit_2_naming_the_key_and_range() {
    for (spec, needle) in [
        ("smp:threads=9", "smp: threads=9: must be a whole number in 1..=8"),
        (
            "smp:sockets=4,cores=6,nodes=5",
            "smp: nodes=5: must be one of 1, 2, 4, 8, 12, 24",
        ),
        ("smp:cores=4,foo=1", "smp: foo: unknown key (keys: cpus, sockets"),
        ("smp:llc=cluster", "smp: llc=cluster: the machine has no clusters"),
        (
            "smp:sockets=64,cores=128",
            "smp: sockets*dies*clusters*cores*threads: 64*1*1*128*1 = 8192 CPUs, more than the maximum 4096",
        ),
        (
            "smp:sockets=2,nodes=2,distance=remote:9",
            "smp: distance remote=9: must be a whole number in 11..=254",
        ),
    ] {
        let err = fails(&["topology", "show", spec]);
        assert!(err.contains(needle), "{spec}: {err}");
        let err = fails(&["sim", "spin", "--machine", spec]);
        assert!(err.contains(&format!("--machine: {needle}")), "{spec}: {err}");
    }
}

#[test]
fn help_documents_the_syntax_with_examples() {
    for args in [&["topology", "--help"][..], &["topology", "show", "--help"]] {
        let text = run(args);
        for needle in [
            "smp:KEY=VALUE",
            "cores=N             cores per cluster, or per die without clusters",
            "nodes=N",
            "llc=core|cluster|die|socket",
            "distance=local:10,die:D,socket:S,remote:R",
            "cost=PRESET|FILE",
            "schedlab topology show smp:sockets=4,dies=2,cores=32,threads=2,nodes=8",
        ] {
            assert!(text.contains(needle), "{args:?} lacks {needle:?}:\n{text}");
        }
    }
}

const HACKBENCH: &[&str] = &["sim", "hackbench", "-p", "-T", "-g", "2", "-l", "50"];

fn hackbench(machine: &str, more: &[&str]) -> Vec<String> {
    let mut a = HACKBENCH.to_vec();
    a.extend(["--machine", machine]);
    a.extend(more);
    a.iter().map(|s| s.to_string()).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn sim_refuses_an_smp_machine_without_costs() {
    let err = fails(&refs(&hackbench("smp:clusters=6,cores=4", &[])));
    assert!(
        err.contains("--machine: smp: cost: missing") && err.contains("cost=PRESET"),
        "{err}"
    );
    // unless every cost is off
    run(&refs(&hackbench(
        "smp:clusters=6,cores=4",
        &["--costs", "off"],
    )));
    let err = fails(&refs(&hackbench(
        "smp:clusters=6,cores=4,cost=nowhere.toml",
        &[],
    )));
    assert!(
        err.contains("--machine: smp: cost=nowhere.toml: not a preset (kunpeng920,"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, run(&["costs", "show", "kunpeng920-node", "--toml"])).unwrap();
    let err = fails(&refs(&hackbench(
        "smp:clusters=6,cores=4,cost=kunpeng920",
        &["--cost-profile", file.to_str().unwrap()],
    )));
    assert!(
        err.contains("--cost-profile: the machine names its costs already (cost=kunpeng920)"),
        "{err}"
    );
}

/// The run record without what names the machine.
fn without_machine(mut v: serde_json::Value) -> serde_json::Value {
    for f in ["machine", "run", "wall_s", "events_per_s"] {
        v.as_object_mut().unwrap().remove(f);
    }
    v
}

#[test]
fn sim_of_a_presets_shape_with_its_costs_is_the_presets_run() {
    let preset = json(&refs(&hackbench("kunpeng920-node", &[])));
    let named = json(&refs(&hackbench(
        "smp:clusters=6,cores=4,cost=kunpeng920-node",
        &[],
    )));
    assert_eq!(
        named["machine"],
        "smp:clusters=6,cores=4,cost=kunpeng920-node"
    );
    assert_eq!(without_machine(named), without_machine(preset.clone()));
    // the same profile as a file
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.toml");
    std::fs::write(&file, run(&["costs", "show", "kunpeng920-node", "--toml"])).unwrap();
    let spec = format!("smp:clusters=6,cores=4,cost={}", file.display());
    let from_file = json(&refs(&hackbench(&spec, &[])));
    assert_eq!(without_machine(from_file), without_machine(preset.clone()));
    // another preset's costs change the run
    let other = json(&refs(&hackbench(
        "smp:clusters=6,cores=4,cost=epyc-zen3",
        &[],
    )));
    assert_ne!(other["time_s"], preset["time_s"]);
}
