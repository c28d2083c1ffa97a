//! The tracefs `trace` file (text format) of the scheduler events
//! sched_waking, sched_wakeup, sched_wakeup_new, sched_migrate_task and
//! sched_switch (include/trace/events/sched.h), and what it says about
//! placement: per wake-up the waker's CPU, the wakee's previous CPU and
//! the CPU chosen, where that is relative to the waker, and migrations.
//!
//! A line is `COMM-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS`, e.g.
//! `  foo-123 [001] d..2. 12.345678: sched_waking: comm=bar pid=7 prio=120 target_cpu=003`.
//! sched_waking fires in try_to_wake_up() on the waker's CPU before
//! select_task_rq() and names the task's current CPU (its previous CPU);
//! sched_wakeup names the CPU the task was put on; sched_wakeup_new does
//! the same for a new task (on the parent's CPU); sched_migrate_task gives
//! `orig_cpu` and `dest_cpu` of every set_task_cpu().

use serde::Serialize;
use std::collections::HashMap;
use topology::Topology;

/// One parsed event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// CPU that logged it.
    pub cpu: usize,
    /// Timestamp in microseconds.
    pub ts_us: u64,
    /// Event name.
    pub name: String,
    /// The event's `key=value` fields (comm values may hold spaces; they are
    /// read up to the next known key).
    pub fields: HashMap<String, String>,
}

impl Event {
    fn num(&self, k: &str) -> Option<usize> {
        self.fields.get(k)?.trim().parse().ok()
    }
}

/// Parse one line; comments, blank lines and other events give `None`.
pub fn parse_line(line: &str) -> Option<Event> {
    let l = line.trim_start();
    if l.is_empty() || l.starts_with('#') {
        return None;
    }
    // The CPU is the first "[NNN]" after the task name (a comm can hold
    // brackets, but not "] " followed by the flags and a timestamp ending
    // in ':' — take the last "[" before the first ": sched_").
    let ev_at = l.find(": sched_")?;
    let head = &l[..ev_at];
    let open = head.rfind('[')?;
    let close = open + head[open..].find(']')?;
    let cpu = head[open + 1..close].trim().parse().ok()?;
    let ts = head[close + 1..].split_whitespace().last()?;
    let ts_us = parse_ts(ts)?;
    let rest = &l[ev_at + 2..];
    let (name, body) = rest.split_once(':')?;
    Some(Event {
        cpu,
        ts_us,
        name: name.to_string(),
        fields: parse_fields(body),
    })
}

/// `12.345678` -> 12345678 µs.
fn parse_ts(s: &str) -> Option<u64> {
    let (a, b) = s.split_once('.')?;
    let us: String = b.chars().take(6).collect();
    let us = format!("{us:0<6}");
    Some(a.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?)
}

/// `comm=a b pid=7 prio=120 target_cpu=003` -> fields; a value runs to the
/// next ` key=` (so `comm` may hold spaces).
fn parse_fields(body: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let toks: Vec<&str> = body.split_whitespace().collect();
    let mut key: Option<String> = None;
    let mut val = String::new();
    for t in toks {
        if t == "==>" {
            continue;
        }
        match t.split_once('=') {
            Some((k, v))
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
            {
                if let Some(k0) = key.take() {
                    out.insert(k0, std::mem::take(&mut val));
                }
                key = Some(k.to_string());
                val = v.to_string();
            }
            _ => {
                if key.is_some() {
                    val.push(' ');
                    val.push_str(t);
                }
            }
        }
    }
    if let Some(k) = key {
        out.insert(k, val);
    }
    out
}

/// One wake-up as the trace shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Wakeup {
    /// The woken task.
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// The CPU that woke it (ran try_to_wake_up / wake_up_new_task).
    pub waker_cpu: usize,
    /// Its previous CPU (the parent's CPU for a new task).
    pub prev_cpu: usize,
    /// The CPU it was put on.
    pub chosen_cpu: usize,
    /// A new task (sched_wakeup_new).
    pub new_task: bool,
    /// Time of the wake-up, µs.
    pub ts_us: u64,
}

