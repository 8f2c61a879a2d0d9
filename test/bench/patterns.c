/*
 * patterns.c — the five RMA inefficiency patterns of SC14 §VIII-A1 (Figs 2–6), group
 * "patterns" of nbrma-bench (see bench.h). Needs 3 ranks.
 *
 * Each pattern injects the paper's delay or work, D = 1000 us × --scale, around one
 * 1 MiB put (other sizes where the figure has them) and reports, in usec, the quantity
 * the figure plots, measured in the process the figure measures, averaged over the
 * iterations (the paper's 100; --quick 20; --iterations N; a comment line gives the
 * median, minimum and maximum, as a loaded 2-core machine has outliers):
 *
 *   late_post  epoch|subsequent|cumulative  (Fig 2, at the origin) P0 (rank 2) is a
 *       target D late in posting; the origin P2 (rank 0) opens an access epoch toward
 *       it (start, 1 MiB put, complete), then does the "subsequent activity": a 1 MiB
 *       two-sided send to P1 (rank 1). As in the paper, each is the time until that
 *       activity completed, from one time origin (the origin's call to open the
 *       epoch): epoch = until the access epoch completed, subsequent = until the send
 *       completed, cumulative = until both did. (The send starts once the closing
 *       call returned: after the whole epoch with MPI_Win_complete, at once with
 *       MPIX_Win_icomplete.)
 *   late_complete <bytes>  (Fig 3, at the target; origin rank 0, target rank 1, as in
 *       the two fence patterns, whose window holds only these two ranks) the origin
 *       puts <bytes>, works D inside the epoch, then closes it; value = the target's
 *       exposure epoch length: the target posts, tells the origin so (zero-byte
 *       message, so the put finds the epoch exposed) and is timed from then until its
 *       MPI_Win_wait returns.
 *   early_fence <bytes>  (Fig 4, at the target) a fence epoch in which the origin puts
 *       256 KiB or 1 MiB; the target closes its epoch at once (early) and then does D of
 *       CPU-bound work; value = cumulative length of its closing fence and the work.
 *   wait_at_fence <bytes>  (Fig 5, at the target) the origin puts <bytes>, works D,
 *       then closes the fence epoch; value = the target's closing-fence time.
 *   late_unlock first|second  (Fig 6) O0 (rank 0) locks T (rank 2) exclusively, puts
 *       1 MiB, works D, unlocks; O1 (rank 1) locks T only after O0's lock call (O0
 *       tells it with a zero-byte message), puts 1 MiB, unlocks. first = O0's epoch
 *       (lock call to unlock's completion), second = O1's, each measured by the
 *       origin itself.
 *
 * Series: the blocking calls ("mpich" or "nbrma-blocking") and, in the nbrma build,
 * "nbrma-nonblocking": the process the pattern is about (the origin of late_post,
 * late_complete, wait_at_fence and late_unlock's O0, the target of early_fence) closes
 * its epoch with the nonblocking twin (MPIX_Win_icomplete, MPIX_Win_ifence,
 * MPIX_Win_iunlock; the opening call too where there is one: istart, ilock), does its
 * subsequent activity or work while the epoch's request is pending and completes the
 * request afterwards (late_post: MPI_Waitany over the epoch's request and the send's,
 * so each completion time is seen as it happens). The other ranks use the blocking
 * calls in every series. Expected: the nonblocking series keeps D out of the
 * subsequent activity (late_post), out of the peer's epoch (late_complete,
 * wait_at_fence, late_unlock second), and overlaps the transfer with the work
 * (early_fence). Whatever is measured is reported.
 *
 * Two cores, three ranks. Every pattern places the ranks that must run at the same time
 * on different cores (mpiexec -bind-to core puts ranks 0 and 2 on one core, rank 1 on
 * the other) and lets the third one sleep:
 *   - The late side waits with bench_sleep (nanosleep), never a busy loop: a late
 *     post (late_post P0 = rank 2) gives its core to the origin (rank 0).
 *   - Work that the figure needs to be CPU work (the origin's work inside the epoch of
 *     late_complete/wait_at_fence/late_unlock, early_fence's CPU-bound subsequent
 *     activity) is bench_compute on rank 0 or 1, whose peer is on the other core.
 *   - A rank with no part in the pattern (rank 2) waits for the end of the iteration
 *     polling MPI_Test with bench_sleep(200 us) between polls; the passive target of
 *     late_unlock (rank 2) does the same every 20 us, so MPICH's passive target still
 *     gets progress (at most ~0.1 ms late). The computing rank they share a core with
 *     keeps nearly all of it.
 *   - late_post's subsequent activity is a two-sided transfer (the paper's), not CPU
 *     work: with the target asleep the origin and P1 have a core each.
 * Active ranks synchronize every iteration with an MPI_Iallreduce that also carries
 * rank 0's stop decision (a time budget: 3 s per benchmark and series with --quick, 30 s
 * otherwise), polled with MPI_Test and sched_yield.
 *
 * Data checks: every put carries a byte pattern that changes every iteration, checked
 * by its target after the epoch (and the two-sided message of late_post by P1); one
 * CHECK line per benchmark and series, before its RESULT lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MIB (1024 * 1024)

enum style { BLOCKING, NONBLOCKING };

static const char *const benchmark_names[] = {"late_post", "late_complete", "early_fence",
                                              "wait_at_fence", "late_unlock"};
enum benchmark { LATE_POST, LATE_COMPLETE, EARLY_FENCE, WAIT_AT_FENCE, LATE_UNLOCK, NUM_BENCH };

static const char *const late_post_rows[] = {"epoch", "subsequent", "cumulative"};
static const char *const late_unlock_rows[] = {"first", "second"};
static const int late_complete_sizes[] = {65536, 262144, MIB};
static const int early_fence_sizes[] = {262144, MIB};
#define NUM_LC_SIZES 3
#define NUM_EF_SIZES 2

/* Sleep between MPI_Test polls: a rank with no part in the pattern, and the passive
 * target of late_unlock (whose MPICH lock requests need its progress). */
