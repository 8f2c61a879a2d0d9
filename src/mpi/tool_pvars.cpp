// Performance variables of the MPI tool interface: nbrma's counters (counter_table.cpp)
// after MPICH's own, "nbrma_" + the counter's name, handles bound to MPICH's sessions
// (tool_interface.cpp says how the two sets of indices and handles share the calls).
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

namespace {

constexpr const char *pvar_prefix = "nbrma_";

bool is_counter(const CounterRow &row) { return row.kind == CounterKind::count; }

std::uint64_t counter_now(const CounterRow &row) {
    threads::Guard guard;
    return row.read();
}

std::uint64_t handle_value(const PvarHandle &handle) {
    if (!is_counter(*handle.row)) return counter_now(*handle.row);
    return handle.accumulated + (handle.started ? counter_now(*handle.row) - handle.base : 0);
}

int pvar_class(CounterKind kind) {
    switch (kind) {
        case CounterKind::count:
            return MPI_T_PVAR_CLASS_COUNTER;
        case CounterKind::level:
            return MPI_T_PVAR_CLASS_LEVEL;
        case CounterKind::size:
            return MPI_T_PVAR_CLASS_SIZE;
        case CounterKind::other:
            break;
    }
    return MPI_T_PVAR_CLASS_GENERIC;
}

// nbrma's handle object behind `handle`, or null (MPICH's, or garbage for MPICH to judge).
// Call with the mutex held.
PvarHandle *find_pvar(Tables &t, MPI_T_pvar_handle handle) {
    auto it = t.pvars.find(reinterpret_cast<const void *>(handle));
    return it == t.pvars.end() ? nullptr : it->second.get();
}

// Checks that `handle` (nbrma's) may be used in `session`.
int check_session(Tables &t, MPI_T_pvar_session session, const PvarHandle &handle) {
    if (!t.sessions.count(session)) return MPI_T_ERR_INVALID_SESSION;
    return handle.session == session ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
}

void start(PvarHandle &handle) {
    if (handle.started) return;
    handle.base = counter_now(*handle.row);
    handle.started = true;
}
void stop(PvarHandle &handle) {
    if (!handle.started) return;
    handle.accumulated += counter_now(*handle.row) - handle.base;
    handle.started = false;
}
void write(PvarHandle &handle, std::uint64_t value) {
    handle.accumulated = value;
    if (handle.started) handle.base = counter_now(*handle.row);
}

enum class Action { start, stop, reset };

// start / stop / reset of nbrma's handles: one handle, or every handle of the session
// (MPI_T_PVAR_ALL_HANDLES, which skips the handles the action does not apply to).
// *forward: also hand the call to MPICH (its handles, or all of the session's).
int pvar_action(MPI_T_pvar_session session, MPI_T_pvar_handle handle, Action action,
                bool *forward) {
    Tables &t = tables();
    std::lock_guard<std::mutex> lock(t.mutex);
    *forward = false;
    if (handle == MPI_T_PVAR_ALL_HANDLES) {
        if (session == MPI_T_PVAR_SESSION_NULL) return MPI_T_ERR_INVALID_SESSION;
        *forward = true;  // MPICH judges a session it made that nbrma did not see
        if (!t.sessions.count(session)) return MPI_SUCCESS;
        for (auto &entry : t.pvars) {
            PvarHandle &h = *entry.second;
            if (h.session != session || !is_counter(*h.row)) continue;
            if (action == Action::start) start(h);
            if (action == Action::stop) stop(h);
            if (action == Action::reset) write(h, 0);
        }
        return MPI_SUCCESS;
    }
    PvarHandle *h = find_pvar(t, handle);
    if (!h) {
        *forward = true;
        return MPI_SUCCESS;
    }
    if (int error = check_session(t, session, *h)) return error;
    if (!is_counter(*h->row))  // continuous and read-only
        return action == Action::reset ? MPI_T_ERR_PVAR_NO_WRITE : MPI_T_ERR_PVAR_NO_STARTSTOP;
    if (action == Action::start) start(*h);
    if (action == Action::stop) stop(*h);
    if (action == Action::reset) write(*h, 0);
    return MPI_SUCCESS;
}

// MPI_T_pvar_start, stop and reset: on nbrma's handles here; MPICH's (and
// MPI_T_PVAR_ALL_HANDLES of a session MPICH made) also go to `mpich_call`.
int pvar_call(MPI_T_pvar_session session, MPI_T_pvar_handle handle, Action action,
              int (*mpich_call)(MPI_T_pvar_session, MPI_T_pvar_handle)) {
    int mpich = 0;
    if (int error = mpich_pvar_count(&mpich)) return error;
    if (handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
    bool forward = false;
    if (int error = pvar_action(session, handle, action, &forward)) return error;
    return forward ? mpich_call(session, handle) : MPI_SUCCESS;
}

// MPI_T_pvar_read, write and readreset: `own` runs on nbrma's handle under the tables'
// mutex (its session checked); any other handle goes to `mpich_call`.
template <typename Own, typename Buffer>
int pvar_access(MPI_T_pvar_session session, MPI_T_pvar_handle handle, Buffer buf, Own own,
                int (*mpich_call)(MPI_T_pvar_session, MPI_T_pvar_handle, Buffer)) {
    int mpich = 0;
    if (int error = mpich_pvar_count(&mpich)) return error;
    if (handle == MPI_T_PVAR_HANDLE_NULL || handle == MPI_T_PVAR_ALL_HANDLES)
        return MPI_T_ERR_INVALID_HANDLE;
    {
        Tables &t = tables();
        std::lock_guard<std::mutex> lock(t.mutex);
        if (PvarHandle *h = find_pvar(t, handle)) {
            if (int error = check_session(t, session, *h)) return error;
            return own(*h);
        }
    }
    return mpich_call(session, handle, buf);
}

int t_pvar_get_num_impl(int *num_pvar) {
    if (!num_pvar) return is_initialized() ? MPI_T_ERR_INVALID : MPI_T_ERR_NOT_INITIALIZED;
    const int error = mpich_pvar_count(num_pvar);
    if (error == MPI_SUCCESS) *num_pvar += static_cast<int>(counter_count());
    return error;
}

int t_pvar_get_info_impl(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *readonly, int *continuous, int *atomic) {
    int mpich = 0;
    if (int error = mpich_pvar_count(&mpich)) return error;
    if (pvar_index < 0) return MPI_T_ERR_INVALID_INDEX;
    if (pvar_index < mpich)
        return nbrma::mpich::T_pvar_get_info(pvar_index, name, name_len, verbosity, var_class, datatype,
                                    enumtype, desc, desc_len, bind, readonly, continuous,
                                    atomic);
    const std::size_t index = static_cast<std::size_t>(pvar_index - mpich);
    if (index >= counter_count()) return MPI_T_ERR_INVALID_INDEX;
    const CounterRow &row = counter_table()[index];
    copy_string(name, name_len, std::string(pvar_prefix) + row.name);
    copy_string(desc, desc_len, row.meaning);
    set(verbosity, row.detail ? static_cast<int>(MPI_T_VERBOSITY_USER_DETAIL)
                              : static_cast<int>(MPI_T_VERBOSITY_USER_BASIC));
    set(var_class, pvar_class(row.kind));
    set(datatype, MPI_UNSIGNED_LONG_LONG);
    set(enumtype, MPI_T_ENUM_NULL);
    set(bind, static_cast<int>(MPI_T_BIND_NO_OBJECT));
    // Counters: per handle, started and stopped, reset or written (the handle's view, not
    // the process's counter). The rest: a state read as it is.
    set(readonly, is_counter(row) ? 0 : 1);
    set(continuous, is_counter(row) ? 0 : 1);
    set(atomic, is_counter(row) ? 1 : 0);
    return MPI_SUCCESS;
}

int t_pvar_get_index_impl(const char *name, int var_class, int *pvar_index) {
    int mpich = 0;
    if (int error = mpich_pvar_count(&mpich)) return error;
    if (!name || !pvar_index) return MPI_T_ERR_INVALID;
    const int error = nbrma::mpich::T_pvar_get_index(name, var_class, pvar_index);
    if (error != MPI_T_ERR_INVALID_NAME) return error;
    const std::size_t prefix = std::strlen(pvar_prefix);
    if (std::strncmp(name, pvar_prefix, prefix) != 0) return MPI_T_ERR_INVALID_NAME;
    for (std::size_t i = 0; i < counter_count(); ++i) {
        const CounterRow &row = counter_table()[i];
        if (std::strcmp(name + prefix, row.name) == 0 && pvar_class(row.kind) == var_class) {
            *pvar_index = mpich + static_cast<int>(i);
            return MPI_SUCCESS;
        }
    }
    return MPI_T_ERR_INVALID_NAME;
}

int t_pvar_session_create_impl(MPI_T_pvar_session *session) {
    if (!is_initialized()) return MPI_T_ERR_NOT_INITIALIZED;
    const int error = nbrma::mpich::T_pvar_session_create(session);
    if (error == MPI_SUCCESS) {
        Tables &t = tables();
        std::lock_guard<std::mutex> lock(t.mutex);
        t.sessions.insert(*session);
    }
    return error;
}

int t_pvar_session_free_impl(MPI_T_pvar_session *session) {
    if (!is_initialized()) return MPI_T_ERR_NOT_INITIALIZED;
    if (!session) return nbrma::mpich::T_pvar_session_free(session);
    const MPI_T_pvar_session freed = *session;
    const int error = nbrma::mpich::T_pvar_session_free(session);
    if (error != MPI_SUCCESS) return error;
    Tables &t = tables();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (t.sessions.erase(freed)) {
        for (auto it = t.pvars.begin(); it != t.pvars.end();)
            it = it->second->session == freed ? t.pvars.erase(it) : std::next(it);
    }
    return MPI_SUCCESS;
}

int t_pvar_handle_alloc_impl(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                             MPI_T_pvar_handle *handle, int *count) {
    int mpich = 0;
    if (int error = mpich_pvar_count(&mpich)) return error;
    if (pvar_index >= 0 && pvar_index < mpich)
        return nbrma::mpich::T_pvar_handle_alloc(session, pvar_index, obj_handle, handle, count);
    Tables &t = tables();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (!t.sessions.count(session)) return MPI_T_ERR_INVALID_SESSION;
    if (pvar_index < 0 || static_cast<std::size_t>(pvar_index - mpich) >= counter_count())
        return MPI_T_ERR_INVALID_INDEX;
    if (!handle || !count) return MPI_T_ERR_INVALID;
    auto object = std::make_unique<PvarHandle>();
    object->session = session;
    object->row = &counter_table()[pvar_index - mpich];
    *handle = reinterpret_cast<MPI_T_pvar_handle>(object.get());
    *count = 1;
    t.pvars.emplace(object.get(), std::move(object));
    return MPI_SUCCESS;
}

int t_pvar_handle_free_impl(MPI_T_pvar_session session, MPI_T_pvar_handle *handle) {
    int mpich = 0;
    if (int error = mpich_pvar_count(&mpich)) return error;
    if (!handle) return MPI_T_ERR_INVALID_HANDLE;
    {
        Tables &t = tables();
        std::lock_guard<std::mutex> lock(t.mutex);
        if (PvarHandle *h = find_pvar(t, *handle)) {
            if (int error = check_session(t, session, *h)) return error;
            t.pvars.erase(h);
            *handle = MPI_T_PVAR_HANDLE_NULL;
            return MPI_SUCCESS;
        }
    }
    if (*handle == MPI_T_PVAR_HANDLE_NULL || *handle == MPI_T_PVAR_ALL_HANDLES)
        return MPI_T_ERR_INVALID_HANDLE;
    return nbrma::mpich::T_pvar_handle_free(session, handle);
}

int t_pvar_start_impl(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    return pvar_call(session, handle, Action::start, nbrma::mpich::T_pvar_start);
}

int t_pvar_stop_impl(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    return pvar_call(session, handle, Action::stop, nbrma::mpich::T_pvar_stop);
}

int t_pvar_reset_impl(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    return pvar_call(session, handle, Action::reset, nbrma::mpich::T_pvar_reset);
}

int t_pvar_read_impl(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf) {
    auto own = [buf](PvarHandle &h) {
        if (!buf) return MPI_T_ERR_INVALID;
        const unsigned long long value = handle_value(h);
        std::memcpy(buf, &value, sizeof value);
        return MPI_SUCCESS;
    };
    return pvar_access(session, handle, buf, own, nbrma::mpich::T_pvar_read);
}

int t_pvar_write_impl(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf) {
    auto own = [buf](PvarHandle &h) {
        if (!is_counter(*h.row)) return MPI_T_ERR_PVAR_NO_WRITE;
        if (!buf) return MPI_T_ERR_INVALID;
        unsigned long long value = 0;
        std::memcpy(&value, buf, sizeof value);
        write(h, value);
        return MPI_SUCCESS;
    };
    return pvar_access(session, handle, buf, own, nbrma::mpich::T_pvar_write);
}

int t_pvar_readreset_impl(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf) {
    auto own = [buf](PvarHandle &h) {
        if (!is_counter(*h.row)) return MPI_T_ERR_PVAR_NO_WRITE;
        if (!buf) return MPI_T_ERR_INVALID;
        // One reading of the counter serves both: no event falls between the two.
        const std::uint64_t now = counter_now(*h.row);
        const unsigned long long value = h.accumulated + (h.started ? now - h.base : 0);
        std::memcpy(buf, &value, sizeof value);
        h.accumulated = 0;
        h.base = now;
        return MPI_SUCCESS;
    };
    return pvar_access(session, handle, buf, own, nbrma::mpich::T_pvar_readreset);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/tool_pvars_bindings.inc"
