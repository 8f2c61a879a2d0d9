#include "mpich/complete_request.hpp"

namespace nbrma::mpich {

int complete_request(MPI_Request *request) {
    // A receive from MPI_PROC_NULL is exactly that, and MPICH hands it out without
    // allocating, where a generalized request would cost a handle and a poll on every
    // wait. MPICH 4.0 hands out one built-in handle for all of them: once seen twice,
    // it is handed out here directly (and MPI_Wait recognizes it: is_complete_request).
    // Only a built-in handle (MPICH's handle encoding: kind 01 in the top two bits): it is
    // never freed, so never reused for another request. An MPICH that allocated these
    // could hand a freed request's handle out twice; such handles are never taken, and
    // every complete request is then a receive of its own.
    const MPI_Request known = complete_request_handle();
    if (known != MPI_REQUEST_NULL) {
        *request = known;
        return MPI_SUCCESS;
    }
    const int error = PMPI_Irecv(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, request);
    if (error != MPI_SUCCESS) return error;
    static std::atomic<MPI_Request> last{MPI_REQUEST_NULL};
    constexpr unsigned kind_mask = 0xc0000000u, kind_builtin = 0x40000000u;
    const bool builtin = (static_cast<unsigned>(*request) & kind_mask) == kind_builtin;
    if (builtin && last.exchange(*request, std::memory_order_relaxed) == *request)
        detail::proc_null_receive.store(*request, std::memory_order_relaxed);
    return MPI_SUCCESS;
}

}  // namespace nbrma::mpich
