// What the generated C entry points (src/*/*_bindings.inc, maint/gen_bindings.py) run
// before they call their implementation: the checks the table maint/rma_api.txt names.
#ifndef NBRMA_MPI_BINDINGS_HPP
#define NBRMA_MPI_BINDINGS_HPP

#include <mpi.h>

#include "mpi/errors.hpp"
#include "mpi/state.hpp"

// check `request`: the MPI_Request * must not be null. A bad window is reported first
// (it is what MPICH checks first).
// NBRMA_CHECK=races: the application's call site of an RMA call is the binding's return
// address (check::call_site resolves it when the engine records the call).
#define NBRMA_CALL_SITE()                                                                      \
    do {                                                                                        \
        if (nbrma::check::enabled()) nbrma::check::set_caller(__builtin_return_address(0));    \
    } while (0)

#define NBRMA_REQUEST_POINTER(call, win, request)                                               \
    do {                                                                                        \
        if (!(request) && !nbrma::mpi::window_find(win))                                        \
            return nbrma::mpi::raise(call, MPI_WIN_NULL, nbrma::Status::err_win);               \
        if (!(request))                                                                         \
            return nbrma::mpi::raise(call, win, nbrma::Status::err_request,                     \
                                     "null request pointer");                                   \
    } while (0)

namespace nbrma::mpi {

// check `proc_null=rank`: a call toward MPI_PROC_NULL does nothing, as in MPICH (RMA,
// lock, unlock and flush alike) but for reporting a bad window; a form with a request
// hands back a complete one.
int proc_null(const char *call, MPI_Win win, MPI_Request *request);

}  // namespace nbrma::mpi

#endif
