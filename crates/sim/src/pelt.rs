//! PELT: per-entity load tracking, in our own words after the kernel's
//! kernel/sched/pelt.c (Linux 5.x-6.x).
//!
//! Time is cut into periods of 1024 us (1024*1024 ns here, as the kernel shifts
//! ns by 10). A signal's sum is the geometric series of its per-period
//! contributions with decay y per period, y^32 = 1/2 (32 ms half-life); the
//! average is sum / divider, where the divider is the maximum sum the series
//! can reach given how far the current period has progressed.

use crate::Nanos;
use std::sync::OnceLock;

/// Maximum value of the series sum(1024 * y^n): the kernel's LOAD_AVG_MAX.
pub const LOAD_AVG_MAX: u64 = 47742;
/// Periods after which a contribution has halved.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// Capacity scale (SCHED_CAPACITY_SCALE).
pub const CAPACITY: u64 = 1024;

/// y^n in 0.32 fixed point for n in 0..32. Computed from y = 0.5^(1/32)
/// by five square roots (IEEE sqrt and multiply are exactly specified, so the
/// table is identical on every platform).
fn y_inv() -> &'static [u64; 32] {
    static T: OnceLock<[u64; 32]> = OnceLock::new();
    T.get_or_init(|| {
        let mut y = 0.5f64;
        for _ in 0..5 {
            y = y.sqrt();
        }
        let mut t = [0u64; 32];
        let mut p = 1.0f64;
        for e in t.iter_mut() {
            *e = ((p * 4294967296.0) as u64).min(0xffff_ffff);
            p *= y;
        }
        t
    })
}

/// val * y^n.
#[inline]
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let val = val >> (n / LOAD_AVG_PERIOD);
    ((val as u128 * y_inv()[(n % LOAD_AVG_PERIOD) as usize] as u128) >> 32) as u64
}

/// Contribution of a span that ends `periods` full periods after the end of
/// the first partial period: d1 (rest of the old period, decayed), the full
/// periods in between, and d3 (the start of the current period).
fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// One PELT signal set: load, runnable and util (sums and averages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pelt {
    /// Time of the last update, ns (aligned to 1024 ns).
    pub last_update: Nanos,
    /// Progress into the current period, in 1024-ns units.
    pub period_contrib: u64,
    /// Sum of runnable time (weighted by load in `update`).
    pub load_sum: u64,
    /// Sum of runnable time times the number of runnable entities.
    pub runnable_sum: u64,
    /// Sum of running time << 10.
    pub util_sum: u64,
    /// load_sum * weight / divider.
    pub load_avg: u64,
    /// runnable_sum / divider, scaled to 1024.
    pub runnable_avg: u64,
    /// util_sum / divider (0..=1024).
    pub util_avg: u64,
}

impl Pelt {
    /// A signal starting at `now` with all averages zero.
    pub fn new(now: Nanos) -> Self {
        Pelt {
            last_update: now & !1023,
            ..Default::default()
        }
    }

    /// The divider for the current period progress (kernel get_pelt_divider).
    #[inline]
    pub fn divider(&self) -> u64 {
        LOAD_AVG_MAX - 1024 + self.period_contrib
    }

