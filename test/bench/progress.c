/*
 * progress.c — group "progress" of nbrma-bench (see bench.h): does an epoch progress while
 * the process that owns it computes without calling MPI? Needs 3 ranks; more (NBRMA_BENCH_PROGRESS_RANKS) idle
 * in the overlap rows and take part in the fan-out latency rows.
 *
 * Overlap is measured as in SmartInterrupts (§5.3.2): the epoch time of the
 * critical rank against synthetic work W of several sizes, W = 0, 500, 1000, 2000 us ×
 * --scale. The work is bench_spin: the busy loop of bench_compute, without any MPI call,
 * run until W microseconds of wall time have passed (a known duration on a machine whose
 * load varies; a calibrated amount of work would take anything from W to 3 W on this
 * shared 2-core machine). The ideal is the work alone: with full overlap the epoch takes
 * W (once W exceeds the communication), with none W plus the part of the communication
 * left when the work ends. One 4 MiB put per origin and epoch (on shared memory a 1 MiB
 * put takes some 50 us: too little to see); the late side is D = 250 us × --scale late
 * (late post, lock held). Rows (usec, the median of the iterations; the mean, minimum and
 * maximum are on a "#" line):
 *
 *   late_post W  (SC14 Fig 2, its subsequent activity being computation; SmartInterrupts paper
 *       Fig 10, GATS) the origin (rank 0) tells the target (rank 2) it starts (zero-byte
 *       message), opens the access epoch, puts, closes it and computes W; the target
 *       posts D after that message. Value = the origin's time from the message until the
 *       epoch is complete and the work done. Rank 1 idles.
 *   late_unlock_first W, late_unlock_second W  (SC14 Fig 6) O0 (rank 0) locks T (rank 2)
 *       exclusively, puts, unlocks and computes W; O1 (rank 1) asks for the lock once
 *       O0's lock call returned (a zero-byte message tells it), puts, unlocks.
 *       first = O0's time from its lock call to its epoch complete and the work done;
 *       second = O1's epoch (lock call to unlock's return): ideally it does not grow
 *       with W.
 *   lock_overlap W  (SmartInterrupts paper Fig 13, "origin 1 holds the lock grant but computes") O0
 *       (rank 0) locks T exclusively (and flushes an 8-byte put, so a lazy lock is
 *       taken), tells O1, holds the lock D, unlocks; O1 (rank 1) then asks for the lock,
 *       puts, unlocks and computes W: the grant arrives while O1 computes. Value = O1's
 *       time from its lock call to the epoch complete and the work done.
 *   late_fence W  (SmartInterrupts paper Fig 12, fence) the origin (rank 0) tells the others it
 *       starts (zero-byte messages), opens a fence epoch, puts into rank 2, closes it
 *       (MPI_MODE_NOSUCCEED) and computes W; rank 2 enters its fences D after that
 *       message, rank 1 at once (blocking fences). Value = the origin's time from the
 *       messages until the epoch is complete and the work done.
 *   work_alone W  the work alone, timed on rank 0 with nothing pending (W and a little:
 *       the loop's last chunk and the clock reads).
 *   excess <benchmark>  (usec) at the largest W, the median over the iterations of the
 *       benchmark's time minus the time the critical rank spent in the work in that same
 *       iteration (a descheduling inside the work cancels out): the part of the epoch not
 *       hidden behind the work. Ideal 0; without progress during the work, about the
 *       transfer and the closing handshake.
 *   overlap <benchmark>  (%) the share of T(0) (the row at W = 0) hidden behind the
 *       largest W: 100 × (T(0) − excess) / T(0), clamped to 0..100. T(0) includes the
 *       late side's D, which any nonblocking epoch hides behind work (the post or grant
 *       arrives during it): what only asynchronous progress adds is the transfer, which
 *       excess shows.
 * The "ideal" series is work_alone of the first job that reports it (bench_mpich, the
 * first job nbrma-bench runs), on the rows whose ideal is the work (late_post,
 * late_unlock_first, lock_overlap, late_fence). Work sizes run in turn, each one's work_alone just
 * before its patterns, so the rows compared are measured close together on a machine
 * whose load drifts.
 *
 * Series: bench_nbrma closes the critical rank's epoch with the nonblocking calls
 * (MPIX_Win_istart/icomplete, MPIX_Win_ilock/iunlock), computes W while the request is
 * pending and waits afterwards: "nbrma-inline", or "nbrma-thread" when the job runs with
 * NBRMA_PROGRESS=thread (the progress thread is what can complete the epoch during the
 * work). bench_mpich uses the blocking calls with W inside the epoch (before the closing
 * call, where SmartInterrupts paper puts it): "mpich", or "mpich-async" when the job runs with
 * MPICH_ASYNC_PROGRESS=1 and was started with --thread-multiple (MPICH's own
 * asynchronous progress thread needs MPI_THREAD_MULTIPLE). Ranks other than the critical
 * one use the blocking calls in every series.
 *
 * Two cores, three ranks and up to three progress threads: nbrma-bench runs this group
 * without binding (-bind-to none), so a progress thread can run on the core the sleeping
 * ranks leave. Ranks that wait sleep: the late target posts after bench_sleep and polls
 * MPI_Win_test with sleeps, a passive target polls its iteration boundary every 20 us
 * (MPICH's passive target needs its progress), an idle rank every 200 us.
 *
 * Data checks: every put carries a byte pattern that changes every iteration, checked by
 * its target after the epoch; one CHECK line per benchmark, work size and series.
 * Length: --quick 60 iterations or 0.6 s per row (2 warm-up iterations); otherwise 300 or
 * 5 s (5 warm-up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MIB (1024 * 1024)
#define BYTES (4 * MIB) /* one put; the window has two such slots a rank */

