// Engine tests of the four reorder info keys (SC14 §VI-B) over the sim transport.
// Each key lets an epoch activate while an earlier epoch of the given side is still
// active (origin side: lock and start epochs; target side: post epochs). With the key
// off the engine keeps the serial behaviour (an epoch activates only after the earlier
// ones completed, unless the application held them open together); with it on the
// later epoch communicates and completes first. The keys never apply across fence or
// lock_all epochs, never let two lock epochs toward one target run together, never
// let our window be locked by us while exposed, and never let an epoch skip an
// earlier deferred one.
//
// Deterministic: window-region data moves at once (DataNow); every control-region
// notice (grant, done, fence, lock words) moves only when the test delivers it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/epoch.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "sim_fixture.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using transport::Region;
using transport::sim::SimWorld;
using simtest::CompletionOrder;
using simtest::icomplete;
using simtest::ifence;
using simtest::iunlock;
using simtest::iunlock_all;
using simtest::iwait;
using simtest::put_call;
using simtest::Requests;

constexpr Reorder all_keys[] = {access_after_access, access_after_exposure,
                                exposure_after_exposure, exposure_after_access};

struct Ranks : simtest::SimRanks {
    using SimRanks::SimRanks;
    void set_every_key(bool on) {
        for (auto &window : windows)
            for (Reorder key : all_keys) window->set_reorder(key, on);
    }
    // settle(), except that in-flight operations `held` matches stay in flight.
    void settle_holding(const std::function<bool(const SimWorld::Op &)> &held) {
        for (int round = 0; round < 10000; ++round) {
            bool moved = progress_all();
            for (;;) {
                std::size_t i = 0;
                while (i < world.in_flight() && (held(world.op(i)) || !world.deliverable(i))) ++i;
                if (i == world.in_flight()) break;
                world.deliver(i);
                moved = true;
            }
            if (!moved) return;
        }
        ADD_FAILURE() << "settle_holding: still moving after 10000 rounds";
    }
    // Matches the grant notice `from` sends to `to`.
    std::function<bool(const SimWorld::Op &)> grant(int from, int to) const {
        const std::size_t offset = layout.grant_count(from);
        return [to, offset](const SimWorld::Op &op) {
            return op.kind == SimWorld::OpKind::atomic && op.target == to &&
                   op.region == Region::control && op.offset == offset;
        };
    }
};

// lock(exclusive, target); put *value at `displacement`; unlock. Returns unlock's request.
Request *locked_put(Window &window, int target, MPI_Aint displacement, const std::int64_t *value) {
    EXPECT_EQ(window.lock(MPI_LOCK_EXCLUSIVE, target, 0), Status::ok);
    EXPECT_EQ(window.rma(put_call(target, displacement, value), nullptr), Status::ok);
    return iunlock(window, target);
}
// start(group); put *value to `target`; complete. Returns complete's request.
Request *pscw_put(Window &window, std::vector<int> group, int target, MPI_Aint displacement,
                  const std::int64_t *value, int assert = 0) {
    EXPECT_EQ(window.start(group, assert), Status::ok);
    EXPECT_EQ(window.rma(put_call(target, displacement, value), nullptr), Status::ok);
    return icomplete(window);
}
// post(group); wait. Returns wait's request.
Request *post_wait(Window &window, std::vector<int> group, int assert = 0) {
    EXPECT_EQ(window.post(group, assert), Status::ok);
    return iwait(window);
}

// ================================================================ access_after_access

// Rank 0 runs access epoch A toward rank 1, then access epoch B toward rank 2. Rank 2
// posts at once; rank 1's grant is held back: either posted but left in flight, or
// not posted at all until later.
enum class Late { grant_in_flight, not_posted };

