/*
 * threads.c — RMA message rate from several threads of one process, group "threads" of
 * nbrma-bench (see bench.h). Needs 2 ranks and MPI_THREAD_MULTIPLE (nbrma-bench passes
 * --thread-multiple to every job of the group): rank 0 runs T threads (1, 2, 4) that
 * put into rank 1's memory; rank 1 waits in MPI_Barrier.
 *
 * Benchmarks, parameter the threads, unit msg/s (messages a second, all threads
 * together; higher is better):
 *   mt_put_flush_own     each thread has its own MPI_Win_allocate window, locked once
 *                        (MPI_Win_lock_all) around the round; an iteration is one
 *                        8-byte MPI_Put into rank 1 and MPI_Win_flush(1).
 *   mt_put_flush_shared  the same on one window for all threads (the main thread locks
 *                        it once; each thread puts into its own 8 bytes and flushes).
 *   mt_lock_all_own      its own window; an iteration is MPI_Win_lock_all, one 8-byte
 *                        put, MPI_Win_unlock_all.
 * Per thread count: 3 rounds of N iterations a thread (N = 2000 with --quick, 20000
 * without; --iterations N: N); the best round's rate (a "#" line gives the other two).
 * The threads start together (a pthread barrier; the clock starts as the main thread
 * lets them go) and the round ends when the last joins. With ranks bound to cores
 * (nbrma-bench's default), rank 0's threads share one core: the rows show what threads
 * cost one another there, not how they scale.
 * Series: the blocking one.
 * Data check, per benchmark: each put carries (thread + 1) << 32 | iteration; after
 * each round rank 1 reads every thread's word and expects its last iteration. One
 * CHECK line per benchmark.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum kind { FLUSH_OWN, FLUSH_SHARED, LOCK_ALL_OWN };

struct benchmark {
    const char *name;
    enum kind kind;
};

static const struct benchmark benchmarks[] = {
    {"mt_put_flush_own", FLUSH_OWN},
    {"mt_put_flush_shared", FLUSH_SHARED},
    {"mt_lock_all_own", LOCK_ALL_OWN},
};
#define NUM_BENCHMARKS ((int)(sizeof benchmarks / sizeof benchmarks[0]))
static const char *names[NUM_BENCHMARKS];

static const int thread_counts[] = {1, 2, 4};
#define NUM_COUNTS ((int)(sizeof thread_counts / sizeof thread_counts[0]))
#define MAX_THREADS 4
#define ROUNDS 3

/* A cache line each: a thread's stores to its origin buffer must not take the line
 * another thread's buffer is in. */
struct worker {
    enum kind kind;
    MPI_Win win;
    int thread;
    int iterations;
    pthread_barrier_t *start;
    uint64_t value; /* the put's origin buffer: valid until the flush or unlock */
} __attribute__((aligned(64)));

static void *work(void *arg) {
    struct worker *w = arg;
    const MPI_Aint displacement = w->thread; /* disp_unit 8 */
    pthread_barrier_wait(w->start);
    if (w->kind == FLUSH_OWN) BENCH_MPI(MPI_Win_lock_all(0, w->win));
    for (int i = 1; i <= w->iterations; i++) {
        w->value = (uint64_t)(w->thread + 1) << 32 | (uint64_t)i;
        if (w->kind == LOCK_ALL_OWN) BENCH_MPI(MPI_Win_lock_all(0, w->win));
        BENCH_MPI(MPI_Put(&w->value, 8, MPI_BYTE, 1, displacement, 8, MPI_BYTE, w->win));
        if (w->kind == LOCK_ALL_OWN)
            BENCH_MPI(MPI_Win_unlock_all(w->win));
        else
            BENCH_MPI(MPI_Win_flush(1, w->win));
    }
    if (w->kind == FLUSH_OWN) BENCH_MPI(MPI_Win_unlock_all(w->win));
    return NULL;
}

/* One round of `threads` threads on rank 0; its seconds (rank 0), and on rank 1 whether
 * every thread's last put arrived. */
