// One internal status type for all of nbrma (UCX style): 0 done, 1 posted/in
// progress, negatives grouped by what failed. The mapping to MPI error classes
// happens once, in src/mpi/errors.cpp.
#ifndef NBRMA_COMMON_STATUS_HPP
#define NBRMA_COMMON_STATUS_HPP

namespace nbrma {

enum class [[nodiscard]] Status : int {
    ok = 0,           // completed now
    in_progress = 1,  // posted; completion is reported later
    // errors: bad arguments
    err_arg = -1,
    err_rank = -2,
    err_range = -3,       // displacement/size outside the target window
    err_type = -4,        // bad or mismatched datatype
    err_op = -5,          // bad reduction op for the datatype
    err_count = -6,
    err_win = -7,         // not an nbrma window
    err_request = -8,     // bad request pointer
    err_assert = -9,
    err_lock_type = -10,
    err_info = -11,
    err_comm = -12,       // bad communicator (window creation)
    err_notification = -13,  // notification index or count outside the target's counters
    err_info_value = -14,    // a value nbrma does not understand for an info key it owns
    // errors: synchronization state
    err_sync = -20,       // call not allowed in the current epoch state
    err_conflict = -21,   // conflicting epochs (e.g. lock while already locked)
    // errors: resources and unsupported paths
    err_unsupported = -30,
    err_no_memory = -31,
    err_transport = -32,  // the transport failed (peer gone, syscall failed)
    err_other = -33,
};

constexpr bool is_error(Status s) { return static_cast<int>(s) < 0; }
constexpr bool is_done(Status s) { return s == Status::ok; }

const char *status_string(Status s);

}  // namespace nbrma

#endif
