//! A run queue's timeline: the queued entities (every one but the running
//! one) in vruntime order, in our own words after the kernel's
//! `cfs_rq->tasks_timeline` (kernel/sched/fair.c): an rbtree sorted by
//! vruntime with its leftmost node cached (`__enqueue_entity`,
//! `__dequeue_entity`, `__pick_first_entity`, `__pick_next_entity`), which
//! from 6.6 is augmented with each subtree's earliest deadline so that
//! `pick_eevdf` finds the eligible entity with the earliest deadline by one
//! descent instead of a scan (the `min_deadline` augmentation of 6.6, the
//! `min_vruntime` one of later versions answers the same question).
//!
//! Here the tree is a treap (a binary search tree kept balanced by random
//! priorities, heap-ordered) whose priorities are a fixed hash of each
//! entry's enqueue number, so its shape, like everything in a run, depends
//! only on the run. Every operation is O(log n) expected, or O(1):
//! [`Timeline::insert`], [`Timeline::remove`], [`Timeline::first`] (the
//! leftmost, cached), [`Timeline::next_after`],
//! [`Timeline::earliest_deadline`] and [`Timeline::earliest_eligible`].
//!
//! Order and ties. Entries are ordered by vruntime, compared as the kernel
//! compares them (`entity_before`: the sign of the wrapping difference),
//! then by enqueue number: an entry queued later goes after an equal one,
//! as equal keys go right in the kernel's tree. Deadlines are compared the
//! same way, and among equal deadlines the one queued first wins. These are
//! the rules of the linear scan over a vector in enqueue order that this
//! structure replaced, so every query answers what that scan answered (for
//! vruntimes, and deadlines, within half the u64 range of one another, as
//! the kernel's wrapping comparisons also assume).
//!
//! An entry's vruntime and deadline are copied in at insertion: a queued
//! entity's never change (only the running one, which is not in the tree,
//! is charged), and the kernel too must dequeue an entity to move it.
//!
//! Entries are found by task id through a small open-addressing table
//! ([`IdMap`]), so the entity itself carries nothing (the kernel embeds its
//! tree node in `sched_entity`).
//!
//! A timeline of at most [`SMALL`] entries is a vector in enqueue order,
//! scanned with the same comparisons (the first strictly earlier wins, so
//! the first queued among equals): the tens of tasks per CPU of most runs
//! cost less to scan than to keep in a tree (the tree alone took the
//! default hackbench case, about 16 tasks per CPU, from 1,150.7 to 1,182.5
//! instructions per event; with vectors of up to 8 entries 1,171.0, of up
//! to 32 1,159.4). Past it the entries move into the tree, in their
//! enqueue order and with their enqueue numbers, and stay there until the
//! timeline empties.

/// The most entries a timeline keeps as a scanned vector.
const SMALL: usize = 32;

/// An entry of a small timeline.
#[derive(Clone, Copy, Debug)]
struct Entry {
    vruntime: u64,
    deadline: u64,
    id: u32,
    seq: u32,
}

/// Entry `a` goes before entry `b` (vruntime, then enqueue number): the
/// tree's order.
#[inline(always)]
fn entry_before(a: &Entry, b: &Entry) -> bool {
    if a.vruntime == b.vruntime {
        a.seq < b.seq
    } else {
        wrapping_before(a.vruntime, b.vruntime)
    }
}

/// No node.
const NIL: u32 = u32::MAX;

/// One queued entity: its keys, its links, and the augmentation, the
/// earliest (deadline, enqueue number) of its subtree, kept by value so
/// that updating it reads only the node's children. 52 bytes, aligned to a
/// cache line so that reading one never costs two misses.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Node {
    /// Its vruntime when queued (the key).
    vruntime: u64,
    /// Its deadline when queued.
    deadline: u64,
    /// The subtree's earliest deadline, that of node `best`.
    best_deadline: u64,
    /// Its enqueue number on this queue: the tie rule, and the source of
    /// its priority.
    seq: u32,
    /// Node `best`'s enqueue number.
    best_seq: u32,
    left: u32,
    right: u32,
    /// The node of this subtree with the earliest (deadline, seq).
    best: u32,
    /// The task id, or NIL for a free node.
    id: u32,
    /// `priority(seq)`, kept (the line has room).
    prio: u32,
}

