//! The event queue: events ordered by (time, sequence number), so events at the
//! same instant pop in the order they were pushed (FIFO ties) and a run is
//! reproducible. Cancellation is lazy: an event carries the generation of the
//! object it targets and is dropped on pop if that generation moved on.

use crate::task::TaskId;
use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an instant. Kept small (16 bytes) so the heap stays cheap.
/// Fields: `cpu`/`task`/`llc` name the target, `gen` the CPU generation a slot
/// event was armed under (a stale one is ignored).
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The segment of work running on `cpu` completes (valid while the CPU's
    /// generation equals `gen`).
    SegmentDone { cpu: u32, gen: u32 },
    /// An idle CPU that was kicked has left its idle state and schedules.
    IdleExit { cpu: u32, gen: u32 },
    /// A polling idle CPU (haltpoll) reaches its poll limit and halts.
    PollEnd { cpu: u32, gen: u32 },
    /// A guest CPU's idle entry path reaches its HLT, which exits to the
    /// host (runs as a guest only).
    VcpuHalt { cpu: u32, gen: u32 },
    /// A resched IPI reaches `cpu`.
    Resched { cpu: u32 },
    /// Scheduler tick on `cpu` (only armed while the CPU is busy: NO_HZ idle).
    Tick { cpu: u32 },
    /// A sleeping task's timer fires.
    Timer { task: TaskId },
    /// The nohz idle-balance kick IPI reaches idle `cpu` (kick_ilb).
    IlbKick { cpu: u32 },
    /// The stopper of `src` is woken to push a task to `dst` (active
    /// balance).
    Stopper { src: u32, dst: u32 },
    /// The stopper of `cpu` is woken to move a task for NUMA balancing
    /// (migrate_task_to / migrate_swap).
    NumaStopper { cpu: u32 },
}

/// Per-CPU event slots kept outside the heap: each CPU has at most one
/// pending segment end or idle exit, the bulk of all events, so those live
/// in fixed slots under a tournament tree (re-arming a slot replaces its
/// event: no stale entries, no allocation, O(log CPUs) per update). Rarer
/// events (ticks, timers, resched IPIs, balancing) go to the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// SegmentDone or IdleExit.
    Main = 0,
}

/// A tree node: an event's (time, seq) key and its slot packed in one
/// integer, time in the high 64 bits, then seq in 48, then the slot in 16,
/// so that one comparison orders two nodes by (time, seq) (seq is unique,
/// so the slot never decides) and a node takes 16 bytes, not 24.
type Node = u128;
/// A slot with no event (greater than every event's node).
const EMPTY: Node = u128::MAX;
/// Events a run may schedule before seq no longer fits its 48 bits (at
/// ten million events a second, most of a year of wall time).
const SEQ_LIMIT: u64 = 1 << 48;

#[inline]
fn node(time: Nanos, seq: u64, slot: usize) -> Node {
    ((time as u128) << 64) | ((seq as u128) << 16) | slot as u128
}

#[inline]
fn node_time(n: Node) -> Nanos {
    (n >> 64) as Nanos
}

#[inline]
fn node_slot(n: Node) -> usize {
    (n & 0xffff) as usize
}
/// No popped slot awaits clearing.
const NO_LEAF: usize = usize::MAX;

/// The four children of one tree node: one 64-byte cache line, so a walk
/// from a leaf to the root reads one line per level and compares the
/// siblings it finds there.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Group([Node; 4]);

/// The smallest of a group's four nodes.
#[inline(always)]
fn group_min(g: &Group) -> Node {
    g.0[0].min(g.0[1]).min(g.0[2].min(g.0[3]))
}

/// The smallest of a group's nodes other than the `j`th (which the caller
/// is about to overwrite): read before that store, so that the walk's
/// chain from one level to the next is one comparison with the new key
/// rather than a store, its reload and three comparisons.
#[inline(always)]
fn min_of_siblings(g: &Group, j: usize) -> Node {
    // the siblings of `j` are `j ^ 1`, `j ^ 2` and `j ^ 3`: three indexed
    // loads and two comparisons, where a test of each index against `j`
    // took two branches on `j` and a select per sibling (1,021.7 -> 1,010.8
    // instructions per event on hackbench; docs/performance.md)
    let j = j & 3;
    g.0[j ^ 1].min(g.0[j ^ 2]).min(g.0[j ^ 3])
}