#define IDLE_POLL_USEC 200.0
#define TARGET_POLL_USEC 20.0

/* One benchmark × series in progress. */
struct run {
    const char *series;
    enum style style;
    int rank;
    int iterations, warmup;
    double budget, delay; /* seconds of iterations; usec of delay/work */
    MPI_Win win;          /* world window, 2 MiB a rank */
    unsigned char *base;
    MPI_Win pair_win; /* ranks 0 and 1 (fence patterns), 1 MiB; MPI_WIN_NULL on 2 */
    unsigned char *pair_base;
    MPI_Comm pair_comm;
    unsigned char *buffer; /* 1 MiB origin buffer */
    unsigned char *recv;   /* 1 MiB two-sided receive buffer */
    MPI_Group group_of[3]; /* the group {r} of world rank r */
    long mismatches;
    double *samples;  /* [quantity][timed iteration], usec, zero where not measured */
    double *gathered; /* the same summed over the ranks, on rank 0 */
};

/* ---- helpers ------------------------------------------------------------------------ */

/* Collective start of a benchmark: names the step, then the loop rank 0 drives. */
static struct bench_loop start_loop(const struct run *r, const char *benchmark) {
    bench_set_step(r->series, benchmark);
    struct bench_loop l = {
        .total = r->warmup + r->iterations, .warmup = r->warmup, .budget = r->budget};
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return l;
}

/* Where a rank records quantity k of the loop's current iteration (if timed). */
static void record(struct run *r, const struct bench_loop *l, int k, double usec) {
    int index = bench_loop_slot(l, r->iterations);
    if (index >= 0) r->samples[k * r->iterations + index] = usec;
}

/* Collective: gathers the samples (each measured by one rank) to rank 0 and reports
 * their mean (the paper's statistic) as RESULT, the median and range as a comment. */
