//! schbench as the 2023+ rework defines it (schbench.c): `M` message
//! threads each serve `T` worker threads; a worker's request is a wake-up
//! by its message thread, a sleep, and matrix multiplications under a
//! per-CPU lock. This module holds the parameters with schbench's
//! defaults, their validation, the JSON summaries and every line schbench
//! prints, so a simulated run and a native run report alike.
//!
//! It also formats the single latency table of the old schbench (the
//! spinning 2016-2019 versions), for a model of that version.

use crate::plat::Plat;
use crate::SpecError;
use serde::Serialize;

/// The percentiles schbench computes for every table (its `plist`).
pub const PCTS: [f64; 5] = [20.0, 50.0, 90.0, 99.0, 99.9];
/// The rows of a latency table; 99.0 carries the star.
pub const LAT_PCTS: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
/// The rows of the requests-per-second table; 50.0 carries the star.
pub const RPS_PCTS: [f64; 3] = [20.0, 50.0, 90.0];
/// The rows of the old schbench's table; 99.0 carries the star.
pub const OLD_PCTS: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9];

/// schbench parameters, with the new schbench's defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Schbench {
    /// `-m`: message threads (1).
    pub message_threads: u32,
    /// `-t`: workers per message thread; `None` means `ceil(nprocs / M)`.
    pub worker_threads: Option<u32>,
    /// `-r`: seconds to run (30); 0 runs until interrupted.
    pub runtime: u32,
    /// `-s`: microseconds each request sleeps (100).
    pub sleep_usec: u32,
    /// `-F`: cache footprint of the matrices in KB (256).
    pub footprint_kb: u32,
    /// `-n`: matrix multiplications per request (5).
    pub operations: u32,
    /// `-w`: warm-up seconds after which the statistics are zeroed once
    /// (0; forced to 0 when the runtime is under 30 s and in RPS mode).
    pub warmup: u32,
    /// `-i`: seconds between interval reports (10); 0 disables them.
    pub interval: u32,
    /// `-z`: zero the statistics every this many seconds (0: never).
    pub zerotime: u32,
    /// `-R`: requests per second over all message threads (0: closed loop).
    pub rps: u32,
    /// `-L`: no per-CPU lock around the math.
    pub no_locking: bool,
    /// `-C`: calibrate: implies `-L` and sleeps before the request clock
    /// starts, so the request time is the math alone.
    pub calibrate: bool,
}

impl Default for Schbench {
    fn default() -> Self {
        Schbench {
            message_threads: 1,
            worker_threads: None,
            runtime: 30,
            sleep_usec: 100,
            footprint_kb: 256,
            operations: 5,
            warmup: 0,
            interval: 10,
            zerotime: 0,
            rps: 0,
            no_locking: false,
            calibrate: false,
        }
    }
}

impl Schbench {
    /// Workers per message thread on a machine with `nprocs` CPUs: `-t`,
    /// or `ceil(nprocs / M)` when it is not given. schbench counts the
    /// machine's CPUs (`get_nprocs`), not the ones the run may use.
    pub fn workers(&self, nprocs: usize) -> u32 {
        self.worker_threads
            .unwrap_or_else(|| (nprocs as u32).div_ceil(self.message_threads.max(1)))
    }

    /// Threads besides the main one: `M * (T + 1)`.
    pub fn threads(&self, nprocs: usize) -> u64 {
        self.message_threads as u64 * (self.workers(nprocs) as u64 + 1)
    }

    /// Warm-up actually used: schbench ignores `-w` under a 30 s runtime
    /// and in RPS mode.
    pub fn warmup_secs(&self) -> u32 {
        if self.runtime < 30 || self.rps > 0 {
            0
        } else {
            self.warmup
        }
    }

    /// Side of the square matrices, `floor(sqrt(F * 1024 / 3 / 8))`: three
    /// matrices of 8-byte words fill the footprint. Computed as schbench's
    /// `main()` does (masoncl/schbench `schbench.c`): integer divisions of
    /// the footprint in bytes, then the square root, truncated.
    pub fn matrix_size(&self) -> usize {
        ((self.footprint_kb as u64 * 1024 / 3 / 8) as f64).sqrt() as usize
    }

    /// Checks the thread counts. Limits that depend on where the run
    /// happens (threads, memory) are the runner's to check.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.message_threads == 0 || self.message_threads > 10_000 {
            return Err(SpecError {
                flag: "-m",
                problem: "must be between 1 and 10000".into(),
            });
        }
        if self.worker_threads == Some(0) {
            return Err(SpecError {
                flag: "-t",
                problem: "must be an integer > 0".into(),
            });
        }
        Ok(())
    }

    /// The line schbench prints first when it picks the worker count
    /// itself (no `-t`); `None` when `-t` was given.
    pub fn setting_workers_line(&self, nprocs: usize) -> Option<String> {
        self.worker_threads
            .is_none()
            .then(|| format!("setting worker threads to {}\n", self.workers(nprocs)))
    }
}

/// Average scheduling delay per run, from each thread's schedstat
/// (`run_delay / pcount`), as schbench prints it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedDelay {
    /// Message threads, µs.
    pub message_us: u64,
    /// Worker threads, µs.
    pub worker_us: u64,
}

