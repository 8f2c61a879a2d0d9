/* app.c — an application built against an installed nbrma (maint/check_install.sh):
 * `mpicc.mpich app.c $(pkg-config --cflags --libs nbrma)`, nothing from the build tree.
 * Each rank puts its rank into its right neighbour's window under a lock and reads it
 * back after a barrier; the RMA must have run on nbrma (nbrma_is_active and the
 * epochs_completed counter). Prints "No Errors" when every check holds. */
#include <mpi.h>
#include <nbrma.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, errors = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *base = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long before = 0, after = 0;
    nbrma_get_counter("epochs_completed", &before);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (rank + 1) % size, 0, win);
    MPI_Put(&rank, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win);
    MPI_Win_unlock((rank + 1) % size, win);
    nbrma_get_counter("epochs_completed", &after);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    const int arrived = *base;
    MPI_Win_unlock(rank, win);
    if (!nbrma_is_active()) {
        printf("rank %d: nbrma_is_active() is 0\n", rank);
        errors++;
    }
    if (after != before + 1) {
        printf("rank %d: epochs_completed %llu -> %llu, expected one more\n", rank, before, after);
        errors++;
    }
    if (arrived != (rank + size - 1) % size) {
        printf("rank %d: window holds %d, expected %d\n", rank, arrived, (rank + size - 1) % size);
        errors++;
    }
    MPI_Win_free(&win);
    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("No Errors\n");
    MPI_Finalize();
    return total != 0;
}
