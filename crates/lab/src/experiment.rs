//! Experiment files (TOML): a base run, sweep axes, variants, iterations
//! and metrics, expanded into the list of runs they ask for. Every field is
//! checked before anything runs; an error names the file, the field and
//! what was expected, on one line. docs/experiments.md is the user's guide.

use crate::metrics;
use crate::spec::{Mode, RunSpec, SpecError};
use crate::workload::WorkloadSpec;
use serde::{Deserialize, Serialize};
use toml::{Table, Value};

/// An experiment file that cannot be used: the file (or `builtin:NAME`)
/// and what is wrong, on one line.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ExperimentError {
    /// The file, or `builtin:NAME`.
    pub origin: String,
    /// What is wrong.
    pub message: String,
}

/// The top level of an experiment file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default = "default_iterations")]
    iterations: u32,
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default)]
    metrics: Option<Vec<String>>,
    run: Table,
    #[serde(default)]
    sweep: Table,
    #[serde(default)]
    variant: Vec<Table>,
    #[serde(default)]
    quick: Option<Table>,
}

fn default_iterations() -> u32 {
    5
}
fn default_seed() -> u64 {
    1
}

/// One variant: a column of the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Name.
    pub name: String,
    /// Simulated or native.
    pub mode: Mode,
}

/// One point of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The axis values joined by `-` (mmtests' operation suffix).
    pub key: String,
    /// The value of each axis.
    pub values: Vec<serde_json::Value>,
}

/// The specification of one (variant, point) cell; its iterations differ
/// only in the seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Index into [`Experiment::variants`].
    pub variant: usize,
    /// Index into [`Experiment::points`].
    pub point: usize,
    /// The run, with seed 0 (each iteration derives its own).
    pub spec: RunSpec,
}

/// One run to do.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRun {
    /// Index into [`Experiment::cells`].
    pub cell: usize,
    /// Iteration, from 0.
    pub iteration: u32,
    /// The seed: from the base seed, the point and the iteration only, so
    /// every variant of a point sees the same random streams and the
    /// result does not depend on how the runs are split.
    pub seed: u64,
}

/// An experiment, expanded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// Name.
    pub name: String,
    /// One line.
    pub description: String,
    /// Where the setup comes from (a commit, a mailing-list post).
    pub source: Option<String>,
    /// Scaled down by `--quick`.
    pub quick: bool,
    /// Iterations per cell.
    pub iterations: u32,
    /// Base seed.
    pub seed: u64,
    /// Metrics to report (may include [`metrics::STAGE_SHARES`]).
    pub metrics: Vec<String>,
    /// Sweep axis names.
    pub axes: Vec<String>,
    /// Sweep points (one, with an empty key, without a sweep).
    pub points: Vec<Point>,
    /// Variants, the baseline first.
    pub variants: Vec<Variant>,
    /// Every (variant, point), point-major.
    pub cells: Vec<Cell>,
}

/// The most runs one experiment may ask for.
pub const MAX_RUNS: u64 = 10_000_000;

/// Fields of a run that the run table, variants, sweeps and `[quick]` may
/// set, besides the workload's own.
const RUN_KEYS: [&str; 23] = [
    "mode",
    "numa_balancing",
    "mem_policy",
    "thp",
    "numa_params",
    "kernel_image",
    "guest",
    "kvm",
    "host",
    "guests",
    "host_kernel",
    "cpuidle",
    "machine",
    "cpus",
    "node",
    "kernel",
    "features",
    "kernel_config",
    "policy",
    "policy_options",
    "costs",
    "cost_profile",
    "check",
];

/// Fields only the simulator reads: a native variant may not set them, and
/// it does not inherit them from the run table.
const SIM_ONLY_KEYS: [&str; 17] = [
    "machine",
    "numa_balancing",
    "mem_policy",
    "thp",
    "numa_params",
    "host",
    "guests",
    "host_kernel",
    "cpuidle",
    "kernel",
    "features",
    "kernel_config",
    "policy",
    "policy_options",
    "costs",
    "cost_profile",
    "check",
];

/// Fields only a kernel run reads: another variant may not set them, and
/// it does not inherit them from the run table.
const KERNEL_ONLY_KEYS: [&str; 3] = ["kernel_image", "guest", "kvm"];

/// The simulator's fields a kernel run reads too: the machine it boots
/// and the kernel (version) it is.
const KERNEL_READS: [&str; 2] = ["machine", "kernel"];

