//! An OpenMP team as the NPB models build it: one process (one mm) whose
//! thread 0 is the master, every thread with its own program, and the
//! constructs the NPB OpenMP codes use, each turned into ops:
//!
//! - a parallel region (`!$omp parallel` / `!$omp end parallel`): the
//!   pool's dock barrier at the start (the master arrives last, after its
//!   serial code, and releases the others, libgomp team.c) and the team
//!   barrier at its end;
//! - a worksharing loop (`!$omp do`, `schedule(static)`): each thread one
//!   compute op over its contiguous chunk ([`static_chunk`]), with the
//!   memory it touches, then the implicit barrier unless `nowait`;
//! - a reduction: an atomic combine per thread before the barrier;
//! - serial code: an op of the master's only (`!$omp master`, or code
//!   between regions, which the master runs while the pool waits at the
//!   dock).
//!
//! One worksharing loop is one op per thread, whatever its iterations: the
//! event count of a run is (constructs per step) x (threads) x (steps).
//!
//! Memory: an array is a region of the process; a thread's op touches the
//! part of each array its iterations cover, as [`Touch`] says, and moves
//! the bytes the kernel's model gives. The model places no page itself:
//! the first op that touches a page places it (first touch), which is how
//! NPB's parallel initialisation loops put each thread's slab near it.

use crate::engine::{Engine, OmpBarrierId, OmpFlagId};
use crate::numa::{AccessId, RegionId, Span};
use crate::rq::RunQueue;
use crate::task::{Op, TaskId, TaskSpec};
use crate::Nanos;

/// The iterations `[start, start + len)` thread `i` of `threads` runs of a
/// loop of `n` iterations under `schedule(static)` without a chunk size:
/// `n / threads` each, and the first `n % threads` threads one more
/// (libgomp iter.c `gomp_iter_static_next`, the unchunked case).
pub fn static_chunk(n: u64, threads: u32, i: u32) -> (u64, u64) {
    let t = threads.max(1) as u64;
    let i = i as u64;
    let q = n / t;
    let r = n % t;
    if i < r {
        ((q + 1) * i, q + 1)
    } else {
        (q * i + r, q)
    }
}

/// An array of the benchmark: its region and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array {
    /// The region.
    pub region: RegionId,
    /// Bytes.
    pub bytes: u64,
}

/// What a thread's share of a loop touches in one array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Touch {
    /// The slab of the array its iterations cover (the array's outer
    /// index is the loop's), moving `passes` times the slab.
    Slab(Array, f64),
    /// A `1/threads` share spread over the whole array (the loop runs
    /// over an inner index of the array, e.g. z_solve's `j` loop over a
    /// `k`-major array): the range is the whole array, the traffic
    /// `passes` times the thread's share. Each of the thread's iterations
    /// walks the whole array in address order (its `j` line through every
    /// `k`-plane), so the op walks it once per iteration.
    Spread(Array, f64),
    /// A `1/threads` share spread over the whole array and reached in no
    /// address order (an indirect scatter or gather: IS's key scatter,
    /// UA's mortar gather and remap): the range is the whole array, the
    /// traffic `passes` times the thread's share, every page reached all
    /// through the op.
    Scatter(Array, f64),
    /// The whole array, with this many bytes of traffic per thread (a
    /// shared vector gathered by every thread, e.g. CG's `p`), reached in
    /// no address order.
    Shared(Array, u64),
}

/// The runtime parameters of the team (engine/omp.rs, libgomp env.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runtime {
    /// Threads (OMP_NUM_THREADS).
    pub threads: u32,
    /// A barrier waiter's spin before FUTEX_WAIT, ns.
    pub spin_ns: Nanos,
}

/// The team under construction.
pub struct Team<'e, 't, R: RunQueue> {
    e: &'e mut Engine<'t, R>,
    rt: Runtime,
    mm: u32,
    progs: Vec<Vec<Op>>,
    bar: OmpBarrierId,
    ns_per_op: f64,
}

impl<'e, 't, R: RunQueue> Team<'e, 't, R> {
    /// A team of `rt.threads` threads of address space `mm`; `ns_per_op`:
    /// the CPU time of one counted operation at full speed.
    pub fn new(e: &'e mut Engine<'t, R>, rt: Runtime, mm: u32, ns_per_op: f64) -> Self {
        let bar = e.add_omp_barrier(rt.threads, rt.spin_ns);
        Team {
            e,
            rt,
            mm,
            progs: vec![Vec::new(); rt.threads as usize],
            bar,
            ns_per_op,
        }
    }

