//! rt-app's JSON workload description (github.com/scheduler-tools/rt-app,
//! doc/tutorial.txt; Debian packages release v1.0): the grammar, checked
//! strictly, into a typed model the simulator turns into task programs and
//! the native runner hands to the real rt-app.
//!
//! Followed: rt-app v1.0's parser (src/rt-app_parse_config.c), with two
//! behaviours of later releases that the tutorial documents: a `loop` in a
//! task without `phases` runs that phase `loop` times and ends the task
//! (v1.0 loops forever), and an empty `suspend` names the task itself (what
//! workgen fills in). Event keys are matched by prefix in rt-app's order
//! (`run0`, `sleep1`, `runtime` before `run`). Anything rt-app does but the
//! simulator does not model — other scheduling classes, `iorun` (a
//! write(2) loop to a file or device: I/O is not modelled), `fork` (not in
//! v1.0), ftrace, gnuplot — is refused with the key named, never ignored.
//!
//! ```
//! let app = benchspec::rtapp::parse(r#"{"global": {"duration": 1},
//!     "tasks": {"t": {"instance": 2, "run": 1000, "timer": {"ref": "unique", "period": 4000}}}}"#)
//!     .unwrap();
//! assert_eq!(app.threads().count(), 2);
//! assert!(benchspec::rtapp::parse(r#"{"tasks": {"t": {"walk": 1}}}"#)
//!     .unwrap_err().to_string().contains("tasks.t.walk"));
//! ```

mod json;
pub mod log;

pub use json::Json;

/// Why an rt-app file cannot be used: the key at fault (a dotted path such
/// as `tasks.thread0.timer`) and the problem.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{key}`: {problem}")]
pub struct RtappError {
    /// Dotted path of the key.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

fn err<T>(key: &str, problem: impl Into<String>) -> Result<T, RtappError> {
    Err(RtappError {
        key: key.to_string(),
        problem: problem.into(),
    })
}

/// `global.calibration`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Calibration {
    /// A fixed ns per loop (no calibration step).
    NsPerLoop(u32),
    /// Calibrate on this CPU ("CPU0").
    Cpu(u32),
}

/// `global.log_size`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogSize {
    /// Write each row as it comes ("file", and "auto", which rt-app treats
    /// so; the default).
    File,
    /// No logs ("disable").
    Disable,
    /// A ring buffer of this many MB per thread, written at the end.
    Mb(u32),
}

/// The `global` object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Global {
    /// Seconds; None runs until every thread ends (-1).
    pub duration_s: Option<u32>,
    /// ns per loop of `run`.
    pub calibration: Calibration,
    /// Where logs go (None: not given, rt-app's "./").
    pub logdir: Option<String>,
    /// Log file prefix ["rt-app"].
    pub log_basename: String,
    /// Log buffering.
    pub log_size: LogSize,
    /// Sum the slack of every timer of a phase instead of keeping the last.
    pub cumulative_slack: bool,
    /// Bytes of each thread's buffer for `mem` events (rt-app's
    /// `DEFAULT_MEM_BUF_SIZE`, 4 MiB, when not given).
    pub mem_buffer_size: u64,
}

/// rt-app v1.0's default `mem_buffer_size` (src/rt-app_parse_config.c
/// `DEFAULT_MEM_BUF_SIZE`): 4 MiB.
pub const DEFAULT_MEM_BUFFER_SIZE: u64 = 4 << 20;

impl Default for Global {
    fn default() -> Self {
        Global {
            duration_s: None,
            calibration: Calibration::Cpu(0),
            logdir: None,
            log_basename: "rt-app".into(),
            log_size: LogSize::File,
            cumulative_slack: false,
            mem_buffer_size: DEFAULT_MEM_BUFFER_SIZE,
        }
    }
}

