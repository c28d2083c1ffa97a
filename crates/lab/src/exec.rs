//! Running one [`RunSpec`]: in the simulator, or with the native port on
//! this host. Both give the run's JSON record, whose field names are the
//! same for the two where the meaning is, so [`crate::metrics`] reads either.

use crate::spec::{Mode, RunSpec, SpecError};
use crate::workload::WorkloadSpec;
use native::CpuSelection;
use serde_json::Value;
use sim::run::SimError;
use sim::workload::hackbench::Hackbench;
use sim::workload::spin::Spin;

pub use crate::outcome::{RunError, Simulated};

fn to_json(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).expect("plain data serialises")
}

/// The bounds of a simulated run (`--max-events`, `--time-limit`,
/// `--max-memory`): not part of its specification, since they do not
/// change what it computes, only whether it may finish. The default is
/// the simulator's (no event limit, 3600 simulated seconds, 4096 MiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Stop with an error after this many events.
    pub max_events: Option<u64>,
    /// Stop with an error past this many simulated seconds.
    pub time_limit_s: u64,
    /// Refuse a run whose estimated memory exceeds this many MiB.
    pub max_memory_mib: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            max_events: None,
            time_limit_s: sim::run::DEFAULT_TIME_LIMIT_S,
            max_memory_mib: sim::run::DEFAULT_MAX_MEMORY_MIB,
        }
    }
}

impl Bounds {
    /// Set these bounds in `o`.
    pub fn apply(&self, o: &mut sim::run::SimOptions) {
        o.max_events = self.max_events;
        o.time_limit = self.time_limit_s.saturating_mul(1_000_000_000);
        o.max_memory = self.max_memory_mib.saturating_mul(1 << 20);
    }
}

/// Simulate `spec` (its mode is not consulted).
pub fn simulate(spec: &RunSpec) -> Result<Simulated, RunError> {
    simulate_with(spec, |_| {})
}

/// Simulate `spec` with its options adjusted by `adjust`: the bounds of
/// the run and its progress display, which are not part of the run's
/// specification (they do not change what it computes, only whether it
/// is allowed to finish).
pub fn simulate_with(
    spec: &RunSpec,
    adjust: impl FnOnce(&mut sim::run::SimOptions),
) -> Result<Simulated, RunError> {
    let topo = spec.topology()?;
    let mut opts = spec.sim_options(&topo)?;
    adjust(&mut opts);
    if let Some(host) = &spec.host {
        return crate::vm::simulate_on_host(spec, host, opts);
    }
    let (result, params) = match &spec.workload {
        WorkloadSpec::Hackbench(h) => {
            let hb: Hackbench = h.bench();
            (
                sim::run::simulate_hackbench(&topo, &hb, &opts)?,
                to_json(&hb),
            )
        }
        WorkloadSpec::Spin(s) => {
            let ncpus = opts.cpus.as_ref().map_or(topo.nr_cpus(), |m| m.weight());
            let sp = Spin {
                tasks: s.tasks.unwrap_or(2 * ncpus as u32),
                work_ns: s.work_ms as u64 * 1_000_000,
                mem_mib: s.mem_mib,
            };
            if sp.work_ns == 0 {
                return Err(SpecError::field("work_ms", "must be an integer > 0").into());
            }
            (sim::run::simulate_spin(&topo, &sp, &opts)?, to_json(&sp))
        }
        WorkloadSpec::Schbench(s) => {
            let sb = s.model()?;
            (
                sim::run::simulate_schbench(&topo, &sb, &opts)?,
                to_json(&sb),
            )
        }
        WorkloadSpec::Tbench(t) => {
            let tb = t.bench();
            (sim::run::simulate_tbench(&topo, &tb, &opts)?, to_json(&tb))
        }
        WorkloadSpec::Rtapp(r) => {
            let w = r.model()?;
            let params = to_json(&w.app);
            (sim::run::simulate_rtapp(&topo, &w, &opts)?, params)
        }
        WorkloadSpec::Npb(n) => {
            let ncpus = opts.cpus.as_ref().map_or(topo.nr_cpus(), |m| m.weight());
            let m = n.model(ncpus)?;
            (sim::run::simulate_npb(&topo, &m, &opts)?, to_json(&m))
        }
        WorkloadSpec::Scenario(_) => {
            return Err(SpecError::field(
                "benchmark",
                "a placement scenario is one decision of the wake-up path, not an event-driven run (no trace, no text report)",
            )
            .into())
        }
        WorkloadSpec::Falseshare(f) => {
            let fs = sim::workload::falseshare::FalseShare {
                iterations: f.iterations,
            };
            (
                sim::run::simulate_falseshare(&topo, &fs, &opts)?,
                to_json(&fs),
            )
        }
    };
    Ok(Simulated { result, params })
}