static void report(struct run *r, const char *benchmark, const char *const *params, int count,
                   const struct bench_loop *l) {
    int timed = bench_loop_timed(l);
    BENCH_MPI(MPI_Reduce(r->samples, r->gathered, count * r->iterations, MPI_DOUBLE, MPI_SUM, 0,
                         MPI_COMM_WORLD));
    memset(r->samples, 0, (size_t)count * r->iterations * sizeof(double));
    long bad = 0;
    BENCH_MPI(MPI_Reduce(&r->mismatches, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (r->rank != 0) return;
    bench_check(r->series, benchmark, bad == 0);
    if (bad) fprintf(stderr, "patterns: %s %s: %ld data mismatches\n", r->series, benchmark, bad);
    printf("# %s %s: %d timed iterations, D = %.0f us\n", r->series, benchmark, timed, r->delay);
    bench_report_samples(r->series, benchmark, params, count, r->gathered, r->iterations, timed);
}

/* report() of a one-row benchmark whose parameter is the message size. */
static void report_bytes(struct run *r, const char *benchmark, int bytes,
                         const struct bench_loop *l) {
    char param[24];
    snprintf(param, sizeof param, "%d", bytes);
    const char *params[] = {param};
    report(r, benchmark, params, 1, l);
}

enum closing { CLOSE_COMPLETE, CLOSE_FENCE, CLOSE_UNLOCK };

/* The origin's work D and the call closing its epoch (MPI_Win_complete, the pair window's
 * closing fence, or the unlock of `target`): blocking, the work inside the epoch;
 * nonblocking, the closing call first and the work while its request is pending. */
static void work_and_close(struct run *r, enum closing how, int target) {
    int nonblocking = r->style == NONBLOCKING;
    MPI_Request closing = MPI_REQUEST_NULL;
    if (!nonblocking) bench_compute(r->delay);
    switch (how) {
        case CLOSE_COMPLETE:
            BENCH_SYNC(nonblocking, &closing, MPI_Win_complete(r->win),
                       MPIX_Win_icomplete(r->win, &closing));
            break;
        case CLOSE_FENCE:
            BENCH_SYNC(nonblocking, &closing, MPI_Win_fence(MPI_MODE_NOSUCCEED, r->pair_win),
                       MPIX_Win_ifence(MPI_MODE_NOSUCCEED, r->pair_win, &closing));
            break;
        case CLOSE_UNLOCK:
            BENCH_SYNC(nonblocking, &closing, MPI_Win_unlock(target, r->win),
                       MPIX_Win_iunlock(target, r->win, &closing));
            break;
    }
    if (nonblocking) {
        bench_compute(r->delay);
        bench_finish(&closing);
    }
}

/* ---- late_post (Fig 2): P0 = rank 2 late target, P1 = rank 1, origin P2 = rank 0 ---- */

enum { LP_ORIGIN = 0, LP_PEER = 1, LP_TARGET = 2 };

static void late_post(struct run *r) {
    struct bench_loop l = start_loop(r, "late_post");
    while (bench_loop_next(&l, r->rank, 0)) {
        int it = l.i;
        unsigned char value = bench_stamp(it, 1);
        if (r->rank == LP_ORIGIN) {
            memset(r->buffer, value, MIB);
            MPI_Request requests[2], opening;
            double t0 = MPI_Wtime();
            BENCH_SYNC(r->style == NONBLOCKING, &opening,
                       MPI_Win_start(r->group_of[LP_TARGET], 0, r->win),
                       MPIX_Win_istart(r->group_of[LP_TARGET], 0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, MIB, MPI_BYTE, LP_TARGET, 0, MIB, MPI_BYTE, r->win));
            BENCH_SYNC(r->style == NONBLOCKING, &requests[0], MPI_Win_complete(r->win),
                       MPIX_Win_icomplete(r->win, &requests[0]));
            double t_epoch = requests[0] == MPI_REQUEST_NULL ? MPI_Wtime() : 0;
            BENCH_MPI(
                MPI_Isend(r->buffer, MIB, MPI_BYTE, LP_PEER, it, MPI_COMM_WORLD, &requests[1]));
            double t_send = 0;
            for (;;) {
                int index;
                BENCH_MPI(MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE));
                if (index == MPI_UNDEFINED) break;
                if (index == 0) t_epoch = MPI_Wtime();
                if (index == 1) t_send = MPI_Wtime();
            }
            bench_finish(&opening);
            record(r, &l, 0, (t_epoch - t0) * 1e6);
            record(r, &l, 1, (t_send - t0) * 1e6);
            record(r, &l, 2, ((t_epoch > t_send ? t_epoch : t_send) - t0) * 1e6);
        } else if (r->rank == LP_PEER) {
            BENCH_MPI(
                MPI_Recv(r->recv, MIB, MPI_BYTE, LP_ORIGIN, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (!bench_all_equal(r->recv, MIB, value)) r->mismatches++;
        } else if (r->rank == LP_TARGET) {
            bench_sleep(r->delay);
            BENCH_MPI(MPI_Win_post(r->group_of[LP_ORIGIN], 0, r->win));
            BENCH_MPI(MPI_Win_wait(r->win));
            if (!bench_all_equal(r->base, MIB, value)) r->mismatches++;
        }
    }
    report(r, "late_post", late_post_rows, 3, &l);
}

/* ---- late_complete (Fig 3): origin rank 0, target rank 1, rank 2 idle ---------------- */

static void late_complete(struct run *r, int size_index) {
    int bytes = late_complete_sizes[size_index];
    struct bench_loop l = start_loop(r, "late_complete");
    while (bench_loop_next(&l, r->rank, r->rank == 2 ? IDLE_POLL_USEC : 0)) {
        int it = l.i;
        unsigned char value = bench_stamp(it, 2 + size_index);
        if (r->rank == 0) {
            memset(r->buffer, value, bytes);
            /* The target has posted (the figure's setting: the wait is the transfer
             * plus what the origin adds, not a late post). */
            BENCH_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_Request opening;
            BENCH_SYNC(r->style == NONBLOCKING, &opening, MPI_Win_start(r->group_of[1], 0, r->win),
                       MPIX_Win_istart(r->group_of[1], 0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, r->win));
            work_and_close(r, CLOSE_COMPLETE, 1);
            bench_finish(&opening);
        } else if (r->rank == 1) {
            BENCH_MPI(MPI_Win_post(r->group_of[0], 0, r->win));
            BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, it, MPI_COMM_WORLD));
            double t0 = MPI_Wtime();
            BENCH_MPI(MPI_Win_wait(r->win));
            double t1 = MPI_Wtime();
            record(r, &l, 0, (t1 - t0) * 1e6);
            if (!bench_all_equal(r->base, bytes, value)) r->mismatches++;
        }
    }
    report_bytes(r, "late_complete", bytes, &l);
}

/* ---- early_fence (Fig 4) and wait_at_fence (Fig 5): pair window of ranks 0 and 1 ------
 * Origin rank 0, target rank 1, rank 2 idle. Both open the epoch with a blocking
 * MPI_Win_fence(MPI_MODE_NOPRECEDE) and close it with MPI_MODE_NOSUCCEED; the two differ
 * in who works D: early_fence's target after its (early) closing fence, wait_at_fence's
 * origin before its own. */

static void fence_pattern(struct run *r, enum benchmark b, int size_index) {
    int early = b == EARLY_FENCE;
    int bytes = early ? early_fence_sizes[size_index] : late_complete_sizes[size_index];
    struct bench_loop l = start_loop(r, benchmark_names[b]);
    while (bench_loop_next(&l, r->rank, r->rank == 2 ? IDLE_POLL_USEC : 0)) {
        unsigned char value = bench_stamp(l.i, (early ? 5 : 7) + size_index);
        if (r->rank == 0) {
            memset(r->buffer, value, bytes);
            BENCH_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, r->pair_win));
            BENCH_MPI(MPI_Put(r->buffer, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, r->pair_win));
            if (early)
                BENCH_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, r->pair_win));
            else
                work_and_close(r, CLOSE_FENCE, 1);
        } else if (r->rank == 1) {
            BENCH_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, r->pair_win));
            MPI_Request closing;
            double t0 = MPI_Wtime();
            if (early) {
                BENCH_SYNC(r->style == NONBLOCKING, &closing,
                           MPI_Win_fence(MPI_MODE_NOSUCCEED, r->pair_win),
                           MPIX_Win_ifence(MPI_MODE_NOSUCCEED, r->pair_win, &closing));
                bench_compute(r->delay); /* the CPU-bound subsequent activity */
                bench_finish(&closing);
            } else {
                BENCH_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, r->pair_win));
            }
            double t1 = MPI_Wtime();
            record(r, &l, 0, (t1 - t0) * 1e6);
            if (!bench_all_equal(r->pair_base, bytes, value)) r->mismatches++;
        }
    }
    report_bytes(r, benchmark_names[b], bytes, &l);
}