static const char *const benchmark_names[] = {"late_post", "late_unlock", "lock_overlap",
                                              "late_fence", "work_alone", "latency"};
enum benchmark { LATE_POST, LATE_UNLOCK, LOCK_OVERLAP, LATE_FENCE, WORK_ALONE, LATENCY, NUM_BENCH };

static const double work_sizes[] = {0, 500, 1000, 2000}; /* usec, × --scale */
#define NUM_WORK ((int)(sizeof work_sizes / sizeof work_sizes[0]))
#define LATE_USEC 250.0 /* × --scale: the late post, the lock held */

#define IDLE_POLL_USEC 200.0
#define TARGET_POLL_USEC 20.0

/* The rows whose median feeds the overlap rows. */
enum row {
    ROW_LATE_POST,
    ROW_UNLOCK_FIRST,
    ROW_UNLOCK_SECOND,
    ROW_LOCK_OVERLAP,
    ROW_LATE_FENCE,
    ROW_WORK,
    NUM_ROWS
};
static const char *const row_names[] = {"late_post", "late_unlock_first", "late_unlock_second",
                                        "lock_overlap", "late_fence", "work_alone"};
/* The rows whose ideal is the work, with overlap and excess rows. */
static const enum row overlap_rows[] = {ROW_LATE_POST, ROW_UNLOCK_FIRST, ROW_LOCK_OVERLAP,
                                        ROW_LATE_FENCE};
#define NUM_OVERLAP_ROWS ((int)(sizeof overlap_rows / sizeof overlap_rows[0]))

struct run {
    const char *series;
    int nonblocking; /* the critical rank uses MPIX_Win_i* (bench_nbrma) */
    int rank;
    int iterations, warmup;
    double budget, late, scale;
    MPI_Win win; /* two slots of BYTES a rank */
    unsigned char *base;
    unsigned char *buffer; /* BYTES, the origin buffer */
    MPI_Group group_of[3];
    MPI_Group others; /* every rank but 0 */
    int size;
    long mismatches;                   /* of the row in progress */
    long total_bad;                    /* of every row so far */
    double *samples;                   /* [NUM_SLOTS][iterations], usec */
    double *gathered;                  /* the same summed over the ranks, on rank 0 */
    double median[NUM_ROWS][NUM_WORK]; /* rank 0 */
    double excess[NUM_ROWS][NUM_WORK]; /* rank 0: median of (slot 0 − work) */
};

/* ---- helpers ------------------------------------------------------------------------ */

/* Sample slots: a benchmark's rows in slots 0 and 1, the critical rank's time in the work
 * of the same iteration in slot WORK_SLOT (for the excess). */
#define NUM_SLOTS 3
#define WORK_SLOT 2

static struct bench_loop start_loop(struct run *r, const char *benchmark) {
    bench_set_step(r->series, benchmark);
    struct bench_loop l = {
        .total = r->warmup + r->iterations, .warmup = r->warmup, .budget = r->budget};
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return l;
}

static void record(struct run *r, const struct bench_loop *l, int k, double usec) {
    int index = bench_loop_slot(l, r->iterations);
    if (index >= 0) r->samples[k * r->iterations + index] = usec;
}

/* The critical rank's work: bench_spin, its own length recorded in WORK_SLOT. */
static void work_for(struct run *r, const struct bench_loop *l, double usec) {
    double t0 = MPI_Wtime();
    bench_spin(usec);
    record(r, l, WORK_SLOT, (MPI_Wtime() - t0) * 1e6);
}

static void work_param(char *param, size_t size, int w, const struct run *r) {
    snprintf(param, size, "%.0f", work_sizes[w] * r->scale);
}

/* Collective: gathers the samples of rows rows[0..count) (each measured by one rank) to
 * rank 0, which prints CHECK (when `checked`), a "#" line per row and RESULT = median. */
