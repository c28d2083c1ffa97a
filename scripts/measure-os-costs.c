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
 * Build: gcc -O2 -pthread scripts/measure-os-costs.c -o /tmp/oscost && /tmp/oscost
 * Each figure is the median of 7 batches. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
    return 0;
}
