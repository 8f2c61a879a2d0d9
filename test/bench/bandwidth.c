/*
 * bandwidth.c — RMA bandwidth the way the OSU micro-benchmarks measure it, group
 * "bandwidth" of nbrma-bench (see bench.h). Needs 2 ranks: rank 0 the origin, rank 1
 * the target (both in osu_put_bibw).
 *
 * Benchmarks, parameter the message bytes (4 KiB to 4 MiB; the accumulates: elements), unit
 * MB/s (10^6 bytes a second; higher is better):
 *   osu_put_bw, osu_get_bw   osu_put_bw / osu_get_bw -s flush -w allocate: rank 0 locks
 *                  rank 1 (MPI_LOCK_SHARED) once; an iteration is W puts (gets) of the
 *                  size in MPI_CHAR, at consecutive displacements of rank 1's
 *                  MPI_Win_allocate window and of rank 0's page-aligned buffer (OSU's
 *                  posix_memalign), then MPI_Win_flush; W = 64 up to 8 KiB, 32 above
 *                  (OSU's window sizes).
 *   osu_put_bibw   osu_put_bibw -s pscw -w allocate: each iteration both ranks
 *                  MPI_Win_post and MPI_Win_start toward the other, put W messages into
 *                  it, MPI_Win_complete, MPI_Win_wait; both directions' bytes count.
 *   osu_get_bw_malloc  osu_get_bw's loop into a buffer from malloc (16 bytes into its page,
 *                  as glibc gives a large block): the usual case in an application.
 *   osu_put_bw_create, osu_get_bw_create   osu_put_bw / osu_get_bw -w create: rank 1's
 *                  window is MPI_Win_create over its page-aligned buffer (Open MPI's
 *                  osc/sm does not serve these; nbrma reaches them by cross-memory attach).
 *   acc_bw_double, acc_bw_int64   parameter the elements (1 to 1 Mi): rank 0 locks rank 1
 *                  with MPI_Win_lock_all once; an iteration is one MPI_Accumulate (MPI_SUM)
 *                  of that many MPI_DOUBLE (MPI_INT64_T) ones at displacement 0 of rank
 *                  1's MPI_Win_allocate window, then MPI_Win_flush: Global Arrays' bulk
 *                  accumulate. MB/s of the elements' bytes. Data check: rank 1's window is
 *                  zeroed before each count; after it every element must equal the number
 *                  of accumulates made.
 * Per size: 2 untimed iterations, then 3 rounds of N iterations (N to fill about 0.02 s
 * a round with --quick, 0.1 s without; 2 to 1000; --iterations N: N); the best round's
 * bandwidth (a "#" line gives the other two). Rank 1 waits in MPI_Barrier meanwhile
 * (MPICH's RMA needs the target to progress; nbrma's passive target does not).
 * Series: the blocking one.
 * Data check, per benchmark: before each size the data's owner fills it with bytes that
 * depend on the size and the position (for gets the target's window, for puts the
 * origin's buffer); after the size, the receiver (rank 0 for gets, the target for puts,
 * both in osu_put_bibw) compares all W x size bytes. One CHECK line per benchmark.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum kind { PUT, GET, BIPUT };

struct benchmark {
    const char *name;
    enum kind kind;
    int create;        /* the target's window from MPI_Win_create (-w create) */
    int malloc_buffer; /* rank 0's buffer from malloc, not page-aligned */
};

static const struct benchmark benchmarks[] = {
    {"osu_put_bw", PUT, 0, 0},        {"osu_get_bw", GET, 0, 0},
    {"osu_put_bibw", BIPUT, 0, 0},    {"osu_get_bw_malloc", GET, 0, 1},
    {"osu_put_bw_create", PUT, 1, 0}, {"osu_get_bw_create", GET, 1, 0},
};
#define NUM_BENCHMARKS ((int)(sizeof benchmarks / sizeof benchmarks[0]))
static const char *names[NUM_BENCHMARKS + 2]; /* and the accumulates' */