/// A seed from (base seed, point key, iteration): FNV-1a over the three,
/// then a splitmix64 finaliser to spread the bits, kept to 53 bits.
pub fn derive_seed(base: u64, point: &str, iteration: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = base
        .to_le_bytes()
        .into_iter()
        .chain(point.bytes())
        .chain([0xff])
        .chain(iteration.to_le_bytes());
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    // 53 bits, so the seed survives JSON readers that hold numbers as
    // doubles (JavaScript, jq)
    (z ^ (z >> 31)) >> 11
}

/// One line from a TOML error: `line N: message`.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {msg}")
        }
        None => msg,
    }
}

fn value_json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

fn value_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Merge `layer` over `into`: `features`, `kernel_config` and
/// `policy_options` merge by name, anything else replaces; an empty
/// `policy_options = {}` replaces too (a variant's own "no options", where
/// leaving it out inherits the run's).
fn overlay(into: &mut Table, layer: &Table) {
    for (k, v) in layer {
        match (k.as_str(), into.get_mut(k), v) {
            ("policy_options", _, Value::Table(new)) if new.is_empty() => {
                into.insert(k.clone(), v.clone());
            }
            (
                "features" | "kernel_config" | "policy_options",
                Some(Value::Table(old)),
                Value::Table(new),
            ) => {
                for (nk, nv) in new {
                    old.insert(nk.clone(), nv.clone());
                }
            }
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Build a run from a merged table: the run fields, then the workload from
/// the rest (`benchmark` says which).
fn build_spec(mut t: Table) -> Result<RunSpec, SpecError> {
    if t.contains_key("seed") {
        return Err(SpecError::field(
            "seed",
            "set the experiment's seed at the top level (each run's seed derives from it)",
        ));
    }
    let benchmark = match t.remove("benchmark") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(SpecError::field(
                "benchmark",
                format!("expected a string, got {other}"),
            ))
        }
        None => {
            return Err(SpecError::field(
                "benchmark",
                format!(
                    "missing: name the workload ({})",
                    WorkloadSpec::NAMES.join(", ")
                ),
            ))
        }
    };
    let mut run = Table::new();
    let mut fields = Table::new();
    for (k, v) in t {
        if RUN_KEYS.contains(&k.as_str()) {
            run.insert(k, v);
        } else {
            fields.insert(k, v);
        }
    }
    let workload = WorkloadSpec::from_table(&benchmark, fields)?;
    // The workload is checked; parse the rest with it in place.
    run.insert(
        "workload".into(),
        Value::try_from(&workload).map_err(|e| SpecError::field("workload", e))?,
    );
    let spec: RunSpec = serde_path_to_error::deserialize(Value::Table(run)).map_err(|e| {
        let path = e.path().to_string();
        SpecError::field(path, e.into_inner().message().trim())
    })?;
    Ok(spec)
}

/// The largest experiment file [`Experiment::read`] reads. The built-in
/// experiments are 1 to 2 KiB; a file written by a script with sweep axes of
/// thousands of values stays in the hundreds of KiB. 16 MiB is far beyond
/// that, while `/dev/zero` or a wrong, huge file fails at once.
pub const MAX_EXPERIMENT_BYTES: u64 = 16 << 20;

impl Experiment {
    /// Read, parse and expand an experiment file: a regular file of at most
    /// [`MAX_EXPERIMENT_BYTES`] (a FIFO or a device is refused before it is
    /// opened), in UTF-8. Errors name the file as `path` spells it.
    pub fn read(path: &std::path::Path, quick: bool) -> Result<Experiment, ExperimentError> {
        let origin = path.display().to_string();
        let err = |message: String| ExperimentError {
            origin: origin.clone(),
            message,
        };
        let bytes = topology::input::read_capped(path, MAX_EXPERIMENT_BYTES).map_err(err)?;
        let text = String::from_utf8(bytes).map_err(|_| err("not UTF-8 text".into()))?;
        Self::parse(&origin, &text, quick)
    }

    /// Parse and expand an experiment file's text. `origin` names it in
    /// errors; `quick` applies the file's `[quick]` table (or the default
    /// scaling when it has none).
    pub fn parse(origin: &str, text: &str, quick: bool) -> Result<Experiment, ExperimentError> {
        // A value may hold a line break (`"on\n"`), and errors quote
        // values: escape it, so the error stays one line.
        let err = |message: String| ExperimentError {
            origin: origin.to_string(),
            message: message.replace('\n', "\\n").replace('\r', "\\r"),
        };
        let file: File = toml::from_str(text).map_err(|e| err(toml_error(text, &e)))?;
        if !quick && file.quick.is_some() {
            // [quick] is checked whether or not --quick is given
            let q: File = toml::from_str(text).map_err(|e| err(toml_error(text, &e)))?;
            Self::expand(q, true).map_err(|m| err(format!("with --quick: {m}")))?;
        }
        Self::expand(file, quick).map_err(err)
    }

    fn expand(f: File, quick: bool) -> Result<Experiment, String> {
        if f.name.trim().is_empty() || f.name.contains(['/', '\\', '\n']) {
            return Err(format!(
                "name: {:?} must be a non-empty name without slashes",
                f.name
            ));
        }
        let mut iterations = f.iterations;
        // -- sweep axes (`--quick` may give an axis fewer values)
        let mut sweep = f.sweep.clone();
        if let (true, Some(q)) = (quick, &f.quick) {
            match q.get("sweep") {
                None => {}
                Some(Value::Table(t)) => {
                    for (axis, values) in t {
                        if !sweep.contains_key(axis) {
                            return Err(format!("quick.sweep.{axis}: not an axis of [sweep]"));
                        }
                        sweep.insert(axis.clone(), values.clone());
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "quick.sweep: expected a table of axes, got {other}"
                    ))
                }
            }
        }
        // `zip = true`: the axes go together, value i of each at point i
        // (a benchmark whose loops depend on the groups, as
        // `hackbench -l 2560/G -g G`), instead of every combination; the
        // first axis names the point
        let zip = match sweep.remove("zip") {
            None => false,
            Some(Value::Boolean(b)) => b,
            Some(other) => return Err(format!("sweep.zip: expected true or false, got {other}")),
        };
        let mut axes = Vec::new();
        let mut lists = Vec::new();
        for (axis, values) in &sweep {
            if [
                "mode",
                "features",
                "kernel_config",
                "policy_options",
                "seed",
                "benchmark",
            ]
            .contains(&axis.as_str())
            {
                return Err(format!(
                    "sweep.{axis}: cannot be swept (sweep a machine or workload field; use variants for kernels, features and policy options)"
                ));
            }
            let Value::Array(vs) = values else {
                return Err(format!(
                    "sweep.{axis}: expected an array of values, got {values}"
                ));
            };
            if vs.is_empty() {
                return Err(format!(
                    "sweep.{axis}: the sweep is empty; give at least one value"
                ));
            }
            axes.push(axis.clone());
            lists.push(vs.clone());
        }
        // the size before anything is expanded: a sweep past the cap is
        // refused at once, not after building its points (each variant and
        // iteration multiplies it; both are at least 1)
        let npoints = if zip {
            lists.first().map_or(0, |l| l.len() as u64)
        } else {
            lists
                .iter()
                .fold(1u64, |n, l| n.saturating_mul(l.len() as u64))
        };
        let at_least = npoints.saturating_mul(f.variant.len().max(1) as u64);
        if at_least > MAX_RUNS {
            return Err(format!(
                "at least {at_least} runs ({npoints} points x {} variants) is more than {MAX_RUNS}; shrink the sweep",
                f.variant.len().max(1)
            ));
        }
        let mut points: Vec<Vec<Value>> = vec![vec![]];
        if zip {
            let n = lists.first().map_or(0, Vec::len);
            if let Some(i) = lists.iter().position(|l| l.len() != n) {
                return Err(format!(
                    "sweep.{}: {} values, but sweep.{} has {n}; zipped axes have one value per point",
                    axes[i],
                    lists[i].len(),
                    axes[0]
                ));
            }
            points = (0..n)
                .map(|j| lists.iter().map(|l| l[j].clone()).collect())
                .collect();
            lists.clear();
        }
        for vs in &lists {
            points = points
                .into_iter()
                .flat_map(|p| {
                    vs.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push(v.clone());
                        q
                    })
                })
                .collect();
        }
        let points: Vec<(Point, Table)> = points
            .into_iter()
            .map(|vals| {
                // zipped axes follow the first, which alone names the point
                // (so `[quick]` may shorten the others: `-l 2560/G` -> `-l 256/G`)
                let key = if zip {
                    vals.first().map(value_key).unwrap_or_default()
                } else {
                    vals.iter().map(value_key).collect::<Vec<_>>().join("-")
                };
                let table: Table = axes.iter().cloned().zip(vals.iter().cloned()).collect();
                (
                    Point {
                        key,
                        values: vals.iter().map(value_json).collect(),
                    },
                    table,
                )
            })
            .collect();
        {
            let mut keys: Vec<&str> = points.iter().map(|(p, _)| p.key.as_str()).collect();
            keys.sort_unstable();
            if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!("sweep: point {:?} appears twice", w[0]));
            }
        }
        // -- quick
        let mut quick_layer = Table::new();
        if quick {
            match &f.quick {
                Some(q) => {
                    for (k, v) in q {
                        if k == "sweep" {
                            continue;
                        }
                        if ["mode", "seed", "name"].contains(&k.as_str()) {
                            return Err(format!("quick.{k}: --quick cannot change it"));
                        }
                        if k == "iterations" {
                            iterations = v
                                .as_integer()
                                .and_then(|i| u32::try_from(i).ok())
                                .ok_or_else(|| {
                                    format!("quick.iterations: expected an integer >= 1, got {v}")
                                })?;
                        } else {
                            quick_layer.insert(k.clone(), v.clone());
                        }
                    }
                }
                None => iterations = iterations.min(3),
            }
        }
        if iterations == 0 {
            return Err("iterations: must be at least 1".into());
        }
        // -- variants
        if f.variant.is_empty() {
            return Err(
                "variant: give at least one [[variant]] (the first is the baseline)".into(),
            );
        }
        let mut variants = Vec::new();
        let mut layers = Vec::new();
        for (i, v) in f.variant.iter().enumerate() {
            let mut v = v.clone();
            let name = match v.remove("name") {
                Some(Value::String(s)) if !s.trim().is_empty() => s,
                Some(other) => {
                    return Err(format!(
                        "variant {}: name: expected a non-empty string, got {other}",
                        i + 1
                    ))
                }
                None => return Err(format!("variant {}: name: missing", i + 1)),
            };
            if variants.iter().any(|x: &Variant| x.name == name) {
                return Err(format!("variant {name:?}: the name is used twice"));
            }
            let mode = match v.get("mode").or(f.run.get("mode")) {
                None => Mode::Sim,
                Some(Value::String(s)) if s == "sim" => Mode::Sim,
                Some(Value::String(s)) if s == "native" => Mode::Native,
                Some(Value::String(s)) if s == "kernel" => Mode::Kernel,
                Some(other) => {
                    return Err(format!(
                        "variant {name:?}: mode: expected \"sim\", \"native\" or \"kernel\", got {other}"
                    ))
                }
            };
            if mode == Mode::Native {
                if let Some(k) = v.keys().find(|k| SIM_ONLY_KEYS.contains(&k.as_str())) {
                    return Err(format!(
                        "variant {name:?}: {k}: is simulator only; a native variant runs on this host as it is"
                    ));
                }
            }
            if mode == Mode::Kernel {
                if let Some(k) = v.keys().find(|k| {
                    SIM_ONLY_KEYS.contains(&k.as_str()) && !KERNEL_READS.contains(&k.as_str())
                }) {
                    return Err(format!(
                        "variant {name:?}: {k}: is simulator only; a kernel variant boots a real kernel as it is"
                    ));
                }
            } else if let Some(k) = v.keys().find(|k| KERNEL_ONLY_KEYS.contains(&k.as_str())) {
                return Err(format!(
                    "variant {name:?}: {k}: applies to mode \"kernel\" only"
                ));
            }
            variants.push(Variant { name, mode });
            layers.push(v);
        }
        let total = (points.len() as u64)
            .saturating_mul(variants.len() as u64)
            .saturating_mul(iterations as u64);
        if total > MAX_RUNS {
            return Err(format!(
                "{total} runs ({} points x {} variants x {iterations} iterations) is more than {MAX_RUNS}; shrink the sweep or the iterations",
                points.len(),
                variants.len()
            ));
        }
        // -- cells
        let mut cells = Vec::new();
        let mut benchmarks = std::collections::BTreeSet::new();
        for (pi, (point, ptable)) in points.iter().enumerate() {
            for (vi, variant) in variants.iter().enumerate() {
                let mut t = f.run.clone();
                overlay(&mut t, &layers[vi]);
                overlay(&mut t, ptable);
                overlay(&mut t, &quick_layer);
                match variant.mode {
                    Mode::Native => {
                        // a swept (or quick) simulator field means nothing to the host
                        for k in SIM_ONLY_KEYS {
                            t.remove(k);
                        }
                    }
                    Mode::Kernel => {
                        for k in SIM_ONLY_KEYS.iter().filter(|k| !KERNEL_READS.contains(k)) {
                            t.remove(*k);
                        }
                    }
                    Mode::Sim => {}
                }
                if variant.mode != Mode::Kernel {
                    for k in KERNEL_ONLY_KEYS {
                        t.remove(k);
                    }
                }
                let ctx = if point.key.is_empty() {
                    format!("variant {:?}", variant.name)
                } else {
                    format!("variant {:?}, point {}", variant.name, point.key)
                };
                let mut spec = build_spec(t).map_err(|e| format!("{ctx}: {e}"))?;
                spec.mode = variant.mode;
                if quick && f.quick.is_none() {
                    spec.workload.scale_down();
                }
                spec.seed = 0;
                crate::exec::check(&spec).map_err(|e| format!("{ctx}: {e}"))?;
                benchmarks.insert(spec.workload.name());
                cells.push(Cell {
                    variant: vi,
                    point: pi,
                    spec,
                });
            }
        }
        // -- metrics
        let metrics = match f.metrics {
            Some(m) => {
                if m.is_empty() {
                    return Err("metrics: the list is empty; leave it out for the defaults".into());
                }
                for (i, name) in m.iter().enumerate() {
                    if !metrics::known(name) {
                        return Err(format!(
                            "metrics: unknown metric {name:?} (known: {})",
                            metrics::names()
                        ));
                    }
                    if m[..i].contains(name) {
                        return Err(format!("metrics: {name:?} is listed twice"));
                    }
                    if let Some(own) = metrics::lookup(name).map(|x| x.benchmarks) {
                        if !own.is_empty() && !own.iter().any(|b| benchmarks.contains(b)) {
                            return Err(format!(
                                "metrics: {name:?} is a {} metric, and this experiment runs {}",
                                own.join(" or "),
                                benchmarks.iter().copied().collect::<Vec<_>>().join(", ")
                            ));
                        }
                    }
                }
                m
            }
            None => {
                let mut m: Vec<String> = Vec::new();
                for b in &benchmarks {
                    for name in metrics::defaults(b) {
                        if !m.contains(&name) {
                            m.push(name);
                        }
                    }
                }
                m
            }
        };
        Ok(Experiment {
            name: f.name,
            description: f.description,
            source: f.source,
            quick,
            iterations,
            seed: f.seed,
            metrics,
            axes,
            points: points.into_iter().map(|(p, _)| p).collect(),
            variants,
            cells,
        })
    }

    /// Every run, in canonical order: point, iteration, variant.
    pub fn runs(&self) -> Vec<PlannedRun> {
        let nv = self.variants.len();
        let mut v = Vec::with_capacity(self.cells.len() * self.iterations as usize);
        for (pi, point) in self.points.iter().enumerate() {
            for it in 0..self.iterations {
                let seed = derive_seed(self.seed, &point.key, it);
                for vi in 0..nv {
                    v.push(PlannedRun {
                        cell: pi * nv + vi,
                        iteration: it,
                        seed,
                    });
                }
            }
        }
        v
    }

    /// The spec of a planned run, with its seed.
    pub fn spec_of(&self, run: &PlannedRun) -> RunSpec {
        let mut s = self.cells[run.cell].spec.clone();
        s.seed = run.seed;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sim::placement::linux::Features;

    const BASE: &str = r#"
name = "t"
iterations = 2
[run]
machine = "xeon-12c24t"
kernel = "linux-5.12+test_idle_cores_smt_gate=on"
benchmark = "hackbench"
loops = 10
[sweep]
groups = [1, 2]
fds = [3, 5]
[[variant]]
name = "a"
[[variant]]
name = "b"
loops = 30
fds = 7
features = { sis_util = "off" }
[[variant]]
name = "host"
mode = "native"
[quick]
loops = 4
iterations = 1
"#;

    fn hb(exp: &Experiment, cell: usize) -> (u32, u32, u32) {
        match &exp.cells[cell].spec.workload {
            WorkloadSpec::Hackbench(h) => (h.groups, h.fds, h.loops),
            other => panic!("{other:?}"),
        }
    }

    /// A sweep past the cap is refused from its axes' lengths, before any
    /// point is built (100 x 100 x 1000 points, 2 variants: 2 x 10^7 runs;
    /// expanded first, it took 27 s and 7.9 GB to refuse).
    #[test]
    fn a_sweep_past_the_cap_is_refused_before_it_is_expanded() {
        let list = |n: u32| {
            (1..=n)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let text = BASE.replace(
            "groups = [1, 2]\nfds = [3, 5]",
            &format!(
                "groups = [{}]\nfds = [{}]\nloops = [{}]",
                list(100),
                list(100),
                list(1000)
            ),
        );
        let e = Experiment::parse("t.toml", &text, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at least 30000000 runs (10000000 points x 3 variants)"),
            "{e}"
        );
    }

    #[test]
    fn axes_multiply_in_order_and_layers_apply_run_variant_point_quick() {
        let e = Experiment::parse("t.toml", BASE, false).unwrap();
        assert_eq!(e.axes, ["groups", "fds"]);
        let keys: Vec<&str> = e.points.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["1-3", "1-5", "2-3", "2-5"]);
        assert_eq!(e.cells.len(), 4 * 3);
        // point 1-5, variant b: the point's fds wins over the variant's, the
        // variant's loops over the run's
        assert_eq!(hb(&e, 3 + 1), (1, 5, 30));
        assert_eq!(hb(&e, 3), (1, 5, 10));
        let q = Experiment::parse("t.toml", BASE, true).unwrap();
        assert_eq!(hb(&q, 3 + 1), (1, 5, 4));
        assert_eq!((q.iterations, q.runs().len()), (1, 12));
    }

    #[test]
    fn zipped_axes_go_together() {
        let text = BASE
            .replace(
                "groups = [1, 2]\nfds = [3, 5]",
                "zip = true\ngroups = [1, 2, 4]\nloops = [40, 20, 10]",
            )
            .replace("loops = 30\n", "");
        let e = Experiment::parse("t.toml", &text, false).unwrap();
        assert_eq!(e.axes, ["groups", "loops"]);
        let keys: Vec<&str> = e.points.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["1", "2", "4"]);
        assert_eq!(hb(&e, 2 * 3 + 1), (4, 7, 10));
        let short = text.replace("loops = [40, 20, 10]", "loops = [40, 20]");
        // (the [quick] layer is checked first)
        assert!(Experiment::parse("t.toml", &short, false)
            .unwrap_err()
            .to_string()
            .ends_with("sweep.loops: 2 values, but sweep.groups has 3; zipped axes have one value per point"));
        let bad = text.replace("zip = true", "zip = 1");
        assert!(Experiment::parse("t.toml", &bad, false)
            .unwrap_err()
            .to_string()
            .ends_with("sweep.zip: expected true or false, got 1"));
    }

    #[test]
    fn kernel_names_with_overrides_and_variant_features_combine() {
        let e = Experiment::parse("t.toml", BASE, false).unwrap();
        let a = e.cells[0].spec.features().unwrap();
        let b = e.cells[1].spec.features().unwrap();
        assert!(a.test_idle_cores_smt_gate && b.test_idle_cores_smt_gate);
        assert!(a.sis_util == Features::kernel("linux-5.12").unwrap().sis_util);
        assert!(!b.sis_util);
    }

    #[test]
    fn a_native_variant_drops_the_simulator_fields_of_the_run() {
        let e = Experiment::parse("t.toml", BASE, false).unwrap();
        let native = &e.cells[2].spec;
        assert_eq!(native.mode, Mode::Native);
        assert!(native.simulator_only_fields().is_empty(), "{native:?}");
    }

    #[test]
    fn numa_keys_reach_the_simulator_and_variants_override_them() {
        let text = r#"
name = "n"
description = "d"
source = "s"
metrics = ["migrations"]
[run]
benchmark = "spin"
machine = "xeon-12c24t"
mem_mib = 64
numa_balancing = true
numa_params = { scan_size_mb = "64" }
[[variant]]
name = "off"
numa_balancing = false
mem_policy = "interleave=all"
[[variant]]
name = "on"
thp = true
"#;
        let e = Experiment::parse("n.toml", text, false).unwrap();
        let topo = topology::preset("xeon-12c24t").unwrap();
        let off = e.cells[0].spec.sim_options(&topo).unwrap();
        let on = e.cells[1].spec.sim_options(&topo).unwrap();
        assert_eq!(off.numa_balancing, Some(false));
        assert_eq!(off.mem_policy, sim::numa::MemPolicy::Interleave(vec![0, 1]));
        assert_eq!((on.numa_balancing, on.thp), (Some(true), true));
        assert_eq!(on.numa_params.scan_size_mb, 64);
        let bad = text.replace("scan_size_mb = \"64\"", "scan_size_mb = \"0\"");
        let err = Experiment::parse("n.toml", &bad, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("numa_params.scan_size_mb"), "{err}");
    }

    #[test]
    fn seeds_depend_on_point_and_iteration_only() {
        let e = Experiment::parse("t.toml", BASE, false).unwrap();
        let runs = e.runs();
        assert_eq!(runs.len(), 4 * 2 * 3);
        for r in &runs {
            let p = &e.points[e.cells[r.cell].point].key;
            assert_eq!(r.seed, derive_seed(1, p, r.iteration));
        }
        // the variants of a (point, iteration) share a seed; others differ
        let mut seeds: Vec<u64> = runs.iter().map(|r| r.seed).collect();
        seeds.dedup();
        assert_eq!(seeds.len(), 4 * 2);
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 4 * 2);
    }

    #[test]
    fn a_value_with_a_line_break_gives_a_one_line_error() {
        // found by tests/fuzz.rs
        let text = BASE.replacen("[run]", "[run]\nfeatures = { sis_util = \"o\\n\" }", 1);
        let e = Experiment::parse("t.toml", &text, false)
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'), "{e:?}");
        assert!(e.contains("'o\\n'"), "{e}");
    }

    #[test]
    fn errors_name_the_field() {
        let bad = |from: &str, to: &str| {
            let text = BASE.replacen(from, to, 1);
            Experiment::parse("t.toml", &text, false)
                .unwrap_err()
                .to_string()
        };
        let e = bad("loops = 10", "loops = 10.5");
        assert!(
            e.starts_with("t.toml: variant \"a\", point 1-3: loops: invalid type: floating point"),
            "{e}"
        );
        let e = bad(
            "[[variant]]\nname = \"host\"\nmode = \"native\"",
            "[[variant]]\nname = \"host\"\nmode = \"native\"\nkernel = \"linux-6.6\"",
        );
        assert!(
            e.contains("variant \"host\": kernel: is simulator only"),
            "{e}"
        );
        let e = bad("name = \"b\"", "name = \"a\"");
        assert!(e.contains("used twice"), "{e}");
        let e = bad("groups = [1, 2]", "groups = 2");
        assert!(e.contains("sweep.groups: expected an array"), "{e}");
        let e = bad("groups = [1, 2]", "groups = [1, 1]");
        assert!(e.contains("appears twice"), "{e}");
        let e = bad("loops = 10", "loops = 10\nseed = 3");
        assert!(
            e.contains("seed: set the experiment's seed at the top level"),
            "{e}"
        );
        let e = bad("benchmark = \"hackbench\"", "benchmark = \"hackbenhc\"");
        assert!(e.contains("unknown benchmark \"hackbenhc\""), "{e}");
        let e = bad("iterations = 2", "iterations = 0");
        assert!(e.contains("iterations: must be at least 1"), "{e}");
    }

    /// A policy outside the Linux path for the registry tests: every task
    /// to CPU `cpu` (an option), in its one stage `pinned`.
    mod one_cpu {
        use sim::placement::{Decision, Placement, PolicyFactory, Stage, WakeEnv, WakeRequest};
        use std::sync::Arc;
        use topology::{SchedDomains, Topology};

        struct OneCpu(usize);
        impl Placement for OneCpu {
            fn name(&self) -> String {
                "one-cpu".into()
            }
            fn select_task_rq(&mut self, _: &mut WakeEnv, _: WakeRequest) -> Decision {
                Decision {
                    cpu: self.0,
                    stage: Stage::Policy0,
                }
            }
            fn stage_names(&self) -> &'static [&'static str] {
                &["pinned"]
            }
        }
        struct Factory(usize);
        impl PolicyFactory for Factory {
            fn name(&self) -> &str {
                "one-cpu"
            }
            fn build(&self, _: &Topology, _: &SchedDomains) -> Box<dyn Placement> {
                Box::new(OneCpu(self.0))
            }
        }

        pub fn register() {
            crate::policies::register("test-one-cpu", |o| {
                let cpu = match o.get("cpu") {
                    None => 0,
                    Some(v) => v
                        .as_integer()
                        .and_then(|c| usize::try_from(c).ok())
                        .ok_or_else(|| format!("cpu: expected a CPU number, got {v}"))?,
                };
                Ok(Arc::new(Factory(cpu)) as Arc<dyn PolicyFactory>)
            })
            .unwrap();
        }
    }

    const CUSTOM: &str = r#"
