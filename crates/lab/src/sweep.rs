//! An experiment's sweep and its runs, never expanded: point `i` and run
//! `i` are computed from the axes' values when asked for, so a sweep of
//! millions of points costs its axes' lengths, not their product, until
//! its runs are done.
//!
//! Points are numbered in the order the axes multiply (the last axis
//! fastest), or value by value for zipped axes; runs in canonical order:
//! point, iteration, variant.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use toml::Value;

/// One point of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The axis values joined by `-` (mmtests' operation suffix).
    pub key: String,
    /// The value of each axis.
    pub values: Vec<serde_json::Value>,
}

/// One run to do.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRun {
    /// Index of the point ([`crate::Experiment::point`]).
    pub point: usize,
    /// Index into [`crate::Experiment::variants`].
    pub variant: usize,
    /// Iteration, from 0.
    pub iteration: u32,
    /// The seed: from the base seed, the point and the iteration only, so
    /// every variant of a point sees the same random streams and the
    /// result does not depend on how the runs are split.
    pub seed: u64,
}

/// A seed from (base seed, point key, iteration): FNV-1a over the three,
/// then a splitmix64 finaliser to spread the bits, kept to 53 bits.
pub fn derive_seed(base: u64, point: &str, iteration: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = base
        .to_le_bytes()
        .into_iter()
        .chain(point.bytes())
        .chain([0xff])
        .chain(iteration.to_le_bytes());
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    // 53 bits, so the seed survives JSON readers that hold numbers as
    // doubles (JavaScript, jq)
    (z ^ (z >> 31)) >> 11
}

/// The sweep axes' values.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// Each axis's values, in the file's order of axes.
    pub values: Vec<Vec<Value>>,
    /// The axes go together (value `i` of each at point `i`) instead of
    /// every combination.
    pub zip: bool,
}

/// How a value names itself in a point's key: a string as it is,
/// anything else as TOML writes it.
pub fn value_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn value_json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

impl Sweep {
    /// How many points (one without a sweep; none when `zip = true` has
    /// no axes to go together).
    pub fn len(&self) -> usize {
        if self.zip {
            self.values.first().map_or(0, Vec::len)
        } else {
            self.values.iter().map(Vec::len).product()
        }
    }

    /// No point at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of each axis's value at point `p`.
    pub fn coords(&self, p: usize) -> Vec<usize> {
        if self.zip {
            return vec![p; self.values.len()];
        }
        let mut c = vec![0; self.values.len()];
        let mut rest = p;
        for (a, vs) in self.values.iter().enumerate().rev() {
            c[a] = rest % vs.len();
            rest /= vs.len();
        }
        c
    }

    /// The point with these axis value indices.
    fn index(&self, coords: &[usize]) -> usize {
        if self.zip {
            return coords.first().copied().unwrap_or(0);
        }
        coords
            .iter()
            .zip(&self.values)
            .fold(0, |p, (&c, vs)| p * vs.len() + c)
    }

    /// Each axis's value at point `p`.
    pub fn values_at(&self, p: usize) -> impl Iterator<Item = &Value> {
        self.coords(p)
            .into_iter()
            .zip(&self.values)
            .map(|(c, vs)| &vs[c])
    }

    /// Point `p`'s key: the axis values joined by `-` (mmtests' operation
    /// suffix); zipped axes follow the first, which alone names the point
    /// (so `[quick]` may shorten the others: `-l 2560/G` -> `-l 256/G`).
    pub fn key(&self, p: usize) -> String {
        if self.zip {
            return self
                .values
                .first()
                .map(|l| value_key(&l[p]))
                .unwrap_or_default();
        }
        self.values_at(p)
            .map(value_key)
            .collect::<Vec<_>>()
            .join("-")
    }

    /// Point `p`, its key and values.
    pub fn point(&self, p: usize) -> Point {
        Point {
            key: self.key(p),
            values: self.values_at(p).map(value_json).collect(),
        }
    }

