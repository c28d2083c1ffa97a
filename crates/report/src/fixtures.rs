//! Small hand-made specs and runs shared by the unit tests.

use crate::{Better, MetricInfo, PointInfo, ReportSpec, RunRecord, VariantInfo};
use serde_json::json;

fn metric(
    name: &str,
    unit: &str,
    better: Better,
    decimals: usize,
    description: &str,
) -> MetricInfo {
    MetricInfo {
        name: name.into(),
        unit: unit.into(),
        better,
        decimals,
        description: description.into(),
    }
}

/// Two points (`groups` = 1, 4), a native baseline and a sim variant, three
/// iterations, a lower-is-better `time` and a higher-is-better `tput`.
pub fn spec() -> ReportSpec {
    ReportSpec {
        name: "hackbench-pipes".into(),
        description: "hackbench over pipes, process mode".into(),
        axes: vec!["groups".into()],
        points: vec![
            PointInfo {
                key: "1".into(),
                values: vec![json!(1)],
            },
            PointInfo {
                key: "4".into(),
                values: vec![json!(4)],
            },
        ],
        variants: vec![
            VariantInfo {
                name: "native-6.8".into(),
                mode: "native".into(),
            },
            VariantInfo {
                name: "sim-eevdf".into(),
                mode: "sim".into(),
            },
        ],
        metrics: vec![
            metric("time", "s", Better::Lower, 4, "wall time of one run"),
            metric("tput", "MB/s", Better::Higher, 2, "pipe throughput"),
        ],
        iterations: 3,
    }
}

/// A run with the given metrics.
pub fn run(variant: &str, point: &str, iteration: u32, metrics: &[(&str, f64)]) -> RunRecord {
    RunRecord {
        variant: variant.into(),
        point: point.into(),
        iteration,
        seed: 1000 + u64::from(iteration),
        metrics: metrics.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
    }
}

/// Runs for [`spec`]. At `groups` = 4 the sim's time is far off the native
/// one (a significant cell); at 1 it is close (not significant). The sim's
/// third run at 4 groups lacks `tput`.
pub fn records() -> Vec<RunRecord> {
    let table: [(&str, &str, [f64; 3], [f64; 3]); 4] = [
        ("native-6.8", "1", [1.00, 1.10, 1.05], [100.0, 110.0, 105.0]),
        ("native-6.8", "4", [2.00, 2.02, 2.01], [300.0, 310.0, 305.0]),
        ("sim-eevdf", "1", [1.02, 1.12, 1.07], [120.0, 118.0, 122.0]),
        (
            "sim-eevdf",
            "4",
            [2.50, 2.52, 2.51],
            [290.0, 320.0, f64::NAN],
        ),
    ];
    let mut out = Vec::new();
    // Deliberately out of order: the report must sort by the spec.
    for (variant, point, times, tputs) in table.iter().rev() {
        for i in (0..3).rev() {
            let mut metrics = vec![("time", times[i])];
            if !tputs[i].is_nan() {
                metrics.push(("tput", tputs[i]));
            }
            out.push(run(variant, point, i as u32, &metrics));
        }
    }
    out
}
