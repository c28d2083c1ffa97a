//! `CpuMask`: a set of CPU numbers, the analogue of the kernel's `struct cpumask`.
//!
//! Masks of up to 256 CPUs (every preset but the largest imports) live inline
//! in four words, so cloning one is a 40-byte copy and scanning one never
//! touches the heap. Larger masks spill to a boxed word slice sized to the
//! highest CPU set, up to [`CpuMask::MAX_CPUS`].
//!
//! The iteration helpers mirror the kernel's: [`CpuMask::iter_wrap`] is
//! `for_each_cpu_wrap()`, and [`CpuMask::first_wrap`] / [`CpuMask::next_wrap`]
//! are the two halves of it as `cpumask_next_wrap()` exposes them, which is what
//! a scan that modifies the mask it walks needs (`select_idle_core()` clears a
//! whole SMT core from the scan mask in the middle of `select_idle_cpu()`).

use crate::error::TopologyError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::iter::Chain;
use std::str::FromStr;

const BITS: usize = 64;
const INLINE_WORDS: usize = 4;
const MAX_WORDS: usize = CpuMask::MAX_CPUS / BITS;

#[derive(Clone)]
enum Words {
    Inline([u64; INLINE_WORDS]),
    Heap(Box<[u64]>),
}

/// A set of CPUs `0..MAX_CPUS`.
///
/// Equality and hashing are by content: a mask that once held CPU 1000 and
/// had it cleared again equals one that never did.
///
/// ```
/// use topology::CpuMask;
/// let mut m = CpuMask::parse_list("0-3,8").unwrap();
/// m.clear(2);
/// assert_eq!(m.to_string(), "0-1,3,8");
/// assert_eq!(m.iter_wrap(3).collect::<Vec<_>>(), vec![3, 8, 0, 1]);
/// ```
#[derive(Clone)]
pub struct CpuMask {
    words: Words,
}

impl Default for CpuMask {
    fn default() -> Self {
        CpuMask {
            words: Words::Inline([0; INLINE_WORDS]),
        }
    }
}

/// Index of the first set bit in `words` within `[from, end)`.
#[inline]
fn find_next(words: &[u64], from: usize, end: usize) -> Option<usize> {
    let end = end.min(words.len() * BITS);
    if from >= end {
        return None;
    }
    let mut idx = from / BITS;
    let mut cur = words[idx] & (!0u64 << (from % BITS));
    loop {
        if cur != 0 {
            let bit = idx * BITS + cur.trailing_zeros() as usize;
            return (bit < end).then_some(bit);
        }
        idx += 1;
        if idx * BITS >= end {
            return None;
        }
        cur = words[idx];
    }
}

/// Ascending iterator over the set bits of a word slice in `[from, end)`.
/// Borrows the words; never allocates.
#[derive(Clone, Debug)]
pub struct BitIter<'a> {
    words: &'a [u64],
    idx: usize,
    cur: u64,
    end: usize,
}

impl<'a> BitIter<'a> {
    fn new(words: &'a [u64], from: usize, end: usize) -> Self {
        let end = end.min(words.len() * BITS);
        if from >= end {
            return BitIter {
                words,
                idx: words.len(),
                cur: 0,
                end: 0,
            };
        }
        let idx = from / BITS;
        BitIter {
            words,
            idx,
            cur: words[idx] & (!0u64 << (from % BITS)),
            end,
        }
    }
}

impl Iterator for BitIter<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.cur != 0 {
                let bit = self.idx * BITS + self.cur.trailing_zeros() as usize;
                if bit >= self.end {
                    self.cur = 0;
                    return None;
                }
                self.cur &= self.cur - 1;
                return Some(bit);
            }
            self.idx += 1;
            if self.idx >= self.words.len() || self.idx * BITS >= self.end {
                self.idx = self.words.len();
                return None;
            }
            self.cur = self.words[self.idx];
        }
    }
}

impl CpuMask {
    /// Largest number of CPUs a mask (and so a topology) can describe; the
    /// kernel's default `NR_CPUS` on x86-64 distribution configs is 8192,
    /// but 4096 covers every machine schedlab models.
    pub const MAX_CPUS: usize = 4096;