/* ---- late_unlock (Fig 6): O0 = rank 0, O1 = rank 1, target T = rank 2 ----------------
 * O0 puts to T's first MiB, O1 to its second. */

static void late_unlock(struct run *r) {
    enum { O0 = 0, O1 = 1, T = 2 };
    struct bench_loop l = start_loop(r, "late_unlock");
    while (bench_loop_next(&l, r->rank, r->rank == T ? TARGET_POLL_USEC : 0)) {
        int it = l.i;
        unsigned char value = bench_stamp(it, 9 + r->rank);
        if (r->rank == T) {
            /* Both origins have unlocked once everyone passed this boundary; the
             * check (under a shared lock on its own window) is over before the next
             * iteration starts. */
            bench_boundary(1, TARGET_POLL_USEC);
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, r->win));
            if (!bench_all_equal(r->base, MIB, bench_stamp(it, 9 + O0)) ||
                !bench_all_equal(r->base + MIB, MIB, bench_stamp(it, 9 + O1)))
                r->mismatches++;
            BENCH_MPI(MPI_Win_unlock(T, r->win));
            continue;
        }
        memset(r->buffer, value, MIB);
        double t0 = 0, t1 = 0;
        if (r->rank == O0) {
            MPI_Request opening;
            t0 = MPI_Wtime();
            BENCH_SYNC(r->style == NONBLOCKING, &opening,
                       MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, r->win),
                       MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, T, 0, r->win, &opening));
            BENCH_MPI(MPI_Put(r->buffer, MIB, MPI_BYTE, T, 0, MIB, MPI_BYTE, r->win));
            /* O1 may ask for the lock now. */
            BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, O1, it, MPI_COMM_WORLD));
            work_and_close(r, CLOSE_UNLOCK, T);
            bench_finish(&opening);
            t1 = MPI_Wtime();
        } else {
            BENCH_MPI(MPI_Recv(NULL, 0, MPI_BYTE, O0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            t0 = MPI_Wtime();
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, r->win));
            BENCH_MPI(MPI_Put(r->buffer, MIB, MPI_BYTE, T, MIB, MIB, MPI_BYTE, r->win));
            BENCH_MPI(MPI_Win_unlock(T, r->win));
            t1 = MPI_Wtime();
        }
        record(r, &l, r->rank, (t1 - t0) * 1e6);
        bench_boundary(1, 0);
    }
    report(r, "late_unlock", late_unlock_rows, 2, &l);
}