static const size_t sizes[] = {4096, 16384, 65536, 262144, 1048576, 4194304};
#define NUM_SIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAX_SIZE ((size_t)4194304)
#define ROUNDS 3
#define WARMUP 2
#define MIN_ITERATIONS 2
#define MAX_ITERATIONS 1000
#define PAGE 4096

enum { ORIGIN = 0, TARGET = 1 };

/* OSU's window sizes: 64 messages an iteration up to 8 KiB, 32 above. */
static int messages_of(size_t size) { return size > 8192 ? 32 : 64; }

/* The bytes every size's messages span, at most (the largest W x size). */
static size_t span_bytes(void) {
    size_t most = 0;
    for (int k = 0; k < NUM_SIZES; k++)
        if ((size_t)messages_of(sizes[k]) * sizes[k] > most)
            most = (size_t)messages_of(sizes[k]) * sizes[k];
    return most;
}

static unsigned char data_byte(size_t position, size_t size, int writer) {
    return (unsigned char)((position * 13 + position / 4093 + size / 4096 * 7 + writer * 101 + 1) &
                           0xff);
}

static void fill(unsigned char *p, size_t bytes, size_t size, int writer) {
    for (size_t i = 0; i < bytes; i++) p[i] = data_byte(i, size, writer);
}

static long wrong_bytes(const unsigned char *p, size_t bytes, size_t size, int writer) {
    long wrong = 0;
    for (size_t i = 0; i < bytes; i++) wrong += p[i] != data_byte(i, size, writer);
    return wrong;
}

