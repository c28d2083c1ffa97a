//! What a simulation run gives: the result record and its summaries.

use super::*;

/// Distribution summary of a histogram.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Dist {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Maximum.
    pub max: u64,
}

impl Dist {
    pub(crate) fn of(h: &hdrhistogram::Histogram<u64>) -> Dist {
        let n = h.len();
        let r = |v: f64| (v * 1000.0).round() / 1000.0;
        Dist {
            count: n,
            mean: if n == 0 { 0.0 } else { r(h.mean()) },
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// Placement summary for reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PlacementSummary {
    /// Policy name.
    pub policy: String,
    /// Wakeups per deciding stage (only stages that occurred).
    pub stages: BTreeMap<String, u64>,
    /// Total run-queue probes.
    pub probes: u64,
    /// Probes per wakeup.
    pub probes_per_wakeup: Dist,
    /// Total modelled placement cost (ns).
    pub probe_cost_ns: u64,
    /// Cost per select_idle_cpu call (ns).
    pub select_idle_cpu_cost_ns: Dist,
    /// Probes per select_idle_core call.
    pub select_idle_core_probes: Dist,
    /// Cost per select_idle_core call (ns).
    pub select_idle_core_cost_ns: Dist,
    /// Reads of has_idle_cores.
    pub has_idle_cores_reads: u64,
    /// Of which true.
    pub has_idle_cores_true: u64,
    /// Reads of nr_idle_scan.
    pub nr_idle_scan_reads: u64,
    /// select_idle_cpu calls skipped because nr_idle_scan was 0.
    pub sis_util_no_scan: u64,
    /// Writes to LLC shared lines.
    pub llc_shared_writes: u64,
    /// wake_affine picked this CPU.
    pub wake_affine_this: u64,
    /// wake_affine picked prev.
    pub wake_affine_prev: u64,
    /// wake_affine calls with WF_SYNC.
    pub wake_affine_sync: u64,
    /// wake_wide returned true.
    pub wake_wide: u64,
    /// select_fallback_rq used.
    pub fallback_rq: u64,
    /// Task wake-ups by where the wakee landed relative to the waker's CPU.
    pub wake_locality: WakeLocality,
    /// Hash of the (task, CPU) decision sequence: wake-up placements and
    /// load-balancer moves.
    pub decision_digest: String,
}

/// Where woken tasks landed relative to their waker's CPU.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WakeLocality {
    /// On the waker's CPU.
    pub same_cpu: u64,
    /// Another CPU of the waker's cluster (the waker's core where there
    /// are no clusters).
    pub same_cluster: u64,
    /// Another CPU of the waker's LLC, outside its cluster.
    pub same_llc: u64,
    /// Outside the waker's LLC.
    pub other_llc: u64,
}

impl PlacementSummary {
    pub(super) fn of(policy: String, p: &PlacementStats) -> Self {
        PlacementSummary {
            policy,
            stages: stage_counts(p),
            probes: p.probes,
            probes_per_wakeup: Dist::of(&p.probes_per_wakeup),
            probe_cost_ns: p.cost_ns,
            select_idle_cpu_cost_ns: Dist::of(&p.select_idle_cpu_cost),
            select_idle_core_probes: Dist::of(&p.select_idle_core_probes),
            select_idle_core_cost_ns: Dist::of(&p.select_idle_core_cost),
            has_idle_cores_reads: p.has_idle_cores_reads,
            has_idle_cores_true: p.has_idle_cores_true,
            nr_idle_scan_reads: p.nr_idle_scan_reads,
            sis_util_no_scan: p.sis_util_no_scan,
            llc_shared_writes: p.llc_shared_writes,
            wake_affine_this: p.wake_affine_this,
            wake_affine_prev: p.wake_affine_prev,
            wake_affine_sync: p.wake_affine_sync,
            wake_wide: p.wake_wide,
            fallback_rq: p.fallback_rq,
            wake_locality: WakeLocality {
                same_cpu: p.wake_locality[0],
                same_cluster: p.wake_locality[1],
                same_llc: p.wake_locality[2],
                other_llc: p.wake_locality[3],
            },
            decision_digest: format!("{:016x}", p.decision_digest),
        }
    }
}

/// Wake-ups per deciding stage, by the name reports give it (the policy's
/// own names for its stages, [`Stage::name_for`]); only stages that
/// occurred. Two stages of one name (a policy naming one of its stages as
/// a stage of the Linux path) add up.
pub fn stage_counts(p: &PlacementStats) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for s in Stage::all() {
        let n = p.stages[s as usize];
        if n > 0 {
            *m.entry(s.name_for(p.stage_names)).or_insert(0) += n;
        }
    }
    m
}