/// Everything the trace says about placement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceSummary {
    /// Wake-ups in trace order.
    pub wakeups: Vec<Wakeup>,
    /// sched_migrate_task events.
    pub migrations: u64,
    /// Those that were part of a wake-up (between sched_waking and sched_wakeup).
    pub wakeup_migrations: u64,
    /// sched_switch events.
    pub switches: u64,
}

/// Read a whole trace file.
pub fn analyse(text: &str) -> TraceSummary {
    let mut s = TraceSummary::default();
    // pid -> (waker cpu, prev cpu, ts)
    let mut waking: HashMap<u32, (usize, usize)> = HashMap::new();
    for ev in text.lines().filter_map(parse_line) {
        let pid = ev.num("pid").map(|p| p as u32);
        let comm = ev.fields.get("comm").cloned().unwrap_or_default();
        match ev.name.as_str() {
            "sched_waking" => {
                if let (Some(pid), Some(prev)) = (pid, ev.num("target_cpu")) {
                    waking.insert(pid, (ev.cpu, prev));
                }
            }
            "sched_wakeup" => {
                if let (Some(pid), Some(to)) = (pid, ev.num("target_cpu")) {
                    if let Some((waker, prev)) = waking.remove(&pid) {
                        s.wakeups.push(Wakeup {
                            pid,
                            comm,
                            waker_cpu: waker,
                            prev_cpu: prev,
                            chosen_cpu: to,
                            new_task: false,
                            ts_us: ev.ts_us,
                        });
                    }
                }
            }
            "sched_wakeup_new" => {
                if let (Some(pid), Some(to)) = (pid, ev.num("target_cpu")) {
                    s.wakeups.push(Wakeup {
                        pid,
                        comm,
                        waker_cpu: ev.cpu,
                        prev_cpu: ev.cpu,
                        chosen_cpu: to,
                        new_task: true,
                        ts_us: ev.ts_us,
                    });
                }
            }
            "sched_migrate_task" => {
                s.migrations += 1;
                if pid.is_some_and(|p| waking.contains_key(&p)) {
                    s.wakeup_migrations += 1;
                }
            }
            "sched_switch" => s.switches += 1,
            _ => {}
        }
    }
    s
}

/// Where a wakee landed relative to its waker's CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Locality {
    /// The waker's CPU.
    SameCpu,
    /// An SMT sibling of the waker's CPU.
    SameCore,
    /// Another core of the waker's cluster.
    SameCluster,
    /// Another CPU of the waker's LLC, outside its cluster.
    SameLlc,
    /// Outside the waker's LLC, in its node.
    OtherLlc,
    /// In another node.
    OtherNode,
}

impl Locality {
    /// All classes in order.
    pub const ALL: [Locality; 6] = [
        Locality::SameCpu,
        Locality::SameCore,
        Locality::SameCluster,
        Locality::SameLlc,
        Locality::OtherLlc,
        Locality::OtherNode,
    ];

    /// The class of `to` seen from `from` on `t`.
    pub fn of(t: &Topology, from: usize, to: usize) -> Locality {
        if from == to {
            Locality::SameCpu
        } else if t.smt_mask(from).test(to) {
            Locality::SameCore
        } else if t.cluster_mask(from).test(to) {
            Locality::SameCluster
        } else if t.llc_mask(from).test(to) {
            Locality::SameLlc
        } else if t.node_mask(from).test(to) {
            Locality::OtherLlc
        } else {
            Locality::OtherNode
        }
    }

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Locality::SameCpu => "same_cpu",
            Locality::SameCore => "same_core",
            Locality::SameCluster => "same_cluster",
            Locality::SameLlc => "same_llc",
            Locality::OtherLlc => "other_llc",
            Locality::OtherNode => "other_node",
        }
    }

    /// The simulator's `wake_locality` bucket (run.rs `WakeLocality`: a
    /// sibling counts as the same cluster, another node as another LLC).
    pub fn sim_bucket(self) -> usize {
        match self {
            Locality::SameCpu => 0,
            Locality::SameCore | Locality::SameCluster => 1,
            Locality::SameLlc => 2,
            Locality::OtherLlc | Locality::OtherNode => 3,
        }
    }
}

