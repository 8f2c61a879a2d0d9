// Remote completion over the sim transport with early local completion: a put is
// complete at the origin when posted and reaches its target only when the test
// delivers it (as over UCX). flush, unlock, complete and the end of a fence epoch must
// wait for a transport flush (MPI's completion at the target); flush_local need not.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>

#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "sim_fixture.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using simtest::put_call;
using simtest::Requests;
using simtest::SimRanks;
using transport::Region;
using transport::sim::SimWorld;

bool held_put(const SimWorld::Op &op) {
    return op.kind == SimWorld::OpKind::put && op.region == Region::window;
}

// Progress every rank and deliver everything but window puts until nothing moves.
void settle_holding_puts(SimRanks &ranks) {
    for (int round = 0; round < 10000; ++round) {
        bool moved = ranks.progress_all();
        for (bool delivered = true; delivered;) {
            delivered = false;
            for (std::size_t i = 0; i < ranks.world.in_flight(); ++i) {
                if (held_put(ranks.world.op(i)) || !ranks.world.deliverable(i)) continue;
                ranks.world.deliver(i);
                delivered = moved = true;
                break;
            }
        }
        if (!moved) return;
    }
    ADD_FAILURE() << "still moving after 10000 rounds";
}

// Operations of `kind` from `origin` to `target` in flight.
int in_flight(const SimRanks &ranks, SimWorld::OpKind kind, int origin, int target) {
    int count = 0;
    for (std::size_t i = 0; i < ranks.world.in_flight(); ++i) {
        const SimWorld::Op &op = ranks.world.op(i);
        count += op.kind == kind && op.origin == origin && op.target == target;
    }
    return count;
}

void deliver_put_to(SimRanks &ranks, int target) {
    for (std::size_t i = 0; i < ranks.world.in_flight(); ++i) {
        if (held_put(ranks.world.op(i)) && ranks.world.op(i).target == target) {
            ranks.world.deliver(i);
            return;
        }
    }
    ADD_FAILURE() << "no put to " << target << " in flight";
}

std::uint64_t lock_word(const SimRanks &ranks, int rank) {
    return ranks.world.load64(rank, Region::control, layout::ControlLayout::lock_word);
}

TEST(RemoteCompletion, FlushWaitsForThePutToReachTheTargetFlushLocalDoesNot) {
    SimRanks ranks(2);
    ranks.hold_puts();
    Requests requests;
    Window &origin = ranks.w(0);
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    settle_holding_puts(ranks);
    const std::int64_t value = 42;
    ASSERT_EQ(origin.rma(put_call(1, 0, &value), nullptr), Status::ok);
    Request *local = reinterpret_cast<Request *>(1), *remote = nullptr;
    ASSERT_EQ(origin.flush(1, &local, true), Status::ok);
    EXPECT_EQ(local, nullptr);  // the put completed at the origin: done in the call
    ASSERT_EQ(origin.flush(1, &remote), Status::ok);
    ASSERT_NE(remote, nullptr);
    requests(remote);
    settle_holding_puts(ranks);
    EXPECT_FALSE(remote->complete());  // but has not reached the target
    EXPECT_EQ(ranks.at(1, 0), 0);
    EXPECT_EQ(in_flight(ranks, SimWorld::OpKind::flush, 0, 1), 1);

    ranks.settle();  // the put, then the flush behind it
    EXPECT_TRUE(remote->complete());
    EXPECT_EQ(ranks.at(1, 0), value);
    requests(simtest::iunlock(origin, 1));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
}

