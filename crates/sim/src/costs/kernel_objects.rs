//! The kernel's own objects as cache lines: an inventory, per modelled kernel
//! path, of the kernel objects the path touches, which of their 64-byte lines
//! it reads or writes, and whether other CPUs write those lines too (issue 36,
//! "Costs that depend on distance", first step).
//!
//! What it is for: the line model charges the objects a message and a
//! wake-up move as lines of their own (`pipe_state_lines` and `task_lines`
//! give the engine its line counts from this data; docs/costs.md, "Kernel
//! objects as lines", says what is charged and what is not yet). The rest
//! is data plus the tests that keep it consistent with its sources.
//!
//! Sources:
//! - Struct sizes and field offsets: the BTF type information of Debian's
//!   cloud kernel `6.12.118+deb12-cloud-amd64` (the kernel oracle's newer
//!   kernel), read with `pahole --hex` from the vmlinux ELF decompressed out of
//!   the bzImage by `scripts/btf-inventory.sh`, trimmed to what this
//!   inventory uses (each struct's size, each named field's offset and
//!   size) in `crates/sim/fixtures/btf/<release>.tsv`. Sizes under the oracle's older
//!   kernel `6.1.0-57-cloud-amd64` (same method) are recorded beside them. The
//!   tests parse the fixtures, so no size, field or line index here can drift
//!   from them.
//! - Which fields a path touches: the kernel source of the named functions,
//!   read in torvalds/linux (fs/pipe.c at 00a7d398, a tree after 6.14, with
//!   `pipe_index`; the same steps as 6.12 for a small message), with the 6.12
//!   behaviour where they differ (noted at the touch). Objects without a BTF
//!   type (a data page, the kernel stack, the user's futex word, global or
//!   per-CPU variables that are not structs) say so in [`KernelObject::kernel`]
//!   and their sizes come from the kernel's constants.
//!
//! Conventions:
//! - `lines` are line indices within one object (byte offset / 64, counted
//!   from the start of the object as BTF lays it out). Objects are assumed
//!   64-byte aligned: slab caches of these objects are (`SLAB_HWCACHE_ALIGN`,
//!   or `____cacheline_aligned` members), and kmalloc sizes of 64 or more are.
//! - [`Access::Write`] means the path writes at least one byte of the line (it
//!   needs the line exclusive); [`Access::Read`] means it only reads it.
//! - `shared` is true when another CPU writes the line in normal operation
//!   (a peer task, a waker, the softirq of the other side), so the line can
//!   arrive from another CPU's cache; false when only the caller's CPU (or the
//!   owning task wherever it runs, for task-private data) writes it.
//! - A touch that happens only in some calls says when in `note`.

/// Bytes in a cache line, as the BTF layout's `cacheline` comments count them.
pub const LINE_BYTES: u32 = 64;

/// The kernel whose BTF gives the sizes, offsets and line indices below.
pub const BTF_KERNEL: &str = "6.12.118+deb12-cloud-amd64";
/// The older kernel of the oracle, whose sizes are recorded for comparison.
pub const BTF_KERNEL_OLD: &str = "6.1.0-57-cloud-amd64";

/// Read or write of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Only read: the line can stay shared.
    Read,
    /// Written (possibly also read): the line must be owned exclusively.
    Write,
}

/// One kernel object type (usually a BTF struct).
#[derive(Clone, Copy, Debug)]
pub struct KernelObject {
    /// Name the touches use: the BTF struct name, or a descriptive name for
    /// objects that are not a struct.
    pub name: &'static str,
    /// The BTF struct, when the object is one.
    pub btf_struct: Option<&'static str>,
    /// Size in bytes under [`BTF_KERNEL`] (from BTF, or the kernel constant).
    pub btf_size_bytes: u32,
    /// Size in bytes under [`BTF_KERNEL_OLD`], when the struct exists there.
    pub old_size_bytes: Option<u32>,
    /// Lines the object spans: ceil(size / 64).
    pub lines: u32,
    /// Where the size comes from (kernel release and method).
    pub kernel: &'static str,
    /// Where instances live and how many there are.
    pub placement: &'static str,
}

/// One object's lines touched by one path with one access.
#[derive(Clone, Copy, Debug)]
pub struct Touch {
    /// [`KernelObject::name`].
    pub object: &'static str,
    /// Which instance: whose object it is relative to the caller.
    pub instance: &'static str,
    /// Fields (BTF member names, dotted through embedded structs) the path
    /// touches on these lines; empty for objects without a BTF type.
    pub fields: &'static [&'static str],
    /// Line indices within the object.
    pub lines: &'static [u32],
    /// Read or write.
    pub access: Access,
    /// Another CPU writes these lines too.
    pub shared: bool,
    /// The number of lines grows with the message size (data copies):
    /// `lines` are those of a message of up to 64 bytes.
    pub scales_with_bytes: bool,
    /// When it happens, if not on every call, and what it is for.
    pub note: &'static str,
}

/// The objects one kernel path touches.
#[derive(Clone, Copy, Debug)]
pub struct PathInventory {
    /// Path name as the simulator's cost model thinks of it.
    pub path: &'static str,
    /// The kernel function(s) of the path (names as in the kernel source).
    pub kernel_fn: &'static str,
    /// The source file(s).
    pub source: &'static str,
    /// The touches, in the order the path makes them.
    pub touches: &'static [Touch],
}

impl PathInventory {
    /// Lines touched (one per touch line; the same line of two instances counts twice).
    pub fn lines(&self) -> usize {
        self.touches.iter().map(|t| t.lines.len()).sum()
    }

    /// Lines touched that another CPU also writes.
    pub fn shared_lines(&self) -> usize {
        self.touches
            .iter()
            .filter(|t| t.shared)
            .map(|t| t.lines.len())
            .sum()
    }

    /// Lines written that another CPU also writes (the ones that move).
    pub fn shared_written_lines(&self) -> usize {
        self.touches
            .iter()
            .filter(|t| t.shared && t.access == Access::Write)
            .map(|t| t.lines.len())
            .sum()
    }
}

/// Looks an object up by name.
pub fn object(name: &str) -> Option<&'static KernelObject> {
    OBJECTS.iter().find(|o| o.name == name)
}

/// Looks a path up by name.
pub fn path(name: &str) -> Option<&'static PathInventory> {
    PATHS.iter().find(|p| p.path == name)
}

/// Distinct lines of `object` in the touches of the named paths that `keep`
/// accepts.
fn distinct_lines(paths: &[&str], object: &str, keep: impl Fn(&Touch) -> bool) -> u32 {
    let mut seen: Vec<u32> = paths
        .iter()
        .filter_map(|n| path(n))
        .flat_map(|p| p.touches)
        .filter(|t| t.object == object && keep(t))
        .flat_map(|t| t.lines.iter().copied())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len() as u32
}

/// Distinct lines of `object` that the named paths write and another CPU
/// writes too: what moves when a call on one of the paths follows one made
/// on another CPU. Touches that happen only in some calls (a sleeping
/// reader's wait-queue entry) are included when their object is named.
pub fn shared_lines_written(paths: &[&str], object: &str) -> u32 {
    distinct_lines(paths, object, |t| t.shared && t.access == Access::Write)
}

/// The lines a pipe's kernel state spans in the line model, from this
/// inventory: its `struct pipe_inode_info` lines and its `struct
/// pipe_buffer` slot line that `pipe_write` and `pipe_read` both write
/// (the mutex, the wait queues, head and tail, tmp_page; the slot's page,
/// offset and len). The message's bytes are charged by their size.
pub fn pipe_state_lines() -> (u32, u32) {
    // derived once: every channel a run declares asks
    static LINES: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *LINES.get_or_init(|| {
        const PIPE: [&str; 2] = ["pipe_write", "pipe_read"];
        (
            shared_lines_written(&PIPE, "pipe_inode_info"),
            shared_lines_written(&PIPE, "pipe_buffer"),
        )
    })
}

/// Distinct lines of `object` the named paths touch (read or write).
pub fn lines_touched(paths: &[&str], object: &str) -> u32 {
    distinct_lines(paths, object, |_| true)
}

/// The lines of a task's own kernel objects in the line model, from this
/// inventory: its `struct task_struct` lines a waker writes in
/// `try_to_wake_up` (pi_lock, __state, on_rq, wake_cpu, the sched entity
/// the enqueue updates) and the switch-in writes again, and the lines of
/// its kernel stack `__switch_to_asm` pushes and pops (the top frames and
/// pt_regs), which come from the CPU it last ran on.
pub fn task_lines() -> (u32, u32) {
    // derived once: every task a run declares asks
    static LINES: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *LINES.get_or_init(|| {
        (
            shared_lines_written(&["ttwu_select", "ttwu_activate"], "task_struct"),
            lines_touched(&["schedule"], "kernel stack"),
        )
    })
}

/// The lines of a futex's kernel objects in the line model, from this
/// inventory: its `struct futex_hash_bucket` lines (the waiters count, the
/// lock and the chain, written by `futex_wait` and by a `futex_wake` that
/// finds a waiter) and the lines of a sleeping waiter's `struct futex_q`
/// that `futex_wake` touches (unlinked, `lock_ptr` cleared; key and bitset
/// read), which the waiter wrote when it queued itself.
pub fn futex_lines() -> (u32, u32) {
    // derived once: every futex and waiter a run declares asks
    static LINES: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *LINES.get_or_init(|| {
        (
            shared_lines_written(&["futex_wait", "futex_wake"], "futex_hash_bucket"),
            lines_touched(&["futex_wake"], "futex_q"),
        )
    })
}

/// The lines of a CPU's wake list in the line model, from this inventory:
/// its `call_single_queue` llist head and the run-queue line holding
/// `ttwu_pending`, which a remote waker writes in `ttwu_queue_wakelist`
/// and the CPU writes again in `sched_ttwu_pending`.
pub fn wake_list_lines() -> u32 {
    static LINES: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *LINES.get_or_init(|| {
        const WAKE_LIST: [&str; 2] = ["ttwu_queue_wakelist", "sched_ttwu_pending"];
        distinct_lines(&WAKE_LIST, "llist_head", |t| {
            t.shared && t.access == Access::Write
        }) + distinct_lines(&WAKE_LIST, "rq", |t| t.shared && t.access == Access::Write)
    })
}

const BTF_612: &str = "BTF of 6.12.118+deb12-cloud-amd64 (pahole, scripts/btf-inventory.sh)";

const fn btf(
    name: &'static str,
    size: u32,
    old: Option<u32>,
    placement: &'static str,
) -> KernelObject {
    KernelObject {
        name,
        btf_struct: Some(name),
        btf_size_bytes: size,
        old_size_bytes: old,
        lines: size.div_ceil(LINE_BYTES),
        kernel: BTF_612,
        placement,
    }
}

