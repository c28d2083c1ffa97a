//! The host kernel: the simulator's Linux code ([`crate::kernel::Kernel`],
//! the same state and entry points a bare-metal run uses) over the host
//! machine, with the wake-up policy
//! (`placement::linux::LinuxPlacement`) and load balancer
//! (`balance::linux::LinuxBalancer`) of the host's kernel profile, its
//! sched domains built as that kernel builds them.
//!
//! The host scheduler (`host/sched.rs`) owns the run queues; the
//! balancer's view of them is built by `host/balance.rs`.

use crate::costs::MachineCosts;
use crate::kernel::Kernel;
use crate::placement::linux::{Features, LinuxPlacement};
use topology::{SchedDomains, Topology};

/// The host kernel of profile `f` on `topo` (domains `sd`, built with
/// `f.domain_options()`), costs `mc`: every CPU idle, no thread yet. Its
/// balancer is installed but not booted (`Host::boot_balancer` does, once
/// the threads exist).
pub fn host_kernel<'h>(
    topo: &'h Topology,
    sd: &'h SchedDomains,
    f: &Features,
    mc: MachineCosts,
) -> Kernel<'h> {
    let mut k = Kernel::boot(topo, sd, mc, Box::new(LinuxPlacement::new(f.clone())));
    k.vcpu_preempt_check = f.vcpu_preempt_check();
    k.sched_idle_as_idle = f.sched_idle_as_idle();
    k.ttwu_queue = f.ttwu_queue;
    k.balancer = crate::run::make_balancer(&crate::run::PolicyChoice::Linux(Box::new(f.clone())));
    k
}
