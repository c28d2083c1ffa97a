//! BT (block tridiagonal ADI), NPB3.3-OMP `BT/`: grid `n^3`, `niter`
//! timesteps (sys/setparams.c: S 12/60, W 24/200, A 64/200, B 102/200,
//! C 162/200, D 408/250).
//!
//! Each step (`adi.f`) is five parallel regions: `compute_rhs` (rhs.f: a
//! region of eleven `!$omp do` loops of which four end in a barrier; the
//! first two run over all `n` k-planes, the zeta-direction loop over j),
//! `x_solve` and `y_solve` (a `parallel do` over the interior k-planes),
//! `z_solve` (a `parallel do` over the interior j-lines: every thread
//! touches every k-plane) and `add` (k-planes).
//!
//! Operations: bt.f's Mop/s formula per step,
//! `3478.8 n^3 - 17655.7 n^2 + 28023.7 n`, split (an estimate: the 5x5 block solves dominate) 20 %
//! compute_rhs (10/5/45/40 % over its four loop groups), 25 % each solve,
//! 5 % add.
//!
//! Memory (doubles, `header.h`): `u`, `rhs`, `forcing` of 5 values per
//! point; six point arrays `us vs ws qs rho_i square` (one region, `aux`).
//! The block-matrix work arrays (`lhs`, `fjac`, `njac`) are per line and
//! stay in cache. Traffic per point, as passes over the thread's share:
//! rhs loops u 1, aux 1, rhs 1 (2 where read and written), forcing 1; a
//! solve u 1, half of aux (qs, rho_i, square), rhs 2; add u 2, rhs 1.

use super::team::{Team, Touch};
use super::{Class, Info};
use crate::rq::RunQueue;

const N: [u64; 6] = [12, 24, 64, 102, 162, 408];
const NITER: [u32; 6] = [60, 200, 200, 200, 200, 250];

fn ops_per_step(n: u64) -> f64 {
    let n = n as f64;
    3478.8 * n * n * n - 17655.7 * n * n + 28023.7 * n
}

/// The report's values.
pub fn info(c: Class) -> Info {
    Info::cube(N[c.index()], NITER[c.index()], ops_per_step)
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let n = N[c.index()];
    let (u, rhs, forcing, aux) = super::adi_setup(t, n, 6);
    let w = ops_per_step(n);
    let inner = n.saturating_sub(2).max(1);
    t.repeat(NITER[c.index()], |t| {
        // compute_rhs
        t.fork();
        t.pfor(
            n,
            0.2 * 0.10 * w / n as f64,
            &[Touch::Slab(u, 1.0), Touch::Slab(aux, 1.0)],
            false,
        );
        t.pfor(
            n,
            0.2 * 0.05 * w / n as f64,
            &[Touch::Slab(forcing, 1.0), Touch::Slab(rhs, 1.0)],
            false,
        );
        t.pfor(
            inner,
            0.2 * 0.45 * w / inner as f64,
            &[
                Touch::Slab(u, 1.0),
                Touch::Slab(aux, 1.0),
                Touch::Slab(rhs, 2.0),
            ],
            false,
        );
        t.pfor(
            inner,
            0.2 * 0.40 * w / inner as f64,
            &[
                Touch::Spread(u, 1.0),
                Touch::Spread(aux, 1.0),
                Touch::Spread(rhs, 2.0),
            ],
            false,
        );
        t.join();
        let solve = [
            Touch::Slab(u, 1.0),
            Touch::Slab(aux, 0.5),
            Touch::Slab(rhs, 2.0),
        ];
        for _ in 0..2 {
            // x_solve, y_solve: parallel do over k
            t.fork();
            t.pfor(inner, 0.25 * w / inner as f64, &solve, false);
            t.join();
        }
        // z_solve: parallel do over j
        t.fork();
        t.pfor(
            inner,
            0.25 * w / inner as f64,
            &[
                Touch::Spread(u, 1.0),
                Touch::Spread(aux, 0.5),
                Touch::Spread(rhs, 2.0),
            ],
            false,
        );
        t.join();
        // add
        t.fork();
        t.pfor(
            inner,
            0.05 * w / inner as f64,
            &[Touch::Slab(u, 2.0), Touch::Slab(rhs, 1.0)],
            false,
        );
        t.join();
    });
    super::timer_stop(t);
}
