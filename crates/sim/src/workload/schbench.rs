//! schbench (Chris Mason's scheduler wake-up latency benchmark), both the
//! 2023+ rework ("new", the default) and the spinning 2016-2019 version
//! ("old"), as programs of the engine's ops.
//!
//! Threads (both versions): a main thread creates `M` message threads; each
//! creates its `T` workers (pthread_create, one address space). A worker
//! asks for service by pushing itself on its message thread's lock-free
//! list and posting the message thread's futex, then waits on its own
//! futex. The message thread takes the whole list, reads the clock **once**
//! for the batch, stores that time as every listed worker's wake time and
//! posts each one ([`Op::ListTakeStampPost`]); the woken worker reads the
//! clock and records `now - wake time` as its wakeup latency, only when it
//! is at least 1 us (schbench subtracts two microsecond clock readings and
//! drops a zero).
//!
//! New (2023+): the message thread replies at once. After its wake-up a
//! worker starts the request clock, usleeps `-s` us (network or disk), takes
//! the mutex of the CPU it runs on (trylock and spin; retried if it moved),
//! does `-n` naive `n x n` matrix multiplications (`n = sqrt(F KB * 1024 / 3
//! / 8)`), unlocks, records the request latency and counts the request.
//! The multiplications are user work of `n^3` multiply-adds each, at the
//! machine's measured cost per multiply-add ([`MachineCosts::matmul_madd_ps`]),
//! and the worker's three matrices are its cache footprint (refilled after a
//! migration). The main thread wakes once a second: it turns the requests
//! completed in that second into one RPS sample, zeroes the statistics once
//! when the warm-up has passed (and every `-z` seconds), prints the interval
//! report every `-i` seconds and the final report after `-r` seconds. Here
//! that bookkeeping is done as the simulated time passes each second, on
//! fixed-size histograms ([`SchbenchBook`]): it reads counters and
//! schedules nothing the run depends on, so the main thread itself still
//! just sleeps and wakes once a second.
//!
//! Old (2016-2019, output of 2019-08): workers spin `-c` us, then ask for
//! service; the message thread, after each wake-up, usleeps `-s` us plus a
//! jitter of up to a quarter of that (a per-thread `rand_r` stream in
//! schbench; a seeded [`crate::rng`] stream here), then wakes everyone
//! queued. One "Latency percentiles" table.
//!
//! RPS mode (new version, `-R N`): each message thread hands out `N / M`
//! requests a second. A cycle stamps its start, gives one request at a
//! time to its workers round-robin (`cur++ % T`, the position kept across
//! cycles), skipping, after a 100 us usleep, a worker with more than 128
//! pending ([`Op::ReqBackoff`]); a request goes onto the worker's queue
//! with the wake time and a post of its futex ([`Op::ReqPush`]). Then it
//! sleeps out the rest of the second ([`Op::USleepRest`]). A worker takes
//! its queued requests without waiting and records a wakeup latency only
//! for one it slept for ([`Op::ReqTakeOrWait`]); the request itself, and
//! its latency from `work_start` (queueing left out), are the closed
//! loop's. The reports are the closed loop's.
//!
//! Not modelled: pipe mode (`-p`), auto-RPS
//! (`-A`), autobench (`-a`), pinning (`-M`/`-W`; use `--cpus`) and the
//! `sched delay` line (the engine keeps no per-task schedstat run delay),
//! which is therefore left out of the reports. The old version's spin is
//! CPU work here, while schbench's spin polls the wall clock: a spinner
//! preempted mid-spin really stops sooner after it runs again.
//!
//! [`MachineCosts::matmul_madd_ps`]: crate::costs::MachineCosts::matmul_madd_ps

