//! A compute-only workload: `tasks` CPU-bound tasks, each running `work_ns`
//! of user code and exiting, all started on one CPU (the first allowed) as
//! they are, without fork placement. Nothing ever wakes them, so only the
//! load balancer can spread them: the workload that shows whether (and how
//! fast) the balancer fills an idle machine.
//!
//! ```
//! use sim::run::{simulate_spin, SimOptions};
//! use sim::workload::spin::Spin;
//! let topo = topology::preset("kvm-8vcpu").unwrap();
//! let r = simulate_spin(&topo, &Spin { tasks: 16, work_ns: 20_000_000, mem_mib: 0 }, &SimOptions::default()).unwrap();
//! // 16 tasks of 20 ms on 8 CPUs: about 40 ms once spread
//! assert!(r.time_ns < 80_000_000);
//! ```

use crate::engine::Engine;
use crate::rq::RunQueue;
use crate::task::{Op, TaskSpec};
use serde::Serialize;

/// Mark slot of the start time (when the first task runs).
pub const MARK_START: u32 = 0;

/// The compute-only workload.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Spin {
    /// Number of tasks.
    pub tasks: u32,
    /// User work of each task, ns at full speed.
    pub work_ns: u64,
    /// Memory each task streams, MiB (0: none): a private array, written
    /// whole where the task first runs, then read an eighth at a time in
    /// steps of about 10 ms of work (`Op::ComputeMem`), so memory placement
    /// and NUMA balancing apply.
    pub mem_mib: u64,
}

/// Work per memory step, ns.
const STEP_NS: u64 = 10_000_000;

/// Declare the tasks in `e`, all starting on `cpu`.
pub fn build<R: RunQueue>(s: &Spin, cpu: usize, e: &mut Engine<'_, R>) {
    for i in 0..s.tasks {
        let mut program = Vec::with_capacity(3);
        if i == 0 {
            program.push(Op::Mark(MARK_START));
        }
        if s.mem_mib == 0 {
            program.push(Op::Compute(s.work_ns));
        } else {
            let bytes = s.mem_mib << 20;
            let r = e.add_region(i + 1, "array", bytes);
            let eighth = bytes / 8;
            // the array is written once where the task first runs (its
            // initialisation), then read an eighth at a time
            let all = e.add_access(&[crate::numa::Span {
                region: r,
                offset: 0,
                len: bytes,
                bytes,
                sweeps: 1,
            }]);
            program.push(Op::ComputeMem {
                work: 0,
                access: all,
            });
            let loops = s.work_ns.div_ceil(8 * STEP_NS).max(1);
            let work = s.work_ns / (8 * loops);
            program.push(Op::Loop(loops.min(u32::MAX as u64) as u32));
            for k in 0..8 {
                let access = e.add_access(&[crate::numa::Span {
                    region: r,
                    offset: k * eighth,
                    len: eighth.max(1),
                    bytes: eighth,
                    sweeps: 1,
                }]);
                program.push(Op::ComputeMem { work, access });
            }
            program.push(Op::EndLoop);
        }
        program.push(Op::Exit);
        e.add_task(TaskSpec {
            name: format!("spin{i}"),
            program: program.into(),
            mm: i + 1,
            parent: None,
            spawned: false,
            start_cpu: Some(cpu),
            nice: 0,
            footprint_lines: 0,
        });
    }
}

impl super::Workload for Spin {
    fn name(&self) -> &'static str {
        "spin"
    }

    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, first_cpu: usize) {
        build(self, first_cpu, e);
    }

    /// Time from the first task's start until the last one exits.
    fn report(&self, rec: &super::Record) -> super::Report {
        let time_ns = rec.end - rec.mark(MARK_START).unwrap_or(0);
        super::Report {
            files: Vec::new(),
            text: format!(
                "{} compute-only tasks of {} ms{} started on one CPU\nTime: {:.3}\n",
                self.tasks,
                self.work_ns / 1_000_000,
                if self.mem_mib > 0 {
                    format!(" streaming {} MiB each", self.mem_mib)
                } else {
                    String::new()
                },
                time_ns as f64 / 1e9
            ),
            json: Default::default(),
            time_ns,
        }
    }
}
