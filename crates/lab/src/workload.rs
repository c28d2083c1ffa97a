//! The workload of a run, as experiment files and the CLI name it: one
//! struct per benchmark with the benchmark's own parameter names, turned
//! into the simulator's model or the native port's configuration.

use crate::SpecError;
use serde::{Deserialize, Serialize};
use sim::workload::schbench::SchbenchSim;
use std::path::PathBuf;

/// Which benchmark a run drives, with its parameters
/// (`benchmark = "hackbench"` in a file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "benchmark", rename_all = "lowercase")]
pub enum WorkloadSpec {
    /// rt-tests hackbench.
    Hackbench(HackbenchSpec),
    /// schbench (the 2023+ rework or the 2016-2019 version).
    Schbench(SchbenchSpec),
    /// dbench's tbench.
    Tbench(TbenchSpec),
    /// Compute-only tasks spread by the load balancer alone (simulator only).
    Spin(SpinSpec),
    /// One writer and one reader of a cache line on two CPUs (simulator only).
    Falseshare(FalseShareSpec),
    /// An rt-app JSON workload (simulated, or the real rt-app natively).
    Rtapp(RtappSpec),
    /// One of the kernel oracle's placement scenarios (`schedlab kernel
    /// scenarios`): the simulator's wake-up path on the scenario's machine
    /// state (mode sim), or real threads in a booted kernel (mode kernel).
    Scenario(ScenarioSpec),
    /// A NAS Parallel Benchmark, OpenMP (simulator only).
    Npb(NpbSpec),
}

/// An NPB run: `bench` (bt, cg, ep, is, lu, mg, sp, ua), `class` (S, W, A,
/// B, C, D) and `threads` (OMP_NUM_THREADS; default: the CPUs the run may
/// use, as mmtests sets it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NpbSpec {
    /// The kernel.
    pub bench: String,
    /// The class [S].
    pub class: String,
    /// OMP_NUM_THREADS [the CPUs the run may use].
    pub threads: Option<u32>,
}

impl Default for NpbSpec {
    fn default() -> Self {
        NpbSpec {
            bench: String::new(),
            class: "S".into(),
            threads: None,
        }
    }
}

impl NpbSpec {
    /// The simulator's model for a run allowed `cpus` CPUs.
    pub fn model(&self, cpus: usize) -> Result<sim::workload::npb::Npb, SpecError> {
        use sim::workload::npb::{Class, Kernel, Npb, MAX_THREADS};
        if self.bench.is_empty() {
            return Err(SpecError::field(
                "bench",
                "missing: name the NPB kernel (bt, cg, ep, is, lu, mg, sp, ua)",
            ));
        }
        let kernel = Kernel::parse(&self.bench).map_err(|e| SpecError::field("bench", e))?;
        let class = Class::parse(&self.class).map_err(|e| SpecError::field("class", e))?;
        let threads = self.threads.unwrap_or(cpus as u32);
        if threads == 0 || threads > MAX_THREADS {
            return Err(SpecError::field(
                "threads",
                format!("{threads}: must be 1 to {MAX_THREADS}"),
            ));
        }
        Ok(Npb::new(kernel, class, threads, cpus))
    }
}

/// A placement scenario of the kernel oracle and how many rounds it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The scenario's name (`oracle::scenario::SCENARIOS`).
    pub scenario: String,
    /// Wake-ups (rounds) per run [20, as `schedlab kernel run`].
    pub rounds: u32,
}

impl Default for ScenarioSpec {
    fn default() -> Self {
        ScenarioSpec {
            scenario: String::new(),
            rounds: 20,
        }
    }
}

/// The most rounds a scenario run may ask for (`kernel run --rounds`'s bound).
pub const MAX_SCENARIO_ROUNDS: u32 = 100_000;

impl ScenarioSpec {
    /// The scenario's setup on `t`, or why there is none: an unknown name,
    /// a machine that cannot hold it, a round count out of range.
    pub fn setup(&self, t: &topology::Topology) -> Result<oracle::scenario::Setup, SpecError> {
        if self.scenario.is_empty() {
            return Err(SpecError::field(
                "scenario",
                format!(
                    "missing: name a placement scenario ({})",
                    oracle::scenario::names()
                ),
            ));
        }
        if self.rounds == 0 || self.rounds > MAX_SCENARIO_ROUNDS {
            return Err(SpecError::field(
                "rounds",
                format!("must be 1 to {MAX_SCENARIO_ROUNDS}, got {}", self.rounds),
            ));
        }
        oracle::scenario::setup(&self.scenario, t).map_err(|e| match e {
            oracle::OracleError::Arg { why, .. } => SpecError::field("scenario", why),
            other => SpecError::field("scenario", other),
        })
    }
}

