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
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/settings.hpp"
#include "common/threads.hpp"
#include "mpi/counter_table.hpp"
#include "mpi/mpich.hpp"
#include "mpi/pmpi.hpp"

using namespace nbrma;
using namespace nbrma::mpi;

namespace {

constexpr const char *pvar_prefix = "nbrma_";

// A handle of one of nbrma's performance variables, bound to one session.
struct PvarHandle {
    MPI_T_pvar_session session;
    const CounterRow *row;
    // Counters (not continuous): the handle's value is `accumulated` plus, while started,
    // the counter's increase since `base` (its value at the last start, reset or write).
    bool started = false;
    std::uint64_t accumulated = 0;
    std::uint64_t base = 0;
};

// A handle of one of nbrma's control variables: its value as it was at allocation (the
// count returned then is the buffer size the tool uses).
struct CvarHandle {
    const settings::Setting *setting;
    std::string value;
};

// MPI_T_init_thread calls not yet finalized (MPICH's own count, which MPI_Init does not
// touch). Checked before any call into MPICH: after its last MPI_T_finalize MPICH 4.0.2
// takes a destroyed mutex under MPI_THREAD_MULTIPLE and aborts, instead of answering
// MPI_T_ERR_NOT_INITIALIZED.
std::atomic<int> initialized{0};

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

constexpr const char *category_name = "nbrma";

struct Tables {
    std::mutex mutex;
    std::unordered_set<MPI_T_pvar_session> sessions;
    std::unordered_map<const void *, std::unique_ptr<PvarHandle>> pvars;
    std::unordered_map<const void *, std::unique_ptr<CvarHandle>> cvars;
};

Tables &tables() {
    static Tables *instance = new Tables;  // never destroyed: tools may call after exit()
    return *instance;
}

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

// The settings exposed as control variables: environment variables, families excepted
// (NBRMA_UCX_* stands for every UCX_* setting, not one variable).
const std::vector<const settings::Setting *> &cvar_settings() {
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

// MPI_T's string rule (as MPICH's MPIR_T_strncpy): with no buffer or a zero length, only
// the length needed (with the terminating null) is returned; else the string is copied,
// truncated to fit, and *length is what was written, null included.
void copy_string(char *out, int *length, const std::string &text) {
    if (!length) return;
    if (!out || *length <= 0) {
        *length = static_cast<int>(text.size()) + 1;
        return;
    }
    const std::size_t n = std::min(text.size(), static_cast<std::size_t>(*length - 1));
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
    *length = static_cast<int>(n) + 1;
}

template <typename T>
void set(T *out, T value) {
    if (out) *out = value;
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
PvarHandle *find_pvar(Tables &t, MPI_T_pvar_handle handle) {
    auto it = t.pvars.find(reinterpret_cast<const void *>(handle));
    return it == t.pvars.end() ? nullptr : it->second.get();
}
CvarHandle *find_cvar(Tables &t, MPI_T_cvar_handle handle) {
    auto it = t.cvars.find(reinterpret_cast<const void *>(handle));
    return it == t.cvars.end() ? nullptr : it->second.get();
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

}  // namespace

namespace {

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

// ---------------------------------------------------------------- performance variables

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

// ---------------------------------------------------------------- control variables

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