static void *page_aligned(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, PAGE, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "bandwidth: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

struct run {
    const struct benchmark *b;
    MPI_Win win;
    MPI_Group peer; /* the other rank (osu_put_bibw) */
    unsigned char *buffer;
    size_t size;
    int messages, rank;
};

/* One iteration: rank 0's W messages and flush (put, get), or both ranks' PSCW epoch. */
static void iteration(const struct run *r) {
    if (r->b->kind == BIPUT) {
        const int other = 1 - r->rank;
        BENCH_MPI(MPI_Win_post(r->peer, 0, r->win));
        BENCH_MPI(MPI_Win_start(r->peer, 0, r->win));
        for (int j = 0; j < r->messages; j++)
            BENCH_MPI(MPI_Put(r->buffer + (size_t)j * r->size, (int)r->size, MPI_CHAR, other,
                              (MPI_Aint)j * (MPI_Aint)r->size, (int)r->size, MPI_CHAR, r->win));
        BENCH_MPI(MPI_Win_complete(r->win));
        BENCH_MPI(MPI_Win_wait(r->win));
        return;
    }
    for (int j = 0; j < r->messages; j++) {
        unsigned char *local = r->buffer + (size_t)j * r->size;
        const MPI_Aint displacement = (MPI_Aint)j * (MPI_Aint)r->size;
        if (r->b->kind == PUT)
            BENCH_MPI(MPI_Put(local, (int)r->size, MPI_CHAR, TARGET, displacement, (int)r->size,
                              MPI_CHAR, r->win));
        else
            BENCH_MPI(MPI_Get(local, (int)r->size, MPI_CHAR, TARGET, displacement, (int)r->size,
                              MPI_CHAR, r->win));
    }
    BENCH_MPI(MPI_Win_flush(TARGET, r->win));
}

static double time_iterations(const struct run *r, int n) {
    const double start = MPI_Wtime();
    for (int i = 0; i < n; i++) iteration(r);
    return MPI_Wtime() - start;
}

/* One size of one benchmark (both ranks); returns the wrong bytes this rank found. */
static long run_size(struct run *r, unsigned char *window, const struct bench_options *options) {
    const size_t span = (size_t)r->messages * r->size;
    char parameter[32];
    snprintf(parameter, sizeof parameter, "%zu", r->size);
    bench_set_step(BENCH_BLOCKING_SERIES, r->b->name);
    /* The data's owner fills it: the target's window for gets, the writers' buffers. */
    if (r->b->kind == GET && r->rank == TARGET) {
        BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, r->win));
        fill(window, span, r->size, TARGET);
        BENCH_MPI(MPI_Win_unlock(TARGET, r->win));
    }
    if (r->b->kind != GET && (r->rank == ORIGIN || r->b->kind == BIPUT))
        fill(r->buffer, span, r->size, r->rank);
    if (r->b->kind == GET && r->rank == ORIGIN) memset(r->buffer, 0, span);
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));

    const int active = r->b->kind == BIPUT || r->rank == ORIGIN;
    int n = options->iterations;
    double seconds[ROUNDS];
    if (active) {
        if (r->b->kind != BIPUT) BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, r->win));
        const double warm = time_iterations(r, WARMUP) / WARMUP;
        if (n <= 0) {
            const double budget = options->quick ? 0.02 : 0.1;
            n = warm > 0 ? (int)(budget / warm) : MAX_ITERATIONS;
            if (n < MIN_ITERATIONS) n = MIN_ITERATIONS;
            if (n > MAX_ITERATIONS) n = MAX_ITERATIONS;
        }
        /* (both ranks of osu_put_bibw run rank 0's count) */
        if (r->b->kind == BIPUT) BENCH_MPI(MPI_Bcast(&n, 1, MPI_INT, ORIGIN, MPI_COMM_WORLD));
        for (int k = 0; k < ROUNDS; k++) seconds[k] = time_iterations(r, n);
        if (r->b->kind != BIPUT) BENCH_MPI(MPI_Win_unlock(TARGET, r->win));
    }
    if (r->rank == ORIGIN) {
        const double bytes = (double)span * n * (r->b->kind == BIPUT ? 2 : 1);
        qsort(seconds, ROUNDS, sizeof *seconds, bench_compare_doubles);
        printf("# %s %s %s: best %.1f, median %.1f, worst %.1f MB/s over %d rounds of %d "
               "iterations of %d messages\n",
               BENCH_BLOCKING_SERIES, r->b->name, parameter, bytes / seconds[0] / 1e6,
               bytes / seconds[ROUNDS / 2] / 1e6, bytes / seconds[ROUNDS - 1] / 1e6, ROUNDS, n,
               r->messages);
        bench_result(BENCH_BLOCKING_SERIES, r->b->name, parameter, bytes / seconds[0] / 1e6,
                     "MB/s");
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the target progresses here (MPICH) */

    long wrong = 0;
    if (r->b->kind == GET && r->rank == ORIGIN) {
        wrong = wrong_bytes(r->buffer, span, r->size, TARGET);
    } else if (r->b->kind != GET && (r->rank == TARGET || r->b->kind == BIPUT)) {
        BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, r->rank, 0, r->win));
        wrong = wrong_bytes(window, span, r->size, 1 - r->rank);
        BENCH_MPI(MPI_Win_unlock(r->rank, r->win));
    }
    if (wrong)
        fprintf(stderr, "bandwidth: %s %s %s: %ld wrong bytes on rank %d\n", BENCH_BLOCKING_SERIES,
                r->b->name, parameter, wrong, r->rank);
    return wrong;
}