use crate::engine::Engine;
use crate::rng::Rng;
use crate::rq::RunQueue;
use crate::task::{FutexId, ListId, LockSetId, Op, TaskId, TaskSpec};
use crate::Nanos;
use benchspec::plat::Plat;
pub use benchspec::schbench::Schbench;
use benchspec::schbench::{
    average_rps_line, current_rps_line, old_latency_table, LatencySummary, RpsSummary, Tables,
};
use benchspec::SpecError;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Metric of the wakeup latencies (ns, as recorded).
pub const METRIC_WAKEUP: u8 = 0;
/// Metric of the request latencies (ns).
pub const METRIC_REQUEST: u8 = 1;
/// Metric counting completed requests (one sample of 1 per request).
pub const METRIC_LOOPS: u8 = 2;
/// Task variable holding the wake time written by the message thread.
pub const VAR_WAKE: u8 = 0;
/// Task variable holding the request start.
pub const VAR_START: u8 = 1;
/// RPS mode: message-thread variable holding the start of its cycle.
pub const VAR_CYCLE: u8 = 2;
/// RPS mode: metric counting the requests handed out, kept as one-second
/// summaries (see `Engine::summarise_metric`), not as samples.
pub const METRIC_PUSHED: u8 = 3;
/// RPS mode: a worker with more pending requests than this is skipped
/// (schbench's limit).
pub const RPS_PENDING_LIMIT: u32 = 128;
/// RPS mode: the message thread's usleep when it skips a worker (100 us in
/// schbench).
const RPS_BACKOFF_NS: Nanos = 100 * US;

const SEC: Nanos = 1_000_000_000;
const US: Nanos = 1_000;
/// Random stream of message thread `i`'s jitter is `JITTER_STREAM + i`
/// (the engine uses low stream numbers).
const JITTER_STREAM: u64 = 0x5c4b_0000;
/// At most this many message-thread iterations, each with its own jitter,
/// are written out; the program repeats them when a run needs more.
const MAX_JITTERS: u64 = 4096;
/// More threads than this are refused (as the native port does).
pub const MAX_THREADS: u64 = 100_000;

/// Which schbench.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Version {
    /// The spinning 2016-2019 schbench.
    Old,
    /// The 2023+ rework.
    New,
}

/// A schbench model: the tool's parameters plus what the run resolves
/// (machine CPU count, seed, multiply-add cost).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchbenchSim {
    /// Which schbench.
    pub version: Version,
    /// `-m -t -r -s -F -n -w -i -z -R -L -C`. For the old version `-s` is
    /// its `sleeptime` (the message thread's delay).
    pub bench: Schbench,
    /// The old version's `-c`: microseconds each worker spins.
    pub cputime_usec: u32,
    /// `--split`: percent of the footprint private to each worker (None:
    /// all private, no split).
    pub split_percent: Option<u32>,
    /// CPUs of the machine (schbench's `get_nprocs`, whatever `--cpus`
    /// says): the default worker count and the number of per-CPU locks.
    #[serde(skip)]
    pub nprocs: usize,
    /// Seed of the old version's jitter.
    #[serde(skip)]
    pub seed: u64,
    /// One multiply-add of the matrix work, ps (the machine's, 0 with
    /// costs off).
    #[serde(skip)]
    pub madd_ps: u64,
}

impl SchbenchSim {
    /// The new schbench with its defaults.
    pub fn new_version() -> Self {
        SchbenchSim {
            version: Version::New,
            bench: Schbench::default(),
            cputime_usec: 0,
            split_percent: None,
            nprocs: 1,
            seed: 1,
            madd_ps: 0,
        }
    }

    /// The old schbench with its defaults: 2 message threads of 16
    /// workers, 30 s, 30000 us of sleep and of spin (its help text says
    /// 10000; the code uses 30000).
    pub fn old_version() -> Self {
        SchbenchSim {
            version: Version::Old,
            bench: Schbench {
                message_threads: 2,
                worker_threads: Some(16),
                runtime: 30,
                sleep_usec: 30_000,
                ..Schbench::default()
            },
            cputime_usec: 30_000,
            ..Self::new_version()
        }
    }

    /// Workers per message thread.
    pub fn workers(&self) -> u32 {
        self.bench.workers(self.nprocs)
    }

    /// Threads besides the main one.
    pub fn threads(&self) -> u64 {
        self.bench.threads(self.nprocs)
    }

