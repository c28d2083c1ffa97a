//! Reading a trace back: [`summarize`] decodes a file this crate wrote (or
//! any Perfetto trace made of the same packets) and counts its events, so
//! tests can hold a trace against the run's own counters.

use crate::proto::{self, Data, Event, Trace};
use prost::Message;
use std::collections::BTreeMap;

/// Event counts of a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Packets.
    pub packets: u64,
    /// `sched_switch` to a task of the workload (not idle, not a stopper).
    pub switches_to_task: u64,
    /// `sched_switch` to the idle task (pid 0).
    pub switches_to_idle: u64,
    /// `sched_switch` to a stopper thread (`migration/N`).
    pub switches_to_stopper: u64,
    /// `sched_waking`.
    pub waking: u64,
    /// `sched_wakeup`.
    pub wakeup: u64,
    /// `sched_wakeup_new`.
    pub wakeup_new: u64,
    /// `sched_migrate_task`.
    pub migrate: u64,
    /// `cpu_idle` entries (a state) and exits (`PWR_EVENT_EXIT`).
    pub idle_enter: u64,
    /// See `idle_enter`.
    pub idle_exit: u64,
    /// Placement instants by their `kind` argument (fork, wakeup).
    pub placements: BTreeMap<String, u64>,
    /// Fork placements whose target differs from the parent's CPU.
    pub fork_moves: u64,
    /// Delayed tasks woken where they were queued (`ttwu_runnable`
    /// instants: no placement).
    pub woken_in_place: u64,
    /// Placement instants by stage.
    pub stages: BTreeMap<String, u64>,
    /// Probes summed over the placement instants.
    pub probes: u64,
    /// Balancer instants that moved a task (`load_balance: move`).
    pub balance_moves: u64,
    /// Counter values written, by track name.
    pub counters: BTreeMap<String, u64>,
    /// Ftrace events per CPU.
    pub per_cpu: BTreeMap<u32, u64>,
    /// First and last ftrace timestamps, ns.
    pub first_ts: Option<u64>,
    /// See `first_ts`.
    pub last_ts: Option<u64>,
    /// A bundle's events out of time order (should be zero).
    pub out_of_order: u64,
}

/// Decode `bytes` as a Perfetto trace and count its events.
pub fn summarize(bytes: &[u8]) -> Result<Summary, prost::DecodeError> {
    let trace = Trace::decode(bytes)?;
    let mut s = Summary::default();
    let mut track_names = BTreeMap::new();
    // the stoppers are the processes named migration/N
    let mut stoppers = std::collections::BTreeSet::new();
    for p in &trace.packet {
        if let Some(Data::ProcessTree(t)) = &p.data {
            for pr in &t.processes {
                if pr
                    .cmdline
                    .first()
                    .is_some_and(|c| c.starts_with("migration/"))
                {
                    stoppers.insert(pr.pid.unwrap_or(-1));
                }
            }
        }
        if let Some(Data::TrackDescriptor(d)) = &p.data {
            track_names.insert(d.uuid.unwrap_or(0), d.name.clone().unwrap_or_default());
        }
    }
    for p in &trace.packet {
        s.packets += 1;
        match &p.data {
            Some(Data::FtraceEvents(b)) => {
                let cpu = b.cpu.unwrap_or(0);
                *s.per_cpu.entry(cpu).or_default() += b.event.len() as u64;
                let mut last = 0;
                for e in &b.event {
                    let ts = e.timestamp.unwrap_or(0);
                    if ts < last {
                        s.out_of_order += 1;
                    }
                    last = ts;
                    s.first_ts = Some(s.first_ts.map_or(ts, |f| f.min(ts)));
                    s.last_ts = Some(s.last_ts.map_or(ts, |l| l.max(ts)));
                    match &e.event {
                        Some(Event::SchedSwitch(w)) => {
                            let next = w.next_pid.unwrap_or(0);
                            if next == 0 {
                                s.switches_to_idle += 1;
                            } else if stoppers.contains(&next) {
                                s.switches_to_stopper += 1;
                            } else {
                                s.switches_to_task += 1;
                            }
                        }
                        Some(Event::SchedWaking(_)) => s.waking += 1,
                        Some(Event::SchedWakeup(_)) => s.wakeup += 1,
                        Some(Event::SchedWakeupNew(_)) => s.wakeup_new += 1,
                        Some(Event::SchedMigrateTask(_)) => s.migrate += 1,
                        Some(Event::CpuIdle(i)) => {
                            if i.state == Some(proto::PWR_EVENT_EXIT) {
                                s.idle_exit += 1;
                            } else {
                                s.idle_enter += 1;
                            }
                        }
                        None => {}
                    }
                }
            }
            Some(Data::TrackEvent(t)) => {
                let name = t.name.clone().unwrap_or_default();
                if t.r#type == Some(proto::TYPE_COUNTER) {
                    let track = track_names
                        .get(&t.track_uuid.unwrap_or(0))
                        .cloned()
                        .unwrap_or_default();
                    *s.counters.entry(track).or_default() += 1;
                } else if name.starts_with("ttwu_runnable") {
                    s.woken_in_place += 1;
                } else if name.starts_with("select_task_rq") {
                    let arg = |n: &str| {
                        t.debug_annotations
                            .iter()
                            .find(|a| a.name.as_deref() == Some(n))
                    };
                    let sv = |n: &str| {
                        arg(n)
                            .and_then(|a| a.string_value.clone())
                            .unwrap_or_default()
                    };
                    let uv = |n: &str| arg(n).and_then(|a| a.uint_value).unwrap_or(0);
                    let kind = sv("kind");
                    if kind == "fork" && uv("prev_cpu") != uv("target_cpu") {
                        s.fork_moves += 1;
                    }
                    *s.placements.entry(kind).or_default() += 1;
                    *s.stages.entry(sv("stage")).or_default() += 1;
                    s.probes += uv("probes");
                } else if name == "load_balance: move" {
                    s.balance_moves += 1;
                }
            }
            _ => {}
        }
    }
    Ok(s)
}