void access_after_access_pscw(bool on, Late late) {
    SCOPED_TRACE(late == Late::grant_in_flight ? "grant in flight" : "not posted");
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    w0.set_reorder(access_after_access, on);
    const std::int64_t to1 = 11, to2 = 22;
    Request *wait2 = requests(post_wait(ranks.w(2), {0}));
    Request *wait1 = nullptr;
    if (late == Late::grant_in_flight) wait1 = requests(post_wait(ranks.w(1), {0}));
    Request *complete_a = requests(pscw_put(w0, {1}, 1, 0, &to1));
    Request *complete_b = requests(pscw_put(w0, {2}, 2, 0, &to2));
    ranks.settle_holding(ranks.grant(1, 0));

    EXPECT_EQ(ranks.grants(0, 1), 0u);  // A is still waiting for its grant
    EXPECT_FALSE(complete_a->complete());
    EXPECT_EQ(ranks.at(1, 0), 0);
    EXPECT_EQ(ranks.grants(0, 2), 1u);  // B's grant arrived in both cases
    if (on) {
        EXPECT_EQ(ranks.at(2, 0), to2);  // B communicated ...
        EXPECT_TRUE(complete_b->complete());  // ... and completed before A
        EXPECT_TRUE(wait2->complete());
        EXPECT_EQ(ranks.dones(2, 0), 1u);
        EXPECT_EQ(w0.epochs_pending(), 1u);
    } else {
        EXPECT_EQ(ranks.at(2, 0), 0);  // B is deferred behind A
        EXPECT_FALSE(complete_b->complete());
        EXPECT_FALSE(wait2->complete());
        EXPECT_EQ(ranks.dones(2, 0), 0u);
        EXPECT_EQ(w0.epochs_pending(), 2u);
    }

    if (late == Late::not_posted) wait1 = requests(post_wait(ranks.w(1), {0}));
    CompletionOrder order;
    order.watch("A", complete_a);
    order.watch("B", complete_b);
    order.poll();
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (!on && ranks.at(2, 0) != 0 && !complete_a->complete())
            violation = "B's put landed before A completed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(order.str(), on ? "B A" : "A B");
    EXPECT_TRUE(wait1->complete());
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), to1);
    EXPECT_EQ(ranks.at(2, 0), to2);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

TEST(ReorderAccessAfterAccess, PscwOnLaterAccessEpochPassesAnUngrantedOne) {
    access_after_access_pscw(true, Late::grant_in_flight);
    access_after_access_pscw(true, Late::not_posted);
}

TEST(ReorderAccessAfterAccess, PscwOffLaterAccessEpochWaitsForTheEarlierOne) {
    access_after_access_pscw(false, Late::grant_in_flight);
    access_after_access_pscw(false, Late::not_posted);
}

// Rank 0's lock(1) waits behind rank 2's exclusive lock on rank 1; then lock(2).
void access_after_access_locks(bool on) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    w0.set_reorder(access_after_access, on);
    ASSERT_EQ(ranks.w(2).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();
    const std::int64_t to1 = 31, to2 = 32;
    Request *unlock1 = requests(locked_put(w0, 1, 0, &to1));
    Request *unlock2 = requests(locked_put(w0, 2, 0, &to2));
    ranks.settle();

    EXPECT_FALSE(unlock1->complete());
    EXPECT_EQ(ranks.at(1, 0), 0);
    if (on) {
        EXPECT_EQ(ranks.at(2, 0), to2);
        EXPECT_TRUE(unlock2->complete());
        EXPECT_EQ(w0.epochs_pending(), 1u);
    } else {
        EXPECT_EQ(ranks.at(2, 0), 0);
        EXPECT_FALSE(unlock2->complete());
        EXPECT_EQ(w0.epochs_pending(), 2u);
    }

    Request *released = requests(iunlock(ranks.w(2), 1));
    CompletionOrder order;
    order.watch("unlock1", unlock1);
    order.watch("unlock2", unlock2);
    order.poll();
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (!on && ranks.at(2, 0) != 0 && !unlock1->complete())
            violation = "the second epoch's put landed before the first epoch completed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(order.str(), on ? "unlock2 unlock1" : "unlock1 unlock2");
    EXPECT_TRUE(released->complete());
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), to1);
    EXPECT_EQ(ranks.at(2, 0), to2);
    EXPECT_EQ(w0.epochs_pending(), 0u);
}

TEST(ReorderAccessAfterAccess, LocksOnLaterLockEpochPassesABlockedOne) {
    access_after_access_locks(true);
}

TEST(ReorderAccessAfterAccess, LocksOffLaterLockEpochWaitsForTheBlockedOne) {
    access_after_access_locks(false);
}