    /// Checks what schbench checks, and what a simulation cannot do.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.bench.validate()?;
        let err = |flag, problem: &str| {
            Err(SpecError {
                flag,
                problem: problem.into(),
            })
        };
        if self.bench.runtime == 0 {
            // schbench runs until interrupted; a simulation needs an end
            return err(
                "-r/--runtime",
                "0 (run until interrupted) cannot be simulated: give seconds > 0",
            );
        }
        if self.bench.rps > 0 && self.version == Version::Old {
            return err(
                "-R/--rps",
                "RPS mode of the old schbench is not modelled (use --version new)",
            );
        }
        if matches!(self.split_percent, Some(p) if p > 100) {
            return err("--split", "must be between 0 and 100");
        }
        if self.bench.footprint_kb > 1 << 20 {
            return err("-F", "more than 1 GiB of matrices per worker");
        }
        if self.version == Version::Old && (1..4).contains(&self.bench.sleep_usec) {
            // rand() % (sleeptime / 4) divides by zero in the old schbench
            return err(
                "-s/--sleeptime",
                "of 1 to 3 us crashes the old schbench (its jitter is rand() % (sleeptime / 4))",
            );
        }
        if self.threads() > MAX_THREADS {
            return err(
                "-m/-t",
                &format!(
                    "{} threads is more than the simulator supports ({MAX_THREADS})",
                    self.threads()
                ),
            );
        }
        Ok(())
    }

    /// Side of the matrices and the multiplications on them: (private n,
    /// private operations, shared n, shared operations). With `--split P`
    /// schbench sizes a private matrix set from P % of the footprint and
    /// one set shared by every worker from the rest, and splits the
    /// operations the same way (integer percentages, as schbench.c does).
    pub fn matrices(&self) -> (u64, u64, u64, u64) {
        let ops = self.bench.operations as u64;
        let side = |kb: u64| ((kb * 1024 / 3 / 8) as f64).sqrt() as u64;
        match self.split_percent {
            None => (self.bench.matrix_size() as u64, ops, 0, 0),
            Some(p) => {
                let p = p as u64;
                let f = self.bench.footprint_kb as u64;
                let priv_ops = ops * p / 100;
                (
                    side(f * p / 100),
                    priv_ops,
                    side(f * (100 - p) / 100),
                    ops - priv_ops,
                )
            }
        }
    }

    /// User work of one request's multiplications, ns: `n^3` multiply-adds
    /// per multiplication. Capped just past the runtime: a request that
    /// cannot finish within the run behaves the same whatever its length.
    pub fn math_ns(&self) -> Nanos {
        let (np, op, ns, os) = self.matrices();
        let madds = op as u128 * (np as u128).pow(3) + os as u128 * (ns as u128).pow(3);
        let ns_total = madds * self.madd_ps as u128 / 1000;
        ns_total.min(self.run_ns() as u128 + SEC as u128) as Nanos
    }

    /// Cache lines of a worker's private matrices (three of `n x n`
    /// 8-byte words): what a migrated worker refills. The shared matrices
    /// of `--split` are every worker's and are not counted.
    pub fn footprint_lines(&self) -> u32 {
        let (np, _, _, _) = self.matrices();
        (3 * np * np * 8 / 64).min(u32::MAX as u64) as u32
    }

    fn run_ns(&self) -> Nanos {
        self.bench.runtime as Nanos * SEC
    }

    /// The lines schbench prints before it starts: the worker count it
    /// picked, and the sizes of a split.
    fn preamble(&self) -> String {
        let mut s = String::new();
        if self.version == Version::New {
            if let Some(l) = self.bench.setting_workers_line(self.nprocs) {
                s.push_str(&l);
            }
            if let Some(p) = self.split_percent {
                let f = self.bench.footprint_kb as u64;
                let (np, _, ns, _) = self.matrices();
                s.push_str(&format!(
                    "split mode: {p}% private ({} KB per thread), {}% shared ({} KB total)\n",
                    f * p as u64 / 100,
                    100 - p,
                    f * (100 - p as u64) / 100
                ));
                s.push_str(&format!("matrix sizes: private={np}, shared={ns}\n"));
            }
        }
        s
    }

    fn worker_program(
        &self,
        list: ListId,
        own: FutexId,
        msg: FutexId,
        locks: LockSetId,
    ) -> Vec<Op> {
        // msg_and_wait: mark ourselves blocked, read the clock into the
        // wake time (the message thread overwrites it), queue, post the
        // message thread, wait unless it already woke us, then record
        let ask = [
            Op::FutexSet {
                futex: own,
                blocked: true,
            },
            Op::Stamp(VAR_WAKE),
            Op::ListPush { list, futex: own },
            Op::FutexPost(msg),
            Op::FutexWait(own),
            Op::RecordSince {
                metric: METRIC_WAKEUP,
                var: VAR_WAKE,
            },
        ];
        let mut p = vec![Op::Loop(u32::MAX)];
        match self.version {
            Version::Old => {
                // usec_spin(cputime), then ask
                if self.cputime_usec > 0 {
                    p.push(Op::Compute(self.cputime_usec as Nanos * US));
                }
                p.extend(ask);
            }
            Version::New => {
                p.extend(ask);
                p.extend(self.request(locks));
            }
        }
        p.push(Op::EndLoop);
        p
    }

    /// RPS mode worker: take the next request from its own queue, or wait
    /// for one (recording the wakeup latency only then), and serve it.
    fn rps_worker_program(&self, queue: ListId, own: FutexId, locks: LockSetId) -> Vec<Op> {
        let mut p = vec![
            Op::Loop(u32::MAX),
            Op::ReqTakeOrWait {
                queue,
                futex: own,
                metric: METRIC_WAKEUP,
                var: VAR_WAKE,
            },
        ];
        p.extend(self.request(locks));
        p.push(Op::EndLoop);
        p
    }

    /// The new version's request, once the worker has one: the request
    /// clock starts after the wake-up (queueing is not part of it).
    fn request(&self, locks: LockSetId) -> Vec<Op> {
        let b = &self.bench;
        let mut p = Vec::new();
        let sleep = b.sleep_usec as Nanos * US;
        // calibration leaves the sleep out of the request time
        if b.calibrate && sleep > 0 {
            p.push(Op::USleep(sleep));
        }
        p.push(Op::Stamp(VAR_START));
        if !b.calibrate && sleep > 0 {
            p.push(Op::USleep(sleep));
        }
        let lock = !b.no_locking && !b.calibrate;
        if lock {
            p.push(Op::LockCpu(locks));
        }
        let math = self.math_ns();
        if math > 0 {
            p.push(Op::Compute(math));
        }
        if lock {
            p.push(Op::UnlockCpu(locks));
        }
        p.extend([
            Op::RecordSince {
                metric: METRIC_REQUEST,
                var: VAR_START,
            },
            Op::Note {
                metric: METRIC_LOOPS,
                value: 1,
            },
        ]);
        p
    }

    /// RPS mode message thread, after it created its workers: each cycle
    /// stamps its start, hands `rps / M` requests round-robin to its
    /// workers (`cur++ % T`, continued across cycles; a worker with more
    /// than 128 pending is skipped after a 100 us usleep) and sleeps out
    /// the rest of the second. The cycles are written out until the
    /// round-robin start repeats (or the run ends), then repeated.
    fn rps_message_loop(&self, workers: &[(ListId, TaskId, FutexId)]) -> Vec<Op> {
        let t = workers.len() as u64;
        let per = (self.bench.rps / self.bench.message_threads).max(1) as u64;
        let cycles = (t / gcd(per, t)).min(self.bench.runtime as u64 + 1);
        let push = |p: &mut Vec<Op>, k: u64| {
            let (queue, worker, futex) = workers[k as usize];
            p.extend([
                Op::ReqBackoff {
                    queue,
                    limit: RPS_PENDING_LIMIT,
                    sleep_ns: RPS_BACKOFF_NS as u32,
                },
                Op::ReqPush {
                    queue,
                    worker,
                    futex,
                    var: VAR_WAKE,
                    metric: METRIC_PUSHED,
                },
            ]);
        };
        let mut p = vec![Op::Loop(u32::MAX)];
        let mut cur = 0u64;
        for _ in 0..cycles {
            p.push(Op::Stamp(VAR_CYCLE));
            // from worker `cur` to the end of the ring, whole rounds, then
            // the rest
            let head = per.min(t - cur);
            for k in cur..cur + head {
                push(&mut p, k);
            }
            let left = per - head;
            if left / t > 0 {
                p.push(Op::Loop((left / t).min(u32::MAX as u64) as u32));
                for k in 0..t {
                    push(&mut p, k);
                }
                p.push(Op::EndLoop);
            }
            for k in 0..left % t {
                push(&mut p, k);
            }
            cur = (cur + per) % t;
            p.push(Op::USleepRest {
                period: SEC,
                var: VAR_CYCLE,
            });
        }
        p.push(Op::EndLoop);
        p
    }

    /// The message thread after it created its workers: mark itself
    /// blocked, wake the batch, wait for the next post; the old one then
    /// sleeps `sleeptime + rand() % (sleeptime / 4)` us.
    fn message_loop(&self, i: u32, list: ListId, own: FutexId) -> Vec<Op> {
        let body = [
            Op::FutexSet {
                futex: own,
                blocked: true,
            },
            Op::ListTakeStampPost {
                list,
                var: VAR_WAKE,
            },
            Op::FutexWait(own),
        ];
        let mut p = vec![Op::Loop(u32::MAX)];
        let sleep = self.bench.sleep_usec as u64;
        if self.version == Version::Old && sleep > 0 {
            // each iteration sleeps at least `sleep`, so the run needs at
            // most runtime / sleep + 1 of them: write out that many
            // jitters (up to MAX_JITTERS, then they repeat)
            let mut rng = Rng::stream(self.seed, JITTER_STREAM + i as u64);
            let n = (self.run_ns() / (sleep * US) + 1).min(MAX_JITTERS);
            for _ in 0..n {
                p.extend(body);
                let jitter = rng.below(sleep / 4);
                p.push(Op::USleep((sleep + jitter) * US));
            }
        } else {
            p.extend(body);
        }
        p.push(Op::EndLoop);
        p
    }

    /// The bookkeeping of a run, empty: what the main thread keeps.
    pub fn book(&self) -> SchbenchBook {
        let b = &self.bench;
        SchbenchBook::new(
            self.version,
            b.runtime as u64,
            b.warmup_secs() as u64,
            b.interval as u64,
            b.zerotime as u64,
        )
    }

    /// The run's bookkeeping, brought to its end: the engine's sink (a
    /// copy of it), or an empty one if the run recorded nothing.
    fn finished_book(&self, rec: &super::Record) -> SchbenchBook {
        let mut book = rec
            .sink::<SchbenchBook>()
            .cloned()
            .unwrap_or_else(|| self.book());
        book.finish();
        book
    }

    /// New version: the main thread's once-a-second bookkeeping, done as
    /// the run went ([`SchbenchBook`]), and its final report.
    fn report_new(&self, rec: &super::Record) -> super::Report {
        let book = self.finished_book(rec);
        let r = book.runtime;
        let mut text = self.preamble();
        text.push_str(&book.text);
        // the final report's runtime is -r, and its average rate counts
        // every request of the run (loop_count is never zeroed)
        let average = book.total_loops as f64 / r as f64;
        let t = Tables {
            wakeup: &book.wake,
            request: &book.req,
            rps: &book.rps,
            runtime_s: r,
        };
        text.push_str(&t.text());
        text.push_str(&average_rps_line(average));
        let mut json = self.json_common();
        // as `bench schbench --json`: the seconds the tables cover
        json.insert("runtime_s".into(), json!(r - book.zero_time));
        json.insert(
            "wakeup_latency_us".into(),
            to_value(LatencySummary::of(&book.wake)),
        );
        json.insert(
            "request_latency_us".into(),
            to_value(LatencySummary::of(&book.req)),
        );
        json.insert("rps".into(), to_value(RpsSummary::of(&book.rps)));
        json.insert("average_rps".into(), json!(round2(average)));
        super::Report {
            files: Vec::new(),
            text,
            json,
            time_ns: self.run_ns(),
        }
    }

    /// Old version: one table of every wakeup latency of the run.
    fn report_old(&self, rec: &super::Record) -> super::Report {
        let book = self.finished_book(rec);
        let mut json = self.json_common();
        json.insert("runtime_s".into(), json!(self.bench.runtime));
        json.insert(
            "wakeup_latency_us".into(),
            to_value(LatencySummary::of(&book.wake)),
        );
        super::Report {
            files: Vec::new(),
            text: old_latency_table(&book.wake),
            json,
            time_ns: self.run_ns(),
        }
    }

    /// Bytes of the text of one interval report (the three tables and the
    /// current rate line), rounded up from what the tables print: 19
    /// lines of at most about 60 bytes.
    pub const INTERVAL_REPORT_BYTES: u64 = 1536;

    /// What the run's reports hold, bytes: the bookkeeping's histograms
    /// (twice: the report finishes a copy) and the text of every interval
    /// report (`-r / -i` of them, every second with `-i 0`) and of the
    /// final one. It does not grow with the samples.
    pub fn report_bytes(&self) -> u64 {
        let reports = match self.version {
            Version::Old => 1,
            Version::New => self.bench.runtime as u64 / (self.bench.interval as u64).max(1) + 2,
        };
        2 * SchbenchBook::HISTOGRAM_BYTES + reports * Self::INTERVAL_REPORT_BYTES
    }

    fn json_common(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("version".into(), to_value(self.version));
        m.insert("message_threads".into(), json!(self.bench.message_threads));
        m.insert("worker_threads".into(), json!(self.workers()));
        m
    }
}

