//! The host layer: guests whose CPUs are vCPU threads of a host that runs
//! its own fair scheduler and can pre-empt them.
//!
//! - [`spec`]: machine descriptions (a host, its guests with libvirt-style
//!   vCPU affinities, noisy host load), presets and TOML files;
//! - [`sched`]: the host's scheduler (EEVDF run queues, tick, wake-up
//!   preemption, PELT, KVM halt polling) of vCPU threads and other host
//!   tasks;
//! - [`linux`]: the host kernel's state that the simulator's Linux code
//!   works on: its sched domains, run-queue summaries, LLC blocks, thread
//!   placement fields and cache lines, the wake-up path
//!   (select_task_rq_fair) and the load balancer of the host kernel
//!   profile; `balance.rs` drives that balancer from the host's tick,
//!   newidle, nohz idle balancing and the stopper;
//! - [`kvm`]: the host kernel's KVM rules a guest sees (when the steal-time
//!   preempted flag is set, by host kernel version);
//! - [`cosim`]: one event loop over the host and every guest engine, in
//!   global time order (the host first on ties, then the guests in order),
//!   so a run is deterministic;
//! - the guest side lives in the engine (`engine/vcpu.rs`): pausing and
//!   resuming a guest CPU's clock, halts, the preempted flag, steal.
//!
//! How it is modelled and what is not: docs/vm.md.

mod balance;
pub mod cosim;
pub mod kvm;
pub mod linux;
pub mod run;
pub mod sched;
pub mod spec;
