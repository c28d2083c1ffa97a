//! `schedlab topology ...` end to end.

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn show_json(args: &[&str]) -> Value {
    let out = schedlab()
        .args(["topology", "show"])
        .args(args)
        .arg("--json")
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn level_names(v: &Value) -> Vec<String> {
    v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect()
}

fn level<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no {name} level"))
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topology/fixtures")
}

#[test]
fn list_names_every_preset() {
    let out = schedlab().args(["topology", "list"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for (name, _) in topology::presets() {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing from:\n{text}"
        );
    }
}

#[test]
fn kunpeng920_json() {
    let v = show_json(&["kunpeng920"]);
    assert_eq!(v["name"], "kunpeng920");
    assert_eq!(v["nr_cpus"], 96);
    assert_eq!(v["llc_size"], 24);
    assert_eq!(v["cluster_size"], 4);
    assert_eq!(v["smt_present"], false);
    assert_eq!(v["cluster_active"], true);
    assert_eq!(v["nr_nodes"], 4);
    assert_eq!(v["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(v["distance"][1][3], 24);
    let names = level_names(&v);
    assert!(!names.contains(&"SMT".to_string()), "{names:?}");
    assert_eq!(names[..2], ["CLS", "MC"]);
    assert_eq!(level(&v, "CLS")["span_weight"], serde_json::json!([4]));
    assert_eq!(level(&v, "MC")["span_weight"], serde_json::json!([24]));
    let cls_flags = level(&v, "CLS")["flags"].as_array().unwrap();
    assert!(cls_flags.contains(&"CLUSTER".into()) && cls_flags.contains(&"SHARE_LLC".into()));
    // Two distinct NUMA shapes: nodes 0/2 and nodes 1/3.
    assert_eq!(v["shapes"].as_array().unwrap().len(), 2);
}

#[test]
fn default_preset_is_kunpeng920() {
    assert_eq!(show_json(&[])["name"], "kunpeng920");
}

#[test]
fn power9_json() {
    let v = show_json(&["power9-smt8"]);
    assert_eq!(v["nr_cpus"], 96);
    assert_eq!(level(&v, "SMT")["span_weight"], serde_json::json!([4]));
    assert_eq!(level(&v, "MC")["span_weight"], serde_json::json!([8]));
    assert_eq!(v["llc_size"], 8);
    assert_eq!(v["smt_present"], true);
    assert_eq!(level_names(&v), ["SMT", "MC", "PKG"]);
}

#[test]
fn imports_match_presets() {
    let sys = show_json(&[
        "--sysfs",
        fixtures().join("sysfs/xeon-12c24t").to_str().unwrap(),
    ]);
    let xml = show_json(&[
        "--hwloc",
        fixtures().join("hwloc/xeon-12c24t.xml").to_str().unwrap(),
    ]);
    let pre = show_json(&["xeon-12c24t"]);
    for key in [
        "nr_cpus",
        "levels",
        "shapes",
        "distance",
        "llc_size",
        "smt_present",
    ] {
        assert_eq!(sys[key], pre[key], "sysfs {key}");
        assert_eq!(xml[key], pre[key], "hwloc {key}");
    }
}

fn one_line_error(args: &[&str], needle: &str) {
    let out = schedlab().args(args).assert().code(2);
    let out = out.get_output();
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{err:?} does not contain {needle:?}");
}

#[test]
fn unknown_preset_exits_2_with_one_line() {
    one_line_error(&["topology", "show", "cray-1"], "unknown preset \"cray-1\"");
    one_line_error(&["topology", "show", "cray-1"], "kunpeng920");
}

#[test]
fn bad_sysfs_dir_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    one_line_error(
        &["topology", "show", "--sysfs", d],
        "sys/devices/system/cpu: not a directory",
    );
    std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).unwrap();
    std::fs::write(dir.path().join("sys/devices/system/cpu/online"), "0-1,zz\n").unwrap();
    one_line_error(
        &["topology", "show", "--sysfs", d],
        "cpu/online: bad CPU list",
    );
}

#[test]
fn bad_hwloc_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m.xml");
    std::fs::write(&f, "<topology><object type=\"PU\"").unwrap();
    one_line_error(
        &["topology", "show", "--hwloc", f.to_str().unwrap()],
        "m.xml: not valid XML",
    );
}

#[test]
fn preset_and_import_flag_conflict() {
    one_line_error(
        &["topology", "show", "altra", "--sysfs", "/"],
        "cannot be used with",
    );
}

