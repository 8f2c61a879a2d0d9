/* stock.c — a stock MPI RMA program: it calls nothing of nbrma's (no nbrma.h), as the
 * OSU micro-benchmarks or MPICH's own tests do. Built against an installed nbrma by
 * `mpicc.mpich stock.c $(pkg-config --cflags --libs nbrma)` (maint/check_install.sh),
 * whose run with NBRMA_VERBOSE=1 must show nbrma's report: libnbrma stays linked although
 * the toolchain links with --as-needed. Each rank puts its rank into its right
 * neighbour's window; prints "No Errors" when it arrived. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, *base, errors = 0;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *base = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (rank + 1) % size, 0, win);
    MPI_Put(&rank, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win);
    MPI_Win_unlock((rank + 1) % size, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    const int wrong = *base != (rank + size - 1) % size;
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    MPI_Reduce(&wrong, &errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf(errors ? "Found %d errors\n" : "No Errors\n", errors);
    MPI_Finalize();
    return errors != 0;
}
