//! The metrics an experiment can report, read from a run's JSON record
//! (the simulator's and the native ports' records share field names where
//! the meaning is the same). Benchmark metrics follow what mmtests extracts
//! (hackbench `time`, tbench throughput, schbench percentiles); the
//! scheduler-internal ones exist only for simulated runs.

use report::{Better, MetricInfo};
use serde_json::Value;
use std::collections::BTreeMap;

/// A metric: its report description and where its value is in a record.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Name (the table's operation prefix).
    pub name: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Better direction.
    pub better: Better,
    /// Decimal places (mmtests: hackbench and tbench 4, otherwise 2).
    pub decimals: usize,
    /// The benchmarks it belongs to (empty: any simulated run).
    pub benchmarks: &'static [&'static str],
    /// JSON pointer into the run record.
    pub pointer: &'static str,
    /// One line.
    pub description: &'static str,
}

use Better::{Higher, Lower, Neither};

/// Descriptions of a metric that depend on the benchmark, (metric,
/// benchmark, description): an experiment's report states those of the
/// benchmarks it runs ([`info`]), so a hackbench experiment's `time` is
/// hackbench's alone.
const BY_BENCHMARK: &[(&str, &str, &str)] = &[
    (
        "time",
        "hackbench",
        "hackbench Time: seconds until every task exited",
    ),
    ("time", "npb", "NPB Time in seconds: the timed section"),
];

