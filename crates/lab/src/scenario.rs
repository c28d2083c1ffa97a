//! Run records of the kernel oracle's placement scenarios
//! (`benchmark = "scenario"`), the same fields whichever side made them, so
//! that `compare` can put a booted kernel beside the simulator:
//!
//! - `wake_locality_pct`: where the wakee ran relative to the waker's CPU, in
//!   the oracle's six classes ([`oracle::trace::Locality`]: same CPU, SMT
//!   sibling, same cluster, same LLC, other LLC in the node, other node), as
//!   shares of the rounds compared (for `fork`, the new thread relative to
//!   its parent's CPU);
//! - `migrations`: rounds in which the wakee woke on a CPU other than the
//!   one it slept on (try_to_wake_up's set_task_cpu, which logs
//!   sched_migrate_task; a new thread is placed by wake_up_new_task with
//!   __set_task_cpu, which does not: 0 for `fork`; kernel/sched/core.c,
//!   Linux 6.1);
//! - `chosen_cpus`: rounds per CPU chosen.
//!
//! A simulated run ([`simulate`]) is the simulator's wake-up path
//! (`oracle::probe`) on the scenario's machine state: one decision, the
//! same in every round, with its stage in `placement.stages`. A kernel run
//! ([`kernel_record`]) is the guest's rounds, only those in which the wakee
//! slept where it was pinned and the waker ran on its CPU, plus the
//! oracle's agreement with the simulator's decision for the same kernel
//! profile on the guest's machine (`agreement`).

use crate::outcome::RunError;
use crate::spec::RunSpec;
use crate::workload::WorkloadSpec;
use oracle::agreement::Agreement;
use oracle::runner::Round;
use oracle::scenario::{cpu_class, Setup, Wake};
use oracle::trace::Locality;
use serde_json::{json, Map, Value};
use sim::placement::Decision;
use std::collections::BTreeMap;
use topology::Topology;

/// The six locality classes of `(waker, chosen)` pairs as percentages of
/// the pairs (all 0 without pairs).
pub fn locality_pct(t: &Topology, pairs: impl IntoIterator<Item = (usize, usize)>) -> Value {
    shares(&locality_counts(t, pairs))
}

/// Counts per class in the simulator's four buckets of
/// `placement.wake_locality` (sim::run::WakeLocality: an SMT sibling counts
/// as the same cluster, another node as another LLC).
pub fn sim_buckets(c: &[u64; 6]) -> Value {
    let mut four = [0u64; 4];
    for l in Locality::ALL {
        four[l.sim_bucket()] += c[l as usize];
    }
    let m: Map<String, Value> = ["same_cpu", "same_cluster", "same_llc", "other_llc"]
        .iter()
        .zip(four)
        .map(|(n, c)| (n.to_string(), c.into()))
        .collect();
    Value::Object(m)
}

/// Counts per class of `(waker, chosen)` pairs.
pub fn locality_counts(t: &Topology, pairs: impl IntoIterator<Item = (usize, usize)>) -> [u64; 6] {
    let mut c = [0u64; 6];
    for (waker, chosen) in pairs {
        if waker < t.nr_cpus() && chosen < t.nr_cpus() {
            c[Locality::of(t, waker, chosen) as usize] += 1;
        }
    }
    c
}

/// Counts per class as `{class: percent}`.
pub fn shares(c: &[u64; 6]) -> Value {
    let total: u64 = c.iter().sum();
    let m: Map<String, Value> = Locality::ALL
        .iter()
        .map(|l| {
            let n = c[*l as usize];
            let pct = if total == 0 {
                0.0
            } else {
                100.0 * n as f64 / total as f64
            };
            (l.name().to_string(), Value::from(pct))
        })
        .collect();
    Value::Object(m)
}

/// Whether the wakee moved in this round's wake-up (never for a fork).
fn migrated(s: &Setup, prev: usize, chosen: usize) -> bool {
    s.wake != Wake::Fork && chosen != prev
}

/// The scenario workload of `spec` (the caller has matched it).
pub fn spec_of(spec: &RunSpec) -> Option<&crate::workload::ScenarioSpec> {
    match &spec.workload {
        WorkloadSpec::Scenario(s) => Some(s),
        _ => None,
    }
}

/// A simulated scenario run: the wake-up path's decision on the
/// scenario's state, on the run's machine with its kernel and features,
/// counted once per round.
pub fn simulate(spec: &RunSpec) -> Result<Value, RunError> {
    let sc = spec_of(spec).expect("a scenario run");
    let topo = spec.topology()?;
    let setup = sc.setup(&topo)?;
    let f = spec.features()?;
    let d = oracle::probe::decide_with(&topo, &setup, f);
    let rounds = sc.rounds as u64;
    let mut chosen = BTreeMap::new();
    chosen.insert(d.cpu.to_string(), rounds);
    let mut stages = Map::new();
    stages.insert(d.stage.name(), rounds.into());
    Ok(json!({
        "mode": "sim",
        "kernel": spec.kernel_name()?,
        "scenario": sc.scenario,
        "rounds": rounds,
        "valid": rounds,
        "wake_locality_pct": locality_pct(&topo, [(setup.waker, d.cpu)]),
        "placement": {
            "stages": stages,
            "wake_locality": sim_buckets(&locality_counts(
                &topo,
                std::iter::repeat_n((setup.waker, d.cpu), sc.rounds as usize),
            )),
        },
        "migrations": if migrated(&setup, setup.prev, d.cpu) { rounds } else { 0 },
        "chosen_cpus": chosen,
        "sim": {
            "cpu": d.cpu,
            "stage": d.stage.name(),
            "class": cpu_class(&topo, &setup, d.cpu),
        },
    }))
}

