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
//! Here the tree is a B+ tree: the entries sit in leaves of up to [`LEAF`],
//! in order, and inner nodes of up to [`FAN`] children keep, for each
//! child, a separator key and the child's earliest (deadline, enqueue
//! number) with its task id (the augmentation). A queue of thousands of
//! entries (the start-up of tens of thousands of tasks) is far beyond the
//! first-level cache, and a binary tree's descent is a chain of a dozen or
//! more dependent misses; here the few inner nodes stay cached and an
//! operation misses on one leaf, whose lines are fetched together (the
//! treap this replaced cost 850 instructions and 10 first-level misses per
//! insertion at 2,000 entries a queue). Every operation is O(log n), or
//! O(1): [`Timeline::insert`], [`Timeline::remove`], [`Timeline::first`]
//! (the leftmost, cached), [`Timeline::next_after`],
//! [`Timeline::earliest_deadline`] and [`Timeline::earliest_eligible`].
//! Nodes are split when full and dropped when empty, never merged (deletion
//! without rebalancing: the height stays logarithmic in the insertions
//! since the queue was last empty, when the tree starts again).
//!
//! Order and ties. Entries are ordered by vruntime, compared as the kernel
//! compares them (`entity_before`: the sign of the wrapping difference),
//! then by enqueue number: an entry queued later goes after an equal one,
//! as equal keys go right in the kernel's tree. Deadlines are compared the
//! same way, and among equal deadlines the one queued first wins. These are
//! the rules of the linear scan over a vector in enqueue order that the
//! tree replaced, so every query answers what that scan answered (for
//! vruntimes, and deadlines, within half the u64 range of one another, as
//! the kernel's wrapping comparisons also assume).
//!
//! An entry's vruntime and deadline are copied in at insertion: a queued
//! entity's never change (only the running one, which is not in the tree,
//! is charged), and the kernel too must dequeue an entity to move it.
//!
//! Entries are found by task id through a small open-addressing table
//! ([`IdMap`]) that holds each queued id's key, from which a descent finds
//! its leaf, so the entity itself carries nothing (the kernel embeds its
//! tree node in `sched_entity`) and moving entries between leaves updates
//! nothing else.
//!
//! A timeline of at most [`SMALL`] entries is a vector in enqueue order,
//! scanned with the same comparisons (the first strictly earlier wins, so
//! the first queued among equals): the tens of tasks per CPU of most runs
//! cost less to scan than to keep in a tree (a tree alone took the default
//! hackbench case, about 16 tasks per CPU, from 1,150.7 to 1,182.5
//! instructions per event; with vectors of up to 8 entries 1,171.0, of up
//! to 32 1,159.4). Past it the entries move into the tree, in their
//! enqueue order and with their enqueue numbers, and stay there until the
//! timeline empties.

/// The most entries a timeline keeps as a scanned vector.
const SMALL: usize = 32;

/// Entries a leaf holds at most: its four rows then fill six cache lines
/// (vruntimes and the count, enqueue numbers and ids, deadlines).
const LEAF: usize = 15;

/// Children an inner node holds at most.
const FAN: usize = 16;

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
    key_before(a.vruntime, a.seq, b.vruntime, b.seq)
}

/// Key (vruntime `v`, enqueue number `s`) goes before (`w`, `t`).
#[inline(always)]
fn key_before(v: u64, s: u32, w: u64, t: u32) -> bool {
    if v == w {
        s < t
    } else {
        wrapping_before(v, w)
    }
}

/// No node.
const NIL: u32 = u32::MAX;

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

/// The earliest (deadline, enqueue number) of a set of entries, and its
/// task id.
#[derive(Clone, Copy, Debug)]
struct Best {
    deadline: u64,
    seq: u32,
    id: u32,
}

impl Best {
    /// Keep `other` if it comes first.
    #[inline(always)]
    fn take(&mut self, other: Best) {
        if earlier(other.deadline, other.seq, self.deadline, self.seq) {
            *self = other;
        }
    }
}

/// A leaf: up to [`LEAF`] entries in tree order, by row (a search reads
/// the vruntimes, a removal the ids). Line-aligned; 6 lines.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Leaf {
    vruntime: [u64; LEAF],
    len: u32,
    seq: [u32; LEAF],
    id: [u32; LEAF],
    deadline: [u64; LEAF],
}

