/*
 * strided.c — strided puts the way ARMCI-MPI issues them, group "strided" of nbrma-bench
 * (see bench.h). Needs 2 ranks: rank 0 puts, rank 1 owns the 2-D array.
 *
 * Benchmark strided_put, parameter <rows>x8KiB (1, 16 and 1024 rows): rank 1's window
 * (MPI_Win_allocate; rank 0's is empty) holds a 2-D array of 1032 rows of 16 KiB, and
 * rank 0 puts a block of <rows> rows of 8 KiB into it, from row 3 and column 4100.
 * Every put builds its datatypes afresh, as ARMCI-MPI's ARMCI_PutS does
 * (ARMCII_Strided_to_dtype, direct method): the target type MPI_Type_create_subarray
 * over MPI_BYTE, sizes {rows, 16 KiB}, subsizes {rows, 8 KiB}, starts {0, 0} (the block's
 * corner is the displacement), the origin type MPI_Type_contiguous of rows x 8 KiB bytes;
 * both committed, then MPI_Win_lock(EXCLUSIVE) / MPI_Put(1 origin type, 1 target type) /
 * MPI_Win_unlock, then both types freed. usec per put, type creation and freeing
 * included: the median over 5 batches of a batch's mean ("#" line: min and max), every
 * batch N puts back to back, N from 3 untimed warm-up puts (the fastest) to fit 0.05 s
 * per batch with --quick (0.4 s without), at least 1, at most 20000; --iterations N:
 * exactly N per batch. Rank 1 waits in MPI_Barrier meanwhile (MPICH's RMA needs the
 * target to progress; nbrma's passive target needs nothing from it).
 * Series: the blocking one (mpich on bench_mpich, nbrma-blocking on bench_nbrma).
 * Data check, per row: rank 1 fills the whole array with 0xa5 before the row; after it,
 * every byte of the block must hold the origin's byte for that row and column (a value
 * that depends on both, so a row put at the wrong place shows) and every other byte,
 * those between the block's rows included, must still be 0xa5. One CHECK line per series.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char *const names[] = {"strided_put"};
enum { NUM_BENCHMARKS = 1 };

enum { ORIGIN = 0, TARGET = 1 };

static const int row_counts[] = {1, 16, 1024};
#define NUM_ROW_COUNTS ((int)(sizeof row_counts / sizeof row_counts[0]))
#define MAX_ROWS 1024
#define BLOCK_BYTES 8192            /* a row of the block */
#define ROW_BYTES (16 * 1024)       /* a row of the target's array */
#define ARRAY_ROWS (MAX_ROWS + 8)
#define START_ROW 3
#define START_COLUMN 4100
#define ARRAY_BYTES ((size_t)ARRAY_ROWS * ROW_BYTES)
#define UNTOUCHED 0xa5
#define BATCHES 5
#define WARMUP 3
#define MAX_ITERATIONS 20000

static unsigned char block_byte(int row, int column, int salt) {
    return (unsigned char)((row * 131 + column * 7 + salt * 29 + 1) & 0xff);
}

/* One put of `rows` rows of the block, with its datatypes made and freed (ARMCI-MPI). */
static void strided_put(const unsigned char *origin, int rows, MPI_Win win) {
    const int sizes[2] = {rows, ROW_BYTES}, subsizes[2] = {rows, BLOCK_BYTES}, starts[2] = {0, 0};
    MPI_Datatype target_type, origin_type;
    BENCH_MPI(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_BYTE,
                                       &target_type));
    BENCH_MPI(MPI_Type_contiguous(rows * BLOCK_BYTES, MPI_BYTE, &origin_type));
    BENCH_MPI(MPI_Type_commit(&target_type));
    BENCH_MPI(MPI_Type_commit(&origin_type));
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    BENCH_MPI(MPI_Put(origin, 1, origin_type, TARGET,
                      (MPI_Aint)START_ROW * ROW_BYTES + START_COLUMN, 1, target_type, win));
    BENCH_MPI(MPI_Win_unlock(TARGET, win));
    BENCH_MPI(MPI_Type_free(&origin_type));
    BENCH_MPI(MPI_Type_free(&target_type));
}

