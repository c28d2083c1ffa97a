//! The schbench model through the simulator: its reports, that every
//! wake-up it records covers a modelled wake-up, that no sample is lost,
//! and that wakeup latency grows once the workers outnumber the CPUs.

use proptest::prelude::*;
use serde_json::{json, Value};
use sim::costs::MachineCosts;
use sim::engine::Engine;
use sim::rq::RunQueue;
use sim::run::{simulate, simulate_schbench, SimOptions, SimResult};
use sim::workload::schbench::{
    latency_us, SchbenchSim, METRIC_LOOPS, METRIC_REQUEST, METRIC_WAKEUP,
};
use sim::workload::{Record, Report, Stop, Workload};

/// A multiply-add cost for runs that need the new version's matrix work
/// to load the CPUs. A test input, not a machine figure: the machines'
/// own figure may still be unmeasured (0).
const TEST_MADD_PS: u64 = 300;

fn new(m: u32, t: u32, r: u32) -> SchbenchSim {
    let mut s = SchbenchSim::new_version();
    s.bench.message_threads = m;
    s.bench.worker_threads = Some(t);
    s.bench.runtime = r;
    s
}

fn old(m: u32, t: u32, r: u32) -> SchbenchSim {
    let mut s = SchbenchSim::old_version();
    s.bench.message_threads = m;
    s.bench.worker_threads = Some(t);
    s.bench.runtime = r;
    s
}

/// The model as `simulate_schbench` resolves it, with `madd_ps` of
/// multiply-add cost, run through `simulate` (which takes the model as
/// given).
fn run_with_madd(machine: &str, mut s: SchbenchSim, madd_ps: u64) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    s.nprocs = topo.nr_cpus();
    s.madd_ps = madd_ps;
    s.validate().unwrap();
    simulate(&topo, &s, &SimOptions::default()).unwrap()
}

/// The schbench model, with the raw samples added to its JSON.
struct Raw(SchbenchSim);

impl Workload for Raw {
    fn name(&self) -> &'static str {
        "schbench"
    }
    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, first_cpu: usize) {
        self.0.build(e, first_cpu);
        e.keep_samples();
    }
    fn stop(&self) -> Stop {
        self.0.stop()
    }
    fn report(&self, rec: &Record) -> Report {
        let mut r = self.0.report(rec);
        for (k, m) in [
            ("raw_wakeup", METRIC_WAKEUP),
            ("raw_request", METRIC_REQUEST),
            ("raw_loops", METRIC_LOOPS),
        ] {
            r.json.insert(k.into(), json!(rec.samples(m)));
        }
        r
    }
}

fn raw(v: &Value, k: &str) -> Vec<(u64, u64)> {
    serde_json::from_value(v[k].clone()).unwrap()
}

fn p99(r: &SimResult) -> u64 {
    r.workload["wakeup_latency_us"]["p99"].as_u64().unwrap()
}

#[test]
fn new_version_prints_schbench_tables_and_is_deterministic() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let s = new(2, 4, 2);
    let a = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap();
    let b = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap();
    assert_eq!(a.text, b.text);
    assert_eq!(a.placement.decision_digest, b.placement.decision_digest);
    let lines: Vec<&str> = a.text.lines().collect();
    assert!(
        lines[0].starts_with("Wakeup Latencies percentiles (usec) runtime 2 (s) ("),
        "{}",
        a.text
    );
    assert!(lines[3].starts_with("\t* 99.0th: "), "{}", a.text);
    assert!(lines[6].starts_with("Request Latencies percentiles (usec) runtime 2 (s) ("));
    assert!(lines[12].starts_with("RPS percentiles (requests) runtime 2 (s) (2 total samples)"));
    assert!(lines[17].starts_with("average rps: "), "{}", a.text);
    assert_eq!(lines.len(), 18, "{}", a.text);
    assert_eq!(a.time_ns, 2_000_000_000);
    assert_eq!(a.sim_ns, 2_000_000_000);
    // every request sleeps 100 us (plus the 50 us timer slack)
    let req = &a.workload["request_latency_us"];
    assert!(req["min"].as_u64().unwrap() >= 150, "{req}");
    assert_eq!(a.workload["worker_threads"], 4);
}

