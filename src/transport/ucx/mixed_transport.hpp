// The transport of a window whose peers are partly node-local, partly remote
// (doc/design.md §2: local peers over shm, remote peers over ucx).
//
// CPU atomics and NIC atomics are not atomic with respect to each other, so every
// atomic — on control regions (lock words, counters, accumulate lock) and on window
// memory alike — goes through UCX, for local peers too (UCX reaches them through its
// node-local transports). Only plain data moves over shm: window-region put/get and
// control-region put/get (grant and queue slots, directory headers — words that are never
// the target of an atomic) to node-local peers.
//
// Ordering: a shm operation is complete when it returns, so anything posted after it
// is ordered after it. The other way round, a fence toward a local peer with UCX
// operations possibly in flight to it makes the next shm operation to that peer wait
// for a UCX flush of that endpoint first.
#ifndef NBRMA_TRANSPORT_UCX_MIXED_TRANSPORT_HPP
#define NBRMA_TRANSPORT_UCX_MIXED_TRANSPORT_HPP

#include <memory>
#include <vector>

#include "transport/shm/shm_transport.hpp"
#include "transport/ucx/ucx_transport.hpp"

namespace nbrma::transport::ucx {

class MixedTransport final : public Transport {
  public:
    // local[r]: rank r shares our node (shm reaches it).
    MixedTransport(std::unique_ptr<shm::ShmTransport> shm, std::unique_ptr<UcxTransport> ucx,
                   std::vector<bool> local);

    int size() const override { return ucx_->size(); }
    int rank() const override { return ucx_->rank(); }
    void *local_control() override { return ucx_->local_control(); }
    Status put(int peer, const void *source, std::size_t length, RemoteAddress target,
               Completion *completion) override;
    Status get(int peer, void *destination, std::size_t length, RemoteAddress source,
               Completion *completion) override;
    Status atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                  std::uint64_t compare, std::uint64_t *result, Completion *completion) override {
        return ucx_->atomic(peer, op, target, operand, compare, result, completion);
    }
    bool supports_atomics(int peer, Region region) const override {
        return ucx_->supports_atomics(peer, region);
    }
    Status atomic32(int peer, AtomicOp op, RemoteAddress target, std::uint32_t operand,
                    std::uint32_t compare, std::uint32_t *result, Completion *completion) override {
        return ucx_->atomic32(peer, op, target, operand, compare, result, completion);
    }
    bool supports_atomics32(int peer, Region region) const override {
        return ucx_->supports_atomics32(peer, region);
    }
    bool atomic_aligned(int peer, RemoteAddress address, std::size_t width) override {
        return ucx_->atomic_aligned(peer, address, width);
    }
    bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) override {
        return peer >= 0 && peer < size() && local_[peer] && shm_->peek_control(peer, offset, value);
    }
    Status fence(int peer) override;
    Status flush(int peer, Completion *completion) override {
        return ucx_->flush(peer, completion);
    }
    int poll() override { return ucx_->poll(); }
    Capabilities capabilities() const override { return {false, true, false, true}; }
    int event_fd() const override { return ucx_->event_fd(); }
    bool arm() override { return ucx_->arm(); }
    Status attach(const void *base, std::uint64_t size) override {
        return ucx_->attach(base, size);
    }
    Status detach(const void *base) override { return ucx_->detach(base); }
    // Both read the directory ucx_ writes: local peers' with CMA, remote ones' with gets.
    Status check_attached(int peer, std::uint64_t low, std::uint64_t high) override {
        return peer >= 0 && peer < size() && local_[peer] ? shm_->check_attached(peer, low, high)
                                                          : ucx_->check_attached(peer, low, high);
    }

  private:
    // Whether (peer, region) goes over shm; settles a pending fence toward peer first.
    bool over_shm(int peer, Status *status);

    std::unique_ptr<shm::ShmTransport> shm_;
    std::unique_ptr<UcxTransport> ucx_;
    std::vector<bool> local_;
    std::vector<bool> fenced_;  // a fence toward this local peer awaits its UCX flush
};

}  // namespace nbrma::transport::ucx

#endif