/// A kernel scenario run's record: the guest's `rounds` of `setup` on the
/// guest's machine `guest`, and the agreement with the simulator's
/// decision `d` (kernel profile `sim_kernel`).
pub fn kernel_record(
    guest: &Topology,
    setup: &Setup,
    rounds: &[Round],
    d: Decision,
    sim_kernel: &str,
) -> Value {
    let a: Agreement = oracle::agreement::compare(guest, setup, rounds, d);
    let valid: Vec<&Round> = rounds
        .iter()
        .filter(|r| r.prev == setup.prev && r.waker == setup.waker)
        .collect();
    let pct = |n: usize| {
        if a.valid == 0 {
            Value::Null
        } else {
            Value::from(100.0 * n as f64 / a.valid as f64)
        }
    };
    let chosen: BTreeMap<String, usize> = a
        .kernel_cpus
        .iter()
        .map(|(c, n)| (c.to_string(), *n))
        .collect();
    json!({
        "mode": "kernel",
        "scenario": setup.name,
        "rounds": a.rounds,
        "valid": a.valid,
        "wake_locality_pct": locality_pct(guest, valid.iter().map(|r| (r.waker, r.chosen))),
        "placement": {
            "wake_locality": sim_buckets(&locality_counts(
                guest,
                valid.iter().map(|r| (r.waker, r.chosen)),
            )),
        },
        "migrations": valid.iter().filter(|r| migrated(setup, r.prev, r.chosen)).count(),
        "chosen_cpus": chosen,
        "agreement": {
            "sim_kernel": sim_kernel,
            "sim_cpu": a.sim_cpu,
            "sim_stage": a.sim_stage,
            "sim_class": a.sim_class,
            "same_cpu": a.same_cpu,
            "same_class": a.same_class,
            "same_cpu_pct": pct(a.same_cpu),
            "same_class_pct": pct(a.same_class),
            "kernel_classes": a.kernel_classes,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ScenarioSpec;

    fn xeon() -> Topology {
        topology::machine("smp:sockets=2,cores=6,threads=2,nodes=2,slit=10:20/20:10").unwrap()
    }

    #[test]
    fn a_simulated_scenario_counts_its_decision_every_round() {
        let spec = RunSpec {
            machine: "smp:sockets=2,cores=6,threads=2,nodes=2,slit=10:20/20:10".into(),
            kernel: "linux-6.1".into(),
            costs: false,
            ..RunSpec::new(WorkloadSpec::Scenario(ScenarioSpec {
                scenario: "wake-affine-prev".into(),
                rounds: 7,
            }))
        };
        let v = simulate(&spec).unwrap();
        // the idle remote prev is kept (probe.rs's test): another node, a migration-free wake-up
        assert_eq!(v["sim"]["cpu"], 12);
        assert_eq!(v["wake_locality_pct"]["other_node"], 100.0);
        assert_eq!(v["wake_locality_pct"]["same_cpu"], 0.0);
        assert_eq!(v["migrations"], 0);
        assert_eq!(v["chosen_cpus"]["12"], 7);
        assert_eq!(v["placement"]["stages"]["target_idle"], 7, "{v}");
        // another node is the simulator's other_llc bucket
        assert_eq!(v["placement"]["wake_locality"]["other_llc"], 7, "{v}");
    }

    #[test]
    fn a_kernel_record_compares_only_valid_rounds() {
        let t = xeon();
        let s = oracle::scenario::setup("idle-core", &t).unwrap();
        let r = |round, waker, prev, chosen| Round {
            round,
            waker,
            prev,
            chosen,
        };
        // prev is 1 (the waker's busy sibling); round 4 slept elsewhere
        let rounds = [
            r(1, 0, 1, 10),
            r(2, 0, 1, 11),
            r(3, 0, 1, 1),
            r(4, 0, 5, 10),
        ];
        let d = Decision {
            cpu: 10,
            stage: sim::placement::Stage::IdleCore,
        };
        let v = kernel_record(&t, &s, &rounds, d, "linux-6.1");
        assert_eq!(
            (v["rounds"].as_u64(), v["valid"].as_u64()),
            (Some(4), Some(3))
        );
        let pct = v["agreement"]["same_cpu_pct"].as_f64().unwrap();
        assert!((pct - 100.0 / 3.0).abs() < 1e-9, "{v}");
        // 10 and 11 are another core of the LLC, 1 the waker's sibling
        let loc = &v["wake_locality_pct"];
        assert!((loc["same_llc"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert!((loc["same_core"].as_f64().unwrap() - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(v["placement"]["wake_locality"]["same_cluster"], 1, "{v}");
        assert_eq!(v["placement"]["wake_locality"]["same_llc"], 2, "{v}");
        // the wakee left prev (1) in rounds 1 and 2
        assert_eq!(v["migrations"], 2);
    }
}
