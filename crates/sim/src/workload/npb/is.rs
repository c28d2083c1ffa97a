//! IS (integer sort, bucketed counting sort), NPB3.3-OMP `IS/is.c`:
//! `2^k` keys below `2^m` in `2^b` buckets, 10 ranking iterations (is.c:
//! k/m/b = S 16/11/9, W 20/16/10, A 23/19/10, B 25/21/10, C 27/23/10,
//! D 31/27/10; keys are `int`, `long` at class D).
//!
//! `rank` (compiled with USE_BUCKETS, the default) is one parallel region:
//! each thread counts its static share of `key_array` into its own bucket
//! histogram (`!$omp for`, a barrier), computes its bucket pointers from
//! every thread's histogram (`b x threads` additions each), scatters its
//! keys into `key_buff2` at those pointers (a barrier: every thread writes
//! into every bucket, so its writes spread over the whole buffer), then
//! ranks the keys of each bucket into its section of `key_buff1`
//! (`schedule(dynamic)`, modelled as a static split of the buckets). The
//! master changes two keys before each iteration and checks five ranks
//! after it (partial verification, serial and small). One untimed
//! iteration runs before the timer (NPB's "free" iteration), which also
//! places the buffers' pages where the timed iterations use them.
//!
//! Operations: is.c's Mop/s counts the keys ranked, `10 x 2^k`. One key
//! costs (an estimate) 10 integer operations over the three passes, and
//! every `key_buff1` entry 3 (cleared, counted into, summed). Memory: a
//! key is read twice from `key_array`, written and read once in
//! `key_buff2`; `key_buff1` is cleared, incremented at random within a
//! bucket's section (cache-resident) and summed.

use super::team::{Team, Touch};
use super::{Class, Info, Size};
use crate::rq::RunQueue;

const KEYS_LOG2: [u32; 6] = [16, 20, 23, 25, 27, 31];
const MAX_KEY_LOG2: [u32; 6] = [11, 16, 19, 21, 23, 27];
const BUCKETS_LOG2: [u32; 6] = [9, 10, 10, 10, 10, 10];
const ITERATIONS: u32 = 10;

/// The report's values.
pub fn info(c: Class) -> Info {
    let keys = 1u64 << KEYS_LOG2[c.index()];
    Info {
        size: Size::Count(keys),
        iterations: ITERATIONS,
        mops: ITERATIONS as f64 * keys as f64,
        optype: "keys ranked",
    }
}

/// Build the team's programs.
pub fn build<R: RunQueue>(c: Class, t: &mut Team<'_, '_, R>) {
    let i = c.index();
    let keys = 1u64 << KEYS_LOG2[i];
    let max_key = 1u64 << MAX_KEY_LOG2[i];
    let buckets = 1u64 << BUCKETS_LOG2[i];
    let isz = if c == Class::D { 8 } else { 4 };
    let key_array = t.array("key_array", keys * isz);
    let key_buff1 = t.array("key_buff1", max_key * isz);
    let key_buff2 = t.array("key_buff2", keys * isz);
    let threads = t.threads() as u64;
    // create_seq: a parallel region, each thread its slab of keys
    t.fork();
    t.pfor(keys, 20.0, &[Touch::Slab(key_array, 1.0)], false);
    t.join();
    let rank = |t: &mut Team<'_, '_, R>| {
        t.serial(10.0, &[]);
        t.fork();
        t.pfor(keys, 3.0, &[Touch::Slab(key_array, 1.0)], false);
        // bucket pointers: every thread sums the histograms
        t.pfor(threads, (buckets * threads) as f64, &[], true);
        t.pfor(
            keys,
            4.0,
            &[Touch::Slab(key_array, 1.0), Touch::Scatter(key_buff2, 1.0)],
            false,
        );
        t.pfor(
            buckets,
            (3.0 * keys as f64 + 3.0 * max_key as f64) / buckets as f64,
            &[Touch::Slab(key_buff2, 1.0), Touch::Slab(key_buff1, 2.0)],
            false,
        );
        t.join();
        // partial verification
        t.serial(50.0, &[]);
    };
    // the free iteration
    rank(t);
    super::timer_start(t);
    t.repeat(ITERATIONS, |t| rank(t));
    super::timer_stop(t);
}
