/*
 * latency.c — RMA latency between two ranks of one node.
 *
 * The window comes from MPI_Win_allocate. Two groups of benchmarks (--target):
 *
 * passive: rank 0 is the origin, rank 1 the target. For each size (8 B, 2 KiB,
 * 64 KiB, 512 KiB) the origin times, after a warm-up,
 *   lock_put_unlock  MPI_Win_lock(EXCLUSIVE) / MPI_Put / MPI_Win_unlock
 *   lock_get_unlock  MPI_Win_lock(EXCLUSIVE) / MPI_Get / MPI_Win_unlock
 * and reports the mean time of one iteration. While the origin runs, the target sits
 * in MPI_Barrier: MPICH's RMA needs the target to make progress and MPICH progresses
 * there; nbrma's passive target needs nothing from it. Before timing, a put/get round
 * trip checks the data really moves.
 *
 * active: both ranks take part in every epoch; rank 0 reports the mean time of one
 * epoch ("bytes" is 0 for an empty epoch, 8 for one 8-byte put):
 *   fence_empty  a sequence of MPI_Win_fence; one epoch is the span between two fences
 *   fence_put    the same, and in every epoch each rank puts 8 B to the other
 *   pscw_empty   rank 0 MPI_Win_start / MPI_Win_complete, rank 1 MPI_Win_post /
 *                MPI_Win_wait: a full GATS round per epoch (the origin cannot complete
 *                epoch i before the target has posted i, which it does only after its
 *                wait for epoch i-1 returned, so the two ranks stay in step)
 *   pscw_put     the same with one 8-byte put from rank 0 to rank 1 in every epoch
 * The ranks agree on the number of epochs (the origin decides, MPI_Bcast outside the
 * timed loop). Data checks for the put benchmarks: a 512 KiB pattern under the same
 * synchronization before timing, and in every timed epoch the put carries the epoch's
 * number, which the target reads back once the epoch is closed (fence_put alternates
 * two 8-byte slots, so the slot read was not a target of the epoch in progress).
 *
 * Built with -DNBRMA_NONBLOCKING_SERIES (the nbrma build) every benchmark runs a second
 * time on the nonblocking twins completed by MPI_Wait: MPIX_Win_ilock/iunlock,
 * MPIX_Win_ifence (the epoch's put is issued before the fence's request completes, as
 * the lock series issues its op before the lock's), MPIX_Win_istart/icomplete and
 * MPIX_Win_ipost/iwait.
 *
 * Output, one line per measurement, for test/bench/nbrma-bench to merge:
 *   RESULT <series> <benchmark> <bytes> <usec>
 *   CHECK <series> ok|FAILED [<benchmark>]
 * A CHECK without a benchmark covers the series' lock benchmarks that follow it; one
 * with a benchmark (fence_put, pscw_put) comes right before that benchmark's RESULT.
 * series: "mpich" (MPICH's own RMA), "nbrma-blocking", "nbrma-nonblocking".
 * Lines starting with '#' are comments. Exit status 3 if a data check failed; any MPI
 * error aborts the job (status 2) with the failing call and benchmark on stderr.
 *
 * Usage: mpiexec.mpich -n 2 latency_{mpich,nbrma} [--quick] [--iterations N]
 *                                                [--target passive|active|all]
 *        latency_{mpich,nbrma} --list [--target ...]   (the rows it reports, no MPI)
 */
#include <mpi.h>
#include <stdint.h>
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

/* What is running, for error messages: "<series> <benchmark>". */
static char current_step[96] = "setup";

static void set_step(const char *series, const char *benchmark) {
    snprintf(current_step, sizeof current_step, "%s %s", series, benchmark);
}

/* Any MPI error: name the call and the benchmark, print MPI's message, take the whole
 * job down (the peer may be blocked in a synchronization that will never match). */
static void check_mpi(int rc, const char *call, int line) {
    if (rc == MPI_SUCCESS) return;
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, message, &length);
    int error_class = MPI_ERR_UNKNOWN;
    MPI_Error_class(rc, &error_class);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "latency: rank %d: %s failed (latency.c:%d) in %s: %s%s\n", rank, call, line,
            current_step, message,
            error_class == MPI_ERR_UNSUPPORTED_OPERATION
                ? " [MPI_ERR_UNSUPPORTED_OPERATION: this RMA library does not implement it]"
                : "");
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
 * run take forever (8 lock and 4 active-target measurements per series). */
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
            set_step(series, operation_names[op]);
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
    set_step(series, "lock data check");
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

/* ---- Active target ------------------------------------------------------------------ */