/// Per-CPU time split.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuTime {
    /// CPU id.
    pub cpu: usize,
    /// Busy ns.
    pub busy_ns: u64,
    /// Idle ns.
    pub idle_ns: u64,
    /// Context switches to a task (0: no task ran here; the CPU may
    /// still have been busy balancing for others).
    pub context_switches: u64,
}

/// What the load balancer did.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BalanceSummary {
    /// Balancer name ("none" without one).
    pub balancer: String,
    /// Counters by level and kind, tasks moved, kicks, cost.
    #[serde(flatten)]
    pub stats: BalanceStats,
    /// Time some allowed CPU was idle while another had a runnable task
    /// waiting, ns.
    pub idle_while_work_waits_ns: u64,
    /// When every allowed CPU was first out of idle at the same time, ns
    /// (None: never).
    pub first_all_busy_ns: Option<u64>,
}

/// The record of one simulation run.
#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    /// Benchmark name.
    pub benchmark: String,
    /// Machine.
    pub machine: String,
    /// The benchmark's measured span (ns, simulated).
    pub time_ns: u64,
    /// Simulated time until the last task exited.
    pub sim_ns: u64,
    /// Counters.
    #[serde(flatten)]
    pub counters: RunCounters,
    /// Placement summary.
    pub placement: PlacementSummary,
    /// Load-balancing summary.
    pub balance: BalanceSummary,
    /// Per-CPU busy/idle.
    pub cpus: Vec<CpuTime>,
    /// CPU time in user mode, s (the counters' `user_ns`).
    pub user_s: f64,
    /// CPU time in the kernel (busy time not in user mode: syscalls,
    /// switches, balancing, NUMA scans, faults and migrations), s.
    pub system_s: f64,
    /// Memory and NUMA-balancing counters, /proc/vmstat names (absent when
    /// the workload declares no memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa: Option<crate::numa::NumaCounters>,
    /// The lines the benchmark prints (not in JSON).
    #[serde(skip)]
    pub text: String,
    /// Files the tool writes (name, content; not in JSON): rt-app's logs.
    #[serde(skip)]
    pub files: Vec<(String, String)>,
    /// The workload's own JSON fields.
    #[serde(flatten)]
    pub workload: serde_json::Map<String, serde_json::Value>,
    /// Host time and scan work of the policy's calls (not in JSON: it
    /// measures the host; `--stats`).
    #[serde(skip)]
    pub phases: crate::engine::PhaseTimes,
}

#[cfg(test)]
mod stage_name_tests {
    use super::*;
    use crate::placement::{Decision, PolicyFactory, WakeEnv, WakeRequest};

