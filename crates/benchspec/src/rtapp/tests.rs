//! Grammar tests: every supported key parses as rt-app reads it, and every
//! unsupported one is refused with its path named.

use super::*;

fn one_task(body: &str) -> Result<RtApp, RtappError> {
    parse(&format!(r#"{{"tasks": {{"t": {body}}}}}"#))
}

#[test]
fn every_event_parses_in_file_order() {
    let app = one_task(
        r#"{"lock": "m", "run0": 10, "runtime": 20, "unlock": "m", "sleep": 30,
            "timer": {"ref": "unique", "period": 1000, "mode": "absolute"},
            "lock1": "m", "wait": {"ref": "c", "mutex": "m"}, "signal": "c", "broad": "c",
            "sync": {"ref": "c", "mutex": "m"}, "unlock1": "m", "suspend": "", "resume": "t",
            "barrier": "b", "yield": "", "mem": 4096, "mem1": 0}"#,
    )
    .unwrap();
    let ev = &app.tasks[0].phases[0].events;
    use Event::*;
    assert_eq!(
        ev,
        &[
            Lock("m".into()),
            Run(10),
            Runtime(20),
            Unlock("m".into()),
            Sleep(30),
            Timer {
                name: "unique".into(),
                period_us: 1000,
                absolute: true
            },
            Lock("m".into()),
            Wait {
                cond: "c".into(),
                mutex: "m".into()
            },
            Signal("c".into()),
            Broad("c".into()),
            Sync {
                cond: "c".into(),
                mutex: "m".into()
            },
            Unlock("m".into()),
            Suspend("t".into()),
            Resume("t".into()),
            Barrier("b".into()),
            Yield,
            Mem(4096),
            Mem(0),
        ]
    );
}

#[test]
fn global_task_and_phase_keys() {
    let app = parse(
        r#"{"global": {"duration": 3, "calibration": 17, "default_policy": "SCHED_OTHER",
             "logdir": "/tmp/x", "log_basename": "b", "log_size": "disable", "cumulative_slack": true,
             "pi_enabled": false, "lock_pages": false, "ftrace": false, "gnuplot": false,
             "io_device": "/dev/null", "mem_buffer_size": 4096},
            "resources": {},
            "tasks": {
              "a": {"instance": 3, "priority": 5, "delay": 100, "cpus": [1, 0],
                    "loop": 4, "phases": {"p1": {"loop": 2, "run": 1}, "p2": {"sleep": 1}}},
              "b": {"nice": -3, "loop": 7, "cpus": [0, 1], "run": 5}}}"#,
    )
    .unwrap();
    let g = &app.global;
    assert_eq!(g.duration_s, Some(3));
    assert_eq!(g.calibration, Calibration::NsPerLoop(17));
    assert_eq!(g.logdir.as_deref(), Some("/tmp/x"));
    assert_eq!(g.log_size, LogSize::Disable);
    assert!(g.cumulative_slack);
    assert_eq!(g.mem_buffer_size, 4096);
    assert_eq!(
        one_task(r#"{"run": 1}"#).unwrap().global.mem_buffer_size,
        4 << 20,
        "rt-app's default buffer"
    );
    let a = &app.tasks[0];
    assert_eq!(
        (a.instance, a.nice, a.delay_us, a.loops),
        (3, 5, 100, Some(4))
    );
    assert_eq!(a.cpus, Some(vec![0, 1]));
    assert_eq!(a.phases.len(), 2);
    assert_eq!(a.phases[0].loops, Some(2));
    // a task without phases: its loop runs the phase, once through
    let b = &app.tasks[1];
    assert_eq!((b.nice, b.loops, b.phases[0].loops), (-3, Some(1), Some(7)));
    assert_eq!(app.run_cpus(), Some(vec![0, 1]));
    assert_eq!(app.thread_cpus(a), Some(vec![0, 1]));
    let ind: Vec<String> = app.threads().map(|t| t.label()).collect();
    assert_eq!(ind, ["a-0", "a-1", "a-2", "b-3"]);
    // without loop, forever
    let f = one_task(r#"{"run": 1}"#).unwrap();
    assert_eq!(f.tasks[0].loops, None);
    assert_eq!(
        parse(r#"{"global": {"calibration": "CPU1"}, "tasks": {"t": {"run": 1}}}"#)
            .unwrap()
            .global
            .calibration,
        Calibration::Cpu(1)
    );
}

#[test]
fn barrier_users_count_every_instance() {
    let app = parse(
        r#"{"tasks": {"a": {"instance": 2, "barrier": "x", "run": 1},
                      "b": {"run": 1, "barrier": "x", "barrier1": "y"}}}"#,
    )
    .unwrap();
    assert_eq!(app.barrier_users("x"), 3);
    assert_eq!(app.barrier_users("y"), 1);
}

