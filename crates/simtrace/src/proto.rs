//! The few messages of Perfetto's trace format this crate writes, as
//! hand-written `prost` messages: no `.proto` files and no code generation
//! (so no `protoc` at build time). Each message keeps the field numbers and
//! wire types of Perfetto's protos (Apache-2.0), in the files named on
//! each; fields this crate does not write are left out, which protobuf
//! allows (a reader skips nothing it does not know, and a missing field is
//! simply unset).
//!
//! The field numbers were checked against the generated bindings that the
//! `perfetto` Python package ships (`perfetto_trace_pb2`, v0.59), and
//! `scripts/check-trace.sh` decodes a written trace with those bindings.

/// `perfetto.protos.Trace` (protos/perfetto/trace/trace.proto): a file is a
/// sequence of field-1 packets, so a trace can be written one packet at a
/// time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// The packets.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket`
/// (protos/perfetto/trace/trace_packet.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Timestamp, ns, in the default clock (BOOTTIME).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// The writer's sequence (`optional_trusted_packet_sequence_id`).
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `SequenceFlags` (1: SEQ_INCREMENTAL_STATE_CLEARED).
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// The payload.
    #[prost(oneof = "Data", tags = "1, 2, 11, 60")]
    pub data: Option<Data>,
}

/// The `data` oneof of `TracePacket`, the members written here.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// Kernel events of one CPU.
    #[prost(message, tag = "1")]
    FtraceEvents(FtraceEventBundle),
    /// Processes and threads.
    #[prost(message, tag = "2")]
    ProcessTree(ProcessTree),
    /// An instant or counter value on a track.
    #[prost(message, tag = "11")]
    TrackEvent(TrackEvent),
    /// A track's definition.
    #[prost(message, tag = "60")]
    TrackDescriptor(TrackDescriptor),
}

/// `SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;

/// `perfetto.protos.FtraceEventBundle`
/// (protos/perfetto/trace/ftrace/ftrace_event_bundle.proto): the events of
/// one CPU, in time order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEventBundle {
    /// The CPU.
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    /// Its events.
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
}

/// `perfetto.protos.FtraceEvent`
/// (protos/perfetto/trace/ftrace/ftrace_event.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEvent {
    /// Timestamp, ns.
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    /// The pid of the task running on the CPU when the event fired.
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    /// The event.
    #[prost(oneof = "Event", tags = "4, 13, 17, 20, 114, 491")]
    pub event: Option<Event>,
}

/// The `event` oneof of `FtraceEvent`, the members written here.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Event {
    /// `sched/sched_switch`.
    #[prost(message, tag = "4")]
    SchedSwitch(SchedSwitch),
    /// `power/cpu_idle`.
    #[prost(message, tag = "13")]
    CpuIdle(CpuIdle),
    /// `sched/sched_wakeup`.
    #[prost(message, tag = "17")]
    SchedWakeup(SchedWakeup),
    /// `sched/sched_waking`.
    #[prost(message, tag = "20")]
    SchedWaking(SchedWakeup),
    /// `sched/sched_wakeup_new`.
    #[prost(message, tag = "114")]
    SchedWakeupNew(SchedWakeup),
    /// `sched/sched_migrate_task`.
    #[prost(message, tag = "491")]
    SchedMigrateTask(SchedMigrateTask),
}

/// `perfetto.protos.SchedSwitchFtraceEvent`
/// (protos/perfetto/trace/ftrace/sched.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedSwitch {
    /// comm of the task leaving.
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    /// Its pid.
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    /// Its prio.
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    /// Its state (TASK_REPORT bits).
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    /// comm of the task that runs next.
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    /// Its pid.
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    /// Its prio.
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// `perfetto.protos.SchedWakeupFtraceEvent` (and the `SchedWaking` and
/// `SchedWakeupNew` messages, which have the same fields;
/// protos/perfetto/trace/ftrace/sched.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedWakeup {
    /// comm of the task woken.
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    /// Its pid.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    /// Its prio.
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    /// Always 1 (the field the kernel dropped in 4.3).
    #[prost(int32, optional, tag = "4")]
    pub success: Option<i32>,
    /// The CPU it will run on (sched_waking: the CPU it last ran on).
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

/// `perfetto.protos.SchedMigrateTaskFtraceEvent`
/// (protos/perfetto/trace/ftrace/sched.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedMigrateTask {
    /// comm of the task moved.
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    /// Its pid.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    /// Its prio.
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    /// CPU before.
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    /// CPU after.
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

/// `perfetto.protos.CpuIdleFtraceEvent`
/// (protos/perfetto/trace/ftrace/power.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CpuIdle {
    /// The state entered; [`PWR_EVENT_EXIT`] when leaving idle.
    #[prost(uint32, optional, tag = "1")]
    pub state: Option<u32>,
    /// The CPU.
    #[prost(uint32, optional, tag = "2")]
    pub cpu_id: Option<u32>,
}

/// `PWR_EVENT_EXIT` (include/trace/events/power.h): `(u32)-1`.
pub const PWR_EVENT_EXIT: u32 = u32::MAX;

/// `perfetto.protos.ProcessTree` (protos/perfetto/trace/ps/process_tree.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessTree {
    /// Processes.
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<Process>,
    /// Threads.
    #[prost(message, repeated, tag = "2")]
    pub threads: Vec<Thread>,
}

/// `ProcessTree.Process`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Process {
    /// pid.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Parent pid.
    #[prost(int32, optional, tag = "2")]
    pub ppid: Option<i32>,
    /// Command line (its name here).
    #[prost(string, repeated, tag = "3")]
    pub cmdline: Vec<String>,
}

/// `ProcessTree.Thread`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Thread {
    /// tid.
    #[prost(int32, optional, tag = "1")]
    pub tid: Option<i32>,
    /// Name.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// Its process.
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
}

/// `perfetto.protos.TrackDescriptor`
/// (protos/perfetto/trace/track_event/track_descriptor.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// The track's id.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// Its name (`static_or_dynamic_name`).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// Set for a counter track.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `perfetto.protos.CounterDescriptor`
/// (protos/perfetto/trace/track_event/counter_descriptor.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `Unit` (2: UNIT_COUNT).
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
}

/// `CounterDescriptor.Unit.UNIT_COUNT`.
pub const UNIT_COUNT: i32 = 2;

/// `perfetto.protos.TrackEvent`
/// (protos/perfetto/trace/track_event/track_event.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `Type` ([`TYPE_INSTANT`], [`TYPE_COUNTER`]).
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// The track.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// Arguments.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// Categories.
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// Name (`name_field`).
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// A counter's value (`counter_value_field`).
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
}

/// `TrackEvent.Type.TYPE_INSTANT`.
pub const TYPE_INSTANT: i32 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const TYPE_COUNTER: i32 = 4;

/// `perfetto.protos.DebugAnnotation`
/// (protos/perfetto/trace/track_event/debug_annotation.proto): a named
/// argument.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// Name (`name_field`).
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// An unsigned value.
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    /// A string value.
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
}
