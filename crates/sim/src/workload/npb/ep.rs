//! EP (embarrassingly parallel), NPB3.3-OMP `EP/ep.f`: `2^(m+1)` uniform
//! random numbers made into Gaussian pairs (sys/setparams.c: m = S 24, W
//! 25, A 28, B 30, C 32, D 36).
//!
//! One parallel region: a `!$omp do` over the `2^(m-16)` batches of
//! `2^16` pairs (each thread skips its generator ahead to its batches),
//! the sums `sx`, `sy` combined by a reduction and the ten annulus counts
//! `q` by an atomic update per thread, then the region's end. No array
//! larger than a batch: each thread's `x` (2^17 doubles, thread-private)
//! is first touched by its thread and then stays in its caches (one
//! percent of a pass per batch reaches memory, an estimate).
//!
//! Operations: ep.f's Mop/s counts the random numbers, `2^(m+1)`. One
//! number costs (an estimate) 40 operations: the linear congruential
//! step `vranlc` in double precision (about 15), the acceptance test of
//! its pair, and for the pi/4 of pairs accepted a log and a square root
//! (about 60 for the pair).

use super::team::{Team, Touch};
use super::{Class, Info, Size, F64};
use crate::rq::RunQueue;

const M: [u32; 6] = [24, 25, 28, 30, 32, 36];
/// Operations per random number (see the module documentation).
pub const OPS_PER_NUMBER: f64 = 40.0;

/// The report's values.
pub fn info(c: Class) -> Info {
    let m = M[c.index()];
    Info {
        size: Size::Pow2(m + 1),
        iterations: 0,
        mops: 2f64.powi(m as i32 + 1),
        optype: "Random numbers generated",
    }
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let m = M[c.index()];
    let batches = 1u64 << (m - 16);
    let threads = t.threads() as u64;
    let x = t.array("x", threads * (1 << 17) * F64);
    super::timer_start(t);
    t.fork();
    // each thread's x: its slab of the per-thread arrays (one iteration
    // per thread), touched by its first batch
    t.pfor(threads, 0.0, &[Touch::Slab(x, 1.0)], true);
    t.pfor(batches, OPS_PER_NUMBER * (1u64 << 17) as f64, &[], true);
    t.pfor(
        threads,
        0.0,
        &[Touch::Slab(x, 0.01 * (batches / threads).max(1) as f64)],
        true,
    );
    t.reduce();
    t.barrier();
    t.join();
    super::timer_stop(t);
}
