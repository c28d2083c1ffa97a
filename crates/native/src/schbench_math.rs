//! schbench's think time: the naive matrix multiplication each request does
//! `operations` times, ported so that it loads the CPU as the C tool does.
//!
//! Mirrors masoncl/schbench `schbench.c` at commit 24e32b8e (Dec 2025):
//! `do_some_math()`, with the matrices `main()` sizes and `message_thread()`
//! allocates, as the tool's Makefile builds it (`gcc -O2`; checked with
//! Debian's gcc 12.2 on x86-64).
//!
//! What the C function does, and what this port keeps:
//! - **Memory.** One block of `3 n n` `unsigned long`s per worker, holding
//!   `m1`, `m2` and `m3` one after the other, from `malloc`, never
//!   initialised: `m1` and `m2` are only read. At the default footprint
//!   (254 KiB) glibc serves the `malloc` with a fresh anonymous mapping, so
//!   every read of `m1` and `m2` lands on the kernel's shared zero page and
//!   only `m3` gets pages of its own. The block here is zeroed memory from
//!   the global allocator (`calloc`, which glibc serves with the same fresh
//!   mapping and does not clear again), and `m1`/`m2` are never written
//!   either: the same pages are touched per request.
//! - **Arithmetic and order.** For `i`, then `j`, then `k`:
//!   `m3[i n + j] += m1[i n + k] * m2[k n + j]` in wrapping 64-bit integers,
//!   after `m3[i n + j] = 0`.
//! - **Machine code.** The `+=` goes through memory in C and `m3` may alias
//!   `m1` or `m2`, so gcc keeps the running sum in a register but stores it
//!   to `m3[i n + j]` after every `k`; it neither vectorises nor unrolls the
//!   loop: per `k` two loads, one scalar `imul`, one store, eight
//!   instructions. A Rust loop does not come out the same. The port's
//!   former loop (bounds checks, the sum kept in a register) did the math
//!   28 % slower than the C build on the development VM (Sapphire Rapids,
//!   KVM). Written with raw pointers and the store, LLVM unrolls it by two
//!   (18 % less time than the rolled loop, standalone); kept rolled by an
//!   empty `asm!` in its body, its own register and addressing choices
//!   still did the math 9 % faster than the C build. The loop is therefore
//!   written out in assembly on x86-64: the same eight instructions, with
//!   the same registers, so the same bytes, as the C build's inner loop.
//! - **Placement.** How fast those bytes run on this host depends on where
//!   they sit: the C build's inner loop starts 48 bytes into a 64-byte block
//!   of code (at 0x38b0 in the binary) and its 25 bytes run into the next
//!   block, and the same C source with its loops aligned to 64 bytes
//!   (`-falign-loops=64`) does the math 14 % faster (request latency p50 of
//!   `-C -m 1 -t 1`: 2,006 against 2,340 µs). The assembly puts its loop at
//!   the same offset. `scripts/compare-native.sh` prints the offset of both
//!   loops, so a C binary built differently shows.
//!
//! Other architectures run the portable loop in [`multiply_portable`]: the
//! same arithmetic and stores, but its code is LLVM's and has not been
//! compared with a C build there.

/// Where the inner loop starts within a 64-byte block of code: 48, as in
/// the C build (see the module documentation).
#[cfg(target_arch = "x86_64")]
const INNER_LOOP_OFFSET: usize = 48;

/// A worker's matrices: schbench's `td->data`, one block of `3 n n` words
/// holding `m1`, `m2` and `m3` one after the other.
pub(crate) struct Matrices {
    data: Vec<u64>,
    n: usize,
}

impl Matrices {
    /// Zeroed matrices of side `n` (see the module documentation on why
    /// zeroed and never written).
    pub(crate) fn new(n: usize) -> Self {
        Matrices {
            data: vec![0; 3 * n * n],
            n,
        }
    }

    /// `m3 = m1 * m2`: one of schbench's `operations`.
    pub(crate) fn multiply(&mut self) {
        #[cfg(target_arch = "x86_64")]
        multiply_x86_64(&mut self.data, self.n);
        #[cfg(not(target_arch = "x86_64"))]
        multiply_portable(&mut self.data, self.n);
    }
}

