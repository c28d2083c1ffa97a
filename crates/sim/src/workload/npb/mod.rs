//! The NAS Parallel Benchmarks 3.3.1, OpenMP versions (NPB3.3-OMP), as
//! workload models: bt, cg, ep, is, lu, mg, sp, ua, classes S, W, A, B, C
//! and D.
//!
//! Each kernel's file builds the phase structure of the benchmark's
//! OpenMP code (its timestep loop, which routine is a parallel region and
//! which loop is a worksharing `!$omp do`, the barriers between them, and
//! for LU the pipelined wavefront of flag waits) with an OpenMP [`team`]:
//! one compute op per thread per worksharing loop, sized from the
//! benchmark's own operation count (the formula its Mop/s line uses,
//! `bt.f`, `sp.f`, `lu.f`, `cg.f`, `ep.f`, `mg.f`, `is.c`, `ua.f`),
//! split over the phases as each file says, and the DRAM traffic of the
//! arrays it sweeps. The class parameters are NPB 3.3.1's (`sys/setparams.c`
//! and `IS/is.c`; the benchmarks are specified in NAS technical reports
//! RNR-94-007 and NAS-95-020 (NPB 2), NAS-99-011 (the OpenMP versions) and,
//! for UA, Feng, Van der Wijngaart, Biswas and Mavriplis's UA report
//! (NAS-04-006; the number was not re-checked)).
//!
//! **CPU time of an operation** (an assumption, not a measurement): one
//! counted operation (a floating-point operation of the Mop/s formula,
//! a key of IS, a random number of EP, ...) takes [`NS_PER_OP`] at full
//! core speed: one operation per cycle at 2.2 GHz, the base clock of the
//! Xeon E5-2699 v4 (Intel ARK). Compiled NPB Fortran is far from the
//! core's vector peak (16 double-precision flops per cycle with AVX2 FMA);
//! one per cycle is a round figure for scalar code, stated here so that
//! it can be replaced by a measured one. EP and IS count their own units
//! and their files say how many operations one unit costs. The memory
//! time of an op is the memory model's (bytes, their pages' nodes and the
//! machine's distances); the models only say how many bytes move.
//!
//! **What is aggregated**: an iteration space is never simulated
//! iteration by iteration; one worksharing loop is one op per thread. LU's
//! wavefront is simulated plane by plane (each thread one op per k-plane
//! between its two flag operations), because its pipeline fill and drain
//! are the benchmark. IS's `schedule(dynamic)` bucket ranking is modelled
//! as a static split of the buckets. UA runs every step at its class's
//! element bound (`lelt`) instead of the adapting mesh's changing count.
//!
//! **Timing**: NPB times only its timestep loop (timer 1); the report's
//! time is between the master's marks around it, after the arrays were
//! initialised by parallel loops (first touch) and the team created.

pub mod bt;
pub mod cg;
pub mod ep;
pub mod gomp;
pub mod is;
pub mod lu;
pub mod mg;
pub mod sp;
pub mod team;
pub mod ua;

use crate::engine::Engine;
use crate::rq::RunQueue;
use crate::Nanos;
use serde::{Deserialize, Serialize};
use serde_json::json;
use team::{Runtime, Team};

/// Mark slot: the master starts NPB's timer.
pub const MARK_START: u32 = 0;
/// Mark slot: the master stops it.
pub const MARK_STOP: u32 = 1;

/// CPU time of one counted operation at full speed, ns (see the module
/// documentation: one per cycle at 2.2 GHz).
pub const NS_PER_OP: f64 = 1.0 / 2.2;

/// Bytes of a double.
pub const F64: u64 = 8;

/// The eight kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// Block tridiagonal ADI.
    Bt,
    /// Conjugate gradient.
    Cg,
    /// Embarrassingly parallel.
    Ep,
    /// Integer sort.
    Is,
    /// Lower-upper Gauss-Seidel (SSOR).
    Lu,
    /// Multigrid.
    Mg,
    /// Scalar pentadiagonal ADI.
    Sp,
    /// Unstructured adaptive mesh.
    Ua,
}

impl Kernel {
    /// Every kernel, by name.
    pub const ALL: [Kernel; 8] = [
        Kernel::Bt,
        Kernel::Cg,
        Kernel::Ep,
        Kernel::Is,
        Kernel::Lu,
        Kernel::Mg,
        Kernel::Sp,
        Kernel::Ua,
    ];

    /// The lower-case name (`bt`).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Bt => "bt",
            Kernel::Cg => "cg",
            Kernel::Ep => "ep",
            Kernel::Is => "is",
            Kernel::Lu => "lu",
            Kernel::Mg => "mg",
            Kernel::Sp => "sp",
            Kernel::Ua => "ua",
        }
    }

    /// A kernel by name (any case); the error names the valid ones.
    pub fn parse(s: &str) -> Result<Kernel, String> {
        Kernel::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown NPB kernel {s:?} (one of {})",
                    Kernel::ALL.map(Kernel::name).join(", ")
                )
            })
    }
}