/// An rt-app workload: its JSON file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RtappSpec {
    /// The rt-app JSON file (read from the current directory when relative).
    pub file: PathBuf,
    /// Native runs only: the nice value rt-app starts at (its threads
    /// inherit it unless the file sets `priority`); -20 shields the
    /// measurement from other load on a shared host. The simulator models
    /// an otherwise idle machine and ignores it.
    pub native_nice: Option<i32>,
}

/// The largest rt-app file read (the examples are under 2 KiB; a generated
/// use case with thousands of threads stays far below).
pub const MAX_RTAPP_BYTES: u64 = 16 << 20;

impl RtappSpec {
    /// The file's text, and its parse.
    pub fn load(&self) -> Result<(String, benchspec::rtapp::RtApp), SpecError> {
        let what = self.file.display();
        if self.file.as_os_str().is_empty() {
            return Err(SpecError::field(
                "file",
                "missing: name the rt-app JSON file",
            ));
        }
        let bytes = topology::input::read_capped(&self.file, MAX_RTAPP_BYTES)
            .map_err(|e| SpecError::field("file", format!("{what}: {e}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| SpecError::field("file", format!("{what}: not UTF-8 text")))?;
        let app = benchspec::rtapp::parse(&text)
            .map_err(|e| SpecError::field("file", format!("{what}: {e}")))?;
        Ok((text, app))
    }

    /// The simulator's model of the file.
    pub fn model(&self) -> Result<sim::workload::rtapp::RtappSim, SpecError> {
        let (_, app) = self.load()?;
        sim::workload::rtapp::RtappSim::new(app)
            .map_err(|e| SpecError::field("file", format!("{}: {e}", self.file.display())))
    }
}

/// The false-sharing loop's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FalseShareSpec {
    /// Stores by the writer and loads by the reader [1000000].
    pub iterations: u32,
}

impl Default for FalseShareSpec {
    fn default() -> Self {
        FalseShareSpec {
            iterations: 1_000_000,
        }
    }
}

/// hackbench's parameters, rt-tests' names and defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HackbenchSpec {
    /// `-p`: pipes instead of socketpairs.
    pub pipe: bool,
    /// `-T`: threads instead of processes.
    pub threads: bool,
    /// `-g`.
    pub groups: u32,
    /// `-f`: senders (and receivers) per group.
    pub fds: u32,
    /// `-l`: messages each sender sends each receiver.
    pub loops: u32,
    /// `-s`: bytes per message.
    pub datasize: u32,
}

impl Default for HackbenchSpec {
    fn default() -> Self {
        let d = benchspec::hackbench::Hackbench::default();
        HackbenchSpec {
            pipe: d.pipe,
            threads: d.threads,
            groups: d.groups,
            fds: d.fds,
            loops: d.loops,
            datasize: d.datasize,
        }
    }
}

impl HackbenchSpec {
    /// The benchmark's parameters.
    pub fn bench(&self) -> benchspec::hackbench::Hackbench {
        benchspec::hackbench::Hackbench {
            pipe: self.pipe,
            threads: self.threads,
            groups: self.groups,
            fds: self.fds,
            loops: self.loops,
            datasize: self.datasize,
        }
    }
}

/// Which schbench.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchbenchVersion {
    /// The 2023+ rework (what mmtests runs today).
    #[default]
    New,
    /// The spinning 2016-2019 schbench.
    Old,
}

/// schbench's parameters (schbench.c's long option names); `None` takes
/// the version's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchbenchSpec {
    /// Which schbench.
    pub version: SchbenchVersion,
    /// `-m` [new 1, old 2].
    pub message_threads: Option<u32>,
    /// `-t`: workers per message thread [new ceil(CPUs / m), old 16].
    pub threads: Option<u32>,
    /// `-r`: seconds [30].
    pub runtime: Option<u32>,
    /// `-s`: new: sleep per request, us [100]; old: the message thread's delay [30000].
    pub sleep_usec: Option<u32>,
    /// old only, `-c`: microseconds each worker spins [30000].
    pub cputime_usec: Option<u32>,
    /// new only, `-w`: warm-up seconds [0].
    pub warmup: Option<u32>,
    /// new only, `-F`: cache footprint per worker, KB [256].
    pub footprint_kb: Option<u32>,
    /// new only, `-n`: matrix multiplications per request [5].
    pub operations: Option<u32>,
    /// new only, `-i`: seconds between interval reports [10].
    pub interval: Option<u32>,
    /// new only, `-z`: zero the statistics every S seconds [0: never].
    pub zerotime: Option<u32>,
    /// new only, `-R`: requests per second [0: closed loop].
    pub rps: Option<u32>,
    /// new only, `-L`: no per-CPU lock around the matrix work.
    pub no_locking: bool,
    /// new only, `-C`: calibrate.
    pub calibrate: bool,
    /// new only (simulator): percent of the footprint private to each worker.
    pub split: Option<u32>,
}