fn to_value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("serialisable")
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn zero(hs: &mut [&mut Plat]) {
    for h in hs {
        h.clear();
    }
}

/// schbench's statistics as its main thread keeps them, fed each sample as
/// the run records it (the engine's [`MetricSink`]): three histograms of
/// fixed size (wakeup and request latencies, requests per second) and the
/// counters of its once-a-second loop, so that a run of any length holds
/// the same memory (only the interval reports' text grows, one report per
/// `-i` seconds).
///
/// The new version's main thread wakes at 1, 2 ... `-r` seconds; at second
/// `n` it has every sample recorded up to `n` s (schbench's workers add
/// their samples to their own histograms, which the main thread combines
/// when it reports, `combine_stats`). The book does the work of second
/// `n` when the first sample past it arrives (or when the run is
/// finished): the samples of later seconds cannot change it. The old
/// version keeps every wakeup latency of the run in one histogram.
///
/// [`MetricSink`]: crate::engine::MetricSink
#[derive(Clone, Debug)]
pub struct SchbenchBook {
    version: Version,
    runtime: u64,
    warmup: u64,
    interval: u64,
    zerotime: u64,
    /// The next second whose bookkeeping is due.
    next: u64,
    wake: Plat,
    req: Plat,
    rps: Plat,
    /// Requests completed up to the last sample.
    loops: u64,
    /// Every request of the run (schbench's `loop_count` total).
    total_loops: u64,
    /// (second, loops) of the last RPS sample.
    last_rps: (u64, u64),
    /// Second of the last interval report.
    last_calc: u64,
    /// Second of the last zeroing.
    zero_time: u64,
    warmed: bool,
    /// The interval reports so far.
    text: String,
}

