//! One-call entry points: build the machine, the policy and the workload,
//! run, and collect a [`SimResult`]. What a run is asked ([`SimOptions`])
//! is `run/options.rs`, what it gives ([`SimResult`]) `run/result.rs`.

use crate::balance::linux::{LbFeatures, LinuxBalancer};
use crate::balance::{BalanceStats, Balancer};
use crate::costs::MachineCosts;
use crate::eevdf::EevdfParams;
use crate::engine::{Bound, Engine, EngineConfig, InvariantError, Progress, RunCounters};
use crate::placement::linux::{Features, LinuxPlacement};
use crate::placement::{
    check_stage_names, scx::ScxDefault, Placement, PlacementStats, Stage, StageNameError,
};
use crate::workload::hackbench::Hackbench;
use crate::workload::schbench::SchbenchSim;
use crate::workload::spin::Spin;
use crate::workload::tbench::{Tbench, TbenchError, TbenchModel};
use crate::workload::{Record, Stop, Workload};
use crate::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;
use topology::{CpuMask, DomainOptions, SchedDomains, Topology};

mod options;
mod result;
pub use options::*;
pub use result::*;

/// Errors of a simulation run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Bad workload parameters.
    #[error(transparent)]
    Spec(#[from] benchspec::SpecError),
    /// A workload input file (tbench's loadfile) that cannot be used.
    #[error(transparent)]
    File(#[from] benchspec::FileError),
    /// The run is larger than the simulator supports.
    #[error("{0}")]
    TooLarge(String),
    /// The workload cannot run with these options.
    #[error("{0}")]
    Unsupported(String),
    /// The CPU restriction is unusable.
    #[error("--cpus: {0}")]
    Cpus(String),
    /// The run broke an invariant.
    #[error(transparent)]
    Invariant(#[from] InvariantError),
    /// The run reached a bound (`--time-limit`, `--max-events`).
    #[error(transparent)]
    Bound(#[from] Bound),
    /// A policy outside the Linux path names its stages wrongly.
    #[error(transparent)]
    StageNames(#[from] StageNameError),
}

impl From<crate::engine::RunError> for SimError {
    fn from(e: crate::engine::RunError) -> Self {
        match e {
            crate::engine::RunError::Invariant(e) => SimError::Invariant(e),
            crate::engine::RunError::Bound(b) => SimError::Bound(b),
            crate::engine::RunError::Workload(w) => SimError::Unsupported(w.to_string()),
        }
    }
}

/// What a run allocates, for the memory estimate checked before anything
/// is built ([`SimOptions::max_memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Tasks.
    pub tasks: u64,
    /// Channels.
    pub channels: u64,
    /// Chunks (pipe pages, skbs) one channel may hold at once.
    pub chunks_per_channel: u64,
    /// Ops of all the distinct programs.
    pub ops: u64,
    /// 2 MiB chunks of workload memory (`Engine::add_region`).
    pub memory_chunks: u64,
    /// What the workload's report holds at the end of the run, bytes.
    pub report_bytes: u64,
}

impl Footprint {
    /// Estimated bytes on a machine of `ncpus` CPUs (a buffer's capacity
    /// doubles as it grows: chunks are counted at the next power of two).
    pub fn bytes(&self, ncpus: usize) -> u64 {
        let chunks = self.chunks_per_channel.checked_next_power_of_two();
        let per_channel = chunks
            .and_then(|c| c.checked_mul(crate::channel::Channel::CHUNK_BYTES as u64))
            .and_then(|b| b.checked_add(crate::engine::bytes_per_channel(ncpus)));
        let total = [
            self.tasks.checked_mul(crate::engine::bytes_per_task(ncpus)),
            per_channel.and_then(|b| b.checked_mul(self.channels)),
            self.ops
                .checked_mul(std::mem::size_of::<crate::task::Op>() as u64),
            self.memory_chunks
                .checked_mul(crate::numa::memory::CHUNK_STATE_BYTES),
            Some(self.report_bytes),
        ];
        total
            .into_iter()
            .try_fold(0u64, |sum, b| b.and_then(|b| sum.checked_add(b)))
            .unwrap_or(u64::MAX)
    }

    /// Refuse the run when its estimate exceeds `opt.max_memory`; `what`
    /// names the flags that size it.
    pub fn check(&self, topo: &Topology, opt: &SimOptions, what: &str) -> Result<(), SimError> {
        let need = self.bytes(topo.nr_cpus());
        if need <= opt.max_memory {
            return Ok(());
        }
        let mib = |b: u64| b.div_ceil(1 << 20);
        Err(SimError::TooLarge(format!(
            "{what}: the run needs an estimated {} MiB of memory, more than the limit of {} MiB (raise it with --max-memory MIB)",
            mib(need),
            mib(opt.max_memory)
        )))
    }
}

/// hackbench's footprint: its tasks, a channel per receiver (plus the
/// ready and wake channels), a program per receiver and one per group's
/// senders, and what a channel can buffer of a receiver's messages.
pub fn hackbench_footprint(hb: &Hackbench) -> Footprint {
    let (g, f) = (hb.groups as u64, hb.fds as u64);
    let per_chan_msgs = f.saturating_mul(hb.loops as u64);
    let capacity = if hb.pipe {
        // a page per write at most; pipe_write merges small ones
        crate::channel::PIPE_DEF_BUFFERS as u64
    } else {
        crate::channel::WMEM_DEFAULT / crate::channel::unix_skb_truesize(hb.datasize) as u64 + 1
    };
    Footprint {
        tasks: hb.tasks() + 1,
        channels: g * f + 2,
        chunks_per_channel: per_chan_msgs.min(capacity),
        ops: 2 * hb.tasks() + 8 + g * f * 7 + g * (f + 6),
        memory_chunks: 0,
        report_bytes: 0,
    }
}

/// The wake-up policy of a run on `topo` (sched domains `sd`): a policy
/// outside the Linux path is built by its factory, and its stage names are
/// checked ([`crate::placement::check_stage_names`]).
fn make_policy(
    c: &PolicyChoice,
    topo: &Topology,
    sd: &SchedDomains,
) -> Result<Box<dyn Placement>, SimError> {
    Ok(match c {
        PolicyChoice::Linux(f) => Box::new(LinuxPlacement::new((**f).clone())),
        PolicyChoice::ScxDefault => Box::new(ScxDefault),
        PolicyChoice::Custom(factory) => {
            let policy = factory.build(topo, sd);
            check_stage_names(factory.name(), policy.stage_names())?;
            policy
        }
    })
}

/// Check the policy of `opt` as a run on `topo` builds it, without running:
/// a policy outside the Linux path is built by its factory and its stage
/// names checked ([`crate::placement::check_stage_names`]), so that a
/// program running many runs (an experiment) can refuse it before the
/// first. The built-in policies pass.
pub fn check_policy(topo: &Topology, opt: &SimOptions) -> Result<(), SimError> {
    if let PolicyChoice::Custom(_) = &opt.policy {
        // the sched domains a custom policy's run has (engine_parts)
        let sd = SchedDomains::build(
            topo,
            opt.domains.as_ref().unwrap_or(&DomainOptions::default()),
        );
        make_policy(&opt.policy, topo, &sd)?;
    }
    Ok(())
}

/// The load balancer of a policy: Linux's when the profile balances;
/// sched_ext's default and a custom policy have none.
pub(crate) fn make_balancer(c: &PolicyChoice) -> Option<Box<dyn Balancer>> {
    match c {
        PolicyChoice::Linux(f) if f.lb.load_balance => {
            let lb = LbFeatures {
                sis_util: f.sis_util,
                ..f.lb.clone()
            };
            Some(Box::new(LinuxBalancer::new(lb)))
        }
        _ => None,
    }
}

/// Simulate hackbench on `topo`.
pub fn simulate_hackbench(
    topo: &Topology,
    hb: &Hackbench,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    hb.validate()?;
    if hb.tasks() > 1_000_000 {
        return Err(SimError::TooLarge(format!(
            "-g/-f: {} tasks is more than the simulator supports (1000000)",
            hb.tasks()
        )));
    }
    hackbench_footprint(hb).check(topo, opt, "-g/-f")?;
    simulate(topo, hb, opt)
}

/// The most tasks of the compute-only workload.
pub const MAX_SPIN_TASKS: u32 = 1_000_000;
/// The most memory one compute-only task streams, MiB (1 TiB).
pub const MAX_SPIN_MEM_MIB: u64 = 1 << 20;

/// Simulate the compute-only workload on `topo`: Time runs from the first
/// task's start until the last one exits.
pub fn simulate_spin(topo: &Topology, sp: &Spin, opt: &SimOptions) -> Result<SimResult, SimError> {
    if sp.tasks == 0 || sp.tasks > MAX_SPIN_TASKS {
        return Err(SimError::TooLarge(format!(
            "-n/--tasks: {} (1 to {MAX_SPIN_TASKS})",
            sp.tasks
        )));
    }
    if sp.mem_mib > MAX_SPIN_MEM_MIB {
        return Err(SimError::TooLarge(format!(
            "--mem-mib: {} (0 to {MAX_SPIN_MEM_MIB})",
            sp.mem_mib
        )));
    }
    Footprint {
        tasks: sp.tasks as u64,
        ops: 12 * sp.tasks as u64,
        memory_chunks: (sp.tasks as u64)
            .saturating_mul((sp.mem_mib << 20).div_ceil(crate::numa::memory::CHUNK_BYTES)),
        ..Default::default()
    }
    .check(topo, opt, "-n/--tasks and --mem-mib")?;
    simulate(topo, sp, opt)
}

/// Simulate the false-sharing loop on the first two CPUs the run may use.
pub fn simulate_falseshare(
    topo: &Topology,
    fs: &crate::workload::falseshare::FalseShare,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    if fs.iterations == 0 {
        return Err(SimError::TooLarge(
            "-n/--iterations: must be an integer > 0".into(),
        ));
    }
    if allowed_cpus(topo, opt)?.weight() < 2 {
        return Err(SimError::Cpus(
            "the false-sharing loop needs two CPUs".into(),
        ));
    }
    simulate(topo, fs, opt)
}

/// Simulate tbench on `tb`'s parameters: reads the loadfile, then runs
/// for the warm-up and `time` seconds (simulated).
pub fn simulate_tbench(
    topo: &Topology,
    tb: &Tbench,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    let m = TbenchModel::new(tb.clone()).map_err(|e| match e {
        TbenchError::Spec(e) => SimError::Spec(e),
        TbenchError::File(e) => SimError::File(e),
    })?;
    if !opt.costs {
        // with every cost zero a closed loop of exchanges takes no time,
        // so the timed run would never reach its end
        return Err(SimError::Unsupported(
            "--costs off: tbench runs for a time, and with every cost zero no simulated time passes".into(),
        ));
    }
    // every process holds its own copy of the replayed program
    let ops = 2 * tb.clients as u64 * m.ops().len() as u64;
    if ops > 100_000_000 {
        return Err(SimError::TooLarge(format!(
            "NCLIENTS: {} clients replaying {} lines is more than the simulator supports (2 x clients x lines <= 100000000)",
            tb.clients,
            m.ops().len()
        )));
    }
    let clients = tb.clients as u64;
    Footprint {
        tasks: 2 * clients + 1,
        channels: 2 * clients + 1,
        // a receive buffer's worth of the largest segments, or a message a
        // chunk when they are small
        chunks_per_channel: 64,
        ops: ops.saturating_add(8),
        memory_chunks: 0,
        // its per-second summaries and lines
        report_bytes: m.report_bytes(),
    }
    .check(topo, opt, "NCLIENTS/--loadfile/--time")?;
    simulate(topo, &m, opt)
}

/// Simulate schbench on `topo` for its runtime. The model takes the
/// machine's CPU count (schbench's `get_nprocs`), the seed and the
/// multiply-add cost of the costs the run uses.
pub fn simulate_schbench(
    topo: &Topology,
    sb: &SchbenchSim,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    let mut sb = sb.clone();
    sb.nprocs = topo.nr_cpus();
    sb.seed = opt.seed;
    sb.madd_ps = opt.machine_costs(topo).matmul_madd_ps;
    sb.validate()?;
    let tasks = sb.threads().saturating_add(1);
    Footprint {
        tasks,
        // each task's program, futex word and lines
        ops: tasks.saturating_mul(32),
        // its histograms, of fixed size, and the text of its interval
        // reports, one every -i seconds of the -r
        report_bytes: sb.report_bytes(),
        ..Default::default()
    }
    .check(topo, opt, "-m/-t/-r/-i")?;
    simulate(topo, &sb, opt)
}

/// Simulate an rt-app workload: when every phase of every thread has
/// `cpus`, their union confines the run as `--cpus` does (giving both is
/// refused); each thread is confined to its own set, phase by phase
/// (`RtappSim`'s build). A set with no CPU the run may use is refused, as
/// the kernel refuses such a sched_setaffinity (EINVAL, which stops rt-app).
pub fn simulate_rtapp(
    topo: &Topology,
    w: &crate::workload::rtapp::RtappSim,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    rtapp_footprint(w).check(topo, opt, "rt-app file")?;
    let mask_of = |cpus: &[u32]| {
        let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
        CpuMask::parse_list(&list.join(","))
            .map_err(|e| SimError::Cpus(format!("rt-app file: `cpus`: {e}")))
    };
    let Some(cpus) = w.app.run_cpus() else {
        let allowed = allowed_cpus(topo, opt)?;
        for t in &w.app.tasks {
            for (j, p) in t.phases.iter().enumerate() {
                let Some(set) = w.app.phase_cpus(t, j) else {
                    continue;
                };
                if !mask_of(&set)?.intersects(&allowed) {
                    let key = match &p.cpus {
                        Some(_) if t.phases.len() > 1 => {
                            format!("tasks.{}.phases.{}.cpus", t.name, p.name)
                        }
                        _ => format!("tasks.{}.cpus", t.name),
                    };
                    return Err(SimError::Cpus(format!(
                        "rt-app file: `{key}`: none of these CPUs is one the run may use ({allowed})"
                    )));
                }
            }
        }
        return simulate(topo, w, opt);
    };
    if opt.cpus.is_some() {
        return Err(SimError::Cpus(
            "the rt-app file confines its threads with `cpus`: give it or --cpus, not both".into(),
        ));
    }
    let mut opt = opt.clone();
    opt.cpus = Some(mask_of(&cpus)?);
    simulate(topo, w, &opt)
}

/// What an rt-app run's report holds per thread at the end (its JSON
/// record, its line of the per-thread table and the state behind them),
/// bytes. Measured: peak RSS of `schedlab sim rtapp` (release build) over
/// files of one-loop threads, 1 thread 7.7 MB, 8,192 threads 68.3 MB,
/// 102,400 threads 772 MB: 7.4 to 7.6 KB per thread, of which the engine's
/// share of the estimate is about 0.9 KB; rounded up. Without it the
/// estimate was a seventh of the peak (issue: 891 MiB estimated, 1.55 GB
/// used).
pub const RTAPP_REPORT_BYTES_PER_THREAD: u64 = 7 * 1024;

/// An rt-app run's footprint: every thread made at start and every thread
/// its `fork` events can make (declared up front, at most rt-app's limit
/// per forked task), each with its own program of its task's events (about
/// three ops an event plus each phase's bookkeeping).
pub fn rtapp_footprint(w: &crate::workload::rtapp::RtappSim) -> Footprint {
    let counts = w.app.fork_counts();
    let mut tasks = 0u64;
    let mut ops = 0u64;
    for (t, &forks) in w.app.tasks.iter().zip(&counts) {
        let n = u64::from(t.instance) + u64::from(forks.min(benchspec::rtapp::FORKS_LIMIT));
        let per: u64 = t
            .phases
            .iter()
            .map(|p| 3 * p.events.len() as u64 + 6)
            .sum::<u64>()
            + 6;
        tasks += n;
        ops = ops.saturating_add(n.saturating_mul(per));
    }
    Footprint {
        tasks,
        ops,
        report_bytes: tasks.saturating_mul(RTAPP_REPORT_BYTES_PER_THREAD),
        ..Default::default()
    }
}

/// The CPUs a run may use.
fn allowed_cpus(topo: &Topology, opt: &SimOptions) -> Result<CpuMask, SimError> {
    match &opt.cpus {
        None => Ok(topo.all_cpus().clone()),
        Some(m) => {
            if !m.is_subset(topo.all_cpus()) {
                let bad = m.andnot(topo.all_cpus());
                return Err(SimError::Cpus(format!(
                    "CPUs {bad} are not on machine {} (it has CPUs {})",
                    topo.name(),
                    topo.all_cpus()
                )));
            }
            if m.is_empty() {
                return Err(SimError::Cpus("the CPU list is empty".into()));
            }
            Ok(m.clone())
        }
    }
}

/// What a run builds before its workload: the sched domains, costs and
/// engine configuration, the policy and the balancer.
pub(crate) struct EngineParts {
    pub(crate) sd: SchedDomains,
    pub(crate) costs: MachineCosts,
    pub(crate) cfg: EngineConfig,
    pub(crate) first: usize,
}

/// The parts of a run of `opt` on `topo`.
pub(crate) fn engine_parts(topo: &Topology, opt: &SimOptions) -> Result<EngineParts, SimError> {
    let allowed = allowed_cpus(topo, opt)?;
    if opt.numa_balancing == Some(true) && topo.nr_nodes() < 2 {
        return Err(SimError::Unsupported(format!(
            "--numa-balancing on: machine {} has one NUMA node; automatic NUMA balancing needs two or more",
            topo.name()
        )));
    }
    let (domains, vcpu_check, sched_idle, slice, idle_loop, ipc, fair, ttwu_queue) =
        match &opt.policy {
            PolicyChoice::Linux(f) => (
                f.domain_options(),
                f.vcpu_preempt_check(),
                f.sched_idle_as_idle(),
                f.base_slice_ns(topo.nr_cpus()),
                f.idle,
                f.ipc,
                Some(f.fair),
                f.ttwu_queue,
            ),
            PolicyChoice::ScxDefault | PolicyChoice::Custom(_) => (
                DomainOptions::default(),
                true,
                true,
                opt.eevdf.base_slice,
                crate::idle_loop::IdleLoopFeatures::default(),
                crate::ipc_features::IpcFeatures::default(),
                None,
                crate::placement::linux::TtwuQueue::CrossLlcOrIdle,
            ),
        };
    let sd = SchedDomains::build(topo, opt.domains.as_ref().unwrap_or(&domains));
    let mut costs = opt.machine_costs(topo);
    if opt.costs {
        costs.dummy_wakeup_ns = opt.dummy_wakeup_ns;
    }
    // the fair class of the kernel profile (CFS before 6.6, EEVDF after),
    // or EEVDF as `opt.eevdf` gives it for a policy without a profile
    let tick_ns = 1_000_000_000 / costs.hz.max(1);
    let eevdf = match fair {
        Some(fair) => fair.params(topo.nr_cpus(), tick_ns, slice),
        None => crate::eevdf::EevdfParams {
            tick_ns,
            base_slice: slice,
            ..opt.eevdf
        },
    };
    let first = allowed.first().unwrap_or(0);
    let cfg = EngineConfig {
        eevdf,
        allowed,
        seed: opt.seed,
        check: opt.check,
        vcpu_preempt_check: vcpu_check,
        sched_idle_as_idle: sched_idle,
        ttwu_queue,
        time_limit: opt.time_limit,
        max_events: opt.max_events.unwrap_or(u64::MAX),
        max_record_bytes: opt.max_memory,
        progress: opt.progress.clone(),
        cpuidle: opt
            .cpuidle
            .unwrap_or_else(|| crate::cpuidle::Cpuidle::for_machine(topo.name()).0),
        idle_loop,
        ipc,
        phase_timing: opt.phase_timing,
    };
    Ok(EngineParts {
        sd,
        costs,
        cfg,
        first,
    })
}

/// An engine on `topo` from `parts`, with the policy and balancer of
/// `opt`, and the workload `w` declared; returns the names of its policy
/// and balancer. Fails when a custom policy names its stages wrongly.
pub(crate) fn build_engine<'t, W: Workload>(
    topo: &'t Topology,
    sd: &'t SchedDomains,
    costs: MachineCosts,
    cfg: EngineConfig,
    first: usize,
    w: &W,
    opt: &SimOptions,
) -> Result<(Engine<'t>, String, String), SimError> {
    let policy = make_policy(&opt.policy, topo, sd)?;
    let name = policy.name();
    let stage_names = policy.stage_names();
    let mut e: Engine = Engine::new(topo, sd, costs, cfg, policy);
    e.k.pstats.stage_names = stage_names;
    let balancer = make_balancer(&opt.policy);
    let balancer_name = balancer.as_ref().map_or("none".into(), |b| b.name());
    if let Some(b) = balancer {
        e.set_balancer(b);
    }
    w.build(&mut e, first);
    if e.has_memory() {
        let features = match &opt.policy {
            PolicyChoice::Linux(f) => f.numa_balancing,
            PolicyChoice::ScxDefault | PolicyChoice::Custom(_) => {
                crate::numa::NumaFeatures::default()
            }
        };
        let params = crate::numa::NumaParams {
            // task_tick_numa is called from the fair class's tick only: a
            // sched_ext policy's tasks never scan
            enabled: opt.numa_balancing.unwrap_or(topo.nr_nodes() > 1)
                && matches!(opt.policy, PolicyChoice::Linux(_)),
            thp: opt.thp,
            ..opt.numa_params
        };
        e.set_numa(params, features, opt.mem_policy.clone());
    }
    if let Stop::At(t) = w.stop() {
        e.set_stop_at(t);
    }
    Ok((e, name, balancer_name))
}

/// The record of a finished run of `w` on engine `e`.
pub(crate) fn result_of<W: Workload>(
    topo: &Topology,
    w: &W,
    e: &Engine<'_>,
    name: String,
    balancer_name: String,
) -> SimResult {
    let report = w.report(&Record::of(e));
    SimResult {
        benchmark: w.name().into(),
        machine: topo.name().to_string(),
        time_ns: report.time_ns,
        sim_ns: e.now(),
        counters: e.counters.clone(),
        placement: PlacementSummary::of(name, &e.k.pstats),
        balance: BalanceSummary {
            balancer: balancer_name,
            stats: e.k.bstats.clone(),
            idle_while_work_waits_ns: e.idle_while_work_waits_ns(),
            first_all_busy_ns: e.first_all_busy_ns(),
        },
        cpus: e
            .cpu_times()
            .into_iter()
            .zip(e.cpu_switches())
            .enumerate()
            .map(|(cpu, ((b, i), sw))| CpuTime {
                cpu,
                busy_ns: b,
                idle_ns: i,
                context_switches: sw,
            })
            .collect(),
        user_s: e.counters.user_ns as f64 / 1e9,
        system_s: e
            .cpu_times()
            .iter()
            .map(|c| c.0)
            .sum::<u64>()
            .saturating_sub(e.counters.user_ns) as f64
            / 1e9,
        numa: e.numa_counters(),
        text: report.text,
        files: report.files,
        workload: report.json,
        phases: e.phases,
    }
}

/// Run any workload: build the machine, the policy and the balancer, let the
/// workload declare its tasks, run until it says stop, and collect the
/// common record plus the workload's report.
pub fn simulate<W: Workload>(
    topo: &Topology,
    w: &W,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    let p = engine_parts(topo, opt)?;
    let (mut e, name, balancer_name) = build_engine(topo, &p.sd, p.costs, p.cfg, p.first, w, opt)?;
    e.set_trace(opt.trace.as_ref().and_then(|s| s.take()));
    let ran = e.run();
    if let (Some(slot), Some(sink)) = (&opt.trace, e.take_trace()) {
        slot.put(sink);
    }
    ran?;
    Ok(result_of(topo, w, &e, name, balancer_name))
}

/// Simulate an NPB team `npb` on `topo` (the run's time is NPB's timed
/// section), refusing a team larger than
/// [`crate::workload::npb::MAX_THREADS`].
pub fn simulate_npb(
    topo: &topology::Topology,
    npb: &crate::workload::npb::Npb,
    opt: &SimOptions,
) -> Result<SimResult, SimError> {
    use crate::workload::npb::MAX_THREADS;
    if npb.threads == 0 || npb.threads > MAX_THREADS {
        return Err(SimError::TooLarge(format!(
            "--threads: {} (1 to {MAX_THREADS})",
            npb.threads
        )));
    }
    simulate(topo, npb, opt)
}

#[cfg(test)]
mod footprint_tests {
    use super::*;

    fn hb(groups: u32, fds: u32, loops: u32) -> Hackbench {
        Hackbench {
            groups,
            fds,
            loops,
            ..Default::default()
        }
    }

    #[test]
    fn hackbench_estimate_grows_with_tasks_and_channels_not_their_product() {
        let mib = |g, f, l| hackbench_footprint(&hb(g, f, l)).bytes(24) >> 20;
        // one group of F senders shares one program: F x 10 is ~10 x F
        assert!(
            mib(1, 20_000, 1) < 12 * mib(1, 2_000, 1),
            "{}",
            mib(1, 20_000, 1)
        );
        // -g 10: 400 tasks of under 1 KiB each (their engine state and
        // kernel line records) and 200 channels whose 278 queued chunks
        // round up to 8 KiB: about 2 MiB, not tens
        let small = hackbench_footprint(&hb(10, 20, 100)).bytes(24);
        assert!(small < 4 << 20, "{small}");
        // the issue's -g 4 -f 100000 fits the default limit; a million
        // tasks of -g 25000 does not
        let opt = SimOptions::default();
        let topo = topology::preset("kunpeng920-node").unwrap();
        assert!(hackbench_footprint(&hb(4, 100_000, 100))
            .check(&topo, &opt, "-g/-f")
            .is_ok());
        let e = hackbench_footprint(&hb(25_000, 20, 100))
            .check(&topo, &opt, "-g/-f")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("-g/-f: the run needs an estimated ")
                && e.ends_with(" MiB of memory, more than the limit of 4096 MiB (raise it with --max-memory MIB)"),
            "{e}"
        );
        // absurd sizes saturate instead of overflowing
        let huge = Footprint {
            tasks: u64::MAX,
            ..Default::default()
        };
        assert_eq!(huge.bytes(24), u64::MAX);
    }
}
