//! One string for every way of naming a machine, as `schedlab` flags and
//! experiment files take it: a preset name, `smp:SPEC` (a synthetic
//! machine), `sysfs:DIR` or `hwloc:FILE` (an imported one).

use crate::error::TopologyError;
use crate::topology::Topology;
use std::path::Path;

/// The machine `spec` names: `smp:SPEC` ([`crate::SmpSpec`]), `sysfs:DIR`
/// ([`crate::from_sysfs`]), `hwloc:FILE` ([`crate::from_hwloc_xml`]), or a
/// preset name ([`crate::preset`]).
pub fn machine(spec: &str) -> Result<Topology, TopologyError> {
    if let Some(dir) = spec.strip_prefix("sysfs:") {
        crate::sysfs::from_sysfs(Path::new(dir))
    } else if let Some(file) = spec.strip_prefix("hwloc:") {
        crate::hwloc::from_hwloc_xml(Path::new(file))
    } else if spec.starts_with(crate::synthetic::SMP_PREFIX) {
        crate::synthetic::from_smp(spec)
    } else {
        crate::presets::preset(spec)
    }
}
