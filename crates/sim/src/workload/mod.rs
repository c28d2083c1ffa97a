//! Workload models: they declare tasks and channels, say when the run stops,
//! and turn what the run recorded (marks, samples) into their report; they
//! never reach into the scheduler, and the engine never knows which
//! benchmark runs. Adding a benchmark is one new file here implementing
//! [`Workload`].

use crate::engine::Engine;
use crate::rq::RunQueue;
use crate::Nanos;
use serde_json::{Map, Value};

pub mod falseshare;
pub mod hackbench;
pub mod npb;
pub mod rtapp;
pub mod schbench;
pub mod spin;
pub mod tbench;

/// When a run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// When every task has exited.
    AllExited,
    /// At this simulated time, whatever is still running.
    At(Nanos),
}

/// What a run recorded, for a workload's report.
pub struct Record<'a> {
    marks: &'a [Option<Nanos>],
    samples: &'a [Vec<(Nanos, Nanos)>],
    sink: Option<&'a dyn crate::engine::MetricSink>,
    bins: &'a [Vec<crate::engine::Bin>],
    rows: &'a [crate::engine::PhaseRow],
    exec: Vec<Nanos>,
    place: Vec<crate::engine::TaskPlaceCounts>,
    forked: &'a [crate::task::TaskId],
    /// The names of the policy's own stages (`Placement::stage_names`).
    stage_names: &'static [&'static str],
    /// When the run ended.
    pub end: Nanos,
}

impl<'a> Record<'a> {
    /// The record of a finished engine.
    pub fn of<R: RunQueue>(e: &'a Engine<'_, R>) -> Record<'a> {
        Record {
            marks: e.marks(),
            samples: e.all_samples(),
            sink: e.metric_sink(),
            bins: e.all_bins(),
            rows: e.phase_rows(),
            exec: e.task_exec_ns(),
            place: e.task_place_counts(),
            forked: e.forked_tasks(),
            stage_names: e.k.pstats.stage_names,
            end: e.now(),
        }
    }

    /// A record of borrowed parts (the union of several guests' records,
    /// `crate::host::run`).
    pub(crate) fn from_parts(
        marks: &'a [Option<Nanos>],
        samples: &'a [Vec<(Nanos, Nanos)>],
        sink: Option<&'a dyn crate::engine::MetricSink>,
        bins: &'a [Vec<crate::engine::Bin>],
        end: Nanos,
    ) -> Record<'a> {
        Record {
            marks,
            samples,
            sink,
            bins,
            // per-task records (rt-app's) are not united across guests:
            // rt-app workloads do not run in guests (lab::vm refuses them)
            rows: &[],
            exec: Vec::new(),
            place: Vec::new(),
            forked: &[],
            stage_names: &[],
            end,
        }
    }

    /// Every mark slot.
    pub(crate) fn marks(&self) -> &'a [Option<Nanos>] {
        self.marks
    }

    /// Every metric's samples.
    pub(crate) fn all_samples(&self) -> &'a [Vec<(Nanos, Nanos)>] {
        self.samples
    }

    /// Every summarised metric's bins.
    pub(crate) fn all_bins(&self) -> &'a [Vec<crate::engine::Bin>] {
        self.bins
    }

    /// The time of mark `id`, if it was reached.
    pub fn mark(&self, id: u32) -> Option<Nanos> {
        self.marks.get(id as usize).copied().flatten()
    }

    /// The workload's metric sink (`Engine::set_metric_sink`), as its own
    /// type `T`.
    pub fn sink<T: 'static>(&self) -> Option<&'a T> {
        self.sink.and_then(|s| s.as_any().downcast_ref::<T>())
    }

    /// The raw samples of `metric`: (time recorded, value); empty for a
    /// metric that went to a sink (unless the engine was asked to keep
    /// them, `Engine::keep_samples`).
    pub fn samples(&self, metric: u8) -> &'a [(Nanos, Nanos)] {
        self.samples
            .get(metric as usize)
            .map_or(&[], |v| v.as_slice())
    }

    /// The phases rt-app threads logged (`Op::PhaseEnd`), in end order.
    pub fn phase_rows(&self) -> &'a [crate::engine::PhaseRow] {
        self.rows
    }

    /// The tasks `Op::Fork` started, in the order it started them.
    pub fn forked(&self) -> &'a [crate::task::TaskId] {
        self.forked
    }

    /// CPU time each task consumed (sum_exec_runtime), by task id.
    pub fn task_exec(&self, t: crate::task::TaskId) -> Nanos {
        self.exec.get(t.idx()).copied().unwrap_or(0)
    }

    /// The report name of a placement stage: the policy's own name for one
    /// of its stages ([`crate::placement::Stage::name_for`]).
    pub fn stage_name(&self, st: crate::placement::Stage) -> String {
        st.name_for(self.stage_names)
    }

    /// A task's placement counts (None unless the workload called
    /// `Engine::track_tasks`).
    pub fn task_place(&self, t: crate::task::TaskId) -> Option<&crate::engine::TaskPlaceCounts> {
        self.place.get(t.idx())
    }

    /// The interval summaries of a summarised `metric` (see
    /// `Engine::summarise_metric`).
    pub fn bins(&self, metric: u8) -> &'a [crate::engine::Bin] {
        self.bins.get(metric as usize).map_or(&[], |v| v.as_slice())
    }
}

/// A workload's report: the lines the real tool prints, and its own JSON
/// fields (merged into the run's record).
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Text, as the tool prints it.
    pub text: String,
    /// Fields added to `--json`.
    pub json: Map<String, Value>,
    /// The measured span, ns (hackbench's Time, the runtime of a timed run).
    pub time_ns: Nanos,
    /// Files the tool writes (name, content): rt-app's per-thread logs.
    pub files: Vec<(String, String)>,
}

/// A benchmark model.
pub trait Workload {
    /// The benchmark's name in reports.
    fn name(&self) -> &'static str;
    /// Declare tasks and channels; `first_cpu` is the first CPU the run
    /// may use.
    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, first_cpu: usize);
    /// When the run stops.
    fn stop(&self) -> Stop {
        Stop::AllExited
    }
    /// The report, from what the run recorded.
    fn report(&self, rec: &Record) -> Report;
}
