/*
 * latency.c — passive-target RMA latency between two ranks of one node.
 *
 * Rank 0 is the origin, rank 1 the target; the window comes from MPI_Win_allocate.
 * For each size (8 B, 2 KiB, 64 KiB, 512 KiB) the origin times, after a warm-up,
 *   lock_put_unlock  MPI_Win_lock(EXCLUSIVE) / MPI_Put / MPI_Win_unlock
 *   lock_get_unlock  MPI_Win_lock(EXCLUSIVE) / MPI_Get / MPI_Win_unlock
 * and reports the mean time of one iteration. Built with -DNBRMA_NONBLOCKING_SERIES
 * (the nbrma build) it adds the same two benchmarks on MPIX_Win_ilock /
 * MPIX_Win_iunlock completed by MPI_Wait.
 *
 * While the origin runs, the target sits in MPI_Barrier: MPICH's RMA needs the
 * target to make progress and MPICH progresses there; nbrma's passive target needs
 * nothing from it. Before timing, a put/get round trip checks the data really moves.
 *
 * Output, one line per measurement, for test/bench/nbrma-bench to merge:
 *   RESULT <series> <benchmark> <bytes> <usec>
 *   CHECK <series> ok|FAILED <why>
 * series: "mpich" (MPICH's own RMA), "nbrma-blocking", "nbrma-nonblocking".
 * Lines starting with '#' are comments. Exit status 3 if a data check failed.
 *
 * Usage: mpiexec.mpich -n 2 latency_{mpich,nbrma} [--quick] [--iterations N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NBRMA_NONBLOCKING_SERIES
#include "nbrma.h"
#define BLOCKING_SERIES "nbrma-blocking"
#else
#define BLOCKING_SERIES "mpich"
#endif

enum { ORIGIN = 0, TARGET = 1 };

static const int sizes[] = {8, 2 * 1024, 64 * 1024, 512 * 1024};
#define NUM_SIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAX_SIZE (512 * 1024)

enum operation { OP_PUT, OP_GET };
enum sync_style { SYNC_BLOCKING, SYNC_NONBLOCKING };

static const char *operation_names[] = {"lock_put_unlock", "lock_get_unlock"};

/* Any MPI error: name the call, print MPI's message, take the whole job down. */
static void check_mpi(int rc, const char *call, int line) {
    if (rc == MPI_SUCCESS) return;
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, message, &length);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "latency: rank %d: %s failed (latency.c:%d): %s\n", rank, call, line, message);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
}
#define CHECK_MPI(call) check_mpi((call), #call, __LINE__)

/* At most this many timed iterations for one size (the warm-up is a tenth of it)... */
static int iterations_for(int bytes, int quick, int override) {
    if (override > 0) return override;
    int n = bytes <= 2 * 1024 ? 100000 : bytes <= 64 * 1024 ? 20000 : 5000;
    return quick ? n / 10 : n;
}

/* ...and at most this many seconds of them, so a slow implementation cannot make the
 * run take forever (8 measurements per series). */
static double time_budget(int quick, int override) {
    return override > 0 ? 1e9 : quick ? 0.5 : 3.0;
}

static void communicate(enum operation op, char *buffer, int bytes, MPI_Win win) {
    if (op == OP_PUT)
        CHECK_MPI(MPI_Put(buffer, bytes, MPI_BYTE, TARGET, 0, bytes, MPI_BYTE, win));
    else
        CHECK_MPI(MPI_Get(buffer, bytes, MPI_BYTE, TARGET, 0, bytes, MPI_BYTE, win));
}

/* One lock epoch carrying one operation; returns when the operation is complete. */
static void one_epoch(enum operation op, enum sync_style style, char *buffer, int bytes,
                      MPI_Win win) {
#ifdef NBRMA_NONBLOCKING_SERIES
    if (style == SYNC_NONBLOCKING) {
        MPI_Request lock_request, unlock_request;
        CHECK_MPI(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win, &lock_request));
        communicate(op, buffer, bytes, win);
        CHECK_MPI(MPIX_Win_iunlock(TARGET, win, &unlock_request));
        CHECK_MPI(MPI_Wait(&lock_request, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&unlock_request, MPI_STATUS_IGNORE));
        return;
    }
#else
    (void)style;
#endif
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    communicate(op, buffer, bytes, win);
    CHECK_MPI(MPI_Win_unlock(TARGET, win));
}