/* ---- the group ---------------------------------------------------------------------- */

static void run_all(struct run *r, const struct bench_options *options) {
    if (bench_selected(options, benchmark_names[LATE_POST])) late_post(r);
    if (bench_selected(options, benchmark_names[LATE_COMPLETE]))
        for (int s = 0; s < NUM_LC_SIZES; s++) late_complete(r, s);
    if (bench_selected(options, benchmark_names[EARLY_FENCE]))
        for (int s = 0; s < NUM_EF_SIZES; s++) fence_pattern(r, EARLY_FENCE, s);
    if (bench_selected(options, benchmark_names[WAIT_AT_FENCE]))
        for (int s = 0; s < NUM_LC_SIZES; s++) fence_pattern(r, WAIT_AT_FENCE, s);
    if (bench_selected(options, benchmark_names[LATE_UNLOCK])) late_unlock(r);
}

int bench_patterns(const struct bench_options *options) {
    int rank, size;
    bench_start_group("patterns", options, benchmark_names, NUM_BENCH, &rank, &size);
    struct run r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.iterations = options->iterations > 0 ? options->iterations : options->quick ? 20 : 100;
    r.warmup = options->iterations > 0 ? 1 : 3;
    r.budget = options->iterations > 0 ? 1e9 : options->quick ? 3.0 : 30.0;
    r.delay = 1000.0 * (options->scale > 0 ? options->scale : 1.0);
    r.samples = bench_malloc("patterns", 3 * (size_t)r.iterations * sizeof(double));
    r.gathered = bench_malloc("patterns", 3 * (size_t)r.iterations * sizeof(double));
    memset(r.samples, 0, 3 * (size_t)r.iterations * sizeof(double));
    r.buffer = bench_malloc("patterns", MIB);
    r.recv = bench_malloc("patterns", MIB);
    memset(r.buffer, 0, MIB);

    bench_set_step("setup", "patterns windows");
    bench_win_allocate(2 * MIB, 1, NULL, MPI_COMM_WORLD, &r.base, &r.win);
    memset(r.base, 0, 2 * MIB);
    BENCH_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &r.pair_comm));
    r.pair_win = MPI_WIN_NULL;
    if (r.pair_comm != MPI_COMM_NULL) {
        bench_win_allocate(MIB, 1, NULL, r.pair_comm, &r.pair_base, &r.pair_win);
        memset(r.pair_base, 0, MIB);
    }
    MPI_Group world_group;
    BENCH_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    for (int k = 0; k < 3; k++) BENCH_MPI(MPI_Group_incl(world_group, 1, &k, &r.group_of[k]));
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        printf("# patterns: %d ranks, D = %.0f us, %s\n", size, r.delay,
               options->quick ? "quick" : "full");
        fflush(stdout);
    }

    long bad = 0;
    r.series = BENCH_BLOCKING_SERIES;
    r.style = BLOCKING;
    run_all(&r, options);
    bad += r.mismatches;
