//! tbench as dbench 4 runs it against `tbench_srv`: `N` client processes,
//! each with its own server process (tbench_srv forks one per accepted
//! connection), connected pairwise over loopback TCP. Every client replays
//! an NBENCH loadfile ([`benchspec::loadfile`]; the built-in mix unless a
//! file is given) line by line, rewinding at the end, for a warm-up and then
//! `time` seconds; the parameters and every printed line are
//! [`benchspec::tbench`]'s, shared with the native port.
//!
//! # The exchange
//! One line is one synchronous request/response: the client sends the
//! whole request in one call, then reads the 4-byte reply header and the
//! reply payload (two reads, as dbench's socket backend does); the server
//! reads the 4-byte length word, then the rest of the request, and answers
//! with one write of the header and the payload. Each direction of a
//! connection is one [`ChanKind::TcpStream`] channel, so every call costs
//! `tcp_syscall_ns` plus the copy, and every send wakes the reader with
//! WF_SYNC. Deltree lines put nothing on the wire. Paths in a request name
//! `client<id>` instead of the loadfile's `client1`, so clients with more
//! digits in their id send a little more, as in dbench.
//!
//! # Start and timing
//! At time 0 every process exists, connected, as dbench has them when it
//! prints "N of N processes prepared for launch": the clients wait on the
//! start barrier (a poll on the "go" pipe) and the servers in their first
//! read. The parent takes the start time and releases them all at once
//! (one write wakes every client: a thundering herd, as the semaphore
//! release does); after that it wakes once a second, as dbench's parent
//! does for its SIGALRM progress handler. The run stops at `warmup + time`
//! seconds ([`Stop::At`]), whatever the clients are doing then.
//!
//! # What is recorded and how the report is made
//! Each line is timed by its client (a time stamp before, a latency sample
//! per operation kind after) and a ReadX/WriteX line notes its payload
//! bytes. The report replays dbench's once-a-second handler over these
//! samples: ticks at start + 1 s, 2 s, ...; the warm-up ticks, then the
//! statistics reset and the execute ticks. The MB/s of a tick is the
//! payload since the phase began over the time since then; `Throughput` is
//! the value of the last execute tick before the one that ends the run (of
//! that one only when it is the only execute tick), and `max_latency` the
//! worst tick latency over those same execute ticks.
//!
//! dbench's tick latency is, over the clients, the largest gap between two
//! consecutive line completions since the last tick, or the age of the
//! line in flight at the tick. The model takes each line's own span (start
//! stamp to completion) for the gap: the client's bookkeeping between two
//! lines (a clock read) is not counted. A line still in flight when the
//! run stops has no sample, so the last tick misses its age; that tick
//! only counts towards `max_latency` when `time` is 1.
//!
//! What is left out: connection set-up and the 8-byte hello exchange
//! (before the clock starts), tbench_srv's listening parent (asleep in
//! accept for the whole run), dbench's per-line check that its parent is
//! alive, and the cleanup after the run. The reply payload is read like
//! any other data (with its copy cost), where dbench discards it in the
//! kernel (MSG_TRUNC).

use super::{Record, Report, Stop, Workload};
use crate::channel::ChanKind;
use crate::engine::Engine;
use crate::rq::RunQueue;
use crate::task::{ChanId, MetricId, Op, TaskSpec, VarId};
use crate::Nanos;
use benchspec::loadfile::{self, OpKind, OP_KINDS};
pub use benchspec::tbench::Tbench;
use benchspec::tbench::{OpStats, Phase, Throughput};
use benchspec::FileError;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Mark slot of the start time (the release of the clients).
pub const MARK_START: u32 = 0;
/// The metric of the payload bytes a ReadX or WriteX line moves (the
/// latency of operation kind `k` is metric `k as u8`).
pub const METRIC_BYTES: MetricId = OP_KINDS as MetricId;
/// The client's variable holding the start of the line in flight.
const VAR_LINE: VarId = 0;
/// One second, ns: dbench's progress period.
const SEC: Nanos = 1_000_000_000;
/// The 4-byte length word in front of every request and reply.
const HEADER: u32 = 4;

/// A tbench run to simulate: the parameters and the operations of one pass
/// over the loadfile.
#[derive(Clone, Debug)]
pub struct TbenchModel {
    /// Parameters (dbench's).
    pub spec: Tbench,
    ops: Vec<loadfile::Op>,
}

