//! Output helpers shared by the subcommands.

use anyhow::{Context, Result};
use std::path::Path;

/// Write `contents` to `path` atomically: a temporary file in the same
/// directory, then a rename, so a failed run never leaves a partial file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    lab::runlog::write_atomic(path, contents)
        .with_context(|| format!("cannot write {}", path.display()))
}
