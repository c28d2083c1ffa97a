//! Import from hwloc XML (placeholder until the importer lands).
use crate::error::TopologyError;
use crate::topology::Topology;
use std::path::Path;

/// Read an `lstopo --of xml` file.
pub fn from_hwloc_xml(path: &Path) -> Result<Topology, TopologyError> {
    Err(TopologyError::file(
        path,
        "hwloc import is not implemented yet",
    ))
}
