//! The one-call entry point of the host layer: build the host and one
//! engine per guest, each with its own workload instance, co-simulate them
//! and collect a record per guest plus the host's view of every vCPU.

use super::cosim;
use super::sched::{Host, HostCosts};
use super::spec::{GuestIdle, HostError, HostSpec};
use crate::balance::BalanceStats;
use crate::costs::MachineCosts;
use crate::eevdf::EevdfParams;
use crate::placement::linux::Features;
use crate::placement::Stage;
use crate::run::{build_engine, engine_parts, result_of, Dist, SimError, SimOptions, SimResult};
use crate::workload::{Record, Workload};
use crate::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;
use topology::{SchedDomains, Topology};

/// A vCPU as the host saw it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct VcpuReport {
    /// vCPU index.
    pub vcpu: usize,
    /// Host CPUs it may run on.
    pub host_cpus: String,
    /// Time its thread ran for the guest (guest code, switch, entry), ns.
    pub run_ns: Nanos,
    /// Of which switching in and entering the guest, ns.
    pub entry_ns: Nanos,
    /// Steal: runnable on the host but not running, ns.
    pub steal_ns: Nanos,
    /// Halted (polling on the host or asleep), ns.
    pub halted_ns: Nanos,
    /// Times the host scheduled it out while it ran guest code.
    pub preemptions: u64,
    /// Times the host moved its thread to another host CPU (wake-up
    /// placement or load balancing).
    pub host_migrations: u64,
    /// The host CPU its thread is on (or last ran on) at the end.
    pub host_cpu: usize,
}

/// One guest's host-layer record.
#[derive(Clone, Debug, Serialize)]
pub struct GuestVm {
    /// Guest name.
    pub name: String,
    /// Its vCPUs.
    pub vcpus: Vec<VcpuReport>,
    /// Steal over every vCPU, ns.
    pub steal_ns: Nanos,
    /// Pre-emptions of its vCPUs while they ran guest code.
    pub vcpu_preemptions: u64,
    /// Task wake-ups placed on a vCPU whose preempted flag was set.
    pub wakeups_on_preempted: u64,
    /// The time those wakees waited to run, summed, ns.
    pub wait_on_preempted_ns: u64,
    /// Wait from wake-up to running over every task wake-up, summed, ns.
    pub wakeup_wait_ns: u64,
    /// Task wake-ups whose wait was measured.
    pub wakeups_measured: u64,
    /// Times the host flagged one of its vCPUs pre-empted, by what the
    /// vCPU was doing (which of these happen is the host kernel's rule:
    /// `host::kvm`).
    pub flagged: crate::engine::FlaggedBy,
    /// Idle vCPUs the guest's vCPU-preempted check turned down in its
    /// wake-up path.
    pub preempted_idle_rejected: u64,
    /// Wake-ups the check redirected (it turned down at least one idle
    /// vCPU in them).
    pub wakeups_redirected: u64,
}

/// What the host did.
#[derive(Clone, Debug, Serialize)]
pub struct HostSummary {
    /// The machine description.
    pub description: String,
    /// Host machine.
    pub machine: String,
    /// Host CPUs.
    pub cpus: usize,
    /// Host context switches.
    pub switches: u64,
    /// Lengths of the vCPU pre-emptions (scheduled out while running guest
    /// code, until back in the guest), ns.
    pub preemption_ns: Dist,
    /// Wake-ups of host threads by the stage of the host's
    /// select_task_rq_fair that chose the CPU (stages that chose none are
    /// left out); a pinned thread's, which the fair class never sees, as
    /// `no_idle_found`, as a bare-metal run counts them
    /// (`kernel::Kernel::select_task_rq`).
    pub wakeup_stages: BTreeMap<String, u64>,
    /// Host wake-ups of vCPU threads by another vCPU's thread (an IPI's
    /// sender), by where the wakee's thread landed relative to the
    /// sender's host CPU; wake-ups by a vCPU's own timer are not counted.
    pub wake_locality: crate::run::WakeLocality,
    /// What the host's load balancer did.
    pub balance: BalanceStats,
    /// The host CPU each noisy thread is on at the end.
    pub noisy_cpus: Vec<usize>,
}

