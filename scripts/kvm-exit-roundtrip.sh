#!/usr/bin/env bash
# Measure this machine's VM exit + entry round trip with a minimal KVM guest
# (for comparison with the host layer's exit_entry_ns, docs/vm.md): a
# real-mode guest that (a) executes N CPUID instructions, each a VM exit that
# KVM handles in the kernel and re-enters (one KVM_RUN, timed, divided by
# N), and (b) loops on an I/O port write, each an exit to user space and a
# new KVM_RUN. Needs /dev/kvm (read-write) and a C compiler.
#
# What it measures is whatever virtualisation this machine offers: on a
# nested or paravirtual backend (e.g. PVM) it is that backend's cost, not
# hardware VMX/SVM's.
#
# Usage: scripts/kvm-exit-roundtrip.sh [N]   (default 1000000)
set -eu
n=${1:-1000000}
case $n in ''|*[!0-9]*) echo "kvm-exit-roundtrip: N must be a number from 4 to 1000000000" >&2; exit 2;; esac
if [ "${#n}" -gt 10 ] || [ "$n" -lt 4 ] || [ "$n" -gt 1000000000 ]; then
    echo "kvm-exit-roundtrip: N must be a number from 4 to 1000000000" >&2
    exit 2
fi
[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "kvm-exit-roundtrip: /dev/kvm is not usable" >&2; exit 2; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "kvm-exit-roundtrip: no C compiler ($cc)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/kvmrt.c" <<'C'
/* VM exit+entry round trips of a minimal KVM guest (real mode):
 * (a) CPUID exits, handled inside KVM (no return to user space), timed over
 *     one KVM_RUN that executes N of them;
 * (b) I/O port exits to user space, one KVM_RUN each. */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int vm_vcpu(uint8_t *code, size_t len, int *vcpufd, struct kvm_run **run){
  int kvm=open("/dev/kvm",O_RDWR|O_CLOEXEC); if(kvm<0){perror("/dev/kvm");exit(2);}
  int vm=ioctl(kvm,KVM_CREATE_VM,0); if(vm<0){perror("KVM_CREATE_VM");exit(2);}
  uint8_t *mem=mmap(NULL,0x1000,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  memcpy(mem,code,len);
  struct kvm_userspace_memory_region r={.slot=0,.guest_phys_addr=0x1000,.memory_size=0x1000,.userspace_addr=(uint64_t)mem};
  if(ioctl(vm,KVM_SET_USER_MEMORY_REGION,&r)<0){perror("KVM_SET_USER_MEMORY_REGION");exit(2);}
  *vcpufd=ioctl(vm,KVM_CREATE_VCPU,0); if(*vcpufd<0){perror("KVM_CREATE_VCPU");exit(2);}
  int sz=ioctl(kvm,KVM_GET_VCPU_MMAP_SIZE,0);
  *run=mmap(NULL,sz,PROT_READ|PROT_WRITE,MAP_SHARED,*vcpufd,0);
  struct kvm_sregs s; ioctl(*vcpufd,KVM_GET_SREGS,&s); s.cs.base=0; s.cs.selector=0; ioctl(*vcpufd,KVM_SET_SREGS,&s);
  struct kvm_regs g={.rip=0x1000,.rflags=2}; ioctl(*vcpufd,KVM_SET_REGS,&g);
  return vm;
}
int main(int argc,char**argv){
  uint32_t n=argc>1?atoi(argv[1]):1000000;
  /* (a) mov esi,n; L: xor eax,eax; cpuid; dec esi; jnz L; out 0x10,al; hlt */
  uint8_t a[]={0x66,0xBE,n,n>>8,n>>16,n>>24, 0x66,0x31,0xC0, 0x0F,0xA2, 0x66,0x4E, 0x75,0xF7, 0xE6,0x10, 0xF4};
  int fd; struct kvm_run*run; vm_vcpu(a,sizeof a,&fd,&run);
  double t0=now(); if(ioctl(fd,KVM_RUN,0)<0){perror("KVM_RUN");return 2;}
  double t1=now();
  if(run->exit_reason!=KVM_EXIT_IO){fprintf(stderr,"unexpected exit %d\n",run->exit_reason);return 2;}
  printf("cpuid exit+entry (in-kernel): %.0f ns per round trip over %u\n",(t1-t0)/n,n);
  /* (b) L: out 0x10,al; jmp L */
  uint8_t b[]={0xE6,0x10,0xEB,0xFC};
  vm_vcpu(b,sizeof b,&fd,&run);
  uint32_t m=n/4; ioctl(fd,KVM_RUN,0);
  t0=now();
  for(uint32_t i=0;i<m;i++){ if(ioctl(fd,KVM_RUN,0)<0||run->exit_reason!=KVM_EXIT_IO){fprintf(stderr,"exit %d\n",run->exit_reason);return 2;} }
  t1=now();
  printf("port I/O exit to user space and back (KVM_RUN loop): %.0f ns per round trip over %u\n",(t1-t0)/m,m);
  return 0;
}
C
"$cc" -O2 -o "$dir/kvmrt" "$dir/kvmrt.c"
"$dir/kvmrt" "$n"