impl SchbenchSpec {
    /// The fields given that the old schbench does not have.
    fn new_only(&self) -> Option<&'static str> {
        [
            ("warmup", self.warmup.is_some()),
            ("footprint_kb", self.footprint_kb.is_some()),
            ("operations", self.operations.is_some()),
            ("interval", self.interval.is_some()),
            ("zerotime", self.zerotime.is_some()),
            ("no_locking", self.no_locking),
            ("calibrate", self.calibrate),
            ("split", self.split.is_some()),
            ("rps", self.rps.is_some_and(|r| r > 0)),
        ]
        .into_iter()
        .find(|(_, given)| *given)
        .map(|(f, _)| f)
    }

    /// The simulator's model, with each version's defaults; a field of the
    /// other version is an error naming it.
    pub fn model(&self) -> Result<SchbenchSim, SpecError> {
        let mut s = match self.version {
            SchbenchVersion::Old => {
                if let Some(f) = self.new_only() {
                    return Err(SpecError::field(
                        f,
                        "is not an option of the old schbench (use version new)",
                    ));
                }
                SchbenchSim::old_version()
            }
            SchbenchVersion::New => {
                if self.cputime_usec.is_some() {
                    return Err(SpecError::field(
                        "cputime_usec",
                        "is an option of the old schbench only (use version old)",
                    ));
                }
                SchbenchSim::new_version()
            }
        };
        let b = &mut s.bench;
        b.message_threads = self.message_threads.unwrap_or(b.message_threads);
        b.worker_threads = self.threads.or(b.worker_threads);
        b.runtime = self.runtime.unwrap_or(b.runtime);
        b.sleep_usec = self.sleep_usec.unwrap_or(b.sleep_usec);
        b.warmup = self.warmup.unwrap_or(b.warmup);
        b.footprint_kb = self.footprint_kb.unwrap_or(b.footprint_kb);
        b.operations = self.operations.unwrap_or(b.operations);
        b.interval = self.interval.unwrap_or(b.interval);
        b.zerotime = self.zerotime.unwrap_or(b.zerotime);
        b.rps = self.rps.unwrap_or(0);
        b.no_locking = self.no_locking;
        b.calibrate = self.calibrate;
        s.cputime_usec = self.cputime_usec.unwrap_or(s.cputime_usec);
        s.split_percent = self.split;
        Ok(s)
    }

    /// The native port's parameters (the native port is the new schbench).
    pub fn native(&self) -> Result<benchspec::schbench::Schbench, SpecError> {
        if self.version == SchbenchVersion::Old {
            return Err(SpecError::field(
                "version",
                "the native port is the new schbench; `old` is simulator only",
            ));
        }
        if self.split.is_some() {
            return Err(SpecError::field("split", "is simulator only"));
        }
        Ok(self.model()?.bench)
    }
}

/// tbench's parameters, dbench's names and defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TbenchSpec {
    /// `NCLIENTS`.
    pub clients: u32,
    /// `-t`: seconds of execute phase [600].
    pub time: u32,
    /// `--warmup` seconds [time / 5].
    pub warmup: Option<u32>,
    /// `-c`: an NBENCH loadfile [the built-in mix].
    pub loadfile: Option<PathBuf>,
}

impl Default for TbenchSpec {
    fn default() -> Self {
        let d = benchspec::tbench::Tbench::default();
        TbenchSpec {
            clients: d.clients,
            time: d.time,
            warmup: d.warmup,
            loadfile: d.loadfile,
        }
    }
}

impl TbenchSpec {
    /// The benchmark's parameters.
    pub fn bench(&self) -> benchspec::tbench::Tbench {
        benchspec::tbench::Tbench {
            clients: self.clients,
            time: self.time,
            warmup: self.warmup,
            loadfile: self.loadfile.clone(),
        }
    }
}

/// The compute-only workload's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpinSpec {
    /// Tasks [twice the CPUs the run may use].
    pub tasks: Option<u32>,
    /// User work of each task, ms [100].
    pub work_ms: u32,
    /// Memory each task streams, MiB [0: none].
    pub mem_mib: u64,
}

impl Default for SpinSpec {
    fn default() -> Self {
        SpinSpec {
            tasks: None,
            work_ms: 100,
            mem_mib: 0,
        }
    }
}

impl WorkloadSpec {
    /// The benchmarks, by the names files use.
    pub const NAMES: [&'static str; 8] = [
        "hackbench",
        "schbench",
        "tbench",
        "spin",
        "falseshare",
        "rtapp",
        "scenario",
        "npb",
    ];