impl SchbenchBook {
    /// Bytes of the buckets of its three histograms.
    pub const HISTOGRAM_BYTES: u64 = (3 * benchspec::plat::PLAT_NR * 8) as u64;

    /// The bookkeeping of a run of `runtime` seconds, `warmup` seconds of
    /// warm-up, reports every `interval` and zeroing every `zerotime`
    /// seconds (0: never), before its first sample.
    pub fn new(version: Version, runtime: u64, warmup: u64, interval: u64, zerotime: u64) -> Self {
        SchbenchBook {
            version,
            runtime,
            warmup,
            interval,
            zerotime,
            next: 1,
            wake: Plat::default(),
            req: Plat::default(),
            rps: Plat::default(),
            loops: 0,
            total_loops: 0,
            last_rps: (0, 0),
            last_calc: 0,
            zero_time: 0,
            warmed: warmup == 0,
            text: String::new(),
        }
    }

    /// The main loop's work at second `n` (schbench's main thread after
    /// its one-second sleep: the RPS sample, the zeroing at the end of the
    /// warm-up and every `-z` seconds, the interval report). Its RPS is 0/0
    /// at second 0, which it therefore does not count.
    fn second(&mut self, n: u64) {
        if !self.warmed && n >= self.warmup {
            self.warmed = true;
            self.text.push_str("warmup done, zeroing stats\n");
            zero(&mut [&mut self.wake, &mut self.req, &mut self.rps]);
            self.zero_time = n;
        } else {
            // requests per second since the last count, truncated to an
            // integer as schbench's add_lat takes it
            let (last_n, last_loops) = self.last_rps;
            let cur = (self.loops - last_loops) as f64 / (n - last_n) as f64;
            self.rps.add(cur.min(u32::MAX as f64) as u32);
            self.last_rps = (n, self.loops);
            // -i 0 reports every second, as schbench's `delta >= interval`
            // does
            if n - self.last_calc >= self.interval {
                self.last_calc = n;
                let t = Tables {
                    wakeup: &self.wake,
                    request: &self.req,
                    rps: &self.rps,
                    runtime_s: n,
                };
                self.text.push_str(&t.text());
                self.text.push_str(&current_rps_line(cur));
            }
        }
        if self.zerotime > 0 && n - self.zero_time >= self.zerotime {
            self.zero_time = n;
            zero(&mut [&mut self.wake, &mut self.req, &mut self.rps]);
        }
    }