/// Every metric by name.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "time",
        unit: "s",
        better: Lower,
        decimals: 4,
        benchmarks: &["hackbench", "npb"],
        pointer: "/time_s",
        description: "the benchmark's time",
    },
    Metric {
        name: "mops",
        unit: "Mop/s",
        better: Higher,
        decimals: 2,
        benchmarks: &["npb"],
        pointer: "/npb/mops_total",
        description: "NPB Mop/s total",
    },
    Metric {
        name: "system-time",
        unit: "s",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/system_s",
        description: "system CPU time of the run's tasks (NUMA scans, hinting faults, migrations, syscalls)",
    },
    Metric {
        name: "user-time",
        unit: "s",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/user_s",
        description: "user CPU time of the run's tasks",
    },
    Metric {
        name: "numa-pte-updates",
        unit: "pages",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/numa_pte_updates",
        description: "/proc/vmstat numa_pte_updates: pages the NUMA scanner made PROT_NONE, a huge PMD as 512 (mmtests' \"NUMA base PTE updates\")",
    },
    Metric {
        name: "numa-huge-pmd-updates",
        unit: "PMDs",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/numa_huge_pte_updates",
        description: "/proc/vmstat numa_huge_pte_updates: huge PMDs the NUMA scanner made PROT_NONE (mmtests' \"NUMA huge PMD updates\")",
    },
    Metric {
        name: "numa-page-range-updates",
        unit: "pages",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/mmtests_numa_pte_updates",
        description: "mmtests' \"NUMA page range updates\": numa_pte_updates plus 512 per huge PMD (MonitorMmtestsvmstat.pm; the PMDs' pages are counted twice)",
    },
    Metric {
        name: "numa-base-page-pte-updates",
        unit: "pages",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/base_page_pte_updates",
        description: "PTEs of base pages the NUMA scanner changed: numa_pte_updates less 512 per huge PMD",
    },
    Metric {
        name: "numa-hint-faults",
        unit: "faults",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/numa_hint_faults",
        description: "/proc/vmstat numa_hint_faults: NUMA hinting faults",
    },
    Metric {
        name: "numa-hint-faults-local",
        unit: "faults",
        better: Higher,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/numa_hint_faults_local",
        description: "/proc/vmstat numa_hint_faults_local: hinting faults on a page of the faulting CPU's node",
    },
    Metric {
        name: NUMA_LOCAL_FAULT_PCT,
        unit: "%",
        better: Higher,
        decimals: 2,
        benchmarks: &[],
        pointer: "/numa/numa_hint_faults_local",
        description: "numa_hint_faults_local as a share of numa_hint_faults",
    },
    Metric {
        name: "numa-pages-migrated",
        unit: "pages",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/numa/numa_pages_migrated",
        description: "/proc/vmstat numa_pages_migrated: pages NUMA balancing moved",
    },
    Metric {
        name: "tput",
        unit: "MB/s",
        better: Higher,
        decimals: 4,
        benchmarks: &["tbench"],
        pointer: "/throughput_mb_s",
        description: "tbench throughput over the execute phase",
    },
    Metric {
        name: "max-latency",
        unit: "ms",
        better: Lower,
        decimals: 4,
        benchmarks: &["tbench"],
        pointer: "/max_latency_ms",
        description: "tbench worst per-tick latency of any client",
    },
    Metric {
        name: "wakeup-p50",
        unit: "us",
        better: Lower,
        decimals: 2,
        benchmarks: &["schbench"],
        pointer: "/wakeup_latency_us/p50",
        description: "schbench wakeup latency, 50th percentile",
    },
    Metric {
        name: "wakeup-p99",
        unit: "us",
        better: Lower,
        decimals: 2,
        benchmarks: &["schbench"],
        pointer: "/wakeup_latency_us/p99",
        description: "schbench wakeup latency, 99th percentile",
    },
    Metric {
        name: "request-p99",
        unit: "us",
        better: Lower,
        decimals: 2,
        benchmarks: &["schbench"],
        pointer: "/request_latency_us/p99",
        description: "schbench request latency, 99th percentile (mmtests' ratio metric)",
    },
    Metric {
        name: "rps-p50",
        unit: "req/s",
        better: Higher,
        decimals: 2,
        benchmarks: &["schbench"],
        pointer: "/rps/p50",
        description: "schbench requests per second, 50th percentile",
    },
    Metric {
        name: "probes-per-wakeup",
        unit: "CPUs",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/placement/probes_per_wakeup/mean",
        description: "run queues the wake-up path probed per wakeup",
    },
    Metric {
        name: "select-idle-cpu-cost",
        unit: "ns",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/placement/select_idle_cpu_cost_ns/mean",
        description: "modelled cost per select_idle_cpu call",
    },
    Metric {
        name: "select-idle-core-cost",
        unit: "ns",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/placement/select_idle_core_cost_ns/mean",
        description: "modelled cost per select_idle_core call",
    },
    Metric {
        name: "select-idle-core-probes",
        unit: "CPUs",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/placement/select_idle_core_probes/mean",
        description: "CPUs probed per select_idle_core call",
    },
    Metric {
        name: "placement-cost",
        unit: "ms",
        better: Lower,
        decimals: 4,
        benchmarks: &[],
        pointer: "/placement/probe_cost_ns",
        description: "total modelled wake-up placement cost",
    },
    Metric {
        name: "migrations",
        unit: "tasks",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/migrations",
        description: "task migrations (wake-up placement and balancing)",
    },
    Metric {
        name: "lb-moved",
        unit: "tasks",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/balance/moved",
        description: "tasks the load balancer moved",
    },
    Metric {
        name: "lb-newidle",
        unit: "entries",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/balance/newidle_entries",
        description: "newly-idle balance entries",
    },
    Metric {
        name: "lb-ilb-kicks",
        unit: "kicks",
        better: Lower,
        decimals: 0,
        benchmarks: &[],
        pointer: "/balance/ilb_kicks",
        description: "nohz idle-balance kicks",
    },
    Metric {
        name: "lb-cost",
        unit: "ms",
        better: Lower,
        decimals: 4,
        benchmarks: &[],
        pointer: "/balance/cost_ns",
        description: "total modelled load-balancing cost",
    },
    Metric {
        name: "idle-while-waiting",
        unit: "ms",
        better: Lower,
        decimals: 4,
        benchmarks: &[],
        pointer: "/balance/idle_while_work_waits_ns",
        description: "time an allowed CPU idled while a task waited elsewhere",
    },
    Metric {
        name: "vm-wakeup-p50",
        unit: "us",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/combined/wakeup_latency_us/p50",
        description:
            "runs on several guests: schbench wakeup latency p50 over every guest's samples",
    },
    Metric {
        name: "vm-wakeup-p99",
        unit: "us",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/combined/wakeup_latency_us/p99",
        description:
            "runs on several guests: schbench wakeup latency p99 over every guest's samples",
    },
    Metric {
        name: "vm-tput",
        unit: "MB/s",
        better: Higher,
        decimals: 4,
        benchmarks: &[],
        pointer: "/vm/combined/throughput_mb_s",
        description: "runs on several guests: tbench throughput of every guest's clients together",
    },
    Metric {
        name: "vm-steal",
        unit: "ms",
        better: Lower,
        decimals: 4,
        benchmarks: &[],
        pointer: "/vm/guests/0/steal_ns",
        description: "runs on a host (--host): the first guest's steal over its vCPUs",
    },
    Metric {
        name: "vm-preempted-wakeups",
        unit: "wakeups",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/guests/0/wakeups_on_preempted",
        description: "runs on a host: the first guest's task wake-ups placed on a pre-empted vCPU",
    },
    Metric {
        name: "vm-preempted-wait",
        unit: "ms",
        better: Lower,
        decimals: 4,
        benchmarks: &[],
        pointer: "/vm/guests/0/wait_on_preempted_ns",
        description: "runs on a host: the time those wakees waited for their vCPU, summed",
    },
    Metric {
        name: "vm-redirected-wakeups",
        unit: "times",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/guests/0/wakeups_redirected",
        description: "runs on a host: the first guest's wake-ups in which the vCPU-preempted check turned down an idle vCPU",
    },
    Metric {
        name: "vm-flagged-running",
        unit: "times",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/guests/0/flagged/running",
        description: "runs on a host: times a vCPU of the first guest was flagged pre-empted while running",
    },
    Metric {
        name: "vm-flagged-idle-entry",
        unit: "times",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/guests/0/flagged/idle_entry",
        description: "runs on a host: times a vCPU of the first guest was flagged pre-empted in its idle entry path, before its HLT exit",
    },
    Metric {
        name: "vm-flagged-polling",
        unit: "times",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/guests/0/flagged/halt_polling",
        description: "runs on a host: times a halt-polling vCPU of the first guest was flagged as its thread was scheduled out (host kernels to 5.18)",
    },
    Metric {
        name: "vm-flagged-halted",
        unit: "times",
        better: Lower,
        decimals: 2,
        benchmarks: &[],
        pointer: "/vm/guests/0/flagged/halted",
        description: "runs on a host: times a vCPU of the first guest was flagged as its thread blocked in HLT (host kernels to 5.18)",
    },
    Metric {
        name: "same-cpu",
        unit: "%",
        better: Lower,
        decimals: 2,
        benchmarks: &["scenario"],
        pointer: "/agreement/same_cpu_pct",
        description: "kernel runs of a placement scenario: share of the rounds in which the kernel chose the CPU the simulator's wake-up path chooses (averaged arithmetically, as a share can be 0; higher is closer)",
    },
    Metric {
        name: "same-class",
        unit: "%",
        better: Lower,
        decimals: 2,
        benchmarks: &["scenario"],
        pointer: "/agreement/same_class_pct",
        description: "kernel runs of a placement scenario: share of the rounds in which the kernel chose a CPU of the simulator's CPU's class (what it was doing, where from the waker; higher is closer)",
    },
];

