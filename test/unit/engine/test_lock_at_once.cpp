// Lock epochs taken at once (Window::take_at_once, sync::AtOnceLocks: acquire /
// release): two windows of one process over real ShmTransports that map each
// other's control and window memory, as two ranks of a node do. Checked: the lock word
// after every step, the data, the requests handed back, and that every way an at-once
// epoch cannot finish in the caller (a queued requester, a lock_all target not free)
// hands it to the queue, which finishes it correctly. Also the calls an at-once epoch
// runs without an Operation (Window::rma_contiguous, rma_atomic): the data, and that every call
// those paths do not take still runs, or is refused, through the general path; and the
// same paths in fence and PSCW epochs, only toward a target the epoch may reach.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "shm_ranks.hpp"
#include "sim_fixture.hpp"
#include "sync/lock_word.hpp"
#include "transport/shm/shm_transport.hpp"

namespace nbrma::engine {
namespace {

constexpr int nranks = 2;
constexpr std::size_t window_bytes = 64;

class LockAtOnce : public ::testing::Test {
  protected:
    std::uint64_t control_word(int rank, std::size_t offset) const {
        return __atomic_load_n(
            reinterpret_cast<const std::uint64_t *>(control_[rank].data() + offset),
            __ATOMIC_ACQUIRE);
    }
    sync::LockWord word(int target) const {
        return sync::LockWord::decode(__atomic_load_n(
            reinterpret_cast<const std::uint64_t *>(control_[target].data() +
                                                    layout::ControlLayout::lock_word),
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
    // Finishes each request, expects it to have succeeded, releases it.
    void finish_ok(std::initializer_list<Request *> requests) {
        for (Request *request : requests) {
            ASSERT_NE(request, nullptr);
            EXPECT_TRUE(finish(request));
            EXPECT_EQ(request->status(), Status::ok);
            request->release();
        }
    }

    ShmRanks ranks_{nranks, window_bytes, false};
    std::vector<std::vector<std::uint8_t>> &control_ = ranks_.control;
    std::vector<std::vector<std::uint8_t>> &window_ = ranks_.memory;
    std::vector<std::unique_ptr<Window>> &windows_ = ranks_.windows;
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

// A second lock opened beside the first is queued (one at-once epoch at a time) and
// activates beside it; the first stays at once and completes inside its unlock.
TEST_F(LockAtOnce, ASecondLockOpensQueuedBesideTheFirstWhichStaysAtOnce) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    EXPECT_EQ(w.epochs_pending(), 0u);
    ASSERT_EQ(w.lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    EXPECT_EQ(w.epochs_pending(), 1u);  // the second alone
    EXPECT_EQ(word(0).tail, 1u);        // granted beside the first (rank 0 + 1)
    const std::int64_t x = 5, y = 6;
    ASSERT_EQ(w.rma(simtest::put_call(1, 16, &x), nullptr), Status::ok);
    ASSERT_EQ(w.rma(simtest::put_call(0, 16, &y), nullptr), Status::ok);
    Request *first = reinterpret_cast<Request *>(1), *second = nullptr;
    ASSERT_EQ(w.unlock(1, &first), Status::ok);
    EXPECT_EQ(first, nullptr);  // at once
    EXPECT_EQ(word(1).encode(), 0u);
    ASSERT_EQ(w.unlock(0, &second), Status::ok);
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(finish(second));
    second->release();
    EXPECT_EQ(cell(1, 2), x);
    EXPECT_EQ(cell(0, 2), y);
    EXPECT_EQ(word(0).encode(), 0u);
    EXPECT_EQ(w.epochs_pending(), 0u);
}

// An at-once epoch whose release must hand its lock over joins the queue (in its place
// by id, ahead of the epoch opened beside it later), which hands the lock over; the
// epoch beside it is not disturbed.
TEST_F(LockAtOnce, AnAtOnceEpochThatMustHandOverJoinsTheQueueBesideALaterEpoch) {
    Window &w = *windows_[0];
    Window &writer = *windows_[1];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);          // at once
    ASSERT_EQ(writer.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);  // waits for it
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 0, 0), Status::ok);          // queued, beside it
    EXPECT_EQ(w.epochs_pending(), 1u);
    const std::int64_t mine = 31, theirs = 32;
    ASSERT_EQ(w.rma(simtest::put_call(1, 40, &mine), nullptr), Status::ok);
    ASSERT_EQ(writer.rma(simtest::put_call(1, 40, &theirs), nullptr), Status::ok);
    EXPECT_EQ(cell(1, 5), mine);  // the writer's put waits for its grant
    Request *first = nullptr;
    ASSERT_EQ(w.unlock(1, &first), Status::ok);
    ASSERT_NE(first, nullptr);  // the hand-over is the queued path's
    Request *done = nullptr;
    ASSERT_EQ(writer.unlock(1, &done), Status::ok);
    finish_ok({first, done});
    EXPECT_EQ(cell(1, 5), theirs);
    EXPECT_EQ(word(1).encode(), 0u);
    EXPECT_TRUE(w.has_open_epoch());  // the second lock, still held
    Request *second = nullptr;
    ASSERT_EQ(w.unlock(0, &second), Status::ok);
    finish_ok({second});
    EXPECT_EQ(word(0).encode(), 0u);
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

// A call of `kind` with one 8-byte-aligned buffer of `count` elements of `type` at
// `target`'s displacement `displacement`.
RmaCall data_call(RmaKind kind, void *buffer, int count, MPI_Datatype type, int target,
                  MPI_Aint displacement) {
    RmaCall call = simtest::put_call(target, displacement, nullptr);
    call.kind = kind;
    call.target_count = count;
    call.target_type = type;
    if (kind == RmaKind::put) {
        call.origin = buffer;
        call.origin_count = count;
        call.origin_type = type;
    } else {
        call.origin_count = 0;
        call.origin_type = MPI_DATATYPE_NULL;
        call.result = buffer;
        call.result_count = count;
        call.result_type = type;
    }
    return call;
}

TEST_F(LockAtOnce, ContiguousPutAndGetRunAtOnceAndTheRestTakesTheGeneralPath) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    const std::uint64_t ops = counters().rma_ops;
    std::int64_t three[3] = {-31, -32, -33};  // every byte set: a short copy shows
    ASSERT_EQ(w.rma(data_call(RmaKind::put, three, 3, MPI_INT64_T, 1, 8), nullptr), Status::ok);
    EXPECT_EQ(cell(1, 1), -31);
    EXPECT_EQ(cell(1, 3), -33);
    std::int64_t back[3] = {};
    ASSERT_EQ(w.rma(data_call(RmaKind::get, back, 3, MPI_INT64_T, 1, 8), nullptr), Status::ok);
    EXPECT_EQ(back[0], -31);
    EXPECT_EQ(back[2], -33);
    // A derived type that is one block at offset 0 goes the same way, as bytes.
    MPI_Datatype pair;
    ASSERT_EQ(MPI_Type_contiguous(2, MPI_INT64_T, &pair), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&pair), MPI_SUCCESS);
    std::int64_t two[2] = {-41, -42};
    ASSERT_EQ(w.rma(data_call(RmaKind::put, two, 1, pair, 1, 40), nullptr), Status::ok);
    EXPECT_EQ(cell(1, 5), -41);
    EXPECT_EQ(cell(1, 6), -42);
    // Not contiguous: the general path scatters it (cells 0 and 2).
    MPI_Datatype strided;
    ASSERT_EQ(MPI_Type_vector(2, 1, 2, MPI_INT64_T, &strided), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&strided), MPI_SUCCESS);
    RmaCall scatter = data_call(RmaKind::put, two, 1, strided, 1, 0);
    scatter.origin_count = 2;
    scatter.origin_type = MPI_INT64_T;
    ASSERT_EQ(w.rma(scatter, nullptr), Status::ok);
    EXPECT_EQ(cell(1, 0), -41);
    EXPECT_EQ(cell(1, 1), -31);  // untouched between the two
    EXPECT_EQ(cell(1, 2), -42);
    EXPECT_EQ(counters().rma_ops, ops + 4);
    // Refused as before, with the general path's cause: past the window's end, sizes
    // that differ, a negative count, a negative displacement.
    const char *cause = nullptr;
    EXPECT_EQ(w.rma(data_call(RmaKind::put, three, 3, MPI_INT64_T, 1, 48), nullptr, &cause),
              Status::err_range);
    RmaCall differ = data_call(RmaKind::put, three, 2, MPI_INT64_T, 1, 0);
    differ.origin_count = 3;
    EXPECT_EQ(w.rma(differ, nullptr, &cause), Status::err_type);
    ASSERT_NE(cause, nullptr);
    EXPECT_STREQ(cause, "origin and target data sizes differ");
    EXPECT_EQ(w.rma(data_call(RmaKind::get, back, -1, MPI_INT64_T, 1, 0), nullptr),
              Status::err_count);
    EXPECT_EQ(w.rma(data_call(RmaKind::get, back, 1, MPI_INT64_T, 1, -8), nullptr),
              Status::err_range);
    EXPECT_EQ(counters().rma_ops, ops + 4);
    EXPECT_EQ(cell(1, 6), -42);  // the refused put at 48 wrote nothing
    Request *request = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.unlock(1, &request), Status::ok);
    EXPECT_EQ(request, nullptr);
    EXPECT_EQ(word(1).encode(), 0u);
    MPI_Type_free(&pair);
    MPI_Type_free(&strided);
}