/// Min-queue of events keyed by (time, seq): a binary heap for general
/// events plus per-CPU slots in a tournament tree. Both share one sequence
/// counter, so the global order is exactly (time, seq).
///
/// The tree is 4-ary: node 0 is the root, node `x`'s children are
/// `4x + 1 ..= 4x + 4`, and the leaves are the last `m` nodes (`m` a power
/// of four). Each node holds the smallest key below it; the children of
/// node `p` are stored together as `groups[p]` (the root's own key in
/// `root`). Against a binary tree a walk has half the levels and touches
/// one cache line per level: at 1024 CPUs five lines instead of ten, of a
/// tree of 21 KiB instead of 32 KiB.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    /// The heap's earliest key as a tree node (slot 0), or [`EMPTY`]: what
    /// `pop` compares with the tree's root, kept so that the comparison
    /// needs no look into the heap.
    heap_first: Node,
    /// The last sequence number given: also the number of events
    /// scheduled ([`Self::pushed`]).
    seq: u64,
    /// Slot payloads; slot index = cpu.
    evs: Vec<Event>,
    /// The smallest key of the whole tree.
    root: Node,
    /// `groups[p].0[j]` = the smallest key below node `4p + j + 1`.
    groups: Vec<Group>,
    /// Node id of the first leaf (leaf of slot `i`: `first_leaf + i`).
    first_leaf: usize,
    /// A slot popped but not yet cleared from the tree (its key still sits
    /// on the path to the root), or [`NO_LEAF`]. The handler of a slot
    /// event usually re-arms the same slot at once; deferring the clear
    /// lets one walk up the tree do for both.
    popped: usize,
}

impl EventQueue {
    /// An empty queue with slots for `cpus` CPUs.
    pub fn new(cpus: usize) -> Self {
        let n = cpus.max(1);
        assert!(n <= 1 << 16, "a slot index fits 16 bits");
        // at least one level of groups under the root
        let mut m = 4;
        while m < n {
            m *= 4;
        }
        // internal nodes: 1 + 4 + ... + m/4 = (m - 1) / 3
        let first_leaf = (m - 1) / 3;
        EventQueue {
            heap: BinaryHeap::with_capacity(64),
            heap_first: EMPTY,
            seq: 0,
            evs: vec![Event::Timer { task: TaskId(0) }; n],
            root: EMPTY,
            groups: vec![Group([EMPTY; 4]); first_leaf],
            first_leaf,
            popped: NO_LEAF,
        }
    }

    /// Clear the popped slot's key from the tree, if one is pending.
    #[inline(always)]
    fn settle(&mut self) {
        if self.popped != NO_LEAF {
            self.clear_popped();
        }
    }

    /// [`Self::settle`]'s walk, out of line: the slot popped last is
    /// usually re-armed before the next pop (the re-arm's walk clears it).
    #[inline(never)]
    fn clear_popped(&mut self) {
        let leaf = self.popped;
        self.popped = NO_LEAF;
        self.fix(leaf, EMPTY);
    }

    /// The key of slot `i`'s leaf.
    #[inline]
    fn leaf_key(&self, i: usize) -> Node {
        let x = self.first_leaf + i - 1;
        self.groups[x / 4].0[x % 4]
    }

    /// Set slot `leaf`'s key and bring its ancestors up to date, stopping
    /// where an ancestor's minimum does not change.
    #[inline]
    fn fix(&mut self, leaf: usize, key: Node) {
        self.walk::<true>(leaf, key);
    }

    /// Re-arm the slot whose key was the minimum of the whole tree (the
    /// one just popped) with `key`: the old key sat in every node from the
    /// leaf to the root, so every one of them changes and the walk stores
    /// at each level without testing for an early stop (the replay of a
    /// tournament after its winner's leaf changed).
    #[inline]
    fn replay(&mut self, leaf: usize, key: Node) {
        self.walk::<false>(leaf, key);
    }

