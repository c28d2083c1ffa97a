//! `schedlab costs show` and `--cost-profile`: a preset's profile printed
//! with its sources, as TOML that loads back, and a loaded profile changing
//! a simulation.

mod common;
use common::{fails, json, run};
use std::path::Path;

const PRESETS: [&str; 11] = [
    "kunpeng920",
    "kunpeng920-1s",
    "kunpeng920-node",
    "power9-smt8",
    "xeon-12c24t",
    "jacobsville",
    "epyc-zen3",
    "sapphire-rapids",
    "altra",
    "kvm-8vcpu",
    "host",
];

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const HB: [&str; 9] = [
    "sim",
    "hackbench",
    "-p",
    "-T",
    "-g",
    "2",
    "-l",
    "50",
    "--machine",
];

/// `text` (a profile's TOML) with `key`'s value replaced by `value`.
fn set(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    assert!(text.lines().any(|l| l.starts_with(&prefix)), "{key}");
    text.lines()
        .map(|l| {
            if l.starts_with(&prefix) {
                format!("{prefix}{value}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

fn hb_time(machine: &str, extra: &[&str]) -> f64 {
    let mut a = HB.to_vec();
    a.push(machine);
    a.extend_from_slice(extra);
    json(&a)["time_s"].as_f64().unwrap()
}

#[test]
fn show_text_names_every_value_and_its_source() {
    let out = run(&["costs", "show", "kunpeng920"]);
    assert!(out.starts_with("kunpeng920: cost profile"), "{out}");
    assert!(out.contains("c2c_ns = [0, 8, 35, 36, 81, 125]"), "{out}");
    assert!(
        out.contains("source: github.com/nviennot/core-to-core-latency"),
        "{out}"
    );
    let at = out.find("\npipe_syscall_ns = ").expect("pipe_syscall_ns");
    let mut lines = out[at + 1..].lines();
    let value = lines.next().unwrap()["pipe_syscall_ns = ".len()..].to_string();
    assert!(value.parse::<u64>().is_ok(), "{value}");
    assert_eq!(lines.next(), Some("  one pipe read or write syscall, ns"));
    assert!(lines.next().unwrap().starts_with("  source: "));
    // every key of the TOML form is in the text form, each with a source
    let toml = run(&["costs", "show", "kunpeng920", "--toml"]);
    for line in toml
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" = "))
    {
        let key = line.split(" = ").next().unwrap();
        if key.starts_with(' ') {
            continue; // an idle state inside the array
        }
        assert!(out.contains(&format!("\n{key} = ")), "{key}");
    }
    assert_eq!(
        out.matches("\n  source: ").count(),
        toml.matches("# source: ").count()
    );
    let e = fails(&["costs", "show", "nope"]);
    assert!(
        e.starts_with("schedlab: error: unknown machine preset \"nope\""),
        "{e}"
    );
}

#[test]
fn show_toml_snapshot() {
    insta::assert_snapshot!(run(&["costs", "show", "kunpeng920", "--toml"]));
}

/// Every preset's TOML, loaded as the machine's own profile, gives the
/// same run as the preset itself: the file holds the whole profile.
#[test]
fn every_preset_loads_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    for preset in PRESETS {
        let text = run(&["costs", "show", preset, "--toml"]);
        let f = write(dir.path(), &format!("{preset}.toml"), &text);
        let machine = if preset == "host" { "host" } else { preset };
        let mut a = HB.to_vec();
        a.extend_from_slice(&[machine, "--cpus", "0-1"]);
        let plain = json(&a);
        a.extend_from_slice(&["--cost-profile", &f]);
        let loaded = json(&a);
        for k in ["time_s", "counters", "placement"] {
            assert_eq!(plain[k], loaded[k], "{preset}: {k}");
        }
    }
}

#[test]
fn a_changed_value_changes_the_run_and_costs_off_still_zeroes() {
    let dir = tempfile::tempdir().unwrap();
    let text = run(&["costs", "show", "kunpeng920-node", "--toml"]);
    let slow = write(
        dir.path(),
        "slow.toml",
        &set(&text, "pipe_syscall_ns", "5000"),
    );
    let base = hb_time("kunpeng920-node", &[]);
    let t = hb_time("kunpeng920-node", &["--cost-profile", &slow]);
    assert!(t > 2.0 * base, "{t} vs {base}");
    let off = hb_time("kunpeng920-node", &["--costs", "off"]);
    let off_slow = hb_time(
        "kunpeng920-node",
        &["--costs", "off", "--cost-profile", &slow],
    );
    assert_eq!(off, off_slow);
}

#[test]
fn bad_profiles_exit_2_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = run(&["costs", "show", "kunpeng920-node", "--toml"]);
    let cases = [
        (
            "bad.toml",
            set(&text, "fork_ns", "\"fast\""),
            "fork_ns: invalid type: string \"fast\", expected u64",
        ),
        (
            "missing.toml",
            text.replace("hz = 250\n", ""),
            "hz: missing (every key is required)",
        ),
        (
            "unknown.toml",
            text.replace("hz = 250", "hz = 250\nhertz = 100"),
            "hertz: unknown key",
        ),
        (
            "negative.toml",
            text.replace("ipi_ns = 1000", "ipi_ns = -5"),
            "ipi_ns: invalid value",
        ),
    ];
    for (name, body, want) in cases {
        let f = write(dir.path(), name, &body);
        let mut a = HB.to_vec();
        a.extend_from_slice(&["kunpeng920-node", "--cost-profile", &f]);
        let e = fails(&a);
        let prefix = format!("schedlab: error: --cost-profile: {f}: {want}");
        assert!(e.starts_with(&prefix), "{e}\nwanted {prefix}");
    }
    let mut a = HB.to_vec();
    a.extend_from_slice(&["kunpeng920-node", "--cost-profile", "/nonexistent.toml"]);
    let e = fails(&a);
    assert!(
        e.trim_end() == "schedlab: error: --cost-profile: /nonexistent.toml: (file): missing file",
        "{e}"
    );
}

#[test]
fn experiments_take_a_cost_profile() {
    let dir = tempfile::tempdir().unwrap();
    let text = run(&["costs", "show", "kunpeng920-node", "--toml"]);
    let slow = write(
        dir.path(),
        "slow.toml",
        &set(&text, "pipe_syscall_ns", "5000"),
    );
    let exp = format!(
        "name = \"cp\"\niterations = 1\n[run]\nmachine = \"kunpeng920-node\"\nbenchmark = \"hackbench\"\npipe = true\nthreads = true\ngroups = 2\nloops = 50\n\
         [[variant]]\nname = \"preset\"\n[[variant]]\nname = \"slow\"\ncost_profile = {slow:?}\n"
    );
    let f = write(dir.path(), "cp.toml", &exp);
    let csv = dir.path().join("cp.csv");
    run(&["compare", &f, "--csv", csv.to_str().unwrap(), "--jobs", "1"]);
    let rows = std::fs::read_to_string(&csv).unwrap();
    let col = rows
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "time")
        .unwrap();
    let times: Vec<f64> = rows
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    assert_eq!(times.len(), 2, "{rows}");
    assert!(times[1] > 2.0 * times[0], "{rows}");
    // a native variant may not name one
    let bad = exp.replace("name = \"slow\"", "name = \"slow\"\nmode = \"native\"");
    let f = write(dir.path(), "bad.toml", &bad);
    let e = fails(&["compare", &f]);
    assert!(e.contains("cost_profile"), "{e}");
}

