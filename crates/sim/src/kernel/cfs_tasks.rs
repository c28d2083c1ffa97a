//! Each run queue's `cfs_tasks` list (kernel/sched/fair.c): the fair tasks
//! enqueued on a CPU, most recently enqueued or picked at the head.
//! `account_entity_enqueue` adds a task at the head, `set_next_task_fair`
//! moves the picked task there, `detach_tasks` moves the tasks it skips
//! there and walks from the tail (the least recently run first), and
//! `account_entity_dequeue` unlinks. Kept as the kernel keeps it, a doubly
//! linked list per CPU (indices per task), so every update is O(1) and a
//! walk from the tail costs what it visits, however many tasks a run queue
//! holds.

/// No task / not on any list.
const NONE: u32 = u32::MAX;

/// A task's links, in one record: with tens of thousands of tasks the
/// table is beyond the private caches, and an update reads a task's three
/// fields and its neighbours' (one line each instead of one per field; 16
/// bytes, so that no record straddles two lines).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Link {
    /// The next entry toward the tail (less recent).
    next: u32,
    /// The previous entry toward the head (more recent).
    prev: u32,
    /// The CPU whose list holds it, or NONE.
    cpu: u32,
}

const UNLINKED: Link = Link {
    next: NONE,
    prev: NONE,
    cpu: NONE,
};

/// The lists of every CPU.
#[derive(Default)]
pub(crate) struct CfsTaskLists {
    head: Vec<u32>,
    tail: Vec<u32>,
    /// Per task.
    links: Vec<Link>,
}

impl CfsTaskLists {
    /// Lists for `cpus` CPUs, no task yet.
    pub(crate) fn new(cpus: usize) -> Self {
        CfsTaskLists {
            head: vec![NONE; cpus],
            tail: vec![NONE; cpus],
            ..Default::default()
        }
    }

    /// Room for one more task (task ids are dense and grow by one).
    pub(crate) fn add_task(&mut self) {
        self.links.push(UNLINKED);
    }

    /// Put `t` at the head of `cpu`'s list (it must be on no list).
    pub(crate) fn push_front(&mut self, cpu: usize, t: u32) {
        let ti = t as usize;
        debug_assert_eq!(self.links[ti].cpu, NONE, "task {t} listed twice");
        let old = self.head[cpu];
        self.links[ti] = Link {
            next: old,
            prev: NONE,
            cpu: cpu as u32,
        };
        if old == NONE {
            self.tail[cpu] = t;
        } else {
            self.links[old as usize].prev = t;
        }
        self.head[cpu] = t;
    }

    /// Take `t` off whatever list holds it (nothing if none).
    pub(crate) fn unlink(&mut self, t: u32) {
        let ti = t as usize;
        let Link {
            next: n,
            prev: p,
            cpu,
        } = self.links[ti];
        if cpu == NONE {
            return;
        }
        let cpu = cpu as usize;
        if p == NONE {
            self.head[cpu] = n;
        } else {
            self.links[p as usize].next = n;
        }
        if n == NONE {
            self.tail[cpu] = p;
        } else {
            self.links[n as usize].prev = p;
        }
        self.links[ti] = UNLINKED;
    }

    /// Ask for `t`'s links ahead of an update (a hint only).
    #[inline(always)]
    pub(crate) fn prefetch(&self, t: u32) {
        if let Some(l) = self.links.get(t as usize) {
            crate::prefetch::prefetch(l, 1);
        }
    }

    /// Move `t` to the head of `cpu`'s list, if that list holds it.
    pub(crate) fn move_to_front(&mut self, cpu: usize, t: u32) {
        if self.links[t as usize].cpu == cpu as u32 && self.head[cpu] != t {
            self.unlink(t);
            self.push_front(cpu, t);
        }
    }

    /// Append `cpu`'s list, head first, to `out`.
    pub(crate) fn all(&self, cpu: usize, out: &mut Vec<u32>) {
        let mut t = self.head[cpu];
        while t != NONE {
            out.push(t);
            t = self.links[t as usize].next;
        }
    }

    /// Append the last `max` entries of `cpu`'s list to `out`, in list
    /// order (head side first).
    pub(crate) fn tail(&self, cpu: usize, max: usize, out: &mut Vec<u32>) {
        let start = out.len();
        let mut t = self.tail[cpu];
        while t != NONE && out.len() - start < max {
            out.push(t);
            t = self.links[t as usize].prev;
        }
        out[start..].reverse();
    }

    /// The CPU whose list holds `t`, if any (for `--check`).
    pub(crate) fn cpu_of(&self, t: u32) -> Option<usize> {
        let c = self.links[t as usize].cpu;
        (c != NONE).then_some(c as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a Vec per CPU kept in the same order.
        #[test]
        fn matches_a_vector_model(ops in proptest::collection::vec((0u8..4, 0usize..3, 0u32..8), 1..200)) {
            let mut l = CfsTaskLists::new(3);
            for _ in 0..8 {
                l.add_task();
            }
            let mut model: Vec<Vec<u32>> = vec![vec![]; 3];
            for (op, cpu, t) in ops {
                let on = model.iter().position(|v| v.contains(&t));
                match op {
                    0 if on.is_none() => {
                        l.push_front(cpu, t);
                        model[cpu].insert(0, t);
                    }
                    1 => {
                        l.unlink(t);
                        if let Some(c) = on {
                            model[c].retain(|&x| x != t);
                        }
                    }
                    2 => {
                        l.move_to_front(cpu, t);
                        if on == Some(cpu) {
                            model[cpu].retain(|&x| x != t);
                            model[cpu].insert(0, t);
                        }
                    }
                    _ => {}
                }
                for (c, m) in model.iter().enumerate() {
                    let mut got = vec![];
                    l.all(c, &mut got);
                    prop_assert_eq!(&got, m);
                    for k in 0..4 {
                        let mut tail = vec![];
                        l.tail(c, k, &mut tail);
                        let from = m.len().saturating_sub(k);
                        prop_assert_eq!(&tail[..], &m[from..]);
                    }
                }
                for x in 0..8u32 {
                    prop_assert_eq!(l.cpu_of(x), model.iter().position(|v| v.contains(&x)));
                }
            }
        }
    }
}
