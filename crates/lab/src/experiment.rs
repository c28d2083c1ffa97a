//! Experiment files (TOML): a base run, sweep axes, variants, iterations
//! and metrics, and the runs they ask for, each built when it is asked for
//! (the sweep is never expanded: [`crate::sweep`]). Every field, and every
//! value of every axis, is checked before anything runs (every run of a
//! sweep small enough to check whole); an error names the file, the field
//! and what was expected, on one line. docs/experiments.md is the user's
//! guide.

use crate::metrics;
use crate::outcome::RunError;
use crate::spec::{Mode, RunSpec, SpecError};
pub use crate::sweep::{derive_seed, PlannedRun, Point};
use crate::sweep::{Runs, Sweep};
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

/// The specification of one (variant, point) cell; its iterations differ
/// only in the seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Index into [`Experiment::variants`].
    pub variant: usize,
    /// Index of the point ([`Experiment::point`]).
    pub point: usize,
    /// The run, with seed 0 (each iteration derives its own).
    pub spec: RunSpec,
}

/// An experiment: its variants and sweep, from which each run is built
/// when it is asked for. Serialised (the run log's header), it is the
/// experiment as given, not its expansion: a sweep of millions of points
/// takes its axes' values.
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
    /// Variants, the baseline first.
    pub variants: Vec<Variant>,
    /// How each run is built: the run table, each variant's layer, the
    /// sweep's values and `--quick`'s layer, as TOML text.
    #[serde(with = "definition_text")]
    definition: Definition,
}

/// What builds a run's specification: the layers in the order they apply
/// (run, variant, point, quick) and the sweep's values.
#[derive(Clone, Debug, PartialEq)]
struct Definition {
    run: Table,
    layers: Vec<Table>,
    quick_layer: Table,
    /// `--quick` without a `[quick]` table: the workload's own scaling.
    scale_down: bool,
    axes: Vec<String>,
    sweep: Sweep,
}

/// A [`Definition`] as one TOML text: `run`, `quick` and `variant` tables,
/// the `axes` and their values (`sweep`, one array per axis), `zip` and
/// `scale_down`. TOML keeps every value as the file gave it.
mod definition_text {
    use super::{Definition, Sweep};
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use toml::{Table, Value};

