//! What a pipe or socket call costs beyond its hot figure
//! (`MachineCosts::channel_call_extra`), checked through the engine: a
//! thread whose process has other threads pays the shared file table's
//! reference on every call, calls made while much data is queued in the
//! run's channels pay the depth table at the bytes queued per CPU, and a
//! call after calls to other channels on its CPU pays the rotation table at
//! their number.

use sim::channel::ChanKind;
use sim::costs::MachineCosts;
use sim::engine::{Engine, EngineConfig};
use sim::placement::scx::ScxDefault;
use sim::task::{ChanId, Op, TaskSpec};
use topology::{CpuMask, DomainOptions, SchedDomains};

const CALL: u64 = 100;

fn costs() -> MachineCosts {
    let mut c = MachineCosts::for_machine("kunpeng920-node").zeroed();
    c.pipe_syscall_ns = CALL;
    c.unix_syscall_ns = CALL;
    c.pipe_shared_fd_ns = 30;
    c.unix_shared_fd_ns = 20;
    c.unix_depth_ns = [1000, 2000, 3000, 4000];
    c
}

fn task(name: &str, program: Vec<Op>, mm: u32) -> TaskSpec {
    TaskSpec {
        name: name.into(),
        program: program.into(),
        mm,
        parent: None,
        spawned: false,
        start_cpu: Some(0),
        nice: 0,
        footprint_lines: 0,
    }
}

/// Marked time of `program` (between marks 0 and 1) on CPU 0 of a machine
/// whose run may use `cpus`, with `siblings` idle threads in its mm.
fn marked_ns(
    kind: ChanKind,
    channels: usize,
    body: impl Fn(&[ChanId]) -> Vec<Op>,
    siblings: usize,
    cpus: &[usize],
) -> u64 {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let cfg = EngineConfig::checked(CpuMask::from_cpus(cpus.iter().copied()));
    let mut e: Engine = Engine::new(&topo, &sd, costs(), cfg, Box::new(ScxDefault));
    let chans: Vec<ChanId> = (0..channels).map(|_| e.add_channel(kind, true)).collect();
    let mut p = vec![Op::Mark(0)];
    p.extend(body(&chans));
    p.extend([Op::Mark(1), Op::Exit]);
    e.add_task(task("worker", p, 0));
    for i in 0..siblings {
        e.add_task(task(&format!("sibling{i}"), vec![Op::Exit], 0));
    }
    e.run().unwrap();
    e.mark(1).unwrap() - e.mark(0).unwrap()
}

fn write(chan: ChanId) -> Op {
    Op::Write { chan, bytes: 100 }
}

fn read(chan: ChanId) -> Op {
    Op::Read { chan, bytes: 100 }
}

#[test]
fn threads_pay_the_shared_file_table_on_every_call() {
    let pairs = |c: &[ChanId]| vec![Op::Loop(50), write(c[0]), read(c[0]), Op::EndLoop];
    for (kind, fd) in [(ChanKind::Pipe, 30), (ChanKind::UnixStream, 20)] {
        let alone = marked_ns(kind, 1, pairs, 0, &[0]);
        let threaded = marked_ns(kind, 1, pairs, 1, &[0]);
        assert_eq!(
            alone,
            100 * CALL,
            "{kind:?}: nothing queued deep, no sibling"
        );
        assert_eq!(threaded - alone, 100 * fd, "{kind:?}: 100 calls");
    }
}

/// The depth table in the test profile, written out: 0 up to 16,000 B,
/// then straight lines through (256 000, 1000), (1 024 000, 2000), ...
fn depth_extra(x: u64) -> u64 {
    let pts = [
        (16_000u64, 0u64),
        (256_000, 1000),
        (1_024_000, 2000),
        (2_048_000, 3000),
        (3_200_000, 4000),
    ];
    if x <= pts[0].0 {
        return 0;
    }
    for w in pts.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x <= x1 {
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        }
    }
    4000
}

#[test]
fn calls_with_much_queued_pay_the_depth_table_per_cpu_of_the_run() {
    // 20 sockets, 150 messages of 100 B written to each in turn (300,000 B
    // queued at the end, under each socket's sndbuf), then all read back
    let (socks, k) = (20usize, 150usize);
    let body = |c: &[ChanId]| {
        let mut p = Vec::new();
        for &ch in c {
            p.extend(std::iter::repeat_n(write(ch), k));
        }
        for &ch in c {
            p.extend(std::iter::repeat_n(read(ch), k));
        }
        p
    };
    for cpus in [vec![0], vec![0, 1]] {
        let n = cpus.len() as u64;
        let total = (socks * k) as u64;
        // each call is costed at the bytes queued when it starts
        let writes: u64 = (0..total).map(|i| depth_extra(i * 100 / n)).sum();
        let reads: u64 = (0..total).map(|j| depth_extra((total - j) * 100 / n)).sum();
        let want = 2 * total * CALL + writes + reads;
        assert_eq!(
            marked_ns(ChanKind::UnixStream, socks, body, 0, &cpus),
            want,
            "CPUs {cpus:?}"
        );
    }
}

#[test]
fn a_call_after_calls_to_other_channels_pays_the_rotation_table() {
    // the calibration's pattern: one message written to each of n pipes in
    // turn, then each read back, for three rounds; every call but each
    // channel's first finds n - 1 calls to the others since its last one
    // (100 pipes: 99, between the points 63 and 159, 300 + 100 * 36 / 96)
    let rounds = 3u64;
    for (n, rot) in [(1usize, 0u64), (4, 100), (16, 200), (64, 300), (100, 337)] {
        let body = |c: &[ChanId]| {
            let mut p = Vec::new();
            for _ in 0..rounds {
                p.extend(c.iter().map(|&ch| write(ch)));
                p.extend(c.iter().map(|&ch| read(ch)));
            }
            p
        };
        let topo = topology::preset("kunpeng920-node").unwrap();
        let sd = SchedDomains::build(&topo, &DomainOptions::default());
        let mut c = costs();
        c.pipe_rotation_ns = [100, 200, 300, 400];
        let cfg = EngineConfig::checked(CpuMask::from_cpus([0]));
        let mut e: Engine = Engine::new(&topo, &sd, c, cfg, Box::new(ScxDefault));
        let chans: Vec<ChanId> = (0..n)
            .map(|_| e.add_channel(ChanKind::Pipe, true))
            .collect();
        let mut p = vec![Op::Mark(0)];
        p.extend(body(&chans));
        p.extend([Op::Mark(1), Op::Exit]);
        e.add_task(task("worker", p, 0));
        e.run().unwrap();
        let calls = 2 * rounds * n as u64;
        let want = calls * CALL + (calls - n as u64) * rot;
        assert_eq!(e.mark(1).unwrap() - e.mark(0).unwrap(), want, "{n} pipes");
    }
}