    /// Threads.
    pub fn threads(&self) -> u32 {
        self.rt.threads
    }

    /// Declare an array of `bytes`.
    pub fn array(&mut self, name: &str, bytes: u64) -> Array {
        Array {
            region: self.e.add_region(self.mm, name, bytes.max(1)),
            bytes: bytes.max(1),
        }
    }

    /// A point-to-point flag.
    pub fn flag(&mut self) -> OmpFlagId {
        self.e.add_omp_flag()
    }

    /// Append `op` to thread `i`'s program.
    pub fn push(&mut self, i: u32, op: Op) {
        self.progs[i as usize].push(op);
    }

    /// Append `op` to every thread's program.
    pub fn all(&mut self, op: Op) {
        for p in &mut self.progs {
            p.push(op);
        }
    }

    /// The start of a parallel region (the dock barrier).
    pub fn fork(&mut self) {
        self.all(Op::OmpBarrier(self.bar));
    }

    /// The end of a parallel region (its closing barrier).
    pub fn join(&mut self) {
        self.all(Op::OmpBarrier(self.bar));
    }

    /// An explicit or implicit barrier.
    pub fn barrier(&mut self) {
        self.all(Op::OmpBarrier(self.bar));
    }

    /// Every thread combines its partial into a reduction variable.
    pub fn reduce(&mut self) {
        self.all(Op::OmpReduce(self.bar));
    }

    /// `n` repetitions of what the body adds (an `Op::Loop` in every
    /// program).
    pub fn repeat(&mut self, n: u32, body: impl FnOnce(&mut Self)) {
        if n == 0 {
            return;
        }
        self.all(Op::Loop(n));
        body(self);
        self.all(Op::EndLoop);
    }

    /// The CPU time of `ops` counted operations.
    pub fn work_ns(&self, ops: f64) -> Nanos {
        (ops * self.ns_per_op).round().max(0.0) as Nanos
    }

    /// An access of thread `i` whose chunk is `[start, start+len)` of `n`.
    fn access(&mut self, n: u64, start: u64, len: u64, touches: &[Touch]) -> AccessId {
        let spans: Vec<Span> = touches
            .iter()
            .map(|t| match *t {
                Touch::Slab(a, passes) => {
                    let off = mul_div(a.bytes, start, n);
                    let end = mul_div(a.bytes, start + len, n);
                    // the slab, walked once in address order
                    Span {
                        region: a.region,
                        offset: off,
                        len: (end - off).max(1),
                        bytes: ((end - off) as f64 * passes) as u64,
                        sweeps: 1,
                    }
                }
                Touch::Spread(a, passes) => Span {
                    region: a.region,
                    offset: 0,
                    len: a.bytes,
                    bytes: (mul_div(a.bytes, len, n) as f64 * passes) as u64,
                    sweeps: len.clamp(1, u32::MAX as u64) as u32,
                },
                Touch::Scatter(a, passes) => Span {
                    region: a.region,
                    offset: 0,
                    len: a.bytes,
                    bytes: (mul_div(a.bytes, len, n) as f64 * passes) as u64,
                    sweeps: Span::ANY_ORDER,
                },
                Touch::Shared(a, bytes) => Span {
                    region: a.region,
                    offset: 0,
                    len: a.bytes,
                    bytes: if len > 0 { bytes } else { 0 },
                    sweeps: Span::ANY_ORDER,
                },
            })
            .collect();
        self.e.add_access(&spans)
    }

    /// A `schedule(static)` worksharing loop of `n` iterations of
    /// `ops_per_iter` operations each, touching `touches`; the implicit
    /// barrier follows unless `nowait`. A thread without iterations has
    /// no op (it goes straight to the barrier).
    pub fn pfor(&mut self, n: u64, ops_per_iter: f64, touches: &[Touch], nowait: bool) {
        for i in 0..self.rt.threads {
            let (start, len) = static_chunk(n, self.rt.threads, i);
            if len == 0 {
                continue;
            }
            let work = self.work_ns(ops_per_iter * len as f64).max(1);
            let op = if touches.is_empty() {
                Op::Compute(work)
            } else {
                let access = self.access(n, start, len, touches);
                Op::ComputeMem { work, access }
            };
            self.push(i, op);
        }
        if !nowait {
            self.barrier();
        }
    }

