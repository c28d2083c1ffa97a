/* Measures the OS costs schedlab's machine profiles use (see crates/sim/src/costs.rs):
 *   syscall   : getppid() round trip
 *   pipe100   : write(100 B) + read(100 B) on a pipe in one thread (2 syscalls + 2 copies)
 *   unix100   : write(100 B) + read(100 B) on a unix stream socketpair in one thread
 *   *_write100 / *_read100 : the same calls timed apart (batches of 200 writes, then 200 reads)
 *   pipe4000  : the same with 4000 B (per-byte copy cost = (pipe4000 - pipe100) / (2 * 3900))
 *   rtt_thr   : pipe ping-pong between two threads pinned to CPU 0 (2 switches + 4 syscalls)
 *   rtt_proc  : the same between two processes pinned to CPU 0
 *   fork      : fork + child _exit + waitpid
 *   thread    : pthread_create + join
 *   fork_run  : fork until the child runs (it writes a byte the parent reads);
 *   fork_exit : from then until the child's _exit is reaped by waitpid
 *   thr_run / thr_exit : the same split for pthread_create / pthread_join
 * Appended later (each with its method in a comment where it is measured):
 *   clock_gettime_realtime / gettimeofday : one vDSO clock read
 *   futex_wake_nowaiter / futex_wait_eagain : the two futex calls where they return at once
 *   futex_rtt_* / futex_wakeup_* : schbench's fpost/fwait ping-pong, one CPU and two CPUs
 *   tcp* : loopback TCP write/read at 100, 4096, 65536 B, and a 100 B ping-pong
 *   cas : an uncontended __sync_bool_compare_and_swap on a 64-bit word
 *   matmul* : one schbench do_some_math (n = 104 for -F 256, n = 52 for -F 64)
 * Build: gcc -O2 -pthread scripts/measure-os-costs.c -o /tmp/oscost && /tmp/oscost
 * (-O2 is also what schbench's own Makefile uses, so the matrix loop compiles alike.)
 * Each figure is the median of 7 batches. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
static double med(double *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }
static void pin0(void) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); sched_setaffinity(0, sizeof s, &s); }

static void *noop(void *a) { return a; }
static int rp[2];
static void *signal_run(void *a) { char c = 'r'; if (write(rp[1], &c, 1) != 1) return 0; return a; }
static int p1[2], p2[2]; static long iters;
static void *echo(void *a) { char c; pin0(); for (long i = 0; i < iters; i++) { if (read(p1[0], &c, 1) != 1 || write(p2[1], &c, 1) != 1) break; } return a; }

/* ---- helpers for the figures appended below ---- */
static int pin_cpu(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); return sched_setaffinity(0, sizeof s, &s); }

/* schbench's futex words: a binary semaphore, BLOCKED = no post pending, RUNNING = posted.
 * fpost and fwait below behave as schbench's functions of the same names. */
#define FUTEX_BLOCKED 0
#define FUTEX_RUNNING 1
static long futex(int *w, int op, int val) { return syscall(SYS_futex, w, op, val, NULL, NULL, 0); }
/* One side of the ping-pong: waits on its own word and posts the other's, counting
 * how many FUTEX_WAIT calls really slept (returned 0 after a wake-up). */
struct futex_side { int *mine, *other; int cpu, starts; long rounds, slept; };
static void fpost(int *w) { /* schbench's fpost: wake only if the word was BLOCKED */
    if (__sync_bool_compare_and_swap(w, FUTEX_BLOCKED, FUTEX_RUNNING) && futex(w, FUTEX_WAKE_PRIVATE, 1) < 0) { perror("FUTEX_WAKE"); exit(1); }
}
static void fwait(int *w, long *slept) { /* schbench's fwait: take the post, else sleep while BLOCKED */
    for (;;) {
        if (__sync_bool_compare_and_swap(w, FUTEX_RUNNING, FUTEX_BLOCKED)) return;
        long s = futex(w, FUTEX_WAIT_PRIVATE, FUTEX_BLOCKED);
        if (s == -1 && errno != EAGAIN) { perror("FUTEX_WAIT"); exit(1); }
        if (s == 0) (*slept)++;
    }
}
static void *futex_side_run(void *a) {
    struct futex_side *p = a;
    if (pin_cpu(p->cpu)) { perror("pin"); exit(1); }
    for (long i = 0; i < p->rounds; i++) {
        if (p->starts) { fpost(p->other); fwait(p->mine, &p->slept); } else { fwait(p->mine, &p->slept); fpost(p->other); }
    }
    return a;
}
static struct { int w __attribute__((aligned(64))); } fword[2]; /* one cache line each, as schbench's per-thread words */

