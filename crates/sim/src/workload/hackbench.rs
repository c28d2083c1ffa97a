//! hackbench with rt-tests semantics (rt-tests `src/hackbench/hackbench.c`,
//! git.kernel.org/pub/scm/utils/rt-tests/rt-tests.git, read at the
//! woodsts/rt-tests mirror and jlelli/rt-tests @857cdd5, v0.84): G groups of
//! F receivers and F senders; each receiver owns one channel (unix stream
//! socket, or pipe with `-p`) that all F senders of its group write to; every
//! sender writes `loops` rounds of one message to each receiver; a receiver
//! reads F*loops messages. Start protocol: each task writes one byte to the
//! "ready" channel and polls the "wake" channel; the main task reads one byte
//! per child, takes the start time, writes the wake byte (a thundering herd),
//! then reaps every child and takes the stop time.

use crate::channel::ChanKind;
use crate::engine::Engine;
use crate::rq::RunQueue;
use crate::task::{Op, TaskId, TaskSpec};
pub use benchspec::hackbench::Hackbench;

/// Mark slot of the start time.
pub const MARK_START: u32 = 0;
/// Mark slot of the stop time.
pub const MARK_STOP: u32 = 1;

/// Declare hackbench's tasks and channels in `e`.
pub fn build<R: RunQueue>(hb: &Hackbench, e: &mut Engine<'_, R>) {
    let this = hb;
    let n = this.tasks() as u32;
    let kind = if this.pipe {
        ChanKind::Pipe
    } else {
        ChanKind::UnixStream
    };
    let ready = e.add_channel(kind, false);
    let wake = e.add_channel(kind, false);
    let main_id = TaskId(0);
    // The main task's program refers to children by id: children are
    // declared right after it, so child i has id i + 1.
    let mut main_prog = Vec::new();
    for i in 0..n {
        main_prog.push(Op::Spawn {
            child: TaskId(i + 1),
        });
    }
    main_prog.extend([
        Op::Loop(n),
        Op::Read {
            chan: ready,
            bytes: 1,
        },
        Op::EndLoop,
    ]);
    main_prog.push(Op::Mark(MARK_START));
    main_prog.push(Op::Write {
        chan: wake,
        bytes: 1,
    });
    if this.threads {
        for i in 0..n {
            main_prog.push(Op::Join {
                task: TaskId(i + 1),
            });
        }
    } else {
        main_prog.extend([Op::Loop(n), Op::WaitChild, Op::EndLoop]);
    }
    main_prog.push(Op::Mark(MARK_STOP));
    main_prog.push(Op::Exit);
    let footprint = this.datasize.div_ceil(64);
    let id = e.add_task(TaskSpec {
        name: "hackbench".into(),
        program: main_prog.into(),
        mm: 0,
        parent: None,
        spawned: false,
        start_cpu: None,
        nice: 0,
        footprint_lines: footprint,
    });
    debug_assert_eq!(id, main_id);
    let mut next_mm = 1;
    let mut mm = |threads: bool| {
        if threads {
            0
        } else {
            next_mm += 1;
            next_mm - 1
        }
    };
    let start = [
        Op::Write {
            chan: ready,
            bytes: 1,
        },
        Op::Poll { chan: wake },
    ];
    for g in 0..this.groups {
        let chans: Vec<_> = (0..this.fds).map(|_| e.add_channel(kind, true)).collect();
        for (r, &ch) in chans.iter().enumerate() {
            let mut p = start.to_vec();
            let read = Op::Read {
                chan: ch,
                bytes: this.datasize,
            };
            match this.fds.checked_mul(this.loops) {
                Some(n) => p.extend([Op::Loop(n), read, Op::EndLoop]),
                // F x loops reads do not fit one loop count: loops of F
                None => p.extend([
                    Op::Loop(this.loops),
                    Op::Loop(this.fds),
                    read,
                    Op::EndLoop,
                    Op::EndLoop,
                ]),
            }
            p.push(Op::Exit);
            e.add_task(TaskSpec {
                name: format!("receiver-{g}-{r}"),
                program: p.into(),
                mm: mm(this.threads),
                parent: Some(main_id),
                spawned: true,
                start_cpu: None,
                nice: 0,
                footprint_lines: footprint,
            });
        }
        // every sender of the group runs this one program (it names all
        // the group's channels: one copy per sender would be F x F ops)
        let mut p = start.to_vec();
        p.push(Op::Loop(this.loops));
        p.extend(chans.iter().map(|&ch| Op::Write {
            chan: ch,
            bytes: this.datasize,
        }));
        p.extend([Op::EndLoop, Op::Exit]);
        let sender: crate::task::Program = p.into();
        for s in 0..this.fds {
            e.add_task(TaskSpec {
                name: format!("sender-{g}-{s}"),
                program: sender.clone(),
                mm: mm(this.threads),
                parent: Some(main_id),
                spawned: true,
                start_cpu: None,
                nice: 0,
                footprint_lines: footprint,
            });
        }
    }
}

impl super::Workload for Hackbench {
    fn name(&self) -> &'static str {
        "hackbench"
    }

    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, _first_cpu: usize) {
        build(self, e);
    }

    /// rt-tests' two lines of parameters, then `Time:` (start mark to stop
    /// mark, truncated to ms).
    fn report(&self, rec: &super::Record) -> super::Report {
        let start = rec.mark(MARK_START).unwrap_or(0);
        let stop = rec.mark(MARK_STOP).unwrap_or(rec.end);
        let time_ns = stop - start;
        super::Report {
            files: Vec::new(),
            text: format!("{}{}\n", self.header(), Hackbench::time_line(time_ns)),
            json: Default::default(),
            time_ns,
        }
    }
}
