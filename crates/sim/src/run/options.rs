//! What a simulation run is asked: the policy and the options.

use super::*;

/// Which placement policy to use.
#[derive(Clone, Debug)]
pub enum PolicyChoice {
    /// The Linux wake-up path of a kernel profile (with overrides).
    Linux(Box<Features>),
    /// sched_ext's built-in idle pick.
    ScxDefault,
    /// A policy outside the Linux path, built by its factory for each run:
    /// it runs as [`PolicyChoice::ScxDefault`] does (no load balancer, the
    /// default sched domains, the run's EEVDF parameters; see
    /// [`crate::placement::PolicyFactory`]).
    Custom(std::sync::Arc<dyn crate::placement::PolicyFactory>),
}

impl Default for PolicyChoice {
    fn default() -> Self {
        PolicyChoice::Linux(Box::new(
            Features::kernel("latest").expect("the latest profile exists"),
        ))
    }
}

/// Options of a simulation run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// CPUs the workload may use (None: all).
    pub cpus: Option<CpuMask>,
    /// Seed.
    pub seed: u64,
    /// Check invariants while running.
    pub check: bool,
    /// Model costs (false: `--costs off`, every cost zero).
    pub costs: bool,
    /// Policy.
    pub policy: PolicyChoice,
    /// Sched-domain construction options (None: what the policy's kernel
    /// builds).
    pub domains: Option<DomainOptions>,
    /// EEVDF parameters (the base slice is the kernel's when the policy is
    /// Linux).
    pub eevdf: EevdfParams,
    /// Safety limit on simulated time (`--time-limit`).
    pub time_limit: Nanos,
    /// Limit on the events processed (`--max-events`; None: no limit).
    pub max_events: Option<u64>,
    /// Limit on the memory a run is estimated to need, bytes
    /// (`--max-memory`): a larger run is refused before anything is
    /// allocated ([`Footprint`]).
    pub max_memory: u64,
    /// Where the run publishes how far it has got (for a progress display).
    pub progress: Option<std::sync::Arc<Progress>>,
    /// The cpuidle driver and governor (None: the machine's, see
    /// [`crate::cpuidle::Cpuidle::for_machine`]).
    pub cpuidle: Option<crate::cpuidle::Cpuidle>,
    /// Diagnostic only: a dummy cost charged to the waker's CPU at every
    /// wake-up (`MachineCosts::dummy_wakeup_ns`), for the A/A check that a
    /// cost this small does not move the results more than a change of
    /// seed does. Ignored with `costs == false`.
    pub dummy_wakeup_ns: Nanos,
    /// The cost profile to use instead of the machine preset's
    /// ([`MachineCosts::for_machine`]); `--cost-profile FILE`. `costs:
    /// false` still zeroes it.
    pub costs_profile: Option<MachineCosts>,
    /// Measure the host time the run spends in the modelled kernel's
    /// decisions ([`crate::engine::PhaseTimes`], `--stats`).
    pub phase_timing: bool,
    /// Where the run's events go (`--trace FILE`; None: not traced). The
    /// run takes the sink out of the slot and puts it back when it ends.
    pub trace: Option<crate::trace::TraceSlot>,
    /// `kernel.numa_balancing` (`--numa-balancing on|off`; None: the
    /// kernel's default, on when the machine has more than one node).
    pub numa_balancing: Option<bool>,
    /// Where new pages go (`--mem-policy`, numactl's policies).
    pub mem_policy: crate::numa::MemPolicy,
    /// Workload memory is mapped with transparent huge pages (`--thp`).
    pub thp: bool,
    /// NUMA balancing's knobs (`--numa-param NAME=VALUE`); `enabled` and
    /// `thp` come from the fields above.
    pub numa_params: crate::numa::NumaParams,
}

impl SimOptions {
    /// The costs a run on `topo` charges: the given profile, or the
    /// machine's own; zeroed under `--costs off`.
    pub fn machine_costs(&self, topo: &Topology) -> MachineCosts {
        let c = match &self.costs_profile {
            Some(p) => p.clone(),
            None => MachineCosts::for_machine(topo.name()),
        };
        if self.costs {
            c
        } else {
            c.zeroed()
        }
    }
}

/// The default simulated-time limit, seconds.
pub const DEFAULT_TIME_LIMIT_S: u64 = 3600;
/// The default memory limit, MiB.
pub const DEFAULT_MAX_MEMORY_MIB: u64 = 4096;

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            cpus: None,
            seed: 1,
            check: false,
            costs: true,
            policy: PolicyChoice::default(),
            domains: None,
            eevdf: EevdfParams::default(),
            time_limit: DEFAULT_TIME_LIMIT_S * 1_000_000_000,
            max_events: None,
            max_memory: DEFAULT_MAX_MEMORY_MIB << 20,
            progress: None,
            cpuidle: None,
            dummy_wakeup_ns: 0,
            costs_profile: None,
            phase_timing: false,
            trace: None,
            numa_balancing: None,
            mem_policy: crate::numa::MemPolicy::Local,
            thp: false,
            numa_params: crate::numa::NumaParams::default(),
        }
    }
}
