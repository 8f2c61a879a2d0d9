/*
 * collectives.c — MPI's blocking collectives with and without nbrma in the process,
 * group "collectives" of nbrma-bench (see bench.h). Needs 2 ranks (any further rank
 * joins every call).
 *
 * nbrma interposes MPICH's blocking collectives (src/progress/interposed_waits.cpp: MPICH's
 * own call, with an assist thread serving nbrma while it has work pending); this group
 * measures what that costs against MPICH alone. Rows, usec per call:
 *   allreduce  MPI_Allreduce, MPI_SUM over MPI_DOUBLE, 8 B and 65536 B (1 and 8192 doubles)
 *   bcast      MPI_Bcast of MPI_DOUBLE from rank 0, 8 B and 65536 B
 *   barrier    MPI_Barrier (parameter 0)
 * Every rank runs 5 batches of N calls back to back, timed by rank 0, after 200 untimed
 * warm-up calls whose pace sets N (rank 0 decides and broadcasts it, outside the timed
 * loop) to fit 0.05 s per batch with --quick (0.4 s without), at least 1, at most
 * 200000; --iterations N: exactly N per batch. A barrier (untimed) starts each batch.
 * Rank 0 reads the clock every 16 calls; the figure is the median over all batches'
 * blocks of 16 of a block's mean, as in the latency group: with the two ranks in lock
 * step, a block in which the scheduler took a rank's core away (a shared 2-core machine)
 * costs a time slice, and a batch mean would count such blocks; the median skips them.
 * (With N < 16, the median of the batch means.) The "#" line also gives the batch means'
 * median, minimum and maximum.
 * Series: "mpich" on bench_mpich; on bench_nbrma "nbrma" (no window exists) and
 * "nbrma-idle-window" (one MPI_Win_allocate window of 4 KiB alive and idle, no epoch,
 * during the calls: allocated before each of the series' batches, warm-up included, and
 * freed after it). The two series alternate batch by batch within a row (their warm-ups
 * first), so a change of load on a shared machine hits both alike. The environment
 * variable NBRMA_BENCH_SERIES_SUFFIX is appended to the series names, and with it set
 * only the window series runs (without a window the transport plays no part):
 * nbrma-bench's "nbrma-ucx" job sets "-ucx" with NBRMA_TRANSPORT=ucx
 * NBRMA_UCX_TLS=tcp,self (series "nbrma-idle-window-ucx").
 * Data checks: every call changes the first element of the data (allreduce: each rank's
 * contribution, bcast: the root's) and every rank checks it after the call; before a
 * batch the others are set to a pattern of the batch (the receiving buffers to -1), and
 * after it every rank checks the whole result: the exact sum (small integers in doubles)
 * or the root's data. One CHECK line per series for allreduce and for bcast.
 * bench_nbrma prints nbrma's counters assisted_calls and assist_sweeps at the end ("#"
 * line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { ALLREDUCE, BCAST, BARRIER, NUM_BENCHMARKS };
static const char *const names[] = {"allreduce", "bcast", "barrier"};

struct row {
    int benchmark;
    int bytes;
};
static const struct row rows[] = {
    {ALLREDUCE, 8}, {ALLREDUCE, 65536}, {BCAST, 8}, {BCAST, 65536}, {BARRIER, 0}};
#define NUM_ROWS ((int)(sizeof rows / sizeof rows[0]))
#define MAX_DOUBLES (65536 / (int)sizeof(double))
#define BATCHES 5
#define WARMUP 200
#define MAX_ITERATIONS 200000
#define ROOT 0

/* One row's buffers and what the checks found on this rank. */
struct coll_run {
    const struct row *row;
    int count; /* doubles */
    int rank, size, salt;
    double *send, *recv;
    long wrong;
    char why[160];
};

/* Small integers, exact in a double and in a sum of a few of them. */
static double element(int k, int salt) { return (double)((k * 7 + salt * 13) % 1009); }
static double call_stamp(long i, int salt) { return (double)((i * 31 + salt) % 100003 + 1); }

static void mismatch(struct coll_run *run, const char *what, long index, double seen,
                     double expected) {
    if (run->wrong++ == 0)
        snprintf(run->why, sizeof run->why, "%s %ld: %.17g, expected %.17g", what, index, seen,
                 expected);
}

/* Before a batch: the data of the batch (the first element is set per call). */
static void prepare_batch(struct coll_run *run) {
    const int weight = run->rank + 1;
    for (int k = 0; k < run->count; k++) {
        if (run->row->benchmark == ALLREDUCE) {
            run->send[k] = weight * element(k, run->salt);
            run->recv[k] = -1.0;
        } else if (run->row->benchmark == BCAST) {
            run->recv[k] = run->rank == ROOT ? element(k, run->salt) : -1.0;
        }
    }
}

/* The sum of the ranks' weights (rank + 1). */
static double weights(const struct coll_run *run) {
    return (double)run->size * (run->size + 1) / 2;
}