// Lock and start epochs are both origin side: a start epoch passes a blocked lock
// epoch under the same key.
TEST(ReorderAccessAfterAccess, StartEpochPassesABlockedLockEpochOnlyWithTheKey) {
    for (bool on : {true, false}) {
        SCOPED_TRACE(on ? "key on" : "key off");
        Ranks ranks(3);
        Requests requests;
        Window &w0 = ranks.w(0);
        w0.set_reorder(access_after_access, on);
        ASSERT_EQ(ranks.w(1).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
        ranks.settle();
        const std::int64_t to1 = 41, to2 = 42;
        Request *unlocked = requests(locked_put(w0, 1, 0, &to1));
        Request *waited = requests(post_wait(ranks.w(2), {0}));
        Request *completed = requests(pscw_put(w0, {2}, 2, 0, &to2));
        ranks.settle();
        EXPECT_FALSE(unlocked->complete());
        EXPECT_EQ(ranks.at(2, 0), on ? to2 : 0);
        EXPECT_EQ(completed->complete(), on);
        EXPECT_EQ(waited->complete(), on);
        EXPECT_EQ(w0.epochs_pending(), on ? 1u : 2u);
        requests(iunlock(ranks.w(1), 1));
        ranks.settle();
        EXPECT_TRUE(requests.all_complete_ok());
        EXPECT_EQ(ranks.at(1, 0), to1);
        EXPECT_EQ(ranks.at(2, 0), to2);
    }
}

// Two lock epochs toward the same target never run together, key or not; and an
// epoch behind the deferred second one does not skip it (no skipping), even though
// it targets a free rank.
TEST(ReorderAccessAfterAccess, TwoLockEpochsTowardOneTargetNeverActivateTogether) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    ranks.set_every_key(true);
    ASSERT_EQ(ranks.w(2).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();
    const std::int64_t first = 51, second = 52, third = 53;
    Request *unlock1 = requests(locked_put(w0, 1, 0, &first));
    Request *unlock2 = requests(locked_put(w0, 1, 8, &second));
    Request *unlock3 = requests(locked_put(w0, 2, 0, &third));
    ranks.settle();
    EXPECT_FALSE(unlock1->complete());
    EXPECT_FALSE(unlock2->complete());
    EXPECT_FALSE(unlock3->complete());
    EXPECT_EQ(ranks.at(1, 0), 0);
    EXPECT_EQ(ranks.at(1, 8), 0);
    EXPECT_EQ(ranks.at(2, 0), 0);  // behind the deferred second epoch
    EXPECT_EQ(w0.epochs_pending(), 3u);

    requests(iunlock(ranks.w(2), 1));
    CompletionOrder order;
    order.watch("unlock1", unlock1);
    order.watch("unlock2", unlock2);
    order.watch("unlock3", unlock3);
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (ranks.at(1, 8) != 0 && !unlock1->complete())
            violation = "second lock epoch on rank 1 communicated beside the first";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    // The third may pass the second once that one is active (key on), never the first.
    EXPECT_EQ(order.order.front(), "unlock1") << order.str();
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), first);
    EXPECT_EQ(ranks.at(1, 8), second);
    EXPECT_EQ(ranks.at(2, 0), third);
    EXPECT_EQ(w0.epochs_pending(), 0u);
}

// ================================================================ access_after_exposure

// Rank 0 exposes to rank 1 (late origin), closes the exposure, then accesses rank 2.
void access_after_exposure_pscw(bool on) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    w0.set_reorder(access_after_exposure, on);
    const std::int64_t to2 = 61, from1 = 62;
    Request *wait0 = requests(post_wait(w0, {1}));
    Request *complete0 = requests(pscw_put(w0, {2}, 2, 0, &to2));
    Request *wait2 = requests(post_wait(ranks.w(2), {0}));
    ranks.settle();

    EXPECT_FALSE(wait0->complete());  // rank 1 never started
    EXPECT_EQ(ranks.grants(1, 0), 1u);
    EXPECT_EQ(ranks.grants(0, 2), 1u);
    if (on) {
        EXPECT_EQ(ranks.at(2, 0), to2);
        EXPECT_TRUE(complete0->complete());
        EXPECT_TRUE(wait2->complete());
        EXPECT_EQ(w0.epochs_pending(), 1u);
    } else {
        EXPECT_EQ(ranks.at(2, 0), 0);
        EXPECT_FALSE(complete0->complete());
        EXPECT_FALSE(wait2->complete());
        EXPECT_EQ(w0.epochs_pending(), 2u);
    }

    requests(pscw_put(ranks.w(1), {0}, 0, 8, &from1));
    CompletionOrder order;
    order.watch("wait@0", wait0);
    order.watch("complete@0", complete0);
    order.poll();
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (!on && ranks.at(2, 0) != 0 && !wait0->complete())
            violation = "the access epoch communicated before the exposure completed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(order.str(), on ? "complete@0 wait@0" : "wait@0 complete@0");
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(0, 8), from1);
    EXPECT_EQ(ranks.at(2, 0), to2);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

TEST(ReorderAccessAfterExposure, PscwOnAccessEpochProceedsBesideAWaitingExposure) {
    access_after_exposure_pscw(true);
}