enum active_benchmark { FENCE_EMPTY, FENCE_PUT, PSCW_EMPTY, PSCW_PUT, NUM_ACTIVE };

static const char *active_names[] = {"fence_empty", "fence_put", "pscw_empty", "pscw_put"};

/* The put of fence_put and pscw_put: one 64-bit value, the epoch's stamp. */
#define ACTIVE_PUT_BYTES ((int)sizeof(uint64_t))

static int is_fence(enum active_benchmark benchmark) {
    return benchmark == FENCE_EMPTY || benchmark == FENCE_PUT;
}

static int has_put(enum active_benchmark benchmark) {
    return benchmark == FENCE_PUT || benchmark == PSCW_PUT;
}

/* The active-target calls of one style. A blocking call has finished on return and
 * leaves MPI_REQUEST_NULL; a nonblocking one leaves the request that finish() waits for. */
#ifdef NBRMA_NONBLOCKING_SERIES
#define SYNC_CALL(style, request, blocking, nonblocking) \
    do {                                                 \
        if ((style) == SYNC_NONBLOCKING) {               \
            CHECK_MPI(nonblocking);                      \
        } else {                                         \
            CHECK_MPI(blocking);                         \
            *(request) = MPI_REQUEST_NULL;               \
        }                                                \
    } while (0)
#else
#define SYNC_CALL(style, request, blocking, nonblocking) \
    do {                                                 \
        (void)(style);                                   \
        CHECK_MPI(blocking);                             \
        *(request) = MPI_REQUEST_NULL;                   \
    } while (0)
#endif

static void win_fence(int assert, enum sync_style style, MPI_Win win, MPI_Request *request) {
    SYNC_CALL(style, request, MPI_Win_fence(assert, win), MPIX_Win_ifence(assert, win, request));
}

static void win_start(MPI_Group group, enum sync_style style, MPI_Win win, MPI_Request *request) {
    SYNC_CALL(style, request, MPI_Win_start(group, 0, win),
              MPIX_Win_istart(group, 0, win, request));
}

static void win_complete(enum sync_style style, MPI_Win win, MPI_Request *request) {
    SYNC_CALL(style, request, MPI_Win_complete(win), MPIX_Win_icomplete(win, request));
}

static void win_post(MPI_Group group, enum sync_style style, MPI_Win win, MPI_Request *request) {
    SYNC_CALL(style, request, MPI_Win_post(group, 0, win), MPIX_Win_ipost(group, 0, win, request));
}

static void win_wait(enum sync_style style, MPI_Win win, MPI_Request *request) {
    SYNC_CALL(style, request, MPI_Win_wait(win), MPIX_Win_iwait(win, request));
}

static void finish(MPI_Request *request) {
    if (*request != MPI_REQUEST_NULL) CHECK_MPI(MPI_Wait(request, MPI_STATUS_IGNORE));
}

/* One active-target benchmark in progress on one rank. */
struct active_run {
    enum active_benchmark benchmark;
    enum sync_style style;
    MPI_Win win;
    MPI_Group peer_group; /* the other rank of the pair (MPI_GROUP_NULL on ranks > 1) */
    unsigned char *window_memory;
    char *buffer;
    int rank;
    int salt;
    long mismatches; /* data the target did not see as expected */
    char why[160];   /* the first of them */
};

/* Ranks 0 and 1 do the RMA; any further rank only joins the fences. */
static int in_pair(const struct active_run *run) { return run->rank <= TARGET; }
static int peer_of(const struct active_run *run) { return 1 - run->rank; }

/* What rank `from` puts in epoch `epoch`: never 0, never the same twice in a run. */
static uint64_t epoch_stamp(const struct active_run *run, int from, long epoch) {
    return ((uint64_t)(run->salt & 0xff) << 56) | ((uint64_t)(from & 0xff) << 48) |
           ((uint64_t)epoch & 0xffffffffffffULL);
}

static void mismatch(struct active_run *run, const char *what, long index, unsigned long long seen,
                     unsigned long long expected) {
    if (run->mismatches++ == 0)
        snprintf(run->why, sizeof run->why, "%s %ld: target sees %#llx, expected %#llx", what,
                 index, seen, expected);
}

/* On the target of a put, once the epoch that carried it is closed. */
static void expect_stamp(struct active_run *run, int slot, long epoch) {
    uint64_t seen, expected = epoch_stamp(run, peer_of(run), epoch);
    memcpy(&seen, run->window_memory + slot * ACTIVE_PUT_BYTES, sizeof seen);
    if (seen != expected) mismatch(run, "epoch", epoch, seen, expected);
}

