// Lock epochs taken at once (Window::lock_at_once, sync::acquire_at_once /
// release_at_once): two windows of one process over real ShmTransports that map each
// other's control and window memory, as two ranks of a node do. Checked: the lock word
// after every step, the data, the requests handed back, and that every way out of the
// direct epoch (a second epoch, a queued requester, a fence) leaves an ordinary epoch
// the engine finishes correctly.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/log.hpp"
#include "engine/window.hpp"
#include "sim_fixture.hpp"
#include "sync/control_region.hpp"
#include "sync/lock_word.hpp"
#include "transport/shm/shm_transport.hpp"

namespace nbrma::engine {
namespace {

constexpr int nranks = 2;
constexpr std::size_t window_bytes = 64;

class LockAtOnce : public ::testing::Test {
  protected:
    void SetUp() override {
        std::vector<transport::shm::ShmPeer> peers(nranks);
        for (int r = 0; r < nranks; ++r) {
            control_[r].assign(layout_.size(), 0);
            peers[r].control = control_[r].data();
            peers[r].window = window_[r].data();
            peers[r].window_size = window_bytes;
        }
        WindowConfig config;
        config.sizes.assign(nranks, window_bytes);
        config.disp_units.assign(nranks, 1);
        for (int r = 0; r < nranks; ++r) {
            transports_[r] =
                std::make_unique<transport::shm::ShmTransport>(r, layout_.size(), peers);
            windows_[r] = std::make_unique<Window>(*transports_[r], layout_, config);
        }
    }

    sync::LockWord word(int target) const {
        return sync::LockWord::decode(__atomic_load_n(
            reinterpret_cast<const std::uint64_t *>(control_[target].data() +
                                                    sync::ControlLayout::lock_word),
            __ATOMIC_ACQUIRE));
    }
    std::int64_t cell(int rank, int index) const {
        return reinterpret_cast<const std::int64_t *>(window_[rank].data())[index];
    }
    // Progresses both windows until the request completes (bounded); false if it never did.
    bool finish(Request *request) {
        for (int round = 0; round < 1000 && !request->complete(); ++round)
            for (auto &window : windows_) window->progress();
        return request->complete();
    }

    sync::ControlLayout layout_{nranks};
    std::array<std::vector<std::uint8_t>, nranks> control_;
    std::array<std::array<std::uint8_t, window_bytes>, nranks> window_{};
    std::array<std::unique_ptr<transport::shm::ShmTransport>, nranks> transports_;
    std::array<std::unique_ptr<Window>, nranks> windows_;
};

TEST_F(LockAtOnce, SharedLockPutUnlockIsOneCasEachWayAndNoRequest) {
    const std::uint64_t at_once = counters().locks_at_once;
    const std::int64_t value = 0x1234;
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    EXPECT_EQ(counters().locks_at_once, at_once + 1);
    EXPECT_EQ(word(1).active, 1u);
    EXPECT_EQ(w.epochs_pending(), 0u);  // no Epoch object
    EXPECT_TRUE(w.idle());
    EXPECT_TRUE(w.has_open_epoch());
    ASSERT_EQ(w.rma(simtest::put_call(1, 8, &value), nullptr), Status::ok);
    EXPECT_EQ(cell(1, 1), value);
    Request *flushed = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.flush(1, &flushed), Status::ok);
    EXPECT_EQ(flushed, nullptr);  // complete inside the call
    Request *request = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.unlock(1, &request), Status::ok);
    EXPECT_EQ(request, nullptr);
    EXPECT_EQ(word(1).encode(), 0u);
    EXPECT_FALSE(w.has_open_epoch());
}

TEST_F(LockAtOnce, ExclusiveHeldElsewhereQueuesAndIsHandedOverByTheOrdinaryRelease) {
    Window &first = *windows_[0];
    Window &second = *windows_[1];
    ASSERT_EQ(first.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    EXPECT_EQ(word(1).tail, 1u);  // rank 0 + 1
    // Rank 1 asks for the same lock: not free, so it queues behind rank 0 (an Epoch).
    ASSERT_EQ(second.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    EXPECT_EQ(second.epochs_pending(), 1u);
    EXPECT_EQ(word(1).tail, 2u);
    const std::int64_t a = 11, b = 22;
    ASSERT_EQ(first.rma(simtest::put_call(1, 0, &a), nullptr), Status::ok);
    // recorded: not granted yet
    ASSERT_EQ(second.rma(simtest::put_call(1, 0, &b), nullptr), Status::ok);
    EXPECT_EQ(cell(1, 0), a);
    // The release must hand the lock to rank 1: not at once, an ordinary epoch does it.
    Request *released = nullptr;
    ASSERT_EQ(first.unlock(1, &released), Status::ok);
    ASSERT_NE(released, nullptr);
    EXPECT_TRUE(finish(released));
    EXPECT_EQ(released->status(), Status::ok);
    released->release();
    Request *done = nullptr;
    ASSERT_EQ(second.unlock(1, &done), Status::ok);
    ASSERT_NE(done, nullptr);
    EXPECT_TRUE(finish(done));
    done->release();
    EXPECT_EQ(cell(1, 0), b);  // rank 1's put ran after the hand-over
    EXPECT_EQ(word(1).encode(), 0u);
}

TEST_F(LockAtOnce, ASecondLockTurnsTheFirstIntoAnOrdinaryEpoch) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    EXPECT_EQ(w.epochs_pending(), 0u);
    ASSERT_EQ(w.lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    EXPECT_EQ(w.epochs_pending(), 2u);  // materialized, then the second
    const std::int64_t x = 5, y = 6;
    ASSERT_EQ(w.rma(simtest::put_call(1, 16, &x), nullptr), Status::ok);
    ASSERT_EQ(w.rma(simtest::put_call(0, 16, &y), nullptr), Status::ok);
    Request *first = nullptr, *second = nullptr;
    ASSERT_EQ(w.unlock(1, &first), Status::ok);
    ASSERT_EQ(w.unlock(0, &second), Status::ok);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(finish(first));
    EXPECT_TRUE(finish(second));
    first->release();
    second->release();
    EXPECT_EQ(cell(1, 2), x);
    EXPECT_EQ(cell(0, 2), y);
    EXPECT_EQ(word(0).encode(), 0u);
    EXPECT_EQ(word(1).encode(), 0u);
    EXPECT_EQ(w.epochs_pending(), 0u);
}

TEST_F(LockAtOnce, RefusedCallsInsideLeaveTheEpochWorking) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    Request *request = nullptr;
    EXPECT_EQ(w.fence(0, &request), Status::err_sync);
    EXPECT_EQ(w.unlock(0, &request), Status::err_sync);
    EXPECT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::err_sync);
    const std::int64_t v = 9;
    // rank 0 is not locked
    EXPECT_EQ(w.rma(simtest::put_call(0, 0, &v), nullptr), Status::err_sync);
    EXPECT_EQ(w.flush(7, &request), Status::err_rank);  // outside the window's ranks
    ASSERT_EQ(w.rma(simtest::put_call(1, 0, &v), nullptr), Status::ok);
    ASSERT_EQ(w.unlock(1, &request), Status::ok);
    if (request) {
        EXPECT_TRUE(finish(request));
        request->release();
    }
    EXPECT_EQ(cell(1, 0), v);
    EXPECT_EQ(word(1).encode(), 0u);
}

