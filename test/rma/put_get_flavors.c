/*
 * put_get_flavors: every window flavor x every communication call (Put, Get,
 * Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap, Rput, Rget, Raccumulate,
 * Rget_accumulate) x passive-target synchronization: lock exclusive / shared,
 * lock_all, and flush / flush_local / flush_all / flush_local_all inside the epochs.
 *
 * Every origin writes to its own block of SLOTS ints at every target, so concurrent
 * shared epochs never conflict. Results are checked at the origin (fetched values) and
 * at the target (its own memory, read in an epoch on itself or after MPI_Win_sync).
 *
 * Usage: put_get_flavors [create|allocate|shared|dynamic]...   (default: all)
 */
#include "rmatest.h"

#define SLOTS 16

enum {
    S_PUT = 0, S_PUT2, S_ACC, S_GACC, S_FOP, S_CAS, S_RPUT, S_RACC, S_RGACC, S_GET, S_RGET,
    S_CAS_NOMATCH, S_FOP_NOOP, S_ACC_REPLACE, S_UNTOUCHED1, S_UNTOUCHED2
};

enum {
    M_LOCK_EXCL = 0, M_LOCK_SHARED, M_LOCK_ALL, M_EXCL_FLUSH, M_SHARED_FLUSH_LOCAL,
    M_ALL_FLUSH_ALL, M_ALL_FLUSH_LOCAL_ALL, M_ALL_FLUSH, NMODES
};
static const char *mode_names[NMODES] = {
    "lock_exclusive", "lock_shared", "lock_all", "lock_exclusive+flush",
    "lock_shared+flush_local", "lock_all+flush_all", "lock_all+flush_local_all",
    "lock_all+flush"
};

static const rt_calls_t calls = {
    .slots = SLOTS, .put = S_PUT, .acc = S_ACC, .gacc = S_GACC, .fop = S_FOP, .cas = S_CAS,
    .rput = S_RPUT, .racc = S_RACC, .rgacc = S_RGACC, .get = S_GET, .rget = S_RGET,
    .cas_nomatch = S_CAS_NOMATCH, .fop_noop = S_FOP_NOOP, .acc_replace = S_ACC_REPLACE
};

static int me, np;

static int extra_val(int m, int t, int o)
{
    return rt_put_val(m, t, o, S_PUT2) + 50;
}

/* value expected at target t in origin o's block, slot k, after mode m */
static int expected_target(int m, int t, int o, int k, int extra_done)
{
    if (k == S_PUT2 && extra_done)
        return extra_val(m, t, o);
    return rt_call_expected(&calls, k, rt_init_block_val(t, o, k), rt_put_val(m, t, o, k));
}

/* per-target origin buffers: they must stay valid until the operations complete */
static int *obuf, *rbuf, *cbuf, *xbuf;
#define OB(t, k) obuf[(t) * SLOTS + (k)]
#define RB(t, k) rbuf[(t) * SLOTS + (k)]

/* issue all operations of this origin toward target t; 4 requests go to reqs[0..3] */
static void issue(rt_win_t *w, int m, int t, MPI_Request *reqs)
{
    for (int k = 0; k < SLOTS; k++)
        OB(t, k) = rt_put_val(m, t, me, k);
    rt_issue_calls(w, t, &calls, &OB(t, 0), &RB(t, 0), &cbuf[t * 2], reqs);
}

static void extra_put(rt_win_t *w, int m, int t)
{
    xbuf[t] = extra_val(m, t, me);
    MPI_CHK(MPI_Put(&xbuf[t], 1, MPI_INT, t, rt_disp(w, t, (MPI_Aint) me * SLOTS + S_PUT2), 1,
                    MPI_INT, w->win));
}

static void check_origin(const rt_win_t *w, int f, int m, int t)
{
    char context[64];
    snprintf(context, sizeof(context), "%s/%s", rt_flavor_names[f], mode_names[m]);
    rt_check_fetched(w, t, &calls, &RB(t, 0), context);
}

static void clobber(int t)
{
    for (int k = 0; k < SLOTS; k++)
        OB(t, k) = -7;
    cbuf[2 * t] = cbuf[2 * t + 1] = -7;
}

/* target-side check of its own memory; caller provides the synchronization */
static void check_target_mem(rt_win_t *w, int f, int m, int extra_done, const char *when)
{
    const int *mem = (const int *) w->base;
    for (int o = 0; o < np; o++)
        for (int k = 0; k < SLOTS; k++) {
            int exp = expected_target(m, me, o, k, extra_done);
            CHECK(mem[o * SLOTS + k] == exp,
                  "%s/%s (%s): target %d block of origin %d slot %d = %d, expected %d",
                  rt_flavor_names[f], mode_names[m], when, me, o, k, mem[o * SLOTS + k], exp);
        }
}

