//! The tbench model: dbench's report lines, byte accounting over loopback
//! TCP, how throughput follows the number of clients, and bad input.
//! Simulated runs are kept to 1-3 s (and the property cases few) so the
//! suite stays fast.

use proptest::prelude::*;
use sim::run::{simulate, simulate_tbench, SimError, SimOptions, SimResult};
use sim::workload::tbench::{Tbench, TbenchModel};
use sim::workload::{Record, Report, Stop, Workload};
use sim::Nanos;
use topology::CpuMask;

fn tb(clients: u32, time: u32, warmup: Option<u32>) -> Tbench {
    Tbench {
        clients,
        time,
        warmup,
        loadfile: None,
    }
}

fn run(machine: &str, t: &Tbench, cpus: Option<&str>, seed: u64) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let opt = SimOptions {
        cpus: cpus.map(|c| CpuMask::parse_list(c).unwrap()),
        seed,
        ..Default::default()
    };
    simulate_tbench(&topo, t, &opt).unwrap()
}

fn mb_s(r: &SimResult) -> f64 {
    r.workload["throughput_mb_s"].as_f64().unwrap()
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!("sim-tbench-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        TempFile(p)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn prints_dbench_lines_for_warmup_and_execute() {
    let r = run("kunpeng920-node", &tb(2, 3, Some(1)), None, 1);
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(
        lines[0],
        "Running for 3 seconds with load 'builtin' and minimum warmup 1 secs"
    );
    assert_eq!(lines[1], "2 of 2 processes prepared for launch   0 sec");
    assert_eq!(lines[2], "releasing clients");
    // one warm-up tick, then execute ticks 1 and 2; tick 3 ends the run
    let phase: Vec<&str> = lines[3..6]
        .iter()
        .map(|l| l.split_whitespace().nth(4).unwrap())
        .collect();
    assert_eq!(phase, ["warmup", "execute", "execute"], "{}", r.text);
    assert!(
        lines[3].starts_with("   2  ") && lines[3].contains(" MB/sec  warmup   1 sec  latency ")
    );
    assert!(lines[5].contains(" MB/sec  execute   2 sec  latency "));
    assert_eq!(lines[6], "   2  cleanup   3 sec");
    assert_eq!(lines[7], "   0  cleanup   3 sec");
    assert_eq!(lines[8], "");
    assert_eq!(lines[9], " Operation      Count    AvgLat    MaxLat");
    let result = benchspec::tbench::Throughput {
        mb_s: mb_s(&r),
        clients: 2,
        procs: 2,
        max_latency_ms: r.workload["max_latency_ms"].as_f64().unwrap(),
    };
    assert_eq!(*lines.last().unwrap(), result.line());
    // the Throughput line is the last execute tick's MB/s, as printed there
    let tick_mb = lines[5].split_whitespace().nth(2).unwrap();
    let v: f64 = tick_mb.parse().unwrap();
    assert!((v - mb_s(&r)).abs() < 0.006, "{tick_mb} vs {}", mb_s(&r));
    assert_eq!(r.workload["execute_s"].as_f64(), Some(2.0));
    // the run stops at warm-up + time; the clients were released at once
    assert_eq!(r.sim_ns, 4_000_000_000);
    assert!(
        r.time_ns <= 3_000_000_000 && r.time_ns > 2_999_900_000,
        "{}",
        r.time_ns
    );
}

#[test]
fn json_fields_agree_with_the_table() {
    let r = run("kunpeng920-node", &tb(3, 2, None), None, 1);
    let w = &r.workload;
    for f in [
        "throughput_mb_s",
        "clients",
        "procs",
        "max_latency_ms",
        "time_limit_s",
        "warmup_s",
        "execute_s",
        "bytes",
        "loadfile",
        "loadfile_ops",
        "ops",
    ] {
        assert!(w.get(f).is_some(), "missing {f}");
    }
    assert_eq!(w["warmup_s"], 0, "dbench's default warm-up: time / 5");
    let ops = w["ops"].as_object().unwrap();
    assert!(ops.contains_key("ReadX") && ops.contains_key("WriteX"));
    for (name, s) in ops {
        let (avg, max) = (s["avg_ms"].as_f64().unwrap(), s["max_ms"].as_f64().unwrap());
        assert!(s["count"].as_u64().unwrap() > 0 && avg <= max, "{name}");
        assert!(r.text.contains(&format!("\n {name:<10} ")), "{name}");
    }
    // MB/s is the payload of the execute ticks it covers over their span
    let bytes = w["bytes"].as_u64().unwrap() as f64;
    let secs = w["execute_s"].as_f64().unwrap();
    assert!((mb_s(&r) - bytes / secs / 1e6).abs() < 1e-6);
    assert!(mb_s(&r) > 0.0 && w["max_latency_ms"].as_f64().unwrap() > 0.0);
    // the payload counted is part of what went over the sockets
    assert!(bytes < r.counters.bytes_read as f64);
}

#[test]
fn same_seed_same_run() {
    let a = run("kvm-8vcpu", &tb(3, 1, None), None, 7);
    let b = run("kvm-8vcpu", &tb(3, 1, None), None, 7);
    assert_eq!(a.text, b.text);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

/// The model, stopped at an arbitrary instant instead of its own end.
struct StopAt(TbenchModel, Nanos);

impl Workload for StopAt {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn build<R: sim::rq::RunQueue>(&self, e: &mut sim::engine::Engine<'_, R>, first_cpu: usize) {
        self.0.build(e, first_cpu)
    }
    fn stop(&self) -> Stop {
        Stop::At(self.1)
    }
    fn report(&self, rec: &Record) -> Report {
        self.0.report(rec)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Wherever the run is cut, every byte a client or server sent has
    /// been received or is still in flight, and what is in flight is at
    /// most one message per connection (each exchange is synchronous).
    /// With `check`, the engine also verifies at the end that the bytes in
    /// flight are exactly those queued in the sockets.
    #[test]
    fn bytes_sent_are_received_or_in_flight(
        clients in 1u32..12,
        stop_us in 1u64..3_000,
        seed in any::<u64>(),
    ) {
        let m = TbenchModel::new(tb(clients, 1, None)).unwrap();
        let biggest = m.ops().iter().map(|o| o.send.max(o.recv) + 2 * o.grow_per_digit).max().unwrap() as u64;
        let topo = topology::preset("kunpeng920-node").unwrap();
        let opt = SimOptions { seed, check: true, ..Default::default() };
        let r = simulate(&topo, &StopAt(m, stop_us * 1_000), &opt).unwrap();
        let (sent, received) = (r.counters.bytes_written, r.counters.bytes_read);
        prop_assert!(sent >= received);
        let in_flight = sent - received;
        prop_assert!(in_flight <= clients as u64 * biggest, "{in_flight} in flight");
        prop_assert_eq!(r.sim_ns, stop_us * 1_000);
    }

    /// On a machine with at least 8 idle CPUs, more clients move more
    /// data: 1 < k < 4 clients, and 4 do at least three times what 1 does.
    #[test]
    fn throughput_scales_from_one_to_four_clients(
        machine in prop::sample::select(vec!["kunpeng920-node", "kvm-8vcpu"]),
        k in 2u32..4,
        seed in any::<u64>(),
    ) {
        let t = |n| mb_s(&run(machine, &tb(n, 1, None), None, seed));
        let (one, mid, four) = (t(1), t(k), t(4));
        prop_assert!(one > 0.0 && one < mid && mid < four, "{one} {mid} {four}");
        prop_assert!(four > 3.0 * one, "{one} -> {four}");
    }
}

/// With more clients than CPUs, each client gets less: on one 4-CPU
/// cluster of kunpeng920-node, 16 clients each move well under half of
/// what each of 4 does (each client with its server on a CPU), and less
/// than a client alone on the machine.
#[test]
fn throughput_per_client_falls_when_clients_exceed_cpus() {
    let per_client =
        |n: u32| mb_s(&run("kunpeng920-node", &tb(n, 1, None), Some("0-3"), 1)) / n as f64;
    let (one, four, sixteen) = (per_client(1), per_client(4), per_client(16));
    assert!(
        sixteen < 0.5 * four,
        "per client: 4 -> {four}, 16 -> {sixteen}"
    );
    assert!(
        sixteen < 0.8 * one,
        "per client: 1 -> {one}, 16 -> {sixteen}"
    );
}

#[test]
fn a_loadfile_is_replayed_and_counted() {
    // one 4 KiB write and two reads of 1000 bytes per pass
    let f = TempFile::new(
        "ok.txt",
        "# a comment\nNTCreateX \"\\clients\\client1\\f\" 0x1 0x2 1 NT_STATUS_OK\n\
         WriteX 1 0 4096 4096 NT_STATUS_OK\nReadX 1 0 1000 1000 NT_STATUS_OK\n\
         ReadX 1 0 1000 1000 NT_STATUS_OK\nClose 1 NT_STATUS_OK\n",
    );
    let t = Tbench {
        loadfile: Some(f.0.clone()),
        ..tb(2, 1, None)
    };
    let r = run("kunpeng920-node", &t, None, 1);
    assert!(r.text.starts_with(&format!(
        "Running for 1 seconds with load '{}' and minimum warmup 0 secs\n",
        f.0.display()
    )));
    let ops = r.workload["ops"].as_object().unwrap();
    let names: Vec<&str> = ops.keys().map(|k| k.as_str()).collect();
    assert_eq!(names, ["Close", "NTCreateX", "ReadX", "WriteX"]);
    let n = |k: &str| ops[k]["count"].as_u64().unwrap();
    // lines complete in order, so the counts differ by at most one per client
    assert!(n("NTCreateX").abs_diff(n("WriteX")) <= 2, "{ops:?}");
    assert!(n("ReadX").abs_diff(2 * n("WriteX")) <= 4, "{ops:?}");
    let bytes = r.workload["bytes"].as_u64().unwrap();
    assert_eq!(r.workload["loadfile_ops"], 5);
    assert!(bytes.abs_diff(4096 * n("WriteX") + 1000 * n("ReadX")) <= 2 * 6096);
}

#[test]
fn bad_input_names_the_flag_or_the_file_and_line() {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let err = |t: &Tbench, opt: &SimOptions| simulate_tbench(&topo, t, opt).unwrap_err();
    let d = SimOptions::default();
    let e = err(&tb(0, 1, None), &d);
    assert!(
        matches!(&e, SimError::Spec(s) if s.flag == "NCLIENTS"),
        "{e}"
    );
    let e = err(&tb(1, 0, None), &d);
    assert!(e.to_string().starts_with("--time "), "{e}");
    let missing = Tbench {
        loadfile: Some("/nonexistent/client.txt".into()),
        ..tb(1, 1, None)
    };
    let e = err(&missing, &d);
    assert!(
        e.to_string()
            .starts_with("--loadfile /nonexistent/client.txt: "),
        "{e}"
    );
    let f = TempFile::new("bad.txt", "Close 1 NT_STATUS_OK\nReadX 1 0 x\n");
    let bad = Tbench {
        loadfile: Some(f.0.clone()),
        ..tb(1, 1, None)
    };
    assert_eq!(
        err(&bad, &d).to_string(),
        format!(
            "--loadfile {}: line 2: ReadX needs at least 4 arguments",
            f.0.display()
        )
    );
    let off = SimOptions {
        costs: false,
        ..Default::default()
    };
    assert!(err(&tb(1, 1, None), &off)
        .to_string()
        .starts_with("--costs off: "));
}
