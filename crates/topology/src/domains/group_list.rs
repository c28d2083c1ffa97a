//! `Groups`: one CPU's view of a domain's group list (`sd->groups` and the
//! `next` links after it).
//!
//! In the kernel the groups of a non-overlapping level are shared objects
//! linked in one ring per domain span (`build_sched_groups()` in
//! kernel/sched/topology.c relinks the shared groups on every CPU's pass,
//! so the ring left is the last CPU's), and each CPU's `sd->groups` points
//! at its own group in that ring. Storing it the same way, one ring shared
//! by the CPUs of a span plus where each CPU starts, keeps a machine whose
//! LLC holds thousands of cores linear in size instead of quadratic.

use super::SchedGroup;
use serde::{Serialize, Serializer};
use std::fmt;
use std::iter::Chain;
use std::ops::Index;
use std::slice::Iter;
use std::sync::Arc;

/// A domain's groups in the kernel's list order: the CPU's own group
/// first, then the ring from there. Indexes like a slice.
#[derive(Clone)]
pub struct Groups {
    ring: Arc<[SchedGroup]>,
    start: usize,
}

impl Groups {
    /// The list that starts at `ring[start]` and wraps.
    pub(crate) fn new(ring: Arc<[SchedGroup]>, start: usize) -> Groups {
        debug_assert!(start < ring.len().max(1));
        Groups { ring, start }
    }

    /// Number of groups.
    #[inline]
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// Whether there are none (never, for a built domain).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// The `i`-th group of the list, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&SchedGroup> {
        let n = self.ring.len();
        (i < n).then(|| {
            let j = self.start + i;
            &self.ring[if j >= n { j - n } else { j }]
        })
    }

    /// The CPU's own group (`sd->groups`).
    #[inline]
    pub fn first(&self) -> Option<&SchedGroup> {
        self.get(0)
    }

    /// The groups in list order.
    #[inline]
    pub fn iter(&self) -> Chain<Iter<'_, SchedGroup>, Iter<'_, SchedGroup>> {
        let (before, from) = self.ring.split_at(self.start);
        from.iter().chain(before.iter())
    }

    /// Whether two lists share one ring (the same kernel objects).
    pub fn same_ring(&self, other: &Groups) -> bool {
        Arc::ptr_eq(&self.ring, &other.ring)
    }
}

impl Index<usize> for Groups {
    type Output = SchedGroup;

    #[inline]
    fn index(&self, i: usize) -> &SchedGroup {
        match self.get(i) {
            Some(g) => g,
            None => panic!(
                "group index {i} out of range for a list of {}",
                self.ring.len()
            ),
        }
    }
}

impl<'a> IntoIterator for &'a Groups {
    type Item = &'a SchedGroup;
    type IntoIter = Chain<Iter<'a, SchedGroup>, Iter<'a, SchedGroup>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Groups {
    fn eq(&self, other: &Groups) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Groups {}

impl fmt::Debug for Groups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Groups {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpumask::CpuMask;

    fn group(cpu: usize) -> SchedGroup {
        let span = CpuMask::from_cpus([cpu]);
        SchedGroup {
            balance_mask: span.clone(),
            span,
            flags: 0,
            cores: 1,
            cpus: Arc::from([cpu as u32]),
        }
    }

    #[test]
    fn a_list_is_the_ring_from_its_start() {
        let ring: Arc<[SchedGroup]> = (0..4).map(group).collect::<Vec<_>>().into();
        let g = Groups::new(ring.clone(), 2);
        let firsts: Vec<_> = g.iter().map(|g| g.span.first().unwrap()).collect();
        assert_eq!(firsts, [2, 3, 0, 1]);
        assert_eq!(g[3].span.first(), Some(1));
        assert_eq!(g.first().unwrap().span.first(), Some(2));
        assert!(g.get(4).is_none());
        assert_eq!(g.len(), 4);
        let h = Groups::new(ring, 0);
        assert!(g.same_ring(&h) && g != h);
        let own: Arc<[SchedGroup]> = [2, 3, 0, 1].map(group).to_vec().into();
        assert_eq!(g, Groups::new(own, 0));
        assert_eq!(
            serde_json::to_value(&g).unwrap()[0]["span"],
            serde_json::json!("2")
        );
    }
}
