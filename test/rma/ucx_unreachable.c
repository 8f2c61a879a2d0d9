/*
 * ucx_unreachable: a peer whose UCX endpoint cannot be created. Before MPI_Init,
 * rank 0 restricts nbrma's UCX context to tcp and rank 1 to shared memory (posix), with
 * NBRMA_UCX_TLS (MPICH's own UCX_TLS is untouched), so neither can reach the other.
 * A window with nbrma_transport=ucx must then fail on both ranks with a clear error
 * through the communicator's handler (MPI_ERR_OTHER, naming MPI_Win_allocate), not
 * crash or hang; a default (shared-memory) window afterwards still works.
 *
 * 2 processes on one node (the rank comes from the PMI_RANK hydra sets).
 */
#include <stdlib.h>

#include "rmatest.h"

int main(int argc, char **argv)
{
    const char *pmi_rank = getenv("PMI_RANK");
    const int rank = pmi_rank ? atoi(pmi_rank) : 0;
    setenv("NBRMA_UCX_TLS", rank == 0 ? "tcp" : "posix", 1);
    /* The shared-memory window below must stay one: no virtual nodes (runtests-mixed),
     * which would send it through the UCX this test breaks on purpose. */
    unsetenv("NBRMA_VIRTUAL_NODES");
    rt_init(&argc, &argv);
    if (!pmi_rank || rt_nprocs() != 2) {
        if (rt_rank() == 0)
            printf("ucx_unreachable needs 2 processes under mpiexec.mpich (PMI_RANK)\n");
        MPI_Finalize();
        return 1;
    }

    MPI_Info info;
    MPI_Win win;
    int *mem = NULL;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_transport", "ucx"));
    int rc = MPI_Win_allocate(4 * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &mem, &win);
    rt_expect_error(rc, MPI_ERR_OTHER, "MPI_Win_allocate", "unreachable peer");
    MPI_CHK(MPI_Info_free(&info));

    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_transport", "shm"));
    MPI_CHK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &mem, &win));
    MPI_CHK(MPI_Info_free(&info));
    int value = 42 + rt_rank();
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1 - rt_rank(), 0, win));
    MPI_CHK(MPI_Put(&value, 1, MPI_INT, 1 - rt_rank(), 0, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_unlock(1 - rt_rank(), win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, rt_rank(), 0, win));
    CHECK(mem[0] == 42 + (1 - rt_rank()), "mem[0] = %d, expected %d", mem[0], 43 - rt_rank());
    MPI_CHK(MPI_Win_unlock(rt_rank(), win));
    MPI_CHK(MPI_Win_free(&win));
    return rt_finalize();
}