/// The problem classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Class {
    /// Sample.
    S,
    /// Workstation.
    W,
    /// A.
    A,
    /// B.
    B,
    /// C.
    C,
    /// D.
    D,
}

impl Class {
    /// Every class, smallest first.
    pub const ALL: [Class; 6] = [Class::S, Class::W, Class::A, Class::B, Class::C, Class::D];

    /// The letter.
    pub fn letter(self) -> char {
        match self {
            Class::S => 'S',
            Class::W => 'W',
            Class::A => 'A',
            Class::B => 'B',
            Class::C => 'C',
            Class::D => 'D',
        }
    }

    /// Index in [`Class::ALL`] (for the kernels' class tables).
    pub fn index(self) -> usize {
        self as usize
    }

    /// A class by letter (any case).
    pub fn parse(s: &str) -> Result<Class, String> {
        Class::ALL
            .into_iter()
            .find(|c| s.len() == 1 && c.letter().eq_ignore_ascii_case(&s.chars().next().unwrap()))
            .ok_or_else(|| format!("unknown NPB class {s:?} (one of S, W, A, B, C, D)"))
    }
}

/// The size line of NPB's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// A grid, `n1 x n2 x n3`.
    Grid(u64, u64, u64),
    /// A count (CG's rows, IS's keys).
    Count(u64),
    /// EP: 2^n random numbers.
    Pow2(u32),
}

/// What a kernel's class says for the report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Info {
    /// The size line.
    pub size: Size,
    /// Iterations (timesteps).
    pub iterations: u32,
    /// The operations the Mop/s line counts over the timed run.
    pub mops: f64,
    /// The operation type line.
    pub optype: &'static str,
}

impl Info {
    /// A floating-point kernel on an n^3 grid: `iterations` steps of
    /// `ops_per_step(n)` operations each.
    pub fn cube(n: u64, iterations: u32, ops_per_step: fn(u64) -> f64) -> Info {
        Info {
            size: Size::Grid(n, n, n),
            iterations,
            mops: iterations as f64 * ops_per_step(n),
            optype: "floating point",
        }
    }
}

/// An NPB run: kernel, class and the team.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Npb {
    /// The kernel.
    pub kernel: Kernel,
    /// The class.
    pub class: Class,
    /// OMP_NUM_THREADS.
    pub threads: u32,
    /// A barrier waiter's spin before it sleeps, ns (`gomp::runtime`).
    pub spin_ns: Nanos,
}

impl Npb {
    /// A run of `threads` threads on a process allowed `cpus` CPUs.
    pub fn new(kernel: Kernel, class: Class, threads: u32, cpus: usize) -> Npb {
        let rt = gomp::runtime(threads, cpus);
        Npb {
            kernel,
            class,
            threads: rt.threads,
            spin_ns: rt.spin_ns,
        }
    }

    /// The class's report values.
    pub fn info(&self) -> Info {
        match self.kernel {
            Kernel::Bt => bt::info(self.class),
            Kernel::Cg => cg::info(self.class),
            Kernel::Ep => ep::info(self.class),
            Kernel::Is => is::info(self.class),
            Kernel::Lu => lu::info(self.class),
            Kernel::Mg => mg::info(self.class),
            Kernel::Sp => sp::info(self.class),
            Kernel::Ua => ua::info(self.class),
        }
    }

    /// The NPB report's lines (print_results.f / c_print_results.c), for
    /// a timed run of `time_s` seconds.
    pub fn report_text(&self, time_s: f64) -> String {
        let info = self.info();
        let mops = if time_s > 0.0 {
            info.mops / time_s / 1e6
        } else {
            0.0
        };
        let name = self.kernel.name().to_ascii_uppercase();
        let size = match info.size {
            Size::Grid(a, b, c) => format!(" Size            =           {a:>4}x{b:>4}x{c:>4}"),
            Size::Count(n) => format!(" Size            =             {n:>12}"),
            Size::Pow2(p) => format!(" Size            =           {:>14}", 1u64 << p),
        };
        let t = self.threads;
        format!(
            "\n\n {name} Benchmark Completed.\n Class           =                        {}\n{size}\n Iterations      =             {:>12}\n Time in seconds =             {time_s:>12.2}\n Total threads   =             {t:>12}\n Avail threads   =             {t:>12}\n Mop/s total     =             {mops:>12.2}\n Mop/s/thread    =             {:>12.2}\n Operation type  = {:>24}\n Verification    =    NOT PERFORMED (simulated)\n",
            self.class.letter(),
            info.iterations,
            mops / t.max(1) as f64,
            info.optype,
        )
    }
}

