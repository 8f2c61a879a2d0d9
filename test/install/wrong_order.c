/* wrong_order.c — linked with MPICH before libnbrma (`mpicc.mpich wrong_order.c -lmpich
 * $(pkg-config --cflags --libs nbrma)`, maint/check_install.sh), so the process resolves
 * every MPI_ function to MPICH's: nbrma_is_active() must say 0, and an MPIX_ call on the
 * (MPICH) window must fail with a message that says libnbrma must come before MPICH.
 * Prints "No Errors" when both hold. */
#include <mpi.h>
#include <nbrma.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, errors = 0, all = 0, *base;
    MPI_Win win;
    MPI_Request request;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nbrma_is_active() != 0) {
        printf("[%d] nbrma_is_active() = %d with MPICH first on the link line\n", rank,
               nbrma_is_active());
        errors++;
    }
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    const int rc = MPIX_Win_ilock(MPI_LOCK_SHARED, rank, 0, win, &request);
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &length);
    if (rc == MPI_SUCCESS || !strstr(text, "MPIX_Win_ilock") ||
        !strstr(text, "link libnbrma before MPICH")) {
        printf("[%d] MPIX_Win_ilock on MPICH's window returned %d: \"%s\"\n", rank, rc, text);
        errors++;
    }
    MPI_Win_free(&win);
    MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "Found %d errors\n" : "No Errors\n", all);
    MPI_Finalize();
    return all != 0;
}
