//! mmtests' summary statistics, percentage differences and significance.
//!
//! The rows are mmtests' "Multiops" summary set (`bin/lib/MMTests/Summarise.pm`,
//! `setSummaryMultiops`): Min, Amean or Hmean, Stddev, CoeffVar, Max and
//! BAmean-95 or BHmean-95. The helpers follow `bin/lib/MMTests/Stat.pm`
//! (`calc_hmean`, `calc_stddev`, `pdiff`, `pndiff`, `cidiff`) and the
//! comparison in `bin/lib/MMTests/Compare.pm`.

use crate::Better;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// `qnorm(1 − α/2)` for α = 0.05: the half-width of mmtests' interval in
/// units of the spread. mmtests asks R for it (commit 8cd087a, "Compare: Use
/// CI interval for significance testing"); the constant is R's value.
pub const Z_975: f64 = 1.959_963_984_540_054;

/// Percentage of the samples, best first, that the B?mean row averages.
const BEST_PCT: usize = 95;

/// The summary of one sample set: one cell of each row of mmtests' table.
///
/// For a higher-is-better metric, `mean` is the harmonic mean, `stddev` is
/// mmtests' HStddev and `coeffvar` its HCoeffVar (`100·HStddev/Hmean`); the
/// table still labels those rows `Stddev` and `CoeffVar`, as mmtests does
/// (`Stat.pm`'s `stat_names` has one name for both). Empty sets give `n = 0`
/// and NaN everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// The smallest sample (mmtests' `Min` row is the literal minimum).
    pub min: f64,
    /// Amean (lower is better) or Hmean (higher is better).
    pub mean: f64,
    /// Sample stddev (lower is better) or HStddev (higher is better).
    pub stddev: f64,
    /// `100·stddev/mean` (0 when the mean is 0, as `Stat.pm`'s `calc_coeffvar`).
    pub coeffvar: f64,
    /// The largest sample.
    pub max: f64,
    /// The mean (of the same kind as `mean`) of the best
    /// `max(1, ⌊n·95/100⌋)` samples: BAmean-95 or BHmean-95.
    pub bmean95: f64,
}

/// Arithmetic mean, NaN for no samples.
pub(crate) fn amean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Harmonic mean `n/Σ(1/x)`; NaN when empty or when any sample is ≤ 0
/// (`Stat.pm`'s `calc_hmean` refuses those too).
fn hmean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|&x| x.is_nan() || x <= 0.0) {
        return f64::NAN;
    }
    xs.len() as f64 / xs.iter().map(|&x| 1.0 / x).sum::<f64>()
}

/// Sample standard deviation `sqrt(Σ(x−x̄)²/(n−1))`, 0 for one sample.
fn sample_stddev(xs: &[f64]) -> f64 {
    match xs.len() {
        0 => f64::NAN,
        1 => 0.0,
        n => {
            let m = amean(xs);
            let ss: f64 = xs.iter().map(|&x| (x - m) * (x - m)).sum();
            (ss / (n as f64 - 1.0)).sqrt()
        }
    }
}

/// HStddev, the delta-method spread of the harmonic mean `h`:
/// `sqrt(Σ(1/x−1/H)²·H⁴/n)` (current `Summarise.pm`; older mmtests used the
/// arithmetic stddev here).
fn hstddev(xs: &[f64], h: f64) -> f64 {
    if xs.is_empty() || h.is_nan() {
        return f64::NAN;
    }
    let inv_h = 1.0 / h;
    let ss: f64 = xs
        .iter()
        .map(|&x| (1.0 / x - inv_h) * (1.0 / x - inv_h))
        .sum();
    (ss * h.powi(4) / xs.len() as f64).sqrt()
}

