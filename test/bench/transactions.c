/*
 * transactions.c — massive unstructured atomic transactions (SC14 §IV-B, Fig 12),
 * group "transactions" of nbrma-bench (see bench.h). Runs on the driver's 4 ranks
 * (bench_main.c requires them; the code itself works with 2 or more). The figure's x axis is the
 * job size: the group runs every series on the first 2 ranks (a core each on a 2-core machine; the
 * others wait, asleep) and then on all of them (4 ranks: two a core), parameter = the job size.
 *
 * Every rank performs K transactions (2000000; --quick 200000; --iterations N sets K),
 * each an exclusive lock epoch on a random rank (itself included: the updates are
 * unstructured, nobody knows who updates whom) that adds a 4-element int64 vector to a
 * random 4-element slot of the target's window (MPI_Accumulate, MPI_SUM; 1024 slots a
 * rank). Every rank runs until its K are done or a common deadline passes (1.5 s a
 * series with --quick, 20 s otherwise), so a slow series reports what it managed.
 * Reported: transactions per second of the whole job, RESULT <series> transactions
 * <ranks> <tps> tps, = all transactions done / the job's span, from the first rank's
 * start (after a barrier) to the last rank's last transaction completed, on the node's
 * one clock (MPI_Wtime; each rank's own span would hide that ranks sharing a core run
 * one after the other).
 *
 * Series: blocking (mpich, nbrma-blocking): MPI_Win_lock / MPI_Accumulate /
 * MPI_Win_unlock, one transaction after the other. "nbrma-nonblocking": MPIX_Win_ilock
 * / MPI_Accumulate / MPIX_Win_iunlock for a batch of 64 transactions without waiting,
 * then MPI_Waitall on the batch's requests: by default (§VI-B) nbrma still activates
 * one epoch after the other, but none of them waits for the application.
 * "nbrma-nonblocking+aaar": the same on a window created with
 * access_after_access_reorder=true, so a transaction toward a free target need not
 * wait for an earlier one still queued behind another origin's lock (epochs toward the
 * same target never overlap, so the key's promise of disjoint memory holds).
 *
 * Check: after the run, the sum of all windows equals the sum of all values the ranks
 * added (a lost or doubled update shows); CHECK <series> ok|FAILED transactions.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define SLOTS 1024 /* a rank's window: SLOTS slots of ELEMENTS int64 */
#define ELEMENTS 4
#define BATCH 64

enum style { BLOCKING, NONBLOCKING };

/* xorshift64*: every rank its own reproducible stream. */
static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

struct txn_run {
    const char *series;
    enum style style;
    const char *info_key; /* or NULL */
    int rank, size;       /* in comm */
    MPI_Comm comm;        /* the ranks taking part */
    long per_rank;
    double budget;
};

