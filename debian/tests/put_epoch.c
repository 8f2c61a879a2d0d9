/* put_epoch.c — the Debian package's smoke test (debian/tests/link-and-run): built with
 * mpicc.mpich and `pkg-config --cflags --libs nbrma` against the installed packages, run
 * with 2 ranks. Rank 0 puts a value into rank 1's window in a lock epoch; each rank
 * prints nbrma_is_active() and the epochs_completed and helpers counters. Fails unless
 * the put arrived, nbrma is active and rank 0 completed an epoch; with the argument
 * "helper" also unless the node's helper (nbrma-helper, NBRMA_PROGRESS=interrupt) runs. */
#include <mpi.h>
#include <nbrma.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int want_helper = argc > 1 && strcmp(argv[1], "helper") == 0;

    int *base = NULL;
    MPI_Win win;
    if (MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                         &win) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 2);
    *base = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && size > 1) {
        const int value = 42;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        MPI_Put(&value, 1, MPI_INT, 1, 0, 1, MPI_INT, win);
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    const int seen = *base;
    MPI_Win_unlock(rank, win);

    unsigned long long epochs = 0, helpers = 0;
    nbrma_get_counter("epochs_completed", &epochs);
    nbrma_get_counter("helpers", &helpers);
    printf("rank %d: nbrma_is_active() = %d, epochs_completed = %llu, helpers = %llu%s\n",
           rank, nbrma_is_active(), epochs, helpers,
           rank == 1 ? (seen == 42 ? ", put arrived" : ", put MISSING") : "");
    int ok = nbrma_is_active() && epochs > 0 && (rank != 1 || seen == 42) &&
             (!want_helper || helpers > 0);
    MPI_Win_free(&win);
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