/* Epoch `epoch` of a fence sequence: the fence that opens it (and closes epoch-1), then
 * the put. Puts alternate between two slots, in the origin buffer and in the target
 * window: the buffer slot written here was last read by the put of epoch-2, complete
 * since the previous fence finished, and the window slot checked here was written in
 * epoch-1 and is no target of epoch `epoch`. The first epoch opens the sequence. */
static void fence_epoch(struct active_run *run, long epoch) {
    int put = has_put(run->benchmark) && in_pair(run);
    MPI_Request request;
    win_fence(epoch == 0 ? MPI_MODE_NOPRECEDE : 0, run->style, run->win, &request);
    if (put) {
        int slot = (int)(epoch & 1);
        uint64_t stamp = epoch_stamp(run, run->rank, epoch);
        char *source = run->buffer + slot * ACTIVE_PUT_BYTES;
        memcpy(source, &stamp, sizeof stamp);
        CHECK_MPI(MPI_Put(source, ACTIVE_PUT_BYTES, MPI_BYTE, peer_of(run), slot * ACTIVE_PUT_BYTES,
                          ACTIVE_PUT_BYTES, MPI_BYTE, run->win));
    }
    finish(&request);
    if (put && epoch > 0) expect_stamp(run, (int)((epoch - 1) & 1), epoch - 1);
}

/* After `epochs` epochs: the fence that ends the sequence and the last epoch. */
static void fence_close(struct active_run *run, long epochs) {
    MPI_Request request;
    win_fence(MPI_MODE_NOSUCCEED, run->style, run->win, &request);
    finish(&request);
    if (has_put(run->benchmark) && in_pair(run) && epochs > 0)
        expect_stamp(run, (int)((epochs - 1) & 1), epochs - 1);
}

/* One GATS round: the origin's access epoch (start, [put], complete) against the
 * target's exposure epoch (post, wait). Complete cannot finish before the matching post,
 * and the target posts epoch i+1 only after its wait for epoch i, so no rank runs ahead. */
static void pscw_epoch(struct active_run *run, long epoch) {
    MPI_Request opening, closing;
    if (run->rank == ORIGIN) {
        win_start(run->peer_group, run->style, run->win, &opening);
        if (has_put(run->benchmark)) {
            uint64_t stamp = epoch_stamp(run, ORIGIN, epoch);
            memcpy(run->buffer, &stamp, sizeof stamp);
            CHECK_MPI(MPI_Put(run->buffer, ACTIVE_PUT_BYTES, MPI_BYTE, TARGET, 0, ACTIVE_PUT_BYTES,
                              MPI_BYTE, run->win));
        }
        win_complete(run->style, run->win, &closing);
        finish(&opening);
        finish(&closing);
    } else if (run->rank == TARGET) {
        win_post(run->peer_group, run->style, run->win, &opening);
        win_wait(run->style, run->win, &closing);
        finish(&opening);
        finish(&closing);
        if (has_put(run->benchmark)) expect_stamp(run, 0, epoch);
    }
}

static void active_epoch(struct active_run *run, long epoch) {
    if (is_fence(run->benchmark))
        fence_epoch(run, epoch);
    else
        pscw_epoch(run, epoch);
}

/* Before timing a put benchmark: one epoch of the same kind and style moves a 512 KiB
 * pattern (both ways for fence, origin to target for PSCW) into zeroed window memory. */
static void check_active_pattern(struct active_run *run) {
    int fence = is_fence(run->benchmark);
    int sends = fence ? in_pair(run) : run->rank == ORIGIN;
    int receives = fence ? in_pair(run) : run->rank == TARGET;
    int from = peer_of(run);
    /* No epoch is open on the window: the previous benchmark closed its last one. */
    if (receives) memset(run->window_memory, 0, MAX_SIZE);
    if (sends)
        for (int i = 0; i < MAX_SIZE; i++)
            run->buffer[i] = (char)pattern(i, run->salt + 16 * run->rank);
    MPI_Request opening, closing;
    if (fence) {
        win_fence(MPI_MODE_NOPRECEDE, run->style, run->win, &opening);
        if (sends)
            CHECK_MPI(MPI_Put(run->buffer, MAX_SIZE, MPI_BYTE, peer_of(run), 0, MAX_SIZE, MPI_BYTE,
                              run->win));
        finish(&opening);
        win_fence(MPI_MODE_NOSUCCEED, run->style, run->win, &closing);
        finish(&closing);
    } else if (run->rank == ORIGIN) {
        win_start(run->peer_group, run->style, run->win, &opening);
        CHECK_MPI(
            MPI_Put(run->buffer, MAX_SIZE, MPI_BYTE, TARGET, 0, MAX_SIZE, MPI_BYTE, run->win));
        win_complete(run->style, run->win, &closing);
        finish(&opening);
        finish(&closing);
    } else if (run->rank == TARGET) {
        win_post(run->peer_group, run->style, run->win, &opening);
        win_wait(run->style, run->win, &closing);
        finish(&opening);
        finish(&closing);
    }
    if (receives) {
        for (int i = 0; i < MAX_SIZE; i++) {
            unsigned char expected = pattern(i, run->salt + 16 * from);
            if (run->window_memory[i] != expected) {
                mismatch(run, "512 KiB pattern, byte", i, run->window_memory[i], expected);
                break;
            }
        }
    }
}