TEST_F(LockAtOnce, NoCheckTouchesNoLockWord) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_EXCLUSIVE, 1, MPI_MODE_NOCHECK), Status::ok);
    EXPECT_EQ(word(1).encode(), 0u);
    Request *request = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.unlock(1, &request), Status::ok);
    EXPECT_EQ(request, nullptr);
    EXPECT_EQ(word(1).encode(), 0u);
}

TEST_F(LockAtOnce, LockAllTakesEachTargetAtItsFirstCallAndHandsOverWhatIsQueued) {
    Window &all = *windows_[0];
    Window &writer = *windows_[1];
    ASSERT_EQ(all.lock_all(0), Status::ok);
    EXPECT_EQ(all.epochs_pending(), 0u);
    EXPECT_EQ(word(0).encode(), 0u);  // no lock before a call toward the target
    EXPECT_EQ(word(1).encode(), 0u);
    const std::int64_t a = 3, b = 4;
    ASSERT_EQ(all.rma(simtest::put_call(1, 24, &a), nullptr), Status::ok);
    EXPECT_EQ(word(1).active, 1u);
    EXPECT_EQ(word(0).encode(), 0u);
    Request *flushed = reinterpret_cast<Request *>(1);
    ASSERT_EQ(all.flush(0, &flushed), Status::ok);  // a target not locked yet: nothing to do
    EXPECT_EQ(flushed, nullptr);
    ASSERT_EQ(all.rma(simtest::put_call(0, 24, &b), nullptr), Status::ok);
    EXPECT_EQ(word(0).active, 1u);
    // Rank 1 wants target 1 exclusively: it queues as head behind our shared lock.
    ASSERT_EQ(writer.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    EXPECT_EQ(writer.epochs_pending(), 1u);
    EXPECT_EQ(word(1).head, 2u);
    // unlock_all releases target 0 at once, hands target 1 over through an ordinary
    // lock_all epoch.
    Request *released = nullptr;
    ASSERT_EQ(all.unlock_all(&released), Status::ok);
    ASSERT_NE(released, nullptr);
    EXPECT_TRUE(finish(released));
    EXPECT_EQ(released->status(), Status::ok);
    released->release();
    EXPECT_EQ(word(0).encode(), 0u);
    const std::int64_t c = 5;
    ASSERT_EQ(writer.rma(simtest::put_call(1, 24, &c), nullptr), Status::ok);
    Request *done = nullptr;
    ASSERT_EQ(writer.unlock(1, &done), Status::ok);
    ASSERT_NE(done, nullptr);
    EXPECT_TRUE(finish(done));
    done->release();
    EXPECT_EQ(cell(0, 3), b);
    EXPECT_EQ(cell(1, 3), c);  // after ours: the writer held it exclusively afterwards
    EXPECT_EQ(word(1).encode(), 0u);
}

TEST_F(LockAtOnce, LockAllAtOnceReleasesEveryTargetWhenNobodyWaits) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock_all(0), Status::ok);
    const std::int64_t v = 8;
    ASSERT_EQ(w.rma(simtest::put_call(0, 32, &v), nullptr), Status::ok);
    ASSERT_EQ(w.rma(simtest::put_call(1, 32, &v), nullptr), Status::ok);
    Request *flushed = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.flush(-1, &flushed), Status::ok);
    EXPECT_EQ(flushed, nullptr);
    Request *request = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.unlock_all(&request), Status::ok);
    EXPECT_EQ(request, nullptr);
    EXPECT_EQ(word(0).encode(), 0u);
    EXPECT_EQ(word(1).encode(), 0u);
    EXPECT_EQ(cell(0, 4), v);
    EXPECT_EQ(cell(1, 4), v);
    EXPECT_FALSE(w.has_open_epoch());
}

}  // namespace
}  // namespace nbrma::engine