    /// The points whose specifications are checked before anything runs
    /// when the sweep is too large to check them all: every value of
    /// every axis, each with the other axes at their first value (every
    /// point of zipped axes), in point order. A value that is wrong on its
    /// own is found there; only a combination of values can still fail
    /// when its run starts.
    pub fn probes(&self) -> Vec<usize> {
        if self.zip {
            return (0..self.len()).collect();
        }
        let mut v = vec![0];
        for (a, vs) in self.values.iter().enumerate() {
            for j in 1..vs.len() {
                let mut c = vec![0; self.values.len()];
                c[a] = j;
                v.push(self.index(&c));
            }
        }
        v.sort_unstable();
        v
    }

    /// The smallest key two points share, if any; computed without
    /// holding every key when it can be (no axis repeats a value and no
    /// value holds the `-` that joins them: then keys differ as the
    /// points do), else from the keys' hashes.
    pub fn duplicate_key(&self) -> Option<String> {
        let firsts = if self.zip {
            &self.values[..1.min(self.values.len())]
        } else {
            &self.values[..]
        };
        let mut repeats = false;
        let mut dashes = false;
        for vs in firsts {
            let mut keys: Vec<String> = vs.iter().map(value_key).collect();
            dashes |= keys.iter().any(|k| k.contains('-'));
            keys.sort_unstable();
            repeats |= keys.windows(2).any(|w| w[0] == w[1]);
        }
        if !repeats && (!dashes || self.zip || self.values.len() < 2) {
            return None;
        }
        let hash = |k: &str| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in k.bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            h
        };
        let mut hashes: Vec<(u64, usize)> =
            (0..self.len()).map(|p| (hash(&self.key(p)), p)).collect();
        hashes.sort_unstable();
        let mut smallest: Option<String> = None;
        for w in hashes.windows(2) {
            if w[0].0 == w[1].0 {
                let k = self.key(w[0].1);
                if k == self.key(w[1].1) && smallest.as_ref().is_none_or(|s| k < *s) {
                    smallest = Some(k);
                }
            }
        }
        smallest
    }
}

/// Finds a point by its key (a record read back from a run log): from
/// each axis's values when keys split back into them (no value holds the
/// `-` that joins them, or the axes are zipped), else from every key.
pub struct PointFinder<'a> {
    sweep: &'a Sweep,
    /// Per axis (the first alone when zipped): value key -> index.
    axes: Vec<HashMap<String, usize>>,
    /// Every key, when keys do not split.
    all: Option<HashMap<String, usize>>,
}

impl PointFinder<'_> {
    /// The point whose key is `key`.
    pub fn find(&self, key: &str) -> Option<usize> {
        if let Some(all) = &self.all {
            return all.get(key).copied();
        }
        if self.sweep.zip {
            return self.axes.first().and_then(|m| m.get(key)).copied();
        }
        if self.axes.is_empty() {
            return key.is_empty().then_some(0);
        }
        let parts: Vec<&str> = key.split('-').collect();
        if parts.len() != self.axes.len() {
            return None;
        }
        let coords = parts
            .iter()
            .zip(&self.axes)
            .map(|(p, m)| m.get(*p).copied())
            .collect::<Option<Vec<usize>>>()?;
        Some(self.sweep.index(&coords))
    }
}

impl Sweep {
    /// A [`PointFinder`] for this sweep.
    pub fn finder(&self) -> PointFinder<'_> {
        let lists = if self.zip {
            &self.values[..1.min(self.values.len())]
        } else {
            &self.values[..]
        };
        let axes: Vec<HashMap<String, usize>> = lists
            .iter()
            .map(|vs| {
                let mut m = HashMap::new();
                for (i, v) in vs.iter().enumerate() {
                    m.entry(value_key(v)).or_insert(i);
                }
                m
            })
            .collect();
        let splits = self.zip || axes.iter().all(|m| m.keys().all(|k| !k.contains('-')));
        let all = (!splits).then(|| {
            let mut m = HashMap::new();
            for p in 0..self.len() {
                m.entry(self.key(p)).or_insert(p);
            }
            m
        });
        PointFinder {
            sweep: self,
            axes,
            all,
        }
    }
}

/// The runs of an experiment, by index in canonical order (point,
/// iteration, variant), each computed when asked for.
#[derive(Clone, Copy, Debug)]
pub struct Runs<'a> {
    /// The sweep.
    pub sweep: &'a Sweep,
    /// Variants.
    pub variants: usize,
    /// Iterations per (variant, point).
    pub iterations: u32,
    /// The base seed.
    pub seed: u64,
}

