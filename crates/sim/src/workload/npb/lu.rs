//! LU (SSOR with symmetric Gauss-Seidel sweeps), NPB3.3-OMP `LU/`: grid
//! `n^3`, `itmax` iterations (sys/setparams.c: S 12/50, W 33/300, A
//! 64/250, B 102/250, C 162/250, D 408/300; `inorm = itmax`).
//!
//! Each iteration (`ssor.f`) is one parallel region: scale `rsd` (`!$omp
//! do` over k, nowait), a barrier, the lower sweep over the interior
//! k-planes (`jacld` and `blts` for plane k, each a `!$omp do` over the
//! thread's interior j-rows, between `sync_left` and `sync_right`), a
//! barrier, the upper sweep (`jacu`, `buts`, k from the top, the j loop
//! reversed so thread 0 again leads), a barrier, the update of `u`
//! (nowait); then `rhs` (rhs.f: its own region of four `!$omp do`, two of
//! them ending in a barrier, the last over j). The last iteration also
//! computes the residual norms (`l2norm`, a reduction region, twice).
//!
//! The sweeps are a pipelined wavefront: thread i works on plane k once
//! thread i-1 posted that plane (`sync_left` spins on the flag of thread
//! i-1 with `!$omp flush` and clears it; `sync_right` spins until its own
//! flag is clear and sets it). Only `min(threads, n-2)` threads have rows
//! and take part. Each thread's work on one plane is one op.
//!
//! Operations: lu.f's Mop/s formula per iteration, `1984.77 n^3 -
//! 10923.3 n^2 + 27770.9 n - 144010` (n the mean of the three sizes),
//! split (an estimate) 30 % each sweep, 35 % rhs, 2 % scaling, 3 % the
//! update. Memory: `u`, `rsd`, `frct` of 5 values per point; the 5x5
//! Jacobian blocks `a b c d` (and `au bu cu du`) of one plane's rows of a
//! thread stay in its caches. A thread's plane op reads `u` once and
//! reads and writes `rsd` over its rows of the plane, the exact byte
//! ranges of those rows (first touch placed the arrays by k-planes, so a
//! thread's rows of plane k are where the thread owning that k-slab at
//! initialisation ran). The sweeps are unrolled plane by plane in each
//! thread's program (2 x (n-2) ops a sweep), inside the iteration loop.

use super::team::{Array, Team, Touch};
use super::{Class, Info, F64};
use crate::numa::Span;
use crate::rq::RunQueue;
use crate::task::Op;

const N: [u64; 6] = [12, 33, 64, 102, 162, 408];
const ITMAX: [u32; 6] = [50, 300, 250, 250, 250, 300];

fn ops_per_iter(n: u64) -> f64 {
    let n = n as f64;
    (1984.77 * n * n * n - 10923.3 * n * n + 27770.9 * n - 144010.0).max(0.0)
}

/// The report's values.
pub fn info(c: Class) -> Info {
    Info::cube(N[c.index()], ITMAX[c.index()], ops_per_iter)
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let n = N[c.index()];
    let pts = n * n * n;
    let u = t.array("u", 5 * pts * F64);
    let rsd = t.array("rsd", 5 * pts * F64);
    let frct = t.array("frct", 5 * pts * F64);
    // setbv, setiv, erhs: parallel loops over k (first touch)
    t.fork();
    t.pfor(
        n,
        100.0 * (n * n) as f64,
        &[
            Touch::Slab(u, 1.0),
            Touch::Slab(rsd, 1.0),
            Touch::Slab(frct, 1.0),
        ],
        false,
    );
    t.join();
    super::timer_start(t);
    let w = ops_per_iter(n);
    let inner = n.saturating_sub(2).max(1);
    let rows = inner;
    let threads = t.threads();
    let part = (threads as u64).min(rows) as u32;
    let flags: Vec<_> = (0..part.saturating_sub(1)).map(|_| t.flag()).collect();
    // u, rsd: (5, n, n, n) doubles, k the outermost index
    let row = 5 * n * F64;
    let plane = n * row;
    let span = |a: Array, k: u64, j0: u64, rows: u64, passes: u64| Span {
        region: a.region,
        offset: k * plane + j0 * row,
        len: (rows * row).max(1),
        bytes: rows * row * passes,
        // the rows of one plane, walked in order
        sweeps: 1,
    };
    // one sweep: thread i's rows of plane k, k going up (lower) or down
    // (upper, whose j loop also runs backwards so thread 0 has the top
    // rows); the ops are unrolled plane by plane, each with its own rows'
    // byte ranges
    let sweep = |t: &mut Team<'_, '_, R>, upper: bool| {
        for i in 0..part {
            let (start, len) = super::team::static_chunk(rows, threads, i);
            let ops = 0.30 * w / inner as f64 * len as f64 / rows as f64;
            // interior rows are j = 1 ..= n-2 (0-based)
            let j0 = if upper {
                1 + rows - start - len
            } else {
                1 + start
            };
            for step in 0..inner {
                let k = if upper { inner - step } else { 1 + step };
                if i > 0 {
                    t.push(i, Op::OmpFlagWait(flags[i as usize - 1]));
                }
                t.span_op(i, ops, &[span(u, k, j0, len, 1), span(rsd, k, j0, len, 2)]);
                if i + 1 < part {
                    t.push(i, Op::OmpFlagPost(flags[i as usize]));
                }
            }
        }
    };
    t.repeat(ITMAX[c.index()], |t| {
        t.fork();
        t.pfor(
            inner,
            0.02 * w / inner as f64,
            &[Touch::Slab(rsd, 2.0)],
            true,
        );
        t.barrier();
        sweep(t, false);
        t.barrier();
        sweep(t, true);
        t.barrier();
        t.pfor(
            inner,
            0.03 * w / inner as f64,
            &[Touch::Slab(u, 2.0), Touch::Slab(rsd, 1.0)],
            true,
        );
        t.join();
        // rhs
        t.fork();
        t.pfor(
            n,
            0.35 * 0.05 * w / n as f64,
            &[Touch::Slab(rsd, 1.0), Touch::Slab(frct, 1.0)],
            false,
        );
        let flux = [Touch::Slab(u, 1.0), Touch::Slab(rsd, 2.0)];
        t.pfor(inner, 0.35 * 0.30 * w / inner as f64, &flux, true);
        t.pfor(inner, 0.35 * 0.30 * w / inner as f64, &flux, false);
        t.pfor(
            inner,
            0.35 * 0.35 * w / inner as f64,
            &[Touch::Spread(u, 1.0), Touch::Spread(rsd, 2.0)],
            true,
        );
        t.join();
    });
    // l2norm of the last iteration, twice
    for _ in 0..2 {
        t.fork();
        t.pfor_reduce(inner, 10.0 * (n * n) as f64, &[Touch::Slab(rsd, 1.0)]);
        t.join();
    }
    super::timer_stop(t);
}
