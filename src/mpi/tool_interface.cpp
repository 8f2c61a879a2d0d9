// tool_interface.cpp — nbrma's counters and settings through the MPI tool interface
// (MPI_T, MPI 4.0 chapter 15), after MPICH's own variables.
//
// Performance variables: MPICH's are indices 0..N-1 (N = MPICH's own count,
// nbrma::mpich::T_pvar_get_num), nbrma's are N.. in the order of the counter table
// (counter_table.cpp), named "nbrma_" + the counter's name. Control variables: MPICH's are 0..M-1,
// nbrma's M.. in the order of the settings table (common/settings.cpp), one per environment
// variable, named as the variable ("NBRMA_PROGRESS", as MPICH names its MPIR_CVAR_* ones). N and M
// are read from MPICH on every call, so nbrma's indices follow should MPICH's counts grow; tools
// find variables by name (MPI_T_*_get_index), as the standard advises.
//
// MPICH's control variables that tune its own RMA or its asynchronous progress thread keep
// their names, indices and values, but their descriptions begin with a note saying that
// they have no effect on RMA under nbrma (mpich_cvar_note).
//
// Categories: MPICH's are 0..K-1, nbrma adds one, "nbrma" at index K, holding all of its
// performance and control variables (and no events or subcategories).
//
// Sessions are MPICH's (created through PMPI_T), recorded here so that nbrma's handles can
// be tied to them. A handle of one of nbrma's variables is a pointer to an nbrma-owned
// object kept in a table: a handle found there is nbrma's, any other goes to MPICH.
//
// Every entry point first checks that MPI_T is initialized (nbrma counts MPI_T_init_thread
// and MPI_T_finalize itself), then asks MPICH for its count.
// nbrma's tables are guarded by one mutex (MPI_T may be called from any thread, before
// MPI_Init and after MPI_Finalize); counters are read under the progress lock as well,
// taken after that mutex, never before. The mutex is held around no MPICH call but
// MPICH's MPI_T_init_thread and MPI_T_finalize (which keeps them in step with nbrma's count).
//
// This file: MPI_T_init_thread/MPI_T_finalize, the shared tables (tool_interface.hpp) and
// the categories; performance variables in tool_pvars.cpp, control variables in
// tool_cvars.cpp.
#include "mpi/tool_interface.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/settings.hpp"
#include "common/threads.hpp"
#include "mpi/counter_table.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"

using namespace nbrma;
using namespace nbrma::mpi;
using namespace nbrma::mpi::tool;

namespace {

// MPI_T_init_thread calls not yet finalized (MPICH's own count, which MPI_Init does not
// touch). Checked before any call into MPICH: after its last MPI_T_finalize MPICH 4.0.2
// takes a destroyed mutex under MPI_THREAD_MULTIPLE and aborts, instead of answering
// MPI_T_ERR_NOT_INITIALIZED.
std::atomic<int> initialized{0};

}  // namespace

namespace nbrma::mpi::tool {

bool is_initialized() { return initialized.load(std::memory_order_acquire) > 0; }

// MPICH's number of performance (control) variables: nbrma's indices start there.
int mpich_pvar_count(int *count) {
    return is_initialized() ? nbrma::mpich::T_pvar_get_num(count) : MPI_T_ERR_NOT_INITIALIZED;
}
int mpich_cvar_count(int *count) {
    return is_initialized() ? nbrma::mpich::T_cvar_get_num(count) : MPI_T_ERR_NOT_INITIALIZED;
}
int mpich_category_count(int *count) {
    return is_initialized() ? nbrma::mpich::T_category_get_num(count) : MPI_T_ERR_NOT_INITIALIZED;
}

Tables &tables() {
    static Tables *instance = new Tables;  // never destroyed: tools may call after exit()
    return *instance;
}

}  // namespace nbrma::mpi::tool