/* The origin's value, known to every rank (outside the timed loop only). */
static int agree(int value) {
    CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, ORIGIN, MPI_COMM_WORLD));
    return value;
}

/* Collective. Times one active-target benchmark; rank 0 reports. Returns 1 when its
 * data checks passed on every rank. */
static int run_active(const char *series, enum active_benchmark benchmark, enum sync_style style,
                      MPI_Win win, MPI_Group peer_group, unsigned char *window_memory, char *buffer,
                      int rank, int salt, int quick, int override) {
    struct active_run run = {.benchmark = benchmark,
                             .style = style,
                             .win = win,
                             .peer_group = peer_group,
                             .window_memory = window_memory,
                             .buffer = buffer,
                             .rank = rank,
                             .salt = salt};
    const char *name = active_names[benchmark];
    int bytes = has_put(benchmark) ? ACTIVE_PUT_BYTES : 0;
    set_step(series, name);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (has_put(benchmark)) check_active_pattern(&run);

    int iterations = iterations_for(ACTIVE_PUT_BYTES, quick, override);
    int warmup = iterations / 10 > 0 ? iterations / 10 : 1;
    double budget = time_budget(quick, override);

    /* Warm-up, in growing batches, for `warmup` epochs or a tenth of the budget. Every
     * rank must run the same epochs, so the origin decides after each batch. */
    long epoch = 0;
    double start = MPI_Wtime();
    for (int batch = 1; batch > 0;) {
        for (int i = 0; i < batch; i++) active_epoch(&run, epoch++);
        int next = 0;
        if (rank == ORIGIN && epoch < warmup && MPI_Wtime() - start < budget / 10) {
            next = batch < 64 ? 2 * batch : 64;
            if (next > warmup - epoch) next = (int)(warmup - epoch);
        }
        batch = agree(next);
    }

    /* Timed: as many epochs as fit the budget at the warm-up's pace, decided up front. */
    int timed = iterations;
    if (rank == ORIGIN && override <= 0) {
        double per_epoch = (MPI_Wtime() - start) / (double)epoch;
        if (per_epoch * timed > budget) timed = (int)(budget / per_epoch);
        if (timed < 16) timed = 16;
    }
    timed = agree(timed);
    start = MPI_Wtime();
    for (int i = 0; i < timed; i++) active_epoch(&run, epoch++);
    double elapsed = MPI_Wtime() - start;
    if (is_fence(benchmark)) fence_close(&run, epoch);

    /* The verdict comes first: a RESULT of a put benchmark always has its CHECK before. */
    int ok = run.mismatches == 0, all_ok = 1;
    if (!ok)
        fprintf(stderr, "latency: rank %d: %s %s: data check failed (%ld mismatches), first: %s\n",
                rank, series, name, run.mismatches, run.why);
    if (has_put(benchmark))
        CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        if (has_put(benchmark)) printf("CHECK %s %s %s\n", series, all_ok ? "ok" : "FAILED", name);
        printf("# %s %s %d: %d epochs in %.3f s\n", series, name, bytes, timed, elapsed);
        printf("RESULT %s %s %d %.3f\n", series, name, bytes, elapsed * 1e6 / timed);
        fflush(stdout);
    }
    return all_ok;
}

/* Collective: the active-target benchmarks, each on every series before the next, so
 * an error that aborts a later benchmark (say PSCW) leaves the earlier ones measured. */
static int run_active_benchmarks(MPI_Win win, MPI_Group peer_group, unsigned char *window_memory,
                                 char *buffer, int rank, int quick, int override) {
    int all_ok = 1;
    for (int b = 0; b < NUM_ACTIVE; b++) {
        enum active_benchmark benchmark = (enum active_benchmark)b;
        all_ok &= run_active(BLOCKING_SERIES, benchmark, SYNC_BLOCKING, win, peer_group,
                             window_memory, buffer, rank, 24 + b, quick, override);
#ifdef NBRMA_NONBLOCKING_SERIES
        all_ok &= run_active("nbrma-nonblocking", benchmark, SYNC_NONBLOCKING, win, peer_group,
                             window_memory, buffer, rank, 32 + b, quick, override);
#endif
    }
    return all_ok;
}

