#include "mpi/errors.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mpi/state.hpp"
#include "mpich/entry_points.hpp"

// MPIX_ERR_INVALID_NOTIFICATION (nbrma.h): a class of its own, added at MPI_Init.
extern "C" {
int nbrma_err_invalid_notification = MPI_ERR_OTHER;
}

namespace nbrma::mpi {

// MPICH 4.0.2's MPI_Error_string crashes on an MPIR_Err_create_code code of a class
// added with MPI_Add_error_class, so errors of nbrma's own class carry their message in
// one of a ring of codes of that class, its string replaced at each use (MPI allows
// that): a code's text stays right until notification_codes more such errors.
static constexpr int notification_codes = 16;
static int notification_code[notification_codes];
static std::atomic<unsigned> notification_next{0};
static bool notification_ready = false;

void register_error_classes() {
    static bool done = false;
    if (done) return;
    done = true;
    int klass = MPI_ERR_OTHER;
    if (PMPI_Add_error_class(&klass) != MPI_SUCCESS) return;
    PMPI_Add_error_string(klass,
                          "MPIX_ERR_INVALID_NOTIFICATION: notification index or count outside "
                          "the window's notification counters");
    nbrma_err_invalid_notification = klass;
    for (int &code : notification_code)
        if (PMPI_Add_error_code(klass, &code) != MPI_SUCCESS) return;
    notification_ready = true;
}

int error_class(Status status) {
    switch (status) {
        case Status::ok:
        case Status::in_progress: return MPI_SUCCESS;
        case Status::err_arg: return MPI_ERR_ARG;
        case Status::err_rank: return MPI_ERR_RANK;
        case Status::err_range: return MPI_ERR_RMA_RANGE;
        case Status::err_type: return MPI_ERR_TYPE;
        case Status::err_op: return MPI_ERR_OP;
        case Status::err_count: return MPI_ERR_COUNT;
        case Status::err_win: return MPI_ERR_WIN;
        case Status::err_request: return MPI_ERR_REQUEST;
        case Status::err_assert: return MPI_ERR_ASSERT;
        case Status::err_lock_type: return MPI_ERR_LOCKTYPE;
        case Status::err_info: return MPI_ERR_INFO;
        case Status::err_info_value: return MPI_ERR_INFO_VALUE;
        case Status::err_comm: return MPI_ERR_COMM;
        case Status::err_notification: return nbrma_err_invalid_notification;
        case Status::err_sync: return MPI_ERR_RMA_SYNC;
        case Status::err_conflict: return MPI_ERR_RMA_CONFLICT;
        case Status::err_unsupported: return MPI_ERR_UNSUPPORTED_OPERATION;
        case Status::err_no_memory: return MPI_ERR_NO_MEM;
        case Status::err_transport: return MPI_ERR_OTHER;
        case Status::err_other: return MPI_ERR_INTERN;
    }
    return MPI_ERR_INTERN;
}

// MPICH builds its own error codes with MPIR_Err_create_code: the code carries the
// class and an error-stack message, so MPI_Error_string reads "<class text>, error
// stack: <call>(<line>): <message>". MPICH 4.0.2's MPI_Add_error_code path cannot carry
// a message for a predefined class (its MPI_Error_string prints garbage), so nbrma
// uses MPICH's own routine when the library exports it (weak: the class alone otherwise).
extern "C" int MPIR_Err_create_code(int last_code, int fatal, const char function[], int line,
                                    int error_class, const char generic[], const char specific[],
                                    ...) __attribute__((weak));

namespace {
int error_code(const char *call, Status status, const char *detail) {
    const int klass = error_class(status);
    if (status == Status::err_win && !detail)
        detail = mpich::process_resolves_to_nbrma()
                     ? "not a window (never created, or freed)"
                     : "not a window of nbrma's: this process runs MPICH's MPI_Win_* calls, "
                       "not nbrma's; link libnbrma before MPICH (mpicc.mpich app.c "
                       "$(pkg-config --libs nbrma)) or LD_PRELOAD it";
    if (status == Status::err_notification && notification_ready) {
        const int code = notification_code[notification_next.fetch_add(1) % notification_codes];
        std::string text = std::string("Invalid notification, error stack: ") + call + ": " +
                           status_string(status) + (detail ? ": " : "") + (detail ? detail : "");
        text.resize(std::min<std::size_t>(text.size(), MPI_MAX_ERROR_STRING - 1));
        PMPI_Add_error_string(code, text.c_str());
        return code;
    }
    if (!MPIR_Err_create_code) return klass;
    return MPIR_Err_create_code(MPI_SUCCESS, 0, nullptr, 0, klass, "**fail", "%s: %s%s%s",
                                call, status_string(status), detail ? ": " : "",
                                detail ? detail : "");
}

// A fatal handler (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT) is not called through MPICH,
// whose message would name MPI_Win_call_errhandler: nbrma says which call failed, as
// MPICH does for its own calls, and aborts.
[[noreturn]] void abort_in(const char *call, int code) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0, rank = 0;
    PMPI_Error_string(code, text, &length);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "Abort(%d) on node %d: Fatal error in %s: %s\n", code, rank, call, text);
    std::fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
}

bool fatal(MPI_Errhandler handler) {
    const bool is_fatal = handler == MPI_ERRORS_ARE_FATAL || handler == MPI_ERRORS_ABORT;
    if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
    return is_fatal;
}
}  // namespace

int raise(const char *call, MPI_Win win, Status status, const char *detail) {
    if (!is_error(status)) return MPI_SUCCESS;
    const int code = error_code(call, status, detail);
    // A freed (or never created) window has no error handler: MPI_COMM_WORLD's serves.
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    if (win != MPI_WIN_NULL && window_find(win)) {
        PMPI_Win_get_errhandler(win, &handler);
        if (fatal(handler)) abort_in(call, code);
        PMPI_Win_call_errhandler(win, code);
    } else {
        PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
        if (fatal(handler)) abort_in(call, code);
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, code);
    }
    return code;
}

std::string rank_outside(int rank, int ranks) {
    return "target rank " + std::to_string(rank) + " of a window of " + std::to_string(ranks) +
           (ranks == 1 ? " rank (0" : " ranks (0 to " + std::to_string(ranks - 1)) +
           ", or MPI_PROC_NULL)";
}

int raise_comm(const char *call, MPI_Comm comm, Status status, const char *detail) {
    if (!is_error(status)) return MPI_SUCCESS;
    const int code = error_code(call, status, detail);
    if (comm == MPI_COMM_NULL) comm = MPI_COMM_WORLD;
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(comm, &handler);
    if (fatal(handler)) abort_in(call, code);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

}  // namespace nbrma::mpi