/// `a` before `b` in the wrapping order of the kernel's comparisons.
#[inline(always)]
fn wrapping_before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// (deadline `d`, enqueue number `s`) comes before (`e`, `t`).
#[inline(always)]
fn earlier(d: u64, s: u32, e: u64, t: u32) -> bool {
    if d == e {
        s < t
    } else {
        wrapping_before(d, e)
    }
}

/// The heap priority of enqueue number `seq`, a fixed hash (a 32-bit
/// finaliser of the murmur family): the treap's balance needs priorities
/// independent of the keys, which a hash of the enqueue number is for any
/// workload.
#[inline(always)]
fn priority(seq: u32) -> u32 {
    let mut z = seq.wrapping_add(0x9E37_79B9);
    z = (z ^ (z >> 16)).wrapping_mul(0x85EB_CA6B);
    z = (z ^ (z >> 13)).wrapping_mul(0xC2B2_AE35);
    z ^ (z >> 16)
}

/// The queued entities of one run queue in vruntime order.
#[derive(Clone, Debug)]
pub(crate) struct Timeline {
    /// While not `tree`: every entry, in enqueue order.
    small: Vec<Entry>,
    /// While not `tree`: the position in `small` of its leftmost entry
    /// (kept as entries come and go, since update_min_vruntime asks for it
    /// at every update of the running entity), or anything when `small` is
    /// empty.
    small_first: u32,
    /// The entries are in the tree (more than [`SMALL`] were queued since
    /// the timeline was last empty).
    tree: bool,
    /// Nodes, live and free (a free node has id NIL).
    nodes: Vec<Node>,
    /// The free nodes, the last freed on top (a stack of its own: taking
    /// one reads no cold node).
    free: Vec<u32>,
    root: u32,
    /// The leftmost node (rb_leftmost), or NIL.
    leftmost: u32,
    len: u32,
    /// The next enqueue number. At the end of the u32 range the queued
    /// entries are numbered again from 0 in the same order (`renumber`).
    next_seq: u32,
    /// Task id to node.
    index: IdMap,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            small: Vec::new(),
            small_first: 0,
            tree: false,
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            leftmost: NIL,
            len: 0,
            next_seq: 0,
            index: IdMap::default(),
        }
    }
}

impl Timeline {
    /// Bytes an entry may hold at most (for memory estimates): its node,
    /// its id table slots (the table is a quarter to a half full) and its
    /// place on the free stack.
    pub(crate) const BYTES_PER_ENTRY: usize =
        std::mem::size_of::<Node>() + 4 * std::mem::size_of::<(u32, u32)>() + 4;

    /// From this many entries descents prefetch (64 nodes fill a 4 KiB page
    /// of lines).
    const PREFETCH_FROM: u32 = 64;

    /// Above this many nodes an emptied timeline gives its memory back.
    const KEEP_NODES: usize = 1024;

    /// Queued entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Ask for the line where task `id`'s entry is looked up, ahead of an
    /// insertion or removal (a hint only; see `prefetch`).
    #[inline(always)]
    pub(crate) fn prefetch_entry(&self, id: u32) {
        if self.len >= Self::PREFETCH_FROM {
            crate::prefetch::prefetch(&self.index.slots[self.index.home(id)], 1);
        }
    }

    /// Task `id` is queued.
    #[inline]
    pub(crate) fn contains(&self, id: u32) -> bool {
        if !self.tree {
            return self.small.iter().any(|e| e.id == id);
        }
        self.index.get(id).is_some()
    }

