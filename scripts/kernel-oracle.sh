#!/usr/bin/env bash
# The kernel oracle's full set (docs/kernel-oracle.md): every placement scenario on each machine under
# each kernel, booted under qemu (TCG unless --kvm is passed through KVM=1), with the agreement tables,
# the domain checks and a hackbench run's wake-up locality. Results go to OUT (default ./kernel-oracle-out).
#
#   scripts/kernel-oracle.sh [--install] [KERNEL_IMAGE...]
#
# --install: apt-get install qemu-system-x86 and busybox-static, and download Debian's 6.1 and 6.12
# cloud kernels into $KDIR (default ~/.cache/schedlab-kernels), unpacked with dpkg-deb -x (nothing is
# installed as the host's kernel). Without KERNEL_IMAGE arguments, every vmlinuz-* in $KDIR is used.
# MACHINES (default "xeon-12c24t kvm-8vcpu power9-smt8") and ROUNDS (default 20) can be set.
# The fair-class scenarios (`-- scenario fair`: pipe ping-pong, short and long sleeper on a busy CPU,
# fork onto a busy CPU) run on FAIR_MACHINE (default kvm-8vcpu) with FAIR_ROUNDS (default 20).
# SETS (default "placement fair hackbench") chooses what runs, e.g. SETS=fair.
set -euo pipefail
cd "$(dirname "$0")/.."
KDIR=${KDIR:-$HOME/.cache/schedlab-kernels}
OUT=${OUT:-kernel-oracle-out}
MACHINES=${MACHINES:-"xeon-12c24t kvm-8vcpu power9-smt8"}
ROUNDS=${ROUNDS:-20}
FAIR_MACHINE=${FAIR_MACHINE:-kvm-8vcpu}
FAIR_ROUNDS=${FAIR_ROUNDS:-20}
SETS=${SETS:-"placement fair hackbench"}
has() { case " $SETS " in *" $1 "*) return 0 ;; esac; return 1; }
if [ "${1:-}" = "--install" ]; then
  shift
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-x86 busybox-static >/dev/null
  mkdir -p "$KDIR"
  (
    cd "$KDIR"
    for pat in '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$'; do
      pkg=$(apt-cache search --names-only "$pat" | awk '{print $1}' | sort -V | tail -1)
      [ -n "$pkg" ] || { echo "no package matches $pat (is bookworm in the apt sources?)" >&2; exit 2; }
      ls "$pkg"_*.deb >/dev/null 2>&1 || apt-get download "$pkg" >/dev/null
      dpkg-deb -x "$pkg"_*.deb x
    done
    cp x/boot/vmlinuz-* .
  )
fi
if [ $# -eq 0 ]; then
  set -- "$KDIR"/vmlinuz-*
fi
# the guest's schedlab: statically linked
RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu -p schedlab
GUEST=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release/schedlab
cargo build --release -p schedlab
SL=${CARGO_TARGET_DIR:-target}/release/schedlab
KVM_FLAG=()
[ "${KVM:-0}" = 1 ] && KVM_FLAG=(--kvm)
mkdir -p "$OUT"
for k in "$@"; do
  kv=$(basename "$k" | sed 's/^vmlinuz-//')
  if has placement; then
    for m in $MACHINES; do
      echo "== $m, $kv" >&2
      timeout 3600 "$SL" kernel run --machine "$m" --kernel-image "$k" --guest-binary "$GUEST" "${KVM_FLAG[@]}" \
        --rounds "$ROUNDS" --boot-timeout 900 --timeout 3000 --save-dir "$OUT/$m-$kv" --json "$OUT/$m-$kv.json" \
        -- scenario all | tee "$OUT/$m-$kv.txt"
    done
  fi
  if has fair; then
    echo "== fair class on $FAIR_MACHINE, $kv" >&2
    timeout 3600 "$SL" kernel run --machine "$FAIR_MACHINE" --kernel-image "$k" --guest-binary "$GUEST" "${KVM_FLAG[@]}" \
      --rounds "$FAIR_ROUNDS" --boot-timeout 900 --timeout 3000 --save-dir "$OUT/fair-$FAIR_MACHINE-$kv" \
      --json "$OUT/fair-$FAIR_MACHINE-$kv.json" -- scenario fair | tee "$OUT/fair-$FAIR_MACHINE-$kv.txt"
  fi
  if has hackbench; then
    echo "== hackbench on xeon-12c24t, $kv" >&2
    timeout 3600 "$SL" kernel run --machine xeon-12c24t --kernel-image "$k" --guest-binary "$GUEST" "${KVM_FLAG[@]}" \
      --boot-timeout 900 --timeout 3000 --save-dir "$OUT/hackbench-$kv" \
      -- bench hackbench -g 2 -l 200 | tee "$OUT/hackbench-$kv.txt"
  fi
done
