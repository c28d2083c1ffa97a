//! hackbench as rt-tests defines it (src/hackbench/hackbench.c): G groups of F
//! receivers and F senders; every sender writes `loops` rounds of one
//! `datasize`-byte message to each receiver of its group.

use crate::SpecError;
use serde::Serialize;

/// hackbench parameters, with rt-tests' defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hackbench {
    /// `-g`: groups (10).
    pub groups: u32,
    /// `-f`: senders per group, also receivers per group (20).
    pub fds: u32,
    /// `-l`: messages each sender sends to each receiver (100).
    pub loops: u32,
    /// `-s`: bytes per message (100).
    pub datasize: u32,
    /// `-p`: pipes instead of unix stream sockets.
    pub pipe: bool,
    /// `-T`: threads instead of processes (`-P`).
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

impl Hackbench {
    /// rt-tests requires every value to be an integer > 0.
    pub fn validate(&self) -> Result<(), SpecError> {
        for (v, flag) in [
            (self.groups, "-g/--groups"),
            (self.fds, "-f/--fds"),
            (self.loops, "-l/--loops"),
            (self.datasize, "-s/--datasize"),
        ] {
            if v == 0 {
                return Err(SpecError {
                    flag,
                    problem: "must be an integer > 0".into(),
                });
            }
        }
        Ok(())
    }

    /// Tasks besides the main one: 2·F·G.
    pub fn tasks(&self) -> u64 {
        2 * self.fds as u64 * self.groups as u64
    }

    /// Messages in the whole run: G·F·F·loops.
    pub fn messages(&self) -> u64 {
        self.groups as u64 * self.fds as u64 * self.fds as u64 * self.loops as u64
    }

    /// Payload bytes in the whole run: G·F·F·loops·size.
    pub fn total_bytes(&self) -> u64 {
        self.messages() * self.datasize as u64
    }

    /// The two lines rt-tests prints before the run.
    pub fn header(&self) -> String {
        format!(
            "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\n\
             Each sender will pass {} messages of {} bytes\n",
            if self.threads { "threaded" } else { "process" },
            self.groups,
            2 * self.fds as u64,
            self.tasks(),
            self.loops,
            self.datasize
        )
    }

    /// rt-tests' last line for a measured span: `Time: %lu.%03lu`, the
    /// milliseconds truncated (not rounded). No trailing newline.
    pub fn time_line(span_ns: u64) -> String {
        let us = span_ns / 1000;
        format!("Time: {}.{:03}", us / 1_000_000, (us % 1_000_000) / 1000)
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
            "Running in threaded mode with 10 groups using 40 file descriptors each (== 400 tasks)\n\
             Each sender will pass 20000 messages of 100 bytes\n"
        );
        assert_eq!(h.messages(), 80_000_000);
        assert_eq!(h.total_bytes(), 8_000_000_000);
    }

    #[test]
    fn time_is_truncated_not_rounded() {
        assert_eq!(Hackbench::time_line(1_234_999_999), "Time: 1.234");
        assert_eq!(Hackbench::time_line(999_999), "Time: 0.000");
        assert_eq!(Hackbench::time_line(12_005_000_000), "Time: 12.005");
    }

    #[test]
    fn zero_values_are_rejected_naming_the_flag() {
        for (h, flag) in [
            (
                Hackbench {
                    groups: 0,
                    ..Default::default()
                },
                "-g/--groups",
            ),
            (
                Hackbench {
                    fds: 0,
                    ..Default::default()
                },
                "-f/--fds",
            ),
            (
                Hackbench {
                    loops: 0,
                    ..Default::default()
                },
                "-l/--loops",
            ),
            (
                Hackbench {
                    datasize: 0,
                    ..Default::default()
                },
                "-s/--datasize",
            ),
        ] {
            assert_eq!(h.validate().unwrap_err().flag, flag);
        }
        assert!(Hackbench::default().validate().is_ok());
    }
}