const fn raw(
    name: &'static str,
    size: u32,
    kernel: &'static str,
    placement: &'static str,
) -> KernelObject {
    KernelObject {
        name,
        btf_struct: None,
        btf_size_bytes: size,
        old_size_bytes: None,
        lines: size.div_ceil(LINE_BYTES),
        kernel,
        placement,
    }
}

/// Every object a path touches.
pub static OBJECTS: &[KernelObject] = &[
    btf("pipe_inode_info", 168, Some(168), "one per pipe, kzalloc (kmalloc-192)"),
    btf("pipe_buffer", 40, Some(40), "array of ring_size (16) per pipe, kcalloc (640 B, kmalloc-1k)"),
    btf("page", 64, Some(64), "the struct page describing a data page (vmemmap)"),
    btf("inode", 624, Some(632), "one per pipe (pipefs inode); per socket (sockfs) for sockets"),
    btf("file", 184, Some(232), "one per open end of a pipe or socket"),
    btf("files_struct", 704, Some(704), "one per process (shared by its threads)"),
    btf("wait_queue_head", 24, Some(24), "embedded: pipe rd_wait/wr_wait, socket_wq.wait"),
    btf("wait_queue_entry", 40, Some(40), "on the sleeping task's kernel stack"),
    btf("task_struct", 9792, Some(9728), "one per task"),
    btf("rq", 3456, Some(3264), "per-CPU runqueues"),
    btf("mm_struct", 1344, Some(1096), "one per process"),
    btf("socket", 128, Some(128), "one per socket (in the sockfs inode's socket_alloc)"),
    btf("unix_sock", 1024, Some(1024), "one per AF_UNIX socket (slab UNIX)"),
    btf("tcp_sock", 2368, Some(2280), "one per TCP socket (slab TCP)"),
    btf("sock_common", 136, Some(136), "embedded at the start of every struct sock"),
    btf("sk_buff", 232, Some(232), "one per message (skbuff_head_cache / fclone cache)"),
    btf("skb_shared_info", 320, Some(320), "at the end of each skb's head buffer"),
    btf("softnet_data", 896, Some(768), "per-CPU"),
    btf("futex_hash_bucket", 64, Some(64), "global hash table, ____cacheline_aligned"),
    btf("futex_q", 128, Some(112), "on the waiter's kernel stack"),
    btf("pid", 112, Some(96), "one per thread group leader / thread (struct pid)"),
    btf("tick_sched", 232, Some(224), "per-CPU"),
    btf("sched_domain", 304, Some(312), "per-CPU copy per level"),
    btf("sched_domain_shared", 16, Some(16), "one per LLC (sd_llc_shared)"),
    btf("sched_group_capacity", 48, Some(48), "one per group, shared by the domain's CPUs"),
    btf("task_group", 640, Some(640), "one per cgroup/autogroup"),
    btf("llist_head", 8, Some(8), "per-CPU call_single_queue (smp.c)"),
    btf("pcpu_hot", 64, None, "per-CPU (x86 current_task, preempt_count, top_of_stack)"),
    raw(
        "pipe data page",
        4096,
        "PAGE_SIZE (x86-64); not a struct",
        "one page per non-empty pipe buffer (alloc_page, recycled through pipe->tmp_page)",
    ),
    raw(
        "skb data",
        4096,
        "PAGE_SIZE: the head buffer or page fragment holding the payload; not a struct",
        "kmalloc'd skb head (AF_UNIX) or the sender task's page_frag page (TCP)",
    ),
    raw(
        "kernel stack",
        16384,
        "THREAD_SIZE of x86-64 (16 KiB, no KASAN); not a struct",
        "one per task (vmalloc'd); line 255 is the top (pt_regs)",
    ),
    raw(
        "futex word",
        4,
        "the user's u32; not a kernel struct",
        "user memory, written by user space on the futex's CPUs",
    ),
    raw(
        "mm_cpumask",
        8,
        "cpu_bitmap[] after struct mm_struct (offset 0x540 = its BTF size); 1 line up to 512 CPUs; not a struct",
        "one per process",
    ),
    raw(
        "nohz",
        64,
        "static struct nohz in kernel/sched/fair.c (idle_cpus_mask pointer, nr_cpus, flags, next_balance); not a BTF struct type",
        "global, one",
    ),
    raw(
        "calc_load_tasks",
        8,
        "atomic_long_t in kernel/sched/loadavg.c; not a struct",
        "global, one",
    ),
    raw(
        "jiffies",
        8,
        "jiffies_64 / tick_do_update_jiffies64 state; not a struct",
        "global, one (written by the do_timer CPU)",
    ),
];

use Access::{Read, Write};

const fn t(
    object: &'static str,
    instance: &'static str,
    fields: &'static [&'static str],
    lines: &'static [u32],
    access: Access,
    shared: bool,
    note: &'static str,
) -> Touch {
    Touch {
        object,
        instance,
        fields,
        lines,
        access,
        shared,
        scales_with_bytes: false,
        note,
    }
}

const fn data(
    object: &'static str,
    instance: &'static str,
    access: Access,
    note: &'static str,
) -> Touch {
    Touch {
        object,
        instance,
        fields: &[],
        lines: &[0],
        access,
        shared: true,
        scales_with_bytes: true,
        note,
    }
}

/// The fd lookup every read/write/send/recv starts with (`fdget_pos` /
/// `fdget`, `files_lookup_fd_raw`), and the syscall's own per-CPU and stack lines.
macro_rules! syscall_entry {
    ($file:literal) => {
        [
            t("pcpu_hot", "this CPU", &["current_task", "preempt_count", "top_of_stack"], &[0], Write, false,
              "entry_SYSCALL_64 and preempt_count changes; private to the CPU"),
            t("kernel stack", "the caller's", &[], &[252, 253, 254, 255], Write, false,
              "pt_regs (168 B) and the deepest frames; an estimate, not from BTF"),
            t("files_struct", "the caller's process", &["count", "fdt", "fdtab"], &[0], Read, false,
              "__fget_light: with count == 1 no reference is taken; a multi-threaded process takes a reference on file->f_count instead (a shared write)"),
            t("files_struct", "the caller's process", &["fd_array"], &[3], Read, false,
              "the slot of the fd (line 3 holds fds 4-11)"),
            t("file", $file, &["f_count", "f_mode", "f_op", "private_data", "f_inode", "f_flags"], &[0], Read, false,
              "stream files (pipes, sockets) have no FMODE_ATOMIC_POS: no f_pos_lock, f_pos unused"),
        ]
    };
}

const PIPE_W_ENTRY: [Touch; 5] = syscall_entry!("the pipe's write end");
const PIPE_R_ENTRY: [Touch; 5] = syscall_entry!("the pipe's read end");
const SOCK_ENTRY: [Touch; 5] = syscall_entry!("the socket's file");

const PIPE_WRITE: &[Touch] = &[
    PIPE_W_ENTRY[0],
    PIPE_W_ENTRY[1],
    PIPE_W_ENTRY[2],
    PIPE_W_ENTRY[3],
    PIPE_W_ENTRY[4],
    t("inode", "the pipe's (pipefs)", &["i_fsnotify_mask"], &[9], Read, false,
      "fsnotify_modify in vfs_write: no marks on a pipe"),
    t("pipe_inode_info", "the pipe", &["mutex", "rd_wait"], &[0], Write, true,
      "mutex_lock/unlock(&pipe->mutex) (the reader takes it too); rd_wait.lock when the pipe was empty (wake_up_interruptible_sync_poll)"),
    t("pipe_inode_info", "the pipe", &["wr_wait", "head", "tail", "max_usage", "ring_size", "readers", "poll_usage"], &[1], Write, true,
      "head advanced for a new buffer; tail is written by the reader in the same line"),
    t("pipe_inode_info", "the pipe", &["tmp_page", "bufs"], &[2], Write, true,
      "tmp_page taken (set to NULL) for a fresh buffer; the reader parks the freed page there"),
    t("pipe_buffer", "slot head of the ring", &["page", "offset", "len", "ops", "flags"], &[0], Write, true,
      "a fresh slot (pipe was empty) or merge into the last one (len +=); the reader updates offset/len. 40-byte slots straddle two lines for 3 slots in 8"),
    data("pipe data page", "the buffer's page", Write,
         "copy_page_from_iter: the message's bytes; the reader copies them out"),
    t("wait_queue_entry", "the sleeping reader's (its stack)", &["flags", "private", "func", "entry"], &[0], Write, true,
      "only when a reader sleeps: __wake_up_common walks rd_wait, autoremove_wake_function unlinks the entry"),
    t("inode", "the pipe's (pipefs)", &["i_sb", "i_flags"], &[0], Read, false,
      "file_update_time: inode_needs_update_time and the superblock's s_writers (per-CPU counters)"),
    t("inode", "the pipe's (pipefs)", &["i_mtime_sec", "i_ctime_sec", "i_mtime_nsec", "i_ctime_nsec", "i_atime_sec"], &[1], Write, true,
      "mtime/ctime written when the coarse clock moved since the last write (at most once a jiffy), read on every call; the reader's atime is in the same line"),
    t("inode", "the pipe's (pipefs)", &["i_state"], &[2], Read, false,
      "generic_update_time -> __mark_inode_dirty sees I_DIRTY already set (get_pipe_inode)"),
];

const PIPE_READ: &[Touch] = &[
    PIPE_R_ENTRY[0],
    PIPE_R_ENTRY[1],
    PIPE_R_ENTRY[2],
    PIPE_R_ENTRY[3],
    PIPE_R_ENTRY[4],
    t("pipe_inode_info", "the pipe", &["mutex", "rd_wait"], &[0], Write, true,
      "mutex_lock/unlock; rd_wait when the pipe is empty: the reader queues itself (prepare_to_wait_event) and leaves after waking"),
    t("pipe_inode_info", "the pipe", &["wr_wait", "head", "tail", "ring_size", "max_usage", "writers"], &[1], Write, true,
      "tail advanced when a buffer is used up (pipe_update_tail); head is the writer's, in the same line; wr_wait.lock only when the pipe was full"),
    t("pipe_inode_info", "the pipe", &["tmp_page", "bufs"], &[2], Write, true,
      "anon_pipe_buf_release keeps the emptied page in tmp_page"),
    t("pipe_buffer", "slot tail of the ring", &["page", "offset", "len", "ops", "flags"], &[0], Write, true,
      "offset += n, len -= n; written by the writer when it filled the slot"),
    data("pipe data page", "the buffer's page", Read,
         "copy_page_to_iter: the message's bytes, written by the writer"),
    t("page", "the data page's descriptor", &["_refcount"], &[0], Read, false,
      "page_count() == 1 in anon_pipe_buf_release: the page is recycled, no refcount write"),
    t("wait_queue_entry", "the reader's own (its stack)", &["flags", "private", "func", "entry"], &[0], Write, true,
      "only when the pipe was empty: initialised here, unlinked by the waking writer"),
    t("task_struct", "the reader (current)", &["__state"], &[0], Write, true,
      "only when the pipe was empty: set_current_state(TASK_INTERRUPTIBLE) before schedule; the waker writes it back"),
    t("inode", "the pipe's (pipefs)", &["i_sb", "i_flags"], &[0], Read, false,
      "file_accessed -> touch_atime -> atime_needs_update"),
    t("inode", "the pipe's (pipefs)", &["i_atime_sec", "i_atime_nsec", "i_mtime_sec", "i_ctime_sec"], &[1], Write, true,
      "atime written when the coarse clock moved (pipe_mnt is a kern_mount: strict atime); the writer's mtime/ctime are in the same line"),
];