    /// The queued task ids in the order they were queued.
    pub(crate) fn ids(&self) -> Vec<u32> {
        if !self.tree {
            return self.small.iter().map(|e| e.id).collect();
        }
        let mut live: Vec<(u32, u32)> = self
            .nodes
            .iter()
            .filter(|n| n.id != NIL)
            .map(|n| (n.seq, n.id))
            .collect();
        live.sort_unstable();
        live.into_iter().map(|(_, id)| id).collect()
    }

    /// Node `a` goes before node `b` in the tree (vruntime, then enqueue
    /// number).
    #[inline(always)]
    fn before(&self, a: u32, b: u32) -> bool {
        let (x, y) = (&self.nodes[a as usize], &self.nodes[b as usize]);
        if x.vruntime == y.vruntime {
            x.seq < y.seq
        } else {
            wrapping_before(x.vruntime, y.vruntime)
        }
    }

    /// Ask for node `n`'s line (NIL: nothing). A queue of thousands of
    /// entries is beyond the private caches, and a descent is a chain of
    /// dependent loads: fetching a node's children while it is compared,
    /// and the sibling whose augmentation the way back up reads, overlaps
    /// their misses. A hint only.
    #[inline(always)]
    fn prefetch(&self, n: u32) {
        if let Some(node) = self.nodes.get(n as usize) {
            crate::prefetch::prefetch(node, 1);
        }
    }

    /// Prefetch both children of node `t`, on a timeline large enough to
    /// miss the first-level cache (a smaller one would only pay the
    /// instructions).
    #[inline(always)]
    fn prefetch_children(&self, t: u32) {
        if self.len < Self::PREFETCH_FROM {
            return;
        }
        let n = &self.nodes[t as usize];
        self.prefetch(n.left);
        self.prefetch(n.right);
    }

    #[inline(always)]
    fn prio(&self, n: u32) -> u32 {
        self.nodes[n as usize].prio
    }

    /// Recompute node `t`'s augmentation from its own deadline and its
    /// children's augmentations.
    #[inline(always)]
    fn pull(&mut self, t: u32) {
        let n = self.nodes[t as usize];
        let (mut d, mut s, mut b) = (n.deadline, n.seq, t);
        for c in [n.left, n.right] {
            if c != NIL {
                let c = &self.nodes[c as usize];
                if earlier(c.best_deadline, c.best_seq, d, s) {
                    (d, s, b) = (c.best_deadline, c.best_seq, c.best);
                }
            }
        }
        let n = &mut self.nodes[t as usize];
        (n.best_deadline, n.best_seq, n.best) = (d, s, b);
    }

