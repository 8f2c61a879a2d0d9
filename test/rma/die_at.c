/*
 * die_at: the MPI program behind test/rma/die_cleanup. Every rank
 * prints its pid, then creates a window of the flavor named on the command line
 * (create or allocate), puts its rank into its right neighbour's memory, checks what
 * arrived, and frees the window.
 *
 * Run under NBRMA_TEST_DIE_AT=<point>, one rank kills itself (SIGKILL) at that point of
 * window creation; mpiexec then kills the others. die_cleanup checks afterwards that no
 * shared-memory segment of this job is left in /dev/shm (their names carry the pid of
 * the rank that made them, hence the pid lines).
 */
#include <unistd.h>

#include "rmatest.h"

int main(int argc, char **argv)
{
    int me, np, sel[RT_NFLAVORS];
    rt_init_world(&argc, &argv, &me, &np);
    printf("die_at pid %d\n", (int) getpid());
    fflush(stdout);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* every pid line is out before anyone dies */

    rt_select_flavors(argc, argv, sel);
    for (int f = 0; f < RT_NFLAVORS; f++) {
        if (!sel[f])
            continue;
        rt_win_t w;
        rt_win_create(f, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        int value = me;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, (me + 1) % np, 0, w.win));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, (me + 1) % np, rt_disp(&w, (me + 1) % np, 0), 1,
                        MPI_INT, w.win));
        MPI_CHK(MPI_Win_unlock((me + 1) % np, w.win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        rt_lock_self(&w);
        CHECK(*(int *) w.base == (me + np - 1) % np, "%s: got %d from the left neighbour",
              rt_flavor_names[f], *(int *) w.base);
        rt_unlock_self(&w);
        rt_win_free(&w);
    }
    return rt_finalize();
}