/// The guests' records taken together: the workload's report on the union
/// of every guest's samples (as the vCPU-preempted patch's authors combined
/// VM1 and VM2's schbench latencies).
#[derive(Clone, Debug, Serialize)]
pub struct Combined {
    /// The measured span, ns.
    pub time_ns: Nanos,
    /// The workload's fields.
    #[serde(flatten)]
    pub workload: serde_json::Map<String, serde_json::Value>,
    /// Its text.
    #[serde(skip)]
    pub text: String,
}

/// The union of `recs`: every metric's samples in time order (ties in
/// guest order), interval bins added up, each mark at its earliest, the
/// latest end.
fn union(recs: &[crate::workload::Record<'_>]) -> UnionData {
    let mut u = UnionData::default();
    for r in recs {
        let marks = r.marks();
        if u.marks.len() < marks.len() {
            u.marks.resize(marks.len(), None);
        }
        for (m, &x) in u.marks.iter_mut().zip(marks) {
            *m = match (*m, x) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let samples = r.all_samples();
        if u.samples.len() < samples.len() {
            u.samples.resize(samples.len(), Vec::new());
        }
        for (s, x) in u.samples.iter_mut().zip(samples) {
            s.extend_from_slice(x);
        }
        let bins = r.all_bins();
        if u.bins.len() < bins.len() {
            u.bins.resize(bins.len(), Vec::new());
        }
        for (b, x) in u.bins.iter_mut().zip(bins) {
            if b.len() < x.len() {
                b.resize(x.len(), crate::engine::Bin::default());
            }
            for (y, z) in b.iter_mut().zip(x) {
                y.count += z.count;
                y.sum += z.sum;
                y.max = y.max.max(z.max);
            }
        }
        u.end = u.end.max(r.end);
    }
    for s in &mut u.samples {
        // stable: equal times keep guest order
        s.sort_by_key(|&(t, _)| t);
    }
    u
}

#[derive(Default)]
struct UnionData {
    marks: Vec<Option<Nanos>>,
    samples: Vec<Vec<(Nanos, Nanos)>>,
    bins: Vec<Vec<crate::engine::Bin>>,
    end: Nanos,
}

/// The record of a run on a host.
#[derive(Clone, Debug, Serialize)]
pub struct VmResult {
    /// Each guest's run, as a bare-metal run reports it.
    pub guests: Vec<SimResult>,
    /// With several guests: the workload's report over all of them (the
    /// first guest's workload parameters).
    pub combined: Option<Combined>,
    /// Each guest's vCPUs.
    pub vm: Vec<GuestVm>,
    /// The host.
    pub host: HostSummary,
}

/// The cost profile a machine name carries: a preset's, or an `smp:`
/// machine's `cost=` (a preset or a file).
fn machine_costs(
    machine: &str,
    topo: &Topology,
    origin: &str,
    key: &str,
) -> Result<MachineCosts, HostError> {
    let err = |m: String| HostError {
        origin: origin.into(),
        key: key.into(),
        msg: m,
    };
    match machine.strip_prefix(topology::SMP_PREFIX) {
        None => Ok(MachineCosts::for_machine(topo.name())),
        Some(body) => {
            let s = topology::SmpSpec::parse(body).map_err(|e| err(e.to_string()))?;
            match s.cost {
                None => Err(err("an smp: machine needs cost=PRESET|FILE here".into())),
                Some(c) if topology::preset(&c).is_ok() => Ok(MachineCosts::for_machine(&c)),
                Some(c) => crate::cost_profile::load(std::path::Path::new(&c))
                    .map_err(|e| err(e.to_string())),
            }
        }
    }
}

/// The host's EEVDF parameters, costs, kernel profile and the cost profile
/// of its kernel's line model.
fn host_params(
    spec: &HostSpec,
    topo: &Topology,
    costs_on: bool,
) -> Result<(EevdfParams, HostCosts, Features, MachineCosts), HostError> {
    let f = Features::kernel(&spec.kernel).map_err(|e| HostError {
        origin: spec.origin.clone(),
        key: "host.kernel".into(),
        msg: e.to_string(),
    })?;
    let c = machine_costs(&spec.machine, topo, &spec.origin, "host.machine")?;
    let tick_ns = 1_000_000_000 / c.hz.max(1);
    // the host kernel's own fair class (CFS for a host before 6.6);
    // DELAY_DEQUEUE (6.12) is not modelled for host threads: a halting
    // vCPU thread leaves its queue at once
    let params = EevdfParams {
        delay_dequeue: false,
        ..f.fair
            .params(topo.nr_cpus(), tick_ns, f.base_slice_ns(topo.nr_cpus()))
    };
    let halt_exit = c
        .idle_states
        .get(c.halt_state())
        .map_or(0, |s| s.exit_latency_ns);
    let charged = costs_on && spec.host_costs;
    let costs = if charged {
        HostCosts {
            switch_ns: c.ctx_switch_ns,
            wake_ns: c.ipi_ns + halt_exit,
            exit_entry_ns: spec.exit_entry_ns,
            tick_ns,
        }
    } else {
        HostCosts {
            tick_ns,
            ..Default::default()
        }
    };
    // the line model of the host's placement and balancing: free with
    // the rest of the host layer
    let mc = if charged { c } else { c.zeroed() };
    Ok((params, costs, f, mc))
}

/// Errors of a run on a host.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The machine description.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The run.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Run `workloads[i]` in guest `i` of `spec` (one instance per guest). The
/// guests share `opt` (kernel, costs, seed, checks); `--cpus` does not
/// apply inside a guest.
pub fn simulate_vm<W: Workload>(
    spec: &HostSpec,
    workloads: &[W],
    opt: &SimOptions,
) -> Result<VmResult, VmError> {
    assert_eq!(workloads.len(), spec.guests.len(), "one workload per guest");
    let host_topo = topology::machine(&spec.machine).map_err(|e| HostError {
        origin: spec.origin.clone(),
        key: "host.machine".into(),
        msg: e.to_string(),
    })?;
    let (params, hcosts, hf, hmc) = host_params(spec, &host_topo, opt.costs)?;
    let host_sd = SchedDomains::build(&host_topo, &hf.domain_options());
    let mut topos = Vec::new();
    for (i, g) in spec.guests.iter().enumerate() {
        let t = topology::machine(&g.machine).map_err(|e| HostError {
            origin: spec.origin.clone(),
            key: format!("guest[{i}].machine"),
            msg: e.to_string(),
        })?;
        if t.nr_cpus() != g.affinity.len() {
            return Err(HostError {
                origin: spec.origin.clone(),
                key: format!("guest[{i}].machine"),
                msg: format!(
                    "{} CPUs for {} vCPU affinities",
                    t.nr_cpus(),
                    g.affinity.len()
                ),
            }
            .into());
        }
        topos.push(t);
    }
    // each guest's options: its machine's costs, all of its CPUs
    let mut parts = Vec::new();
    for (i, (g, t)) in spec.guests.iter().zip(&topos).enumerate() {
        let mut o = opt.clone();
        o.cpus = None;
        // independent guests: each its own streams of the seed
        o.seed = opt.seed.wrapping_add(i as u64);
        if o.costs_profile.is_none() {
            o.costs_profile = Some(machine_costs(
                &g.machine,
                t,
                &spec.origin,
                &format!("guest[{i}].machine"),
            )?);
        }
        let mut p = engine_parts(t, &o)?;
        if g.idle == GuestIdle::Poll {
            // idle=poll: cpu_idle_poll, no cpuidle driver, no exit latency
            p.costs.idle_states = vec![crate::cpuidle::POLL];
            p.cfg.cpuidle = crate::cpuidle::Cpuidle::NONE;
        }
        parts.push((p, o));
    }
    let mut engines = Vec::new();
    let mut names = Vec::new();
    let mut shared: Option<crate::engine::SharedSink> = None;
    for (i, (p, o)) in parts.iter().enumerate() {
        let (mut e, name, bal) = build_engine(
            &topos[i],
            &p.sd,
            p.costs.clone(),
            p.cfg.clone(),
            p.first,
            &workloads[i],
            o,
        )?;
        // the guest's idle entry path is a cost of the host layer: free
        // with the rest of it
        let entry = if opt.costs && spec.host_costs {
            spec.guest_idle_entry_ns
        } else {
            0
        };
        e.vm_enable(spec.guests[i].idle == GuestIdle::Poll, entry);
        if spec.guests.len() > 1 {
            // the combined report's bookkeeping takes every guest's
            // samples as they are recorded (the guests run in one event
            // loop, in time order)
            if shared.is_none() {
                shared = e
                    .metric_sink()
                    .map(|s| std::sync::Arc::new(std::sync::Mutex::new(s.fresh())));
            }
            if let Some(s) = &shared {
                e.also_record_to(s.clone());
            }
        }
        engines.push(e);
        names.push((name, bal));
    }
    let hk = super::linux::host_kernel(&host_topo, &host_sd, &hf, hmc);
    let mut host = Host::new(spec, hk, params, hcosts, opt.seed);
    {
        let mut refs: Vec<&mut crate::engine::Engine<'_>> = engines.iter_mut().collect();
        cosim::run(&mut host, &mut refs, opt.check).map_err(SimError::from)?;
    }
    let mut guests = Vec::new();
    let mut vm = Vec::new();
    for (i, e) in engines.iter().enumerate() {
        let (name, bal) = names[i].clone();
        guests.push(result_of(&topos[i], &workloads[i], e, name, bal));
        let st = e.vm_stats().cloned().unwrap_or_default();
        let vcpus: Vec<VcpuReport> = (0..topos[i].nr_cpus())
            .map(|v| {
                let x = host.vcpu_times(i, v);
                VcpuReport {
                    vcpu: v,
                    host_cpus: spec.guests[i].affinity[v].to_string(),
                    run_ns: x.run_ns,
                    entry_ns: x.entry_ns,
                    steal_ns: x.steal_ns,
                    halted_ns: x.halted_ns,
                    preemptions: host.vcpu_preemptions(i, v),
                    host_migrations: host.vcpu_migrations(i, v).0,
                    host_cpu: host.vcpu_migrations(i, v).1,
                }
            })
            .collect();
        vm.push(GuestVm {
            name: spec.guests[i].name.clone(),
            steal_ns: vcpus.iter().map(|v| v.steal_ns).sum(),
            vcpu_preemptions: vcpus.iter().map(|v| v.preemptions).sum(),
            vcpus,
            wakeups_on_preempted: st.wakeups_on_preempted,
            wait_on_preempted_ns: st.wait_on_preempted_ns,
            wakeup_wait_ns: st.wakeup_wait_ns,
            wakeups_measured: st.wakeups_measured,
            flagged: st.flagged,
            preempted_idle_rejected: e.k.pstats.preempted_idle_rejected,
            wakeups_redirected: e.k.pstats.wakeups_redirected,
        });
    }
    let combined = (engines.len() > 1).then(|| {
        let recs: Vec<_> = engines.iter().map(Record::of).collect();
        let u = union(&recs);
        let sink = shared
            .as_ref()
            .map(|s| s.lock().expect("a sink does not panic"));
        let rec = Record::from_parts(
            &u.marks,
            &u.samples,
            sink.as_deref().map(|b| &**b),
            &u.bins,
            u.end,
        );
        let r = workloads[0].report(&rec);
        Combined {
            time_ns: r.time_ns,
            workload: r.json,
            text: r.text,
        }
    });
    Ok(VmResult {
        guests,
        combined,
        vm,
        host: HostSummary {
            description: spec.describe(),
            machine: host_topo.name().to_string(),
            cpus: host_topo.nr_cpus(),
            switches: host.switches,
            preemption_ns: Dist::of(&host.preempt_lengths),
            wakeup_stages: Stage::all()
                .filter_map(|st| {
                    let n = host.placement_stats().stages[st as usize];
                    (n > 0).then(|| (st.name(), n))
                })
                .collect(),
            wake_locality: {
                let w = host.placement_stats().wake_locality;
                crate::run::WakeLocality {
                    same_cpu: w[0],
                    same_cluster: w[1],
                    same_llc: w[2],
                    other_llc: w[3],
                }
            },
            balance: host.balance_stats().clone(),
            noisy_cpus: host.noisy_cpus(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eevdf::FairClass;

    /// The host's run queues follow the host kernel's own fair class: CFS
    /// for a host before 6.6, EEVDF after, whatever the guests run; the
    /// host never delays a sleeper's dequeue (not modelled there).
    #[test]
    fn the_host_runs_its_own_kernels_fair_class() {
        for (kernel, class) in [
            ("linux-4.18", FairClass::Cfs),
            ("linux-6.1", FairClass::Cfs),
            ("linux-6.6", FairClass::Eevdf),
            ("latest", FairClass::Eevdf),
        ] {
            let mut spec = super::super::spec::preset("vm1x8").unwrap();
            spec.kernel = kernel.to_string();
            let topo = topology::machine(&spec.machine).unwrap();
            let (params, _, f, _) = host_params(&spec, &topo, true).unwrap();
            assert_eq!(params.class, class, "{kernel}");
            assert_eq!(f.fair.class, class, "{kernel}");
            assert!(!params.delay_dequeue, "{kernel}");
        }
    }
}
