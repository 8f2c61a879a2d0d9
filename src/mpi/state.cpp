#include "mpi/state.hpp"

#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common/settings.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/datatype.hpp"
#include "engine/reduce.hpp"
#include "mpi/bindings.hpp"
#include "mpi/errors.hpp"
#include "mpich/entry_points.hpp"
#include "progress/progress.hpp"

namespace nbrma::mpi {

namespace {
std::unordered_map<MPI_Win, WindowState *> &table() {
    static std::unordered_map<MPI_Win, WindowState *> windows;
    return windows;
}

void poke_mpich() {
    int flag = 0;
    mpich::Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

// ---- generalized request callbacks
//
// A Grequest has two owners: the completion side, until MPI_Grequest_complete has
// returned, and MPICH, until it calls free_fn. The last of the two recycles it. The
// completion runs through threads::defer: at once on the single-thread path, otherwise
// on the next application thread in nbrma (never on the progress thread).
struct Grequest {
    engine::Request *request = nullptr;
    engine::Window *cancellable = nullptr;  // a threshold's window: MPI_Cancel works
    MPI_Request handle = MPI_REQUEST_NULL;
    std::atomic<int> owners{2};
};

// A nonblocking closing call wraps one request per epoch: reuse the wrappers (the
// MPICH generalized request itself is made anew each time). Never destroyed, so kept
// wrappers stay reachable at exit.
engine::Spares<Grequest> &grequest_spares() {
    static auto *list = new engine::Spares<Grequest>();
    return *list;
}

Grequest *grequest_new(engine::Request *request) {
    Grequest *grequest = grequest_spares().take();
    if (!grequest) grequest = new Grequest();
    grequest->request = request;
    grequest->cancellable = nullptr;
    grequest->handle = MPI_REQUEST_NULL;
    grequest->owners.store(2, std::memory_order_relaxed);
    return grequest;
}

void grequest_drop(Grequest *grequest) {
    if (threads::release_reference(grequest->owners) == 0) grequest_spares().give(grequest);
}

void mpi_complete(void *extra_state) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    PMPI_Grequest_complete(grequest->handle);
    grequest_drop(grequest);
}

void complete_hook(engine::Request *request) { threads::defer(mpi_complete, request->user()); }

int query_fn(void *extra_state, MPI_Status *status) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    // Called once MPI_Grequest_complete ran, which is after the engine set the status.
    PMPI_Status_set_cancelled(status, grequest->request->cancelled() ? 1 : 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = error_class(grequest->request->status());
    return status->MPI_ERROR;
}

int free_fn(void *extra_state) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    grequest->request->release();
    grequest_drop(grequest);
    return MPI_SUCCESS;
}

// Epochs and RMA calls cannot be cancelled; a pending notification threshold can: it
// completes as cancelled (its MPI_Grequest_complete runs now, or, with threads, from the
// next application thread in nbrma, e.g. the MPI_Wait that follows).
int cancel_fn(void *extra_state, int complete) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    if (complete || !grequest->cancellable) return MPI_SUCCESS;
    {
        threads::Guard guard;
        // A threshold that completed has left the window's list (and the window may be
        // gone: it fails its thresholds when freed), so this finds nothing then.
        if (!grequest->request->complete())
            (void)grequest->cancellable->notifications().cancel(grequest->request);
    }
    return MPI_SUCCESS;
}

// MPICH calls poll_fn and wait_fn outside its own lock: they may run the deferred
// MPI_Grequest_complete calls (threads::drain), this request's included.
int poll_fn(void *extra_state, MPI_Status *) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    static thread_local unsigned calls = 0;
    if (!engine::progress_sweep() && !grequest->request->complete()) {
        // MPI_Wait spins on poll_fn alone: keep MPICH moving and share the CPU.
        if (++calls % engine::idle_rounds_per_poke() == 0) poke_mpich();
        if (oversubscribed()) sched_yield();
    }
    threads::drain();
    return MPI_SUCCESS;
}

int wait_fn(int count, void **states, double, MPI_Status *) {
    for (int i = 0; i < count; ++i) {
        auto *grequest = static_cast<Grequest *>(states[i]);
        (void)engine::wait_request(grequest->request);
    }
    threads::drain();
    return MPI_SUCCESS;
}
}  // namespace

namespace {
using detail::last_found;

WindowState *lookup(MPI_Win win) {
    auto found = table().find(win);
    return found == table().end() ? nullptr : found->second;
}
}  // namespace

WindowState *detail::window_lookup(MPI_Win win) {
    if (!threads::active()) {
        if (last_found && last_found->handle == win) return last_found;
        WindowState *state = lookup(win);
        if (state) last_found = state;
        return state;
    }
    const std::uint64_t now = detail::window_generation.load(std::memory_order_acquire);
    threads::Guard guard;
    WindowState *state = lookup(win);
    if (state) detail::thread_window = detail::CachedWindow{state, win, now};
    return state;
}

void window_insert(WindowState *state) {
    threads::Guard guard;
    table()[state->handle] = state;
}
void window_erase(MPI_Win win) {
    threads::Guard guard;
    if (last_found && last_found->handle == win) last_found = nullptr;
    detail::window_generation.fetch_add(1, std::memory_order_acq_rel);  // every thread's cache
    table().erase(win);
}