/// Summarise a sample set the way mmtests' Multiops summary does.
///
/// The data are first sorted best-first (ascending when lower is better,
/// descending when higher is better, as `Summarise.pm`'s `extractSummary`
/// does), which only matters for the B?mean-95 row.
pub fn summarise(xs: &[f64], better: Better) -> Summary {
    let mut sorted = xs.to_vec();
    match better {
        Better::Lower | Better::Neither => sorted.sort_by(|a, b| a.total_cmp(b)),
        Better::Higher => sorted.sort_by(|a, b| b.total_cmp(a)),
    }
    let n = sorted.len();
    if n == 0 {
        return Summary {
            n,
            min: f64::NAN,
            mean: f64::NAN,
            stddev: f64::NAN,
            coeffvar: f64::NAN,
            max: f64::NAN,
            bmean95: f64::NAN,
        };
    }
    let min = sorted.iter().copied().fold(f64::INFINITY, f64::min);
    let max = sorted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // `runStatFunc` in Summarise.pm: count = max(1, int(n·P/100)) of the
    // best-first data.
    let best = &sorted[..(n * BEST_PCT / 100).max(1)];
    let (mean, stddev, bmean95) = match better {
        Better::Lower | Better::Neither => (amean(&sorted), sample_stddev(&sorted), amean(best)),
        Better::Higher => {
            let h = hmean(&sorted);
            (h, hstddev(&sorted, h), hmean(best))
        }
    };
    let coeffvar = if mean == 0.0 {
        0.0
    } else {
        100.0 * stddev / mean
    };
    Summary {
        n,
        min,
        mean,
        stddev,
        coeffvar,
        max,
        bmean95,
    }
}

/// Percentage gain of `new` over `base` when higher is better:
/// `new·100/base − 100` (`Stat.pm`'s `pdiff`). 0 when equal or `new = 0`,
/// 100 when `base = 0`. Positive means `new` is better.
pub fn pdiff(base: f64, new: f64) -> f64 {
    if new == base || new == 0.0 {
        return 0.0;
    }
    if base == 0.0 {
        return 100.0;
    }
    new * 100.0 / base - 100.0
}

/// Percentage gain of `new` over `base` when lower is better:
/// `100 − new·100/base` (`Stat.pm`'s `pndiff`). 0 when equal, 100 when
/// `new = 0`, −99 when `base = 0`. Positive means `new` is better.
pub fn pndiff(base: f64, new: f64) -> f64 {
    if new == base {
        return 0.0;
    }
    if new == 0.0 {
        return 100.0;
    }
    if base == 0.0 {
        return -99.0;
    }
    100.0 - new * 100.0 / base
}

/// The plain change of `new` from `base` in percent, `(new − base)·100/base`,
/// for a metric with no better direction: positive when `new` is higher.
/// 0 when equal; ±100 (the sign of `new`) when `base = 0`, as [`pdiff`]
/// gives 100 there.
pub fn pchange(base: f64, new: f64) -> f64 {
    if new == base {
        return 0.0;
    }
    if base == 0.0 {
        return if new < 0.0 { -100.0 } else { 100.0 };
    }
    (new - base) * 100.0 / base
}

/// The percentage form for a row that follows the metric's direction.
pub fn pct(better: Better, base: f64, new: f64) -> f64 {
    match better {
        Better::Higher => pdiff(base, new),
        Better::Lower => pndiff(base, new),
        Better::Neither => pchange(base, new),
    }
}

/// The confidence level of [`gain_interval`]'s interval.
pub const CONFIDENCE: f64 = 0.95;

