//! The agreement between the kernel's choices and the simulator's, per
//! scenario: the share of rounds in which the simulator picks the CPU the
//! kernel picked and, where the kernel's choice is not unique, the share
//! in which it picks a CPU of the same class ([`crate::scenario::cpu_class`]).

use crate::runner::Round;
use crate::scenario::{cpu_class, Setup};
use serde::Serialize;
use sim::placement::Decision;
use std::collections::BTreeMap;
use topology::Topology;

/// One scenario's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    /// Scenario name.
    pub scenario: String,
    /// The setup.
    pub setup: Setup,
    /// Rounds reported by the guest.
    pub rounds: usize,
    /// Rounds in which the wakee slept where it was pinned (and, for
    /// wake-ups, the waker ran on its CPU): the ones compared.
    pub valid: usize,
    /// The simulator's CPU and stage.
    pub sim_cpu: usize,
    /// The stage of the simulator's wake-up path that chose it.
    pub sim_stage: String,
    /// The class of the simulator's CPU.
    pub sim_class: String,
    /// The kernel's choices: CPU -> rounds.
    pub kernel_cpus: BTreeMap<usize, usize>,
    /// The kernel's choices by class.
    pub kernel_classes: BTreeMap<String, usize>,
    /// Valid rounds where the simulator picked the kernel's CPU.
    pub same_cpu: usize,
    /// Valid rounds where it picked a CPU of the same class.
    pub same_class: usize,
}

/// Compare the guest's rounds with the simulator's decision.
pub fn compare(t: &Topology, s: &Setup, rounds: &[Round], sim: Decision) -> Agreement {
    let valid: Vec<&Round> = rounds
        .iter()
        .filter(|r| r.prev == s.prev && r.waker == s.waker)
        .collect();
    let sim_class = cpu_class(t, s, sim.cpu);
    let mut kernel_cpus = BTreeMap::new();
    let mut kernel_classes = BTreeMap::new();
    for r in &valid {
        *kernel_cpus.entry(r.chosen).or_insert(0) += 1;
        *kernel_classes.entry(cpu_class(t, s, r.chosen)).or_insert(0) += 1;
    }
    Agreement {
        scenario: s.name.clone(),
        setup: s.clone(),
        rounds: rounds.len(),
        valid: valid.len(),
        sim_cpu: sim.cpu,
        sim_stage: sim.stage.name(),
        same_cpu: valid.iter().filter(|r| r.chosen == sim.cpu).count(),
        same_class: valid
            .iter()
            .filter(|r| cpu_class(t, s, r.chosen) == sim_class)
            .count(),
        sim_class,
        kernel_cpus,
        kernel_classes,
    }
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.0}%", 100.0 * a as f64 / b as f64)
    }
}

/// The agreement table.
pub fn table(rows: &[Agreement]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<18} {:>6} {:>9} {:>9}  {:<28} {}\n",
        "scenario",
        "valid",
        "same-cpu",
        "same-cls",
        "simulator (cpu: stage)",
        "kernel (cpu x rounds)"
    ));
    for a in rows {
        let k: Vec<String> = a
            .kernel_cpus
            .iter()
            .map(|(c, n)| format!("{c}x{n}"))
            .collect();
        out.push_str(&format!(
            "{:<18} {:>6} {:>9} {:>9}  {:<28} {}\n",
            a.scenario,
            format!("{}/{}", a.valid, a.rounds),
            pct(a.same_cpu, a.valid),
            pct(a.same_class, a.valid),
            format!("{}: {}", a.sim_cpu, a.sim_stage),
            k.join(" ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::placement::Stage;

    #[test]
    fn shares_and_classes() {
        let t =
            topology::machine("smp:sockets=2,cores=6,threads=2,nodes=2,slit=10:20/20:10").unwrap();
        let s = crate::scenario::setup("idle-core", &t).unwrap();
        let r = |round, chosen| Round {
            round,
            waker: 0,
            prev: 1,
            chosen,
        };
        let rounds = vec![
            r(1, 10),
            r(2, 11),
            r(3, 3),
            Round {
                round: 4,
                waker: 5,
                prev: 1,
                chosen: 10,
            },
        ];
        let a = compare(
            &t,
            &s,
            &rounds,
            Decision {
                cpu: 10,
                stage: Stage::IdleCore,
            },
        );
        assert_eq!((a.rounds, a.valid, a.same_cpu, a.same_class), (4, 3, 1, 2));
        let tab = table(&[a]);
        assert!(tab.contains("idle-core"), "{tab}");
        assert!(tab.contains("3/4"), "{tab}");
        assert!(tab.contains("33%") && tab.contains("67%"), "{tab}");
    }
}
