//! Doing an experiment's runs: in parallel on `jobs` threads (rayon),
//! natives alone and one at a time, a deterministic 1/N of them with
//! `--shard`, each finished run appended to the run log at once so that a
//! resumed experiment redoes only what is missing. Results never depend on
//! the order runs finish in: the report sorts them.

use crate::exec::{self, RunError};
use crate::experiment::{Experiment, PlannedRun};
use crate::metrics;
use crate::runlog::{self, Header, LogError, RunLog};
use crate::spec::Mode;
use rayon::prelude::*;
use report::{PointInfo, ReportSpec, RunRecord, VariantInfo};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

/// Everything that can stop an experiment.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The run log.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A run failed.
    #[error("variant {variant:?}{point}, iteration {iteration}: {cause}")]
    Run {
        /// Variant.
        variant: String,
        /// `, point KEY` or empty.
        point: String,
        /// Iteration.
        iteration: u32,
        /// Why (not a `source`: the message already says it, once).
        cause: Box<RunError>,
    },
    /// A kernel variant cannot boot (nothing has run).
    #[error("variant {variant:?}: {cause}")]
    Preflight {
        /// Variant.
        variant: String,
        /// What is missing.
        cause: Box<RunError>,
    },
    /// The thread pool could not start.
    #[error("--jobs: {0}")]
    Pool(String),
}

/// A 1-based shard `I/N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which, from 1.
    pub index: u32,
    /// Of how many.
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("{s:?}: expected I/N with 1 <= I <= N (e.g. 2/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// How to do an experiment's runs.
pub struct RunOptions<'a> {
    /// Threads for simulated runs (native and kernel runs always run alone).
    pub jobs: usize,
    /// Only this shard's runs.
    pub shard: Option<Shard>,
    /// Keep the runs an existing log holds and do only the others.
    pub resume: bool,
    /// The run log.
    pub log: PathBuf,
    /// The bounds of every simulated run.
    pub bounds: exec::Bounds,
    /// Called once with (runs to do, runs already in the log).
    pub on_start: &'a (dyn Fn(usize, usize) + Sync),
    /// Called after each run finishes.
    pub on_done: &'a (dyn Fn(&RunRecord) + Sync),
}

/// The runs of `shard` (all without one): every N-th in canonical order,
/// each built when the iterator reaches it.
pub fn select(exp: &Experiment, shard: Option<Shard>) -> impl Iterator<Item = PlannedRun> + '_ {
    let list = exp.run_list();
    selected(list.len(), shard).map(move |i| list.get(i))
}

/// The indices of the runs of `shard` among `n` (all without one).
fn selected(n: usize, shard: Option<Shard>) -> impl Iterator<Item = usize> {
    let (step, first) = shard.map_or((1, 0), |s| (s.count as usize, s.index as usize - 1));
    (first..n).step_by(step)
}

fn record_key(r: &RunRecord) -> (String, String, u32) {
    (r.variant.clone(), r.point.clone(), r.iteration)
}

fn do_run(
    exp: &Experiment,
    run: &PlannedRun,
    bounds: &exec::Bounds,
) -> Result<RunRecord, LabError> {
    let variant = &exp.variants[run.variant].name;
    let point = exp.point_key(run.point);
    let err = |source| LabError::Run {
        variant: variant.clone(),
        point: if point.is_empty() {
            String::new()
        } else {
            format!(", point {point}")
        },
        iteration: run.iteration,
        cause: Box::new(source),
    };
    let spec = exp.spec_of(run).map_err(err)?;
    let json = exec::run_bounded(&spec, bounds).map_err(err)?;
    Ok(RunRecord {
        variant: variant.clone(),
        point: point.clone(),
        iteration: run.iteration,
        seed: run.seed,
        metrics: metrics::extract(&json, &exp.metrics),
    })
}