    /// The empty mask.
    pub fn new() -> Self {
        Self::default()
    }

    /// A mask with exactly the given CPUs.
    ///
    /// # Panics
    /// If a CPU is `>= MAX_CPUS` (a programming error; use
    /// [`CpuMask::parse_list`] for untrusted input).
    pub fn from_cpus<I: IntoIterator<Item = usize>>(it: I) -> Self {
        let mut m = Self::new();
        for cpu in it {
            m.set(cpu);
        }
        m
    }

    /// CPUs `first..=last_inclusive`; empty when `first > last_inclusive`.
    ///
    /// # Panics
    /// If `last_inclusive >= MAX_CPUS` and the range is not empty.
    pub fn from_range(first: usize, last_inclusive: usize) -> Self {
        let mut m = Self::new();
        if first > last_inclusive {
            return m;
        }
        assert!(
            last_inclusive < Self::MAX_CPUS,
            "CpuMask::from_range: CPU {last_inclusive} >= MAX_CPUS ({})",
            Self::MAX_CPUS
        );
        m.grow(last_inclusive / BITS + 1);
        let w = m.words_mut();
        for (i, word) in w
            .iter_mut()
            .enumerate()
            .take(last_inclusive / BITS + 1)
            .skip(first / BITS)
        {
            let lo = (i * BITS).max(first) - i * BITS;
            let hi = ((i + 1) * BITS - 1).min(last_inclusive) - i * BITS;
            let bits = if hi - lo + 1 == BITS {
                !0u64
            } else {
                ((1u64 << (hi - lo + 1)) - 1) << lo
            };
            *word |= bits;
        }
        m
    }

    #[inline]
    fn words(&self) -> &[u64] {
        match &self.words {
            Words::Inline(w) => w,
            Words::Heap(w) => w,
        }
    }

