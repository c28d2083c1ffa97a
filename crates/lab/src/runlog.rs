//! The run log: one JSON line per finished run, after a header line that
//! describes the whole experiment. It is what makes `--resume` redo only
//! the missing runs and `--merge` build one report from the logs of
//! `--shard` runs on different machines.
//!
//! A run's line is written with one `write` call and flushed as soon as the
//! run ends, so a crash or Ctrl-C leaves at worst a final line without its
//! newline, which reading ignores. A resume rewrites the log (atomically)
//! with the current header and the runs it keeps, then appends.
//!
//! Every line, the header too, ends in its own checksum: the line is a JSON
//! object whose last member is `"sum":"HEX"`, the 64-bit FNV-1a of the line
//! as written without that member ([`seal`]). A line changed by hand (a
//! value edited, a run pasted from another log) is refused by `--resume`
//! and `--merge` naming the file and the line, instead of changing the
//! report silently. It guards against edits and damage, not against
//! someone who recomputes the sum. Logs of format 1 (before checksums) are
//! refused with a message that says to run the experiment again into a new
//! log: their lines cannot be told apart from edited ones.
//!
//! The header holds the experiment as it was given (its run table,
//! variants and sweep axes, [`Experiment`]'s serialised form) and its
//! fingerprint, not its expansion: a sweep of millions of points has a
//! header of its axes' size. Logs of format 2, whose header held every
//! expanded run, are refused the same way as format 1.

use crate::experiment::Experiment;
use report::RunRecord;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Problems with a run log, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Reading or writing failed.
    #[error("{path}: {cause}")]
    Io {
        /// The log.
        path: PathBuf,
        /// The I/O error (not a `source`: the message already says it, once).
        cause: std::io::Error,
    },
    /// The file is not a run log, or a line is damaged.
    #[error("{path}: line {line}: {message}")]
    Format {
        /// The log.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file cannot be a run log: missing, not a regular file, or larger
    /// than [`MAX_LOG_BYTES`].
    #[error("{path}: {message}")]
    Input {
        /// The log.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The logs do not belong together.
    #[error("{0}")]
    Mismatch(String),
}

/// The largest run log `--resume` and `--merge` read (the whole file is read
/// into memory, then parsed). A run line is a few hundred bytes (names, a
/// seed and the metrics) and the header holds the experiment as given:
/// 1 GiB holds millions of runs, more than any
/// experiment finishes in days, while `/dev/zero` or a wrong, huge file
/// fails at once instead of filling memory.
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// The run-log format this build writes and reads: 3, every line with its
/// checksum (format 1 had none), the header holding the experiment as given
/// (format 2's held its expansion).
pub const FORMAT: u32 = 3;

/// The first line of a run log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format marker and version ([`FORMAT`]).
    pub schedlab_runlog: u32,
    /// The schedlab that wrote it.
    pub schedlab_version: String,
    /// Hash of everything that decides the runs' results (see
    /// [`fingerprint`]): logs with the same fingerprint hold runs of the
    /// same experiment.
    pub fingerprint: String,
    /// The shard this log holds (`I/N`), if any.
    pub shard: Option<String>,
    /// The experiment, as given (not expanded).
    pub experiment: Experiment,
}

impl Header {
    /// The header of a log of `exp` (one shard of it, or all).
    pub fn new(exp: &Experiment, shard: Option<String>) -> Header {
        Header {
            schedlab_runlog: FORMAT,
            schedlab_version: env!("CARGO_PKG_VERSION").into(),
            fingerprint: fingerprint(exp),
            shard,
            experiment: exp.clone(),
        }
    }
}

fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// 64-bit FNV-1a, as hex, of what decides the runs' results: the
/// experiment as given except its iteration count (more iterations only
/// add runs, so a resume may ask for more), the schedlab version and the
/// model's revision (`sim::MODEL_REVISION`), and the contents behind file
/// names (a `sysfs:`/`hwloc:` machine, a tbench loadfile, a cost profile,
/// an `smp:` machine's `cost=FILE`), so that logs written on different
/// hosts or builds are not mixed silently. The files are found in the
/// cells that hold every value of every axis
/// ([`Experiment::probe_cells`]), not in every run.
pub fn fingerprint(exp: &Experiment) -> String {
    let mut e = exp.clone();
    e.iterations = 0;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    fnv1a(
        &mut h,
        serde_json::to_string(&e)
            .expect("plain data serialises")
            .as_bytes(),
    );
    fnv1a(&mut h, env!("CARGO_PKG_VERSION").as_bytes());
    fnv1a(&mut h, sim::MODEL_REVISION.as_bytes());
    let mut seen = std::collections::BTreeSet::new();
    for c in exp.probe_cells() {
        let m = &c.spec.machine;
        if (m.starts_with("sysfs:") || m.starts_with("hwloc:")) && seen.insert(m.clone()) {
            if let Ok(t) = c.spec.topology() {
                fnv1a(&mut h, format!("{t:?}").as_bytes());
            }
        }
        // read as their readers read them (a FIFO or a device is not
        // read; the run's own check then names it)
        for p in c
            .spec
            .cost_profile
            .iter()
            .chain(c.spec.smp_cost_file().iter())
        {
            if seen.insert(format!("cost_profile:{}", p.display())) {
                let bytes = topology::input::read_capped(p, sim::cost_profile::MAX_PROFILE_BYTES);
                fnv1a(&mut h, &bytes.unwrap_or_default());
            }
        }
        if let crate::WorkloadSpec::Rtapp(r) = &c.spec.workload {
            if seen.insert(r.file.display().to_string()) {
                let bytes = topology::input::read_capped(&r.file, crate::workload::MAX_RTAPP_BYTES);
                fnv1a(&mut h, &bytes.unwrap_or_default());
            }
        }
        if let crate::WorkloadSpec::Tbench(t) = &c.spec.workload {
            if let Some(p) = &t.loadfile {
                if seen.insert(p.display().to_string()) {
                    let bytes =
                        topology::input::read_capped(p, benchspec::loadfile::MAX_LOADFILE_BYTES);
                    fnv1a(&mut h, &bytes.unwrap_or_default());
                }
            }
        }
    }
    format!("{h:016x}")
}