    /// A worksharing loop with a reduction: the loop, each thread's
    /// atomic combine, then the barrier.
    pub fn pfor_reduce(&mut self, n: u64, ops_per_iter: f64, touches: &[Touch]) {
        self.pfor(n, ops_per_iter, touches, true);
        self.reduce();
        self.barrier();
    }

    /// Serial code of the master: `ops` operations touching `touches` as
    /// one thread covering the whole of each array.
    pub fn serial(&mut self, ops: f64, touches: &[Touch]) {
        let work = self.work_ns(ops).max(1);
        let op = if touches.is_empty() {
            Op::Compute(work)
        } else {
            let threads = self.rt.threads;
            // as a team of one: the whole range
            self.rt.threads = 1;
            let access = self.access(1, 0, 1, touches);
            self.rt.threads = threads;
            Op::ComputeMem { work, access }
        };
        self.push(0, op);
    }

    /// Thread `i`'s op of `ops` operations touching, of a loop of `n`
    /// iterations, its chunk `[start, start+len)` (for models that place
    /// their own synchronisation around each thread's work, LU's
    /// wavefront).
    pub fn chunk_op(&mut self, i: u32, n: u64, start: u64, len: u64, ops: f64, touches: &[Touch]) {
        let work = self.work_ns(ops).max(1);
        let op = if touches.is_empty() || len == 0 {
            Op::Compute(work)
        } else {
            let access = self.access(n, start, len, touches);
            Op::ComputeMem { work, access }
        };
        self.push(i, op);
    }

    /// Thread `i`'s op of `ops` operations touching exactly `spans` (for
    /// models that know their byte ranges, LU's plane by plane).
    pub fn span_op(&mut self, i: u32, ops: f64, spans: &[Span]) {
        let work = self.work_ns(ops).max(1);
        let op = if spans.is_empty() {
            Op::Compute(work)
        } else {
            Op::ComputeMem {
                work,
                access: self.e.add_access(spans),
            }
        };
        self.push(i, op);
    }

    /// Declare the threads: thread 0 runnable at time 0, the others
    /// created by it (pthread_create in gomp_team_start, at the first
    /// region) before anything else it does.
    pub fn finish(self) {
        let n = self.rt.threads;
        let first = self.e.allowed().first().unwrap_or(0);
        let base = self.e.nr_tasks() as u32;
        let mut progs = self.progs;
        let mut master = Vec::with_capacity(progs[0].len() + n as usize);
        for i in 1..n {
            master.push(Op::Spawn {
                child: TaskId(base + i),
            });
        }
        master.append(&mut progs[0]);
        master.push(Op::Exit);
        progs[0] = master;
        for (i, mut p) in progs.into_iter().enumerate() {
            if i > 0 {
                p.push(Op::Exit);
            }
            self.e.add_task(TaskSpec {
                name: if i == 0 {
                    "npb".into()
                } else {
                    format!("npb-omp{i}")
                },
                program: p.into(),
                mm: self.mm,
                parent: if i == 0 { None } else { Some(TaskId(base)) },
                spawned: i > 0,
                start_cpu: if i == 0 { Some(first) } else { None },
                nice: 0,
                // an HPC thread's private caches are full of its slab
                footprint_lines: 0,
            });
        }
    }
}

/// `a * b / c` without overflow (c > 0).
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    ((a as u128 * b as u128) / c.max(1) as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_chunks_are_exact_and_contiguous() {
        // 10 iterations on 4 threads: 3, 3, 2, 2
        let c: Vec<_> = (0..4).map(|i| static_chunk(10, 4, i)).collect();
        assert_eq!(c, vec![(0, 3), (3, 3), (6, 2), (8, 2)]);
        // fewer iterations than threads: the last get none
        let c: Vec<_> = (0..5).map(|i| static_chunk(3, 5, i)).collect();
        assert_eq!(c, vec![(0, 1), (1, 1), (2, 1), (3, 0), (3, 0)]);
        // 406 interior planes on 88 threads: 54 threads of 5, 34 of 4
        for (n, t) in [(406u64, 88u32), (1 << 20, 88), (7, 7), (1, 1)] {
            let mut next = 0;
            for i in 0..t {
                let (s, l) = static_chunk(n, t, i);
                assert_eq!(s, next);
                assert!(l == n / t as u64 || l == n / t as u64 + 1);
                next = s + l;
            }
            assert_eq!(next, n);
        }
        assert_eq!(static_chunk(406, 88, 53), (53 * 5, 5));
        assert_eq!(static_chunk(406, 88, 54), (54 * 5, 4));
    }
}