/// Check every kernel variant among `runs` can boot ([`crate::kernel::preflight`]).
fn preflight(exp: &Experiment, runs: &[PlannedRun]) -> Result<(), LabError> {
    let mut seen = BTreeSet::new();
    for r in runs {
        if exp.variants[r.variant].mode != Mode::Kernel || !seen.insert(r.variant) {
            continue;
        }
        let variant = || exp.variants[r.variant].name.clone();
        let spec = exp.spec_of(r).map_err(|e| LabError::Preflight {
            variant: variant(),
            cause: Box::new(e),
        })?;
        crate::kernel::preflight(&spec).map_err(|e| LabError::Preflight {
            variant: variant(),
            cause: Box::new(e),
        })?;
    }
    Ok(())
}

/// Do the runs `opts` selects, appending each to the log; returns every
/// selected run's record (those resumed from the log included). Runs are
/// matched by index and built one by one as they start: what is held
/// before the first run is the indices of the runs to do.
pub fn run(exp: &Experiment, opts: &RunOptions) -> Result<Vec<RunRecord>, LabError> {
    let list = exp.run_list();
    let header = Header::new(exp, opts.shard.map(|s| s.to_string()));
    let mut done: Vec<RunRecord> = Vec::new();
    let resumed = if opts.resume {
        runlog::read_to_resume(&opts.log)?
    } else {
        None
    };
    // the runs the log already holds, by index
    let mut have = vec![false; if resumed.is_some() { list.len() } else { 0 }];
    if let Some((old, records)) = resumed {
        if old.fingerprint != header.fingerprint || old.shard != header.shard {
            return Err(LogError::Mismatch(format!(
                "--resume: {} holds runs of another experiment, shard, --quick setting or schedlab version; remove it or drop --resume",
                opts.log.display()
            ))
            .into());
        }
        // a resume with fewer --iterations keeps only the runs still asked for
        let points = exp.point_finder();
        let in_shard = |i: usize| {
            opts.shard
                .is_none_or(|s| i % s.count as usize == s.index as usize - 1)
        };
        for r in records {
            let at = exp.variants.iter().position(|v| v.name == r.variant);
            let run = match (at, points.find(&r.point)) {
                (Some(v), Some(p)) if r.iteration < exp.iterations => list.index(v, p, r.iteration),
                _ => continue,
            };
            if in_shard(run) && !have[run] {
                have[run] = true;
                done.push(r);
            }
        }
    }
    let pending =
        selected(list.len(), opts.shard).filter(|&i| !have.get(i).copied().unwrap_or(false));
    let (native, simulated): (Vec<usize>, Vec<usize>) =
        pending.partition(|&i| exp.variants[i % exp.variants.len()].mode != Mode::Sim);
    drop(have);
    let native: Vec<PlannedRun> = native.into_iter().map(|i| list.get(i)).collect();
    // A kernel run needs qemu, an image and a static guest: say what is
    // missing before anything runs or the log is touched.
    preflight(exp, &native)?;
    let mut log = RunLog::start(&opts.log, &header, &done)?;
    (opts.on_start)(native.len() + simulated.len(), done.len());
    // Native runs measure this host, and a kernel run's qemu takes its
    // CPUs: one at a time, with nothing else of ours running.
    for r in &native {
        let rec = do_run(exp, r, &opts.bounds)?;
        log.append(&rec)?;
        (opts.on_done)(&rec);
        done.push(rec);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .build()
        .map_err(|e| LabError::Pool(e.to_string()))?;
    let shared = Mutex::new((log, done));
    pool.install(|| {
        simulated.par_iter().with_max_len(1).try_for_each(|&i| {
            let rec = do_run(exp, &list.get(i), &opts.bounds)?;
            let mut g = shared.lock().expect("no run panics while holding the log");
            g.0.append(&rec)?;
            (opts.on_done)(&rec);
            g.1.push(rec);
            Ok::<(), LabError>(())
        })
    })?;
    let (_, mut done) = shared
        .into_inner()
        .expect("no run panics while holding the log");
    sort(exp, &mut done);
    Ok(done)
}

/// The distinct simulations among `todo` (experiment index, run): runs
/// are deterministic, so two runs of one experiment with the same
/// specification and seed (variants that model the same kernel, as when
/// a change is not modelled) give the same record and run once. Returns
/// the distinct runs and, for each of `todo`, the index of its own.
fn distinct<'a>(
    exps: &[&Experiment],
    todo: &'a [(usize, PlannedRun)],
) -> (Vec<(usize, &'a PlannedRun)>, Vec<usize>) {
    let mut first: std::collections::HashMap<(usize, String), usize> = Default::default();
    let mut unique = Vec::new();
    let mut source = Vec::with_capacity(todo.len());
    for (ei, r) in todo {
        let key = exps[*ei]
            .spec_of(r)
            .map(|s| serde_json::to_string(&s).unwrap_or_default())
            .unwrap_or_default();
        let next = unique.len();
        let u = *first.entry((*ei, key)).or_insert(next);
        if u == next {
            unique.push((*ei, r));
        }
        source.push(u);
    }
    (unique, source)
}

/// How many simulations [`run_all`] does for `exps`.
pub fn distinct_runs(exps: &[&Experiment]) -> usize {
    let todo: Vec<(usize, PlannedRun)> = exps
        .iter()
        .enumerate()
        .flat_map(|(ei, e)| e.runs().map(move |r| (ei, r)))
        .collect();
    distinct(exps, &todo).0.len()
}

/// Do every run of several simulated experiments in one pool of `jobs`
/// threads, without a run log (`schedlab fidelity`: many small
/// experiments, whose runs would leave threads idle one experiment at a
/// time). Returns each experiment's records in canonical order. A native
/// or kernel variant is refused: those must run alone. `on_done` is
/// called once per simulation, and variants of one experiment whose runs
/// are the same specification share one.
pub fn run_all(
    exps: &[&Experiment],
    jobs: usize,
    bounds: &exec::Bounds,
    on_done: &(dyn Fn(&RunRecord) + Sync),
) -> Result<Vec<Vec<RunRecord>>, LabError> {
    let mut todo = Vec::new();
    for (ei, exp) in exps.iter().enumerate() {
        for r in exp.runs() {
            if exp.variants[r.variant].mode != Mode::Sim {
                return Err(LabError::Preflight {
                    variant: exp.variants[r.variant].name.clone(),
                    cause: Box::new(RunError::Spec(crate::spec::SpecError::field(
                        "mode",
                        format!("{}: only simulated variants run here", exp.name),
                    ))),
                });
            }
            todo.push((ei, r));
        }
    }
    let (unique, source) = distinct(exps, &todo);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| LabError::Pool(e.to_string()))?;
    let done: Vec<RunRecord> = pool.install(|| {
        unique
            .par_iter()
            .with_max_len(1)
            .map(|(ei, r)| {
                let rec = do_run(exps[*ei], r, bounds)?;
                on_done(&rec);
                Ok(rec)
            })
            .collect::<Result<Vec<_>, LabError>>()
    })?;
    let mut out: Vec<Vec<RunRecord>> = vec![Vec::new(); exps.len()];
    for ((ei, r), u) in todo.iter().zip(source) {
        let exp = exps[*ei];
        out[*ei].push(RunRecord {
            variant: exp.variants[r.variant].name.clone(),
            ..done[u].clone()
        });
    }
    for (exp, recs) in exps.iter().zip(out.iter_mut()) {
        sort(exp, recs);
    }
    Ok(out)
}

