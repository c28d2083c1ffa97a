//! Runs in the guests of a host (`host` in a run, `--host` on the command
//! line): one instance of the workload per guest, co-simulated with the
//! host ([`sim::host`]). The record is the first guest's, as a bare-metal
//! run's, plus a `vm` object with every guest's figures, its vCPUs' steal
//! and pre-emptions and the host's pre-emption lengths; the text report
//! prints every guest's.

use crate::outcome::{RunError, Simulated};
use crate::spec::{RunSpec, SpecError};
use crate::workload::WorkloadSpec;
use serde_json::{json, Value};
use sim::host::run::{simulate_vm, VmError, VmResult};
use sim::host::spec::HostSpec;
use sim::run::{SimError, SimOptions};
use sim::workload::tbench::{TbenchError, TbenchModel};
use topology::Topology;

/// The most guests `guests` may ask for.
pub const MAX_GUESTS: u32 = 64;

fn vm_err(e: VmError) -> RunError {
    match e {
        VmError::Host(h) => SpecError::field("host", h.to_string()).into(),
        VmError::Sim(s) => s.into(),
    }
}

fn to_json(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).expect("plain data serialises")
}

/// The host description `host` names and its guests' machines, checked
/// against `spec` (every error names the field): what [`simulate_on_host`]
/// runs on, and what an experiment checks before any run.
pub(crate) fn resolve_host(
    spec: &RunSpec,
    host: &str,
) -> Result<(HostSpec, Vec<Topology>), RunError> {
    if spec.cpus.is_some() || spec.node.is_some() {
        return Err(SpecError::field(
            if spec.cpus.is_some() { "cpus" } else { "node" },
            "does not apply with host: each guest runs on all of its vCPUs",
        )
        .into());
    }
    let mut hs: HostSpec =
        sim::host::spec::resolve(host).map_err(|e| SpecError::field("host", e.to_string()))?;
    if let Some(n) = spec.guests {
        if n == 0 || n > MAX_GUESTS {
            return Err(SpecError::field("guests", format!("must be 1 to {MAX_GUESTS}")).into());
        }
        hs = hs.with_guests(n as usize);
    }
    if let Some(k) = &spec.host_kernel {
        hs = hs
            .with_kernel(k)
            .map_err(|e| SpecError::field("host_kernel", e.to_string()))?;
    }
    let mut topos: Vec<Topology> = Vec::new();
    for (i, g) in hs.guests.iter().enumerate() {
        topos.push(topology::machine(&g.machine).map_err(|e| {
            SpecError::field("host", format!("{}: guest[{i}].machine: {e}", hs.origin))
        })?);
    }
    Ok((hs, topos))
}

/// Simulate `spec` in the guests of `host` with the options `opts`.
pub(crate) fn simulate_on_host(
    spec: &RunSpec,
    host: &str,
    opts: SimOptions,
) -> Result<Simulated, RunError> {
    let (hs, topos) = resolve_host(spec, host)?;
    let run = |r: Result<VmResult, VmError>| r.map_err(vm_err);
    let (vm, params) = match &spec.workload {
        WorkloadSpec::Hackbench(h) => {
            let hb = h.bench();
            hb.validate().map_err(SimError::from)?;
            let ws = vec![hb.clone(); topos.len()];
            (run(simulate_vm(&hs, &ws, &opts))?, to_json(&hb))
        }
        WorkloadSpec::Spin(s) => {
            let ws: Vec<_> = topos
                .iter()
                .map(|t| sim::workload::spin::Spin {
                    tasks: s.tasks.unwrap_or(2 * t.nr_cpus() as u32),
                    work_ns: s.work_ms as u64 * 1_000_000,
                    mem_mib: s.mem_mib,
                })
                .collect();
            if s.mem_mib > 0 {
                return Err(SpecError::field(
                    "mem_mib",
                    "is not modelled in guests (--host): guest memory has no nodes here",
                )
                .into());
            }
            if s.work_ms == 0 {
                return Err(SpecError::field("work_ms", "must be an integer > 0").into());
            }
            (run(simulate_vm(&hs, &ws, &opts))?, to_json(&ws[0]))
        }
        WorkloadSpec::Schbench(s) => {
            let sb = s.model()?;
            let ws: Vec<_> = topos
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut m = sb.clone();
                    m.nprocs = t.nr_cpus();
                    m.seed = opts.seed.wrapping_add(i as u64);
                    m.madd_ps = opts
                        .costs_profile
                        .as_ref()
                        .map_or_else(
                            || sim::costs::MachineCosts::for_machine(t.name()),
                            |c| c.clone(),
                        )
                        .matmul_madd_ps;
                    m
                })
                .collect();
            for m in &ws {
                m.validate().map_err(SimError::from)?;
            }
            (run(simulate_vm(&hs, &ws, &opts))?, to_json(&ws[0]))
        }
        WorkloadSpec::Tbench(t) => {
            let tb = t.bench();
            let m = TbenchModel::new(tb.clone()).map_err(|e| match e {
                TbenchError::Spec(e) => SimError::Spec(e),
                TbenchError::File(e) => SimError::File(e),
            })?;
            if !opts.costs {
                return Err(SimError::Unsupported(
                    "--costs off: tbench runs for a time, and with every cost zero no simulated time passes".into(),
                )
                .into());
            }
            let ws = vec![m; topos.len()];
            (run(simulate_vm(&hs, &ws, &opts))?, to_json(&tb))
        }
        WorkloadSpec::Falseshare(_) => {
            return Err(
                SpecError::field("host", "the false-sharing loop does not run in guests").into(),
            )
        }
        WorkloadSpec::Scenario(_) => {
            return Err(SpecError::field("host", "placement scenarios do not run in guests").into())
        }
        WorkloadSpec::Rtapp(_) => return Err(SpecError::field(
            "host",
            "rt-app workloads do not run in guests yet (their per-thread logs are kept per engine)",
        )
        .into()),
        WorkloadSpec::Npb(_) => {
            return Err(SpecError::field(
                "host",
                "NPB workloads do not run in guests (a guest has no memory model)",
            )
            .into())
        }
    };
    Ok(compose(vm, params))
}