/* One call, number i, with its per-call check of the first element. */
static void one_call(struct coll_run *run, long i) {
    switch (run->row->benchmark) {
        case ALLREDUCE: {
            run->send[0] = (run->rank + 1) * call_stamp(i, run->salt);
            BENCH_MPI(MPI_Allreduce(run->send, run->recv, run->count, MPI_DOUBLE, MPI_SUM,
                                    MPI_COMM_WORLD));
            const double expected = weights(run) * call_stamp(i, run->salt);
            if (run->recv[0] != expected)
                mismatch(run, "allreduce call", i, run->recv[0], expected);
            break;
        }
        case BCAST:
            if (run->rank == ROOT) run->recv[0] = call_stamp(i, run->salt);
            BENCH_MPI(MPI_Bcast(run->recv, run->count, MPI_DOUBLE, ROOT, MPI_COMM_WORLD));
            if (run->rank != ROOT && run->recv[0] != call_stamp(i, run->salt))
                mismatch(run, "bcast call", i, run->recv[0], call_stamp(i, run->salt));
            break;
        default:
            BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
            break;
    }
}

/* After a batch: the whole result (element 0 was checked per call). */
static void check_batch(struct coll_run *run) {
    for (int k = 1; k < run->count; k++) {
        double expected = run->row->benchmark == ALLREDUCE ? weights(run) * element(k, run->salt)
                                                           : element(k, run->salt);
        if (run->recv[k] != expected) {
            mismatch(run, run->row->benchmark == ALLREDUCE ? "allreduce element" : "bcast element",
                     k, run->recv[k], expected);
            break;
        }
    }
}

/* One series of the job: its name, whether a window is alive during its calls, and what
 * its rows found. */
struct series {
    char name[64];
    int window;
    long wrong[NUM_BENCHMARKS]; /* this rank's wrong values, per benchmark */
};

/* Collective: a window (4 KiB, MPI_Win_allocate) for a window series; nothing else. */
static void window_open(const struct series *s, MPI_Win *win) {
    void *memory = NULL;
    if (!s->window) return;
    bench_set_step(s->name, "MPI_Win_allocate");
    bench_win_allocate(4096, 1, NULL, MPI_COMM_WORLD, &memory, win);
}

static void window_close(const struct series *s, MPI_Win *win) {
    if (!s->window) return;
    bench_set_step(s->name, "MPI_Win_free");
    BENCH_MPI(MPI_Win_free(win));
}

/* The clock is read every BLOCK calls; the figure is the median block's mean (see the
 * head). */
#define BLOCK 16

struct blocks {
    double *usec; /* per call, of each full block */
    long count, capacity;
};

/* Collective: one batch of `iterations` calls (the warm-up too), its data prepared before
 * and checked after; returns the usec per call (rank 0's clock is the one reported), and
 * appends the batch's full blocks to `blocks` (unless NULL). */
static double run_batch(struct coll_run *run, long iterations, long *call, struct blocks *blocks) {
    prepare_batch(run);
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double start = MPI_Wtime();
    double mark = start;
    for (long i = 1; i <= iterations; i++) {
        one_call(run, (*call)++);
        if (i % BLOCK == 0 && blocks) {
            const double now = MPI_Wtime();
            if (blocks->count < blocks->capacity)
                blocks->usec[blocks->count++] = (now - mark) * 1e6 / BLOCK;
            mark = now;
        }
    }
    const double usec = (MPI_Wtime() - start) * 1e6 / (double)iterations;
    check_batch(run);
    return usec;
}

/* Collective: one row on every series of the job, their batches interleaved (batch b of
 * each series, then batch b + 1), so that a change of load on a shared machine hits them
 * alike; a window series has its window allocated before each of its batches and freed
 * after. */
