/*
 * lock_at_once: lock epochs taken at once (one compare-and-swap, run in the application's
 * calls outside the epoch queue) keep every guarantee of a queued lock epoch. For each flavor
 * (all four, or those named on the command line):
 *
 *   mutual exclusion  every rank, many times, takes an exclusive lock on rank 0 and
 *                     increments a counter by get + flush + put (not atomic: only the
 *                     lock protects it); the counter ends at exactly nprocs * ITERS.
 *                     Contended locks queue and are handed over, uncontended ones are
 *                     taken at once: both meet here.
 *   readers/writers   odd ranks write a pair (v, v) under exclusive locks on rank 0's
 *                     second cell pair; even ranks read it under shared locks and must
 *                     never see a torn pair.
 *   beside            an epoch taken at once, then a second lock toward another rank
 *                     opened beside it (queued; the first stays at once), puts into both, MPI_Rput and
 *                     MPIX_Win_iflush inside, unlock of both; then a chain of
 *                     MPIX_Win_ilock / put / MPIX_Win_iunlock epochs toward one target
 *                     issued without waiting (deferred behind each other), all waited at
 *                     the end: every value arrives, the last epoch's value last.
 *   lock_all          readers_writers again with the readers in MPI_Win_lock_all epochs
 *                     (shared locks taken at each target's first call) that also
 *                     MPI_Win_flush_all, and the writers' exclusive locks queued behind
 *                     them and handed over.
 *   reordered         on a window with access_after_access_reorder: batches of
 *                     MPIX_Win_ilock(EXCLUSIVE) / two puts of a pair (v, v) / an
 *                     accumulate of 1 / MPIX_Win_iunlock toward random ranks, waited per
 *                     batch, beside ranks reading pairs under shared nonblocking locks:
 *                     a lock toward a free rank passes the epochs queued toward busy
 *                     ones and is taken at once. No torn pair, and the accumulated sum
 *                     is exactly the number of writer epochs.
 *   errors            inside an epoch taken at once: MPI_Win_fence, MPI_Win_unlock of
 *                     another rank, MPI_Win_lock of the same rank again and MPI_Win_free
 *                     fail with MPI_ERR_RMA_SYNC; the epoch still works and unlocks.
 *
 * In the shared-memory mode (no NBRMA_TRANSPORT, no NBRMA_VIRTUAL_NODES) the counter
 * locks_at_once must have grown; elsewhere (UCX) the ordinary path runs the same checks.
 */
#include "rmatest.h"

#define ITERS 300
#define CHAIN 8

static int me, np;