static void report(struct run *r, const char *benchmark, const enum row *rows, int count, int w,
                   const struct bench_loop *l, int checked) {
    int timed = bench_loop_timed(l);
    if (timed > r->iterations) timed = r->iterations;
    BENCH_MPI(MPI_Reduce(r->samples, r->gathered, NUM_SLOTS * r->iterations, MPI_DOUBLE, MPI_SUM, 0,
                         MPI_COMM_WORLD));
    memset(r->samples, 0, (size_t)NUM_SLOTS * r->iterations * sizeof(double));
    long bad = 0;
    BENCH_MPI(MPI_Reduce(&r->mismatches, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    r->total_bad += r->mismatches;
    r->mismatches = 0;
    if (r->rank != 0) return;
    char param[24];
    work_param(param, sizeof param, w, r);
    if (checked) {
        for (int k = 0; k < count; k++) bench_check(r->series, row_names[rows[k]], bad == 0);
        if (bad)
            fprintf(stderr, "progress: %s %s W=%s: %ld data mismatches\n", r->series, benchmark,
                    param, bad);
    }
    /* The excess of slot 0 over the work of the same iteration (before the sort). */
    double *work = r->gathered + (size_t)WORK_SLOT * r->iterations;
    for (int i = 0; i < timed; i++) work[i] = r->gathered[i] - work[i];
    if (timed > 0) {
        qsort(work, timed, sizeof *work, bench_compare_doubles);
        r->excess[rows[0]][w] = work[timed / 2];
    }
    for (int k = 0; k < count; k++) {
        double *v = r->gathered + (size_t)k * r->iterations, sum = 0, median = 0;
        for (int i = 0; i < timed; i++) sum += v[i];
        if (timed > 0) {
            qsort(v, timed, sizeof *v, bench_compare_doubles);
            median = v[timed / 2];
            printf("# %s %s %s: %d iterations, mean %.1f, min %.1f, max %.1f usec\n", r->series,
                   row_names[rows[k]], param, timed, sum / timed, v[0], v[timed - 1]);
        }
        r->median[rows[k]][w] = median;
        bench_result(r->series, row_names[rows[k]], param, median, "usec");
    }
}

/* The target's side of a passive epoch: wait for the end of the origins' epochs (the
 * boundary, polled every TARGET_POLL_USEC), then check its memory under a shared lock. */
static void passive_target_check(struct run *r, int it, int first_salt, int second_salt) {
    bench_boundary(1, TARGET_POLL_USEC);
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, r->rank, 0, r->win));
    if (first_salt >= 0 && !bench_all_equal(r->base, 8, bench_stamp(it, first_salt)))
        r->mismatches++;
    if (!bench_all_equal(r->base + BYTES, BYTES, bench_stamp(it, second_salt))) r->mismatches++;
    BENCH_MPI(MPI_Win_unlock(r->rank, r->win));
}

/* ---- late_post: origin rank 0, late target rank 2, rank 1 idle ---------------------- */

static void late_post(struct run *r, int w) {
    enum { ORIGIN = 0, TARGET = 2 };
    double work = work_sizes[w] * r->scale;
    struct bench_loop l = start_loop(r, "late_post");
    while (bench_loop_next(&l, r->rank, r->rank == 1 ? IDLE_POLL_USEC : 0)) {
        int it = l.i;
        unsigned char value = bench_stamp(it, 1 + w);
        if (r->rank == ORIGIN) {
            memset(r->buffer, value, BYTES);
            MPI_Request opening = MPI_REQUEST_NULL, closing = MPI_REQUEST_NULL;
            double t0 = MPI_Wtime();
            /* The target posts D after this message: late from the origin's view. */
            BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, TARGET, it, MPI_COMM_WORLD));
            BENCH_SYNC(r->nonblocking, &opening, MPI_Win_start(r->group_of[TARGET], 0, r->win),
                       MPIX_Win_istart(r->group_of[TARGET], 0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, BYTES, MPI_BYTE, TARGET, BYTES, BYTES, MPI_BYTE, r->win));
            if (r->nonblocking) {
                BENCH_SYNC(1, &closing, MPI_Win_complete(r->win),
                           MPIX_Win_icomplete(r->win, &closing));
                work_for(r, &l, work);
                bench_finish(&opening);
                bench_finish(&closing);
            } else {
                work_for(r, &l, work);
                BENCH_MPI(MPI_Win_complete(r->win));
            }
            record(r, &l, 0, (MPI_Wtime() - t0) * 1e6);
        } else if (r->rank == TARGET) {
            MPI_Request hello;
            BENCH_MPI(MPI_Irecv(NULL, 0, MPI_BYTE, ORIGIN, it, MPI_COMM_WORLD, &hello));
            bench_wait_polling(&hello, TARGET_POLL_USEC);
            bench_sleep(r->late);
            BENCH_MPI(MPI_Win_post(r->group_of[ORIGIN], 0, r->win));
            for (int done = 0;;) {
                BENCH_MPI(MPI_Win_test(r->win, &done));
                if (done) break;
                bench_sleep(TARGET_POLL_USEC);
            }
            if (!bench_all_equal(r->base + BYTES, BYTES, value)) r->mismatches++;
        }
    }
    const enum row rows[] = {ROW_LATE_POST};
    report(r, "late_post", rows, 1, w, &l, 1);
}

