// Synchronization calls. Every one is nonblocking inside the engine; the blocking
// MPI calls are the MPIX_ nonblocking ones plus a wait (DESIGN §3).
#include <sched.h>

#include "engine/progress.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "nbrma.h"

using namespace nbrma;
using namespace nbrma::mpi;

namespace {

// Looks the window up and progresses; on failure, raises and returns the code.
#define NBRMA_WINDOW(call, win, state)                                        \
    WindowState *state = window_find(win);                                    \
    do {                                                                      \
        if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);        \
    } while (0)

#define NBRMA_REQUEST_POINTER(call, win, request)                                       \
    do {                                                                                \
        if (!(request)) return raise(call, win, Status::err_request, "null request pointer"); \
    } while (0)

// Closing/flush calls: hand back a request, or wait for it.
int finish(const char *call, MPI_Win win, Status status, engine::Request *request,
           MPI_Request *handle) {
    if (is_error(status)) return raise(call, win, status);
    if (handle) return request_wrap(request, handle);
    return raise(call, win, request_wait(request));
}

int complete_request(MPI_Request *request) {
    // Opening calls return an already-complete request (SC14 §VII-C).
    engine::Request *done = engine::Request::create();
    done->finish(Status::ok);
    return request_wrap(done, request);
}

int unsupported(const char *call, MPI_Win win) {
    return raise(call, win, Status::err_unsupported,
                 "active target (fence, PSCW) is not implemented yet");
}

int lock(const char *call, int lock_type, int rank, int assert, MPI_Win win,
         MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    Status status = state->engine->lock(lock_type, rank, assert);
    if (is_error(status))
        return raise(call, win, status,
                     status == Status::err_sync ? "an epoch toward that rank is already open"
                                                : nullptr);
    return request ? complete_request(request) : MPI_SUCCESS;
}

int unlock(const char *call, int rank, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    engine::Request *pending = nullptr;
    Status status = state->engine->unlock(rank, &pending);
    if (status == Status::err_sync)
        return raise(call, win, status, "no lock epoch is open toward that rank");
    return finish(call, win, status, pending, request);
}

int lock_all(const char *call, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    Status status = state->engine->lock_all(assert);
    if (is_error(status))
        return raise(call, win, status,
                     status == Status::err_sync ? "another passive epoch is open" : nullptr);
    return request ? complete_request(request) : MPI_SUCCESS;
}

int unlock_all(const char *call, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    engine::Request *pending = nullptr;
    Status status = state->engine->unlock_all(&pending);
    if (status == Status::err_sync) return raise(call, win, status, "no lock_all epoch is open");
    return finish(call, win, status, pending, request);
}

// flush_local is served as flush: over shm remote completion is local completion.
int flush(const char *call, int rank, MPI_Win win, MPI_Request *request) {
    NBRMA_WINDOW(call, win, state);
    engine::Request *pending = nullptr;
    Status status = state->engine->flush(rank, &pending);
    if (status == Status::err_sync) return raise(call, win, status, "no passive epoch is open");
    return finish(call, win, status, pending, request);
}

}  // namespace

extern "C" {

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
    return lock("MPI_Win_lock", lock_type, rank, assert, win, nullptr);
}
int MPIX_Win_ilock(int lock_type, int rank, int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_ilock", win, request);
    return lock("MPIX_Win_ilock", lock_type, rank, assert, win, request);
}
int MPI_Win_unlock(int rank, MPI_Win win) { return unlock("MPI_Win_unlock", rank, win, nullptr); }
int MPIX_Win_iunlock(int rank, MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_iunlock", win, request);
    return unlock("MPIX_Win_iunlock", rank, win, request);
}
int MPI_Win_lock_all(int assert, MPI_Win win) {
    return lock_all("MPI_Win_lock_all", assert, win, nullptr);
}
int MPIX_Win_ilock_all(int assert, MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_ilock_all", win, request);
    return lock_all("MPIX_Win_ilock_all", assert, win, request);
}
int MPI_Win_unlock_all(MPI_Win win) { return unlock_all("MPI_Win_unlock_all", win, nullptr); }
int MPIX_Win_iunlock_all(MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_iunlock_all", win, request);
    return unlock_all("MPIX_Win_iunlock_all", win, request);
}
int MPI_Win_flush(int rank, MPI_Win win) { return flush("MPI_Win_flush", rank, win, nullptr); }
int MPI_Win_flush_local(int rank, MPI_Win win) {
    return flush("MPI_Win_flush_local", rank, win, nullptr);
}
int MPI_Win_flush_all(MPI_Win win) { return flush("MPI_Win_flush_all", -1, win, nullptr); }
int MPI_Win_flush_local_all(MPI_Win win) {
    return flush("MPI_Win_flush_local_all", -1, win, nullptr);
}
int MPIX_Win_iflush(int rank, MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_iflush", win, request);
    return flush("MPIX_Win_iflush", rank, win, request);
}
int MPIX_Win_iflush_local(int rank, MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_iflush_local", win, request);
    return flush("MPIX_Win_iflush_local", rank, win, request);
}
int MPIX_Win_iflush_all(MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_iflush_all", win, request);
    return flush("MPIX_Win_iflush_all", -1, win, request);
}
int MPIX_Win_iflush_local_all(MPI_Win win, MPI_Request *request) {
    NBRMA_REQUEST_POINTER("MPIX_Win_iflush_local_all", win, request);
    return flush("MPIX_Win_iflush_local_all", -1, win, request);
}

int MPI_Win_sync(MPI_Win win) {
    NBRMA_WINDOW("MPI_Win_sync", win, state);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    engine::progress_sweep();
    return MPI_SUCCESS;
}

// Active target arrives with its own issue; never fall back to MPICH's RMA.
int MPI_Win_fence(int, MPI_Win win) { return unsupported("MPI_Win_fence", win); }
int MPI_Win_start(MPI_Group, int, MPI_Win win) { return unsupported("MPI_Win_start", win); }
int MPI_Win_complete(MPI_Win win) { return unsupported("MPI_Win_complete", win); }
int MPI_Win_post(MPI_Group, int, MPI_Win win) { return unsupported("MPI_Win_post", win); }
int MPI_Win_wait(MPI_Win win) { return unsupported("MPI_Win_wait", win); }
int MPI_Win_test(MPI_Win win, int *) { return unsupported("MPI_Win_test", win); }
int MPIX_Win_ifence(int, MPI_Win win, MPI_Request *) { return unsupported("MPIX_Win_ifence", win); }
int MPIX_Win_istart(MPI_Group, int, MPI_Win win, MPI_Request *) {
    return unsupported("MPIX_Win_istart", win);
}
int MPIX_Win_icomplete(MPI_Win win, MPI_Request *) { return unsupported("MPIX_Win_icomplete", win); }
int MPIX_Win_ipost(MPI_Group, int, MPI_Win win, MPI_Request *) {
    return unsupported("MPIX_Win_ipost", win);
}
int MPIX_Win_iwait(MPI_Win win, MPI_Request *) { return unsupported("MPIX_Win_iwait", win); }

}  // extern "C"
