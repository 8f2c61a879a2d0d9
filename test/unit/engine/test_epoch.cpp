// Engine tests over the sim transport: the epoch state machine, the deferred-epoch
// queue (record, replay, in-order activation) and flush ages (SC14 §VII-A, §VII-C).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <memory>

#include "engine/epoch.hpp"
#include "engine/window.hpp"
#include "sim_fixture.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using transport::Region;
using transport::sim::SimWorld;

// Window-region data moves at once; lock traffic stays under the test's control.
using Ranks = simtest::SimRanks;
using simtest::put_call;

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
    EXPECT_EQ(window.rma(put_call(1, Ranks::default_window_bytes - 4, &value), nullptr),
              Status::err_range);
    EXPECT_TRUE(window.has_open_epoch());
    ASSERT_EQ(window.unlock(1, &request), Status::ok);
    ranks.settle();
    EXPECT_TRUE(request->complete());
    request->release();
}

}  // namespace
}  // namespace nbrma::engine