/// The simulator's JSON record of a run: every field is deterministic.
pub fn sim_json(s: &Simulated) -> Value {
    let mut v = to_json(&s.result);
    v["mode"] = Value::from("sim");
    v["time_s"] = Value::from(s.result.time_ns as f64 / 1e9);
    v["params"] = s.params.clone();
    v
}

fn cpu_selection(spec: &RunSpec) -> Result<CpuSelection, RunError> {
    Ok(match (&spec.cpus, spec.node) {
        (Some(_), Some(_)) => {
            return Err(SpecError::field("cpus", "give cpus or node, not both").into())
        }
        (Some(list), None) => CpuSelection::Cpus(native::cpus::parse_cpu_list(list, "--cpus")?),
        (None, Some(n)) => CpuSelection::Node(
            u32::try_from(n).map_err(|_| SpecError::field("node", "out of range"))?,
        ),
        (None, None) => CpuSelection::Inherit,
    })
}

/// Run `spec` with the native port on this host, quietly (the tool's text
/// is not printed), and return its JSON record.
pub fn run_native(spec: &RunSpec) -> Result<Value, RunError> {
    let cpus = cpu_selection(spec)?;
    let quiet = &mut |_: &str| {};
    Ok(match &spec.workload {
        WorkloadSpec::Hackbench(h) => {
            let cfg = native::hackbench::HackbenchConfig {
                bench: h.bench(),
                cpus,
                timeout: None,
            };
            cfg.validate()?;
            to_json(&native::hackbench::run(&cfg)?)
        }
        WorkloadSpec::Schbench(s) => {
            let cfg = native::schbench::SchbenchConfig {
                bench: s.native()?,
                cpus,
                timeout: None,
            };
            cfg.validate()?;
            to_json(&native::schbench::run(&cfg, quiet)?)
        }
        WorkloadSpec::Tbench(t) => {
            let cfg = native::tbench::TbenchConfig {
                bench: t.bench(),
                cpus,
                timeout: None,
            };
            cfg.validate()?;
            to_json(&native::tbench::run(&cfg, &mut |_| {
                std::ops::ControlFlow::Continue(())
            })?)
        }
        WorkloadSpec::Rtapp(r) => {
            let (text, _) = r.load()?;
            let cfg = native::rtapp::RtappConfig {
                text,
                timeout: None,
                keep_logs: None,
                nice: r.native_nice,
            };
            to_json(&native::rtapp::run(&cfg)?)
        }
        WorkloadSpec::Spin(_)
        | WorkloadSpec::Falseshare(_)
        | WorkloadSpec::Npb(_)
        | WorkloadSpec::Scenario(_) => {
            return Err(SpecError::field("benchmark", "no native port (simulator only)").into())
        }
    })
}