    /// Parse `fields` (a table of the benchmark's parameters, without
    /// `benchmark`) as `benchmark`'s; an error names the field at fault.
    pub fn from_table(benchmark: &str, fields: toml::Table) -> Result<WorkloadSpec, SpecError> {
        fn parse<T: serde::de::DeserializeOwned>(t: toml::Table) -> Result<T, SpecError> {
            serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner().message().to_string();
                SpecError::field(if path == "." { "workload".into() } else { path }, inner)
            })
        }
        Ok(match benchmark {
            "hackbench" => WorkloadSpec::Hackbench(parse(fields)?),
            "schbench" => WorkloadSpec::Schbench(parse(fields)?),
            "tbench" => WorkloadSpec::Tbench(parse(fields)?),
            "spin" => WorkloadSpec::Spin(parse(fields)?),
            "falseshare" => WorkloadSpec::Falseshare(parse(fields)?),
            "rtapp" => WorkloadSpec::Rtapp(parse(fields)?),
            "scenario" => WorkloadSpec::Scenario(parse(fields)?),
            "npb" => WorkloadSpec::Npb(parse(fields)?),
            other => {
                return Err(SpecError::field(
                    "benchmark",
                    format!(
                        "unknown benchmark {other:?} (one of {})",
                        Self::NAMES.join(", ")
                    ),
                ))
            }
        })
    }

    /// The benchmark's name.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Hackbench(_) => "hackbench",
            WorkloadSpec::Schbench(_) => "schbench",
            WorkloadSpec::Tbench(_) => "tbench",
            WorkloadSpec::Spin(_) => "spin",
            WorkloadSpec::Falseshare(_) => "falseshare",
            WorkloadSpec::Rtapp(_) => "rtapp",
            WorkloadSpec::Scenario(_) => "scenario",
            WorkloadSpec::Npb(_) => "npb",
        }
    }

    /// `--quick`'s default scaling when an experiment gives no `[quick]`
    /// table: a tenth of the loops, at most 2 s of a timed benchmark.
    pub fn scale_down(&mut self) {
        match self {
            WorkloadSpec::Hackbench(h) => h.loops = (h.loops / 10).max(1),
            WorkloadSpec::Schbench(s) => {
                s.runtime = Some(s.runtime.unwrap_or(30).min(2));
                s.warmup = s.warmup.map(|w| w.min(1));
            }
            WorkloadSpec::Tbench(t) => {
                t.time = t.time.min(2);
                t.warmup = Some(t.warmup.unwrap_or(t.time / 5).min(1));
            }
            WorkloadSpec::Spin(s) => s.work_ms = (s.work_ms / 10).max(1),
            WorkloadSpec::Falseshare(f) => f.iterations = (f.iterations / 10).max(1),
            // the file says how long it runs; an experiment's [quick]
            // table may name a shorter file
            WorkloadSpec::Rtapp(_) => {}
            // a kernel run's time is mostly the boot; a tenth of the rounds
            WorkloadSpec::Scenario(s) => s.rounds = (s.rounds / 10).max(1),
            // the smallest class; an experiment's [quick] table may name
            // another
            WorkloadSpec::Npb(n) => n.class = "S".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npb(fields: &str) -> Result<WorkloadSpec, SpecError> {
        WorkloadSpec::from_table("npb", toml::from_str(fields).unwrap())
    }

    #[test]
    fn npb_fields_and_their_errors() {
        let WorkloadSpec::Npb(n) = npb("bench = \"cg\"\nclass = \"D\"").unwrap() else {
            unreachable!()
        };
        let m = n.model(88).unwrap();
        assert_eq!((m.threads, m.class), (88, sim::workload::npb::Class::D));
        let WorkloadSpec::Npb(n) = npb("bench = \"lu\"\nthreads = 6").unwrap() else {
            unreachable!()
        };
        assert_eq!(n.model(88).unwrap().threads, 6);
        let e = |f: &str| match npb(f) {
            Ok(WorkloadSpec::Npb(n)) => n.model(8).unwrap_err().to_string(),
            Ok(_) => unreachable!(),
            Err(e) => e.to_string(),
        };
        assert!(
            e("bench = \"ft\"").contains("unknown NPB kernel"),
            "{}",
            e("bench = \"ft\"")
        );
        assert!(
            e("class = \"S\"").contains("bench"),
            "{}",
            e("class = \"S\"")
        );
        assert!(e("bench = \"bt\"\nclass = \"E\"").contains("unknown NPB class"));
        assert!(e("bench = \"bt\"\nthreads = 0").contains("threads"));
        assert!(e("bench = \"bt\"\nkernel = \"x\"").contains("kernel"));
    }
}