/* Every size of one benchmark, on a window of its own; returns 0 or 3. */
static int run_benchmark(const struct benchmark *b, int rank, const struct bench_options *options) {
    const size_t span = span_bytes();
    /* rank 1's window (both ranks' in osu_put_bibw); rank 0 exposes nothing */
    const int exposes = rank == TARGET || b->kind == BIPUT;
    unsigned char *window = NULL, *created = NULL;
    struct run r = {.b = b, .rank = rank, .peer = MPI_GROUP_NULL};
    if (b->create) {
        created = exposes ? page_aligned(span) : NULL;
        window = created;
        BENCH_MPI(MPI_Win_create(created, exposes ? (MPI_Aint)span : 0, 1, MPI_INFO_NULL,
                                 MPI_COMM_WORLD, &r.win));
    } else {
        bench_win_allocate(exposes ? (MPI_Aint)span : 0, 1, NULL, MPI_COMM_WORLD, &window, &r.win);
    }
    if (rank == ORIGIN || b->kind == BIPUT)
        r.buffer = b->malloc_buffer ? bench_malloc("bandwidth", span) : page_aligned(span);
    if (b->kind == BIPUT) {
        MPI_Group world;
        const int other = 1 - rank;
        BENCH_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
        BENCH_MPI(MPI_Group_incl(world, 1, &other, &r.peer));
        BENCH_MPI(MPI_Group_free(&world));
    }
    long wrong = 0;
    for (int k = 0; k < NUM_SIZES; k++) {
        r.size = sizes[k];
        r.messages = messages_of(sizes[k]);
        wrong += run_size(&r, window, options);
    }
    long total = 0;
    BENCH_MPI(MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0) bench_check(BENCH_BLOCKING_SERIES, b->name, total == 0);
    bench_set_step("bandwidth", "teardown (MPI_Win_free)");
    BENCH_MPI(MPI_Win_free(&r.win));
    if (r.peer != MPI_GROUP_NULL) BENCH_MPI(MPI_Group_free(&r.peer));
    free(r.buffer);
    free(created);
    return total ? 3 : 0;
}

/* ------------------------------------------------------------------ accumulates */

static const char *const accumulate_names[] = {"acc_bw_double", "acc_bw_int64"};
#define NUM_ACCUMULATES 2
static const int elements[] = {1, 8, 128, 1024, 16384, 131072, 1048576};
#define NUM_ELEMENTS ((int)(sizeof elements / sizeof elements[0]))
#define MAX_ELEMENTS 1048576

static double time_accumulates(MPI_Win win, const void *ones, int n, MPI_Datatype type,
                               int iterations) {
    const double start = MPI_Wtime();
    for (int i = 0; i < iterations; i++) {
        BENCH_MPI(MPI_Accumulate(ones, n, type, TARGET, 0, n, type, MPI_SUM, win));
        BENCH_MPI(MPI_Win_flush(TARGET, win));
    }
    return MPI_Wtime() - start;
}