static void run_mode(rt_win_t *w, int f, int m)
{
    MPI_Win win = w->win;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 4 * (size_t) np);
    int t;

    rt_init_blocks(w, SLOTS);

    switch (m) {
    case M_LOCK_EXCL:
    case M_EXCL_FLUSH:
        for (int i = 0; i < np; i++) {
            t = (me + i) % np;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            issue(w, m, t, &reqs[4 * t]);
            MPI_CHK(MPI_Waitall(4, &reqs[4 * t], MPI_STATUSES_IGNORE));
            if (m == M_EXCL_FLUSH) {
                MPI_CHK(MPI_Win_flush(t, win));
                check_origin(w, f, m, t);
                extra_put(w, m, t);
            }
            MPI_CHK(MPI_Win_unlock(t, win));
            if (m == M_LOCK_EXCL)
                check_origin(w, f, m, t);
        }
        break;
    case M_LOCK_SHARED:
    case M_SHARED_FLUSH_LOCAL:
        for (t = 0; t < np; t++)
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        for (t = 0; t < np; t++)
            issue(w, m, t, &reqs[4 * t]);
        MPI_CHK(MPI_Waitall(4 * np, reqs, MPI_STATUSES_IGNORE));
        if (m == M_SHARED_FLUSH_LOCAL) {
            for (t = 0; t < np; t++) {
                MPI_CHK(MPI_Win_flush_local(t, win));
                check_origin(w, f, m, t);
                clobber(t);
                /* the extra put overwrites the first put's second int: only a flush
                 * orders two puts of one origin (NBRMA_CHECK=races reports it otherwise) */
                MPI_CHK(MPI_Win_flush(t, win));
                extra_put(w, m, t);
            }
        }
        for (t = np - 1; t >= 0; t--)
            MPI_CHK(MPI_Win_unlock(t, win));
        if (m == M_LOCK_SHARED)
            for (t = 0; t < np; t++)
                check_origin(w, f, m, t);
        break;
    case M_LOCK_ALL:
        MPI_CHK(MPI_Win_lock_all(0, win));
        for (t = 0; t < np; t++)
            issue(w, m, t, &reqs[4 * t]);
        MPI_CHK(MPI_Win_unlock_all(win));
        /* request-based operations completed by the epoch's end: the requests still
         * have to be completed (and are already complete) */
        MPI_CHK(MPI_Waitall(4 * np, reqs, MPI_STATUSES_IGNORE));
        for (t = 0; t < np; t++)
            check_origin(w, f, m, t);
        break;
    case M_ALL_FLUSH_ALL:
    case M_ALL_FLUSH:
    case M_ALL_FLUSH_LOCAL_ALL:
        MPI_CHK(MPI_Win_lock_all(0, win));
        for (t = 0; t < np; t++)
            issue(w, m, t, &reqs[4 * t]);
        MPI_CHK(MPI_Waitall(4 * np, reqs, MPI_STATUSES_IGNORE));
        if (m == M_ALL_FLUSH_ALL)
            MPI_CHK(MPI_Win_flush_all(win));
        else if (m == M_ALL_FLUSH)
            for (t = 0; t < np; t++)
                MPI_CHK(MPI_Win_flush(t, win));
        else
            MPI_CHK(MPI_Win_flush_local_all(win));
        for (t = 0; t < np; t++)
            check_origin(w, f, m, t);
        if (m == M_ALL_FLUSH_LOCAL_ALL) {
            for (t = 0; t < np; t++)
                clobber(t);
            /* the extra puts overwrite the first puts' second ints: only a flush orders
             * two puts of one origin (NBRMA_CHECK=races reports it otherwise) */
            MPI_CHK(MPI_Win_flush_all(win));
        } else {
            /* remote completion: every target sees the data now, mid-epoch */
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            MPI_CHK(MPI_Win_sync(win));
            check_target_mem(w, f, m, 0, "after flush, inside the epoch");
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        }
        for (t = 0; t < np; t++)
            extra_put(w, m, t);
        MPI_CHK(MPI_Win_unlock_all(win));
        break;
    }

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(w);
    check_target_mem(w, f, m, m >= M_EXCL_FLUSH, "after the epoch");
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    free(reqs);
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);

    obuf = malloc(sizeof(int) * SLOTS * (size_t) np);
    rbuf = malloc(sizeof(int) * SLOTS * (size_t) np);
    cbuf = malloc(sizeof(int) * 2 * (size_t) np);
    xbuf = malloc(sizeof(int) * (size_t) np);

    rt_each_flavor_mode(argc, argv, (MPI_Aint) sizeof(int) * SLOTS * np, sizeof(int), NMODES,
                        run_mode);

    free(obuf);
    free(rbuf);
    free(cbuf);
    free(xbuf);
    return rt_finalize();
}
