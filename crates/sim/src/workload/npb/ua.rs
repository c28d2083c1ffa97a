//! UA (unstructured adaptive mesh: heat equation with a moving source on
//! a spectral-element mesh that adapts), NPB3.3-OMP `UA/` (the UA report
//! of Feng, Van der Wijngaart, Biswas and Mavriplis, NAS-04-006):
//! at most `lelt` elements of `5^3` collocation points, `niter` steps,
//! `nmxh = 10` CG iterations per diffusion solve (sys/setparams.c: lelt
//! S 250, W 700, A 2400, B 8800, C 33500, D 515000; niter S 50, W 100,
//! A-C 200, D 250).
//!
//! Each step: the convection operator (parallel loops over elements),
//! then the diffusion solve, 10 preconditioned CG iterations, each a
//! matrix-free operator over the elements, the mortar gather/scatter
//! (indirect, shared, conflicting updates), the preconditioner and a
//! dot-product reduction, each ending in a barrier; every 5 steps the mesh
//! adapts (refine and coarsen, with the master's serial bookkeeping, then
//! a remap of every field that moves elements between threads).
//!
//! Approximations: every step runs at the class's element bound `lelt`
//! (the real count varies as the mesh adapts); one element costs (an
//! estimate) 120,000 operations per step, 15 % in convection and 85 % in
//! the 10 CG iterations (tensor-product operators of a 5^3 element); the
//! adaptation costs the master 2,000 operations per element. ua.f's Mop/s
//! counts collocation points advanced, `lelt x 125 x (nmxh + 1)` per
//! step here. Memory: 20 fields of a double per point (1000 bytes per
//! element each) and the mortar arrays (5 doubles per mortar point,
//! `lmor` points: S 11600, W 26700, A 92700, B 334600, C 1262100, D
//! 19500000).

use super::team::{Team, Touch};
use super::{Class, Info, Size, F64};
use crate::rq::RunQueue;

const LELT: [u64; 6] = [250, 700, 2400, 8800, 33500, 515000];
const LMOR: [u64; 6] = [11600, 26700, 92700, 334600, 1262100, 19500000];
const NITER: [u32; 6] = [50, 100, 200, 200, 200, 250];
const NMXH: u32 = 10;
/// Operations per element per step (see the module documentation).
pub const OPS_PER_ELEMENT: f64 = 120_000.0;

/// The report's values.
pub fn info(c: Class) -> Info {
    let lelt = LELT[c.index()] as f64;
    Info {
        size: Size::Count(LELT[c.index()]),
        iterations: NITER[c.index()],
        mops: NITER[c.index()] as f64 * lelt * 125.0 * (NMXH + 1) as f64,
        optype: "coll. point advanced",
    }
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let nelt = LELT[c.index()];
    let nmor = LMOR[c.index()];
    let fields = t.array("fields", nelt * 125 * F64 * 20);
    let mortar = t.array("mortar", nmor * 5 * F64);
    t.fork();
    t.pfor(nelt, 2000.0, &[Touch::Slab(fields, 1.0)], false);
    t.pfor(nmor, 10.0, &[Touch::Slab(mortar, 1.0)], false);
    t.join();
    super::timer_start(t);
    let cg = 0.85 * OPS_PER_ELEMENT / NMXH as f64;
    let step = |t: &mut Team<'_, '_, R>| {
        // convection
        t.fork();
        t.pfor(
            nelt,
            0.15 * OPS_PER_ELEMENT,
            &[Touch::Slab(fields, 0.3)],
            false,
        );
        t.join();
        // diffusion: a CG solve in one region
        t.fork();
        t.repeat(NMXH, |t| {
            t.pfor(nelt, 0.6 * cg, &[Touch::Slab(fields, 0.2)], false);
            t.pfor(
                nmor,
                0.2 * cg * nelt as f64 / nmor as f64,
                &[Touch::Slab(mortar, 2.0), Touch::Scatter(fields, 0.05)],
                false,
            );
            t.pfor(nelt, 0.15 * cg, &[Touch::Slab(fields, 0.1)], false);
            t.pfor_reduce(nelt, 0.05 * cg, &[Touch::Slab(fields, 0.1)]);
        });
        t.join();
    };
    let steps = NITER[c.index()];
    let (blocks, rest) = (steps / 5, steps % 5);
    t.repeat(blocks, |t| {
        t.repeat(5, |t| step(t));
        // adapt: the master's bookkeeping, then the remap
        t.serial(2000.0 * nelt as f64, &[]);
        t.fork();
        t.pfor(
            nelt,
            500.0,
            &[Touch::Scatter(fields, 1.0), Touch::Slab(fields, 1.0)],
            false,
        );
        t.join();
    });
    t.repeat(rest, |t| step(t));
    super::timer_stop(t);
}
