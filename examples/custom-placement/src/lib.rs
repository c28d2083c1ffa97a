//! `prev-or-idle`: a wake-up placement policy in one file, the example of
//! README.md (the guide to writing one).
//!
//! The policy keeps a waking task on the CPU it last ran on when that CPU
//! is idle; else it takes the first idle CPU of that CPU's LLC, scanning
//! from the CPU after it (as select_idle_cpu in kernel/sched/fair.c walks
//! the LLC with `for_each_cpu_wrap(cpu, cpus, target + 1)`), at most
//! `scan_limit` CPUs; else it stays on the previous CPU. No wake_affine (the
//! waker's CPU is never a candidate), no idle-core search, no hint: every
//! probe is a read of another CPU's run queue, charged through the
//! cache-line model.
//!
//! Its three stages are its own ([`STAGES`]: `prev_cpu_idle`, `llc_idle`,
//! `stay`), and its one option is `scan_limit`. [`register`] makes it
//! `policy = "prev-or-idle"` for the experiments of this process.
#![warn(missing_docs)]

use sim::placement::{Decision, Placement, PolicyFactory, Stage, WakeEnv, WakeRequest};
use std::sync::Arc;
use topology::{SchedDomains, Topology};

/// The name experiments give the policy (`policy = "prev-or-idle"`).
pub const NAME: &str = "prev-or-idle";

/// The policy's stages, as reports name them: entry `i` is the stage
/// [`Stage::policy`]`(i)`.
pub const STAGES: &[&str] = &["prev_cpu_idle", "llc_idle", "stay"];
/// prev_cpu was idle.
const PREV_IDLE: Stage = Stage::Policy0;
/// An idle CPU of prev's LLC.
const LLC_IDLE: Stage = Stage::Policy1;
/// Nothing idle was found within the limit: prev.
const STAY: Stage = Stage::Policy2;

/// The policy's options (`policy_options = { scan_limit = 4 }`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The most CPUs of the LLC probed after prev (None: the whole LLC;
    /// 0: none, prev or nothing).
    pub scan_limit: Option<usize>,
}

impl Options {
    /// The options from a variant's `policy_options`; an error names the
    /// option and says what was expected, on one line.
    pub fn from_toml(t: &toml::Table) -> Result<Options, String> {
        let mut o = Options::default();
        for (k, v) in t {
            match k.as_str() {
                "scan_limit" => {
                    let n = v
                        .as_integer()
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| format!("scan_limit: expected an integer >= 0, got {v}"))?;
                    o.scan_limit = Some(n);
                }
                other => return Err(format!("unknown option {other:?} (known: scan_limit)")),
            }
        }
        Ok(o)
    }
}

/// The policy of one run.
#[derive(Clone, Debug)]
pub struct PrevOrIdle {
    options: Options,
}

impl PrevOrIdle {
    /// The policy with `options`.
    pub fn new(options: Options) -> Self {
        PrevOrIdle { options }
    }
}

impl Placement for PrevOrIdle {
    fn name(&self) -> String {
        NAME.into()
    }

    fn stage_names(&self) -> &'static [&'static str] {
        STAGES
    }

    fn select_task_rq(&mut self, env: &mut WakeEnv, req: WakeRequest) -> Decision {
        let prev = req.prev_cpu;
        let task = req.task as usize;
        // p->cpus_ptr: the task's own field, no remote read
        let allowed = |env: &WakeEnv, cpu: usize| env.task(task).cpus_allowed.test(cpu);
        // available_idle_cpu (kernel/sched/core.c): a charged read of
        // prev's run queue
        if allowed(env, prev) && env.available_idle_cpu(prev) {
            return Decision {
                cpu: prev,
                stage: PREV_IDLE,
            };
        }
        // the topology is not per-CPU state: reading it costs nothing
        let topo = env.topo;
        let limit = self.options.scan_limit.unwrap_or(usize::MAX);
        let mut probed = 0;
        for cpu in topo.llc_mask(prev).iter_wrap(prev + 1) {
            if probed == limit {
                break;
            }
            if cpu == prev || !allowed(env, cpu) {
                continue;
            }
            probed += 1;
            if env.available_idle_cpu(cpu) {
                return Decision {
                    cpu,
                    stage: LLC_IDLE,
                };
            }
        }
        // prev even when it is not allowed: the kernel's
        // select_fallback_rq then picks an allowed CPU
        Decision {
            cpu: prev,
            stage: STAY,
        }
    }
}

/// Builds [`PrevOrIdle`] for each run, with the options of its variant.
#[derive(Clone, Debug, Default)]
pub struct Factory {
    /// The options every policy it builds has.
    pub options: Options,
}

impl PolicyFactory for Factory {
    fn name(&self) -> &str {
        NAME
    }

    fn build(&self, _topo: &Topology, _sd: &SchedDomains) -> Box<dyn Placement> {
        Box::new(PrevOrIdle::new(self.options))
    }
}

/// Register the policy as [`NAME`] for this process's experiments
/// (registering again replaces it).
pub fn register() -> Result<(), lab::policies::PolicyError> {
    lab::policies::register(NAME, |options| {
        let options = Options::from_toml(options)?;
        Ok(Arc::new(Factory { options }) as Arc<dyn PolicyFactory>)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        let t = |s: &str| -> toml::Table { s.parse().unwrap() };
        assert_eq!(
            Options::from_toml(&t("scan_limit = 4")),
            Ok(Options {
                scan_limit: Some(4)
            })
        );
        assert_eq!(Options::from_toml(&t("")), Ok(Options::default()));
        assert_eq!(
            Options::from_toml(&t("scan_limit = -1")).unwrap_err(),
            "scan_limit: expected an integer >= 0, got -1"
        );
        assert_eq!(
            Options::from_toml(&t("scan = 1")).unwrap_err(),
            "unknown option \"scan\" (known: scan_limit)"
        );
    }
}
