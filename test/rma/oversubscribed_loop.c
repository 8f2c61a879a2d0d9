/*
 * oversubscribed_loop: the shape of MPICH's 3-rank RMA tests on a node with fewer cores
 * than ranks. One window, locked with MPI_Win_lock_all for the whole loop; per
 * iteration rank 0 (the target) stores into its window and calls MPI_Win_sync;
 * MPI_Barrier; rank 1 updates the target's word with one RMA call and flushes, then
 * sends a token to rank 2, which receives it, reads the word back (MPI_Get + flush, or a
 * load through MPI_Win_shared_query on a shared window after MPI_Win_sync) and checks
 * it; MPI_Barrier. Once per update call: put, accumulate (MPI_SUM), get_accumulate,
 * fetch_and_op, compare_and_swap; once over an MPI_Win_allocate_shared window read
 * with a load; and once as MPICH's win_shared_*_flush_load tests do it: ranks 0 and 2
 * share rank 0's word (MPI_Win_allocate_shared on a communicator of the two), the window
 * of all three is created over it with MPI_Win_create, rank 1 puts through that window
 * and rank 2 loads through the shared one.
 *
 * Data: every value read is the one rank 1 wrote in that iteration. Speed, where the
 * node's ranks outnumber its cores (this program's 3 ranks on the CI machine's 2): the
 * loop takes at most 4x (+ 1 ms an iteration) the same loop whose barriers, send and
 * receive the program itself runs as MPI_Ibarrier/MPI_Isend/MPI_Irecv and a loop of
 * MPI_Test and sched_yield, measured alongside in alternating rounds, the best round of
 * each compared (so a loaded machine slows both, and a burst of load one round). A rank
 * waiting in a call that spins without yielding (MPICH's blocking barrier and receive)
 * holds the core the rank it waits for needs, and each step then waits for the
 * scheduler's tick: 16 ms an iteration, against ~0.05-0.3 ms when every wait yields.
 */
#include "rmatest.h"

#include <sched.h>
#include <unistd.h>

#define ITERATIONS 100
#define ROUNDS 3
#define RATIO 4.0
#define SLACK_MS 1.0

/* The polite loop's waits: the request tested, the CPU yielded, until it completes. */
static void wait_yielding(MPI_Request *request)
{
    int done = 0;
    for (;;) {
        MPI_CHK(MPI_Test(request, &done, MPI_STATUS_IGNORE));
        if (done) return;
        sched_yield();
    }
}
static void barrier(int polite)
{
    MPI_Request request;
    if (!polite) {
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        return;
    }
    MPI_CHK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
    wait_yielding(&request);
}

enum update { PUT, ACC, GET_ACC, FOP, CAS, SHARED_LOAD, CREATED_OVER_SHARED, UPDATES };
static const char *names[UPDATES] = {"put",
                                     "accumulate",
                                     "get_accumulate",
                                     "fetch_and_op",
                                     "compare_and_swap",
                                     "put, shared load",
                                     "put into MPI_Win_create over shared memory, shared load"};

static int run(enum update how, int me, int polite)
{
    int *base = NULL, *target = NULL, wrong = 0;
    MPI_Win win, shared = MPI_WIN_NULL;
    MPI_Comm pair = MPI_COMM_NULL;
    if (how == CREATED_OVER_SHARED) {
        /* Ranks 0 and 2 share rank 0's word; the window of all three is created over it
         * (rank 1 reaches it only through that window). */
        MPI_Aint size;
        int unit;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me == 1 ? MPI_UNDEFINED : 0, me, &pair));
        if (me != 1) {
            MPI_CHK(MPI_Win_allocate_shared(me == 0 ? sizeof(int) : 0, sizeof(int), MPI_INFO_NULL,
                                            pair, &base, &shared));
            MPI_CHK(MPI_Win_shared_query(shared, 0, &size, &unit, &target));
            base = target;
        }
        MPI_CHK(MPI_Win_create(me == 0 ? base : NULL, me == 0 ? sizeof(int) : 0, sizeof(int),
                               MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        if (me != 1) MPI_CHK(MPI_Win_lock_all(0, shared));
    } else if (how == SHARED_LOAD) {
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
            if (shared != MPI_WIN_NULL) MPI_CHK(MPI_Win_sync(shared));
        }
        barrier(polite);
        if (me == 1) {
            int value = i, old = 0, expect = -1;
            switch (how) {
            case PUT:
            case SHARED_LOAD:
            case CREATED_OVER_SHARED:
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
            if (polite) {
                MPI_Request request;
                MPI_CHK(MPI_Isend(&value, 1, MPI_INT, 2, 0, MPI_COMM_WORLD, &request));
                wait_yielding(&request);
            } else {
                MPI_CHK(MPI_Send(&value, 1, MPI_INT, 2, 0, MPI_COMM_WORLD));
            }
        } else if (me == 2) {
            int token = -2, got = -2;
            if (polite) {
                MPI_Request request;
                MPI_CHK(MPI_Irecv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &request));
                wait_yielding(&request);
            } else {
                MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
            if (how == SHARED_LOAD || how == CREATED_OVER_SHARED) {
                MPI_CHK(MPI_Win_sync(shared != MPI_WIN_NULL ? shared : win));
                got = *(volatile int *) target;
            } else {
                MPI_CHK(MPI_Get(&got, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
                MPI_CHK(MPI_Win_flush(0, win));
            }
            wrong += got != i || token != i;
        }
        barrier(polite);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Win_free(&win));
    if (shared != MPI_WIN_NULL) {
        MPI_CHK(MPI_Win_unlock_all(shared));
        MPI_CHK(MPI_Win_free(&shared));
    }
    if (pair != MPI_COMM_NULL) MPI_CHK(MPI_Comm_free(&pair));
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
        /* The slowest rank's time, the best of ROUNDS rounds that alternate the two
         * loops: a burst of load from other programs slows one round, not all of them,
         * while a wait that does not yield is slow in every round. */
        double slowest[2] = { 1e30, 1e30 };  /* MPI's blocking calls, the polite loop */
        for (int round = 0; round < ROUNDS; round++) {
            for (int polite = 0; polite < 2; polite++) {
                MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
                const double start = MPI_Wtime();
                const int wrong = run((enum update) how, me, polite);
                double ms = (MPI_Wtime() - start) * 1e3 / ITERATIONS, slowest_rank = 0;
                MPI_CHK(MPI_Allreduce(&ms, &slowest_rank, 1, MPI_DOUBLE, MPI_MAX,
                                      MPI_COMM_WORLD));
                if (slowest_rank < slowest[polite]) slowest[polite] = slowest_rank;
                CHECK(wrong == 0, "%s%s: %d of %d values read back were not the one written",
                      names[how], polite ? " (polite loop)" : "", wrong, ITERATIONS);
            }
        }
        if (me == 0)
            printf("# %s: %.3f ms an iteration (polite loop: %.3f)\n", names[how], slowest[0],
                   slowest[1]);
        const double limit = RATIO * slowest[1] + SLACK_MS;
        if (oversubscribed && me == 0)
            CHECK(slowest[0] <= limit,
                  "%s: %.2f ms an iteration on an oversubscribed node, above %.2f (%.0fx the "
                  "polite loop's %.3f + %.0f): a wait does not yield the CPU", names[how],
                  slowest[0], limit, RATIO, slowest[1], SLACK_MS);
    }
    return rt_finalize();
}
