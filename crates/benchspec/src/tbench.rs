//! tbench as dbench 4 defines it: `N` client processes replay an NBENCH
//! loadfile ([`crate::loadfile`]) against a `tbench_srv`, one synchronous
//! request/response exchange per line, for a warm-up and then `--time`
//! seconds of execute. This module holds the parameters with dbench's
//! defaults, their validation, and every line tbench prints: the header,
//! the once-a-second progress lines (dbench.c's SIGALRM handler), the
//! operation table and the `Throughput` line.

use crate::loadfile::{self, Op};
use crate::{FileError, SpecError};
use serde::Serialize;
use std::path::PathBuf;

/// tbench parameters, with dbench's defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tbench {
    /// `NPROCS`: client processes (one client each).
    pub clients: u32,
    /// `-t/--timelimit`: seconds of execute phase (600).
    pub time: u32,
    /// `--warmup`: seconds of warm-up before the execute phase; `None`
    /// means dbench's default, `time / 5`.
    pub warmup: Option<u32>,
    /// `-c/--loadfile`: the NBENCH loadfile; `None` for the built-in mix.
    pub loadfile: Option<PathBuf>,
}

impl Default for Tbench {
    fn default() -> Self {
        Tbench {
            clients: 1,
            time: 600,
            warmup: None,
            loadfile: None,
        }
    }
}

impl Tbench {
    /// The warm-up actually used.
    pub fn warmup_secs(&self) -> u32 {
        self.warmup.unwrap_or(self.time / 5)
    }

    /// Checks the client count and the durations. Limits that depend on
    /// where the run happens (fds, processes, memory) are the runner's to
    /// check.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |flag, problem: &str| {
            Err(SpecError {
                flag,
                problem: problem.into(),
            })
        };
        if self.clients == 0 {
            return err("NCLIENTS", "must be an integer > 0");
        }
        if self.clients > 100_000 {
            return err("NCLIENTS", "more than 100000 clients is not supported");
        }
        if self.time == 0 {
            return err("--time", "must be an integer > 0");
        }
        if self.time > 86_400 * 365 || self.warmup_secs() > 86_400 * 365 {
            return err("--time/--warmup", "more than a year");
        }
        Ok(())
    }

    /// The loadfile's name as reported: its path, or `builtin`.
    pub fn loadfile_name(&self) -> String {
        match &self.loadfile {
            Some(p) => p.display().to_string(),
            None => "builtin".into(),
        }
    }

    /// The operations one pass replays: the loadfile's, or the built-in mix.
    pub fn ops(&self) -> Result<Vec<Op>, FileError> {
        match &self.loadfile {
            Some(p) => loadfile::load(p),
            None => Ok(loadfile::builtin()),
        }
    }

    /// The line dbench prints first.
    pub fn header(&self) -> String {
        format!(
            "Running for {} seconds with load '{}' and minimum warmup {} secs\n",
            self.time,
            self.loadfile_name(),
            self.warmup_secs()
        )
    }
}

/// The lines printed once every client is connected and waiting at the
/// start barrier, just before they are released together.
pub fn launch_lines(procs: u32) -> String {
    format!("{procs} of {procs} processes prepared for launch   0 sec\nreleasing clients\n")
}

/// The phase a progress line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the statistics are reset.
    Warmup,
    /// The measured part of the run.
    Execute,
}

impl Phase {
    /// The word dbench prints for it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Execute => "execute",
        }
    }
}

/// One per-second progress line:
/// `%4d  %8d  %7.2f MB/sec  warmup|execute %3.0f sec  latency %.03f ms`:
/// clients, loadfile lines per client so far, MB/s since the phase began,
/// seconds into the phase, and the worst latency since the last line.
pub fn progress_line(
    clients: u32,
    lines: u64,
    mb_s: f64,
    phase: Phase,
    secs: f64,
    latency_ms: f64,
) -> String {
    format!(
        "{clients:4}  {lines:8}  {mb_s:7.2} MB/sec  {} {secs:3.0} sec  latency {latency_ms:.03} ms\n",
        phase.name()
    )
}

/// `%4d  cleanup %3.0f sec`: the run is over; `clients` are still
/// stopping.
pub fn cleanup_line(clients: u32, secs: f64) -> String {
    format!("{clients:4}  cleanup {secs:3.0} sec\n")
}

/// Count, average and maximum latency of one operation kind.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpStats {
    /// Operations completed during the execute phase.
    pub count: u64,
    /// Average latency, ms.
    pub avg_ms: f64,
    /// Maximum latency, ms.
    pub max_ms: f64,
}

/// The operation table: a blank line, a title, a rule and one row per
/// operation kind, in the order given.
pub fn op_table(rows: &[(&str, OpStats)]) -> String {
    let mut s = String::new();
    s.push_str("\n Operation      Count    AvgLat    MaxLat\n");
    s.push_str(" ----------------------------------------\n");
    for (name, st) in rows {
        s.push_str(&format!(
            " {:<10} {:>9} {:>9.3} {:>9.3}\n",
            name, st.count, st.avg_ms, st.max_ms
        ));
    }
    s
}