/// The C build's `do_some_math` on x86-64, in AT&T syntax so that it reads
/// as `objdump -d` shows the C binary: `m1`, `m2`, `m3` are the three
/// thirds of `data`.
///
/// Registers as gcc allocated them in the inner loop: `%rax` walks the
/// `m1` row, `%rsi` the `m2` column (stride `%r8` = `8 n`), `%rdx` holds the
/// product, `%rcx` the running sum, `%rdi` points at `m3[i n + j]`, and the
/// loop ends when `%rax` reaches `%r9`, the end of the row. The outer loops
/// run `n` and `n²` times against the inner loop's `n³` and are written
/// plainly.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn multiply_x86_64(data: &mut [u64], n: usize) {
    let nn = n.checked_mul(n).expect("matrix side overflows");
    assert!(data.len() >= 3 * nn, "matrix block too small");
    if n == 0 {
        return;
    }
    let base = data.as_mut_ptr();
    // SAFETY: the assembly reads `data[0 .. 2 n n]` and writes
    // `data[2 n n .. 3 n n]`, all within `data` (checked above), through
    // the one `&mut` borrow; it uses no stack and restores nothing but the
    // registers it declares as clobbered.
    unsafe {
        std::arch::asm!(
            // Pad (once per call) so that label 5, the inner loop, starts
            // INNER_LOOP_OFFSET bytes into a 64-byte block.
            ".p2align 6",
            ".skip ({off} - (5f - 4f)) & 63, 0x90",
            "4:",
            // i loop: %r9 = end of the m1 row, the column pointer at m2[0],
            // n columns to go.
            "2:",
            "lea ({m1row},%r8), %r9",
            "mov {m2}, {col}",
            "mov %r8, {cols}",
            "shr $3, {cols}",
            // j loop: m3[i n + j] = 0; %rax = &m1[i n], %rsi = &m2[j].
            "3:",
            "movq $0, (%rdi)",
            "mov {m1row}, %rax",
            "mov {col}, %rsi",
            "xor %ecx, %ecx",
            // k loop: m3[i n + j] += m1[i n + k] * m2[k n + j].
            "5:",
            "mov (%rax), %rdx",
            "imul (%rsi), %rdx",
            "add $8, %rax",
            "add %r8, %rsi",
            "add %rdx, %rcx",
            "mov %rcx, (%rdi)",
            "cmp %r9, %rax",
            "jne 5b",
            // Next j: the next m3 element and m2 column.
            "add $8, %rdi",
            "add $8, {col}",
            "sub $1, {cols}",
            "jne 3b",
            // Next i: the next m1 row; m1 ends where m2 starts.
            "mov %r9, {m1row}",
            "cmp {m2}, {m1row}",
            "jne 2b",
            m1row = inout(reg) base => _,
            m2 = in(reg) base.add(nn),
            col = out(reg) _,
            cols = out(reg) _,
            in("r8") n * 8,
            inout("rdi") base.add(2 * nn) => _,
            out("rax") _,
            out("rcx") _,
            out("rdx") _,
            out("rsi") _,
            out("r9") _,
            off = const INNER_LOOP_OFFSET,
            options(att_syntax, nostack),
        );
    }
}

/// The same product in Rust, for other architectures (and as the reference
/// the x86-64 assembly is tested against): the same order, wrapping
/// arithmetic and a store to `m3[i n + j]` after every `k`, through raw
/// pointers into the one block as in C.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn multiply_portable(data: &mut [u64], n: usize) {
    let nn = n.checked_mul(n).expect("matrix side overflows");
    assert!(data.len() >= 3 * nn, "matrix block too small");
    let base = data.as_mut_ptr();
    // SAFETY: every offset is below `3 n n <= data.len()` (i, j, k < n),
    // and all three pointers come from the one `&mut` borrow of `data`.
    unsafe {
        let (m1, m2, m3) = (base, base.add(nn), base.add(2 * nn));
        for i in 0..n {
            for j in 0..n {
                let dst = m3.add(i * n + j);
                *dst = 0;
                for k in 0..n {
                    *dst =
                        (*dst).wrapping_add((*m1.add(i * n + k)).wrapping_mul(*m2.add(k * n + j)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `m3 = m1 * m2` with indices, for checking the others.
    fn product(m1: &[u64], m2: &[u64], n: usize) -> Vec<u64> {
        let mut m3 = vec![0u64; n * n];
        for i in 0..n {
            for j in 0..n {
                let mut s = 0u64;
                for k in 0..n {
                    s = s.wrapping_add(m1[i * n + k].wrapping_mul(m2[k * n + j]));
                }
                m3[i * n + j] = s;
            }
        }
        m3
    }

    /// Deterministic words that overflow when multiplied.
    fn words(len: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect()
    }

    #[test]
    fn multiply_computes_the_wrapping_product_in_the_last_third() {
        for n in [1usize, 2, 3, 7, 16, 33] {
            let nn = n * n;
            let mut data = words(3 * nn, n as u64 + 1);
            let (m1, m2) = (data[..nn].to_vec(), data[nn..2 * nn].to_vec());
            let want = product(&m1, &m2, n);
            let mut m = Matrices {
                data: data.clone(),
                n,
            };
            m.multiply();
            assert_eq!(&m.data[..2 * nn], &data[..2 * nn], "n={n}: m1, m2 written");
            assert_eq!(&m.data[2 * nn..], &want[..], "n={n}");
            multiply_portable(&mut data, n);
            assert_eq!(data, m.data, "n={n}: portable loop differs");
        }
    }

    #[test]
    fn multiply_leaves_memory_past_the_matrices_alone() {
        let n = 5;
        let mut data = words(3 * n * n + 4, 9);
        let tail = data[3 * n * n..].to_vec();
        #[cfg(target_arch = "x86_64")]
        multiply_x86_64(&mut data, n);
        #[cfg(not(target_arch = "x86_64"))]
        multiply_portable(&mut data, n);
        assert_eq!(&data[3 * n * n..], &tail[..]);
    }

    #[test]
    fn zeroed_matrices_stay_zero_and_size_zero_is_a_no_op() {
        let mut m = Matrices::new(4);
        assert_eq!(m.data.len(), 48);
        m.multiply();
        assert!(m.data.iter().all(|&x| x == 0));
        let mut empty = Matrices::new(0);
        empty.multiply();
        assert!(empty.data.is_empty());
    }
}