TEST_F(LockAtOnce, FetchAndOpAndCompareAndSwapRunAsOneAtomicAtOnce) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    auto fop = [&](const void *origin, void *result, MPI_Datatype type, MPI_Op op,
                   MPI_Aint displacement) {
        RmaCall call = data_call(RmaKind::fetch_and_op, nullptr, 1, type, 1, displacement);
        call.origin = origin;
        call.origin_count = 1;
        call.origin_type = type;
        call.result = result;
        call.op = op;
        return w.rma(call, nullptr);
    };
    const std::int64_t five = 5, nine = 9;
    std::int64_t old = -1;
    ASSERT_EQ(fop(&five, &old, MPI_INT64_T, MPI_SUM, 16), Status::ok);
    EXPECT_EQ(old, 0);
    ASSERT_EQ(fop(&five, &old, MPI_INT64_T, MPI_SUM, 16), Status::ok);  // the shape, remembered
    EXPECT_EQ(old, 5);
    EXPECT_EQ(cell(1, 2), 10);
    ASSERT_EQ(fop(nullptr, &old, MPI_INT64_T, MPI_NO_OP, 16), Status::ok);  // origin unread
    EXPECT_EQ(old, 10);
    ASSERT_EQ(fop(&nine, &old, MPI_INT64_T, MPI_REPLACE, 16), Status::ok);
    EXPECT_EQ(cell(1, 2), 9);
    // Not one 64-bit integer atomic: doubles (the general path, under the accumulate
    // lock), and a 4-byte type.
    const double half = 0.5;
    double sum = -1;
    ASSERT_EQ(fop(&half, &sum, MPI_DOUBLE, MPI_SUM, 24), Status::ok);
    ASSERT_EQ(fop(&half, &sum, MPI_DOUBLE, MPI_SUM, 24), Status::ok);
    EXPECT_EQ(sum, 0.5);
    double total = 0;
    std::memcpy(&total, window_[1].data() + 24, sizeof total);
    EXPECT_EQ(total, 1.0);
    const std::int32_t three = 3;
    std::int32_t small = -1;
    ASSERT_EQ(fop(&three, &small, MPI_INT32_T, MPI_SUM, 32), Status::ok);
    EXPECT_EQ(small, 0);
    // Refused as before: an op with no meaning for the type, a derived type, past the end.
    EXPECT_EQ(fop(&half, &sum, MPI_DOUBLE, MPI_BAND, 24), Status::err_op);
    MPI_Datatype derived;
    ASSERT_EQ(MPI_Type_contiguous(1, MPI_INT64_T, &derived), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&derived), MPI_SUCCESS);
    EXPECT_EQ(fop(&five, &old, derived, MPI_SUM, 16), Status::err_type);
    MPI_Type_free(&derived);
    EXPECT_EQ(fop(&five, &old, MPI_INT64_T, MPI_SUM, 60), Status::err_range);
    EXPECT_EQ(cell(1, 2), 9);
    // A word that is not 8-byte aligned (MPI allows any displacement): under the
    // accumulate lock, in the at-once epoch and in accumulates, with the same results.
    ASSERT_EQ(fop(&five, &old, MPI_INT64_T, MPI_SUM, 36), Status::ok);
    ASSERT_EQ(fop(&nine, &old, MPI_INT64_T, MPI_SUM, 36), Status::ok);
    EXPECT_EQ(old, 5);
    std::int64_t unaligned = 0;
    std::memcpy(&unaligned, window_[1].data() + 36, sizeof unaligned);
    EXPECT_EQ(unaligned, 14);
    // A one-element accumulate of an 8-byte integer: one atomic too (sum, replace, a
    // bitwise op); MPI_NO_OP, which MPI allows in fetching calls only, is refused.
    auto acc = [&](const void *origin, MPI_Op op, MPI_Aint displacement) {
        RmaCall call = data_call(RmaKind::put, const_cast<void *>(origin), 1, MPI_INT64_T, 1,
                                 displacement);
        call.kind = RmaKind::accumulate;
        call.op = op;
        return w.rma(call, nullptr);
    };
    const std::int64_t mask = 0x0f;
    ASSERT_EQ(acc(&five, MPI_SUM, 40), Status::ok);
    ASSERT_EQ(acc(&nine, MPI_SUM, 40), Status::ok);
    EXPECT_EQ(cell(1, 5), 14);
    EXPECT_EQ(acc(&five, MPI_NO_OP, 40), Status::err_op);
    EXPECT_EQ(cell(1, 5), 14);
    ASSERT_EQ(acc(&mask, MPI_BAND, 40), Status::ok);
    EXPECT_EQ(cell(1, 5), 14 & 0x0f);
    ASSERT_EQ(acc(&nine, MPI_REPLACE, 40), Status::ok);
    EXPECT_EQ(cell(1, 5), 9);
    EXPECT_EQ(acc(&five, MPI_SUM, 60), Status::err_range);  // refused as before
    EXPECT_EQ(cell(1, 5), 9);
    const std::int64_t pair[2] = {-3, -4};
    RmaCall accumulate = data_call(RmaKind::put, const_cast<std::int64_t *>(pair), 2,
                                   MPI_INT64_T, 1, 44);
    accumulate.kind = RmaKind::accumulate;
    accumulate.op = MPI_SUM;
    ASSERT_EQ(w.rma(accumulate, nullptr), Status::ok);
    std::memcpy(&unaligned, window_[1].data() + 44, sizeof unaligned);
    EXPECT_EQ(unaligned, -3);
    std::memcpy(&unaligned, window_[1].data() + 52, sizeof unaligned);
    EXPECT_EQ(unaligned, -4);
    // compare_and_swap: swaps only on a match, returns the old value either way.
    RmaCall swap = data_call(RmaKind::compare_and_swap, nullptr, 1, MPI_INT64_T, 1, 16);
    const std::int64_t wrong = 8, right = 9, fresh = 77;
    swap.origin = &fresh;
    swap.origin_count = 1;
    swap.origin_type = MPI_INT64_T;
    swap.result = &old;
    swap.compare = &wrong;
    ASSERT_EQ(w.rma(swap, nullptr), Status::ok);
    EXPECT_EQ(old, 9);
    EXPECT_EQ(cell(1, 2), 9);
    swap.compare = &right;
    ASSERT_EQ(w.rma(swap, nullptr), Status::ok);
    EXPECT_EQ(old, 9);
    EXPECT_EQ(cell(1, 2), 77);
    // An accumulate of several 8-byte integers: one atomic an element; a vector that
    // does not fit is refused whole (nothing added), as the general path refuses it.
    const std::int64_t vector[4] = {1, 20, 300, -4000};
    std::int64_t before[4];
    for (int i = 0; i < 4; ++i) before[i] = cell(1, i);
    RmaCall sum4 = data_call(RmaKind::put, const_cast<std::int64_t *>(vector), 4, MPI_INT64_T,
                             1, 0);
    sum4.kind = RmaKind::accumulate;
    sum4.op = MPI_SUM;
    ASSERT_EQ(w.rma(sum4, nullptr), Status::ok);
    ASSERT_EQ(w.rma(sum4, nullptr), Status::ok);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(cell(1, i), before[i] + 2 * vector[i]) << i;
    const std::int64_t tail5 = cell(1, 5), tail6 = cell(1, 6), tail7 = cell(1, 7);
    sum4.displacement = 40;  // cells 5, 6, 7 and one past the 64-byte window
    EXPECT_EQ(w.rma(sum4, nullptr), Status::err_range);
    EXPECT_EQ(cell(1, 5), tail5);
    EXPECT_EQ(cell(1, 6), tail6);
    EXPECT_EQ(cell(1, 7), tail7);
    sum4.displacement = 0;
    sum4.op = MPI_REPLACE;
    ASSERT_EQ(w.rma(sum4, nullptr), Status::ok);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(cell(1, i), vector[i]) << i;
    Request *request = reinterpret_cast<Request *>(1);
    ASSERT_EQ(w.unlock(1, &request), Status::ok);
    EXPECT_EQ(request, nullptr);
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
    EXPECT_TRUE(word(1).head);
    EXPECT_EQ(control_word(1, layout::ControlLayout::head_rank), 2u);  // rank 1 + 1
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