/// The first guest's record with every guest's in `vm`, and every guest's
/// text.
fn compose(vm: VmResult, params: Value) -> Simulated {
    let mut result = vm.guests[0].clone();
    let mut text = String::new();
    let mut guests = Vec::new();
    for (r, g) in vm.guests.iter().zip(&vm.vm) {
        text += &format!("[{}]\n{}", g.name, r.text);
        let total: u64 = g
            .vcpus
            .iter()
            .map(|c| c.run_ns + c.steal_ns + c.halted_ns)
            .sum();
        text += &format!(
            "{}: steal {:.3} ms ({:.1} % of vCPU time), vCPU pre-emptions {}, wake-ups onto pre-empted vCPUs {} (waited {:.3} ms)\n",
            g.name,
            g.steal_ns as f64 / 1e6,
            if total == 0 { 0.0 } else { g.steal_ns as f64 * 100.0 / total as f64 },
            g.vcpu_preemptions,
            g.wakeups_on_preempted,
            g.wait_on_preempted_ns as f64 / 1e6,
        );
        let f = &g.flagged;
        text += &format!(
            "{}: flagged pre-empted {} times (running {}, idle entry {}, halt-polling {}, halted {}); the vCPU-preempted check turned down {} idle vCPUs in {} wake-ups\n",
            g.name,
            f.running + f.idle_entry + f.halt_polling + f.halted,
            f.running,
            f.idle_entry,
            f.halt_polling,
            f.halted,
            g.preempted_idle_rejected,
            g.wakeups_redirected,
        );
        let mut gj = to_json(g);
        gj["time_ns"] = json!(r.time_ns);
        gj["sim_ns"] = json!(r.sim_ns);
        gj["decision_digest"] = json!(r.placement.decision_digest);
        gj["workload"] = Value::Object(r.workload.clone());
        guests.push(gj);
    }
    let mut combined = Value::Null;
    if let Some(c) = &vm.combined {
        let names: Vec<&str> = vm.vm.iter().map(|g| g.name.as_str()).collect();
        text += &format!("[combined: {}]\n{}", names.join("+"), c.text);
        combined = to_json(c);
        combined["time_ns"] = json!(c.time_ns);
    }
    let h = &vm.host;
    text += &format!(
        "Host {} ({} CPUs): {} switches, {} threads moved by its load balancer, vCPU pre-emptions lasted p50 {:.3} ms, p99 {:.3} ms\n",
        h.machine,
        h.cpus,
        h.switches,
        h.balance.moved,
        h.preemption_ns.p50 as f64 / 1e6,
        h.preemption_ns.p99 as f64 / 1e6
    );
    result.text = text;
    result.workload.insert(
        "vm".into(),
        json!({ "guests": guests, "combined": combined, "host": to_json(h) }),
    );
    Simulated { result, params }
}