    /// Advance to `now`. Over the elapsed time the entity was `load` (0/1:
    /// runnable or not, for entities; the number of runnable tasks' weight
    /// share for run queues), `runnable` (count) and `running` (0/1), and its
    /// load weight is `weight` (1024 for nice 0). Returns true if a period
    /// boundary was crossed (averages recomputed).
    pub fn update(
        &mut self,
        now: Nanos,
        load: u64,
        runnable: u64,
        running: bool,
        weight: u64,
    ) -> bool {
        if now <= self.last_update {
            return false;
        }
        let mut delta = (now - self.last_update) >> 10;
        if delta == 0 {
            return false;
        }
        self.last_update += delta << 10;
        // accumulate_sum
        let mut contrib = delta;
        delta += self.period_contrib;
        let periods = delta / 1024;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            delta %= 1024;
            if load > 0 || runnable > 0 || running {
                contrib = accumulate_segments(periods, 1024 - self.period_contrib, delta);
            }
        }
        self.period_contrib = delta;
        if load > 0 {
            self.load_sum += load * contrib;
        }
        if runnable > 0 {
            self.runnable_sum += (runnable * contrib) << 10;
        }
        if running {
            self.util_sum += contrib << 10;
        }
        if periods == 0 {
            return false;
        }
        let div = self.divider();
        self.load_avg = weight * self.load_sum / div;
        self.runnable_avg = self.runnable_sum / div;
        self.util_avg = self.util_sum / div;
        true
    }

    /// Add an entity's signals to this run-queue signal (kernel
    /// attach_entity_load_avg: on enqueue of a new or migrated task).
    pub fn attach(&mut self, se: &Pelt, se_weight: u64) {
        self.util_avg += se.util_avg;
        self.util_sum += se.util_sum;
        self.runnable_avg += se.runnable_avg;
        self.runnable_sum += se.runnable_sum;
        self.load_avg += se.load_avg;
        self.load_sum += se_weight * se.load_sum;
    }

    /// Remove an entity's signals (kernel detach/remove_entity_load_avg, on
    /// migration away), saturating at zero; sums never drop below what the
    /// remaining averages imply.
    pub fn detach(&mut self, se: &Pelt, se_weight: u64) {
        let min_div = LOAD_AVG_MAX - 1024;
        self.util_avg = self.util_avg.saturating_sub(se.util_avg);
        self.util_sum = self
            .util_sum
            .saturating_sub(se.util_sum)
            .max(self.util_avg * min_div);
        self.runnable_avg = self.runnable_avg.saturating_sub(se.runnable_avg);
        self.runnable_sum = self
            .runnable_sum
            .saturating_sub(se.runnable_sum)
            .max(self.runnable_avg * min_div);
        self.load_avg = self.load_avg.saturating_sub(se.load_avg);
        self.load_sum = self
            .load_sum
            .saturating_sub(se_weight * se.load_sum)
            .max(self.load_avg * min_div);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Nanos = 1024 * 1024;

    #[test]
    fn half_life_is_32_periods() {
        // y^0 is stored as 0xffffffff/2^32 (as in the kernel): off by one
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_eq!(decay_load(1 << 20, 64), (1 << 18) - 1);
        let y16 = decay_load(1 << 30, 16) as f64 / (1u64 << 30) as f64;
        assert!(
            (y16 - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6,
            "{y16}"
        );
        assert_eq!(decay_load(12345, 32 * 64), 0);
    }

    /// Always running from zero: util follows 1024*(1 - y^n) (closed form).
    #[test]
    fn running_signal_matches_closed_form() {
        let mut p = Pelt::new(0);
        let y = 0.5f64.powf(1.0 / 32.0);
        for n in 1..=200u64 {
            p.update(n * PERIOD, 1, 1, true, 1024);
            let expect = 1024.0 * (1.0 - y.powi(n as i32)) * (LOAD_AVG_MAX as f64)
                / ((LOAD_AVG_MAX - 1024) as f64);
            let expect = expect.min(1024.0);
            assert!(
                (p.util_avg as f64 - expect).abs() <= 1024.0 * 0.025 + 2.0,
                "n={n} util={} expect={expect}",
                p.util_avg
            );
        }
        assert!(p.util_avg >= 1000, "saturates near 1024: {}", p.util_avg);
        assert!(
            p.load_avg.abs_diff(p.util_avg) <= 1,
            "{} vs {}",
            p.load_avg,
            p.util_avg
        );
    }

    /// After stopping, the average halves every 32 ms.
    #[test]
    fn idle_signal_decays_with_half_life() {
        let mut p = Pelt::new(0);
        p.update(400 * PERIOD, 1, 1, true, 1024);
        let full = p.util_avg;
        p.update(432 * PERIOD, 0, 0, false, 1024);
        let half = p.util_avg;
        assert!(
            (half as i64 - (full / 2) as i64).abs() <= 4,
            "{full} -> {half}"
        );
        p.update(464 * PERIOD, 0, 0, false, 1024);
        assert!((p.util_avg as i64 - (full / 4) as i64).abs() <= 4);
    }

    /// A 50% duty cycle converges to about half the capacity.
    #[test]
    fn duty_cycle_converges() {
        let mut p = Pelt::new(0);
        let mut t = 0;
        for _ in 0..400 {
            t += PERIOD / 2;
            p.update(t, 1, 1, true, 1024);
            t += PERIOD / 2;
            p.update(t, 0, 0, false, 1024);
        }
        assert!((p.util_avg as i64 - 512).abs() < 40, "{}", p.util_avg);
    }
}