/// The pseudo-metric that expands to one `wake-CLASS` metric per
/// locality class of the kernel oracle (`oracle::trace::Locality`): the
/// share of task wake-ups that put the wakee on the waker's CPU, its SMT
/// sibling, its cluster, its LLC, another LLC of its node or another node.
/// Placement scenarios (simulated or in a kernel) and kernel runs of a
/// benchmark have it.
pub const WAKE_LOCALITY: &str = "wake-locality";

/// The classes of [`WAKE_LOCALITY`]: (metric, record key, description).
const LOCALITY_CLASSES: [(&str, &str, &str); 6] = [
    ("wake-same-cpu", "same_cpu", "on the waker's CPU"),
    (
        "wake-same-core",
        "same_core",
        "on an SMT sibling of the waker's CPU",
    ),
    (
        "wake-same-cluster",
        "same_cluster",
        "on another core of the waker's cluster",
    ),
    ("wake-same-llc", "same_llc", "elsewhere in the waker's LLC"),
    (
        "wake-other-llc",
        "other_llc",
        "in another LLC of the waker's node",
    ),
    ("wake-other-node", "other_node", "in another NUMA node"),
];

/// The pseudo-metric that expands to the simulator's four wake-up
/// locality buckets (`placement.wake_locality`, sim::run::WakeLocality),
/// as shares: `wake4-same-cpu`, `wake4-same-cluster` (an SMT sibling
/// included), `wake4-same-llc`, `wake4-other-llc` (another node included).
/// Every simulated run has them, and a kernel run counts its trace's
/// wake-ups the same way, so a benchmark can be compared with a kernel.
pub const WAKE_LOCALITY_4: &str = "wake-locality-4";

