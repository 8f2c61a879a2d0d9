/*
 * many_pending: ITER back-to-back nonblocking exclusive epochs
 * (MPIX_Win_ilock(EXCLUSIVE, random target) / MPI_Put of a distinct value into
 * slot[me] / MPIX_Win_iunlock) toward random targets, all left pending, then a single
 * MPI_Waitall over every request (with "testall": a loop of MPI_Testall, which must say
 * false until every request is complete, then set all to MPI_REQUEST_NULL). Epochs of
 * one origin are activated in order, so the value in target t's slot[origin] must be the
 * last one that origin wrote to t. The requests mix complete ones (epochs ended inside
 * their call) and generalized ones, far more than one of MPICH's request batches (64).
 *
 * Usage: many_pending [ITER] [create|allocate|shared|dynamic] [testall]
 *        (default 1000 allocate)
 */
#include "rmatest.h"

int main(int argc, char **argv)
{
    int me, np, flavor = RT_ALLOCATE, testall = 0;
    long iter = 1000;
    rt_win_t w;

    rt_init_world(&argc, &argv, &me, &np);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "testall") == 0)
            testall = 1;
        else if (rt_flavor_from_name(argv[i]) >= 0)
            flavor = rt_flavor_from_name(argv[i]);
        else if (atol(argv[i]) > 0)
            iter = atol(argv[i]);
    }

    /* only np ints are used; the window is larger because plain MPICH 4.0.2 misroutes
     * puts into tiny (8-byte) MPI_Win_allocate windows, and the test should stay usable
     * as a reference there */
    rt_win_create(flavor, (MPI_Aint) sizeof(int) * np * 16, sizeof(int), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    rt_lock_self(&w);
    for (int o = 0; o < np; o++)
        ((int *) w.base)[o] = -1;
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    int *vals = malloc(sizeof(int) * (size_t) iter);
    int *last = malloc(sizeof(int) * (size_t) np);
    int *expect = malloc(sizeof(int) * (size_t) np);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t) iter);
    for (int r = 0; r < np; r++)
        last[r] = -1;

    srand(12345u + 7919u * (unsigned) me);
    for (long i = 0; i < iter; i++) {
        int t = rand() % np;
        vals[i] = me * 1000000 + (int) i + 1;
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, t, 0, w.win, &reqs[2 * i]));
        MPI_CHK(MPI_Put(&vals[i], 1, MPI_INT, t, rt_disp(&w, t, me), 1, MPI_INT, w.win));
        MPI_CHK(MPIX_Win_iunlock(t, w.win, &reqs[2 * i + 1]));
        last[t] = vals[i];
    }
    if (testall) {
        int flag = 0;
        while (!flag)
            MPI_CHK(MPI_Testall((int) (2 * iter), reqs, &flag, MPI_STATUSES_IGNORE));
    } else {
        MPI_CHK(MPI_Waitall((int) (2 * iter), reqs, MPI_STATUSES_IGNORE));
    }
    for (long i = 0; i < 2 * iter; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL, "request %ld not MPI_REQUEST_NULL after %s", i,
              testall ? "MPI_Testall" : "MPI_Waitall");

    MPI_CHK(MPI_Alltoall(last, 1, MPI_INT, expect, 1, MPI_INT, MPI_COMM_WORLD));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    for (int o = 0; o < np; o++) {
        int got = ((int *) w.base)[o];
        CHECK(got == expect[o], "target %d: slot of origin %d holds %d (its write #%d), "
              "expected %d (its last write, #%d)", me, o, got, got % 1000000, expect[o],
              expect[o] % 1000000);
    }
    rt_unlock_self(&w);

    free(vals);
    free(last);
    free(expect);
    free(reqs);
    rt_win_free(&w);
    return rt_finalize();
}
