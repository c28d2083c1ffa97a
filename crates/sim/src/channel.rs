//! Channels with the kernel's buffering and wake-up rules: anonymous pipes
//! (fs/pipe.c, 5.5+), unix stream sockets (net/unix/af_unix.c with the
//! generic socket send-buffer accounting) and loopback TCP stream sockets
//! (net/ipv4/tcp.c over drivers/net/loopback.c).

use crate::cacheline::LineId;
use crate::task::TaskId;
use crate::Nanos;
use std::collections::VecDeque;

/// Page size.
pub const PAGE: u32 = 4096;
/// Default pipe size: 16 pages (64 KiB).
pub const PIPE_DEF_BUFFERS: usize = 16;
/// net.core.wmem_default: a socket's default send buffer.
pub const WMEM_DEFAULT: u64 = 212_992;
/// net.ipv4.tcp_rmem[1]: a TCP socket's initial receive buffer. Over
/// loopback a sent skb is orphaned at transmit and charged to the
/// receiver, so the receiver's buffer is what bounds the sender.
pub const TCP_RMEM_DEFAULT: u64 = 131_072;
/// The loopback device's MTU (65536) less the IPv4 and TCP headers: the
/// largest segment one send puts in one skb.
pub const LOOPBACK_MSS: u32 = 65_483;

/// A channel's lines in the line model, allocated together from its first
/// (`Channel::line`, the channel's own kernel state, with a pipe's `struct
/// pipe_buffer` slot in the same record: every call writes both): the
/// offsets below. A write moves the bytes it writes with the state (the
/// buffer the last reader left behind, `LineTable::write_with_data`); a
/// read pulls each chunk from its writer.
/// The `struct file` of the writing end (its f_count).
pub const LINE_FILE_W: LineId = 1;
/// The `struct file` of the reading end.
pub const LINE_FILE_R: LineId = 2;
/// Lines of a buffer page a write can find last read on another CPU: one
/// page (the pipe's recycled `tmp_page` or the buffer it merges into; an
/// skb head from the sender's slab), 4 KiB; further pages are fresh.
pub const DATA_LINES_MAX: u32 = PAGE / 64;

/// Allocate the lines of a new channel of `kind` (see [`LINE_FILE_W`] and
/// the following offset); returns the first.
///
/// What moves when a call follows one made on another CPU:
/// - a pipe: the lines of its `struct pipe_inode_info` and its `struct
///   pipe_buffer` slot that `pipe_write` and `pipe_read` both write, from
///   the inventory of kernel objects (`costs::kernel_objects::pipe_state_lines`:
///   3 and 1), then the message's bytes by their size;
/// - a unix stream socket: the measured count (`MachineCosts::unix_lines`,
///   `schedlab calibrate`'s two CPUs in turn with 100 B messages) less the
///   two lines of that message's bytes, which are charged by their size.
///   The inventory lists about ten written shared lines per call (both
///   sockets' state, the skb, the pid count); the measurement moves the
///   equivalent of five serial ones, so the lines of one call are taken as
///   fetched partly in parallel, and the measurement is charged
///   (docs/costs.md);
/// - a loopback TCP connection: the measured count the same way
///   (`MachineCosts::tcp_lines`, one connection used from two CPUs in
///   turn) less the message's two lines. The inventory lists about 25
///   written shared lines per send (both sockets' state, the skb, the
///   loopback softirq's work on the receiving socket); as for unix
///   sockets, the measurement is charged.
///
/// The `struct file` lines move only for calls made by a thread whose
/// process has other threads (a shared file table: `__fget_light` takes a
/// reference).
pub fn alloc_channel_lines(
    lines: &mut crate::cacheline::LineTable,
    costs: &crate::costs::MachineCosts,
    kind: ChanKind,
) -> LineId {
    use crate::cacheline::LineKind;
    let (info, slot) = crate::costs::kernel_objects::pipe_state_lines();
    let first = match kind {
        ChanKind::Pipe => lines.alloc_pair(
            LineKind::PipeInodeInfo,
            info,
            LineKind::PipeBuffer,
            slot as u8,
        ),
        ChanKind::UnixStream => lines.alloc_of(
            LineKind::UnixSock,
            costs
                .unix_lines
                .saturating_sub(MEASURED_MESSAGE_LINES)
                .max(1),
        ),
        ChanKind::TcpStream => lines.alloc_of(
            LineKind::TcpSock,
            costs
                .tcp_lines
                .saturating_sub(MEASURED_MESSAGE_LINES)
                .max(1),
        ),
    };
    lines.alloc_of(LineKind::File, 1);
    lines.alloc_of(LineKind::File, 1);
    first
}

