// nbrma's own UCP context and worker (MPICH's are private), the endpoint cache and
// memory registration. One UcxWorker serves every UCX window of a process (the MPI
// layer keeps one for the process; unit tests make several in one process).
//
// Configuration: UCX reads its usual UCX_* variables; NBRMA_UCX_* variables (e.g.
// NBRMA_UCX_TLS) override them for nbrma's context only, so nbrma can use other
// transports than MPICH. A `tls` passed to create() overrides both (unit tests).
#ifndef NBRMA_TRANSPORT_UCX_UCX_WORKER_HPP
#define NBRMA_TRANSPORT_UCX_UCX_WORKER_HPP

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace nbrma::transport::ucx {

Status status_from_ucs(ucs_status_t status);

// Whether ucp_worker_fence orders an endpoint's operations. Before UCX 1.14 it fences
// each transport interface on its own (openucx/ucx#8596 made it flush every lane where
// an endpoint uses several for RMA): an endpoint whose RMA and atomics go over two
// network lanes (multi-rail InfiniBand, say) is not ordered by it. `strong`: the
// running UCX fences across lanes itself (1.14 and later). `endpoint_info`: what
// ucp_ep_print_info printed for the endpoint; it is ordered when at most one of its
// lanes that carry RMA, atomics or active messages (UCX's software RMA) is a network
// transport (self and shared-memory transports complete in the call). Text that names
// no lane is taken as unordered.
bool fence_orders(bool strong, const char *endpoint_info);

// A registered memory range and its packed remote key. Unmapped on destruction (memory
// UCX allocated is freed with it).
class UcxRegistration {
  public:
    UcxRegistration() = default;
    UcxRegistration(const UcxRegistration &) = delete;
    UcxRegistration &operator=(const UcxRegistration &) = delete;
    ~UcxRegistration();

    std::uint64_t base() const { return base_; }
    std::uint64_t length() const { return length_; }
    const std::vector<std::uint8_t> &rkey() const { return rkey_; }

  private:
    friend class UcxWorker;
    ucp_context_h context_ = nullptr;
    ucp_mem_h memh_ = nullptr;
    std::uint64_t base_ = 0;
    std::uint64_t length_ = 0;
    std::vector<std::uint8_t> rkey_;
};

class UcxWorker {
  public:
    // A context (RMA + 64-bit atomics) and one worker; `tls`, if non-null, forces UCX_TLS.
    // `wakeup` adds UCP_FEATURE_WAKEUP: event_fd() and arm() (nbrma's windows always
    // ask for it: threads that serve peers sleep on the worker's events).
    static Status create(const char *tls, std::unique_ptr<UcxWorker> *out, bool wakeup = false);
    UcxWorker(const UcxWorker &) = delete;
    UcxWorker &operator=(const UcxWorker &) = delete;
    ~UcxWorker();

    ucp_worker_h worker() const { return worker_; }
    const std::vector<std::uint8_t> &address() const { return address_; }

    // The endpoint to the worker at `address` (ours included: UCX's self transport),
    // created on first use and cached for the life of the worker. Creation is
    // nonblocking; wireup completes under progress (see flush_all()).
    // *fence_orders (if given): whether ucp_worker_fence orders what the endpoint carries
    // (fence_orders, decided at its creation); where it does not, a fence toward its peer
    // is a flush of the endpoint. NBRMA_TEST_UCX_FENCE=flush: no endpoint is.
    Status connect(const std::uint8_t *address, std::size_t length, ucp_ep_h *ep,
                   bool *fence_orders = nullptr);

    // Registers [base, base + length) for remote access; length 0 registers nothing.
    Status map(void *base, std::size_t length, std::unique_ptr<UcxRegistration> *out);
    // Allocates `length` bytes (more than 0) through UCX and registers them
    // (UCP_MEM_MAP_ALLOCATE): memory UCX's shared-memory transports (sysv, posix) reach
    // with loads, stores and CPU atomics, where memory registered by map() takes
    // cross-memory attach or active messages served by the owner's worker. Not zeroed.
    Status allocate(std::size_t length, std::unique_ptr<UcxRegistration> *out);

    // Progresses until `request` (a ucp_*_nbx result whose callback frees nothing)
    // completes; frees it. For setup paths only (wireup, rkey fetch).
    Status wait(ucs_status_ptr_t request);

    int progress() { return static_cast<int>(ucp_worker_progress(worker_)); }

    // The worker's event descriptor (ucp_worker_get_efd), or -1 without wakeup support.
    int event_fd() const { return event_fd_; }
    // ucp_worker_arm: true when armed (poll event_fd() before progressing again), false
    // when events are pending (progress first).
    bool arm() { return event_fd_ < 0 || ucp_worker_arm(worker_) == UCS_OK; }

  private:
    UcxWorker() = default;
    Status register_memory(void *base, std::size_t length, bool allocate,
                           std::unique_ptr<UcxRegistration> *out);
    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    int event_fd_ = -1;
    std::vector<std::uint8_t> address_;
    struct Endpoint {
        ucp_ep_h ep;
        bool fence_orders;
    };
    std::map<std::string, Endpoint> endpoints_;  // by the peer's worker address
    bool strong_fence_ = false;  // the running UCX fences across lanes (1.14 and later)
};

}  // namespace nbrma::transport::ucx

#endif
