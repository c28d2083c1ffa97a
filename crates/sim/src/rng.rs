//! Deterministic random streams: one seed, per-stream generators derived from
//! (seed, stream id), so results never depend on thread count or on how a
//! sweep is split.

use rand_xoshiro::rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A random stream.
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// The generator of stream `stream` under `seed`.
    pub fn stream(seed: u64, stream: u64) -> Self {
        // SplitMix64 finaliser over (seed, stream) to spread nearby seeds.
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(Xoshiro256PlusPlus::seed_from_u64(z))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in 0..n (n > 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}
