//! The events behave as rt-app documents them, checked on small fixed
//! scenarios through whole simulated runs.

use super::*;
use crate::run::{simulate_rtapp, SimOptions, SimResult};
use benchspec::rtapp::log::parse;

fn run(machine: &str, json: &str) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let w = RtappSim::new(benchspec::rtapp::parse(json).unwrap()).unwrap();
    let opt = SimOptions {
        check: true,
        ..Default::default()
    };
    simulate_rtapp(&topo, &w, &opt).unwrap()
}

/// The rows of thread `label`'s log.
fn rows(r: &SimResult, label: &str) -> Vec<Row> {
    let (_, text) = r
        .files
        .iter()
        .find(|(n, _)| n == &format!("rt-app-{label}.log"))
        .unwrap_or_else(|| panic!("no log for {label}"));
    parse(text).unwrap()
}

fn share(r: &SimResult, i: usize) -> f64 {
    r.workload["rtapp"]["threads"][i]["cpu_share_pct"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_periodic_timer_keeps_its_period_under_load() {
    // one CPU: a 2 ms / 10 ms periodic thread beside a thread that never
    // sleeps; the timer's deadlines stay 10 ms apart, so phases start on
    // the 10 ms grid (plus wake-up latency) and the thread gets its 20 %
    let r = run(
        "host",
        r#"{"global": {"duration": 1, "calibration": 10},
            "tasks": {"periodic": {"cpus": [0], "run": 2000, "timer": {"ref": "unique", "period": 10000}},
                      "hog": {"cpus": [0], "run": 100000}}}"#,
    );
    let p = rows(&r, "periodic-0");
    assert!(p.len() >= 95, "{} periods in 1 s", p.len());
    for w in p.windows(2).skip(1) {
        let drift = w[1].start as i64 - (w[0].start as i64 + 10_000);
        assert!(
            drift.abs() < 5_000,
            "start {} then {}",
            w[0].start,
            w[1].start
        );
        assert_eq!(w[1].c_period, 10_000);
        assert_eq!(w[1].c_duration, 2000);
        assert_eq!(w[1].perf, 200_000, "2000 us at 10 ns per loop");
    }
    let s = share(&r, 0);
    assert!((19.0..=23.0).contains(&s), "periodic share {s}");
    // per-thread placement: every wake-up of the periodic thread decided
    // (one CPU allowed: no migration); the hog never sleeps
    let t = &r.workload["rtapp"]["threads"];
    let decided: u64 = t[0]["stages"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(
        decided >= p.len() as u64,
        "{decided} decisions for {} phases",
        p.len()
    );
    assert_eq!(t[0]["migrations"], 0);
    // the hog gets the rest of CPU 0
    assert!(share(&r, 1) > 70.0);
}

#[test]
fn a_lone_periodic_thread_wakes_on_time() {
    let r = run(
        "host",
        r#"{"global": {"duration": 1},
            "tasks": {"t": {"run": 1000, "timer": {"ref": "unique", "period": 5000}}}}"#,
    );
    let p = rows(&r, "t-0");
    // the first phase starts at 0; every later one 5 ms after the last
    assert!((195..=200).contains(&p.len()), "{}", p.len());
    for w in p.windows(2) {
        assert_eq!(w[1].start / 5000, w[0].start / 5000 + 1);
        assert!(
            w[1].slack > 3000 && w[1].slack < 4100,
            "slack {}",
            w[1].slack
        );
        // the timer slack (50 us) and the wake-up path, no more
        assert!(w[1].wu_lat < 200, "wu_lat {}", w[1].wu_lat);
    }
    assert!(
        p[1..].iter().all(|r| r.perf == 0),
        "no calibration, no perf"
    );
}

#[test]
fn a_barrier_releases_all() {
    // three threads run different lengths then meet at a barrier: every
    // phase of every thread ends after the slowest one's run
    let r = run(
        "host",
        r#"{"tasks": {
            "a": {"loop": 5, "run": 1000, "barrier": "b"},
            "b": {"loop": 5, "run": 3000, "barrier": "b"},
            "c": {"loop": 5, "run": 7000, "barrier": "b"}}}"#,
    );
    let (a, b, c) = (rows(&r, "a-0"), rows(&r, "b-1"), rows(&r, "c-2"));
    assert_eq!((a.len(), b.len(), c.len()), (5, 5, 5));
    for i in 0..5 {
        // the barrier holds the fast ones until the slow one arrives: no
        // phase ends before c's run of that phase is over (c's end is
        // logged when c runs again after releasing the others, which may
        // be after one of them: under DELAY_DEQUEUE a woken in place
        // pre-empts c)
        let c_arrives = c[i].start + c[i].run;
        // (for c itself both hold by construction)
        for (name, x) in [("a", &a[i]), ("b", &b[i])] {
            assert!(
                x.end >= c_arrives,
                "{name} left before c arrived: {x:?} {:?}",
                c[i]
            );
            // and every phase takes at least the slow one's run
            assert!(x.period >= 7000, "{name}: {x:?}");
        }
    }
}

