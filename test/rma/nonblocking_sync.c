/*
 * nonblocking_sync: the MPIX_ nonblocking passive-target synchronization calls.
 *
 * MPIX_Win_ilock / iunlock / ilock_all / iunlock_all / iflush / iflush_local /
 * iflush_all / iflush_local_all, alone and mixed with their blocking twins (ilock +
 * MPI_Win_unlock, MPI_Win_lock + MPIX_Win_iunlock, ilock_all + MPI_Win_unlock_all,
 * MPI_Win_lock_all + MPIX_Win_iunlock_all); an iflush whose request completes while
 * later operations are already issued; MPI_Test polling; MPI_Request_free on an
 * iunlock request followed by a later blocking epoch (the data must still arrive).
 *
 * Usage: nonblocking_sync [create|allocate|shared|dynamic]...   (default: all)
 */
#include "rmatest.h"

#define SLOTS 8
enum { S_PUT = 0, S_ACC, S_GET, S_FOP, S_RPUT, S_EXTRA, S_LATER, S_UNTOUCHED };

enum {
    N_ILOCK_EXCL = 0, N_ILOCK_SHARED, N_ILOCK_ALL, N_IFLUSH, N_IFLUSH_LOCAL, N_IFLUSH_ALL,
    N_IFLUSH_LOCAL_ALL, N_ILOCK_UNLOCK, N_LOCK_IUNLOCK, N_ILOCKALL_UNLOCKALL,
    N_LOCKALL_IUNLOCKALL, N_IFLUSH_LATER, N_TEST_POLL, N_REQ_FREE, NMODES
};
static const char *mode_names[NMODES] = {
    "ilock(exclusive)/iunlock", "ilock(shared)/iunlock", "ilock_all/iunlock_all",
    "ilock_all+iflush", "ilock(shared)+iflush_local", "ilock_all+iflush_all",
    "ilock_all+iflush_local_all", "MPIX_Win_ilock+MPI_Win_unlock",
    "MPI_Win_lock+MPIX_Win_iunlock", "MPIX_Win_ilock_all+MPI_Win_unlock_all",
    "MPI_Win_lock_all+MPIX_Win_iunlock_all", "iflush_all with later operations",
    "iunlock polled with MPI_Test", "MPI_Request_free(iunlock) then blocking epoch"
};

static int me, np;
static int *obuf, *rbuf, *xbuf, *lbuf;
static MPI_Request *reqs;
static int nreqs;

#define OB(t, k) obuf[(t) * SLOTS + (k)]
#define RB(t, k) rbuf[(t) * SLOTS + (k)]

/* expected value in target t, origin o's block, slot k; extra/later: 1 = written,
 * 0 = not yet, -1 = don't care */
static int check_slot(int m, int t, int o, int k, int extra, int later, int val)
{
    int i = rt_init_block_val(t, o, k), v = rt_put_val(m, t, o, k);
    switch (k) {
    case S_PUT:
    case S_RPUT:
        return val == v;
    case S_ACC:
    case S_FOP:
        return val == i + v;
    case S_EXTRA:
        return extra < 0 || val == (extra ? v : i);
    case S_LATER:
        return later < 0 || val == (later ? v : i);
    default:
        return val == i;
    }
}

#define D(w, t, k) rt_disp((w), (t), (MPI_Aint) me * SLOTS + (k))

static void issue(rt_win_t *w, int m, int t)
{
    for (int k = 0; k < SLOTS; k++) {
        OB(t, k) = rt_put_val(m, t, me, k);
        RB(t, k) = -1;
    }
    MPI_CHK(MPI_Put(&OB(t, S_PUT), 1, MPI_INT, t, D(w, t, S_PUT), 1, MPI_INT, w->win));
    MPI_CHK(MPI_Accumulate(&OB(t, S_ACC), 1, MPI_INT, t, D(w, t, S_ACC), 1, MPI_INT, MPI_SUM,
                           w->win));
    MPI_CHK(MPI_Get(&RB(t, S_GET), 1, MPI_INT, t, D(w, t, S_GET), 1, MPI_INT, w->win));
    MPI_CHK(MPI_Fetch_and_op(&OB(t, S_FOP), &RB(t, S_FOP), MPI_INT, t, D(w, t, S_FOP), MPI_SUM,
                             w->win));
    MPI_CHK(MPI_Rput(&OB(t, S_RPUT), 1, MPI_INT, t, D(w, t, S_RPUT), 1, MPI_INT, w->win,
                     &reqs[nreqs++]));
}

