//! `schedlab compare ... --html FILE`: the facts of the experiment the page
//! states (the page itself is `report::html`, which runs nothing).

use lab::{Experiment, Mode, Policy};
use report::html::HtmlPage;
use std::collections::BTreeSet;

/// The page's facts, internals and footer for `exp`.
pub fn page(exp: &Experiment) -> HtmlPage {
    let mut facts = vec![("experiment".to_string(), {
        let mut s = exp.name.clone();
        if exp.quick {
            s.push_str(" (--quick: scaled down)");
        }
        s
    })];
    if let Some(src) = &exp.source {
        facts.push(("source".into(), src.clone()));
    }
    let machines: BTreeSet<String> = exp
        .cells()
        .map(|c| {
            let s = &c.spec;
            if s.mode == Mode::Native {
                return "this host (native runs)".to_string();
            }
            let mut m = s.machine.clone();
            if let Some(n) = s.node {
                m.push_str(&format!(", node {n}"));
            }
            if let Some(cpus) = &s.cpus {
                m.push_str(&format!(", CPUs {cpus}"));
            }
            m
        })
        .collect();
    facts.push((
        "machine".into(),
        machines.into_iter().collect::<Vec<_>>().join("; "),
    ));
    for (i, v) in exp.variants.iter().enumerate() {
        let cell = (exp.npoints() > 0)
            .then(|| exp.cell_spec(i, 0).ok())
            .flatten();
        let what = match cell.as_ref() {
            Some(s) if s.mode == Mode::Sim && s.policy == Policy::Linux => {
                format!(
                    "simulated, kernel {}",
                    s.kernel_name().unwrap_or_else(|_| s.kernel.clone())
                )
            }
            Some(s) if s.mode == Mode::Sim => "simulated, sched_ext default pick".to_string(),
            Some(s) if s.mode == Mode::Kernel => format!(
                "a real kernel ({}) booted under qemu on the machine",
                if s.kernel == "latest" {
                    "the image given".to_string()
                } else {
                    s.kernel.clone()
                }
            ),
            Some(_) => "native, this host's kernel".to_string(),
            None => format!("{:?}", v.mode).to_lowercase(),
        };
        let label = if i == 0 { "baseline" } else { "variant" };
        facts.push((label.into(), format!("{}: {what}", v.name)));
    }
    if let Some(c) = exp.cells().next() {
        let w = serde_json::to_value(&c.spec.workload).unwrap_or_default();
        let mut s = w["benchmark"].as_str().unwrap_or("?").to_string();
        if let Some(o) = w.as_object() {
            for (k, v) in o.iter().filter(|(k, _)| *k != "benchmark") {
                if !exp.axes.contains(k) {
                    s.push_str(&format!(" {k}={v}"));
                }
            }
        }
        facts.push(("workload".into(), s));
    }
    if !exp.axes.is_empty() {
        let keys: Vec<String> = (0..exp.npoints()).map(|p| exp.point_key(p)).collect();
        facts.push((
            "sweep".into(),
            format!("{} = {}", exp.axes.join("-"), keys.join(", ")),
        ));
    }
    facts.push(("iterations".into(), exp.iterations.to_string()));
    facts.push(("base seed".into(), exp.seed.to_string()));
    let v = crate::cmd_sim::provenance();
    let generator = format!(
        "schedlab {} (commit {})",
        v["version"].as_str().unwrap_or("?"),
        v["commit"].as_str().unwrap_or("unknown")
    );
    facts.push(("schedlab".into(), generator.clone()));
    HtmlPage {
        facts,
        internals: Vec::new(),
        generator,
    }
}

/// Whether a report metric is one of the scheduler's internals (the
/// wake-up path's and the balancer's, any simulated run has them) rather
/// than the benchmark's own.
pub fn is_internal(name: &str) -> bool {
    lab::metrics::lookup(name).is_none_or(|m| m.benchmarks.is_empty())
}