const FUTEX_WAIT: &[Touch] = &[
    t("pcpu_hot", "this CPU", &["current_task", "preempt_count", "top_of_stack"], &[0], Write, false,
      "syscall entry; private"),
    t("task_struct", "the waiter (current)", &["mm"], &[36], Read, false,
      "get_futex_key: a private futex's key is (current->mm, address); no mm_struct read"),
    t("futex_hash_bucket", "hash(key)", &["waiters", "lock", "chain"], &[0], Write, true,
      "futex_q_lock: waiters++ (futex_hb_waiters_inc) and spin_lock; futex_queue: plist_add to chain; every waiter and waker of any futex hashing here writes it"),
    t("futex word", "the user's", &[], &[0], Read, true,
      "futex_get_value_locked compares it with the expected value; user space on the other CPU wrote it"),
    t("futex_q", "the waiter's (its stack)", &["list", "task", "lock_ptr", "wake"], &[0], Write, true,
      "initialised and queued here; the waker unlinks it (plist_del) and clears lock_ptr"),
    t("futex_q", "the waiter's (its stack)", &["wake_data", "key", "bitset"], &[1], Write, true,
      "key and bitset set here, read by the waker"),
    t("task_struct", "the waiter (current)", &["__state"], &[0], Write, true,
      "set_current_state(TASK_INTERRUPTIBLE) in futex_do_wait (6.12: futex_wait_queue); the waker's try_to_wake_up writes it back"),
    t("kernel stack", "the waiter's", &[], &[252, 253, 254, 255], Write, false,
      "pt_regs and frames; the futex_q itself is listed separately"),
];

const FUTEX_WAKE: &[Touch] = &[
    t("pcpu_hot", "this CPU", &["current_task", "preempt_count", "top_of_stack"], &[0], Write, false,
      "syscall entry; private"),
    t("task_struct", "the waker (current)", &["mm"], &[36], Read, false, "get_futex_key"),
    t("futex_hash_bucket", "hash(key)", &["waiters", "lock", "chain"], &[0], Write, true,
      "futex_hb_waiters_pending reads waiters (no waiter: return, a read only); else spin_lock, plist_del in __futex_unqueue, waiters--"),
    t("futex_q", "each woken waiter's (its stack)", &["list", "task", "lock_ptr", "wake"], &[0], Write, true,
      "futex_wake_mark: unlinked, lock_ptr = NULL (smp_store_release); per woken waiter"),
    t("futex_q", "each woken waiter's (its stack)", &["wake_data", "key", "bitset", "pi_state", "rt_waiter"], &[1], Read, true,
      "futex_match on key, bitset test; written by the waiter"),
    t("task_struct", "each wakee", &["usage"], &[0], Write, true,
      "get_task_struct in futex_wake_mark, put_task_struct after wake_up_q"),
    t("task_struct", "each wakee", &["wake_q"], &[50], Write, true,
      "wake_q_add_safe: cmpxchg on wake_q.next; then wake_up_q -> try_to_wake_up (listed under ttwu)"),
    t("kernel stack", "the waker's", &[], &[252, 253, 254, 255], Write, false,
      "pt_regs and frames, the on-stack wake_q_head"),
];

const TTWU_COMMON: &[Touch] = &[
    t("task_struct", "the wakee", &["pi_lock", "wake_q"], &[50], Write, true,
      "raw_spin_lock_irqsave(&p->pi_lock): serialises wake-ups of the task"),
    t("task_struct", "the wakee", &["thread_info", "__state", "on_cpu", "stack", "usage", "flags", "wake_entry"], &[0], Write, true,
      "ttwu_state_match reads __state, smp_cond_load_acquire(on_cpu) waits for the previous CPU's finish_task; ttwu_do_wakeup writes __state = TASK_RUNNING"),
    t("task_struct", "the wakee", &["on_rq", "wake_cpu", "recent_used_cpu", "wakee_flips", "last_wakee", "prio"], &[1], Write, true,
      "reads on_rq (a queued task takes ttwu_runnable); activate_task writes on_rq; select_task_rq_fair reads recent_used_cpu, wake_cpu; set_task_cpu writes wake_cpu on a migration"),
    t("task_struct", "the wakee", &["sched_class"], &[10], Read, false, "p->sched_class->select_task_rq"),
    t("task_struct", "the wakee", &["policy", "nr_cpus_allowed", "cpus_ptr"], &[15], Read, false,
      "select_task_rq: cpumask and policy; written only on affinity/policy changes"),
    t("task_struct", "the wakee", &["sched_contributes_to_load", "sched_remote_wakeup", "in_iowait"], &[36], Write, true,
      "ttwu reads in_iowait and contributes_to_load (the blocking CPU wrote them); the wake list path writes sched_remote_wakeup"),
    t("task_struct", "the waker (current)", &["wakee_flips", "wakee_flip_decay_ts", "last_wakee", "on_rq"], &[1], Write, true,
      "record_wakee in select_task_rq_fair; on_rq of the waker in the same line is written by whoever wakes the waker"),
    t("task_struct", "the wakee", &["se.avg"], &[5], Read, true,
      "wake_affine / select_idle_sibling use task_util_est(p); the previous CPU wrote it when the task blocked"),
    t("sched_domain", "the waker CPU's (for_each_domain)", &["parent", "flags", "span_weight"], &[0, 4], Read, false,
      "select_task_rq_fair walks the waker's domains for SD_WAKE_AFFINE; per-CPU copies"),
    t("sched_domain_shared", "the target LLC's (sd_llc_shared)", &["nr_busy_cpus", "has_idle_cores", "nr_idle_scan"], &[0], Read, true,
      "select_idle_sibling: test_idle_cores, nr_idle_scan (SIS_UTIL); every CPU of the LLC writes it at idle entry/exit and in load balance"),
    t("rq", "each candidate CPU (prev, target, recent_used_cpu, scanned)", &["nr_running"], &[0], Read, true,
      "available_idle_cpu/idle_cpu: nr_running; the owning CPU and its wakers write the line (__lock)"),
    t("rq", "each candidate CPU", &["ttwu_pending"], &[1], Read, true,
      "idle_cpu: ttwu_pending, written by remote wakers"),
    t("rq", "each candidate CPU", &["curr"], &[41], Read, true,
      "idle_cpu: rq->curr != rq->idle; written by the owner at each switch"),
    t("rq", "each candidate CPU", &["idle"], &[42], Read, true, "rq->idle; clock in the same line is written at each update"),
];

const TTWU_ACTIVATE: &[Touch] = &[
    t("rq", "the target CPU's", &["__lock", "nr_running"], &[0], Write, true,
      "rq_lock (raw spinlock) and add_nr_running"),
    t("rq", "the target CPU's", &["clock", "clock_update_flags", "prev_mm"], &[42], Write, true,
      "update_rq_clock: clock"),
    t("rq", "the target CPU's", &["clock_task", "clock_pelt", "clock_idle"], &[43], Write, true,
      "update_rq_clock_task, update_rq_clock_pelt"),
    t("rq", "the target CPU's", &["cfs.load", "cfs.nr_running", "cfs.h_nr_queued", "cfs.avg_vruntime", "cfs.avg_load", "cfs.zero_vruntime"], &[2], Write, true,
      "enqueue_entity: account_entity_enqueue, avg_vruntime_add, place_entity (6.12 has min_vruntime where the newer tree has zero_vruntime)"),
    t("rq", "the target CPU's", &["cfs.tasks_timeline", "cfs.curr", "cfs.next"], &[3], Write, true,
      "__enqueue_entity: rb_add_augmented_cached into tasks_timeline; update_curr reads cfs.curr"),
    t("rq", "the target CPU's", &["cfs.avg"], &[4], Write, true,
      "update_load_avg / enqueue_load_avg on the cfs_rq PELT sums"),
    t("rq", "the target CPU's", &["cfs_tasks"], &[45], Write, true,
      "account_entity_enqueue: list_add to rq->cfs_tasks"),
    t("rq", "the target CPU's", &["curr"], &[41], Read, true,
      "wakeup_preempt: check_preempt_wakeup_fair against rq->curr"),
    t("task_struct", "the wakee", &["se.load", "se.run_node", "se.deadline", "se.min_vruntime", "se.min_slice"], &[2], Write, true,
      "place_entity sets deadline; rb insert writes run_node; the previous CPU wrote these at dequeue"),
    t("task_struct", "the wakee", &["se.group_node", "se.on_rq", "se.sched_delayed", "se.exec_start", "se.vruntime", "se.vlag"], &[3], Write, true,
      "se.on_rq = 1, vruntime from vlag (place_entity), group_node on cfs_tasks; 6.12 DELAY_DEQUEUE: a delayed entity is requeued here instead"),
    t("task_struct", "the wakee", &["se.slice", "se.cfs_rq", "se.depth", "se.parent"], &[4], Write, true,
      "slice, and cfs_rq on a migration (set_task_rq)"),
    t("task_struct", "the wakee", &["se.avg"], &[5], Write, true,
      "update_load_avg: the entity's PELT sums; attach on a migration"),
    t("task_struct", "neighbours in the target's tree", &["se.run_node"], &[2], Write, true,
      "rb-tree insert and rebalancing write the parent/sibling nodes, i.e. other tasks' se.run_node; and the previous head's group_node for cfs_tasks"),
    t("task_struct", "the target CPU's current task", &["se.deadline", "se.vruntime", "se.slice"], &[2, 3, 4], Read, true,
      "check_preempt_wakeup_fair / pick_eevdf compare the wakee with curr; the target CPU writes them in update_curr"),
    t("task_struct", "the target CPU's current task", &["thread_info"], &[0], Write, true,
      "only when the wakee preempts: resched_curr sets TIF_NEED_RESCHED (and sends a reschedule IPI to a remote CPU that does not poll)"),
];

