// MPI_Win_get_attr for the predefined attributes MPICH would answer wrongly (its
// MPI_WIN_BASE is the rounded-down registration address, DESIGN §1); everything else
// goes to the real MPICH window. Also the nbrma_ introspection calls.
#include <cstring>

#include "common/log.hpp"
#include "common/threads.hpp"
#include "engine/interrupt.hpp"
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
    threads::Guard guard;
    const Counters &c = counters();
    const engine::interrupt::Counters &wakes = engine::interrupt::counters();
    struct Entry {
        const char *name;
        std::uint64_t value;
    } entries[] = {{"windows_created", c.windows_created},
                   {"epochs_opened", c.epochs_opened},
                   {"epochs_completed", c.epochs_completed},
                   {"rma_ops", c.rma_ops},
                   {"lock_grants", c.lock_grants},
                   {"progress_thread_sweeps", c.progress_thread_sweeps},
                   {"interrupt_wakeups", wakes.wakeups.load()},
                   {"interrupt_futile_wakeups", wakes.futile_wakeups.load()},
                   {"interrupt_sweeps", wakes.sweeps.load()},
                   {"interrupt_event_wakeups", wakes.event_wakeups.load()},
                   {"helper_pid", static_cast<std::uint64_t>(engine::interrupt::helper_pid(0))},
                   {"helpers", engine::interrupt::helper_count()},
                   {"help_table_bytes", engine::interrupt::table_bytes()}};
    for (const Entry &entry : entries) {
        if (std::strcmp(entry.name, name) == 0) {
            *value = entry.value;
            return MPI_SUCCESS;
        }
    }
    return MPI_ERR_ARG;
}

int nbrma_is_active(void) { return 1; }

}  // extern "C"

// The profiling names (src/mpi/pmpi.hpp).
NBRMA_PMPI(Win_get_attr)