impl Leaf {
    const EMPTY: Leaf = Leaf {
        vruntime: [0; LEAF],
        len: 0,
        seq: [0; LEAF],
        id: [NIL; LEAF],
        deadline: [0; LEAF],
    };

    /// The earliest (deadline, enqueue number) of its entries (it has one).
    #[inline]
    fn best(&self) -> Best {
        let mut b = self.at(0);
        for i in 1..self.len as usize {
            b.take(self.at(i));
        }
        b
    }

    #[inline(always)]
    fn at(&self, i: usize) -> Best {
        Best {
            deadline: self.deadline[i],
            seq: self.seq[i],
            id: self.id[i],
        }
    }

    /// Put an entry at its place (the leaf has room).
    #[inline]
    fn insert(&mut self, vruntime: u64, seq: u32, deadline: u64, id: u32) {
        let len = self.len as usize;
        debug_assert!(len < LEAF);
        let mut p = len;
        while p > 0 && key_before(vruntime, seq, self.vruntime[p - 1], self.seq[p - 1]) {
            p -= 1;
        }
        self.vruntime.copy_within(p..len, p + 1);
        self.seq.copy_within(p..len, p + 1);
        self.id.copy_within(p..len, p + 1);
        self.deadline.copy_within(p..len, p + 1);
        self.vruntime[p] = vruntime;
        self.seq[p] = seq;
        self.id[p] = id;
        self.deadline[p] = deadline;
        self.len += 1;
    }

    /// Take out entry `p`.
    #[inline]
    fn remove(&mut self, p: usize) {
        let len = self.len as usize;
        self.vruntime.copy_within(p + 1..len, p);
        self.seq.copy_within(p + 1..len, p);
        self.id.copy_within(p + 1..len, p);
        self.deadline.copy_within(p + 1..len, p);
        self.len -= 1;
    }

    /// The position of task `id`'s entry (it is here).
    #[inline]
    fn position(&self, id: u32) -> usize {
        let p = self.id[..self.len as usize].iter().position(|&x| x == id);
        debug_assert!(p.is_some(), "task {id} not in its leaf");
        p.unwrap_or(0)
    }
}

/// An inner node: up to [`FAN`] children in tree order, with, for each, a
/// separator (every key of child `i` is at or after separator `i` and
/// before separator `i + 1`; separator 0 is unused) and its subtree's
/// earliest (deadline, enqueue number) and task id. Line-aligned; 9 lines.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Inner {
    sep_vruntime: [u64; FAN],
    sep_seq: [u32; FAN],
    child: [u32; FAN],
    best_deadline: [u64; FAN],
    best_seq: [u32; FAN],
    best_id: [u32; FAN],
    len: u32,
}

impl Inner {
    const EMPTY: Inner = Inner {
        sep_vruntime: [0; FAN],
        sep_seq: [0; FAN],
        child: [NIL; FAN],
        best_deadline: [0; FAN],
        best_seq: [0; FAN],
        best_id: [NIL; FAN],
        len: 0,
    };

    /// The child whose subtree holds, or would hold, key (`v`, `s`): the
    /// last whose separator is not after it.
    #[inline(always)]
    fn route(&self, v: u64, s: u32) -> usize {
        let mut i = 1;
        while i < self.len as usize && !key_before(v, s, self.sep_vruntime[i], self.sep_seq[i]) {
            i += 1;
        }
        i - 1
    }

    #[inline(always)]
    fn best_at(&self, i: usize) -> Best {
        Best {
            deadline: self.best_deadline[i],
            seq: self.best_seq[i],
            id: self.best_id[i],
        }
    }

    #[inline(always)]
    fn set_best(&mut self, i: usize, b: Best) {
        self.best_deadline[i] = b.deadline;
        self.best_seq[i] = b.seq;
        self.best_id[i] = b.id;
    }

    /// The earliest of its children's bests (it has a child).
    #[inline]
    fn best(&self) -> Best {
        let mut b = self.best_at(0);
        for i in 1..self.len as usize {
            b.take(self.best_at(i));
        }
        b
    }

