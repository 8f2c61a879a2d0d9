#include "common/status.hpp"

namespace nbrma {

const char *status_string(Status s) {
    switch (s) {
        case Status::ok: return "success";
        case Status::in_progress: return "in progress";
        case Status::err_arg: return "invalid argument";
        case Status::err_rank: return "invalid rank";
        case Status::err_range: return "access outside the target window";
        case Status::err_type: return "invalid or mismatched datatype";
        case Status::err_op: return "invalid reduction operation";
        case Status::err_count: return "invalid count";
        case Status::err_win: return "invalid window";
        case Status::err_request: return "invalid request pointer";
        case Status::err_assert: return "invalid assert";
        case Status::err_lock_type: return "invalid lock type";
        case Status::err_info: return "invalid info";
        case Status::err_info_value: return "invalid info value";
        case Status::err_comm: return "invalid communicator";
        case Status::err_notification: return "invalid notification";
        case Status::err_sync: return "wrong synchronization";
        case Status::err_conflict: return "conflicting epochs";
        case Status::err_unsupported: return "unsupported operation";
        case Status::err_no_memory: return "out of memory";
        case Status::err_transport: return "transport failure";
        case Status::err_other: return "internal error";
    }
    return "unknown status";
}

}  // namespace nbrma