/// Lines of the 100 B message `schedlab calibrate` passes when it measures
/// a channel's lines (`pipe_lines`, `unix_lines`, `tcp_lines`).
pub const MEASURED_MESSAGE_LINES: u32 = 2;

/// Kind of channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChanKind {
    /// pipe(2).
    Pipe,
    /// socketpair(AF_UNIX, SOCK_STREAM).
    UnixStream,
    /// A connected AF_INET SOCK_STREAM socket over loopback (127.0.0.1,
    /// TCP_NODELAY): one direction of it.
    TcpStream,
}

/// The channel costs of a machine by kind of channel: here, beside the
/// kinds, so the cost profile does not depend on the channels.
impl crate::costs::MachineCosts {
    /// What a pipe or unix-socket call costs beyond its hot figure
    /// (`pipe_syscall_ns`, `unix_syscall_ns`): the file reference a thread
    /// of a multi-threaded process takes (`shared_fd`), the cache misses of
    /// a call made while `buffered_per_cpu` payload bytes sit in the run's
    /// channels of that kind per CPU in use (the depth table), and those of
    /// a call made after `reuse` calls on the CPU to other pipes and sockets
    /// since this channel's last one there (the rotation table; 0 when
    /// the channel was last used elsewhere, whose lines the line model
    /// charges). Both tables are linear between their points, the last
    /// value beyond. TCP and the other kinds: 0.
    #[inline(always)]
    pub fn channel_call_extra(
        &self,
        kind: ChanKind,
        shared_fd: bool,
        buffered_per_cpu: u64,
        reuse: u64,
    ) -> Nanos {
        let (fd, depth, rotation) = match kind {
            ChanKind::Pipe => (
                self.pipe_shared_fd_ns,
                &self.pipe_depth_ns,
                &self.pipe_rotation_ns,
            ),
            ChanKind::UnixStream => (
                self.unix_shared_fd_ns,
                &self.unix_depth_ns,
                &self.unix_rotation_ns,
            ),
            ChanKind::TcpStream => return 0,
        };
        (if shared_fd { fd } else { 0 })
            + crate::costs::piecewise(
                crate::costs::DEPTH_BASE_BYTES,
                &crate::costs::DEPTH_BYTES,
                depth,
                buffered_per_cpu,
            )
            + crate::costs::piecewise(0, &crate::costs::ROTATION_CALLS, rotation, reuse)
    }

    /// The rotation part of [`Self::channel_call_extra`] alone: the table
    /// of `kind` at `reuse` calls to other channels. TCP: 0.
    pub fn channel_rotation_ns(&self, kind: ChanKind, reuse: u64) -> Nanos {
        self.channel_call_extra(kind, false, 0, reuse)
    }
}

/// A buffered chunk: a pipe page or a socket buffer (skb).
#[derive(Clone, Copy, Debug)]
struct Chunk {
    /// Unread bytes.
    len: u32,
    /// Bytes written into the chunk so far (pipe merge limit).
    fill: u32,
    /// Memory charged to the sender (skb truesize).
    truesize: u32,
    /// CPU that wrote the data (the reader pulls the lines from there).
    writer_cpu: u32,
}

