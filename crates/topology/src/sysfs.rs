//! Import from a sysfs tree (placeholder until the importer lands).
use crate::error::TopologyError;
use crate::topology::Topology;
use std::path::Path;

/// Read `<root>/sys/devices/system/{cpu,node}`.
pub fn from_sysfs(root: &Path) -> Result<Topology, TopologyError> {
    Err(TopologyError::file(
        root,
        "sysfs import is not implemented yet",
    ))
}
