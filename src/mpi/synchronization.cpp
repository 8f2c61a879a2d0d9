// Synchronization calls. Every one is nonblocking inside the engine; the blocking
// MPI calls are the MPIX_ nonblocking ones plus a wait (doc/design.md §3).
#include <sched.h>

#include <vector>

#include "mpi/bindings.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "mpich/pmpi.hpp"
#include "nbrma.h"
#include "progress/progress.hpp"

using namespace nbrma;
using namespace nbrma::mpi;

namespace {

// Looks the window up and progresses; on failure, raises and returns the code.
#define NBRMA_WINDOW(call, win, state)                                 \
    WindowState *state = window_find(win);                             \
    do {                                                               \
        if (!state) return raise(call, MPI_WIN_NULL, Status::err_win); \
    } while (0)

// Closing/flush calls: hand back a request, or wait for it. No request: the call
// completed inside the engine (a lock epoch taken at once, engine/window.hpp).
int finish(const char *call, MPI_Win win, Status status, engine::Request *request,
           MPI_Request *handle) {
    if (is_error(status)) return raise(call, win, status);
    if (!request) return handle ? mpich::complete_request(handle) : MPI_SUCCESS;
    if (handle) return request_wrap(request, handle);
    return raise(call, win, request_wait(request));
}

// An MPI group as window ranks (PSCW groups may be subsets and permutations), in
// `*ranks` (the calling thread's: start and post reuse its storage, as they do the
// ranks 0 .. n - 1 they translate).
Status window_ranks(WindowState *state, MPI_Group group, std::vector<int> **ranks) {
    // (initial-exec: no __tls_get_addr call at every start and post)
    __attribute__((tls_model("initial-exec"))) static thread_local std::vector<int> in, out;
    *ranks = &out;
    if (group == MPI_GROUP_NULL) return Status::err_arg;
    int n = 0;
    if (PMPI_Group_size(group, &n) != MPI_SUCCESS) return Status::err_arg;
    for (int i = static_cast<int>(in.size()); i < n; ++i) in.push_back(i);
    out.resize(n);
    if (n > 0 &&
        PMPI_Group_translate_ranks(group, n, in.data(), state->group, out.data()) != MPI_SUCCESS)
        return Status::err_arg;
    for (int rank : out)
        if (rank == MPI_UNDEFINED) return Status::err_rank;
    return Status::ok;
}

const char *sync_detail(Status status, const char *sync, const char *conflict) {
    if (status == Status::err_sync) return sync;
    if (status == Status::err_conflict) return conflict;
    if (status == Status::err_rank) return "a group member is not in the window's group";
    return nullptr;
}

int fence(const char *call, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    engine::Request *pending = nullptr;
    Status status = locked([&] { return state->engine->fence(assert, &pending); });
    if (status == Status::err_sync) return raise(call, win, status, "a lock or PSCW epoch is open");
    return finish(call, win, status, pending, request);
}

int start(const char *call, MPI_Group group, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    std::vector<int> *ranks = nullptr;
    Status status = window_ranks(state, group, &ranks);
    if (!is_error(status)) status = locked([&] { return state->engine->start(*ranks, assert); });
    if (is_error(status))
        return raise(call, win, status,
                     sync_detail(status,
                                 "an access epoch (start, lock, or a fence epoch with calls) "
                                 "is already open",
                                 nullptr));
    return request ? mpich::complete_request(request) : MPI_SUCCESS;
}

int complete(const char *call, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    engine::Request *pending = nullptr;
    Status status = locked([&] { return state->engine->complete(&pending); });
    if (status == Status::err_sync) return raise(call, win, status, "no access epoch was started");
    return finish(call, win, status, pending, request);
}

int post(const char *call, MPI_Group group, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    std::vector<int> *ranks = nullptr;
    Status status = window_ranks(state, group, &ranks);
    if (!is_error(status)) status = locked([&] { return state->engine->post(*ranks, assert); });
    if (is_error(status))
        return raise(call, win, status,
                     sync_detail(status, "an exposure epoch is already open",
                                 "the window is locked (a window is never locked and "
                                 "exposed at once)"));
    return request ? mpich::complete_request(request) : MPI_SUCCESS;
}

int wait(const char *call, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    engine::Request *pending = nullptr;
    Status status = locked([&] { return state->engine->wait(&pending); });
    if (status == Status::err_sync) return raise(call, win, status, "no exposure epoch was posted");
    return finish(call, win, status, pending, request);
}

int lock(const char *call, int lock_type, int rank, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    if (shared_call(*state, [&] { return state->engine->lock_shared(lock_type, rank, assert); }))
        return request ? mpich::complete_request(request) : MPI_SUCCESS;
    Status status = locked([&] { return state->engine->lock(lock_type, rank, assert); });
    if (status == Status::err_rank)
        return raise(call, win, status, rank_outside(rank, state->engine->size()).c_str());
    if (is_error(status))
        return raise(
            call, win, status,
            status == Status::err_sync ? "an epoch toward that rank is already open" : nullptr);
    return request ? mpich::complete_request(request) : MPI_SUCCESS;
}

int unlock(const char *call, int rank, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    if (shared_call(*state, [&] { return state->engine->unlock_shared(rank); }))
        return finish(call, win, Status::ok, nullptr, request);
    engine::Request *pending = nullptr;
    Status status = locked([&] { return state->engine->unlock(rank, &pending); });
    if (status == Status::err_rank)
        return raise(call, win, status, rank_outside(rank, state->engine->size()).c_str());
    if (status == Status::err_sync)
        return raise(call, win, status, "no lock epoch is open toward that rank");
    return finish(call, win, status, pending, request);
}

int lock_all(const char *call, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    if (shared_call(*state, [&] { return state->engine->lock_all_shared(assert); }))
        return request ? mpich::complete_request(request) : MPI_SUCCESS;
    Status status = locked([&] { return state->engine->lock_all(assert); });
    if (is_error(status))
        return raise(call, win, status,
                     status == Status::err_sync ? "another passive epoch is open" : nullptr);
    return request ? mpich::complete_request(request) : MPI_SUCCESS;
}

int unlock_all(const char *call, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    if (shared_call(*state, [&] { return state->engine->unlock_all_shared(); }))
        return finish(call, win, Status::ok, nullptr, request);
    engine::Request *pending = nullptr;
    Status status = locked([&] { return state->engine->unlock_all(&pending); });
    if (status == Status::err_sync) return raise(call, win, status, "no lock_all epoch is open");
    return finish(call, win, status, pending, request);
}

// A blocking flush in a shared section (shared_call), with locking on.
[[gnu::always_inline]] inline bool flush_in_shared(WindowState &state, int rank) {
    return shared_call(
        state, [&] { return state.engine->flush_concurrent(rank); },
        [&] { return state.engine->flush_shared(rank); });
}

// local: flush_local (completion at the origin), else completion at the target.
// `rank` -1 flushes every target (flush_all): MPI_PROC_NULL (also -1 in MPICH) never
// gets here (the entry point's proc_null check), nor does another negative rank
// (target_flush). `tried`: target_flush offered it to flush_in_shared already.
int flush(const char *call, int rank, MPI_Win win, MPI_Request *request, bool local = false,
          bool tried = false) {
    NBRMA_WINDOW(call, win, state);
    if (!request && !tried && flush_in_shared(*state, rank)) return MPI_SUCCESS;
    engine::Request *pending = nullptr;
    Status status = locked([&] { return state->engine->flush(rank, &pending, local); });
    if (status == Status::ok && !pending && !request) return MPI_SUCCESS;  // done already
    if (status == Status::err_rank)
        return raise(call, win, status, rank_outside(rank, state->engine->size()).c_str());
    if (status == Status::err_sync) return raise(call, win, status, "no passive epoch is open");
    return finish(call, win, status, pending, request);
}

[[gnu::noinline]] int negative_rank(const char *call, int rank, MPI_Win win) {
    const WindowState *state = window_find(win);
    return raise(call, win, Status::err_rank,
                 state ? rank_outside(rank, state->engine->size()).c_str() : nullptr);
}

// With locking on, a blocking flush: in a shared section, when the window is the one this
// thread looked up last, before flush() builds its frame.
[[gnu::noinline]] int flush_threaded(const char *call, int rank, MPI_Win win, bool local) {
    WindowState *cached = window_cached(win);
    if (cached && flush_in_shared(*cached, rank)) return MPI_SUCCESS;
    return flush(call, rank, win, nullptr, local, cached != nullptr);
}

// (inlined into its entry points: one call fewer on a flush's path). The engine's
// shared-section flush first, before flush() builds its frame: with one thread (nothing
// to lock) serialized, as one thread is, from the entry point's own frame; with locking
// on, flush_threaded.
[[gnu::always_inline]] inline int target_flush(const char *call, int rank, MPI_Win win,
                                               MPI_Request *request, bool local = false) {
    if (rank < 0) return negative_rank(call, rank, win);  // not "every target"
    if (!request) {
        if (WindowState *last = window_last(win)) {
            if (last->engine->flush_shared(rank, local)) return MPI_SUCCESS;
        } else if (threads::active()) {
            return flush_threaded(call, rank, win, local);
        }
    }
    return flush(call, rank, win, request, local);
}

int win_sync(const char *call, MPI_Win win) {
    NBRMA_WINDOW(call, win, state);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    engine::progress_sweep();
    return MPI_SUCCESS;
}

int win_test(const char *call, MPI_Win win, int *flag) {
    NBRMA_WINDOW(call, win, state);
    if (!flag) return raise(call, win, Status::err_arg, "null flag pointer");
    bool done = false;
    Status status = locked([&] { return state->engine->test(&done); });
    if (status == Status::err_sync) return raise(call, win, status, "no exposure epoch was posted");
    if (is_error(status)) return raise(call, win, status);
    *flag = done ? 1 : 0;
    return MPI_SUCCESS;
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/synchronization_bindings.inc"
