// Notified RMA, target side (doc/design.md §8): the window's notification
// counters and threshold requests. The origin calls (MPIX_Put_notify ...) are in
// communication.cpp.
#include <cstdio>

#include "mpi/bindings.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "nbrma.h"
#include "progress/progress.hpp"

using namespace nbrma;
using namespace nbrma::mpi;

namespace {

// An index outside [0, count): the message names the call and the index.
int bad_index(const char *call, MPI_Win win, int index, int count) {
    char why[128];
    std::snprintf(why, sizeof why, "notification index %d outside this rank's %d counters", index,
                  count);
    return raise(call, win, Status::err_notification, why);
}

int notify_set_num(const char *call, MPI_Win win, int n) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    unsigned capacity = 0;
    Status status = locked([&] {
        engine::NotifyCounters &counters = state->engine->notifications();
        capacity = counters.capacity();
        return counters.set_count(n);
    });
    if (is_error(status)) {
        char why[160];
        std::snprintf(why, sizeof why,
                      "%d counters: a window has 0 to %u (NBRMA_NOTIFY_MAX or the info key "
                      "nbrma_notify_max at its creation)",
                      n, capacity);
        return raise(call, win, status, why);
    }
    return MPI_SUCCESS;
}

int notify_get_num(const char *call, MPI_Win win, int *n) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    if (!n) return raise(call, win, Status::err_arg, "null result pointer");
    *n = locked([&] { return state->engine->notifications().count(); });
    return MPI_SUCCESS;
}

int notify_get_value(const char *call, MPI_Win win, int notification_idx, MPI_Count *value) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    if (!value) return raise(call, win, Status::err_arg, "null result pointer");
    // A program may poll the counter: let the origins' adds land (UCX over tcp performs
    // them in our progress) and other work move.
    (void)engine::progress_sweep();
    std::uint64_t now = 0;
    int count = 0;
    Status status = locked([&] {
        count = state->engine->notifications().count();
        const Status read = state->engine->notifications().value(notification_idx, &now);
        if (state->check && !is_error(read)) state->check->notified();
        return read;
    });
    if (is_error(status)) return bad_index(call, win, notification_idx, count);
    *value = static_cast<MPI_Count>(now);
    return MPI_SUCCESS;
}

int notify_set_value(const char *call, MPI_Win win, int notification_idx, MPI_Count value) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    if (value < 0) return raise(call, win, Status::err_arg, "negative counter value");
    int count = 0;
    Status status = locked([&] {
        count = state->engine->notifications().count();
        return state->engine->notifications().set_value(notification_idx,
                                                        static_cast<std::uint64_t>(value));
    });
    if (is_error(status)) return bad_index(call, win, notification_idx, count);
    return MPI_SUCCESS;
}

int notify_ithreshold(const char *call, MPI_Win win, int notification_idx, MPI_Count expected,
                      MPI_Request *request) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win, "freed or not a window");
    if (!request) return raise(call, win, Status::err_request, "null request pointer");
    engine::Request *pending = nullptr;
    int count = 0;
    bool met = false;
    const std::uint64_t wanted = expected < 0 ? 0 : static_cast<std::uint64_t>(expected);
    Status status = locked([&] {
        engine::NotifyCounters &counters = state->engine->notifications();
        count = counters.count();
        std::uint64_t now = 0;
        Status checked = counters.value(notification_idx, &now);
        if (is_error(checked) || now >= wanted) {
            met = !is_error(checked);
            if (met && state->check) state->check->notified();
            return checked;
        }
        // The counter may reach `wanted` between the read above and threshold()'s own,
        // which then completes the request at once: seen now, as above.
        checked = counters.threshold(notification_idx, wanted, &pending);
        if (!is_error(checked) && pending->complete() && state->check) state->check->notified();
        return checked;
    });
    if (is_error(status)) return bad_index(call, win, notification_idx, count);
    // Met already: a request that MPICH itself made complete (a receive from
    // MPI_PROC_NULL) costs a third of a generalized one; a producer that keeps ahead of
    // its consumer makes this the common case.
    if (met) return PMPI_Irecv(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, request);
    return request_wrap(pending, request, state->engine.get());
}

}  // namespace

// The C entry points, generated from maint/rma_api.txt.
#include "mpi/notify_bindings.inc"