impl Runs<'_> {
    /// How many.
    pub fn len(&self) -> usize {
        self.sweep.len() * self.iterations as usize * self.variants
    }

    /// None.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Run `i`.
    pub fn get(&self, i: usize) -> PlannedRun {
        let variant = i % self.variants;
        let rest = i / self.variants;
        let iteration = (rest % self.iterations as usize) as u32;
        let point = rest / self.iterations as usize;
        PlannedRun {
            point,
            variant,
            iteration,
            seed: derive_seed(self.seed, &self.sweep.key(point), iteration),
        }
    }

    /// The index of the run of `variant` at `point`, `iteration`.
    pub fn index(&self, variant: usize, point: usize, iteration: u32) -> usize {
        (point * self.iterations as usize + iteration as usize) * self.variants + variant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Vec<Value> {
        v.iter().map(|&i| Value::Integer(i)).collect()
    }

    #[test]
    fn points_multiply_in_axis_order_and_probes_cover_every_value() {
        let s = Sweep {
            values: vec![ints(&[1, 2]), ints(&[3, 5, 7])],
            zip: false,
        };
        let keys: Vec<String> = (0..s.len()).map(|p| s.key(p)).collect();
        assert_eq!(keys, ["1-3", "1-5", "1-7", "2-3", "2-5", "2-7"]);
        assert_eq!(s.probes(), [0, 1, 2, 3]);
        assert_eq!(s.duplicate_key(), None);
        let z = Sweep {
            values: vec![ints(&[1, 2]), ints(&[3, 5])],
            zip: true,
        };
        assert_eq!((z.len(), z.key(1), z.probes()), (2, "2".into(), vec![0, 1]));
    }

    #[test]
    fn a_key_shared_by_two_points_is_found() {
        let s = Sweep {
            values: vec![ints(&[1, 1]), ints(&[3, 5])],
            zip: false,
        };
        assert_eq!(s.duplicate_key().as_deref(), Some("1-3"));
        // no axis repeats a value, but the `-` that joins them makes one key twice
        let str_ = |v: &[&str]| v.iter().map(|s| Value::String(s.to_string())).collect();
        let s = Sweep {
            values: vec![str_(&["a-b", "a"]), str_(&["c", "b-c"])],
            zip: false,
        };
        assert_eq!(s.duplicate_key().as_deref(), Some("a-b-c"));
    }

    #[test]
    fn a_key_finds_its_point() {
        let s = Sweep {
            values: vec![ints(&[1, 2]), ints(&[3, -5, 7])],
            zip: false,
        };
        let f = s.finder();
        for p in 0..s.len() {
            assert_eq!(f.find(&s.key(p)), Some(p), "{}", s.key(p));
        }
        assert_eq!((f.find("1-4"), f.find("1"), f.find("")), (None, None, None));
        let s = Sweep {
            values: vec![ints(&[1, 2]), ints(&[3, 7])],
            zip: false,
        };
        let f = s.finder();
        for p in 0..s.len() {
            assert_eq!(f.find(&s.key(p)), Some(p));
        }
        assert_eq!((f.find("1-4"), f.find("1-3-3")), (None, None));
        let none = Sweep {
            values: vec![],
            zip: false,
        };
        assert_eq!(none.finder().find(""), Some(0));
    }

    #[test]
    fn run_indices_go_point_iteration_variant() {
        let s = Sweep {
            values: vec![ints(&[1, 2])],
            zip: false,
        };
        let r = Runs {
            sweep: &s,
            variants: 3,
            iterations: 2,
            seed: 1,
        };
        assert_eq!(r.len(), 12);
        for i in 0..r.len() {
            let p = r.get(i);
            assert_eq!(r.index(p.variant, p.point, p.iteration), i);
            assert_eq!(p.seed, derive_seed(1, &s.key(p.point), p.iteration));
        }
        let p = r.get(7);
        assert_eq!((p.point, p.iteration, p.variant), (1, 0, 1));
    }
}