/// skb truesize for a unix stream message of `len` bytes: the data area is
/// SKB_DATA_ALIGN(len) plus the skb_shared_info (320 bytes) rounded up to the
/// kmalloc size class, plus the sk_buff itself (256 bytes aligned); large
/// messages use page fragments. An approximation of the kernel's accounting.
pub fn unix_skb_truesize(len: u32) -> u32 {
    let head = len.div_ceil(64) * 64 + 320;
    let alloc = if head <= 4096 {
        match head {
            0..=96 => 96,
            97..=128 => 128,
            129..=192 => 192,
            _ => head.next_power_of_two(),
        }
    } else {
        head.div_ceil(PAGE) * PAGE
    };
    alloc + 256
}

/// What a read does with each chunk of data it consumes: `pull(writer_cpu,
/// bytes)`. A closure will do; the engine passes a type whose method is
/// always inlined (a closure in the read's loop was compiled as a call, one
/// per chunk read).
pub trait Pull {
    /// `bytes` written by `writer_cpu` were consumed.
    fn pull(&mut self, writer_cpu: u32, bytes: u32);
}

impl<F: FnMut(u32, u32)> Pull for F {
    #[inline(always)]
    fn pull(&mut self, writer_cpu: u32, bytes: u32) {
        self(writer_cpu, bytes)
    }
}

/// Outcome of a channel operation.
#[derive(Debug, PartialEq, Eq)]
pub enum IoResult {
    /// Transferred this many bytes.
    Done(u32),
    /// Nothing could be transferred: the caller must block.
    WouldBlock,
}

/// A channel between tasks. Laid out in the order written (`repr(C)`) and
/// from the start of a cache line, so that a call touches two lines: the
/// first holds what every call reads or writes (the buffered chunks, the
/// byte count, the lock line, the call record, the kind), the second the
/// totals, the socket's memory accounting and the blocked readers; the
/// blocked writers and pollers, read only when a call must block or wake
/// them, come last (`a_calls_fields_share_two_lines` checks it).
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Channel {
    chunks: VecDeque<Chunk>,
    /// Bytes buffered.
    pub buffered: u64,
    /// See `last_cpu`.
    pub last_call: u64,
    /// Line holding the channel's lock and indices.
    pub line: LineId,
    /// The CPU of the last call that entered the kernel on this channel
    /// (`u32::MAX`: none yet), and that CPU's channel-call count then: the
    /// calls to other channels in between are the call's reuse distance
    /// (`MachineCosts::channel_call_extra`).
    pub last_cpu: u32,
    /// Kind.
    pub kind: ChanKind,
    /// Counts towards the run's payload totals.
    pub payload: bool,
    /// Somebody polled this channel (pipe->poll_usage).
    pub poll_usage: bool,
    /// When a pipe read wakes a blocked writer (the kernel profile's
    /// `pipe_wake_writer`).
    pub wake_writer: crate::ipc_features::PipeWakeWriter,
    /// Total bytes written.
    pub bytes_written: u64,
    /// Total bytes read.
    pub bytes_read: u64,
    /// Socket: sender's sk_wmem_alloc.
    pub wmem_alloc: u64,
    /// Socket: sender's sk_sndbuf.
    pub sndbuf: u64,
    /// Readers blocked in read().
    pub readers: VecDeque<TaskId>,
    /// Writers blocked in write().
    pub writers: VecDeque<TaskId>,
    /// Tasks blocked in poll().
    pub pollers: Vec<TaskId>,
}

/// Who must be woken after an operation: a set of the flags below, one
/// byte (returned by value, it stays one store and one load: five separate
/// flags were read back wider than they were written, a store-forwarding
/// stall on every channel call).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wakes(u8);

