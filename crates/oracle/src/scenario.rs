//! Placement scenarios: a machine state shaped by pinned busy loops, a
//! waker on a chosen CPU and a wakee whose previous CPU is chosen, each
//! aimed at one stage of the Linux wake-up path (kernel/sched/fair.c,
//! `select_task_rq_fair` -> `wake_affine` / `select_idle_sibling` /
//! `find_idlest_cpu`, as of 6.1). The same [`Setup`] is run natively in a
//! guest ([`crate::runner`]) and by the simulator's wake-up path
//! ([`crate::probe`]).
//!
//! CPUs are the guest's (the machine [`crate::qemu::QemuShape`] boots).

use crate::error::OracleError;
use serde::Serialize;
use topology::Topology;

/// How the waker wakes the wakee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wake {
    /// FUTEX_WAKE (an ordinary try_to_wake_up, no WF_SYNC).
    Futex,
    /// A write to a pipe the wakee reads (pipe_write wakes with WF_SYNC).
    Pipe,
    /// The waker creates the wakee (clone: wake_up_new_task, WF_FORK).
    Fork,
}

impl Wake {
    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Wake::Futex => "futex",
            Wake::Pipe => "pipe",
            Wake::Fork => "fork",
        }
    }
    /// From a name.
    pub fn from_name(s: &str) -> Option<Wake> {
        [Wake::Futex, Wake::Pipe, Wake::Fork]
            .into_iter()
            .find(|w| w.name() == s)
    }
}

/// One scenario on one machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Setup {
    /// Scenario name.
    pub name: String,
    /// CPUs running a pinned busy loop.
    pub busy: Vec<usize>,
    /// The waker's CPU (it runs there, pinned, when it wakes).
    pub waker: usize,
    /// The wakee's previous CPU (the parent's CPU for a fork).
    pub prev: usize,
    /// The wakee's `recent_used_cpu`, if set up: its wake-up before each
    /// round has this CPU (then busy) as prev.
    pub recent: Option<usize>,
    /// Wake-ups the waker and the wakee each make, alternating between two
    /// sleeping partners, just before every round (raising their
    /// `wakee_flips` for wake_wide), if any.
    pub flips: Option<(u32, u32)>,
    /// How the wake-up is made.
    pub wake: Wake,
}

/// The scenarios: name, the wake-up stage each aims at, and its shape.
pub const SCENARIOS: &[(&str, &str, &str)] = &[
    ("target-idle", "target_idle", "nothing busy; futex wake from CPU 0 of a task whose previous CPU is another core of the same LLC: wake_affine_idle keeps prev, which is idle"),
    ("prev-idle", "prev_idle", "as target-idle but a pipe (WF_SYNC) wake: the target is the waker's CPU, busy; prev is idle and shares the LLC"),
    ("recent-used", "recent_used_cpu", "prev busy (a busy loop), the waker's CPU busy; the wakee's wake-up before had prev = R (then busy), the last core of the LLC, idle now: recent_used_cpu = R, while an idle scan would find an earlier core"),
    ("idle-core", "idle_core", "SMT: one thread of every core of the first LLC busy except one whole idle core; waker on CPU 0, prev its busy sibling: select_idle_core finds the idle core"),
    ("idle-cpu-llc", "idle_cpu_in_llc", "one thread of every core of the first LLC busy (no idle core; without SMT every other CPU): the scan takes an idle CPU"),
    ("wake-affine-sync", "wake_affine (this_cpu)", "pipe (WF_SYNC) wake from CPU 0 of a task whose idle prev is in another LLC: wake_affine_idle picks the waker's CPU, select_idle_sibling an idle CPU of its LLC"),
    ("wake-affine-prev", "wake_affine (prev)", "futex wake from CPU 0 of a task whose idle prev is in another LLC: wake_affine_idle keeps prev"),
    ("wake-wide", "wake_wide", "as wake-affine-sync, but the waker has just woken two partners in turn many times and the wakee a few: wake_wide() turns wake_affine off and the wakee stays by prev"),
    ("fork", "slow_path", "CPU 0 creates a thread while every other CPU of its LLC is busy: find_idlest_cpu (SD_BALANCE_FORK) takes an idle CPU elsewhere"),
];

/// The names, for messages.
pub fn names() -> String {
    SCENARIOS.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
}

fn unfit(name: &str, t: &Topology, why: &str) -> OracleError {
    OracleError::Arg {
        flag: format!("scenario {name}"),
        why: format!("needs {why}; {} has not", t.name()),
    }
}

/// The cores of CPU 0's LLC, each as its CPUs, ordered by first CPU.
fn llc0_cores(t: &Topology) -> Vec<Vec<usize>> {
    let llc = t.llc_mask(0);
    let mut cores: Vec<Vec<usize>> = (0..t.nr_cores())
        .map(|c| t.core_cpus(c).iter().collect::<Vec<_>>())
        .filter(|c| c.iter().all(|&x| llc.test(x)))
        .collect();
    cores.sort();
    cores
}

/// The first CPU outside CPU 0's LLC (preferring another node).
fn remote_cpu(t: &Topology) -> Option<usize> {
    let llc = t.llc_mask(0);
    let node = t.node_mask(0);
    (0..t.nr_cpus())
        .find(|&c| !node.test(c))
        .or_else(|| (0..t.nr_cpus()).find(|&c| !llc.test(c)))
}