/// The buckets of [`WAKE_LOCALITY_4`]: (metric, record key, description).
const SIM_BUCKETS: [(&str, &str, &str); 4] = [
    ("wake4-same-cpu", "same_cpu", "on the waker's CPU"),
    (
        "wake4-same-cluster",
        "same_cluster",
        "elsewhere in the waker's cluster (its SMT sibling included)",
    ),
    ("wake4-same-llc", "same_llc", "elsewhere in the waker's LLC"),
    (
        "wake4-other-llc",
        "other_llc",
        "outside the waker's LLC (other nodes included)",
    ),
];

/// The metrics [`WAKE_LOCALITY_4`] expands to.
pub fn wake_locality_4_names() -> [&'static str; 4] {
    SIM_BUCKETS.map(|c| c.0)
}

/// The metrics [`WAKE_LOCALITY`] expands to, in class order.
pub fn wake_locality_names() -> [&'static str; 6] {
    LOCALITY_CLASSES.map(|c| c.0)
}

/// The pseudo-metric that expands to one `stage-NAME` metric per wake-up
/// placement stage that occurred: its share of wakeups, percent.
pub const STAGE_SHARES: &str = "stage-shares";

/// The local share of hinting faults, a ratio of two counters.
pub const NUMA_LOCAL_FAULT_PCT: &str = "numa-local-fault-pct";

/// The pseudo-metric that expands to per-thread metrics of an rt-app run,
/// one set per thread (`NAME-IDX`, as rt-app names its log): the thread's
/// CPU share, wake-up latency after timers (p50, p99) and timer misses,
/// from its rt-app log rows (benchspec's `rtapp::log::ThreadSummary`).
pub const RTAPP_THREADS: &str = "rtapp-threads";

/// Per-thread rt-app metrics: (prefix, the summary field, unit, better,
/// description).
const THREAD_METRICS: [(&str, &str, &str, Better, &str); 5] = [
    (
        "cpu-share:",
        "/cpu_time_pct",
        "%",
        Higher,
        "CPU time consumed over the thread's logged span",
    ),
    (
        "run-share:",
        "/cpu_share_pct",
        "%",
        Higher,
        "share of the thread's logged span spent in its run events (rt-app's run column)",
    ),
    (
        "wu-lat-p50:",
        "/wu_lat_us/p50",
        "us",
        Lower,
        "median wake-up latency after the thread's timers",
    ),
    (
        "wu-lat-p99:",
        "/wu_lat_us/p99",
        "us",
        Lower,
        "99th percentile wake-up latency after the thread's timers",
    ),
    (
        "slack-misses:",
        "/slack_misses",
        "phases",
        Lower,
        "phases whose timer deadline had already passed",
    ),
];

/// A metric by name (`stage-NAME` metrics are made on demand).
pub fn lookup(name: &str) -> Option<Metric> {
    METRICS.iter().find(|m| m.name == name).copied()
}

/// Whether `name` names a metric or [`STAGE_SHARES`].
pub fn known(name: &str) -> bool {
    name == STAGE_SHARES
        || name == RTAPP_THREADS
        || name == WAKE_LOCALITY
        || name == WAKE_LOCALITY_4
        || lookup(name).is_some()
}

/// The names every metric could have, for error messages.
pub fn names() -> String {
    let mut v: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
    v.push(STAGE_SHARES);
    v.push(RTAPP_THREADS);
    v.push(WAKE_LOCALITY);
    v.push(WAKE_LOCALITY_4);
    v.join(", ")
}