    #[inline]
    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.words {
            Words::Inline(w) => w,
            Words::Heap(w) => w,
        }
    }

    /// Make room for at least `n` words (n <= MAX_WORDS).
    fn grow(&mut self, n: usize) {
        let have = self.words().len();
        if n <= have {
            return;
        }
        debug_assert!(n <= MAX_WORDS);
        let mut v = vec![0u64; n].into_boxed_slice();
        v[..have].copy_from_slice(self.words());
        self.words = Words::Heap(v);
    }

    /// The words up to and including the last non-zero one.
    fn trimmed(&self) -> &[u64] {
        let w = self.words();
        let n = w.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
        &w[..n]
    }

    /// A mask able to hold `n` words, all zero.
    fn with_words(n: usize) -> Self {
        let mut m = Self::new();
        m.grow(n);
        m
    }

    /// Add `cpu`.
    ///
    /// # Panics
    /// If `cpu >= MAX_CPUS`.
    #[inline]
    pub fn set(&mut self, cpu: usize) {
        assert!(
            cpu < Self::MAX_CPUS,
            "CpuMask::set: CPU {cpu} >= MAX_CPUS ({})",
            Self::MAX_CPUS
        );
        self.grow(cpu / BITS + 1);
        self.words_mut()[cpu / BITS] |= 1u64 << (cpu % BITS);
    }

    /// Remove `cpu` (no-op when absent or out of range).
    #[inline]
    pub fn clear(&mut self, cpu: usize) {
        if let Some(w) = self.words_mut().get_mut(cpu / BITS) {
            *w &= !(1u64 << (cpu % BITS));
        }
    }

    /// Whether `cpu` is in the mask (false when out of range).
    #[inline]
    pub fn test(&self, cpu: usize) -> bool {
        self.words()
            .get(cpu / BITS)
            .is_some_and(|w| w & (1u64 << (cpu % BITS)) != 0)
    }

    /// Number of CPUs in the mask (`cpumask_weight`).
    #[inline]
    pub fn weight(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    /// True when no CPU is set.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.words().iter().all(|&w| w == 0)
    }

    /// Lowest CPU in the mask (`cpumask_first`).
    #[inline]
    pub fn first(&self) -> Option<usize> {
        find_next(self.words(), 0, Self::MAX_CPUS)
    }

    /// Highest CPU in the mask (`cpumask_last`).
    pub fn last(&self) -> Option<usize> {
        let w = self.trimmed();
        w.last()
            .map(|&x| (w.len() - 1) * BITS + (BITS - 1 - x.leading_zeros() as usize))
    }

    /// First CPU `>= cpu` in the mask. Note the kernel's `cpumask_next(n)`
    /// is strictly after `n`, i.e. `next_from(n + 1)`.
    #[inline]
    pub fn next_from(&self, cpu: usize) -> Option<usize> {
        find_next(self.words(), cpu, Self::MAX_CPUS)
    }

    /// Set CPUs in ascending order.
    pub fn iter(&self) -> BitIter<'_> {
        BitIter::new(self.words(), 0, Self::MAX_CPUS)
    }

    /// The kernel's `for_each_cpu_wrap(cpu, mask, start)`: the set CPUs
    /// `>= start` in ascending order, then those `< start`. Walks a snapshot
    /// of the mask as borrowed; to modify the mask during a scan use
    /// [`CpuMask::first_wrap`] / [`CpuMask::next_wrap`].
    pub fn iter_wrap(&self, start: usize) -> Chain<BitIter<'_>, BitIter<'_>> {
        let w = self.words();
        BitIter::new(w, start, Self::MAX_CPUS).chain(BitIter::new(w, 0, start))
    }

    /// Where a wrapped walk beginning at `start` begins: the first set CPU
    /// `>= start`, else the first set CPU `< start`. This is the kernel's
    /// `cpumask_next_wrap(start - 1, mask, start, false)`, the initialiser of
    /// `for_each_cpu_wrap`.
    #[inline]
    pub fn first_wrap(&self, start: usize) -> Option<usize> {
        let w = self.words();
        find_next(w, start, Self::MAX_CPUS).or_else(|| find_next(w, 0, start))
    }

    /// The step of a wrapped walk over a *live* mask, with the semantics of
    /// the kernel's `cpumask_next_wrap(prev, mask, start, true)` as used by
    /// `for_each_cpu_wrap` (v5.x; `__for_each_wrap()` in v6.x behaves the
    /// same).
    ///
    /// The walk visits positions in the order `start, start+1, ..,
    /// MAX_CPUS-1, 0, 1, .., start-1`. Given the position `prev` last
    /// visited, this returns the next CPU *currently* set in the mask that
    /// comes after `prev` in that order, or `None` when none does before the
    /// walk would reach `start` again. Concretely:
    ///
    /// - `prev >= start`: the first set CPU in `prev+1..MAX_CPUS`, else the
    ///   first set CPU in `0..start`;
    /// - `prev < start` (already wrapped): the first set CPU in
    ///   `prev+1..start`.
    ///
    /// Because the answer is computed from the mask at the time of the call,
    /// bits cleared mid-walk (ahead of or behind `prev`) are simply not
    /// visited, and `prev` itself need not still be set:
    ///
    /// ```
    /// use topology::CpuMask;
    /// let mut scan = CpuMask::from_range(0, 7);
    /// let mut seen = vec![];
    /// let mut cur = scan.first_wrap(5);
    /// while let Some(cpu) = cur {
    ///     seen.push(cpu);
    ///     if cpu == 6 {
    ///         // like select_idle_core(): drop the whole "core" {6,7,0,1}
    ///         for c in [6, 7, 0, 1] { scan.clear(c); }
    ///     }
    ///     cur = scan.next_wrap(cpu, 5);
    /// }
    /// assert_eq!(seen, vec![5, 6, 2, 3, 4]);
    /// ```
    ///
    /// Always inlined: the wake-up path's scans call it once per CPU.
    #[inline(always)]
    pub fn next_wrap(&self, prev: usize, start: usize) -> Option<usize> {
        let w = self.words();
        if prev >= start {
            find_next(w, prev + 1, Self::MAX_CPUS).or_else(|| find_next(w, 0, start))
        } else {
            find_next(w, prev + 1, start)
        }
    }

    /// `f` word by word; a result on the heap holds `len(self, o)` words.
    #[inline]
    fn combine_with(
        &self,
        o: &CpuMask,
        f: impl Fn(u64, u64) -> u64,
        len: impl Fn(&CpuMask, &CpuMask) -> usize,
    ) -> CpuMask {
        if let (Words::Inline(a), Words::Inline(b)) = (&self.words, &o.words) {
            // both inline (up to 256 CPUs: the wake-up path's masks on
            // every preset): four words, and no length to find first
            return CpuMask {
                words: Words::Inline(std::array::from_fn(|i| f(a[i], b[i]))),
            };
        }
        self.combine_words(o, len(self, o), f)
    }

    fn combine_words(&self, o: &CpuMask, n: usize, f: impl Fn(u64, u64) -> u64) -> CpuMask {
        let (a, b) = (self.words(), o.words());
        let mut r = CpuMask::with_words(n);
        for (i, w) in r.words_mut().iter_mut().enumerate() {
            *w = f(
                a.get(i).copied().unwrap_or(0),
                b.get(i).copied().unwrap_or(0),
            );
        }
        r
    }

    /// Intersection (`cpumask_and`).
    #[inline]
    pub fn and(&self, o: &CpuMask) -> CpuMask {
        self.combine_with(
            o,
            |a, b| a & b,
            |a, b| a.trimmed().len().min(b.trimmed().len()),
        )
    }

    /// Union (`cpumask_or`).
    #[inline]
    pub fn or(&self, o: &CpuMask) -> CpuMask {
        self.combine_with(
            o,
            |a, b| a | b,
            |a, b| a.trimmed().len().max(b.trimmed().len()),
        )
    }

    /// CPUs in `self` but not in `o` (`cpumask_andnot`).
    #[inline]
    pub fn andnot(&self, o: &CpuMask) -> CpuMask {
        self.combine_with(o, |a, b| a & !b, |a, _| a.trimmed().len())
    }

    /// `self &= o`.
    pub fn and_assign(&mut self, o: &CpuMask) {
        let b = o.words();
        for (i, w) in self.words_mut().iter_mut().enumerate() {
            *w &= b.get(i).copied().unwrap_or(0);
        }
    }

    /// `self |= o`.
    pub fn or_assign(&mut self, o: &CpuMask) {
        let b = o.trimmed();
        self.grow(b.len());
        for (w, x) in self.words_mut().iter_mut().zip(b) {
            *w |= x;
        }
    }

    /// `self &= !o`.
    pub fn andnot_assign(&mut self, o: &CpuMask) {
        let b = o.words();
        for (w, x) in self.words_mut().iter_mut().zip(b) {
            *w &= !x;
        }
    }

    /// Whether the masks share a CPU (`cpumask_intersects`).
    pub fn intersects(&self, o: &CpuMask) -> bool {
        self.words().iter().zip(o.words()).any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `of` (`cpumask_subset`).
    pub fn is_subset(&self, of: &CpuMask) -> bool {
        let b = of.words();
        self.words()
            .iter()
            .enumerate()
            .all(|(i, a)| a & !b.get(i).copied().unwrap_or(0) == 0)
    }

    /// Parse the kernel's list format (`cpulist_parse`): comma-separated
    /// CPUs and inclusive ranges, e.g. `"0-3,8,10-11"`, plus taskset's
    /// stride form `"0-7:2"` (every second CPU of the range). Whitespace around
    /// tokens and a trailing newline (as sysfs files end) are ignored; an
    /// empty or all-whitespace string is the empty mask. Errors name the bad
    /// token; CPUs `>= MAX_CPUS` are rejected.
    pub fn parse_list(s: &str) -> Result<CpuMask, TopologyError> {
        let input = s.trim();
        let err = |problem: String| TopologyError::CpuList {
            input: input.to_string(),
            problem,
        };
        let mut m = CpuMask::new();
        if input.is_empty() {
            return Ok(m);
        }
        let num = |t: &str, tok: &str| -> Result<usize, TopologyError> {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(format!("token {tok:?} is not a CPU number or range")));
            }
            match t.parse::<usize>() {
                Ok(n) if n < CpuMask::MAX_CPUS => Ok(n),
                _ => Err(err(format!(
                    "CPU {t} in token {tok:?} is out of range (max {})",
                    CpuMask::MAX_CPUS - 1
                ))),
            }
        };
        for tok in input.split(',') {
            let tok = tok.trim();
            if tok.is_empty() {
                return Err(err("empty token (stray comma)".to_string()));
            }
            // `a-b:s`: every s-th CPU of the range (taskset's cpulist form)
            let (range, stride) = match tok.split_once(':') {
                None => (tok, 1),
                Some((r, st)) => match num(st, tok)? {
                    0 => return Err(err(format!("zero stride in {tok:?}"))),
                    st => (r, st),
                },
            };
            match range.split_once('-') {
                None if stride == 1 => m.set(num(range, tok)?),
                None => return Err(err(format!("a stride needs a range: {tok:?}"))),
                Some((a, b)) => {
                    let (a, b) = (num(a, tok)?, num(b, tok)?);
                    if a > b {
                        return Err(err(format!("range {tok:?} runs backwards")));
                    }
                    if stride == 1 {
                        m.or_assign(&CpuMask::from_range(a, b));
                    } else {
                        (a..=b).step_by(stride).for_each(|c| m.set(c));
                    }
                }
            }
        }
        Ok(m)
    }
}