impl Wakes {
    /// Wake one blocked reader (exclusive wait: pipes).
    pub const ONE_READER: Wakes = Wakes(1);
    /// Wake every blocked reader (non-exclusive wait: unix stream sockets).
    pub const ALL_READERS: Wakes = Wakes(2);
    /// Wake every poller.
    pub const POLLERS: Wakes = Wakes(4);
    /// Wake one blocked writer (exclusive, pipes).
    pub const ONE_WRITER: Wakes = Wakes(8);
    /// Wake every blocked writer (sockets: non-exclusive wait).
    pub const ALL_WRITERS: Wakes = Wakes(16);
    /// Nobody.
    pub const NONE: Wakes = Wakes(0);

    /// `self` plus `flag` when `cond` holds.
    #[inline]
    pub fn with(self, flag: Wakes, cond: bool) -> Wakes {
        Wakes(self.0 | if cond { flag.0 } else { 0 })
    }

    /// Any of `flags` is set.
    #[inline]
    pub fn any(self, flags: Wakes) -> bool {
        self.0 & flags.0 != 0
    }

    /// See [`Self::ONE_READER`].
    pub fn one_reader(self) -> bool {
        self.any(Self::ONE_READER)
    }
    /// See [`Self::ALL_READERS`].
    pub fn all_readers(self) -> bool {
        self.any(Self::ALL_READERS)
    }
    /// See [`Self::POLLERS`].
    pub fn pollers(self) -> bool {
        self.any(Self::POLLERS)
    }
    /// See [`Self::ONE_WRITER`].
    pub fn one_writer(self) -> bool {
        self.any(Self::ONE_WRITER)
    }
    /// See [`Self::ALL_WRITERS`].
    pub fn all_writers(self) -> bool {
        self.any(Self::ALL_WRITERS)
    }
}

impl Channel {
    /// Bytes of one buffered chunk (for memory estimates).
    pub const CHUNK_BYTES: usize = std::mem::size_of::<Chunk>();

    /// A new empty channel.
    pub fn new(kind: ChanKind, line: LineId) -> Self {
        Channel {
            kind,
            chunks: VecDeque::new(),
            buffered: 0,
            wmem_alloc: 0,
            sndbuf: WMEM_DEFAULT,
            readers: VecDeque::new(),
            writers: VecDeque::new(),
            pollers: Vec::new(),
            poll_usage: false,
            wake_writer: crate::ipc_features::PipeWakeWriter::Freed,
            line,
            bytes_written: 0,
            bytes_read: 0,
            payload: true,
            last_cpu: u32::MAX,
            last_call: 0,
        }
    }

    /// Data is available.
    pub fn readable(&self) -> bool {
        self.buffered > 0
    }

    fn pipe_full(&self) -> bool {
        self.chunks.len() >= PIPE_DEF_BUFFERS
    }