TEST(RemoteCompletion, FlushAllWaitsForEveryTarget) {
    SimRanks ranks(3);
    ranks.hold_puts();
    Requests requests;
    Window &origin = ranks.w(0);
    ASSERT_EQ(origin.lock_all(0), Status::ok);
    const std::int64_t one = 1, two = 2;
    ASSERT_EQ(origin.rma(put_call(1, 0, &one), nullptr), Status::ok);
    ASSERT_EQ(origin.rma(put_call(2, 0, &two), nullptr), Status::ok);
    settle_holding_puts(ranks);
    Request *flushed = nullptr;
    ASSERT_EQ(origin.flush(-1, &flushed), Status::ok);
    requests(flushed);
    settle_holding_puts(ranks);
    EXPECT_FALSE(flushed->complete());
    deliver_put_to(ranks, 1);
    settle_holding_puts(ranks);
    EXPECT_FALSE(flushed->complete());  // rank 2's put is still on its way
    EXPECT_EQ(ranks.at(1, 0), one);
    EXPECT_EQ(ranks.at(2, 0), 0);
    deliver_put_to(ranks, 2);
    settle_holding_puts(ranks);
    EXPECT_TRUE(flushed->complete());
    EXPECT_EQ(ranks.at(2, 0), two);
    requests(simtest::iunlock_all(origin));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
}

// flush_all waits only for the peers something ran toward since it last found them
// complete (a list, not a walk over every rank): a peer made complete by a flush of its
// own and written again must still be waited for, and so must one written after a
// flush_all found it complete.
TEST(RemoteCompletion, FlushAllFollowsPeersWrittenAgain) {
    SimRanks ranks(6);
    ranks.hold_puts();
    Requests requests;
    Window &origin = ranks.w(0);
    ASSERT_EQ(origin.lock_all(0), Status::ok);
    const std::int64_t values[4] = {11, 12, 13, 14};
    ASSERT_EQ(origin.rma(put_call(3, 0, &values[0]), nullptr), Status::ok);
    Request *to3 = requests(simtest::iflush(origin, 3));
    ASSERT_NE(to3, nullptr);
    ranks.settle();
    ASSERT_TRUE(to3->complete());  // peer 3 complete, through its own flush
    ASSERT_EQ(origin.rma(put_call(3, 8, &values[1]), nullptr), Status::ok);
    ASSERT_EQ(origin.rma(put_call(5, 0, &values[2]), nullptr), Status::ok);
    Request *all = requests(simtest::iflush(origin, -1));
    ASSERT_NE(all, nullptr);
    settle_holding_puts(ranks);
    EXPECT_FALSE(all->complete());
    deliver_put_to(ranks, 5);
    settle_holding_puts(ranks);
    EXPECT_FALSE(all->complete()) << "flush_all forgot peer 3, written again after its flush";
    deliver_put_to(ranks, 3);
    settle_holding_puts(ranks);
    EXPECT_TRUE(all->complete());
    // Found complete by that flush_all, written again: waited for again.
    ASSERT_EQ(origin.rma(put_call(5, 8, &values[3]), nullptr), Status::ok);
    Request *again = requests(simtest::iflush(origin, -1));
    ASSERT_NE(again, nullptr);
    settle_holding_puts(ranks);
    EXPECT_FALSE(again->complete());
    deliver_put_to(ranks, 5);
    settle_holding_puts(ranks);
    EXPECT_TRUE(again->complete());
    EXPECT_EQ(ranks.at(3, 8), values[1]);
    EXPECT_EQ(ranks.at(5, 0), values[2]);
    EXPECT_EQ(ranks.at(5, 8), values[3]);
    requests(simtest::iunlock_all(origin));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
}