#[test]
fn default_workers_interval_reports_and_split_lines() {
    // no -t: one worker per CPU of the machine (8), said first
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let mut s = SchbenchSim::new_version();
    s.bench.runtime = 3;
    s.bench.interval = 1;
    s.split_percent = Some(50);
    let r = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap();
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines[0], "setting worker threads to 8");
    assert_eq!(
        lines[1],
        "split mode: 50% private (128 KB per thread), 50% shared (128 KB total)"
    );
    assert_eq!(lines[2], "matrix sizes: private=73, shared=73");
    // an interval report each second (tables and the current rate), then
    // the final report
    let titles = r
        .text
        .lines()
        .filter(|l| l.starts_with("Wakeup Latencies"))
        .count();
    assert_eq!(titles, 4, "{}", r.text);
    assert_eq!(
        r.text
            .lines()
            .filter(|l| l.starts_with("current rps: "))
            .count(),
        3
    );
    assert!(r
        .text
        .contains("RPS percentiles (requests) runtime 1 (s) (1 total samples)"));
}

#[test]
fn warmup_zeroes_the_statistics_once() {
    // schbench keeps -w only for runs of 30 s or more
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let mut s = new(1, 2, 30);
    s.bench.warmup = 28;
    s.bench.sleep_usec = 20_000;
    s.bench.interval = 0;
    let r = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap();
    let at = r
        .text
        .find("warmup done, zeroing stats\n")
        .expect("warm-up line");
    // 27 reports before it (seconds 1-27), 2 after (29, 30), then the
    // final one
    assert_eq!(r.text[..at].matches("current rps: ").count(), 27);
    assert_eq!(r.text[at..].matches("current rps: ").count(), 2);
    // the final tables cover the last two seconds only: two RPS samples,
    // about 2 s / 20 ms of requests per worker
    let rps = &r.workload["rps"];
    assert_eq!(rps["samples"], 2, "{rps}");
    assert_eq!(r.workload["runtime_s"], 2);
    assert!(r
        .text
        .contains("Wakeup Latencies percentiles (usec) runtime 30 (s) ("));
    let n = r.workload["request_latency_us"]["samples"]
        .as_u64()
        .unwrap();
    assert!((150..=200).contains(&n), "{n}");
    assert!(r.text.ends_with(&format!(
        "average rps: {:.2}\n",
        r.workload["average_rps"].as_f64().unwrap()
    )));
}

#[test]
fn old_version_prints_one_latency_table() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let mut s = old(2, 4, 1);
    s.bench.sleep_usec = 5_000;
    s.cputime_usec = 5_000;
    let r = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap();
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines[0], "Latency percentiles (usec)");
    assert!(lines[1].starts_with("\t50.0th: "), "{}", r.text);
    assert!(lines[5].starts_with("\t*99.0th: "), "{}", r.text);
    assert!(lines[8].starts_with("\tmin="), "{}", r.text);
    assert_eq!(lines.len(), 9);
    // a worker's cycle is at least its spin plus the message thread's
    // sleep: 8 workers, 1 s, cycles of more than 10 ms
    let n = r.workload["wakeup_latency_us"]["samples"].as_u64().unwrap();
    assert!((100..=800).contains(&n), "{n}");
    assert!(r.workload.get("request_latency_us").is_none());
    // the jitter follows the seed
    let other = simulate_schbench(
        &topo,
        &s,
        &SimOptions {
            seed: 2,
            ..Default::default()
        },
    )
    .unwrap();
    assert_ne!(r.placement.decision_digest, other.placement.decision_digest);
}

#[test]
fn bad_parameters_name_the_flag() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let mut s = new(0, 4, 1);
    let e = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap_err();
    assert!(e.to_string().starts_with("-m "), "{e}");
    s.bench.message_threads = 1;
    s.bench.runtime = 0;
    let e = simulate_schbench(&topo, &s, &SimOptions::default()).unwrap_err();
    assert!(e.to_string().starts_with("-r/--runtime "), "{e}");
}

/// On kunpeng920-node (24 CPUs), wakeup latency stays at the wake-up
/// path's few microseconds while every worker has a CPU, and jumps once
/// they outnumber the CPUs: a woken worker then waits for a busy CPU.
#[test]
fn p99_wakeup_latency_rises_past_the_cpu_count() {
    // new: the matrix work loads the CPUs
    let few = run_with_madd("kunpeng920-node", new(1, 8, 1), TEST_MADD_PS);
    let many = run_with_madd("kunpeng920-node", new(1, 48, 1), TEST_MADD_PS);
    assert!(
        p99(&few) < 50 && p99(&many) > 10 * p99(&few) && p99(&many) > 200,
        "new: p99 {} us with 8 workers, {} us with 48",
        p99(&few),
        p99(&many)
    );
    // old: the spin loads the CPUs, with the machine's own costs
    let topo = topology::preset("kunpeng920-node").unwrap();
    let o = |t| simulate_schbench(&topo, &old(1, t, 1), &SimOptions::default()).unwrap();
    let (few, many) = (o(8), o(48));
    assert!(
        p99(&few) < 50 && p99(&many) > 10 * p99(&few) && p99(&many) > 1000,
        "old: p99 {} us with 8 workers, {} us with 48",
        p99(&few),
        p99(&many)
    );
}