/// The metrics reported when an experiment names none: the benchmark's
/// own, then the wake-up path's.
pub fn defaults(benchmark: &str) -> Vec<String> {
    if benchmark == "scenario" {
        return [
            WAKE_LOCALITY,
            "migrations",
            "same-cpu",
            "same-class",
            STAGE_SHARES,
        ]
        .map(String::from)
        .into();
    }
    let mut v: Vec<String> = METRICS
        .iter()
        .filter(|m| m.benchmarks.contains(&benchmark))
        .map(|m| m.name.to_string())
        .collect();
    if benchmark == "rtapp" {
        v.push(RTAPP_THREADS.into());
    }
    if benchmark == "npb" {
        // NPB's time and Mop/s, then what NUMA balancing did (the 4.19
        // stagger's evaluation: time, system time and /proc/vmstat's
        // counters)
        v.extend(
            [
                "system-time",
                "numa-pte-updates",
                "numa-huge-pmd-updates",
                "numa-page-range-updates",
                "numa-hint-faults",
                NUMA_LOCAL_FAULT_PCT,
                "numa-pages-migrated",
            ]
            .map(String::from),
        );
    }
    v.extend(
        [
            "probes-per-wakeup",
            "select-idle-cpu-cost",
            "migrations",
            "lb-moved",
            STAGE_SHARES,
        ]
        .map(String::from),
    );
    v
}

/// How a metric is reported in an experiment that runs `benchmarks`: its
/// description is theirs where it depends on the benchmark
/// ([`BY_BENCHMARK`]; the metric's own when none of them has one).
pub fn info(name: &str, benchmarks: &[&str]) -> MetricInfo {
    if let Some((_, _, what)) = LOCALITY_CLASSES
        .iter()
        .chain(SIM_BUCKETS.iter())
        .find(|c| c.0 == name)
    {
        // like a stage's share
        return MetricInfo {
            name: name.into(),
            unit: "%".into(),
            better: Neither,
            decimals: 2,
            description: format!("share of wake-ups that put the wakee {what}"),
        };
    }
    if let Some((prefix, _, unit, better, what)) =
        THREAD_METRICS.iter().find(|m| name.starts_with(m.0))
    {
        return MetricInfo {
            name: name.into(),
            unit: (*unit).into(),
            better: *better,
            decimals: 2,
            description: format!("rt-app thread {}: {what}", &name[prefix.len()..]),
        };
    }
    match lookup(name) {
        Some(m) => {
            let own: Vec<&str> = BY_BENCHMARK
                .iter()
                .filter(|(metric, b, _)| *metric == name && benchmarks.contains(b))
                .map(|(.., d)| *d)
                .collect();
            MetricInfo {
                name: m.name.into(),
                unit: m.unit.into(),
                better: m.better,
                decimals: m.decimals,
                description: if own.is_empty() {
                    m.description.into()
                } else {
                    own.join("; ")
                },
            }
        }
        // A stage's share has no better direction (its arithmetic mean is
        // reported, and the change from the baseline).
        None => MetricInfo {
            name: name.into(),
            unit: "%".into(),
            better: Neither,
            decimals: 2,
            description: format!(
                "share of wakeups placed by stage {}",
                name.trim_start_matches("stage-")
            ),
        },
    }
}