/// Canonical order: variant, point, iteration (the order of the
/// experiment, not of names).
pub fn sort(exp: &Experiment, records: &mut [RunRecord]) {
    let vi = |n: &str| {
        exp.variants
            .iter()
            .position(|v| v.name == n)
            .unwrap_or(usize::MAX)
    };
    let points = exp.point_finder();
    let pi = |k: &str| points.find(k).unwrap_or(usize::MAX);
    records.sort_by_key(|r| (vi(&r.variant), pi(&r.point), r.iteration));
}

/// Read the logs of the shards of one experiment and join their runs.
pub fn merge(paths: &[PathBuf]) -> Result<(Experiment, Vec<RunRecord>), LabError> {
    let mut first: Option<Header> = None;
    let mut all: Vec<RunRecord> = Vec::new();
    let mut seen = std::collections::BTreeMap::new();
    for p in paths {
        let (h, records) = runlog::read(p)?;
        if let Some(f) = &mut first {
            if h.experiment.iterations > f.experiment.iterations {
                // a resumed shard may have run more iterations
                f.experiment.iterations = h.experiment.iterations;
            }
            if f.fingerprint != h.fingerprint {
                return Err(LogError::Mismatch(format!(
                    "--merge: {} is a log of another experiment (or --quick setting, or schedlab version) than {}",
                    p.display(),
                    paths[0].display()
                ))
                .into());
            }
        } else {
            first = Some(h);
        }
        for r in records {
            if let Some(&at) = seen.get(&record_key(&r)) {
                let first: &RunRecord = &all[at];
                if *first != r {
                    return Err(LogError::Mismatch(format!(
                        "--merge: variant {:?}, point {:?}, iteration {} appears twice with different results ({} holds one of them)",
                        r.variant,
                        r.point,
                        r.iteration,
                        p.display()
                    ))
                    .into());
                }
                continue;
            }
            seen.insert(record_key(&r), all.len());
            all.push(r);
        }
    }
    let Some(h) = first else {
        return Err(LogError::Mismatch("--merge: name at least one run log".into()).into());
    };
    sort(&h.experiment, &mut all);
    Ok((h.experiment, all))
}