#ifdef NBRMA_NONBLOCKING_SERIES
    r.mismatches = 0;
    r.series = "nbrma-nonblocking";
    r.style = NONBLOCKING;
    run_all(&r, options);
    bad += r.mismatches;
#endif

    bench_set_step("teardown", "patterns windows");
    for (int k = 0; k < 3; k++) BENCH_MPI(MPI_Group_free(&r.group_of[k]));
    BENCH_MPI(MPI_Group_free(&world_group));
    if (r.pair_win != MPI_WIN_NULL) BENCH_MPI(MPI_Win_free(&r.pair_win));
    if (r.pair_comm != MPI_COMM_NULL) BENCH_MPI(MPI_Comm_free(&r.pair_comm));
    BENCH_MPI(MPI_Win_free(&r.win));
    free(r.buffer);
    free(r.recv);
    free(r.samples);
    free(r.gathered);
    long all_bad = 0;
    BENCH_MPI(MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    return all_bad ? 3 : 0;
}

void bench_list_patterns(void) {
    char param[24];
    for (int k = 0; k < 3; k++) bench_row("late_post", late_post_rows[k], "usec");
    for (int s = 0; s < NUM_LC_SIZES; s++) {
        snprintf(param, sizeof param, "%d", late_complete_sizes[s]);
        bench_row("late_complete", param, "usec");
    }
    for (int s = 0; s < NUM_EF_SIZES; s++) {
        snprintf(param, sizeof param, "%d", early_fence_sizes[s]);
        bench_row("early_fence", param, "usec");
    }
    for (int s = 0; s < NUM_LC_SIZES; s++) {
        snprintf(param, sizeof param, "%d", late_complete_sizes[s]);
        bench_row("wait_at_fence", param, "usec");
    }
    for (int k = 0; k < 2; k++) bench_row("late_unlock", late_unlock_rows[k], "usec");
}