/* Rank 1: the wrong bytes of its array after a row of `rows` rows. */
static long check_array(const unsigned char *array, int rows, int salt) {
    long wrong = 0;
    for (int r = 0; r < ARRAY_ROWS; r++) {
        const unsigned char *row = array + (size_t)r * ROW_BYTES;
        const int in_block = r >= START_ROW && r < START_ROW + rows;
        for (int c = 0; c < ROW_BYTES; c++) {
            const int inside = in_block && c >= START_COLUMN && c < START_COLUMN + BLOCK_BYTES;
            const unsigned char want =
                inside ? block_byte(r - START_ROW, c - START_COLUMN, salt) : UNTOUCHED;
            if (row[c] != want) wrong++;
        }
    }
    return wrong;
}

/* One row (both ranks); returns the wrong bytes rank 1 found. */
static long run_row(const char *series, int rows, unsigned char *array, unsigned char *origin,
                    MPI_Win win, int rank, const struct bench_options *options) {
    char parameter[32];
    snprintf(parameter, sizeof parameter, "%dx8KiB", rows);
    bench_set_step(series, parameter);
    const int salt = rows % 251;
    if (rank == TARGET) {
        BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
        memset(array, UNTOUCHED, ARRAY_BYTES);
        BENCH_MPI(MPI_Win_unlock(TARGET, win));
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < BLOCK_BYTES; c++)
                origin[(size_t)r * BLOCK_BYTES + c] = block_byte(r, c, salt);
        double warm = 1e30;
        for (int i = 0; i < WARMUP; i++) {
            const double start = MPI_Wtime();
            strided_put(origin, rows, win);
            const double spent = MPI_Wtime() - start;
            if (spent < warm) warm = spent;
        }
        const int batches = BATCHES;
        int iterations = options->iterations;
        if (iterations <= 0) {
            const double budget = (options->quick ? 0.25 : 2.0) / batches;
            iterations = warm > 0 ? (int)(budget / warm) : MAX_ITERATIONS;
            if (iterations < 1) iterations = 1;
            if (iterations > MAX_ITERATIONS) iterations = MAX_ITERATIONS;
        }
        double usec[BATCHES];
        for (int b = 0; b < batches; b++) {
            const double start = MPI_Wtime();
            for (int i = 0; i < iterations; i++) strided_put(origin, rows, win);
            usec[b] = (MPI_Wtime() - start) * 1e6 / iterations;
        }
        qsort(usec, batches, sizeof *usec, bench_compare_doubles);
        printf("# %s %s %s: median %.1f, min %.1f, max %.1f usec over %d batches of %d\n", series,
               names[0], parameter, usec[batches / 2], usec[0], usec[batches - 1], batches,
               iterations);
        bench_result(series, names[0], parameter, usec[batches / 2], "usec");
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the target progresses here (MPICH) */
    long wrong = 0;
    if (rank == TARGET) {
        BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
        wrong = check_array(array, rows, salt);
        BENCH_MPI(MPI_Win_unlock(TARGET, win));
        if (wrong)
            fprintf(stderr, "strided: %s %s: %ld wrong bytes in the target's array\n", series,
                    parameter, wrong);
    }
    return wrong;
}

void bench_list_strided(void) {
    char parameter[32];
    for (int k = 0; k < NUM_ROW_COUNTS; k++) {
        snprintf(parameter, sizeof parameter, "%dx8KiB", row_counts[k]);
        bench_row(names[0], parameter, "usec");
    }
}

int bench_strided(const struct bench_options *options) {
    int rank, size;
    bench_start_group("strided", options, names, NUM_BENCHMARKS, &rank, &size);
    if (rank == 0) {
        printf("# strided: %d ranks, %d rows of %d bytes at the target, blocks of 8 KiB rows\n",
               size, ARRAY_ROWS, ROW_BYTES);
        fflush(stdout);
    }
    if (!bench_selected(options, names[0])) return 0;
    unsigned char *array = NULL;
    MPI_Win win;
    bench_win_allocate(rank == TARGET ? (MPI_Aint)ARRAY_BYTES : 0, 1, NULL, MPI_COMM_WORLD, &array,
                       &win);
    unsigned char *origin =
        rank == ORIGIN ? bench_malloc("strided", (size_t)MAX_ROWS * BLOCK_BYTES) : NULL;
    long wrong = 0;
    for (int k = 0; k < NUM_ROW_COUNTS; k++)
        wrong += run_row(BENCH_BLOCKING_SERIES, row_counts[k], array, origin, win, rank, options);
    long total = 0;
    BENCH_MPI(MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0) bench_check(BENCH_BLOCKING_SERIES, names[0], total == 0);
    bench_set_step("strided", "teardown (MPI_Win_free)");
    BENCH_MPI(MPI_Win_free(&win));
    free(origin);
    return total ? 3 : 0;
}
