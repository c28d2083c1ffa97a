//! The host kernel's KVM rules that decide what a guest sees of its vCPUs,
//! as toggles of the host kernel profile (derived from `[host] kernel`).
//!
//! The steal-time preempted flag (`KVM_VCPU_PREEMPTED`, read by the guest's
//! `vcpu_is_preempted()`) is written by `kvm_steal_time_set_preempted()`
//! (arch/x86/kvm/x86.c), which `kvm_arch_vcpu_put()` calls when the vCPU
//! thread is scheduled out (`kvm_sched_out()`, virt/kvm/kvm_main.c), and is
//! cleared by `record_steal_time()` before the next guest entry. When the
//! put writes it changed in 2022:
//!
//! - from 4.9 (where the flag appeared) to 5.18, `kvm_arch_vcpu_put()`
//!   wrote it at every sched-out of a loaded vCPU, whatever the thread was
//!   doing: pre-empted in guest code, scheduled out while it halt-polled,
//!   or blocked in `kvm_vcpu_block()` after a HLT exit (read at 4.19.1 and
//!   5.4.301: the call is unconditional);
//! - from 5.19, 54aa83c90198 ("KVM: x86: do not set st->preempted when
//!   going back to user space") writes it only when `kvm_sched_out()` found
//!   the thread still runnable (`vcpu->preempted`), and 6cd88243c7e0 ("KVM:
//!   x86: do not report a vCPU as preempted outside instruction
//!   boundaries") only when the last VM exit was a host interrupt
//!   (`at_instruction_boundary`, set by the external-interrupt exit
//!   handler): a vCPU pre-empted in guest code is flagged, one that exited
//!   on HLT (polling or blocked) is not. Both were backported to the 5.10
//!   and 5.15 stable trees; the profiles here follow mainline.

/// Which sched-outs of a vCPU thread set the steal-time preempted flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptedFlag {
    /// 4.9-5.18: every sched-out (pre-empted, halt-polling or blocked).
    VcpuPut,
    /// 5.19+: only a pre-emption of guest code (runnable, host-interrupt
    /// exit).
    Runnable,
}

crate::toggles! {
    /// The host kernel's KVM toggles.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct KvmFeatures {}
    /// (name, values, description) of every host KVM toggle.
    table pub KVM_FEATURES;
    defaults(_name, _v, ge);
    fn for_version = "The toggles of host kernel version `v` (`(7, 0)` is the latest tree).";
    fn set = "Set toggle `name` to `value`. Ok(false): not a host KVM toggle; \
        Err(valid values): a bad value.";
    impl Default = (7, 0), "The latest tree's.";
    toggles {
        /// Which sched-outs of a vCPU thread set the preempted flag.
        pub kvm_preempted_flag: PreemptedFlag = if ge(5, 19) { PreemptedFlag::Runnable } else { PreemptedFlag::VcpuPut },
            "kvm_preempted_flag" ("vcpu-put|runnable": "vcpu-put" => PreemptedFlag::VcpuPut, "runnable" => PreemptedFlag::Runnable)
            => "the host flags a vCPU pre-empted at every sched-out of its thread, halted or polling too (4.9-5.18), or only when guest code was pre-empted (54aa83c90198, 6cd88243c7e0, 5.19)";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_rule_changed_in_5_19() {
        assert_eq!(
            KvmFeatures::for_version((4, 18)).kvm_preempted_flag,
            PreemptedFlag::VcpuPut
        );
        assert_eq!(
            KvmFeatures::for_version((5, 18)).kvm_preempted_flag,
            PreemptedFlag::VcpuPut
        );
        assert_eq!(
            KvmFeatures::for_version((5, 19)).kvm_preempted_flag,
            PreemptedFlag::Runnable
        );
        let mut f = KvmFeatures::default();
        assert_eq!(f.set("kvm_preempted_flag", "vcpu-put"), Ok(true));
        assert_eq!(f.kvm_preempted_flag, PreemptedFlag::VcpuPut);
        assert_eq!(f.set("sis_util", "on"), Ok(false));
        assert!(f.set("kvm_preempted_flag", "always").is_err());
    }
}