    /// Write up to `bytes` from `cpu`. Pipes: merge into the last page when
    /// the write fits, else fill whole new pages (pipe_write); sockets: one
    /// skb per write as long as sk_wmem_alloc < sk_sndbuf
    /// (sock_alloc_send_pskb). Returns bytes written (a short write leaves
    /// the rest for a retry after blocking) and who to wake.
    /// `resumed`: the writer slept in this write and was woken; pipe_write
    /// then waits for a free page and no longer tries to merge (the merge
    /// is only attempted on entry).
    #[inline(always)]
    pub fn write(&mut self, bytes: u32, cpu: u32, resumed: bool) -> (IoResult, Wakes) {
        let was_empty = self.buffered == 0;
        let mut done = 0u32;
        match self.kind {
            ChanKind::Pipe => {
                if let Some(last) = self.chunks.back_mut() {
                    if !resumed && !was_empty && last.fill + bytes <= PAGE {
                        last.fill += bytes;
                        last.len += bytes;
                        last.writer_cpu = cpu;
                        done = bytes;
                    }
                }
                while done < bytes && !self.pipe_full() {
                    let n = (bytes - done).min(PAGE);
                    self.chunks.push_back(Chunk {
                        len: n,
                        fill: n,
                        truesize: 0,
                        writer_cpu: cpu,
                    });
                    done += n;
                }
            }
            ChanKind::TcpStream => {
                // tcp_sendmsg -> ip_output -> loopback_xmit -> netif_rx:
                // the segment lands in the receiver's queue at once (the
                // softirq runs on the sender's CPU), bounded by its
                // receive buffer
                while done < bytes && self.buffered + (done as u64) < TCP_RMEM_DEFAULT {
                    let room = (TCP_RMEM_DEFAULT - self.buffered - done as u64) as u32;
                    let n = (bytes - done).min(LOOPBACK_MSS).min(room);
                    self.chunks.push_back(Chunk {
                        len: n,
                        fill: n,
                        truesize: 0,
                        writer_cpu: cpu,
                    });
                    done += n;
                }
            }
            ChanKind::UnixStream => {
                let max_skb = (self.sndbuf / 2 - 64) as u32;
                while done < bytes && self.wmem_alloc < self.sndbuf {
                    let n = (bytes - done).min(max_skb);
                    let ts = unix_skb_truesize(n);
                    self.wmem_alloc += ts as u64;
                    self.chunks.push_back(Chunk {
                        len: n,
                        fill: n,
                        truesize: ts,
                        writer_cpu: cpu,
                    });
                    done += n;
                }
            }
        }
        if done == 0 {
            return (IoResult::WouldBlock, Wakes::default());
        }
        self.buffered += done as u64;
        self.bytes_written += done as u64;
        let wakes = match self.kind {
            // pipe_write: wake readers if the pipe was empty (or polled);
            // a writer that slept here wakes the next writer if there is
            // still room (wake_next_writer).
            ChanKind::Pipe => Wakes::NONE
                .with(Wakes::ONE_READER, was_empty || self.poll_usage)
                .with(Wakes::POLLERS, was_empty || self.poll_usage)
                .with(
                    Wakes::ONE_WRITER,
                    resumed && !self.pipe_full() && !self.writers.is_empty(),
                ),
            // sock_def_readable on every send; unix_stream_data_wait is a
            // non-exclusive wait, so every blocked reader is woken. TCP's
            // tcp_data_ready does the same from the loopback softirq (on
            // the sender's CPU), and sk_wait_data waits non-exclusively.
            ChanKind::UnixStream | ChanKind::TcpStream => Wakes::NONE
                .with(Wakes::ALL_READERS, true)
                .with(Wakes::POLLERS, true),
        };
        (IoResult::Done(done), wakes)
    }

    /// Read up to `bytes`. Calls `pull.pull(writer_cpu, n)` for each chunk of
    /// data consumed so the caller can charge the transfer. Pipes wake one writer
    /// if the pipe was full (pipe_read); sockets free each consumed skb's
    /// truesize and wake all writers once sk_wmem_alloc falls to a quarter of
    /// sk_sndbuf (unix_write_space / unix_writable).
    /// `resumed`: the reader slept in this read and was woken (only such a
    /// reader passes the wake-up on to the next reader, wake_next_reader).
    #[inline(always)]
    pub fn read(&mut self, bytes: u32, resumed: bool, mut pull: impl Pull) -> (IoResult, Wakes) {
        if self.buffered == 0 {
            return (IoResult::WouldBlock, Wakes::default());
        }
        let was_full = self.kind == ChanKind::Pipe && self.pipe_full();
        let tcp_was_short = self.buffered * 2 > TCP_RMEM_DEFAULT;
        let was_writable = self.wmem_alloc * 4 <= self.sndbuf;
        let mut done = 0u32;
        let mut freed = false;
        while done < bytes {
            let Some(c) = self.chunks.front_mut() else {
                break;
            };
            let n = (bytes - done).min(c.len);
            pull.pull(c.writer_cpu, n);
            c.len -= n;
            done += n;
            if c.len == 0 {
                let ts = c.truesize as u64;
                self.chunks.pop_front();
                self.wmem_alloc -= ts;
                freed = true;
            }
        }
        self.buffered -= done as u64;
        self.bytes_read += done as u64;
        // pipe_read: a writer is woken after a read of a full pipe (5.5 to
        // 6.13), or only after one that used up a buffer of it (6.14)
        let wake_writer =
            was_full && (freed || self.wake_writer == crate::ipc_features::PipeWakeWriter::WasFull);
        let wakes = match self.kind {
            ChanKind::Pipe => Wakes::NONE.with(Wakes::ONE_WRITER, wake_writer).with(
                Wakes::ONE_READER,
                resumed && self.buffered > 0 && !self.readers.is_empty(),
            ),
            ChanKind::UnixStream => Wakes::NONE.with(
                Wakes::ALL_WRITERS,
                freed && !was_writable && self.wmem_alloc * 4 <= self.sndbuf,
            ),
            // the window reopens (tcp_cleanup_rbuf -> the sender's
            // sk_write_space) once half the receive buffer is free again
            ChanKind::TcpStream => Wakes::NONE.with(
                Wakes::ALL_WRITERS,
                tcp_was_short && self.buffered * 2 <= TCP_RMEM_DEFAULT,
            ),
        };
        (IoResult::Done(done), wakes)
    }
}

