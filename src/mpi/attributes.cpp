// MPI_Win_get_attr for the predefined attributes MPICH would answer wrongly (its
// MPI_WIN_BASE is the rounded-down registration address, DESIGN §1); everything else
// goes to the real MPICH window. Also the nbrma_ introspection calls.
#include "common/log.hpp"
#include "common/threads.hpp"
#include "mpi/counter_table.hpp"
#include "mpi/errors.hpp"
#include "mpi/mpich.hpp"
#include "mpi/pmpi.hpp"
#include "mpi/state.hpp"
#include "nbrma.h"

using namespace nbrma;
using namespace nbrma::mpi;

extern "C" {

int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag) {
    WindowState *state = window_find(win);
    if (!state) return raise("MPI_Win_get_attr", MPI_WIN_NULL, Status::err_win);
    void **value = static_cast<void **>(attribute_val);
    if (keyval == MPI_WIN_BASE) {
        *value = state->base;
    } else if (keyval == MPI_WIN_SIZE) {
        *value = &state->size;
    } else if (keyval == MPI_WIN_DISP_UNIT) {
        *value = &state->disp_unit;
    } else if (keyval == MPI_WIN_CREATE_FLAVOR) {
        *value = &state->create_flavor;
    } else if (keyval == MPI_WIN_MODEL) {
        *value = &state->model;
    } else {
        return mpich::Win_get_attr(win, keyval, attribute_val, flag);
    }
    *flag = 1;
    return MPI_SUCCESS;
}

int nbrma_get_counter(const char *name, unsigned long long *value) {
    if (!name || !value) return MPI_ERR_ARG;
    const CounterRow *row = counter_find(name);
    if (!row) return MPI_ERR_ARG;
    threads::Guard guard;
    *value = row->read();
    return MPI_SUCCESS;
}

int nbrma_is_active(void) { return mpich::process_resolves_to_nbrma() ? 1 : 0; }

}  // extern "C"

// The profiling names (src/mpi/pmpi.hpp).
NBRMA_PMPI(Win_get_attr)