static double run_round(const struct benchmark *b, int rank, int threads, int iterations,
                        MPI_Win *wins, uint64_t **bases, int *ok) {
    double seconds = 0;
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        pthread_t ids[MAX_THREADS];
        struct worker workers[MAX_THREADS];
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        for (int t = 0; t < threads; t++) {
            workers[t] = (struct worker){b->kind, b->kind == FLUSH_SHARED ? wins[0] : wins[t],
                                         t, iterations, &start, 0};
            if (pthread_create(&ids[t], NULL, work, &workers[t]) != 0) {
                fprintf(stderr, "threads: pthread_create failed\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        if (b->kind == FLUSH_SHARED) BENCH_MPI(MPI_Win_lock_all(0, wins[0]));
        const double t0 = MPI_Wtime();  /* (before the threads are let go: they may run
                                           to the end before this thread runs again) */
        pthread_barrier_wait(&start);
        for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
        seconds = MPI_Wtime() - t0;
        if (b->kind == FLUSH_SHARED) BENCH_MPI(MPI_Win_unlock_all(wins[0]));
        pthread_barrier_destroy(&start);
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1) {
        for (int t = 0; t < threads; t++) {
            const uint64_t *word = b->kind == FLUSH_SHARED ? bases[0] + t : bases[t] + t;
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0,
                                   b->kind == FLUSH_SHARED ? wins[0] : wins[t]));
            const uint64_t expected = (uint64_t)(t + 1) << 32 | (uint64_t)iterations;
            if (*word != expected) {
                if (*ok)
                    fprintf(stderr, "threads: %s, %d threads: thread %d's word %#llx, expected %#llx\n",
                            b->name, threads, t, (unsigned long long)*word,
                            (unsigned long long)expected);
                *ok = 0;
            }
            BENCH_MPI(MPI_Win_unlock(1, b->kind == FLUSH_SHARED ? wins[0] : wins[t]));
        }
    }
    return seconds;
}

static int run_benchmark(const struct benchmark *b, int rank, const struct bench_options *options) {
    bench_set_step(BENCH_BLOCKING_SERIES, b->name);
    const int iterations =
        options->iterations > 0 ? options->iterations : (options->quick ? 2000 : 20000);
    MPI_Win wins[MAX_THREADS];
    uint64_t *bases[MAX_THREADS];
    for (int t = 0; t < MAX_THREADS; t++) {
        BENCH_MPI(MPI_Win_allocate(8 * MAX_THREADS, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &bases[t],
                                   &wins[t]));
        memset(bases[t], 0, 8 * MAX_THREADS);
    }
    int ok = 1;
    for (int k = 0; k < NUM_COUNTS; k++) {
        const int threads = thread_counts[k];
        double rates[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            const double seconds = run_round(b, rank, threads, iterations, wins, bases, &ok);
            rates[r] = seconds > 0 ? (double)threads * iterations / seconds : 0;
        }
        if (rank == 0) {
            qsort(rates, ROUNDS, sizeof rates[0], bench_compare_doubles);
            char parameter[16];
            snprintf(parameter, sizeof parameter, "%d", threads);
            printf("# threads: %s %d threads: rounds %.4g %.4g %.4g msg/s\n", b->name, threads,
                   rates[0], rates[1], rates[2]);
            bench_result(BENCH_BLOCKING_SERIES, b->name, parameter, rates[ROUNDS - 1], "msg/s");
        }
    }
    for (int t = 0; t < MAX_THREADS; t++) BENCH_MPI(MPI_Win_free(&wins[t]));
    int all_ok = 0;
    BENCH_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (rank == 0) bench_check(BENCH_BLOCKING_SERIES, b->name, all_ok);
    return all_ok ? 0 : 3;
}

void bench_list_threads(void) {
    char parameter[16];
    for (int b = 0; b < NUM_BENCHMARKS; b++)
        for (int k = 0; k < NUM_COUNTS; k++) {
            snprintf(parameter, sizeof parameter, "%d", thread_counts[k]);
            bench_row(benchmarks[b].name, parameter, "msg/s");
        }
}

int bench_threads(const struct bench_options *options) {
    for (int b = 0; b < NUM_BENCHMARKS; b++) names[b] = benchmarks[b].name;
    int rank, size;
    bench_start_group("threads", options, names, NUM_BENCHMARKS, &rank, &size);
    int level = MPI_THREAD_SINGLE;
    BENCH_MPI(MPI_Query_thread(&level));
    if (level != MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "threads: needs MPI_THREAD_MULTIPLE (--thread-multiple)\n");
        return 2;
    }
    if (rank == 0) {
        printf("# threads: %d ranks, rank 0 runs 1 to %d threads putting 8 bytes into rank 1\n",
               size, MAX_THREADS);
        fflush(stdout);
    }
    int failed = 0;
    for (int b = 0; b < NUM_BENCHMARKS; b++)
        if (bench_selected(options, benchmarks[b].name))
            failed |= run_benchmark(&benchmarks[b], rank, options);
    return failed;
}
