//! Reading input files (the sysfs and hwloc XML a topology is imported
//! from; benchspec's tbench loadfiles): regular files only, and no larger
//! than a limit, so a device or a FIFO given by mistake fails at once with
//! one line instead of reading forever.

/// Read an input file of at most `limit` bytes, only if it is a regular
/// file: a FIFO would block the read, and a device such as `/dev/zero`
/// never ends. The error is the problem alone (the caller names the file).
pub fn read_capped(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let not_found = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "missing file".to_string()
        } else {
            format!("cannot read: {e}")
        }
    };
    // check before opening: opening a FIFO for reading blocks until a
    // writer appears
    let meta = std::fs::metadata(path).map_err(not_found)?;
    if !meta.is_file() {
        return Err(format!("not a regular file ({})", file_kind(&meta)));
    }
    // the size is known before reading: a large file is refused without
    // reading it (the capped read below still bounds one that grows)
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    let file = std::fs::File::open(path).map_err(not_found)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: u64) -> String {
    format!(
        "larger than the limit of {} for this input",
        show_bytes(limit)
    )
}

/// What `path` is when it exists and is not a regular file (after
/// symbolic links): "a FIFO", "a character device", ...; `None` for a
/// regular file or nothing at all. Writers use it to refuse replacing a
/// device or FIFO with a result file.
pub fn not_a_regular_file(path: &std::path::Path) -> Option<&'static str> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return None;
    }
    Some(file_kind(&meta))
}

#[cfg(unix)]
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(not(unix))]
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// `limit` in the largest binary unit that divides it.
fn show_bytes(limit: u64) -> String {
    for (unit, name) in [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if limit >= unit && limit.is_multiple_of(unit) {
            return format!("{} {name}", limit / unit);
        }
    }
    format!("{limit} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_regular_file_and_refuses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read_capped(&f, 10).unwrap(), b"0123456789");
        assert_eq!(
            read_capped(&f, 9).unwrap_err(),
            "larger than the limit of 9 bytes for this input"
        );
        assert_eq!(
            read_capped(dir.path(), 10).unwrap_err(),
            "not a regular file (a directory)"
        );
        assert_eq!(
            read_capped(&dir.path().join("none"), 10).unwrap_err(),
            "missing file"
        );
        #[cfg(unix)]
        assert_eq!(
            read_capped(std::path::Path::new("/dev/zero"), 1 << 20).unwrap_err(),
            "not a regular file (a character device)"
        );
        assert_eq!(show_bytes(64 << 20), "64 MiB");
    }
}
