//! The memory and NUMA-balancing figures of `schedlab calibrate`: what one
//! thread's DRAM streaming, a scanner's PTE update, a hinting fault and a
//! page migration cost on this host.
//!
//! A one-node host cannot take a NUMA hinting fault or migrate a page
//! between nodes, so each kernel path is stood in for by the nearest one an
//! unprivileged process can time, over one mapping of `bytes` (256 MiB; 64
//! MiB with `--quick`) in base pages, every figure the fastest of `runs`
//! runs, timed by the thread's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`):
//! a run lasts up to a few hundred milliseconds, longer than a time slice,
//! so on a busy host the wall clock counts the time other tasks ran (on
//! the 2-CPU development machine at load 7 to 8, wall-clock figures came
//! out 1.5 to 1.6 times the CPU-time ones of the next run, the PTE update
//! excepted: a few milliseconds fit in a slice); the thread's CPU time
//! counts its own user and kernel time only, which is what the model
//! charges (a run still disturbed, by cache pollution or the hypervisor,
//! is only slower):
//!
//! - **streaming**: one thread sums the 64-bit words of a populated private
//!   anonymous mapping; ps per byte.
//! - **PTE update**: `mprotect(PROT_NONE)` over that populated mapping, per
//!   page; restored to read-write (untimed) after each run. mprotect walks
//!   the page table with `change_protection()` (mm/mprotect.c), the walk the
//!   NUMA scanner makes through `change_prot_numa()` (mm/mempolicy.c, Linux
//!   4.17 to 6.19), which only asks it for the NUMA protection instead.
//! - **hinting fault**: a write to each page of a fresh `MAP_SHARED`
//!   mapping of a populated memfd (shmem), `MADV_RANDOM`: the fault finds
//!   the page in the page cache and only installs the PTE
//!   (`do_shared_fault()`, mm/memory.c; write faults never fault around),
//!   as `do_numa_page()` only restores a mapping; per page, with the
//!   thread's minor-fault count (`getrusage(RUSAGE_THREAD)`) per page
//!   beside it to show that each page took one fault.
//! - **first touch**: a write to each page of a fresh private anonymous
//!   mapping (allocate, zero, map: `do_anonymous_page()`); per page, with
//!   its fault count. A migration (`migrate_misplaced_folio()`) allocates on
//!   the target node, copies instead of zeroing and remaps; the profile
//!   takes it as a first touch plus two PTE updates.
//!
//! Every anonymous mapping is `MADV_NOHUGEPAGE` (and so is the shared one),
//! so that a host whose THP setting is `always` still maps base pages, as
//! the development machine (`madvise`) did without asking. The memfd has no
//! name in any file system and goes with its descriptor; every mapping is
//! unmapped when dropped, on error too.

use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The raw memory figures (see the module's method).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MemoryFigures {
    /// Bytes of each mapping.
    pub bytes: u64,
    /// The host's base page size, bytes.
    pub page_bytes: u64,
    /// Runs per figure; the fastest (least thread CPU time) is kept.
    pub runs: usize,
    /// One thread summing 64-bit words over the populated mapping, ps per byte.
    pub sum_ps_per_byte: f64,
    /// `mprotect(PROT_NONE)` over the populated mapping, ns per page (PTE).
    pub mprotect_pte_ns: f64,
    /// A write to each page of a fresh shared mapping of a populated memfd,
    /// ns per page.
    pub shared_fault_ns: f64,
    /// Minor faults per page during the fastest such run.
    pub shared_faults_per_page: f64,
    /// A write to each page of a fresh anonymous mapping, ns per page.
    pub first_touch_ns: f64,
    /// Minor faults per page during the fastest such run.
    pub first_touch_faults_per_page: f64,
}

fn sys_err(what: &str) -> Error {
    Error::io(
        format!("memory calibration: {what}"),
        std::io::Error::last_os_error(),
    )
}