/* ---- late_fence: origin rank 0, late rank 2, rank 1 on time ------------------------- */

static void late_fence(struct run *r, int w) {
    enum { ORIGIN = 0, TARGET = 2 };
    double work = work_sizes[w] * r->scale;
    struct bench_loop l = start_loop(r, "late_fence");
    while (bench_loop_next(&l, r->rank, r->rank == ORIGIN ? 0 : IDLE_POLL_USEC)) {
        int it = l.i;
        unsigned char value = bench_stamp(it, 30 + w);
        if (r->rank == ORIGIN) {
            memset(r->buffer, value, BYTES);
            MPI_Request opening = MPI_REQUEST_NULL, closing = MPI_REQUEST_NULL;
            double t0 = MPI_Wtime();
            /* The others enter the fence after this message, the target D late. */
            for (int p = 1; p < r->size; p++)
                BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, p, it, MPI_COMM_WORLD));
            BENCH_SYNC(r->nonblocking, &opening, MPI_Win_fence(0, r->win),
                       MPIX_Win_ifence(0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, BYTES, MPI_BYTE, TARGET, BYTES, BYTES, MPI_BYTE, r->win));
            if (r->nonblocking) {
                BENCH_SYNC(1, &closing, MPI_Win_fence(MPI_MODE_NOSUCCEED, r->win),
                           MPIX_Win_ifence(MPI_MODE_NOSUCCEED, r->win, &closing));
                work_for(r, &l, work);
                bench_finish(&opening);
                bench_finish(&closing);
            } else {
                work_for(r, &l, work);
                BENCH_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, r->win));
            }
            record(r, &l, 0, (MPI_Wtime() - t0) * 1e6);
        } else {
            MPI_Request hello;
            BENCH_MPI(MPI_Irecv(NULL, 0, MPI_BYTE, ORIGIN, it, MPI_COMM_WORLD, &hello));
            bench_wait_polling(&hello, TARGET_POLL_USEC);
            if (r->rank == TARGET) bench_sleep(r->late);
            BENCH_MPI(MPI_Win_fence(0, r->win));
            BENCH_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, r->win));
            if (r->rank == TARGET && !bench_all_equal(r->base + BYTES, BYTES, value))
                r->mismatches++;
        }
    }
    const enum row rows[] = {ROW_LATE_FENCE};
    report(r, "late_fence", rows, 1, w, &l, 1);
}

/* ---- late_unlock: O0 = rank 0 (computes), O1 = rank 1, target T = rank 2 ------------- */

static void late_unlock(struct run *r, int w) {
    enum { O0 = 0, O1 = 1, T = 2 };
    double work = work_sizes[w] * r->scale;
    struct bench_loop l = start_loop(r, "late_unlock");
    while (bench_loop_next(&l, r->rank, r->rank == T ? TARGET_POLL_USEC : r->rank > T ? IDLE_POLL_USEC : 0)) {
        int it = l.i;
        if (r->rank == T) {
            /* O0's put in the first slot (its first 8 bytes checked), O1's in the second. */
            passive_target_check(r, it, 10 + w, 20 + w);
            continue;
        }
        if (r->rank > T) continue; /* more than 3 ranks: the others idle */
        unsigned char value = bench_stamp(it, (r->rank == O0 ? 10 : 20) + w);
        memset(r->buffer, value, BYTES);
        double t0 = MPI_Wtime();
        if (r->rank == O0) {
            MPI_Request opening = MPI_REQUEST_NULL, closing = MPI_REQUEST_NULL;
            BENCH_SYNC(r->nonblocking, &opening, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, r->win),
                       MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, T, 0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, BYTES, MPI_BYTE, T, 0, BYTES, MPI_BYTE, r->win));
            BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, O1, it, MPI_COMM_WORLD)); /* O1 may lock */
            if (r->nonblocking) {
                BENCH_SYNC(1, &closing, MPI_Win_unlock(T, r->win),
                           MPIX_Win_iunlock(T, r->win, &closing));
                work_for(r, &l, work);
                bench_finish(&opening);
                bench_finish(&closing);
            } else {
                work_for(r, &l, work);
                BENCH_MPI(MPI_Win_unlock(T, r->win));
            }
            record(r, &l, 0, (MPI_Wtime() - t0) * 1e6);
        } else {
            BENCH_MPI(MPI_Recv(NULL, 0, MPI_BYTE, O0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            t0 = MPI_Wtime();
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, r->win));
            BENCH_MPI(MPI_Put(r->buffer, BYTES, MPI_BYTE, T, BYTES, BYTES, MPI_BYTE, r->win));
            BENCH_MPI(MPI_Win_unlock(T, r->win));
            record(r, &l, 1, (MPI_Wtime() - t0) * 1e6);
        }
        bench_boundary(1, 0);
    }
    /* O0's put covers the first slot; the check reads its first 8 bytes. */
    const enum row rows[] = {ROW_UNLOCK_FIRST, ROW_UNLOCK_SECOND};
    report(r, "late_unlock", rows, 2, w, &l, 1);
}

