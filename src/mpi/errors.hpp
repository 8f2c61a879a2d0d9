// The src/mpi boundary: internal Status → MPI error class, raised through the
// window's error handler with a message naming the call and the cause (doc/design.md §7).
#ifndef NBRMA_MPI_ERRORS_HPP
#define NBRMA_MPI_ERRORS_HPP

#include <mpi.h>

#include <string>

#include "common/status.hpp"

namespace nbrma::mpi {

int error_class(Status status);

// Adds nbrma's own error classes (MPIX_ERR_INVALID_NOTIFICATION) once, after MPI_Init.
void register_error_classes();

// Returns MPI_SUCCESS for non-errors; otherwise an error code of the right class whose
// string reads "<call>: <cause>", after invoking the window's error handler (or
// MPI_COMM_WORLD's when win is MPI_WIN_NULL / not an nbrma window, e.g. a freed one).
int raise(const char *call, MPI_Win win, Status status, const char *detail = nullptr);

// The same through a communicator's error handler, for window creation (there is no
// window yet); MPI_COMM_NULL raises on MPI_COMM_WORLD, as MPICH does.
int raise_comm(const char *call, MPI_Comm comm, Status status, const char *detail = nullptr);

// The cause of an err_rank: "target rank 5 of a window of 2 ranks (0 to 1, or
// MPI_PROC_NULL)".
std::string rank_outside(int rank, int ranks);

}  // namespace nbrma::mpi

#endif