#[test]
fn lock_holders_exclude_each_other() {
    // two threads on two CPUs each hold one mutex for 2 ms: their critical
    // sections never overlap, so each phase takes ~4 ms, not 2
    let r = run(
        "host",
        r#"{"tasks": {
            "x": {"loop": 20, "lock": "m", "run": 2000, "unlock": "m"},
            "y": {"loop": 20, "lock": "m", "run": 2000, "unlock": "m"}}}"#,
    );
    let (x, y) = (rows(&r, "x-0"), rows(&r, "y-1"));
    assert_eq!((x.len(), y.len()), (20, 20));
    // critical sections: the run of each phase, [end - run, end]
    let mut cs: Vec<(u64, u64)> = x.iter().chain(&y).map(|r| (r.end - r.run, r.end)).collect();
    cs.sort();
    for w in cs.windows(2) {
        assert!(w[1].0 + 1 >= w[0].1, "overlap: {:?} and {:?}", w[0], w[1]);
    }
    let total = cs.last().unwrap().1 - cs[0].0;
    assert!(
        total >= 80_000,
        "40 sections of 2 ms one after another: {total}"
    );
}

#[test]
fn signal_wait_and_suspend_resume_hand_over() {
    // a producer signals a consumer each period; the consumer runs after
    // each signal, so it logs as many phases as the producer
    let r = run(
        "host",
        r#"{"global": {"duration": 1},
            "tasks": {
            "producer": {"lock": "m", "run": 500, "signal": "c", "unlock": "m",
                         "timer": {"ref": "unique", "period": 10000}},
            "consumer": {"lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 2000},
            "waker": {"run": 100, "resume": "sleeper", "timer": {"ref": "unique", "period": 20000}},
            "sleeper": {"suspend": "", "run": 300}}}"#,
    );
    let (p, c) = (rows(&r, "producer-0"), rows(&r, "consumer-1"));
    assert!(p.len() >= 95, "{}", p.len());
    assert!(c.len().abs_diff(p.len()) <= 1, "{} vs {}", c.len(), p.len());
    let (w, s) = (rows(&r, "waker-2"), rows(&r, "sleeper-3"));
    assert!(s.len().abs_diff(w.len()) <= 1, "{} vs {}", s.len(), w.len());
    assert!(w.len() >= 45, "{}", w.len());
    // a broadcast wakes every waiter
    let r = run(
        "host",
        r#"{"tasks": {
            "w": {"instance": 3, "loop": 1, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m"},
            "b": {"loop": 1, "sleep": 1000, "lock": "m", "broad": "c", "unlock": "m"}}}"#,
    );
    for l in ["w-0", "w-1", "w-2", "b-3"] {
        assert_eq!(rows(&r, l).len(), 1, "{l}");
    }
}

#[test]
fn delay_and_absolute_timers() {
    let r = run(
        "host",
        r#"{"global": {"duration": 1},
            "tasks": {"t": {"delay": 100000, "run": 1000,
                            "timer": {"ref": "unique", "period": 10000, "mode": "absolute"}}}}"#,
    );
    let p = rows(&r, "t-0");
    assert!(p[0].start >= 100_000, "delayed: {}", p[0].start);
    // periods start at 100, 110 ... 990 ms; the last one ends past the
    // duration and is not logged, as rt-app stops the thread first
    assert_eq!(p.len(), 89);
    // the first deadline is delay + period
    assert!(
        p[1].start >= 110_000 && p[1].start < 110_200,
        "{}",
        p[1].start
    );
}