/// The setup of scenario `name` on `t`.
pub fn setup(name: &str, t: &Topology) -> Result<Setup, OracleError> {
    let cores = llc0_cores(t);
    let smt = t.threads_per_core() > 1;
    let mk = |busy: Vec<usize>, waker, prev, recent, wake| Setup {
        name: name.to_string(),
        busy,
        waker,
        prev,
        recent,
        flips: None,
        wake,
    };
    if cores.len() < 2 {
        return Err(unfit(name, t, "at least two cores in CPU 0's LLC"));
    }
    let other_core = cores[1][0];
    Ok(match name {
        "target-idle" => mk(vec![], 0, other_core, None, Wake::Futex),
        "prev-idle" => mk(vec![], 0, other_core, None, Wake::Pipe),
        "recent-used" => {
            if cores.len() < 3 {
                return Err(unfit(name, t, "three cores in CPU 0's LLC"));
            }
            let prev = cores[1][0];
            // the last core: an idle scan from the target would reach
            // another idle core first, so only recent_used_cpu picks it
            let recent = cores[cores.len() - 1][0];
            mk(vec![prev], 0, prev, Some(recent), Wake::Futex)
        }
        "idle-core" => {
            if !smt || cores.len() < 3 {
                return Err(unfit(name, t, "SMT and three cores in CPU 0's LLC"));
            }
            // core 0: waker on CPU 0, busy loop on its sibling (prev);
            // every other core but the last: its first thread busy.
            let last = cores.len() - 1;
            let mut busy = vec![cores[0][1]];
            busy.extend(cores[1..last].iter().map(|c| c[0]));
            mk(busy, 0, cores[0][1], None, Wake::Futex)
        }
        "idle-cpu-llc" => {
            let busy: Vec<usize> = if smt {
                let mut b = vec![cores[0][1]];
                b.extend(cores[1..].iter().map(|c| c[0]));
                b
            } else {
                cores.iter().skip(1).step_by(2).map(|c| c[0]).collect()
            };
            let prev = busy[0];
            mk(busy, 0, prev, None, Wake::Futex)
        }
        "wake-affine-sync" | "wake-affine-prev" => {
            let prev = remote_cpu(t).ok_or_else(|| unfit(name, t, "more than one LLC"))?;
            let wake = if name == "wake-affine-sync" {
                Wake::Pipe
            } else {
                Wake::Futex
            };
            mk(vec![], 0, prev, None, wake)
        }
        "wake-wide" => {
            let prev = remote_cpu(t).ok_or_else(|| unfit(name, t, "more than one LLC"))?;
            // wake_wide needs the wakee's flips >= sd_llc_size and the
            // waker's >= that times sd_llc_size; record_wakee halves them
            // at most once a second, so both are made with room to spare.
            let llc = t.llc_mask(0).weight() as u32;
            let wakee = 4 * llc;
            let waker = 2 * wakee * llc + 64;
            Setup {
                flips: Some((waker, wakee)),
                ..mk(vec![], 0, prev, None, Wake::Pipe)
            }
        }
        "fork" => {
            let busy: Vec<usize> = t.llc_mask(0).iter().filter(|&c| c != 0).collect();
            mk(busy, 0, 0, None, Wake::Fork)
        }
        _ => {
            return Err(OracleError::Arg {
                flag: "scenario".into(),
                why: format!("unknown scenario {name:?} (valid: {})", names()),
            })
        }
    })
}

/// The class of a CPU in a setup, for comparing choices that are not
/// unique: what it was doing (busy, the waker's, idle in a wholly idle
/// core, or idle beside a busy sibling) and where it is from the waker's
/// CPU (the locality classes of [`crate::trace::Locality`]). Two idle
/// cores of another LLC are the same class; which of them the kernel takes
/// depends on state the scenario does not set (idle timestamps, the scan's
/// starting point after earlier wake-ups).
pub fn cpu_class(t: &Topology, s: &Setup, cpu: usize) -> String {
    if cpu >= t.nr_cpus() {
        return format!("cpu{cpu}?");
    }
    let busy = |c: usize| s.busy.contains(&c) || c == s.waker;
    let what = if cpu == s.waker {
        "waker's CPU"
    } else if busy(cpu) {
        "busy CPU"
    } else if t.smt_mask(cpu).iter().all(|c| !busy(c)) {
        "idle core"
    } else {
        "idle CPU, busy sibling"
    };
    let whence = crate::trace::Locality::of(t, s.waker, cpu).name();
    format!("{what}, {whence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xeon() -> Topology {
        topology::machine("smp:sockets=2,cores=6,threads=2,nodes=2,slit=10:20/20:10").unwrap()
    }

    #[test]
    fn idle_core_leaves_one_core_idle() {
        let t = xeon();
        let s = setup("idle-core", &t).unwrap();
        // cores of LLC 0: {0,1},{2,3},...,{10,11}; busy 1, 2, 4, 6, 8; core {10,11} idle
        assert_eq!(s.busy, vec![1, 2, 4, 6, 8]);
        assert_eq!((s.waker, s.prev), (0, 1));
        assert_eq!(cpu_class(&t, &s, 10), "idle core, same_llc");
        assert_eq!(cpu_class(&t, &s, 3), "idle CPU, busy sibling, same_llc");
        assert_eq!(cpu_class(&t, &s, 0), "waker's CPU, same_cpu");
        assert_eq!(cpu_class(&t, &s, 13), "idle core, other_node");
    }

    #[test]
    fn every_scenario_fits_the_xeon() {
        let t = xeon();
        for (n, _, _) in SCENARIOS {
            let s = setup(n, &t).unwrap();
            assert!(s.waker < 24 && s.prev < 24);
        }
        assert_eq!(setup("wake-affine-prev", &t).unwrap().prev, 12);
        assert!(setup("nope", &t).is_err());
    }

    #[test]
    fn idle_core_needs_smt() {
        let t = topology::preset("kvm-8vcpu").unwrap();
        let e = setup("idle-core", &t).unwrap_err().to_string();
        assert!(e.contains("needs SMT"), "{e}");
    }
}