impl TbenchModel {
    /// Checks the parameters and reads the loadfile (or takes the built-in
    /// mix). A loadfile whose lines put nothing on the wire is refused:
    /// its clients would replay it without ever waiting.
    pub fn new(spec: Tbench) -> Result<TbenchModel, TbenchError> {
        spec.validate()?;
        let ops = spec.ops()?;
        if ops.iter().all(|o| o.send == 0) {
            return Err(TbenchError::File(FileError {
                flag: "--loadfile",
                path: spec.loadfile_name(),
                line: None,
                problem: "no line sends anything to the server (only Deltree)".into(),
            }));
        }
        Ok(TbenchModel { spec, ops })
    }

    /// The operations of one pass.
    pub fn ops(&self) -> &[loadfile::Op] {
        &self.ops
    }

    /// What the run's report holds, bytes: per second of the run, a
    /// summary of each metric (`Engine::summarise_metric`; their vectors
    /// may double as they grow), the figures of its tick and its progress
    /// line. dbench prints a line a second, so this grows with `--time`
    /// as its output does; samples themselves are not kept.
    pub fn report_bytes(&self) -> u64 {
        const PER_SECOND: u64 =
            2 * (OP_KINDS as u64 + 1) * std::mem::size_of::<crate::engine::Bin>() as u64
                + 4 * 8
                + 96;
        (self.phases().1 + 1).saturating_mul(PER_SECOND)
    }

    /// Seconds of warm-up and in total.
    fn phases(&self) -> (u64, u64) {
        let w = self.spec.warmup_secs() as u64;
        (w, w + self.spec.time as u64)
    }
}

