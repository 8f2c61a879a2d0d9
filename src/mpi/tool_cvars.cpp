// Control variables of the MPI tool interface: nbrma's settings (common/settings.cpp), one
// per environment variable, after MPICH's own, which keep theirs but for a note on those
// nbrma makes meaningless (tool_interface.cpp says how the two sets share the calls).
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
#include "mpi/tool_interface.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"

using namespace nbrma;
using namespace nbrma::mpi;
using namespace nbrma::mpi::tool;

// The settings exposed as control variables: environment variables, families excepted
// (NBRMA_UCX_* stands for every UCX_* setting, not one variable).
const std::vector<const settings::Setting *> &nbrma::mpi::tool::cvar_settings() {
    static const std::vector<const settings::Setting *> rows = [] {
        std::vector<const settings::Setting *> out;
        for (std::size_t i = 0; i < settings::count; ++i) {
            const settings::Setting &row = settings::table()[i];
            const std::size_t length = std::strlen(row.name);
            if (row.scope == settings::Scope::environment && row.name[length - 1] != '*')
                out.push_back(&row);
        }
        return out;
    }();
    return rows;
}

namespace {

std::string cvar_value(const settings::Setting &row) {
    const char *value = settings::env(row.id);
    return value ? value : row.default_value;
}

std::string cvar_description(const settings::Setting &row) {
    std::string text = row.meaning;
    text += ". Values: ";
    text += row.allowed;
    text += ". Default: ";
    text += *row.default_value ? row.default_value : "not set";
    text += ". Read when MPI and windows start; not settable through MPI_T.";
    return text;
}

// The note that begins the description of an MPICH control variable nbrma makes
// meaningless, or null: the tuning of MPICH's own RMA (every MPIR_CVAR_*_RMA_* and *_RMA),
// which no window reaches under nbrma, and MPICH's asynchronous progress thread, which
// does not advance nbrma's epochs. Names, indices and values stay MPICH's, so a tool that
// sets one still can; `mpivars` and other tools show the note with the description.
const char *mpich_cvar_note(const char *name) {
    if (std::strcmp(name, "MPIR_CVAR_ASYNC_PROGRESS") == 0 ||
        std::strcmp(name, "MPIR_CVAR_PROGRESS_THREAD_AFFINITY") == 0)
        return "[nbrma: MPICH's progress thread does not advance RMA, which runs on nbrma's "
               "engine; NBRMA_PROGRESS=thread or interrupt does] ";
    const std::size_t length = std::strlen(name);
    const bool ends_rma = length >= 4 && std::strcmp(name + length - 4, "_RMA") == 0;
    if (std::strstr(name, "_RMA_") || ends_rma)
        return "[nbrma: no effect, MPI RMA runs on nbrma's engine; see the NBRMA_* variables] ";
    return nullptr;
}

// MPI_T_cvar_get_info of MPICH's variable `index`: MPICH's answer, with the description of
// the variables mpich_cvar_note names prefixed by that note.
int mpich_cvar_get_info(int index, char *name, int *name_len, int *verbosity,
                        MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                        int *bind, int *scope) {
    char own_name[256];
    int own_name_len = sizeof own_name, full_len = 0;
    int error = nbrma::mpich::T_cvar_get_info(index, own_name, &own_name_len, nullptr, nullptr,
                                              nullptr, nullptr, &full_len, nullptr, nullptr);
    const char *note = error == MPI_SUCCESS ? mpich_cvar_note(own_name) : nullptr;
    if (!note)
        return nbrma::mpich::T_cvar_get_info(index, name, name_len, verbosity, datatype, enumtype,
                                             desc, desc_len, bind, scope);
    std::string text(static_cast<std::size_t>(std::max(full_len, 1)), '\0');
    error = nbrma::mpich::T_cvar_get_info(index, name, name_len, verbosity, datatype, enumtype,
                                          text.data(), &full_len, bind, scope);
    if (error != MPI_SUCCESS) return error;
    text.resize(std::strlen(text.c_str()));
    copy_string(desc, desc_len, note + text);
    return MPI_SUCCESS;
}

// nbrma's handle object behind `handle`, or null (MPICH's, or garbage for MPICH to judge).
// Call with the mutex held.
CvarHandle *find_cvar(Tables &t, MPI_T_cvar_handle handle) {
    auto it = t.cvars.find(reinterpret_cast<const void *>(handle));
    return it == t.cvars.end() ? nullptr : it->second.get();
}

int t_cvar_get_num_impl(int *num_cvar) {
    if (!num_cvar) return is_initialized() ? MPI_T_ERR_INVALID : MPI_T_ERR_NOT_INITIALIZED;
    const int error = mpich_cvar_count(num_cvar);
    if (error == MPI_SUCCESS) *num_cvar += static_cast<int>(cvar_settings().size());
    return error;
}

int t_cvar_get_info_impl(int cvar_index, char *name, int *name_len, int *verbosity,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *scope) {
    int mpich = 0;
    if (int error = mpich_cvar_count(&mpich)) return error;
    if (cvar_index < 0) return MPI_T_ERR_INVALID_INDEX;
    if (cvar_index < mpich)
        return mpich_cvar_get_info(cvar_index, name, name_len, verbosity, datatype, enumtype, desc,
                                   desc_len, bind, scope);
    const std::size_t index = static_cast<std::size_t>(cvar_index - mpich);
    if (index >= cvar_settings().size()) return MPI_T_ERR_INVALID_INDEX;
    const settings::Setting &row = *cvar_settings()[index];
    copy_string(name, name_len, row.name);
    copy_string(desc, desc_len, cvar_description(row));
    set(verbosity, row.audience == settings::Audience::user
                       ? static_cast<int>(MPI_T_VERBOSITY_USER_BASIC)
                       : static_cast<int>(MPI_T_VERBOSITY_MPIDEV_DETAIL));
    set(datatype, MPI_CHAR);
    set(enumtype, MPI_T_ENUM_NULL);
    set(bind, static_cast<int>(MPI_T_BIND_NO_OBJECT));
    set(scope, static_cast<int>(MPI_T_SCOPE_READONLY));
    return MPI_SUCCESS;
}

int t_cvar_get_index_impl(const char *name, int *cvar_index) {
    int mpich = 0;
    if (int error = mpich_cvar_count(&mpich)) return error;
    if (!name || !cvar_index) return MPI_T_ERR_INVALID;
    const int error = nbrma::mpich::T_cvar_get_index(name, cvar_index);
    if (error != MPI_T_ERR_INVALID_NAME) return error;
    const auto &rows = cvar_settings();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (std::strcmp(name, rows[i]->name) == 0) {
            *cvar_index = mpich + static_cast<int>(i);
            return MPI_SUCCESS;
        }
    }
    return MPI_T_ERR_INVALID_NAME;
}

