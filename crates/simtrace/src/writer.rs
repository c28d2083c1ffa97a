//! [`PerfettoWriter`]: a [`TraceSink`] that streams a run's events to a
//! Perfetto protobuf trace.
//!
//! Kernel events go out as ftrace event bundles, one per CPU and up to
//! [`BUNDLE_EVENTS`] events each, exactly as `traced_probes` writes a kernel
//! capture, so Perfetto's scheduling views (CPU tracks, thread states,
//! wake-up arrows) are built from them. What the kernel does not trace goes
//! on tracks of the writer's own: an instant per placement decision and
//! balancer pass on a per-CPU track, and counter tracks for each CPU's
//! run-queue length and each LLC's `nr_idle_scan`.
//!
//! The file is written through a buffer to a temporary file beside the
//! target, renamed over it by [`PerfettoWriter::finish`]; a writer dropped
//! without finishing removes its temporary file. Memory stays bounded: at
//! most [`BUNDLE_EVENTS`] events per CPU are held before they are written.

use crate::proto::{self, Data, Event, FtraceEvent, TracePacket};
use prost::Message;
use sim::task::TaskId;
use sim::trace::{MigrateCause, Runner, TraceEvent, TraceSetup, TraceSink};
use sim::Nanos;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Events per CPU held before its bundle is written.
pub const BUNDLE_EVENTS: usize = 512;

/// The sequence of the writer's track packets.
const TRACK_SEQ: u32 = 1;
/// The sequence of the ftrace bundles.
const FTRACE_SEQ: u32 = 2;

/// Track uuids: per-CPU scheduler-decision tracks, per-CPU run-queue
/// counters, per-LLC nr_idle_scan counters.
const UUID_DECISIONS: u64 = 1 << 32;
const UUID_NR_RUNNING: u64 = 2 << 32;
const UUID_NR_IDLE_SCAN: u64 = 3 << 32;

/// The simulated time kept in a trace: events at `from <= t < to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start, ns.
    pub from: Nanos,
    /// End, ns (`Nanos::MAX`: the end of the run).
    pub to: Nanos,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            from: 0,
            to: Nanos::MAX,
        }
    }
}

impl Window {
    fn contains(&self, t: Nanos) -> bool {
        t >= self.from && t < self.to
    }
}

/// Errors of the trace writer.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The output path cannot be used.
    #[error("cannot write {path}: {why}")]
    Path {
        /// The path.
        path: String,
        /// Why.
        why: String,
    },
    /// Writing failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// What a finished trace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Packets written.
    pub packets: u64,
    /// Ftrace events written.
    pub ftrace_events: u64,
    /// Track events (instants and counter values) written.
    pub track_events: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Who a pid stands for on a CPU.
#[derive(Clone, Debug)]
struct Thread {
    pid: i32,
    comm: String,
    prio: i32,
}

/// Streams a run's events to a Perfetto trace file (see the module doc).
pub struct PerfettoWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    error: Option<std::io::Error>,
    window: Window,
    /// pid, comm, prio of each task; then each CPU's stopper thread.
    tasks: Vec<Thread>,
    stoppers: Vec<Thread>,
    idle: Vec<Thread>,
    /// What runs on each CPU, as the writer last saw it.
    current: Vec<Runner>,
    /// Ftrace events waiting per CPU.
    pending: Vec<Vec<FtraceEvent>>,
    /// Counter values last written (None: not yet), and last seen.
    nr_running: Vec<(Option<u32>, u32)>,
    nr_idle_scan: Vec<(Option<u32>, u32)>,
    /// The window's start has been marked with the counters' values.
    opened: bool,
    /// The track sequence has had its first packet.
    track_seq_started: bool,
    buf: Vec<u8>,
    stats: TraceStats,
    /// Each placement stage's name, by `Stage as usize`.
    stage_names: Vec<String>,
}

/// The pid of task `id` in the trace: tasks after the kernel threads (the
/// idle tasks are pid 0, each CPU's stopper `migration/N` is 2 + N).
pub fn task_pid(nr_cpus: u32, id: TaskId) -> i32 {
    let base = (nr_cpus as i64 + 2).max(1000);
    // the next power of ten at or above 1000 that leaves room for the
    // stoppers, so pids read as tasks at a glance
    let mut b = 1000i64;
    while b < base {
        b *= 10;
    }
    (b + id.0 as i64).min(i32::MAX as i64) as i32
}