/* Collective. Returns 1 when the window sums check out. */
static int run_series(const struct txn_run *t) {
    bench_set_step(t->series, "transactions");
    int64_t *base = NULL;
    MPI_Win win;
    bench_win_allocate((MPI_Aint)SLOTS * ELEMENTS * sizeof(int64_t), sizeof(int64_t), t->info_key,
                       t->comm, &base, &win);
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t->rank, 0, win));
    memset(base, 0, (size_t)SLOTS * ELEMENTS * sizeof(int64_t));
    BENCH_MPI(MPI_Win_unlock(t->rank, win));

    /* The operands: a batch's origin buffers stay untouched until its Waitall. */
    static int64_t operand[BATCH][ELEMENTS];
    static MPI_Request requests[2 * BATCH];
    static MPI_Status statuses[2 * BATCH];
    uint64_t state = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)(t->rank + 1) * 0x100000001B3ULL);
    int64_t issued = 0;
    long done = 0;

    BENCH_MPI(MPI_Barrier(t->comm));
    double t0 = MPI_Wtime();
    double deadline = t0 + t->budget;
    while (done < t->per_rank) {
        int batch = t->style == NONBLOCKING ? BATCH : 1;
        if (batch > t->per_rank - done) batch = (int)(t->per_rank - done);
        int nreq = 0;
        for (int b = 0; b < batch; b++) {
            uint64_t r = next_random(&state);
            int target = (int)(r % (uint64_t)t->size);
            MPI_Aint slot = (MPI_Aint)((r >> 20) % SLOTS);
            for (int e = 0; e < ELEMENTS; e++) {
                operand[b][e] = (int64_t)((r >> (8 * e)) & 0xff) + 1;
                issued += operand[b][e];
            }
#ifdef NBRMA_NONBLOCKING_SERIES
            if (t->style == NONBLOCKING) {
                BENCH_MPI(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, target, 0, win, &requests[nreq++]));
                BENCH_MPI(MPI_Accumulate(operand[b], ELEMENTS, MPI_INT64_T, target, slot * ELEMENTS,
                                         ELEMENTS, MPI_INT64_T, MPI_SUM, win));
                BENCH_MPI(MPIX_Win_iunlock(target, win, &requests[nreq++]));
                continue;
            }
#endif
            BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
            BENCH_MPI(MPI_Accumulate(operand[b], ELEMENTS, MPI_INT64_T, target, slot * ELEMENTS,
                                     ELEMENTS, MPI_INT64_T, MPI_SUM, win));
            BENCH_MPI(MPI_Win_unlock(target, win));
        }
        if (nreq > 0) BENCH_MPI(MPI_Waitall(nreq, requests, statuses));
        done += batch;
        if ((done & 63) == 0 && MPI_Wtime() > deadline) break;
        if (t->style == NONBLOCKING && MPI_Wtime() > deadline) break;
    }
    double t1 = MPI_Wtime();

    /* Everyone's updates are complete once all passed the barrier (each rank's
     * unlocks completed before it entered). */
    BENCH_MPI(MPI_Barrier(t->comm));
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t->rank, 0, win));
    int64_t local = 0;
    for (int i = 0; i < SLOTS * ELEMENTS; i++) local += base[i];
    BENCH_MPI(MPI_Win_unlock(t->rank, win));
    int64_t sums[2] = {local, issued}, totals[2] = {0, 0};
    BENCH_MPI(MPI_Reduce(sums, totals, 2, MPI_INT64_T, MPI_SUM, 0, t->comm));
    /* One node, one clock: the job's span is from the first rank's start to the last
     * rank's end (ranks that share a core do not start together). */
    double times[2] = {-t0, t1}, extremes[2] = {0, 0};
    BENCH_MPI(MPI_Reduce(times, extremes, 2, MPI_DOUBLE, MPI_MAX, 0, t->comm));
    double longest = extremes[1] + extremes[0];
    long all_done = 0;
    BENCH_MPI(MPI_Reduce(&done, &all_done, 1, MPI_LONG, MPI_SUM, 0, t->comm));
    int ok = 1;
    if (t->rank == 0) {
        ok = totals[0] == totals[1];
        if (!ok)
            fprintf(stderr, "transactions: %s: the windows sum to %lld, the ranks added %lld\n",
                    t->series, (long long)totals[0], (long long)totals[1]);
        bench_check(t->series, "transactions", ok);
        printf("# %s transactions: %ld in %.3f s (%ld a rank requested)%s%s\n", t->series, all_done,
               longest, t->per_rank, t->info_key ? ", window info " : "",
               t->info_key ? t->info_key : "");
        char param[16];
        snprintf(param, sizeof param, "%d", t->size);
        bench_result(t->series, "transactions", param, longest > 0 ? all_done / longest : 0.0,
                     "tps");
    }
    BENCH_MPI(MPI_Bcast(&ok, 1, MPI_INT, 0, t->comm));
    bench_set_step(t->series, "MPI_Win_free");
    BENCH_MPI(MPI_Win_free(&win));
    return ok;
}

static const char *const benchmark_names[] = {"transactions"};

int bench_transactions(const struct bench_options *options) {
    int rank, size;
    bench_start_group("transactions", options, benchmark_names, 1, &rank, &size);
    long per_rank = options->iterations > 0 ? options->iterations
                    : options->quick        ? 200000
                                            : 2000000;
    double budget = options->iterations > 0 ? 1e9 : options->quick ? 1.5 : 20.0;
    if (rank == 0) {
        printf(
            "# transactions: job sizes 2 and %d ranks, %ld a rank, %d-element int64 "
            "accumulates, batch %d\n",
            size, per_rank, ELEMENTS, BATCH);
        fflush(stdout);
    }
    int ok = 1;
    /* The figure's x axis is the job size: 2 ranks (a core each) and all of them. */
    int job_sizes[2] = {2, size};
    for (int j = 0; j < (size > 2 ? 2 : 1); j++) {
        int n = job_sizes[j];
        MPI_Comm comm;
        BENCH_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &comm));
        if (comm != MPI_COMM_NULL) {
            struct txn_run t = {.rank = rank, .size = n, .comm = comm};
            t.per_rank = per_rank;
            t.budget = budget;
            t.series = BENCH_BLOCKING_SERIES;
            t.style = BLOCKING;
            ok &= run_series(&t);
#ifdef NBRMA_NONBLOCKING_SERIES
            t.series = "nbrma-nonblocking";
            t.style = NONBLOCKING;
            ok &= run_series(&t);
            t.series = "nbrma-nonblocking+aaar";
            t.info_key = NBRMA_INFO_ACCESS_AFTER_ACCESS_REORDER;
            ok &= run_series(&t);
#endif
            BENCH_MPI(MPI_Comm_free(&comm));
        }
        /* Wait without taking a core (ranks sitting out a job size). */
        MPI_Request request;
        BENCH_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &request));
        bench_wait_polling(&request, 50);
    }
    int all_ok = 0;
    BENCH_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    return all_ok ? 0 : 3;
}

/* The driver runs this group with 4 ranks: job sizes 2 and 4. */
void bench_list_transactions(void) {
    bench_row("transactions", "2", "tps");
    bench_row("transactions", "4", "tps");
}