int t_cvar_handle_alloc_impl(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                             int *count) {
    int mpich = 0;
    if (int error = mpich_cvar_count(&mpich)) return error;
    if (cvar_index >= 0 && cvar_index < mpich)
        return nbrma::mpich::T_cvar_handle_alloc(cvar_index, obj_handle, handle, count);
    if (cvar_index < 0 || static_cast<std::size_t>(cvar_index - mpich) >= cvar_settings().size())
        return MPI_T_ERR_INVALID_INDEX;
    if (!handle || !count) return MPI_T_ERR_INVALID;
    auto object = std::make_unique<CvarHandle>();
    object->setting = cvar_settings()[cvar_index - mpich];
    object->value = cvar_value(*object->setting);
    *handle = reinterpret_cast<MPI_T_cvar_handle>(object.get());
    *count = static_cast<int>(object->value.size()) + 1;
    Tables &t = tables();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.cvars.emplace(object.get(), std::move(object));
    return MPI_SUCCESS;
}

int t_cvar_handle_free_impl(MPI_T_cvar_handle *handle) {
    int mpich = 0;
    if (int error = mpich_cvar_count(&mpich)) return error;
    if (!handle || *handle == MPI_T_CVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
    {
        Tables &t = tables();
        std::lock_guard<std::mutex> lock(t.mutex);
        if (t.cvars.erase(reinterpret_cast<const void *>(*handle))) {
            *handle = MPI_T_CVAR_HANDLE_NULL;
            return MPI_SUCCESS;
        }
    }
    return nbrma::mpich::T_cvar_handle_free(handle);
}

int t_cvar_read_impl(MPI_T_cvar_handle handle, void *buf) {
    int mpich = 0;
    if (int error = mpich_cvar_count(&mpich)) return error;
    if (handle == MPI_T_CVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
    {
        Tables &t = tables();
        std::lock_guard<std::mutex> lock(t.mutex);
        if (CvarHandle *h = find_cvar(t, handle)) {
            if (!buf) return MPI_T_ERR_INVALID;
            std::memcpy(buf, h->value.c_str(), h->value.size() + 1);
            return MPI_SUCCESS;
        }
    }
    return nbrma::mpich::T_cvar_read(handle, buf);
}

int t_cvar_write_impl(MPI_T_cvar_handle handle, const void *buf) {
    int mpich = 0;
    if (int error = mpich_cvar_count(&mpich)) return error;
    if (handle == MPI_T_CVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
    {
        Tables &t = tables();
        std::lock_guard<std::mutex> lock(t.mutex);
        if (find_cvar(t, handle)) return MPI_T_ERR_CVAR_SET_NEVER;  // read at startup only
    }
    return nbrma::mpich::T_cvar_write(handle, buf);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/tool_cvars_bindings.inc"
