//! Byte fuzzing of the experiment file reader on the stable toolchain:
//! proptest mutates the built-in experiments and a small hand-written one
//! (bytes and TOML pieces), and `Experiment::parse` must return `Ok` or an
//! error of one line, never panic.
//!
//! The suite runs a few cases; `SCHEDLAB_FUZZ_CASES=N` runs N instead, e.g.
//! `SCHEDLAB_FUZZ_CASES=50000 cargo test -p lab --test fuzz -- --nocapture`.
//! A failing input is shrunk and its seed kept in
//! `fuzz.proptest-regressions` beside this file, so every later run tries
//! it first.

use lab::Experiment;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

fn config(default: u32) -> Config {
    Config {
        cases: std::env::var("SCHEDLAB_FUZZ_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

/// A small experiment touching every table: run, sweep, variants, quick.
const SMALL: &str = r#"
name = "tiny"
description = "d"
iterations = 2
seed = 7
metrics = ["time", "stage-shares"]
[run]
machine = "xeon-12c24t"
cpus = "0-3"
kernel = "linux-5.12+test_idle_cores_smt_gate=on"
benchmark = "hackbench"
pipe = true
fds = 2
loops = 5
[sweep]
groups = [1, 2]
[[variant]]
name = "latest"
kernel = "latest"
[[variant]]
name = "no-sis-util"
features = { sis_util = "off" }
kernel_config = { SCHED_SMT = "n" }
[quick]
iterations = 1
sweep = { groups = [1] }
"#;

/// The texts the mutations start from.
fn seeds() -> Vec<&'static str> {
    let mut v = vec![SMALL];
    v.extend(lab::builtin::BUILTINS.iter().map(|(_, t)| *t));
    v
}

/// TOML pieces: tables, the run fields, workload fields, values at the
/// edges. (No paths of endless files: a loadfile or cost profile is read.)
const DICT: &[&str] = &[
    "\n[run]\n",
    "\n[sweep]\n",
    "\n[[variant]]\nname = \"v\"\n",
    "\n[quick]\n",
    "\nname = \"x\"\n",
    "iterations = ",
    "seed = ",
    "metrics = [\"time\", \"tput\", \"stage-shares\", \"nope\"]",
    "mode = \"native\"",
    "mode = \"sim\"",
    "machine = \"kunpeng920-node\"",
    "machine = \"sysfs:/nonexistent\"",
    "machine = \"hwloc:/nonexistent\"",
    "cpus = \"0-3,8\"",
    "cpus = \"0-4095\"",
    "node = 1",
    "kernel = \"linux-5.12+scan_start=target+1\"",
    "kernel = \"linux-9.9\"",
    "features = { sis_util = \"off\", nope = \"on\" }",
    "kernel_config = { SCHED_CLUSTER = \"n\" }",
    "policy = \"scx\"",
    "costs = false",
    "cpuidle = \"intel_idle:menu\"",
    "cost_profile = \"/nonexistent.toml\"",
    "check = true",
    "benchmark = \"hackbench\"",
    "benchmark = \"schbench\"",
    "benchmark = \"tbench\"",
    "benchmark = \"spin\"",
    "benchmark = \"falseshare\"",
    "version = \"old\"",
    "groups = [1, 2, 4]",
    "clients = [1, 512]",
    "loadfile = \"/nonexistent\"",
    "time = ",
    "runtime = ",
    "= 0",
    "= -1",
    "= 4294967296",
    "= 9223372036854775807",
    "= 1e308",
    "= nan",
    "= inf",
    "= []",
    "= {}",
    "= [[1], [2]]",
    "= \"\"",
    "= 1979-05-27T07:32:00Z",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'''",
    "\"\"\"",
    "=",
    ".",
    ",",
    "#",
    "\\u0000",
    "é",
    "\u{feff}",
    "\r\n",
];

#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Copy(usize, usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop_oneof![
        3 => prop::sample::select(DICT).prop_map(|t| t.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        2 => (any::<usize>(), 0u8..8).prop_map(|(p, b)| Edit::Flip(p, b)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Set(p, b)),
        5 => (any::<usize>(), token).prop_map(|(p, t)| Edit::Insert(p, t)),
        2 => (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Remove(p, n)),
        1 => (any::<usize>(), 1usize..256, any::<usize>()).prop_map(|(a, n, b)| Edit::Copy(a, n, b)),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for e in edits {
        let at = |p: usize, v: &Vec<u8>| p % (v.len() + 1);
        match e {
            Edit::Flip(p, b) if !v.is_empty() => {
                let i = p % v.len();
                v[i] ^= 1 << b;
            }
            Edit::Set(p, b) if !v.is_empty() => {
                let i = p % v.len();
                v[i] = *b;
            }
            Edit::Insert(p, t) => {
                let i = at(*p, &v);
                v.splice(i..i, t.iter().copied());
            }
            Edit::Remove(p, n) => {
                let i = at(*p, &v);
                let j = (i + n).min(v.len());
                v.drain(i..j);
            }
            Edit::Copy(a, n, b) if !v.is_empty() => {
                let i = a % v.len();
                let piece = v[i..(i + n).min(v.len())].to_vec();
                let j = at(*b, &v);
                v.splice(j..j, piece);
            }
            Edit::Truncate(p) => {
                let i = at(*p, &v);
                v.truncate(i);
            }
            _ => {}
        }
    }
    v
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn experiment_parse_never_panics(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 1..10),
        quick in any::<bool>(),
        fresh in prop::option::weighted(0.05, any::<String>()),
    ) {
        let seeds = seeds();
        let text = match fresh {
            Some(s) => s,
            None => {
                let bytes = mutate(seeds[seed.index(seeds.len())].as_bytes(), &edits);
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        match Experiment::parse("fuzz.toml", &text, quick) {
            Ok(exp) => {
                // an accepted experiment can be planned (up to
                // lab::experiment::MAX_RUNS runs: only small plans here)
                let n = (exp.npoints() * exp.variants.len()) as u64 * exp.iterations as u64;
                if n <= 100_000 {
                    prop_assert_eq!(exp.runs().len() as u64, n);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("fuzz.toml: "), "{msg:?}");
                prop_assert!(
                    !msg.contains('\n') && !msg.contains('\r'),
                    "error of more than one line: {msg:?}"
                );
            }
        }
    }
}
