//! One run, fully described: the machine, the CPUs it may use, the kernel
//! and its feature overrides, the policy, the costs, the seed and the
//! workload. `schedlab sim`'s flags and experiment files both build a
//! [`RunSpec`]; everything a run needs is resolved from it here, so the two
//! cannot disagree.

use crate::workload::WorkloadSpec;
use serde::{Deserialize, Serialize};
use sim::costs::MachineCosts;
use sim::placement::linux::Features;
use sim::run::{PolicyChoice, SimOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use topology::{CpuMask, Topology};

/// A problem with one field of a run specification. It names the field as
/// an experiment file spells it; the CLI renames it to its flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    /// The field (`machine`, `node`, `features.NAME`, a workload field).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl SpecError {
    /// An error about `field`.
    pub fn field(field: impl Into<String>, message: impl std::fmt::Display) -> Self {
        SpecError {
            field: field.into(),
            message: message.to_string(),
        }
    }
}

/// Simulate, run the native port on this host, or boot a real kernel
/// under qemu on the run's machine and run the workload inside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The simulator.
    #[default]
    Sim,
    /// The native port, on this host.
    Native,
    /// A real kernel booted under qemu on the machine's topology
    /// (crates/oracle; [`crate::kernel`]).
    Kernel,
}

impl Mode {
    /// `sim`, `native` or `kernel`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Native => "native",
            Mode::Kernel => "kernel",
        }
    }
}

/// The wake-up placement policy; written as its name (`"linux"`, `"scx"`
/// or a policy registered with [`crate::policies::register`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// The Linux wake-up path and load balancer of `kernel`.
    #[default]
    Linux,
    /// sched_ext's default idle pick (no load balancer).
    Scx,
    /// A policy registered by name ([`crate::policies`]); whether it is
    /// registered is checked when the run's options are built.
    Custom(String),
}

impl Policy {
    /// The policy's name, as an experiment file spells it.
    pub fn name(&self) -> &str {
        match self {
            Policy::Linux => "linux",
            Policy::Scx => "scx",
            Policy::Custom(n) => n,
        }
    }

    /// The policy named `name` (any name but `linux` and `scx` is a
    /// registered policy's).
    pub fn from_name(name: &str) -> Policy {
        match name {
            "linux" => Policy::Linux,
            "scx" => Policy::Scx,
            other => Policy::Custom(other.to_string()),
        }
    }
}

impl Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Policy::from_name(&String::deserialize(d)?))
    }
}

/// The machine preset `schedlab sim` uses when none is named.
pub const DEFAULT_MACHINE: &str = "kunpeng920-node";

fn default_machine() -> String {
    DEFAULT_MACHINE.into()
}
fn default_kernel() -> String {
    "latest".into()
}
fn default_true() -> bool {
    true
}
fn default_seed() -> u64 {
    1
}

