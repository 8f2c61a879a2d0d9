// Communication calls: each becomes an engine RmaCall. The _c (large-count) forms
// share the path; MPI_Count and MPI_Aint are both 64-bit here.
#include <cstdio>
#include <cstring>

#include "engine/datatype.hpp"
#include "mpi/bindings.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "mpich/pmpi.hpp"
#include "progress/progress.hpp"

using namespace nbrma;
using namespace nbrma::mpi;
using engine::RmaCall;
using engine::RmaKind;

namespace {

static_assert(sizeof(MPI_Count) == sizeof(MPI_Aint), "counts share one path");

// The offending values of a call refused for its target rank or its target range: the
// rank and the window's ranks; or the target bytes, how they were computed and the
// target's window.
void describe_target(const WindowState &state, const RmaCall &call, Status status, char *why,
                     std::size_t size) {
    const engine::Window &window = *state.engine;
    const int ranks = window.size();
    if (status == Status::err_rank) {
        std::snprintf(why, size, "%s", rank_outside(call.target, ranks).c_str());
        return;
    }
    if (status == Status::err_count) {
        std::snprintf(why, size, "a negative count: origin_count %lld, target_count %lld%s",
                      static_cast<long long>(call.origin_count),
                      static_cast<long long>(call.target_count),
                      call.result_count < 0 ? ", result_count negative" : "");
        return;
    }
    const engine::WindowConfig &config = window.config();
    const bool dynamic = config.flavor == engine::Flavor::dynamic;
    const long long unit = dynamic ? 1 : config.disp_units[call.target];
    const engine::TypeLayout *type = nullptr;
    std::uint64_t start = 0, low = 0, high = 0;
    // (the layout cache is the engine's: read under its lock)
    const bool spanned =
        !is_error(locked([&] { return engine::type_layout_get(call.target_type, &type); })) &&
        !is_error(engine::target_span(call, *type, unit, &start, &low, &high));
    const long long displacement = call.displacement, count = call.target_count;
    if (!spanned) {
        std::snprintf(why, size, "target displacement %lld x disp_unit %lld with %lld "
                      "elements of the target datatype lies below 0 or beyond 64 bits (rank %d)",
                      displacement, unit, count, call.target);
    } else if (dynamic) {
        std::snprintf(why, size, "target bytes [0x%llx, 0x%llx) (%lld elements of the target "
                      "datatype at address 0x%llx) are not inside one region rank %d attached",
                      static_cast<unsigned long long>(low), static_cast<unsigned long long>(high),
                      count, static_cast<unsigned long long>(displacement), call.target);
    } else {
        std::snprintf(why, size, "target bytes [%llu, %llu) (displacement %lld x disp_unit %lld, "
                      "%lld elements of the target datatype) outside rank %d's window of %llu "
                      "bytes", static_cast<unsigned long long>(low),
                      static_cast<unsigned long long>(high), displacement, unit, count,
                      call.target, static_cast<unsigned long long>(config.sizes[call.target]));
    }
}

// A blocking call in a shared section (shared_call), with locking on.
[[gnu::always_inline]] inline bool issue_shared(WindowState &state, const RmaCall &call) {
    return shared_call(
        state, [&] { return state.engine->rma_concurrent(call); },
        [&] { return state.engine->rma_shared(call); });
}

// `tried`: issue() offered the call to issue_shared already.
[[gnu::noinline]] int issue_general(const char *call_name, MPI_Win win, const RmaCall &call,
                                    MPI_Request *request, bool wants_request, bool tried) {
    char why[320];
    WindowState *state = window_find(win);
    if (!state) return raise(call_name, MPI_WIN_NULL, Status::err_win);
    if (!wants_request && !tried && issue_shared(*state, call)) return MPI_SUCCESS;
    engine::Request *pending = nullptr;
    const char *cause = nullptr;  // the argument check's exact cause, if it refused the call
    Status status =
        locked([&] { return state->engine->rma(call, wants_request ? &pending : nullptr, &cause); });
    if (is_error(status)) {
        const char *detail = cause;
        if (status == Status::err_rank || (status == Status::err_range && !cause) ||
            (status == Status::err_count && cause && std::strcmp(cause, "negative count") == 0)) {
            describe_target(*state, call, status, why, sizeof why);
            detail = why;
        }
        if (!detail) switch (status) {
            case Status::err_sync: detail = "no passive epoch is open toward the target"; break;
            case Status::err_count: detail = "negative count, or data beyond 64 bits"; break;
            case Status::err_type: detail = "origin and target data sizes differ, or bad type"; break;
            case Status::err_notification:
                std::snprintf(why, sizeof why,
                              "notification index %d outside the target's counters (it has "
                              "fewer: MPIX_Win_notify_set_num)", call.notify_index);
                detail = why;
                break;
            default: break;
        }
        return raise(call_name, win, status, detail);
    }
    if (wants_request) return request_wrap(pending, request);
    return MPI_SUCCESS;
}

// With locking on, a blocking call: in a shared section, when the window is the one this
// thread looked up last, before issue_general builds its frame.
[[gnu::noinline]] int issue_threaded(const char *call_name, MPI_Win win, const RmaCall &call) {
    WindowState *cached = window_cached(win);
    if (cached && issue_shared(*cached, call)) return MPI_SUCCESS;
    return issue_general(call_name, win, call, nullptr, false, cached != nullptr);
}

// A blocking call the at-once epoch runs now goes to the engine's shared-section path
// before issue_general builds its frame: with one thread (nothing to lock) serialized,
// as one thread is, from the entry point's own frame, and so does a call of the one open
// epoch the engine runs at once (rma_open: fence, PSCW, queued lock epochs); with
// locking on, issue_threaded.
[[gnu::always_inline]] inline int issue(const char *call_name, MPI_Win win, const RmaCall &call,
                                        MPI_Request *request, bool wants_request) {
    if (!wants_request) {
        if (WindowState *last = window_last(win)) {
            if (last->engine->rma_shared(call) || last->engine->rma_open(call)) return MPI_SUCCESS;
        } else if (threads::active()) {
            return issue_threaded(call_name, win, call);
        }
    }
    return issue_general(call_name, win, call, request, wants_request, false);
}

RmaCall make(RmaKind kind, const void *origin, MPI_Aint origin_count, MPI_Datatype origin_type,
             int target, MPI_Aint displacement, MPI_Aint target_count, MPI_Datatype target_type) {
    RmaCall call;
    call.kind = kind;
    call.origin = origin;
    call.origin_count = origin_count;
    call.origin_type = origin_type;
    call.target = target;
    call.displacement = displacement;
    call.target_count = target_count;
    call.target_type = target_type;
    return call;
}

// MPIX_*_notify: the call's notification index (none: null).
RmaCall &notifying(RmaCall &call, const int *notify) {
    if (notify) {
        call.notify = true;
        call.notify_index = *notify;
    }
    return call;
}

// The call's wrappers are inlined into their entry points (bindings), so that issue()'s
// one-thread path runs in the entry point's own frame.
[[gnu::always_inline]] inline int put(const char *name, const void *origin, MPI_Aint origin_count,
                                      MPI_Datatype origin_type, int target, MPI_Aint disp,
                                      MPI_Aint target_count, MPI_Datatype target_type, MPI_Win win,
                                      MPI_Request *request, bool r, const int *notify = nullptr) {
    RmaCall call = make(RmaKind::put, origin, origin_count, origin_type, target, disp,
                        target_count, target_type);
    return issue(name, win, notifying(call, notify), request, r);
}

[[gnu::always_inline]] inline int get(const char *name, void *origin, MPI_Aint origin_count,
                                      MPI_Datatype origin_type, int target, MPI_Aint disp,
                                      MPI_Aint target_count, MPI_Datatype target_type, MPI_Win win,
                                      MPI_Request *request, bool r, const int *notify = nullptr) {
    RmaCall call = make(RmaKind::get, nullptr, 0, MPI_DATATYPE_NULL, target, disp, target_count,
                        target_type);
    call.result = origin;
    call.result_count = origin_count;
    call.result_type = origin_type;
    return issue(name, win, notifying(call, notify), request, r);
}

[[gnu::always_inline]] inline int accumulate(const char *name, const void *origin,
                                             MPI_Aint origin_count, MPI_Datatype origin_type,
                                             int target, MPI_Aint disp, MPI_Aint target_count,
                                             MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                                             MPI_Request *request, bool r,
                                             const int *notify = nullptr) {
    RmaCall call = make(RmaKind::accumulate, origin, origin_count, origin_type, target, disp,
                        target_count, target_type);
    call.op = op;
    return issue(name, win, notifying(call, notify), request, r);
}

int get_accumulate(const char *name, const void *origin, MPI_Aint origin_count,
                   MPI_Datatype origin_type, void *result, MPI_Aint result_count,
                   MPI_Datatype result_type, int target, MPI_Aint disp, MPI_Aint target_count,
                   MPI_Datatype target_type, MPI_Op op, MPI_Win win, MPI_Request *request,
                   bool r) {
    RmaCall call = make(RmaKind::get_accumulate, origin, origin_count, origin_type, target, disp,
                        target_count, target_type);
    call.result = result;
    call.result_count = result_count;
    call.result_type = result_type;
    call.op = op;
    return issue(name, win, call, request, r);
}

[[gnu::always_inline]] inline int fetch_and_op(const char *name, const void *origin, void *result,
                                               MPI_Datatype type, int target, MPI_Aint disp,
                                               MPI_Op op, MPI_Win win) {
    RmaCall call = make(RmaKind::fetch_and_op, origin, 1, type, target, disp, 1, type);
    call.result = result;
    call.result_count = 1;
    call.result_type = type;
    call.op = op;
    return issue(name, win, call, nullptr, false);
}

[[gnu::always_inline]] inline int compare_and_swap(const char *name, const void *origin,
                                                   const void *compare, void *result,
                                                   MPI_Datatype type, int target, MPI_Aint disp,
                                                   MPI_Win win) {
    RmaCall call = make(RmaKind::compare_and_swap, origin, 1, type, target, disp, 1, type);
    call.compare = compare;
    call.result = result;
    call.result_count = 1;
    call.result_type = type;
    return issue(name, win, call, nullptr, false);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt. Notified
// RMA (the notified-RMA paper): MPIX_Put_notify, MPIX_Get_notify, MPIX_Accumulate_notify
// and their request forms are put/get/accumulate plus the target's notification
// counter, which grows by one once the data is there (put, accumulate) or was read (get).
#include "mpi/communication_bindings.inc"
