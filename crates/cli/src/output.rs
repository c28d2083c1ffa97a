//! Output helpers shared by the subcommands.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// Write `contents` to `path` atomically: a temporary file in the same
/// directory, then a rename, so a failed run never leaves a partial file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    lab::runlog::write_atomic(path, contents)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Checks, before a long run, that [`write_atomic`] will be able to write
/// `path` after it: the path is not a directory, and its directory exists
/// and accepts a new file (tried with a probe file, removed at once, so
/// permissions, ACLs and read-only mounts all count).
pub fn check_writable(path: &Path) -> Result<()> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        bail!("an empty file name");
    }
    if path.is_dir() {
        bail!("cannot write {shown}: it is a directory");
    }
    // a device or a FIFO cannot be replaced atomically (the rename would
    // replace the node itself: /dev/null, as root)
    if let Some(kind) = lab::runlog::not_a_regular_file(path) {
        bail!("cannot write {shown}: not a regular file ({kind}); give a file name");
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        if dir.exists() {
            bail!("cannot write {shown}: {} is not a directory", dir.display());
        }
        bail!(
            "cannot write {shown}: directory {} does not exist",
            dir.display()
        );
    }
    let name = path
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned());
    let probe = dir.join(format!(".{name}.schedlab-probe.{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => bail!(
            "cannot write {shown}: cannot create a file in {}: {e}",
            dir.display()
        ),
    }
}

/// A failed write to stdout. `main` exits 0 quietly for a closed pipe (the
/// reader stopped reading: `| head`) and reports anything else (a full
/// disk) in one line naming stdout, exit status 2.
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing to stdout: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

impl StdoutError {
    /// True for a closed pipe: not an error.
    pub fn is_closed_pipe(&self) -> bool {
        self.0.kind() == std::io::ErrorKind::BrokenPipe
    }
}

/// Renders an error message as one printable line: line breaks become
/// spaces and other control characters (bytes of a binary file quoted in a
/// message, terminal escapes) are shown escaped, `\x1b` or `\u{85}`.
pub fn one_line(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    for c in msg.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '\t' => out.push(' '),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&c.escape_unicode().to_string());
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_control_characters() {
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(one_line("\u{7f}ELF\0\u{1b}[31m"), "\\x7fELF\\x00\\x1b[31m");
        assert_eq!(one_line("x\u{85}y é"), "x\\u{85}y é");
    }

    #[test]
    fn check_writable_names_the_problem() {
        let dir = std::env::temp_dir();
        let e = check_writable(Path::new("/nonexistent/dir/x.json")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot write /nonexistent/dir/x.json: directory /nonexistent/dir does not exist"
        );
        let e = check_writable(&dir).unwrap_err();
        assert!(e.to_string().ends_with("it is a directory"), "{e}");
        let ok = dir.join(format!("schedlab-check-{}.json", std::process::id()));
        check_writable(&ok).unwrap();
        assert!(!ok.exists());
        // No probe left behind.
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .contains(&format!("schedlab-probe.{}", std::process::id()))
            })
            .count();
        assert_eq!(leftovers, 0);
    }
}
