//! Command-line flags shared by `schedlab sim` and `schedlab bench`: a
//! benchmark's own flags are defined once, so the simulated and the native
//! run of a benchmark take the same command line. Each command flattens in
//! its own options (`--machine`, `--seed`, ... for `sim`; `--cpus`,
//! `--json`, ... for `bench`) next to them.

use clap::{value_parser, Arg, Args};
use native::hackbench::Hackbench;
use std::collections::BTreeMap;

/// The parser of a number flag: an integer in `min..=max`. Anything else
/// (a negative number where none is allowed, one too large, not a number)
/// is refused in one form, which clap prints as `invalid value 'V' for
/// 'FLAG': V is not in MIN..=MAX` (the form of clap's own ranged parsers).
/// A command that takes negative numbers as values needs
/// `allow_negative_numbers`, or clap reads `-5` as an unknown flag.
/// `min..=max` must fit in `T`.
///
/// ```ignore
/// #[arg(long, value_parser = int_in::<u32>(1, u32::MAX.into()))]
/// ```
pub fn int_in<T: TryFrom<i128>>(
    min: i128,
    max: i128,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        s.parse::<i128>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .and_then(|v| T::try_from(v).ok())
            .ok_or_else(|| format!("{s} is not in {min}..={max}"))
    }
}

/// The bounds of a simulated run, the same for `sim` and for every
/// simulated run of `compare`.
#[derive(Args, Debug, Clone)]
pub struct BoundArgs {
    /// Stop with an error after this many events (default: no limit).
    #[arg(long, value_name = "N", value_parser = int_in::<u64>(1, u64::MAX.into()))]
    pub max_events: Option<u64>,
    /// Stop with an error when the simulated time passes S seconds.
    #[arg(long, value_name = "S", default_value_t = sim::run::DEFAULT_TIME_LIMIT_S,
          value_parser = int_in::<u64>(1, MAX_TIME_LIMIT_S))]
    pub time_limit: u64,
    /// Refuse a run whose estimated memory exceeds MIB mebibytes (checked before anything is allocated).
    #[arg(long, value_name = "MIB", default_value_t = sim::run::DEFAULT_MAX_MEMORY_MIB,
          value_parser = int_in::<u64>(1, MAX_MEMORY_MIB))]
    pub max_memory: u64,
}

/// The highest `--time-limit`, seconds (about 31 years; simulated time
/// is counted in u64 nanoseconds).
const MAX_TIME_LIMIT_S: i128 = 1_000_000_000;
/// The highest `--max-memory`, MiB (16 TiB).
const MAX_MEMORY_MIB: i128 = 16 << 20;

impl BoundArgs {
    /// The bounds these flags set.
    pub fn bounds(&self) -> lab::exec::Bounds {
        lab::exec::Bounds {
            max_events: self.max_events,
            time_limit_s: self.time_limit,
            max_memory_mib: self.max_memory,
        }
    }
}

/// Repeatable `NAME=VALUE` flags (`--feature`, `--kernel-config`) as a
/// map; a name given twice with different values is an error naming both
/// (the same value twice is harmless). `form` is what one must look like.
pub fn name_values(
    list: &[String],
    flag: &str,
    form: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for kv in list {
        let Some((k, v)) = kv.split_once('=') else {
            anyhow::bail!("{flag} {kv:?}: expected {form}");
        };
        if let Some(old) = map.insert(k.to_string(), v.to_string()) {
            if old != v {
                anyhow::bail!("{flag} {k}: given twice, as {k}={old} and {k}={v}");
            }
        }
    }
    Ok(map)
}

/// `--feature` flags as a map of schedlab's feature names to values. Each
/// is `NAME=VALUE` or written as the kernel spells its sched_features
/// (the names /sys/kernel/debug/sched/features lists, in upper case):
/// `SIS_PROP=off`, or alone `SIS_PROP` (on) and `NO_SIS_PROP` (off), as
/// written to that file. The kernel's names are mapped here, before
/// `Features::set` sees them ([`feature_name`]).
pub fn feature_values(list: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut pairs = Vec::with_capacity(list.len());
    for f in list {
        let pair = match f.split_once('=') {
            Some((k, v)) => format!("{}={v}", feature_name(k).unwrap_or(k)),
            // alone, only in the kernel's upper case (`sis_prop` alone is
            // a value left out, not a spelling)
            None => {
                let kernel = *f == f.to_ascii_uppercase();
                match (
                    feature_name(f).filter(|_| kernel),
                    f.strip_prefix("NO_").and_then(feature_name).filter(|_| kernel),
                ) {
                    (Some(name), _) => format!("{name}=on"),
                    (None, Some(name)) => format!("{name}=off"),
                    (None, None) => anyhow::bail!(
                        "--feature {f:?}: expected NAME=VALUE, or a feature's kernel name alone (on) or after NO_ (off), as sched_features spells them (e.g. SIS_PROP, NO_SIS_PROP; see --list-features)"
                    ),
                }
            }
        };
        pairs.push(pair);
    }
    name_values(&pairs, "--feature", "NAME=VALUE")
}