    /// Do the work of every second before `at` not yet done; false when
    /// `at` is past the run (its sample is in no table).
    fn catch_up(&mut self, at: Nanos) -> bool {
        if self.version == Version::Old {
            return true;
        }
        while self.next <= self.runtime && self.next * SEC < at {
            self.second(self.next);
            self.next += 1;
        }
        at <= self.runtime * SEC
    }

    /// Do the work of the seconds left, to the end of the run.
    fn finish(&mut self) {
        if self.version == Version::New {
            while self.next <= self.runtime {
                self.second(self.next);
                self.next += 1;
            }
        }
    }
}

impl crate::engine::MetricSink for SchbenchBook {
    fn record(&mut self, metric: u8, at: Nanos, value: Nanos) {
        if metric == METRIC_LOOPS {
            self.total_loops += 1;
        }
        if !self.catch_up(at) {
            return;
        }
        match metric {
            METRIC_WAKEUP => {
                if let Some(us) = latency_us(at, value) {
                    self.wake.add(us);
                }
            }
            METRIC_REQUEST => {
                if let Some(us) = latency_us(at, value) {
                    self.req.add(us);
                }
            }
            METRIC_LOOPS => self.loops += 1,
            _ => {}
        }
    }

    fn fresh(&self) -> Box<dyn crate::engine::MetricSink> {
        Box::new(SchbenchBook::new(
            self.version,
            self.runtime,
            self.warmup,
            self.interval,
            self.zerotime,
        ))
    }