    pub fn serialize<S: Serializer>(d: &Definition, s: S) -> Result<S::Ok, S::Error> {
        let mut t = Table::new();
        t.insert("scale_down".into(), Value::Boolean(d.scale_down));
        t.insert("zip".into(), Value::Boolean(d.sweep.zip));
        t.insert(
            "axes".into(),
            Value::Array(d.axes.iter().cloned().map(Value::String).collect()),
        );
        t.insert(
            "sweep".into(),
            Value::Array(d.sweep.values.iter().cloned().map(Value::Array).collect()),
        );
        t.insert("run".into(), Value::Table(d.run.clone()));
        t.insert("quick".into(), Value::Table(d.quick_layer.clone()));
        t.insert(
            "variant".into(),
            Value::Array(d.layers.iter().cloned().map(Value::Table).collect()),
        );
        let text = toml::to_string(&t).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Definition, D::Error> {
        let text = String::deserialize(d)?;
        let mut t: Table = toml::from_str(&text).map_err(D::Error::custom)?;
        let mut take = |k: &str| {
            t.remove(k)
                .ok_or_else(|| D::Error::custom(format!("definition: {k} missing")))
        };
        let bad = |k: &str| D::Error::custom(format!("definition: {k} of the wrong type"));
        let table = |v: Value, k: &str| match v {
            Value::Table(t) => Ok(t),
            _ => Err(bad(k)),
        };
        let array = |v: Value, k: &str| match v {
            Value::Array(a) => Ok(a),
            _ => Err(bad(k)),
        };
        let scale_down = take("scale_down")?
            .as_bool()
            .ok_or_else(|| bad("scale_down"))?;
        let zip = take("zip")?.as_bool().ok_or_else(|| bad("zip"))?;
        let axes = array(take("axes")?, "axes")?
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(bad("axes")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let values = array(take("sweep")?, "sweep")?
            .into_iter()
            .map(|v| array(v, "sweep"))
            .collect::<Result<Vec<_>, _>>()?;
        let run = table(take("run")?, "run")?;
        let quick_layer = table(take("quick")?, "quick")?;
        let layers = array(take("variant")?, "variant")?
            .into_iter()
            .map(|v| table(v, "variant"))
            .collect::<Result<Vec<_>, _>>()?;
        if values.len() != axes.len() || values.iter().any(Vec::is_empty) {
            return Err(bad("sweep"));
        }
        Ok(Definition {
            run,
            layers,
            quick_layer,
            scale_down,
            axes,
            sweep: Sweep { values, zip },
        })
    }
}

/// The expanded experiment, as `--json` reports record it: every point
/// and every (variant, point) cell's specification.
#[derive(Serialize)]
struct Expanded<'a> {
    name: &'a str,
    description: &'a str,
    source: &'a Option<String>,
    quick: bool,
    iterations: u32,
    seed: u64,
    metrics: &'a [String],
    axes: &'a [String],
    points: Vec<Point>,
    variants: &'a [Variant],
    cells: Vec<Cell>,
}

pub const MAX_RUNS: u64 = 10_000_000;

/// The most (variant, point) cells whose specifications are all checked
/// before anything runs; a larger sweep checks every value of every axis
/// ([`Sweep::probes`]) and each of its runs when it starts.
pub const FULL_CHECK_CELLS: usize = 20_000;

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
        }
        let sweep = Sweep { values: lists, zip };
        if let Some(k) = sweep.duplicate_key() {
            return Err(format!("sweep: point {k:?} appears twice"));
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
        let npoints = sweep.len();
        let total = (npoints as u64)
            .saturating_mul(variants.len() as u64)
            .saturating_mul(iterations as u64);
        if total > MAX_RUNS {
            return Err(format!(
                "{total} runs ({npoints} points x {} variants x {iterations} iterations) is more than {MAX_RUNS}; shrink the sweep or the iterations",
                variants.len()
            ));
        }
        let definition = Definition {
            run: f.run,
            layers,
            quick_layer,
            scale_down: quick && f.quick.is_none(),
            axes: axes.clone(),
            sweep,
        };
        // -- the runs: every one when they are few, else every value of
        // every axis (each run is checked again when it starts)
        let checked: Vec<usize> = if npoints.saturating_mul(variants.len()) <= FULL_CHECK_CELLS {
            (0..npoints).collect()
        } else {
            definition.sweep.probes()
        };
        let mut benchmarks = std::collections::BTreeSet::new();
        for pi in checked {
            for vi in 0..variants.len() {
                let ctx = definition.context(&variants, vi, pi);
                let spec = definition
                    .build(&variants, vi, pi)
                    .map_err(|e| format!("{ctx}: {e}"))?;
                crate::exec::check(&spec).map_err(|e| format!("{ctx}: {e}"))?;
                benchmarks.insert(spec.workload.name());
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
            variants,
            definition,
        })
    }

    /// How many points (one without a sweep).
    pub fn npoints(&self) -> usize {
        self.definition.sweep.len()
    }

    /// Point `p` (`p < npoints()`).
    pub fn point(&self, p: usize) -> Point {
        self.definition.sweep.point(p)
    }

    /// Point `p`'s key.
    pub fn point_key(&self, p: usize) -> String {
        self.definition.sweep.key(p)
    }

    /// Finds a point by its key.
    pub fn point_finder(&self) -> crate::sweep::PointFinder<'_> {
        self.definition.sweep.finder()
    }

    /// Every point, in order (built one by one).
    pub fn points(&self) -> impl ExactSizeIterator<Item = Point> + '_ {
        (0..self.npoints()).map(|p| self.point(p))
    }

    /// The runs by index, in canonical order: point, iteration, variant.
    pub fn run_list(&self) -> Runs<'_> {
        Runs {
            sweep: &self.definition.sweep,
            variants: self.variants.len(),
            iterations: self.iterations,
            seed: self.seed,
        }
    }

    /// Every run, in canonical order: point, iteration, variant (each
    /// built when the iterator reaches it).
    pub fn runs(&self) -> impl ExactSizeIterator<Item = PlannedRun> + '_ {
        let list = self.run_list();
        (0..list.len()).map(move |i| list.get(i))
    }

    /// The specification of `variant` at `point`, seed 0, as it is built
    /// (not checked: [`Experiment::spec_of`] checks it).
    pub fn cell_spec(&self, variant: usize, point: usize) -> Result<RunSpec, SpecError> {
        self.definition.build(&self.variants, variant, point)
    }

    /// Every (variant, point) cell that builds, point-major (each built
    /// when the iterator reaches it): for reports, which state every cell.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        let nv = self.variants.len();
        (0..self.npoints() * nv).filter_map(move |i| {
            let (point, variant) = (i / nv, i % nv);
            let spec = self.cell_spec(variant, point).ok()?;
            Some(Cell {
                variant,
                point,
                spec,
            })
        })
    }

    /// The cells of every variant at the points whose specifications were
    /// checked first ([`Sweep::probes`]): between them they hold every
    /// value of every axis, so every file a run names.
    pub fn probe_cells(&self) -> impl Iterator<Item = Cell> + '_ {
        let nv = self.variants.len();
        self.definition
            .sweep
            .probes()
            .into_iter()
            .flat_map(move |point| {
                (0..nv).filter_map(move |variant| {
                    let spec = self.cell_spec(variant, point).ok()?;
                    Some(Cell {
                        variant,
                        point,
                        spec,
                    })
                })
            })
    }

    /// The benchmarks the experiment runs (one per variant: the benchmark
    /// cannot be swept), sorted.
    pub fn benchmarks(&self) -> Vec<&'static str> {
        let mut b: Vec<&'static str> = if self.npoints() == 0 {
            Vec::new()
        } else {
            (0..self.variants.len())
                .filter_map(|v| self.cell_spec(v, 0).ok())
                .map(|s| s.workload.name())
                .collect()
        };
        b.sort_unstable();
        b.dedup();
        b
    }

    /// The spec of a planned run, with its seed, built and checked (a
    /// combination of axis values that was not checked before the runs
    /// started may fail here).
    pub fn spec_of(&self, run: &PlannedRun) -> Result<RunSpec, RunError> {
        let mut s = self.cell_spec(run.variant, run.point)?;
        crate::exec::check(&s)?;
        s.seed = run.seed;
        Ok(s)
    }

    /// The expanded experiment, every point and cell, as `--json` reports
    /// record it.
    pub fn expanded_json(&self) -> serde_json::Value {
        serde_json::to_value(Expanded {
            name: &self.name,
            description: &self.description,
            source: &self.source,
            quick: self.quick,
            iterations: self.iterations,
            seed: self.seed,
            metrics: &self.metrics,
            axes: &self.axes,
            points: self.points().collect(),
            variants: &self.variants,
            cells: self.cells().collect(),
        })
        .expect("plain data serialises")
    }
}