// access_after_access_reorder (SC14 §VI-B): a lock toward a free target passes a queued
// lock epoch toward another target (Window::may_activate) and is taken at once; its
// calls land at once while the queued epoch still waits for its grant. Without the key
// the same lock queues behind it.
TEST_F(LockAtOnce, WithAccessAfterAccessReorderALockPassesAQueuedEpochAtOnce) {
    Window &origin = *windows_[0];
    Window &holder = *windows_[1];
    origin.set_reorder(access_after_access, true);
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);  // target 1 busy
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);  // queues behind it
    EXPECT_EQ(origin.epochs_pending(), 1u);
    const std::int64_t queued = 41, passed = 42;
    ASSERT_EQ(origin.rma(simtest::put_call(1, 8, &queued), nullptr), Status::ok);
    Request *first = nullptr;
    ASSERT_EQ(origin.unlock(1, &first), Status::ok);
    ASSERT_NE(first, nullptr);
    EXPECT_FALSE(first->complete());

    const std::uint64_t at_once = counters().locks_at_once;
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    EXPECT_EQ(counters().locks_at_once, at_once + 1);
    EXPECT_EQ(origin.epochs_pending(), 1u);  // no Epoch for the lock taken at once
    EXPECT_EQ(word(0).tail, 1u);             // rank 0 holds its own lock
    ASSERT_EQ(origin.rma(simtest::put_call(0, 8, &passed), nullptr), Status::ok);
    EXPECT_EQ(cell(0, 1), passed);  // ran at once
    EXPECT_NE(cell(1, 1), queued);  // the queued epoch's put still waits for its grant
    // flush_all inside it must cover the queued epoch too: not complete yet.
    Request *flushed = nullptr;
    ASSERT_EQ(origin.flush(-1, &flushed), Status::ok);
    ASSERT_NE(flushed, nullptr);
    EXPECT_FALSE(flushed->complete());
    Request *second = reinterpret_cast<Request *>(1);
    ASSERT_EQ(origin.unlock(0, &second), Status::ok);
    EXPECT_EQ(second, nullptr);  // still at once: the flush waits for the queued epoch alone
    EXPECT_FALSE(first->complete());

    // The queued epoch polls for the lock (polite, with the key) instead of queueing at
    // the target: the holder's release finds nobody queued and is done at once.
    Request *released = reinterpret_cast<Request *>(1);
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    EXPECT_EQ(released, nullptr);
    finish_ok({first, flushed});
    EXPECT_EQ(cell(1, 1), queued);
    EXPECT_EQ(word(0).encode(), 0u);
    EXPECT_EQ(word(1).encode(), 0u);
    EXPECT_EQ(origin.epochs_pending(), 0u);
}

