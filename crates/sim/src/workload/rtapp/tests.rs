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
        // the barrier holds the fast ones until the slow one arrives (c
        // ends its phase as it passes the barrier; the others wake after)
        assert!(
            a[i].end >= c[i].end,
            "a waited for c: {:?} {:?}",
            a[i],
            c[i]
        );
        assert!(
            b[i].end >= c[i].end,
            "b waited for c: {:?} {:?}",
            b[i],
            c[i]
        );
        // and a barrier is no barrier for the slow one
        assert!(c[i].period < 7100, "{}", c[i].period);
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
