// Engine tests over the sim transport: the epoch state machine, the deferred-epoch
// queue (record, replay, in-order activation) and flush ages (SC14 §VII-A, §VII-C).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <memory>

#include "engine/epoch.hpp"
#include "engine/window.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using transport::Region;
using transport::sim::SimWorld;

// Delivers window-region data transfers at once (the engine waits for them inline),
// while lock traffic stays under the test's control.
class DataNow final : public transport::Transport {
  public:
    DataNow(SimWorld &world, int rank) : world_(world), inner_(world.endpoint(rank)) {}
    int size() const override { return inner_.size(); }
    int rank() const override { return inner_.rank(); }
    void *local_control() override { return inner_.local_control(); }
    Status put(int peer, const void *source, std::size_t length, transport::RemoteAddress target,
               transport::Completion *completion) override {
        return now(target, inner_.put(peer, source, length, target, completion));
    }
    Status get(int peer, void *destination, std::size_t length, transport::RemoteAddress source,
               transport::Completion *completion) override {
        return now(source, inner_.get(peer, destination, length, source, completion));
    }
    Status atomic(int peer, transport::AtomicOp op, transport::RemoteAddress target,
                  std::uint64_t operand, std::uint64_t compare, std::uint64_t *result,
                  transport::Completion *completion) override {
        return now(target, inner_.atomic(peer, op, target, operand, compare, result, completion));
    }
    bool supports_atomics(int peer, Region region) const override {
        return inner_.supports_atomics(peer, region);
    }
    Status fence(int peer) override { return inner_.fence(peer); }
    Status flush(int peer, transport::Completion *completion) override {
        return inner_.flush(peer, completion);
    }
    int poll() override { return inner_.poll(); }

  private:
    Status now(transport::RemoteAddress address, Status posted) {
        if (address.region == Region::window) deliver_window_ops();
        return posted;
    }
    void deliver_window_ops() {
        for (std::size_t i = 0; i < world_.in_flight();) {
            if (world_.op(i).region == Region::window && world_.deliverable(i))
                world_.deliver(i);
            else
                ++i;
        }
    }
    SimWorld &world_;
    transport::Transport &inner_;
};

struct Ranks {
    static constexpr std::size_t window_bytes = 4096;
    explicit Ranks(int n) : layout(n), world(n, layout.size(), window_bytes) {
        WindowConfig config;
        config.flavor = Flavor::allocate;
        config.sizes.assign(n, window_bytes);
        config.disp_units.assign(n, 1);
        for (int r = 0; r < n; ++r) {
            transports.push_back(std::make_unique<DataNow>(world, r));
            windows.push_back(std::make_unique<Window>(*transports[r], layout, config));
        }
    }
    // Progress everybody and deliver everything until nothing moves.
    void settle() {
        for (int round = 0; round < 1000; ++round) {
            bool moved = false;
            for (auto &window : windows) moved |= window->progress();
            if (world.in_flight() > 0) {
                world.deliver_all();
                moved = true;
            }
            if (!moved) return;
        }
    }
    std::int64_t at(int rank, std::size_t offset) {
        std::int64_t value;
        std::memcpy(&value, world.memory(rank, Region::window) + offset, sizeof value);
        return value;
    }
    sync::ControlLayout layout;
    SimWorld world;
    std::vector<std::unique_ptr<DataNow>> transports;
    std::vector<std::unique_ptr<Window>> windows;
};

RmaCall put_call(int target, MPI_Aint displacement, const std::int64_t *value) {
    RmaCall call;
    call.kind = RmaKind::put;
    call.origin = value;
    call.origin_count = 1;
    call.origin_type = MPI_INT64_T;
    call.target = target;
    call.displacement = displacement;
    call.target_count = 1;
    call.target_type = MPI_INT64_T;
    return call;
}

TEST(EpochStateMachine, ApplicationAndEngineLifetimesAreIndependent) {
    Epoch epoch(1, EpochKind::lock, 2, 1, sync::LockMode::exclusive, false);
    EXPECT_TRUE(epoch.open());
    EXPECT_EQ(epoch.state(), EngineState::deferred);
    Request *request = Request::create();
    epoch.close(request);  // closed while still deferred
    EXPECT_FALSE(epoch.open());
    EXPECT_EQ(epoch.state(), EngineState::deferred);
    EXPECT_FALSE(request->complete());
    epoch.activate();
    EXPECT_EQ(epoch.state(), EngineState::active);
    epoch.complete();
    EXPECT_EQ(epoch.state(), EngineState::completed);
    EXPECT_TRUE(request->complete());
    EXPECT_EQ(request->status(), Status::ok);
    request->release();
}