/// One run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Simulate (default) or run natively on this host.
    #[serde(default)]
    pub mode: Mode,
    /// A machine preset (`schedlab topology list`), a synthetic machine
    /// `smp:KEY=VALUE,...` (see [`topology::SmpSpec`]; its `cost=` key names
    /// the cost profile), `sysfs:DIR` or `hwloc:FILE` (simulator only).
    #[serde(default = "default_machine")]
    pub machine: String,
    /// Restrict the run to these CPUs (`0-3,8`), like taskset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Restrict the run to the CPUs of this NUMA node, like numactl -N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    /// Kernel profile, optionally with overrides
    /// (`linux-5.12+test_idle_cores_smt_gate=on`; simulator only).
    #[serde(default = "default_kernel")]
    pub kernel: String,
    /// Wake-up path and load-balancer feature overrides, NAME = VALUE
    /// (simulator only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, String>,
    /// Kernel build options, NAME = "y" | "n" (simulator only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kernel_config: BTreeMap<String, String>,
    /// Placement policy (simulator only).
    #[serde(default)]
    pub policy: Policy,
    /// The options of a registered policy, KEY = VALUE, given to its
    /// factory ([`crate::policies`]; simulator only).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub policy_options: toml::Table,
    /// Model costs (true) or make every modelled cost zero (simulator only).
    #[serde(default = "default_true")]
    pub costs: bool,
    /// The cpuidle driver and governor, `none` or `DRIVER[:GOVERNOR]`
    /// (simulator only; default: the machine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuidle: Option<String>,
    /// A cost profile file (TOML, as `schedlab costs show PRESET --toml`
    /// or `schedlab calibrate` write it) to use instead of the machine
    /// preset's costs; a relative path is taken from the current directory
    /// (simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_profile: Option<PathBuf>,
    /// Seed of every random stream.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Verify the model's invariants while running (slower).
    #[serde(default)]
    pub check: bool,
    /// Run in the guests of a host: a machine description (a preset such as
    /// `vm2x8`, or a TOML file; docs/vm.md), one workload instance per
    /// guest (simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// With `host`: this many copies of its first guest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guests: Option<u32>,
    /// With `host`: the host kernel profile instead of the description's
    /// (its fair class, placement and KVM rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_kernel: Option<String>,
    /// `kernel.numa_balancing` (simulator only; default: on when the
    /// machine has more than one node, as the kernel does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<bool>,
    /// Where new pages go, as numactl sets it: `local`,
    /// `interleave=all|NODES` or `membind=NODES` (simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_policy: Option<String>,
    /// Map workload memory with transparent huge pages (simulator only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub thp: bool,
    /// NUMA balancing knobs, NAME = VALUE (`scan_delay_ms`,
    /// `scan_period_min_ms`, `scan_period_max_ms`, `scan_size_mb`;
    /// simulator only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub numa_params: BTreeMap<String, String>,
    /// Mode kernel only: the kernel image to boot (a bzImage such as
    /// Debian's vmlinuz); default: the environment's
    /// `SCHEDLAB_KERNEL_IMAGE` ([`crate::kernel`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_image: Option<PathBuf>,
    /// Mode kernel only: the statically linked schedlab to run in the
    /// guest; default: `SCHEDLAB_GUEST_BINARY`, else this schedlab if it
    /// is static.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<PathBuf>,
    /// Mode kernel only: boot with KVM instead of TCG.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kvm: bool,
    /// The benchmark and its parameters.
    pub workload: WorkloadSpec,
}

impl RunSpec {
    /// A simulated run of `workload` with every other field at its default.
    pub fn new(workload: WorkloadSpec) -> Self {
        RunSpec {
            mode: Mode::Sim,
            machine: default_machine(),
            cpus: None,
            node: None,
            kernel: default_kernel(),
            features: BTreeMap::new(),
            kernel_config: BTreeMap::new(),
            policy: Policy::Linux,
            policy_options: toml::Table::new(),
            costs: true,
            cpuidle: None,
            cost_profile: None,
            seed: 1,
            check: false,
            host: None,
            guests: None,
            host_kernel: None,
            numa_balancing: None,
            mem_policy: None,
            thp: false,
            numa_params: BTreeMap::new(),
            kernel_image: None,
            guest: None,
            kvm: false,
            workload,
        }
    }

    /// The fields that only a kernel run reads, given a value.
    pub fn kernel_only_fields(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.kernel_image.is_some() {
            v.push("kernel_image");
        }
        if self.guest.is_some() {
            v.push("guest");
        }
        if self.kvm {
            v.push("kvm");
        }
        v
    }

