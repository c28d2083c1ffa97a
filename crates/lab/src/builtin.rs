//! Built-in experiments: the published setups of scheduler changes
//! (machine, CPU restriction, benchmark flags, sweep and variants), each an
//! ordinary experiment file compiled into the binary. `schedlab compare
//! --list` shows them.

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
        "vcpu-preempted",
        include_str!("builtin/vcpu-preempted.toml"),
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
];

/// The text of a built-in.
pub fn text(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Load a built-in, expanded.
pub fn load(name: &str, quick: bool) -> Result<Experiment, ExperimentError> {
    let origin = format!("builtin:{name}");
    match text(name) {
        Some(t) => Experiment::parse(&origin, t, quick),
        None => Err(ExperimentError {
            origin,
            message: format!(
                "no such built-in experiment (schedlab compare --list shows them: {})",
                BUILTINS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// (name, description) of every built-in.
pub fn list() -> Vec<(&'static str, String)> {
    BUILTINS
        .iter()
        .map(|(n, _)| {
            let d = load(n, false).map(|e| e.description).unwrap_or_default();
            (*n, d)
        })
        .collect()
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
}