/* ---- lock_overlap (SmartInterrupts paper Fig 13): O0 = rank 0 holds the lock, O1 = rank 1 computes -- */

static void lock_overlap(struct run *r, int w) {
    enum { O0 = 0, O1 = 1, T = 2 };
    double work = work_sizes[w] * r->scale;
    struct bench_loop l = start_loop(r, "lock_overlap");
    while (bench_loop_next(&l, r->rank, r->rank == T ? TARGET_POLL_USEC : r->rank > T ? IDLE_POLL_USEC : 0)) {
        int it = l.i;
        if (r->rank == T) {
            passive_target_check(r, it, 30 + w, 40 + w);
            continue;
        }
        if (r->rank > T) continue; /* more than 3 ranks: the others idle */
        if (r->rank == O0) {
            memset(r->buffer, bench_stamp(it, 30 + w), 8);
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, r->win));
            BENCH_MPI(MPI_Put(r->buffer, 8, MPI_BYTE, T, 0, 8, MPI_BYTE, r->win));
            BENCH_MPI(MPI_Win_flush(T, r->win)); /* the lock is really held now */
            BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, O1, it, MPI_COMM_WORLD));
            bench_sleep(r->late);
            BENCH_MPI(MPI_Win_unlock(T, r->win));
        } else {
            memset(r->buffer, bench_stamp(it, 40 + w), BYTES);
            BENCH_MPI(MPI_Recv(NULL, 0, MPI_BYTE, O0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_Request opening = MPI_REQUEST_NULL, closing = MPI_REQUEST_NULL;
            double t0 = MPI_Wtime();
            BENCH_SYNC(r->nonblocking, &opening, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, r->win),
                       MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, T, 0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, BYTES, MPI_BYTE, T, BYTES, BYTES, MPI_BYTE, r->win));
            if (r->nonblocking) {
                BENCH_SYNC(1, &closing, MPI_Win_unlock(T, r->win),
                           MPIX_Win_iunlock(T, r->win, &closing));
                work_for(r, &l, work);
                bench_finish(&opening);
                bench_finish(&closing);
            } else {
                work_for(r, &l, work);
                BENCH_MPI(MPI_Win_unlock(T, r->win));
            }
            record(r, &l, 0, (MPI_Wtime() - t0) * 1e6);
        }
        bench_boundary(1, 0);
    }
    /* The samples are O1's (rank 1): report() sums over the ranks. */
    const enum row rows[] = {ROW_LOCK_OVERLAP};
    report(r, "lock_overlap", rows, 1, w, &l, 1);
}

/* ---- work_alone: rank 0 computes W, the others idle --------------------------------- */

/* ---- latency: the cost of a progress mode when nobody computes (SmartInterrupts paper Fig 10/11) --- */

static const int latency_bytes[] = {16 * 1024, 64 * 1024, 256 * 1024, MIB};
#define NUM_LATENCY ((int)(sizeof latency_bytes / sizeof latency_bytes[0]))
static const char *const latency_names[] = {"fence_pair", "fence_fan", "gats_pair", "gats_fan"};
enum latency { FENCE_PAIR, FENCE_FAN, GATS_PAIR, GATS_FAN, NUM_LATENCY_ROWS };

/* One row: rank 0's epoch time (blocking calls on every rank, no work). pair: ranks 0 and
 * 1 put `bytes` into each other (the others take part in the fence, or idle); fan: rank 0
 * puts `bytes` into every other rank. Checked by the targets. */