/// Why a tbench run cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TbenchError {
    /// A bad parameter.
    #[error(transparent)]
    Spec(#[from] benchspec::SpecError),
    /// An unreadable or unusable loadfile.
    #[error(transparent)]
    File(#[from] FileError),
}

/// Digits of `id` beyond the one of `client1`.
fn extra_digits(id: u32) -> u32 {
    id.checked_ilog10().unwrap_or(0)
}

/// Consecutive equal lines, as (line, repeat count): a run of identical
/// lines becomes one counted loop in the programs, which keeps programs of
/// long loadfiles small.
fn runs(ops: &[loadfile::Op]) -> Vec<(loadfile::Op, u32)> {
    let mut out: Vec<(loadfile::Op, u32)> = Vec::new();
    for &op in ops {
        match out.last_mut() {
            Some((last, n)) if *last == op && *n < u32::MAX => *n += 1,
            _ => out.push((op, 1)),
        }
    }
    out
}

/// Wraps `body` in a counted loop when it repeats.
fn repeat(p: &mut Vec<Op>, n: u32, body: &[Op]) {
    if n > 1 {
        p.push(Op::Loop(n));
    }
    p.extend_from_slice(body);
    if n > 1 {
        p.push(Op::EndLoop);
    }
}

/// The client's program: wait at the start barrier, then replay the lines
/// forever (the run stops it).
fn client_program(ops: &[loadfile::Op], id: u32, req: ChanId, rep: ChanId, go: ChanId) -> Vec<Op> {
    let extra = extra_digits(id);
    let mut p = vec![Op::Poll { chan: go }, Op::Loop(u32::MAX)];
    for (op, n) in runs(ops) {
        let mut body = vec![Op::Stamp(VAR_LINE)];
        if op.send != 0 {
            body.extend([
                Op::Write {
                    chan: req,
                    bytes: op.send + op.grow_per_digit * extra,
                },
                Op::Read {
                    chan: rep,
                    bytes: HEADER,
                },
                Op::Read {
                    chan: rep,
                    bytes: op.recv - HEADER,
                },
            ]);
        }
        body.push(Op::RecordSince {
            metric: op.kind as MetricId,
            var: VAR_LINE,
        });
        if op.bytes != 0 {
            body.push(Op::Note {
                metric: METRIC_BYTES,
                value: op.bytes,
            });
        }
        repeat(&mut p, n, &body);
    }
    p.extend([Op::EndLoop, Op::Exit]);
    p
}

/// The server's program (tbench_srv's child): for each line with traffic,
/// read the length word and the rest of the request, then write the reply.
fn server_program(ops: &[loadfile::Op], id: u32, req: ChanId, rep: ChanId) -> Vec<Op> {
    let extra = extra_digits(id);
    let mut p = vec![Op::Loop(u32::MAX)];
    for (op, n) in runs(ops) {
        if op.send == 0 {
            continue;
        }
        let body = [
            Op::Read {
                chan: req,
                bytes: HEADER,
            },
            Op::Read {
                chan: req,
                bytes: op.send + op.grow_per_digit * extra - HEADER,
            },
            Op::Write {
                chan: rep,
                bytes: op.recv,
            },
        ];
        repeat(&mut p, n, &body);
    }
    p.extend([Op::EndLoop, Op::Exit]);
    p
}

/// Mean of `f` over the lines with traffic, in cache lines: the part of a
/// process's message buffer one line touches, refilled after a migration
/// (as hackbench's footprint is its message size).
fn footprint(ops: &[loadfile::Op], f: impl Fn(&loadfile::Op) -> u32) -> u32 {
    let (sum, n) = ops
        .iter()
        .filter(|o| o.send != 0)
        .fold((0u64, 0u64), |(s, n), o| (s + f(o) as u64, n + 1));
    (sum / n.max(1)).div_ceil(64) as u32
}

/// Declare the parent, the servers and the clients in `e`.
pub fn build<R: RunQueue>(m: &TbenchModel, e: &mut Engine<'_, R>) {
    let n = m.spec.clients;
    let go = e.add_channel(ChanKind::Pipe, false);
    // The parent: release the clients, then wake once a second.
    let parent = e.add_task(TaskSpec {
        name: "tbench".into(),
        program: vec![
            Op::Mark(MARK_START),
            Op::Write { chan: go, bytes: 1 },
            Op::Loop(u32::MAX),
            Op::Sleep(SEC),
            Op::EndLoop,
            Op::Exit,
        ]
        .into(),
        mm: 0,
        parent: None,
        spawned: false,
        start_cpu: None,
        nice: 0,
        footprint_lines: 0,
    });
    let conns: Vec<(ChanId, ChanId)> = (0..n)
        .map(|_| {
            (
                e.add_channel(ChanKind::TcpStream, true),
                e.add_channel(ChanKind::TcpStream, true),
            )
        })
        .collect();
    // A client's buffer is touched by its request (the reply payload is
    // not copied out); a server's by the request it reads and the reply it
    // sends from the same buffer.
    let client_lines = footprint(&m.ops, |o| o.send);
    let server_lines = footprint(&m.ops, |o| o.send.max(o.recv));
    // Servers first, then clients: the order the native port forks them.
    for (id, &(req, rep)) in conns.iter().enumerate() {
        e.add_task(TaskSpec {
            name: format!("tbench_srv-{id}"),
            program: server_program(&m.ops, id as u32, req, rep).into(),
            mm: 1 + id as u32,
            parent: Some(parent),
            spawned: false,
            start_cpu: None,
            nice: 0,
            footprint_lines: server_lines,
        });
    }
    for (id, &(req, rep)) in conns.iter().enumerate() {
        e.add_task(TaskSpec {
            name: format!("tbench-{id}"),
            program: client_program(&m.ops, id as u32, req, rep, go).into(),
            mm: 1 + n + id as u32,
            parent: Some(parent),
            spawned: false,
            start_cpu: None,
            nice: 0,
            footprint_lines: client_lines,
        });
    }
}

/// Per-tick figures from the samples: index `j` is the tick at start +
/// `j` s (index 0: before the start).
struct Ticks {
    /// Tick times (index 0: the start).
    at: Vec<Nanos>,
    /// Lines completed since the previous tick.
    lines: Vec<u64>,
    /// Payload bytes since the previous tick.
    bytes: Vec<u64>,
    /// dbench's tick latency, ns.
    latency: Vec<Nanos>,
}

impl Ticks {
    /// From the per-second summaries (bin `j` is tick `j`). A line's tick
    /// latency is its own duration; the age of a line still in flight at a
    /// tick, which dbench also counts, is not kept (lines last microseconds).
    fn of(rec: &Record, start: Nanos, total: u64) -> Ticks {
        let last = total as usize;
        let at: Vec<Nanos> = (0..=total)
            .map(|j| (start + j * SEC).min(rec.end))
            .collect();
        let mut ticks = Ticks {
            lines: vec![0; last + 1],
            bytes: vec![0; last + 1],
            latency: vec![0; last + 1],
            at,
        };
        for k in 0..OP_KINDS {
            for (j, b) in rec.bins(k as MetricId).iter().enumerate() {
                let j = j.min(last);
                ticks.lines[j] += b.count;
                ticks.latency[j] = ticks.latency[j].max(b.max);
            }
        }
        for (j, b) in rec.bins(METRIC_BYTES).iter().enumerate() {
            ticks.bytes[j.min(last)] += b.sum;
        }
        ticks
    }
}

/// What the run measured, as dbench reports it.
struct Outcome {
    /// Progress and cleanup lines.
    text: String,
    /// (MB/s, execute seconds, bytes) of the last counted execute tick.
    throughput: (f64, f64, u64),
    /// Worst tick latency of the counted execute ticks, ns.
    max_latency: Nanos,
    /// When the execute phase began and ended.
    execute: (Nanos, Nanos),
}

/// dbench's once-a-second handler, replayed over the ticks.
fn replay(m: &TbenchModel, t: &Ticks) -> Outcome {
    let n = m.spec.clients;
    let (warmup, total) = m.phases();
    let start = t.at[0];
    let secs = |ns: Nanos| ns as f64 / 1e9;
    let mb_s = |bytes: u64, ns: Nanos| {
        if ns == 0 {
            0.0
        } else {
            1e-6 * bytes as f64 / secs(ns)
        }
    };
    let mut text = benchspec::tbench::launch_lines(n);
    let (mut lines, mut bytes) = (t.lines[0], t.bytes[0]);
    let (mut exec_start, mut warm_bytes) = (start, 0u64);
    let mut throughput = None;
    let mut max_latency = 0;
    for j in 1..=total as usize {
        lines += t.lines[j];
        bytes += t.bytes[j];
        let now = t.at[j];
        let lat_ms = t.latency[j] as f64 / 1e6;
        if (j as u64) <= warmup {
            text += &benchspec::tbench::progress_line(
                n,
                lines / n as u64,
                mb_s(bytes, now - start),
                Phase::Warmup,
                secs(now - start),
                lat_ms,
            );
            if j as u64 == warmup {
                // end of warm-up: restart the clock and the statistics
                exec_start = now;
                warm_bytes = bytes;
            }
            continue;
        }
        let exec = bytes - warm_bytes;
        let value = (mb_s(exec, now - exec_start), secs(now - exec_start), exec);
        if j as u64 == total {
            // the tick that reaches the limit ends the run; it sets the
            // result only when there was no execute tick before it
            if throughput.is_none() {
                throughput = Some(value);
                max_latency = max_latency.max(t.latency[j]);
            }
            text += &benchspec::tbench::cleanup_line(n, secs(now - exec_start));
            text += &benchspec::tbench::cleanup_line(0, secs(now - exec_start));
            break;
        }
        max_latency = max_latency.max(t.latency[j]);
        throughput = Some(value);
        text += &benchspec::tbench::progress_line(
            n,
            lines / n as u64,
            value.0,
            Phase::Execute,
            value.1,
            lat_ms,
        );
    }
    Outcome {
        text,
        throughput: throughput.unwrap_or((0.0, 0.0, 0)),
        max_latency,
        execute: (exec_start, t.at[total as usize]),
    }
}

/// Count, mean and max latency per operation kind, of the lines completed
/// in the execute phase, in dbench's table order (kinds never seen left
/// out).
fn op_rows(rec: &Record, ticks: std::ops::RangeInclusive<usize>) -> Vec<(&'static str, OpStats)> {
    let mut rows = Vec::new();
    for kind in OpKind::ALL {
        let (mut count, mut sum, mut max) = (0u64, 0u64, 0u64);
        let bins = rec.bins(kind as MetricId);
        for b in bins.iter().take(ticks.end() + 1).skip(*ticks.start()) {
            count += b.count;
            sum += b.sum;
            max = max.max(b.max);
        }
        if count > 0 {
            rows.push((
                kind.name(),
                OpStats {
                    count,
                    avg_ms: sum as f64 / count as f64 / 1e6,
                    max_ms: max as f64 / 1e6,
                },
            ));
        }
    }
    rows
}

impl Workload for TbenchModel {
    fn name(&self) -> &'static str {
        "tbench"
    }

    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, _first_cpu: usize) {
        build(self, e);
        // dbench reports per second from the release on: keep per-second
        // summaries, not every line's sample (memory would grow by tens of
        // MB per simulated second)
        for k in 0..=OP_KINDS {
            e.summarise_metric(k as MetricId, SEC, MARK_START);
        }
    }

    fn stop(&self) -> Stop {
        Stop::At(self.phases().1 * SEC)
    }

    /// dbench's lines: the header, the launch lines, a progress line per
    /// second, the cleanup lines, the operation table and `Throughput`.
    fn report(&self, rec: &Record) -> Report {
        let start = rec.mark(MARK_START).unwrap_or(0);
        let ticks = Ticks::of(rec, start, self.phases().1);
        let out = replay(self, &ticks);
        // the execute phase's ticks: after the one that ended the warm-up
        let tick = |t: Nanos| t.saturating_sub(start).div_ceil(SEC) as usize;
        let rows = op_rows(rec, tick(out.execute.0) + 1..=tick(out.execute.1));
        let (mb_s, execute_s, bytes) = out.throughput;
        let result = Throughput {
            mb_s,
            clients: self.spec.clients,
            procs: self.spec.clients,
            max_latency_ms: out.max_latency as f64 / 1e6,
        };
        let text = format!(
            "{}{}{}",
            self.spec.header(),
            out.text,
            benchspec::tbench::final_report(&rows, &result)
        );
        // the names `schedlab bench tbench --json` uses
        let mut json = Map::new();
        json.insert("throughput_mb_s".into(), json!(mb_s));
        json.insert("clients".into(), json!(self.spec.clients));
        json.insert("procs".into(), json!(self.spec.clients));
        json.insert("max_latency_ms".into(), json!(result.max_latency_ms));
        json.insert("time_limit_s".into(), json!(self.spec.time));
        json.insert("warmup_s".into(), json!(self.spec.warmup_secs()));
        json.insert("execute_s".into(), json!(execute_s));
        json.insert("bytes".into(), json!(bytes));
        json.insert("loadfile".into(), json!(self.spec.loadfile_name()));
        json.insert("loadfile_ops".into(), json!(self.ops.len()));
        let ops: BTreeMap<&str, &OpStats> = rows.iter().map(|(k, s)| (*k, s)).collect();
        json.insert(
            "ops".into(),
            serde_json::to_value(ops).unwrap_or(Value::Null),
        );
        Report {
            files: Vec::new(),
            text,
            json,
            time_ns: out.execute.1 - out.execute.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> loadfile::Op {
        loadfile::parse_line(s).unwrap().unwrap()
    }

    #[test]
    fn digits_beyond_client1() {
        assert_eq!(
            [0, 1, 9, 10, 99, 100, 12345].map(extra_digits),
            [0, 0, 0, 1, 1, 2, 4]
        );
    }

    #[test]
    fn programs_mirror_each_other() {
        let ops = [
            line("Deltree \"\\clients\\client1\" NT_STATUS_OK"),
            line("ReadX 1 0 4096 4096 NT_STATUS_OK"),
            line("ReadX 1 0 4096 4096 NT_STATUS_OK"),
            line("NTCreateX \"\\clients\\client1\\a\" 0x1 0x2 1 NT_STATUS_OK"),
        ];
        let c = client_program(&ops, 12, ChanId(1), ChanId(2), ChanId(0));
        let s = server_program(&ops, 12, ChanId(1), ChanId(2));
        // client writes on 1 and reads on 2; server the other way round
        let sent = |p: &[Op], ch| -> Vec<u32> {
            p.iter()
                .filter_map(|o| match *o {
                    Op::Write { chan, bytes } if chan == ch => Some(bytes),
                    _ => None,
                })
                .collect()
        };
        let read = |p: &[Op], ch| -> Vec<u32> {
            p.iter()
                .filter_map(|o| match *o {
                    Op::Read { chan, bytes } if chan == ch => Some(bytes),
                    _ => None,
                })
                .collect()
        };
        // the repeated ReadX is one loop: each program names it once
        assert_eq!(sent(&c, ChanId(1)), vec![59, ops[3].send + 2]);
        let r: Vec<u32> = read(&s, ChanId(1)).chunks(2).map(|w| w[0] + w[1]).collect();
        assert_eq!(r, sent(&c, ChanId(1)));
        let r: Vec<u32> = read(&c, ChanId(2)).chunks(2).map(|w| w[0] + w[1]).collect();
        assert_eq!(r, sent(&s, ChanId(2)));
        assert_eq!(r, vec![59 + 4096, 87]);
        assert!(c.contains(&Op::Loop(2)) && s.contains(&Op::Loop(2)));
        // Deltree is timed but sends nothing
        assert_eq!(c[2], Op::Stamp(VAR_LINE));
        assert_eq!(
            c[3],
            Op::RecordSince {
                metric: OpKind::Deltree as u8,
                var: VAR_LINE
            }
        );
    }

    #[test]
    fn a_loadfile_without_traffic_is_refused() {
        let path = std::env::temp_dir().join(format!("sim-tb-deltree-{}.txt", std::process::id()));
        std::fs::write(&path, "Deltree \"\\clients\\client1\" NT_STATUS_OK\n").unwrap();
        let e = TbenchModel::new(Tbench {
            loadfile: Some(path.clone()),
            ..Default::default()
        })
        .unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(
            e.to_string()
                .starts_with(&format!("--loadfile {}: no line sends", path.display())),
            "{e}"
        );
    }
}
