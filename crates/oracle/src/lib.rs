//! # oracle: the simulator held against a real Linux kernel
//!
//! Boots a Linux kernel image under qemu on a machine's topology, runs a
//! schedlab command inside it with the scheduler's trace events on, and
//! brings back the trace, the guest's sched-domain dump and the command's
//! output (docs/kernel-oracle.md).
//!
//! - [`qemu`]: a topology as a qemu command line, and the machine the guest sees;
//! - [`cpio`], [`initramfs`], [`guest`]: the guest's initramfs, its init
//!   script and the report protocol over the second serial port;
//! - [`boot`]: qemu with time limits, killed on every exit path;
//! - [`domains_dump`]: the guest's domains against `topology`'s;
//! - [`trace`]: the tracefs text format, per wake-up placement and locality;
//! - [`scenario`], [`runner`], [`probe`], [`agreement`]: placement scenarios
//!   run natively in the guest and by the simulator's wake-up path, compared.

pub mod agreement;
pub mod boot;
pub mod cpio;
pub mod domains_dump;
pub mod error;
pub mod fair;
pub mod fair_runner;
pub mod guest;
pub mod initramfs;
pub mod probe;
pub mod qemu;
pub mod runner;
pub mod scenario;
pub mod trace;

pub use error::OracleError;