    /// Put child `c` with separator (`v`, `s`) and best `b` at position `p`
    /// (the node has room).
    fn insert(&mut self, p: usize, v: u64, s: u32, c: u32, b: Best) {
        let len = self.len as usize;
        debug_assert!(len < FAN);
        self.sep_vruntime.copy_within(p..len, p + 1);
        self.sep_seq.copy_within(p..len, p + 1);
        self.child.copy_within(p..len, p + 1);
        self.best_deadline.copy_within(p..len, p + 1);
        self.best_seq.copy_within(p..len, p + 1);
        self.best_id.copy_within(p..len, p + 1);
        self.sep_vruntime[p] = v;
        self.sep_seq[p] = s;
        self.child[p] = c;
        self.set_best(p, b);
        self.len += 1;
    }

    /// Take out child `p`.
    fn remove(&mut self, p: usize) {
        let len = self.len as usize;
        self.sep_vruntime.copy_within(p + 1..len, p);
        self.sep_seq.copy_within(p + 1..len, p);
        self.child.copy_within(p + 1..len, p);
        self.best_deadline.copy_within(p + 1..len, p);
        self.best_seq.copy_within(p + 1..len, p);
        self.best_id.copy_within(p + 1..len, p);
        self.len -= 1;
    }
}

/// A node that split: the new right sibling and its separator.
struct Split {
    vruntime: u64,
    seq: u32,
    node: u32,
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
    /// While `tree`: the leftmost entry's id and vruntime (rb_leftmost).
    first_id: u32,
    first_vruntime: u64,
    /// The root (a leaf at height 0), or NIL.
    root: u32,
    /// Levels of inner nodes above the leaves.
    height: u32,
    len: u32,
    /// The next enqueue number. At the end of the u32 range the queued
    /// entries are numbered again from 0 in the same order (`renumber`).
    next_seq: u32,
    /// Task id to key.
    index: IdMap,
    /// Leaves and inner nodes, live and free.
    leaves: Vec<Leaf>,
    inners: Vec<Inner>,
    /// The free ones, the last freed on top.
    free_leaves: Vec<u32>,
    free_inners: Vec<u32>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            small: Vec::new(),
            small_first: 0,
            tree: false,
            first_id: NIL,
            first_vruntime: 0,
            root: NIL,
            height: 0,
            len: 0,
            next_seq: 0,
            index: IdMap::default(),
            leaves: Vec::new(),
            inners: Vec::new(),
            free_leaves: Vec::new(),
            free_inners: Vec::new(),
        }
    }
}

impl Timeline {
    /// Bytes an entry holds (for memory estimates): its share of a leaf (a
    /// split leaves both halves at least half full), of the inner nodes
    /// above (each at least half full), and its id table slots (the table
    /// is a quarter to a half full).
    pub(crate) const BYTES_PER_ENTRY: usize = std::mem::size_of::<Leaf>() / (LEAF / 2)
        + std::mem::size_of::<Inner>() / (FAN / 2 * (LEAF / 2))
        + 4 * std::mem::size_of::<Slot>();

    /// From this many entries operations prefetch (the id table's slot, a
    /// leaf's lines).
    const PREFETCH_FROM: u32 = 64;

    /// Above this many leaves an emptied timeline gives its memory back.
    const KEEP_LEAVES: usize = 128;

    /// Queued entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Ask for the line where task `id`'s entry is looked up, ahead of an
    /// insertion or removal (a hint only; see `prefetch`).
    #[inline(always)]
    pub(crate) fn prefetch_entry(&self, id: u32) {
        if self.tree && self.len >= Self::PREFETCH_FROM {
            crate::prefetch::prefetch(&self.index.slots[self.index.home(id)], 1);
        }
    }