#[test]
fn text_kunpeng920_node() {
    let out = schedlab()
        .args(["topology", "show", "kunpeng920-node"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!(text);
}

#[test]
fn text_shows_smt_cores_and_numa_distances() {
    let out = schedlab()
        .args(["topology", "show", "xeon-12c24t"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("package 0 = node 0 = LLC 0 [CPUs 0-5,12-17]  (L3 12M)"),
        "{text}"
    );
    assert!(
        text.contains("cores (threads): 0,12 1,13 2,14 3,15 4,16 5,17"),
        "{text}"
    );
    assert!(text.contains("  NUMA    20    24      2  117"), "{text}");
}

#[test]
fn older_kernel_options() {
    let v = show_json(&["kunpeng920-node", "--no-cls"]);
    assert_eq!(level_names(&v), ["MC"]);
    assert_eq!(v["cluster_active"], false);
    let v = show_json(&["kunpeng920-node", "--no-sd-cluster"]);
    assert_eq!(level_names(&v), ["CLS", "MC"]);
    assert_eq!(v["cluster_active"], false);
    assert!(!level(&v, "CLS")["flags"]
        .as_array()
        .unwrap()
        .contains(&"CLUSTER".into()));
    let v = show_json(&["xeon-12c24t", "--imbalance-pct", "125"]);
    assert_eq!(level(&v, "NUMA")["imbalance_pct"], 125);
    assert_eq!(level(&v, "MC")["imbalance_pct"], 117);
    one_line_error(
        &["topology", "show", "--imbalance-pct", "7"],
        "--imbalance-pct",
    );
}

fn kernel_fixture(set: &str, case: &str) -> PathBuf {
    fixtures().join("kernel-domains").join(set).join(case)
}

fn stdout(args: &[&str]) -> String {
    let out = schedlab().args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

/// `--domains` prints what the booted kernel showed, byte for byte.
#[test]
fn domains_of_case_a_are_the_kernels() {
    let case = kernel_fixture("kernel-6.1-domains", "a_skx_2s2c2t_2node");
    let tree = case.join("tree");
    let ours = stdout(&[
        "topology",
        "show",
        "--sysfs",
        tree.to_str().unwrap(),
        "--domains",
        "--kernel",
        "linux-6.1",
    ]);
    let kernel = std::fs::read_to_string(case.join("kernel_domains.txt")).unwrap();
    assert_eq!(ours, kernel);
}

#[test]
fn domains_json_has_groups_balance_masks_and_parameters() {
    let case = kernel_fixture("kernel-6.1-domains", "e_skx_8s2c_8node_ring");
    let v = show_json(&[
        "--sysfs",
        case.join("tree").to_str().unwrap(),
        "--domains",
        "--kernel",
        "linux-6.1",
        "--arch",
        "x86",
    ]);
    assert_eq!(v["kernel"], "linux-6.1");
    assert_eq!(v["arch"], "x86");
    assert_eq!(v["config"]["SCHED_CLUSTER"], true);
    let cpu0 = &v["cpus"][0]["domains"];
    let d2 = &cpu0[2];
    assert_eq!(d2["name"], "NUMA");
    assert_eq!(d2["span"], "0-5,12-15");
    let groups: Vec<(&str, &str)> = d2["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["span"].as_str().unwrap(),
                g["balance_mask"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [("0-3,14-15", "0-1"), ("4-5", "4-5"), ("12-13", "12-13")]
    );
    assert_eq!(d2["cache_nice_tries"], 2);
    assert_eq!(d2["busy_factor"], 16);
    assert_eq!(
        (d2["min_interval_ms"].clone(), d2["max_interval_ms"].clone()),
        (10.into(), 20.into())
    );
    assert_eq!(cpu0[0]["name"], "MC");
    assert_eq!(cpu0[0]["cache_nice_tries"], 1);
    assert!(cpu0[0]["flags"]
        .as_array()
        .unwrap()
        .contains(&"SHARE_PKG_RESOURCES".into()));
}

#[test]
fn kernel_version_names_levels_and_flags() {
    let v = show_json(&["power9-smt8", "--kernel", "linux-6.1"]);
    assert_eq!(level_names(&v), ["SMT", "MC", "DIE"]);
    assert!(level(&v, "MC")["flags"]
        .as_array()
        .unwrap()
        .contains(&"SHARE_PKG_RESOURCES".into()));
    let v = show_json(&["power9-smt8", "--kernel", "linux-6.7"]);
    assert_eq!(level_names(&v), ["SMT", "MC", "PKG"]);
    let v = show_json(&["xeon-12c24t", "--kernel", "linux-5.4"]);
    assert_eq!(level(&v, "NUMA")["imbalance_pct"], 125);
    assert!(level(&v, "NUMA")["flags"]
        .as_array()
        .unwrap()
        .contains(&"LOAD_BALANCE".into()));
}

/// Debian's arm64 kernels: the fixture node without CONFIG_SCHED_CLUSTER
/// builds MC only.
#[test]
fn kernel_config_removes_the_cls_level() {
    let case = kernel_fixture("kernel-6.1-domains-arm64", "kp920_1node_24c_schedcluster");
    let tree = case.join("tree");
    let tree = tree.to_str().unwrap();
    let with = show_json(&["--sysfs", tree, "--kernel", "linux-6.1"]);
    assert_eq!(level_names(&with), ["CLS", "MC"]);
    let without = show_json(&[
        "--sysfs",
        tree,
        "--kernel",
        "linux-6.1",
        "--kernel-config",
        "SCHED_CLUSTER=n",
    ]);
    assert_eq!(level_names(&without), ["MC"]);
    assert_eq!(without["kernel"], "linux-6.1+SCHED_CLUSTER=n");
    assert_eq!(without["config"]["SCHED_CLUSTER"], false);
    let lines = stdout(&[
        "topology",
        "show",
        "--sysfs",
        tree,
        "--domains",
        "--kernel",
        "linux-6.1",
        "--kernel-config",
        "CONFIG_SCHED_CLUSTER=n",
    ]);
    assert_eq!(lines.lines().count(), 24);
    assert!(lines.lines().all(|l| l.contains(" name=MC ")));
}

#[test]
fn bad_kernel_choices_exit_2_with_one_line() {
    one_line_error(
        &["topology", "show", "--kernel-config", "SCHED_FOO=y"],
        "unknown kernel config option 'SCHED_FOO'",
    );
    one_line_error(
        &["topology", "show", "--kernel-config", "NUMA=m"],
        "bad value 'm'",
    );
    one_line_error(
        &["topology", "show", "--kernel-config", "NUMA"],
        "expected NAME=y|n",
    );
    one_line_error(&["topology", "show", "--kernel", "linux-2.6"], "--kernel");
    one_line_error(&["topology", "show", "--arch", "sparc"], "--arch");
}

/// The build options are listed with the kernels and accepted by `sim`.
#[test]
fn sim_lists_and_accepts_kernel_config() {
    let k = stdout(&["sim", "--list-kernels"]);
    for name in ["SCHED_SMT", "SCHED_CLUSTER", "SCHED_MC", "NUMA"] {
        assert!(
            k.lines().any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing from:\n{k}"
        );
    }
    let v: Value = serde_json::from_str(&stdout(&[
        "sim",
        "hackbench",
        "-g",
        "1",
        "-f",
        "2",
        "-l",
        "5",
        "--kernel",
        "linux-6.1",
        "--kernel-config",
        "SCHED_CLUSTER=n",
        "--json",
    ]))
    .unwrap();
    assert!(v.is_object());
    one_line_error(
        &["sim", "hackbench", "--kernel-config", "SCHED_MC=maybe"],
        "--kernel-config SCHED_MC=maybe",
    );
}

/// A closed stdout (`| head`) is not an error: no message, exit status 0.
#[test]
fn closed_stdout_stops_quietly() {
    use std::io::Read;
    use std::process::{Command as StdCommand, Stdio};
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(["topology", "show", "sapphire-rapids", "--domains"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // the read end is dropped here: further writes fail with EPIPE
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit status {:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--sysfs` takes the sysfs mount itself (`/sys`: DIR/devices/system/cpu)
/// as well as the directory above its `sys/` (`/`), and reads the same
/// machine from both; a directory that is neither is one line naming it.
#[test]
fn sysfs_takes_the_mount_or_the_directory_above_it() {
    let root = fixtures().join("sysfs/xeon-12c24t");
    let above = show_json(&["--sysfs", root.to_str().unwrap()]);
    let mount = show_json(&["--sysfs", root.join("sys").to_str().unwrap()]);
    assert_eq!(mount["nr_cpus"], 24);
    for (key, v) in above.as_object().unwrap() {
        if key != "name" {
            assert_eq!(&mount[key], v, "{key}");
        }
    }
    // as a machine anywhere one is taken
    let m = format!("sysfs:{}", root.join("sys").display());
    let v = show_json(&[&m]);
    assert_eq!(v["levels"], above["levels"]);
    let dir = tempfile::tempdir().unwrap();
    one_line_error(
        &["topology", "show", "--sysfs", dir.path().to_str().unwrap()],
        "sys/devices/system/cpu: not a directory (give the sysfs mount, e.g. /sys, or the directory above its sys/)",
    );
}