namespace {

constexpr const char *category_name = "nbrma";

// ---------------------------------------------------------------- setup

int t_init_thread_impl(int required, int *provided) {
    Tables &t = tables();
    std::lock_guard<std::mutex> lock(t.mutex);  // orders it with MPI_T_finalize
    const int error = nbrma::mpich::T_init_thread(required, provided);
    if (error == MPI_SUCCESS) initialized.fetch_add(1, std::memory_order_release);
    return error;
}

int t_finalize_impl(void) {
    Tables &t = tables();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (!is_initialized()) return MPI_T_ERR_NOT_INITIALIZED;
    const int error = nbrma::mpich::T_finalize();
    if (error == MPI_SUCCESS && initialized.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        t.sessions.clear();  // every session and handle ends with the last MPI_T_finalize
        t.pvars.clear();
        t.cvars.clear();
    }
    return error;
}

// ---------------------------------------------------------------- categories

int t_category_get_num_impl(int *num_cat) {
    if (!num_cat) return is_initialized() ? MPI_T_ERR_INVALID : MPI_T_ERR_NOT_INITIALIZED;
    const int error = mpich_category_count(num_cat);
    if (error == MPI_SUCCESS) *num_cat += 1;
    return error;
}

int t_category_get_info_impl(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                             int *num_cvars, int *num_pvars, int *num_categories) {
    int mpich = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (cat_index >= 0 && cat_index < mpich)
        return nbrma::mpich::T_category_get_info(cat_index, name, name_len, desc, desc_len, num_cvars,
                                        num_pvars, num_categories);
    if (cat_index != mpich) return MPI_T_ERR_INVALID_INDEX;
    copy_string(name, name_len, category_name);
    copy_string(desc, desc_len,
                "nbrma, the RMA subsystem: its counters and its NBRMA_* environment variables");
    set(num_cvars, static_cast<int>(cvar_settings().size()));
    set(num_pvars, static_cast<int>(counter_count()));
    set(num_categories, 0);
    return MPI_SUCCESS;
}

int t_category_get_index_impl(const char *name, int *cat_index) {
    int mpich = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (!name || !cat_index) return MPI_T_ERR_INVALID;
    const int error = nbrma::mpich::T_category_get_index(name, cat_index);
    if (error != MPI_T_ERR_INVALID_NAME) return error;
    if (std::strcmp(name, category_name) != 0) return MPI_T_ERR_INVALID_NAME;
    *cat_index = mpich;
    return MPI_SUCCESS;
}

int t_category_get_pvars_impl(int cat_index, int len, int indices[]) {
    int mpich = 0, first = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (cat_index >= 0 && cat_index < mpich)
        return nbrma::mpich::T_category_get_pvars(cat_index, len, indices);
    if (cat_index != mpich) return MPI_T_ERR_INVALID_INDEX;
    if (int error = mpich_pvar_count(&first)) return error;
    for (int i = 0; i < len && i < static_cast<int>(counter_count()); ++i) indices[i] = first + i;
    return MPI_SUCCESS;
}

int t_category_get_cvars_impl(int cat_index, int len, int indices[]) {
    int mpich = 0, first = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (cat_index >= 0 && cat_index < mpich)
        return nbrma::mpich::T_category_get_cvars(cat_index, len, indices);
    if (cat_index != mpich) return MPI_T_ERR_INVALID_INDEX;
    if (int error = mpich_cvar_count(&first)) return error;
    for (int i = 0; i < len && i < static_cast<int>(cvar_settings().size()); ++i)
        indices[i] = first + i;
    return MPI_SUCCESS;
}

int t_category_get_categories_impl(int cat_index, int len, int indices[]) {
    int mpich = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (cat_index >= 0 && cat_index < mpich)
        return nbrma::mpich::T_category_get_categories(cat_index, len, indices);
    return cat_index == mpich ? MPI_SUCCESS : MPI_T_ERR_INVALID_INDEX;  // none below nbrma
}

int t_category_get_num_events_impl(int cat_index, int *num_events) {
    int mpich = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (cat_index >= 0 && cat_index < mpich)
        return nbrma::mpich::T_category_get_num_events(cat_index, num_events);
    if (cat_index != mpich) return MPI_T_ERR_INVALID_INDEX;
    set(num_events, 0);
    return MPI_SUCCESS;
}

int t_category_get_events_impl(int cat_index, int len, int indices[]) {
    int mpich = 0;
    if (int error = mpich_category_count(&mpich)) return error;
    if (cat_index >= 0 && cat_index < mpich)
        return nbrma::mpich::T_category_get_events(cat_index, len, indices);
    return cat_index == mpich ? MPI_SUCCESS : MPI_T_ERR_INVALID_INDEX;  // nbrma has no events
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/tool_interface_bindings.inc"
