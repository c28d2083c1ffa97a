//! The libgomp settings a run of an NPB binary gets when mmtests starts it
//! with only `OMP_NUM_THREADS` set (no OMP_WAIT_POLICY, no
//! GOMP_SPINCOUNT):
//!
//! - the spin count of a barrier wait: 300,000 iterations, or 100 when
//!   the team has more threads than the CPUs available to the process
//!   ("throttled"; libgomp env.c `initialize_env` and wait.h `do_spin`,
//!   documented in the libgomp manual, "GOMP_SPINCOUNT": 300,000 when
//!   OMP_WAIT_POLICY is undefined; 1000 and 100 spins with more threads
//!   than CPUs for ACTIVE and undefined respectively);
//! - the cost of one spin iteration: one `pause` (`cpu_relax` on x86) and
//!   a load of the generation word. Intel's 64 and IA-32 Architectures
//!   Optimization Reference Manual (the Skylake Server chapter, "Pause
//!   latency") gives the `pause` latency of generations before Skylake as
//!   about 10 cycles and of Skylake Server as up to 140 cycles. The model
//!   takes the Broadwell figure, 10 cycles, at the 2.2 GHz base clock of
//!   the Xeon E5-2699 v4 (Intel ARK): 4.55 ns per iteration, so a full
//!   spin is 300,000 x 4.55 ns = 1.36 ms. The same figure is used on every
//!   machine (a Skylake-SP machine would spin up to 14 times longer).

use super::team::Runtime;
use crate::Nanos;

/// GOMP_SPINCOUNT's default (OMP_WAIT_POLICY undefined).
pub const SPIN_COUNT: u64 = 300_000;
/// The throttled spin count (more threads than available CPUs,
/// OMP_WAIT_POLICY undefined).
pub const THROTTLED_SPIN_COUNT: u64 = 100;
/// One spin iteration, picoseconds: 10 cycles of `pause` at 2.2 GHz.
pub const SPIN_ITER_PS: u64 = 4_545;

/// The runtime of `threads` threads in a process allowed `cpus` CPUs.
pub fn runtime(threads: u32, cpus: usize) -> Runtime {
    let count = if threads as usize > cpus {
        THROTTLED_SPIN_COUNT
    } else {
        SPIN_COUNT
    };
    Runtime {
        threads,
        spin_ns: (count * SPIN_ITER_PS / 1000) as Nanos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_budget_throttles_when_oversubscribed() {
        assert_eq!(runtime(88, 88).spin_ns, 1_363_500);
        assert_eq!(runtime(89, 88).spin_ns, 454);
    }
}