const TTWU_QUEUE: &[Touch] = &[
    t("task_struct", "the wakee", &["wake_entry"], &[0, 1], Write, true,
      "__ttwu_queue_wakelist: p->wake_entry.llist pushed on the target's call_single_queue"),
    t("task_struct", "the wakee", &["sched_remote_wakeup"], &[36], Write, true, "WF_MIGRATED flag kept for the target"),
    t("rq", "the target CPU's", &["ttwu_pending"], &[1], Write, true,
      "WRITE_ONCE(rq->ttwu_pending, 1); nr_switches in the same line is the target's"),
    t("llist_head", "the target CPU's call_single_queue", &["first"], &[0], Write, true,
      "__smp_call_single_queue: llist_add; the target empties it (flush_smp_call_function_queue)"),
    t("task_struct", "the target CPU's idle task", &["thread_info"], &[0], Write, true,
      "send_call_function_single_ipi -> set_nr_if_polling: when the target polls in idle, TIF_NEED_RESCHED replaces the IPI; else an IPI is sent"),
];

const TTWU_PENDING: &[Touch] = &[
    t(
        "llist_head",
        "this CPU's call_single_queue",
        &["first"],
        &[0],
        Write,
        true,
        "flush_smp_call_function_queue: llist_del_all; the wakers pushed the entries",
    ),
    t(
        "task_struct",
        "each queued wakee",
        &["wake_entry"],
        &[0, 1],
        Read,
        true,
        "walk of the list: llist next pointers written by the wakers",
    ),
    t(
        "rq",
        "this CPU's",
        &["ttwu_pending"],
        &[1],
        Write,
        true,
        "WRITE_ONCE(rq->ttwu_pending, 0)",
    ),
];

const SCHEDULE: &[Touch] = &[
    t("pcpu_hot", "this CPU", &["current_task", "preempt_count", "top_of_stack"], &[0], Write, false,
      "switch_to: current_task and top_of_stack of next; preempt_count"),
    t("rq", "this CPU's", &["__lock", "nr_running"], &[0], Write, true,
      "rq_lock; sub_nr_running when prev blocks; wakers of this CPU's tasks lock it too"),
    t("rq", "this CPU's", &["nr_switches", "ttwu_pending"], &[1], Write, true,
      "rq->nr_switches++; remote wakers write ttwu_pending in the same line"),
    t("rq", "this CPU's", &["cfs.load", "cfs.nr_running", "cfs.h_nr_queued", "cfs.avg_vruntime", "cfs.avg_load"], &[2], Write, true,
      "dequeue_entity of prev, put_prev/set_next_entity (avg_vruntime_sub/add)"),
    t("rq", "this CPU's", &["cfs.tasks_timeline", "cfs.curr", "cfs.next"], &[3], Write, true,
      "pick_eevdf reads the tree; set_next_entity takes next out of it and sets cfs.curr"),
    t("rq", "this CPU's", &["cfs.avg"], &[4], Write, true, "update_load_avg at dequeue and put_prev"),
    t("rq", "this CPU's", &["curr"], &[41], Write, true,
      "RCU_INIT_POINTER(rq->curr, next); remote wakers read it (idle_cpu, wakeup_preempt)"),
    t("rq", "this CPU's", &["clock", "clock_update_flags", "prev_mm", "next_balance"], &[42], Write, true,
      "update_rq_clock; prev_mm when switching to a kernel thread or idle (lazy TLB)"),
    t("rq", "this CPU's", &["clock_task", "clock_pelt"], &[43], Write, true, "update_rq_clock_task"),
    t("rq", "this CPU's", &["balance_callback", "rd", "sd"], &[44], Read, false, "balance_callback check in __balance_callbacks"),
    t("rq", "this CPU's", &["cfs_tasks"], &[45], Write, true, "list_del of prev's group_node when it blocks"),
    t("task_struct", "prev", &["thread_info", "__state", "on_cpu"], &[0], Write, true,
      "prev->__state read (block or not); finish_task: smp_store_release(&prev->on_cpu, 0), spun on by a waker in ttwu"),
    t("task_struct", "prev", &["on_rq"], &[1], Write, true, "deactivate_task: on_rq = 0 (wakers read it)"),
    t("task_struct", "prev", &["se.run_node", "se.deadline", "se.min_vruntime"], &[2], Write, false,
      "update_curr / update_deadline"),
    t("task_struct", "prev", &["se.on_rq", "se.exec_start", "se.sum_exec_runtime", "se.vruntime", "se.vlag", "se.group_node"], &[3], Write, false,
      "update_curr (exec_start, sum_exec_runtime, vruntime), dequeue: on_rq, vlag; 6.12 DELAY_DEQUEUE may keep it queued (sched_delayed)"),
    t("task_struct", "prev", &["se.avg"], &[5], Write, false, "update_load_avg at dequeue"),
    t("task_struct", "prev", &["sched_contributes_to_load", "in_iowait"], &[36], Write, false, "set when it blocks"),
    t("task_struct", "prev", &["nvcsw", "nivcsw"], &[43], Write, false, "switch counts"),
    t("task_struct", "prev", &["thread"], &[84], Write, false, "switch_to saves sp (thread.sp) and segment bases"),
    t("task_struct", "next", &["thread_info", "on_cpu", "stack"], &[0], Write, true,
      "prepare_task: next->on_cpu = 1; thread_info.flags (TIF_NEED_RESCHED cleared); written by its waker"),
    t("task_struct", "next", &["se.run_node", "se.deadline"], &[2], Write, true,
      "__dequeue_entity of next from the tree; written by the waker's enqueue (place_entity)"),
    t("task_struct", "next", &["se.exec_start", "se.vruntime", "se.on_rq"], &[3], Write, true,
      "set_next_entity: exec_start, prev_sum_exec_runtime"),
    t("task_struct", "next", &["se.prev_sum_exec_runtime"], &[3], Write, true, "set_next_entity"),
    t("task_struct", "next", &["mm", "active_mm"], &[36], Read, true,
      "context_switch chooses switch_mm or lazy TLB; the line holds sched_remote_wakeup written by wakers"),
    t("task_struct", "next", &["thread"], &[84], Read, true,
      "switch_to restores sp; written where next last ran"),
    t("task_struct", "neighbours in this CPU's tree", &["se.run_node"], &[2], Write, true,
      "rb-tree erase of next (and of a blocking prev) rewrites parent/sibling nodes"),
    t("mm_struct", "next's process", &["pgd", "mm_mt"], &[1], Read, false,
      "switch_mm_irqs_off: load_new_mm_cr3 (pgd); read-mostly"),
    t("mm_struct", "next's process", &["membarrier_state", "pcpu_cid", "mm_users"], &[2], Read, true,
      "membarrier_switch_mm, mm_cid (sched_mm_cid_*); mm_users written by fork/exit"),
    t("mm_struct", "next's process", &["context"], &[15, 16, 17], Read, true,
      "x86 mm->context: ctx_id, tlb_gen (written by TLB shootdowns on any CPU)"),
    t("mm_cpumask", "next's process", &[], &[0], Write, true,
      "cpumask_set_cpu when this CPU was not yet in the mask (switching to another process)"),
    t("kernel stack", "prev's", &[], &[250, 251, 252, 253, 254, 255], Write, false,
      "__switch_to_asm pushes callee-saved registers on prev's stack"),
    t("kernel stack", "next's", &[], &[250, 251, 252, 253], Read, true,
      "popped from next's stack; last written on the CPU where next slept"),
];

const IDLE_ENTER: &[Touch] = &[
    t("task_struct", "this CPU's idle task", &["thread_info"], &[0], Write, true,
      "current_set_polling_and_test: TIF_POLLING_NRFLAG; wakers test and set TIF_NEED_RESCHED there (set_nr_if_polling)"),
    t("rq", "this CPU's", &["idle_stamp", "avg_idle", "max_idle_balance_cost"], &[48], Write, false,
      "sched_balance_newidle (idle_balance in 6.1): idle_stamp, avg_idle read"),
    t("rq", "this CPU's", &["nohz_tick_stopped", "nohz_flags"], &[1], Write, true,
      "nohz_balance_enter_idle when the tick is stopped (same line as ttwu_pending)"),
    t("tick_sched", "this CPU's", &["flags", "last_tick", "next_tick", "idle_jiffies", "idle_waketime"], &[0, 1], Write, false,
      "tick_nohz_idle_enter / tick_nohz_idle_stop_tick; private"),
    t("tick_sched", "this CPU's", &["idle_entrytime", "timer_expires", "timer_expires_base", "next_timer", "idle_calls", "idle_sleeps"], &[2], Write, false,
      "tick_nohz_start_idle, tick_nohz_next_event; private"),
    t("nohz", "global", &[], &[0], Write, true,
      "nohz_balance_enter_idle: cpumask_set_cpu(nohz.idle_cpus_mask), atomic_inc(nohz.nr_cpus), nohz.has_blocked; once per tick-stop"),
    t("sched_domain_shared", "this LLC's", &["nr_busy_cpus", "has_idle_cores"], &[0], Write, true,
      "set_cpu_sd_state_idle: nr_busy_cpus--; __update_idle_core (pick_next_task_idle) sets has_idle_cores when the whole core idles"),
    t("jiffies", "global", &[], &[0], Read, true, "tick_nohz_next_event reads jiffies / last_jiffies_update (seqcount)"),
];

const IDLE_EXIT: &[Touch] = &[
    t("task_struct", "this CPU's idle task", &["thread_info"], &[0], Write, true,
      "current_clr_polling; a waker may have set TIF_NEED_RESCHED instead of an IPI"),
    t("llist_head", "this CPU's call_single_queue", &["first"], &[0], Write, true,
      "flush_smp_call_function_queue -> sched_ttwu_pending (see ttwu_pending)"),
    t("tick_sched", "this CPU's", &["flags", "last_tick", "next_tick", "idle_jiffies", "idle_waketime"], &[0, 1], Write, false,
      "tick_nohz_idle_exit: tick_nohz_restart_sched_tick"),
    t("tick_sched", "this CPU's", &["idle_entrytime", "idle_exittime", "idle_sleeptime"], &[2, 3], Write, false,
      "tick_nohz_stop_idle accounting"),
    t("jiffies", "global", &[], &[0], Write, true,
      "tick_nohz_update_jiffies -> tick_do_update_jiffies64: reads jiffies; writes them (under jiffies_lock) when this CPU takes the do_timer duty"),
    t("nohz", "global", &[], &[0], Write, true,
      "nohz_balance_exit_idle (called from the next tick, nohz_balancer_kick): clear idle_cpus_mask bit, nr_cpus--"),
    t("sched_domain_shared", "this LLC's", &["nr_busy_cpus"], &[0], Write, true,
      "set_cpu_sd_state_busy (from the tick): nr_busy_cpus++"),
    t("rq", "this CPU's", &["nohz_tick_stopped", "nohz_flags"], &[1], Write, true, "nohz_tick_stopped = 0"),
];