static void put_slot(rt_win_t *w, int m, int t, int k)
{
    int *buf = (k == S_EXTRA) ? &xbuf[t] : &lbuf[t];
    *buf = rt_put_val(m, t, me, k);
    MPI_CHK(MPI_Put(buf, 1, MPI_INT, t, D(w, t, k), 1, MPI_INT, w->win));
}

static void check_origin(int f, int m, int t)
{
    CHECK(RB(t, S_GET) == rt_init_block_val(t, me, S_GET), "%s/%s: Get from %d returned %d",
          rt_flavor_names[f], mode_names[m], t, RB(t, S_GET));
    CHECK(RB(t, S_FOP) == rt_init_block_val(t, me, S_FOP),
          "%s/%s: Fetch_and_op from %d returned %d",
          rt_flavor_names[f], mode_names[m], t, RB(t, S_FOP));
}

static void clobber(int t)
{
    for (int k = 0; k < SLOTS; k++)
        OB(t, k) = -7;
}

static void check_target_mem(rt_win_t *w, int f, int m, int extra, int later, const char *when)
{
    const int *mem = (const int *) w->base;
    for (int o = 0; o < np; o++)
        for (int k = 0; k < SLOTS; k++)
            CHECK(check_slot(m, me, o, k, extra, later, mem[o * SLOTS + k]),
                  "%s/%s (%s): target %d, origin %d's slot %d = %d", rt_flavor_names[f],
                  mode_names[m], when, me, o, k, mem[o * SLOTS + k]);
}

static void waitall(void)
{
    MPI_CHK(MPI_Waitall(nreqs, reqs, MPI_STATUSES_IGNORE));
    nreqs = 0;
}

