//! MG (multigrid V-cycles), NPB3.3-OMP `MG/mg.f`: finest grid `n^3`,
//! `nit` iterations (sys/setparams.c: S 32/4, W 128/4, A 256/4, B 256/20,
//! C 512/20, D 1024/50), `lt = log2 n` levels; level k has `2^k` interior
//! points per side and `2^k + 2` with its halo.
//!
//! Every operator is a `parallel do` over the outer index `i3` of its
//! level (`resid`, `psinv`, `rprj3`, `interp`, `zero3`, and `norm2u3` with
//! a reduction), and `comm3`, called after `resid`, `psinv` and `rprj3`,
//! is a region of three loops (the periodic halo of each axis; two
//! barriers). An iteration (`mg3P`, then `resid` on the finest level) is
//! restrictions down to level 1, the coarsest solve, then for each level
//! up: `zero3`, `interp`, `resid`, `psinv`; the finest level gets
//! `interp`, `resid`, `psinv`. Coarse levels have fewer planes than
//! threads: the threads without a plane go straight to the barrier.
//!
//! Operations: mg.f's Mop/s formula, `58 n^3` per iteration, split over
//! the operators at the finest level (an estimate: resid 15 per point and
//! call, psinv 15, rprj3 6, interp 7; two resid calls per iteration), the
//! same per point on coarser levels. Memory: the multi-level arrays `u`
//! and `r` and the finest `v`; resid reads `u`, `v` (or `r`) and writes
//! `r`, psinv reads `r` and updates `u`, rprj3 reads the fine `r` and
//! writes the coarse, interp reads the coarse `u` and updates the fine.

use super::team::{Array, Team, Touch};
use super::{Class, Info, F64};
use crate::rq::RunQueue;

const N: [u64; 6] = [32, 128, 256, 256, 512, 1024];
const NIT: [u32; 6] = [4, 4, 4, 20, 20, 50];

/// The report's values.
pub fn info(c: Class) -> Info {
    // 58 operations per grid point and iteration
    Info::cube(N[c.index()], NIT[c.index()], |n| 58.0 * (n * n * n) as f64)
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let n = N[c.index()];
    let lt = n.trailing_zeros() as usize;
    // one array per level for u and r, v at the finest
    let side = |k: usize| (1u64 << k) + 2;
    let bytes = |k: usize| side(k).pow(3) * F64;
    let u: Vec<Array> = (0..=lt).map(|k| t.array("u", bytes(k.max(1)))).collect();
    let r: Vec<Array> = (0..=lt).map(|k| t.array("r", bytes(k.max(1)))).collect();
    let v = t.array("v", bytes(lt));
    // zero3 and zran3: parallel loops over i3 (first touch)
    for k in (1..=lt).rev() {
        t.fork();
        let mut touches = vec![Touch::Slab(u[k], 1.0), Touch::Slab(r[k], 1.0)];
        if k == lt {
            touches.push(Touch::Slab(v, 1.0));
        }
        t.pfor(side(k), 2.0 * (side(k) * side(k)) as f64, &touches, false);
        t.join();
    }
    let planes = |k: usize| 1u64 << k;
    let pts_per_plane = |k: usize| (planes(k) * planes(k)) as f64;
    let comm3 = |t: &mut Team<'_, '_, R>, a: Array, k: usize| {
        t.fork();
        let halo = 4.0 * side(k) as f64;
        t.pfor(side(k), halo, &[], false);
        t.pfor(side(k), halo, &[], false);
        t.pfor(side(k), halo, &[Touch::Slab(a, 0.02)], true);
        t.join();
    };
    let op = |t: &mut Team<'_, '_, R>, k: usize, per_pt: f64, touches: &[Touch]| {
        t.fork();
        t.pfor(planes(k), per_pt * pts_per_plane(k), touches, false);
        t.join();
    };
    let resid = |t: &mut Team<'_, '_, R>, k: usize, rhs: Array| {
        op(
            t,
            k,
            15.0,
            &[
                Touch::Slab(u[k], 1.0),
                Touch::Slab(rhs, 1.0),
                Touch::Slab(r[k], 1.0),
            ],
        );
        comm3(t, r[k], k);
    };
    let psinv = |t: &mut Team<'_, '_, R>, k: usize| {
        op(
            t,
            k,
            15.0,
            &[Touch::Slab(r[k], 1.0), Touch::Slab(u[k], 2.0)],
        );
        comm3(t, u[k], k);
    };
    // an iteration's resid on the finest level before the loop (mg.f)
    resid(t, lt, v);
    super::timer_start(t);
    t.repeat(NIT[c.index()], |t| {
        // down: rprj3 from k to k-1
        for k in (2..=lt).rev() {
            op(
                t,
                k - 1,
                6.0 * 8.0,
                &[Touch::Slab(r[k], 1.0), Touch::Slab(r[k - 1], 1.0)],
            );
            comm3(t, r[k - 1], k - 1);
        }
        // the coarsest level
        op(t, 1, 1.0, &[Touch::Slab(u[1], 1.0)]);
        psinv(t, 1);
        // up
        for k in 2..lt {
            op(t, k, 1.0, &[Touch::Slab(u[k], 1.0)]); // zero3
            op(
                t,
                k,
                7.0,
                &[Touch::Slab(u[k - 1], 0.125), Touch::Slab(u[k], 2.0)],
            ); // interp
            resid(t, k, r[k]);
            psinv(t, k);
        }
        op(
            t,
            lt,
            7.0,
            &[Touch::Slab(u[lt - 1], 0.125), Touch::Slab(u[lt], 2.0)],
        );
        resid(t, lt, v);
        psinv(t, lt);
        // the iteration's residual
        resid(t, lt, v);
    });
    super::timer_stop(t);
}