const SCHED_TICK: &[Touch] = &[
    t("rq", "this CPU's", &["__lock", "nr_running"], &[0], Write, true, "rq_lock"),
    t("rq", "this CPU's", &["clock", "clock_update_flags", "next_balance"], &[42], Write, true,
      "update_rq_clock; sched_balance_trigger reads next_balance"),
    t("rq", "this CPU's", &["clock_task", "clock_pelt"], &[43], Write, true, "update_rq_clock_task"),
    t("rq", "this CPU's", &["cfs.avg_vruntime", "cfs.avg_load", "cfs.zero_vruntime", "cfs.load"], &[2], Write, true,
      "entity_tick -> update_curr: avg_vruntime, min_vruntime (6.12)"),
    t("rq", "this CPU's", &["cfs.curr", "cfs.tasks_timeline"], &[3], Read, true, "update_curr"),
    t("rq", "this CPU's", &["cfs.avg"], &[4], Write, true, "update_load_avg of the cfs_rq"),
    t("rq", "this CPU's", &["curr"], &[41], Read, true, "rq->curr"),
    t("rq", "this CPU's", &["calc_load_update", "calc_load_active"], &[48], Write, false,
      "calc_global_load_tick: once per LOAD_FREQ (5 s) window"),
    t("task_struct", "current", &["se.deadline", "se.run_node"], &[2], Write, false,
      "update_deadline when the slice is used"),
    t("task_struct", "current", &["se.exec_start", "se.sum_exec_runtime", "se.vruntime"], &[3], Write, false,
      "update_curr"),
    t("task_struct", "current", &["se.avg"], &[5], Write, false, "update_load_avg of the entity"),
    t("task_struct", "current", &["utime", "stime"], &[41], Write, false,
      "account_process_tick -> account_user_time / account_system_time (kernel_cpustat per-CPU too)"),
    t("task_struct", "current", &["thread_info"], &[0], Write, true,
      "only when the slice ends: resched_curr sets TIF_NEED_RESCHED; remote wakers write the same word"),
    t("calc_load_tasks", "global", &[], &[0], Write, true,
      "calc_global_load_tick: atomic_long_add of this CPU's delta, once per 5 s per CPU"),
    t("task_group", "current's group (autogroup/cgroup)", &["load_avg"], &[4], Write, true,
      "update_tg_load_avg: atomic_long_add, rate-limited to once per ms per CPU; absent for the root group"),
    t("nohz", "global", &[], &[0], Read, true,
      "nohz_balancer_kick: nohz.nr_cpus, nohz.next_balance, has_blocked"),
    t("sched_domain_shared", "this LLC's", &["nr_busy_cpus"], &[0], Read, true,
      "nohz_balancer_kick: more than one busy CPU in the LLC?"),
];

const LOAD_BALANCE: &[Touch] = &[
    t("sched_domain", "this CPU's (each level balanced)", &["parent", "child", "groups", "flags", "busy_factor", "imbalance_pct"], &[0], Read, false,
      "sched_balance_rq (load_balance in 6.1) / should_we_balance"),
    t("sched_domain", "this CPU's (each level balanced)", &["last_balance", "balance_interval", "nr_balance_failed", "max_newidle_lb_cost"], &[1], Write, false,
      "sched_balance_domains: last_balance, balance_interval; per-CPU copy"),
    t("sched_group_capacity", "each group of the domain", &["capacity", "min_capacity", "max_capacity", "next_update"], &[0], Write, true,
      "update_group_capacity (when next_update passed); read otherwise; any CPU of the domain balancing writes it"),
    t("rq", "each CPU of the domain", &["nr_running", "nr_numa_running", "nr_preferred_running"], &[0], Read, true,
      "update_sg_lb_stats: sum_nr_running (rq->nr_running)"),
    t("rq", "each CPU of the domain", &["ttwu_pending"], &[1], Read, true, "idle_cpu()"),
    t("rq", "each CPU of the domain", &["cfs.h_nr_queued", "cfs.nr_running"], &[2], Read, true,
      "sum_h_nr_running (h_nr_running in 6.1)"),
    t("rq", "each CPU of the domain", &["cfs.avg"], &[4], Read, true,
      "cpu_load (load_avg), cpu_util_cfs (util_avg, util_est)"),
    t("rq", "each CPU of the domain", &["curr"], &[41], Read, true, "idle_cpu(): rq->curr == rq->idle"),
    t("rq", "each CPU of the domain", &["idle"], &[42], Read, true, "idle_cpu()"),
    t("rq", "each CPU of the domain", &["cpu_capacity", "misfit_task_load"], &[44], Read, true,
      "capacity_of, misfit_task_load (asymmetric capacity only)"),
    t("rq", "each CPU of the domain", &["avg_rt"], &[46], Read, true, "cpu_util_rt for scale_rt_capacity"),
    t("rq", "each CPU of the domain", &["avg_dl"], &[47], Read, true, "cpu_util_dl"),
    t("rq", "the busiest CPU's", &["__lock"], &[0], Write, true,
      "only when it pulls: rq_lock of busiest (detach_tasks) and of this CPU (attach_tasks)"),
    t("rq", "the busiest CPU's", &["cfs_tasks"], &[45], Write, true,
      "only when it pulls: detach_tasks walks cfs_tasks from the tail"),
    t("task_struct", "each task it considers", &["se.avg", "se.load"], &[5, 2], Read, true,
      "only when it pulls: task_h_load, can_migrate_task (cpus_ptr, on_cpu, exec_start)"),
];

const UNIX_SEND: &[Touch] = &[
    SOCK_ENTRY[0],
    SOCK_ENTRY[1],
    SOCK_ENTRY[2],
    SOCK_ENTRY[3],
    SOCK_ENTRY[4],
    t("socket", "the sender's", &["state", "sk", "ops", "file", "flags"], &[0], Read, false, "sock_sendmsg -> unix_stream_sendmsg"),
    t("unix_sock", "the sender's", &["sk.sk_sndbuf", "sk.sk_wmem_alloc", "sk.sk_forward_alloc", "sk.sk_wmem_queued"], &[5], Write, true,
      "sock_alloc_send_pskb -> skb_set_owner_w: sk_wmem_alloc += truesize; the receiver's CPU subtracts it (sock_wfree)"),
    t("unix_sock", "the sender's", &["sk.sk_shutdown", "sk.sk_allocation", "sk.sk_route_caps"], &[8], Read, false, "sk_shutdown check, allocation flags"),
    t("unix_sock", "the sender's", &["sk.sk_sndtimeo"], &[8], Read, false, "sock_sndtimeo"),
    t("unix_sock", "the sender's", &["peer"], &[13], Read, false, "unix_peer(sk): the receiving socket"),
    t("pid", "the sender's tgid", &["count"], &[0], Write, true,
      "scm_send -> scm_set_cred: get_pid (every message); put_pid after unix_scm_to_skb and on the receiver's CPU when the skb is freed"),
    t("sk_buff", "the new message's", &["next", "prev", "sk", "cb", "len", "data_len", "headers", "truesize", "users", "destructor"], &[0, 1, 2, 3], Write, true,
      "alloc_skb (skbuff_head_cache, this CPU's slab), UNIXCB in cb; read and freed by the receiver's CPU"),
    t("skb_shared_info", "the new message's", &["nr_frags", "dataref", "frag_list", "gso_size"], &[0], Write, true,
      "__alloc_skb init; dataref dropped by the receiver (skb_release_data)"),
    data("skb data", "the new message's head buffer", Write,
         "skb_copy_datagram_from_iter: the bytes, read by the receiver"),
    t("unix_sock", "the receiver's", &["lock"], &[13], Write, true,
      "unix_state_lock(other): the receiver takes it too"),
    t("unix_sock", "the receiver's", &["sk.__sk_common"], &[1], Read, false, "sock_flag(other, SOCK_DEAD): skc_flags"),
    t("unix_sock", "the receiver's", &["sk.sk_receive_queue", "sk.sk_peek_off"], &[2], Write, true,
      "skb_queue_tail: queue spinlock, qlen, list pointers; the receiver unlinks"),
    t("unix_sock", "the receiver's", &["sk.sk_wq", "sk.sk_data_ready"], &[4], Read, false,
      "other->sk_data_ready -> sock_def_readable: rcu_dereference(sk_wq)"),
    t("socket", "the receiver's", &["wq"], &[1], Write, true,
      "skwq_has_sleeper reads the wait queue; a sleeping receiver: wake_up_interruptible_sync_poll locks wq.wait.lock and wakes it (try_to_wake_up)"),
    t("wait_queue_entry", "the sleeping receiver's (its stack)", &["flags", "private", "func", "entry"], &[0], Write, true,
      "only when the receiver sleeps (woken_wake_function / autoremove)"),
];

const UNIX_RECV: &[Touch] = &[
    SOCK_ENTRY[0],
    SOCK_ENTRY[1],
    SOCK_ENTRY[2],
    SOCK_ENTRY[3],
    SOCK_ENTRY[4],
    t("socket", "the receiver's", &["state", "sk", "ops", "file", "flags"], &[0], Read, false, "sock_recvmsg -> unix_stream_recvmsg"),
    t("unix_sock", "the receiver's", &["iolock"], &[12], Write, false,
      "mutex_lock(&u->iolock) in unix_stream_read_generic; shared only with other readers of the socket"),
    t("unix_sock", "the receiver's", &["lock"], &[13], Write, true,
      "unix_state_lock(sk) around the queue peek; the sender takes it"),
    t("unix_sock", "the receiver's", &["sk.sk_receive_queue", "sk.sk_peek_off"], &[2], Write, true,
      "skb_peek, then skb_unlink of a consumed skb; the sender appended"),
    t("unix_sock", "the receiver's", &["sk.sk_rcvtimeo", "sk.sk_rcvlowat", "sk.sk_err"], &[4], Read, false, "sock_rcvtimeo, sock_rcvlowat"),
    t("unix_sock", "the receiver's", &["sk.sk_shutdown"], &[8], Read, false, "RCV_SHUTDOWN check"),
    t("socket", "the receiver's", &["wq"], &[1], Write, true,
      "only when the queue is empty: unix_stream_data_wait -> prepare_to_wait(sk_sleep(sk)), sk_set_bit(SOCKWQ_ASYNC_WAITDATA); the sender's wake-up locks it"),
    t("task_struct", "the receiver (current)", &["__state"], &[0], Write, true,
      "only when the queue is empty: set_current_state via prepare_to_wait"),
    t("sk_buff", "the message's", &["next", "prev", "sk", "cb", "len", "headers", "users", "destructor"], &[0, 1, 2, 3], Write, true,
      "UNIXCB(skb) (consumed, pid), unix_skb_len; consume_skb frees it back to the slab: allocated on the sender's CPU"),
    t("skb_shared_info", "the message's", &["dataref", "nr_frags", "frag_list"], &[0], Write, true, "skb_release_data: dataref--"),
    data("skb data", "the message's head buffer", Read,
         "skb_copy_datagram_iter: the bytes the sender wrote"),
    t("pid", "the sender's tgid", &["count"], &[0], Write, true,
      "unix_destruct_scm / scm_recv: put_pid"),
    t("unix_sock", "the sender's", &["sk.sk_sndbuf", "sk.sk_wmem_alloc", "sk.sk_forward_alloc", "sk.sk_wmem_queued"], &[5], Write, true,
      "sock_wfree from the skb destructor: sk_wmem_alloc -= truesize"),
    t("unix_sock", "the sender's", &["sk.sk_wq", "sk.sk_data_ready"], &[4], Read, false,
      "unix_write_space: unix_writable, skwq_has_sleeper of the sender"),
    t("unix_sock", "the sender's", &["sk.sk_write_space"], &[10], Read, false, "sk->sk_write_space callback"),
];