impl SchedDelay {
    /// `sched delay: message %llu (usec) worker %llu (usec)`.
    pub fn line(&self) -> String {
        format!(
            "sched delay: message {} (usec) worker {} (usec)\n",
            self.message_us, self.worker_us
        )
    }
}

/// The statistics one report covers: the three histograms and the seconds
/// since they were last zeroed.
#[derive(Debug, Clone, Copy)]
pub struct Tables<'a> {
    /// Wakeup latencies, µs.
    pub wakeup: &'a Plat,
    /// Request latencies, µs.
    pub request: &'a Plat,
    /// One sample per second: the requests completed in it.
    pub rps: &'a Plat,
    /// Seconds the statistics cover.
    pub runtime_s: u64,
}

impl Tables<'_> {
    /// The wakeup, request and RPS tables.
    pub fn text(&self) -> String {
        let mut s = self.wakeup.table(
            "Wakeup Latencies percentiles (usec)",
            self.runtime_s,
            &LAT_PCTS,
            99.0,
        );
        s.push_str(&self.request.table(
            "Request Latencies percentiles (usec)",
            self.runtime_s,
            &LAT_PCTS,
            99.0,
        ));
        s.push_str(&self.rps.table(
            "RPS percentiles (requests)",
            self.runtime_s,
            &RPS_PCTS,
            50.0,
        ));
        s
    }

    /// The report printed every `-i` seconds: the tables, the scheduling
    /// delays and the rate of the last second.
    pub fn interval_report(&self, delay: SchedDelay, current_rps: f64) -> String {
        let mut s = self.text();
        s.push_str(&delay.line());
        s.push_str(&current_rps_line(current_rps));
        s
    }

    /// The report printed at the end: the tables, the average rate of the
    /// whole run and the scheduling delays.
    pub fn final_report(&self, average_rps: f64, delay: SchedDelay) -> String {
        let mut s = self.text();
        s.push_str(&average_rps_line(average_rps));
        s.push_str(&delay.line());
        s
    }
}

/// `current rps: %.2f`: requests completed in the last second.
pub fn current_rps_line(rps: f64) -> String {
    format!("current rps: {rps:.2}\n")
}

/// `average rps: %.2f`: requests completed per second over the whole run.
pub fn average_rps_line(rps: f64) -> String {
    format!("average rps: {rps:.2}\n")
}

/// The old schbench's only table (its wakeup latencies) as schbench.c
/// printed it from August 2019 (one decimal in the percentile) until
/// October 2020 (when the rows gained sample counts): a title,
/// `\t%s%2.1fth: %u` per percentile with `*` on 99.0, and
/// `\tmin=%u, max=%u`.
pub fn old_latency_table(p: &Plat) -> String {
    let mut s = String::from("Latency percentiles (usec)\n");
    for row in p.percentiles(&OLD_PCTS) {
        let mark = if row.pct == 99.0 { "*" } else { "" };
        s.push_str(&format!("\t{mark}{:2.1}th: {}\n", row.pct, row.value));
    }
    s.push_str(&format!("\tmin={}, max={}\n", p.min, p.max));
    s
}

/// One latency table in JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencySummary {
    /// 50th percentile, µs.
    pub p50: u32,
    /// 90th percentile, µs.
    pub p90: u32,
    /// 99th percentile, µs.
    pub p99: u32,
    /// 99.9th percentile, µs.
    #[serde(rename = "p99.9")]
    pub p99_9: u32,
    /// Smallest sample, µs (0: none).
    pub min: u32,
    /// Largest sample, µs.
    pub max: u32,
    /// Number of samples.
    pub samples: u64,
}

impl LatencySummary {
    /// The summary of a latency histogram.
    pub fn of(p: &Plat) -> Self {
        let r = p.percentiles(&PCTS);
        LatencySummary {
            p50: r[1].value,
            p90: r[2].value,
            p99: r[3].value,
            p99_9: r[4].value,
            min: p.min,
            max: p.max,
            samples: p.samples,
        }
    }
}

/// The RPS table in JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RpsSummary {
    /// 20th percentile of the per-second request rate.
    pub p20: u32,
    /// Median.
    pub p50: u32,
    /// 90th percentile.
    pub p90: u32,
    /// Smallest one-second rate.
    pub min: u32,
    /// Largest one-second rate.
    pub max: u32,
    /// Number of one-second samples.
    pub samples: u64,
}

