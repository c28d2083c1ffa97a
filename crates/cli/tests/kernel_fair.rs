//! `schedlab kernel ...` with the fair-class scenarios (docs/kernel-oracle.md,
//! "Fair-class scenarios"): the list, bad names in one line, the guest's
//! side on this host, and the comparison recomputed from a saved capture of
//! a real 6.1 kernel (`kernel agreement --dump`), against the simulator.

mod common;
use common::{fails, run};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../oracle/fixtures")
        .join(rel)
}

#[test]
fn fair_scenarios_are_listed() {
    let out = run(&["kernel", "scenarios"]);
    for n in [
        "fair-pingpong",
        "fair-wake-short",
        "fair-wake-long",
        "fair-fork",
    ] {
        assert!(out.lines().any(|l| l.starts_with(n)), "{n}: {out}");
    }
}

#[test]
fn bad_fair_scenarios_are_one_line() {
    let e = fails(&["kernel", "scenario", "fair-nope"]);
    assert!(e.contains("scenario \"fair-nope\" is unknown"), "{e}");
    assert!(e.contains("fair-wake-short"), "{e}");
    let e = fails(&[
        "kernel",
        "scenario",
        "fair-fork",
        "--machine",
        "smp:cores=1",
    ]);
    assert!(e.contains("needs two CPUs"), "{e}");
}

#[test]
fn fair_scenario_runs_natively_here() {
    // the scenarios pin to CPUs 0 and 1: skip where they are not ours
    let allowed = oracle::runner::allowed_cpus().unwrap_or_default();
    if !(allowed.contains(&0) && allowed.contains(&1)) {
        eprintln!("skipped: needs CPUs 0 and 1, allowed {allowed:?}");
        return;
    }
    let out = run(&[
        "kernel",
        "scenario",
        "fair-fork",
        "fair-pingpong",
        "--machine",
        "smp:cores=2",
        "--rounds",
        "2",
    ]);
    assert_eq!(
        out,
        "scenario fair-fork\nfair fair-fork cpu 1 other 0 rounds 2\n\
         scenario fair-pingpong\nfair fair-pingpong cpu 1 other 0 rounds 2\n"
    );
}

/// A real 6.1 run (kvm-8vcpu, 20 rounds; the trace keeps the lines of the
/// wake and fork scenarios' threads): the same verdicts as when it ran.
#[test]
fn saved_fair_run_against_the_simulator() {
    let dump = fixture("fair/kvm-8vcpu-6.1");
    let out = run(&[
        "kernel",
        "agreement",
        "--machine",
        "kvm-8vcpu",
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert!(
        out.contains("Fair class against the simulator (linux-6.1"),
        "{out}"
    );
    let block = |name: &str| -> String {
        let i = out.find(name).unwrap_or_else(|| panic!("{name}: {out}"));
        out[i..].lines().take(3).collect::<Vec<_>>().join("\n")
    };
    let long = block("fair-wake-long");
    assert!(long.starts_with("fair-wake-long   agree"), "{long}");
    let fork = block("fair-fork");
    assert!(fork.starts_with("fair-fork        agree"), "{fork}");
    assert!(fork.contains("busy loop runs first"), "{fork}");
    // the simulator's 6.1 waits for the busy loop at the nominal 1 ms
    // sleep, as the kernel did after its 2.3 ms (TCG) sleep
    let short = block("fair-wake-short");
    assert!(short.starts_with("fair-wake-short  agree"), "{short}");
    assert!(
        short.contains("simulator: waits for the busy loop's tick"),
        "{short}"
    );
}