const TCP_SEND: &[Touch] = &[
    SOCK_ENTRY[0],
    SOCK_ENTRY[1],
    SOCK_ENTRY[2],
    SOCK_ENTRY[3],
    SOCK_ENTRY[4],
    t("socket", "the sender's", &["state", "sk", "ops", "file", "flags"], &[0], Read, false, "sock_sendmsg -> inet_sendmsg -> tcp_sendmsg"),
    t("tcp_sock", "the sender's", &["inet_conn.icsk_inet.sk.sk_lock", "inet_conn.icsk_inet.sk.sk_sndbuf", "inet_conn.icsk_inet.sk.sk_wmem_queued", "inet_conn.icsk_inet.sk.sk_wmem_alloc", "inet_conn.icsk_inet.sk.sk_forward_alloc"], &[5], Write, true,
      "lock_sock/release_sock (sk_lock), sk_stream_memory_free, sk_wmem_queued_add, sk_mem_charge; the ACK softirq (on the receiver's CPU) takes sk_lock.slock and frees acked skbs"),
    t("tcp_sock", "the sender's", &["inet_conn.icsk_inet.sk.sk_tsq_flags", "inet_conn.icsk_inet.sk.sk_write_queue"], &[6], Write, true,
      "tcp_skb_entail to sk_write_queue; tcp_rtx_queue in the same line is trimmed by the ACK"),
    t("tcp_sock", "the sender's", &["inet_conn.icsk_inet.sk.sk_dst_cache", "inet_conn.icsk_inet.sk.sk_route_caps", "inet_conn.icsk_inet.sk.sk_gso_max_size"], &[8], Read, false,
      "ip_queue_xmit: __sk_dst_check; tcp_send_mss"),
    t("tcp_sock", "the sender's", &["max_window"], &[22], Read, false, "tcp_sock_read_tx group"),
    t("tcp_sock", "the sender's", &["tsoffset", "snd_wnd", "mss_cache"], &[23], Read, false, "tcp_sock_read_txrx group"),
    t("tcp_sock", "the sender's", &["data_segs_out", "write_seq", "pushed_seq", "lsndtime"], &[25], Write, false,
      "tcp_sock_write_tx group: write_seq (tcp_skb_entail), pushed_seq, lsndtime, data_segs_out"),
    t("tcp_sock", "the sender's", &["tcp_mstamp", "rcv_nxt", "snd_nxt", "snd_una", "srtt_us", "packets_out", "delivered", "app_limited", "rcv_wnd"], &[26, 27], Write, true,
      "tcp_sock_write_txrx group: snd_nxt, packets_out, tcp_mstamp (tcp_write_xmit/tcp_event_new_data_sent); the ACK softirq writes snd_una, srtt_us, delivered"),
    t("sk_buff", "the new message's (fclone pair)", &["next", "prev", "sk", "cb", "len", "data_len", "headers", "truesize", "users", "destructor"], &[0, 1, 2, 3], Write, true,
      "tcp_stream_alloc_skb; tcp_transmit_skb clones it: the clone is queued to the receiver and freed by the receiver's CPU"),
    t("skb_shared_info", "the new message's", &["nr_frags", "frags", "dataref"], &[0, 1], Write, true,
      "skb_fill_page_desc of the payload fragment; dataref (clone)"),
    data("skb data", "the sender task's page_frag page", Write,
         "skb_copy_to_page_nocache: the bytes; the receiver copies them out"),
    t("softnet_data", "this CPU's", &["poll_list", "process_queue"], &[0], Write, false,
      "enqueue_to_backlog / napi_schedule_rps: the loopback packet goes to this CPU's backlog; net_rx_action runs at local_bh_enable on this CPU"),
    t("softnet_data", "this CPU's", &["input_queue_tail", "input_pkt_queue", "backlog"], &[4, 5], Write, false,
      "enqueue_to_backlog, process_backlog"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.__sk_common"], &[0, 1, 2], Write, true,
      "tcp_v4_rcv -> __inet_lookup_skb: the established-hash lookup reads skc_portpair/addrs and refcount_inc_not_zero(skc_refcnt); sock_put at the end"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_receive_queue"], &[2], Write, true,
      "tcp_queue_rcv: __skb_queue_tail (or tcp_try_coalesce into the tail skb); the receiver unlinks"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_backlog"], &[3], Write, true,
      "rmem_alloc += truesize (skb_set_owner_r); sk_add_backlog when the receiver owns the socket"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_wq", "inet_conn.icsk_inet.sk.sk_data_ready"], &[4], Read, false,
      "tcp_data_ready -> sock_def_readable"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_lock", "inet_conn.icsk_inet.sk.sk_forward_alloc"], &[5], Write, true,
      "bh_lock_sock_nested (sk_lock.slock), sock_owned_by_user, sk_forward_alloc (tcp_try_rmem_schedule)"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_ack"], &[20], Write, true,
      "tcp_event_data_recv / __tcp_ack_snd_check: delayed-ACK state (icsk_ack.pending, rcv_mss, lrcvtime)"),
    t("tcp_sock", "the receiver's", &["copied_seq", "rcv_tstamp"], &[23], Read, true,
      "tcp_sock_read_rx group: copied_seq (written by the receiver's recvmsg)"),
    t("tcp_sock", "the receiver's", &["tcp_mstamp", "rcv_nxt", "rcv_wnd"], &[26, 27], Write, true,
      "tcp_rcv_established fast path: rcv_nxt (tcp_rcv_nxt_update), tcp_mstamp"),
    t("tcp_sock", "the receiver's", &["bytes_received", "segs_in", "data_segs_in", "rcvq_space"], &[27, 28, 29], Write, true,
      "tcp_sock_write_rx group: bytes_received, segs_in; rcvq_space also written by the receiver's recvmsg"),
    t("socket", "the receiver's", &["wq"], &[1], Write, true,
      "a sleeping receiver: wake_up_interruptible_sync_poll locks wq.wait.lock and wakes it"),
];

const TCP_RECV: &[Touch] = &[
    SOCK_ENTRY[0],
    SOCK_ENTRY[1],
    SOCK_ENTRY[2],
    SOCK_ENTRY[3],
    SOCK_ENTRY[4],
    t("socket", "the receiver's", &["state", "sk", "ops", "file", "flags"], &[0], Read, false, "sock_recvmsg -> inet_recvmsg -> tcp_recvmsg"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_lock", "inet_conn.icsk_inet.sk.sk_forward_alloc"], &[5], Write, true,
      "lock_sock/release_sock (processes sk_backlog), sk_mem_uncharge; the sender's softirq takes slock"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_receive_queue"], &[2], Write, true,
      "skb_peek_tail/walk, tcp_eat_recv_skb unlinks"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_backlog"], &[3], Write, true,
      "rmem_alloc -= truesize (sock_rfree); __release_sock drains the backlog"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_inet.sk.sk_rcvtimeo", "inet_conn.icsk_inet.sk.sk_rcvlowat", "inet_conn.icsk_inet.sk.sk_err"], &[4], Read, false,
      "sock_rcvtimeo, sock_rcvlowat"),
    t("socket", "the receiver's", &["wq"], &[1], Write, true,
      "only when empty: sk_wait_data -> add_wait_queue on sk_sleep(sk)"),
    t("task_struct", "the receiver (current)", &["__state"], &[0], Write, true, "only when empty: sk_wait_event"),
    t("tcp_sock", "the receiver's", &["copied_seq", "rcv_tstamp"], &[23], Write, true,
      "WRITE_ONCE(tp->copied_seq, ...); read by the softirq on the sender's CPU"),
    t("tcp_sock", "the receiver's", &["rcv_nxt", "rcv_wnd"], &[26, 27], Read, true,
      "tcp_cleanup_rbuf / __tcp_select_window; written by the softirq"),
    t("tcp_sock", "the receiver's", &["rcvq_space"], &[29], Write, true, "tcp_rcv_space_adjust"),
    t("tcp_sock", "the receiver's", &["inet_conn.icsk_ack"], &[20], Write, true,
      "tcp_cleanup_rbuf: ACK now if the window moved enough (tcp_send_ack); written by the softirq"),
    t("sk_buff", "the message's (clone)", &["next", "prev", "sk", "cb", "len", "headers", "users", "destructor"], &[0, 1, 2, 3], Write, true,
      "TCP_SKB_CB(skb)->seq; freed (__kfree_skb) on this CPU; allocated on the sender's"),
    t("skb_shared_info", "the message's", &["nr_frags", "frags", "dataref"], &[0, 1], Write, true, "skb_release_data: dataref--"),
    data("skb data", "the sender's page_frag page", Read, "skb_copy_datagram_iter: the bytes"),
    t("tcp_sock", "the sender's", &["inet_conn.icsk_inet.sk.sk_lock", "inet_conn.icsk_inet.sk.sk_wmem_queued", "inet_conn.icsk_inet.sk.sk_forward_alloc"], &[5], Write, true,
      "when an ACK is sent: the loopback softirq on this CPU processes it in the sender's socket (tcp_ack: bh_lock_sock, tcp_clean_rtx_queue frees the sender's skbs)"),
    t("tcp_sock", "the sender's", &["inet_conn.icsk_inet.sk.sk_tsq_flags", "inet_conn.icsk_inet.sk.sk_write_queue"], &[6], Write, true,
      "when an ACK is sent: tcp_rtx_queue trimmed"),
    t("tcp_sock", "the sender's", &["tcp_mstamp", "snd_una", "srtt_us", "packets_out", "delivered"], &[26, 27], Write, true,
      "when an ACK is sent: tcp_ack (snd_una, packets_out, srtt_us via tcp_ack_update_rtt)"),
];