/* Collective. Rank 0 times; everyone else waits in the barrier that ends the run. */
static void run_series(const char *series, enum sync_style style, char *buffer, MPI_Win win,
                       int rank, int quick, int override) {
    for (int op = OP_PUT; op <= OP_GET; op++) {
        for (int s = 0; s < NUM_SIZES; s++) {
            int bytes = sizes[s];
            int iterations = iterations_for(bytes, quick, override);
            int warmup = iterations / 10 > 0 ? iterations / 10 : 1;
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (rank == ORIGIN) {
                double budget = time_budget(quick, override);
                double start = MPI_Wtime();
                for (int i = 0; i < warmup; i++) {
                    one_epoch((enum operation)op, style, buffer, bytes, win);
                    if ((i & 15) == 15 && MPI_Wtime() - start > budget / 10) break;
                }
                int done = 0;
                start = MPI_Wtime();
                while (done < iterations) {
                    one_epoch((enum operation)op, style, buffer, bytes, win);
                    done++;
                    if ((done & 15) == 0 && MPI_Wtime() - start > budget) break;
                }
                double elapsed = MPI_Wtime() - start;
                printf("# %s %s %d: %d iterations in %.3f s\n", series, operation_names[op], bytes,
                       done, elapsed);
                printf("RESULT %s %s %d %.3f\n", series, operation_names[op], bytes,
                       elapsed * 1e6 / done);
                fflush(stdout);
            }
            /* The target makes MPICH progress here while the origin runs. */
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
}

static unsigned char pattern(int i, int salt) { return (unsigned char)((i * 7 + salt) & 0xff); }

/* Collective. Origin puts a pattern, the target reads it in its own window and the
 * origin gets it back. Returns 1 when everyone saw the right bytes. */
static int check_data(const char *series, enum sync_style style, unsigned char *window_memory,
                      char *buffer, MPI_Win win, int rank, int salt) {
    int ok = 1;
    char why[128] = "";
    if (rank == TARGET) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
        memset(window_memory, 0, MAX_SIZE);
        CHECK_MPI(MPI_Win_unlock(TARGET, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        for (int i = 0; i < MAX_SIZE; i++) buffer[i] = (char)pattern(i, salt);
        one_epoch(OP_PUT, style, buffer, MAX_SIZE, win);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == TARGET) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
        for (int i = 0; i < MAX_SIZE && ok; i++) {
            if (window_memory[i] != pattern(i, salt)) {
                ok = 0;
                snprintf(why, sizeof why, "put: target byte %d is %d, expected %d", i,
                         window_memory[i], pattern(i, salt));
            }
        }
        CHECK_MPI(MPI_Win_unlock(TARGET, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        memset(buffer, 0, MAX_SIZE);
        one_epoch(OP_GET, style, buffer, MAX_SIZE, win);
        for (int i = 0; i < MAX_SIZE && ok; i++) {
            if ((unsigned char)buffer[i] != pattern(i, salt)) {
                ok = 0;
                snprintf(why, sizeof why, "get: origin byte %d is %d, expected %d", i,
                         (unsigned char)buffer[i], pattern(i, salt));
            }
        }
    }
    if (!ok) fprintf(stderr, "latency: rank %d: %s: data check failed: %s\n", rank, series, why);
    int all_ok = 0;
    CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        printf("CHECK %s %s\n", series, all_ok ? "ok" : "FAILED");
        fflush(stdout);
    }
    return all_ok;
}

static void usage(void) {
    printf(
        "usage: mpiexec -n 2 latency [--quick] [--iterations N]\n"
        "  --quick          a tenth of the iterations and time budget\n"
        "  --iterations N   exactly N timed iterations for every size, no time budget\n");
}

int main(int argc, char **argv) {
    int quick = 0, override = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            override = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage();
            return 0;
        } else {
            fprintf(stderr, "latency: unknown argument '%s'\n", argv[i]);
            usage();
            return 1;
        }
    }

    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "latency: needs 2 ranks (mpiexec -n 2)\n");
        MPI_Finalize();
        return 1;
    }

    unsigned char *window_memory = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(MAX_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &window_memory, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    char *buffer = malloc(MAX_SIZE);
    if (!buffer) {
        fprintf(stderr, "latency: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(buffer, 1, MAX_SIZE);

    if (rank == ORIGIN) {
        printf("# latency: %d ranks, %s iterations%s\n", size, quick ? "quick" : "full",
               override > 0 ? " (overridden)" : "");
#ifdef NBRMA_NONBLOCKING_SERIES
        printf("# nbrma active: %s\n", nbrma_is_active() ? "yes" : "NO");
#endif
        fflush(stdout);
    }

    int all_ok = 1;
    all_ok &= check_data(BLOCKING_SERIES, SYNC_BLOCKING, window_memory, buffer, win, rank, 1);
    run_series(BLOCKING_SERIES, SYNC_BLOCKING, buffer, win, rank, quick, override);
#ifdef NBRMA_NONBLOCKING_SERIES
    all_ok &=
        check_data("nbrma-nonblocking", SYNC_NONBLOCKING, window_memory, buffer, win, rank, 2);
    run_series("nbrma-nonblocking", SYNC_NONBLOCKING, buffer, win, rank, quick, override);
    if (rank == ORIGIN) {
        unsigned long long epochs = 0, operations = 0;
        if (nbrma_get_counter("epochs_completed", &epochs) == MPI_SUCCESS &&
            nbrma_get_counter("rma_ops", &operations) == MPI_SUCCESS)
            printf("# nbrma counters on rank 0: epochs_completed=%llu rma_ops=%llu\n", epochs,
                   operations);
    }
#endif

    CHECK_MPI(MPI_Win_free(&win));
    free(buffer);
    MPI_Finalize();
    return all_ok ? 0 : 3;
}
