//! prev-or-idle run through the lab crate as an experiment runs it: its own
//! stages count every decision, its decisions are not Linux's, its options
//! reach it, and the comparison the program prints is the same every time.

use lab::workload::HackbenchSpec;
use lab::{Policy, RunSpec, WorkloadSpec};
use sim::run::SimResult;

/// hackbench -p -T -g 2 -f 10 -l 50 on one Kunpeng 920 node, under `policy`.
fn spec(policy: Policy, options: &str) -> RunSpec {
    RunSpec {
        policy,
        policy_options: options.parse().expect("a TOML table"),
        ..RunSpec::new(WorkloadSpec::Hackbench(HackbenchSpec {
            pipe: true,
            threads: true,
            groups: 2,
            fds: 10,
            loops: 50,
            ..Default::default()
        }))
    }
}

fn simulate(policy: Policy, options: &str) -> SimResult {
    custom_placement::register().unwrap();
    lab::exec::simulate(&spec(policy, options)).unwrap().result
}

fn custom(options: &str) -> SimResult {
    simulate(Policy::Custom(custom_placement::NAME.into()), options)
}

#[test]
fn the_policys_own_stages_count_every_decision() {
    let r = custom("");
    let p = &r.placement;
    assert_eq!(p.policy, "prev-or-idle");
    for name in p.stages.keys() {
        assert!(
            custom_placement::STAGES.contains(&name.as_str()),
            "stage {name} is not the policy's: {:?}",
            p.stages
        );
    }
    // each of the three outcomes happens on this run
    for stage in custom_placement::STAGES {
        assert!(
            p.stages.get(*stage).copied().unwrap_or(0) > 0,
            "{stage}: {:?}",
            p.stages
        );
    }
    // every decision the wake-up path made (a delayed task woken where it
    // is queued makes none) went through one of them
    let decisions: u64 = p.stages.values().sum();
    assert_eq!(decisions, r.counters.wakeups - r.counters.wakeups_in_place);
    assert_eq!(decisions, p.probes_per_wakeup.count);
    // the JSON record holds the same names
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["placement"]["stages"]["prev_cpu_idle"],
        serde_json::json!(p.stages["prev_cpu_idle"])
    );
    assert!(json["placement"]["stages"].get("policy0").is_none());
}

#[test]
fn its_decisions_are_not_linuxs() {
    let mine = custom("");
    let linux = simulate(Policy::Linux, "");
    assert_ne!(
        mine.placement.decision_digest,
        linux.placement.decision_digest
    );
    assert!(linux
        .placement
        .stages
        .keys()
        .all(|k| !k.starts_with("policy")));
    // and a run is a function of its specification
    assert_eq!(
        mine.placement.decision_digest,
        custom("").placement.decision_digest
    );
}

#[test]
fn scan_limit_bounds_the_probes() {
    // no scan: one probe a decision (prev), and nothing found in the LLC
    let r = custom("scan_limit = 0");
    let p = &r.placement;
    assert_eq!(p.stages.get("llc_idle"), None, "{:?}", p.stages);
    assert!(p.stages["stay"] > 0);
    assert_eq!(p.probes, p.probes_per_wakeup.count);
    // at most prev and two others
    let r = custom("scan_limit = 2");
    assert!(r.placement.probes_per_wakeup.max <= 3);
    assert!(custom("").placement.probes_per_wakeup.max > 3);
}

#[test]
fn a_bad_option_names_the_variant_and_the_option() {
    custom_placement::register().unwrap();
    let text = r#"
name = "bad"
[run]
benchmark = "hackbench"
[[variant]]
name = "mine"
policy = "prev-or-idle"
policy_options = { scan_limit = -1 }
"#;
    let e = lab::Experiment::parse("bad.toml", text, false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "bad.toml: variant \"mine\": policy_options: policy prev-or-idle: scan_limit: expected an integer >= 0, got -1"
    );
}

/// A policy whose one stage has a Linux stage's name.
mod clashing {
    use sim::placement::{Decision, Placement, PolicyFactory, Stage, WakeEnv, WakeRequest};
    use std::sync::Arc;
    use topology::{SchedDomains, Topology};

    struct Clashing;
    impl Placement for Clashing {
        fn name(&self) -> String {
            "clashing".into()
        }
        fn select_task_rq(&mut self, _: &mut WakeEnv, req: WakeRequest) -> Decision {
            Decision {
                cpu: req.prev_cpu,
                stage: Stage::Policy0,
            }
        }
        fn stage_names(&self) -> &'static [&'static str] {
            &["prev_idle"]
        }
    }
    struct Factory;
    impl PolicyFactory for Factory {
        fn name(&self) -> &str {
            "clashing"
        }
        fn build(&self, _: &Topology, _: &SchedDomains) -> Box<dyn Placement> {
            Box::new(Clashing)
        }
    }

    pub fn register() {
        lab::policies::register("clashing", |_| {
            Ok(Arc::new(Factory) as Arc<dyn PolicyFactory>)
        })
        .unwrap();
    }
}

#[test]
fn a_stage_name_of_the_linux_path_is_refused_on_one_line() {
    clashing::register();
    let why = "policy clashing: stage name \"prev_idle\" (stage 0): the Linux wake-up path has a stage of this name (their counts would merge in reports); choose another";
    // the experiment fails before any run, naming the variant
    let text = r#"
name = "bad"
[run]
benchmark = "hackbench"
[[variant]]
name = "mine"
policy = "clashing"
"#;
    let e = lab::Experiment::parse("bad.toml", text, false)
        .unwrap_err()
        .to_string();
    assert_eq!(e, format!("bad.toml: variant \"mine\": policy: {why}"));
    // a run made without an experiment is refused the same way
    let e = lab::exec::simulate(&spec(Policy::Custom("clashing".into()), ""))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.ends_with(why), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn the_comparison_is_printed_the_same_every_time() {
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_custom-placement"))
            .arg("--quick")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run();
    assert_eq!(first, run());
    // the verdict first, then the table has the three variants and the
    // policy's stages
    assert!(first.starts_with("Verdict on prev-or-idle: "), "{first}");
    for needle in [
        "linux",
        "scx",
        "or-idle",
        "\nstage-llc_idle:",
        "\nstage-stay:",
        "\ntime:",
    ] {
        assert!(first.contains(needle), "{needle:?} missing:\n{first}");
    }
}
