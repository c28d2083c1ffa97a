//! schbench's latency histogram: fio's log-linear "plat" histogram, which
//! schbench.c carries (`plat_val_to_idx`, `plat_idx_to_val`,
//! `calc_percentiles`), and schbench's percentile tables.
//!
//! Values are microseconds held as `u32`. Below 512 every value has its own
//! bucket; above, each power of two is split into 256 buckets, so a
//! reported value (the bucket midpoint) is within about 0.2-0.4 % of the
//! true one. 19 groups of 256 buckets reach about 67 s; larger values land
//! in the top bucket. `min` and `max` are exact.

/// Bits of linear resolution per power-of-two group.
pub const PLAT_BITS: u32 = 8;
/// Buckets per group.
pub const PLAT_VAL: usize = 1 << PLAT_BITS;
/// Number of groups.
pub const PLAT_GROUP_NR: usize = 19;
/// Number of buckets.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL;

/// The bucket that holds `v`.
pub fn plat_index(v: u32) -> usize {
    let msb = if v == 0 { 0 } else { 31 - v.leading_zeros() };
    if msb <= PLAT_BITS {
        return v as usize;
    }
    let e = msb - PLAT_BITS;
    let idx = ((e as usize + 1) << PLAT_BITS) + ((v >> e) as usize & (PLAT_VAL - 1));
    idx.min(PLAT_NR - 1)
}

/// The value reported for bucket `idx` (its midpoint above 511).
pub fn plat_value(idx: usize) -> u32 {
    if idx < 2 * PLAT_VAL {
        return idx as u32;
    }
    let e = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (e + PLAT_BITS);
    let k = (idx % PLAT_VAL) as f64;
    (base as f64 + (k + 0.5) * (1u64 << e) as f64) as u32
}

/// A log-linear histogram of microsecond values.
#[derive(Clone, PartialEq, Eq)]
pub struct Plat {
    buckets: Vec<u64>,
    /// Smallest non-zero value seen; 0 means none (a minimum of 0 is
    /// never reported, as in schbench).
    pub min: u32,
    /// Largest value seen.
    pub max: u32,
    /// Number of values.
    pub samples: u64,
}

impl std::fmt::Debug for Plat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Plat {{ samples: {}, min: {}, max: {} }}",
            self.samples, self.min, self.max
        )
    }
}

impl Default for Plat {
    fn default() -> Self {
        Plat {
            buckets: vec![0; PLAT_NR],
            min: 0,
            max: 0,
            samples: 0,
        }
    }
}

/// One row of a percentile table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The percentile, e.g. 99.9.
    pub pct: f64,
    /// The value of the first bucket whose cumulative count reaches it.
    pub value: u32,
    /// Cumulative count up to and including that bucket.
    pub cumulative: u64,
}

impl Plat {
    /// Records one value.
    #[inline]
    pub fn add(&mut self, v: u32) {
        self.buckets[plat_index(v)] += 1;
        self.samples += 1;
        if v > self.max {
            self.max = v;
        }
        if v != 0 && (self.min == 0 || v < self.min) {
            self.min = v;
        }
    }

    /// Adds another histogram bucket by bucket.
    pub fn merge(&mut self, other: &Plat) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.samples += other.samples;
        self.max = self.max.max(other.max);
        if other.min != 0 && (self.min == 0 || other.min < self.min) {
            self.min = other.min;
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.buckets.iter_mut().for_each(|b| *b = 0);
        self.min = 0;
        self.max = 0;
        self.samples = 0;
    }

