//! `schedlab compare ... --trace FILE [--trace-run VARIANT[,POINT[,ITERATION]]]`:
//! a Perfetto trace of one simulated run of the experiment, made by running
//! that run again alone with its seed (a run is deterministic, so this is
//! the run the report holds).

use anyhow::{anyhow, bail, Result};
use lab::experiment::PlannedRun;
use lab::{Experiment, Mode};

/// The run `sel` names (None: the baseline's first point, iteration 0).
pub fn pick(exp: &Experiment, sel: Option<&str>) -> Result<PlannedRun> {
    let mut parts = sel.map_or(Vec::new(), |s| s.split(',').collect::<Vec<_>>());
    if parts.len() > 3 {
        bail!(
            "--trace-run {}: expected VARIANT[,POINT[,ITERATION]]",
            sel.unwrap_or("")
        );
    }
    parts.resize(3, "");
    let variant = match parts[0] {
        "" => 0,
        v => exp
            .variants
            .iter()
            .position(|x| x.name == v)
            .ok_or_else(|| {
                let names: Vec<&str> = exp.variants.iter().map(|x| x.name.as_str()).collect();
                anyhow!(
                    "--trace-run: no variant {v:?} (the variants: {})",
                    names.join(", ")
                )
            })?,
    };
    let point = match parts[1] {
        "" => 0,
        p => (0..exp.npoints())
            .find(|&x| exp.point_key(x) == p)
            .ok_or_else(|| {
                let keys: Vec<String> = (0..exp.npoints()).map(|x| exp.point_key(x)).collect();
                anyhow!(
                    "--trace-run: no point {p:?} (the points: {})",
                    keys.join(", ")
                )
            })?,
    };
    let iteration = match parts[2] {
        "" => 0,
        i => i
            .parse::<u32>()
            .ok()
            .filter(|&i| i < exp.iterations)
            .ok_or_else(|| {
                anyhow!(
                    "--trace-run: iteration {i:?} is not in 0..{}",
                    exp.iterations
                )
            })?,
    };
    if point >= exp.npoints() {
        bail!("--trace-run: no such run");
    }
    let list = exp.run_list();
    let run = list.get(list.index(variant, point, iteration));
    if exp.variants[variant].mode != Mode::Sim {
        bail!(
            "--trace-run: {} is a native run; only simulated runs are traced",
            exp.variants[variant].name
        );
    }
    Ok(run)
}

/// Trace the run `sel` names to the file `args` names, within `bounds`
/// (those of the experiment's runs).
pub fn trace_run(
    exp: &Experiment,
    sel: Option<&str>,
    bounds: &lab::exec::Bounds,
    args: crate::cmd_sim::trace::TraceArgs,
) -> Result<()> {
    let run = pick(exp, sel)?;
    let spec = exp.spec_of(&run)?;
    let Some(trace) = args.open()? else {
        return Ok(());
    };
    let slot = trace.slot();
    lab::exec::simulate_with(&spec, |o| {
        bounds.apply(o);
        o.trace = Some(slot.clone());
    })?;
    trace.finish()?;
    Ok(())
}