    /// The fields that only the simulator reads, given a value other than
    /// their default (a native run with one is a mistake).
    pub fn simulator_only_fields(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.machine != DEFAULT_MACHINE {
            v.push("machine");
        }
        if self.kernel != default_kernel() {
            v.push("kernel");
        }
        if !self.features.is_empty() {
            v.push("features");
        }
        if !self.kernel_config.is_empty() {
            v.push("kernel_config");
        }
        if self.policy != Policy::Linux {
            v.push("policy");
        }
        if !self.policy_options.is_empty() {
            v.push("policy_options");
        }
        if !self.costs {
            v.push("costs");
        }
        if self.cpuidle.is_some() {
            v.push("cpuidle");
        }
        if self.numa_balancing.is_some() {
            v.push("numa_balancing");
        }
        if self.mem_policy.is_some() {
            v.push("mem_policy");
        }
        if self.thp {
            v.push("thp");
        }
        if !self.numa_params.is_empty() {
            v.push("numa_params");
        }
        if self.cost_profile.is_some() {
            v.push("cost_profile");
        }
        if self.check {
            v.push("check");
        }
        if self.host.is_some() {
            v.push("host");
        }
        if self.guests.is_some() {
            v.push("guests");
        }
        if self.host_kernel.is_some() {
            v.push("host_kernel");
        }
        v
    }

    /// The modelled machine.
    pub fn topology(&self) -> Result<Topology, SpecError> {
        topology::machine(&self.machine).map_err(|e| SpecError::field("machine", e))
    }

    /// For an `smp:` machine, its `cost=` value (`Some(None)` without
    /// one); `None` for any other machine.
    fn smp_cost(&self) -> Result<Option<Option<String>>, SpecError> {
        match self.machine.strip_prefix(topology::SMP_PREFIX) {
            None => Ok(None),
            Some(body) => topology::SmpSpec::parse(body)
                .map(|s| Some(s.cost))
                .map_err(|e| SpecError::field("machine", e)),
        }
    }

    /// The file an `smp:` machine's `cost=` names, when it names a file
    /// rather than a preset.
    pub fn smp_cost_file(&self) -> Option<PathBuf> {
        match self.smp_cost() {
            Ok(Some(Some(c))) if !is_preset(&c) => Some(PathBuf::from(c)),
            _ => None,
        }
    }

    /// The cost profile the run charges in place of the machine preset's
    /// own, and the preset whose cpuidle driver goes with it: the
    /// `cost_profile` file; else an `smp:` machine's `cost=` (a preset's
    /// profile, or a file). An `smp:` machine has no costs of its own, so
    /// without either it is an error unless costs are off.
    fn run_costs(&self) -> Result<(Option<MachineCosts>, Option<String>), SpecError> {
        let smp = self.smp_cost()?;
        if let (Some(_), Some(Some(c))) = (&self.cost_profile, &smp) {
            return Err(SpecError::field(
                "cost_profile",
                format!(
                    "the machine names its costs already (cost={}); give one or the other",
                    c.escape_debug()
                ),
            ));
        }
        if let Some(p) = &self.cost_profile {
            let c = sim::cost_profile::load(p).map_err(|e| SpecError::field("cost_profile", e))?;
            return Ok((Some(c), None));
        }
        match smp {
            Some(Some(c)) if is_preset(&c) => Ok((Some(MachineCosts::for_machine(&c)), Some(c))),
            Some(Some(c)) => {
                let costs = sim::cost_profile::load(Path::new(&c)).map_err(|e| {
                    SpecError::field(
                        "machine",
                        format!(
                            "smp: cost={}: not a preset ({}) and not a usable cost profile file: {}",
                            c.escape_debug(),
                            preset_names().join(", "),
                            e.to_string().escape_debug()
                        ),
                    )
                })?;
                Ok((Some(costs), None))
            }
            Some(None) if self.costs => Err(SpecError::field(
                "machine",
                format!(
                    "smp: cost: missing: a synthetic machine has no costs of its own; add cost=PRESET ({}) or cost=FILE (a cost profile, `schedlab costs show PRESET --toml`), or turn costs off",
                    preset_names().join(", ")
                ),
            )),
            _ => Ok((None, None)),
        }
    }

