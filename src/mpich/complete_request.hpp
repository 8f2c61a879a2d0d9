// The cheapest complete MPI_Request MPICH has: what nbrma's opening calls hand back
// (their epoch is open at once, SC14 §VII-C), and closing calls whose epoch ended
// inside the call. MPI_Wait and MPI_Test, interposed (src/progress/interposed_waits.cpp),
// recognize it and return at once.
#ifndef NBRMA_MPICH_COMPLETE_REQUEST_HPP
#define NBRMA_MPICH_COMPLETE_REQUEST_HPP

#include <mpi.h>

#include <atomic>

namespace nbrma::mpich {

// An MPI_Request that is complete already, with an empty status.
int complete_request(MPI_Request *request);
namespace detail {
// MPICH's handle for a receive from MPI_PROC_NULL, once two of them came back equal (a
// built-in handle: nothing allocated, nothing to free); MPI_REQUEST_NULL until then.
__attribute__((visibility("hidden"))) inline std::atomic<MPI_Request> proc_null_receive{
    MPI_REQUEST_NULL};
}  // namespace detail
// The built-in handle complete_request hands out once known (a complete receive from
// MPI_PROC_NULL, which a wait ignoring statuses may simply set to MPI_REQUEST_NULL), else
// MPI_REQUEST_NULL.
inline MPI_Request complete_request_handle() {
    return detail::proc_null_receive.load(std::memory_order_relaxed);
}
// `request` is that handle.
inline bool is_complete_request(MPI_Request request) {
    return request != MPI_REQUEST_NULL && request == complete_request_handle();
}

}  // namespace nbrma::mpich

#endif  // NBRMA_MPICH_COMPLETE_REQUEST_HPP