impl RpsSummary {
    /// The summary of the requests-per-second histogram.
    pub fn of(p: &Plat) -> Self {
        let r = p.percentiles(&RPS_PCTS);
        RpsSummary {
            p20: r[0].value,
            p50: r[1].value,
            p90: r[2].value,
            min: p.min,
            max: p.max,
            samples: p.samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_new_schbench() {
        let c = Schbench::default();
        assert_eq!(c.matrix_size(), 104);
        // schbench.c: sqrt(F * 1024 / 3 / sizeof(unsigned long)), integer divisions.
        for (kb, n) in [(0, 0), (1, 6), (16, 26), (1024, 209), (1 << 20, 6688)] {
            let s = Schbench {
                footprint_kb: kb,
                ..Schbench::default()
            };
            assert_eq!(s.matrix_size(), n, "-F {kb}");
        }
        assert_eq!(c.workers(8), 8);
        assert_eq!(
            Schbench {
                message_threads: 3,
                ..c.clone()
            }
            .workers(8),
            3
        );
        assert_eq!(
            Schbench {
                worker_threads: Some(2),
                ..c.clone()
            }
            .threads(64),
            3
        );
        assert_eq!(
            Schbench {
                runtime: 29,
                warmup: 5,
                ..c.clone()
            }
            .warmup_secs(),
            0
        );
        assert_eq!(
            Schbench {
                runtime: 30,
                warmup: 5,
                ..c.clone()
            }
            .warmup_secs(),
            5
        );
        assert_eq!(
            Schbench {
                runtime: 60,
                warmup: 5,
                rps: 10,
                ..c
            }
            .warmup_secs(),
            0
        );
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (c, flag, problem) in [
            (
                Schbench {
                    message_threads: 0,
                    ..Default::default()
                },
                "-m",
                "must be between 1 and 10000",
            ),
            (
                Schbench {
                    message_threads: 10_001,
                    ..Default::default()
                },
                "-m",
                "must be between 1 and 10000",
            ),
            (
                Schbench {
                    worker_threads: Some(0),
                    ..Default::default()
                },
                "-t",
                "must be an integer > 0",
            ),
        ] {
            let e = c.validate().unwrap_err();
            assert_eq!((e.flag, e.problem.as_str()), (flag, problem));
        }
        assert!(Schbench::default().validate().is_ok());
    }

    #[test]
    fn worker_line_only_when_schbench_picks_the_count() {
        let c = Schbench {
            message_threads: 2,
            ..Default::default()
        };
        assert_eq!(
            c.setting_workers_line(5).as_deref(),
            Some("setting worker threads to 3\n")
        );
        let c = Schbench {
            worker_threads: Some(4),
            ..c
        };
        assert_eq!(c.setting_workers_line(5), None);
    }

    #[test]
    fn reports_have_schbench_layout() {
        let (mut wake, mut req, mut rps) = (Plat::default(), Plat::default(), Plat::default());
        for v in 1..=100u32 {
            wake.add(v);
            req.add(1000 + v);
        }
        rps.add(5000);
        let t = Tables {
            wakeup: &wake,
            request: &req,
            rps: &rps,
            runtime_s: 3,
        };
        let delay = SchedDelay {
            message_us: 7,
            worker_us: 11,
        };
        let fin = t.final_report(1234.567, delay);
        let lines: Vec<&str> = fin.lines().collect();
        assert_eq!(
            lines[0],
            "Wakeup Latencies percentiles (usec) runtime 3 (s) (100 total samples)"
        );
        assert_eq!(lines[1], "\t  50.0th: 50         (50 samples)");
        assert_eq!(lines[3], "\t* 99.0th: 99         (9 samples)");
        assert_eq!(lines[5], "\t  min=1, max=100");
        assert_eq!(
            lines[6],
            "Request Latencies percentiles (usec) runtime 3 (s) (100 total samples)"
        );
        assert_eq!(
            lines[12],
            "RPS percentiles (requests) runtime 3 (s) (1 total samples)"
        );
        assert!(lines[14].starts_with("\t* 50.0th: "), "{fin}");
        assert_eq!(lines[17], "average rps: 1234.57");
        assert_eq!(lines[18], "sched delay: message 7 (usec) worker 11 (usec)");
        assert_eq!(lines.len(), 19);
        let int = t.interval_report(delay, 99.5);
        assert!(
            int.ends_with("\t  min=5000, max=5000\nsched delay: message 7 (usec) worker 11 (usec)\ncurrent rps: 99.50\n"),
            "{int}"
        );
    }

    #[test]
    fn old_table_has_seven_rows_and_no_counts() {
        let mut p = Plat::default();
        for v in 1..=1000u32 {
            p.add(v);
        }
        let t = old_latency_table(&p);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Latency percentiles (usec)");
        assert_eq!(lines[1], "\t50.0th: 500");
        assert!(lines[5].starts_with("\t*99.0th: "), "{t}");
        assert!(lines[6].starts_with("\t99.5th: "), "{t}");
        assert_eq!(lines[8], "\tmin=1, max=1000");
        assert_eq!(lines.len(), 9);
    }

    #[test]
    fn summaries_pick_the_table_rows() {
        let mut p = Plat::default();
        for v in 1..=1000u32 {
            p.add(v);
        }
        let l = LatencySummary::of(&p);
        let r = p.percentiles(&LAT_PCTS);
        assert_eq!(
            (l.p50, l.p90, l.p99, l.p99_9),
            (r[0].value, r[1].value, r[2].value, r[3].value)
        );
        assert_eq!((l.min, l.max, l.samples), (1, 1000, 1000));
        let s = RpsSummary::of(&p);
        assert_eq!(s.p20, 200);
        assert_eq!(RpsSummary::of(&Plat::default()).samples, 0);
    }
}
