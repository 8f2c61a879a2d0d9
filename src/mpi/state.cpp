#include "mpi/state.hpp"

#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "common/yield.hpp"
#include "engine/progress.hpp"

namespace nbrma::mpi {

namespace {
std::unordered_map<MPI_Win, WindowState *> &table() {
    static std::unordered_map<MPI_Win, WindowState *> windows;
    return windows;
}

void poke_mpich() {
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

// ---- generalized request callbacks
struct Grequest {
    engine::Request *request;
    MPI_Request handle = MPI_REQUEST_NULL;
    bool freed = false;
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
    if (!grequest) return new Grequest{request};
    *grequest = Grequest{request};
    return grequest;
}

void grequest_delete(Grequest *grequest) { grequest_spares().give(grequest); }

void complete_hook(engine::Request *request) {
    auto *grequest = static_cast<Grequest *>(request->user());
    PMPI_Grequest_complete(grequest->handle);
    if (grequest->freed) grequest_delete(grequest);
}

int query_fn(void *extra_state, MPI_Status *status) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    Status result = grequest->request->complete() ? grequest->request->status() : Status::ok;
    status->MPI_ERROR = is_error(result) ? MPI_ERR_OTHER : MPI_SUCCESS;
    return status->MPI_ERROR;
}

int free_fn(void *extra_state) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    const bool complete = grequest->request->complete();
    grequest->freed = true;
    grequest->request->release();
    if (complete) grequest_delete(grequest);  // otherwise the completion hook deletes it
    return MPI_SUCCESS;
}

int cancel_fn(void *, int) { return MPI_SUCCESS; }  // epochs cannot be cancelled

int poll_fn(void *extra_state, MPI_Status *) {
    auto *grequest = static_cast<Grequest *>(extra_state);
    static unsigned calls = 0;
    if (!engine::progress_sweep() && !grequest->request->complete()) {
        // MPI_Wait spins on poll_fn alone: keep MPICH moving and share the CPU.
        if (++calls % 16 == 0) poke_mpich();
        if (oversubscribed()) sched_yield();
    }
    return MPI_SUCCESS;
}

int wait_fn(int count, void **states, double, MPI_Status *) {
    for (int i = 0; i < count; ++i) {
        auto *grequest = static_cast<Grequest *>(states[i]);
        (void)engine::wait_request(grequest->request);
    }
    return MPI_SUCCESS;
}
}  // namespace

namespace {
// The window of the last lookup: every call of an epoch names the same one.
WindowState *last_found = nullptr;
}  // namespace

WindowState *window_find(MPI_Win win) {
    if (last_found && last_found->handle == win) return last_found;
    auto found = table().find(win);
    if (found == table().end()) return nullptr;
    last_found = found->second;
    return last_found;
}

void window_insert(WindowState *state) { table()[state->handle] = state; }
void window_erase(MPI_Win win) {
    if (last_found && last_found->handle == win) last_found = nullptr;
    table().erase(win);
}

void ensure_initialized() {
    static bool done = false;
    if (done) return;
    done = true;
    engine::progress_set_external(poke_mpich);
}

int request_wrap(engine::Request *request, MPI_Request *handle) {
    Grequest *grequest = grequest_new(request);
    int error = MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, grequest,
                                    &grequest->handle);
    if (error != MPI_SUCCESS) {
        request->release();
        grequest_delete(grequest);
        return error;
    }
    *handle = grequest->handle;
    request->set_hook(complete_hook, grequest);
    if (request->complete()) PMPI_Grequest_complete(grequest->handle);
    return MPI_SUCCESS;
}

Status request_wait(engine::Request *request) {
    Status status = engine::wait_request(request);
    request->release();
    return status;
}

void parse_info(MPI_Info info, WindowInfo *out) {
    if (info == MPI_INFO_NULL) return;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    auto get = [&](const char *key) {
        flag = 0;
        PMPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
        return flag != 0;
    };
    auto truth = [&]() { return std::strcmp(value, "true") == 0 || std::strcmp(value, "1") == 0; };
    if (get("accumulate_ordering")) out->accumulate_ordering = value;
    if (get("accumulate_ops")) out->accumulate_ops = value;
    if (get("no_locks")) out->no_locks = truth();
    if (get("alloc_shared_noncontig")) out->alloc_shared_noncontig = truth();
    if (get("same_size")) out->same_size = truth();
    if (get("same_disp_unit")) out->same_disp_unit = truth();
    if (get("mpi_accumulate_granularity")) {
        char *end = nullptr;
        const long long bytes = std::strtoll(value, &end, 10);
        if (end != value && *end == '\0' && bytes >= 0) out->accumulate_granularity = value;
    }
    if (get("nbrma_transport")) out->transport = value;
    static const char *const reorder_keys[4][2] = {
        {"access_after_access_reorder", "MPI_WIN_ACCESS_AFTER_ACCESS_REORDER"},
        {"access_after_exposure_reorder", "MPI_WIN_ACCESS_AFTER_EXPOSURE_REORDER"},
        {"exposure_after_exposure_reorder", "MPI_WIN_EXPOSURE_AFTER_EXPOSURE_REORDER"},
        {"exposure_after_access_reorder", "MPI_WIN_EXPOSURE_AFTER_ACCESS_REORDER"},
    };
    for (int i = 0; i < 4; ++i)
        for (const char *key : reorder_keys[i])
            if (get(key)) out->reorder[i] = truth();
}

}  // namespace nbrma::mpi