#[test]
fn yielding_threads_hand_the_cpu_over_when_the_other_is_eligible() {
    // one CPU, two threads that never sleep. Without yield they take turns
    // a slice at a time. When both yield after every 100 us of work,
    // yield_task_fair pushes the yielder's deadline a slice on and the
    // other thread, which ran less (eligible), is picked at once: they
    // take turns every 100 us, and still share the CPU evenly. (A yield
    // does not hand the CPU to a thread that is not eligible, as in the
    // kernel: one yielder beside a hog barely changes anything.)
    let json = |yielding: &str| {
        format!(
            r#"{{"global": {{"duration": 1, "calibration": 10}},
                "tasks": {{"a": {{"cpus": [0], "run": 100{yielding}}},
                          "b": {{"cpus": [0], "run": 100{yielding}}}}}}}"#
        )
    };
    // CPU time over the logged span (the table's cpu% column)
    let cpu = |r: &SimResult, i: usize| {
        r.workload["rtapp"]["threads"][i]["cpu_time_pct"]
            .as_f64()
            .unwrap()
    };
    let turns = run("host", &json(""));
    let yields = run("host", &json(r#", "yield": """#));
    for r in [&turns, &yields] {
        let (a, b) = (cpu(r, 0), cpu(r, 1));
        assert!(
            (45.0..=55.0).contains(&a) && (45.0..=55.0).contains(&b),
            "{a} {b}"
        );
    }
    let (slices, handovers) = (
        turns.counters.context_switches,
        yields.counters.context_switches,
    );
    assert!(slices < 1_000, "{slices} switches in 1 s without yield");
    // about one switch per 100 us of work (plus the yield's syscall)
    assert!(handovers > 8_000, "{handovers} switches in 1 s with yield");
}

#[test]
fn runtime_counts_wall_time_and_run_counts_work() {
    // a periodic thread shares CPU 0 with a thread that never sleeps: with
    // `run` it does its 10 ms of work per 40 ms period, however long that
    // takes; with `runtime` it stops once 10 ms of wall time passed, time
    // spent preempted included, so it gets less than 10 ms of CPU
    let json = |ev: &str| {
        format!(
            r#"{{"global": {{"duration": 1}},
                "tasks": {{"p": {{"cpus": [0], "{ev}": 10000, "timer": {{"ref": "unique", "period": 40000}}}},
                           "hog": {{"cpus": [0], "run": 1000000}}}}}}"#
        )
    };
    let cpu = |r: &SimResult| {
        r.workload["rtapp"]["threads"][0]["cpu_time_pct"]
            .as_f64()
            .unwrap()
    };
    let rt = run("host", &json("runtime"));
    assert!(cpu(&rt) < 20.0, "runtime: cpu {}", cpu(&rt));
    // rt-app's run column: at least the 10 ms of wall time, more when the
    // thread waits preempted in its last burst
    let s = share(&rt, 0);
    assert!((24.9..=40.0).contains(&s), "runtime: run share {s}");
    let r = run("host", &json("run"));
    assert!((24.0..=26.5).contains(&cpu(&r)), "run: cpu {}", cpu(&r));
    assert!(share(&r, 0) > 30.0, "run: the work took longer than 10 ms");
}

#[test]
fn each_thread_keeps_its_own_cpus() {
    // two threads that never sleep confined to CPU 0, one to CPU 1: the
    // pair shares CPU 0, the third has CPU 1 to itself, nobody migrates
    let r = run(
        "host",
        r#"{"global": {"duration": 1, "calibration": 10},
            "tasks": {"a": {"cpus": [0], "run": 100}, "b": {"cpus": [1], "run": 100},
                      "c": {"cpus": [0], "run": 100}}}"#,
    );
    let t = &r.workload["rtapp"]["threads"];
    let cpu = |i: usize| t[i]["cpu_time_pct"].as_f64().unwrap();
    assert!((45.0..=55.0).contains(&cpu(0)), "a {}", cpu(0));
    assert!(cpu(1) > 99.0, "b {}", cpu(1));
    assert!((45.0..=55.0).contains(&cpu(2)), "c {}", cpu(2));
    for i in 0..3 {
        assert_eq!(t[i]["migrations"], 0, "thread {i}");
    }
    let busy: Vec<u64> = r.cpus.iter().map(|c| c.busy_ns).collect();
    assert!(busy.iter().all(|&b| b > 990_000_000), "{busy:?}");
}