/// Check a run's workload parameters without running it, as the run
/// itself would (so an experiment fails before its first run, not in the
/// middle): the benchmark's own validation, the loadfile, and for a native
/// run this host's CPUs and limits.
pub fn check(spec: &RunSpec) -> Result<(), RunError> {
    spec.validate()?;
    match spec.mode {
        Mode::Sim => {
            if let Some(host) = &spec.host {
                // the host file or preset and its guests' machines exist
                crate::vm::resolve_host(spec, host)?;
            }
            match &spec.workload {
                WorkloadSpec::Hackbench(h) => h.bench().validate().map_err(SimError::from)?,
                WorkloadSpec::Schbench(s) => {
                    let mut m = s.model()?;
                    m.nprocs = spec.topology()?.nr_cpus();
                    m.validate().map_err(SimError::from)?;
                }
                WorkloadSpec::Tbench(t) => {
                    sim::workload::tbench::TbenchModel::new(t.bench()).map_err(|e| match e {
                        sim::workload::tbench::TbenchError::Spec(e) => SimError::Spec(e),
                        sim::workload::tbench::TbenchError::File(e) => SimError::File(e),
                    })?;
                }
                WorkloadSpec::Spin(s) => {
                    if s.work_ms == 0 {
                        return Err(SpecError::field("work_ms", "must be an integer > 0").into());
                    }
                    if s.tasks == Some(0) {
                        return Err(SpecError::field("tasks", "must be an integer > 0").into());
                    }
                }
                WorkloadSpec::Rtapp(r) => {
                    r.model()?;
                }
                WorkloadSpec::Npb(n) => {
                    n.model(1)?;
                }
                WorkloadSpec::Falseshare(f) => {
                    if f.iterations == 0 {
                        return Err(SpecError::field("iterations", "must be an integer > 0").into());
                    }
                }
                // validate() built its setup on the machine
                WorkloadSpec::Scenario(_) => {}
            }
            Ok(())
        }
        // what can be checked without the environment;
        // kernel::preflight checks the rest before an experiment runs
        Mode::Kernel => Ok(crate::kernel::validate(spec)?),
        Mode::Native => {
            if let WorkloadSpec::Rtapp(_) = &spec.workload {
                // validate() checked the file; rt-app must be here to run it
                native::rtapp::find_rtapp()?;
                return Ok(());
            }
            let cpus = cpu_selection(spec)?;
            match &spec.workload {
                WorkloadSpec::Hackbench(h) => native::hackbench::HackbenchConfig {
                    bench: h.bench(),
                    cpus,
                    timeout: None,
                }
                .validate()?,
                WorkloadSpec::Schbench(s) => native::schbench::SchbenchConfig {
                    bench: s.native()?,
                    cpus,
                    timeout: None,
                }
                .validate()?,
                WorkloadSpec::Tbench(t) => native::tbench::TbenchConfig {
                    bench: t.bench(),
                    cpus,
                    timeout: None,
                }
                .validate()?,
                WorkloadSpec::Spin(_)
                | WorkloadSpec::Falseshare(_)
                | WorkloadSpec::Rtapp(_)
                | WorkloadSpec::Npb(_)
                | WorkloadSpec::Scenario(_) => {
                    return Err(
                        SpecError::field("benchmark", "no native port (simulator only)").into(),
                    )
                }
            }
            Ok(())
        }
    }
}

/// Run `spec` in its mode and return its JSON record.
pub fn run(spec: &RunSpec) -> Result<Value, RunError> {
    run_bounded(spec, &Bounds::default())
}

/// Run `spec` in its mode and return its JSON record; a simulated run
/// within `bounds` (a placement scenario is one decision, not bounded).
pub fn run_bounded(spec: &RunSpec, bounds: &Bounds) -> Result<Value, RunError> {
    match spec.mode {
        Mode::Sim if matches!(spec.workload, WorkloadSpec::Scenario(_)) => {
            crate::scenario::simulate(spec)
        }
        Mode::Sim => Ok(sim_json(&simulate_with(spec, |o| bounds.apply(o))?)),
        Mode::Native => run_native(spec),
        Mode::Kernel => crate::kernel::run(spec),
    }
}
