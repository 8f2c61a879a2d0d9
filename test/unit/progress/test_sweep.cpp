// The progress engine's sweep list: a sweep and "anything pending?" look only
// at the registered windows that have work (and at those whose transport serves peers),
// so idle windows cost an interposed MPI call nothing; a window with queued work is
// still swept to completion. Window::progress() polls its transport once per call, so a
// transport that counts its polls counts the sweep's visits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "../engine/sim_fixture.hpp"
#include "engine/request.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "progress/progress.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using simtest::put_call;
using transport::Region;
using transport::sim::SimWorld;

// A sim endpoint (window data moves at once: simtest::DataNow) that counts poll() calls;
// `serves`: says it needs target progress (as UCX over tcp does), which pins its window
// on the sweep list.
class Counting final : public simtest::Forwarding {
  public:
    // Forwarding only keeps the reference; data_now_ is built before any call.
    Counting(SimWorld &world, int rank, bool serves)
        : Forwarding(data_now_), data_now_(world, rank), serves_(serves) {}
    int poll() override {
        ++polls;
        return inner_.poll();
    }
    transport::Capabilities capabilities() const override { return {false, serves_}; }
    std::uint64_t polls = 0;

  private:
    simtest::DataNow data_now_;
    bool serves_;
};

// n ranks' allocate-flavor windows over one SimWorld, registered with the process's
// progress engine as window creation does (unregistered when destroyed).
struct Registered {
    static constexpr std::size_t window_bytes = 64;
    explicit Registered(int n, bool serves = false, std::uint32_t notify_capacity = 0)
        : layout(n, notify_capacity), world(n, layout.size(), window_bytes) {
        WindowConfig config;
        config.flavor = Flavor::allocate;
        config.sizes.assign(n, window_bytes);
        config.disp_units.assign(n, 1);
        for (int r = 0; r < n; ++r) {
            transports.push_back(std::make_unique<Counting>(world, r, serves));
            windows.push_back(std::make_unique<Window>(*transports[r], layout, config));
            progress_register(windows.back().get());
        }
    }
    ~Registered() {
        for (auto &window : windows) progress_unregister(window.get());
    }
    Window &w(int rank) { return *windows[rank]; }
    std::uint64_t polls(int rank) const { return transports[rank]->polls; }
    std::uint64_t all_polls() const {
        std::uint64_t sum = 0;
        for (const auto &transport : transports) sum += transport->polls;
        return sum;
    }
    // The sweep list's promise: a registered window with work is on it.
    void expect_listed_if_busy() {
        for (auto &window : windows)
            EXPECT_TRUE(window->idle() || window->sweep_link().listed) << "rank " << window->rank();
    }
    // Sweeps (and delivers what the sim holds) until `request` completes; false if it
    // does not within a bound only a window the sweeps miss reaches.
    bool sweep_until(Request *request) {
        for (int round = 0; round < 1000 && !request->complete(); ++round) {
            progress_sweep();
            world.deliver_all();
            expect_listed_if_busy();
        }
        return request->complete();
    }
    std::int64_t at(int rank, std::size_t offset) const {
        std::int64_t value;
        std::memcpy(&value, world.memory(rank, Region::window) + offset, sizeof value);
        return value;
    }
    layout::ControlLayout layout;
    SimWorld world;
    std::vector<std::unique_ptr<Counting>> transports;
    std::vector<std::unique_ptr<Window>> windows;
};

