/* fatal.c — an erroneous MPI_Put under the default error handler (MPI_ERRORS_ARE_FATAL),
 * built against an installed nbrma (maint/check_install.sh): the job must abort with a
 * message that names MPI_Put and the offending rank, not MPI_Win_call_errhandler. */
#include <mpi.h>

int main(int argc, char **argv) {
    int *base, value = 1, size;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_allocate(64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(0, win);
    MPI_Put(&value, 1, MPI_INT, size + 3, 0, 1, MPI_INT, win);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