/// Read `wanted` metrics out of a run record. Nanosecond totals shown in
/// ms are scaled here; a metric the record lacks is left out.
pub fn extract(record: &Value, wanted: &[String]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for name in wanted {
        if name == STAGE_SHARES {
            if let Some(stages) = record
                .pointer("/placement/stages")
                .and_then(Value::as_object)
            {
                let total: f64 = stages.values().filter_map(Value::as_f64).sum();
                for (stage, n) in stages {
                    if let (Some(n), true) = (n.as_f64(), total > 0.0) {
                        out.insert(format!("stage-{stage}"), 100.0 * n / total);
                    }
                }
            }
            continue;
        }
        if name == WAKE_LOCALITY {
            if let Some(loc) = record.get("wake_locality_pct") {
                for (metric, key, _) in LOCALITY_CLASSES {
                    if let Some(v) = loc.get(key).and_then(Value::as_f64) {
                        out.insert(metric.to_string(), v);
                    }
                }
            }
            continue;
        }
        if name == WAKE_LOCALITY_4 {
            if let Some(loc) = record.pointer("/placement/wake_locality") {
                let n: Vec<f64> = SIM_BUCKETS
                    .iter()
                    .map(|b| loc.get(b.1).and_then(Value::as_f64).unwrap_or(0.0))
                    .collect();
                let total: f64 = n.iter().sum();
                if total > 0.0 {
                    for (b, x) in SIM_BUCKETS.iter().zip(n) {
                        out.insert(b.0.to_string(), 100.0 * x / total);
                    }
                }
            }
            continue;
        }
        if name == RTAPP_THREADS {
            let threads = record
                .pointer("/rtapp/threads")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for t in threads {
                let Some(label) = t.get("thread").and_then(Value::as_str) else {
                    continue;
                };
                for (prefix, pointer, ..) in THREAD_METRICS {
                    if let Some(v) = t.pointer(pointer).and_then(Value::as_f64) {
                        out.insert(format!("{prefix}{label}"), v);
                    }
                }
            }
            continue;
        }
        if name == NUMA_LOCAL_FAULT_PCT {
            let faults = record
                .pointer("/numa/numa_hint_faults")
                .and_then(Value::as_f64);
            let local = record
                .pointer("/numa/numa_hint_faults_local")
                .and_then(Value::as_f64);
            if let (Some(f), Some(l)) = (faults, local) {
                if f > 0.0 {
                    out.insert(name.clone(), 100.0 * l / f);
                }
            }
            continue;
        }
        let Some(m) = lookup(name) else { continue };
        if let Some(v) = record.pointer(m.pointer).and_then(Value::as_f64) {
            let v = if m.pointer.ends_with("_ns") && m.unit == "ms" {
                v / 1e6
            } else {
                v
            };
            out.insert(name.clone(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_metrics_and_stage_shares() {
        let rec = json!({
            "time_s": 1.5,
            "migrations": 7,
            "placement": {"stages": {"target": 3, "idle-core": 1}, "probe_cost_ns": 2_000_000},
            "balance": {"moved": 2, "cost_ns": 1_500_000, "newidle_entries": 9}
        });
        let wanted: Vec<String> = [
            "lb-cost",
            "lb-newidle",
            "time",
            "migrations",
            "lb-moved",
            "placement-cost",
            "tput",
            STAGE_SHARES,
        ]
        .map(String::from)
        .into();
        let m = extract(&rec, &wanted);
        assert_eq!(m["time"], 1.5);
        assert_eq!(m["migrations"], 7.0);
        assert_eq!(m["lb-moved"], 2.0);
        assert_eq!(m["lb-cost"], 1.5);
        assert_eq!(m["lb-newidle"], 9.0);
        assert_eq!(m["placement-cost"], 2.0);
        assert_eq!(m["stage-target"], 75.0);
        assert_eq!(m["stage-idle-core"], 25.0);
        assert!(!m.contains_key("tput"));
    }

    #[test]
    fn rtapp_threads_expand_per_thread() {
        let rec = json!({"rtapp": {"threads": [
            {"thread": "a-0", "cpu_share_pct": 20.5, "cpu_time_pct": 20.1, "slack_misses": 1,
             "wu_lat_us": {"p50": 60, "p99": 90}},
            {"thread": "b-1", "cpu_share_pct": 70.0, "slack_misses": 0,
             "wu_lat_us": {"p50": 0, "p99": 0}}]}});
        let m = extract(&rec, &[RTAPP_THREADS.to_string()]);
        assert_eq!(m["cpu-share:a-0"], 20.1);
        assert_eq!(m["run-share:a-0"], 20.5);
        assert_eq!(m["wu-lat-p99:a-0"], 90.0);
        assert_eq!(m["slack-misses:a-0"], 1.0);
        assert!(!m.contains_key("cpu-share:b-1"), "not measured");
        assert_eq!(m["run-share:b-1"], 70.0);
        assert_eq!(m.len(), 9);
        let i = info("cpu-share:a-0", &["rtapp"]);
        assert_eq!((i.unit.as_str(), i.better), ("%", Higher));
        assert!(defaults("rtapp").contains(&RTAPP_THREADS.to_string()));
    }

    #[test]
    fn numa_counters_and_the_local_fault_share() {
        let rec = json!({
            "time_s": 12.5,
            "system_s": 0.75,
            "user_s": 900.0,
            "npb": {"mops_total": 4321.5},
            "numa": {"numa_pte_updates": 1536, "numa_huge_pte_updates": 2,
                     "mmtests_numa_pte_updates": 2560, "base_page_pte_updates": 512,
                     "numa_hint_faults": 800,
                     "numa_hint_faults_local": 600, "numa_pages_migrated": 50}
        });
        let m = extract(&rec, &defaults("npb"));
        assert_eq!(m["time"], 12.5);
        assert_eq!(m["system-time"], 0.75);
        assert_eq!(m["numa-pte-updates"], 1536.0);
        assert_eq!(m["numa-huge-pmd-updates"], 2.0);
        assert_eq!(m["numa-page-range-updates"], 2560.0);
        let m2 = extract(&rec, &["numa-base-page-pte-updates".into()]);
        assert_eq!(m2["numa-base-page-pte-updates"], 512.0);
        assert_eq!(m["numa-hint-faults"], 800.0);
        assert_eq!(m["numa-local-fault-pct"], 75.0);
        assert_eq!(m["numa-pages-migrated"], 50.0);
        let m = extract(&rec, &["mops".into(), "user-time".into()]);
        assert_eq!((m["mops"], m["user-time"]), (4321.5, 900.0));
        // no faults: no share (not a division by zero)
        let rec = json!({"numa": {"numa_hint_faults": 0, "numa_hint_faults_local": 0}});
        assert!(extract(&rec, &[NUMA_LOCAL_FAULT_PCT.into()]).is_empty());
    }

    #[test]
    fn wake_locality_expands_to_the_six_classes() {
        let rec = json!({"wake_locality_pct": {"same_cpu": 25.0, "same_core": 0.0,
            "same_cluster": 0.0, "same_llc": 50.0, "other_llc": 0.0, "other_node": 25.0},
            "agreement": {"same_cpu_pct": 75.0, "same_class_pct": 100.0}});
        let wanted: Vec<String> = [WAKE_LOCALITY, "same-cpu", "same-class"]
            .map(String::from)
            .into();
        let m = extract(&rec, &wanted);
        assert_eq!(m.len(), 8, "{m:?}");
        assert_eq!(m["wake-same-llc"], 50.0);
        assert_eq!(m["wake-other-node"], 25.0);
        assert_eq!(m["same-cpu"], 75.0);
        assert_eq!(info("wake-same-core", &["scenario"]).unit, "%");
        // a simulated benchmark has no six-class record: nothing, not zeros
        assert!(extract(&json!({"time_s": 1.0}), &wanted).is_empty());
        // its four buckets, as shares
        let sim = json!({"placement": {"wake_locality":
            {"same_cpu": 1, "same_cluster": 1, "same_llc": 2, "other_llc": 0}}});
        let m = extract(&sim, &[WAKE_LOCALITY_4.to_string()]);
        assert_eq!(m["wake4-same-llc"], 50.0);
        assert_eq!(m["wake4-other-llc"], 0.0);
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn a_description_names_only_the_benchmarks_run() {
        let h = info("time", &["hackbench"]).description;
        assert!(h.starts_with("hackbench Time"), "{h}");
        assert!(!h.contains("NPB"), "{h}");
        let n = info("time", &["npb"]).description;
        assert!(n.starts_with("NPB Time") && !n.contains("hackbench"), "{n}");
        // both run: both, each its own
        let both = info("time", &["hackbench", "npb"]).description;
        assert!(
            both.contains("hackbench Time") && both.contains("NPB Time"),
            "{both}"
        );
        assert_eq!(info("time", &[]).description, "the benchmark's time");
        // a metric with one description keeps it
        assert_eq!(
            info("tput", &["tbench"]).description,
            "tbench throughput over the execute phase"
        );
    }

    #[test]
    fn one_direction_per_metric() {
        // shares of no better direction say so once, in the direction
        for name in ["stage-prev_idle", "wake-same-llc", "wake4-other-llc"] {
            let i = info(name, &["hackbench"]);
            assert_eq!(i.better, Neither, "{name}");
            assert!(
                !i.description.contains("better"),
                "{name}: {}",
                i.description
            );
        }
        // no other description claims a direction its metric lacks
        for m in METRICS {
            let d = m.description;
            let claims = ["lower is better", "higher is better", "neither direction"];
            assert!(!claims.iter().any(|c| d.contains(c)), "{}: {d}", m.name);
        }
        for (_, _, d) in BY_BENCHMARK {
            assert!(!d.contains("better"), "{d}");
        }
    }

    #[test]
    fn every_default_metric_is_known() {
        for b in [
            "hackbench",
            "schbench",
            "tbench",
            "spin",
            "rtapp",
            "npb",
            "scenario",
        ] {
            for m in defaults(b) {
                assert!(known(&m), "{m}");
            }
        }
    }
}