impl super::Workload for Npb {
    fn name(&self) -> &'static str {
        "npb"
    }

    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, _first_cpu: usize) {
        let rt = Runtime {
            threads: self.threads,
            spin_ns: self.spin_ns,
        };
        let mut team = Team::new(e, rt, 1, NS_PER_OP);
        match self.kernel {
            Kernel::Bt => bt::build(self.class, &mut team),
            Kernel::Cg => cg::build(self.class, &mut team),
            Kernel::Ep => ep::build(self.class, &mut team),
            Kernel::Is => is::build(self.class, &mut team),
            Kernel::Lu => lu::build(self.class, &mut team),
            Kernel::Mg => mg::build(self.class, &mut team),
            Kernel::Sp => sp::build(self.class, &mut team),
            Kernel::Ua => ua::build(self.class, &mut team),
        }
        team.finish();
    }

    fn report(&self, rec: &super::Record) -> super::Report {
        let start = rec.mark(MARK_START).unwrap_or(0);
        let stop = rec.mark(MARK_STOP).unwrap_or(rec.end);
        let time_ns = stop.saturating_sub(start);
        let time_s = time_ns as f64 / 1e9;
        let info = self.info();
        let mops = if time_s > 0.0 {
            info.mops / time_s / 1e6
        } else {
            0.0
        };
        let mut json = serde_json::Map::new();
        json.insert(
            "npb".into(),
            json!({
                "bench": self.kernel.name(),
                "class": self.class.letter().to_string(),
                "threads": self.threads,
                "iterations": info.iterations,
                "time_s": time_s,
                "mops_total": mops,
            }),
        );
        super::Report {
            text: self.report_text(time_s),
            json,
            time_ns,
            files: Vec::new(),
        }
    }
}

/// The most threads of a team.
pub const MAX_THREADS: u32 = 4096;

/// The timer marks around the timed part: the master starts the timer.
pub(crate) fn timer_start<R: RunQueue>(t: &mut Team<'_, '_, R>) {
    t.push(0, crate::task::Op::Mark(MARK_START));
}

/// BT's and SP's arrays on an n^3 grid (u, rhs, forcing: 5 variables
/// each; aux: `aux_vars` per point, the solver's work arrays), first
/// touched by the parallel initialisation loops over k (initialize.f,
/// exact_rhs.f), then the timer starts. Returns (u, rhs, forcing, aux).
pub(crate) fn adi_setup<R: RunQueue>(
    t: &mut Team<'_, '_, R>,
    n: u64,
    aux_vars: u64,
) -> (team::Array, team::Array, team::Array, team::Array) {
    use team::Touch;
    let pts = n * n * n;
    let u = t.array("u", 5 * pts * F64);
    let rhs = t.array("rhs", 5 * pts * F64);
    let forcing = t.array("forcing", 5 * pts * F64);
    let aux = t.array("aux", aux_vars * pts * F64);
    t.fork();
    t.pfor(
        n,
        100.0 * (n * n) as f64,
        &[
            Touch::Slab(u, 1.0),
            Touch::Slab(rhs, 1.0),
            Touch::Slab(forcing, 1.0),
            Touch::Slab(aux, 1.0),
        ],
        false,
    );
    t.join();
    timer_start(t);
    (u, rhs, forcing, aux)
}

/// The master stops the timer.
pub(crate) fn timer_stop<R: RunQueue>(t: &mut Team<'_, '_, R>) {
    t.push(0, crate::task::Op::Mark(MARK_STOP));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_classes_parse() {
        assert_eq!(Kernel::parse("BT"), Ok(Kernel::Bt));
        assert_eq!(Kernel::parse("ua"), Ok(Kernel::Ua));
        let e = Kernel::parse("ft").unwrap_err();
        assert!(
            e.contains("\"ft\"") && e.contains("bt, cg, ep, is, lu, mg, sp, ua"),
            "{e}"
        );
        assert_eq!(Class::parse("d"), Ok(Class::D));
        assert!(Class::parse("E").is_err());
        assert!(Class::parse("SS").is_err());
    }

    #[test]
    fn report_lines_have_npb_layout() {
        let n = Npb::new(Kernel::Bt, Class::S, 4, 8);
        let t = n.report_text(1.5);
        assert!(t.contains("\n BT Benchmark Completed.\n"), "{t}");
        assert!(
            t.contains(" Class           =                        S\n"),
            "{t}"
        );
        assert!(
            t.contains(" Size            =             12x  12x  12\n"),
            "{t}"
        );
        assert!(
            t.contains(" Iterations      =                       60\n"),
            "{t}"
        );
        assert!(
            t.contains(" Time in seconds =                     1.50\n"),
            "{t}"
        );
        assert!(
            t.contains(" Total threads   =                        4\n"),
            "{t}"
        );
        assert!(
            t.contains(" Operation type  =           floating point\n"),
            "{t}"
        );
        assert!(
            t.contains(" Verification    =    NOT PERFORMED (simulated)\n"),
            "{t}"
        );
    }
}
