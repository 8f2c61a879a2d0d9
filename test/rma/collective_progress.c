/*
 * collective_progress: a rank that enters a blocking collective with nbrma work pending
 * does not hold a peer that needs that work before it can join.
 *
 * nbrma runs every interposed blocking collective as MPICH's own blocking collective;
 * while the rank has nbrma work pending, something must progress it meanwhile (in
 * inline mode the assist thread, progress/assist.hpp; in thread and interrupt modes the
 * progress thread). Each round, for each of MPI_Barrier, MPI_Bcast, MPI_Reduce,
 * MPI_Allreduce, MPI_Gather, MPI_Scatter, MPI_Allgather and MPI_Alltoall (every result
 * checked):
 *
 *   late post  rank 0: MPIX_Win_istart toward rank 1, MPI_Put, MPIX_Win_icomplete, then
 *              the collective, then MPI_Wait on the icomplete request. Rank 1 posts only
 *              DELAY_MS later and joins the collective after MPI_Win_wait returned with
 *              the data in place: without progress on rank 0 it never returns.
 *   hand-over  rank 1 holds the exclusive lock of its own window; rank 0:
 *              MPIX_Win_ilock(exclusive) toward rank 1, MPI_Put, MPIX_Win_iunlock, then
 *              the collective, then MPI_Wait. Rank 1 releases its lock DELAY_MS later and
 *              joins the collective once rank 0's put is in its memory (it polls with
 *              MPI_Iprobe, which serves peers over UCX): the lock and the put need rank 0
 *              to progress inside the collective.
 *
 * Other ranks just join the collectives. Then, on shared memory in inline mode, a
 * collective with nothing pending is not assisted (nbrma_get_counter("assisted_calls")
 * stays), and the rounds were (it grew on rank 0); in thread mode nothing is assisted
 * (the progress thread serves). Where the node's ranks outnumber its cores every
 * collective runs as the nonblocking twin with a sweeping wait instead
 * ("twin_collectives" grows by each one), and nothing is assisted. Argument "interrupt": NBRMA_PROGRESS=interrupt (the
 * progress thread, woken by the node's helper, serves). 2 or more processes.
 */
#include <unistd.h>

#include "rmatest.h"

#define DELAY_MS 20
#define NCOLL 8
#define PROBE_TAG 4711

static const char *coll_names[NCOLL] = { "MPI_Barrier", "MPI_Bcast",     "MPI_Reduce",
                                         "MPI_Allreduce", "MPI_Gather",  "MPI_Scatter",
                                         "MPI_Allgather", "MPI_Alltoall" };
static int me, np;

