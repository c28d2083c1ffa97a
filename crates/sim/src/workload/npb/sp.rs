//! SP (scalar pentadiagonal ADI), NPB3.3-OMP `SP/`: grid `n^3`, `niter`
//! timesteps (sys/setparams.c: S 12/100, W 36/400, A 64/400, B 102/400,
//! C 162/400, D 408/500).
//!
//! Each step (`adi.f`) is nine parallel regions: `compute_rhs` (rhs.f,
//! eleven `!$omp do` loops, four barriers, the last group over j),
//! `txinvr` (k), `x_solve` (k) and the `ninvr` it calls, `y_solve` (k)
//! and `pinvr`, `z_solve` (a `parallel do` over j: every thread touches
//! every k-plane) and `tzetar`, and `add` (k).
//!
//! Operations: sp.f's Mop/s formula per step,
//! `881.174 n^3 - 4683.91 n^2 + 11484.5 n - 19272.4`, split (an estimate; SP has fewer flops per
//! byte than BT) 38 % compute_rhs (10/5/45/40 %), 5 % txinvr, 15 % each
//! solve, 2 % ninvr and pinvr, 6 % tzetar, 2 % add.
//!
//! Memory (`header.h`): `u`, `rhs`, `forcing` (5 values per point) and
//! seven point arrays `us vs ws qs rho_i speed square` (`aux`); the
//! pentadiagonal `lhs` lines stay in cache. Traffic as in BT (bt.rs), the
//! transforms reading `rhs` twice (read and write) and a part of `aux`.

use super::team::{Team, Touch};
use super::{Class, Info};
use crate::rq::RunQueue;

const N: [u64; 6] = [12, 36, 64, 102, 162, 408];
const NITER: [u32; 6] = [100, 400, 400, 400, 400, 500];

fn ops_per_step(n: u64) -> f64 {
    let n = n as f64;
    (881.174 * n * n * n - 4683.91 * n * n + 11484.5 * n - 19272.4).max(0.0)
}

/// The report's values.
pub fn info(c: Class) -> Info {
    Info::cube(N[c.index()], NITER[c.index()], ops_per_step)
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let n = N[c.index()];
    let (u, rhs, forcing, aux) = super::adi_setup(t, n, 7);
    let w = ops_per_step(n);
    let inner = n.saturating_sub(2).max(1);
    let per = |share: f64, iters: u64| share * w / iters as f64;
    t.repeat(NITER[c.index()], |t| {
        // compute_rhs
        t.fork();
        t.pfor(
            n,
            per(0.38 * 0.10, n),
            &[Touch::Slab(u, 1.0), Touch::Slab(aux, 1.0)],
            false,
        );
        t.pfor(
            n,
            per(0.38 * 0.05, n),
            &[Touch::Slab(forcing, 1.0), Touch::Slab(rhs, 1.0)],
            false,
        );
        t.pfor(
            inner,
            per(0.38 * 0.45, inner),
            &[
                Touch::Slab(u, 1.0),
                Touch::Slab(aux, 1.0),
                Touch::Slab(rhs, 2.0),
            ],
            false,
        );
        t.pfor(
            inner,
            per(0.38 * 0.40, inner),
            &[
                Touch::Spread(u, 1.0),
                Touch::Spread(aux, 1.0),
                Touch::Spread(rhs, 2.0),
            ],
            false,
        );
        t.join();
        let region = |t: &mut Team<'_, '_, R>, share: f64, touches: &[Touch]| {
            t.fork();
            t.pfor(inner, per(share, inner), touches, false);
            t.join();
        };
        let solve = [Touch::Slab(aux, 0.5), Touch::Slab(rhs, 2.0)];
        let transform = [Touch::Slab(rhs, 2.0), Touch::Slab(aux, 0.3)];
        region(t, 0.05, &transform); // txinvr
        region(t, 0.15, &solve); // x_solve
        region(t, 0.02, &[Touch::Slab(rhs, 2.0)]); // ninvr
        region(t, 0.15, &solve); // y_solve
        region(t, 0.02, &[Touch::Slab(rhs, 2.0)]); // pinvr
        region(t, 0.15, &[Touch::Spread(aux, 0.5), Touch::Spread(rhs, 2.0)]); // z_solve
        region(
            t,
            0.06,
            &[
                Touch::Slab(rhs, 2.0),
                Touch::Slab(u, 1.0),
                Touch::Slab(aux, 0.3),
            ],
        ); // tzetar
        region(t, 0.02, &[Touch::Slab(u, 2.0), Touch::Slab(rhs, 1.0)]); // add
    });
    super::timer_stop(t);
}
