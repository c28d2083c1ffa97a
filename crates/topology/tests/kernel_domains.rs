//! The domains a real kernel built, against ours: every case under
//! fixtures/kernel-domains/<set>/<case>/ (the sysfs tree the kernel
//! exported and its `kernel_domains.txt`) is imported, its domains built
//! for the kernel the set names (`kernel-X.Y-domains*`) on the architecture
//! of its qemu command line, and the listing compared line by line.

use std::fs;
use std::path::{Path, PathBuf};
use topology::{from_sysfs, Arch, DomainOptions, SchedDomains};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel-domains")
}

/// `kernel-6.1-domains-arm64` -> (6, 1).
fn version_of(set: &str) -> (u32, u32) {
    let v = set
        .strip_prefix("kernel-")
        .and_then(|s| s.split('-').next())
        .unwrap_or_else(|| panic!("set {set:?} does not name a kernel"));
    let (a, b) = v.split_once('.').expect("X.Y");
    (a.parse().unwrap(), b.parse().unwrap())
}

/// The architecture from the qemu binary in `cmdline.txt`.
fn arch_of(case: &Path) -> Arch {
    let cmd = fs::read_to_string(case.join("cmdline.txt")).expect("cmdline.txt");
    if cmd.starts_with("qemu-system-x86_64") {
        Arch::X86
    } else {
        Arch::Generic
    }
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// Every case, as (set name, case dir).
fn cases() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for set in sorted_dirs(&fixtures()) {
        let name = set.file_name().unwrap().to_string_lossy().to_string();
        for case in sorted_dirs(&set) {
            if case.join("kernel_domains.txt").is_file() {
                out.push((name.clone(), case));
            }
        }
    }
    out
}

fn compare(set: &str, case: &Path) -> Vec<String> {
    let (major, minor) = version_of(set);
    let opts = DomainOptions {
        arch: arch_of(case),
        ..DomainOptions::linux(major, minor)
    };
    let topo = from_sysfs(&case.join("tree")).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let ours = SchedDomains::build(&topo, &opts).kernel_lines();
    let want = fs::read_to_string(case.join("kernel_domains.txt")).unwrap();
    let want: Vec<&str> = want.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut diffs = Vec::new();
    for i in 0..want.len().max(ours.len()) {
        let (w, o) = (want.get(i).copied(), ours.get(i).map(String::as_str));
        if w != o {
            diffs.push(format!(
                "{}: line {}\n  kernel:   {}\n  schedlab: {}",
                case.file_name().unwrap().to_string_lossy(),
                i + 1,
                w.unwrap_or("(none)"),
                o.unwrap_or("(none)")
            ));
        }
    }
    diffs
}

#[test]
fn every_fixture_matches_the_kernel_line_by_line() {
    let cases = cases();
    assert!(
        cases.len() >= 4,
        "expected the 6.1 x86 and arm64 cases, found {}",
        cases.len()
    );
    let diffs: Vec<String> = cases.iter().flat_map(|(s, c)| compare(s, c)).collect();
    assert!(
        diffs.is_empty(),
        "{} lines differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// The two shapes the issue found wrong, named so a regression says which.
#[test]
fn llc_spanning_nodes_and_ring_groups() {
    let set = "kernel-6.1-domains";
    for case in ["d_skx_1s8c_2node_llc_spans_nodes", "e_skx_8s2c_8node_ring"] {
        let diffs = compare(set, &fixtures().join(set).join(case));
        assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    }
}

/// Debian's own arm64 6.1 kernels are built without CONFIG_SCHED_CLUSTER:
/// on the same node they build MC only, with the 24 CPUs as groups.
#[test]
fn arm64_without_sched_cluster_builds_no_cls() {
    let case = fixtures().join("kernel-6.1-domains-arm64/kp920_1node_24c_schedcluster");
    let topo = from_sysfs(&case.join("tree")).unwrap();
    let mut opts = DomainOptions::linux(6, 1);
    opts.set_config(topology::ConfigOption::SchedCluster, false);
    let sd = SchedDomains::build(&topo, &opts);
    let names: Vec<_> = sd.domains(0).iter().map(|d| d.name).collect();
    assert_eq!(names, ["MC"]);
    assert_eq!(sd.domains(5)[0].groups.len(), 24);
}

#[test]
fn versions_are_read_from_set_names() {
    assert_eq!(version_of("kernel-6.1-domains"), (6, 1));
    assert_eq!(version_of("kernel-6.12-domains-arm64"), (6, 12));
}