#[test]
fn unsupported_keys_are_named() {
    let cases = [
        (
            r#"{"tasks": {"t": {"run": 1, "walk": 2}}}"#,
            "tasks.t.walk",
            "not supported",
        ),
        (r#"{"tasks": {"t": {"mem": -1}}}"#, "tasks.t.mem", "between"),
        (
            r#"{"tasks": {"t": {"iorun": 100}}}"#,
            "tasks.t.iorun",
            "io_device",
        ),
        (
            r#"{"global": {"mem_buffer_size": 0}, "tasks": {"t": {"mem": 1}}}"#,
            "global.mem_buffer_size",
            "at least 1",
        ),
        (
            r#"{"tasks": {"t": {"fork": "x"}}}"#,
            "tasks.t.fork",
            "not supported",
        ),
        (
            r#"{"tasks": {"t": {"policy": "SCHED_FIFO", "run": 1}}}"#,
            "tasks.t.policy",
            "SCHED_FIFO is not supported",
        ),
        (
            r#"{"global": {"default_policy": "SCHED_RR"}, "tasks": {"t": {"run": 1}}}"#,
            "global.default_policy",
            "not supported",
        ),
        (
            r#"{"global": {"gnuplot": true}, "tasks": {"t": {"run": 1}}}"#,
            "global.gnuplot",
            "not supported",
        ),
        (
            r#"{"global": {"frequency": 1}, "tasks": {"t": {"run": 1}}}"#,
            "global.frequency",
            "not supported",
        ),
        (
            r#"{"tasks": {"t": {"dl-runtime": 5, "run": 1}}}"#,
            "tasks.t.dl-runtime",
            "not supported",
        ),
        (
            r#"{"tasks": {"t": {"phases": {"p": {"run": 1, "instance": 2}}}}}"#,
            "tasks.t.phases.p.instance",
            "not supported in a phase",
        ),
        (
            r#"{"tasks": {"t": {"timer": {"ref": "a", "period": 5, "slack": 1}}}}"#,
            "tasks.t.timer.slack",
            "not supported",
        ),
        (
            r#"{"tasks": {"t": {"run": 1}}, "extra": 1}"#,
            "extra",
            "not supported",
        ),
        (r#"{"tasks": {"t": {"run": -1}}}"#, "tasks.t.run", "between"),
        (
            r#"{"tasks": {"t": {"run": "x"}}}"#,
            "tasks.t.run",
            "integer",
        ),
        (
            r#"{"tasks": {"t": {"timer": {"ref": "a"}}}}"#,
            "tasks.t.timer.period",
            "at least",
        ),
        (
            r#"{"tasks": {"t": {"wait": {"ref": "a"}}}}"#,
            "tasks.t.wait.mutex",
            "missing",
        ),
        (
            r#"{"tasks": {"t": {"priority": 30, "run": 1}}}"#,
            "tasks.t.priority",
            "-20..19",
        ),
        (
            r#"{"tasks": {"t": {"loop": 0, "run": 1}}}"#,
            "tasks.t.loop",
            "forever",
        ),
        (
            r#"{"tasks": {"t": {"instance": 2}}}"#,
            "tasks.t",
            "no event",
        ),
        (
            r#"{"tasks": {"t": {"run": 1, "phases": {"p": {"run": 1}}}}}"#,
            "tasks.t.run",
            "phase",
        ),
        (r#"{"tasks": {}}"#, "tasks", "no task"),
        (r#"{"global": {}}"#, "tasks", "missing"),
        (r#"[1]"#, "(file)", "object"),
        (
            r#"{"tasks": {"t": {"run": 1, "run": 2}}}"#,
            "(file)",
            "twice",
        ),
    ];
    for (text, key, problem) in cases {
        let e = parse(text).unwrap_err();
        assert_eq!(e.key, key, "{text}: {e}");
        assert!(e.problem.contains(problem), "{text}: {e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
}

#[test]
fn threads_keep_their_own_affinity_and_phases_may_change_it() {
    let app = parse(r#"{"tasks": {"a": {"cpus": [0], "run": 1}, "b": {"run": 1}}}"#).unwrap();
    assert_eq!(app.run_cpus(), None, "b may run anywhere");
    assert_eq!(app.thread_cpus(&app.tasks[0]), Some(vec![0]));
    assert_eq!(app.thread_cpus(&app.tasks[1]), None);
    assert!(!app.affinity_changes(&app.tasks[0]));
    let app =
        parse(r#"{"tasks": {"a": {"cpus": [2], "run": 1}, "b": {"cpus": [0, 2], "run": 1}}}"#)
            .unwrap();
    assert_eq!(app.run_cpus(), Some(vec![0, 2]), "the union");
    // a phase's cpus, else the task's: the run may use the union of all
    let app = parse(
        r#"{"tasks": {"a": {"cpus": [0], "phases": {"x": {"run": 1}, "y": {"cpus": [3, 1], "run": 1}}}}}"#,
    )
    .unwrap();
    let a = &app.tasks[0];
    assert!(app.affinity_changes(a));
    assert_eq!(app.phase_cpus(a, 0), Some(vec![0]));
    assert_eq!(app.phase_cpus(a, 1), Some(vec![1, 3]));
    assert_eq!(app.run_cpus(), Some(vec![0, 1, 3]));
    // a phase with no set anywhere goes back to every CPU
    let app =
        parse(r#"{"tasks": {"a": {"phases": {"x": {"cpus": [1], "run": 1}, "y": {"run": 1}}}}}"#)
            .unwrap();
    assert_eq!(app.phase_cpus(&app.tasks[0], 1), None);
    assert!(app.affinity_changes(&app.tasks[0]));
    assert_eq!(app.run_cpus(), None);
}

#[test]
fn the_native_copy_logs_into_the_given_directory() {
    let text = r#"{"global": {"duration": 2, "log_size": "file", "logdir": "/x"}, "tasks": {"t": {"run": 1}}}"#;
    let out = with_logdir(text, "/tmp/d\"q").unwrap();
    assert_eq!(
        out,
        r#"{"global": {"duration": 2, "logdir": "/tmp/d\"q"}, "tasks": {"t": {"run": 1}}}"#
    );
    let out = with_logdir(r#"{"tasks": {"t": {"run": 1}}}"#, "/d").unwrap();
    assert_eq!(parse(&out).unwrap().global.logdir.as_deref(), Some("/d"));
    // an integer log_size (a ring buffer) stays
    let out = with_logdir(
        r#"{"global": {"log_size": 4}, "tasks": {"t": {"run": 1}}}"#,
        "/d",
    )
    .unwrap();
    assert!(out.contains(r#""log_size": 4"#));
}
