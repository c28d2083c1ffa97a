#!/usr/bin/env bash
# Struct layouts for the kernel-object inventory (crates/sim/src/costs/kernel_objects.rs,
# docs/costs.md "Kernel objects per path (inventory)"), read from the BTF type information of the
# kernels the kernel oracle uses (scripts/kernel-oracle.sh --install puts them in $KDIR).
#
#   scripts/btf-inventory.sh [KERNEL_IMAGE...]
#
# For each bzImage (default: every vmlinuz-* in $KDIR, default ~/.cache/schedlab-kernels) the
# compressed payload is found and unpacked to a vmlinux ELF as the kernel's scripts/extract-vmlinux
# does (look for each compressor's magic, try to decompress from there, keep the first result that is
# an ELF file), then `pahole --hex -C STRUCT` (Debian package dwarves) dumps the structs below into
# crates/sim/fixtures/btf/<kernel-release>.txt. The fixture is what the unit tests of kernel_objects.rs
# parse, so the sizes in the code cannot drift from it. Needs: pahole, python3, gzip, xz, zstd, lz4.
# With NO_IMAGE=1 (or when an image carries no BTF), /sys/kernel/btf/vmlinux of the running host is
# used instead, written as <uname -r>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
KDIR=${KDIR:-$HOME/.cache/schedlab-kernels}
OUT=crates/sim/fixtures/btf
STRUCTS=${STRUCTS:-"pipe_inode_info pipe_buffer page inode file files_struct wait_queue_head
  wait_queue_entry task_struct sched_entity rq cfs_rq socket socket_wq sock unix_sock sk_buff
  tcp_sock softnet_data futex_hash_bucket futex_q mm_struct tick_sched sched_domain sched_group
  sched_group_capacity sched_domain_shared skb_shared_info pid task_group llist_head sock_common inet_sock
  inet_connection_sock pcpu_hot"}
command -v pahole >/dev/null || { echo "pahole missing: apt-get install -y dwarves" >&2; exit 1; }
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# extract-vmlinux: try every occurrence of every magic until one decompresses to an ELF file.
extract() {
  local img=$1 out=$2 magic tool off
  for pair in "1f8b08:gzip -dc" "fd377a585a00:xz -dc" "28b52ffd:zstd -dc" "5d000000:lzma -dc" \
              "02214c18:lz4 -dc" "425a68:bzip2 -dc"; do
    magic=${pair%%:*}; tool=${pair#*:}
    for off in $(python3 -c '
import sys
d = open(sys.argv[1], "rb").read(); m = bytes.fromhex(sys.argv[2]); i = d.find(m)
while i >= 0:
    print(i); i = d.find(m, i + 1)
' "$img" "$magic"); do
      tail -c +$((off + 1)) "$img" | $tool > "$out" 2>/dev/null || true
      if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
        echo "$img: $tool payload at byte $off" >&2
        return 0
      fi
    done
  done
  return 1
}

dump() {
  local src=$1 release=$2 origin=$3 file=$TMP/$2.txt
  {
    echo "# BTF struct layouts of $release ($origin), by scripts/btf-inventory.sh"
    echo "# pahole $(pahole --version) --hex -C <struct>"
    for s in $STRUCTS; do
      if pahole --hex -C "$s" "$src" > "$TMP/s" 2>/dev/null && [ -s "$TMP/s" ]; then
        cat "$TMP/s"; echo
      else
        echo "# struct $s: not in this kernel's BTF"; echo
      fi
    done
  } > "$file"
  BTF_DUMP="$file" BTF_OUT="$PWD/$OUT/$release.tsv" \
    cargo test -q -p sim --features procedures --lib costs::kernel_objects::tests::trim_btf_dump -- --exact >/dev/null
  echo "wrote $OUT/$release.tsv" >&2
}

use_host() {
  dump /sys/kernel/btf/vmlinux "$(uname -r)" "host /sys/kernel/btf/vmlinux"
}

if [ "${NO_IMAGE:-}" = 1 ]; then use_host; exit 0; fi
[ $# -gt 0 ] || set -- "$KDIR"/vmlinuz-*
for img in "$@"; do
  release=$(basename "$img"); release=${release#vmlinuz-}
  if ! extract "$img" "$TMP/vmlinux"; then
    echo "$img: no compressed ELF payload found" >&2; continue
  fi
  if ! readelf -S "$TMP/vmlinux" | grep -q '\.BTF'; then
    echo "$img: no .BTF section; using the host's /sys/kernel/btf/vmlinux" >&2
    use_host; continue
  fi
  dump "$TMP/vmlinux" "$release" "$(basename "$img"), .BTF of the decompressed bzImage"
done
