// The sim transport (doc/design.md §2): many ranks inside one test process, with a
// deterministic scheduler the test drives. Nothing happens by itself: every put, get
// and atomic is queued as an in-flight operation and is performed at the target only
// when the test calls deliver(); its completion then becomes pollable by the origin,
// whose poll() runs the Completion callbacks. The test chooses which in-flight
// operation to deliver next, so it can delay, reorder and interleave deliveries, and
// (with exhaustive or random choices) explore the interleavings a real network allows.
//
// Semantics, per the transport contract:
//  - put: the source bytes are copied at post time (as a buffering transport would);
//    they are written into the target memory at delivery.
//  - get: the target bytes are read at delivery and written into the destination then.
//  - atomic: performed at delivery with AtomicOp semantics; the previous value goes to
//    *result (if non-null); compare_swap writes only on match. Target word must be
//    8-byte aligned (err_arg otherwise).
//  - fence(peer): operations from this origin to `peer` posted after the fence are not
//    deliverable until every operation posted to `peer` before it has been delivered.
//  - Local completion (set_early_local_completion): by default an operation completes
//    at delivery, at the origin and the target at once. With early local completion a
//    put, and an atomic without a result, completes at the origin when posted (its
//    completion is pollable at once, as a buffering network reports a send done) while
//    its data reaches the target only at delivery: then only a flush says it arrived.
//  - flush(peer, c): returns ok at once if nothing posted to `peer` is still in flight;
//    otherwise queues an in-flight "flush" entry that becomes deliverable only once all
//    earlier operations to `peer` are delivered; delivering it queues `c`'s completion.
//  - All put/get/atomic return Status::in_progress (never ok), or an error with nothing
//    posted: err_rank (bad peer), err_range (outside the region), err_arg (misaligned
//    atomic, null buffer with non-zero length).
//  - poll() runs every queued completion of this rank (on_complete(Status::ok)) and
//    returns how many callbacks ran (operations posted with a null completion run none).
//  - local_control() is the rank's own control memory: direct loads/stores.
//
// Single-threaded: a SimWorld and its endpoints must be used from one thread.
#ifndef NBRMA_TRANSPORT_SIM_SIM_TRANSPORT_HPP
#define NBRMA_TRANSPORT_SIM_SIM_TRANSPORT_HPP

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace nbrma::transport::sim {

class SimWorld;

// One rank's endpoint. Obtained from SimWorld::endpoint(); owned by the world.
class SimTransport final : public Transport {
  public:
    SimTransport(SimWorld &world, int rank) : world_(world), rank_(rank) {}

    int size() const override;
    int rank() const override { return rank_; }
    void *local_control() override;

    Status put(int peer, const void *source, std::size_t length, RemoteAddress target,
               Completion *completion) override;
    Status get(int peer, void *destination, std::size_t length, RemoteAddress source,
               Completion *completion) override;
    Status atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                  std::uint64_t compare, std::uint64_t *result, Completion *completion) override;
    bool supports_atomics(int peer, Region region) const override;
    // A direct load of the peer's control word (as over shared memory).
    bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) override;
    Status fence(int peer) override;
    Status flush(int peer, Completion *completion) override;
    int poll() override;
    Capabilities capabilities() const override;

    // Completions delivered but not yet run by poll().
    std::size_t pending_completions() const { return completions_.size(); }

  private:
    friend class SimWorld;
    SimWorld &world_;
    int rank_;
    std::deque<Completion *> completions_;
};

class SimWorld {
  public:
    enum class OpKind : std::uint8_t { put, get, atomic, flush };

    // One in-flight operation, as the test may inspect it.
    struct Op {
        OpKind kind;
        int origin;
        int target;
        Region region;
        std::uint64_t offset;
        std::size_t length;
        std::vector<std::uint8_t> data;  // put: the source bytes (copied at post)
        void *destination;               // get: where the bytes go
        AtomicOp atomic_op;
        std::uint64_t operand;
        std::uint64_t compare;
        std::uint64_t *result;
        Completion *completion;
        std::uint64_t fence_epoch;       // origin's fence count toward target at post
        std::uint64_t serial;            // global posting number
    };

    SimWorld(int nranks, std::size_t control_bytes, std::size_t window_bytes);
    SimWorld(const SimWorld &) = delete;
    SimWorld &operator=(const SimWorld &) = delete;
    ~SimWorld();

    int size() const { return nranks_; }
    // See the header comment; affects operations posted from now on.
    void set_early_local_completion(bool on) { early_local_ = on; }
    // Whether the endpoints report Capabilities::fence_orders (fence() orders as the
    // header comment says either way); off by default.
    void set_fence_orders(bool on) { fence_orders_ = on; }
    Transport &endpoint(int rank);
    SimTransport &sim_endpoint(int rank);
    const SimTransport &sim_endpoint(int rank) const;

    // The rank's memory (for checks and for local access).
    std::uint8_t *memory(int rank, Region region);
    const std::uint8_t *memory(int rank, Region region) const;
    std::size_t region_bytes(Region region) const;
    std::uint64_t load64(int rank, Region region, std::uint64_t offset) const;

    // In-flight operations (posted, not yet performed at the target), in posting order.
    std::size_t in_flight() const { return ops_.size(); }
    const Op &op(std::size_t index) const { return ops_.at(index); }
    bool deliverable(std::size_t index) const;
    std::vector<std::size_t> deliverable_indices() const;
    // Perform it at the target now; its completion becomes pollable by the origin.
    void deliver(std::size_t index);
    // Pick a uniformly random deliverable op and deliver it; false if none.
    bool deliver_any(std::mt19937_64 &rng);
    // Deliver in FIFO (the first deliverable each time) until nothing is in flight.
    void deliver_all();

    // Completions (of any rank) delivered but not yet run by poll().
    std::size_t pending_completions() const;
    // Total operations ever delivered (a progress measure for tests).
    std::uint64_t delivered_count() const { return delivered_; }

    // What a rank posted since the world began or reset_traffic(): the message counts
    // of the scaling model (test/model/scale_model.cpp).
    struct Traffic {
        std::uint64_t puts = 0, gets = 0, atomics = 0, flushes = 0;
        std::uint64_t bytes = 0;  // put and get payloads, 8 an atomic
        std::uint64_t messages() const { return puts + gets + atomics; }
    };
    const Traffic &traffic(int rank) const { return traffic_.at(rank); }
    void reset_traffic() { traffic_.assign(traffic_.size(), Traffic()); }

    std::string describe(std::size_t index) const;
    static std::string describe(const Op &op);

  private:
    friend class SimTransport;
    Status check(int peer, Region region, std::uint64_t offset, std::size_t length) const;
    Status post(Op op);
    Status post_flush(int origin, int peer, Completion *completion);
    void fence(int origin, int peer);

    int nranks_;
    std::size_t control_bytes_;
    std::size_t window_bytes_;
    std::vector<std::vector<std::uint64_t>> control_;  // uint64_t for 8-byte alignment
    std::vector<std::vector<std::uint64_t>> window_;
    std::vector<std::unique_ptr<SimTransport>> endpoints_;
    std::vector<std::uint64_t> fence_epoch_;  // [origin * nranks + target]
    std::vector<Op> ops_;
    std::uint64_t serial_ = 0;
    std::uint64_t delivered_ = 0;
    std::vector<Traffic> traffic_;  // by origin
    bool early_local_ = false;
    bool fence_orders_ = false;
};

}  // namespace nbrma::transport::sim

#endif
