//! Command-line flags shared by `schedlab sim` and `schedlab bench`: a
//! benchmark's own flags are defined once, so the simulated and the native
//! run of a benchmark take the same command line. Each command flattens in
//! its own options (`--machine`, `--seed`, ... for `sim`; `--cpus`,
//! `--json`, ... for `bench`) next to them.

use clap::{value_parser, Arg, Args};
use native::hackbench::Hackbench;

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
    /// and a count is any integer (the command itself rejects one outside
    /// `1..=u32::MAX`, saying what it got).
    pub fn for_sim(arg: Arg) -> Arg {
        match arg.get_id().as_str() {
            "threads" => arg.conflicts_with("process"),
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
    fn sim_reads_any_integer_and_refuses_both_modes() {
        let s = |args: &[&str]| parse(HackbenchArgs::for_sim, true, args);
        let a = s(&["-g", "-1", "-l", "5000000000", "-T"]).unwrap();
        assert_eq!((a.groups, a.loops, a.threaded()), (-1, 5_000_000_000, true));
        assert_eq!(
            s(&["-P", "-T"]).unwrap_err(),
            "error: the argument '--process' cannot be used with '--threads'"
        );
        assert_eq!(
            s(&["-g", "x"]).unwrap_err(),
            "error: invalid value 'x' for '--groups <GROUPS>': invalid digit found in string"
        );
    }
}