/// One event of a phase (durations in microseconds, as rt-app).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// Burn `run` us worth of calibrated loops.
    Run(u64),
    /// Burn loops until `runtime` us of wall time have passed.
    Runtime(u64),
    /// nanosleep.
    Sleep(u64),
    /// Sleep until the timer's next period.
    Timer {
        /// The timer's resource name (per thread instance when it starts
        /// with "unique").
        name: String,
        /// Period, us.
        period_us: u64,
        /// "absolute" mode: a missed period is not re-based on now.
        absolute: bool,
    },
    /// pthread_mutex_lock.
    Lock(String),
    /// pthread_mutex_unlock.
    Unlock(String),
    /// pthread_cond_wait(cond, mutex).
    Wait {
        /// The condition.
        cond: String,
        /// Its mutex (held by the caller).
        mutex: String,
    },
    /// pthread_cond_signal.
    Signal(String),
    /// pthread_cond_broadcast.
    Broad(String),
    /// pthread_cond_signal then pthread_cond_wait on the same condition.
    Sync {
        /// The condition.
        cond: String,
        /// Its mutex (held by the caller).
        mutex: String,
    },
    /// Wait on the condition named after a thread until it is resumed.
    Suspend(String),
    /// Broadcast the condition of the named thread.
    Resume(String),
    /// Wait until every user of the barrier has reached it.
    Barrier(String),
    /// sched_yield (pthread_yield).
    Yield,
    /// Write this many bytes into the thread's own buffer of
    /// `mem_buffer_size` bytes: memset over at most the buffer at a time,
    /// until the count is written (rt-app v1.0 src/rt-app.c `memload`).
    Mem(u64),
}

/// A phase: events run `loop` times (None: forever).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Phase {
    /// Its key (the task's name when the task has no `phases`).
    pub name: String,
    /// Repeats (default 1; -1: forever).
    pub loops: Option<u32>,
    /// Affinity of this phase.
    pub cpus: Option<Vec<u32>>,
    /// Events in file order.
    pub events: Vec<Event>,
}

/// A thread object of `tasks`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskDef {
    /// Its key: the thread's name.
    pub name: String,
    /// Threads made from it.
    pub instance: u32,
    /// Times the phases run (None: forever).
    pub loops: Option<u32>,
    /// Nice value (`priority` for SCHED_OTHER; `nice` is accepted too).
    pub nice: i32,
    /// Initial delay, us.
    pub delay_us: u64,
    /// Affinity.
    pub cpus: Option<Vec<u32>>,
    /// Phases in order.
    pub phases: Vec<Phase>,
}

/// A parsed rt-app file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RtApp {
    /// The `global` object.
    pub global: Global,
    /// The `tasks`, in file order.
    pub tasks: Vec<TaskDef>,
}

/// One thread as rt-app creates it: its index (`ind`, the number in its
/// log file's name) and its definition.
#[derive(Clone, Copy, Debug)]
pub struct Thread<'a> {
    /// rt-app's thread index, counted over every instance of every task.
    pub ind: u32,
    /// Which instance of its task.
    pub instance: u32,
    /// Its task object.
    pub def: &'a TaskDef,
}

impl Thread<'_> {
    /// `NAME-IND`, as the log file names the thread.
    pub fn label(&self) -> String {
        format!("{}-{}", self.def.name, self.ind)
    }
}