    /// The walk from slot `leaf` to the root that stores `key` and each
    /// level's new minimum; with `EARLY_STOP` it ends where the parent
    /// already holds that minimum. Without (the re-arm of the slot just
    /// popped, whose walk always reaches the root and is on the chain to
    /// the next event) each level takes its siblings' minimum before the
    /// store, so that the levels wait on one comparison each. A constant,
    /// so each caller compiles to its own loop, without the tests that
    /// cannot fire.
    #[inline(always)]
    fn walk<const EARLY_STOP: bool>(&mut self, leaf: usize, key: Node) {
        let groups = &mut self.groups[..];
        // node x = first_leaf + leaf (>= 1) lives at groups[(x-1)/4][(x-1)%4]
        let mut x = self.first_leaf + leaf;
        let mut me = key;
        loop {
            let (p, j) = ((x - 1) / 4, (x - 1) % 4);
            if EARLY_STOP {
                // a slot other than the one just popped, or a clear: the
                // walk often stops after a level or two, and the siblings'
                // minimum cost more instructions than it saved in waiting
                // (1,050 against 1,022 per event on hackbench, 2,402
                // against 2,369 on schbench; docs/performance.md)
                groups[p].0[j] = me;
                me = group_min(&groups[p]);
            } else {
                let siblings = min_of_siblings(&groups[p], j);
                groups[p].0[j] = me;
                me = me.min(siblings);
            }
            if p == 0 {
                self.root = me;
                return;
            }
            if EARLY_STOP {
                let (gp, gj) = ((p - 1) / 4, (p - 1) % 4);
                if groups[gp].0[gj] == me {
                    return; // nothing above changes
                }
            }
            x = p;
        }
    }

    /// Schedule `ev` at `time` in `cpu`'s slot, replacing what was there.
    #[inline(always)]
    pub fn set_slot(&mut self, cpu: usize, slot: Slot, time: Nanos, ev: Event) {
        self.seq += 1;
        let i = cpu + slot as usize;
        assert!(self.seq < SEQ_LIMIT, "event sequence numbers exhausted");
        self.evs[i] = ev;
        let key = node(time, self.seq, i);
        if self.popped == i {
            // the popped key is overwritten by this walk
            self.popped = NO_LEAF;
            self.replay(i, key);
        } else {
            self.settle();
            self.fix(i, key);
        }
    }

    /// Cancel the event in `cpu`'s slot.
    #[inline]
    pub fn clear_slot(&mut self, cpu: usize, slot: Slot) {
        let i = cpu + slot as usize;
        if self.popped == i {
            self.popped = NO_LEAF;
        }
        if self.leaf_key(i) != EMPTY {
            self.fix(i, EMPTY);
        }
    }