fn run_with(machine: &str, json: &str, opt: SimOptions) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let w = RtappSim::new(benchspec::rtapp::parse(json).unwrap()).unwrap();
    simulate_rtapp(&topo, &w, &SimOptions { check: true, ..opt }).unwrap()
}

#[test]
fn mem_writes_its_bytes_and_remote_memory_takes_longer() {
    // one thread on CPU 0 (node 0 of a two-socket Xeon) memsets its 4 MiB
    // buffer once per phase; the buffer bound to node 1 is 20/10 as far
    // (the machine's SLIT), so the memset takes twice as long, and the
    // rest of the phase (a 100 us run) does not change
    let json = r#"{"global": {"calibration": 10},
        "tasks": {"writer": {"cpus": [0], "loop": 20, "mem": 4194304, "run": 100}}}"#;
    let bound = |node: u16| {
        run_with(
            "xeon-12c24t",
            json,
            SimOptions {
                mem_policy: crate::numa::MemPolicy::Bind(vec![node]),
                ..Default::default()
            },
        )
    };
    let (local, remote) = (bound(0), bound(1));
    let (l, r) = (rows(&local, "writer-0"), rows(&remote, "writer-0"));
    assert_eq!((l.len(), r.len()), (20, 20));
    // mem is not a timed event: the run column is the run event's
    assert!(l.iter().chain(&r).all(|row| row.run == 100));
    let memset = |rows: &[Row]| rows[1..].iter().map(|r| r.period - 100).sum::<u64>() as f64;
    let ratio = memset(&r) / memset(&l);
    assert!(
        (1.9..=2.1).contains(&ratio),
        "remote / local memset {ratio}"
    );
    // 4 MiB of traffic at the profile's streaming cost, more than 100 us
    assert!(l[1].period > 300, "{}", l[1].period);
    // the buffer's 1024 pages, placed where the policy says
    let (nl, nr) = (local.numa.unwrap(), remote.numa.unwrap());
    assert_eq!((nl.numa_local, nl.numa_other), (1024, 0));
    assert_eq!((nr.numa_local, nr.numa_other), (0, 1024));
}

#[test]
fn mem_beyond_the_buffer_rewrites_it() {
    // 10 MiB into a 1 MiB buffer: the buffer's 256 pages (a region's
    // partial last 2 MiB is counted in base pages), ten times the traffic
    // of 1 MiB; a thread without mem has no buffer
    let json = |bytes: u64| {
        format!(
            r#"{{"global": {{"mem_buffer_size": 1048576}},
                "tasks": {{"w": {{"cpus": [0], "loop": 5, "mem": {bytes}}},
                          "idle": {{"cpus": [1], "loop": 1, "sleep": 10}}}}}}"#
        )
    };
    let one = run_with("xeon-12c24t", &json(1 << 20), SimOptions::default());
    let ten = run_with("xeon-12c24t", &json(10 << 20), SimOptions::default());
    let pages = |r: &SimResult| {
        let n = r.numa.unwrap();
        n.numa_local + n.numa_other
    };
    assert_eq!((pages(&one), pages(&ten)), (256, 256), "the buffer's pages");
    let (a, b) = (rows(&one, "w-0"), rows(&ten, "w-0"));
    let ratio = b[1].period as f64 / a[1].period as f64;
    assert!((9.0..=11.0).contains(&ratio), "{ratio}");
    // no mem, no memory: the same file without the event has no numa record
    let none = run_with(
        "xeon-12c24t",
        r#"{"tasks": {"w": {"loop": 1, "run": 10}}}"#,
        SimOptions::default(),
    );
    assert!(none.numa.is_none());
}

/// Each task's switch-ins: (time, CPU).
#[derive(Default)]
struct SwitchIns(std::sync::Arc<std::sync::Mutex<Vec<(Nanos, u32, u32)>>>);