    /// Queue task `id` with its vruntime and deadline (__enqueue_entity).
    pub(crate) fn insert(&mut self, id: u32, vruntime: u64, deadline: u64) {
        debug_assert!(!self.contains(id), "task {id} queued twice");
        if self.next_seq == u32::MAX {
            self.renumber();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        if !self.tree {
            if self.small.len() < SMALL {
                // the new entry is queued last, so it goes first only if
                // strictly earlier
                let at = self.small.len() as u32;
                if at == 0
                    || wrapping_before(vruntime, self.small[self.small_first as usize].vruntime)
                {
                    self.small_first = at;
                }
                self.small.push(Entry {
                    vruntime,
                    deadline,
                    id,
                    seq,
                });
                return;
            }
            self.grow_into_tree();
        }
        self.insert_node(id, vruntime, deadline, seq);
    }

    /// Move a small timeline's entries into the tree, in enqueue order.
    #[cold]
    fn grow_into_tree(&mut self) {
        self.tree = true;
        let small = std::mem::take(&mut self.small);
        for e in &small {
            self.insert_node(e.id, e.vruntime, e.deadline, e.seq);
        }
        // keep the vector's allocation for the next time it is small
        self.small = small;
        self.small.clear();
    }

    /// Put task `id` into the tree with enqueue number `seq`.
    fn insert_node(&mut self, id: u32, vruntime: u64, deadline: u64, seq: u32) {
        let n = if let Some(n) = self.free.pop() {
            n
        } else {
            self.nodes.push(Node {
                vruntime: 0,
                deadline: 0,
                best_deadline: 0,
                seq: 0,
                best_seq: 0,
                left: NIL,
                right: NIL,
                best: NIL,
                id: NIL,
                prio: 0,
            });
            (self.nodes.len() - 1) as u32
        };
        self.nodes[n as usize] = Node {
            vruntime,
            deadline,
            best_deadline: deadline,
            seq,
            best_seq: seq,
            left: NIL,
            right: NIL,
            best: n,
            id,
            prio: priority(seq),
        };
        self.index.insert(id, n);
        self.link(n);
    }

    /// Put free-standing node `n` into the tree.
    fn link(&mut self, n: u32) {
        self.root = self.insert_at(self.root, n);
        if self.leftmost == NIL || self.before(n, self.leftmost) {
            self.leftmost = n;
        }
    }

    /// Number the queued entries again from 0, in the order of their
    /// enqueue numbers, and rebuild the tree for their new priorities: the
    /// order of every comparison stays what it was. Once per 2^32 enqueues.
    #[cold]
    fn renumber(&mut self) {
        if !self.tree {
            for (i, e) in self.small.iter_mut().enumerate() {
                e.seq = i as u32;
            }
            self.next_seq = self.small.len() as u32;
            return;
        }
        let mut live: Vec<(u32, u32)> = (0..self.nodes.len() as u32)
            .filter(|&n| self.nodes[n as usize].id != NIL)
            .map(|n| (self.nodes[n as usize].seq, n))
            .collect();
        live.sort_unstable();
        self.root = NIL;
        self.leftmost = NIL;
        for (seq, &(_, n)) in live.iter().enumerate() {
            let node = &mut self.nodes[n as usize];
            node.seq = seq as u32;
            node.best_seq = seq as u32;
            node.prio = priority(seq as u32);
            node.best_deadline = node.deadline;
            node.best = n;
            node.left = NIL;
            node.right = NIL;
            self.link(n);
        }
        self.next_seq = live.len() as u32;
    }

    /// Insert node `n` into subtree `t`; returns the subtree's new root.
    fn insert_at(&mut self, t: u32, n: u32) -> u32 {
        if t == NIL {
            return n;
        }
        self.prefetch_children(t);
        if self.before(n, t) {
            let l = self.insert_at(self.nodes[t as usize].left, n);
            self.nodes[t as usize].left = l;
            if self.prio(l) > self.prio(t) {
                return self.rotate_right(t);
            }
        } else {
            let r = self.insert_at(self.nodes[t as usize].right, n);
            self.nodes[t as usize].right = r;
            if self.prio(r) > self.prio(t) {
                return self.rotate_left(t);
            }
        }
        self.pull(t);
        t
    }

    /// `t`'s left child becomes the subtree's root.
    fn rotate_right(&mut self, t: u32) -> u32 {
        let l = self.nodes[t as usize].left;
        self.nodes[t as usize].left = self.nodes[l as usize].right;
        self.nodes[l as usize].right = t;
        self.pull(t);
        self.pull(l);
        l
    }

    /// `t`'s right child becomes the subtree's root.
    fn rotate_left(&mut self, t: u32) -> u32 {
        let r = self.nodes[t as usize].right;
        self.nodes[t as usize].right = self.nodes[r as usize].left;
        self.nodes[r as usize].left = t;
        self.pull(t);
        self.pull(r);
        r
    }

    /// Take task `id` out (__dequeue_entity); false if it is not queued.
    pub(crate) fn remove(&mut self, id: u32) -> bool {
        if !self.tree {
            let Some(i) = self.small.iter().position(|e| e.id == id) else {
                return false;
            };
            self.small.remove(i);
            self.len -= 1;
            let i = i as u32;
            if i == self.small_first {
                self.small_first = self.small_scan_first();
            } else if i < self.small_first {
                self.small_first -= 1;
            }
            return true;
        }
        let Some(n) = self.index.remove(id) else {
            return false;
        };
        if self.leftmost == n {
            self.leftmost = self.next_of(n);
        }
        self.root = self.remove_at(self.root, n);
        self.nodes[n as usize].id = NIL;
        self.free.push(n);
        self.len -= 1;
        if self.len == 0 {
            self.clear();
        }
        true
    }

    /// Start again from no node (the queue is empty): a queue that held
    /// thousands of entries once (a start-up) does not keep their memory,
    /// nor scatter its next entries over it.
    fn clear(&mut self) {
        self.tree = false;
        self.nodes.clear();
        self.free.clear();
        if self.nodes.capacity() > Self::KEEP_NODES {
            self.nodes.shrink_to(Self::KEEP_NODES);
            self.free.shrink_to(Self::KEEP_NODES);
            self.index = IdMap::default();
        }
        self.root = NIL;
        self.leftmost = NIL;
    }

    /// Remove node `n` from subtree `t`, which holds it; returns the
    /// subtree's new root.
    fn remove_at(&mut self, t: u32, n: u32) -> u32 {
        if t == n {
            let node = self.nodes[n as usize];
            return self.merge(node.left, node.right);
        }
        self.prefetch_children(t);
        if self.before(n, t) {
            let l = self.remove_at(self.nodes[t as usize].left, n);
            self.nodes[t as usize].left = l;
        } else {
            let r = self.remove_at(self.nodes[t as usize].right, n);
            self.nodes[t as usize].right = r;
        }
        self.pull(t);
        t
    }

    /// Join two subtrees, every node of `a` before every node of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.prio(a) > self.prio(b) {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.pull(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.pull(b);
            b
        }
    }

    /// The node after `n` in tree order, or NIL.
    fn next_of(&self, n: u32) -> u32 {
        let mut succ = NIL;
        let mut t = self.root;
        while t != NIL {
            self.prefetch_children(t);
            if self.before(n, t) {
                succ = t;
                t = self.nodes[t as usize].left;
            } else {
                t = self.nodes[t as usize].right;
            }
        }
        succ
    }

    #[inline]
    fn id_of(&self, n: u32) -> Option<u32> {
        (n != NIL).then(|| self.nodes[n as usize].id)
    }

    /// The leftmost entry: the smallest vruntime, the first queued among
    /// equals (__pick_first_entity), as (id, vruntime).
    #[inline]
    pub(crate) fn first(&self) -> Option<(u32, u64)> {
        if !self.tree {
            debug_assert!(
                self.small.is_empty() || self.small_first == self.small_scan_first(),
                "small timeline's leftmost is stale"
            );
            return self
                .small
                .get(self.small_first as usize)
                .map(|e| (e.id, e.vruntime));
        }
        (self.leftmost != NIL).then(|| {
            let n = &self.nodes[self.leftmost as usize];
            (n.id, n.vruntime)
        })
    }

    /// The entry after queued task `id` in tree order (__pick_next_entity).
    pub(crate) fn next_after(&self, id: u32) -> Option<u32> {
        if !self.tree {
            let at = self.small.iter().find(|e| e.id == id)?;
            let mut best: Option<&Entry> = None;
            for e in &self.small {
                if entry_before(at, e) && best.is_none_or(|b| entry_before(e, b)) {
                    best = Some(e);
                }
            }
            return best.map(|e| e.id);
        }
        let n = self.index.get(id)?;
        self.id_of(self.next_of(n))
    }

    /// The entry with the earliest deadline, the first queued among equals.
    #[inline]
    pub(crate) fn earliest_deadline(&self) -> Option<u32> {
        if !self.tree {
            return self.small_earliest(|_| true);
        }
        (self.root != NIL).then(|| {
            let best = self.nodes[self.root as usize].best;
            self.nodes[best as usize].id
        })
    }

    /// The entry with the earliest deadline (the first queued among equals)
    /// among those whose key, their vruntime less `base` (a signed wrapping
    /// difference), is at most `max_key`: pick_eevdf's eligible set, a
    /// prefix of the tree order. One descent: at a node within the bound,
    /// its whole left subtree is too.
    pub(crate) fn earliest_eligible(&self, base: u64, max_key: i64) -> Option<u32> {
        if !self.tree {
            return self.small_earliest(|e| (e.vruntime.wrapping_sub(base) as i64) <= max_key);
        }
        let (mut d, mut s, mut best) = (0, 0, NIL);
        let mut t = self.root;
        while t != NIL {
            self.prefetch_children(t);
            let n = &self.nodes[t as usize];
            if (n.vruntime.wrapping_sub(base) as i64) <= max_key {
                if n.left != NIL {
                    let l = &self.nodes[n.left as usize];
                    if best == NIL || earlier(l.best_deadline, l.best_seq, d, s) {
                        (d, s, best) = (l.best_deadline, l.best_seq, l.best);
                    }
                }
                if best == NIL || earlier(n.deadline, n.seq, d, s) {
                    (d, s, best) = (n.deadline, n.seq, t);
                }
                t = n.right;
            } else {
                t = n.left;
            }
        }
        self.id_of(best)
    }
}