name = "c"
iterations = 1
metrics = ["time", "stage-shares"]
[run]
machine = "xeon-12c24t"
cpus = "0-3"
benchmark = "hackbench"
pipe = true
fds = 2
loops = 5
policy_options = { cpu = 1 }
[[variant]]
name = "linux"
policy = "linux"
policy_options = {}
[[variant]]
name = "mine"
policy = "test-one-cpu"
[[variant]]
name = "mine-2"
policy = "test-one-cpu"
policy_options = { cpu = 2 }
"#;

    #[test]
    fn an_unknown_policy_names_the_variant_and_the_known_ones() {
        one_cpu::register();
        let text = BASE.replacen("name = \"a\"", "name = \"a\"\npolicy = \"my-policy\"", 1);
        let e = Experiment::parse("t.toml", &text, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "t.toml: with --quick: variant \"a\", point 1-3: policy: unknown policy \"my-policy\" (known: linux, scx, "
            ),
            "{e}"
        );
        assert!(e.contains("test-one-cpu"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        // not a string
        let text = BASE.replacen("name = \"a\"", "name = \"a\"\npolicy = 3", 1);
        let e = Experiment::parse("t.toml", &text, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("variant \"a\", point 1-3: policy: invalid type: integer"),
            "{e}"
        );
    }

    #[test]
    fn a_registered_policy_runs_with_its_options_and_stage_names() {
        one_cpu::register();
        // the run table's options reach a registered policy that gives none
        // (absent: inherited); the linux variant's empty table clears them
        let exp = Experiment::parse("c.toml", CUSTOM, false).unwrap();
        assert!(exp.cells[0].spec.policy_options.is_empty());
        assert_eq!(
            exp.cells[1].spec.policy_options["cpu"].as_integer(),
            Some(1)
        );
        assert_eq!(
            exp.cells[2].spec.policy_options["cpu"].as_integer(),
            Some(2)
        );
        // without the empty table, linux inherits them: an error
        let inherit = CUSTOM.replacen(
            "policy = \"linux\"\npolicy_options = {}\n",
            "policy = \"linux\"\n",
            1,
        );
        let e = Experiment::parse("c.toml", &inherit, false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml: variant \"linux\": policy_options.cpu: policy linux has no options (policy_options apply to a registered policy)"
        );
        // a registered policy's empty table means no options: its default
        let cleared = CUSTOM.replacen(
            "policy = \"test-one-cpu\"\n[[",
            "policy = \"test-one-cpu\"\npolicy_options = {}\n[[",
            1,
        );
        let exp = Experiment::parse("c.toml", &cleared, false).unwrap();
        assert!(exp.cells[1].spec.policy_options.is_empty());
        assert_eq!(
            exp.cells[2].spec.policy_options["cpu"].as_integer(),
            Some(2)
        );
        let text = CUSTOM.replacen("policy_options = { cpu = 1 }\n", "", 1);
        let exp = Experiment::parse("c.toml", &text, false).unwrap();
        let mine = &exp.cells[1].spec;
        assert_eq!(mine.policy, crate::Policy::Custom("test-one-cpu".into()));
        let json = serde_json::to_value(mine).unwrap();
        assert_eq!(json["policy"], "test-one-cpu");
        assert!(json.get("policy_options").is_none());
        assert_eq!(
            exp.cells[2].spec.policy_options["cpu"].as_integer(),
            Some(2)
        );
        // the linux variant is written as before: no new key
        let linux = serde_json::to_value(&exp.cells[0].spec).unwrap();
        assert_eq!(linux["policy"], "linux");
        assert!(linux.get("policy_options").is_none());
        // a spec read back (a run log) is the same spec
        let back: RunSpec = serde_json::from_value(json).unwrap();
        assert_eq!(&back, mine);
        // the runs: every decision in the policy's own stage, on its CPU
        for (cell, cpu) in [(1, 0), (2, 2)] {
            let s = exp.spec_of(&PlannedRun {
                cell,
                iteration: 0,
                seed: 1,
            });
            let r = crate::exec::simulate(&s).unwrap().result;
            assert_eq!(r.placement.policy, "one-cpu");
            assert_eq!(
                r.placement.stages.keys().collect::<Vec<_>>(),
                ["pinned"],
                "{:?}",
                r.placement.stages
            );
            assert!(r.cpus[cpu].context_switches > 0);
        }
        // a bad option names the variant, the policy and the option
        let bad = text.replacen("{ cpu = 2 }", "{ cpu = \"two\" }", 1);
        let e = Experiment::parse("c.toml", &bad, false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml: variant \"mine-2\": policy_options: policy test-one-cpu: cpu: expected a CPU number, got \"two\""
        );
        // options cannot be swept
        let swept = text.replacen(
            "[[variant]]",
            "[sweep]\npolicy_options = [{ cpu = 1 }]\n[[variant]]",
            1,
        );
        let e = Experiment::parse("c.toml", &swept, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sweep.policy_options: cannot be swept"), "{e}");
    }

    proptest! {
        /// Shards partition the runs: disjoint, and together every run.
        #[test]
        fn shards_partition_the_runs(n in 1u32..9) {
            let e = Experiment::parse("t.toml", BASE, false).unwrap();
            let all = e.runs();
            let mut seen = vec![0u32; all.len()];
            for i in 1..=n {
                for r in crate::runner::select(&e, Some(crate::runner::Shard { index: i, count: n })) {
                    let at = all.iter().position(|x| *x == r).unwrap();
                    seen[at] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&c| c == 1));
        }

        /// A seed is a function of its inputs, and any one input changes it.
        #[test]
        fn derived_seeds_differ(base in any::<u64>(), key in "[0-9a-z-]{0,6}", it in 0u32..1000) {
            let s = derive_seed(base, &key, it);
            prop_assert_eq!(s, derive_seed(base, &key, it));
            prop_assert_ne!(s, derive_seed(base.wrapping_add(1), &key, it));
            prop_assert_ne!(s, derive_seed(base, &key, it + 1));
            prop_assert_ne!(s, derive_seed(base, &format!("{key}x"), it));
        }
    }
}