#[derive(Debug, Clone)]
struct Case {
    machine: &'static str,
    old: bool,
    m: u32,
    t: u32,
    sleep: u32,
    cpu_or_ops: u32,
    madd_ps: u64,
    no_lock: bool,
    costs: bool,
}

fn case(max_m: u32, max_t: u32) -> impl Strategy<Value = Case> {
    (
        (
            prop::sample::select(vec!["kunpeng920-node", "kvm-8vcpu", "xeon-12c24t"]),
            any::<bool>(),
            1..=max_m,
            1..=max_t,
        ),
        (
            prop::sample::select(vec![50u32, 100, 2_000]),
            0u32..=3,
            prop::sample::select(vec![0u64, TEST_MADD_PS]),
            any::<bool>(),
            prop::bool::weighted(0.8),
        ),
    )
        .prop_map(
            |((machine, old, m, t), (sleep, cpu_or_ops, madd_ps, no_lock, costs))| Case {
                machine,
                old,
                m,
                t,
                sleep,
                cpu_or_ops,
                madd_ps,
                no_lock,
                costs,
            },
        )
}

/// Run a case for 1 s with the invariants checked; the model's JSON with
/// the raw samples.
fn run_case(c: &Case) -> Value {
    let topo = topology::preset(c.machine).unwrap();
    let mut s = if c.old {
        old(c.m, c.t, 1)
    } else {
        new(c.m, c.t, 1)
    };
    s.bench.sleep_usec = c.sleep;
    if c.old {
        s.cputime_usec = c.cpu_or_ops * 1000;
    } else {
        s.bench.operations = c.cpu_or_ops;
        s.bench.footprint_kb = 64;
        s.bench.no_locking = c.no_lock;
    }
    s.nprocs = topo.nr_cpus();
    s.madd_ps = if c.costs { c.madd_ps } else { 0 };
    let opt = SimOptions {
        check: true,
        costs: c.costs,
        ..Default::default()
    };
    let r = simulate(&topo, &Raw(s), &opt).unwrap();
    Value::Object(r.workload)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    /// A lone worker (`-m 1 -t 1`) is only ever woken by its message
    /// thread's batch, so every wakeup latency it records covers a whole
    /// modelled wake-up: the batch's clock reading, the post, and the
    /// context switch that brings the worker back (when it wakes on
    /// another CPU the IPI and the idle exit come first; the context
    /// switch alone is already at least the IPI on these machines).
    ///
    /// (With more workers a worker can also be preempted between queueing
    /// itself and waiting; its batch's clock may then be read while it is
    /// being switched back in, and it records less than a context switch
    /// without having slept, as real schbench would.)
    #[test]
    fn every_wakeup_covers_the_wake_up_path(c in case(1, 1)) {
        let v = run_case(&c);
        let costs = MachineCosts::for_machine(c.machine);
        let (ctx, ipi) = if c.costs { (costs.ctx_switch_ns, costs.ipi_ns) } else { (0, 0) };
        prop_assert!(ctx >= ipi);
        let wake = raw(&v, "raw_wakeup");
        prop_assert!(!wake.is_empty());
        for &(at, lat) in &wake {
            prop_assert!(lat >= ctx, "{:?}: {} ns at {} < a context switch ({} ns)", c, lat, at, ctx);
        }
        // and the table keeps exactly what schbench keeps
        let kept = wake.iter().filter(|&&(a, l)| latency_us(a, l).is_some()).count() as u64;
        prop_assert_eq!(v["wakeup_latency_us"]["samples"].as_u64().unwrap(), kept);
    }

    /// No sample is lost: one wakeup per completed wait, one request
    /// latency and one count per completed request, at most one request
    /// under way per worker when the run stops, the tables hold exactly
    /// the samples schbench keeps (a non-zero microsecond difference), and
    /// the average rate counts every request.
    #[test]
    fn no_sample_is_lost(c in case(2, 10)) {
        let v = run_case(&c);
        let wake = raw(&v, "raw_wakeup");
        let kept = |xs: &[(u64, u64)]| {
            xs.iter().filter(|&&(a, l)| latency_us(a, l).is_some()).count() as u64
        };
        prop_assert!(!wake.is_empty());
        prop_assert!(wake.iter().all(|&(at, lat)| lat <= at && at <= 1_000_000_000));
        prop_assert_eq!(v["wakeup_latency_us"]["samples"].as_u64().unwrap(), kept(&wake));
        if !c.old {
            let req = raw(&v, "raw_request");
            let loops = raw(&v, "raw_loops");
            prop_assert_eq!(req.len(), loops.len());
            let workers = (c.m * c.t) as usize;
            prop_assert!(
                wake.len() >= req.len() && wake.len() <= req.len() + workers,
                "{} wakeups, {} requests", wake.len(), req.len()
            );
            // every request sleeps, so none is shorter than its sleep
            let sleep = c.sleep as u64 * 1000;
            prop_assert!(req.iter().all(|&(_, lat)| lat >= sleep));
            prop_assert_eq!(v["request_latency_us"]["samples"].as_u64().unwrap(), kept(&req));
            prop_assert_eq!(v["rps"]["samples"].as_u64().unwrap(), 1);
            prop_assert_eq!(v["rps"]["max"].as_u64().unwrap(), loops.len() as u64);
            prop_assert_eq!(v["average_rps"].as_f64().unwrap(), loops.len() as f64);
        }
    }
}

