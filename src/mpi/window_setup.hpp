// Window creation in stages (window_setup.cpp), and what MPI_Win_free and
// MPI_Win_get_info share with it.
#ifndef NBRMA_MPI_WINDOW_SETUP_HPP
#define NBRMA_MPI_WINDOW_SETUP_HPP

#include <mpi.h>

#include <cstdint>
#include <string>

#include "engine/window.hpp"
#include "mpi/state.hpp"
#include "transport/transport.hpp"

namespace nbrma::mpi {

// A window of `flavor` over `comm` (collective): user_base is MPI_Win_create's memory,
// base_out receives the allocate flavors' base. Errors are raised on the communicator's
// error handler, naming `call`, alike on every rank.
int create_window(const char *call, engine::Flavor flavor, MPI_Aint size, int disp_unit,
                  MPI_Info info, MPI_Comm comm, void *user_base, void *base_out, MPI_Win *win);

// Until every closed epoch of the window completed.
void wait_idle(WindowState &state);

// A barrier during which this process keeps serving its peers' software-emulated RMA
// (UCX over tcp): a rank waiting in a plain barrier would starve a peer whose last
// operations target it.
void barrier_serving(MPI_Comm comm, transport::Transport &transport);

// The capacity of every rank's notification counters (MPIX_Win_notify_set_num's limit):
// the info key nbrma_notify_max, else NBRMA_NOTIFY_MAX, else 65536; -1 if the value is
// not a number from 0 to 2^24. *text: the value given.
std::int32_t notify_capacity(const WindowInfo &info, std::string *text);

}  // namespace nbrma::mpi

#endif
