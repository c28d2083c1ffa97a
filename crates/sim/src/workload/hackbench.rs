//! hackbench with rt-tests semantics (benchmarks.md §1.1): G groups of F
//! receivers and F senders; each receiver owns one channel (unix stream
//! socket, or pipe with `-p`) that all F senders of its group write to; every
//! sender writes `loops` rounds of one message to each receiver; a receiver
//! reads F*loops messages. Start protocol: each task writes one byte to the
//! "ready" channel and polls the "wake" channel; the main task reads one byte
//! per child, takes the start time, writes the wake byte (a thundering herd),
//! then reaps every child and takes the stop time.

use crate::channel::ChanKind;
use crate::engine::Engine;
use crate::task::{Op, TaskSpec};
use thiserror::Error;

/// Mark slot of the start time.
pub const MARK_START: u32 = 0;
/// Mark slot of the stop time.
pub const MARK_STOP: u32 = 1;

/// hackbench parameters (rt-tests flags).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Hackbench {
    /// -g: groups.
    pub groups: u32,
    /// -f: senders (and receivers) per group.
    pub fds: u32,
    /// -l: loops.
    pub loops: u32,
    /// -s: bytes per message.
    pub datasize: u32,
    /// -p: pipes instead of unix sockets.
    pub pipe: bool,
    /// -T: threads instead of processes.
    pub threads: bool,
}

impl Default for Hackbench {
    fn default() -> Self {
        Hackbench {
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            pipe: false,
            threads: false,
        }
    }
}

/// A bad hackbench parameter.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum HackbenchError {
    /// A count that must be positive is zero.
    #[error("{0} must be an integer > 0")]
    Zero(&'static str),
    /// The run would be unreasonably large.
    #[error("{0}")]
    TooLarge(String),
}

impl Hackbench {
    /// Check the parameters as rt-tests does (every value > 0).
    pub fn validate(&self) -> Result<(), HackbenchError> {
        for (v, n) in [
            (self.groups, "-g/--groups"),
            (self.fds, "-f/--fds"),
            (self.loops, "-l/--loops"),
            (self.datasize, "-s/--datasize"),
        ] {
            if v == 0 {
                return Err(HackbenchError::Zero(n));
            }
        }
        let tasks = self.groups as u64 * self.fds as u64 * 2;
        if tasks > 1_000_000 {
            return Err(HackbenchError::TooLarge(format!(
                "{tasks} tasks is more than the simulator supports (1000000)"
            )));
        }
        Ok(())
    }

    /// Total tasks excluding the main task.
    pub fn tasks(&self) -> u32 {
        self.groups * self.fds * 2
    }

    /// Total payload bytes: G * F * F * loops * size.
    pub fn total_bytes(&self) -> u64 {
        self.groups as u64
            * self.fds as u64
            * self.fds as u64
            * self.loops as u64
            * self.datasize as u64
    }

    /// Declare the tasks and channels in `e`.
    pub fn build(&self, e: &mut Engine) {
        let kind = if self.pipe {
            ChanKind::Pipe
        } else {
            ChanKind::UnixStream
        };
        let ready = e.add_channel(kind, false);
        let wake = e.add_channel(kind, false);
        let n = self.tasks();
        let main_id = 0u32;
        // The main task's program refers to children by id: children are
        // declared right after it, so child i has id i + 1.
        let mut main_prog = Vec::new();
        for i in 0..n {
            main_prog.push(Op::Spawn { child: i + 1 });
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
        if self.threads {
            for i in 0..n {
                main_prog.push(Op::Join { task: i + 1 });
            }
        } else {
            main_prog.extend([Op::Loop(n), Op::WaitChild, Op::EndLoop]);
        }
        main_prog.push(Op::Mark(MARK_STOP));
        main_prog.push(Op::Exit);
        let footprint = self.datasize.div_ceil(64);
        let id = e.add_task(TaskSpec {
            name: "hackbench".into(),
            program: main_prog,
            mm: 0,
            parent: None,
            spawned: false,
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
        for g in 0..self.groups {
            let chans: Vec<_> = (0..self.fds).map(|_| e.add_channel(kind, true)).collect();
            for (r, &ch) in chans.iter().enumerate() {
                let mut p = start.to_vec();
                p.extend([
                    Op::Loop(self.fds * self.loops),
                    Op::Read {
                        chan: ch,
                        bytes: self.datasize,
                    },
                    Op::EndLoop,
                    Op::Exit,
                ]);
                e.add_task(TaskSpec {
                    name: format!("receiver-{g}-{r}"),
                    program: p,
                    mm: mm(self.threads),
                    parent: Some(main_id),
                    spawned: true,
                    nice: 0,
                    footprint_lines: footprint,
                });
            }
            for s in 0..self.fds {
                let mut p = start.to_vec();
                p.push(Op::Loop(self.loops));
                p.extend(chans.iter().map(|&ch| Op::Write {
                    chan: ch,
                    bytes: self.datasize,
                }));
                p.extend([Op::EndLoop, Op::Exit]);
                e.add_task(TaskSpec {
                    name: format!("sender-{g}-{s}"),
                    program: p,
                    mm: mm(self.threads),
                    parent: Some(main_id),
                    spawned: true,
                    nice: 0,
                    footprint_lines: footprint,
                });
            }
        }
    }

    /// The two start-up lines rt-tests prints.
    pub fn header(&self) -> String {
        format!(
            "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\nEach sender will pass {} messages of {} bytes\n",
            if self.threads { "threaded" } else { "process" },
            self.groups,
            2 * self.fds,
            self.tasks(),
            self.loops,
            self.datasize
        )
    }

    /// The `Time:` line for a measured span: seconds and truncated ms.
    pub fn time_line(span_ns: u64) -> String {
        let us = span_ns / 1000;
        format!("Time: {}.{:03}\n", us / 1_000_000, (us % 1_000_000) / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_matches_rt_tests() {
        let h = Hackbench {
            groups: 10,
            loops: 20000,
            threads: true,
            ..Default::default()
        };
        assert_eq!(
            h.header(),
            "Running in threaded mode with 10 groups using 40 file descriptors each (== 400 tasks)\nEach sender will pass 20000 messages of 100 bytes\n"
        );
    }

    #[test]
    fn time_is_truncated_not_rounded() {
        assert_eq!(Hackbench::time_line(1_234_999_999), "Time: 1.234\n");
        assert_eq!(Hackbench::time_line(999_999), "Time: 0.000\n");
        assert_eq!(Hackbench::time_line(12_005_000_000), "Time: 12.005\n");
    }

    #[test]
    fn zero_values_are_rejected() {
        let h = Hackbench {
            groups: 0,
            ..Default::default()
        };
        assert_eq!(h.validate(), Err(HackbenchError::Zero("-g/--groups")));
    }
}
