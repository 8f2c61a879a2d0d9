#include "mpi/errors.hpp"


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

// MPICH builds its own error codes with MPIR_Err_create_code: the code carries the
// class and an error-stack message, so MPI_Error_string reads "<class text>, error
// stack: <call>(<line>): <message>". MPICH 4.0.2's MPI_Add_error_code path cannot carry
// a message for a predefined class (its MPI_Error_string prints garbage), so nbrma
// uses MPICH's own routine when the library exports it (weak: the class alone otherwise).
extern "C" int MPIR_Err_create_code(int last_code, int fatal, const char function[], int line,
                                    int error_class, const char generic[], const char specific[],
                                    ...) __attribute__((weak));

int raise(const char *call, MPI_Win win, Status status, const char *detail) {
    if (!is_error(status)) return MPI_SUCCESS;
    const int klass = error_class(status);
    int code = klass;
    if (MPIR_Err_create_code)
        code = MPIR_Err_create_code(MPI_SUCCESS, 0, call, __LINE__, klass, "**fail",
                                    "%s: %s%s%s", call, status_string(status),
                                    detail ? ": " : "", detail ? detail : "");
    if (win != MPI_WIN_NULL)
        PMPI_Win_call_errhandler(win, code);
    else
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, code);
    return code;
}

}  // namespace nbrma::mpi
