#include "mpi/errors.hpp"

#include <cstdio>
#include <map>

namespace nbrma::mpi {

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
        case Status::err_sync: return MPI_ERR_RMA_SYNC;
        case Status::err_conflict: return MPI_ERR_RMA_CONFLICT;
        case Status::err_unsupported: return MPI_ERR_UNSUPPORTED_OPERATION;
        case Status::err_no_memory: return MPI_ERR_NO_MEM;
        case Status::err_transport: return MPI_ERR_OTHER;
        case Status::err_other: return MPI_ERR_INTERN;
    }
    return MPI_ERR_INTERN;
}

namespace {
// One dynamic error code per class; its string is rewritten before each raise so
// MPI_Error_string names the failing call and the cause.
int code_for(int error_class) {
    static std::map<int, int> codes;
    auto found = codes.find(error_class);
    if (found != codes.end()) return found->second;
    int code = error_class;
    if (PMPI_Add_error_code(error_class, &code) != MPI_SUCCESS) code = error_class;
    codes[error_class] = code;
    return code;
}
}  // namespace

int raise(const char *call, MPI_Win win, Status status, const char *detail) {
    if (!is_error(status)) return MPI_SUCCESS;
    const int klass = error_class(status);
    const int code = code_for(klass);
    if (code != klass) {
        char message[MPI_MAX_ERROR_STRING];
        std::snprintf(message, sizeof message, "%s: %s%s%s", call, status_string(status),
                      detail ? ": " : "", detail ? detail : "");
        PMPI_Add_error_string(code, message);
    }
    if (win != MPI_WIN_NULL)
        PMPI_Win_call_errhandler(win, code);
    else
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, code);
    return code;
}

}  // namespace nbrma::mpi