    fn bytes(&self) -> u64 {
        Self::HISTOGRAM_BYTES + self.text.capacity() as u64
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// What schbench records for a latency of `v` ns ending at `at`: the
/// difference of two microsecond clock readings, dropped when it is 0.
pub fn latency_us(at: Nanos, v: Nanos) -> Option<u32> {
    let d = at / US - at.saturating_sub(v) / US;
    (d > 0).then_some(d.min(u32::MAX as u64) as u32)
}

impl super::Workload for SchbenchSim {
    fn name(&self) -> &'static str {
        "schbench"
    }

    /// Main thread (task 0) creates the message threads; message thread
    /// `i` creates its workers, declared right after it.
    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, _first_cpu: usize) {
        let m = self.bench.message_threads;
        let t = self.workers();
        let locks = e.add_cpu_locks();
        let mut main = Vec::with_capacity(m as usize + 4);
        for i in 0..m {
            main.push(Op::Spawn {
                child: TaskId(1 + i * (t + 1)),
            });
        }
        // the main thread sleeps (sleep(3): an hrtimer sleep with the
        // timer slack) until the runtime is up: the new one a second at a
        // time, the old one all of it at once
        if self.version == Version::Old {
            main.push(Op::USleep(self.run_ns()));
        }
        main.extend([Op::Loop(u32::MAX), Op::USleep(SEC), Op::EndLoop]);
        let spec = |name: &str, program: Vec<Op>, parent, footprint_lines| TaskSpec {
            name: name.into(),
            program: program.into(),
            mm: 0,
            parent,
            spawned: parent.is_some(),
            start_cpu: None,
            nice: 0,
            footprint_lines,
        };
        let main_id = e.add_task(spec("schbench", main, None, 0));
        e.set_metric_sink(Box::new(self.book()));
        let footprint = match self.version {
            Version::New => self.footprint_lines(),
            Version::Old => 0,
        };
        if self.bench.rps > 0 {
            // the requests handed out, counted per second
            e.summarise_metric(METRIC_PUSHED, SEC, u32::MAX);
            for i in 0..m {
                let msg_id = TaskId(1 + i * (t + 1));
                // worker k of this message thread: (its request queue,
                // its id, its futex word); the queues are the engine's
                // wait lists in worker order
                let workers: Vec<(ListId, TaskId, FutexId)> = (1..=t)
                    .map(|k| (e.add_req_queue(), TaskId(msg_id.0 + k), e.add_futex()))
                    .collect();
                let mut prog: Vec<Op> = (1..=t)
                    .map(|k| Op::Spawn {
                        child: TaskId(msg_id.0 + k),
                    })
                    .collect();
                prog.extend(self.rps_message_loop(&workers));
                let id = e.add_task(spec("schbench-msg", prog, Some(main_id), 0));
                debug_assert_eq!(id, msg_id);
                for &(queue, _, own) in &workers {
                    let prog = self.rps_worker_program(queue, own, locks);
                    e.add_task(spec("schbench-worker", prog, Some(msg_id), footprint));
                }
            }
            return;
        }
        for i in 0..m {
            let list = e.add_wait_list();
            let mfutex = e.add_futex();
            let msg_id = TaskId(1 + i * (t + 1));
            let mut prog: Vec<Op> = (1..=t)
                .map(|k| Op::Spawn {
                    child: TaskId(msg_id.0 + k),
                })
                .collect();
            prog.extend(self.message_loop(i, list, mfutex));
            let id = e.add_task(spec("schbench-msg", prog, Some(main_id), 0));
            debug_assert_eq!(id, msg_id);
            for _ in 0..t {
                let own = e.add_futex();
                let prog = self.worker_program(list, own, mfutex, locks);
                e.add_task(spec("schbench-worker", prog, Some(msg_id), footprint));
            }
        }
    }