/// Welch's [`CONFIDENCE`] interval of the difference of the means,
/// `new.mean − base.mean`: `d ± t·se` with `se² = s₁²/n₁ + s₂²/n₂` and `t` the
/// Student quantile at `1 − (1 − CONFIDENCE)/2` with the
/// Welch–Satterthwaite degrees of freedom.
///
/// The spread is the summary's: the sample stddev of an Amean, mmtests'
/// HStddev of an Hmean (its delta-method spread, so the interval is the
/// delta method's). `None` when either side has fewer than two samples or
/// anything is not finite; both spreads 0 give the point `[d, d]`.
pub fn welch_interval(base: &Summary, new: &Summary) -> Option<(f64, f64)> {
    if base.n < 2 || new.n < 2 {
        return None;
    }
    let d = new.mean - base.mean;
    let (va, vb) = (
        base.stddev * base.stddev / base.n as f64,
        new.stddev * new.stddev / new.n as f64,
    );
    if !(d.is_finite() && va.is_finite() && vb.is_finite()) {
        return None;
    }
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some((d, d));
    }
    let df = se2 * se2 / (va * va / (base.n as f64 - 1.0) + vb * vb / (new.n as f64 - 1.0));
    let t = StudentsT::new(0.0, 1.0, df)
        .ok()?
        .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0);
    let half = t * se2.sqrt();
    half.is_finite().then_some((d - half, d + half))
}

/// [`welch_interval`] in the form of the table's mean-row percentage: the
/// interval of the gain (positive is better) for a lower- or
/// higher-is-better metric, of the change (positive is up) for a metric
/// with no better direction, as a percentage of the baseline's mean. The
/// percentages are linear in the variant's mean ([`pndiff`]: `−d·100/base`,
/// [`pdiff`] and [`pchange`]: `d·100/base`), so the interval is centred on
/// the table's percentage. `None` as [`welch_interval`], or when the
/// baseline's mean is 0.
pub fn gain_interval(better: Better, base: &Summary, new: &Summary) -> Option<(f64, f64)> {
    let (lo, hi) = welch_interval(base, new)?;
    if base.mean == 0.0 || !base.mean.is_finite() {
        return None;
    }
    let scale = match better {
        Better::Lower => -100.0 / base.mean,
        Better::Higher | Better::Neither => 100.0 / base.mean,
    };
    let (a, b) = (lo * scale, hi * scale);
    Some((a.min(b), a.max(b)))
}

/// Whether the mean of `new` differs significantly from the mean of `base`:
/// mmtests' `*` marker.
///
/// Since commit 8cd087a (2024-12, "Compare: Use CI interval for
/// significance testing") each side gets the interval `mean ± 1.96·s`,
/// `s` being its Stddev (HStddev for an Hmean), with no division by √n, and
/// `Stat.pm`'s `cidiff` scales the difference by the two facing half-widths.
/// The cell is significant when `|cidiff| > 1`, i.e. the intervals do not
/// overlap. With both spreads 0 the raw difference is used, so a difference
/// of more than 1 in the metric's unit is significant. NaN anywhere gives
/// `false`.
pub fn significant(base: &Summary, new: &Summary) -> bool {
    let (base_low, base_high) = (
        base.mean - Z_975 * base.stddev,
        base.mean + Z_975 * base.stddev,
    );
    let (new_low, new_high) = (new.mean - Z_975 * new.stddev, new.mean + Z_975 * new.stddev);
    let diff = new.mean - base.mean;
    // Only the half-widths that face each other count.
    let cisum = if new.mean < base.mean {
        (new_high - new.mean) + (base.mean - base_low)
    } else {
        (new.mean - new_low) + (base_high - base.mean)
    };
    let cidiff = if cisum == 0.0 { diff } else { diff / cisum };
    cidiff.abs() > 1.0
}