impl RtApp {
    /// Every thread rt-app would create, in its order.
    pub fn threads(&self) -> impl Iterator<Item = Thread<'_>> {
        let mut out = Vec::with_capacity(self.nr_threads() as usize);
        for def in &self.tasks {
            for instance in 0..def.instance {
                out.push(Thread {
                    ind: out.len() as u32,
                    instance,
                    def,
                });
            }
        }
        out.into_iter()
    }

    /// Number of threads.
    pub fn nr_threads(&self) -> u32 {
        self.tasks.iter().map(|t| t.instance).sum()
    }

    /// The affinity of phase `j` of `t`, as rt-app's `set_thread_affinity`
    /// chooses it at the start of each pass of the phase: the phase's
    /// `cpus`, else the task's, else None (the affinity the thread was
    /// created with: every CPU the run may use).
    pub fn phase_cpus(&self, t: &TaskDef, j: usize) -> Option<Vec<u32>> {
        t.phases
            .get(j)
            .and_then(|p| p.cpus.clone())
            .or_else(|| t.cpus.clone())
    }

    /// The affinity a thread starts its first phase with (None: every CPU
    /// the run may use).
    pub fn thread_cpus(&self, t: &TaskDef) -> Option<Vec<u32>> {
        self.phase_cpus(t, 0)
    }

    /// Whether the phases of `t` run on different CPU sets, so that the
    /// thread changes its affinity during the run (sched_setaffinity at a
    /// phase start).
    pub fn affinity_changes(&self, t: &TaskDef) -> bool {
        let first = self.thread_cpus(t);
        (1..t.phases.len()).any(|j| self.phase_cpus(t, j) != first)
    }

    /// The CPUs the whole run may use: the union of every phase's affinity
    /// when every phase of every thread has one (None: some thread may run
    /// anywhere at some point).
    pub fn run_cpus(&self) -> Option<Vec<u32>> {
        let mut all = Vec::new();
        for t in &self.tasks {
            for j in 0..t.phases.len() {
                all.extend(self.phase_cpus(t, j)?);
            }
        }
        if all.is_empty() {
            return None;
        }
        all.sort_unstable();
        all.dedup();
        Some(all)
    }

    /// Barrier users: rt-app counts every reference to a barrier's name in
    /// every thread instance (v1.0 `parse_thread_event_data`).
    pub fn barrier_users(&self, name: &str) -> u32 {
        self.tasks
            .iter()
            .map(|t| {
                let refs = t
                    .phases
                    .iter()
                    .flat_map(|p| &p.events)
                    .filter(|e| matches!(e, Event::Barrier(b) if b == name))
                    .count() as u32;
                refs * t.instance
            })
            .sum()
    }
}

/// The file's text with `global.logdir` set so that the real rt-app writes
/// its logs into `dir`: what the native runner gives it. A string
/// `log_size` is removed: rt-app v1.0 compares those strings the wrong way
/// round (`strcmp` taken as a match: "file" and "auto" turn logging off,
/// "disable" on), and without the key it writes each row to its file, which
/// is what the tutorial says "file" does. An integer (a ring buffer of that
/// many MB, written at the end) is kept.
pub fn with_logdir(text: &str, dir: &str) -> Result<String, RtappError> {
    let mut root: Json = serde_json::from_str(text).map_err(|e| RtappError {
        key: "(file)".into(),
        problem: format!("not JSON: {e}"),
    })?;
    if root.get_mut("global").is_none() {
        root.set("global", Json::Object(Vec::new()));
    }
    let g = root.get_mut("global").expect("just set");
    g.set("logdir", Json::Str(dir.to_string()));
    if let Json::Object(o) = g {
        o.retain(|(k, v)| !(k == "log_size" && matches!(v, Json::Str(_))));
    }
    Ok(root.to_text())
}

/// Parse an rt-app file's text.
pub fn parse(text: &str) -> Result<RtApp, RtappError> {
    let root: Json = serde_json::from_str(text).map_err(|e| RtappError {
        key: "(file)".into(),
        problem: format!("not JSON: {e}"),
    })?;
    let Json::Object(root) = root else {
        return err("(file)", "must be a JSON object");
    };
    let mut global = Global::default();
    let mut tasks = None;
    for (k, v) in &root {
        match k.as_str() {
            "global" => global = parse_global(v)?,
            "tasks" => tasks = Some(parse_tasks(v)?),
            // kept by rt-app for old files; resources are made from the
            // events' names
            "resources" => {
                if !matches!(v, Json::Object(_)) {
                    return err("resources", "must be an object");
                }
            }
            _ => {
                return err(
                    k,
                    "not supported (rt-app knows `global`, `tasks`, `resources`)",
                )
            }
        }
    }
    let Some(tasks) = tasks else {
        return err("tasks", "missing: rt-app needs at least one task");
    };
    if tasks.is_empty() {
        return err("tasks", "has no task");
    }
    Ok(RtApp { global, tasks })
}

fn object<'a>(v: &'a Json, key: &str) -> Result<&'a [(String, Json)], RtappError> {
    match v {
        Json::Object(o) => Ok(o),
        other => err(key, format!("must be an object, not {}", other.kind())),
    }
}

fn int(v: &Json, key: &str) -> Result<i64, RtappError> {
    match v {
        Json::Int(i) => Ok(*i),
        other => err(key, format!("must be an integer, not {}", other.kind())),
    }
}