/* Collective `c` over MPI_COMM_WORLD with values derived from `round`; checks its result. */
static void collective(int c, int round)
{
    int one = me + round, root = round % np, got = -1;
    int *all = malloc(sizeof(int) * (size_t) np), *out = malloc(sizeof(int) * (size_t) np);
    for (int r = 0; r < np; r++)
        all[r] = 1000 * round + 10 * me + r;
    switch (c) {
    case 0:
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        break;
    case 1:
        got = me == root ? 7 * round : -1;
        MPI_CHK(MPI_Bcast(&got, 1, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(got == 7 * round, "MPI_Bcast: %d, expected %d", got, 7 * round);
        break;
    case 2:
        MPI_CHK(MPI_Reduce(&one, &got, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (me == root)
            CHECK(got == np * round + np * (np - 1) / 2, "MPI_Reduce: %d", got);
        break;
    case 3:
        MPI_CHK(MPI_Allreduce(&one, &got, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        CHECK(got == np - 1 + round, "MPI_Allreduce: %d, expected %d", got, np - 1 + round);
        break;
    case 4:
        MPI_CHK(MPI_Gather(&one, 1, MPI_INT, out, 1, MPI_INT, root, MPI_COMM_WORLD));
        if (me == root)
            for (int r = 0; r < np; r++)
                CHECK(out[r] == r + round, "MPI_Gather: [%d] = %d", r, out[r]);
        break;
    case 5:
        MPI_CHK(MPI_Scatter(all, 1, MPI_INT, &got, 1, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(got == 1000 * round + 10 * root + me, "MPI_Scatter: %d", got);
        break;
    case 6:
        MPI_CHK(MPI_Allgather(&one, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < np; r++)
            CHECK(out[r] == r + round, "MPI_Allgather: [%d] = %d", r, out[r]);
        break;
    case 7:
        MPI_CHK(MPI_Alltoall(all, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < np; r++)
            CHECK(out[r] == 1000 * round + 10 * r + me, "MPI_Alltoall: [%d] = %d", r, out[r]);
        break;
    }
    free(all);
    free(out);
}

static void late_post(MPI_Win win, MPI_Group origin_group, MPI_Group target_group, int *base,
                      int c, int round)
{
    const int value = 100 * round + c;
    if (me == 0) {
        MPI_Request requests[2];
        MPI_CHK(MPIX_Win_istart(target_group, 0, win, &requests[0]));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, 1, 0, 1, MPI_INT, win));
        MPI_CHK(MPIX_Win_icomplete(win, &requests[1]));
        collective(c, round);
        MPI_CHK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
    } else if (me == 1) {
        usleep(DELAY_MS * 1000);
        MPI_CHK(MPI_Win_post(origin_group, 0, win));
        MPI_CHK(MPI_Win_wait(win));
        CHECK(base[0] == value, "late post before %s: target holds %d, expected %d",
              coll_names[c], base[0], value);
        collective(c, round);
    } else {
        collective(c, round);
    }
}

static void hand_over(MPI_Win win, volatile int *base, int c, int round)
{
    const int value = 100 * round + c + 50;
    if (me == 1)
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* rank 1 holds its lock */
    if (me == 0) {
        MPI_Request requests[2];
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, 1, 0, win, &requests[0]));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, 1, 1, 1, MPI_INT, win));
        MPI_CHK(MPIX_Win_iunlock(1, win, &requests[1]));
        collective(c, round);
        MPI_CHK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
    } else if (me == 1) {
        usleep(DELAY_MS * 1000);
        MPI_CHK(MPI_Win_unlock(1, win));
        for (int flag = 0; __atomic_load_n(&base[1], __ATOMIC_ACQUIRE) != value;)
            MPI_CHK(MPI_Iprobe(MPI_ANY_SOURCE, PROBE_TAG, MPI_COMM_WORLD, &flag,
                               MPI_STATUS_IGNORE));
        collective(c, round);
    } else {
        collective(c, round);
    }
}

static unsigned long long counter(const char *name)
{
    unsigned long long value = 0;
    MPI_CHK(nbrma_get_counter(name, &value));
    return value;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "interrupt") == 0)
        setenv("NBRMA_PROGRESS", "interrupt", 1);
    rt_init_world(&argc, &argv, &me, &np);
    rt_require_procs(2, "collective_progress needs 2 or more processes");
    int *base;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                             &win));
    base[0] = base[1] = -1;
    MPI_Group world, origin_group, target_group;
    const int zero = 0, one = 1;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHK(MPI_Group_incl(world, 1, &zero, &origin_group));
    MPI_CHK(MPI_Group_incl(world, 1, &one, &target_group));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* nothing pending: MPICH's collective alone */
    const char *transport = getenv("NBRMA_TRANSPORT"), *progress = getenv("NBRMA_PROGRESS");
    int shm_inline = !(transport && strcmp(transport, "ucx") == 0) &&
                           !getenv("NBRMA_VIRTUAL_NODES") &&
                           !(progress && strcmp(progress, "inline") != 0);
    const int thread_mode = progress && strcmp(progress, "thread") == 0;
    const int over = np > sysconf(_SC_NPROCESSORS_ONLN);  /* one node */
    const unsigned long long twins0 = counter("twin_collectives");
    const unsigned long long idle0 = counter("assisted_calls");
    for (int c = 0; c < NCOLL; c++)
        collective(c, 0);
    const unsigned long long idle1 = counter("assisted_calls");

    for (int round = 1; round <= 2; round++)
        for (int c = 0; c < NCOLL; c++) {
            late_post(win, origin_group, target_group, base, c, round);
            hand_over(win, base, c, round);
        }
    const unsigned long long busy = counter("assisted_calls");
    const unsigned long long twins = counter("twin_collectives") - twins0;
#ifndef NO_NBRMA
    if (over) {
        CHECK(twins >= NCOLL + 2 * 2 * NCOLL, "oversubscribed: %llu collectives of at least %d ran as "
              "the nonblocking twin", twins, NCOLL + 2 * 2 * NCOLL);
        CHECK(busy == idle0, "oversubscribed: %llu twin collectives assisted", busy - idle0);
        shm_inline = 0;
    }
    if (shm_inline)
        CHECK(idle1 == idle0, "%llu collectives with nothing pending were assisted",
              idle1 - idle0);
    if (me == 0 && shm_inline)
        CHECK(busy > idle1, "no collective of rank 0 was assisted (inline mode)");
    if (thread_mode)
        CHECK(busy == 0, "%llu collectives assisted beside the progress thread", busy);
#else
    (void) idle0, (void) idle1, (void) busy, (void) shm_inline, (void) thread_mode, (void) twins;
    (void) over;
#endif
    if (me == 0)
        printf("assisted_calls on rank 0: %llu of %d collectives with work pending\n",
               busy - idle1, 2 * 2 * NCOLL);

    MPI_CHK(MPI_Group_free(&origin_group));
    MPI_CHK(MPI_Group_free(&target_group));
    MPI_CHK(MPI_Group_free(&world));
    MPI_CHK(MPI_Win_free(&win));
    return rt_finalize();
}