/// Give every simulated run a value for every `stage-NAME` metric some
/// run reported (the simulator lists only the stages that occurred, and a
/// stage that never decided is 0 %, not missing). Native runs have no
/// stages. Both a finished run and a merge call this, so the two agree.
pub fn fill_stage_shares(exp: &Experiment, records: &mut [RunRecord]) {
    if !exp.metrics.iter().any(|m| m == metrics::STAGE_SHARES) {
        return;
    }
    let stages: BTreeSet<String> = records
        .iter()
        .flat_map(|r| r.metrics.keys())
        .filter(|k| k.starts_with("stage-"))
        .cloned()
        .collect();
    for r in records.iter_mut() {
        let simulated = exp
            .variants
            .iter()
            .any(|v| v.name == r.variant && v.mode == Mode::Sim);
        if simulated {
            for s in &stages {
                r.metrics.entry(s.clone()).or_insert(0.0);
            }
        }
    }
}

/// The report's description of `exp`: the stage-shares pseudo-metric
/// becomes one metric per placement stage that occurred in `records`.
pub fn report_spec(exp: &Experiment, records: &[RunRecord]) -> ReportSpec {
    let mut names: Vec<String> = Vec::new();
    for m in &exp.metrics {
        if m == metrics::STAGE_SHARES {
            let stages: BTreeSet<&String> = records
                .iter()
                .flat_map(|r| r.metrics.keys())
                .filter(|k| k.starts_with("stage-"))
                .collect();
            names.extend(stages.into_iter().cloned());
        } else if m == metrics::WAKE_LOCALITY {
            names.extend(metrics::wake_locality_names().map(String::from));
        } else if m == metrics::WAKE_LOCALITY_4 {
            names.extend(metrics::wake_locality_4_names().map(String::from));
        } else if m == metrics::RTAPP_THREADS {
            // per thread, in the order of the first record that has them
            // (every run of a file has the same threads)
            for r in records {
                for k in r.metrics.keys() {
                    let per_thread = [
                        "cpu-share:",
                        "run-share:",
                        "wu-lat-p50:",
                        "wu-lat-p99:",
                        "slack-misses:",
                    ]
                    .iter()
                    .any(|p| k.starts_with(p));
                    if per_thread && !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
        } else {
            names.push(m.clone());
        }
    }
    // the benchmarks the experiment runs, for the metrics' descriptions
    let benchmarks = exp.benchmarks();
    ReportSpec {
        name: exp.name.clone(),
        description: exp.description.clone(),
        axes: exp.axes.clone(),
        points: exp
            .points()
            .map(|p| PointInfo {
                key: p.key,
                values: p.values,
            })
            .collect(),
        variants: exp
            .variants
            .iter()
            .map(|v| VariantInfo {
                name: v.name.clone(),
                mode: v.mode.name().into(),
            })
            .collect(),
        metrics: names
            .iter()
            .map(|n| metrics::info(n, &benchmarks))
            .collect(),
        iterations: exp.iterations,
    }
}

/// The default run-log path: `<dir>/<name>[.quick][.shard-I-of-N].runs.jsonl`.
pub fn default_log(dir: &Path, exp: &Experiment, shard: Option<Shard>) -> PathBuf {
    let mut name = exp.name.clone();
    if exp.quick {
        name += ".quick";
    }
    if let Some(s) = shard {
        name += &format!(".shard-{}-of-{}", s.index, s.count);
    }
    dir.join(name + ".runs.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXP: &str = r#"
name = "t"
iterations = 1
metrics = ["time", "stage-shares"]
[run]
machine = "xeon-12c24t"
benchmark = "hackbench"
[[variant]]
name = "linux"
[[variant]]
name = "host"
mode = "native"
"#;

    fn rec(variant: &str, metrics: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            variant: variant.into(),
            point: String::new(),
            iteration: 0,
            seed: 1,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn a_stage_that_never_decided_is_zero_for_simulated_runs_only() {
        let exp = Experiment::parse("t.toml", EXP, false).unwrap();
        let mut r = vec![
            rec("linux", &[("time", 1.0), ("stage-target_idle", 100.0)]),
            rec("linux", &[("time", 1.0), ("stage-prev_idle", 100.0)]),
            rec("host", &[("time", 1.0)]),
        ];
        fill_stage_shares(&exp, &mut r);
        assert_eq!(r[0].metrics["stage-prev_idle"], 0.0);
        assert_eq!(r[1].metrics["stage-target_idle"], 0.0);
        assert_eq!(r[2].metrics.len(), 1, "a native run has no stages");
        let spec = report_spec(&exp, &r);
        let names: Vec<&str> = spec.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["time", "stage-prev_idle", "stage-target_idle"]);
        // a hackbench experiment: hackbench's time, and the stages have
        // no better direction
        let time = &spec.metrics[0].description;
        assert!(
            time.starts_with("hackbench Time") && !time.contains("NPB"),
            "{time}"
        );
        assert_eq!(spec.metrics[1].better, report::Better::Neither);
    }

    /// A sweep too large to check every run before it starts is checked at
    /// every axis value; a combination that fails only together (node 1 of
    /// a one-node machine, the second value of two axes) stops its run
    /// when it starts, in one line naming the variant, point and field.
    #[test]
    fn a_combination_that_fails_only_together_stops_its_run() {
        let loops: Vec<String> = (1..=5001).map(|i| i.to_string()).collect();
        let text = format!(
            "name = \"combo\"\niterations = 1\nmetrics = [\"time\"]\n[run]\nbenchmark = \"hackbench\"\n\
             [sweep]\nmachine = [\"xeon-12c24t\", \"epyc-zen3\"]\nnode = [0, 1]\n\
             loops = [{}]\n[[variant]]\nname = \"a\"\n",
            loops.join(", ")
        );
        let exp = Experiment::parse("c.toml", &text, false).unwrap();
        assert!(exp.npoints() > crate::experiment::FULL_CHECK_CELLS);
        // only the last run: epyc-zen3, node 1
        let n = exp.run_list().len() as u32;
        let dir = tempfile::tempdir().unwrap();
        let e = run(
            &exp,
            &RunOptions {
                jobs: 1,
                shard: Some(Shard { index: n, count: n }),
                resume: false,
                log: dir.path().join("c.runs.jsonl"),
                bounds: exec::Bounds::default(),
                on_start: &|_, _| {},
                on_done: &|_| {},
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("variant \"a\", point epyc-zen3-1-5001, iteration 0: node: machine epyc-zen3 has nodes 0-0 (got 1)"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        // a sweep small enough to check whole is refused before it runs
        let small = text.replace(&loops.join(", "), "1");
        let e = Experiment::parse("c.toml", &small, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml: variant \"a\", point epyc-zen3-1-1: node: machine epyc-zen3 has nodes 0-0 (got 1)"),
            "{e}"
        );
    }

    #[test]
    fn a_run_log_has_one_writer() {
        let exp = Experiment::parse("t.toml", EXP, false).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.runs.jsonl");
        let h = Header::new(&exp, None);
        let mut first = RunLog::start(&path, &h, &[]).unwrap();
        let second = RunLog::start(&path, &h, &[]);
        assert!(matches!(second, Err(LogError::Mismatch(m)) if m.contains("another schedlab")));
        first.append(&rec("linux", &[("time", 2.5)])).unwrap();
        drop(first);
        let (back, records) = runlog::read(&path).unwrap();
        assert_eq!(back, h);
        assert_eq!(records, [rec("linux", &[("time", 2.5)])]);
        // released: a second writer may start now
        RunLog::start(&path, &h, &records).unwrap();
    }

    /// Every line carries its checksum: a value edited by hand, a header
    /// changed, a checksum removed, each is refused naming the file and
    /// the line; a log of format 1 (no checksums) or 2 (the expanded runs
    /// in its header) is refused naming the fix.
    #[test]
    fn a_changed_run_log_line_is_refused_naming_the_file_and_line() {
        let exp = Experiment::parse("t.toml", EXP, false).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.runs.jsonl");
        let h = Header::new(&exp, None);
        let mut log = RunLog::start(&path, &h, &[]).unwrap();
        log.append(&rec("linux", &[("time", 2.5)])).unwrap();
        log.append(&rec("linux", &[("time", 3.5)])).unwrap();
        drop(log);
        let good = std::fs::read_to_string(&path).unwrap();
        assert!(runlog::read(&path).is_ok());
        assert!(good.lines().all(|l| l.contains(",\"sum\":\"")), "{good}");
        let refused = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let e = runlog::read(&path).unwrap_err().to_string();
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
            e
        };
        // a value edited on the third line
        let e = refused(&good.replacen("3.5", "1.5", 1));
        assert!(
            e.contains(": line 3: run line: changed since schedlab wrote it"),
            "{e}"
        );
        // the header edited
        let e = refused(&good.replacen("\"iterations\":", "\"iterations\": ", 1));
        assert!(e.contains(": line 1: header line: changed"), "{e}");
        // a line without its checksum
        let lines: Vec<&str> = good.lines().collect();
        let bare = lines[2].split(",\"sum\":").next().unwrap().to_string() + "}";
        let e = refused(&format!("{}\n{}\n{bare}\n", lines[0], lines[1]));
        assert!(e.contains(": line 3: run line: no checksum"), "{e}");
        // a format-1 log, as an older schedlab wrote it: refused, naming the fix
        let old = |l: &str| l.split(",\"sum\":").next().unwrap().to_string() + "}";
        let v1 = old(lines[0]).replacen("\"schedlab_runlog\":3", "\"schedlab_runlog\":1", 1);
        let e = refused(&format!("{v1}\n{}\n", old(lines[1])));
        assert!(
            e.contains(": line 1: run-log format 1")
                && e.contains("run the experiment again into a new log"),
            "{e}"
        );
        // --resume refuses it the same way (and leaves the file alone)
        let e = runlog::read_to_resume(&path).unwrap_err().to_string();
        assert!(e.contains("run-log format 1"), "{e}");
        assert!(std::fs::read_to_string(&path).unwrap().starts_with(&v1));
        // a format-2 log, whose header held the expanded runs: refused,
        // naming the fix
        let v2 = lines[0].replacen("\"schedlab_runlog\":3", "\"schedlab_runlog\":2", 1);
        let e = refused(&format!("{v2}\n{}\n", lines[1]));
        assert!(
            e.contains(": line 1: run-log format 2")
                && e.contains("run the experiment again into a new log"),
            "{e}"
        );
        let e = runlog::read_to_resume(&path).unwrap_err().to_string();
        assert!(e.contains("run-log format 2"), "{e}");
    }
}