fn uint(v: &Json, key: &str, max: i64) -> Result<u64, RtappError> {
    let i = int(v, key)?;
    if !(0..=max).contains(&i) {
        return err(key, format!("must be between 0 and {max}"));
    }
    Ok(i as u64)
}

fn string<'a>(v: &'a Json, key: &str) -> Result<&'a str, RtappError> {
    match v {
        Json::Str(s) => Ok(s),
        other => err(key, format!("must be a string, not {}", other.kind())),
    }
}

fn boolean(v: &Json, key: &str) -> Result<bool, RtappError> {
    match v {
        Json::Bool(b) => Ok(*b),
        other => err(key, format!("must be true or false, not {}", other.kind())),
    }
}

/// Largest duration accepted, us (an hour; the simulator's runs are bounded).
const MAX_US: i64 = 3_600_000_000;

fn parse_global(v: &Json) -> Result<Global, RtappError> {
    let mut g = Global::default();
    for (k, v) in object(v, "global")? {
        let key = format!("global.{k}");
        let key = key.as_str();
        match k.as_str() {
            "duration" => {
                let d = int(v, key)?;
                g.duration_s = match d {
                    -1 => None,
                    1..=86_400 => Some(d as u32),
                    _ => return err(key, "must be -1 or 1..86400 seconds"),
                };
            }
            "calibration" => {
                g.calibration = match v {
                    Json::Int(n) if (1..=1_000_000).contains(n) => {
                        Calibration::NsPerLoop(*n as u32)
                    }
                    Json::Str(s) => match s.strip_prefix("CPU").map(str::parse::<u32>) {
                        Some(Ok(c)) => Calibration::Cpu(c),
                        _ => return err(key, format!("`{s}` is not CPU<n> or ns per loop")),
                    },
                    _ => return err(key, "must be ns per loop (1..1000000) or \"CPU<n>\""),
                };
            }
            "default_policy" => policy(v, key)?,
            "logdir" => g.logdir = Some(string(v, key)?.to_string()),
            "log_basename" => g.log_basename = string(v, key)?.to_string(),
            "log_size" => {
                g.log_size = match v {
                    Json::Int(n) if (1..=4096).contains(n) => LogSize::Mb(*n as u32),
                    Json::Str(s) => match s.to_ascii_lowercase().as_str() {
                        "file" | "auto" => LogSize::File,
                        "disable" => LogSize::Disable,
                        _ => return err(key, format!("`{s}` is not file, auto, disable or MB")),
                    },
                    _ => {
                        return err(
                            key,
                            "must be \"file\", \"auto\", \"disable\" or MB (1..4096)",
                        )
                    }
                };
            }
            "cumulative_slack" => g.cumulative_slack = boolean(v, key)?,
            // without effect on SCHED_OTHER threads: rt-app forces page
            // locking off for them, and priority inheritance only changes
            // the priority of RT waiters' lock holders
            "lock_pages" | "pi_enabled" => {
                boolean(v, key)?;
            }
            "ftrace" | "gnuplot" => {
                if boolean(v, key)? {
                    return err(key, "not supported by the simulator (set it to false)");
                }
            }
            // only `iorun` uses it, and it is refused
            "io_device" => {
                string(v, key)?;
            }
            // an int in rt-app; 0 would make its memload loop forever
            "mem_buffer_size" => {
                g.mem_buffer_size = uint(v, key, i64::from(i32::MAX))?;
                if g.mem_buffer_size == 0 {
                    return err(
                        key,
                        "must be at least 1 byte (rt-app's mem would never end)",
                    );
                }
            }
            _ => return err(key, "not supported"),
        }
    }
    Ok(g)
}

fn policy(v: &Json, key: &str) -> Result<(), RtappError> {
    match string(v, key)? {
        "SCHED_OTHER" => Ok(()),
        p @ ("SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE") => err(
            key,
            format!("{p} is not supported: the simulator models the fair class (SCHED_OTHER) only"),
        ),
        p => err(key, format!("`{p}` is not a scheduling policy")),
    }
}

fn parse_tasks(v: &Json) -> Result<Vec<TaskDef>, RtappError> {
    let mut out = Vec::new();
    for (name, t) in object(v, "tasks")? {
        out.push(parse_task(name, t)?);
    }
    Ok(out)
}