    /// The CPUs the run may use on `topo` (`None`: all).
    pub fn cpu_mask(&self, topo: &Topology) -> Result<Option<CpuMask>, SpecError> {
        match (&self.cpus, self.node) {
            (Some(_), Some(_)) => Err(SpecError::field("cpus", "give cpus or node, not both")),
            (Some(list), None) => CpuMask::parse_list(list)
                .map(Some)
                .map_err(|e| SpecError::field("cpus", format!("{list:?}: {e}"))),
            (None, Some(n)) => {
                if n >= topo.nr_nodes() {
                    return Err(SpecError::field(
                        "node",
                        format!(
                            "machine {} has nodes 0-{} (got {n})",
                            topo.name(),
                            topo.nr_nodes() - 1
                        ),
                    ));
                }
                Ok(Some(topo.node_cpus(n).clone()))
            }
            (None, None) => Ok(None),
        }
    }

    /// The kernel profile with every override applied.
    pub fn features(&self) -> Result<Features, SpecError> {
        let mut f: Features = self
            .kernel
            .parse()
            .map_err(|e| SpecError::field("kernel", e))?;
        // the fair class first: the toggles of its discipline follow it
        let (class, rest): (Vec<_>, Vec<_>) =
            self.features.iter().partition(|(k, _)| *k == "fair_class");
        for (k, v) in class.into_iter().chain(rest) {
            f.set(k, v)
                .map_err(|e| SpecError::field(format!("features.{k}={v}"), e))?;
        }
        for (k, v) in &self.kernel_config {
            f.set_config(k, v)
                .map_err(|e| SpecError::field(format!("kernel_config.{k}={v}"), e))?;
        }
        Ok(f)
    }

    /// The kernel this run models, as [`Features::name`] spells it and
    /// [`Features`]' `FromStr` reads it back: the profile, then
    /// `+NAME=VALUE` for every feature or kernel build option whose value
    /// differs from the profile's, in the order they were applied (the
    /// `kernel` field's own overrides, then `features`, then
    /// `kernel_config`). An override that restates the profile's value, or
    /// that a later one undoes, is left out.
    pub fn kernel_name(&self) -> Result<String, SpecError> {
        let f = self.features()?;
        let name = f.name();
        let profile = name.split('+').next().unwrap_or_default().to_string();
        let mut kept = split_overrides(&name[profile.len()..]);
        let build = |list: &[String]| -> Result<Features, SpecError> {
            let mut s = profile.clone();
            for o in list {
                s.push('+');
                s.push_str(o);
            }
            s.parse().map_err(|e| SpecError::field("kernel", e))
        };
        let values = feature_values(&f);
        let mut i = 0;
        while i < kept.len() {
            let mut without = kept.clone();
            without.remove(i);
            if feature_values(&build(&without)?) == values {
                kept = without;
            } else {
                i += 1;
            }
        }
        Ok(build(&kept)?.name())
    }

    /// The policy the simulator runs: a registered policy's factory is
    /// built with `policy_options` ([`crate::policies::factory`]).
    pub fn policy_choice(&self) -> Result<PolicyChoice, SpecError> {
        if self.policy != Policy::Linux
            && (!self.features.is_empty() || !self.kernel_config.is_empty())
        {
            return Err(SpecError::field(
                "policy",
                "features and kernel_config apply to policy linux only",
            ));
        }
        let custom = match &self.policy {
            Policy::Custom(name) => name,
            builtin => {
                if let Some(key) = self.policy_options.keys().next() {
                    return Err(SpecError::field(
                        format!("policy_options.{key}"),
                        format!(
                            "policy {} has no options (policy_options apply to a registered policy)",
                            builtin.name()
                        ),
                    ));
                }
                return Ok(match builtin {
                    Policy::Scx => PolicyChoice::ScxDefault,
                    _ => PolicyChoice::Linux(Box::new(self.features()?)),
                });
            }
        };
        crate::policies::factory(custom, &self.policy_options)
            .map(PolicyChoice::Custom)
            .map_err(|e| match e {
                crate::policies::PolicyError::Options(m) => {
                    SpecError::field("policy_options", format!("policy {custom}: {m}"))
                }
                other => SpecError::field("policy", other),
            })
    }