/// What the `Throughput` line reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Decimal MB/s of ReadX/WriteX payload over the execute phase.
    pub mb_s: f64,
    /// Clients: processes times clients per process.
    pub clients: u32,
    /// Client processes.
    pub procs: u32,
    /// Worst per-tick latency of any client during execute, ms.
    pub max_latency_ms: f64,
}

impl Throughput {
    /// `Throughput %g MB/sec  %d clients  %d procs  max_latency=%.03f ms`,
    /// without the newline.
    pub fn line(&self) -> String {
        format!(
            "Throughput {} MB/sec  {} clients  {} procs  max_latency={:.3} ms",
            format_g(self.mb_s),
            self.clients,
            self.procs,
            self.max_latency_ms
        )
    }
}

/// The end of a run: the operation table, a blank line and the
/// `Throughput` line.
pub fn final_report(rows: &[(&str, OpStats)], result: &Throughput) -> String {
    let mut s = op_table(rows);
    s.push('\n');
    s.push_str(&result.line());
    s.push('\n');
    s
}

/// C's `%g`: six significant digits, trailing zeros removed, exponent form
/// below 1e-4 or from 1e6.
pub fn format_g(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x == 0.0 {
            "0".into()
        } else {
            format!("{x}")
        };
    }
    let exp = x.abs().log10().floor() as i32;
    // Rounding to 6 digits can carry into the next power of ten.
    let rounded = format!("{:.5e}", x);
    let exp = rounded
        .split_once('e')
        .and_then(|(_, e)| e.parse::<i32>().ok())
        .unwrap_or(exp);
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exp) {
        let (m, _) = rounded.split_once('e').unwrap_or((&rounded, "0"));
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(m.to_string()), exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g_matches_c() {
        for (x, want) in [
            (317.519_123, "317.519"),
            (0.0, "0"),
            (1234.5, "1234.5"),
            (999_999.7, "1e+06"),
            (1_234_567.0, "1.23457e+06"),
            (0.000_123_456, "0.000123456"),
            (0.000_012_345_6, "1.23456e-05"),
            (42.0, "42"),
            (2.5, "2.5"),
        ] {
            assert_eq!(format_g(x), want, "{x}");
        }
    }

    #[test]
    fn header_and_defaults_follow_dbench() {
        let t = Tbench {
            time: 3,
            ..Default::default()
        };
        assert_eq!(t.warmup_secs(), 0);
        assert_eq!(
            t.header(),
            "Running for 3 seconds with load 'builtin' and minimum warmup 0 secs\n"
        );
        assert_eq!(Tbench::default().warmup_secs(), 120);
        let t = Tbench {
            loadfile: Some("/usr/share/dbench/client.txt".into()),
            warmup: Some(7),
            ..t
        };
        assert_eq!(
            t.header(),
            "Running for 3 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 7 secs\n"
        );
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (t, flag) in [
            (
                Tbench {
                    clients: 0,
                    ..Default::default()
                },
                "NCLIENTS",
            ),
            (
                Tbench {
                    clients: 100_001,
                    time: 0,
                    ..Default::default()
                },
                "NCLIENTS",
            ),
            (
                Tbench {
                    time: 0,
                    ..Default::default()
                },
                "--time",
            ),
            (
                Tbench {
                    warmup: Some(u32::MAX),
                    ..Default::default()
                },
                "--time/--warmup",
            ),
        ] {
            assert_eq!(t.validate().unwrap_err().flag, flag, "{t:?}");
        }
        assert!(Tbench::default().validate().is_ok());
    }

    #[test]
    fn missing_loadfile_is_named() {
        let t = Tbench {
            loadfile: Some("/nonexistent/client.txt".into()),
            ..Default::default()
        };
        let e = t.ops().unwrap_err();
        assert_eq!(
            (e.flag, e.path.as_str()),
            ("--loadfile", "/nonexistent/client.txt")
        );
        assert_eq!(Tbench::default().ops().unwrap(), loadfile::builtin());
    }

    #[test]
    fn progress_and_final_lines() {
        assert_eq!(
            progress_line(2, 1234, 567.891, Phase::Warmup, 1.0004, 0.1234),
            "   2      1234   567.89 MB/sec  warmup   1 sec  latency 0.123 ms\n"
        );
        assert_eq!(
            progress_line(16, 7, 0.0, Phase::Execute, 12.6, 25.0),
            "  16         7     0.00 MB/sec  execute  13 sec  latency 25.000 ms\n"
        );
        assert_eq!(cleanup_line(0, 2.2), "   0  cleanup   2 sec\n");
        assert_eq!(
            launch_lines(2),
            "2 of 2 processes prepared for launch   0 sec\nreleasing clients\n"
        );
        let rows = [(
            "ReadX",
            OpStats {
                count: 42,
                avg_ms: 0.0125,
                max_ms: 3.5,
            },
        )];
        let t = Throughput {
            mb_s: 317.519_123,
            clients: 2,
            procs: 2,
            max_latency_ms: 4.25,
        };
        assert_eq!(
            final_report(&rows, &t),
            "\n Operation      Count    AvgLat    MaxLat\n \
             ----------------------------------------\n \
             ReadX             42     0.013     3.500\n\
             \n\
             Throughput 317.519 MB/sec  2 clients  2 procs  max_latency=4.250 ms\n"
        );
    }
}
