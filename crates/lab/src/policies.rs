//! Placement policies outside the Linux path, registered by name so that an
//! experiment file can run them: `policy = "NAME"` in the run table or a
//! variant, with the policy's options in `policy_options = { KEY = VALUE }`
//! (a TOML table, merged key by key like `features`; a variant's
//! `policy_options = {}` clears the run table's).
//!
//! A program that links its own policy registers it once, before it parses
//! an experiment:
//!
//! ```
//! use std::sync::Arc;
//! use sim::placement::{Decision, Placement, PolicyFactory, Stage, WakeEnv, WakeRequest};
//! use topology::{SchedDomains, Topology};
//!
//! /// Always the previous CPU.
//! struct Stay;
//! impl Placement for Stay {
//!     fn name(&self) -> String { "stay".into() }
//!     fn select_task_rq(&mut self, _: &mut WakeEnv, req: WakeRequest) -> Decision {
//!         Decision { cpu: req.prev_cpu, stage: Stage::Policy0 }
//!     }
//!     fn stage_names(&self) -> &'static [&'static str] { &["stay"] }
//! }
//! struct StayFactory;
//! impl PolicyFactory for StayFactory {
//!     fn name(&self) -> &str { "stay" }
//!     fn build(&self, _: &Topology, _: &SchedDomains) -> Box<dyn Placement> { Box::new(Stay) }
//! }
//!
//! lab::policies::register("stay", |options| {
//!     if let Some(k) = options.keys().next() {
//!         return Err(format!("{k}: stay has no options"));
//!     }
//!     Ok(Arc::new(StayFactory))
//! })?;
//! assert!(lab::policies::names().contains(&"stay".to_string()));
//! # Ok::<(), lab::policies::PolicyError>(())
//! ```
//!
//! Such a run is a sched_ext-like run ([`sim::placement::PolicyFactory`]):
//! no load balancer, the default sched domains, the run's EEVDF parameters.
//! The run log's fingerprint holds the policy's name and options, not its
//! code: change the code, and `--resume` would mix runs of the two
//! versions (use a new log).

use sim::placement::PolicyFactory;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use toml::Table;

/// Makes a policy's factory from its options (the variant's
/// `policy_options`; an empty table without). An `Err` says what is wrong
/// with them, on one line, starting with the option's name.
pub type MakeFactory = dyn Fn(&Table) -> Result<Arc<dyn PolicyFactory>, String> + Send + Sync;

/// The names of the policies built into the simulator (`RunSpec::policy`).
pub const BUILTIN: [&str; 2] = ["linux", "scx"];

/// A policy that cannot be registered or built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No policy of this name.
    #[error("unknown policy {name:?} (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A name that cannot be registered.
    #[error("cannot register a policy named {name:?}: {why}")]
    BadName {
        /// The name.
        name: String,
        /// Why not.
        why: &'static str,
    },
    /// The policy refused its options.
    #[error("{0}")]
    Options(String),
}

fn registry() -> &'static Mutex<BTreeMap<String, Arc<MakeFactory>>> {
    static R: OnceLock<Mutex<BTreeMap<String, Arc<MakeFactory>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// The registry, locked (a panic elsewhere while it was held leaves the
/// map whole: registering is one insert).
fn lock() -> std::sync::MutexGuard<'static, BTreeMap<String, Arc<MakeFactory>>> {
    registry().lock().unwrap_or_else(|e| e.into_inner())
}

/// Register the policy `name` for this process: `make` builds its factory
/// from a run's options. Registering a name again replaces the earlier
/// policy. A name is letters, digits, `-`, `_` and `.`, and not one of
/// [`BUILTIN`].
pub fn register<F>(name: &str, make: F) -> Result<(), PolicyError>
where
    F: Fn(&Table) -> Result<Arc<dyn PolicyFactory>, String> + Send + Sync + 'static,
{
    let bad = |why| PolicyError::BadName {
        name: name.to_string(),
        why,
    };
    if name.is_empty() {
        return Err(bad("the name is empty"));
    }
    if BUILTIN.contains(&name) {
        return Err(bad("the simulator's own policy has this name"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(bad("use letters, digits, '-', '_' and '.' only"));
    }
    lock().insert(name.to_string(), Arc::new(make));
    Ok(())
}

/// Every policy name an experiment may use: the built-in ones, then the
/// registered ones in name order.
pub fn names() -> Vec<String> {
    BUILTIN
        .iter()
        .map(|s| s.to_string())
        .chain(lock().keys().cloned())
        .collect()
}

/// Whether `name` is a registered policy (not a built-in one).
pub fn is_registered(name: &str) -> bool {
    lock().contains_key(name)
}

/// The factory of the registered policy `name` with `options`.
pub fn factory(name: &str, options: &Table) -> Result<Arc<dyn PolicyFactory>, PolicyError> {
    // not called with the lock held: `make` may look at the registry
    let make = lock().get(name).cloned();
    match make {
        Some(make) => make(options).map_err(PolicyError::Options),
        None => Err(PolicyError::Unknown {
            name: name.to_string(),
            known: names().join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::placement::{Decision, Placement, Stage, WakeEnv, WakeRequest};
    use topology::{SchedDomains, Topology};

    struct Prev;
    impl Placement for Prev {
        fn name(&self) -> String {
            "test-prev".into()
        }
        fn select_task_rq(&mut self, _: &mut WakeEnv, req: WakeRequest) -> Decision {
            Decision {
                cpu: req.prev_cpu,
                stage: Stage::Policy0,
            }
        }
    }
    struct PrevFactory;
    impl PolicyFactory for PrevFactory {
        fn name(&self) -> &str {
            "test-prev"
        }
        fn build(&self, _: &Topology, _: &SchedDomains) -> Box<dyn Placement> {
            Box::new(Prev)
        }
    }

    #[test]
    fn registered_policies_are_listed_and_built_with_their_options() {
        register("test-registry-prev", |o: &Table| match o.get("x") {
            None => Ok(Arc::new(PrevFactory) as Arc<dyn PolicyFactory>),
            Some(v) => Err(format!("x: expected nothing, got {v}")),
        })
        .unwrap();
        assert!(is_registered("test-registry-prev"));
        let n = names();
        assert_eq!(&n[..2], ["linux", "scx"]);
        assert!(n.contains(&"test-registry-prev".to_string()));
        let f = factory("test-registry-prev", &Table::new()).unwrap();
        assert_eq!(f.name(), "test-prev");
        assert_eq!(format!("{f:?}"), "PolicyFactory(\"test-prev\")");
        let mut o = Table::new();
        o.insert("x".into(), 3.into());
        assert_eq!(
            factory("test-registry-prev", &o).unwrap_err().to_string(),
            "x: expected nothing, got 3"
        );
    }

    #[test]
    fn unknown_and_reserved_names_are_refused() {
        let e = factory("no-such-policy", &Table::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown policy \"no-such-policy\" (known: linux, scx"),
            "{e}"
        );
        let make = |_: &Table| Ok(Arc::new(PrevFactory) as Arc<dyn PolicyFactory>);
        for (name, why) in [
            ("linux", "own policy"),
            ("", "empty"),
            ("a b", "letters, digits"),
        ] {
            let e = register(name, make).unwrap_err().to_string();
            assert!(e.contains(why), "{name:?}: {e}");
        }
        assert!(!is_registered("linux"));
    }
}