    #[test]
    fn policy_stages_take_the_policys_names_and_only_when_they_occur() {
        let mut p = PlacementStats::default();
        assert!(stage_counts(&p).is_empty());
        p.stages[Stage::TargetIdle as usize] = 3;
        p.stages[Stage::Policy0 as usize] = 5;
        p.stages[Stage::Policy2 as usize] = 7;
        // without names: the slots' own
        let m = stage_counts(&p);
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [
                ("policy0".to_string(), 5),
                ("policy2".to_string(), 7),
                ("target_idle".to_string(), 3)
            ]
        );
        // named: a name past the list is the slot's, a name shared with
        // another stage adds to it (names a run refuses,
        // placement::check_stage_names, but the counting does not rely on it)
        p.stage_names = &["target_idle", "unused"];
        let m = stage_counts(&p);
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [("policy2".to_string(), 7), ("target_idle".to_string(), 8)]
        );
        assert_eq!(Stage::policy(0), Some(Stage::Policy0));
        assert_eq!(Stage::policy(Stage::POLICY.len()), None);
        assert_eq!(Stage::Policy7.policy_index(), Some(7));
        assert_eq!(Stage::ScxStayPrev.policy_index(), None);
        assert_eq!(*Stage::ALL.last().unwrap(), Stage::Policy7);
    }

    /// Even tasks to their previous CPU, odd ones to CPU 0.
    struct EvenOdd;
    impl Placement for EvenOdd {
        fn name(&self) -> String {
            "even-odd".into()
        }
        fn select_task_rq(&mut self, env: &mut WakeEnv, req: WakeRequest) -> Decision {
            env.read_rq(req.prev_cpu);
            match req.task % 2 {
                0 => Decision {
                    cpu: req.prev_cpu,
                    stage: Stage::Policy0,
                },
                _ => Decision {
                    cpu: 0,
                    stage: Stage::Policy1,
                },
            }
        }
        fn stage_names(&self) -> &'static [&'static str] {
            &["even", "odd"]
        }
    }
    #[derive(Debug)]
    struct EvenOddFactory;
    impl PolicyFactory for EvenOddFactory {
        fn name(&self) -> &str {
            "even-odd"
        }
        fn build(&self, _: &Topology, _: &SchedDomains) -> Box<dyn Placement> {
            Box::new(EvenOdd)
        }
    }

    #[test]
    fn a_custom_policy_runs_with_its_stage_names_and_no_balancer() {
        let topo = topology::preset("kunpeng920-node").unwrap();
        let hb = Hackbench {
            pipe: true,
            threads: true,
            groups: 1,
            fds: 4,
            loops: 50,
            ..Default::default()
        };
        let opt = SimOptions {
            policy: PolicyChoice::Custom(std::sync::Arc::new(EvenOddFactory)),
            ..Default::default()
        };
        assert_eq!(
            format!("{:?}", opt.policy),
            "Custom(PolicyFactory(\"even-odd\"))"
        );
        let r = crate::run::simulate_hackbench(&topo, &hb, &opt).unwrap();
        let p = &r.placement;
        assert_eq!(p.policy, "even-odd");
        assert_eq!(r.balance.balancer, "none");
        assert_eq!(
            p.stages.keys().map(String::as_str).collect::<Vec<_>>(),
            ["even", "odd"]
        );
        assert_eq!(
            p.stages.values().sum::<u64>(),
            r.counters.wakeups - r.counters.wakeups_in_place
        );
        let json = serde_json::to_value(&r).unwrap();
        assert!(json["placement"]["stages"]["odd"].as_u64().unwrap() > 0);
        // the Linux path's names are untouched, and it has no policy stage
        let linux = crate::run::simulate_hackbench(&topo, &hb, &SimOptions::default()).unwrap();
        assert!(linux
            .placement
            .stages
            .keys()
            .all(|k| !k.starts_with("policy") && !["even", "odd"].contains(&k.as_str())));
        assert_ne!(linux.placement.decision_digest, p.decision_digest);
    }

    /// A trace of a custom policy's run names its stages as the policy
    /// does (`TraceSetup::stage_names`), the Linux path's by `Stage::name`.
    #[test]
    fn a_trace_sink_is_given_the_policys_stage_names() {
        use crate::trace::{TraceEvent, TraceSetup, TraceSink, TraceSlot};
        use std::sync::{Arc, Mutex};
        struct Names(Arc<Mutex<Vec<String>>>);
        impl TraceSink for Names {
            fn begin(&mut self, setup: &TraceSetup) {
                *self.0.lock().unwrap() = setup.stage_names.clone();
            }
            fn event(&mut self, _: crate::Nanos, _: &TraceEvent) {}
            fn end(&mut self, _: crate::Nanos) {}
            fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
                self
            }
        }
        let topo = topology::preset("kvm-8vcpu").unwrap();
        let hb = Hackbench {
            groups: 1,
            fds: 2,
            loops: 5,
            ..Default::default()
        };
        let names = |policy: PolicyChoice| {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let opt = SimOptions {
                policy,
                trace: Some(TraceSlot::new(Box::new(Names(seen.clone())))),
                ..Default::default()
            };
            crate::run::simulate_hackbench(&topo, &hb, &opt).unwrap();
            let v = seen.lock().unwrap().clone();
            v
        };
        let custom = names(PolicyChoice::Custom(Arc::new(EvenOddFactory)));
        assert_eq!(custom.len(), Stage::COUNT);
        assert_eq!(custom[Stage::Policy0 as usize], "even");
        assert_eq!(custom[Stage::Policy1 as usize], "odd");
        assert_eq!(custom[Stage::Policy2 as usize], "policy2");
        let linux = names(PolicyChoice::default());
        assert_eq!(linux[Stage::Policy0 as usize], "policy0");
        assert_eq!(linux[Stage::IdleCore as usize], "idle_core");
    }
}
