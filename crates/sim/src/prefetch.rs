//! Software prefetch hints for the simulator's hot path.

/// Ask the hardware to bring the first `lines` cache lines of `r` into the
/// first-level cache (x86-64; nothing elsewhere). A hint only: it changes no
/// state, cannot fault, and a wrong guess costs a little bandwidth.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let p = r as *const T as *const i8;
        for i in 0..lines {
            // SAFETY: prefetching has no effect on memory or program state;
            // the address is within or just past a live object, and a
            // prefetch of any address cannot fault.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * i));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, lines);
}