    /// Schedule `ev` at `time` (general heap).
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: Event) {
        self.seq += 1;
        assert!(self.seq < SEQ_LIMIT, "event sequence numbers exhausted");
        self.heap.push(Reverse((time, self.seq, ev)));
        self.heap_first = self.heap_first.min(node(time, self.seq, 0));
    }

    /// Remove and return the earliest event. Inline in the event loop: a
    /// slot's event (the common case) is a few loads; the heap's pop and
    /// the deferred clear are out of line.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.settle();
        let first = self.root;
        match self.heap_first {
            h if h < first => self.pop_heap(),
            _ if first != EMPTY => {
                let leaf = node_slot(first);
                self.popped = leaf;
                Some((node_time(first), self.evs[leaf]))
            }
            _ => None,
        }
    }

    /// The heap's earliest event (ticks, timers, IPIs: rarer than slots).
    #[inline(never)]
    fn pop_heap(&mut self) -> Option<(Nanos, Event)> {
        let ev = self.heap.pop().map(|Reverse((t, _, e))| (t, e));
        self.heap_first = self
            .heap
            .peek()
            .map_or(EMPTY, |Reverse((t, s, _))| node(*t, *s, 0));
        ev
    }

    /// The earliest event, left in the queue.
    #[inline]
    pub fn peek(&mut self) -> Option<(Nanos, Event)> {
        // the last popped slot's key may still sit in the tree
        self.settle();
        let first = self.root;
        match self.heap.peek() {
            Some(Reverse((t, s, e))) if node(*t, *s, 0) < first => Some((*t, *e)),
            _ if first != EMPTY => Some((node_time(first), self.evs[node_slot(first)])),
            _ => None,
        }
    }

    /// The slot whose event is the tree's earliest, if any (a hint: a heap
    /// event may come first, and a slot popped but not yet re-armed still
    /// shows its old key).
    #[inline]
    pub fn next_slot_hint(&self) -> Option<usize> {
        // the time half alone (a hint may miss an event at the last
        // instant): the walk stored the root as two 64-bit halves, which a
        // 128-bit load of the whole key could not take from the store
        // buffer, a stall at the start of every event
        (node_time(self.root) != Nanos::MAX).then(|| node_slot(self.root))
    }

    /// Ask the hardware for slot `slot`'s event payload (what `pop` reads
    /// when that slot's event comes next; see [`Self::next_slot_hint`]).
    #[inline]
    pub fn prefetch_slot(&self, slot: usize) {
        if let Some(ev) = self.evs.get(slot) {
            crate::prefetch::prefetch(ev, 1);
        }
    }

    /// Number of pending heap events plus occupied slots.
    pub fn len(&self) -> usize {
        let slots = (0..self.evs.len())
            .filter(|&i| self.leaf_key(i) != EMPTY)
            .count();
        self.heap.len() + slots - usize::from(self.popped != NO_LEAF)
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events scheduled since creation.
    pub fn pushed(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_fifo() {
        let mut q = EventQueue::new(1);
        q.push(5, Event::Timer { task: TaskId(1) });
        q.push(3, Event::Timer { task: TaskId(2) });
        q.push(5, Event::Timer { task: TaskId(0) });
        q.push(3, Event::Timer { task: TaskId(9) });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::Timer { task: TaskId(2) }),
                (3, Event::Timer { task: TaskId(9) }),
                (5, Event::Timer { task: TaskId(1) }),
                (5, Event::Timer { task: TaskId(0) }),
            ]
        );
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Slots and heap together pop in exactly (time, seq) order, and a
        /// re-armed slot only delivers its last event.
        #[test]
        fn matches_a_sorted_model(ops in proptest::collection::vec((0u8..5, 0usize..5, 0u64..50), 1..200)) {
            check_against_model(5, ops)?;
        }

        /// The same on a tree of three levels (70 slots: 256 leaves), with
        /// slots far apart.
        #[test]
        fn matches_a_sorted_model_on_a_deep_tree(ops in proptest::collection::vec((0u8..5, 0usize..70, 0u64..50), 1..300)) {
            check_against_model(70, ops)?;
        }
    }

    fn check_against_model(slots: usize, ops: Vec<(u8, usize, u64)>) -> Result<(), TestCaseError> {
        {
            let mut q = EventQueue::new(slots);
            let mut model: Vec<(u64, u64, Event)> = vec![];
            let mut seq = 0;
            for (kind, cpu, t) in ops {
                seq += 1;
                match kind {
                    3 | 4 => {
                        // pop in between (times need not be monotonic here:
                        // the queue orders whatever it holds)
                        model.sort_by_key(|(t, s, _)| (*t, *s));
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(q.pop(), want.map(|(t, _, e)| (t, e)));
                        prop_assert_eq!(q.len(), model.len());
                    }
                    0 => {
                        let ev = Event::Timer {
                            task: TaskId(seq as u32),
                        };
                        q.push(t, ev);
                        model.push((t, seq, ev));
                    }
                    1 => {
                        let ev = Event::SegmentDone {
                            cpu: cpu as u32,
                            gen: seq as u32,
                        };
                        model.retain(|(_, _, e)| !matches!(e, Event::SegmentDone { cpu: c, .. } if *c as usize == cpu));
                        q.set_slot(cpu, Slot::Main, t, ev);
                        model.push((t, seq, ev));
                    }
                    _ => {
                        model.retain(|(_, _, e)| !matches!(e, Event::SegmentDone { cpu: c, .. } if *c as usize == cpu));
                        q.clear_slot(cpu, Slot::Main);
                    }
                }
            }
            model.sort_by_key(|(t, s, _)| (*t, *s));
            let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            let want: Vec<_> = model.into_iter().map(|(t, _, e)| (t, e)).collect();
            prop_assert_eq!(got, want);
        }
        Ok(())
    }
}