TEST(DeferredQueue, EpochsBehindAHeldLockAreRecordedThenReplayedInOrder) {
    Ranks ranks(2);
    Window &origin = *ranks.windows[0];
    Window &holder = *ranks.windows[1];
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();

    const std::int64_t first = 11, second = 22, third = 33;
    Request *closed[2];
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 0, &first), nullptr), Status::ok);
    ASSERT_EQ(origin.unlock(1, &closed[0]), Status::ok);
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 0, &second), nullptr), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 8, &third), nullptr), Status::ok);
    ASSERT_EQ(origin.unlock(1, &closed[1]), Status::ok);
    ranks.settle();
    // Both epochs are closed at application level but wait behind rank 1's lock:
    // nothing reached the target yet, and both are still queued.
    EXPECT_FALSE(closed[0]->complete());
    EXPECT_FALSE(closed[1]->complete());
    EXPECT_EQ(ranks.at(1, 0), 0);
    EXPECT_EQ(origin.epochs_pending(), 2u);

    Request *released;
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    for (int round = 0; round < 1000 && !closed[1]->complete(); ++round) {
        origin.progress();
        holder.progress();
        ranks.world.deliver_all();
        if (closed[1]->complete()) {
            EXPECT_TRUE(closed[0]->complete()) << "epochs completed out of order";
        }
    }
    ASSERT_TRUE(closed[1]->complete());
    EXPECT_EQ(ranks.at(1, 0), second);  // replayed in order: the later epoch wins
    EXPECT_EQ(ranks.at(1, 8), third);
    EXPECT_EQ(origin.epochs_pending(), 0u);
    for (Request *request : {closed[0], closed[1], released}) request->release();
}

TEST(FlushAges, FlushWaitsOnlyForEarlierOperationsTowardItsTarget) {
    Ranks ranks(2);
    Window &origin = *ranks.windows[0];
    Window &holder = *ranks.windows[1];
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();

    const std::int64_t to_blocked = 5, to_self = 7;
    ASSERT_EQ(origin.lock_all(0), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 0, &to_blocked), nullptr), Status::ok);  // age 1
    Request *flush_blocked, *flush_self, *flush_all;
    ASSERT_EQ(origin.flush(1, &flush_blocked), Status::ok);
    ASSERT_EQ(origin.rma(put_call(0, 0, &to_self), nullptr), Status::ok);  // age 2
    ASSERT_EQ(origin.flush(0, &flush_self), Status::ok);
    ASSERT_EQ(origin.flush(-1, &flush_all), Status::ok);
    ranks.settle();
    EXPECT_TRUE(flush_self->complete());      // its target is reachable
    EXPECT_EQ(ranks.at(0, 0), to_self);
    EXPECT_FALSE(flush_blocked->complete());  // age 1 still waits for the lock on rank 1
    EXPECT_FALSE(flush_all->complete());
    EXPECT_EQ(ranks.at(1, 0), 0);

    Request *released;
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    ranks.settle();
    EXPECT_TRUE(flush_blocked->complete());
    EXPECT_TRUE(flush_all->complete());
    EXPECT_EQ(ranks.at(1, 0), to_blocked);

    Request *closed;
    ASSERT_EQ(origin.unlock_all(&closed), Status::ok);
    ranks.settle();
    EXPECT_TRUE(closed->complete());
    for (Request *request : {flush_blocked, flush_self, flush_all, released, closed})
        request->release();
}

TEST(PassiveSync, ErrorsAreDetectedAtTheCall) {
    Ranks ranks(2);
    Window &window = *ranks.windows[0];
    Request *request = nullptr;
    const std::int64_t value = 1;
    EXPECT_EQ(window.unlock(1, &request), Status::err_sync);
    EXPECT_EQ(window.rma(put_call(1, 0, &value), nullptr), Status::err_sync);
    EXPECT_EQ(window.lock(MPI_LOCK_EXCLUSIVE, 2, 0), Status::err_rank);
    EXPECT_EQ(window.lock(12345, 1, 0), Status::err_lock_type);
    ASSERT_EQ(window.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    EXPECT_EQ(window.lock(MPI_LOCK_SHARED, 1, 0), Status::err_sync);
    EXPECT_EQ(window.lock_all(0), Status::err_sync);
    EXPECT_EQ(window.rma(put_call(1, Ranks::window_bytes - 4, &value), nullptr),
              Status::err_range);
    EXPECT_TRUE(window.has_open_epoch());
    ASSERT_EQ(window.unlock(1, &request), Status::ok);
    ranks.settle();
    EXPECT_TRUE(request->complete());
    request->release();
}

}  // namespace
}  // namespace nbrma::engine