/// schedlab's name of feature `name`, given as schedlab spells it or as
/// the kernel's sched_features does: in upper case (`SIS_PROP` is
/// `sis_prop`), or, where the two differ, the kernel's name that opens the
/// feature's description (`CFS BASE_SLICE: ...` is `cfs_base_slice`).
/// `None`: no such feature.
pub fn feature_name(name: &str) -> Option<&'static str> {
    let all = sim::placement::linux::Features::features();
    let lower = name.to_ascii_lowercase();
    if let Some(f) = all.iter().find(|f| f.0 == lower) {
        return Some(f.0);
    }
    let upper = name.to_ascii_uppercase();
    all.iter()
        .find(|(_, _, desc)| {
            let d = desc
                .strip_prefix("CFS ")
                .or_else(|| desc.strip_prefix("EEVDF "))
                .unwrap_or(desc);
            d.split_once(':').is_some_and(|(kernel, _)| kernel == upper)
        })
        .map(|f| f.0)
}

/// rt-tests `hackbench` flags (same letters, same defaults).
///
/// The two commands read them slightly differently, as they always have;
/// each applies its reading with `mut_args`: [`HackbenchArgs::for_sim`] or
/// [`HackbenchArgs::for_bench`].
#[derive(Args, Debug, Clone)]
pub struct HackbenchArgs {
    /// Use pipe() instead of socketpair().
    #[arg(short = 'p', long = "pipe")]
    pub pipe: bool,
    /// Use threads instead of processes.
    #[arg(short = 'T', long = "threads")]
    pub threads: bool,
    /// Use processes (the default).
    #[arg(short = 'P', long = "process")]
    pub process: bool,
    /// Number of groups.
    #[arg(short = 'g', long = "groups", default_value_t = 10)]
    pub groups: i64,
    /// Senders (and receivers) per group.
    #[arg(short = 'f', long = "fds", default_value_t = 20)]
    pub fds: i64,
    /// Messages each sender passes to each receiver.
    #[arg(short = 'l', long = "loops", default_value_t = 100)]
    pub loops: i64,
    /// Bytes per message.
    #[arg(short = 's', long = "datasize", default_value_t = 100)]
    pub datasize: i64,
}

/// The flags that take a count.
const COUNTS: [&str; 4] = ["groups", "fds", "loops", "datasize"];

impl HackbenchArgs {
    /// `schedlab sim hackbench`'s reading: `-T` with `-P` is a usage error,
    /// and a count is an integer in `1..=u32::MAX` ([`int_in`]).
    pub fn for_sim(arg: Arg) -> Arg {
        match arg.get_id().as_str() {
            "threads" => arg.conflicts_with("process"),
            id if COUNTS.contains(&id) => arg
                .value_name("N")
                .value_parser(int_in::<i64>(1, u32::MAX.into())),
            _ => arg,
        }
    }

    /// `schedlab bench hackbench`'s reading, rt-tests' own: the last of
    /// `-T`/`-P` wins (its option loop sets the mode at each), and a count
    /// must fit in 32 bits (a zero is left to the benchmark's validation).
    pub fn for_bench(arg: Arg) -> Arg {
        match arg.get_id().as_str() {
            "threads" => arg.overrides_with("process"),
            "process" => arg.overrides_with("threads"),
            id if COUNTS.contains(&id) => arg
                .value_name("N")
                .value_parser(value_parser!(i64).range(0..=u32::MAX as i64)),
            _ => arg,
        }
    }

    /// Threads (`-T`) rather than processes (`-P`, the default).
    pub fn threaded(&self) -> bool {
        self.threads && !self.process
    }