// 100 idle windows and a pair with a passive-target epoch: the sweeps that complete the
// epoch visit the origin's window only (the target's is idle too: its lock is passive),
// and once the epoch completed, the origin's window leaves the list.
TEST(SweepList, SweepsVisitOnlyWindowsWithWork) {
    Registered idle(100);
    Registered pair(2);
    EXPECT_FALSE(progress_pending());
    EXPECT_FALSE(progress_wanted());
    for (int i = 0; i < 10; ++i) EXPECT_FALSE(progress_sweep());
    EXPECT_EQ(idle.all_polls(), 0u);
    EXPECT_EQ(pair.all_polls(), 0u);

    const std::int64_t value = 42;
    ASSERT_EQ(pair.w(0).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    EXPECT_TRUE(pair.w(0).sweep_link().listed);
    EXPECT_TRUE(progress_pending());
    EXPECT_TRUE(progress_wanted());
    ASSERT_EQ(pair.w(0).rma(put_call(1, 8, &value), nullptr), Status::ok);
    Request *request = nullptr;
    ASSERT_EQ(pair.w(0).unlock(1, &request), Status::ok);
    ASSERT_TRUE(pair.sweep_until(request)) << "the epoch did not complete";
    EXPECT_EQ(request->status(), Status::ok);
    request->release();
    EXPECT_EQ(pair.at(1, 8), 42);
    EXPECT_GT(pair.polls(0), 0u);
    EXPECT_EQ(pair.polls(1), 0u);
    EXPECT_EQ(idle.all_polls(), 0u);

    // Idle again: the next sweep (or pending check) takes it off the list.
    progress_sweep();
    EXPECT_FALSE(pair.w(0).sweep_link().listed);
    EXPECT_FALSE(progress_pending());
    const std::uint64_t polls = pair.polls(0);
    for (int i = 0; i < 10; ++i) EXPECT_FALSE(progress_sweep());
    EXPECT_EQ(pair.polls(0), polls);
    EXPECT_EQ(idle.all_polls(), 0u);
}

// An epoch that completes inside the engine call that closed it (MPI_MODE_NOCHECK,
// nothing to flush) leaves its window idle on the list: the pending check drops it.
TEST(SweepList, PendingCheckDropsAWindowThatWentIdleInsideACall) {
    Registered pair(2);
    ASSERT_EQ(pair.w(0).lock(MPI_LOCK_SHARED, 1, MPI_MODE_NOCHECK), Status::ok);
    Request *request = nullptr;
    ASSERT_EQ(pair.w(0).unlock(1, &request), Status::ok);
    ASSERT_TRUE(request->complete());
    request->release();
    EXPECT_TRUE(pair.w(0).idle());
    EXPECT_TRUE(pair.w(0).sweep_link().listed);
    EXPECT_FALSE(progress_pending());
    EXPECT_FALSE(pair.w(0).sweep_link().listed);
    const std::uint64_t polls = pair.polls(0);
    progress_sweep();
    EXPECT_EQ(pair.polls(0), polls);
}

// Active target and fences: every rank's window has work, and each is swept to the end.
TEST(SweepList, FenceEpochsOnEveryRankComplete) {
    Registered ranks(3);
    std::vector<Request *> opened(3), closed(3);
    for (int r = 0; r < 3; ++r) ASSERT_EQ(ranks.w(r).fence(0, &opened[r]), Status::ok);
    const std::int64_t values[3] = {10, 11, 12};
    for (int r = 0; r < 3; ++r) {
        ASSERT_TRUE(ranks.sweep_until(opened[r]));
        ASSERT_EQ(ranks.w(r).rma(put_call((r + 1) % 3, 0, &values[r]), nullptr), Status::ok);
    }
    for (int r = 0; r < 3; ++r)
        ASSERT_EQ(ranks.w(r).fence(MPI_MODE_NOSUCCEED, &closed[r]), Status::ok);
    for (int r = 0; r < 3; ++r) {
        ASSERT_TRUE(ranks.sweep_until(closed[r])) << "rank " << r;
        EXPECT_EQ(closed[r]->status(), Status::ok);
        EXPECT_EQ(ranks.at((r + 1) % 3, 0), values[r]);
    }
    for (Request *request : opened) request->release();
    for (Request *request : closed) request->release();
    EXPECT_FALSE(progress_pending());
    for (int r = 0; r < 3; ++r) EXPECT_FALSE(ranks.w(r).sweep_link().listed);
}

// A notification threshold is work: its window is swept until the counter reaches it.
TEST(SweepList, NotificationThresholdIsSwept) {
    Registered one(1, false, 4);
    NotifyCounters &counters = one.w(0).notifications();
    ASSERT_EQ(counters.set_count(1), Status::ok);
    EXPECT_FALSE(one.w(0).sweep_link().listed);
    Request *request = nullptr;
    ASSERT_EQ(counters.threshold(0, 2, &request), Status::ok);
    EXPECT_TRUE(one.w(0).sweep_link().listed);
    EXPECT_TRUE(progress_pending());
    progress_sweep();
    EXPECT_FALSE(request->complete());
    ASSERT_EQ(counters.set_value(0, 2), Status::ok);  // as origins' notifications would
    ASSERT_TRUE(one.sweep_until(request));
    request->release();
    EXPECT_FALSE(progress_pending());
    EXPECT_FALSE(one.w(0).sweep_link().listed);
}

// A window whose transport serves peers is swept even when idle (its peers' operations
// need our poll), and wants progress.
TEST(SweepList, ServingWindowIsSweptWhileIdle) {
    Registered serving(1, true);
    EXPECT_TRUE(serving.w(0).idle());
    EXPECT_TRUE(serving.w(0).sweep_link().listed);
    EXPECT_TRUE(progress_wanted());
    EXPECT_FALSE(progress_pending());
    for (int i = 0; i < 5; ++i) progress_sweep();
    EXPECT_EQ(serving.polls(0), 5u);
    EXPECT_TRUE(serving.w(0).sweep_link().listed);
}

// Unregistering a window with work takes it off the list too.
TEST(SweepList, UnregisterTakesAListedWindowOff) {
    Registered pair(2);
    const std::size_t registered = progress_window_count();
    ASSERT_EQ(pair.w(0).lock(MPI_LOCK_SHARED, 1, MPI_MODE_NOCHECK), Status::ok);
    EXPECT_TRUE(progress_pending());
    progress_unregister(&pair.w(0));
    EXPECT_EQ(progress_window_count(), registered - 1);
    EXPECT_FALSE(pair.w(0).sweep_link().listed);
    EXPECT_FALSE(progress_pending());
    const std::uint64_t polls = pair.polls(0);
    progress_sweep();
    EXPECT_EQ(pair.polls(0), polls);
    Request *request = nullptr;  // the epoch still ends, by the window's own progress
    ASSERT_EQ(pair.w(0).unlock(1, &request), Status::ok);
    EXPECT_TRUE(request->complete());
    request->release();
    EXPECT_FALSE(pair.w(0).sweep_link().listed);  // not registered: never listed again
    progress_register(&pair.w(0));                // as the fixture expects
}

}  // namespace
}  // namespace nbrma::engine