/// `-R N -t T` on kunpeng920-node, resolved as `sim schbench` does.
fn rps(n: u32, t: u32, r: u32) -> SimResult {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let mut s = new(1, t, r);
    s.bench.rps = n;
    simulate_schbench(&topo, &s, &SimOptions::default()).unwrap()
}

/// RPS mode on a machine with room to spare (each worker gets 84 of the
/// 2000 requests a cycle, under the 128 limit): the RPS table's median is
/// the requested rate, and a rerun is identical.
#[test]
fn rps_mode_serves_the_requested_rate() {
    let a = rps(2000, 24, 3);
    assert_eq!(a.text, rps(2000, 24, 3).text, "not deterministic");
    let median = a.workload["rps"]["p50"].as_f64().unwrap();
    assert!((median - 2000.0).abs() <= 200.0, "{}", a.text);
    assert!(
        a.workload["request_latency_us"]["samples"]
            .as_u64()
            .unwrap()
            >= 5900
    );
}

/// Queueing is not part of the request latency: with 8 workers, 250
/// requests a cycle each queue up to the 128 limit and wait hundreds of
/// ms, yet every request latency stays near one request's own time
/// (usleep + matrix work, about 2.2 ms on this machine).
#[test]
fn rps_request_latency_excludes_queueing() {
    let r = rps(2000, 8, 3);
    let req = &r.workload["request_latency_us"];
    assert!(req["max"].as_u64().unwrap() < 3_000, "{}", r.text);
    // the queues were deep: fewer requests were served than asked for
    assert!(
        r.workload["average_rps"].as_f64().unwrap() < 1800.0,
        "{}",
        r.text
    );
}

/// No request is lost: every request pushed is completed, still queued,
/// or (at most one per worker) being served when the run stops. Checked
/// with deep queues (8 workers) and with idle ones (24).
#[test]
fn rps_mode_loses_no_request() {
    use sim::engine::EngineConfig;
    use sim::placement::scx::ScxDefault;
    use sim::workload::schbench::METRIC_PUSHED;
    use topology::{DomainOptions, SchedDomains};
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let costs = MachineCosts::for_machine(topo.name());
    for t in [8u32, 24] {
        let mut s = new(1, t, 3);
        s.bench.rps = 2000;
        s.nprocs = topo.nr_cpus();
        s.madd_ps = costs.matmul_madd_ps;
        s.validate().unwrap();
        let cfg = EngineConfig::checked(topo.all_cpus().clone());
        let mut e: Engine = Engine::new(&topo, &sd, costs.clone(), cfg, Box::new(ScxDefault));
        s.build(&mut e, 0);
        e.keep_samples();
        // 0.1 s into the third cycle: the deep queues are still draining
        e.set_stop_at(2_100_000_000);
        e.run().unwrap();
        let pushed: u64 = e.all_bins()[METRIC_PUSHED as usize]
            .iter()
            .map(|b| b.count)
            .sum();
        let done = e.all_samples()[METRIC_LOOPS as usize].len() as u64;
        // with one message thread, the request queues are wait lists 0..T
        let pending: u64 = (0..t)
            .map(|q| e.req_pending(sim::task::ListId(q)) as u64)
            .sum();
        assert!(pushed > 0 && done > 0);
        let in_flight = pushed - done - pending;
        assert!(
            in_flight <= t as u64,
            "t={t}: pushed {pushed}, done {done}, pending {pending}"
        );
        if t == 8 {
            assert!(pending > 0, "queues never filled");
        }
    }
}