impl crate::trace::TraceSink for SwitchIns {
    fn begin(&mut self, _: &crate::trace::TraceSetup) {}
    fn event(&mut self, now: Nanos, ev: &crate::trace::TraceEvent) {
        if let crate::trace::TraceEvent::Switch {
            cpu,
            next: crate::trace::Runner::Task(t),
            ..
        } = *ev
        {
            self.0.lock().unwrap().push((now, t.0, cpu));
        }
    }
    fn end(&mut self, _: Nanos) {}
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

#[test]
fn phases_confined_to_different_cpus_run_there() {
    // thread `mover` spends phase `a` on CPU 0, which a hog occupies all
    // the time, and phase `b` on CPU 3, twice over; a third thread may run
    // anywhere, so the run has every CPU. Each phase's rows run on its CPU
    // only: shared with the hog on CPU 0 (about twice the work's time),
    // alone on CPU 3
    let json = r#"{"global": {"duration": 1, "calibration": 10},
        "tasks": {
          "mover": {"loop": 2, "phases": {
              "a": {"cpus": [0], "loop": 5, "run": 10000},
              "b": {"cpus": [3], "loop": 5, "run": 10000}}},
          "hog": {"cpus": [0], "run": 100000},
          "free": {"run": 1000, "timer": {"ref": "unique", "period": 4000}}}}"#;
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = SwitchIns(log.clone());
    let r = run_with(
        "kvm-8vcpu",
        json,
        SimOptions {
            trace: Some(crate::trace::TraceSlot::new(Box::new(sink))),
            ..Default::default()
        },
    );
    let p = rows(&r, "mover-0");
    assert_eq!(p.len(), 20);
    let ins = log.lock().unwrap().clone();
    let mover: Vec<(Nanos, u32)> = ins
        .iter()
        .filter(|e| e.1 == 0)
        .map(|e| (e.0, e.2))
        .collect();
    for (i, row) in p.iter().enumerate() {
        let cpu = if (i / 5) % 2 == 0 { 0 } else { 3 };
        let (from, to) = (row.start * 1000, (row.end + 1) * 1000);
        // where it was running when the row began, and every switch-in
        // during the row
        let before = mover.iter().rev().find(|e| e.0 <= from).unwrap();
        assert_eq!(before.1, cpu, "row {i} starts on CPU {}", before.1);
        for e in mover.iter().filter(|e| e.0 > from && e.0 < to) {
            assert_eq!(e.1, cpu, "row {i}: switched in on CPU {} at {}", e.1, e.0);
        }
        if cpu == 3 {
            assert!(row.period < 10_300, "alone on CPU 3: {}", row.period);
        } else {
            assert!(
                row.period > 15_000,
                "beside the hog on CPU 0: {}",
                row.period
            );
        }
    }
    // three moves (a -> b, b -> a, a -> b), each by the stopper
    assert_eq!(r.workload["rtapp"]["threads"][0]["migrations"], 3);
    // the hog never leaves CPU 0, and only the free thread uses the rest
    assert!(ins.iter().filter(|e| e.1 == 1).all(|e| e.2 == 0));
    let cpu3 = r.cpus[3].busy_ns;
    assert!(cpu3 >= 100_000_000, "CPU 3 ran phase b: {cpu3}");
}

#[test]
fn a_move_goes_to_the_next_cpu_of_the_set_in_turn() {
    // cpumask_any_and_distribute: the thread leaves CPU 0 for the set
    // {2, 3} twice; CPU 0's last pick advances, so the first pass of phase
    // b runs on CPU 2 and the second on CPU 3
    let json = r#"{"global": {"calibration": 10},
        "tasks": {"mover": {"loop": 2, "phases": {
              "a": {"cpus": [0], "loop": 2, "run": 5000},
              "b": {"cpus": [2, 3], "loop": 2, "run": 5000}}}}}"#;
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = run_with(
        "kvm-8vcpu",
        json,
        SimOptions {
            trace: Some(crate::trace::TraceSlot::new(Box::new(SwitchIns(
                log.clone(),
            )))),
            ..Default::default()
        },
    );
    let p = rows(&r, "mover-0");
    assert_eq!(p.len(), 8);
    let ins = log.lock().unwrap().clone();
    let cpu_at = |us: u64| {
        ins.iter()
            .rev()
            .find(|e| e.1 == 0 && e.0 <= us * 1000 + 999)
            .unwrap()
            .2
    };
    let cpus: Vec<u32> = p.iter().map(|row| cpu_at(row.end)).collect();
    assert_eq!(cpus, [0, 0, 2, 2, 0, 0, 3, 3]);
}