/// The pid of CPU `cpu`'s stopper thread.
pub fn stopper_pid(cpu: u32) -> i32 {
    2 + cpu as i32
}

impl PerfettoWriter {
    /// A writer of `path` keeping `window`. The file is created beside
    /// `path` under a temporary name at once (so a path that cannot be
    /// written fails here, before the run).
    pub fn create(path: &Path, window: Window) -> Result<Self, TraceError> {
        let shown = path.display().to_string();
        let bad = |why: String| TraceError::Path {
            path: shown.clone(),
            why,
        };
        if let Some(kind) = topology::input::not_a_regular_file(path) {
            return Err(bad(format!(
                "not a regular file ({kind}); give a file name"
            )));
        }
        let name = path
            .file_name()
            .ok_or_else(|| bad("the path has no file name".into()))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(bad(format!("directory {} does not exist", dir.display())));
        }
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let f = File::create(&tmp).map_err(|e| bad(e.to_string()))?;
        Ok(PerfettoWriter {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 20, f)),
            error: None,
            window,
            tasks: Vec::new(),
            stoppers: Vec::new(),
            idle: Vec::new(),
            current: Vec::new(),
            pending: Vec::new(),
            nr_running: Vec::new(),
            nr_idle_scan: Vec::new(),
            opened: false,
            track_seq_started: false,
            buf: Vec::with_capacity(4096),
            stats: TraceStats::default(),
            stage_names: sim::placement::Stage::all().map(|s| s.name()).collect(),
        })
    }

    /// Write what is left, and rename the file into place. Fails with the
    /// first write error of the run, if any (the temporary file is removed
    /// then).
    pub fn finish(mut self) -> Result<TraceStats, TraceError> {
        for c in 0..self.pending.len() {
            self.flush_cpu(c);
        }
        let io = |source| TraceError::Io {
            path: self.path.display().to_string(),
            source,
        };
        if let Some(e) = self.error.take() {
            return Err(io(e));
        }
        let out = self.out.take().expect("finish runs once");
        let f = out.into_inner().map_err(|e| TraceError::Io {
            path: self.path.display().to_string(),
            source: e.into_error(),
        })?;
        f.sync_all().map_err(io)?;
        self.stats.bytes = f.metadata().map_err(io)?.len();
        drop(f);
        std::fs::rename(&self.tmp, &self.path).map_err(io)?;
        Ok(self.stats)
    }

    fn write_packet(&mut self, p: &TracePacket) {
        if self.error.is_some() {
            return;
        }
        self.buf.clear();
        // field 1 of Trace, length-delimited
        self.buf.push(0x0a);
        p.encode_length_delimited(&mut self.buf)
            .expect("a Vec grows as needed");
        self.stats.packets += 1;
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
    }

    fn track_packet(&mut self, ts: Nanos, data: Data) {
        let first = !self.track_seq_started;
        self.track_seq_started = true;
        self.write_packet(&TracePacket {
            timestamp: Some(ts),
            trusted_packet_sequence_id: Some(TRACK_SEQ),
            sequence_flags: first.then_some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
            data: Some(data),
        });
    }

    fn flush_cpu(&mut self, c: usize) {
        if self.pending[c].is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.pending[c]);
        self.stats.ftrace_events += events.len() as u64;
        self.write_packet(&TracePacket {
            timestamp: None,
            trusted_packet_sequence_id: Some(FTRACE_SEQ),
            sequence_flags: None,
            data: Some(Data::FtraceEvents(proto::FtraceEventBundle {
                cpu: Some(c as u32),
                event: events,
            })),
        });
        self.pending[c] = Vec::with_capacity(BUNDLE_EVENTS);
    }

    fn ftrace(&mut self, now: Nanos, cpu: u32, ev: Event) {
        let c = cpu as usize;
        if c >= self.pending.len() {
            return;
        }
        let pid = self.runner(c, self.current[c]).pid as u32;
        self.pending[c].push(FtraceEvent {
            timestamp: Some(now),
            pid: Some(pid),
            event: Some(ev),
        });
        if self.pending[c].len() >= BUNDLE_EVENTS {
            self.flush_cpu(c);
        }
    }

    fn runner(&self, c: usize, r: Runner) -> &Thread {
        match r {
            Runner::Idle => &self.idle[c],
            Runner::Stopper => &self.stoppers[c],
            Runner::Task(t) => &self.tasks[t.idx()],
        }
    }

    fn counter(&mut self, now: Nanos, uuid: u64, v: u32) {
        self.stats.track_events += 1;
        self.track_packet(
            now,
            Data::TrackEvent(proto::TrackEvent {
                r#type: Some(proto::TYPE_COUNTER),
                track_uuid: Some(uuid),
                counter_value: Some(v as i64),
                ..Default::default()
            }),
        );
    }

    fn instant(&mut self, now: Nanos, cpu: u32, name: String, args: Vec<proto::DebugAnnotation>) {
        self.stats.track_events += 1;
        self.track_packet(
            now,
            Data::TrackEvent(proto::TrackEvent {
                r#type: Some(proto::TYPE_INSTANT),
                track_uuid: Some(UUID_DECISIONS + cpu as u64),
                name: Some(name),
                categories: vec!["sched".into()],
                debug_annotations: args,
                ..Default::default()
            }),
        );
    }

    /// At the window's first event: each counter's value then.
    fn open_window(&mut self, now: Nanos) {
        self.opened = true;
        for c in 0..self.nr_running.len() {
            let v = self.nr_running[c].1;
            self.nr_running[c].0 = Some(v);
            self.counter(now, UUID_NR_RUNNING + c as u64, v);
        }
        for l in 0..self.nr_idle_scan.len() {
            let v = self.nr_idle_scan[l].1;
            self.nr_idle_scan[l].0 = Some(v);
            self.counter(now, UUID_NR_IDLE_SCAN + l as u64, v);
        }
    }

    fn switch(&mut self, now: Nanos, cpu: u32, prev: Option<(TaskId, i64)>, next: Runner) {
        let c = cpu as usize;
        let (from, state) = match prev {
            Some((t, s)) => (Runner::Task(t), s),
            None => (self.current[c], 0),
        };
        self.current[c] = next;
        if from == next || !self.window.contains(now) {
            return;
        }
        let (p, n) = (self.runner(c, from).clone(), self.runner(c, next).clone());
        // the event fires in the context of the task leaving
        self.current[c] = from;
        self.ftrace(
            now,
            cpu,
            Event::SchedSwitch(proto::SchedSwitch {
                prev_comm: Some(p.comm),
                prev_pid: Some(p.pid),
                prev_prio: Some(p.prio),
                prev_state: Some(state),
                next_comm: Some(n.comm),
                next_pid: Some(n.pid),
                next_prio: Some(n.prio),
            }),
        );
        self.current[c] = next;
    }
}