impl Timeline {
    /// The position of a small timeline's leftmost entry, by a scan: the
    /// smallest vruntime, the first queued among equals (0 when empty).
    fn small_scan_first(&self) -> u32 {
        let mut best = 0;
        for (i, e) in self.small.iter().enumerate() {
            if wrapping_before(e.vruntime, self.small[best].vruntime) {
                best = i;
            }
        }
        best as u32
    }

    /// A small timeline's entry with the earliest deadline (the first
    /// queued among equals) among those `keep` accepts.
    #[inline(always)]
    fn small_earliest(&self, keep: impl Fn(&Entry) -> bool) -> Option<u32> {
        let mut best: Option<&Entry> = None;
        for e in &self.small {
            if keep(e) && best.is_none_or(|b| wrapping_before(e.deadline, b.deadline)) {
                best = Some(e);
            }
        }
        best.map(|e| e.id)
    }
}

/// Task id to node index, open addressing with linear probing (Knuth's
/// deletion by backward shift, so no tombstones), at most half full. Only
/// looked up, never iterated, so its layout never shows in a run.
#[derive(Clone, Debug, Default)]
struct IdMap {
    /// (task id, node), the id NIL in an empty slot; a pair shares a line.
    slots: Vec<(u32, u32)>,
    len: usize,
}