/// The member that ends every line: `,"sum":"` + 16 hex digits + `"}`.
const SUM_KEY: &str = ",\"sum\":\"";

/// `json` (one serialised JSON object) with its checksum as its last
/// member, `"sum"`: the FNV-1a of `json` itself.
pub fn seal(json: &str) -> String {
    let body = json
        .strip_suffix('}')
        .expect("a serialised struct is an object");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    fnv1a(&mut h, json.as_bytes());
    format!("{body}{SUM_KEY}{h:016x}\"}}")
}

/// The line `line` without its checksum member, if the checksum is there
/// and matches; else what is wrong.
fn unseal(line: &[u8]) -> Result<Vec<u8>, &'static str> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8")?;
    let at = text.rfind(SUM_KEY).ok_or("no checksum (\"sum\")")?;
    let (body, tail) = text.split_at(at);
    let hex = tail[SUM_KEY.len()..]
        .strip_suffix("\"}")
        .filter(|h| h.len() == 16)
        .ok_or("changed since schedlab wrote it (its checksum is not the line's last member)")?;
    let want = u64::from_str_radix(hex, 16).map_err(|_| "a checksum that is not 16 hex digits")?;
    let json = format!("{body}}}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    fnv1a(&mut h, json.as_bytes());
    if h != want {
        return Err("changed since schedlab wrote it (its checksum does not match)");
    }
    Ok(json.into_bytes())
}

/// Write `contents` to `path` atomically: a temporary file beside it, then
/// a rename, so a reader never sees a partial file. A `path` that exists
/// and is not a regular file (a device such as `/dev/null`, a FIFO, a
/// directory) is refused: it cannot be written atomically, and the rename
/// would replace the device node itself.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(kind) = not_a_regular_file(path) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file ({kind})"),
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no file name",
        )
    })?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// What `path` is when it exists and is not a regular file
/// (`topology::input::not_a_regular_file`, the input reader's own test).
pub use topology::input::not_a_regular_file;

/// A log open for appending, held by this process alone (a lock file
/// beside it, `.NAME.lock`, keeps a second schedlab from writing it).
pub struct RunLog {
    path: PathBuf,
    file: File,
    lock_path: PathBuf,
    _lock: File,
}