    /// Ask for every line of leaf `l`, on a timeline large enough for its
    /// leaves to miss: an operation reads all its rows, and asking for them
    /// together overlaps their misses. A hint only.
    #[inline(always)]
    fn prefetch_leaf(&self, l: u32) {
        if self.len >= Self::PREFETCH_FROM {
            crate::prefetch::prefetch(&self.leaves[l as usize], 6);
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

    /// Every entry as (enqueue number, id, vruntime, deadline), in tree
    /// order.
    fn entries(&self) -> Vec<(u32, u32, u64, u64)> {
        let mut out = Vec::with_capacity(self.len as usize);
        if self.root != NIL {
            self.collect(self.root, self.height, &mut out);
        }
        out
    }

    fn collect(&self, n: u32, h: u32, out: &mut Vec<(u32, u32, u64, u64)>) {
        if h == 0 {
            let l = &self.leaves[n as usize];
            for i in 0..l.len as usize {
                out.push((l.seq[i], l.id[i], l.vruntime[i], l.deadline[i]));
            }
        } else {
            let inner = &self.inners[n as usize];
            for i in 0..inner.len as usize {
                self.collect(inner.child[i], h - 1, out);
            }
        }
    }

    /// The queued task ids in the order they were queued.
    pub(crate) fn ids(&self) -> Vec<u32> {
        if !self.tree {
            return self.small.iter().map(|e| e.id).collect();
        }
        let mut live = self.entries();
        live.sort_unstable_by_key(|e| e.0);
        live.into_iter().map(|e| e.1).collect()
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
        self.tree_insert(id, vruntime, deadline, seq);
    }

    /// Move a small timeline's entries into the tree, in enqueue order.
    #[cold]
    fn grow_into_tree(&mut self) {
        self.tree = true;
        let small = std::mem::take(&mut self.small);
        for e in &small {
            self.tree_insert(e.id, e.vruntime, e.deadline, e.seq);
        }
        // keep the vector's allocation for the next time it is small
        self.small = small;
        self.small.clear();
    }

    fn alloc_leaf(&mut self) -> u32 {
        if let Some(l) = self.free_leaves.pop() {
            self.leaves[l as usize].len = 0;
            return l;
        }
        self.leaves.push(Leaf::EMPTY);
        (self.leaves.len() - 1) as u32
    }

    fn alloc_inner(&mut self) -> u32 {
        if let Some(n) = self.free_inners.pop() {
            self.inners[n as usize].len = 0;
            return n;
        }
        self.inners.push(Inner::EMPTY);
        (self.inners.len() - 1) as u32
    }

    /// The earliest (deadline, enqueue number) of node `n` at height `h`.
    #[inline]
    fn best_of(&self, n: u32, h: u32) -> Best {
        if h == 0 {
            self.leaves[n as usize].best()
        } else {
            self.inners[n as usize].best()
        }
    }

    /// Put task `id` into the tree with enqueue number `seq`.
    fn tree_insert(&mut self, id: u32, vruntime: u64, deadline: u64, seq: u32) {
        let e = Best { deadline, seq, id };
        if self.root == NIL {
            self.root = self.alloc_leaf();
            self.height = 0;
        }
        if let Some(s) = self.insert_in(self.root, self.height, vruntime, e) {
            // the root split: a new root above the two halves
            let (old, h) = (self.root, self.height);
            let (lb, rb) = (self.best_of(old, h), self.best_of(s.node, h));
            let r = self.alloc_inner();
            let root = &mut self.inners[r as usize];
            root.insert(0, 0, 0, old, lb);
            root.insert(1, s.vruntime, s.seq, s.node, rb);
            self.root = r;
            self.height += 1;
        }
        self.index.insert(id, seq, vruntime);
        // queued last, it goes first only if strictly earlier
        if self.first_id == NIL || wrapping_before(vruntime, self.first_vruntime) {
            self.first_id = id;
            self.first_vruntime = vruntime;
        }
    }

    /// Insert entry `e` with key (`vruntime`, `e.seq`) into the subtree of
    /// node `n` at height `h`; returns the new right sibling if `n` split.
    fn insert_in(&mut self, n: u32, h: u32, vruntime: u64, e: Best) -> Option<Split> {
        if h == 0 {
            let leaf = &mut self.leaves[n as usize];
            if (leaf.len as usize) < LEAF {
                leaf.insert(vruntime, e.seq, e.deadline, e.id);
                return None;
            }
            // full: the upper half moves to a new leaf
            let r = self.alloc_leaf();
            let (left, right) = pair_mut(&mut self.leaves, n, r);
            let half = LEAF / 2;
            let moved = LEAF - half;
            right.vruntime[..moved].copy_from_slice(&left.vruntime[half..]);
            right.seq[..moved].copy_from_slice(&left.seq[half..]);
            right.id[..moved].copy_from_slice(&left.id[half..]);
            right.deadline[..moved].copy_from_slice(&left.deadline[half..]);
            right.len = moved as u32;
            left.len = half as u32;
            let (sv, ss) = (right.vruntime[0], right.seq[0]);
            if key_before(vruntime, e.seq, sv, ss) {
                left.insert(vruntime, e.seq, e.deadline, e.id);
            } else {
                right.insert(vruntime, e.seq, e.deadline, e.id);
            }
            return Some(Split {
                vruntime: sv,
                seq: ss,
                node: r,
            });
        }
        let i = self.inners[n as usize].route(vruntime, e.seq);
        let c = self.inners[n as usize].child[i];
        if h == 1 {
            self.prefetch_leaf(c);
        }
        let Some(s) = self.insert_in(c, h - 1, vruntime, e) else {
            // the child's set gained only `e`
            let inner = &mut self.inners[n as usize];
            if earlier(e.deadline, e.seq, inner.best_deadline[i], inner.best_seq[i]) {
                inner.set_best(i, e);
            }
            return None;
        };
        let (lb, rb) = (self.best_of(c, h - 1), self.best_of(s.node, h - 1));
        self.inners[n as usize].set_best(i, lb);
        if (self.inners[n as usize].len as usize) < FAN {
            self.inners[n as usize].insert(i + 1, s.vruntime, s.seq, s.node, rb);
            return None;
        }
        // full: the upper half of the children moves to a new node, whose
        // first separator goes up
        let r = self.alloc_inner();
        let (left, right) = pair_mut(&mut self.inners, n, r);
        let half = FAN / 2;
        let moved = FAN - half;
        right.sep_vruntime[..moved].copy_from_slice(&left.sep_vruntime[half..]);
        right.sep_seq[..moved].copy_from_slice(&left.sep_seq[half..]);
        right.child[..moved].copy_from_slice(&left.child[half..]);
        right.best_deadline[..moved].copy_from_slice(&left.best_deadline[half..]);
        right.best_seq[..moved].copy_from_slice(&left.best_seq[half..]);
        right.best_id[..moved].copy_from_slice(&left.best_id[half..]);
        right.len = moved as u32;
        left.len = half as u32;
        let up = Split {
            vruntime: right.sep_vruntime[0],
            seq: right.sep_seq[0],
            node: r,
        };
        if i < half {
            left.insert(i + 1, s.vruntime, s.seq, s.node, rb);
        } else {
            right.insert(i + 1 - half, s.vruntime, s.seq, s.node, rb);
        }
        Some(up)
    }

    /// Number the queued entries again from 0, in the order of their
    /// enqueue numbers, and rebuild the tree with them: the order of every
    /// comparison stays what it was. Once per 2^32 enqueues.
    #[cold]
    fn renumber(&mut self) {
        if !self.tree {
            for (i, e) in self.small.iter_mut().enumerate() {
                e.seq = i as u32;
            }
            self.next_seq = self.small.len() as u32;
            return;
        }
        let mut live = self.entries();
        live.sort_unstable_by_key(|e| e.0);
        self.reset();
        self.index = IdMap::default();
        self.tree = true;
        for (seq, &(_, id, v, d)) in live.iter().enumerate() {
            self.tree_insert(id, v, d, seq as u32);
        }
        self.next_seq = live.len() as u32;
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
        let Some((seq, vruntime)) = self.index.remove(id) else {
            return false;
        };
        self.len -= 1;
        if self.len == 0 {
            self.reset();
            return true;
        }
        self.remove_in(self.root, self.height, vruntime, seq, id);
        // a root with one child gives way to it
        while self.height > 0 && self.inners[self.root as usize].len == 1 {
            let old = self.root;
            self.root = self.inners[old as usize].child[0];
            self.free_inners.push(old);
            self.height -= 1;
        }
        if self.first_id == id {
            let (mut n, mut h) = (self.root, self.height);
            while h > 0 {
                n = self.inners[n as usize].child[0];
                h -= 1;
            }
            let l = &self.leaves[n as usize];
            self.first_id = l.id[0];
            self.first_vruntime = l.vruntime[0];
        }
        true
    }

    /// Take task `id`, key (`vruntime`, `seq`), out of the subtree of node
    /// `n` at height `h`, which holds it; returns true if `n` is left
    /// empty (and then its parent frees it).
    fn remove_in(&mut self, n: u32, h: u32, vruntime: u64, seq: u32, id: u32) -> bool {
        if h == 0 {
            let leaf = &mut self.leaves[n as usize];
            let p = leaf.position(id);
            leaf.remove(p);
            return leaf.len == 0;
        }
        let i = self.inners[n as usize].route(vruntime, seq);
        let c = self.inners[n as usize].child[i];
        if h == 1 {
            self.prefetch_leaf(c);
        }
        if self.remove_in(c, h - 1, vruntime, seq, id) {
            if h == 1 {
                self.free_leaves.push(c);
            } else {
                self.free_inners.push(c);
            }
            let inner = &mut self.inners[n as usize];
            inner.remove(i);
            return inner.len == 0;
        }
        if self.inners[n as usize].best_id[i] == id {
            let b = self.best_of(c, h - 1);
            self.inners[n as usize].set_best(i, b);
        }
        false
    }

    /// Start again from no node (the queue is empty): a queue that held
    /// thousands of entries once (a start-up) does not keep their memory,
    /// nor scatter its next entries over it.
    fn reset(&mut self) {
        self.tree = false;
        self.leaves.clear();
        self.inners.clear();
        self.free_leaves.clear();
        self.free_inners.clear();
        if self.leaves.capacity() > Self::KEEP_LEAVES {
            self.leaves.shrink_to(Self::KEEP_LEAVES);
            self.inners.shrink_to(Self::KEEP_LEAVES / 8);
            self.free_leaves.shrink_to(Self::KEEP_LEAVES);
            self.free_inners.shrink_to(Self::KEEP_LEAVES / 8);
            self.index = IdMap::default();
        }
        self.root = NIL;
        self.height = 0;
        self.first_id = NIL;
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
        (self.first_id != NIL).then_some((self.first_id, self.first_vruntime))
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
        let (seq, vruntime) = self.index.get(id)?;
        // the successor is in the leaf, else first in the nearest right
        // sibling subtree of the way down
        let (mut n, mut h) = (self.root, self.height);
        let mut right = None;
        while h > 0 {
            let inner = &self.inners[n as usize];
            let i = inner.route(vruntime, seq);
            if i + 1 < inner.len as usize {
                right = Some((inner.child[i + 1], h - 1));
            }
            n = inner.child[i];
            h -= 1;
        }
        let leaf = &self.leaves[n as usize];
        let p = leaf.position(id);
        if p + 1 < leaf.len as usize {
            return Some(leaf.id[p + 1]);
        }
        let (mut n, mut h) = right?;
        while h > 0 {
            n = self.inners[n as usize].child[0];
            h -= 1;
        }
        Some(self.leaves[n as usize].id[0])
    }

    /// The entry with the earliest deadline, the first queued among equals.
    #[inline]
    pub(crate) fn earliest_deadline(&self) -> Option<u32> {
        if !self.tree {
            return self.small_earliest(|_| true);
        }
        (self.root != NIL).then(|| self.best_of(self.root, self.height).id)
    }

    /// The entry with the earliest deadline (the first queued among equals)
    /// among those whose key, their vruntime less `base` (a signed wrapping
    /// difference), is at most `max_key`: pick_eevdf's eligible set, a
    /// prefix of the tree order. One descent: the children before the last
    /// one whose separator is eligible are eligible whole, and their bests
    /// are kept; the search goes on in that last one.
    pub(crate) fn earliest_eligible(&self, base: u64, max_key: i64) -> Option<u32> {
        if !self.tree {
            return self.small_earliest(|e| (e.vruntime.wrapping_sub(base) as i64) <= max_key);
        }
        let eligible = |v: u64| (v.wrapping_sub(base) as i64) <= max_key;
        let mut best: Option<Best> = None;
        let (mut n, mut h) = (self.root, self.height);
        while h > 0 {
            let inner = &self.inners[n as usize];
            let mut j = 0;
            while j + 1 < inner.len as usize && eligible(inner.sep_vruntime[j + 1]) {
                j += 1;
            }
            for i in 0..j {
                let b = inner.best_at(i);
                match &mut best {
                    Some(x) => x.take(b),
                    None => best = Some(b),
                }
            }
            n = inner.child[j];
            h -= 1;
            if h == 0 {
                self.prefetch_leaf(n);
            }
        }
        let leaf = &self.leaves[n as usize];
        for i in 0..leaf.len as usize {
            if !eligible(leaf.vruntime[i]) {
                break;
            }
            let b = leaf.at(i);
            match &mut best {
                Some(x) => x.take(b),
                None => best = Some(b),
            }
        }
        best.map(|b| b.id)
    }
}

/// Two distinct elements of `v`, both mutable.
fn pair_mut<T>(v: &mut [T], a: u32, b: u32) -> (&mut T, &mut T) {
    let (a, b) = (a as usize, b as usize);
    debug_assert!(a != b);
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
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

/// A slot of the id table: a queued task's id and key.
#[derive(Clone, Copy, Debug)]
struct Slot {
    id: u32,
    seq: u32,
    vruntime: u64,
}

const EMPTY_SLOT: Slot = Slot {
    id: NIL,
    seq: 0,
    vruntime: 0,
};

/// Task id to key (enqueue number, vruntime), open addressing with linear
/// probing (Knuth's deletion by backward shift, so no tombstones), at most
/// half full. Only looked up, never iterated, so its layout never shows in
/// a run.
#[derive(Clone, Debug, Default)]
struct IdMap {
    /// Four slots share a line.
    slots: Vec<Slot>,
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
        while self.slots[i].id != id && self.slots[i].id != NIL {
            i = (i + 1) & mask;
        }
        i
    }

    fn get(&self, id: u32) -> Option<(u32, u64)> {
        if self.slots.is_empty() {
            return None;
        }
        let s = self.slots[self.find(id)];
        (s.id == id).then_some((s.seq, s.vruntime))
    }

    fn insert(&mut self, id: u32, seq: u32, vruntime: u64) {
        debug_assert!(id != NIL);
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let i = self.find(id);
        if self.slots[i].id == NIL {
            self.len += 1;
        }
        self.slots[i] = Slot { id, seq, vruntime };
    }

    #[cold]
    fn grow(&mut self) {
        let cap = (2 * self.slots.len()).max(8);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY_SLOT; cap]);
        self.len = 0;
        for s in old {
            if s.id != NIL {
                self.insert(s.id, s.seq, s.vruntime);
            }
        }
    }