    /// The simulator's options for this run on `topo`.
    pub fn sim_options(&self, topo: &Topology) -> Result<SimOptions, SpecError> {
        let policy = self.policy_choice()?;
        let (costs_profile, cost_preset) = self.run_costs()?;
        let cpuidle = match (&self.cpuidle, cost_preset) {
            (Some(s), _) => Some(s.parse().map_err(|e| SpecError::field("cpuidle", e))?),
            // an smp: machine with a preset's costs idles as that preset
            // (its idle states are in the profile)
            (None, Some(p)) => Some(sim::cpuidle::Cpuidle::for_machine(&p).0),
            (None, None) => None,
        };
        if self.numa_balancing == Some(true) && topo.nr_nodes() < 2 {
            return Err(SpecError::field(
                "numa_balancing",
                format!(
                    "on: machine {} has one NUMA node; automatic NUMA balancing needs two or more",
                    topo.name()
                ),
            ));
        }
        let mem_policy = match &self.mem_policy {
            None => sim::numa::MemPolicy::Local,
            Some(s) => sim::numa::MemPolicy::parse(s, topo.nr_nodes()).map_err(|e| {
                SpecError::field("mem_policy", e.trim_start_matches("--mem-policy: "))
            })?,
        };
        let mut numa_params = sim::numa::NumaParams::default();
        for (k, v) in &self.numa_params {
            numa_params
                .set(k, v)
                .map_err(|e| SpecError::field(format!("numa_params.{k}"), e))?;
        }
        Ok(SimOptions {
            cpus: self.cpu_mask(topo)?,
            seed: self.seed,
            check: self.check,
            costs: self.costs,
            policy,
            cpuidle,
            costs_profile,
            numa_balancing: self.numa_balancing,
            mem_policy,
            thp: self.thp,
            numa_params,
            ..Default::default()
        })
    }