    fn stop(&self) -> super::Stop {
        super::Stop::At(self.run_ns())
    }

    fn report(&self, rec: &super::Record) -> super::Report {
        match self.version {
            Version::New => self.report_new(rec),
            Version::Old => self.report_old(rec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microsecond_deltas_follow_the_clock_readings() {
        // 300 ns that cross a microsecond boundary read as 1 us
        assert_eq!(latency_us(2_100, 300), Some(1));
        assert_eq!(latency_us(2_900, 800), None);
        assert_eq!(latency_us(5_000, 5_000), Some(5));
        assert_eq!(latency_us(0, 0), None);
    }

    #[test]
    fn matrices_and_work() {
        let mut s = SchbenchSim::new_version();
        assert_eq!(s.matrices(), (104, 5, 0, 0));
        assert_eq!(s.footprint_lines(), 3 * 104 * 104 / 8);
        s.madd_ps = 1000;
        assert_eq!(s.math_ns(), 5 * 104u64.pow(3));
        s.split_percent = Some(40);
        // 40% of 256 KB = 102 KB private, 153 KB shared; 2 of 5 ops private
        let side = |kb: u64| ((kb * 1024 / 24) as f64).sqrt() as u64;
        assert_eq!(s.matrices(), (side(102), 2, side(153), 3));
        s.madd_ps = 0;
        assert_eq!(s.math_ns(), 0);
        s.madd_ps = u64::MAX;
        assert_eq!(s.math_ns(), 31 * SEC, "capped past the run");
    }

    #[test]
    fn validation_names_the_flag() {
        let new = SchbenchSim::new_version;
        for (mut s, flag) in [
            (new(), "-r/--runtime"),
            (SchbenchSim::old_version(), "-R/--rps"),
            (new(), "--split"),
            (SchbenchSim::old_version(), "-s/--sleeptime"),
            (new(), "-m/-t"),
        ] {
            match flag {
                "-r/--runtime" => s.bench.runtime = 0,
                "-R/--rps" => s.bench.rps = 10,
                "--split" => s.split_percent = Some(101),
                "-s/--sleeptime" => s.bench.sleep_usec = 3,
                _ => s.bench.worker_threads = Some(200_000),
            }
            assert_eq!(s.validate().unwrap_err().flag, flag);
        }
        assert!(new().validate().is_ok());
        let mut rps = new();
        rps.bench.rps = 10;
        assert!(rps.validate().is_ok());
        assert!(SchbenchSim::old_version().validate().is_ok());
    }
}