TEST(ReorderAccessAfterExposure, PscwOffAccessEpochWaitsForTheExposure) {
    access_after_exposure_pscw(false);
}

// A lock epoch toward another rank is an origin-side epoch too.
TEST(ReorderAccessAfterExposure, LockEpochProceedsBesideAWaitingExposureOnlyWithTheKey) {
    for (bool on : {true, false}) {
        SCOPED_TRACE(on ? "key on" : "key off");
        Ranks ranks(3);
        Requests requests;
        Window &w0 = ranks.w(0);
        w0.set_reorder(access_after_exposure, on);
        const std::int64_t to2 = 71, from1 = 72;
        Request *wait0 = requests(post_wait(w0, {1}));
        Request *unlocked = requests(locked_put(w0, 2, 0, &to2));
        ranks.settle();
        EXPECT_FALSE(wait0->complete());
        EXPECT_EQ(ranks.at(2, 0), on ? to2 : 0);
        EXPECT_EQ(unlocked->complete(), on);
        EXPECT_EQ(w0.epochs_pending(), on ? 1u : 2u);
        requests(pscw_put(ranks.w(1), {0}, 0, 8, &from1));
        ranks.settle();
        EXPECT_TRUE(requests.all_complete_ok());
        EXPECT_EQ(ranks.at(2, 0), to2);
        EXPECT_EQ(ranks.at(0, 8), from1);
    }
}

// ================================================================ exposure_after_exposure

// Rank 0 exposes to rank 1 (late origin), then to rank 2 (prompt origin).
void exposure_after_exposure_pscw(bool on) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    w0.set_reorder(exposure_after_exposure, on);
    const std::int64_t from1 = 81, from2 = 82;
    Request *wait1 = requests(post_wait(w0, {1}));
    Request *wait2 = requests(post_wait(w0, {2}));
    Request *complete2 = requests(pscw_put(ranks.w(2), {0}, 0, 16, &from2));
    ranks.settle();

    EXPECT_EQ(ranks.grants(1, 0), 1u);  // the first exposure granted
    EXPECT_FALSE(wait1->complete());
    if (on) {
        EXPECT_EQ(ranks.grants(2, 0), 1u);  // the second one's grant went out
        EXPECT_EQ(ranks.at(0, 16), from2);
        EXPECT_TRUE(complete2->complete());
        EXPECT_TRUE(wait2->complete());
        EXPECT_EQ(w0.epochs_pending(), 1u);
    } else {
        EXPECT_EQ(ranks.grants(2, 0), 0u);
        EXPECT_EQ(ranks.at(0, 16), 0);
        EXPECT_FALSE(complete2->complete());
        EXPECT_FALSE(wait2->complete());
        EXPECT_EQ(w0.epochs_pending(), 2u);
    }

    requests(pscw_put(ranks.w(1), {0}, 0, 8, &from1));
    CompletionOrder order;
    order.watch("wait1", wait1);
    order.watch("wait2", wait2);
    order.poll();
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (!on && ranks.grants(2, 0) != 0 && !wait1->complete())
            violation = "the second exposure granted before the first completed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(order.str(), on ? "wait2 wait1" : "wait1 wait2");
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(0, 8), from1);
    EXPECT_EQ(ranks.at(0, 16), from2);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

TEST(ReorderExposureAfterExposure, OnSecondExposureGrantsAndCompletesFirst) {
    exposure_after_exposure_pscw(true);
}

TEST(ReorderExposureAfterExposure, OffSecondExposureWaitsForTheFirst) {
    exposure_after_exposure_pscw(false);
}

// ================================================================ exposure_after_access

// Rank 0 accesses rank 1 (late target), closes, then exposes to rank 2.
void exposure_after_access_pscw(bool on) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    w0.set_reorder(exposure_after_access, on);
    const std::int64_t to1 = 91, from2 = 92;
    Request *complete0 = requests(pscw_put(w0, {1}, 1, 0, &to1));
    Request *wait0 = requests(post_wait(w0, {2}));
    Request *complete2 = requests(pscw_put(ranks.w(2), {0}, 0, 0, &from2));
    ranks.settle();

    EXPECT_FALSE(complete0->complete());
    EXPECT_EQ(ranks.at(1, 0), 0);
    if (on) {
        EXPECT_EQ(ranks.grants(2, 0), 1u);
        EXPECT_EQ(ranks.at(0, 0), from2);
        EXPECT_TRUE(complete2->complete());
        EXPECT_TRUE(wait0->complete());
        EXPECT_EQ(w0.epochs_pending(), 1u);
    } else {
        EXPECT_EQ(ranks.grants(2, 0), 0u);
        EXPECT_EQ(ranks.at(0, 0), 0);
        EXPECT_FALSE(complete2->complete());
        EXPECT_FALSE(wait0->complete());
        EXPECT_EQ(w0.epochs_pending(), 2u);
    }

    requests(post_wait(ranks.w(1), {0}));
    CompletionOrder order;
    order.watch("complete@0", complete0);
    order.watch("wait@0", wait0);
    order.poll();
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (!on && ranks.grants(2, 0) != 0 && !complete0->complete())
            violation = "the exposure granted before the access epoch completed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(order.str(), on ? "wait@0 complete@0" : "complete@0 wait@0");
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), to1);
    EXPECT_EQ(ranks.at(0, 0), from2);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