impl PartialEq for CpuMask {
    fn eq(&self, other: &Self) -> bool {
        self.trimmed() == other.trimmed()
    }
}

impl Eq for CpuMask {}

impl Hash for CpuMask {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.trimmed().hash(state);
    }
}

impl FromIterator<usize> for CpuMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        CpuMask::from_cpus(iter)
    }
}

impl FromStr for CpuMask {
    type Err = TopologyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuMask::parse_list(s)
    }
}

impl<'a> IntoIterator for &'a CpuMask {
    type Item = usize;
    type IntoIter = BitIter<'a>;
    fn into_iter(self) -> BitIter<'a> {
        self.iter()
    }
}

/// The kernel's `%*pbl` list format: `"0-3,8"`, empty string for no CPUs.
impl fmt::Display for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut it = self.iter().peekable();
        let mut first = true;
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi = it.next().unwrap_or(hi);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if hi == lo {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl Serialize for CpuMask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuMask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuMask::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn parse_and_display() {
        let m = CpuMask::parse_list(" 0-3, 8,10-11\n").unwrap();
        assert_eq!(m.to_string(), "0-3,8,10-11");
        assert_eq!(format!("{m:?}"), "\"0-3,8,10-11\"");
        assert_eq!(m.weight(), 7);
        assert_eq!(CpuMask::parse_list("").unwrap(), CpuMask::new());
        assert_eq!(CpuMask::parse_list("\n").unwrap().to_string(), "");
        assert_eq!(
            CpuMask::parse_list("4095")
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            vec![4095]
        );
    }

    #[test]
    fn parse_stride_ranges() {
        assert_eq!(CpuMask::parse_list("0-7:2").unwrap().to_string(), "0,2,4,6");
        assert_eq!(
            CpuMask::parse_list("1-9:4,3").unwrap().to_string(),
            "1,3,5,9"
        );
        assert!(CpuMask::parse_list("0-7:0").is_err());
        assert!(CpuMask::parse_list("3:2").is_err());
    }

    #[test]
    fn parse_errors_name_the_token() {
        for (s, needle) in [
            ("0-3,x", "\"x\""),
            ("0-3,5-", "\"5-\""),
            ("4096", "4096"),
            ("0-9999", "9999"),
            ("3-1", "\"3-1\""),
            ("1,,2", "stray comma"),
            ("1 2", "\"1 2\""),
            ("-1", "\"-1\""),
            ("0-3:2/4", "0-3:2/4"),
        ] {
            let e = CpuMask::parse_list(s).unwrap_err().to_string();
            assert!(e.contains(needle), "{s:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn inline_and_heap_compare_equal() {
        let mut a = CpuMask::from_cpus([1, 1000]);
        a.clear(1000);
        let b = CpuMask::from_cpus([1]);
        assert_eq!(a, b);
        use std::collections::hash_map::DefaultHasher;
        let h = |m: &CpuMask| {
            let mut s = DefaultHasher::new();
            m.hash(&mut s);
            s.finish()
        };
        assert_eq!(h(&a), h(&b));
        assert!(matches!(b.words, Words::Inline(_)));
        assert!(matches!(a.words, Words::Heap(_)));
    }

    #[test]
    fn next_wrap_matches_kernel_walk() {
        // for_each_cpu_wrap over {1,3,5,7} starting at 4 visits 5,7,1,3.
        let m = CpuMask::from_cpus([1, 3, 5, 7]);
        let mut v = vec![];
        let mut c = m.first_wrap(4);
        while let Some(x) = c {
            v.push(x);
            c = m.next_wrap(x, 4);
        }
        assert_eq!(v, vec![5, 7, 1, 3]);
        assert_eq!(m.iter_wrap(4).collect::<Vec<_>>(), v);
        // start itself set: visited first and not again.
        assert_eq!(m.first_wrap(3), Some(3));
        assert_eq!(m.next_wrap(1, 3), None);
        // start beyond every set bit: all of them, ascending.
        assert_eq!(m.iter_wrap(100).collect::<Vec<_>>(), vec![1, 3, 5, 7]);
        assert_eq!(CpuMask::new().first_wrap(0), None);
    }

    #[test]
    fn serde_round_trip() {
        let m = CpuMask::parse_list("0-3,300").unwrap();
        let j = serde_json::to_string(&m).unwrap();
        assert_eq!(j, "\"0-3,300\"");
        let back: CpuMask = serde_json::from_str(&j).unwrap();
        assert_eq!(back, m);
    }

    fn model_to_mask(s: &BTreeSet<usize>) -> CpuMask {
        CpuMask::from_cpus(s.iter().copied())
    }

    fn set_strategy() -> impl Strategy<Value = BTreeSet<usize>> {
        prop_oneof![
            proptest::collection::btree_set(0usize..256, 0..40),
            proptest::collection::btree_set(0usize..CpuMask::MAX_CPUS, 0..80),
            proptest::collection::btree_set(0usize..130, 0..130),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn basic_ops_match_model(a in set_strategy(), probe in 0usize..CpuMask::MAX_CPUS + 10) {
            let m = model_to_mask(&a);
            prop_assert_eq!(m.weight(), a.len());
            prop_assert_eq!(m.is_empty(), a.is_empty());
            prop_assert_eq!(m.first(), a.iter().next().copied());
            prop_assert_eq!(m.last(), a.iter().next_back().copied());
            prop_assert_eq!(m.test(probe), a.contains(&probe));
            prop_assert_eq!(m.next_from(probe), a.range(probe..).next().copied());
            prop_assert_eq!(m.iter().collect::<Vec<_>>(), a.iter().copied().collect::<Vec<_>>());
            let s = m.to_string();
            prop_assert_eq!(CpuMask::parse_list(&s).unwrap(), m.clone());
            let mut c = m.clone();
            c.clear(probe);
            let mut am = a.clone();
            am.remove(&probe);
            prop_assert_eq!(c.iter().collect::<BTreeSet<_>>(), am);
            if probe < CpuMask::MAX_CPUS {
                let mut c = m.clone();
                c.set(probe);
                let mut am = a.clone();
                am.insert(probe);
                prop_assert_eq!(c, model_to_mask(&am));
            }
        }

        #[test]
        fn from_range_matches_model(lo in 0usize..CpuMask::MAX_CPUS, len in 0usize..300) {
            let hi = (lo + len).min(CpuMask::MAX_CPUS - 1);
            let m = CpuMask::from_range(lo, hi);
            prop_assert_eq!(m.iter().collect::<Vec<_>>(), (lo..=hi).collect::<Vec<_>>());
            prop_assert!(CpuMask::from_range(hi + 1, hi).is_empty());
        }

        #[test]
        fn set_ops_match_model(a in set_strategy(), b in set_strategy()) {
            let (ma, mb) = (model_to_mask(&a), model_to_mask(&b));
            let and: BTreeSet<usize> = a.intersection(&b).copied().collect();
            let or: BTreeSet<usize> = a.union(&b).copied().collect();
            let andnot: BTreeSet<usize> = a.difference(&b).copied().collect();
            prop_assert_eq!(ma.and(&mb), model_to_mask(&and));
            prop_assert_eq!(ma.or(&mb), model_to_mask(&or));
            prop_assert_eq!(ma.andnot(&mb), model_to_mask(&andnot));
            let mut x = ma.clone(); x.and_assign(&mb); prop_assert_eq!(x, model_to_mask(&and));
            let mut x = ma.clone(); x.or_assign(&mb); prop_assert_eq!(x, model_to_mask(&or));
            let mut x = ma.clone(); x.andnot_assign(&mb); prop_assert_eq!(x, model_to_mask(&andnot));
            prop_assert_eq!(ma.intersects(&mb), !and.is_empty());
            prop_assert_eq!(ma.is_subset(&mb), a.is_subset(&b));
            prop_assert_eq!(ma.and(&mb).is_subset(&ma), true);
            prop_assert_eq!(ma == mb, a == b);
        }

        #[test]
        fn iter_wrap_matches_model(a in set_strategy(), start in 0usize..CpuMask::MAX_CPUS + 5) {
            let m = model_to_mask(&a);
            let expect: Vec<usize> =
                a.range(start..).chain(a.range(..start)).copied().collect();
            prop_assert_eq!(m.iter_wrap(start).collect::<Vec<_>>(), expect.clone());
            // The first_wrap/next_wrap walk on an unmodified mask is the same.
            let mut got = vec![];
            let mut cur = m.first_wrap(start);
            while let Some(c) = cur {
                got.push(c);
                prop_assert!(got.len() <= a.len());
                cur = m.next_wrap(c, start);
            }
            prop_assert_eq!(got, expect);
        }

        /// A walk that clears bits as it goes (as select_idle_core() clears
        /// a core's siblings from the scan mask): the visited sequence is,
        /// at each step, the next CPU after the current position in wrapped
        /// order among those still set, and each position is visited once.
        #[test]
        fn next_wrap_with_clearing_matches_model(
            a in set_strategy(),
            start in 0usize..CpuMask::MAX_CPUS,
            clears in proptest::collection::vec(proptest::collection::vec(0usize..CpuMask::MAX_CPUS, 0..4), 0..64),
            near in proptest::collection::vec(0usize..8, 0..64),
        ) {
            let mut m = model_to_mask(&a);
            let mut model = a.clone();
            // position in the wrapped order: (cpu - start) mod MAX
            let pos = |c: usize| (c + CpuMask::MAX_CPUS - start) % CpuMask::MAX_CPUS;
            let mut visited: Vec<usize> = vec![];
            let mut cur = m.first_wrap(start);
            let mut step = 0;
            while let Some(c) = cur {
                // Model: c is the set member with the smallest position
                // greater than the previous one.
                let last_pos = visited.last().map(|&p| pos(p));
                let expect = model.iter().copied()
                    .filter(|&x| last_pos.is_none_or(|lp| pos(x) > lp))
                    .min_by_key(|&x| pos(x));
                prop_assert_eq!(Some(c), expect);
                visited.push(c);
                // Clear some arbitrary bits and some bits close to c (both
                // ahead of and behind it), possibly c itself.
                if let Some(cl) = clears.get(step) {
                    for &x in cl { m.clear(x); model.remove(&x); }
                }
                if let Some(&d) = near.get(step) {
                    let x = (c + d) % CpuMask::MAX_CPUS;
                    m.clear(x); model.remove(&x);
                    let y = c.saturating_sub(d);
                    m.clear(y); model.remove(&y);
                }
                step += 1;
                prop_assert!(visited.len() <= a.len());
                cur = m.next_wrap(c, start);
            }
            // Nothing still set was skipped after the last visited position.
            let last_pos = visited.last().map(|&p| pos(p));
            prop_assert!(model.iter().all(|&x| last_pos.is_some_and(|lp| pos(x) <= lp)));
        }
    }
}