impl Definition {
    /// How errors name (variant, point).
    fn context(&self, variants: &[Variant], vi: usize, pi: usize) -> String {
        let key = self.sweep.key(pi);
        if key.is_empty() {
            format!("variant {:?}", variants[vi].name)
        } else {
            format!("variant {:?}, point {key}", variants[vi].name)
        }
    }

    /// The specification of variant `vi` at point `pi`, seed 0: the run
    /// table, the variant's layer, the point's values, `--quick`'s layer.
    fn build(&self, variants: &[Variant], vi: usize, pi: usize) -> Result<RunSpec, SpecError> {
        let variant = &variants[vi];
        let mut t = self.run.clone();
        overlay(&mut t, &self.layers[vi]);
        let ptable: Table = self
            .axes
            .iter()
            .cloned()
            .zip(self.sweep.values_at(pi).cloned())
            .collect();
        overlay(&mut t, &ptable);
        overlay(&mut t, &self.quick_layer);
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
        let mut spec = build_spec(t)?;
        spec.mode = variant.mode;
        if self.scale_down {
            spec.workload.scale_down();
        }
        spec.seed = 0;
        Ok(spec)
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

    fn cells(exp: &Experiment) -> Vec<Cell> {
        exp.cells().collect()
    }

    fn hb(exp: &Experiment, cell: usize) -> (u32, u32, u32) {
        match &cells(exp)[cell].spec.workload {
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
        let keys: Vec<String> = e.points().map(|p| p.key).collect();
        assert_eq!(keys, ["1-3", "1-5", "2-3", "2-5"]);
        assert_eq!(cells(&e).len(), 4 * 3);
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
        let keys: Vec<String> = e.points().map(|p| p.key).collect();
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
        let a = cells(&e)[0].spec.features().unwrap();
        let b = cells(&e)[1].spec.features().unwrap();
        assert!(a.test_idle_cores_smt_gate && b.test_idle_cores_smt_gate);
        assert!(a.sis_util == Features::kernel("linux-5.12").unwrap().sis_util);
        assert!(!b.sis_util);
    }

    #[test]
    fn a_native_variant_drops_the_simulator_fields_of_the_run() {
        let e = Experiment::parse("t.toml", BASE, false).unwrap();
        let native = &cells(&e)[2].spec;
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
        let off = cells(&e)[0].spec.sim_options(&topo).unwrap();
        let on = cells(&e)[1].spec.sim_options(&topo).unwrap();
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
        let runs: Vec<PlannedRun> = e.runs().collect();
        assert_eq!(runs.len(), 4 * 2 * 3);
        for r in &runs {
            let p = &e.point_key(r.point);
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
        assert!(cells(&exp)[0].spec.policy_options.is_empty());
        assert_eq!(
            cells(&exp)[1].spec.policy_options["cpu"].as_integer(),
            Some(1)
        );
        assert_eq!(
            cells(&exp)[2].spec.policy_options["cpu"].as_integer(),
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
        assert!(cells(&exp)[1].spec.policy_options.is_empty());
        assert_eq!(
            cells(&exp)[2].spec.policy_options["cpu"].as_integer(),
            Some(2)
        );
        let text = CUSTOM.replacen("policy_options = { cpu = 1 }\n", "", 1);
        let exp = Experiment::parse("c.toml", &text, false).unwrap();
        let mine = &cells(&exp)[1].spec;
        assert_eq!(mine.policy, crate::Policy::Custom("test-one-cpu".into()));
        let json = serde_json::to_value(mine).unwrap();
        assert_eq!(json["policy"], "test-one-cpu");
        assert!(json.get("policy_options").is_none());
        assert_eq!(
            cells(&exp)[2].spec.policy_options["cpu"].as_integer(),
            Some(2)
        );
        // the linux variant is written as before: no new key
        let linux = serde_json::to_value(&cells(&exp)[0].spec).unwrap();
        assert_eq!(linux["policy"], "linux");
        assert!(linux.get("policy_options").is_none());
        // a spec read back (a run log) is the same spec
        let back: RunSpec = serde_json::from_value(json).unwrap();
        assert_eq!(&back, mine);
        // the runs: every decision in the policy's own stage, on its CPU
        for (cell, cpu) in [(1, 0), (2, 2)] {
            let s = exp
                .spec_of(&PlannedRun {
                    point: 0,
                    variant: cell,
                    iteration: 0,
                    seed: 1,
                })
                .unwrap();
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
            let all: Vec<PlannedRun> = e.runs().collect();
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