impl IdMap {
    #[inline(always)]
    fn home(&self, id: u32) -> usize {
        // Fibonacci hashing: ids are mostly small and consecutive
        let bits = self.slots.len().trailing_zeros();
        ((id.wrapping_mul(0x9E37_79B9) as u64) >> (32 - bits)) as usize
    }

    /// The slot of `id`, or of the empty slot that ends its run.
    #[inline(always)]
    fn find(&self, id: u32) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = self.home(id);
        while self.slots[i].0 != id && self.slots[i].0 != NIL {
            i = (i + 1) & mask;
        }
        i
    }

    fn get(&self, id: u32) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let (k, v) = self.slots[self.find(id)];
        (k == id).then_some(v)
    }

    fn insert(&mut self, id: u32, val: u32) {
        debug_assert!(id != NIL);
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let i = self.find(id);
        if self.slots[i].0 == NIL {
            self.len += 1;
        }
        self.slots[i] = (id, val);
    }

    #[cold]
    fn grow(&mut self) {
        let cap = (2 * self.slots.len()).max(8);
        let old = std::mem::replace(&mut self.slots, vec![(NIL, 0); cap]);
        self.len = 0;
        for (k, v) in old {
            if k != NIL {
                self.insert(k, v);
            }
        }
    }

    fn remove(&mut self, id: u32) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mut hole = self.find(id);
        let (k, val) = self.slots[hole];
        if k != id {
            return None;
        }
        self.len -= 1;
        // backward shift: move each later entry of the run whose home is
        // not in (hole, its slot] into the hole
        let mask = self.slots.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.slots[j].0;
            if k == NIL {
                break;
            }
            let home = self.home(k);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole].0 = NIL;
        Some(val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: a vector in enqueue order, scanned linearly with the
    /// rules the run queue used before the tree (first strictly earlier
    /// wins, so the first queued among equals).
    #[derive(Default)]
    struct Scan {
        q: Vec<(u32, u64, u64)>,
    }

    impl Scan {
        fn first(&self) -> Option<(u32, u64)> {
            let mut best: Option<(u32, u64)> = None;
            for &(id, v, _) in &self.q {
                if best.is_none_or(|(_, bv)| wrapping_before(v, bv)) {
                    best = Some((id, v));
                }
            }
            best
        }

        fn earliest(&self, base: u64, max_key: Option<i64>) -> Option<u32> {
            let mut best: Option<(u32, u64)> = None;
            for &(id, v, d) in &self.q {
                let eligible = max_key.is_none_or(|m| (v.wrapping_sub(base) as i64) <= m);
                if eligible && best.is_none_or(|(_, bd)| wrapping_before(d, bd)) {
                    best = Some((id, d));
                }
            }
            best.map(|(id, _)| id)
        }

        fn next_after(&self, base: u64, id: u32) -> Option<u32> {
            let key = |v: u64| v.wrapping_sub(base) as i64;
            let pos = self.q.iter().position(|e| e.0 == id)?;
            let k0 = key(self.q[pos].1);
            let mut best: Option<(i64, u32)> = None;
            for (i, &(t, v, _)) in self.q.iter().enumerate() {
                let k = key(v);
                let after = k > k0 || (k == k0 && i > pos);
                if after && best.is_none_or(|(bk, _)| k < bk) {
                    best = Some((k, t));
                }
            }
            best.map(|(_, t)| t)
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Queue a new id at base + v (few distinct values: many ties).
        Insert { v: u64, d: u64 },
        /// Remove the queued entry number `i` (mod the count).
        Remove { i: usize },
        /// Query with the bound at base + k.
        Pick { k: i64 },
        /// Move the base up by `by` (the queue's min_vruntime).
        Advance { by: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        ops(2)
    }

    /// Operations with `removes` removals to 4 insertions (2: the queue
    /// grows into the tree; 4: it moves between the vector and the tree).
    fn ops(removes: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..12, 0u64..12).prop_map(|(v, d)| Op::Insert { v, d }),
            removes => any::<usize>().prop_map(|i| Op::Remove { i }),
            3 => (-3i64..14).prop_map(|k| Op::Pick { k }),
            1 => (0u64..3).prop_map(|by| Op::Advance { by }),
        ]
    }

    /// Both structures give the same answers to every query.
    fn agree(t: &Timeline, s: &Scan, base: u64, k: i64) -> Result<(), TestCaseError> {
        prop_assert_eq!(t.len(), s.q.len());
        prop_assert_eq!(t.first(), s.first());
        prop_assert_eq!(t.earliest_deadline(), s.earliest(base, None));
        prop_assert_eq!(t.earliest_eligible(base, k), s.earliest(base, Some(k)));
        let ids: Vec<u32> = s.q.iter().map(|e| e.0).collect();
        prop_assert_eq!(t.ids(), ids.clone());
        for &id in &ids {
            prop_assert!(t.contains(id));
            prop_assert_eq!(t.next_after(id), s.next_after(base, id));
        }
        Ok(())
    }

    proptest! {
        /// Random enqueues, dequeues and picks: the tree answers as the
        /// linear scan of the enqueue-ordered vector did, ties included,
        /// near the wrap of the u64 range too, and across the renumbering
        /// at the end of the enqueue numbers.
        #[test]
        fn the_tree_answers_as_the_scan(
            start in prop_oneof![Just(0u64), Just(u64::MAX - 6), any::<u64>()],
            seq0 in prop_oneof![Just(0u32), Just(u32::MAX - 40)],
            ops in prop_oneof![
                proptest::collection::vec(op(), 1..300),
                proptest::collection::vec(ops(4), 1..300),
            ],
        ) {
            let mut t = Timeline { next_seq: seq0, ..Timeline::default() };
            let mut s = Scan::default();
            let mut base = start;
            let mut next_id = 0u32;
            for o in ops {
                match o {
                    Op::Insert { v, d } => {
                        let (v, d) = (base.wrapping_add(v), base.wrapping_add(d));
                        t.insert(next_id, v, d);
                        s.q.push((next_id, v, d));
                        next_id += 1;
                    }
                    Op::Remove { i } => {
                        if !s.q.is_empty() {
                            let (id, _, _) = s.q.remove(i % s.q.len());
                            prop_assert!(t.remove(id));
                            prop_assert!(!t.contains(id));
                            prop_assert!(!t.remove(id));
                        }
                    }
                    Op::Pick { k } => agree(&t, &s, base, k)?,
                    Op::Advance { by } => base = base.wrapping_add(by),
                }
            }
            agree(&t, &s, base, i64::MAX)?;
            agree(&t, &s, base, i64::MIN)?;
        }

        /// The id table finds what was put in and nothing else, through
        /// growth and backward-shift deletions.
        #[test]
        fn the_id_map_is_a_map(ops in proptest::collection::vec((0u32..64, any::<bool>()), 0..400)) {
            let mut m = IdMap::default();
            let mut r = std::collections::BTreeMap::new();
            for (i, (id, put)) in ops.into_iter().enumerate() {
                if put {
                    m.insert(id, i as u32);
                    r.insert(id, i as u32);
                } else {
                    prop_assert_eq!(m.remove(id), r.remove(&id));
                }
                for k in 0..64 {
                    prop_assert_eq!(m.get(k), r.get(&k).copied());
                }
            }
        }
    }

    /// A timeline goes from the vector to the tree past `SMALL` entries and
    /// back once empty, and answers alike on both sides.
    #[test]
    fn small_timelines_move_into_the_tree_and_back() {
        let mut t = Timeline::default();
        for round in 0..3u32 {
            for i in 0..=SMALL as u32 {
                // equal vruntimes: the enqueue order decides
                t.insert(10 * round + i, 5, 100 - i as u64);
            }
            assert!(t.tree);
            assert_eq!(t.first(), Some((10 * round, 5)));
            assert_eq!(t.next_after(10 * round), Some(10 * round + 1));
            assert_eq!(t.earliest_deadline(), Some(10 * round + SMALL as u32));
            for i in 0..=SMALL as u32 {
                assert!(t.remove(10 * round + i));
            }
            assert!(!t.tree && t.len() == 0);
            t.insert(99, 7, 7);
            assert!(!t.tree);
            assert_eq!(t.earliest_eligible(0, 7), Some(99));
            assert_eq!(t.earliest_eligible(0, 6), None);
            assert!(t.remove(99));
        }
    }

    /// Sorted insertions, the worst case of an unbalanced tree, leave it
    /// shallow: the priorities do not follow the enqueue order's keys.
    #[test]
    fn sorted_insertions_stay_shallow() {
        fn depth(t: &Timeline, n: u32) -> usize {
            if n == NIL {
                0
            } else {
                let node = &t.nodes[n as usize];
                1 + depth(t, node.left).max(depth(t, node.right))
            }
        }
        let mut t = Timeline::default();
        for i in 0..100_000u32 {
            t.insert(i, i as u64, 0);
        }
        // a random treap of 10^5 nodes is about 4.3 ln n = 45 deep (its
        // nodes 2 ln n = 23 on average), whatever the order of the keys
        assert!(depth(&t, t.root) < 60, "depth {}", depth(&t, t.root));
        // everything out again, in order: the leftmost follows
        for i in 0..100_000u32 {
            assert_eq!(t.first(), Some((i, i as u64)));
            assert!(t.remove(i));
        }
        assert!(t.len() == 0 && t.first().is_none());
    }
}
