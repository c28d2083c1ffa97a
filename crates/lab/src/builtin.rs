//! Built-in experiments: the published setups of scheduler changes
//! (machine, CPU restriction, benchmark flags, sweep and variants), each an
//! ordinary experiment file compiled into the binary, and suites: a name
//! for several of them run in sequence, when a change was published with
//! setups of different benchmarks (an experiment runs one). `schedlab
//! compare --list` shows both.

use crate::experiment::{Experiment, ExperimentError};

/// Every built-in: (name, file text).
pub const BUILTINS: &[(&str, &str)] = &[
    (
        "test-idle-cores-nosmt",
        include_str!("builtin/test-idle-cores-nosmt.toml"),
    ),
    (
        "select-idle-core-early-break",
        include_str!("builtin/select-idle-core-early-break.toml"),
    ),
    ("cluster-scan", include_str!("builtin/cluster-scan.toml")),
    (
        "cluster-scan-2nodes",
        include_str!("builtin/cluster-scan-2nodes.toml"),
    ),
    ("sd-idle", include_str!("builtin/sd-idle.toml")),
    (
        "vcpu-preempted-hackbench",
        include_str!("builtin/vcpu-preempted-hackbench.toml"),
    ),
    (
        "vcpu-preempted-tbench",
        include_str!("builtin/vcpu-preempted-tbench.toml"),
    ),
    (
        "vcpu-preempted-schbench",
        include_str!("builtin/vcpu-preempted-schbench.toml"),
    ),
    (
        "numa-scan-stagger",
        include_str!("builtin/numa-scan-stagger.toml"),
    ),
    (
        "kernel-agreement",
        include_str!("builtin/kernel-agreement.toml"),
    ),
];

/// Every suite: (name, description, its experiments in the order they
/// run).
pub const SUITES: &[(&str, &str, &[&str])] = &[(
    "vcpu-preempted",
    "Linux 4.18's vCPU-preempted check, the authors' three setups: one 8-vCPU guest alone with hackbench, two guests sharing 8 host CPUs with tbench and with schbench",
    &[
        "vcpu-preempted-hackbench",
        "vcpu-preempted-tbench",
        "vcpu-preempted-schbench",
    ],
)];

/// The experiments of suite `name`, in order (None: not a suite).
pub fn suite(name: &str) -> Option<&'static [&'static str]> {
    SUITES.iter().find(|s| s.0 == name).map(|s| s.2)
}

/// The text of a built-in.
pub fn text(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Load a built-in, expanded.
pub fn load(name: &str, quick: bool) -> Result<Experiment, ExperimentError> {
    let origin = format!("builtin:{name}");
    match (text(name), suite(name)) {
        (Some(t), _) => Experiment::parse(&origin, t, quick),
        (None, Some(parts)) => Err(ExperimentError {
            origin,
            message: format!(
                "a suite of {} experiments ({}), not one experiment",
                parts.len(),
                parts.join(", ")
            ),
        }),
        (None, None) => Err(ExperimentError {
            origin,
            message: format!(
                "no such built-in experiment (schedlab compare --list shows them: {})",
                list()
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// (name, description) of every built-in experiment, then of every suite
/// (its description names its experiments).
pub fn list() -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> = BUILTINS
        .iter()
        .map(|(n, _)| {
            let d = load(n, false).map(|e| e.description).unwrap_or_default();
            (*n, d)
        })
        .collect();
    v.extend(
        SUITES
            .iter()
            .map(|(n, d, parts)| (*n, format!("{d} (runs {})", parts.join(", ")))),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_full_and_quick() {
        for (name, _) in BUILTINS {
            let full = load(name, false).unwrap();
            let quick = load(name, true).unwrap();
            assert_eq!(&full.name, name);
            assert!(
                quick.quick && quick.runs().len() < full.runs().len(),
                "{name}"
            );
        }
    }

    #[test]
    fn suites_name_builtins_and_are_not_experiments() {
        for (name, _, parts) in SUITES {
            assert!(text(name).is_none(), "{name} is also an experiment");
            assert!(parts.len() >= 2, "{name}");
            for p in *parts {
                assert!(load(p, true).is_ok(), "{name}: {p}");
            }
            let e = load(name, false).unwrap_err();
            assert!(e.message.contains("suite"), "{e}");
        }
        assert_eq!(
            suite("vcpu-preempted").unwrap(),
            [
                "vcpu-preempted-hackbench",
                "vcpu-preempted-tbench",
                "vcpu-preempted-schbench"
            ]
        );
        assert!(list().iter().any(|(n, _)| *n == "vcpu-preempted"));
    }

    #[test]
    fn numa_scan_stagger_runs_every_kernel_without_and_with_the_stagger() {
        use crate::workload::WorkloadSpec;
        let e = load("numa-scan-stagger", false).unwrap();
        assert_eq!(e.variants.len(), 2);
        assert_eq!(e.npoints(), 8);
        for c in e.cells() {
            let WorkloadSpec::Npb(n) = &c.spec.workload else {
                panic!("{:?}", c.spec.workload)
            };
            assert_eq!(n.class, "D");
            assert_eq!(c.spec.machine, "broadwell-ep");
            // the published runs had THP (they report huge PMD updates)
            assert!(c.spec.thp);
            let m = n.model(88).unwrap();
            assert_eq!(m.threads, 88);
        }
        let stagger: Vec<_> = e
            .cells()
            .map(|c| c.spec.features.get("numa_scan_stagger").cloned())
            .collect();
        assert!(stagger.contains(&Some("off".into())) && stagger.contains(&Some("on".into())));
        let q = load("numa-scan-stagger", true).unwrap();
        for c in q.cells() {
            let WorkloadSpec::Npb(n) = &c.spec.workload else {
                unreachable!()
            };
            assert_eq!(n.class, "B");
        }
    }

    /// The kernel-agreement built-in parses and validates without qemu or
    /// a kernel image: the environment is only read when it runs.
    #[test]
    fn kernel_agreement_holds_the_simulator_against_a_kernel() {
        use crate::spec::Mode;
        use crate::workload::WorkloadSpec;
        let full = load("kernel-agreement", false).unwrap();
        let modes: Vec<Mode> = full.variants.iter().map(|v| v.mode).collect();
        assert_eq!(modes, [Mode::Sim, Mode::Kernel]);
        assert_eq!(full.axes, ["scenario"]);
        assert!(full.npoints() >= 5);
        for c in full.cells() {
            assert_eq!(c.spec.machine, "xeon-12c24t");
            assert_eq!(c.spec.kernel, "linux-6.1");
            assert!(matches!(c.spec.workload, WorkloadSpec::Scenario(_)));
            crate::exec::check(&c.spec).unwrap();
        }
        // every scenario of the sweep reaches a different stage of the 6.1 model
        let stages: std::collections::BTreeSet<String> = full
            .cells()
            .filter(|c| c.spec.mode == Mode::Sim)
            .map(|c| crate::scenario::simulate(&c.spec).unwrap()["sim"]["stage"].to_string())
            .collect();
        assert!(stages.len() >= 5, "{stages:?}");
        let quick = load("kernel-agreement", true).unwrap();
        assert!(quick.runs().len() <= 4, "{}", quick.runs().len());
        assert!(quick.metrics.contains(&"same-cpu".to_string()));
    }
}