fn cpus(v: &Json, key: &str) -> Result<Vec<u32>, RtappError> {
    let Json::Array(a) = v else {
        return err(
            key,
            format!("must be an array of CPU numbers, not {}", v.kind()),
        );
    };
    let mut set = a
        .iter()
        .map(|c| uint(c, key, 4095).map(|c| c as u32))
        .collect::<Result<Vec<_>, _>>()?;
    if set.is_empty() {
        return err(key, "must name at least one CPU");
    }
    set.sort_unstable();
    set.dedup();
    Ok(set)
}

/// rt-app's event keys, in the order its parser tries them (prefixes).
const EVENTS: [&str; 17] = [
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "mem", "iorun", "yield", "barrier", "fork",
];

fn event_kind(key: &str) -> Option<&'static str> {
    EVENTS.iter().copied().find(|e| key.starts_with(e))
}

fn parse_task(name: &str, v: &Json) -> Result<TaskDef, RtappError> {
    let base = format!("tasks.{name}");
    let mut t = TaskDef {
        name: name.to_string(),
        instance: 1,
        loops: None,
        nice: 0,
        delay_us: 0,
        cpus: None,
        phases: Vec::new(),
    };
    let obj = object(v, &base)?;
    let mut loop_key = None;
    let mut has_events = false;
    for (k, v) in obj {
        let key = format!("{base}.{k}");
        match k.as_str() {
            "instance" => {
                t.instance = uint(v, &key, 4096)? as u32;
                if t.instance == 0 {
                    return err(&key, "must be at least 1");
                }
            }
            "loop" => loop_key = Some(int(v, &key)?),
            "priority" | "nice" => {
                let n = int(v, &key)?;
                if !(-20..=19).contains(&n) {
                    return err(&key, "is a nice value for SCHED_OTHER: -20..19");
                }
                t.nice = n as i32;
            }
            "policy" => policy(v, &key)?,
            "delay" => t.delay_us = uint(v, &key, MAX_US)?,
            "cpus" => t.cpus = Some(cpus(v, &key)?),
            "phases" => {
                for (pn, pv) in object(v, &key)? {
                    let pkey = format!("{key}.{pn}");
                    t.phases.push(parse_phase(pn, pv, &pkey, name, true)?);
                }
                if t.phases.is_empty() {
                    return err(&key, "has no phase");
                }
            }
            k if k.starts_with("dl-") => {
                return err(&key, "not supported: SCHED_DEADLINE is not modelled")
            }
            k if event_kind(k).is_some() => has_events = true,
            _ => return err(&key, "not supported"),
        }
    }
    if !t.phases.is_empty() {
        if has_events {
            let k = obj
                .iter()
                .find(|(k, _)| event_kind(k).is_some())
                .map(|(k, _)| k.as_str())
                .unwrap_or("");
            return err(
                &format!("{base}.{k}"),
                "an event beside `phases`: put it in a phase",
            );
        }
        // the task's loop counts passes over all phases (default forever)
        t.loops = loop_count(loop_key, &format!("{base}.loop"))?;
    } else {
        // one phase made of the task's own events; its `loop` runs the
        // phase that many times and ends the task
        let mut p = parse_phase(name, v, &base, name, false)?;
        p.loops = Some(1);
        t.loops = loop_count(loop_key, &format!("{base}.loop"))?;
        if let Some(n) = t.loops {
            p.loops = Some(n);
            t.loops = Some(1);
        }
        t.phases.push(p);
    }
    if t.phases.iter().all(|p| p.events.is_empty()) {
        return err(&base, "has no event");
    }
    Ok(t)
}

fn loop_count(v: Option<i64>, key: &str) -> Result<Option<u32>, RtappError> {
    match v {
        None | Some(-1) => Ok(None),
        Some(n) if (1..=i64::from(u32::MAX)).contains(&n) => Ok(Some(n as u32)),
        Some(_) => err(key, "must be -1 (forever) or at least 1"),
    }
}