#[cfg(test)]
mod tests {
    use crate::costs::MachineCosts;

    /// A socket's state moves as the measured count less the measured
    /// message's two lines (charged by their size), at least one line.
    #[test]
    fn a_sockets_state_moves_its_measured_lines_less_the_message() {
        use crate::cacheline::{LineKind, LineTable};
        let topo = topology::preset("kunpeng920-node").unwrap();
        let mut m = MachineCosts::for_machine("kunpeng920-node");
        for (kind, object, lines, moved) in [
            (super::ChanKind::TcpStream, LineKind::TcpSock, 9, 7),
            (super::ChanKind::TcpStream, LineKind::TcpSock, 1, 1),
            (super::ChanKind::UnixStream, LineKind::UnixSock, 7, 5),
        ] {
            (m.tcp_lines, m.unix_lines) = (lines, lines);
            let mut t = LineTable::new(topo.nr_cpus());
            let first = super::alloc_channel_lines(&mut t, &m, kind);
            let _ = t.write(first, 0, &topo, &m);
            assert!(t.write(first, 4, &topo, &m) > 0);
            let by: u64 = t.by_kind()[object as usize].iter().sum();
            assert_eq!(by, moved, "{kind:?} with {lines} lines measured");
        }
    }

    #[test]
    fn a_channel_call_after_calls_to_other_channels_pays_the_rotation_table() {
        let mut m = MachineCosts::for_machine("generic");
        m.unix_shared_fd_ns = 20;
        m.unix_depth_ns = [40, 70, 70, 100];
        m.pipe_rotation_ns = [2, 4, 14, 17];
        m.unix_rotation_ns = [10, 20, 30, 40];
        let unix = |reuse| m.channel_call_extra(ChanKind::UnixStream, false, 0, reuse);
        // the same channel again at once: nothing
        assert_eq!(unix(0), 0);
        // linear from (0, 0) to (3, 10), then between the points
        assert_eq!(unix(1), 3);
        assert_eq!(unix(3), 10);
        assert_eq!(unix(9), 15);
        assert_eq!(unix(63), 30);
        assert_eq!(unix(111), 35);
        // the last value beyond the last point
        assert_eq!(unix(159), 40);
        assert_eq!(unix(u64::MAX), 40);
        assert_eq!(m.channel_call_extra(ChanKind::Pipe, false, 0, 63), 14);
        // added to the shared table's and the depth table's parts
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, true, 256_000, 15),
            20 + 40 + 20
        );
        assert_eq!(m.channel_call_extra(ChanKind::TcpStream, true, 0, 159), 0);
    }

    #[test]
    fn a_channel_call_runs_colder_with_a_shared_file_table_and_deep_queues() {
        let mut m = MachineCosts::for_machine("generic");
        m.pipe_shared_fd_ns = 30;
        m.unix_shared_fd_ns = 20;
        m.pipe_depth_ns = [0; 4];
        m.unix_depth_ns = [40, 70, 70, 100];
        m.pipe_rotation_ns = [2, 4, 14, 17];
        m.unix_rotation_ns = [10, 20, 30, 40];
        // nothing extra for a single-threaded process with little queued
        assert_eq!(m.channel_call_extra(ChanKind::UnixStream, false, 0, 0), 0);
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, false, 16_000, 0),
            0
        );
        assert_eq!(m.channel_call_extra(ChanKind::Pipe, true, 0, 0), 30);
        assert_eq!(m.channel_call_extra(ChanKind::UnixStream, true, 0, 0), 20);
        // linear from (16 000, 0) to (256 000, 40), then between the points
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, false, 136_000, 0),
            20
        );
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, false, 256_000, 0),
            40
        );
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, false, 640_000, 0),
            55
        );
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, false, 2_624_000, 0),
            85
        );
        // the last value beyond the last point, the shared-table part added
        assert_eq!(
            m.channel_call_extra(ChanKind::UnixStream, true, u64::MAX, 0),
            120
        );
        assert_eq!(m.channel_call_extra(ChanKind::Pipe, false, u64::MAX, 0), 0);
        // loopback TCP has its own measured costs
        assert_eq!(
            m.channel_call_extra(ChanKind::TcpStream, true, u64::MAX, 0),
            0
        );
        // and --costs off charges nothing
        let z = m.zeroed();
        assert_eq!(
            z.channel_call_extra(ChanKind::UnixStream, true, u64::MAX, u64::MAX),
            0
        );
    }

    use super::*;

    #[test]
    fn pipe_holds_sixteen_pages_of_merged_writes() {
        let mut c = Channel::new(ChanKind::Pipe, 0);
        let mut n = 0;
        while let (IoResult::Done(100), _) = c.write(100, 0, false) {
            n += 1;
        }
        // 40 messages of 100 B fit a page (merge only while it fits).
        assert_eq!(n, 16 * 40);
        assert_eq!(c.buffered, 64_000);
    }

    #[test]
    fn pipe_wakes_reader_only_when_empty_and_writer_when_full() {
        let mut c = Channel::new(ChanKind::Pipe, 0);
        c.wake_writer = crate::ipc_features::PipeWakeWriter::WasFull;
        let (_, w) = c.write(100, 0, false);
        assert!(w.one_reader());
        let (_, w) = c.write(100, 0, false);
        assert!(!w.one_reader());
        while let (IoResult::Done(_), _) = c.write(100, 0, false) {}
        // pipe_read wakes a writer whenever the pipe was full at the start
        // of the read, even if no page was freed (5.5+ was_full rule) ...
        for _ in 0..40 {
            let (r, w) = c.read(100, false, |_, _| {});
            assert_eq!(r, IoResult::Done(100));
            assert!(w.one_writer());
        }
        // ... and the first page is now free, so the pipe is no longer full.
        let (_, w) = c.read(100, false, |_, _| {});
        assert!(!w.one_writer());
    }

    /// From 6.14 (aaec5a95d596) only the read that uses up a buffer of a
    /// full pipe wakes a writer: the 40 messages of 100 B merged into the
    /// first page are read, and only the last of those reads wakes one.
    #[test]
    fn from_6_14_a_pipe_read_wakes_a_writer_only_when_it_frees_a_buffer() {
        let mut c = Channel::new(ChanKind::Pipe, 0);
        assert_eq!(c.wake_writer, crate::ipc_features::PipeWakeWriter::Freed);
        while let (IoResult::Done(_), _) = c.write(100, 0, false) {}
        for i in 0..40 {
            let (r, w) = c.read(100, false, |_, _| {});
            assert_eq!(r, IoResult::Done(100));
            assert_eq!(w.one_writer(), i == 39, "read {i}");
        }
        // no longer full: no wake
        let (_, w) = c.read(100, false, |_, _| {});
        assert!(!w.one_writer());
    }

    #[test]
    fn empty_read_blocks_and_short_read_returns_what_is_there() {
        let mut c = Channel::new(ChanKind::Pipe, 0);
        assert_eq!(c.read(10, false, |_, _| {}).0, IoResult::WouldBlock);
        c.write(30, 3, false);
        let mut pulled = vec![];
        assert_eq!(
            c.read(100, false, |cpu, n| pulled.push((cpu, n))).0,
            IoResult::Done(30)
        );
        assert_eq!(pulled, vec![(3, 30)]);
    }

    #[test]
    fn tcp_loopback_is_bounded_by_the_receive_buffer_and_wakes_every_send() {
        let mut c = Channel::new(ChanKind::TcpStream, 0);
        let (r, w) = c.write(100_000, 2, false);
        // split into loopback segments
        assert_eq!(r, IoResult::Done(100_000));
        assert!(w.all_readers());
        let (r, _) = c.write(100_000, 2, false);
        assert_eq!(r, IoResult::Done(31_072), "up to tcp_rmem[1]");
        assert_eq!(c.write(1, 2, false).0, IoResult::WouldBlock);
        let mut woke = false;
        while let (IoResult::Done(_), w) = c.read(10_000, false, |_, _| {}) {
            woke |= w.all_writers();
        }
        assert!(woke, "a full receiver reopens the window");
        assert_eq!(c.bytes_read, 131_072);
    }

    #[test]
    fn socket_send_buffer_accounting() {
        assert_eq!(unix_skb_truesize(100), 768);
        let mut c = Channel::new(ChanKind::UnixStream, 0);
        let mut n = 0;
        while let (IoResult::Done(_), _) = c.write(100, 0, false) {
            n += 1;
        }
        // sends succeed while wmem_alloc < sndbuf: ceil(212992 / 768) = 278
        assert_eq!(n, 278);
        // writers are woken only when usage drops to a quarter
        let mut woke_at = None;
        for i in 0..n {
            let (_, w) = c.read(100, false, |_, _| {});
            if w.all_writers() {
                woke_at = Some(i + 1);
                break;
            }
        }
        assert_eq!(woke_at, Some(278 - 212_992 / 4 / 768));
    }

    /// What a pipe or socket call reads and writes lies in the record's
    /// first two cache lines (the rest only when a call blocks or wakes).
    #[test]
    fn a_calls_fields_share_two_lines() {
        use std::mem::{offset_of, size_of};
        let ends = [
            offset_of!(Channel, chunks) + size_of::<VecDeque<Chunk>>(),
            offset_of!(Channel, buffered) + 8,
            offset_of!(Channel, last_call) + 8,
            offset_of!(Channel, line) + size_of::<LineId>(),
            offset_of!(Channel, last_cpu) + 4,
            offset_of!(Channel, kind) + size_of::<ChanKind>(),
            offset_of!(Channel, payload) + 1,
            offset_of!(Channel, poll_usage) + 1,
        ];
        for e in ends {
            assert!(e <= 64, "a first-line field ends at byte {e}");
        }
        let ends = [
            offset_of!(Channel, bytes_written) + 8,
            offset_of!(Channel, bytes_read) + 8,
            offset_of!(Channel, wmem_alloc) + 8,
            offset_of!(Channel, sndbuf) + 8,
            offset_of!(Channel, readers) + size_of::<VecDeque<TaskId>>(),
        ];
        for e in ends {
            assert!(e <= 128, "a second-line field ends at byte {e}");
        }
        assert_eq!(std::mem::align_of::<Channel>(), 64);
    }
}