/// Wake-ups per locality class (task wake-ups only, or new tasks too).
pub fn locality_counts(t: &Topology, w: &[Wakeup], new_tasks: bool) -> [u64; 6] {
    let mut c = [0u64; 6];
    for x in w.iter().filter(|x| new_tasks || !x.new_task) {
        if x.waker_cpu < t.nr_cpus() && x.chosen_cpu < t.nr_cpus() {
            c[Locality::of(t, x.waker_cpu, x.chosen_cpu) as usize] += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from a 6.1 guest (kernel 6.1.0-57-cloud-amd64), trimmed.
    const TRACE: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 6/6   #P:8
#
#                                _-----=> irqs-off/BH-disabled
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
        schedlab-80      [000] d..2.    12.000100: sched_waking: comm=wakee pid=82 prio=120 target_cpu=003
        schedlab-80      [000] d..2.    12.000110: sched_migrate_task: comm=wakee pid=82 prio=120 orig_cpu=3 dest_cpu=5
        schedlab-80      [000] d..2.    12.000120: sched_wakeup: comm=wakee pid=82 prio=120 target_cpu=005
          <idle>-0       [005] d..2.    12.000130: sched_switch: prev_comm=swapper/5 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wakee pid x next_pid=82 next_prio=120
        schedlab-80      [000] d..2.    12.000200: sched_wakeup_new: comm=my thread pid=90 prio=120 target_cpu=006
     kworker/1:1-30      [001] d..2.    12.000300: sched_migrate_task: comm=x pid=31 prio=120 orig_cpu=1 dest_cpu=2
";

    #[test]
    fn events_parse() {
        let e = parse_line(TRACE.lines().nth(7).unwrap()).unwrap();
        assert_eq!(e.cpu, 0);
        assert_eq!(e.ts_us, 12_000_100);
        assert_eq!(e.name, "sched_waking");
        assert_eq!(e.fields["target_cpu"], "003");
        let new = parse_line(TRACE.lines().nth(11).unwrap()).unwrap();
        assert_eq!(new.fields["comm"], "my thread");
        assert!(parse_line("# comment").is_none());
    }

    #[test]
    fn wakeups_and_migrations() {
        let s = analyse(TRACE);
        assert_eq!(s.wakeups.len(), 2);
        let w = &s.wakeups[0];
        assert_eq!(
            (w.pid, w.waker_cpu, w.prev_cpu, w.chosen_cpu),
            (82, 0, 3, 5)
        );
        assert!(!w.new_task);
        let n = &s.wakeups[1];
        assert_eq!((n.waker_cpu, n.chosen_cpu, n.new_task), (0, 6, true));
        assert_eq!(s.migrations, 2);
        assert_eq!(s.wakeup_migrations, 1);
        assert_eq!(s.switches, 1);
    }

    #[test]
    fn locality_classes() {
        let t = topology::machine("smp:sockets=2,cores=2,threads=2,nodes=2").unwrap();
        assert_eq!(Locality::of(&t, 0, 0), Locality::SameCpu);
        assert_eq!(Locality::of(&t, 0, 1), Locality::SameCore);
        assert_eq!(Locality::of(&t, 0, 2), Locality::SameLlc);
        assert_eq!(Locality::of(&t, 0, 5), Locality::OtherNode);
        let s = analyse(TRACE);
        let c = locality_counts(&t, &s.wakeups, true);
        assert_eq!(c[Locality::OtherNode as usize], 2);
    }
}
