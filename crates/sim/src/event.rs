//! The event queue: events ordered by (time, sequence number), so events at the
//! same instant pop in the order they were pushed (FIFO ties) and a run is
//! reproducible. Cancellation is lazy: an event carries the generation of the
//! object it targets and is dropped on pop if that generation moved on.

use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an instant. Kept small (16 bytes) so the heap stays cheap.
/// Fields: `cpu`/`task`/`llc` name the target, `gen` the generation the event
/// was armed under.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The segment of work running on `cpu` completes (valid while the CPU's
    /// generation equals `gen`).
    SegmentDone { cpu: u32, gen: u32 },
    /// An idle CPU that was kicked has left its idle state and schedules.
    IdleExit { cpu: u32, gen: u32 },
    /// A resched IPI reaches `cpu`.
    Resched { cpu: u32, gen: u32 },
    /// Scheduler tick on `cpu` (only armed while the CPU is busy: NO_HZ idle).
    Tick { cpu: u32, gen: u32 },
    /// A sleeping task's timer fires.
    Timer { task: u32 },
    /// Periodic LLC-level load-balance pass of the LLC's first CPU.
    LlcBalance { llc: u32 },
}

/// Min-queue of events keyed by (time, seq).
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    seq: u64,
    pushed: u64,
}

impl EventQueue {
    /// An empty queue with room for `cap` events.
    pub fn with_capacity(cap: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(cap),
            seq: 0,
            pushed: 0,
        }
    }
    /// Schedule `ev` at `time`.
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: Event) {
        self.seq += 1;
        self.pushed += 1;
        self.heap.push(Reverse((time, self.seq, ev)));
    }
    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }
    /// Number of queued events (including stale ones).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Events pushed since creation.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_fifo() {
        let mut q = EventQueue::default();
        q.push(5, Event::Timer { task: 1 });
        q.push(3, Event::Timer { task: 2 });
        q.push(5, Event::Timer { task: 0 });
        q.push(3, Event::Timer { task: 9 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::Timer { task: 2 }),
                (3, Event::Timer { task: 9 }),
                (5, Event::Timer { task: 1 }),
                (5, Event::Timer { task: 0 }),
            ]
        );
    }
}
