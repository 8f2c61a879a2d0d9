/*
 * latency.c — the latency group of nbrma-bench (bench.h): RMA latency between two ranks
 * of one node, a raw shared-memory baseline, and MPICH's two-sided ping-pong.
 *
 * Rank 0 is the origin, rank 1 the target; the window comes from MPI_Win_allocate
 * (512 KiB). Every row runs a warm-up, then as many iterations as fit a time budget
 * (at most 100000 iterations, 20000 from 8 KiB, 5000 at 512 KiB; at most 0.25 s per row
 * with --quick, 2 s without; --iterations N: exactly N, no budget), timed by rank 0 in
 * blocks of 16. RESULT: microseconds per iteration, the median over the blocks of a
 * block's mean (a few blocks hit by a descheduled rank on a shared machine would
 * otherwise dominate; the plain mean is on the "#" line before). <parameter> is the
 * message size in bytes (0 for an empty epoch). Rows:
 *
 * lock_put_unlock, lock_get_unlock (8 B, 2 KiB, 8 KiB, 512 KiB): the origin times
 *   MPI_Win_lock(EXCLUSIVE) / MPI_Put or MPI_Get / MPI_Win_unlock. The target sits in
 *   MPI_Barrier: MPICH's RMA needs the target to progress and MPICH progresses there;
 *   nbrma's passive target needs nothing from it. Before timing, a 512 KiB put/get
 *   round trip under the same synchronization checks the data really moves.
 *   Series raw-shm measures the same rows without MPI RMA, as the shared-memory
 *   baseline of Gropp and Thakur (Table 1): a POSIX shared-memory segment (shm_open +
 *   mmap, 0600, unlinked once both ranks mapped it) holds a lock word and the data;
 *   one iteration is a compare-and-swap spin for the lock word (acquire), a memcpy of
 *   N bytes into (put) or out of (get) the segment, and a release store. Both binaries
 *   measure it (nbrma-bench keeps the first job's value, the mpich binary's).
 *
 * osu_<op>_<sync> (8 B; the OSU one-sided set): op is put, get, acc (MPI_Accumulate,
 *   MPI_SUM on one int64), fop (MPI_Fetch_and_op, MPI_SUM) or cas
 *   (MPI_Compare_and_swap); sync is
 *     lock      lock(EXCLUSIVE) / op / unlock per iteration
 *     flush     lock_all once (untimed), op / flush(target) per iteration
 *     lock_all  lock_all / op / unlock_all per iteration
 *     fence     fence sequence, the origin's op in every epoch (time per epoch)
 *     pscw      origin start / op / complete against target post / wait
 *   Data checks: in every iteration the origin checks what get, fop and cas return
 *   (get reads a constant, fop adds 1 and must see the previous count, cas swaps i for
 *   i+1 and must see i), and at the end the target checks its word: the last put's
 *   stamp, or the number of acc/fop/cas operations.
 *
 * osu_<op>_<sync>_create, _dynamic, _alloc_mem (8 B; blocking series only; sync lock or
 *   flush): the same rows on memory the user owns, as OSU's -w create and -w dynamic: an
 *   MPI_Win_create window over a page-aligned 4 KiB buffer, and an MPI_Win_create_dynamic
 *   window with that buffer attached (the target's address as displacement); and
 *   osu_<op>_<sync>_alloc_mem: an MPI_Win_create window over 4 KiB from MPI_Alloc_mem
 *   (nbrma hands out node-shareable memory there). Same checks.
 *
 * fence_empty, fence_put, pscw_empty, pscw_put: both ranks take part in every epoch;
 *   rank 0 reports the mean time of one epoch:
 *     fence_empty  a sequence of MPI_Win_fence; one epoch is the span between two fences
 *     fence_put    the same, and in every epoch each rank puts 8 B to the other
 *     pscw_empty   rank 0 start / complete against rank 1 post / wait: a full GATS round
 *                  per epoch (the origin cannot complete epoch i before the target has
 *                  posted i, which it does only after its wait for epoch i-1 returned)
 *     pscw_put     the same with one 8-byte put from rank 0 to rank 1 in every epoch
 *   The ranks agree on the number of epochs (the origin decides, MPI_Bcast outside the
 *   timed loop). Data checks: a 512 KiB pattern under the same synchronization before
 *   timing, and in every timed epoch the put carries the epoch's number, which the
 *   target reads back once the epoch is closed (fence_put alternates two 8-byte slots,
 *   so the slot read was not a target of the epoch in progress).
 *
 * pingpong, pingpong_waitall (8 B, blocking series only): two-sided MPI_Send/MPI_Recv,
 *   and MPI_Isend/MPI_Irecv completed by MPI_Waitall, while the window exists and is
 *   idle. Reported as half a round trip. On bench_mpich this is MPICH alone; on
 *   bench_nbrma, MPICH with libnbrma loaded: the cost of nbrma being in the process
 *   (and of its interposition of the two-sided calls, where it has any). Every message
 *   carries its round's number, checked on receipt.
 *
 * allreduce (8 B, blocking series only): MPI_Allreduce (MPI_SUM) of one 64-bit value over
 *   every rank, the window alive and idle; the time of one allreduce. Each rank adds its
 *   stamp of the round; every rank checks the sum. With pingpong, the cost of nbrma in
 *   the process for two-sided and collective calls (maint/bench_thread_cost.sh compares
 *   them across library versions and thread levels).
 *
 * Series: the blocking one (mpich, nbrma-blocking, or ompi-osc-<component> on bench_ompi,
 * which measures the RMA rows only: no raw-shm, pingpong, pingpong_waitall or allreduce
 * rows, as they do not involve Open MPI's one-sided component), raw-shm and, built with
 * -DNBRMA_NONBLOCKING_SERIES, nbrma-nonblocking: every RMA row again on the nonblocking
 * twins completed by MPI_Wait (MPIX_Win_ilock/iunlock, ilock_all/iunlock_all, iflush,
 * ifence — the epoch's op is issued before the fence's request completes, as the lock
 * series issues its op before the lock's —, istart/icomplete, ipost/iwait).
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Under valgrind --tool=callgrind --collect-atstart=no (maint/bench_thread_cost.sh
 * --callgrind), only the timed loops are counted; elsewhere a no-op. */
#ifdef __has_include
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define COLLECT_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#endif
#endif
#ifndef COLLECT_TOGGLE
#define COLLECT_TOGGLE() ((void)0)
#endif

enum { ORIGIN = 0, TARGET = 1 };

/* The series this binary measures, with NBRMA_BENCH_SERIES_SUFFIX appended (nbrma-bench's
 * nbrma-ucx job: "-ucx"); set by bench_latency. */
static char blocking_series[64], nonblocking_series[64];

static const int sizes[] = {8, 2 * 1024, 8 * 1024, 512 * 1024};
#define NUM_SIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAX_SIZE (512 * 1024)
#define WORD_BYTES ((int)sizeof(int64_t))

enum operation { OP_PUT, OP_GET };
static const char *operation_names[] = {"lock_put_unlock", "lock_get_unlock"};

/* How an iteration synchronizes: MPI's blocking calls, nbrma's nonblocking twins, or no
 * MPI at all (raw-shm). */
enum sync_style { SYNC_BLOCKING, SYNC_NONBLOCKING, SYNC_RAW_SHM };

static int iterations_for(int bytes, const struct bench_options *options) {
    if (options->iterations > 0) return options->iterations;
    (void)options->quick; /* quick mode shortens the time budget, not the count */
    return bytes <= 2 * 1024 ? 100000 : bytes <= 64 * 1024 ? 20000 : 5000;
}

