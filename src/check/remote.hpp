// The race checker's reach into ranks on another node (or, with NBRMA_VIRTUAL_NODES,
// another virtual node): their areas (race_log.hpp) and clock slots, through nbrma's
// process UCX worker, with UCX's RMA and atomics (the peer's CPU does nothing where
// the network does them; where UCX emulates them, over tcp, the peer serves them in
// the progress its UCX windows get anyway). Every call holds the progress lock, which
// serializes the worker.
#ifndef NBRMA_CHECK_REMOTE_HPP
#define NBRMA_CHECK_REMOTE_HPP

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>

#include "common/status.hpp"

namespace nbrma::transport::ucx {
class UcxWorker;
class UcxRegistration;
}  // namespace nbrma::transport::ucx

namespace nbrma::check {

// A peer's memory region: the endpoint to its worker, the region's remote key and
// address. Empty (no endpoint): not reached through UCX.
struct Remote {
    ucp_ep_h ep = nullptr;
    ucp_rkey_h rkey = nullptr;
    std::uint64_t address = 0;
    explicit operator bool() const { return ep != nullptr; }
};

namespace remote {

// Bytes [offset, offset + bytes) of the region, read into `to`; written from `from`
// and complete at the peer when the call returns.
Status get(transport::ucx::UcxWorker &worker, const Remote &region, std::uint64_t offset, void *to,
           std::size_t bytes);
Status put(transport::ucx::UcxWorker &worker, const Remote &region, std::uint64_t offset,
           const void *from, std::size_t bytes);
// A get left in flight: `*request` is null when it completed at once (else test() it).
Status get_start(const Remote &region, std::uint64_t offset, void *to, std::size_t bytes,
                 void **request);
// A request get_start left: in_progress, or its result (the request freed).
Status test(void *request);
// The spin lock (a 32-bit word, 0 free, 1 held) at the region's start, taken and freed
// with UCX compare-and-swap: where a window's checker reaches some area through UCX,
// every area's lock is taken this way, since CPU and network atomics are not atomic
// with respect to each other.
Status lock(transport::ucx::UcxWorker &worker, const Remote &region);
Status unlock(transport::ucx::UcxWorker &worker, const Remote &region);

}  // namespace remote
}  // namespace nbrma::check

#endif
