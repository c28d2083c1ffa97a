/*
 * How much a hand-off of several cache lines costs beyond one: two threads
 * pinned to CPUs A and B take turns, handed over by a spin on a shared
 * counter line; on its turn a thread increments one 64-bit word in each of
 * k separate 64-byte lines (independent read-modify-writes, as a kernel
 * path's stores to the lines of one object are), then passes the turn.
 * Prints ns per turn for k = 0, 1, 2, 4, 8, 16, 32: the turn alone, the
 * first line, and what each further line adds. If the further lines cost
 * far less than the first, the core fetches them in parallel, and a
 * multi-line object costs its first line plus a small increment per line,
 * not its line count times one hand-off (docs/costs.md, "Charged in part").
 *
 * Build and run (no dependency beyond a C compiler):
 *   cc -O2 -pthread scripts/multiline-handoff.c -o /tmp/multiline-handoff
 *   /tmp/multiline-handoff [CPU_A CPU_B [TURNS]]     (default 0 1 2000000)
 * Run it on a quiet machine: a descheduled spinner costs microseconds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXK 32

struct line {
    _Alignas(64) volatile uint64_t v;
};

static struct line data[MAXK];
static _Alignas(64) atomic_ulong turn;
static int k_lines;
static long turns;
static int cpus[2];

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *player(void *arg)
{
    long parity = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[parity], &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(2);
    }
    for (long k = parity; k < turns; k += 2) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != (unsigned long)k)
            ;
        for (int i = 0; i < k_lines; i++)
            data[i].v++;
        atomic_store_explicit(&turn, k + 1, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    cpus[0] = argc > 2 ? atoi(argv[1]) : 0;
    cpus[1] = argc > 2 ? atoi(argv[2]) : 1;
    turns = argc > 3 ? atol(argv[3]) : 2000000;
    static const int ks[] = {0, 1, 2, 4, 8, 16, 32};
    printf("CPUs %d and %d, %ld turns\n", cpus[0], cpus[1], turns);
    for (unsigned j = 0; j < sizeof ks / sizeof ks[0]; j++) {
        pthread_t a, b;
        k_lines = ks[j];
        atomic_store(&turn, 0);
        uint64_t t0 = now_ns();
        pthread_create(&a, NULL, player, (void *)0);
        pthread_create(&b, NULL, player, (void *)1);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        printf("k=%2d lines: %7.1f ns per turn\n", k_lines, (double)(now_ns() - t0) / turns);
    }
    return 0;
}