// The lock is released only once the data arrived (and a NOCHECK epoch, which has no
// lock, still completes only then): the next holder reads what we wrote.
TEST(RemoteCompletion, UnlockReleasesTheLockOnlyAfterThePutArrived) {
    for (int assertions : {0, MPI_MODE_NOCHECK}) {
        SCOPED_TRACE(assertions ? "MPI_MODE_NOCHECK" : "lock");
        SimRanks ranks(2);
        ranks.hold_puts();
        Requests requests;
        Window &origin = ranks.w(0);
        ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, assertions), Status::ok);
        settle_holding_puts(ranks);
        const std::uint64_t locked = lock_word(ranks, 1);
        if (!assertions) {
            EXPECT_NE(locked, 0u);
        }
        const std::int64_t value = 7;
        ASSERT_EQ(origin.rma(put_call(1, 8, &value), nullptr), Status::ok);
        Request *closed = requests(simtest::iunlock(origin, 1));
        settle_holding_puts(ranks);
        EXPECT_FALSE(closed->complete());
        EXPECT_EQ(lock_word(ranks, 1), locked);  // no release while the put is in flight
        EXPECT_EQ(in_flight(ranks, SimWorld::OpKind::atomic, 0, 1), 0);
        EXPECT_EQ(ranks.at(1, 8), 0);

        ranks.settle();
        EXPECT_TRUE(closed->complete());
        EXPECT_EQ(ranks.at(1, 8), value);
        EXPECT_EQ(lock_word(ranks, 1), 0u);
        EXPECT_TRUE(requests.all_complete_ok());
    }
}

TEST(RemoteCompletion, CompleteSendsItsDoneNoticeOnlyAfterThePutArrived) {
    SimRanks ranks(2);
    ranks.hold_puts();
    Requests requests;
    ASSERT_EQ(ranks.w(1).post({0}, 0), Status::ok);
    ASSERT_EQ(ranks.w(0).start({1}, 0), Status::ok);
    settle_holding_puts(ranks);  // the grant
    const std::int64_t value = 9;
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::ok);
    Request *completed = requests(simtest::icomplete(ranks.w(0)));
    Request *waited = requests(simtest::iwait(ranks.w(1)));
    settle_holding_puts(ranks);
    EXPECT_FALSE(completed->complete());
    EXPECT_FALSE(waited->complete());
    EXPECT_EQ(in_flight(ranks, SimWorld::OpKind::atomic, 0, 1), 0);  // no done notice yet
    EXPECT_EQ(ranks.dones(1, 0), 0u);

    ranks.settle();
    EXPECT_TRUE(completed->complete());
    EXPECT_TRUE(waited->complete());
    EXPECT_EQ(ranks.at(1, 0), value);
    EXPECT_TRUE(requests.all_complete_ok());
}

TEST(RemoteCompletion, AFenceEpochEndsOnlyAfterItsPutsArrived) {
    SimRanks ranks(2);
    ranks.hold_puts();
    Requests requests;
    requests(simtest::ifence(ranks.w(0), 0));
    requests(simtest::ifence(ranks.w(1), 0));
    settle_holding_puts(ranks);
    const std::int64_t value = 5;
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 16, &value), nullptr), Status::ok);
    Request *origin_fence = requests(simtest::ifence(ranks.w(0), MPI_MODE_NOSUCCEED));
    Request *target_fence = requests(simtest::ifence(ranks.w(1), MPI_MODE_NOSUCCEED));
    settle_holding_puts(ranks);
    EXPECT_FALSE(origin_fence->complete());
    EXPECT_FALSE(target_fence->complete());
    EXPECT_EQ(ranks.fences(1, 0), 1u);  // the origin's second fence notice waits
    EXPECT_EQ(ranks.at(1, 16), 0);

    ranks.settle();
    EXPECT_TRUE(origin_fence->complete());
    EXPECT_TRUE(target_fence->complete());
    EXPECT_EQ(ranks.at(1, 16), value);
    EXPECT_TRUE(requests.all_complete_ok());
}

