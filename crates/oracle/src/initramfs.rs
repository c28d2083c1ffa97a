//! The guest's initramfs: busybox (Debian's busybox-static), a statically
//! linked schedlab, the init script and the command to run.

use crate::cpio::Cpio;
use crate::error::OracleError;
use crate::guest;
use std::path::Path;

/// Upper bound on a binary we copy into the guest.
const MAX_BINARY: u64 = 512 << 20;

fn read_binary(what: &'static str, path: &Path) -> Result<Vec<u8>, OracleError> {
    let err = |why: String| OracleError::File {
        what,
        path: path.to_path_buf(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    if meta.len() > MAX_BINARY {
        return Err(err(format!("larger than {} MiB", MAX_BINARY >> 20)));
    }
    std::fs::read(path).map_err(|e| err(e.to_string()))
}

/// Whether `elf` is a statically linked executable: an ELF file without a
/// PT_INTERP program header (the dynamic loader request).
pub fn is_static_elf(elf: &[u8]) -> bool {
    if elf.len() < 64 || &elf[..4] != b"\x7fELF" || elf[4] != 2 || elf[5] != 1 {
        return false; // only 64-bit little-endian
    }
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if o + 4 > elf.len() {
            return false;
        }
        let p_type = u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
        if p_type == 3 {
            return false; // PT_INTERP
        }
    }
    true
}

/// The archive: `/init`, `/bin/busybox`, `/bin/schedlab`, `/cmd` (the
/// command line, one shell word per argument), `/trace_kb` and the mount
/// points.
/// `trace_kb` is the tracefs buffer per CPU (`/trace_kb`).
pub fn build(
    busybox: &Path,
    schedlab: &Path,
    args: &[String],
    trace_kb: usize,
) -> Result<Vec<u8>, OracleError> {
    let bb = read_binary("--busybox", busybox)?;
    if !is_static_elf(&bb) {
        return Err(OracleError::File {
            what: "--busybox",
            path: busybox.to_path_buf(),
            why: "not a statically linked executable (apt-get install busybox-static)".into(),
        });
    }
    let sl = read_binary("--guest-binary", schedlab)?;
    if !is_static_elf(&sl) {
        return Err(OracleError::NotStatic(schedlab.to_path_buf()));
    }
    let mut c = Cpio::new();
    for d in ["bin", "dev", "proc", "sys", "tmp", "root"] {
        c.dir(d);
    }
    c.file("bin/busybox", 0o755, &bb);
    c.symlink("bin/sh", "busybox");
    c.file("bin/schedlab", 0o755, &sl);
    c.file("init", 0o755, guest::INIT.as_bytes());
    c.file("cmd", 0o644, guest::command_file(args).as_bytes());
    c.file("trace_kb", 0o644, format!("{trace_kb}\n").as_bytes());
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_detection() {
        // this test binary is dynamically linked in a normal build
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let _ = is_static_elf(&me); // must not panic whatever the build
        assert!(!is_static_elf(b"#!/bin/sh\n"));
        let bb = Path::new("/bin/busybox");
        if let Ok(b) = std::fs::read(bb) {
            // Debian's busybox-static, when installed, is static
            if b.len() > 1 << 20 {
                assert!(is_static_elf(&b));
            }
        }
    }
}
