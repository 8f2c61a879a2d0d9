/*
 * oversubscribed_loop: the shape of MPICH's 3-rank RMA tests on a node with fewer cores
 * than ranks. One window, locked with MPI_Win_lock_all for the whole loop; per
 * iteration rank 0 (the target) stores into its window and calls MPI_Win_sync;
 * MPI_Barrier; rank 1 updates the target's word with one RMA call and flushes, then
 * sends a token to rank 2, which receives it, reads the word back (MPI_Get + flush, or a
 * load through MPI_Win_shared_query on a shared window after MPI_Win_sync) and checks
 * it; MPI_Barrier. Once per update call: put, accumulate (MPI_SUM), get_accumulate,
 * fetch_and_op, compare_and_swap; and once over an MPI_Win_allocate_shared window read
 * with a load.
 *
 * Data: every value read is the one rank 1 wrote in that iteration. Speed, where the
 * node's ranks outnumber its cores (this program's 3 ranks on the CI machine's 2): the
 * mean iteration takes under 2 ms. A rank waiting in a call that spins without
 * yielding (MPICH's blocking barrier and receive) holds the core the rank it waits for
 * needs, and each step then waits for the scheduler's tick: 16 ms an iteration, against
 * ~0.05 ms when every wait yields.
 */
#include "rmatest.h"

#include <unistd.h>

#define ITERATIONS 300
#define LIMIT_MS 2.0

enum update { PUT, ACC, GET_ACC, FOP, CAS, SHARED_LOAD, UPDATES };
static const char *names[UPDATES] = { "put", "accumulate", "get_accumulate", "fetch_and_op",
                                      "compare_and_swap", "put, shared load" };

static int run(enum update how, int me)
{
    int *base = NULL, *target = NULL, wrong = 0;
    MPI_Win win;
    if (how == SHARED_LOAD) {
        MPI_Aint size;
        int unit;
        MPI_CHK(MPI_Win_allocate_shared(me == 0 ? sizeof(int) : 0, sizeof(int), MPI_INFO_NULL,
                                        MPI_COMM_WORLD, &base, &win));
        MPI_CHK(MPI_Win_shared_query(win, 0, &size, &unit, &target));
    } else {
        MPI_CHK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                 &win));
    }
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < ITERATIONS; i++) {
        if (me == 0) {
            *base = how == ACC ? 0 : -1;
            MPI_CHK(MPI_Win_sync(win));
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (me == 1) {
            int value = i, old = 0, expect = -1;
            switch (how) {
            case PUT:
            case SHARED_LOAD:
                MPI_CHK(MPI_Put(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
                break;
            case ACC:
                MPI_CHK(MPI_Accumulate(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
                break;
            case GET_ACC:
                MPI_CHK(MPI_Get_accumulate(&value, 1, MPI_INT, &old, 1, MPI_INT, 0, 0, 1,
                                           MPI_INT, MPI_REPLACE, win));
                break;
            case FOP:
                MPI_CHK(MPI_Fetch_and_op(&value, &old, MPI_INT, 0, 0, MPI_REPLACE, win));
                break;
            case CAS:
                MPI_CHK(MPI_Compare_and_swap(&value, &expect, &old, MPI_INT, 0, 0, win));
                break;
            default:
                break;
            }
            MPI_CHK(MPI_Win_flush(0, win));
            if (how == GET_ACC || how == FOP || how == CAS)
                wrong += old != -1;
            MPI_CHK(MPI_Send(&value, 1, MPI_INT, 2, 0, MPI_COMM_WORLD));
        } else if (me == 2) {
            int token = -2, got = -2;
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (how == SHARED_LOAD) {
                MPI_CHK(MPI_Win_sync(win));
                got = *(volatile int *) target;
            } else {
                MPI_CHK(MPI_Get(&got, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
                MPI_CHK(MPI_Win_flush(0, win));
            }
            wrong += got != i || token != i;
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Win_free(&win));
    return wrong;
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    const int me = rt_rank(), np = rt_nprocs();
    if (np != 3) {
        if (me == 0) printf("SKIP: needs 3 ranks\n");
        return rt_finalize();
    }
    /* Oversubscribed: the node's ranks (all 3 here) outnumber its cores. */
    const int oversubscribed = sysconf(_SC_NPROCESSORS_ONLN) < 3;
    for (int how = 0; how < UPDATES; how++) {
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        const double start = MPI_Wtime();
        const int wrong = run((enum update) how, me);
        double ms = (MPI_Wtime() - start) * 1e3 / ITERATIONS, slowest = 0;
        MPI_CHK(MPI_Allreduce(&ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        CHECK(wrong == 0, "%s: %d of %d values read back were not the one written", names[how],
              wrong, ITERATIONS);
        if (me == 0) printf("# %s: %.3f ms an iteration\n", names[how], slowest);
        if (oversubscribed && me == 0)
            CHECK(slowest < LIMIT_MS,
                  "%s: %.2f ms an iteration on an oversubscribed node (limit %.1f): a wait "
                  "does not yield the CPU", names[how], slowest, LIMIT_MS);
    }
    return rt_finalize();
}