/// A phase object (or a task object without `phases`, `in_phases` false:
/// then the task's own keys are skipped here).
fn parse_phase(
    name: &str,
    v: &Json,
    base: &str,
    thread: &str,
    in_phases: bool,
) -> Result<Phase, RtappError> {
    let mut p = Phase {
        name: name.to_string(),
        loops: Some(1),
        cpus: None,
        events: Vec::new(),
    };
    for (k, v) in object(v, base)? {
        let key = format!("{base}.{k}");
        let key = key.as_str();
        if let Some(kind) = event_kind(k) {
            p.events.push(parse_event(kind, v, key, thread)?);
            continue;
        }
        match k.as_str() {
            "loop" if in_phases => p.loops = loop_count(Some(int(v, key)?), key)?,
            "cpus" if in_phases => p.cpus = Some(cpus(v, key)?),
            _ if !in_phases => {} // task keys, checked by parse_task
            _ => return err(key, "not supported in a phase"),
        }
    }
    Ok(p)
}

fn fields<'a>(
    v: &'a Json,
    key: &str,
    allowed: &[&str],
) -> Result<&'a [(String, Json)], RtappError> {
    let o = object(v, key)?;
    for (k, _) in o {
        if !allowed.contains(&k.as_str()) {
            return err(&format!("{key}.{k}"), "not supported");
        }
    }
    Ok(o)
}

fn field<'a>(o: &'a [(String, Json)], name: &str) -> Option<&'a Json> {
    o.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn parse_event(kind: &str, v: &Json, key: &str, thread: &str) -> Result<Event, RtappError> {
    let us = |v: &Json| uint(v, key, MAX_US);
    let name = |v: &Json| string(v, key).map(str::to_string);
    Ok(match kind {
        "run" => Event::Run(us(v)?),
        "runtime" => Event::Runtime(us(v)?),
        "sleep" => Event::Sleep(us(v)?),
        "lock" => Event::Lock(name(v)?),
        "unlock" => Event::Unlock(name(v)?),
        "signal" => Event::Signal(name(v)?),
        "broad" => Event::Broad(name(v)?),
        "barrier" => Event::Barrier(name(v)?),
        "resume" => Event::Resume(name(v)?),
        "suspend" => {
            let s = name(v)?;
            Event::Suspend(if s.is_empty() { thread.to_string() } else { s })
        }
        "yield" => Event::Yield,
        "wait" | "sync" => {
            let o = fields(v, key, &["ref", "mutex"])?;
            let get = |f: &str| match field(o, f) {
                Some(x) => string(x, &format!("{key}.{f}")).map(str::to_string),
                None => err(&format!("{key}.{f}"), "missing"),
            };
            let (cond, mutex) = (get("ref")?, get("mutex")?);
            if kind == "wait" {
                Event::Wait { cond, mutex }
            } else {
                Event::Sync { cond, mutex }
            }
        }
        "timer" => {
            let o = fields(v, key, &["ref", "period", "mode"])?;
            let name = match field(o, "ref") {
                Some(x) => string(x, &format!("{key}.ref"))?.to_string(),
                None => "unknown".to_string(),
            };
            let period_us = match field(o, "period") {
                Some(x) => uint(x, &format!("{key}.period"), MAX_US)?,
                None => 0,
            };
            if period_us == 0 {
                return err(&format!("{key}.period"), "must be at least 1 us");
            }
            let absolute = match field(o, "mode") {
                None => false,
                Some(x) => match string(x, &format!("{key}.mode"))? {
                    "relative" => false,
                    "absolute" => true,
                    m => {
                        return err(
                            &format!("{key}.mode"),
                            format!("`{m}` is not relative or absolute"),
                        )
                    }
                },
            };
            Event::Timer {
                name,
                period_us,
                absolute,
            }
        }
        // bytes, an int in rt-app
        "mem" => Event::Mem(uint(v, key, i64::from(i32::MAX))?),
        "iorun" => {
            return err(
                key,
                "not supported: iorun write(2)s its bytes to the global `io_device` (a file or device, /dev/null by default), and file and device I/O is not modelled",
            )
        }
        "fork" => return err(
            key,
            "not supported (rt-app 1.0, the release this project runs, has no fork event either)",
        ),
        _ => unreachable!("every event kind is handled"),
    })
}

#[cfg(test)]
mod tests;