/* A connected loopback TCP pair (127.0.0.1, TCP_NODELAY on both ends) made in this process. */
static int tcp_pair(int fd[2]) {
    struct sockaddr_in a; socklen_t len = sizeof a; int one = 1;
    memset(&a, 0, sizeof a); a.sin_family = AF_INET; a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); a.sin_port = 0;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &len)) return -1;
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof a)) return -1;
    fd[1] = accept(l, 0, 0); close(l);
    if (fd[1] < 0) return -1;
    if (setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) || setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)) return -1;
    return 0;
}
/* TCP may hand a message over in pieces: read until all len bytes are in, counting read() calls. */
static long tcp_read_calls;
static int readn(int fd, char *b, long len) {
    for (long got = 0; got < len;) { ssize_t k = read(fd, b + got, len - got); if (k <= 0) return -1; got += k; tcp_read_calls++; }
    return 0;
}
static char big[65536];

/* The multiplication schbench's workers do (its do_some_math): A, B, C are n x n unsigned
 * longs laid out one after another in one block; i-j-k loops, C[i][j] cleared, then
 * C[i][j] += A[i][k] * B[k][j] for every k, written to memory each time. gcc 12 -O2 makes the
 * same inner loop of this as of schbench.c built by schbench's Makefile (a load, an imul with
 * a memory operand, an add into a register and a store to C per k). noinline so that
 * back-to-back calls stay separate multiplications. */
static __attribute__((noinline)) void matmul(unsigned long *mem, unsigned long n) {
    unsigned long *a = mem, *b = mem + n * n, *c = mem + 2 * n * n;
    for (unsigned long i = 0; i < n; i++)
        for (unsigned long j = 0; j < n; j++) {
            c[i * n + j] = 0;
            for (unsigned long k = 0; k < n; k++) c[i * n + j] += a[i * n + k] * b[k * n + j];
        }
}
static unsigned long cas_word __attribute__((aligned(64)));