impl RunLog {
    /// Take the log: lock it, write `header` and the runs `kept` (those a
    /// resume keeps) as its whole content, atomically, and open it for
    /// appending.
    pub fn start(path: &Path, header: &Header, kept: &[RunRecord]) -> Result<RunLog, LogError> {
        let io = |cause| LogError::Io {
            path: path.to_path_buf(),
            cause,
        };
        // checked before the lock file is made beside it
        if let Some(kind) = not_a_regular_file(path) {
            return Err(LogError::Input {
                path: path.to_path_buf(),
                message: format!("not a regular file ({kind}); a run log must be a file"),
            });
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lock_path = path.with_file_name(format!(".{name}.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LogError::Mismatch(format!(
                    "{}: another schedlab is writing this run log (give each run its own --log)",
                    path.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let mut text = seal(&serde_json::to_string(header).expect("plain data serialises")) + "\n";
        for r in kept {
            text += &(seal(&serde_json::to_string(r).expect("plain data serialises")) + "\n");
        }
        write_atomic(path, text.as_bytes()).map_err(io)?;
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        Ok(RunLog {
            path: path.to_path_buf(),
            file,
            lock_path,
            _lock: lock,
        })
    }

    /// Append one finished run: one write, flushed at once.
    pub fn append(&mut self, rec: &RunRecord) -> Result<(), LogError> {
        let line = seal(&serde_json::to_string(rec).expect("plain data serialises")) + "\n";
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|cause| LogError::Io {
                path: self.path.clone(),
                cause,
            })
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// Read a log to resume: `None` when there is nothing to resume (no file,
/// or a log cut short before its header line was complete), else what
/// [`read`] returns. A file that is not a regular file or is too large is
/// an error, never taken for an empty log (which the resume would
/// overwrite).
pub fn read_to_resume(path: &Path) -> Result<Option<(Header, Vec<RunRecord>)>, LogError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let text = read_bytes(path)?;
    if !text.contains(&b'\n') {
        return Ok(None);
    }
    parse(path, &text).map(Some)
}

/// The bytes of a log: a regular file of at most [`MAX_LOG_BYTES`].
fn read_bytes(path: &Path) -> Result<Vec<u8>, LogError> {
    topology::input::read_capped(path, MAX_LOG_BYTES).map_err(|message| LogError::Input {
        path: path.to_path_buf(),
        message,
    })
}

/// Read a log: its header and every complete run line (a last line
/// without its newline was cut short and is ignored). The log must be a
/// regular file of at most [`MAX_LOG_BYTES`].
pub fn read(path: &Path) -> Result<(Header, Vec<RunRecord>), LogError> {
    let text = read_bytes(path)?;
    parse(path, &text)
}

fn parse(path: &Path, text: &[u8]) -> Result<(Header, Vec<RunRecord>), LogError> {
    let format = |line: usize, message: String| LogError::Format {
        path: path.to_path_buf(),
        line,
        message,
    };
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut lines = text[..complete].split(|&b| b == b'\n');
    let first = match lines.next().filter(|l| !l.is_empty()) {
        Some(l) => l,
        None if text.is_empty() => {
            return Err(format(1, "empty file, not a schedlab run log".into()))
        }
        None => return Err(format(1, "not a schedlab run log (no header line)".into())),
    };
    // the format first, so that an older log is named as one
    let version = serde_json::from_slice::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("schedlab_runlog").and_then(|f| f.as_u64()));
    match version {
        Some(v) if v == FORMAT as u64 => {}
        Some(1) => {
            return Err(format(
                1,
                "run-log format 1, written by an older schedlab without line checksums: \
                 this schedlab cannot tell its lines from edited ones; run the experiment \
                 again into a new log (without --resume, or with another --log)"
                    .into(),
            ))
        }
        Some(2) => {
            return Err(format(
                1,
                "run-log format 2, written by an older schedlab whose header held every \
                 expanded run: this schedlab keeps the experiment as given and cannot match \
                 its runs; run the experiment again into a new log (without --resume, or \
                 with another --log)"
                    .into(),
            ))
        }
        Some(v) => {
            return Err(format(
                1,
                format!("run-log format {v} (this schedlab reads format {FORMAT})"),
            ))
        }
        None => {
            return Err(format(
                1,
                "not a schedlab run log header (no \"schedlab_runlog\" format number)".into(),
            ))
        }
    }
    let header: Header = unseal(first)
        .map_err(|m| format(1, format!("header line: {m}")))
        .and_then(|l| {
            serde_json::from_slice(&l)
                .map_err(|e| format(1, format!("not a schedlab run log header ({e})")))
        })?;
    let mut records = Vec::new();
    for (i, l) in lines.enumerate() {
        if l.is_empty() {
            continue;
        }
        let l = unseal(l).map_err(|m| format(i + 2, format!("run line: {m}")))?;
        let r = serde_json::from_slice::<RunRecord>(&l)
            .map_err(|e| format(i + 2, format!("damaged run line ({e})")))?;
        records.push(r);
    }
    Ok((header, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(p: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    #[test]
    fn a_sealed_line_reads_back_and_any_change_is_seen() {
        let json = r#"{"variant":"a","point":"","iteration":0,"metrics":{"time":1.5}}"#;
        let line = seal(json);
        assert!(line.starts_with(&json[..json.len() - 1]), "{line}");
        assert_eq!(unseal(line.as_bytes()).unwrap(), json.as_bytes());
        assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
        let edited = line.replacen("1.5", "1.6", 1);
        assert!(unseal(edited.as_bytes())
            .unwrap_err()
            .starts_with("changed"));
        assert!(unseal(json.as_bytes())
            .unwrap_err()
            .starts_with("no checksum"));
    }

    #[test]
    fn a_resume_reads_only_a_regular_log_and_never_replaces_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // nothing to resume: no file, or a header cut short
        assert!(read_to_resume(&d.join("none")).unwrap().is_none());
        std::fs::write(d.join("cut"), "{\"schedlab_runl").unwrap();
        assert!(read_to_resume(&d.join("cut")).unwrap().is_none());
        // a FIFO is an error (reading it would block), not an empty log
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        let e = read_to_resume(&fifo).unwrap_err().to_string();
        assert!(e.ends_with("fifo: not a regular file (a FIFO)"), "{e}");
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.ends_with("fifo: not a regular file (a FIFO)"), "{e}");
        // and is not replaced by a result or a log
        let e = write_atomic(&fifo, b"x").unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a FIFO)");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(not_a_regular_file(d), Some("a directory"));
        assert_eq!(not_a_regular_file(&d.join("cut")), None);
        assert_eq!(not_a_regular_file(&d.join("none")), None);
    }
}