fn try_run(machine: &str, json: &str) -> Result<SimResult, String> {
    let topo = topology::preset(machine).unwrap();
    let w = RtappSim::new(benchspec::rtapp::parse(json).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let opt = SimOptions {
        check: true,
        ..Default::default()
    };
    simulate_rtapp(&topo, &w, &opt).map_err(|e| e.to_string())
}

#[test]
fn a_template_forked_twice_makes_two_threads_that_run_its_events() {
    // main forks the template once per pass, two passes; the template
    // (instance 0: no thread at start) runs 3 phases of 1 ms each
    let r = run(
        "host",
        r#"{"global": {"calibration": 10},
            "tasks": {"main": {"loop": 2, "fork": "worker", "run": 100, "sleep": 5000},
                      "worker": {"instance": 0, "loop": 3, "run": 1000}}}"#,
    );
    let threads = r.workload["rtapp"]["threads"].as_array().unwrap();
    let names: Vec<&str> = threads
        .iter()
        .map(|t| t["thread"].as_str().unwrap())
        .collect();
    // rt-app's names: NAME-IND-NNNN, indices after the threads made at start
    assert_eq!(names, ["main-0", "worker-1-0000", "worker-2-0001"]);
    let main = rows(&r, "main-0");
    assert_eq!(main.len(), 2);
    for (k, label) in ["worker-1-0000", "worker-2-0001"].iter().enumerate() {
        let w = rows(&r, label);
        assert_eq!(w.len(), 3, "{label}: its loop of 3");
        assert!(w
            .iter()
            .all(|row| row.idx == k as u32 + 1 && row.run >= 1000));
        // forked while main runs its pass k: not before that pass began
        assert!(w[0].start >= main[k].start, "{label} starts in pass {k}");
        assert_eq!(threads[k + 1]["rows"], 3);
    }
    // each forked thread consumed its own CPU time
    for t in &threads[1..] {
        assert!(t["cpu_time_pct"].as_f64().unwrap() > 50.0, "{t}");
    }
}

#[test]
fn an_unused_pool_leaves_no_thread() {
    // the fork sits after a 10 s sleep in a 1 s run: it never happens, and
    // the run reports only the thread made at start
    let r = run(
        "host",
        r#"{"global": {"duration": 1, "calibration": 10},
            "tasks": {"main": {"loop": 1, "sleep": 10000000, "fork": "w"},
                      "w": {"instance": 0, "loop": 1, "run": 10}}}"#,
    );
    assert_eq!(r.workload["rtapp"]["threads"].as_array().unwrap().len(), 1);
    assert!(!r.files.iter().any(|(n, _)| n.contains("w-")));
}

#[test]
fn an_unbounded_fork_stops_at_rt_apps_limit() {
    // forever forks within the duration: 20 of them in 1 s work ...
    let r = run(
        "host",
        r#"{"global": {"duration": 1, "calibration": 10},
            "tasks": {"main": {"fork": "w", "sleep": 50000},
                      "w": {"instance": 0, "loop": 1, "run": 10}}}"#,
    );
    let n = r.workload["rtapp"]["threads"].as_array().unwrap().len();
    assert_eq!(n, 1 + 20, "a fork every 50 ms for 1 s");
    // ... and the 1025th fork of one task ends the run, as it ends rt-app
    let e = try_run(
        "host",
        r#"{"global": {"duration": 10, "calibration": 10},
            "tasks": {"main": {"fork": "w", "sleep": 1000},
                      "w": {"instance": 0, "loop": 1, "run": 10}}}"#,
    )
    .unwrap_err();
    assert!(
        e.contains("`fork` of `w`") && e.contains("limit of 1024") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn a_forked_thread_inherits_its_forkers_affinity() {
    // main runs on CPU 3 only; the template has no `cpus`, so every
    // forked thread stays on CPU 3 (Linux copies the creator's mask)
    let r = run(
        "kvm-8vcpu",
        r#"{"global": {"calibration": 10},
            "tasks": {"main": {"cpus": [3], "loop": 4, "fork": "w", "sleep": 1000},
                      "w": {"instance": 0, "loop": 1, "run": 2000}}}"#,
    );
    let threads = r.workload["rtapp"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 5);
    for t in &threads[1..] {
        assert_eq!(t["migrations"], 0, "{t}");
    }
    // mixing phases with and without `cpus` in a forked task is refused
    let e = try_run(
        "kvm-8vcpu",
        r#"{"tasks": {"main": {"loop": 1, "fork": "w", "run": 1},
                      "w": {"instance": 0, "loop": 1,
                            "phases": {"a": {"cpus": [1], "run": 1}, "b": {"run": 1}}}}}"#,
    )
    .unwrap_err();
    assert!(e.contains("tasks.w") && e.contains("inherited"), "{e}");
}