/// A mapping, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    /// `len` bytes of private anonymous read-write memory, not populated,
    /// `MADV_NOHUGEPAGE`.
    fn anonymous(len: usize) -> Result<Mapping> {
        Self::map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
    }

    /// The first `len` bytes of `fd`, shared, read-write, not populated,
    /// `MADV_NOHUGEPAGE`.
    fn shared(fd: &OwnedFd, len: usize) -> Result<Mapping> {
        Self::map(len, libc::MAP_SHARED, fd.as_raw_fd())
    }

    fn map(len: usize, flags: i32, fd: i32) -> Result<Mapping> {
        // SAFETY: a new mapping at an address the kernel picks; nothing
        // else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(sys_err(&format!("mmap of {} MiB", len >> 20)));
        }
        let m = Mapping { ptr: p.cast(), len };
        m.advise(libc::MADV_NOHUGEPAGE, "madvise(MADV_NOHUGEPAGE)")?;
        Ok(m)
    }

    fn advise(&self, advice: i32, what: &str) -> Result<()> {
        // SAFETY: advice over exactly our own mapping.
        if unsafe { libc::madvise(self.ptr.cast(), self.len, advice) } != 0 {
            return Err(sys_err(what));
        }
        Ok(())
    }

    fn protect(&self, prot: i32) -> Result<()> {
        // SAFETY: changes the protection of exactly our own mapping; no
        // reference into it is alive across the call.
        if unsafe { libc::mprotect(self.ptr.cast(), self.len, prot) } != 0 {
            return Err(sys_err("mprotect"));
        }
        Ok(())
    }

    /// Writes one byte to each page (`page` bytes apart), in address order.
    fn touch(&self, page: usize) {
        for off in (0..self.len).step_by(page) {
            // SAFETY: off < len, inside our read-write mapping.
            unsafe { self.ptr.add(off).write_volatile(1) };
        }
    }

    fn words(&self) -> &[u64] {
        // SAFETY: the mapping is page-aligned, len is a multiple of 8 and
        // every page was populated (or reads as zero); it lives as long as
        // the slice borrows it.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len / 8) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping, which nothing refers to any more.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The calling thread's CPU time (user and system) so far, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's minor faults so far.
fn minor_faults() -> u64 {
    // SAFETY: an all-zero rusage is valid and getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct we pass.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    u.ru_minflt as u64
}

/// The words' wrapping sum: the loop the streaming figure times.
#[inline(never)]
fn sum_words(w: &[u64]) -> u64 {
    w.iter().fold(0u64, |s, &x| s.wrapping_add(x))
}

/// The fastest of `runs` runs of `f`, each giving (ns, minor faults).
fn fastest(runs: usize, mut f: impl FnMut() -> Result<(u64, u64)>) -> Result<(u64, u64)> {
    let mut best = (u64::MAX, 0);
    for _ in 0..runs {
        let r = f()?;
        if r.0 < best.0 {
            best = r;
        }
    }
    Ok(best)
}

/// A populated memfd of `len` bytes (its pages in the page cache).
fn populated_memfd(len: usize) -> Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the flags are valid.
    let fd = unsafe { libc::memfd_create(c"schedlab-calibrate".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(sys_err("memfd_create"));
    }
    // SAFETY: fd is a new descriptor that only this OwnedFd owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let chunk = vec![0x5au8; 1 << 20];
    let mut off = 0usize;
    while off < len {
        let n = chunk.len().min(len - off);
        // SAFETY: writing from a valid buffer of at least n bytes.
        let w = unsafe { libc::pwrite(fd.as_raw_fd(), chunk.as_ptr().cast(), n, off as i64) };
        if w <= 0 {
            return Err(sys_err("writing the memfd"));
        }
        off += w as usize;
    }
    Ok(fd)
}

/// Measures the four figures over mappings of `bytes` bytes, the fastest of
/// `runs` runs each. `bytes` must be a positive multiple of the page size
/// and `runs` positive.
pub fn measure_memory(bytes: usize, runs: usize) -> Result<MemoryFigures> {
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = if page > 0 { page as usize } else { 4096 };
    if bytes == 0 || !bytes.is_multiple_of(page) || runs == 0 {
        return Err(Error::Task(format!(
            "memory calibration: {bytes} bytes in {runs} runs (needs a positive multiple of the {page}-byte page and at least one run)"
        )));
    }
    let pages = (bytes / page) as f64;

    // streaming and PTE updates over one populated anonymous mapping
    let m = Mapping::anonymous(bytes)?;
    m.touch(page);
    let (sum_ns, _) = fastest(runs, || {
        let t = thread_cpu_ns();
        std::hint::black_box(sum_words(std::hint::black_box(m.words())));
        Ok((thread_cpu_ns() - t, 0))
    })?;
    let (prot_ns, _) = fastest(runs, || {
        let t = thread_cpu_ns();
        m.protect(libc::PROT_NONE)?;
        let dt = thread_cpu_ns() - t;
        m.protect(libc::PROT_READ | libc::PROT_WRITE)?;
        Ok((dt, 0))
    })?;
    drop(m);

    // write faults on a fresh shared mapping of populated shmem
    let fd = populated_memfd(bytes)?;
    let (shared_ns, shared_faults) = fastest(runs, || {
        let s = Mapping::shared(&fd, bytes)?;
        s.advise(libc::MADV_RANDOM, "madvise(MADV_RANDOM)")?;
        let f0 = minor_faults();
        let t = thread_cpu_ns();
        s.touch(page);
        let dt = thread_cpu_ns() - t;
        Ok((dt, minor_faults() - f0))
    })?;
    drop(fd);

    // first touch of fresh anonymous pages
    let (touch_ns, touch_faults) = fastest(runs, || {
        let a = Mapping::anonymous(bytes)?;
        let f0 = minor_faults();
        let t = thread_cpu_ns();
        a.touch(page);
        let dt = thread_cpu_ns() - t;
        Ok((dt, minor_faults() - f0))
    })?;

    Ok(MemoryFigures {
        bytes: bytes as u64,
        page_bytes: page as u64,
        runs,
        sum_ps_per_byte: sum_ns as f64 * 1000.0 / bytes as f64,
        mprotect_pte_ns: prot_ns as f64 / pages,
        shared_fault_ns: shared_ns as f64 / pages,
        shared_faults_per_page: shared_faults as f64 / pages,
        first_touch_ns: touch_ns as f64 / pages,
        first_touch_faults_per_page: touch_faults as f64 / pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memfd's descriptors and mappings this process holds.
    fn memfd_leftovers() -> usize {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mapped = maps.matches("memfd:schedlab-calibrate").count();
        let fds = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|l| l.to_string_lossy().contains("memfd:schedlab-calibrate"))
            })
            .count();
        mapped + fds
    }

    #[test]
    fn every_figure_is_positive_each_page_faults_once_and_nothing_is_left() {
        let f = measure_memory(16 << 20, 2).unwrap();
        assert_eq!((f.bytes, f.runs), (16 << 20, 2));
        for v in [
            f.sum_ps_per_byte,
            f.mprotect_pte_ns,
            f.shared_fault_ns,
            f.first_touch_ns,
        ] {
            assert!(v > 0.0 && v.is_finite(), "{f:?}");
        }
        // base pages, one minor fault each: neither fault-around nor a
        // huge page mapped several pages in one fault
        for per_page in [f.shared_faults_per_page, f.first_touch_faults_per_page] {
            assert!((0.95..1.05).contains(&per_page), "{f:?}");
        }
        assert_eq!(memfd_leftovers(), 0);
    }

    #[test]
    fn a_size_off_the_page_grid_is_refused() {
        for (bytes, runs) in [(0, 1), (4097, 1), (1 << 20, 0)] {
            let e = measure_memory(bytes, runs).unwrap_err().to_string();
            assert!(e.starts_with("memory calibration:"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