fn arg_u(name: &str, v: u64) -> proto::DebugAnnotation {
    proto::DebugAnnotation {
        name: Some(name.into()),
        uint_value: Some(v),
        string_value: None,
    }
}

fn arg_s(name: &str, v: String) -> proto::DebugAnnotation {
    proto::DebugAnnotation {
        name: Some(name.into()),
        uint_value: None,
        string_value: Some(v),
    }
}

impl TraceSink for PerfettoWriter {
    fn begin(&mut self, setup: &TraceSetup) {
        let n = setup.nr_cpus;
        if setup.stage_names.len() == self.stage_names.len() {
            // the run's policy names its own stages
            self.stage_names = setup.stage_names.clone();
        }
        self.tasks = setup
            .tasks
            .iter()
            .map(|t| Thread {
                pid: task_pid(n, t.id),
                comm: t.name.clone(),
                prio: t.prio,
            })
            .collect();
        self.stoppers = (0..n)
            .map(|c| Thread {
                pid: stopper_pid(c),
                comm: format!("migration/{c}"),
                prio: 0,
            })
            .collect();
        self.idle = (0..n)
            .map(|c| Thread {
                pid: 0,
                comm: format!("swapper/{c}"),
                prio: 120,
            })
            .collect();
        self.current = vec![Runner::Idle; n as usize];
        self.pending = (0..n).map(|_| Vec::new()).collect();
        self.nr_running = vec![(None, 0); n as usize];
        let nr_llcs = setup.cpu_llc.iter().map(|&l| l + 1).max().unwrap_or(0) as usize;
        self.nr_idle_scan = vec![(None, 0); nr_llcs];
        // the processes and threads, then the writer's own tracks
        let processes = setup
            .tasks
            .iter()
            .filter(|t| t.leader == t.id)
            .map(|t| proto::Process {
                pid: Some(task_pid(n, t.id)),
                ppid: Some(t.parent.map_or(1, |p| {
                    task_pid(n, setup.tasks.get(p.idx()).map_or(p, |p| p.leader))
                })),
                cmdline: vec![t.name.clone()],
            })
            .chain((0..n).map(|c| proto::Process {
                pid: Some(stopper_pid(c)),
                ppid: Some(2),
                cmdline: vec![format!("migration/{c}")],
            }))
            .collect();
        let threads = setup
            .tasks
            .iter()
            .map(|t| proto::Thread {
                tid: Some(task_pid(n, t.id)),
                name: Some(t.name.clone()),
                tgid: Some(task_pid(n, t.leader)),
            })
            .collect();
        self.write_packet(&TracePacket {
            timestamp: Some(self.window.from),
            trusted_packet_sequence_id: Some(FTRACE_SEQ),
            sequence_flags: None,
            data: Some(Data::ProcessTree(proto::ProcessTree { processes, threads })),
        });
        let ts = self.window.from;
        for c in 0..n {
            let tracks = [
                (
                    UUID_DECISIONS,
                    format!("CPU {c} placement and balance"),
                    false,
                ),
                (UUID_NR_RUNNING, format!("CPU {c} nr_running"), true),
            ];
            for (base, name, counter) in tracks {
                self.track_descriptor(ts, base + c as u64, name, counter);
            }
        }
        for l in 0..nr_llcs {
            self.track_descriptor(
                ts,
                UUID_NR_IDLE_SCAN + l as u64,
                format!("LLC {l} nr_idle_scan"),
                true,
            );
        }
    }

