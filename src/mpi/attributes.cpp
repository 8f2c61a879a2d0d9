// MPI_Win_get_attr for the predefined attributes, which MPICH's memory-less window
// underneath would answer wrongly (user keyvals go to MPICH's window), the same for
// MPICH's Fortran bindings (MPII_Win_get_attr), and
// MPI_Win_get_group, the group of the window's communicator (MPICH's window is this
// process's alone). Also the nbrma_ introspection calls.
#include "common/log.hpp"
#include "common/threads.hpp"
#include "mpi/counter_table.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"
#include "nbrma.h"

using namespace nbrma;
using namespace nbrma::mpi;

namespace {

int win_get_attr_impl(MPI_Win win, int keyval, void *attribute_val, int *flag) {
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

int win_get_group_impl(MPI_Win win, MPI_Group *group) {
    WindowState *state = window_find(win);
    if (!state) return raise("MPI_Win_get_group", MPI_WIN_NULL, Status::err_win);
    if (!group) return raise("MPI_Win_get_group", win, Status::err_arg, "null group pointer");
    int size = 0;
    PMPI_Group_size(state->group, &size);
    int all[1][3] = {{0, size - 1, 1}};  // a new handle the caller frees
    return PMPI_Group_range_incl(state->group, 1, all, group);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/attributes_bindings.inc"

extern "C" {

// MPICH's Fortran bindings (mpif.h, use mpi, use mpi_f08) ask MPICH's internal
// MPII_Win_get_attr, not MPI_Win_get_attr, and would get the values of the memory-less
// window underneath (size 0, disp_unit 1). libmpichfort binds to libnbrma's definition
// (loaded first): the predefined attributes of nbrma's windows are answered here, as
// the Fortran keyvals (mpif.h: the C ones + 1) want them, an MPI_Aint value; the rest
// goes to MPICH's.
int MPII_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag, int type) {
    WindowState *state = window_find(win);
    if (state && keyval >= MPI_WIN_BASE && keyval <= MPI_WIN_MODEL + 1) {
        if ((keyval - MPI_WIN_BASE) % 2 == 0)  // a C keyval
            return win_get_attr_impl(win, keyval, attribute_val, flag);
        // MPI_Win_get_attr's answer: the base itself, or a pointer to the value.
        void *c_value = nullptr;
        win_get_attr_impl(win, keyval - 1, &c_value, flag);
        const MPI_Aint value = keyval - 1 == MPI_WIN_BASE ? reinterpret_cast<MPI_Aint>(c_value)
                               : keyval - 1 == MPI_WIN_SIZE ? *static_cast<MPI_Aint *>(c_value)
                                                            : *static_cast<int *>(c_value);
        *static_cast<MPI_Aint *>(attribute_val) = value;
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!mpich::Win_get_attr_internal)
        return raise("MPI_Win_get_attr", win, Status::err_unsupported,
                     "this MPICH has no MPII_Win_get_attr");
    return mpich::Win_get_attr_internal(win, keyval, attribute_val, flag, type);
}

// include/nbrma.h
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