void ensure_initialized() {
    static std::once_flag once;
    std::call_once(once, [] {
        engine::progress_set_external(poke_mpich);
        register_error_classes();  // MPI initialized by a path nbrma does not interpose
        // The tables behind datatype layouts and reductions ask MPICH for type sizes
        // once: build them here, on an application thread, not in a sweep.
        const engine::TypeLayout *layout = nullptr;
        (void)engine::type_layout_get(MPI_INT, &layout);
        (void)engine::reduce_check(MPI_SUM, MPI_INT);
        // MPI_Init_thread switches locking on already; this covers an MPI initialized
        // by a path nbrma does not interpose (the Fortran bindings, say).
        int level = MPI_THREAD_SINGLE;
        if (PMPI_Query_thread(&level) == MPI_SUCCESS && level == MPI_THREAD_MULTIPLE)
            threads::enable();
    });
}

int proc_null(const char *call, MPI_Win win, MPI_Request *request) {
    if (!window_find(win)) return raise(call, MPI_WIN_NULL, Status::err_win);
    return request ? mpich::complete_request(request) : MPI_SUCCESS;
}

int request_wrap(engine::Request *request, MPI_Request *handle, engine::Window *cancellable) {
    // Done already, and well (a nonblocking epoch that ended inside its call, as on
    // shared memory): the cheapest complete request (complete_request) instead of a
    // generalized request to start, poll, complete and free. Not for one MPI_Cancel may
    // still name (a notification threshold).
    if (!cancellable && request->complete() && !is_error(request->status())) {
        request->release();
        return mpich::complete_request(handle);
    }
    Grequest *grequest = grequest_new(request);
    grequest->cancellable = cancellable;
    int error = MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, grequest,
                                    &grequest->handle);
    if (error != MPI_SUCCESS) {
        request->release();
        grequest_spares().give(grequest);
        return error;
    }
    *handle = grequest->handle;
    bool complete;
    {  // the progress thread may finish the request meanwhile: hook or here, not both
        threads::Guard guard;
        request->set_hook(complete_hook, grequest);
        complete = request->complete();
    }
    if (complete) mpi_complete(grequest);
    return MPI_SUCCESS;
}

Status request_wait(engine::Request *request) {
    Status status = engine::wait_request(request);
    request->release();
    if (check::enabled()) check::synchronized();
    return status;
}

std::string parse_info(MPI_Info info, WindowInfo *out) {
    if (info == MPI_INFO_NULL) return "";
    char value[MPI_MAX_INFO_VAL + 1];
    std::string invalid;  // the first key given a value it does not allow
    using settings::Id;
    // The value of the key (or its other spelling) if given and valid; a value the key
    // does not allow is remembered for the error and otherwise ignored.
    auto get = [&](Id id, bool alias = false) {
        const settings::Setting &key = settings::get(id);
        const char *name = alias ? key.alias : key.name;
        int flag = 0;
        if (!name) return false;
        PMPI_Info_get(info, name, MPI_MAX_INFO_VAL, value, &flag);
        if (!flag) return false;
        bool ok = settings::valid(key, value);
        unsigned mask = 0;
        if (ok && id == Id::accumulate_ordering)
            ok = settings::accumulate_ordering_mask(value, &mask);
        if (ok && id == Id::accumulate_granularity) {
            char *end = nullptr;
            ok = std::strtoll(value, &end, 10) >= 0 && end != value && *end == '\0';
        }
        if (!ok && invalid.empty())
            invalid = std::string("info ") + name + "=\"" + value + "\" is not valid (allowed: " +
                      (id == Id::accumulate_ordering ? "none, or a comma-separated subset of "
                                                       "rar, raw, war, waw"
                                                     : key.allowed) +
                      ")";
        return ok;
    };
    auto truth = [&]() { return std::strcmp(value, "true") == 0 || std::strcmp(value, "1") == 0; };
    if (get(Id::accumulate_ordering)) out->accumulate_ordering = value;
    if (get(Id::accumulate_ops)) out->accumulate_ops = value;
    if (get(Id::no_locks)) out->no_locks = truth();
    if (get(Id::alloc_shared_noncontig)) out->alloc_shared_noncontig = truth();
    if (get(Id::same_size)) out->same_size = truth();
    if (get(Id::same_disp_unit)) out->same_disp_unit = truth();
    if (get(Id::accumulate_granularity)) out->accumulate_granularity = value;
    if (get(Id::transport)) out->transport = value;
    if (get(Id::notify_max)) out->notify_max = value;
    if (get(Id::share_user_memory_key)) out->share_user_memory = truth() ? "true" : "false";
    if (get(Id::check)) out->check = value;
    // The reorder keys, by engine::Reorder, under their name and the paper's spelling.
    static const Id reorder_keys[4] = {
        Id::access_after_access_reorder, Id::access_after_exposure_reorder,
        Id::exposure_after_exposure_reorder, Id::exposure_after_access_reorder};
    for (int i = 0; i < 4; ++i) {
        if (get(reorder_keys[i])) out->reorder[i] = truth();
        if (get(reorder_keys[i], true)) out->reorder[i] = truth();
    }
    return invalid;
}

}  // namespace nbrma::mpi