#[test]
fn calibrate_quick_writes_a_profile_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("host.toml");
    let out = run(&["calibrate", "--quick", "-o", f.to_str().unwrap()]);
    assert!(out.starts_with(&format!("wrote {}", f.display())), "{out}");
    assert!(out.contains("pipe_syscall_ns"), "{out}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.starts_with("# schedlab calibrate --quick"), "{text}");
    assert!(text.contains("machine = \"host\""));
    assert!(text.contains("# source: measured by schedlab calibrate: getppid"));
    // it loads, and a simulation of this host runs with it
    let v = json(&[
        "sim",
        "hackbench",
        "-p",
        "-g",
        "1",
        "-l",
        "20",
        "--machine",
        "host",
        "--cost-profile",
        f.to_str().unwrap(),
    ]);
    assert!(v["time_s"].as_f64().unwrap() > 0.0);
    // without -o the profile goes to stdout
    let text = run(&["calibrate", "--quick"]);
    assert!(text.contains("\nhz = "), "{text}");
}

/// A profile whose every figure is 0 (and `hz = 1`): tbench's loop then
/// takes no simulated time, and the run stops with one line naming the
/// cause instead of spinning forever at 0 s.
#[test]
fn a_zero_cost_profile_stops_when_time_stops_advancing() {
    let dir = tempfile::tempdir().unwrap();
    let text = run(&["costs", "show", "kunpeng920", "--toml"]);
    let zero: String = text
        .lines()
        .map(|l| {
            let Some((key, value)) = l.split_once(" = ") else {
                return format!("{l}\n");
            };
            let v = value.trim();
            let number = v.chars().next().is_some_and(|c| c.is_ascii_digit());
            let list = v.starts_with('[') && v[1..].starts_with(|c: char| c.is_ascii_digit());
            if key.trim() == "hz" {
                format!("{key} = 1\n")
            } else if number {
                format!("{key} = 0\n")
            } else if list {
                let n = v.matches(',').count() + 1;
                format!("{key} = [{}]\n", vec!["0"; n].join(", "))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let f = write(dir.path(), "zero.toml", &zero);
    let err = fails(&["sim", "tbench", "2", "-t", "1", "--cost-profile", &f]);
    assert!(err.contains("simulated time stopped advancing"), "{err}");
    assert!(err.contains("--cost-profile"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