int main(void) {
    enum { B = 7 }; double r[B]; char buf[4096]; memset(buf, '-', sizeof buf);
    long n = 200000;
    for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < n; i++) getppid(); r[b] = (now() - t) / n; }
    printf("syscall_ns %.1f\n", med(r, B));
    int p[2]; if (pipe(p)) return 1;
    for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < n; i++) { if (write(p[1], buf, 100) != 100 || read(p[0], buf, 100) != 100) return 1; } r[b] = (now() - t) / n; }
    printf("pipe100_ns %.1f\n", med(r, B));
    for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < n; i++) { if (write(p[1], buf, 4000) != 4000 || read(p[0], buf, 4000) != 4000) return 1; } r[b] = (now() - t) / n; }
    printf("pipe4000_ns %.1f\n", med(r, B));
    int sv[2]; if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 1;
    for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < n; i++) { if (write(sv[0], buf, 100) != 100 || read(sv[1], buf, 100) != 100) return 1; } r[b] = (now() - t) / n; }
    printf("unix100_ns %.1f\n", med(r, B));
    {
        double rw[B], rr[B];
        int fds[2][2] = {{sv[0], sv[1]}, {p[1], p[0]}};
        const char *names[2] = {"unix", "pipe"};
        for (int k = 0; k < 2; k++) {
            for (int b = 0; b < B; b++) {
                double tw = 0, tr = 0;
                for (long i = 0; i < n / 200; i++) {
                    double t0 = now();
                    for (int j = 0; j < 200; j++) if (write(fds[k][0], buf, 100) != 100) return 1;
                    double t1 = now();
                    for (int j = 0; j < 200; j++) if (read(fds[k][1], buf, 100) != 100) return 1;
                    double t2 = now();
                    tw += t1 - t0; tr += t2 - t1;
                }
                rw[b] = tw / (n / 200 * 200); rr[b] = tr / (n / 200 * 200);
            }
            printf("%s_write100_ns %.1f\n%s_read100_ns %.1f\n", names[k], med(rw, B), names[k], med(rr, B));
        }
    }
    pin0(); iters = 50000;
    for (int b = 0; b < B; b++) {
        if (pipe(p1) || pipe(p2)) return 1; pthread_t th; pthread_create(&th, 0, echo, 0); char c = 'x';
        double t = now(); for (long i = 0; i < iters; i++) { if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1) return 1; } r[b] = (now() - t) / iters;
        pthread_join(th, 0); close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
    }
    printf("rtt_thread_same_cpu_ns %.1f\n", med(r, B));
    for (int b = 0; b < B; b++) {
        if (pipe(p1) || pipe(p2)) return 1; pid_t pid = fork(); if (pid == 0) { echo(0); _exit(0); } char c = 'x';
        double t = now(); for (long i = 0; i < iters; i++) { if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1) return 1; } r[b] = (now() - t) / iters;
        waitpid(pid, 0, 0); close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
    }
    printf("rtt_process_same_cpu_ns %.1f\n", med(r, B));
    long nf = 2000;
    for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < nf; i++) { pid_t pid = fork(); if (pid == 0) _exit(0); waitpid(pid, 0, 0); } r[b] = (now() - t) / nf; }
    printf("fork_exit_wait_ns %.1f\n", med(r, B));
    for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < nf; i++) { pthread_t th; pthread_create(&th, 0, noop, 0); pthread_join(th, 0); } r[b] = (now() - t) / nf; }
    printf("thread_create_join_ns %.1f\n", med(r, B));
    double r2[B];
    if (pipe(rp)) return 1;
    for (int b = 0; b < B; b++) {
        double run = 0, ex = 0;
        for (long i = 0; i < nf; i++) {
            char c; double t0 = now(); pid_t pid = fork();
            if (pid == 0) { signal_run(0); _exit(0); }
            if (read(rp[0], &c, 1) != 1) return 1;
            double t1 = now(); waitpid(pid, 0, 0); double t2 = now();
            run += t1 - t0; ex += t2 - t1;
        }
        r[b] = run / nf; r2[b] = ex / nf;
    }
    printf("fork_run_ns %.1f\nfork_exit_ns %.1f\n", med(r, B), med(r2, B));
    for (int b = 0; b < B; b++) {
        double run = 0, ex = 0;
        for (long i = 0; i < nf; i++) {
            char c; pthread_t th; double t0 = now();
            pthread_create(&th, 0, signal_run, 0);
            if (read(rp[0], &c, 1) != 1) return 1;
            double t1 = now(); pthread_join(th, 0); double t2 = now();
            run += t1 - t0; ex += t2 - t1;
        }
        r[b] = run / nf; r2[b] = ex / nf;
    }
    printf("thread_run_ns %.1f\nthread_exit_ns %.1f\n", med(r, B), med(r2, B));

    /* ---- Appended figures. The lines above are unchanged. The main thread is still pinned
     * to CPU 0 (pin0 above); a test that needs a second CPU puts its partner on CPU 1, and
     * prints nan if this process may not run on CPU 1. ---- */
    int cpu1 = pin_cpu(1) == 0; pin0();

    /* Clock reads: clock_gettime(CLOCK_REALTIME) and gettimeofday called back to back, nc calls
     * per batch, batch time / nc. With a clocksource the vDSO can read (tsc, kvm-clock) neither
     * enters the kernel; with one it cannot (e.g. hpet) glibc falls back to the syscall. */
    {
        struct timespec ts; struct timeval tv; long nc = 2000000;
        for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < nc; i++) clock_gettime(CLOCK_REALTIME, &ts); r[b] = (now() - t) / nc; }
        printf("clock_gettime_realtime_ns %.1f\n", med(r, B));
        for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < nc; i++) gettimeofday(&tv, 0); r[b] = (now() - t) / nc; }
        printf("gettimeofday_ns %.1f\n", med(r, B));
    }

    /* Futex calls that return at once, n back to back on a private word nobody waits on,
     * through glibc's syscall() as schbench calls them. FUTEX_WAKE_PRIVATE (wake 1) finds no
     * waiter and returns 0: the cost fpost pays on top of its CAS when nobody slept.
     * FUTEX_WAIT_PRIVATE expecting 0 on a word holding 1: the kernel hashes the word, takes the
     * bucket lock, reads the word, sees the mismatch and returns EAGAIN without sleeping; this is
     * the wait's path up to the point where it would queue itself and sleep. */
    {
        int w = 1;
        if (futex(&w, FUTEX_WAKE_PRIVATE, 1) != 0 || futex(&w, FUTEX_WAIT_PRIVATE, 0) != -1 || errno != EAGAIN) return 1;
        for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < n; i++) futex(&w, FUTEX_WAKE_PRIVATE, 1); r[b] = (now() - t) / n; }
        printf("futex_wake_nowaiter_ns %.1f\n", med(r, B));
        for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < n; i++) futex(&w, FUTEX_WAIT_PRIVATE, 0); r[b] = (now() - t) / n; }
        printf("futex_wait_eagain_ns %.1f\n", med(r, B));
    }

    /* Futex ping-pong with schbench's fpost/fwait (as above): two threads of this process,
     * each with its own word (BLOCKED at the start) in its own cache line. The main thread posts
     * the partner's word and waits on its own; the partner waits on its own and posts back. A
     * round trip is two fposts (CAS BLOCKED->RUNNING, then FUTEX_WAKE_PRIVATE) and two fwaits,
     * each normally asleep in FUTEX_WAIT_PRIVATE until the other side's wake. Main thread on
     * CPU 0; partner on CPU 0 (same_cpu: every wake-up is followed by a switch to the woken
     * thread) or on CPU 1 (two_cpu: the woken thread's CPU has gone idle, so the wake-up needs
     * an IPI, and in a VM the halted vCPU must be resumed). A fresh partner per batch; one
     * untimed round (partner start-up), then `it` timed rounds (50000 on one CPU, 10000 on
     * two): futex_rtt = time / it. The per-wake cost futex_wakeup = rtt / 2: from one side's
     * fpost until the other side is back from fwait and has posted in turn. futex_sleeps_per_rtt = FUTEX_WAITs that slept and were
     * woken, per round trip, both threads (2.00 when every wait slept; less when a post landed
     * before the waiter was asleep, so that wait returned at once). */
    {
        const char *names[2] = {"same_cpu", "two_cpu"};
        for (int c = 0; c < 2; c++) {
            if (c == 1 && !cpu1) { printf("futex_rtt_two_cpu_ns nan\nfutex_wakeup_two_cpu_ns nan\nfutex_sleeps_per_rtt_two_cpu nan\n"); continue; }
            double sl[B]; long it = c ? 10000 : 50000; /* fewer across CPUs: each round there takes far longer */
            for (int b = 0; b < B; b++) {
                fword[0].w = fword[1].w = FUTEX_BLOCKED;
                struct futex_side me = {&fword[0].w, &fword[1].w, 0, 1, it + 1, 0};
                struct futex_side peer = {&fword[1].w, &fword[0].w, c, 0, it + 1, 0};
                pthread_t th; if (pthread_create(&th, 0, futex_side_run, &peer)) return 1;
                fpost(me.other); fwait(me.mine, &me.slept);
                double t = now();
                for (long i = 0; i < it; i++) { fpost(me.other); fwait(me.mine, &me.slept); }
                r[b] = (now() - t) / it;
                pthread_join(th, 0);
                sl[b] = (double)(me.slept + peer.slept) / (it + 1);
            }
            double m = med(r, B);
            printf("futex_rtt_%s_ns %.1f\nfutex_wakeup_%s_ns %.1f\nfutex_sleeps_per_rtt_%s %.2f\n", names[c], m, names[c], m / 2, names[c], med(sl, B));
        }
    }

    /* Loopback TCP: one connected pair in this process (tcp_pair above: 127.0.0.1, TCP_NODELAY).
     * For each message size:
     *   tcp<size>_ns: write(size) on one end, then read the whole message from the other end,
     *     same thread, pairs back to back (as pipe100_ns and unix100_ns);
     *   tcp_write<size>_ns, tcp_read<size>_ns: the same calls timed apart, as for pipes and unix
     *     sockets: k writes, then k reads, the clock read around each group; k = 200 at 100 B (as
     *     there), 4 at 4096 B, 1 at 65536 B, so at most about 20 KB is ever queued: well inside
     *     the 128 KB default receive buffer, so no write blocks this single thread.
     * A message can reach the reader in more than one piece, so a read is readn() (read until
     * the whole message is in); tcp_read<size>_calls_per_msg is the number of read() calls that
     * took (1.000 when each message came out in one call).
     * Over loopback the writer's write() normally also runs the receive side (the loopback
     * device's softirq, TCP input, queueing on the other socket) before it returns, so the
     * write carries most of the stack and the read little more than the copy out.
     * Per-call and per-byte split: a straight line through the 100 B and 65536 B figures,
     * per_byte = (t65536 - t100) / 65436, per_call = t100 - 100 * per_byte, for writes and
     * reads separately; the 4096 B figure shows how straight the line is. */
    {
        int sizes[3] = {100, 4096, 65536}; long cnt[3] = {50000, 20000, 4000}; double wm[3], rm[3];
        for (int z = 0; z < 3; z++) {
            int sz = sizes[z], s2[2]; long k = 20000 / sz; if (k > 200) k = 200; if (k < 1) k = 1;
            long nb = cnt[z] / k;
            if (tcp_pair(s2)) { perror("tcp_pair"); return 1; }
            for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < cnt[z]; i++) { if (write(s2[0], big, sz) != sz || readn(s2[1], big, sz)) return 1; } r[b] = (now() - t) / cnt[z]; }
            printf("tcp%d_ns %.1f\n", sz, med(r, B));
            double rw[B], rr[B]; tcp_read_calls = 0;
            for (int b = 0; b < B; b++) {
                double tw = 0, tr = 0;
                for (long i = 0; i < nb; i++) {
                    double t0 = now();
                    for (long j = 0; j < k; j++) if (write(s2[0], big, sz) != sz) return 1;
                    double t1 = now();
                    for (long j = 0; j < k; j++) if (readn(s2[1], big, sz)) return 1;
                    double t2 = now();
                    tw += t1 - t0; tr += t2 - t1;
                }
                rw[b] = tw / (nb * k); rr[b] = tr / (nb * k);
            }
            wm[z] = med(rw, B); rm[z] = med(rr, B);
            printf("tcp_write%d_ns %.1f\ntcp_read%d_ns %.1f\ntcp_read%d_calls_per_msg %.3f\n", sz, wm[z], sz, rm[z], sz, (double)tcp_read_calls / (B * nb * k));
            close(s2[0]); close(s2[1]);
        }
        double wb = (wm[2] - wm[0]) / (65536 - 100), rb = (rm[2] - rm[0]) / (65536 - 100);
        printf("tcp_write_per_byte_ns %.4f\ntcp_write_per_call_ns %.1f\ntcp_read_per_byte_ns %.4f\ntcp_read_per_call_ns %.1f\n", wb, wm[0] - 100 * wb, rb, rm[0] - 100 * rb);
    }

    /* Loopback TCP ping-pong between two processes, 100 B messages: per batch a fresh pair, a
     * forked child keeps one end and echoes (readn 100 B, write it back), the parent writes
     * 100 B and readn()s the echo; one untimed round, then `it` timed rounds (20000 on one
     * CPU, 10000 on two), ns per round trip. Parent on CPU 0; child on CPU 0 (same_cpu: each
     * message hands the CPU to the other process, an address-space change included, as in
     * rtt_process_same_cpu_ns but with TCP calls) or on CPU 1 (two_cpu: each message wakes a
     * CPU that went idle). */
    {
        const char *names[2] = {"same_cpu", "two_cpu"};
        for (int c = 0; c < 2; c++) {
            if (c == 1 && !cpu1) { printf("tcp_rtt_process_two_cpu_ns nan\n"); continue; }
            long it = c ? 10000 : 20000;
            for (int b = 0; b < B; b++) {
                int s2[2]; char m[100]; memset(m, 'm', sizeof m);
                if (tcp_pair(s2)) { perror("tcp_pair"); return 1; }
                pid_t pid = fork();
                if (pid == 0) {
                    close(s2[0]); if (pin_cpu(c)) _exit(2);
                    for (long i = 0; i < it + 1; i++) if (readn(s2[1], m, 100) || write(s2[1], m, 100) != 100) _exit(1);
                    _exit(0);
                }
                close(s2[1]);
                if (write(s2[0], m, 100) != 100 || readn(s2[0], m, 100)) return 1;
                double t = now();
                for (long i = 0; i < it; i++) if (write(s2[0], m, 100) != 100 || readn(s2[0], m, 100)) return 1;
                r[b] = (now() - t) / it;
                int st; waitpid(pid, &st, 0); close(s2[0]);
                if (!WIFEXITED(st) || WEXITSTATUS(st)) return 1;
            }
            printf("tcp_rtt_process_%s_ns %.1f\n", names[c], med(r, B));
        }
    }

    /* Uncontended compare-and-swap: __sync_bool_compare_and_swap (a locked cmpxchg on x86) on
     * a 64-bit word in its own cache line that only this thread touches. Each CAS expects the
     * value the previous one stored, so every one succeeds; nc back to back per batch, batch
     * time / nc. Locked operations do not overlap one another, so this is about one CAS's
     * latency on a line already in this core's cache (the loop's own increment and branch
     * included). */
    {
        long nc = 10000000;
        for (int b = 0; b < B; b++) {
            cas_word = 0; double t = now();
            for (unsigned long i = 0; i < (unsigned long)nc; i++) if (!__sync_bool_compare_and_swap(&cas_word, i, i + 1)) return 1;
            r[b] = (now() - t) / nc;
        }
        printf("cas_ns %.2f\n", med(r, B));
    }

    /* schbench's matrix multiply (matmul above, i-j-k loops over unsigned long) for
     * n = 104, its default footprint -F 256 (n = sqrt(256 * 1024 / 3 / 8) in schbench's
     * integer arithmetic), and n = 52 (-F 64). Memory as schbench has it: its 3 n^2 words are
     * a malloc() block the process never touched (a fresh mmap at 256 KB, fresh heap at 64 KB),
     * here mapped with mmap directly; schbench never writes A and B, so reading them maps the
     * kernel's shared zero page and only C gets pages of its own: matmul<n>_ns. The same with
     * A and B written first, so all 3 n^2 * 8 bytes are really distinct memory:
     * matmul<n>_filled_ns. One untimed multiplication first (page faults), then reps
     * multiplications back to back per batch (about 60 ms at 1 ns per multiply-add); ns per
     * multiplication and ns per inner multiply-add (= time / n^3). Compiled with the Build
     * line's -O2 (schbench's Makefile uses -O2 too). */
    {
        unsigned long fps[2] = {256, 64};
        for (int f = 0; f < 2; f++) {
            unsigned long v = fps[f] * 1024 / 3 / sizeof(unsigned long), ms = 0;
            while ((ms + 1) * (ms + 1) <= v) ms++;
            size_t bytes = 3 * sizeof(unsigned long) * ms * ms; double n3 = (double)ms * ms * ms;
            long reps = (long)(60e6 / n3) + 1;
            for (int filled = 0; filled < 2; filled++) {
                unsigned long *data = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (data == MAP_FAILED) return 1;
                if (filled) for (unsigned long i = 0; i < 2 * ms * ms; i++) data[i] = i + 1;
                matmul(data, ms);
                for (int b = 0; b < B; b++) { double t = now(); for (long i = 0; i < reps; i++) matmul(data, ms); r[b] = (now() - t) / reps; }
                double m = med(r, B); const char *tag = filled ? "_filled" : "";
                printf("matmul%lu%s_ns %.0f\nmatmul%lu%s_per_madd_ns %.3f\n", ms, tag, m, ms, tag, m / n3);
                munmap(data, bytes);
            }
        }
    }
    return 0;
}