TEST(ReorderExposureAfterAccess, PscwOnPostGrantsBesideAnUngrantedAccessEpoch) {
    exposure_after_access_pscw(true);
}

TEST(ReorderExposureAfterAccess, PscwOffPostWaitsForTheAccessEpoch) {
    exposure_after_access_pscw(false);
}

// A blocked lock epoch toward another rank is an origin-side epoch too.
TEST(ReorderExposureAfterAccess, PostGrantsBesideABlockedLockEpochOnlyWithTheKey) {
    for (bool on : {true, false}) {
        SCOPED_TRACE(on ? "key on" : "key off");
        Ranks ranks(4);
        Requests requests;
        Window &w0 = ranks.w(0);
        w0.set_reorder(exposure_after_access, on);
        ASSERT_EQ(ranks.w(3).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
        ranks.settle();
        const std::int64_t to1 = 101, from2 = 102;
        Request *unlocked = requests(locked_put(w0, 1, 0, &to1));
        Request *wait0 = requests(post_wait(w0, {2}));
        Request *complete2 = requests(pscw_put(ranks.w(2), {0}, 0, 0, &from2));
        ranks.settle();
        EXPECT_FALSE(unlocked->complete());
        EXPECT_EQ(ranks.grants(2, 0), on ? 1u : 0u);
        EXPECT_EQ(ranks.at(0, 0), on ? from2 : 0);
        EXPECT_EQ(wait0->complete(), on);
        EXPECT_EQ(complete2->complete(), on);
        requests(iunlock(ranks.w(3), 1));
        ranks.settle();
        EXPECT_TRUE(requests.all_complete_ok());
        EXPECT_EQ(ranks.at(1, 0), to1);
        EXPECT_EQ(ranks.at(0, 0), from2);
    }
}

// ================================================================ exclusions (every key on)

// A fence after an access epoch waiting for its grant stays deferred: rank 0 sends no
// fence notice and its fence-epoch put waits.
TEST(ReorderExclusions, FenceNeverActivatesBesideAnEarlierAccessEpoch) {
    Ranks ranks(3);
    Requests requests;
    ranks.set_every_key(true);
    Window &w0 = ranks.w(0);
    const std::int64_t to2 = 111, by_fence = 112;
    Request *wait2 = requests(post_wait(ranks.w(2), {0}));
    requests(ifence(ranks.w(2), 0));
    requests(ifence(ranks.w(2), MPI_MODE_NOSUCCEED));
    requests(ifence(ranks.w(1), 0));
    requests(ifence(ranks.w(1), MPI_MODE_NOSUCCEED));
    Request *complete0 = requests(pscw_put(w0, {2}, 2, 0, &to2));
    Request *fence0 = requests(ifence(w0, 0));
    ASSERT_EQ(w0.rma(put_call(1, 8, &by_fence), nullptr), Status::ok);
    Request *fence0_end = requests(ifence(w0, MPI_MODE_NOSUCCEED));
    ranks.settle_holding(ranks.grant(2, 0));

    EXPECT_EQ(ranks.fences(1, 0), 0u);  // rank 0's fence epoch never activated
    EXPECT_EQ(ranks.fences(2, 0), 0u);
    EXPECT_EQ(ranks.fences(0, 1), 1u);  // rank 1's did
    EXPECT_FALSE(complete0->complete());
    EXPECT_FALSE(fence0->complete());
    EXPECT_FALSE(wait2->complete());
    EXPECT_EQ(ranks.at(1, 8), 0);
    EXPECT_EQ(w0.epochs_pending(), 3u);  // access, fence, fence (NOSUCCEED)

    CompletionOrder order;
    order.watch("complete", complete0);
    order.watch("fence", fence0);
    order.watch("fence_end", fence0_end);
    std::string violation;
    ranks.settle([&] {
        order.poll();
        if (ranks.fences(1, 0) != 0 && !complete0->complete())
            violation += "fence notice before the access epoch completed; ";
        if (ranks.at(1, 8) != 0 && !fence0->complete())
            violation += "fence put before the fence barrier; ";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_EQ(order.str(), "complete fence fence_end");
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(2, 0), to2);
    EXPECT_EQ(ranks.at(1, 8), by_fence);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

// An access epoch after a fence whose barrier has not passed (rank 2 late) stays
// deferred, though with NOCHECK on both sides it would need no grant.
TEST(ReorderExclusions, AccessNeverActivatesBesideAnEarlierFenceEpoch) {
    Ranks ranks(3);
    Requests requests;
    ranks.set_every_key(true);
    Window &w0 = ranks.w(0), &w1 = ranks.w(1);
    const std::int64_t to1 = 121;
    Request *fence0 = requests(ifence(w0, MPI_MODE_NOSUCCEED));
    Request *complete0 = requests(pscw_put(w0, {1}, 1, 0, &to1, MPI_MODE_NOCHECK));
    requests(ifence(w1, MPI_MODE_NOSUCCEED));
    requests(post_wait(w1, {0}, MPI_MODE_NOCHECK));
    ranks.settle();

    EXPECT_EQ(ranks.fences(1, 0), 1u);  // rank 0's fence epoch is active ...
    EXPECT_FALSE(fence0->complete());   // ... its barrier waits for rank 2
    EXPECT_EQ(ranks.at(1, 0), 0);       // and the access epoch waits behind it
    EXPECT_FALSE(complete0->complete());
    EXPECT_EQ(w0.epochs_pending(), 2u);

    requests(ifence(ranks.w(2), MPI_MODE_NOSUCCEED));
    std::string violation;
    ranks.settle([&] {
        if (ranks.at(1, 0) != 0 && !fence0->complete())
            violation = "access put before the fence barrier passed";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), to1);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

// lock_all epochs neither pass nor are passed. Rank 3 holds an exclusive lock on
// rank 1, which blocks rank 0's first epoch; the second one targets rank 2 only.
TEST(ReorderExclusions, LockAllEpochsNeverReorder) {
    const std::int64_t to1 = 131, to2 = 132, from2 = 133;
    struct Case {
        const char *name;
        // Opens rank 0's blocked first epoch (toward rank 1).
        std::function<Request *(Ranks &)> first;
        // Opens the second epoch; returns the request that completes with it. Its
        // effect, if it ran, is a non-zero int64 at (rank, offset).
        std::function<Request *(Ranks &, Requests &)> second;
        int rank;
        std::size_t offset;
        bool first_is_start;  // rank 1 must post to match it
    };
    auto lock_all_first = [&](Ranks &ranks) {
        EXPECT_EQ(ranks.w(0).lock_all(0), Status::ok);
        EXPECT_EQ(ranks.w(0).rma(put_call(1, 0, &to1), nullptr), Status::ok);
        return iunlock_all(ranks.w(0));
    };
    auto lock_first = [&](Ranks &ranks) { return locked_put(ranks.w(0), 1, 0, &to1); };
    auto start_first = [&](Ranks &ranks) { return pscw_put(ranks.w(0), {1}, 1, 0, &to1); };
    auto lock_second = [&](Ranks &ranks, Requests &) { return locked_put(ranks.w(0), 2, 0, &to2); };
    auto start_second = [&](Ranks &ranks, Requests &requests) {
        requests(post_wait(ranks.w(2), {0}));
        return pscw_put(ranks.w(0), {2}, 2, 0, &to2);
    };
    auto post_second = [&](Ranks &ranks, Requests &requests) {
        Request *waited = post_wait(ranks.w(0), {2});
        requests(pscw_put(ranks.w(2), {0}, 0, 0, &from2));
        return waited;
    };
    auto lock_all_second = [&](Ranks &ranks, Requests &) {
        EXPECT_EQ(ranks.w(0).lock_all(0), Status::ok);
        EXPECT_EQ(ranks.w(0).rma(put_call(2, 0, &to2), nullptr), Status::ok);
        return iunlock_all(ranks.w(0));
    };
    const Case cases[] = {
        {"lock after lock_all", lock_all_first, lock_second, 2, 0, false},
        {"start after lock_all", lock_all_first, start_second, 2, 0, false},
        {"post after lock_all", lock_all_first, post_second, 0, 0, false},
        {"lock_all after lock", lock_first, lock_all_second, 2, 0, false},
        {"lock_all after start", start_first, lock_all_second, 2, 0, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        Ranks ranks(4);
        Requests requests;
        ranks.set_every_key(true);
        ASSERT_EQ(ranks.w(3).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
        ranks.settle();
        Request *first = requests(c.first(ranks));
        Request *second = requests(c.second(ranks, requests));
        ranks.settle();
        EXPECT_FALSE(first->complete());
        EXPECT_FALSE(second->complete());
        EXPECT_EQ(ranks.at(c.rank, c.offset), 0);
        EXPECT_EQ(ranks.grants(2, 0), 0u);
        EXPECT_EQ(ranks.w(0).epochs_pending(), 2u);

        requests(iunlock(ranks.w(3), 1));
        if (c.first_is_start) requests(post_wait(ranks.w(1), {0}));
        CompletionOrder order;
        order.watch("first", first);
        order.watch("second", second);
        std::string violation;
        ranks.settle([&] {
            order.poll();
            if (ranks.at(c.rank, c.offset) != 0 && !first->complete())
                violation = "the second epoch communicated before the first completed";
        });
        EXPECT_TRUE(violation.empty()) << violation;
        EXPECT_EQ(order.str(), "first second");
        EXPECT_TRUE(requests.all_complete_ok());
        EXPECT_EQ(ranks.at(1, 0), to1);
        EXPECT_NE(ranks.at(c.rank, c.offset), 0);
        EXPECT_EQ(ranks.w(0).epochs_pending(), 0u);
    }
}

// Our window is never locked by us while we expose it, whichever comes first; the
// same sequences toward another rank (target 2) do reorder, so the keys are on.
TEST(ReorderExclusions, LockTowardSelfNeverActivatesBesideAnExposure) {
    for (int target : {0, 2}) {
        SCOPED_TRACE(target == 0 ? "lock toward self" : "control: lock toward rank 2");
        const bool reorders = target != 0;
        const std::int64_t locked = 141, from1 = 142;
        {  // exposure first, then the lock epoch
            SCOPED_TRACE("lock after post");
            Ranks ranks(3);
            Requests requests;
            ranks.set_every_key(true);
            Window &w0 = ranks.w(0);
            Request *wait0 = requests(post_wait(w0, {1}));
            Request *unlocked = requests(locked_put(w0, target, 0, &locked));
            ranks.settle();
            EXPECT_FALSE(wait0->complete());
            EXPECT_EQ(unlocked->complete(), reorders);
            EXPECT_EQ(ranks.at(target, 0), reorders ? locked : 0);
            EXPECT_EQ(w0.epochs_pending(), reorders ? 1u : 2u);
            requests(pscw_put(ranks.w(1), {0}, 0, 8, &from1));
            std::string violation;
            ranks.settle([&] {
                if (!reorders && ranks.at(target, 0) != 0 && !wait0->complete())
                    violation = "locked put on our own window while it was exposed";
            });
            EXPECT_TRUE(violation.empty()) << violation;
            EXPECT_TRUE(requests.all_complete_ok());
            EXPECT_EQ(ranks.at(target, 0), locked);
            EXPECT_EQ(ranks.at(0, 8), from1);
        }
        {  // the lock epoch first (blocked by rank 3's exclusive lock), then the exposure
            SCOPED_TRACE("post after lock");
            Ranks ranks(4);
            Requests requests;
            ranks.set_every_key(true);
            Window &w0 = ranks.w(0);
            ASSERT_EQ(ranks.w(3).lock(MPI_LOCK_EXCLUSIVE, target, 0), Status::ok);
            ranks.settle();
            Request *unlocked = requests(locked_put(w0, target, 0, &locked));
            Request *wait0 = requests(post_wait(w0, {1}));
            Request *complete1 = requests(pscw_put(ranks.w(1), {0}, 0, 8, &from1));
            ranks.settle();
            EXPECT_FALSE(unlocked->complete());
            EXPECT_EQ(ranks.grants(1, 0), reorders ? 1u : 0u);
            EXPECT_EQ(ranks.at(0, 8), reorders ? from1 : 0);
            EXPECT_EQ(complete1->complete(), reorders);
            EXPECT_EQ(wait0->complete(), reorders);
            requests(iunlock(ranks.w(3), target));
            std::string violation;
            ranks.settle([&] {
                if (!reorders && ranks.grants(1, 0) != 0 && !unlocked->complete())
                    violation = "exposed our window while our own lock epoch on it was active";
            });
            EXPECT_TRUE(violation.empty()) << violation;
            EXPECT_TRUE(requests.all_complete_ok());
            EXPECT_EQ(ranks.at(target, 0), locked);
            EXPECT_EQ(ranks.at(0, 8), from1);
        }
    }
}

// ================================================================ set_reorder

// Turning a key on lets an already deferred epoch activate at the next progress.
TEST(ReorderSetReorder, TurningAKeyOnActivatesADeferredEpoch) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0);
    ASSERT_EQ(ranks.w(2).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();
    const std::int64_t to1 = 151, to2 = 152;
    Request *unlock1 = requests(locked_put(w0, 1, 0, &to1));
    Request *unlock2 = requests(locked_put(w0, 2, 0, &to2));
    ranks.settle();
    EXPECT_FALSE(unlock2->complete());
    EXPECT_EQ(ranks.at(2, 0), 0);
    EXPECT_EQ(w0.epochs_pending(), 2u);

    w0.set_reorder(access_after_access, true);
    EXPECT_TRUE(w0.config().reorder[access_after_access]);
    ranks.settle();
    EXPECT_TRUE(unlock2->complete());
    EXPECT_EQ(ranks.at(2, 0), to2);
    EXPECT_FALSE(unlock1->complete());
    EXPECT_EQ(w0.epochs_pending(), 1u);

    requests(iunlock(ranks.w(2), 1));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), to1);
}

// Turning a key off leaves an epoch it already activated running, but epochs
// activated afterwards are serial again; turning it back on releases them.
TEST(ReorderSetReorder, TurningAKeyOffAppliesToEpochsActivatedAfterTheCall) {
    Ranks ranks(4);
    Requests requests;
    Window &w0 = ranks.w(0);
    w0.set_reorder(access_after_access, true);
    ASSERT_EQ(ranks.w(3).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();
    const std::int64_t to1 = 161, to2 = 162, to3 = 163;
    Request *unlock1 = requests(locked_put(w0, 1, 0, &to1));   // blocked
    Request *complete2 = requests(pscw_put(w0, {2}, 2, 0, &to2));  // active, no grant yet
    ranks.settle();
    EXPECT_EQ(w0.epochs_pending(), 2u);
    EXPECT_FALSE(complete2->complete());

    w0.set_reorder(access_after_access, false);
    Request *unlock3 = requests(locked_put(w0, 3, 0, &to3));
    requests(post_wait(ranks.w(2), {0}));
    ranks.settle();
    // The access epoch activated before the call: it completes beside the lock epoch.
    EXPECT_TRUE(complete2->complete());
    EXPECT_EQ(ranks.at(2, 0), to2);
    // The lock epoch toward rank 3 activates after it: serial.
    EXPECT_FALSE(unlock3->complete());
    EXPECT_EQ(ranks.at(3, 0), 0);
    EXPECT_FALSE(unlock1->complete());
    EXPECT_EQ(w0.epochs_pending(), 2u);

    w0.set_reorder(access_after_access, true);
    ranks.settle();
    EXPECT_TRUE(unlock3->complete());
    EXPECT_EQ(ranks.at(3, 0), to3);
    EXPECT_FALSE(unlock1->complete());
    EXPECT_EQ(w0.epochs_pending(), 1u);

    requests(iunlock(ranks.w(3), 1));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), to1);
    EXPECT_EQ(w0.epochs_pending(), 0u);
}

// The keys are per window: turning one on at another rank changes nothing here.
TEST(ReorderSetReorder, KeysArePerWindow) {
    Ranks ranks(3);
    Requests requests;
    for (int r : {1, 2})
        for (Reorder key : all_keys) ranks.w(r).set_reorder(key, true);
    for (Reorder key : all_keys) EXPECT_FALSE(ranks.w(0).config().reorder[key]);
    ASSERT_EQ(ranks.w(2).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();
    const std::int64_t to1 = 171, to2 = 172;
    Request *unlock1 = requests(locked_put(ranks.w(0), 1, 0, &to1));
    Request *unlock2 = requests(locked_put(ranks.w(0), 2, 0, &to2));
    ranks.settle();
    EXPECT_FALSE(unlock2->complete());
    EXPECT_EQ(ranks.at(2, 0), 0);
    requests(iunlock(ranks.w(2), 1));
    ranks.settle();
    EXPECT_TRUE(unlock1->complete());
    EXPECT_TRUE(requests.all_complete_ok());
}

}  // namespace
}  // namespace nbrma::engine