/* target-side check in the middle of a lock_all epoch, after remote completion */
static void mid_epoch_check(rt_win_t *w, int f, int m, int extra, int later)
{
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_sync(w->win));
    check_target_mem(w, f, m, extra, later, "inside the epoch, after the flush completed");
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void run_mode(rt_win_t *w, int f, int m)
{
    MPI_Win win = w->win;
    MPI_Request req;
    int t, extra = 0, later = 0;

    rt_init_blocks(w, SLOTS);
    nreqs = 0;

    switch (m) {
    case N_ILOCK_EXCL:
    case N_ILOCK_UNLOCK:
    case N_LOCK_IUNLOCK:
        for (int i = 0; i < np; i++) {
            t = (me + i) % np;
            if (m == N_LOCK_IUNLOCK)
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            else
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, t, 0, win, &reqs[nreqs++]));
            issue(w, m, t);
            if (m == N_ILOCK_UNLOCK)
                MPI_CHK(MPI_Win_unlock(t, win));
            else
                MPI_CHK(MPIX_Win_iunlock(t, win, &reqs[nreqs++]));
        }
        waitall();
        for (t = 0; t < np; t++)
            check_origin(f, m, t);
        break;
    case N_ILOCK_SHARED:
    case N_IFLUSH_LOCAL:
        for (t = 0; t < np; t++)
            MPI_CHK(MPIX_Win_ilock(MPI_LOCK_SHARED, t, 0, win, &reqs[nreqs++]));
        for (t = 0; t < np; t++)
            issue(w, m, t);
        if (m == N_IFLUSH_LOCAL) {
            for (t = 0; t < np; t++)
                MPI_CHK(MPIX_Win_iflush_local(t, win, &reqs[nreqs++]));
            waitall();
            for (t = 0; t < np; t++) {
                check_origin(f, m, t);
                clobber(t);
                put_slot(w, m, t, S_EXTRA);
            }
            extra = 1;
        }
        for (t = 0; t < np; t++)
            MPI_CHK(MPIX_Win_iunlock(t, win, &reqs[nreqs++]));
        waitall();
        if (m == N_ILOCK_SHARED)
            for (t = 0; t < np; t++)
                check_origin(f, m, t);
        break;
    case N_ILOCK_ALL:
    case N_ILOCKALL_UNLOCKALL:
    case N_LOCKALL_IUNLOCKALL:
        if (m == N_LOCKALL_IUNLOCKALL)
            MPI_CHK(MPI_Win_lock_all(0, win));
        else
            MPI_CHK(MPIX_Win_ilock_all(0, win, &reqs[nreqs++]));
        for (t = 0; t < np; t++)
            issue(w, m, t);
        if (m == N_ILOCKALL_UNLOCKALL)
            MPI_CHK(MPI_Win_unlock_all(win));
        else
            MPI_CHK(MPIX_Win_iunlock_all(win, &reqs[nreqs++]));
        waitall();
        for (t = 0; t < np; t++)
            check_origin(f, m, t);
        break;
    case N_IFLUSH:
    case N_IFLUSH_ALL:
    case N_IFLUSH_LOCAL_ALL:
        MPI_CHK(MPIX_Win_ilock_all(0, win, &reqs[nreqs++]));
        for (t = 0; t < np; t++)
            issue(w, m, t);
        if (m == N_IFLUSH)
            for (t = 0; t < np; t++)
                MPI_CHK(MPIX_Win_iflush(t, win, &reqs[nreqs++]));
        else if (m == N_IFLUSH_ALL)
            MPI_CHK(MPIX_Win_iflush_all(win, &reqs[nreqs++]));
        else
            MPI_CHK(MPIX_Win_iflush_local_all(win, &reqs[nreqs++]));
        waitall();
        for (t = 0; t < np; t++)
            check_origin(f, m, t);
        if (m == N_IFLUSH_LOCAL_ALL)
            for (t = 0; t < np; t++)
                clobber(t);
        else
            mid_epoch_check(w, f, m, 0, 0);
        for (t = 0; t < np; t++)
            put_slot(w, m, t, S_EXTRA);
        extra = 1;
        MPI_CHK(MPIX_Win_iunlock_all(win, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        break;
    case N_IFLUSH_LATER: {
        MPI_Request freq;
        MPI_CHK(MPIX_Win_ilock_all(0, win, &reqs[nreqs++]));
        for (t = 0; t < np; t++)
            issue(w, m, t);
        MPI_CHK(MPIX_Win_iflush_all(win, &freq));
        for (t = 0; t < np; t++)  /* issued while the flush is still pending */
            put_slot(w, m, t, S_LATER);
        MPI_CHK(MPI_Wait(&freq, MPI_STATUS_IGNORE));
        waitall();
        for (t = 0; t < np; t++)
            check_origin(f, m, t);
        /* everything issued before the iflush is at the targets; the later puts may
         * or may not be */
        mid_epoch_check(w, f, m, 0, -1);
        MPI_CHK(MPIX_Win_iunlock_all(win, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        later = 1;
        break;
    }
    case N_TEST_POLL:
        for (int i = 0; i < np; i++) {
            int flag = 0;
            long polls = 0;
            t = (np + me - i) % np;
            MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, t, 0, win, &reqs[nreqs++]));
            issue(w, m, t);
            MPI_CHK(MPIX_Win_iunlock(t, win, &req));
            while (!flag) {
                MPI_CHK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
                polls++;
            }
            CHECK(req == MPI_REQUEST_NULL, "%s/%s: completed request not freed by MPI_Test",
                  rt_flavor_names[f], mode_names[m]);
            waitall();
            check_origin(f, m, t);
        }
        break;
    case N_REQ_FREE:
        for (int i = 0; i < np; i++) {
            t = (me + i) % np;
            MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, t, 0, win, &reqs[nreqs++]));
            issue(w, m, t);
            MPI_CHK(MPIX_Win_iunlock(t, win, &req));
            if (req != MPI_REQUEST_NULL)
                MPI_CHK(MPI_Request_free(&req));
            CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
        }
        /* never waited for: the data must still arrive, and a later blocking epoch to
         * the same target must work and be ordered after it */
        for (int i = 0; i < np; i++) {
            t = (me + i) % np;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            put_slot(w, m, t, S_EXTRA);
            MPI_CHK(MPI_Win_unlock(t, win));
        }
        extra = 1;
        waitall();
        break;
    }

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(w);
    check_target_mem(w, f, m, extra, later, "after the epoch");
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);

    obuf = malloc(sizeof(int) * SLOTS * (size_t) np);
    rbuf = malloc(sizeof(int) * SLOTS * (size_t) np);
    xbuf = malloc(sizeof(int) * (size_t) np);
    lbuf = malloc(sizeof(int) * (size_t) np);
    reqs = malloc(sizeof(MPI_Request) * (8 * (size_t) np + 8));

    rt_each_flavor_mode(argc, argv, (MPI_Aint) sizeof(int) * SLOTS * np, sizeof(int), NMODES,
                        run_mode);

    free(obuf);
    free(rbuf);
    free(xbuf);
    free(lbuf);
    free(reqs);
    return rt_finalize();
}