static void mutual_exclusion(rt_win_t *w)
{
    long long *cell = (long long *) w->base;
    MPI_Aint d = rt_disp(w, 0, 0);
    for (int i = 0; i < ITERS; i++) {
        long long v = -1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
        MPI_CHK(MPI_Get(&v, 1, MPI_LONG_LONG, 0, d, 1, MPI_LONG_LONG, w->win));
        MPI_CHK(MPI_Win_flush(0, w->win));
        v += 1;
        MPI_CHK(MPI_Put(&v, 1, MPI_LONG_LONG, 0, d, 1, MPI_LONG_LONG, w->win));
        MPI_CHK(MPI_Win_unlock(0, w->win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        rt_lock_self(w);
        CHECK(cell[0] == (long long) np * ITERS, "%s: counter %lld, expected %lld",
              rt_flavor_names[w->flavor], cell[0], (long long) np * ITERS);
        rt_unlock_self(w);
    }
}

/* A writer's step: under an exclusive lock on rank 0, `value` into cells 2 and 3 by two
 * puts with a flush between them, so a reader that is not excluded can see them differ. */
static void write_pair(rt_win_t *w, long long value)
{
    long long pair[2] = { value, value };
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
    MPI_CHK(MPI_Put(&pair[0], 1, MPI_LONG_LONG, 0, rt_disp(w, 0, 2), 1, MPI_LONG_LONG, w->win));
    MPI_CHK(MPI_Win_flush(0, w->win));
    MPI_CHK(MPI_Put(&pair[1], 1, MPI_LONG_LONG, 0, rt_disp(w, 0, 3), 1, MPI_LONG_LONG, w->win));
    MPI_CHK(MPI_Win_unlock(0, w->win));
}

static void readers_writers(rt_win_t *w)
{
    MPI_Aint d = rt_disp(w, 0, 2);
    int torn = 0;
    for (int i = 0; i < ITERS; i++) {
        long long pair[2];
        if (me % 2) {
            write_pair(w, (long long) me * 1000000 + i);
        } else {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
            MPI_CHK(MPI_Get(pair, 2, MPI_LONG_LONG, 0, d, 2, MPI_LONG_LONG, w->win));
            MPI_CHK(MPI_Win_unlock(0, w->win));
            torn += pair[0] != pair[1];
        }
    }
    CHECK(torn == 0, "%s: %d torn pairs read under shared locks", rt_flavor_names[w->flavor],
          torn);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void lock_all_readers(rt_win_t *w)
{
    MPI_Aint d = rt_disp(w, 0, 2);
    int torn = 0;
    for (int i = 0; i < ITERS; i++) {
        long long pair[2];
        if (me % 2) {
            write_pair(w, (long long) me * 1000000 + i + 7);
        } else {
            long long mine = i;
            MPI_CHK(MPI_Win_lock_all(0, w->win));
            MPI_CHK(MPI_Get(pair, 2, MPI_LONG_LONG, 0, d, 2, MPI_LONG_LONG, w->win));
            MPI_CHK(MPI_Put(&mine, 1, MPI_LONG_LONG, me, rt_disp(w, me, 1), 1, MPI_LONG_LONG,
                            w->win));
            MPI_CHK(MPI_Win_flush_all(w->win));
            MPI_CHK(MPI_Win_unlock_all(w->win));
            torn += pair[0] != pair[1];
        }
    }
    CHECK(torn == 0, "%s: %d torn pairs read under lock_all", rt_flavor_names[w->flavor], torn);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me % 2 == 0) {
        rt_lock_self(w);
        CHECK(((long long *) w->base)[1] == ITERS - 1, "%s: own cell after lock_all puts: %lld",
              rt_flavor_names[w->flavor], ((long long *) w->base)[1]);
        rt_unlock_self(w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void beside(rt_win_t *w)
{
    long long *cell = (long long *) w->base;
    const int a = (me + 1) % np, b = (me + 2) % np;
    long long va = 100 + me, vb = 200 + me, vr = 300 + me;
    MPI_Request r[CHAIN + 2];

    /* cells: 4 + origin rank (from a), 4 + np + origin (from b), 4 + 2 np + origin (chain) */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, a, 0, w->win));
    if (b != a) MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, b, 0, w->win));
    MPI_CHK(MPI_Put(&va, 1, MPI_LONG_LONG, a, rt_disp(w, a, 4 + me), 1,
                    MPI_LONG_LONG, w->win));
    MPI_CHK(MPI_Rput(&vb, 1, MPI_LONG_LONG, b, rt_disp(w, b, 4 + np + me), 1,
                     MPI_LONG_LONG, w->win, &r[0]));
    MPI_CHK(MPIX_Win_iflush(a, w->win, &r[1]));
    MPI_CHK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    if (b != a) MPI_CHK(MPI_Win_unlock(b, w->win));
    MPI_CHK(MPI_Win_unlock(a, w->win));

    long long chain[CHAIN];
    for (int k = 0; k < CHAIN; k++) {
        chain[k] = vr * 100 + k;
        MPI_Request lock_req;
        MPI_CHK(MPIX_Win_ilock(k % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, a, 0, w->win,
                               &lock_req));
        MPI_CHK(MPI_Wait(&lock_req, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Put(&chain[k], 1, MPI_LONG_LONG, a, rt_disp(w, a, 4 + 2 * np + me), 1,
                        MPI_LONG_LONG, w->win));
        MPI_CHK(MPIX_Win_iunlock(a, w->win, &r[k]));
    }
    MPI_CHK(MPI_Waitall(CHAIN, r, MPI_STATUSES_IGNORE));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    const int from_a = (me - 1 + np) % np, from_b = (me - 2 + 2 * np) % np;
    rt_lock_self(w);
    CHECK(cell[4 + from_a] == 100 + from_a, "%s: put from %d: %lld", rt_flavor_names[w->flavor],
          from_a, cell[4 + from_a]);
    CHECK(cell[4 + np + from_b] == 200 + from_b, "%s: rput from %d: %lld",
          rt_flavor_names[w->flavor], from_b, cell[4 + np + from_b]);
    CHECK(cell[4 + 2 * np + from_a] == (300 + from_a) * 100 + CHAIN - 1,
          "%s: chain from %d ended at %lld", rt_flavor_names[w->flavor], from_a,
          cell[4 + 2 * np + from_a]);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void errors(rt_win_t *w)
{
    const int t = (me + 1) % np, other = (me + 2) % np;
    long long v = 7;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
    rt_expect_win_error(w, MPI_Win_fence(0, w->win), MPI_ERR_RMA_SYNC, "MPI_Win_fence",
                        "inside a lock epoch");
    if (other != t)
        rt_expect_win_error(w, MPI_Win_unlock(other, w->win), MPI_ERR_RMA_SYNC,
                            "MPI_Win_unlock", "of a rank not locked");
    rt_expect_win_error(w, MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win), MPI_ERR_RMA_SYNC,
                        "MPI_Win_lock", "of a rank already locked");
    MPI_Win keep = w->win;
    rt_expect_win_error(w, MPI_Win_free(&keep), MPI_ERR_RMA_SYNC, "MPI_Win_free",
                        "inside a lock epoch");
    MPI_CHK(MPI_Put(&v, 1, MPI_LONG_LONG, t, rt_disp(w, t, 3), 1, MPI_LONG_LONG, w->win));
    MPI_CHK(MPI_Win_unlock(t, w->win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(w);
    CHECK(((long long *) w->base)[3] == 7, "%s: put after the refused calls: %lld",
          rt_flavor_names[w->flavor], ((long long *) w->base)[3]);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Nonblocking exclusive epochs on a window with access_after_access_reorder (see the
 * header): writers on odd ranks, readers on even ranks; cells 0 (sum) and 2, 3 (pair)
 * of every rank. */
static void reordered(int flavor)
{
    enum { BATCH = 16, ROUNDS = 40 };
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "access_after_access_reorder", "true"));
    rt_win_t w;
    rt_win_create(flavor, 4 * 8, 8, info, MPI_COMM_WORLD, &w);
    MPI_CHK(MPI_Info_free(&info));
    long long *cell = (long long *) w.base;
    rt_lock_self(&w);
    for (int i = 0; i < 4; i++)
        cell[i] = 0;
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    static long long pairs[BATCH][2];
    static const long long one = 1;
    MPI_Request r[2 * BATCH];
    unsigned seed = 12345u + 977u * (unsigned) me;
    long long written = 0;
    int torn = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int n = 0;
        for (int b = 0; b < BATCH; b++) {
            seed = seed * 1103515245u + 12345u;
            const int t = (int) ((seed >> 16) % (unsigned) np);
            if (me % 2) {
                pairs[b][0] = pairs[b][1] = (long long) me * 1000000 + round * BATCH + b;
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, t, 0, w.win, &r[n++]));
                MPI_CHK(MPI_Put(&pairs[b][0], 1, MPI_LONG_LONG, t, rt_disp(&w, t, 2), 1,
                                MPI_LONG_LONG, w.win));
                MPI_CHK(MPI_Put(&pairs[b][1], 1, MPI_LONG_LONG, t, rt_disp(&w, t, 3), 1,
                                MPI_LONG_LONG, w.win));
                MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG_LONG, t, rt_disp(&w, t, 0), 1,
                                       MPI_LONG_LONG, MPI_SUM, w.win));
                MPI_CHK(MPIX_Win_iunlock(t, w.win, &r[n++]));
                written++;
            } else {
                pairs[b][0] = -1, pairs[b][1] = -2;
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_SHARED, t, 0, w.win, &r[n++]));
                MPI_CHK(MPI_Get(pairs[b], 2, MPI_LONG_LONG, t, rt_disp(&w, t, 2), 2,
                                MPI_LONG_LONG, w.win));
                MPI_CHK(MPIX_Win_iunlock(t, w.win, &r[n++]));
            }
        }
        MPI_CHK(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
        if (me % 2 == 0)
            for (int b = 0; b < BATCH; b++)
                torn += pairs[b][0] != pairs[b][1];
    }
    CHECK(torn == 0, "%s: %d torn pairs read under shared locks (reorder key)",
          rt_flavor_names[flavor], torn);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    long long sum = cell[0];
    rt_unlock_self(&w);
    long long sums[2] = { sum, written }, totals[2] = { 0, 0 };
    MPI_CHK(MPI_Allreduce(sums, totals, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK(totals[0] == totals[1], "%s: the windows sum to %lld, the writers added %lld",
          rt_flavor_names[flavor], totals[0], totals[1]);
    rt_win_free(&w);
}

int main(int argc, char **argv)
{
    int sel[RT_NFLAVORS];
    rt_init_world(&argc, &argv, &me, &np);
    rt_select_flavors(argc, argv, sel);
    const int shm_mode = !getenv("NBRMA_TRANSPORT") && !getenv("NBRMA_VIRTUAL_NODES");
    unsigned long long at_once0 = rt_counter("locks_at_once");

    for (int f = 0; f < RT_NFLAVORS; f++) {
        if (!sel[f]) continue;
        rt_win_t w;
        rt_win_create(f, (MPI_Aint) (4 + 3 * np) * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        mutual_exclusion(&w);
        readers_writers(&w);
        lock_all_readers(&w);
        beside(&w);
        errors(&w);
        rt_win_free(&w);
        reordered(f);
    }

#ifndef NO_NBRMA
    if (shm_mode)
        CHECK(rt_counter("locks_at_once") > at_once0, "no lock was taken at once over shared memory");
#else
    (void) shm_mode, (void) at_once0;
#endif
    return rt_finalize();
}