    /// Check everything that can be checked without running: the machine,
    /// CPUs, kernel and features for a simulated run; that no simulator-only
    /// field is set and the workload has a native port for a native one.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.mode != Mode::Kernel {
            if let Some(f) = self.kernel_only_fields().first() {
                return Err(SpecError::field(
                    *f,
                    format!(
                        "applies to mode \"kernel\" only (this run is {})",
                        self.mode.name()
                    ),
                ));
            }
        }
        match self.mode {
            // a kernel run's own rules are checked by exec::check
            // (crate::kernel::validate), which knows every mode
            Mode::Kernel => Ok(()),
            Mode::Sim => {
                for (key, set) in [
                    ("guests", self.guests.is_some()),
                    ("host_kernel", self.host_kernel.is_some()),
                ] {
                    if set && self.host.is_none() {
                        return Err(SpecError::field(key, "applies with host only"));
                    }
                }
                let topo = self.topology()?;
                let opts = self.sim_options(&topo)?;
                // a registered policy's stage names, refused before any run
                sim::run::check_policy(&topo, &opts).map_err(|e| SpecError::field("policy", e))?;
                match &self.workload {
                    WorkloadSpec::Schbench(s) => {
                        s.model()?;
                    }
                    WorkloadSpec::Rtapp(r) => {
                        r.model()?;
                    }
                    WorkloadSpec::Scenario(s) => {
                        if self.policy != Policy::Linux {
                            return Err(SpecError::field(
                                "policy",
                                "a placement scenario is held against the Linux wake-up path (policy linux)",
                            ));
                        }
                        if self.host.is_some() {
                            return Err(SpecError::field(
                                "host",
                                "placement scenarios do not run in guests",
                            ));
                        }
                        s.setup(&topo)?;
                    }
                    _ => {}
                }
                Ok(())
            }
            Mode::Native => {
                if let Some(f) = self.simulator_only_fields().first() {
                    return Err(SpecError::field(
                        *f,
                        "is simulator only; a native run uses this host as it is",
                    ));
                }
                match &self.workload {
                    WorkloadSpec::Spin(_) | WorkloadSpec::Falseshare(_) | WorkloadSpec::Npb(_) => Err(SpecError::field(
                        "benchmark",
                        format!(
                            "{} has no native port (simulator only)",
                            self.workload.name()
                        ),
                    )),
                    WorkloadSpec::Scenario(_) => Err(SpecError::field(
                        "benchmark",
                        "a placement scenario runs in mode sim or kernel (`schedlab kernel scenario` runs it on this host)",
                    )),
                    WorkloadSpec::Schbench(s) => s.native().map(|_| ()),
                    WorkloadSpec::Rtapp(r) => {
                        if self.cpus.is_some() || self.node.is_some() {
                            return Err(SpecError::field(
                                if self.cpus.is_some() { "cpus" } else { "node" },
                                "rt-app pins its threads itself: give `cpus` in the rt-app file",
                            ));
                        }
                        let (_, app) = r.load()?;
                        native::rtapp::validate(&app).map_err(|e| {
                            SpecError::field("file", format!("{}: {e}", r.file.display()))
                        })
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// The preset names (`host` included: it has a profile too).
fn preset_names() -> Vec<&'static str> {
    topology::presets().iter().map(|p| p.0).collect()
}

fn is_preset(name: &str) -> bool {
    preset_names().contains(&name)
}

/// The `+NAME=VALUE` overrides after a profile name, as [`Features`]'
/// `FromStr` splits them (a piece without `=` continues the previous
/// value, as in `scan_start=target+1`).
fn split_overrides(rest: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for p in rest.split('+').filter(|p| !p.is_empty()) {
        match v.last_mut() {
            Some(last) if !p.contains('=') => {
                last.push('+');
                last.push_str(p);
            }
            _ => v.push(p.to_string()),
        }
    }
    v
}

/// Every value of `f` but its name and list of overrides: two feature sets
/// with the same values behave the same. `Features` has no public accessor
/// for the value set alone, so this reads its `Debug` form and drops the
/// `overrides: [...]` field (override values never contain `]`).
fn feature_values(f: &Features) -> String {
    let d = format!("{f:?}");
    match d.find("overrides: [") {
        Some(start) => match d[start..].find("], ") {
            Some(len) => format!("{}{}", &d[..start], &d[start + len + 3..]),
            None => d,
        },
        None => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::FalseShareSpec;

    fn spec(kernel: &str, features: &[(&str, &str)], config: &[(&str, &str)]) -> RunSpec {
        let map = |l: &[(&str, &str)]| {
            l.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        RunSpec {
            kernel: kernel.into(),
            features: map(features),
            kernel_config: map(config),
            ..RunSpec::new(WorkloadSpec::Falseshare(FalseShareSpec::default()))
        }
    }

    #[test]
    fn kernel_name_keeps_only_the_overrides_that_change_a_value() {
        assert_eq!(spec("latest", &[], &[]).kernel_name().unwrap(), "latest");
        // latest has sis_util on and SIS_PROP off already
        assert_eq!(
            spec("latest", &[("sis_util", "on"), ("sis_prop", "off")], &[])
                .kernel_name()
                .unwrap(),
            "latest"
        );
        assert_eq!(
            spec("latest", &[("sis_util", "off"), ("wa_idle", "on")], &[])
                .kernel_name()
                .unwrap(),
            "latest+sis_util=off"
        );
        // overrides in the kernel field, a value with '+', a build option
        let s = spec(
            "linux-5.12+test_idle_cores_smt_gate=on+select_idle_smt_mode=none",
            &[("scan_start", "target+1")],
            &[("SCHED_CLUSTER", "n"), ("SCHED_SMT", "y")],
        );
        let name = s.kernel_name().unwrap();
        assert_eq!(
            name,
            "linux-5.12+test_idle_cores_smt_gate=on+scan_start=target+1"
        );
        // linux-5.12 has no CLS level: SCHED_CLUSTER=n restates it
        let back: Features = name.parse().unwrap();
        assert_eq!(
            feature_values(&back),
            feature_values(&s.features().unwrap())
        );
    }

    #[test]
    fn kernel_name_drops_an_override_a_later_one_undoes() {
        // the feature sched_cluster and the build option both set CLS
        let s = spec(
            "latest",
            &[("sched_cluster", "off")],
            &[("SCHED_CLUSTER", "y")],
        );
        assert_eq!(s.kernel_name().unwrap(), "latest");
        let s = spec(
            "latest",
            &[("sched_cluster", "on")],
            &[("SCHED_CLUSTER", "n")],
        );
        let name = s.kernel_name().unwrap();
        assert_eq!(name, "latest+SCHED_CLUSTER=n");
    }

    fn smp(machine: &str) -> RunSpec {
        RunSpec {
            machine: machine.into(),
            ..RunSpec::new(WorkloadSpec::Falseshare(FalseShareSpec::default()))
        }
    }

    #[test]
    fn an_smp_machine_needs_a_named_cost_profile() {
        let e = smp("smp:clusters=6,cores=4").validate().unwrap_err();
        assert_eq!(e.field, "machine");
        assert!(e.message.starts_with("smp: cost: missing"), "{e}");
        // costs off: nothing is charged, nothing needs naming
        let off = RunSpec {
            costs: false,
            ..smp("smp:clusters=6,cores=4")
        };
        assert!(off.validate().is_ok());
        // a preset's profile, and the preset's cpuidle driver with it
        let s = smp("smp:clusters=6,cores=4,cost=xeon-12c24t");
        let topo = s.topology().unwrap();
        assert_eq!(topo.nr_cpus(), 24);
        let o = s.sim_options(&topo).unwrap();
        assert_eq!(
            o.costs_profile,
            Some(MachineCosts::for_machine("xeon-12c24t"))
        );
        assert_eq!(
            o.cpuidle,
            Some(sim::cpuidle::Cpuidle::for_machine("xeon-12c24t").0)
        );
        assert_eq!(s.smp_cost_file(), None);
        // a file that is not there
        let e = smp("smp:cores=4,cost=no/such.toml").validate().unwrap_err();
        assert!(
            e.message
                .starts_with("smp: cost=no/such.toml: not a preset (kunpeng920,"),
            "{e}"
        );
        assert_eq!(
            smp("smp:cores=4,cost=no/such.toml").smp_cost_file(),
            Some(PathBuf::from("no/such.toml"))
        );
        // a bad shape names the key
        let e = smp("smp:cores=4,nodes=3").validate().unwrap_err();
        assert!(
            e.message
                .starts_with("smp: nodes=3: must be one of 1, 2, 4"),
            "{e}"
        );
    }

    #[test]
    fn a_cost_file_of_an_smp_machine_is_loaded_and_fingerprinted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        let costs = MachineCosts::for_machine("epyc-zen3");
        let write = |c: &MachineCosts| {
            let text = sim::cost_profile::to_toml(c, "test", &BTreeMap::new());
            std::fs::write(&file, text).unwrap();
        };
        write(&costs);
        let machine = format!("smp:dies=2,cores=4,threads=2,cost={}", file.display());
        let s = smp(&machine);
        let o = s.sim_options(&s.topology().unwrap()).unwrap();
        assert_eq!(o.costs_profile.as_ref(), Some(&costs));
        assert_eq!(o.cpuidle, None, "a file names no cpuidle driver");
        // the fingerprint of an experiment reads the file
        let text = format!(
            "name = \"t\"\n[run]\nmachine = \"{machine}\"\nbenchmark = \"falseshare\"\n[[variant]]\nname = \"a\"\n"
        );
        let exp = crate::Experiment::parse("t.toml", &text, false).unwrap();
        let before = crate::runlog::fingerprint(&exp);
        write(&MachineCosts {
            ipi_ns: costs.ipi_ns + 1,
            ..costs.clone()
        });
        assert_ne!(crate::runlog::fingerprint(&exp), before);
    }

    #[test]
    fn kernel_name_reports_a_bad_kernel() {
        assert!(spec("linux-1.0", &[], &[]).kernel_name().is_err());
        assert!(spec("latest", &[("nope", "on")], &[])
            .kernel_name()
            .is_err());
    }
}