/* Every count of one accumulate benchmark (both ranks); returns 0 or 3. */
static int run_accumulate(int which, int rank, const struct bench_options *options) {
    const char *name = accumulate_names[which];
    const MPI_Datatype type = which ? MPI_INT64_T : MPI_DOUBLE;
    unsigned char *window = NULL;
    MPI_Win win;
    bench_win_allocate(rank == TARGET ? (MPI_Aint)MAX_ELEMENTS * 8 : 0, 8, NULL, MPI_COMM_WORLD,
                       &window, &win);
    void *ones = NULL;
    if (rank == ORIGIN) {
        ones = bench_malloc("bandwidth", (size_t)MAX_ELEMENTS * 8);
        for (int i = 0; i < MAX_ELEMENTS; i++) {
            if (which)
                ((int64_t *)ones)[i] = 1;
            else
                ((double *)ones)[i] = 1.0;
        }
    }
    long wrong = 0;
    for (int k = 0; k < NUM_ELEMENTS; k++) {
        const int n = elements[k];
        char parameter[32];
        snprintf(parameter, sizeof parameter, "%d", n);
        bench_set_step(BENCH_BLOCKING_SERIES, name);
        if (rank == TARGET) {
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
            memset(window, 0, (size_t)n * 8);
            BENCH_MPI(MPI_Win_unlock(TARGET, win));
        }
        BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
        int made = 0;
        if (rank == ORIGIN) {
            double seconds[ROUNDS];
            BENCH_MPI(MPI_Win_lock_all(0, win));
            const double warm = time_accumulates(win, ones, n, type, WARMUP) / WARMUP;
            int iterations = options->iterations;
            if (iterations <= 0) {
                const double budget = options->quick ? 0.02 : 0.1;
                iterations = warm > 0 ? (int)(budget / warm) : 100000;
                if (iterations < MIN_ITERATIONS) iterations = MIN_ITERATIONS;
                if (iterations > 100000) iterations = 100000;
            }
            for (int r = 0; r < ROUNDS; r++)
                seconds[r] = time_accumulates(win, ones, n, type, iterations);
            BENCH_MPI(MPI_Win_unlock_all(win));
            made = WARMUP + ROUNDS * iterations;
            const double bytes = (double)n * 8 * iterations;
            qsort(seconds, ROUNDS, sizeof *seconds, bench_compare_doubles);
            printf("# %s %s %s: best %.1f, median %.1f, worst %.1f MB/s over %d rounds of %d "
                   "accumulates\n",
                   BENCH_BLOCKING_SERIES, name, parameter, bytes / seconds[0] / 1e6,
                   bytes / seconds[ROUNDS / 2] / 1e6, bytes / seconds[ROUNDS - 1] / 1e6, ROUNDS,
                   iterations);
            bench_result(BENCH_BLOCKING_SERIES, name, parameter, bytes / seconds[0] / 1e6,
                         "MB/s");
        }
        /* (the target progresses here: MPICH) */
        BENCH_MPI(MPI_Bcast(&made, 1, MPI_INT, ORIGIN, MPI_COMM_WORLD));
        if (rank == TARGET) {
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
            long bad = 0;
            for (int i = 0; i < n; i++)
                bad += which ? ((int64_t *)window)[i] != made : ((double *)window)[i] != made;
            BENCH_MPI(MPI_Win_unlock(TARGET, win));
            if (bad)
                fprintf(stderr, "bandwidth: %s %s %s: %ld of %d elements wrong (expected %d)\n",
                        BENCH_BLOCKING_SERIES, name, parameter, bad, n, made);
            wrong += bad;
        }
    }
    long total = 0;
    BENCH_MPI(MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0) bench_check(BENCH_BLOCKING_SERIES, name, total == 0);
    bench_set_step("bandwidth", "teardown (MPI_Win_free)");
    BENCH_MPI(MPI_Win_free(&win));
    free(ones);
    return total ? 3 : 0;
}

void bench_list_bandwidth(void) {
    char parameter[32];
    for (int b = 0; b < NUM_BENCHMARKS; b++)
        for (int k = 0; k < NUM_SIZES; k++) {
            snprintf(parameter, sizeof parameter, "%zu", sizes[k]);
            bench_row(benchmarks[b].name, parameter, "MB/s");
        }
    for (int b = 0; b < NUM_ACCUMULATES; b++)
        for (int k = 0; k < NUM_ELEMENTS; k++) {
            snprintf(parameter, sizeof parameter, "%d", elements[k]);
            bench_row(accumulate_names[b], parameter, "MB/s");
        }
}

int bench_bandwidth(const struct bench_options *options) {
    for (int b = 0; b < NUM_BENCHMARKS; b++) names[b] = benchmarks[b].name;
    for (int b = 0; b < NUM_ACCUMULATES; b++) names[NUM_BENCHMARKS + b] = accumulate_names[b];
    int rank, size;
    bench_start_group("bandwidth", options, names, NUM_BENCHMARKS + NUM_ACCUMULATES, &rank,
                      &size);
    if (rank == 0) {
        printf("# bandwidth: %d ranks, messages of %zu to %zu bytes, %d (up to 8 KiB) or %d an "
               "iteration\n",
               size, sizes[0], MAX_SIZE, messages_of(8192), messages_of(MAX_SIZE));
        fflush(stdout);
    }
    int failed = 0;
    for (int b = 0; b < NUM_BENCHMARKS; b++)
        if (bench_selected(options, benchmarks[b].name))
            failed |= run_benchmark(&benchmarks[b], rank, options);
    for (int b = 0; b < NUM_ACCUMULATES; b++)
        if (bench_selected(options, accumulate_names[b]))
            failed |= run_accumulate(b, rank, options);
    return failed;
}