/* Seconds one row may take (its warm-up a tenth more): 84 rows on the nbrma binary. */
static double time_budget(const struct bench_options *options) {
    return options->iterations > 0 ? 1e9 : options->quick ? 0.25 : 2.0;
}

static void report(const char *series, const char *benchmark, int bytes, double usec) {
    char parameter[16];
    snprintf(parameter, sizeof parameter, "%d", bytes);
    bench_result(series, benchmark, parameter, usec, "usec");
}

static unsigned char pattern(int i, int salt) { return (unsigned char)((i * 7 + salt) & 0xff); }

/* Origin-only timing, while every other rank waits in a barrier. */
typedef void (*origin_body)(void *context, long iteration);

/* The clock of the timed iterations, read every BLOCK iterations (the reads the time
 * budget needs anyway). The figure reported is the median over the blocks of a block's
 * mean: on a shared machine a few blocks hit by a descheduled rank would otherwise
 * dominate the mean. The plain mean goes to the comment line. */
#define BLOCK 16

struct block_clock {
    double *blocks; /* seconds of each full block */
    long count, capacity;
    double mark; /* the end of the last full block */
};

static void clock_start(struct block_clock *clock, long iterations) {
    clock->capacity = iterations / BLOCK + 1;
    clock->blocks = malloc((size_t)clock->capacity * sizeof *clock->blocks);
    clock->count = 0;
    clock->mark = MPI_Wtime();
}

/* After `done` timed iterations; returns the time now when it read the clock, else 0. */
static double clock_tick(struct block_clock *clock, long done) {
    if (done % BLOCK != 0) return 0.0;
    double now = MPI_Wtime();
    if (clock->blocks && clock->count < clock->capacity)
        clock->blocks[clock->count++] = now - clock->mark;
    clock->mark = now;
    return now;
}

/* Microseconds per iteration: the median block's, or the mean without a full block. */
static double clock_usec(struct block_clock *clock, double elapsed, long timed) {
    double usec = elapsed * 1e6 / (double)timed;
    if (clock->blocks && clock->count > 0) {
        qsort(clock->blocks, (size_t)clock->count, sizeof *clock->blocks, bench_compare_doubles);
        long n = clock->count;
        double median =
            n % 2 ? clock->blocks[n / 2] : (clock->blocks[n / 2 - 1] + clock->blocks[n / 2]) / 2;
        usec = median * 1e6 / BLOCK;
    }
    free(clock->blocks);
    clock->blocks = NULL;
    return usec;
}

struct timing {
    long timed;     /* timed iterations */
    long total;     /* all iterations, warm-up included */
    double elapsed; /* seconds of the timed ones */
    double usec;    /* the figure to report (see BLOCK) */
};

static struct timing origin_loop(origin_body body, void *context, int iterations,
                                 const struct bench_options *options) {
    struct timing t = {0, 0, 0.0, 0.0};
    int warmup = iterations / 10 > 0 ? iterations / 10 : 1;
    double budget = time_budget(options);
    double start = MPI_Wtime();
    for (int i = 0; i < warmup; i++) {
        body(context, t.total++);
        if ((i & 15) == 15 && MPI_Wtime() - start > budget / 10) break;
    }
    struct block_clock clock;
    clock_start(&clock, iterations);
    start = clock.mark;
    COLLECT_TOGGLE();
    while (t.timed < iterations) {
        body(context, t.total++);
        t.timed++;
        double now = clock_tick(&clock, t.timed);
        if (now > 0.0 && now - start > budget) break;
    }
    COLLECT_TOGGLE();
    t.elapsed = MPI_Wtime() - start;
    t.usec = clock_usec(&clock, t.elapsed, t.timed);
    return t;
}

/* The origin's value, known to every rank (outside timed loops only). */
static long agree(long value) {
    BENCH_MPI(MPI_Bcast(&value, 1, MPI_LONG, ORIGIN, MPI_COMM_WORLD));
    return value;
}

/* Every rank's verdict; the origin prints the CHECK line. */
static int verdict(const char *series, const char *benchmark, int ok, int rank) {
    int all_ok = 0;
    BENCH_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (rank == ORIGIN) bench_check(series, benchmark, all_ok);
    return all_ok;
}

/* ---- The raw shared-memory baseline ---------------------------------------------- */

struct raw_shm {
    uint64_t *lock_word; /* 0 free, 1 held */
    unsigned char *data; /* MAX_SIZE bytes */
    void *mapping;
    size_t length;
};

static void raw_lock(uint64_t *word) {
    uint64_t expected = 0;
    while (
        !__atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        while (__atomic_load_n(word, __ATOMIC_RELAXED) != 0) {
        }
        expected = 0;
    }
}

static void raw_unlock(uint64_t *word) { __atomic_store_n(word, 0, __ATOMIC_RELEASE); }

/* Collective. Maps one segment into ranks 0 and 1; returns 0 (nothing mapped, a
 * comment says why) when they are not on one node or the segment cannot be made. */
