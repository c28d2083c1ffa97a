//! CG (conjugate gradient, inverse power method), NPB3.3-OMP `CG/cg.f`:
//! `na` rows, `nonzer`, `niter` outer iterations of 25 CG iterations
//! (sys/setparams.c: S 1400/7/15, W 7000/8/15, A 14000/11/15, B
//! 75000/13/75, C 150000/15/75, D 1500000/21/100).
//!
//! Each outer iteration calls `conj_grad`, one parallel region: the
//! initialisation loop (nowait), the `rho` reduction, then 25 times: the
//! sparse matrix-vector product `q = A p` (`!$omp do` over rows), the
//! `p.q` reduction, the updates of `z` and `r` with the `rho` reduction,
//! the update of `p`, each ending in a barrier; then the residual's
//! product and norm. The outer loop adds two `parallel do` regions (the
//! norms of `x` and `z`, a reduction, and the update of `x`).
//!
//! Operations: cg.f's Mop/s formula, `2 na (3 + nz' + 25 (5 + nz') + 3)`
//! per outer iteration with `nz' = nonzer (nonzer + 1)`: per CG iteration
//! `2 na nz'` in the product and `10 na` in the vector loops (a third
//! each), the rest in the residual and the outer loops. The same count
//! gives the matrix its `na nz'` nonzeros. Memory: `a` (8 bytes) and
//! `colidx` (4) per nonzero, `rowstr`, and the vectors `x z p q r` of
//! `na` doubles. A thread's rows of the product read its slab of `a` and
//! `colidx` once and gather `p` over all its columns: the vector is
//! shared by every thread, and each socket reads it from memory once per
//! product (12 MB at class D, held in the last-level cache), modelled as
//! twice the vector's share per thread.

use super::team::{Team, Touch};
use super::{Class, Info, Size, F64};
use crate::rq::RunQueue;

const NA: [u64; 6] = [1400, 7000, 14000, 75000, 150000, 1500000];
const NONZER: [u64; 6] = [7, 8, 11, 13, 15, 21];
const NITER: [u32; 6] = [15, 15, 15, 75, 75, 100];
const CGITMAX: u32 = 25;

fn nzp(c: Class) -> u64 {
    let z = NONZER[c.index()];
    z * (z + 1)
}

/// The report's values.
pub fn info(c: Class) -> Info {
    let na = NA[c.index()] as f64;
    let z = nzp(c) as f64;
    Info {
        size: Size::Count(NA[c.index()]),
        iterations: NITER[c.index()],
        mops: NITER[c.index()] as f64 * 2.0 * na * (3.0 + z + 25.0 * (5.0 + z) + 3.0),
        optype: "floating point",
    }
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let na = NA[c.index()];
    let nnz = na * nzp(c);
    let a = t.array("a", nnz * F64);
    let colidx = t.array("colidx", nnz * 4);
    let rowstr = t.array("rowstr", (na + 1) * 4);
    let vec = |t: &mut Team<'_, '_, R>, name| t.array(name, na * F64);
    let (x, z, p, q, r) = (
        vec(t, "x"),
        vec(t, "z"),
        vec(t, "p"),
        vec(t, "q"),
        vec(t, "r"),
    );
    let nzr = nzp(c) as f64;
    // makea and the first vectors: parallel loops over rows (first touch)
    t.fork();
    t.pfor(
        na,
        10.0 * nzr,
        &[
            Touch::Slab(a, 1.0),
            Touch::Slab(colidx, 1.0),
            Touch::Slab(rowstr, 1.0),
            Touch::Slab(x, 1.0),
            Touch::Slab(z, 1.0),
            Touch::Slab(p, 1.0),
            Touch::Slab(q, 1.0),
            Touch::Slab(r, 1.0),
        ],
        false,
    );
    t.join();
    super::timer_start(t);
    let threads = t.threads() as u64;
    let p_share = 2 * p.bytes / threads.max(1);
    let matvec = [
        Touch::Slab(a, 1.0),
        Touch::Slab(colidx, 1.0),
        Touch::Slab(rowstr, 1.0),
        Touch::Shared(p, p_share),
        Touch::Slab(q, 1.0),
    ];
    t.repeat(NITER[c.index()], |t| {
        // conj_grad
        t.fork();
        t.pfor(
            na,
            0.0,
            &[
                Touch::Slab(q, 1.0),
                Touch::Slab(z, 1.0),
                Touch::Slab(r, 1.0),
                Touch::Slab(p, 1.0),
                Touch::Slab(x, 1.0),
            ],
            true,
        );
        t.pfor_reduce(na, 2.0, &[Touch::Slab(r, 1.0)]);
        t.repeat(CGITMAX, |t| {
            t.pfor(na, 2.0 * nzr, &matvec, false);
            t.pfor_reduce(na, 10.0 / 3.0, &[Touch::Slab(p, 1.0), Touch::Slab(q, 1.0)]);
            t.pfor_reduce(
                na,
                10.0 / 3.0,
                &[
                    Touch::Slab(z, 2.0),
                    Touch::Slab(r, 2.0),
                    Touch::Slab(p, 1.0),
                    Touch::Slab(q, 1.0),
                ],
            );
            t.pfor(
                na,
                10.0 / 3.0,
                &[Touch::Slab(p, 2.0), Touch::Slab(r, 1.0)],
                false,
            );
        });
        // the residual ||x - A z||
        let zprod = [
            Touch::Slab(a, 1.0),
            Touch::Slab(colidx, 1.0),
            Touch::Slab(rowstr, 1.0),
            Touch::Shared(z, p_share),
            Touch::Slab(r, 1.0),
        ];
        t.pfor(na, 2.0 * nzr, &zprod, false);
        t.pfor(na, 3.0, &[Touch::Slab(x, 1.0), Touch::Slab(r, 1.0)], true);
        t.reduce();
        t.join();
        // the norms of x and z, the update of x
        t.fork();
        t.pfor_reduce(na, 4.0, &[Touch::Slab(x, 1.0), Touch::Slab(z, 1.0)]);
        t.join();
        t.fork();
        t.pfor(na, 2.0, &[Touch::Slab(x, 2.0), Touch::Slab(z, 1.0)], false);
        t.join();
    });
    super::timer_stop(t);
}
