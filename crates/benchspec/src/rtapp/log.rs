//! rt-app's per-thread log: one row per executed phase (a pass of its
//! events), written by v1.0's `log_timing` (src/rt-app_utils.c) under a
//! header from `thread_body` (src/rt-app.c), and the per-thread summary
//! schedlab derives from the rows. The simulator writes these files; the
//! native runner reads the real rt-app's.

use serde::Serialize;

/// One row of a thread's log (times in microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The thread's index.
    pub idx: u32,
    /// Loops done by the phase's run events.
    pub perf: u64,
    /// Wall time spent in run events.
    pub run: u64,
    /// The phase's wall time (end - start).
    pub period: u64,
    /// CLOCK_MONOTONIC at the phase's start.
    pub start: u64,
    /// CLOCK_MONOTONIC at its end.
    pub end: u64,
    /// Start relative to the application's start.
    pub rel_st: u64,
    /// Time left before the (last) timer's deadline; negative: overrun.
    pub slack: i64,
    /// Configured run time of the phase's run events.
    pub c_duration: u64,
    /// Sum of its timers' periods.
    pub c_period: u64,
    /// Sum of the wake-up latencies after its timers.
    pub wu_lat: u64,
}

/// The two header lines of a SCHED_OTHER thread's log.
pub fn header(nice: i32) -> String {
    format!(
        "# Policy : SCHED_OTHER priority : {nice}\n{} {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}\n",
        "#idx", "perf", "run", "period", "start", "end", "rel_st", "slack", "c_duration", "c_period",
        "wu_lat"
    )
}

impl Row {
    /// The row as rt-app prints it (with its newline).
    pub fn line(&self) -> String {
        format!(
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}\n",
            self.idx,
            self.perf,
            self.run,
            self.period,
            self.start,
            self.end,
            self.rel_st,
            self.slack,
            self.c_duration,
            self.c_period,
            self.wu_lat
        )
    }
}

/// Read a log's rows ('#' lines are headers). `Err` names the first line
/// that is not a row.
pub fn parse(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("line {}: not an rt-app log row", n + 1);
        if f.len() != 11 {
            return Err(bad());
        }
        let u = |i: usize| f[i].parse::<u64>().map_err(|_| bad());
        rows.push(Row {
            idx: f[0].parse().map_err(|_| bad())?,
            perf: u(1)?,
            run: u(2)?,
            period: u(3)?,
            start: u(4)?,
            end: u(5)?,
            rel_st: u(6)?,
            slack: f[7].parse().map_err(|_| bad())?,
            c_duration: u(8)?,
            c_period: u(9)?,
            wu_lat: u(10)?,
        });
    }
    Ok(rows)
}

/// Percentiles of a thread's per-row wake-up latencies (us).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 90th.
    pub p90: u64,
    /// 99th.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `v` (all 0 when empty).
    pub fn of(mut v: Vec<u64>) -> Self {
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_unstable();
        let at = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Percentiles {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: *v.last().expect("not empty"),
        }
    }
}

/// What schedlab reports per thread, from its rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadSummary {
    /// `NAME-IDX`.
    pub thread: String,
    /// Rows (phases executed).
    pub rows: u64,
    /// Share of the thread's logged span (first start to last end) spent
    /// in run events, percent.
    pub cpu_share_pct: f64,
    /// Rows whose timer found its deadline already past (slack < 0).
    pub slack_misses: u64,
    /// Wake-up latency after timers, per row, us.
    pub wu_lat_us: Percentiles,
    /// Mean phase wall time, us.
    pub mean_period_us: f64,
    /// CPU time the thread consumed (its sum_exec_runtime) over its logged
    /// span, percent: unlike `cpu_share_pct`, not inflated while the thread
    /// waits preempted inside a run event. None when not measured.
    pub cpu_time_pct: Option<f64>,
}

impl ThreadSummary {
    /// The summary of `rows` for thread `thread`.
    pub fn of(thread: &str, rows: &[Row]) -> Self {
        let run: u64 = rows.iter().map(|r| r.run).sum();
        let span = match (rows.first(), rows.last()) {
            (Some(a), Some(b)) => b.end.saturating_sub(a.start),
            _ => 0,
        };
        let timed: Vec<&Row> = rows.iter().filter(|r| r.c_period > 0).collect();
        let round = |v: f64| (v * 100.0).round() / 100.0;
        ThreadSummary {
            thread: thread.to_string(),
            rows: rows.len() as u64,
            cpu_share_pct: if span == 0 {
                0.0
            } else {
                round(100.0 * run as f64 / span as f64)
            },
            slack_misses: timed.iter().filter(|r| r.slack < 0).count() as u64,
            wu_lat_us: Percentiles::of(timed.iter().map(|r| r.wu_lat).collect()),
            mean_period_us: if rows.is_empty() {
                0.0
            } else {
                round(rows.iter().map(|r| r.period).sum::<u64>() as f64 / rows.len() as f64)
            },
            cpu_time_pct: None,
        }
    }

    /// The same, with the CPU time the thread consumed (ns).
    pub fn with_cpu_time(mut self, rows: &[Row], cpu_ns: u64) -> Self {
        let span_us = match (rows.first(), rows.last()) {
            (Some(a), Some(b)) => b.end.saturating_sub(a.start),
            _ => 0,
        };
        if span_us > 0 {
            let pct = 100.0 * cpu_ns as f64 / (span_us as f64 * 1000.0);
            self.cpu_time_pct = Some((pct * 100.0).round() / 100.0);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of a log the real rt-app 1.0 wrote on this project's VM.
    const NATIVE: &str = "# Policy : SCHED_OTHER priority : 0
#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
   0   214285    31398    31400     26156564884     26156596284           16747     -22185       3000      10000          0
   0   214285     3290    23823     26156596292     26156620115           48155       6702       3000      10000      13829
";

    #[test]
    fn header_and_rows_print_as_rt_app_does() {
        let rows = parse(NATIVE).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].slack, -22185);
        let mut text = header(0);
        for r in &rows {
            text.push_str(&r.line());
        }
        assert_eq!(text, NATIVE);
        assert!(parse("1 2 3").unwrap_err().contains("line 1"));
    }

    #[test]
    fn summary() {
        let rows = parse(NATIVE).unwrap();
        let s = ThreadSummary::of("t-0", &rows);
        // (31398 + 3290) / (26156620115 - 26156564884)
        assert_eq!(s.cpu_share_pct, 62.81);
        assert_eq!(s.slack_misses, 1);
        assert_eq!(s.wu_lat_us.max, 13829);
        assert_eq!(s.wu_lat_us.p50, 0);
        assert_eq!(Percentiles::of(vec![5, 1, 3, 2, 4]).p90, 5);
        assert_eq!(s.cpu_time_pct, None);
        // 11.0455 ms of CPU in 55.231 ms
        let s = s.with_cpu_time(&rows, 11_045_500);
        assert_eq!(s.cpu_time_pct, Some(20.0));
    }
}