    fn remove(&mut self, id: u32) -> Option<(u32, u64)> {
        if self.slots.is_empty() {
            return None;
        }
        let mut hole = self.find(id);
        let s = self.slots[hole];
        if s.id != id {
            return None;
        }
        self.len -= 1;
        // backward shift: move each later entry of the run whose home is
        // not in (hole, its slot] into the hole
        let mask = self.slots.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.slots[j].id;
            if k == NIL {
                break;
            }
            let home = self.home(k);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole].id = NIL;
        Some((s.seq, s.vruntime))
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

    /// The tree's own invariants: entries in order in every leaf, every
    /// key within its separators, each inner node's bests those of its
    /// children, the cached leftmost, the count, and the id table.
    fn check_tree(t: &Timeline) {
        if !t.tree {
            return;
        }
        fn walk(
            t: &Timeline,
            n: u32,
            h: u32,
            lo: Option<(u64, u32)>,
            hi: Option<(u64, u32)>,
        ) -> (Best, usize) {
            let inside = |v: u64, s: u32| {
                lo.is_none_or(|(lv, ls)| !key_before(v, s, lv, ls))
                    && hi.is_none_or(|(hv, hs)| key_before(v, s, hv, hs))
            };
            if h == 0 {
                let l = &t.leaves[n as usize];
                assert!(l.len > 0, "an empty leaf stays in the tree");
                for i in 0..l.len as usize {
                    assert!(
                        inside(l.vruntime[i], l.seq[i]),
                        "a key outside its separators"
                    );
                    if i > 0 {
                        assert!(key_before(
                            l.vruntime[i - 1],
                            l.seq[i - 1],
                            l.vruntime[i],
                            l.seq[i]
                        ));
                    }
                    assert_eq!(t.index.get(l.id[i]), Some((l.seq[i], l.vruntime[i])));
                }
                return (l.best(), l.len as usize);
            }
            let inner = &t.inners[n as usize];
            assert!(inner.len > 0, "an empty inner node stays in the tree");
            let mut count = 0;
            for i in 0..inner.len as usize {
                let clo = if i == 0 {
                    lo
                } else {
                    Some((inner.sep_vruntime[i], inner.sep_seq[i]))
                };
                let chi = if i + 1 < inner.len as usize {
                    Some((inner.sep_vruntime[i + 1], inner.sep_seq[i + 1]))
                } else {
                    hi
                };
                let (b, c) = walk(t, inner.child[i], h - 1, clo, chi);
                let kept = inner.best_at(i);
                assert_eq!(
                    (kept.deadline, kept.seq, kept.id),
                    (b.deadline, b.seq, b.id),
                    "a stale best"
                );
                count += c;
            }
            (inner.best(), count)
        }
        let (_, count) = walk(t, t.root, t.height, None, None);
        assert_eq!(count, t.len());
        assert_eq!(t.index.len, t.len());
        let all = t.entries();
        assert_eq!(t.first(), all.first().map(|e| (e.1, e.2)));
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

        /// Long runs, thousands of entries queued: trees of several levels,
        /// split and emptied, still answer as the scan, and keep their
        /// invariants.
        #[test]
        fn deep_trees_answer_as_the_scan(
            start in prop_oneof![Just(0u64), Just(u64::MAX - 3000), any::<u64>()],
            spread in prop_oneof![Just(12u64), Just(5000u64)],
            ops in proptest::collection::vec((0u8..10, any::<u64>(), any::<u64>(), any::<usize>()), 2000..6000),
        ) {
            let mut t = Timeline::default();
            let mut s = Scan::default();
            let mut base = start;
            let mut next_id = 0u32;
            for (i, &(kind, a, b, r)) in ops.iter().enumerate() {
                // insertions outnumber removals 6 to 3 over the first half
                // and 3 to 6 over the second: the queue grows, then drains
                let grow = i < ops.len() / 2;
                let insert = if grow { kind < 6 } else { kind < 3 };
                if kind == 9 {
                    base = base.wrapping_add(a % 3);
                    let k = (b % (spread + 4)) as i64 - 3;
                    prop_assert_eq!(t.earliest_eligible(base, k), s.earliest(base, Some(k)));
                    prop_assert_eq!(t.first(), s.first());
                } else if insert {
                    let (v, d) = (base.wrapping_add(a % spread), base.wrapping_add(b % spread));
                    t.insert(next_id, v, d);
                    s.q.push((next_id, v, d));
                    next_id += 1;
                } else if !s.q.is_empty() {
                    let (id, _, _) = s.q.remove(r % s.q.len());
                    prop_assert!(t.remove(id));
                    if let Some(&(q, _, _)) = s.q.get(r % s.q.len().max(1)) {
                        prop_assert_eq!(t.next_after(q), s.next_after(base, q));
                    }
                }
                if i % 500 == 0 {
                    check_tree(&t);
                    prop_assert_eq!(t.earliest_deadline(), s.earliest(base, None));
                }
            }
            check_tree(&t);
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
                    m.insert(id, i as u32, 7 * i as u64);
                    r.insert(id, (i as u32, 7 * i as u64));
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

    /// Sorted insertions fill the leaves from the right and leave the tree
    /// shallow: 100,000 entries in leaves of at least half of `LEAF` under
    /// nodes of at least half of `FAN` children.
    #[test]
    fn sorted_insertions_stay_shallow() {
        let mut t = Timeline::default();
        for i in 0..100_000u32 {
            t.insert(i, i as u64, 0);
        }
        check_tree(&t);
        // sorted keys leave every node half full: 100,000 / 7 leaves
        // under nodes of 8 children, 5 levels of them
        assert!(t.height <= 5, "height {}", t.height);
        // everything out again, in order: the leftmost follows
        for i in 0..100_000u32 {
            assert_eq!(t.first(), Some((i, i as u64)));
            assert!(t.remove(i));
        }
        assert!(t.len() == 0 && t.first().is_none());
    }
}
