/*
 * request_get_status: a loop of MPI_Request_get_status alone sees an nbrma request
 * complete (MPI's progress rule: a request that can complete must eventually be reported
 * complete by repeated MPI_Request_get_status calls, as by repeated MPI_Test calls).
 *
 * The first argument sets NBRMA_PROGRESS ("inline" or "thread") before MPI_Init.
 * Rank 0 is the origin, rank 1 the target; rank 0 polls only with MPI_Request_get_status
 * (no other MPI call) for up to GIVE_UP_S seconds, then finishes with MPI_Wait either way.
 *
 *   late post   MPIX_Win_istart toward 1, put, MPIX_Win_icomplete; rank 1 posts 0.1 s
 *               after its barrier and waits. The epoch needs rank 0's progress (grant,
 *               replay, done notice) on every transport.
 *   lock        MPI_Win_lock(exclusive) toward 1, put, MPIX_Win_iunlock while rank 1 sits
 *               in a barrier: completes at once on shared memory, needs progress over UCX.
 *
 * Checked: the polling loop saw completion; the data arrived. Thread mode: the progress
 * thread completes the epoch; get_status then needs nbrma to hand the completion to MPICH.
 * 2 processes (more stay idle).
 */
#include "rmatest.h"
#include "rmathreads.h"

#define GIVE_UP_S 10.0

static int me;

static void poll_status(MPI_Request *r, const char *what)
{
    int flag = 0;
    long calls = 0;
    double t0 = rt_now();
    while (!flag && rt_now() - t0 < GIVE_UP_S) {
        MPI_CHK(MPI_Request_get_status(*r, &flag, MPI_STATUS_IGNORE));
        calls++;
    }
    CHECK(flag, "%s: %ld MPI_Request_get_status calls over %.0f s never reported the request "
          "complete", what, calls, GIVE_UP_S);
    printf("%s: get_status loop: %s after %ld calls, %.3f s\n", what,
           flag ? "complete" : "still pending", calls, rt_now() - t0);
    fflush(stdout);
    MPI_CHK(MPI_Wait(r, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "inline";
    rt_win_t w;
    MPI_Group world_g, g0, g1;
    int r0 = 0, r1 = 1;

    setenv("NBRMA_PROGRESS", mode, 1);
    rt_init(&argc, &argv);
    me = rt_rank();
    rt_require_procs(2, "request_get_status needs 2 processes");
    MPI_Comm_group(MPI_COMM_WORLD, &world_g);
    MPI_Group_incl(world_g, 1, &r0, &g0);
    MPI_Group_incl(world_g, 1, &r1, &g1);
    rt_win_create(RT_ALLOCATE, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    int *mem = (int *) w.base;

    /* late post */
    if (me == 0) {
        int v = 11;
        MPI_Request open, close;
        MPI_CHK(MPIX_Win_istart(g1, 0, w.win, &open));
        MPI_CHK(MPI_Put(&v, 1, MPI_INT, 1, 0, 1, MPI_INT, w.win));
        MPI_CHK(MPIX_Win_icomplete(w.win, &close));
        MPI_CHK(MPI_Wait(&open, MPI_STATUS_IGNORE));
        poll_status(&close, "late post");
    } else if (me == 1) {
        usleep(100 * 1000);
        MPI_CHK(MPI_Win_post(g0, 0, w.win));
        MPI_CHK(MPI_Win_wait(w.win));
        CHECK(mem[0] == 11, "late post: target holds %d, expected 11", mem[0]);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* lock */
    if (me == 0) {
        int v = 22;
        MPI_Request close;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        MPI_CHK(MPI_Put(&v, 1, MPI_INT, 1, 1, 1, MPI_INT, w.win));
        MPI_CHK(MPIX_Win_iunlock(1, w.win, &close));
        poll_status(&close, "lock");
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        rt_lock_self(&w);
        CHECK(mem[1] == 22, "lock: target holds %d, expected 22", mem[1]);
        rt_unlock_self(&w);
    }

    rt_win_free(&w);
    MPI_Group_free(&g0);
    MPI_Group_free(&g1);
    MPI_Group_free(&world_g);
    return rt_finalize();
}
