//! Up-front checks of the system limits a run needs, so that a too-large
//! run fails with one clear line naming the limit to raise, before any
//! task is started.

use crate::error::{Error, Result};

/// File descriptors a process uses outside the benchmark (stdio, the
/// signal pipe, a few library fds) that the checks leave headroom for.
pub(crate) const FD_SLACK: u64 = 16;

fn rlimit(res: nix::sys::resource::Resource) -> Option<u64> {
    let (soft, _hard) = nix::sys::resource::getrlimit(res).ok()?;
    (soft != libc::RLIM_INFINITY).then_some(soft)
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Checks that one process may hold `need` file descriptors at once.
/// `what` says which flags drive the number (e.g. "-g/-f").
pub(crate) fn check_fds(need: u64, what: &str) -> Result<()> {
    let need = need + FD_SLACK;
    if let Some(limit) = rlimit(nix::sys::resource::Resource::RLIMIT_NOFILE) {
        if need > limit {
            return Err(Error::Limit(format!(
                "open-files limit too low: this run needs about {need} file descriptors in one process \
                 but RLIMIT_NOFILE is {limit}; raise it (ulimit -n {need}) or lower {what}"
            )));
        }
    }
    if let Some(max) = read_u64("/proc/sys/fs/nr_open") {
        if need > max {
            return Err(Error::Limit(format!(
                "this run needs about {need} file descriptors in one process but /proc/sys/fs/nr_open is {max}; \
                 raise it or lower {what}"
            )));
        }
    }
    Ok(())
}

/// Checks that `tasks` more processes or threads can be created.
pub(crate) fn check_tasks(tasks: u64, what: &str) -> Result<()> {
    // RLIMIT_NPROC counts every task of the user and is not enforced for
    // root; only check it for other users.
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        if let Some(limit) = rlimit(nix::sys::resource::Resource::RLIMIT_NPROC) {
            if tasks > limit {
                return Err(Error::Limit(format!(
                    "process limit too low: this run starts {tasks} tasks but RLIMIT_NPROC is {limit}; \
                     raise it (ulimit -u {}) or lower {what}",
                    tasks + 64
                )));
            }
        }
    }
    for (path, name) in [
        ("/proc/sys/kernel/threads-max", "kernel.threads-max"),
        ("/proc/sys/kernel/pid_max", "kernel.pid_max"),
    ] {
        if let Some(max) = read_u64(path) {
            if tasks + 64 > max {
                return Err(Error::Limit(format!(
                    "this run starts {tasks} tasks but {name} is {max}; raise it (sysctl {name}=...) or lower {what}"
                )));
            }
        }
    }
    if let Some(max) = read_u64("/sys/fs/cgroup/pids.max") {
        let cur = read_u64("/sys/fs/cgroup/pids.current").unwrap_or(0);
        if cur + tasks > max {
            return Err(Error::Limit(format!(
                "this run starts {tasks} tasks but the pids cgroup allows {max} ({cur} in use); \
                 raise pids.max or lower {what}"
            )));
        }
    }
    Ok(())
}

/// Checks that `bytes` of buffers is a sane amount of memory to allocate.
pub(crate) fn check_memory(bytes: u64, what: &'static str) -> Result<()> {
    const MAX: u64 = 2 << 30;
    if bytes > MAX {
        return Err(Error::arg(
            what,
            format!(
                "the run would allocate {} MiB of buffers (limit {} MiB)",
                bytes >> 20,
                MAX >> 20
            ),
        ));
    }
    Ok(())
}