TEST_F(LockAtOnce, WithoutTheReorderKeyALockQueuesBehindAQueuedEpoch) {
    Window &origin = *windows_[0];
    Window &holder = *windows_[1];
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    Request *first = nullptr;
    ASSERT_EQ(origin.unlock(1, &first), Status::ok);
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    EXPECT_EQ(origin.epochs_pending(), 2u);  // an Epoch, waiting for the first to complete
    EXPECT_EQ(word(0).encode(), 0u);         // not even requested yet
    const std::int64_t value = 7;
    ASSERT_EQ(origin.rma(simtest::put_call(0, 8, &value), nullptr), Status::ok);
    EXPECT_NE(cell(0, 1), value);
    Request *second = nullptr;
    ASSERT_EQ(origin.unlock(0, &second), Status::ok);
    Request *released = nullptr;
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    finish_ok({released, first, second});
    EXPECT_EQ(cell(0, 1), value);
    EXPECT_EQ(word(0).encode(), 0u);
    EXPECT_EQ(word(1).encode(), 0u);
}

// The same target never passes: a second lock toward a target whose earlier epoch is
// still queued waits for it, key or not.
TEST_F(LockAtOnce, ALockTowardTheQueuedEpochsTargetNeverPassesIt) {
    Window &origin = *windows_[0];
    Window &holder = *windows_[1];
    origin.set_reorder(access_after_access, true);
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ASSERT_EQ(origin.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    Request *first = nullptr;
    ASSERT_EQ(origin.unlock(1, &first), Status::ok);
    const std::uint64_t at_once = counters().locks_at_once;
    ASSERT_EQ(origin.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    EXPECT_EQ(counters().locks_at_once, at_once);
    EXPECT_EQ(origin.epochs_pending(), 2u);
    Request *second = nullptr;
    ASSERT_EQ(origin.unlock(1, &second), Status::ok);
    Request *released = reinterpret_cast<Request *>(1);
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    EXPECT_EQ(released, nullptr);  // the first epoch polls: nobody queued (polite locks)
    finish_ok({first, second});
    EXPECT_EQ(word(1).encode(), 0u);
}

// Polite locks (Window::polite_locks): with access_after_access_reorder, a lock epoch
// toward a busy target does not join the target's queue; each sweep tries the lock with
// one CAS, so the lock is never handed to a rank that is not running its progress. The
// holder's release then has nobody to hand over to.
TEST_F(LockAtOnce, WithTheReorderKeyABusyTargetIsPolledNotQueued) {
    Window &origin = *windows_[0];
    Window &holder = *windows_[1];
    origin.set_reorder(access_after_access, true);
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    const std::uint64_t held = word(1).encode();
    EXPECT_EQ(word(1).tail, 2u);  // rank 1 + 1
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    const std::int64_t value = 77;
    ASSERT_EQ(origin.rma(simtest::put_call(1, 16, &value), nullptr), Status::ok);
    Request *unlocked = nullptr;
    ASSERT_EQ(origin.unlock(1, &unlocked), Status::ok);
    ASSERT_NE(unlocked, nullptr);
    // Fewer sweeps than polls allowed (the calls above may have polled too).
    for (int sweep = 0; sweep < Window::polite_polls / 4; ++sweep) origin.progress();
    EXPECT_EQ(word(1).encode(), held);  // polled, never queued: the word is the holder's
    EXPECT_FALSE(unlocked->complete());
    EXPECT_NE(cell(1, 2), value);
    Request *released = reinterpret_cast<Request *>(1);
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    EXPECT_EQ(released, nullptr);  // nobody to hand over to
    EXPECT_EQ(word(1).encode(), 0u);
    const std::uint64_t grants = counters().lock_grants;
    origin.progress();  // one sweep: the poll takes the lock, the put runs, the lock goes
    EXPECT_TRUE(unlocked->complete());
    EXPECT_EQ(counters().lock_grants, grants + 1);
    finish_ok({unlocked});
    EXPECT_EQ(cell(1, 2), value);
    EXPECT_EQ(word(1).encode(), 0u);
}

// A polite lock that found the target busy polite_polls times joins the FIFO queue, so
// it cannot starve, and is handed over by the ordinary release.
TEST_F(LockAtOnce, APoliteLockQueuesAfterItsPolls) {
    Window &origin = *windows_[0];
    Window &holder = *windows_[1];
    origin.set_reorder(access_after_access, true);
    ASSERT_EQ(holder.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ASSERT_EQ(origin.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    Request *unlocked = nullptr;
    ASSERT_EQ(origin.unlock(1, &unlocked), Status::ok);
    for (int sweep = 0; sweep < Window::polite_polls; ++sweep) origin.progress();
    EXPECT_EQ(word(1).tail, 1u);  // queued now: rank 0 + 1 is the tail
    Request *released = nullptr;
    ASSERT_EQ(holder.unlock(1, &released), Status::ok);
    ASSERT_NE(released, nullptr);  // the release hands the lock over
    finish_ok({released, unlocked});
    EXPECT_EQ(word(1).encode(), 0u);
}

// The window remembers the last target's lock word (sync::AtOnceLocks): locks that
// alternate between targets and modes each CAS the word of their own target.
TEST_F(LockAtOnce, LocksAlternatingBetweenTargetsEachTakeTheirTargetsWord) {
    Window &w = *windows_[0];
    Request *request = nullptr;
    for (int round = 0; round < 3; ++round) {
        for (int target : {1, 0, 1}) {
            const bool exclusive = (round + target) % 2 == 0;
            ASSERT_EQ(w.lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, target, 0),
                      Status::ok);
            EXPECT_EQ(word(target).tail, exclusive ? 1u : 0u);  // rank 0 + 1
            EXPECT_EQ(word(target).active, exclusive ? 0u : 1u);
            EXPECT_EQ(word(1 - target).encode(), 0u);
            ASSERT_EQ(w.unlock(target, &request), Status::ok);
            EXPECT_EQ(request, nullptr);
            EXPECT_EQ(word(target).encode(), 0u);
        }
    }
    // Held by rank 1: rank 0's lock of the same word queues, and is granted in turn.
    ASSERT_EQ(windows_[1]->lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    ASSERT_EQ(w.lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    EXPECT_EQ(w.epochs_pending(), 1u);
    finish_ok({simtest::iunlock(*windows_[1], 0), simtest::iunlock(w, 0)});
    EXPECT_EQ(word(0).encode(), 0u);
}

// Fence and PSCW epochs over shared memory run their blocking calls at once, without an
// Operation (Window::run_now), but only toward a target they may reach: a
// put before the fence barrier passed waits for it, as does one toward a target whose
// post has not matched.
TEST_F(LockAtOnce, ActiveTargetCallsRunAtOnceOnlyOnceTheTargetIsReachable) {
    Window &w0 = *windows_[0];
    Window &w1 = *windows_[1];
    const std::int64_t early = 7, late = 8, added = 5;
    Request *opened = simtest::ifence(w0, 0);  // rank 1 has not entered the fence yet
    ASSERT_EQ(
        w0.rma(data_call(RmaKind::put, const_cast<std::int64_t *>(&early), 1, MPI_INT64_T, 1, 0),
               nullptr),
        Status::ok);
    EXPECT_EQ(cell(1, 0), 0);  // recorded
    finish_ok({opened, simtest::ifence(w1, 0)});
    EXPECT_EQ(cell(1, 0), early);  // replayed once the barrier passed
    ASSERT_EQ(
        w0.rma(data_call(RmaKind::put, const_cast<std::int64_t *>(&late), 1, MPI_INT64_T, 1, 8),
               nullptr),
        Status::ok);
    EXPECT_EQ(cell(1, 1), late);  // at once
    RmaCall accumulate =
        data_call(RmaKind::put, const_cast<std::int64_t *>(&added), 1, MPI_INT64_T, 1, 8);
    accumulate.kind = RmaKind::accumulate;
    accumulate.op = MPI_SUM;
    ASSERT_EQ(w0.rma(accumulate, nullptr), Status::ok);
    EXPECT_EQ(cell(1, 1), late + added);
    std::int64_t back = 0;
    ASSERT_EQ(w0.rma(data_call(RmaKind::get, &back, 1, MPI_INT64_T, 1, 8), nullptr), Status::ok);
    EXPECT_EQ(back, late + added);
    const char *cause = nullptr;  // refused with the general path's cause
    EXPECT_EQ(
        w0.rma(data_call(RmaKind::put, &back, 1, MPI_INT64_T, 1, window_bytes), nullptr, &cause),
        Status::err_range);
    finish_ok({simtest::ifence(w0, MPI_MODE_NOSUCCEED), simtest::ifence(w1, MPI_MODE_NOSUCCEED)});

    // PSCW: rank 0's access epoch toward rank 1, which has not posted yet.
    ASSERT_EQ(w0.start({1}, 0), Status::ok);
    ASSERT_EQ(
        w0.rma(data_call(RmaKind::put, const_cast<std::int64_t *>(&early), 1, MPI_INT64_T, 1, 16),
               nullptr),
        Status::ok);
    EXPECT_EQ(cell(1, 2), 0);  // recorded: no grant
    ASSERT_EQ(w1.post({0}, 0), Status::ok);
    for (int round = 0; round < 10; ++round) w0.progress();
    EXPECT_EQ(cell(1, 2), early);
    ASSERT_EQ(
        w0.rma(data_call(RmaKind::put, const_cast<std::int64_t *>(&late), 1, MPI_INT64_T, 1, 24),
               nullptr),
        Status::ok);
    EXPECT_EQ(cell(1, 3), late);  // at once
    finish_ok({simtest::icomplete(w0), simtest::iwait(w1)});

    // A grant that arrived after the start, seen by the call itself: at once.
    ASSERT_EQ(w0.start({1}, 0), Status::ok);
    ASSERT_EQ(w1.post({0}, 0), Status::ok);
    ASSERT_EQ(w0.rma(data_call(RmaKind::put, const_cast<std::int64_t *>(&early), 1,
                               MPI_INT64_T, 1, 32),
                     nullptr),
              Status::ok);
    EXPECT_EQ(cell(1, 4), early);
    finish_ok({simtest::icomplete(w0), simtest::iwait(w1)});
}

// An accumulate-family call over shared memory applies under the target's accumulate
// stripe of its bytes (an unaligned word here: stripe 0): with the stripe held by
// another rank, the fetch-and-op waits for its release.
TEST_F(LockAtOnce, AFetchAndOpWaitsForItsAccumulateStripe) {
    Window &w = *windows_[0];
    ASSERT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    auto *held = reinterpret_cast<std::uint64_t *>(control_[1].data() +
                                                   layout::ControlLayout::accumulate_stripe(0));
    __atomic_store_n(held, std::uint64_t{2}, __ATOMIC_SEQ_CST);  // rank 1 + 1 holds it
    std::atomic<bool> released{false};
    std::thread holder([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        released.store(true);
        __atomic_store_n(held, std::uint64_t{0}, __ATOMIC_SEQ_CST);
    });
    const std::int64_t five = 5;
    std::int64_t old = -1;
    RmaCall call = data_call(RmaKind::fetch_and_op, &old, 1, MPI_INT64_T, 1, 12);
    call.origin = &five;
    call.origin_count = 1;
    call.origin_type = MPI_INT64_T;
    call.op = MPI_SUM;
    ASSERT_EQ(w.rma(call, nullptr), Status::ok);
    EXPECT_TRUE(released.load());  // it waited for the holder
    holder.join();
    EXPECT_EQ(old, 0);
    std::int64_t word = 0;
    std::memcpy(&word, window_[1].data() + 12, sizeof word);
    EXPECT_EQ(word, 5);
    Request *request = nullptr;
    ASSERT_EQ(w.unlock(1, &request), Status::ok);
    if (request) finish_ok({request});
}

}  // namespace
}  // namespace nbrma::engine