    /// The benchmark's parameters, for counts the parser has kept within
    /// `0..=u32::MAX` ([`HackbenchArgs::for_bench`]).
    pub fn to_bench(&self) -> Hackbench {
        let count = |v: i64| u32::try_from(v).expect("the parser bounds every count to u32");
        Hackbench {
            pipe: self.pipe,
            threads: self.threaded(),
            groups: count(self.groups),
            fds: count(self.fds),
            loops: count(self.loops),
            datasize: count(self.datasize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// A command with the flags read as `sim` or `bench` reads them.
    #[derive(Parser, Debug)]
    #[command(name = "t")]
    struct Cli {
        #[command(flatten)]
        hb: HackbenchArgs,
    }

    fn parse(
        flavour: fn(Arg) -> Arg,
        negatives: bool,
        args: &[&str],
    ) -> Result<HackbenchArgs, String> {
        let cmd = Cli::command()
            .mut_args(flavour)
            .allow_negative_numbers(negatives);
        let m = cmd
            .try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))
            .map_err(|e| e.render().to_string().lines().next().unwrap().to_string())?;
        Ok(<HackbenchArgs as clap::FromArgMatches>::from_arg_matches(&m).unwrap())
    }

    #[test]
    fn features_as_the_kernel_spells_them() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = feature_values(&l(&[
            "SIS_PROP=off",
            "NO_WA_BIAS",
            "SIS_UTIL",
            "BASE_SLICE=on",
            "fair_class=cfs",
            "LB_ALGORITHM=legacy",
        ]))
        .unwrap();
        let want: BTreeMap<String, String> = [
            ("sis_prop", "off"),
            ("wa_bias", "off"),
            ("sis_util", "on"),
            ("cfs_base_slice", "on"),
            ("fair_class", "cfs"),
            ("lb_algorithm", "legacy"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(m, want);
        // the two spellings of one feature are one feature
        let e = feature_values(&l(&["NO_SIS_PROP", "sis_prop=on"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sis_prop: given twice"), "{e}");
        // an unknown name alone is refused naming the flag; with a value
        // it is passed on as given, for Features::set to refuse
        let e = feature_values(&l(&["NO_SUCH_THING"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--feature \"NO_SUCH_THING\": expected NAME=VALUE"),
            "{e}"
        );
        let e = feature_values(&l(&["sis_prop"])).unwrap_err().to_string();
        assert!(
            e.starts_with("--feature \"sis_prop\": expected NAME=VALUE"),
            "{e}"
        );
        let m = feature_values(&l(&["NO_SUCH=off"])).unwrap();
        assert_eq!(m["NO_SUCH"], "off");
    }

    #[test]
    fn every_count_flag_exists() {
        let cmd = Cli::command();
        for id in COUNTS {
            assert!(cmd.get_arguments().any(|a| a.get_id() == id), "{id}");
        }
    }

    #[test]
    fn bench_reads_like_rt_tests() {
        let b = |args: &[&str]| parse(HackbenchArgs::for_bench, false, args);
        assert_eq!(b(&["-T", "-P"]).unwrap().to_bench(), Hackbench::default());
        assert!(b(&["-P", "-T"]).unwrap().threaded());
        let hb = b(&["-p", "-g", "4294967295", "-f", "0"])
            .unwrap()
            .to_bench();
        assert_eq!((hb.pipe, hb.groups, hb.fds), (true, u32::MAX, 0));
        assert_eq!(
            b(&["-g", "4294967296"]).unwrap_err(),
            "error: invalid value '4294967296' for '--groups <N>': 4294967296 is not in 0..=4294967295"
        );
        assert_eq!(
            b(&["-l", "-1"]).unwrap_err(),
            "error: unexpected argument '-1' found"
        );
    }

    #[test]
    fn sim_reads_counts_in_range_and_refuses_both_modes() {
        let s = |args: &[&str]| parse(HackbenchArgs::for_sim, true, args);
        let a = s(&["-g", "1", "-l", "4294967295", "-T"]).unwrap();
        assert_eq!(
            (a.groups, a.loops, a.threaded()),
            (1, u32::MAX as i64, true)
        );
        assert_eq!(
            s(&["-P", "-T"]).unwrap_err(),
            "error: the argument '--process' cannot be used with '--threads'"
        );
        for (flag, v) in [
            ("-g", "x"),
            ("-g", "-1"),
            ("-f", "0"),
            ("-l", "99999999999"),
        ] {
            let long = match flag {
                "-g" => "groups",
                "-f" => "fds",
                _ => "loops",
            };
            assert_eq!(
                s(&[flag, v]).unwrap_err(),
                format!(
                    "error: invalid value '{v}' for '--{long} <N>': {v} is not in 1..=4294967295"
                )
            );
        }
    }

    #[test]
    fn int_in_takes_the_range_and_nothing_else() {
        let p = int_in::<u8>(0, 100);
        assert_eq!(p("100"), Ok(100));
        assert_eq!(p("101").unwrap_err(), "101 is not in 0..=100");
        assert_eq!(p("-1").unwrap_err(), "-1 is not in 0..=100");
        assert_eq!(p("1e3").unwrap_err(), "1e3 is not in 0..=100");
    }

    #[test]
    fn a_name_given_twice_must_keep_its_value() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = name_values(&l(&["a=on", "b=off", "a=on"]), "--feature", "NAME=VALUE").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            name_values(&l(&["a=on", "a=off"]), "--feature", "NAME=VALUE")
                .unwrap_err()
                .to_string(),
            "--feature a: given twice, as a=on and a=off"
        );
        assert_eq!(
            name_values(&l(&["a"]), "--feature", "NAME=VALUE")
                .unwrap_err()
                .to_string(),
            "--feature \"a\": expected NAME=VALUE"
        );
    }
}