    fn event(&mut self, now: Nanos, ev: &TraceEvent) {
        let inside = self.window.contains(now);
        if inside && !self.opened {
            self.open_window(now);
        }
        match *ev {
            TraceEvent::Switch { cpu, prev, next } => {
                let prev = prev.map(|(t, s)| (t, s.kernel_bits()));
                self.switch(now, cpu, prev, next);
            }
            _ if !inside => match *ev {
                // keep the counters' values for the window's start
                TraceEvent::NrRunning { cpu, n } => {
                    if let Some(v) = self.nr_running.get_mut(cpu as usize) {
                        v.1 = n;
                    }
                }
                TraceEvent::NrIdleScan { llc, n } => {
                    if let Some(v) = self.nr_idle_scan.get_mut(llc as usize) {
                        v.1 = n;
                    }
                }
                _ => {}
            },
            TraceEvent::Waking {
                cpu,
                task,
                prev_cpu,
            } => {
                let t = self.tasks[task.idx()].clone();
                self.ftrace(
                    now,
                    cpu,
                    Event::SchedWaking(proto::SchedWakeup {
                        comm: Some(t.comm),
                        pid: Some(t.pid),
                        prio: Some(t.prio),
                        success: Some(1),
                        target_cpu: Some(prev_cpu as i32),
                    }),
                );
            }
            TraceEvent::Wakeup {
                cpu,
                task,
                target_cpu,
                prev_cpu,
                new,
                stage,
                probes,
                cost_ns,
                in_place,
            } => {
                let t = self.tasks[task.idx()].clone();
                let w = proto::SchedWakeup {
                    comm: Some(t.comm.clone()),
                    pid: Some(t.pid),
                    prio: Some(t.prio),
                    success: Some(1),
                    target_cpu: Some(target_cpu as i32),
                };
                self.ftrace(
                    now,
                    cpu,
                    if new {
                        Event::SchedWakeupNew(w)
                    } else {
                        Event::SchedWakeup(w)
                    },
                );
                if in_place {
                    // ttwu_runnable: a delayed task, still queued, wakes
                    // where it is; no select_task_rq ran
                    let args = vec![
                        arg_s("task", t.comm),
                        arg_u("pid", t.pid as u64),
                        arg_u("target_cpu", target_cpu as u64),
                    ];
                    self.instant(now, cpu, "ttwu_runnable: woken in place".into(), args);
                    return;
                }
                let stage = match stage {
                    Some(s) => self.stage_names[s as usize].clone(),
                    None => "none (placed by the workload)".to_string(),
                };
                let args = vec![
                    arg_s("task", t.comm),
                    arg_u("pid", t.pid as u64),
                    arg_s("kind", if new { "fork" } else { "wakeup" }.into()),
                    arg_s("stage", stage.clone()),
                    arg_u("prev_cpu", prev_cpu as u64),
                    arg_u("target_cpu", target_cpu as u64),
                    arg_u("probes", probes as u64),
                    arg_u("cost_ns", cost_ns),
                ];
                self.instant(now, cpu, format!("select_task_rq: {stage}"), args);
            }
            TraceEvent::Migrate {
                cpu,
                task,
                orig,
                dest,
                cause,
            } => {
                let t = self.tasks[task.idx()].clone();
                self.ftrace(
                    now,
                    cpu,
                    Event::SchedMigrateTask(proto::SchedMigrateTask {
                        comm: Some(t.comm),
                        pid: Some(t.pid),
                        prio: Some(t.prio),
                        orig_cpu: Some(orig as i32),
                        dest_cpu: Some(dest as i32),
                    }),
                );
                if cause == MigrateCause::Balance {
                    let args = vec![
                        arg_u("pid", t.pid as u64),
                        arg_u("orig_cpu", orig as u64),
                        arg_u("dest_cpu", dest as u64),
                    ];
                    self.instant(now, cpu, "load_balance: move".into(), args);
                }
            }
            TraceEvent::Idle { cpu, state } => {
                self.ftrace(
                    now,
                    cpu,
                    Event::CpuIdle(proto::CpuIdle {
                        state: Some(state.unwrap_or(proto::PWR_EVENT_EXIT)),
                        cpu_id: Some(cpu),
                    }),
                );
            }
            TraceEvent::Balance {
                cpu,
                moved,
                cost_ns,
            } => {
                let args = vec![arg_u("moved", moved as u64), arg_u("cost_ns", cost_ns)];
                self.instant(now, cpu, "load_balance".into(), args);
            }
            TraceEvent::NrRunning { cpu, n } => {
                let c = cpu as usize;
                if c < self.nr_running.len() && self.nr_running[c].0 != Some(n) {
                    self.nr_running[c] = (Some(n), n);
                    self.counter(now, UUID_NR_RUNNING + c as u64, n);
                }
            }
            TraceEvent::NrIdleScan { llc, n } => {
                let l = llc as usize;
                if l < self.nr_idle_scan.len() && self.nr_idle_scan[l].0 != Some(n) {
                    self.nr_idle_scan[l] = (Some(n), n);
                    self.counter(now, UUID_NR_IDLE_SCAN + l as u64, n);
                }
            }
        }
    }

    fn end(&mut self, _now: Nanos) {
        for c in 0..self.pending.len() {
            self.flush_cpu(c);
        }
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.flush() {
                self.error.get_or_insert(e);
            }
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl PerfettoWriter {
    fn track_descriptor(&mut self, ts: Nanos, uuid: u64, name: String, counter: bool) {
        self.track_packet(
            ts,
            Data::TrackDescriptor(proto::TrackDescriptor {
                uuid: Some(uuid),
                name: Some(name),
                counter: counter.then_some(proto::CounterDescriptor {
                    unit: Some(proto::UNIT_COUNT),
                }),
            }),
        );
    }
}

impl Drop for PerfettoWriter {
    fn drop(&mut self) {
        // not finished: no partial file is left
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
