//! Booting the guest: qemu in its own process group, a time limit for the
//! boot and one for the whole run, and the guest killed on every way out.
//!
//! qemu gets `PR_SET_PDEATHSIG` = SIGKILL (so it dies with schedlab even if
//! schedlab is killed) and its own process group, which [`Guest`]'s `Drop`
//! kills with SIGKILL and reaps: an error, a time-out, a panic unwinding or
//! a normal return all end the guest.

use crate::error::OracleError;
use crate::guest::{parse_reports, Reports};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to boot.
#[derive(Clone, Debug)]
pub struct BootSpec {
    /// The qemu binary.
    pub qemu: PathBuf,
    /// The kernel image (bzImage).
    pub kernel: PathBuf,
    /// qemu's machine arguments (see [`crate::qemu::QemuShape::args`]).
    pub machine_args: Vec<String>,
    /// The CPU model (`-cpu`).
    pub cpu_model: String,
    /// Use KVM instead of TCG.
    pub kvm: bool,
    /// Time until the guest's userspace reports it is up.
    pub boot_timeout: Duration,
    /// Time for the whole run.
    pub run_timeout: Duration,
}

/// A running qemu; dropping it kills its process group.
pub struct Guest {
    child: Child,
}

impl Guest {
    /// The process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) on a process group we created; no memory involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The full qemu command line for `spec` with `initrd`, console log and data
/// port files.
pub fn qemu_command(spec: &BootSpec, initrd: &Path, console: &Path, data: &Path) -> Vec<String> {
    let mut a: Vec<String> = vec![if spec.kvm { "-enable-kvm" } else { "-accel" }.into()];
    if !spec.kvm {
        // One emulation thread for all vCPUs. With a thread per vCPU (qemu's
        // default on x86 hosts) a 24-vCPU 6.1 guest on a 2-CPU machine
        // stalled 1.6 s into its boot in 2 of 4 clean-clone test runs on
        // 2026-12-01 (our reading: vCPU threads spinning for a CPU whose
        // vCPU thread gets no host CPU); with one thread both boot tests
        // passed, in 21 s together.
        a.push("tcg,thread=single".into());
    }
    a.extend(["-cpu".into(), spec.cpu_model.clone()]);
    a.extend(spec.machine_args.iter().cloned());
    a.extend([
        "-kernel".into(),
        spec.kernel.display().to_string(),
        "-initrd".into(),
        initrd.display().to_string(),
        "-append".into(),
        crate::guest::APPEND.into(),
        "-display".into(),
        "none".into(),
        "-monitor".into(),
        "none".into(),
        "-no-reboot".into(),
        "-nodefaults".into(),
        "-serial".into(),
        format!("file:{}", console.display()),
        "-serial".into(),
        format!("file:{}", data.display()),
    ]);
    a
}

fn last_line(path: &Path) -> String {
    let s = std::fs::read(path).unwrap_or_default();
    let s = String::from_utf8_lossy(&s);
    s.lines()
        .map(|l| l.trim_matches(|c: char| c == '\r' || c.is_whitespace()))
        .rfind(|l| !l.is_empty())
        .unwrap_or("(none)")
        .chars()
        .take(200)
        .collect()
}

fn read_lossy(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
}

/// The result of a boot.
pub struct BootOutput {
    /// The reports from the data port.
    pub reports: Reports,
    /// The kernel console log.
    pub console: String,
}

/// Boot `initrd` under `spec`, wait for the guest to finish and return its
/// reports. The guest is killed on every return path.
pub fn boot(spec: &BootSpec, initrd: &[u8]) -> Result<BootOutput, OracleError> {
    let dir =
        tempfile::tempdir().map_err(|e| OracleError::Io(format!("temporary directory: {e}")))?;
    let initrd_path = dir.path().join("initramfs.cpio");
    std::fs::write(&initrd_path, initrd)
        .map_err(|e| OracleError::Io(format!("{}: {e}", initrd_path.display())))?;
    let console = dir.path().join("console.log");
    let data = dir.path().join("data.log");
    let stderr_path = dir.path().join("qemu.stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| OracleError::Io(format!("{}: {e}", stderr_path.display())))?;
    for p in [&spec.kernel] {
        if !p.is_file() {
            return Err(OracleError::File {
                what: "--kernel-image",
                path: p.clone(),
                why: "no such file".into(),
            });
        }
    }
    let mut cmd = Command::new(&spec.qemu);
    cmd.args(qemu_command(spec, &initrd_path, &console, &data))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| OracleError::NoQemu {
        path: spec.qemu.clone(),
        why: e.to_string(),
    })?;
    let mut guest = Guest { child };
    let start = Instant::now();
    let mut up = false;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let exited = guest
            .child
            .try_wait()
            .map_err(|e| OracleError::Io(format!("waiting for qemu: {e}")))?;
        if !up {
            up = read_lossy(&data).contains("@@SCHEDLAB-UP");
        }
        if let Some(status) = exited {
            let reports = parse_reports(&read_lossy(&data));
            if reports.done {
                return Ok(BootOutput {
                    reports,
                    console: read_lossy(&console),
                });
            }
            if !reports.up && !status.success() {
                let msg = read_lossy(&stderr_path);
                let line = msg
                    .lines()
                    .rfind(|l| !l.trim().is_empty() && !l.contains("warning:"))
                    .unwrap_or("exited without a message")
                    .to_string();
                return Err(OracleError::QemuRefused(line));
            }
            return Err(OracleError::GuestDied(last_line(&console)));
        }
        let t = start.elapsed();
        if !up && t > spec.boot_timeout {
            return Err(OracleError::Timeout {
                what: "come up",
                secs: spec.boot_timeout.as_secs(),
                last: last_line(&console),
            });
        }
        if t > spec.run_timeout {
            return Err(OracleError::Timeout {
                what: "finish",
                secs: spec.run_timeout.as_secs(),
                last: last_line(&console),
            });
        }
    }
}