    /// The percentiles in `pcts` (ascending): for each, the first bucket
    /// whose cumulative count reaches `pct / 100 * samples`.
    pub fn percentiles(&self, pcts: &[f64]) -> Vec<Row> {
        let n = self.samples as f64;
        let mut out = Vec::with_capacity(pcts.len());
        let mut sum = 0u64;
        let mut j = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            sum += c;
            while j < pcts.len() && sum as f64 >= pcts[j] / 100.0 * n && self.samples > 0 {
                out.push(Row {
                    pct: pcts[j],
                    value: plat_value(i),
                    cumulative: sum,
                });
                j += 1;
            }
            if j == pcts.len() {
                break;
            }
        }
        while j < pcts.len() {
            out.push(Row {
                pct: pcts[j],
                value: 0,
                cumulative: sum,
            });
            j += 1;
        }
        out
    }

    /// schbench's table: a title line, one row per percentile
    /// (`\t* 99.0th: 25         (31 samples)`, the star on `star`), and
    /// `\t  min=%u, max=%u`. `title` is e.g. `"Wakeup Latencies
    /// percentiles (usec)"`.
    pub fn table(&self, title: &str, runtime_s: u64, pcts: &[f64], star: f64) -> String {
        let mut s = format!(
            "{title} runtime {runtime_s} (s) ({} total samples)\n",
            self.samples
        );
        let mut prev = 0u64;
        for row in self.percentiles(pcts) {
            let mark = if row.pct == star { "* " } else { "  " };
            s.push_str(&format!(
                "\t{mark}{:2.1}th: {:<10} ({} samples)\n",
                row.pct,
                row.value,
                row.cumulative - prev
            ));
            prev = row.cumulative;
        }
        s.push_str(&format!("\t  min={}, max={}\n", self.min, self.max));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_are_exact_and_large_ones_are_midpoints() {
        for v in [0u32, 1, 100, 511] {
            assert_eq!(plat_value(plat_index(v)), v);
        }
        assert_eq!(plat_index(512), 512);
        assert_eq!(plat_value(512), 513);
        assert_eq!(plat_index(u32::MAX), PLAT_NR - 1);
        let top = plat_value(PLAT_NR - 1);
        assert!((66_000_000..68_000_000).contains(&top), "{top}");
    }

    #[test]
    fn percentile_rows_and_sample_counts() {
        let mut p = Plat::default();
        for v in 1..=1000u32 {
            p.add(v);
        }
        let rows = p.percentiles(&[50.0, 90.0, 99.0, 99.9]);
        assert_eq!(rows[0].cumulative, 500);
        // 900 and 901 share a two-wide bucket above 511.
        assert_eq!(rows[1].cumulative, 901);
        assert!(rows[0].value.abs_diff(500) <= 2, "{rows:?}");
        assert!(rows[3].value.abs_diff(999) <= 4, "{rows:?}");
        let t = p.table(
            "Wakeup Latencies percentiles (usec)",
            5,
            &[50.0, 90.0, 99.0, 99.9],
            99.0,
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "Wakeup Latencies percentiles (usec) runtime 5 (s) (1000 total samples)"
        );
        assert_eq!(
            lines[1],
            format!("\t  50.0th: {:<10} (500 samples)", rows[0].value)
        );
        assert_eq!(
            lines[2],
            format!("\t  90.0th: {:<10} (401 samples)", rows[1].value)
        );
        assert!(lines[3].starts_with("\t* 99.0th: "), "{t}");
        assert_eq!(lines[5], "\t  min=1, max=1000");
    }

    #[test]
    fn empty_histogram_reports_zeros() {
        let t = Plat::default().table("RPS percentiles (requests)", 0, &[20.0, 50.0, 90.0], 50.0);
        assert!(
            t.contains("(0 total samples)") && t.contains("\t* 50.0th: 0          (0 samples)"),
            "{t}"
        );
    }

    proptest! {
        #[test]
        fn bucket_value_is_within_half_a_percent(v in 1u32..60_000_000) {
            let r = plat_value(plat_index(v)) as f64;
            prop_assert!((r - v as f64).abs() <= v as f64 * 0.004 + 0.5, "{} -> {}", v, r);
        }

        #[test]
        fn merge_equals_adding_everything(a in proptest::collection::vec(0u32..100_000, 0..50),
                                          b in proptest::collection::vec(0u32..100_000, 0..50)) {
            let (mut x, mut y, mut all) = (Plat::default(), Plat::default(), Plat::default());
            a.iter().for_each(|&v| { x.add(v); all.add(v) });
            b.iter().for_each(|&v| { y.add(v); all.add(v) });
            x.merge(&y);
            prop_assert_eq!(x, all);
        }
    }
}