static int raw_shm_map(struct raw_shm *shm, int rank) {
    memset(shm, 0, sizeof *shm);
    MPI_Comm node;
    BENCH_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int leader = rank;
    BENCH_MPI(MPI_Bcast(&leader, 1, MPI_INT, 0, node));
    BENCH_MPI(MPI_Comm_free(&node));
    int leaders[2] = {-1, -1};
    if (rank <= TARGET) leaders[rank] = leader;
    int pair_leaders[2];
    BENCH_MPI(MPI_Allreduce(leaders, pair_leaders, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (pair_leaders[0] != pair_leaders[1]) {
        if (rank == ORIGIN) printf("# raw-shm: ranks 0 and 1 are not on one node, skipped\n");
        return 0;
    }

    shm->length = 4096 + MAX_SIZE;
    char name[64] = "";
    int ok = 1;
    if (rank == TARGET) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(name, sizeof name, "/nbrma-bench-%ld-%ld", (long)getpid(), (long)now.tv_nsec);
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        ok = fd >= 0 && ftruncate(fd, (off_t)shm->length) == 0;
        if (fd >= 0) {
            shm->mapping = ok ? mmap(NULL, shm->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                              : MAP_FAILED;
            ok = shm->mapping != MAP_FAILED;
            close(fd);
        }
        if (!ok) perror("bench: raw-shm segment");
    }
    BENCH_MPI(MPI_Bcast(name, sizeof name, MPI_CHAR, TARGET, MPI_COMM_WORLD));
    BENCH_MPI(MPI_Bcast(&ok, 1, MPI_INT, TARGET, MPI_COMM_WORLD));
    if (ok && rank == ORIGIN) {
        int fd = shm_open(name, O_RDWR, 0600);
        shm->mapping = fd >= 0 ? mmap(NULL, shm->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                               : MAP_FAILED;
        if (fd >= 0) close(fd);
        if (shm->mapping == MAP_FAILED) {
            perror("bench: raw-shm segment (origin)");
            ok = 0;
        }
    }
    int all_ok = 0;
    BENCH_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (rank == TARGET && name[0]) shm_unlink(name); /* both mapped it, or gave up */
    if (rank <= TARGET && ok && shm->mapping != MAP_FAILED && shm->mapping) {
        shm->lock_word = (uint64_t *)shm->mapping;
        shm->data = (unsigned char *)shm->mapping + 4096;
    }
    if (!all_ok) {
        if (shm->lock_word) munmap(shm->mapping, shm->length);
        memset(shm, 0, sizeof *shm);
        if (rank == ORIGIN) printf("# raw-shm: no shared segment, skipped\n");
        return 0;
    }
    return 1;
}

static void raw_shm_unmap(struct raw_shm *shm) {
    if (shm->lock_word) munmap(shm->mapping, shm->length);
    memset(shm, 0, sizeof *shm);
}

/* ---- Lock / op / unlock ---------------------------------------------------------- */

struct passive_run {
    enum operation op;
    enum sync_style style;
    int bytes;
    char *buffer;
    MPI_Win win;
    struct raw_shm *shm;
};

static void communicate(enum operation op, char *buffer, int bytes, MPI_Win win) {
    if (op == OP_PUT)
        BENCH_MPI(MPI_Put(buffer, bytes, MPI_BYTE, TARGET, 0, bytes, MPI_BYTE, win));
    else
        BENCH_MPI(MPI_Get(buffer, bytes, MPI_BYTE, TARGET, 0, bytes, MPI_BYTE, win));
}

/* One lock epoch carrying one operation; returns when the operation is complete. */
static void one_epoch(enum operation op, enum sync_style style, char *buffer, int bytes,
                      MPI_Win win, struct raw_shm *shm) {
    if (style == SYNC_RAW_SHM) {
        raw_lock(shm->lock_word);
        if (op == OP_PUT)
            memcpy(shm->data, buffer, (size_t)bytes);
        else
            memcpy(buffer, shm->data, (size_t)bytes);
        raw_unlock(shm->lock_word);
        return;
    }
#ifdef NBRMA_NONBLOCKING_SERIES
    if (style == SYNC_NONBLOCKING) {
        MPI_Request lock_request, unlock_request;
        BENCH_MPI(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win, &lock_request));
        communicate(op, buffer, bytes, win);
        BENCH_MPI(MPIX_Win_iunlock(TARGET, win, &unlock_request));
        BENCH_MPI(MPI_Wait(&lock_request, MPI_STATUS_IGNORE));
        BENCH_MPI(MPI_Wait(&unlock_request, MPI_STATUS_IGNORE));
        return;
    }
#endif
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    communicate(op, buffer, bytes, win);
    BENCH_MPI(MPI_Win_unlock(TARGET, win));
}

static void passive_body(void *context, long iteration) {
    struct passive_run *run = context;
    (void)iteration;
    one_epoch(run->op, run->style, run->buffer, run->bytes, run->win, run->shm);
}

/* Collective. Rank 0 times; everyone else waits in the barrier that ends the row. */
static void run_lock_series(const char *series, enum sync_style style, char *buffer, MPI_Win win,
                            struct raw_shm *shm, int rank, const struct bench_options *options) {
    for (int op = OP_PUT; op <= OP_GET; op++) {
        if (!bench_selected(options, operation_names[op])) continue;
        for (int s = 0; s < NUM_SIZES; s++) {
            struct passive_run run = {(enum operation)op, style, sizes[s], buffer, win, shm};
            bench_set_step(series, operation_names[op]);
            BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (rank == ORIGIN) {
                struct timing t =
                    origin_loop(passive_body, &run, iterations_for(sizes[s], options), options);
                printf("# %s %s %d: %ld iterations in %.3f s (mean %.4g usec)\n", series,
                       operation_names[op], sizes[s], t.timed, t.elapsed,
                       t.elapsed * 1e6 / (double)t.timed);
                report(series, operation_names[op], sizes[s], t.usec);
            }
            /* The target makes MPICH progress here while the origin runs. */
            BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
}

/* The target's own access to its window memory: under a lock on itself for the MPI
 * series, under the raw lock word for raw-shm. */
static void target_access_begin(enum sync_style style, MPI_Win win, struct raw_shm *shm) {
    if (style == SYNC_RAW_SHM)
        raw_lock(shm->lock_word);
    else
        BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
}

static void target_access_end(enum sync_style style, MPI_Win win, struct raw_shm *shm) {
    if (style == SYNC_RAW_SHM)
        raw_unlock(shm->lock_word);
    else
        BENCH_MPI(MPI_Win_unlock(TARGET, win));
}

/* Collective. Origin puts a 512 KiB pattern, the target reads it in its own memory and
 * the origin gets it back. Returns 1 when everyone saw the right bytes. */
static int check_lock_data(const char *series, enum sync_style style, unsigned char *window_memory,
                           char *buffer, MPI_Win win, struct raw_shm *shm, int rank, int salt) {
    int ok = 1;
    char why[128] = "";
    unsigned char *target_memory = style == SYNC_RAW_SHM ? shm->data : window_memory;
    bench_set_step(series, "lock data check");
    if (rank == TARGET) {
        target_access_begin(style, win, shm);
        memset(target_memory, 0, MAX_SIZE);
        target_access_end(style, win, shm);
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        for (int i = 0; i < MAX_SIZE; i++) buffer[i] = (char)pattern(i, salt);
        one_epoch(OP_PUT, style, buffer, MAX_SIZE, win, shm);
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == TARGET) {
        target_access_begin(style, win, shm);
        for (int i = 0; i < MAX_SIZE && ok; i++) {
            if (target_memory[i] != pattern(i, salt)) {
                ok = 0;
                snprintf(why, sizeof why, "put: target byte %d is %d, expected %d", i,
                         target_memory[i], pattern(i, salt));
            }
        }
        target_access_end(style, win, shm);
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == ORIGIN) {
        memset(buffer, 0, MAX_SIZE);
        one_epoch(OP_GET, style, buffer, MAX_SIZE, win, shm);
        for (int i = 0; i < MAX_SIZE && ok; i++) {
            if ((unsigned char)buffer[i] != pattern(i, salt)) {
                ok = 0;
                snprintf(why, sizeof why, "get: origin byte %d is %d, expected %d", i,
                         (unsigned char)buffer[i], pattern(i, salt));
            }
        }
    }
    if (!ok) fprintf(stderr, "bench: rank %d: %s: data check failed: %s\n", rank, series, why);
    return verdict(series, NULL, ok, rank);
}

/* ---- The OSU one-sided set (8 B) --------------------------------------------------- */

/* The ops on one 8-byte MPI_INT64_T word, then the stock benchmarks' own shapes (OSU 7's
 * default datatype MPI_CHAR): an accumulate of 8 MPI_CHAR sums, and a fetch_and_op sum
 * and a compare_and_swap of 1 MPI_CHAR (rows osu_acc_char_<sync>, ...; allocate windows
 * only). */
enum osu_op {
    OSU_PUT,
    OSU_GET,
    OSU_ACC,
    OSU_FOP,
    OSU_CAS,
    OSU_ACC_CHAR,
    OSU_FOP_CHAR,
    OSU_CAS_CHAR,
    NUM_OSU_OPS
};
#define NUM_WORD_OSU_OPS OSU_ACC_CHAR /* the ops of the flavor rows */
enum osu_sync { OSU_LOCK, OSU_FLUSH, OSU_LOCK_ALL, OSU_FENCE, OSU_PSCW, NUM_OSU_SYNCS };
static const char *osu_op_names[] = {"put",      "get",      "acc",     "fop",
                                     "cas",      "acc_char", "fop_char", "cas_char"};
static const char *osu_sync_names[] = {"lock", "flush", "lock_all", "fence", "pscw"};

static void osu_name(char *name, size_t size, int op, int sync) {
    snprintf(name, size, "osu_%s_%s", osu_op_names[op], osu_sync_names[sync]);
}

/* The flavors of the osu_<op>_<sync>_<flavor> rows (OSU's -w create / -w dynamic). */
enum win_flavor { FLAVOR_ALLOCATE, FLAVOR_CREATE, FLAVOR_DYNAMIC, FLAVOR_ALLOC_MEM };
static const char *flavor_names[] = {"allocate", "create", "dynamic", "alloc_mem"};

static void osu_flavor_name(char *name, size_t size, int op, int sync, enum win_flavor flavor) {
    osu_name(name, size, op, sync);
    if (flavor != FLAVOR_ALLOCATE) {
        size_t used = strlen(name);
        snprintf(name + used, size - used, "_%s", flavor_names[flavor]);
    }
}

/* One OSU row in progress. The target's word is at displacement 0 of its window; the
 * origin keeps two slots of source, compare and result buffers (fence epochs alternate
 * them: the result of epoch i is read after the fence that opens epoch i+1). */
struct osu_run {
    enum osu_op op;
    enum sync_style style;
    MPI_Win win;
    MPI_Aint disp; /* of the target's word (a dynamic window's: its address) */
    int salt;
    int64_t source[2], compare[2], result[2];
    long mismatches;
    char why[160];
};

/* A stock-shape (MPI_CHAR) op: its bytes are the low bytes of the word's slots. */
static int osu_chars(const struct osu_run *run) { return run->op >= OSU_ACC_CHAR; }

/* What put stores in iteration i, and the constant get must read. */
static int64_t osu_stamp(const struct osu_run *run, long i) {
    return (int64_t)(((uint64_t)(run->salt & 0xff) << 56) | ((uint64_t)i & 0xffffffffffffULL)) + 1;
}

static int64_t osu_initial(const struct osu_run *run) {
    return run->op == OSU_GET ? osu_stamp(run, 0x5eed) : run->op == OSU_PUT ? -1 : 0;
}

static void osu_mismatch(struct osu_run *run, const char *what, long index, long long seen,
                         long long expected) {
    if (run->mismatches++ == 0)
        snprintf(run->why, sizeof run->why, "%s %ld: %lld, expected %lld", what, index, seen,
                 expected);
}

/* Issues the op of iteration i, into slot i & 1. */
static void osu_issue(struct osu_run *run, long i) {
    int slot = (int)(i & 1);
    char *source = (char *)&run->source[slot], *result = (char *)&run->result[slot];
    switch (run->op) {
        case OSU_ACC_CHAR:
            memset(source, 1, sizeof run->source[slot]);
            BENCH_MPI(MPI_Accumulate(source, WORD_BYTES, MPI_CHAR, TARGET, run->disp, WORD_BYTES,
                                     MPI_CHAR, MPI_SUM, run->win));
            return;
        case OSU_FOP_CHAR:
            source[0] = 1;
            result[0] = -1;
            BENCH_MPI(MPI_Fetch_and_op(source, result, MPI_CHAR, TARGET, run->disp, MPI_SUM,
                                       run->win));
            return;
        case OSU_CAS_CHAR:
            *(char *)&run->compare[slot] = (char)i;
            source[0] = (char)(i + 1);
            result[0] = -1;
            BENCH_MPI(MPI_Compare_and_swap(source, &run->compare[slot], result, MPI_CHAR, TARGET,
                                           run->disp, run->win));
            return;
        default:
            break;
    }
    switch (run->op) {
        case OSU_PUT:
            run->source[slot] = osu_stamp(run, i);
            BENCH_MPI(
                MPI_Put(&run->source[slot], 1, MPI_INT64_T, TARGET, run->disp, 1, MPI_INT64_T,
                        run->win));
            break;
        case OSU_GET:
            run->result[slot] = 0;
            BENCH_MPI(
                MPI_Get(&run->result[slot], 1, MPI_INT64_T, TARGET, run->disp, 1, MPI_INT64_T,
                        run->win));
            break;
        case OSU_ACC:
            run->source[slot] = 1;
            BENCH_MPI(MPI_Accumulate(&run->source[slot], 1, MPI_INT64_T, TARGET, run->disp, 1, MPI_INT64_T,
                                     MPI_SUM, run->win));
            break;
        case OSU_FOP:
            run->source[slot] = 1;
            run->result[slot] = -1;
            BENCH_MPI(MPI_Fetch_and_op(&run->source[slot], &run->result[slot], MPI_INT64_T, TARGET,
                                       run->disp, MPI_SUM, run->win));
            break;
        case OSU_CAS:
            run->compare[slot] = i;
            run->source[slot] = i + 1;
            run->result[slot] = -1;
            BENCH_MPI(MPI_Compare_and_swap(&run->source[slot], &run->compare[slot],
                                           &run->result[slot], MPI_INT64_T, TARGET, run->disp, run->win));
            break;
        default:
            break;
    }
}

/* Once the op of iteration i is complete: what it returned. */
static void osu_verify(struct osu_run *run, long i) {
    int64_t seen = run->result[i & 1];
    if (run->op == OSU_FOP_CHAR || run->op == OSU_CAS_CHAR) {
        unsigned char byte = *(unsigned char *)&run->result[i & 1];
        if (byte != (unsigned char)i)
            osu_mismatch(run, osu_op_names[run->op], i, byte, (unsigned char)i);
        return;
    }
    if (run->op == OSU_GET && seen != osu_initial(run))
        osu_mismatch(run, "get", i, seen, osu_initial(run));
    else if ((run->op == OSU_FOP || run->op == OSU_CAS) && seen != i)
        osu_mismatch(run, osu_op_names[run->op], i, seen, i);
}

/* The target's word once `total` ops are complete. */
static int64_t osu_final(const struct osu_run *run, long total) {
    if (osu_chars(run)) { /* each char of the op counts the ops, modulo 256 */
        int64_t word = 0;
        memset(&word, (unsigned char)total, run->op == OSU_ACC_CHAR ? WORD_BYTES : 1);
        return word;
    }
    switch (run->op) {
        case OSU_PUT:
            return total > 0 ? osu_stamp(run, total - 1) : osu_initial(run);
        case OSU_GET:
            return osu_initial(run);
        default:
            return total;
    }
}

/* On the target, outside any epoch of the benchmark: set or check its word. */
static void osu_target_word(struct osu_run *run, int64_t *word, int set, long total) {
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, run->win));
    if (set)
        *word = osu_initial(run);
    else if (*word != osu_final(run, total))
        osu_mismatch(run, "target word after ops", total, *word, osu_final(run, total));
    BENCH_MPI(MPI_Win_unlock(TARGET, run->win));
}

/* A request-or-not closing call: the blocking call, or the nonblocking twin (which sets
 * sync_now_request) and a wait. */
#define SYNC_NOW(style, blocking, nonblocking)                                             \
    do {                                                                                   \
        MPI_Request sync_now_request;                                                      \
        BENCH_SYNC((style) == SYNC_NONBLOCKING, &sync_now_request, blocking, nonblocking); \
        bench_finish(&sync_now_request);                                                   \
    } while (0)

struct osu_passive {
    struct osu_run *run;
    enum osu_sync sync;
};

static void osu_passive_body(void *context, long i) {
    struct osu_passive *p = context;
    struct osu_run *run = p->run;
    MPI_Win win = run->win;
#ifdef NBRMA_NONBLOCKING_SERIES
    if (run->style == SYNC_NONBLOCKING && p->sync != OSU_FLUSH) {
        MPI_Request opening, closing;
        if (p->sync == OSU_LOCK)
            BENCH_MPI(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win, &opening));
        else
            BENCH_MPI(MPIX_Win_ilock_all(0, win, &opening));
        osu_issue(run, i);
        if (p->sync == OSU_LOCK)
            BENCH_MPI(MPIX_Win_iunlock(TARGET, win, &closing));
        else
            BENCH_MPI(MPIX_Win_iunlock_all(win, &closing));
        BENCH_MPI(MPI_Wait(&opening, MPI_STATUS_IGNORE));
        BENCH_MPI(MPI_Wait(&closing, MPI_STATUS_IGNORE));
        osu_verify(run, i);
        return;
    }
#endif
    switch (p->sync) {
        case OSU_LOCK:
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
            osu_issue(run, i);
            BENCH_MPI(MPI_Win_unlock(TARGET, win));
            break;
        case OSU_FLUSH:
            osu_issue(run, i);
            SYNC_NOW(run->style, MPI_Win_flush(TARGET, win),
                     MPIX_Win_iflush(TARGET, win, &sync_now_request));
            break;
        default:
            BENCH_MPI(MPI_Win_lock_all(0, win));
            osu_issue(run, i);
            BENCH_MPI(MPI_Win_unlock_all(win));
            break;
    }
    osu_verify(run, i);
}

/* Collective: one passive-target OSU row. */
static int run_osu_passive(const char *series, enum sync_style style, enum osu_op op,
                           enum osu_sync sync, MPI_Win win, int64_t *window_word, int rank,
                           int salt, const struct bench_options *options,
                           enum win_flavor flavor, MPI_Aint disp) {
    char name[48];
    osu_flavor_name(name, sizeof name, op, sync, flavor);
    if (!bench_selected(options, name)) return 1;
    bench_set_step(series, name);
    struct osu_run run = {.op = op, .style = style, .win = win, .disp = disp, .salt = salt};
    if (rank == TARGET) osu_target_word(&run, window_word, 1, 0);
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    struct timing t = {0, 0, 0.0, 0.0};
    if (rank == ORIGIN) {
        struct osu_passive p = {&run, sync};
        if (sync == OSU_FLUSH)
            SYNC_NOW(style, MPI_Win_lock_all(0, win),
                     MPIX_Win_ilock_all(0, win, &sync_now_request));
        t = origin_loop(osu_passive_body, &p, iterations_for(WORD_BYTES, options), options);
        if (sync == OSU_FLUSH)
            SYNC_NOW(style, MPI_Win_unlock_all(win), MPIX_Win_iunlock_all(win, &sync_now_request));
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long total = agree(t.total);
    if (rank == TARGET) osu_target_word(&run, window_word, 0, total);
    if (run.mismatches)
        fprintf(stderr, "bench: rank %d: %s %s: data check failed (%ld mismatches), first: %s\n",
                rank, series, name, run.mismatches, run.why);
    int ok = verdict(series, name, run.mismatches == 0, rank);
    if (rank == ORIGIN) {
        printf("# %s %s %d: %ld iterations in %.3f s (mean %.4g usec)\n", series, name, WORD_BYTES,
               t.timed, t.elapsed, t.elapsed * 1e6 / (double)t.timed);
        report(series, name, WORD_BYTES, t.usec);
    }
    return ok;
}

/* ---- Active target and ping-pong ---------------------------------------------------- */

/* The rows timed in lock-step by both ranks. */
enum paired_kind {
    FENCE_EMPTY,
    FENCE_PUT,
    PSCW_EMPTY,
    PSCW_PUT,
    OSU_ACTIVE,
    PINGPONG,
    PINGPONG_WAITALL,
    ALLREDUCE
};

static const char *paired_names[] = {"fence_empty", "fence_put", "pscw_empty",       "pscw_put",
                                     NULL,          "pingpong",  "pingpong_waitall", "allreduce"};

/* The put of fence_put and pscw_put, and the ping-pong message: one 64-bit value. */
#define ACTIVE_PUT_BYTES WORD_BYTES

/* The active-target calls of one style. A blocking call has finished on return and
 * leaves MPI_REQUEST_NULL; a nonblocking one leaves the request bench_finish waits for. */
static void win_fence(int assert, enum sync_style style, MPI_Win win, MPI_Request *request) {
    BENCH_SYNC(style == SYNC_NONBLOCKING, request, MPI_Win_fence(assert, win),
               MPIX_Win_ifence(assert, win, request));
}

static void win_start(MPI_Group group, enum sync_style style, MPI_Win win, MPI_Request *request) {
    BENCH_SYNC(style == SYNC_NONBLOCKING, request, MPI_Win_start(group, 0, win),
               MPIX_Win_istart(group, 0, win, request));
}

static void win_complete(enum sync_style style, MPI_Win win, MPI_Request *request) {
    BENCH_SYNC(style == SYNC_NONBLOCKING, request, MPI_Win_complete(win),
               MPIX_Win_icomplete(win, request));
}

static void win_post(MPI_Group group, enum sync_style style, MPI_Win win, MPI_Request *request) {
    BENCH_SYNC(style == SYNC_NONBLOCKING, request, MPI_Win_post(group, 0, win),
               MPIX_Win_ipost(group, 0, win, request));
}

static void win_wait(enum sync_style style, MPI_Win win, MPI_Request *request) {
    BENCH_SYNC(style == SYNC_NONBLOCKING, request, MPI_Win_wait(win), MPIX_Win_iwait(win, request));
}

/* One lock-step row in progress on one rank. */
struct active_run {
    enum paired_kind kind;
    int fence;           /* a fence sequence (else PSCW, or ping-pong) */
    struct osu_run *osu; /* OSU_ACTIVE: the op and its checks */
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

static int has_put(const struct active_run *run) {
    return run->kind == FENCE_PUT || run->kind == PSCW_PUT;
}

/* Ranks 0 and 1 do the RMA; any further rank only joins the fences. */
static int in_pair(const struct active_run *run) { return run->rank <= TARGET; }
static int peer_of(const struct active_run *run) { return 1 - run->rank; }

/* What rank `from` puts (or sends) in epoch `epoch`: never 0, never the same twice. */
static uint64_t epoch_stamp(const struct active_run *run, int from, long epoch) {
    return ((uint64_t)(run->salt & 0xff) << 56) | ((uint64_t)(from & 0xff) << 48) |
           ((uint64_t)epoch & 0xffffffffffffULL);
}

static void mismatch(struct active_run *run, const char *what, long index, unsigned long long seen,
                     unsigned long long expected) {
    if (run->mismatches++ == 0)
        snprintf(run->why, sizeof run->why, "%s %ld: sees %#llx, expected %#llx", what, index, seen,
                 expected);
}

/* On the target of a put, once the epoch that carried it is closed. */
static void expect_stamp(struct active_run *run, int slot, long epoch) {
    uint64_t seen, expected = epoch_stamp(run, peer_of(run), epoch);
    memcpy(&seen, run->window_memory + slot * ACTIVE_PUT_BYTES, sizeof seen);
    if (seen != expected) mismatch(run, "epoch", epoch, seen, expected);
}

/* Epoch `epoch` of a fence sequence: the fence that opens it (and closes epoch-1), then
 * the put or OSU op. Puts alternate between two slots, in the origin buffer and in the
 * target window: the buffer slot written here was last read by the put of epoch-2,
 * complete since the previous fence finished, and the window slot checked here was
 * written in epoch-1 and is no target of epoch `epoch`. OSU results alternate slots the
 * same way. The first epoch opens the sequence. */
static void fence_epoch(struct active_run *run, long epoch) {
    int put = has_put(run) && in_pair(run);
    MPI_Request request;
    win_fence(epoch == 0 ? MPI_MODE_NOPRECEDE : 0, run->style, run->win, &request);
    if (put) {
        int slot = (int)(epoch & 1);
        uint64_t stamp = epoch_stamp(run, run->rank, epoch);
        char *source = run->buffer + slot * ACTIVE_PUT_BYTES;
        memcpy(source, &stamp, sizeof stamp);
        BENCH_MPI(MPI_Put(source, ACTIVE_PUT_BYTES, MPI_BYTE, peer_of(run), slot * ACTIVE_PUT_BYTES,
                          ACTIVE_PUT_BYTES, MPI_BYTE, run->win));
    }
    if (run->osu && run->rank == ORIGIN) osu_issue(run->osu, epoch);
    bench_finish(&request);
    if (put && epoch > 0) expect_stamp(run, (int)((epoch - 1) & 1), epoch - 1);
    if (run->osu && run->rank == ORIGIN && epoch > 0) osu_verify(run->osu, epoch - 1);
}

/* After `epochs` epochs: the fence that ends the sequence and the last epoch. */
static void fence_close(struct active_run *run, long epochs) {
    MPI_Request request;
    win_fence(MPI_MODE_NOSUCCEED, run->style, run->win, &request);
    bench_finish(&request);
    if (has_put(run) && in_pair(run) && epochs > 0)
        expect_stamp(run, (int)((epochs - 1) & 1), epochs - 1);
    if (run->osu && run->rank == ORIGIN && epochs > 0) osu_verify(run->osu, epochs - 1);
}

/* One GATS round: the origin's access epoch (start, [put or op], complete) against the
 * target's exposure epoch (post, wait). Complete cannot finish before the matching post,
 * and the target posts epoch i+1 only after its wait for epoch i, so no rank runs ahead. */
static void pscw_epoch(struct active_run *run, long epoch) {
    MPI_Request opening, closing;
    if (run->rank == ORIGIN) {
        win_start(run->peer_group, run->style, run->win, &opening);
        if (has_put(run)) {
            uint64_t stamp = epoch_stamp(run, ORIGIN, epoch);
            memcpy(run->buffer, &stamp, sizeof stamp);
            BENCH_MPI(MPI_Put(run->buffer, ACTIVE_PUT_BYTES, MPI_BYTE, TARGET, 0, ACTIVE_PUT_BYTES,
                              MPI_BYTE, run->win));
        }
        if (run->osu) osu_issue(run->osu, epoch);
        win_complete(run->style, run->win, &closing);
        bench_finish(&opening);
        bench_finish(&closing);
        if (run->osu) osu_verify(run->osu, epoch);
    } else if (run->rank == TARGET) {
        win_post(run->peer_group, run->style, run->win, &opening);
        win_wait(run->style, run->win, &closing);
        bench_finish(&opening);
        bench_finish(&closing);
        if (has_put(run)) expect_stamp(run, 0, epoch);
    }
}

/* One ping-pong round between ranks 0 and 1; each message carries the round's stamp. */
static void pingpong_round(struct active_run *run, long round) {
    if (!in_pair(run)) return;
    uint64_t out = epoch_stamp(run, run->rank, round), in = 0;
    uint64_t expected = epoch_stamp(run, peer_of(run), round);
    int peer = peer_of(run);
    if (run->kind == PINGPONG) {
        if (run->rank == ORIGIN) {
            BENCH_MPI(MPI_Send(&out, 1, MPI_UINT64_T, peer, 7, MPI_COMM_WORLD));
            BENCH_MPI(MPI_Recv(&in, 1, MPI_UINT64_T, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            BENCH_MPI(MPI_Recv(&in, 1, MPI_UINT64_T, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            BENCH_MPI(MPI_Send(&out, 1, MPI_UINT64_T, peer, 7, MPI_COMM_WORLD));
        }
    } else {
        MPI_Request requests[2];
        MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: GCC 12 mis-warns on it */
        if (run->rank == ORIGIN) {
            BENCH_MPI(MPI_Irecv(&in, 1, MPI_UINT64_T, peer, 8, MPI_COMM_WORLD, &requests[0]));
            BENCH_MPI(MPI_Isend(&out, 1, MPI_UINT64_T, peer, 8, MPI_COMM_WORLD, &requests[1]));
            BENCH_MPI(MPI_Waitall(2, requests, statuses));
        } else {
            BENCH_MPI(MPI_Irecv(&in, 1, MPI_UINT64_T, peer, 8, MPI_COMM_WORLD, &requests[0]));
            BENCH_MPI(MPI_Waitall(1, requests, statuses));
            BENCH_MPI(MPI_Isend(&out, 1, MPI_UINT64_T, peer, 8, MPI_COMM_WORLD, &requests[1]));
            BENCH_MPI(MPI_Waitall(1, &requests[1], statuses));
        }
    }
    if (in != expected) mismatch(run, "message of round", round, in, expected);
}

/* One MPI_Allreduce (MPI_SUM) of one 64-bit value over every rank: each contributes its
 * stamp of the round; the sum of all of them is checked. */
static void allreduce_round(struct active_run *run, long round) {
    int size = 1;
    BENCH_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    uint64_t out = epoch_stamp(run, run->rank, round), in = 0, expected = 0;
    for (int r = 0; r < size; r++) expected += epoch_stamp(run, r, round);
    BENCH_MPI(MPI_Allreduce(&out, &in, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (in != expected) mismatch(run, "allreduce of round", round, in, expected);
}

static void paired_epoch(struct active_run *run, long epoch) {
    if (run->kind == ALLREDUCE)
        allreduce_round(run, epoch);
    else if (run->kind == PINGPONG || run->kind == PINGPONG_WAITALL)
        pingpong_round(run, epoch);
    else if (run->fence)
        fence_epoch(run, epoch);
    else
        pscw_epoch(run, epoch);
}

/* Before timing a put benchmark: one epoch of the same kind and style moves a 512 KiB
 * pattern (both ways for fence, origin to target for PSCW) into zeroed window memory. */
static void check_active_pattern(struct active_run *run) {
    int sends = run->fence ? in_pair(run) : run->rank == ORIGIN;
    int receives = run->fence ? in_pair(run) : run->rank == TARGET;
    int from = peer_of(run);
    /* No epoch is open on the window: the previous benchmark closed its last one. */
    if (receives) memset(run->window_memory, 0, MAX_SIZE);
    if (sends)
        for (int i = 0; i < MAX_SIZE; i++)
            run->buffer[i] = (char)pattern(i, run->salt + 16 * run->rank);
    MPI_Request opening, closing;
    if (run->fence) {
        win_fence(MPI_MODE_NOPRECEDE, run->style, run->win, &opening);
        if (sends)
            BENCH_MPI(MPI_Put(run->buffer, MAX_SIZE, MPI_BYTE, peer_of(run), 0, MAX_SIZE, MPI_BYTE,
                              run->win));
        bench_finish(&opening);
        win_fence(MPI_MODE_NOSUCCEED, run->style, run->win, &closing);
        bench_finish(&closing);
    } else if (run->rank == ORIGIN) {
        win_start(run->peer_group, run->style, run->win, &opening);
        BENCH_MPI(
            MPI_Put(run->buffer, MAX_SIZE, MPI_BYTE, TARGET, 0, MAX_SIZE, MPI_BYTE, run->win));
        win_complete(run->style, run->win, &closing);
        bench_finish(&opening);
        bench_finish(&closing);
    } else if (run->rank == TARGET) {
        win_post(run->peer_group, run->style, run->win, &opening);
        win_wait(run->style, run->win, &closing);
        bench_finish(&opening);
        bench_finish(&closing);
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

/* Collective. Times one lock-step row; rank 0 reports. Returns 1 when its data checks
 * passed on every rank. */
static int run_paired(const char *series, struct active_run *run, const char *name,
                      const struct bench_options *options) {
    int rank = run->rank;
    int pingpong = run->kind == PINGPONG || run->kind == PINGPONG_WAITALL;
    int checked = has_put(run) || run->osu || pingpong || run->kind == ALLREDUCE;
    bench_set_step(series, name);
    if (run->osu && rank == TARGET) {
        osu_target_word(run->osu, (int64_t *)run->window_memory, 1, 0);
    }
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (has_put(run)) check_active_pattern(run);

    int iterations = iterations_for(ACTIVE_PUT_BYTES, options);
    long warmup = iterations / 10 > 0 ? iterations / 10 : 1;
    double budget = time_budget(options);

    /* Warm-up, in growing batches, for `warmup` epochs or a tenth of the budget. Every
     * rank must run the same epochs, so the origin decides after each batch. */
    long epoch = 0;
    double start = MPI_Wtime();
    for (long batch = 1; batch > 0;) {
        for (long i = 0; i < batch; i++) paired_epoch(run, epoch++);
        long next = 0;
        if (rank == ORIGIN && epoch < warmup && MPI_Wtime() - start < budget / 10) {
            next = batch < 64 ? 2 * batch : 64;
            if (next > warmup - epoch) next = warmup - epoch;
        }
        batch = agree(next);
    }

    /* Timed: as many epochs as fit the budget at the warm-up's pace, decided up front. */
    long timed = iterations;
    if (rank == ORIGIN && options->iterations <= 0) {
        double per_epoch = (MPI_Wtime() - start) / (double)epoch;
        if (per_epoch * (double)timed > budget) timed = (long)(budget / per_epoch);
        if (timed < 16) timed = 16;
    }
    timed = agree(timed);
    struct block_clock clock;
    clock_start(&clock, timed); /* the origin reads it */
    start = clock.mark;
    COLLECT_TOGGLE();
    for (long i = 0; i < timed;) {
        paired_epoch(run, epoch++);
        if (rank == ORIGIN)
            clock_tick(&clock, ++i);
        else
            i++;
    }
    COLLECT_TOGGLE();
    double elapsed = MPI_Wtime() - start;
    double usec = clock_usec(&clock, elapsed, timed);
    if (run->fence) fence_close(run, epoch);
    if (run->osu) {
        BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == TARGET) osu_target_word(run->osu, (int64_t *)run->window_memory, 0, epoch);
        if (run->osu->mismatches) {
            run->mismatches += run->osu->mismatches;
            snprintf(run->why, sizeof run->why, "%s", run->osu->why);
        }
    }

    /* The verdict comes first: a RESULT of a checked row always has its CHECK before. */
    int ok = run->mismatches == 0, all_ok = 1;
    if (!ok)
        fprintf(stderr, "bench: rank %d: %s %s: data check failed (%ld mismatches), first: %s\n",
                rank, series, name, run->mismatches, run->why);
    if (checked) all_ok = verdict(series, name, ok, rank);
    if (rank == ORIGIN) {
        int bytes = run->kind == FENCE_EMPTY || run->kind == PSCW_EMPTY ? 0 : ACTIVE_PUT_BYTES;
        printf("# %s %s %d: %ld %s in %.3f s (mean %.4g usec)\n", series, name, bytes, timed,
               pingpong                 ? "round trips"
               : run->kind == ALLREDUCE ? "allreduces"
                                        : "epochs",
               elapsed, elapsed * 1e6 / (double)timed);
        report(series, name, bytes, pingpong ? usec / 2 : usec);
    }
    return all_ok;
}

struct pair_setup {
    MPI_Win win;
    MPI_Group peer_group;
    unsigned char *window_memory;
    char *buffer;
    int rank;
};

/* `fence`: whether an OSU_ACTIVE row runs as a fence sequence (else PSCW). */
static int run_active_row(const char *series, enum sync_style style, enum paired_kind kind,
                          struct osu_run *osu, int fence, const char *name,
                          const struct pair_setup *setup, int salt,
                          const struct bench_options *options) {
    if (!bench_selected(options, name)) return 1;
    struct active_run run = {
        .kind = kind,
        .fence = kind == FENCE_EMPTY || kind == FENCE_PUT || (kind == OSU_ACTIVE && fence),
        .osu = osu,
        .style = style,
        .win = setup->win,
        .peer_group = setup->peer_group,
        .window_memory = setup->window_memory,
        .buffer = setup->buffer,
        .rank = setup->rank,
        .salt = salt};
    return run_paired(series, &run, name, options);
}

/* Collective: the active-target rows, each on every series before the next, so an
 * error that aborts a later benchmark (say PSCW) leaves the earlier ones measured. */
static int run_active_benchmarks(const struct pair_setup *setup,
                                 const struct bench_options *options) {
    const char *series[2] = {blocking_series, nonblocking_series};
    enum sync_style styles[2] = {SYNC_BLOCKING, SYNC_NONBLOCKING};
#ifdef NBRMA_NONBLOCKING_SERIES
    const int num_series = 2;
#else
    const int num_series = 1;
#endif
    int all_ok = 1;
    for (int k = FENCE_EMPTY; k <= PSCW_PUT; k++)
        for (int s = 0; s < num_series; s++)
            all_ok &= run_active_row(series[s], styles[s], (enum paired_kind)k, NULL, 0,
                                     paired_names[k], setup, 24 + 2 * k + s, options);
    for (int sync = OSU_FENCE; sync <= OSU_PSCW; sync++) {
        for (int op = 0; op < NUM_OSU_OPS; op++) {
            char name[48];
            osu_name(name, sizeof name, op, sync);
            for (int s = 0; s < num_series; s++) {
                int salt = 64 + 4 * op + 2 * s + (sync == OSU_PSCW);
                struct osu_run osu = {
                    .op = (enum osu_op)op, .style = styles[s], .win = setup->win, .salt = salt};
                all_ok &= run_active_row(series[s], styles[s], OSU_ACTIVE, &osu, sync == OSU_FENCE,
                                         name, setup, salt, options);
            }
        }
    }
    return all_ok;
}

/* ---- The group ---------------------------------------------------------------------- */

void bench_list_latency(void) {
    char name[48], bytes[16];
    for (int op = OP_PUT; op <= OP_GET; op++)
        for (int s = 0; s < NUM_SIZES; s++) {
            snprintf(bytes, sizeof bytes, "%d", sizes[s]);
            bench_row(operation_names[op], bytes, "usec");
        }
    snprintf(bytes, sizeof bytes, "%d", WORD_BYTES);
    for (int sync = 0; sync < NUM_OSU_SYNCS; sync++)
        for (int op = 0; op < NUM_OSU_OPS; op++) {
            osu_name(name, sizeof name, op, sync);
            bench_row(name, bytes, "usec");
        }
    for (int flavor = FLAVOR_CREATE; flavor <= FLAVOR_ALLOC_MEM; flavor++)
        for (int sync = OSU_LOCK; sync <= OSU_FLUSH; sync++)
            for (int op = 0; op < NUM_WORD_OSU_OPS; op++) {
                osu_flavor_name(name, sizeof name, op, sync, (enum win_flavor)flavor);
                bench_row(name, bytes, "usec");
            }
    for (int k = FENCE_EMPTY; k <= PSCW_PUT; k++)
        bench_row(paired_names[k], k == FENCE_EMPTY || k == PSCW_EMPTY ? "0" : bytes, "usec");
    bench_row(paired_names[PINGPONG], bytes, "usec");
    bench_row(paired_names[PINGPONG_WAITALL], bytes, "usec");
    bench_row(paired_names[ALLREDUCE], bytes, "usec");
}

/* Collective: every passive row (lock series and OSU passive set) of one series. */
static int run_passive_series(const char *series, enum sync_style style,
                              unsigned char *window_memory, char *buffer, MPI_Win win, int rank,
                              int salt, const struct bench_options *options) {
    int all_ok = 1;
    if (bench_selected(options, operation_names[OP_PUT]) ||
        bench_selected(options, operation_names[OP_GET])) {
        all_ok &= check_lock_data(series, style, window_memory, buffer, win, NULL, rank, salt);
        run_lock_series(series, style, buffer, win, NULL, rank, options);
    }
    for (int sync = OSU_LOCK; sync <= OSU_LOCK_ALL; sync++)
        for (int op = 0; op < NUM_OSU_OPS; op++)
            all_ok &=
                run_osu_passive(series, style, (enum osu_op)op, (enum osu_sync)sync, win,
                                (int64_t *)window_memory, rank, salt + 4 * op + sync, options,
                                FLAVOR_ALLOCATE, 0);
    return all_ok;
}

/* Collective: the osu_<op>_lock/flush_<flavor> rows on a window of memory the user owns:
 * MPI_Win_create over a page-aligned buffer (MPICH 4.0.2's UCX netmod rounds the base
 * down to a page, doc/design.md §1, which would misdirect its own RMA on an unaligned one), or
 * MPI_Win_create_dynamic with that buffer attached (displacement: its address). */
static int run_flavor_series(const char *series, enum win_flavor flavor, int rank,
                             const struct bench_options *options) {
    int wanted = 0;
    char name[48];
    for (int sync = OSU_LOCK; sync <= OSU_FLUSH; sync++)
        for (int op = 0; op < NUM_WORD_OSU_OPS; op++) {
            osu_flavor_name(name, sizeof name, op, sync, flavor);
            wanted |= bench_selected(options, name);
        }
    if (!wanted) return 1;
    bench_set_step(series, flavor_names[flavor]);
    char *raw = NULL;
    void *memory;
    if (flavor == FLAVOR_ALLOC_MEM) {
        BENCH_MPI(MPI_Alloc_mem(4096, MPI_INFO_NULL, &memory));
    } else {
        raw = bench_malloc("latency", 2 * 4096);
        memory = (void *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095);
    }
    memset(memory, 0, 4096);
    MPI_Win win;
    MPI_Aint disp = 0;
    if (flavor == FLAVOR_CREATE || flavor == FLAVOR_ALLOC_MEM) {
        BENCH_MPI(MPI_Win_create(memory, 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        BENCH_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        BENCH_MPI(MPI_Win_attach(win, memory, 4096));
        MPI_Aint mine;
        BENCH_MPI(MPI_Get_address(memory, &mine));
        BENCH_MPI(MPI_Bcast(&mine, 1, MPI_AINT, TARGET, MPI_COMM_WORLD));
        disp = mine;
    }
    int all_ok = 1;
    for (int sync = OSU_LOCK; sync <= OSU_FLUSH; sync++)
        for (int op = 0; op < NUM_WORD_OSU_OPS; op++)
            all_ok &= run_osu_passive(series, SYNC_BLOCKING, (enum osu_op)op, (enum osu_sync)sync,
                                      win, (int64_t *)memory, rank, 80 + 4 * op + sync, options,
                                      flavor, disp);
    if (flavor == FLAVOR_DYNAMIC) BENCH_MPI(MPI_Win_detach(win, memory));
    BENCH_MPI(MPI_Win_free(&win));
    if (flavor == FLAVOR_ALLOC_MEM) BENCH_MPI(MPI_Free_mem(memory));
    free(raw);
    return all_ok;
}

int bench_latency(const struct bench_options *options) {
    int rank, size;
    BENCH_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    BENCH_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    bench_set_step("latency", "setup");
    const char *suffix = getenv("NBRMA_BENCH_SERIES_SUFFIX");
    snprintf(blocking_series, sizeof blocking_series, "%s%s", BENCH_BLOCKING_SERIES,
             suffix ? suffix : "");
    snprintf(nonblocking_series, sizeof nonblocking_series, "nbrma-nonblocking%s",
             suffix ? suffix : "");

    char *buffer = bench_malloc("bench", MAX_SIZE);
    memset(buffer, 1, MAX_SIZE);
    int all_ok = 1;

    /* The baseline first, before any window exists (not on bench_ompi: see the head). */
#ifdef NBRMA_BENCH_OMPI
    const int raw_shm_rows = 0, two_sided_rows = 0;
#else
    const int raw_shm_rows = 1, two_sided_rows = 1;
#endif
    if (raw_shm_rows && (bench_selected(options, operation_names[OP_PUT]) ||
                         bench_selected(options, operation_names[OP_GET]))) {
        struct raw_shm shm;
        if (raw_shm_map(&shm, rank)) {
            all_ok &=
                check_lock_data("raw-shm", SYNC_RAW_SHM, NULL, buffer, MPI_WIN_NULL, &shm, rank, 3);
            run_lock_series("raw-shm", SYNC_RAW_SHM, buffer, MPI_WIN_NULL, &shm, rank, options);
            raw_shm_unmap(&shm);
        }
    }

    unsigned char *window_memory = NULL;
    MPI_Win win;
    bench_win_allocate(MAX_SIZE, 1, NULL, MPI_COMM_WORLD, &window_memory, &win);

    all_ok &= run_passive_series(blocking_series, SYNC_BLOCKING, window_memory, buffer, win,
                                 rank, 1, options);
#ifdef NBRMA_NONBLOCKING_SERIES
    all_ok &= run_passive_series(nonblocking_series, SYNC_NONBLOCKING, window_memory, buffer, win,
                                 rank, 40, options);
#endif
    all_ok &= run_flavor_series(blocking_series, FLAVOR_CREATE, rank, options);
    all_ok &= run_flavor_series(blocking_series, FLAVOR_DYNAMIC, rank, options);
    all_ok &= run_flavor_series(blocking_series, FLAVOR_ALLOC_MEM, rank, options);

    /* PSCW groups: each rank of the pair names the other (the window's group is
     * MPI_COMM_WORLD's, so the ranks are the same). */
    MPI_Group world_group, peer_group = MPI_GROUP_NULL;
    BENCH_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    if (rank <= TARGET) {
        int peer = 1 - rank;
        BENCH_MPI(MPI_Group_incl(world_group, 1, &peer, &peer_group));
    }
    struct pair_setup setup = {win, peer_group, window_memory, buffer, rank};
    all_ok &= run_active_benchmarks(&setup, options);

    /* Two-sided, with the window alive and idle. */
    if (two_sided_rows) {
        all_ok &= run_active_row(blocking_series, SYNC_BLOCKING, PINGPONG, NULL, 0,
                                 paired_names[PINGPONG], &setup, 120, options);
        all_ok &= run_active_row(blocking_series, SYNC_BLOCKING, PINGPONG_WAITALL, NULL, 0,
                                 paired_names[PINGPONG_WAITALL], &setup, 121, options);
        /* A collective, the same way. */
        all_ok &= run_active_row(blocking_series, SYNC_BLOCKING, ALLREDUCE, NULL, 0,
                                 paired_names[ALLREDUCE], &setup, 122, options);
    }

    if (peer_group != MPI_GROUP_NULL) BENCH_MPI(MPI_Group_free(&peer_group));
    BENCH_MPI(MPI_Group_free(&world_group));
    bench_set_step("latency", "teardown (MPI_Win_free)");
    BENCH_MPI(MPI_Win_free(&win));
    free(buffer);
    (void)size;
    return all_ok ? 0 : 3;
}