/// Two-sided p-value of Welch's t-test between two sample sets
/// (Welch–Satterthwaite degrees of freedom, sample variances with `n − 1`).
///
/// `None` when either side has fewer than two samples or the data hold a
/// NaN. When both variances are 0 the test is degenerate: p is 1 when the
/// means are equal and 0 otherwise. mmtests itself has used a t-test for the
/// `*` marker only before commit 8cd087a; here it is extra information for
/// the JSON.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (amean(a), amean(b));
    let (sa, sb) = (sample_stddev(a), sample_stddev(b));
    let (va, vb) = (sa * sa / a.len() as f64, sb * sb / b.len() as f64);
    if !(ma.is_finite() && mb.is_finite() && va.is_finite() && vb.is_finite()) {
        return None;
    }
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.len() as f64 - 1.0) + vb * vb / (b.len() as f64 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = 2.0 * dist.cdf(-t.abs());
    p.is_finite().then_some(p.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn arithmetic_summary_of_lower_is_better_data() {
        // [2, 4, 4, 4, 5, 5, 7, 9]: Σ = 40, mean 5; Σ(x−5)² = 9+1+1+1+0+0+4+16
        // = 32; sample variance 32/7, stddev sqrt(32/7) = 2.138089935...
        // CoeffVar = 100·2.138089935/5 = 42.7617987...
        let s = summarise(&[5.0, 4.0, 9.0, 2.0, 4.0, 7.0, 4.0, 5.0], Better::Lower);
        assert_eq!(s.n, 8);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert!(close(s.mean, 5.0));
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()), "{}", s.stddev);
        assert!(close(s.coeffvar, 100.0 * (32.0f64 / 7.0).sqrt() / 5.0));
        // n·95/100 = 7.6 → the best (smallest) 7: [2,4,4,4,5,5,7], Σ = 31.
        assert!(close(s.bmean95, 31.0 / 7.0));
    }

    #[test]
    fn harmonic_summary_of_higher_is_better_data() {
        // [1, 2, 4]: Σ1/x = 1 + 0.5 + 0.25 = 1.75, Hmean = 3/1.75 = 12/7
        // = 1.714285714...
        // HStddev: 1/H = 7/12; 1/x − 1/H = 5/12, −1/12, −4/12; squares sum to
        // (25+1+16)/144 = 7/24; H⁴ = 20736/2401; (7/24)·(20736/2401)/3 =
        // 288/343, sqrt = 0.916324258 (numpy agrees: 0.9163242579854549).
        let s = summarise(&[2.0, 1.0, 4.0], Better::Higher);
        assert!(close(s.mean, 12.0 / 7.0), "{}", s.mean);
        assert!(close(s.stddev, (288.0f64 / 343.0).sqrt()), "{}", s.stddev);
        assert!(close(s.stddev, 0.916_324_257_985_454_9));
        assert!(close(s.coeffvar, 100.0 * s.stddev / (12.0 / 7.0)));
        // Min and Max are the literal extremes even though the data sort
        // descending.
        assert_eq!((s.min, s.max), (1.0, 4.0));
        // ⌊3·95/100⌋ = 2 → the best two are [4, 2]: Hmean = 2/(0.25+0.5) = 8/3.
        assert!(close(s.bmean95, 8.0 / 3.0));
    }

    #[test]
    fn hmean_is_nan_with_a_non_positive_sample() {
        let s = summarise(&[3.0, 0.0, 2.0], Better::Higher);
        assert!(s.mean.is_nan() && s.stddev.is_nan() && s.coeffvar.is_nan());
        assert_eq!((s.min, s.max), (0.0, 3.0));
        // The best two, [3, 2], are positive: Hmean = 2/(1/3+1/2) = 12/5.
        assert!(close(s.bmean95, 2.4));
    }

    #[test]
    fn bmean95_of_ten_and_twenty_samples() {
        // n = 10: ⌊10·95/100⌋ = ⌊9.5⌋ = 9, so the worst sample is dropped.
        // Lower is better on 1..=10: best nine are 1..=9, mean 45/9 = 5.
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!(close(summarise(&ten, Better::Lower).bmean95, 5.0));
        // Higher is better: best nine are 10..=2, Hmean = 9/Σ_{k=2}^{10} 1/k
        // = 9/(H₁₀ − 1) = 9/1.928968254 = 4.665714...
        let h: f64 = (2..=10).map(|k| 1.0 / f64::from(k)).sum();
        assert!(close(summarise(&ten, Better::Higher).bmean95, 9.0 / h));
        // n = 20: ⌊20·95/100⌋ = 19. Lower on 1..=20: Σ_{1}^{19} = 190,
        // mean 10.
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        assert!(close(summarise(&twenty, Better::Lower).bmean95, 10.0));
        // Higher on 1..=20: best 19 are 20..=2, arithmetic would be
        // 209/19 = 11; harmonic is 19/(H₂₀ − 1).
        let h20: f64 = (2..=20).map(|k| 1.0 / f64::from(k)).sum();
        assert!(close(
            summarise(&twenty, Better::Higher).bmean95,
            19.0 / h20
        ));
    }

    #[test]
    fn single_and_no_samples() {
        // One sample: max(1, ⌊0.95⌋) = 1 sample in B?mean; stddev 0.
        let s = summarise(&[3.5], Better::Lower);
        assert_eq!(
            (s.n, s.min, s.mean, s.stddev, s.coeffvar),
            (1, 3.5, 3.5, 0.0, 0.0)
        );
        assert_eq!((s.max, s.bmean95), (3.5, 3.5));
        let h = summarise(&[3.5], Better::Higher);
        assert_eq!((h.mean, h.stddev, h.bmean95), (3.5, 0.0, 3.5));
        let e = summarise(&[], Better::Higher);
        assert_eq!(e.n, 0);
        assert!(e.mean.is_nan() && e.min.is_nan() && e.bmean95.is_nan());
    }

    #[test]
    fn coeffvar_of_a_zero_mean_is_zero() {
        // mean (−1 + 1)/2 = 0: Stat.pm's calc_coeffvar returns 0 then.
        assert_eq!(summarise(&[-1.0, 1.0], Better::Lower).coeffvar, 0.0);
    }

    #[test]
    fn pdiff_values_and_edge_cases() {
        // 110·100/100 − 100 = 10; 90·100/100 − 100 = −10.
        assert!(close(pdiff(100.0, 110.0), 10.0));
        assert!(close(pdiff(100.0, 90.0), -10.0));
        // 3·100/2 − 100 = 50.
        assert!(close(pdiff(2.0, 3.0), 50.0));
        assert_eq!(pdiff(5.0, 5.0), 0.0); // equal
        assert_eq!(pdiff(0.0, 0.0), 0.0); // equal, both 0
        assert_eq!(pdiff(5.0, 0.0), 0.0); // new = 0
        assert_eq!(pdiff(0.0, 5.0), 100.0); // base = 0
    }

    #[test]
    fn pndiff_values_and_edge_cases() {
        // 100 − 90·100/100 = 10; 100 − 110·100/100 = −10.
        assert!(close(pndiff(100.0, 90.0), 10.0));
        assert!(close(pndiff(100.0, 110.0), -10.0));
        // 100 − 3·100/2 = −50.
        assert!(close(pndiff(2.0, 3.0), -50.0));
        assert_eq!(pndiff(5.0, 5.0), 0.0); // equal
        assert_eq!(pndiff(0.0, 0.0), 0.0); // equal, both 0
        assert_eq!(pndiff(5.0, 0.0), 100.0); // new = 0
        assert_eq!(pndiff(0.0, 5.0), -99.0); // base = 0
        assert_eq!(pct(Better::Lower, 4.0, 3.0), 25.0);
        assert_eq!(pct(Better::Higher, 4.0, 3.0), -25.0);
    }

    fn summary(mean: f64, stddev: f64) -> Summary {
        Summary {
            n: 3,
            min: mean,
            mean,
            stddev,
            coeffvar: 0.0,
            max: mean,
            bmean95: mean,
        }
    }

    #[test]
    fn significance_by_non_overlapping_intervals() {
        // base 10 ± 1.96·1, new 14 ± 1.96·1: cisum = 1.96 + 1.96 = 3.92,
        // cidiff = 4/3.92 = 1.0204 > 1 → significant.
        assert!(significant(&summary(10.0, 1.0), &summary(14.0, 1.0)));
        // Same downwards: new 6 < base 10, cidiff = −4/3.92, |·| > 1.
        assert!(significant(&summary(10.0, 1.0), &summary(6.0, 1.0)));
        // new 13.9: cidiff = 3.9/3.92 = 0.9949 ≤ 1 → not significant.
        assert!(!significant(&summary(10.0, 1.0), &summary(13.9, 1.0)));
        // Unequal spreads: base 10 ± 1.96·2 = 3.92, new 12 ± 1.96·0.5 = 0.98:
        // cisum 4.9, cidiff = 2/4.9 = 0.408 → not significant.
        assert!(!significant(&summary(10.0, 2.0), &summary(12.0, 0.5)));
        // NaN spread → never significant.
        assert!(!significant(&summary(10.0, f64::NAN), &summary(100.0, 1.0)));
    }

    #[test]
    fn significance_with_zero_spread_uses_the_raw_difference() {
        // cisum = 0: cidiff = new − base. 11.5 − 10 = 1.5 > 1 → significant;
        // 10.5 − 10 = 0.5 → not; 10 − 11.5 = −1.5 → significant.
        assert!(significant(&summary(10.0, 0.0), &summary(11.5, 0.0)));
        assert!(!significant(&summary(10.0, 0.0), &summary(10.5, 0.0)));
        assert!(significant(&summary(11.5, 0.0), &summary(10.0, 0.0)));
    }

    #[test]
    fn welch_p_matches_an_independent_computation() {
        // a = [10,11,12,13]: mean 11.5, s² = (2.25+0.25+0.25+2.25)/3 = 5/3.
        // b = [12,14,15,17,19]: mean 15.4, s² = 29.2/4 = 7.3.
        // se² = (5/3)/4 + 7.3/5 = 0.4166667 + 1.46 = 1.8766667;
        // t = −3.9/1.3699148 = −2.84689;
        // df = 1.8766667²/(0.4166667²/3 + 1.46²/4) = 3.5218778/0.5907704
        //    = 5.96150;
        // p = 2·P(T₅.₉₆ < −2.84689) = 0.029509587239954605 per
        // scipy.stats.ttest_ind(a, b, equal_var=False).
        let p = welch_p(&[10.0, 11.0, 12.0, 13.0], &[12.0, 14.0, 15.0, 17.0, 19.0]);
        let p = p.expect("two samples each");
        assert!((p - 0.029_509_587_239_954_605).abs() < 1e-9, "{p}");
        // a = [1,2,3], b = [2,4,6]: scipy gives 0.22088084049409593.
        let p = welch_p(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]).expect("n ≥ 2");
        assert!((p - 0.220_880_840_494_095_93).abs() < 1e-9, "{p}");
        // Symmetric in its arguments.
        assert_eq!(welch_p(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]), Some(p));
    }

    #[test]
    fn pchange_is_the_plain_change() {
        // (12 − 10)·100/10 = 20; (8 − 10)·100/10 = −20.
        assert!(close(pchange(10.0, 12.0), 20.0));
        assert!(close(pchange(10.0, 8.0), -20.0));
        // unlike pdiff, a drop to 0 is −100%, not 0
        assert!(close(pchange(5.0, 0.0), -100.0));
        assert_eq!(pchange(0.0, 3.0), 100.0);
        assert_eq!(pchange(4.0, 4.0), 0.0);
        assert_eq!(pct(Better::Neither, 4.0, 3.0), -25.0);
    }

    #[test]
    fn welch_interval_matches_an_independent_computation() {
        // a = [10,11,12,13], b = [12,14,15,17,19] (as welch_p's test):
        // d = 15.4 − 11.5 = 3.9, se = sqrt(1.8766667) = 1.3699148,
        // df = 5.96150; t(0.975, 5.96150) = 2.450747 (bisection on a
        // Simpson integral of the t density), half = 3.357315;
        // [0.542685, 7.257315].
        let a = summarise(&[10.0, 11.0, 12.0, 13.0], Better::Lower);
        let b = summarise(&[12.0, 14.0, 15.0, 17.0, 19.0], Better::Lower);
        let (lo, hi) = welch_interval(&a, &b).expect("n ≥ 2");
        assert!(
            (lo - 0.542_685).abs() < 1e-4 && (hi - 7.257_315).abs() < 1e-4,
            "{lo} {hi}"
        );
        // As a gain of a lower-is-better metric: −d·100/11.5, so
        // [−63.1071%, −4.7190%], centred on the table's pndiff −33.913%.
        let (glo, ghi) = gain_interval(Better::Lower, &a, &b).expect("interval");
        assert!((glo + 7.257_315 * 100.0 / 11.5).abs() < 1e-3, "{glo}");
        assert!((ghi + 0.542_685 * 100.0 / 11.5).abs() < 1e-3, "{ghi}");
        assert!(close((glo + ghi) / 2.0, pndiff(11.5, 15.4)));
        // Higher is better and no direction: the same interval, sign kept.
        let (nlo, nhi) = gain_interval(Better::Neither, &a, &b).expect("interval");
        assert!(close(nlo, -ghi) && close(nhi, -glo));
    }

    #[test]
    fn welch_interval_degenerate_cases() {
        let one = summarise(&[1.0], Better::Lower);
        let two = summarise(&[1.0, 2.0], Better::Lower);
        assert_eq!(welch_interval(&one, &two), None);
        let flat = summarise(&[3.0, 3.0], Better::Lower);
        let flat4 = summarise(&[4.0, 4.0, 4.0], Better::Lower);
        assert_eq!(welch_interval(&flat, &flat4), Some((1.0, 1.0)));
        // 4 against 3, lower is better: −33.33%, a point
        let (lo, hi) = gain_interval(Better::Lower, &flat, &flat4).expect("point");
        assert!(close(lo, -100.0 / 3.0) && close(hi, lo));
        let zero = summarise(&[0.0, 0.0], Better::Lower);
        assert_eq!(gain_interval(Better::Lower, &zero, &flat4), None);
    }

    #[test]
    fn welch_p_degenerate_cases() {
        assert_eq!(welch_p(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(welch_p(&[1.0, 2.0], &[]), None);
        assert_eq!(welch_p(&[3.0, 3.0], &[3.0, 3.0, 3.0]), Some(1.0));
        assert_eq!(welch_p(&[3.0, 3.0], &[4.0, 4.0]), Some(0.0));
        assert_eq!(welch_p(&[f64::NAN, 3.0], &[4.0, 4.0]), None);
    }

    proptest! {
        #[test]
        fn pdiff_is_positive_when_new_is_higher(base in 1e-3f64..1e6, f in 1.0001f64..100.0) {
            prop_assert!(pdiff(base, base * f) > 0.0);
            prop_assert!(pdiff(base, base / f) < 0.0);
        }

        #[test]
        fn pndiff_is_positive_when_new_is_lower(base in 1e-3f64..1e6, f in 1.0001f64..100.0) {
            prop_assert!(pndiff(base, base / f) > 0.0);
            prop_assert!(pndiff(base, base * f) < 0.0);
        }

        #[test]
        fn mean_lies_between_min_and_max(
            xs in proptest::collection::vec(1e-3f64..1e6, 1..40),
            higher in any::<bool>(),
        ) {
            let better = if higher { Better::Higher } else { Better::Lower };
            let s = summarise(&xs, better);
            let slack = 1e-9 * s.max;
            prop_assert!(s.min <= s.mean + slack && s.mean <= s.max + slack, "{:?}", s);
            prop_assert!(s.min <= s.bmean95 + slack && s.bmean95 <= s.max + slack, "{:?}", s);
            prop_assert!(s.stddev >= 0.0);
        }
    }
}