static void usage(void) {
    printf(
        "usage: mpiexec -n 2 latency [--quick] [--iterations N] [--target passive|active|all]\n"
        "       latency --list [--target passive|active|all]\n"
        "  --quick          a tenth of the iterations and time budget\n"
        "  --iterations N   exactly N timed iterations for every size, no time budget\n"
        "  --target T       passive: the lock benchmarks; active: fence and PSCW;\n"
        "                   all (default): both, passive first\n"
        "  --list           print the rows \"<benchmark> <bytes>\" it would report, in order,\n"
        "                   and exit (no MPI, no mpiexec needed)\n");
}

/* The rows a run reports, in order, without running anything (for nbrma-bench's table). */
static void list_benchmarks(int passive, int active) {
    if (passive)
        for (int op = OP_PUT; op <= OP_GET; op++)
            for (int s = 0; s < NUM_SIZES; s++) printf("%s %d\n", operation_names[op], sizes[s]);
    if (active)
        for (int b = 0; b < NUM_ACTIVE; b++)
            printf("%s %d\n", active_names[b],
                   has_put((enum active_benchmark)b) ? ACTIVE_PUT_BYTES : 0);
}

int main(int argc, char **argv) {
    int quick = 0, override = 0, passive = 1, active = 1, list = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
            const char *target = argv[++i];
            passive = strcmp(target, "passive") == 0 || strcmp(target, "all") == 0;
            active = strcmp(target, "active") == 0 || strcmp(target, "all") == 0;
            if (!passive && !active) {
                fprintf(stderr, "latency: unknown --target '%s'\n", target);
                usage();
                return 1;
            }
        } else if (strcmp(argv[i], "--list") == 0) {
            list = 1;
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
    if (list) {
        list_benchmarks(passive, active);
        return 0;
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
        const char *targets = !active ? "passive" : !passive ? "active" : "passive and active";
        printf("# latency: %d ranks, %s iterations%s, %s target\n", size, quick ? "quick" : "full",
               override > 0 ? " (overridden)" : "", targets);
#ifdef NBRMA_NONBLOCKING_SERIES
        printf("# nbrma active: %s\n", nbrma_is_active() ? "yes" : "NO");
#endif
        fflush(stdout);
    }

    int all_ok = 1;
    if (passive) {
        all_ok &= check_data(BLOCKING_SERIES, SYNC_BLOCKING, window_memory, buffer, win, rank, 1);
        run_series(BLOCKING_SERIES, SYNC_BLOCKING, buffer, win, rank, quick, override);
#ifdef NBRMA_NONBLOCKING_SERIES
        all_ok &=
            check_data("nbrma-nonblocking", SYNC_NONBLOCKING, window_memory, buffer, win, rank, 2);
        run_series("nbrma-nonblocking", SYNC_NONBLOCKING, buffer, win, rank, quick, override);
#endif
    }
    if (active) {
        /* PSCW groups: each rank of the pair names the other (the window's group is
         * MPI_COMM_WORLD's, so the ranks are the same). */
        MPI_Group world_group, peer_group = MPI_GROUP_NULL;
        CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
        if (rank <= TARGET) {
            int peer = 1 - rank;
            CHECK_MPI(MPI_Group_incl(world_group, 1, &peer, &peer_group));
        }
        all_ok &=
            run_active_benchmarks(win, peer_group, window_memory, buffer, rank, quick, override);
        if (peer_group != MPI_GROUP_NULL) CHECK_MPI(MPI_Group_free(&peer_group));
        CHECK_MPI(MPI_Group_free(&world_group));
    }
#ifdef NBRMA_NONBLOCKING_SERIES
    if (rank == ORIGIN) {
        unsigned long long epochs = 0, operations = 0;
        if (nbrma_get_counter("epochs_completed", &epochs) == MPI_SUCCESS &&
            nbrma_get_counter("rma_ops", &operations) == MPI_SUCCESS)
            printf("# nbrma counters on rank 0: epochs_completed=%llu rma_ops=%llu\n", epochs,
                   operations);
    }
#endif
    set_step("teardown", "(MPI_Win_free)");

    CHECK_MPI(MPI_Win_free(&win));
    free(buffer);
    MPI_Finalize();
    return all_ok ? 0 : 3;
}