static void latency(struct run *r, enum latency kind, int bytes) {
    const int fence = kind == FENCE_PAIR || kind == FENCE_FAN;
    const int fan = kind == FENCE_FAN || kind == GATS_FAN;
    const int size = r->size;
    int origin_of_mine = -1; /* who puts into me */
    if (fan && r->rank != 0) origin_of_mine = 0;
    if (!fan && r->rank <= 1) origin_of_mine = 1 - r->rank;
    const int active = fence || fan || r->rank <= 1;
    struct bench_loop l = start_loop(r, latency_names[kind]);
    while (bench_loop_next(&l, r->rank, active ? 0 : IDLE_POLL_USEC)) {
        if (!active) continue;
        int it = l.i;
        unsigned char value = bench_stamp(it, 7 + kind);
        memset(r->buffer, value, bytes);
        double t0 = MPI_Wtime();
        if (fence) {
            BENCH_MPI(MPI_Win_fence(0, r->win));
            if (fan && r->rank == 0) {
                for (int t = 1; t < size; t++)
                    BENCH_MPI(MPI_Put(r->buffer, bytes, MPI_BYTE, t, BYTES, bytes, MPI_BYTE,
                                      r->win));
            } else if (!fan && r->rank <= 1) {
                BENCH_MPI(MPI_Put(r->buffer, bytes, MPI_BYTE, 1 - r->rank, BYTES, bytes, MPI_BYTE,
                                  r->win));
            }
            BENCH_MPI(MPI_Win_fence(0, r->win));
        } else if (r->rank == 0) {
            MPI_Group targets = fan ? r->others : r->group_of[1];
            BENCH_MPI(MPI_Win_post(r->group_of[1], 0, r->win)); /* rank 1 closes the pair */
            BENCH_MPI(MPI_Win_start(targets, 0, r->win));
            int last = fan ? size - 1 : 1;
            for (int t = 1; t <= last; t++)
                BENCH_MPI(MPI_Put(r->buffer, bytes, MPI_BYTE, t, BYTES, bytes, MPI_BYTE, r->win));
            BENCH_MPI(MPI_Win_complete(r->win));
            BENCH_MPI(MPI_Win_wait(r->win));
        } else {
            /* exposed to rank 0; rank 1 also puts back (pair), so rank 0 is exposed to it */
            BENCH_MPI(MPI_Win_post(r->group_of[0], 0, r->win));
            if (r->rank == 1) {
                BENCH_MPI(MPI_Win_start(r->group_of[0], 0, r->win));
                if (!fan)
                    BENCH_MPI(MPI_Put(r->buffer, bytes, MPI_BYTE, 0, BYTES, bytes, MPI_BYTE,
                                      r->win));
                BENCH_MPI(MPI_Win_complete(r->win));
            }
            BENCH_MPI(MPI_Win_wait(r->win));
        }
        if (r->rank == 0) record(r, &l, 0, (MPI_Wtime() - t0) * 1e6);
        if (origin_of_mine >= 0 && !bench_all_equal(r->base + BYTES, bytes, value))
            r->mismatches++;
    }
    /* one CHECK and one RESULT, parameter = bytes */
    int timed = bench_loop_timed(&l);
    if (timed > r->iterations) timed = r->iterations;
    BENCH_MPI(MPI_Reduce(r->samples, r->gathered, r->iterations, MPI_DOUBLE, MPI_SUM, 0,
                         MPI_COMM_WORLD));
    memset(r->samples, 0, (size_t)NUM_SLOTS * r->iterations * sizeof(double));
    long bad = 0;
    BENCH_MPI(MPI_Reduce(&r->mismatches, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    r->total_bad += r->mismatches;
    r->mismatches = 0;
    if (r->rank != 0) return;
    char param[24];
    snprintf(param, sizeof param, "%d", bytes);
    bench_check(r->series, latency_names[kind], bad == 0);
    if (bad) fprintf(stderr, "progress: %s %s %s: %ld data mismatches\n", r->series,
                     latency_names[kind], param, bad);
    if (timed > 0) {
        qsort(r->gathered, timed, sizeof *r->gathered, bench_compare_doubles);
        bench_result(r->series, latency_names[kind], param, r->gathered[timed / 2], "usec");
    }
}

static void work_alone(struct run *r, int w) {
    double work = work_sizes[w] * r->scale;
    struct bench_loop l = start_loop(r, "work_alone");
    while (bench_loop_next(&l, r->rank, r->rank == 0 ? 0 : IDLE_POLL_USEC)) {
        if (r->rank != 0) continue;
        double t0 = MPI_Wtime();
        work_for(r, &l, work);
        record(r, &l, 0, (MPI_Wtime() - t0) * 1e6);
    }
    const enum row rows[] = {ROW_WORK};
    report(r, "work_alone", rows, 1, w, &l, 0);
}

/* ---- the group ---------------------------------------------------------------------- */

/* The series of this job (see the header comment). */
static const char *progress_series(void) {
#ifdef NBRMA_NONBLOCKING_SERIES
    const char *mode = getenv("NBRMA_PROGRESS");
    if (mode && strcmp(mode, "thread") == 0) return "nbrma-thread";
    if (mode && strcmp(mode, "interrupt") == 0) return "nbrma-interrupt";
    return "nbrma-inline";
#else
    const char *async = getenv("MPICH_ASYNC_PROGRESS");
    int provided = MPI_THREAD_SINGLE;
    BENCH_MPI(MPI_Query_thread(&provided));
    if (async && atoi(async) != 0) {
        if (provided == MPI_THREAD_MULTIPLE) return "mpich-async";
        printf(
            "# MPICH_ASYNC_PROGRESS=%s without MPI_THREAD_MULTIPLE (--thread-multiple): "
            "MPICH ignores it, series mpich\n",
            async);
    }
    return "mpich";
#endif
}

static double clamp_percent(double x) { return x < 0 ? 0 : x > 100 ? 100 : x; }

/* Rank 0, after every row: the overlap rows and the ideal series. */
static void report_overlap(struct run *r, const struct bench_options *options) {
    char param[24];
    for (int k = 0; k < NUM_OVERLAP_ROWS; k++) {
        enum row row = overlap_rows[k];
        const char *bench = row == ROW_LATE_POST      ? benchmark_names[LATE_POST]
                            : row == ROW_LOCK_OVERLAP ? benchmark_names[LOCK_OVERLAP]
                            : row == ROW_LATE_FENCE   ? benchmark_names[LATE_FENCE]
                                                      : benchmark_names[LATE_UNLOCK];
        if (!bench_selected(options, bench)) continue;
        for (int w = 1; w < NUM_WORK; w++) {
            work_param(param, sizeof param, w, r);
            if (r->median[ROW_WORK][w] > 0)
                bench_result("ideal", row_names[row], param, r->median[ROW_WORK][w], "usec");
        }
        int w = NUM_WORK - 1;
        double t0 = r->median[row][0], tw = r->median[row][w], excess = r->excess[row][w];
        if (t0 > 0 && tw > 0) {
            printf("# %s overlap %s: T(0) %.1f, T(W=%.0f) %.1f, excess %.1f usec\n", r->series,
                   row_names[row], t0, work_sizes[w] * r->scale, tw, excess);
            bench_result(r->series, "overlap", row_names[row],
                         clamp_percent(100.0 * (t0 - excess) / t0), "%");
            bench_result(r->series, "excess", row_names[row], excess, "usec");
        }
    }
}

int bench_progress(const struct bench_options *options) {
    int rank, size;
    bench_start_group("progress", options, benchmark_names, NUM_BENCH, &rank, &size);
    struct run r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.series = progress_series();
#ifdef NBRMA_NONBLOCKING_SERIES
    r.nonblocking = 1;
#endif
    r.iterations = options->iterations > 0 ? options->iterations : options->quick ? 60 : 300;
    r.warmup = options->iterations > 0 ? 1 : options->quick ? 2 : 5;
    r.budget = options->iterations > 0 ? 1e9 : options->quick ? 0.6 : 5.0;
    r.scale = options->scale > 0 ? options->scale : 1.0;
    r.late = LATE_USEC * r.scale;
    r.samples = bench_malloc("progress", NUM_SLOTS * (size_t)r.iterations * sizeof(double));
    r.gathered = bench_malloc("progress", NUM_SLOTS * (size_t)r.iterations * sizeof(double));
    memset(r.samples, 0, NUM_SLOTS * (size_t)r.iterations * sizeof(double));
    r.buffer = bench_malloc("progress", BYTES);
    memset(r.buffer, 0, BYTES);

    bench_set_step("setup", "progress window");
    bench_win_allocate(2 * BYTES, 1, NULL, MPI_COMM_WORLD, &r.base, &r.win);
    memset(r.base, 0, 2 * BYTES);
    MPI_Group world_group;
    BENCH_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    for (int k = 0; k < 3; k++) BENCH_MPI(MPI_Group_incl(world_group, 1, &k, &r.group_of[k]));
    int zero = 0;
    BENCH_MPI(MPI_Group_excl(world_group, 1, &zero, &r.others));
    r.size = size;
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        printf(
            "# progress: series %s, %s calls on the critical rank, late side %.0f us, "
            "%d MiB puts\n",
            r.series, r.nonblocking ? "nonblocking" : "blocking", r.late, BYTES / MIB);
        fflush(stdout);
    }

    if (bench_selected(options, benchmark_names[LATENCY]))
        for (int kind = 0; kind < NUM_LATENCY_ROWS; kind++)
            for (int b = 0; b < NUM_LATENCY; b++) latency(&r, (enum latency)kind, latency_bytes[b]);

    /* Work size by work size, the work alone just before the patterns (a shared machine's
     * load drifts: the rows compared are measured close together). */
    for (int w = 0; w < NUM_WORK; w++) {
        work_alone(&r, w);
        if (bench_selected(options, benchmark_names[LATE_POST])) late_post(&r, w);
        if (bench_selected(options, benchmark_names[LATE_UNLOCK])) late_unlock(&r, w);
        if (bench_selected(options, benchmark_names[LOCK_OVERLAP])) lock_overlap(&r, w);
        if (bench_selected(options, benchmark_names[LATE_FENCE])) late_fence(&r, w);
    }
    if (rank == 0) report_overlap(&r, options);

#ifdef NBRMA_NONBLOCKING_SERIES
    /* Whether a progress thread did the work: its sweeps that moved something. */
    unsigned long long sweeps = 0;
    int have = nbrma_get_counter("progress_thread_sweeps", &sweeps) == MPI_SUCCESS;
    long long mine = have ? (long long)sweeps : -1, all[64] = {0};
    if (size > 64) mine = -1;
    long long *gather_to = size <= 64 ? all : bench_malloc("progress", size * sizeof(long long));
    BENCH_MPI(MPI_Gather(&mine, 1, MPI_LONG_LONG, gather_to, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    if (gather_to != all) free(gather_to);
    if (rank == 0) {
        if (all[0] < 0)
            printf(
                "# progress_thread_sweeps: no such counter (this libnbrma has no progress "
                "thread)\n");
        else
            printf("# progress_thread_sweeps on ranks 0, 1, 2: %lld %lld %lld\n", all[0], all[1],
                   all[2]);
        if (strcmp(r.series, "nbrma-thread") != 0 && strcmp(r.series, "nbrma-interrupt") != 0)
            ;
        else if (all[0] <= 0 && all[1] <= 0)
            printf(
                "# WARNING: %s but no progress-thread sweep moved anything on the computing "
                "ranks\n", r.series);
        fflush(stdout);
    }
    /* NBRMA_PROGRESS=interrupt: the wake-ups (summed over the ranks) and the memory. */
    if (strcmp(r.series, "nbrma-interrupt") == 0) {
        const char *names[] = {"interrupt_wakeups", "interrupt_futile_wakeups",
                               "interrupt_event_wakeups", "interrupt_sweeps"};
        unsigned long long mine4[4] = {0}, sum4[4] = {0};
        for (int k = 0; k < 4; k++) nbrma_get_counter(names[k], &mine4[k]);
        BENCH_MPI(MPI_Reduce(mine4, sum4, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
        unsigned long long helper = 0, table = 0;
        nbrma_get_counter("helper_pid", &helper);
        nbrma_get_counter("help_table_bytes", &table);
        if (rank == 0) {
            printf("# interrupt counters (all ranks): wakeups=%llu futile=%llu event_wakeups=%llu "
                   "sweeps=%llu\n", sum4[0], sum4[1], sum4[2], sum4[3]);
            char path[64], line[256];
            long rss = -1, anon = -1;
            snprintf(path, sizeof path, "/proc/%llu/status", helper);
            FILE *f = helper ? fopen(path, "r") : NULL;
            while (f && fgets(line, sizeof line, f)) {
                sscanf(line, "VmRSS: %ld", &rss);
                sscanf(line, "RssAnon: %ld", &anon);
            }
            if (f) fclose(f);
            printf("# interrupt memory: helper pid %llu VmRSS %ld KiB (RssAnon %ld KiB), help table "
                   "%llu bytes for %d ranks\n", helper, rss, anon, table, size);
            fflush(stdout);
        }
    }
#endif

    bench_set_step("teardown", "progress window");
    for (int k = 0; k < 3; k++) BENCH_MPI(MPI_Group_free(&r.group_of[k]));
    BENCH_MPI(MPI_Group_free(&r.others));
    BENCH_MPI(MPI_Group_free(&world_group));
    BENCH_MPI(MPI_Win_free(&r.win));
    free(r.buffer);
    free(r.samples);
    free(r.gathered);
    long all_bad = 0;
    BENCH_MPI(MPI_Allreduce(&r.total_bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    return all_bad ? 3 : 0;
}

void bench_list_progress(void) {
    char param[24];
    for (int row = 0; row < NUM_ROWS; row++)
        for (int w = 0; w < NUM_WORK; w++) {
            snprintf(param, sizeof param, "%.0f", work_sizes[w]);
            bench_row(row_names[row], param, "usec");
        }
    for (int kind = 0; kind < NUM_LATENCY_ROWS; kind++)
        for (int b = 0; b < NUM_LATENCY; b++) {
            snprintf(param, sizeof param, "%d", latency_bytes[b]);
            bench_row(latency_names[kind], param, "usec");
        }
    for (int k = 0; k < NUM_OVERLAP_ROWS; k++) bench_row("overlap", row_names[overlap_rows[k]], "%");
    for (int k = 0; k < NUM_OVERLAP_ROWS; k++) bench_row("excess", row_names[overlap_rows[k]], "usec");
}
