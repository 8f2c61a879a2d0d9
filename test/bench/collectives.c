/*
 * collectives.c — MPI's blocking collectives with and without nbrma in the process,
 * group "collectives" of nbrma-bench (see bench.h). Needs 2 ranks (any further rank
 * joins every call).
 *
 * nbrma interposes MPICH's blocking collectives (src/mpi/progress_interpose.cpp: MPICH's
 * own call, with an assist thread serving nbrma while it has work pending); this group
 * measures what that costs against MPICH alone. Rows, usec per call:
 *   allreduce  MPI_Allreduce, MPI_SUM over MPI_DOUBLE, 8 B and 65536 B (1 and 8192 doubles)
 *   bcast      MPI_Bcast of MPI_DOUBLE from rank 0, 8 B and 65536 B
 *   barrier    MPI_Barrier (parameter 0)
 * Every rank runs N calls back to back, timed by rank 0: the median over 5 batches of a
 * batch's mean ("#" line: min and max), after 200 untimed warm-up calls whose pace sets
 * N (rank 0 decides and broadcasts it, outside the timed loop) to fit 0.05 s per batch
 * with --quick (0.4 s without), at least 1, at most 200000; --iterations N: exactly N
 * per batch. A barrier (untimed) starts each batch.
 * Series: "mpich" on bench_mpich; on bench_nbrma "nbrma" (no window exists) and then
 * "nbrma-idle-window" (one MPI_Win_allocate window of 4 KiB alive and idle, no epoch,
 * during the calls). The environment variable NBRMA_BENCH_SERIES_SUFFIX is appended to
 * the series names, and with it set only the window series runs (without a window the
 * transport plays no part): nbrma-bench's "nbrma-ucx" job sets "-ucx" with
 * NBRMA_TRANSPORT=ucx NBRMA_UCX_TLS=tcp,self (series "nbrma-idle-window-ucx").
 * Data checks: every call changes the first element of the data (allreduce: each rank's
 * contribution, bcast: the root's) and every rank checks it after the call; before a
 * batch the others are set to a pattern of the batch (the receiving buffers to -1), and
 * after it every rank checks the whole result: the exact sum (small integers in doubles)
 * or the root's data. One CHECK line per series for allreduce and for bcast.
 * bench_nbrma prints nbrma's counters assisted_calls and assist_sweeps after each series
 * ("#" line).
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

/* Collective: one row of one series; returns this rank's wrong values. */
static long run_row(const char *series, const struct row *row, double *send, double *recv, int rank,
                    int size, int salt, const struct bench_options *options) {
    char parameter[16];
    snprintf(parameter, sizeof parameter, "%d", row->bytes);
    bench_set_step(series, names[row->benchmark]);
    struct coll_run run = {.row = row,
                           .count = row->bytes / (int)sizeof(double),
                           .rank = rank,
                           .size = size,
                           .salt = salt,
                           .send = send,
                           .recv = recv};
    long call = 0;
    prepare_batch(&run);
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double start = MPI_Wtime();
    for (int i = 0; i < WARMUP; i++) one_call(&run, call++);
    const double per_call = (MPI_Wtime() - start) / WARMUP;
    check_batch(&run);
    long iterations = options->iterations;
    if (iterations <= 0) {
        const double budget = (options->quick ? 0.25 : 2.0) / BATCHES;
        iterations = per_call > 0 ? (long)(budget / per_call) : MAX_ITERATIONS;
        if (iterations < 1) iterations = 1;
        if (iterations > MAX_ITERATIONS) iterations = MAX_ITERATIONS;
    }
    BENCH_MPI(MPI_Bcast(&iterations, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    double usec[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        run.salt = salt + 1 + b;
        prepare_batch(&run);
        BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
        start = MPI_Wtime();
        for (long i = 0; i < iterations; i++) one_call(&run, call++);
        usec[b] = (MPI_Wtime() - start) * 1e6 / (double)iterations;
        check_batch(&run);
    }
    if (run.wrong)
        fprintf(stderr, "collectives: rank %d: %s %s %s: %ld wrong values, first: %s\n", rank,
                series, names[row->benchmark], parameter, run.wrong, run.why);
    if (rank == 0) {
        qsort(usec, BATCHES, sizeof *usec, bench_compare_doubles);
        printf("# %s %s %s: median %.4g, min %.4g, max %.4g usec over %d batches of %ld\n", series,
               names[row->benchmark], parameter, usec[BATCHES / 2], usec[0], usec[BATCHES - 1],
               BATCHES, iterations);
        bench_result(series, names[row->benchmark], parameter, usec[BATCHES / 2], "usec");
    }
    return run.wrong;
}

/* Collective: every selected row of one series, then its CHECK lines. */
static int run_series(const char *series, double *send, double *recv, int rank, int size, int salt,
                      const struct bench_options *options) {
    long wrong[NUM_BENCHMARKS] = {0, 0, 0};
    for (int r = 0; r < NUM_ROWS; r++)
        if (bench_selected(options, names[rows[r].benchmark]))
            wrong[rows[r].benchmark] +=
                run_row(series, &rows[r], send, recv, rank, size, salt + 8 * r, options);
    long total[NUM_BENCHMARKS];
    BENCH_MPI(MPI_Allreduce(wrong, total, NUM_BENCHMARKS, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    int failed = 0;
    for (int b = ALLREDUCE; b <= BCAST; b++) {
        if (!bench_selected(options, names[b])) continue;
        if (rank == 0) bench_check(series, names[b], total[b] == 0);
        failed |= total[b] != 0;
    }
#ifdef NBRMA_NONBLOCKING_SERIES
    unsigned long long assisted = 0, sweeps = 0;
    if (rank == 0 && nbrma_get_counter("assisted_calls", &assisted) == MPI_SUCCESS &&
        nbrma_get_counter("assist_sweeps", &sweeps) == MPI_SUCCESS) {
        printf("# %s: nbrma counters on rank 0 so far: assisted_calls=%llu assist_sweeps=%llu\n",
               series, assisted, sweeps);
        fflush(stdout);
    }
#endif
    return failed;
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
    char series[64];
    int failed = 0;
#ifdef NBRMA_NONBLOCKING_SERIES
    if (!suffix[0]) {
        snprintf(series, sizeof series, "nbrma");
        failed |= run_series(series, send, recv, rank, size, 1, options);
    }
    snprintf(series, sizeof series, "nbrma-idle-window%s", suffix);
    bench_set_step(series, "setup (MPI_Win_allocate)");
    void *window_memory = NULL;
    MPI_Win win;
    bench_win_allocate(4096, 1, NULL, MPI_COMM_WORLD, &window_memory, &win);
    failed |= run_series(series, send, recv, rank, size, 101, options);
    bench_set_step(series, "teardown (MPI_Win_free)");
    BENCH_MPI(MPI_Win_free(&win));
#else
    snprintf(series, sizeof series, "%s%s", BENCH_BLOCKING_SERIES, suffix);
    failed |= run_series(series, send, recv, rank, size, 1, options);
#endif
    free(send);
    free(recv);
    return failed ? 3 : 0;
}