static void run_row(struct series *series, int num_series, const struct row *row, double *send,
                    double *recv, int rank, int size, int salt,
                    const struct bench_options *options) {
    char parameter[16];
    snprintf(parameter, sizeof parameter, "%d", row->bytes);
    struct coll_run runs[2];
    long iterations[2], calls[2] = {0, 0};
    double usec[2][BATCHES];
    struct blocks blocks[2];
    MPI_Win win = MPI_WIN_NULL;
    for (int s = 0; s < num_series; s++) {
        struct coll_run run = {.row = row,
                               .count = row->bytes / (int)sizeof(double),
                               .rank = rank,
                               .size = size,
                               .salt = salt + 50 * s,
                               .send = send,
                               .recv = recv};
        runs[s] = run;
        /* Warm-up: its pace sets the calls per batch. */
        window_open(&series[s], &win);
        bench_set_step(series[s].name, names[row->benchmark]);
        const double per_call = run_batch(&runs[s], WARMUP, &calls[s], NULL) * 1e-6;
        window_close(&series[s], &win);
        iterations[s] = options->iterations;
        if (iterations[s] <= 0) {
            const double budget = (options->quick ? 0.25 : 2.0) / BATCHES;
            iterations[s] = per_call > 0 ? (long)(budget / per_call) : MAX_ITERATIONS;
            if (iterations[s] < 1) iterations[s] = 1;
            if (iterations[s] > MAX_ITERATIONS) iterations[s] = MAX_ITERATIONS;
        }
        BENCH_MPI(MPI_Bcast(&iterations[s], 1, MPI_LONG, 0, MPI_COMM_WORLD));
        blocks[s].capacity = BATCHES * (iterations[s] / BLOCK);
        blocks[s].count = 0;
        blocks[s].usec =
            bench_malloc("collectives", (size_t)(blocks[s].capacity + 1) * sizeof(double));
    }
    for (int b = 0; b < BATCHES; b++) {
        for (int s = 0; s < num_series; s++) {
            window_open(&series[s], &win);
            bench_set_step(series[s].name, names[row->benchmark]);
            runs[s].salt = salt + 50 * s + 1 + b;
            usec[s][b] = run_batch(&runs[s], iterations[s], &calls[s], &blocks[s]);
            window_close(&series[s], &win);
        }
    }
    for (int s = 0; s < num_series; s++) {
        const struct coll_run *run = &runs[s];
        series[s].wrong[row->benchmark] += run->wrong;
        if (run->wrong)
            fprintf(stderr, "collectives: rank %d: %s %s %s: %ld wrong values, first: %s\n", rank,
                    series[s].name, names[row->benchmark], parameter, run->wrong, run->why);
        if (rank == 0) {
            double *u = usec[s];
            qsort(u, BATCHES, sizeof *u, bench_compare_doubles);
            const long n = blocks[s].count;
            double figure = u[BATCHES / 2];
            if (n > 0) {
                double *k = blocks[s].usec;
                qsort(k, (size_t)n, sizeof *k, bench_compare_doubles);
                figure = n % 2 ? k[n / 2] : (k[n / 2 - 1] + k[n / 2]) / 2;
            }
            printf(
                "# %s %s %s: batch means median %.4g, min %.4g, max %.4g usec over %d batches "
                "of %ld; median of %ld blocks of %d: %.4g\n",
                series[s].name, names[row->benchmark], parameter, u[BATCHES / 2], u[0],
                u[BATCHES - 1], BATCHES, iterations[s], n, BLOCK, figure);
            bench_result(series[s].name, names[row->benchmark], parameter, figure, "usec");
        }
        free(blocks[s].usec);
    }
}

void bench_list_collectives(void) {
    char parameter[16];
    for (int r = 0; r < NUM_ROWS; r++) {
        snprintf(parameter, sizeof parameter, "%d", rows[r].bytes);
        bench_row(names[rows[r].benchmark], parameter, "usec");
    }
}

int bench_collectives(const struct bench_options *options) {
    int rank, size;
    bench_start_group("collectives", options, names, NUM_BENCHMARKS, &rank, &size);
    const char *suffix = getenv("NBRMA_BENCH_SERIES_SUFFIX");
    if (!suffix) suffix = "";
    if (rank == 0) {
        printf("# collectives: %d ranks, MPI_COMM_WORLD, doubles\n", size);
        fflush(stdout);
    }
    double *send = bench_malloc("collectives", (size_t)MAX_DOUBLES * sizeof(double));
    double *recv = bench_malloc("collectives", (size_t)MAX_DOUBLES * sizeof(double));
    struct series series[2];
    int num_series = 0;
    memset(series, 0, sizeof series);
#ifdef NBRMA_NONBLOCKING_SERIES
    if (!suffix[0]) snprintf(series[num_series++].name, sizeof series[0].name, "nbrma");
    snprintf(series[num_series].name, sizeof series[0].name, "nbrma-idle-window%s", suffix);
    series[num_series++].window = 1;
#else
    snprintf(series[num_series++].name, sizeof series[0].name, "%s%s", BENCH_BLOCKING_SERIES,
             suffix);
#endif
    for (int r = 0; r < NUM_ROWS; r++)
        if (bench_selected(options, names[rows[r].benchmark]))
            run_row(series, num_series, &rows[r], send, recv, rank, size, 1 + 8 * r, options);
    int failed = 0;
    for (int s = 0; s < num_series; s++) {
        long total[NUM_BENCHMARKS];
        BENCH_MPI(MPI_Allreduce(series[s].wrong, total, NUM_BENCHMARKS, MPI_LONG, MPI_SUM,
                                MPI_COMM_WORLD));
        for (int b = ALLREDUCE; b <= BCAST; b++) {
            if (!bench_selected(options, names[b])) continue;
            if (rank == 0) bench_check(series[s].name, names[b], total[b] == 0);
            failed |= total[b] != 0;
        }
    }
#ifdef NBRMA_NONBLOCKING_SERIES
    unsigned long long assisted = 0, sweeps = 0;
    if (rank == 0 && nbrma_get_counter("assisted_calls", &assisted) == MPI_SUCCESS &&
        nbrma_get_counter("assist_sweeps", &sweeps) == MPI_SUCCESS) {
        printf("# collectives: nbrma counters on rank 0: assisted_calls=%llu assist_sweeps=%llu\n",
               assisted, sweeps);
        fflush(stdout);
    }
#endif
    free(send);
    free(recv);
    return failed ? 3 : 0;
}