/// The inventory: every modelled path with its touches.
pub static PATHS: &[PathInventory] = &[
    PathInventory {
        path: "pipe_write",
        kernel_fn: "ksys_write -> vfs_write -> pipe_write (file_update_time)",
        source: "fs/read_write.c, fs/pipe.c, fs/inode.c",
        touches: PIPE_WRITE,
    },
    PathInventory {
        path: "pipe_read",
        kernel_fn: "ksys_read -> vfs_read -> pipe_read (file_accessed)",
        source: "fs/read_write.c, fs/pipe.c, fs/inode.c",
        touches: PIPE_READ,
    },
    PathInventory {
        path: "unix_stream_send",
        kernel_fn: "__sys_sendto -> sock_sendmsg -> unix_stream_sendmsg -> sock_def_readable",
        source: "net/socket.c, net/unix/af_unix.c, net/core/sock.c, net/core/skbuff.c",
        touches: UNIX_SEND,
    },
    PathInventory {
        path: "unix_stream_recv",
        kernel_fn: "__sys_recvfrom -> sock_recvmsg -> unix_stream_recvmsg -> unix_stream_read_generic",
        source: "net/socket.c, net/unix/af_unix.c, net/core/sock.c, net/core/skbuff.c",
        touches: UNIX_RECV,
    },
    PathInventory {
        path: "tcp_loopback_send",
        kernel_fn: "tcp_sendmsg -> tcp_push -> tcp_write_xmit -> tcp_transmit_skb -> ip_queue_xmit -> loopback_xmit -> __netif_rx; softirq on the sender: net_rx_action -> process_backlog -> __netif_receive_skb -> ip_rcv -> tcp_v4_rcv -> tcp_rcv_established -> tcp_data_ready",
        source: "net/ipv4/tcp.c, net/ipv4/tcp_output.c, drivers/net/loopback.c, net/core/dev.c, net/ipv4/tcp_ipv4.c, net/ipv4/tcp_input.c",
        touches: TCP_SEND,
    },
    PathInventory {
        path: "tcp_loopback_recv",
        kernel_fn: "tcp_recvmsg -> tcp_recvmsg_locked -> tcp_cleanup_rbuf (-> tcp_send_ack -> loopback -> tcp_v4_rcv -> tcp_ack on the sender's socket)",
        source: "net/ipv4/tcp.c, net/ipv4/tcp_input.c, net/ipv4/tcp_output.c",
        touches: TCP_RECV,
    },
    PathInventory {
        path: "futex_wait",
        kernel_fn: "futex_wait -> __futex_wait -> futex_wait_setup (futex_q_lock, futex_get_value_locked) -> futex_do_wait (futex_queue, schedule)",
        source: "kernel/futex/waitwake.c, kernel/futex/core.c",
        touches: FUTEX_WAIT,
    },
    PathInventory {
        path: "futex_wake",
        kernel_fn: "futex_wake -> futex_wake_mark (__futex_unqueue, wake_q_add_safe) -> wake_up_q",
        source: "kernel/futex/waitwake.c, kernel/futex/core.c",
        touches: FUTEX_WAKE,
    },
    PathInventory {
        path: "ttwu_select",
        kernel_fn: "try_to_wake_up -> select_task_rq -> select_task_rq_fair -> select_idle_sibling",
        source: "kernel/sched/core.c, kernel/sched/fair.c",
        touches: TTWU_COMMON,
    },
    PathInventory {
        path: "ttwu_activate",
        kernel_fn: "ttwu_queue -> ttwu_do_activate -> activate_task -> enqueue_task_fair -> wakeup_preempt (on the waker for a local or same-LLC target; on the target from sched_ttwu_pending)",
        source: "kernel/sched/core.c, kernel/sched/fair.c",
        touches: TTWU_ACTIVATE,
    },
    PathInventory {
        path: "ttwu_queue_wakelist",
        kernel_fn: "ttwu_queue_wakelist -> __ttwu_queue_wakelist -> __smp_call_single_queue (remote: target in another LLC, or an idle target)",
        source: "kernel/sched/core.c, kernel/smp.c",
        touches: TTWU_QUEUE,
    },
    PathInventory {
        path: "sched_ttwu_pending",
        kernel_fn: "flush_smp_call_function_queue -> sched_ttwu_pending (then ttwu_activate's lines, on the target)",
        source: "kernel/smp.c, kernel/sched/core.c",
        touches: TTWU_PENDING,
    },
    PathInventory {
        path: "schedule",
        kernel_fn: "schedule -> __schedule -> pick_next_task_fair -> context_switch -> switch_mm_irqs_off, switch_to -> finish_task_switch",
        source: "kernel/sched/core.c, kernel/sched/fair.c, arch/x86/mm/tlb.c, arch/x86/kernel/process_64.c",
        touches: SCHEDULE,
    },
    PathInventory {
        path: "idle_enter",
        kernel_fn: "do_idle -> tick_nohz_idle_enter, tick_nohz_idle_stop_tick (nohz_balance_enter_idle) -> cpuidle_idle_call; pick_next_task_idle -> __update_idle_core",
        source: "kernel/sched/idle.c, kernel/time/tick-sched.c, kernel/sched/fair.c",
        touches: IDLE_ENTER,
    },
    PathInventory {
        path: "idle_exit",
        kernel_fn: "do_idle (need_resched) -> flush_smp_call_function_queue; tick_nohz_idle_exit -> tick_nohz_restart_sched_tick; next tick: nohz_balance_exit_idle",
        source: "kernel/sched/idle.c, kernel/time/tick-sched.c, kernel/sched/fair.c",
        touches: IDLE_EXIT,
    },
    PathInventory {
        path: "sched_tick",
        kernel_fn: "sched_tick (scheduler_tick before 6.10) -> task_tick_fair -> entity_tick -> update_curr, update_load_avg; calc_global_load_tick; sched_balance_trigger -> nohz_balancer_kick",
        source: "kernel/sched/core.c, kernel/sched/fair.c, kernel/sched/loadavg.c",
        touches: SCHED_TICK,
    },
    PathInventory {
        path: "load_balance",
        kernel_fn: "sched_balance_rq (load_balance before 6.10) -> sched_balance_find_src_group -> update_sd_lb_stats -> update_sg_lb_stats; detach_tasks/attach_tasks when it pulls",
        source: "kernel/sched/fair.c",
        touches: LOAD_BALANCE,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wakee_moves_eight_task_struct_lines_and_six_stack_lines() {
        // task_struct lines 0, 1, 2, 3, 4, 5, 36, 50; stack lines 250-255
        assert_eq!(task_lines(), (8, 6));
    }

    /// The line model keeps a task_struct's first line (thread_info's
    /// flags) as a record of its own, which resched_curr writes alone: that
    /// line must be one of the eight a wake-up writes, written by the
    /// pre-empting waker on the target's current task.
    #[test]
    fn resched_curr_writes_the_first_task_struct_line_alone() {
        let activate = path("ttwu_activate").unwrap();
        let resched: Vec<_> = activate
            .touches
            .iter()
            .filter(|t| t.object == "task_struct" && t.fields.contains(&"thread_info"))
            .collect();
        assert_eq!(resched.len(), 1);
        assert_eq!(resched[0].lines, &[0]);
        assert_eq!(resched[0].access, Access::Write);
        assert!(resched[0].shared);
        assert!(resched[0].instance.contains("current task"));
    }

    #[test]
    fn a_pipe_moves_three_inode_info_lines_and_one_slot_line() {
        assert_eq!(pipe_state_lines(), (3, 1));
        // with a 100 B message's two data lines: the six lines `schedlab
        // calibrate` measured for a pipe used from two CPUs in turn
        // (CHANNEL_LINES_SOURCE)
        let (info, slot) = pipe_state_lines();
        let measured = crate::costs::MachineCosts::for_machine("epyc-zen3").pipe_lines;
        assert_eq!(info + slot + 2, measured);
    }
    use std::collections::HashMap;

    const FIXTURE_NEW: &str = include_str!("../../fixtures/btf/6.12.118+deb12-cloud-amd64.tsv");
    const FIXTURE_OLD: &str = include_str!("../../fixtures/btf/6.1.0-57-cloud-amd64.tsv");

    /// One member of a BTF struct as pahole prints it.
    #[derive(Debug, Clone)]
    struct Member {
        offset: u32,
        size: u32,
        /// `struct X` when the member embeds a struct by value.
        embedded: Option<String>,
        /// Tabs before the declaration: 1 = a direct member.
        depth: usize,
    }

    #[derive(Debug, Default)]
    struct Layout {
        size: u32,
        members: Vec<(String, Member)>,
    }

    fn num(s: &str) -> Option<u32> {
        let s = s.trim();
        let s = s.split(':').next()?.trim();
        match s.strip_prefix("0x") {
            Some(h) => u32::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        }
    }

    /// Parses a member line: `<decl>; /* off size */`.
    fn member(line: &str) -> Option<(String, Member)> {
        let depth = line.chars().take_while(|c| *c == '\t').count();
        let (decl, comment) = line.split_once("/*")?;
        let decl = decl.trim().strip_suffix(';')?.trim();
        let comment = comment.trim().strip_suffix("*/")?.trim();
        // "off size" or "off:bit size" or "off: bit size".
        let comment = comment.replace(": ", ":");
        let mut it = comment.split_whitespace();
        let offset = num(it.next()?)?;
        let size = num(it.next()?)?;
        let decl = match decl.find("__attribute__") {
            Some(i) => decl[..i].trim(),
            None => decl,
        };
        let name: String = if let Some(i) = decl.find("(*") {
            decl[i + 2..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        } else {
            let d = decl.split(':').next()?.trim();
            let d = d.split('[').next()?.trim();
            d.rsplit(|c: char| c.is_whitespace() || c == '*')
                .next()?
                .to_string()
        };
        if name.is_empty() {
            return None;
        }
        let embedded = decl
            .strip_prefix("struct ")
            .filter(|rest| !rest.contains('*') && !rest.contains('(') && !decl.starts_with('}'))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string);
        Some((
            name,
            Member {
                offset,
                size,
                embedded,
                depth,
            },
        ))
    }

    /// Parses a `pahole --hex` dump (what `scripts/btf-inventory.sh` reads
    /// from a kernel's BTF before trimming it).
    fn parse_pahole(fixture: &str) -> HashMap<String, Layout> {
        let mut out = HashMap::new();
        let mut cur: Option<(String, Layout)> = None;
        for line in fixture.lines() {
            if let Some(rest) = line.strip_prefix("struct ") {
                if let Some(name) = rest.strip_suffix(" {") {
                    cur = Some((name.to_string(), Layout::default()));
                    continue;
                }
            }
            let Some((_, layout)) = cur.as_mut() else {
                continue;
            };
            if line.starts_with('}') {
                let (name, layout) = cur.take().unwrap();
                out.insert(name, layout);
                continue;
            }
            if let Some(i) = line.find("/* size: ") {
                let n = &line[i + 9..];
                layout.size = num(n.split(',').next().unwrap()).unwrap();
                continue;
            }
            if let Some(m) = member(line) {
                layout.members.push(m);
            }
        }
        out
    }

    /// Offset and size of a dotted field path inside a struct of a pahole dump.
    fn resolve_pahole(
        btf: &HashMap<String, Layout>,
        st: &str,
        field: &str,
    ) -> Result<(u32, u32), String> {
        let layout = btf
            .get(st)
            .ok_or_else(|| format!("struct {st} not in the fixture"))?;
        let (head, rest) = match field.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (field, None),
        };
        // A direct member first, then one inside an anonymous struct/union.
        let m = layout
            .members
            .iter()
            .filter(|(n, _)| n == head)
            .min_by_key(|(_, m)| m.depth)
            .map(|(_, m)| m.clone())
            .ok_or_else(|| format!("{st}.{head} not in the fixture"))?;
        match rest {
            None => Ok((m.offset, m.size)),
            Some(r) => {
                let inner = m
                    .embedded
                    .ok_or_else(|| format!("{st}.{head} is not an embedded struct"))?;
                let (o, s) = resolve_pahole(btf, &inner, r)?;
                Ok((m.offset + o, s))
            }
        }
    }

    /// A trimmed fixture: the sizes of the inventory's structs and the
    /// offset and size of every field it names, nothing else of the layouts.
    #[derive(Default)]
    struct Btf {
        sizes: HashMap<String, u32>,
        fields: HashMap<(String, String), (u32, u32)>,
    }

    /// Parses a trimmed fixture: `size<TAB>struct<TAB>bytes` and
    /// `field<TAB>struct<TAB>dotted.path<TAB>offset<TAB>size` lines (hex
    /// offsets and sizes as `0x..`), `#` comments.
    fn parse(fixture: &str) -> Btf {
        let mut b = Btf::default();
        for line in fixture
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cols: Vec<&str> = line.split('\t').collect();
            match cols.as_slice() {
                ["size", st, n] => {
                    b.sizes.insert(st.to_string(), num(n).unwrap());
                }
                ["field", st, f, off, size] => {
                    b.fields.insert(
                        (st.to_string(), f.to_string()),
                        (num(off).unwrap(), num(size).unwrap()),
                    );
                }
                _ => panic!("bad fixture line: {line}"),
            }
        }
        b
    }

    /// Offset and size of a dotted field path inside a struct.
    fn resolve(btf: &Btf, st: &str, field: &str) -> Result<(u32, u32), String> {
        btf.fields
            .get(&(st.to_string(), field.to_string()))
            .copied()
            .ok_or_else(|| format!("{st}.{field} not in the fixture"))
    }

    /// The trimmed fixture of a pahole dump: what the inventory uses of it.
    fn trim(dump: &str) -> String {
        let btf = parse_pahole(dump);
        let mut out: Vec<String> = dump
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(str::to_string)
            .collect();
        out.push(
            "# trimmed: the size of each struct of the inventory, and the offset and size of each field it names (hex)"
                .to_string(),
        );
        let mut structs: Vec<&str> = OBJECTS.iter().filter_map(|o| o.btf_struct).collect();
        structs.sort_unstable();
        structs.dedup();
        for st in &structs {
            if let Some(l) = btf.get(*st) {
                out.push(format!("size\t{st}\t{:#x}", l.size));
            }
        }
        let mut fields: Vec<(&str, &str)> = PATHS
            .iter()
            .flat_map(|p| p.touches)
            .filter_map(|t| {
                object(t.object)
                    .unwrap()
                    .btf_struct
                    .map(|st| (st, t.fields))
            })
            .flat_map(|(st, fs)| fs.iter().map(move |f| (st, *f)))
            .collect();
        fields.sort_unstable();
        fields.dedup();
        for (st, f) in fields {
            if let Ok((off, size)) = resolve_pahole(&btf, st, f) {
                out.push(format!("field\t{st}\t{f}\t{off:#x}\t{size:#x}"));
            }
        }
        out.join("\n") + "\n"
    }

    #[test]
    fn a_pahole_dump_is_trimmed_to_the_sizes_and_the_named_fields() {
        let dump = "# BTF struct layouts of K (test)\n# pahole\n\
struct pipe_buffer {\n\
\tstruct page *              page;                 /*     0   0x8 */\n\
\tunsigned int               offset;               /*   0x8   0x4 */\n\
\tunsigned int               len;                  /*   0xc   0x4 */\n\
\tconst struct pipe_buf_operations  * ops;         /*  0x10   0x8 */\n\
\tunsigned int               flags;                /*  0x18   0x4 */\n\
\tunsigned int               unnamed_field;        /*  0x1c   0x4 */\n\
\tlong unsigned int          private;              /*  0x20   0x8 */\n\
\n\
\t/* size: 40, cachelines: 1, members: 7 */\n\
};\n";
        let t = trim(dump);
        let b = parse(&t);
        assert!(t.starts_with("# BTF struct layouts of K (test)\n# pahole\n# trimmed"));
        assert_eq!(b.sizes["pipe_buffer"], 40);
        assert_eq!(resolve(&b, "pipe_buffer", "len").unwrap(), (0xc, 4));
        // a member the inventory does not name is left out
        assert!(resolve(&b, "pipe_buffer", "private").is_err());
        assert!(!t.contains("unnamed_field"));
    }

    /// Trims a pahole dump into a fixture: `scripts/btf-inventory.sh` runs
    /// it with BTF_DUMP (the dump) and BTF_OUT (the fixture to write); a
    /// procedure, not a check, so compiled only with the `procedures`
    /// feature.
    #[cfg(feature = "procedures")]
    #[test]
    fn trim_btf_dump() {
        let dump = std::env::var("BTF_DUMP").expect("BTF_DUMP: the pahole dump");
        let out = std::env::var("BTF_OUT").expect("BTF_OUT: the fixture to write");
        let text = std::fs::read_to_string(&dump).expect("read BTF_DUMP");
        std::fs::write(&out, trim(&text)).expect("write BTF_OUT");
    }

    fn lines_of(off: u32, size: u32) -> std::ops::RangeInclusive<u32> {
        off / LINE_BYTES..=(off + size.max(1) - 1) / LINE_BYTES
    }

    #[test]
    fn fixture_parses_known_layouts() {
        let btf = parse(FIXTURE_NEW);
        assert_eq!(btf.sizes["pipe_inode_info"], 168);
        assert_eq!(resolve(&btf, "pipe_inode_info", "head").unwrap(), (0x50, 4));
        assert_eq!(
            resolve(&btf, "task_struct", "se.on_rq").unwrap(),
            (0x80 + 0x50, 1)
        );
        assert_eq!(resolve(&btf, "rq", "cfs.avg").unwrap(), (0x80 + 0x80, 0x40));
        assert_eq!(
            resolve(&btf, "task_struct", "sched_remote_wakeup")
                .unwrap()
                .0,
            0x938
        );
    }

    #[test]
    fn object_sizes_match_the_btf_fixtures() {
        let new = parse(FIXTURE_NEW);
        let old = parse(FIXTURE_OLD);
        assert!(FIXTURE_NEW.starts_with(&format!("# BTF struct layouts of {BTF_KERNEL} ")));
        assert!(FIXTURE_OLD.starts_with(&format!("# BTF struct layouts of {BTF_KERNEL_OLD} ")));
        for o in OBJECTS {
            assert_eq!(o.lines, o.btf_size_bytes.div_ceil(LINE_BYTES), "{}", o.name);
            let Some(st) = o.btf_struct else {
                // Not a BTF struct: the source says so and is not the BTF dump.
                assert_ne!(o.kernel, BTF_612, "{}", o.name);
                assert!(
                    !new.sizes.contains_key(o.name),
                    "{} is a BTF struct: use btf()",
                    o.name
                );
                continue;
            };
            assert_eq!(o.kernel, BTF_612, "{}", o.name);
            let size = new
                .sizes
                .get(st)
                .unwrap_or_else(|| panic!("{st} not in {BTF_KERNEL} fixture"));
            assert_eq!(o.btf_size_bytes, *size, "size of {st} under {BTF_KERNEL}");
            match o.old_size_bytes {
                Some(s) => assert_eq!(
                    Some(s),
                    old.sizes.get(st).copied(),
                    "size of {st} under {BTF_KERNEL_OLD}"
                ),
                None => assert!(
                    !old.sizes.contains_key(st),
                    "{st} exists under {BTF_KERNEL_OLD}: record its size"
                ),
            }
        }
    }

    #[test]
    fn touches_name_existing_objects_and_lines_inside_them() {
        let mut names: Vec<_> = OBJECTS.iter().map(|o| o.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), OBJECTS.len(), "duplicate object");
        for p in PATHS {
            assert!(!p.touches.is_empty(), "{}", p.path);
            for t in p.touches {
                let o = object(t.object)
                    .unwrap_or_else(|| panic!("{}: unknown object {}", p.path, t.object));
                assert!(
                    !t.lines.is_empty(),
                    "{}: {} touches no line",
                    p.path,
                    t.object
                );
                for &l in t.lines {
                    assert!(
                        l < o.lines,
                        "{}: {} line {l} outside its {} lines",
                        p.path,
                        t.object,
                        o.lines
                    );
                }
                assert_eq!(
                    t.fields.is_empty(),
                    o.btf_struct.is_none(),
                    "{}: {} fields",
                    p.path,
                    t.object
                );
            }
        }
    }

    /// Every named field exists in the BTF layout and overlaps a listed line;
    /// every listed line lies inside some named field (arrays may list only
    /// the line actually used).
    #[test]
    fn touched_lines_match_the_fields_offsets() {
        let btf = parse(FIXTURE_NEW);
        let mut errors = Vec::new();
        for p in PATHS {
            for t in p.touches {
                let Some(st) = object(t.object).unwrap().btf_struct else {
                    continue;
                };
                let mut covered = Vec::new();
                for f in t.fields {
                    match resolve(&btf, st, f) {
                        Ok((off, size)) => {
                            let r = lines_of(off, size);
                            if !t.lines.iter().any(|l| r.contains(l)) {
                                errors.push(format!(
                                    "{}: {st}.{f} (lines {r:?}) overlaps none of {:?}",
                                    p.path, t.lines
                                ));
                            }
                            covered.push(r);
                        }
                        Err(e) => errors.push(format!("{}: {e}", p.path)),
                    }
                }
                for l in t.lines {
                    if !covered.iter().any(|r| r.contains(l)) {
                        errors.push(format!(
                            "{}: {st} line {l} is in none of {:?}",
                            p.path, t.fields
                        ));
                    }
                }
            }
        }
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }

    #[test]
    fn every_path_writes_a_shared_line() {
        for p in PATHS {
            assert!(
                p.shared_written_lines() > 0,
                "{} writes no shared line",
                p.path
            );
            assert!(p.shared_lines() <= p.lines());
        }
        let names: Vec<_> = PATHS.iter().map(|p| p.path).collect();
        for want in [
            "pipe_write",
            "pipe_read",
            "futex_wait",
            "futex_wake",
            "ttwu_activate",
            "schedule",
        ] {
            assert!(names.contains(&want), "{want} missing");
            assert!(path(want).is_some());
        }
    }
}
