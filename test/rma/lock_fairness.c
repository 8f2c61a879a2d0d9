/*
 * lock_fairness: locks toward one target are granted in request order (FIFO).
 *
 * Rank 0 is the target. Rank 1 takes a lock with MPI_Win_lock and proves it holds it
 * (an operation plus a flush). Then ranks 2, 3, ... request their locks with
 * MPIX_Win_ilock in a known order: rank k calls MPIX_Win_ilock only after a message
 * from rank k-1, sent right after k-1's MPIX_Win_ilock returned (nbrma enqueues the
 * request inside ilock). The last requester tells rank 1, which then releases. Inside
 * its epoch every rank takes a position with MPI_Fetch_and_op(+1) on a counter and
 * MPI_Puts its rank into slot[position]; rank 0 checks the slots.
 *
 * Phase A: all exclusive: slots must read 1, 2, 3, ...
 * Phase B: rank 1 holds a SHARED lock, rank 2 requests EXCLUSIVE, ranks 3.. request
 *          SHARED after it. The later readers are compatible with rank 1's lock but
 *          must not be granted before rank 2 (no barging): slots must read 1, 2, then
 *          the readers. Rank 1 keeps its lock for a while, watching the counter, so a
 *          barging reader would be seen.
 *
 * Needs at least 3 processes (phase B: 4). Without nbrma (-DNO_NBRMA) MPIX_Win_ilock
 * would block, so the test does nothing there.
 */
#include "rmatest.h"

#define TAG_TOKEN 7
#define HOLD_SECONDS 0.2

static int me, np;
static rt_win_t w;

static void reset_target(void)
{
    if (me == 0) {
        int *mem = (int *) w.base;
        rt_lock_self(&w);
        for (int i = 0; i <= np; i++)
            mem[i] = i == 0 ? 0 : -1;
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* inside an epoch toward 0: take a position, record my rank there; returns it */
static int take_position(void)
{
    int one = 1, pos = -1;
    MPI_CHK(MPI_Fetch_and_op(&one, &pos, MPI_INT, 0, rt_disp(&w, 0, 0), MPI_SUM, w.win));
    MPI_CHK(MPI_Win_flush(0, w.win));
    if (pos >= 0 && pos < np)
        MPI_CHK(MPI_Put(&me, 1, MPI_INT, 0, rt_disp(&w, 0, 1 + pos), 1, MPI_INT, w.win));
    MPI_CHK(MPI_Win_flush(0, w.win));
    return pos;
}

static int read_counter(void)
{
    int v = -1;
    MPI_CHK(MPI_Fetch_and_op(NULL, &v, MPI_INT, 0, rt_disp(&w, 0, 0), MPI_NO_OP, w.win));
    MPI_CHK(MPI_Win_flush(0, w.win));
    return v;
}

/* lock type of rank r in the phase (rank 1 is the first holder) */
static int lock_type(int phase, int r)
{
    if (phase == 0)
        return MPI_LOCK_EXCLUSIVE;
    if (r == 2)
        return MPI_LOCK_EXCLUSIVE;
    return MPI_LOCK_SHARED;
}

static void run_phase(int phase)
{
    const char *pname = phase == 0 ? "all exclusive" : "shared holder, exclusive, shared";
    reset_target();

    if (me == 1) {
        MPI_CHK(MPI_Win_lock(lock_type(phase, 1), 0, 0, w.win));
        int pos = take_position();         /* now it surely holds the lock */
        CHECK(pos == 0, "%s: first holder got position %d", pname, pos);
        MPI_CHK(MPI_Send(NULL, 0, MPI_INT, 2, TAG_TOKEN, MPI_COMM_WORLD));
        MPI_CHK(MPI_Recv(NULL, 0, MPI_INT, np - 1, TAG_TOKEN, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
        /* everybody's request is queued; hold on a little: nobody may get in */
        double t0 = MPI_Wtime();
        int barged = 0;
        while (MPI_Wtime() - t0 < HOLD_SECONDS) {
            int c = read_counter();
            if (c != 1)
                barged = c;
        }
        CHECK(barged == 0, "%s: counter became %d while rank 1 still held its lock", pname,
              barged);
        MPI_CHK(MPI_Win_unlock(0, w.win));
    } else if (me >= 2) {
        MPI_Request req;
        MPI_CHK(MPI_Recv(NULL, 0, MPI_INT, me - 1, TAG_TOKEN, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
        MPI_CHK(MPIX_Win_ilock(lock_type(phase, me), 0, 0, w.win, &req));
        MPI_CHK(MPI_Send(NULL, 0, MPI_INT, me == np - 1 ? 1 : me + 1, TAG_TOKEN,
                         MPI_COMM_WORLD));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int pos = take_position();
        if (phase == 0 || me == 2)
            CHECK(pos == me - 1, "%s: rank %d got position %d, expected %d", pname, me, pos,
                  me - 1);
        else
            CHECK(pos >= 2, "%s: reader rank %d got position %d before the writer", pname, me,
                  pos);
        MPI_CHK(MPI_Win_unlock(0, w.win));
    }

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        const int *mem = (const int *) w.base;
        rt_lock_self(&w);
        CHECK(mem[0] == np - 1, "%s: counter %d, expected %d", pname, mem[0], np - 1);
        for (int p = 0; p < np - 1; p++) {
            if (phase == 0 || p < 2)
                CHECK(mem[1 + p] == p + 1, "%s: slot %d holds rank %d, expected rank %d "
                      "(grant order != request order)", pname, p, mem[1 + p], p + 1);
            else
                CHECK(mem[1 + p] >= 3 && mem[1 + p] < np, "%s: slot %d holds rank %d, "
                      "expected a reader", pname, p, mem[1 + p]);
        }
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);

    if (np < 3) {
        if (me == 0)
            fprintf(stderr, "lock_fairness needs at least 3 processes\n");
        rt_errs++;
    }
#ifndef NO_NBRMA
    else {
        rt_win_create(RT_ALLOCATE, (MPI_Aint) sizeof(int) * (np + 1), sizeof(int),
                      MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        /* Over UCX a lock request is enqueued when its compare-and-swap reaches the
         * target, after MPIX_Win_ilock has returned: the token order no longer fixes
         * the queue order, so this test's premise does not hold there. */
        char transport[MPI_MAX_INFO_VAL + 1] = "";
        int flag = 0;
        MPI_Info used;
        MPI_CHK(MPI_Win_get_info(w.win, &used));
        MPI_CHK(MPI_Info_get(used, "nbrma_transport", MPI_MAX_INFO_VAL, transport, &flag));
        MPI_CHK(MPI_Info_free(&used));
        /* The same holds in a window whose peers span (virtual) nodes: every lock
         * word atomic goes through UCX there. */
        const char *virtual_nodes = getenv("NBRMA_VIRTUAL_NODES");
        if (flag && strcmp(transport, "ucx") == 0) {
            if (me == 0)
                printf("SKIP: nbrma_transport=ucx: ilock's request reaches the target "
                       "asynchronously, so the request order is not the token order\n");
        } else if (virtual_nodes && atoi(virtual_nodes) > 1) {
            if (me == 0)
                printf("SKIP: NBRMA_VIRTUAL_NODES=%s: lock requests go through UCX and reach "
                       "the target asynchronously, so the request order is not the token "
                       "order\n",
                       virtual_nodes);
        } else {
            run_phase(0);
            if (np >= 4)
                run_phase(1);
            run_phase(0);       /* once more, after the mixed phase */
        }
        rt_win_free(&w);
    }
#else
    (void) run_phase;
#endif
    return rt_finalize();
}
