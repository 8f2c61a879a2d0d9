/*
 * errors: erroneous RMA calls return the right error class through the window's
 * MPI_ERRORS_RETURN handler, with a message naming the call, and leave the window
 * usable and the target memory intact:
 *   unlock without lock, put/get/flush outside an epoch      -> MPI_ERR_RMA_SYNC
 *   lock of rank nprocs / -5, put to rank nprocs             -> MPI_ERR_RANK
 *   displacement + size beyond the target window (lock and fence epochs) -> MPI_ERR_RMA_RANGE
 *   lock while already locked toward the same target         -> MPI_ERR_RMA_SYNC
 *   origin/target type size mismatch in a put                -> MPI_ERR_TYPE
 *   MPIX_Win_ilock with a NULL request pointer               -> MPI_ERR_REQUEST
 *   a plain MPI_Win_fence(0) / MPI_Win_fence(MPI_MODE_NOSUCCEED) pair succeeds
 *   freeing a window with an open epoch                      -> MPI_ERR_RMA_SYNC
 * After each, a correct epoch in both directions must move the right data, and the
 * rest of the window must hold its initial contents.
 * (Active-target error paths are in at_errors.c.)
 *
 * 2 processes (more also work: each rank talks to rank^1, or itself when odd one out).
 */
#include "rmatest.h"

#define WIN_INTS 16
#define VERIFY_INTS 4   /* the verification epoch writes slots [0, VERIFY_INTS) */

static int me, np, peer, from;
static rt_win_t w;
static int round_no = 0;

/* A correct epoch toward the peer, then the target checks its whole window. */
static void verify(const char *after)
{
    int buf[VERIFY_INTS];
    int *mem = (int *) w.base;
    round_no++;
    for (int k = 0; k < VERIFY_INTS; k++)
        buf[k] = rt_verify_val(round_no, me, k);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win));
    MPI_CHK(MPI_Put(buf, VERIFY_INTS, MPI_INT, peer, rt_disp(&w, peer, 0), VERIFY_INTS,
                    MPI_INT, w.win));
    MPI_CHK(MPI_Win_unlock(peer, w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    rt_check_verified(&w, WIN_INTS, VERIFY_INTS, round_no, from, after);
    for (int k = VERIFY_INTS; k < WIN_INTS; k++)
        mem[k] = rt_init_slot_val(me, k);   /* repair, so later cases are judged on their own */
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void run_flavor(int flavor)
{
    int buf[8] = { 11, 12, 13, 14, 15, 16, 17, 18 }, rc;

    rt_win_create(flavor, sizeof(int) * WIN_INTS, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                  &w);
    rt_init_slots(&w, WIN_INTS);
    verify("window creation");

    /* ---- no epoch ---- */
    rc = MPI_Win_unlock(peer, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_unlock", "unlock without lock");
    rc = MPI_Win_unlock_all(w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all", "unlock_all without lock_all");
    rc = MPI_Put(buf, 1, MPI_INT, peer, rt_disp(&w, peer, 8), 1, MPI_INT, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Put", "put outside an epoch");
    rc = MPI_Get(buf, 1, MPI_INT, peer, rt_disp(&w, peer, 8), 1, MPI_INT, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Get", "get outside an epoch");
    rc = MPI_Win_flush(peer, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_flush", "flush outside an epoch");
    verify("calls outside an epoch");

    /* ---- bad ranks ---- */
    rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, np, 0, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Win_lock", "lock of rank nprocs");
    rc = MPI_Win_lock(MPI_LOCK_SHARED, -5, 0, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Win_lock", "lock of rank -5");
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    rc = MPI_Put(buf, 1, MPI_INT, np, 8, 1, MPI_INT, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Put", "put to rank nprocs");
    MPI_CHK(MPI_Win_unlock_all(w.win));
    verify("bad ranks");

    /* ---- out of range (the window has sizes, unlike dynamic windows) ---- */
    if (flavor == RT_CREATE || flavor == RT_ALLOCATE) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win));
        rc = MPI_Put(buf, 4, MPI_INT, peer, WIN_INTS - 2, 4, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_RANGE, "MPI_Put", "put past the window end");
        rc = MPI_Put(buf, 1, MPI_INT, peer, WIN_INTS, 1, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_RANGE, "MPI_Put", "put at displacement = window size");
        rc = MPI_Get(buf, 3, MPI_INT, peer, WIN_INTS - 1, 3, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_RANGE, "MPI_Get", "get past the window end");
        rc = MPI_Accumulate(buf, 4, MPI_INT, peer, WIN_INTS - 3, 4, MPI_INT, MPI_SUM, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_RANGE, "MPI_Accumulate", "accumulate past the window end");
        MPI_CHK(MPI_Win_unlock(peer, w.win));
        verify("out-of-range accesses");
        /* the same in a fence epoch, whose calls nbrma runs from the entry point
         * (rma_open): refused there too, with the general path's error */
        MPI_CHK(MPI_Win_fence(0, w.win));
        rc = MPI_Put(buf, 4, MPI_INT, peer, WIN_INTS - 2, 4, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_RANGE, "MPI_Put", "put past the window end in a fence epoch");
        rc = MPI_Get(buf, 3, MPI_INT, peer, WIN_INTS - 1, 3, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_RANGE, "MPI_Get", "get past the window end in a fence epoch");
        rc = MPI_Put(buf, 1, MPI_INT, np, 0, 1, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Put", "put to rank nprocs in a fence epoch");
        MPI_CHK(MPI_Win_fence(0, w.win));
        verify("out-of-range accesses in a fence epoch");
    }

    /* ---- lock twice ---- */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win));
    rc = MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_lock", "second lock toward the same target");
    MPI_CHK(MPI_Win_unlock(peer, w.win));
    verify("lock twice");

    /* ---- type size mismatch ---- */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win));
    rc = MPI_Put(buf, 2, MPI_INT, peer, rt_disp(&w, peer, 8), 3, MPI_INT, w.win);
    rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Put", "origin 2 ints, target 3 ints");
    MPI_CHK(MPI_Win_unlock(peer, w.win));
    verify("type size mismatch");

    /* ---- NULL request ---- */
#ifndef NO_NBRMA
    rc = MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win, NULL);
    rt_expect_win_error(&w, rc, MPI_ERR_REQUEST, "MPIX_Win_ilock", "ilock with a NULL request");
    verify("ilock with a NULL request");   /* also proves no epoch was left open */
#endif

    /* ---- a plain fence pair (no communication) works; lock epochs follow it ---- */
    MPI_CHK(MPI_Win_fence(0, w.win));
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    verify("fence(0)/fence(MPI_MODE_NOSUCCEED)");

    /* ---- free with an open epoch; then close it and free properly ---- */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win));
    {
        MPI_Win saved = w.win;
        rc = MPI_Win_free(&w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_free", "free with an open epoch");
        CHECK(w.win == saved, "failed MPI_Win_free changed the handle");
        w.win = saved;
    }
    MPI_CHK(MPI_Win_unlock(peer, w.win));
    verify("free with an open epoch");

    rt_win_free(&w);
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    rt_max_print = 100;
    peer = me ^ 1;
    if (peer >= np)
        peer = me;
    from = peer;    /* pairs: whoever writes to me is my peer */

    for (int f = 0; f < RT_NFLAVORS; f++)
        run_flavor(f);
    return rt_finalize();
}