// Over a transport whose fence orders (UCX), the epoch ends without a flush: the next
// fence's notice to the target is fenced behind the put, so the target's fence still
// waits for the put, while the origin's, once every notice is in, does not.
TEST(RemoteCompletion, AFenceEpochEndsByTheOrderOfTheNextBarriersNotice) {
    SimRanks ranks(2);
    ranks.hold_puts();
    ranks.world.set_fence_orders(true);
    Requests requests;
    requests(simtest::ifence(ranks.w(0), 0));
    requests(simtest::ifence(ranks.w(1), 0));
    settle_holding_puts(ranks);
    const std::int64_t value = 6;
    ranks.world.reset_traffic();
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 16, &value), nullptr), Status::ok);
    Request *origin_fence = requests(simtest::ifence(ranks.w(0), MPI_MODE_NOSUCCEED));
    Request *target_fence = requests(simtest::ifence(ranks.w(1), MPI_MODE_NOSUCCEED));
    settle_holding_puts(ranks);
    EXPECT_EQ(ranks.world.traffic(0).flushes, 0u);
    EXPECT_TRUE(origin_fence->complete());
    EXPECT_FALSE(target_fence->complete());
    // The origin's notice is posted, held behind the put.
    EXPECT_EQ(in_flight(ranks, SimWorld::OpKind::atomic, 0, 1), 1);
    EXPECT_EQ(ranks.fences(1, 0), 1u);
    EXPECT_EQ(ranks.at(1, 16), 0);

    std::string violation;
    ranks.settle([&] {
        if (target_fence->complete() && ranks.at(1, 16) != value)
            violation = "the target's fence passed before the put landed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_TRUE(target_fence->complete());
    EXPECT_EQ(ranks.at(1, 16), value);
    EXPECT_TRUE(requests.all_complete_ok());
}

// With three ranks the epoch flushes: rank 2 hears of the fence from rank 0 directly,
// and must not pass it before rank 0's put to rank 1 landed.
TEST(RemoteCompletion, AFenceEpochOfThreeRanksStillFlushes) {
    constexpr int n = 3;
    SimRanks ranks(n);
    ranks.hold_puts();
    ranks.world.set_fence_orders(true);
    Requests requests;
    for (int r = 0; r < n; ++r) requests(simtest::ifence(ranks.w(r), 0));
    settle_holding_puts(ranks);
    const std::int64_t value = 12;
    ranks.world.reset_traffic();
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 8, &value), nullptr), Status::ok);
    Request *fences[n];
    for (int r = 0; r < n; ++r)
        fences[r] = requests(simtest::ifence(ranks.w(r), MPI_MODE_NOSUCCEED));
    settle_holding_puts(ranks);
    EXPECT_EQ(in_flight(ranks, SimWorld::OpKind::flush, 0, 1), 1);
    for (int r = 0; r < n; ++r) EXPECT_FALSE(fences[r]->complete()) << "rank " << r;

    std::string violation;
    ranks.settle([&] {
        for (int r = 0; r < n; ++r)
            if (fences[r]->complete() && ranks.at(1, 8) != value)
                violation = "rank " + std::to_string(r) + "'s fence passed before the put landed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(ranks.world.traffic(0).flushes, 1u);
    EXPECT_EQ(ranks.at(1, 8), value);
    EXPECT_TRUE(requests.all_complete_ok());
}

// Gets complete when their data arrived: no transport flush for them.
TEST(RemoteCompletion, NothingWrittenNothingFlushed) {
    SimRanks ranks(2);
    ranks.hold_puts();
    Requests requests;
    Window &origin = ranks.w(0);
    ASSERT_EQ(origin.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    settle_holding_puts(ranks);
    std::int64_t fetched = -1;
    RmaCall get = put_call(1, 0, nullptr);
    get.kind = RmaKind::get;
    get.origin = nullptr;
    get.result = &fetched;
    get.result_count = 1;
    get.result_type = MPI_INT64_T;
    ASSERT_EQ(origin.rma(get, nullptr), Status::ok);
    Request *flushed = reinterpret_cast<Request *>(1);
    ASSERT_EQ(origin.flush(1, &flushed), Status::ok);
    EXPECT_EQ(flushed, nullptr);  // complete in the call
    EXPECT_EQ(fetched, 0);
    EXPECT_EQ(in_flight(ranks, SimWorld::OpKind::flush, 0, 1), 0);
    requests(simtest::iunlock(origin, 1));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
}

}  // namespace
}  // namespace nbrma::engine
