// Notified RMA in the engine (doc/design.md §8): the target's NotifyCounters on their
// own (bounds, resizing, threshold requests), the ordering promise over the sim
// transport under random delays and reorderings (a counter never runs ahead of what it
// counts: a put's or an accumulate's data is in the target's window, a get has read it),
// and the index check of Window::rma.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/threads.hpp"
#include "engine/notify.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "sim_fixture.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using simtest::Requests;
using transport::Region;
using transport::sim::SimWorld;

// ---------------------------------------------------------------- 1. NotifyCounters alone

// 16 counters over a plain array and the published count beside them, as a window lays
// them out in its control region (zero when mapped).
struct Counters {
    static constexpr std::uint32_t kCapacity = 16;
    std::uint64_t words[kCapacity] = {};
    std::uint64_t published = 0;
    NotifyCounters notify{words, kCapacity, &published};

    // What an origin's notification does to the word: a fetch-add from elsewhere.
    void add(int index, std::uint64_t n = 1) {
        __atomic_fetch_add(&words[index], n, __ATOMIC_RELEASE);
    }
    std::uint64_t value(int index) const {
        std::uint64_t value = ~std::uint64_t{0};
        EXPECT_EQ(notify.value(index, &value), Status::ok) << "counter " << index;
        return value;
    }
    Request *threshold(int index, std::uint64_t expected) {
        Request *request = nullptr;
        EXPECT_EQ(notify.threshold(index, expected, &request), Status::ok);
        return request;
    }
};

TEST(NotifyCounters, SetCountRefusesNegativeCountsAndCountsBeyondTheCapacity) {
    Counters c;
    EXPECT_EQ(c.notify.capacity(), Counters::kCapacity);
    EXPECT_EQ(c.notify.count(), 0);
    for (int n : {-1, INT_MIN, 17, INT_MAX}) {
        EXPECT_EQ(c.notify.set_count(n), Status::err_notification) << n;
        EXPECT_EQ(c.notify.count(), 0) << n;
        EXPECT_EQ(c.published, 0u) << n;  // origins never hear of a refused count
    }
    EXPECT_EQ(c.notify.set_count(16), Status::ok);  // the whole capacity
    EXPECT_EQ(c.notify.count(), 16);
    EXPECT_EQ(c.published, 16u);
    EXPECT_EQ(c.notify.set_count(17), Status::err_notification);
    EXPECT_EQ(c.notify.count(), 16);  // a refused count changes nothing
    EXPECT_EQ(c.published, 16u);
    EXPECT_EQ(c.notify.set_count(0), Status::ok);
    EXPECT_EQ(c.published, 0u);

    // The indexes of value, set_value and threshold follow the count, not the capacity.
    ASSERT_EQ(c.notify.set_count(4), Status::ok);
    for (int index : {4, 15, 16, -1, INT_MIN, INT_MAX}) {
        std::uint64_t value = 99;
        EXPECT_EQ(c.notify.value(index, &value), Status::err_notification) << index;
        EXPECT_EQ(value, 99u) << index;
        EXPECT_EQ(c.notify.set_value(index, 7), Status::err_notification) << index;
        Request *request = nullptr;
        EXPECT_EQ(c.notify.threshold(index, 0, &request), Status::err_notification) << index;
        EXPECT_EQ(request, nullptr) << index;
    }
    EXPECT_FALSE(c.notify.pending());
    for (std::uint64_t word : c.words) EXPECT_EQ(word, 0u);
}

TEST(NotifyCounters, ShrinkKeepsTheLowerValuesAndCountersComingBackReadZero) {
    Counters c;
    ASSERT_EQ(c.notify.set_count(6), Status::ok);
    for (int i = 0; i < 6; ++i) ASSERT_EQ(c.notify.set_value(i, 10 + i), Status::ok);
    c.add(2, 5);

    ASSERT_EQ(c.notify.set_count(3), Status::ok);
    EXPECT_EQ(c.notify.count(), 3);
    EXPECT_EQ(c.published, 3u);
    EXPECT_EQ(c.value(0), 10u);
    EXPECT_EQ(c.value(1), 11u);
    EXPECT_EQ(c.value(2), 17u);
    std::uint64_t value;
    EXPECT_EQ(c.notify.value(3, &value), Status::err_notification);
    // An origin that checked index 4 before the shrink may still add to it.
    c.add(4);

    // Back to 6: the kept counters keep their values, the returning ones start at 0
    // whatever they held (old values, the late add).
    ASSERT_EQ(c.notify.set_count(6), Status::ok);
    EXPECT_EQ(c.published, 6u);
    EXPECT_EQ(c.value(0), 10u);
    EXPECT_EQ(c.value(1), 11u);
    EXPECT_EQ(c.value(2), 17u);
    for (int i = 3; i < 6; ++i) EXPECT_EQ(c.value(i), 0u) << i;

    // Down to none and back: every counter returns at 0.
    ASSERT_EQ(c.notify.set_count(0), Status::ok);
    ASSERT_EQ(c.notify.set_count(6), Status::ok);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(c.value(i), 0u) << i;
}

// What the code promises: counters at or above the highest count ever set were never
// in use, so nothing can have written them and growing into them writes nothing (a
// set_num(2^16) on a fresh window touches no page). A sentinel in such words (a
// mapped page would read 0: only the test can have put it there) shows whether they
// were written. Counters that were in use once are cleared when they come back.
TEST(NotifyCounters, GrowingIntoNeverUsedCountersWritesNothing) {
    constexpr std::uint64_t kSentinel = 0x5e5e5e5e5e5e5e5e;
    Counters c;
    ASSERT_EQ(c.notify.set_count(4), Status::ok);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(c.notify.set_value(i, 1 + i), Status::ok);
    for (std::uint32_t i = 4; i < Counters::kCapacity; ++i) c.words[i] = kSentinel;

    ASSERT_EQ(c.notify.set_count(10), Status::ok);  // 4..9 were never in use
    EXPECT_EQ(c.published, 10u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(c.words[i], 1u + i) << i;
    for (std::uint32_t i = 4; i < Counters::kCapacity; ++i) EXPECT_EQ(c.words[i], kSentinel) << i;

    // Down to 2 (counters 2..9 were in use: origins may have written them), then up to
    // 12: 2..9 are cleared, 10 and 11 were never in use and stay as they are.
    ASSERT_EQ(c.notify.set_count(2), Status::ok);
    ASSERT_EQ(c.notify.set_count(12), Status::ok);
    EXPECT_EQ(c.published, 12u);
    EXPECT_EQ(c.words[0], 1u);
    EXPECT_EQ(c.words[1], 2u);
    for (int i = 2; i < 10; ++i) EXPECT_EQ(c.words[i], 0u) << i;
    for (std::uint32_t i = 10; i < Counters::kCapacity; ++i) EXPECT_EQ(c.words[i], kSentinel) << i;
}

TEST(NotifyCounters, AThresholdAlreadyMetCompletesAtOnce) {
    Counters c;
    Requests requests;
    ASSERT_EQ(c.notify.set_count(2), Status::ok);
    ASSERT_EQ(c.notify.set_value(1, 5), Status::ok);
    for (auto [index, expected] : {std::pair{1, 5u}, {1, 3u}, {1, 0u}, {0, 0u}}) {
        Request *request = requests(c.threshold(index, expected));
        ASSERT_NE(request, nullptr);
        EXPECT_TRUE(request->complete()) << index << " >= " << expected;
        EXPECT_EQ(request->status(), Status::ok);
        EXPECT_FALSE(request->cancelled());
    }
    EXPECT_FALSE(c.notify.pending());
    EXPECT_FALSE(c.notify.check());
}

TEST(NotifyCounters, AThresholdCompletesAtTheCheckAfterItsCounterReachedIt) {
    Counters c;
    Requests requests;
    ASSERT_EQ(c.notify.set_count(2), Status::ok);
    Request *request = requests(c.threshold(0, 3));
    EXPECT_FALSE(request->complete());
    EXPECT_TRUE(c.notify.pending());
    c.add(0, 2);
    c.add(1, 10);  // another counter
    EXPECT_FALSE(c.notify.check());
    EXPECT_FALSE(request->complete());
    c.add(0);
    EXPECT_FALSE(request->complete());  // only a check completes it
    EXPECT_TRUE(c.notify.check());
    EXPECT_TRUE(request->complete());
    EXPECT_EQ(request->status(), Status::ok);
    EXPECT_FALSE(c.notify.pending());
    EXPECT_FALSE(c.notify.check());
}

TEST(NotifyCounters, ManyThresholdsOnOneCounterCompleteIndependently) {
    Counters c;
    Requests requests;
    ASSERT_EQ(c.notify.set_count(2), Status::ok);
    const std::uint64_t expected[] = {5, 1, 3, 2, 2, 8};
    std::vector<Request *> waiting;
    for (std::uint64_t value : expected) waiting.push_back(requests(c.threshold(0, value)));
    Request *other = requests(c.threshold(1, 1));
    // Each step moves counter 0 to `to` (adds of 1 and of several, and a set_value
    // jump); after the check exactly the thresholds at or below it are complete.
    for (std::uint64_t to : {1u, 2u, 4u, 7u, 8u}) {
        const std::uint64_t before = c.value(0);
        if (to == 7)
            ASSERT_EQ(c.notify.set_value(0, to), Status::ok);
        else
            c.add(0, to - before);
        c.notify.check();
        for (std::size_t i = 0; i < waiting.size(); ++i) {
            EXPECT_EQ(waiting[i]->complete(), expected[i] <= to)
                << "threshold " << expected[i] << " at counter " << to;
            if (waiting[i]->complete()) {
                EXPECT_EQ(waiting[i]->status(), Status::ok);
            }
        }
        EXPECT_FALSE(other->complete());
    }
    EXPECT_TRUE(c.notify.pending());  // counter 1's
    c.add(1);
    EXPECT_TRUE(c.notify.check());
    EXPECT_TRUE(other->complete());
    EXPECT_FALSE(c.notify.pending());
}

TEST(NotifyCounters, CancelCompletesTheRequestAsCancelledAndForgetsIt) {
    Counters c;
    Requests requests;
    ASSERT_EQ(c.notify.set_count(1), Status::ok);
    Request *cancelled = requests(c.threshold(0, 2));
    Request *kept = requests(c.threshold(0, 2));
    Request *met = requests(c.threshold(0, 0));

    EXPECT_TRUE(c.notify.cancel(cancelled));
    EXPECT_TRUE(cancelled->complete());
    EXPECT_TRUE(cancelled->cancelled());
    EXPECT_EQ(cancelled->status(), Status::ok);
    EXPECT_FALSE(kept->complete());
    EXPECT_TRUE(c.notify.pending());
    EXPECT_FALSE(c.notify.cancel(cancelled));  // no longer waiting
    EXPECT_FALSE(c.notify.cancel(met));        // completed at the call

    // The counter reaching 2 completes only the one still waiting, and only once.
    c.add(0, 2);
    EXPECT_TRUE(c.notify.check());
    EXPECT_TRUE(kept->complete());
    EXPECT_FALSE(kept->cancelled());
    EXPECT_EQ(kept->status(), Status::ok);
    EXPECT_TRUE(cancelled->cancelled());
    EXPECT_FALSE(c.notify.pending());
    EXPECT_FALSE(c.notify.cancel(kept));
}

TEST(NotifyCounters, ShrinkFailsTheThresholdsOnRemovedCounters) {
    Counters c;
    Requests requests;
    ASSERT_EQ(c.notify.set_count(4), Status::ok);
    Request *on0 = requests(c.threshold(0, 1));
    Request *on1 = requests(c.threshold(1, 1));
    Request *on2 = requests(c.threshold(2, 1));
    Request *on3 = requests(c.threshold(3, 1));
    Request *on3b = requests(c.threshold(3, 4));

    ASSERT_EQ(c.notify.set_count(2), Status::ok);
    for (Request *gone : {on2, on3, on3b}) {
        EXPECT_TRUE(gone->complete());
        EXPECT_EQ(gone->status(), Status::err_notification);
        EXPECT_FALSE(gone->cancelled());
    }
    EXPECT_FALSE(on0->complete());
    EXPECT_FALSE(on1->complete());
    EXPECT_TRUE(c.notify.pending());

    // Their counters come back and move: nothing of the failed thresholds is left.
    ASSERT_EQ(c.notify.set_count(4), Status::ok);
    c.add(3, 4);
    c.add(1);
    EXPECT_TRUE(c.notify.check());
    EXPECT_TRUE(on1->complete());
    EXPECT_EQ(on3b->status(), Status::err_notification);
    c.add(0);
    EXPECT_TRUE(c.notify.check());
    EXPECT_EQ(on0->status(), Status::ok);
    EXPECT_FALSE(c.notify.pending());
}

TEST(NotifyCounters, FailAllCompletesEveryPendingThresholdWithTheStatus) {
    Counters c;
    Requests requests;
    ASSERT_EQ(c.notify.set_count(3), Status::ok);
    Request *a = requests(c.threshold(0, 1));
    Request *b = requests(c.threshold(0, 2));
    Request *d = requests(c.threshold(2, 1));
    Request *met = requests(c.threshold(1, 0));
    c.notify.fail_all(Status::err_win);
    for (Request *failed : {a, b, d}) {
        EXPECT_TRUE(failed->complete());
        EXPECT_EQ(failed->status(), Status::err_win);
    }
    EXPECT_EQ(met->status(), Status::ok);  // already complete: untouched
    EXPECT_FALSE(c.notify.pending());
    c.add(0, 2);
    EXPECT_FALSE(c.notify.check());
    EXPECT_EQ(c.notify.count(), 3);  // the counters themselves stay
}

// ---------------------------------------------------------------- 2. ordering over sim

// A notifying call.
RmaCall notify_call(RmaCall call, int index) {
    call.notify = true;
    call.notify_index = index;
    return call;
}

// The deterministic core of the promise, with DataNow holding window puts (complete at
// the origin, still on their way, as over UCX): the notification of a put is in flight
// behind the put and cannot be delivered before it.
TEST(NotifySim, APutsNotificationCannotOvertakeItsData) {
    simtest::SimRanks ranks(2, simtest::SimRanks::default_window_bytes, 4);
    ranks.hold_puts();
    ASSERT_EQ(ranks.w(1).notifications().set_count(4), Status::ok);
    Window &origin = ranks.w(0);
    ASSERT_EQ(origin.lock_all(MPI_MODE_NOCHECK), Status::ok);
    const std::int64_t value = 77;
    ASSERT_EQ(origin.rma(notify_call(simtest::put_call(1, 8, &value), 2), nullptr), Status::ok);

    const std::size_t counter = ranks.layout.notification(2);
    auto add_at = [&]() -> long {
        for (std::size_t i = 0; i < ranks.world.in_flight(); ++i) {
            const SimWorld::Op &op = ranks.world.op(i);
            if (op.kind == SimWorld::OpKind::atomic && op.region == Region::control &&
                op.offset == counter)
                return static_cast<long>(i);
        }
        return -1;
    };
    ASSERT_EQ(ranks.world.in_flight(), 2u);  // the put and the add
    ASSERT_GE(add_at(), 0);
    EXPECT_FALSE(ranks.world.deliverable(static_cast<std::size_t>(add_at())))
        << ranks.world.describe(static_cast<std::size_t>(add_at()));
    EXPECT_EQ(ranks.at(1, 8), 0);

    for (std::size_t i = 0; i < ranks.world.in_flight(); ++i)
        if (ranks.world.op(i).region == Region::window) ranks.world.deliver(i);
    EXPECT_EQ(ranks.at(1, 8), value);
    std::uint64_t count = 99;
    ASSERT_EQ(ranks.w(1).notifications().value(2, &count), Status::ok);
    EXPECT_EQ(count, 0u);  // the data arrived, the count not yet
    ASSERT_GE(add_at(), 0);
    EXPECT_TRUE(ranks.world.deliverable(static_cast<std::size_t>(add_at())));
    ranks.world.deliver(static_cast<std::size_t>(add_at()));
    ASSERT_EQ(ranks.w(1).notifications().value(2, &count), Status::ok);
    EXPECT_EQ(count, 1u);

    Requests requests;
    requests(simtest::iunlock_all(origin));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
}

// The random runs. Every poll() of a rank's transport first lets the scheduler deliver
// one in-flight operation of any rank, picked at random among the deliverable ones:
// the engine waits inline (polling) for a get, a fetching atomic and the accumulate
// lock, so the schedule has to move on while it waits, and window data is as delayed
// and reordered as everything else (DataNow would deliver it at once, which would hide
// a notification sent ahead of a get or an accumulate). With `peek` off, peek_control
// declines, so Window::rma reads a target's published count with a get (as over UCX).
struct Scheduler {
    SimWorld &world;
    std::mt19937_64 rng;
    std::function<void()> after_delivery;
    std::uint64_t deliveries = 0;

    bool step() {
        if (!world.deliver_any(rng)) return false;
        ++deliveries;
        if (after_delivery) after_delivery();
        return true;
    }
};

class Scheduled final : public simtest::Forwarding {
  public:
    Scheduled(Scheduler &scheduler, int rank, bool peek)
        : Forwarding(scheduler.world.endpoint(rank)), scheduler_(scheduler), peek_(peek) {}
    bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) override {
        return peek_ && inner_.peek_control(peer, offset, value);
    }
    int poll() override {
        scheduler_.step();
        return inner_.poll();
    }

  private:
    Scheduler &scheduler_;
    bool peek_;
};

constexpr std::uint32_t kCapacity = 64;
constexpr std::size_t kWindowBytes = 8192;
constexpr std::size_t kSlotBytes = 32;  // every notifying call has a slot of its own
constexpr int kSharedCounter = 0;       // puts and accumulates of every origin
constexpr int own_counter(int origin) { return 1 + origin; }
constexpr int kFirstGetCounter = 16;  // a counter per get
constexpr std::int64_t kPoison = -1;  // what the target writes once a get is counted

// One notifying call of a run and where to see that it did what it counts.
struct Notified {
    RmaKind kind;
    int origin, target, index;
    // Byte offsets in the target's window (put, accumulate: what the call leaves there)
    // or in `read` (get: what it must have read), 8 or 4 bytes each.
    struct Cell {
        std::size_t offset;
        std::size_t bytes;
        std::int64_t value;
    };
    using Cells = std::vector<Cell>;
    Cells cells;
    std::uint8_t *read = nullptr;     // get: the result buffer
    std::vector<std::size_t> source;  // get: the window offsets it reads
    bool poisoned = false;            // get: its slot was overwritten once it was counted
};

// n ranks, every one both origin and target, each running a random script of
// nonblocking passive-target epochs (lock, a second lock issued while the first is
// still completing, so deferred, then lock_all) of Put_notify / Accumulate_notify /
// Get_notify calls, some as R-calls. Every rank is a target with kCapacity counters and
// threshold requests on the counters it expects to move.
class NotifyRun {
  public:
    NotifyRun(int n, std::uint64_t seed, bool early_local, bool peek, MPI_Datatype strided)
        : n_(n),
          layout_(n, kCapacity),
          world_(n, layout_.size(), kWindowBytes),
          scheduler_{world_, std::mt19937_64(seed), {}},
          rng_(seed * 7919 + 1),
          strided_(strided) {
        world_.set_early_local_completion(early_local);
        WindowConfig config;
        config.flavor = Flavor::allocate;
        config.sizes.assign(n, kWindowBytes);
        config.disp_units.assign(n, 1);
        for (int r = 0; r < n; ++r) {
            transports_.push_back(std::make_unique<Scheduled>(scheduler_, r, peek));
            windows_.push_back(std::make_unique<Window>(*transports_[r], layout_, config));
            EXPECT_EQ(windows_[r]->notifications().set_count(kCapacity), Status::ok);
        }
        next_slot_.assign(n, 0);
        next_get_counter_.assign(n, kFirstGetCounter);
        scripts_.resize(n);
        for (int origin = 0; origin < n; ++origin) write_script(origin);
        // Thresholds on every counter that will move: at its final value and halfway.
        for (const auto &[key, calls] : by_counter_) {
            const std::uint64_t total = calls.size();
            for (std::uint64_t k : {total, (total + 1) / 2}) {
                Request *request = nullptr;
                EXPECT_EQ(windows_[key.first]->notifications().threshold(key.second, k, &request),
                          Status::ok);
                thresholds_.push_back({key.first, key.second, k, requests_(request)});
            }
        }
        scheduler_.after_delivery = [this] { check(); };
    }
    ~NotifyRun() { scheduler_.after_delivery = nullptr; }

    // Random interleaving of script steps, progress and deliveries, checked after each;
    // then progress and deliver until everything completed. Returns the steps taken.
    std::uint64_t run() {
        std::uint64_t steps = 0;
        for (; steps < 200000 && violation_.empty(); ++steps) {
            if (finished()) break;
            const int r = static_cast<int>(rng_() % n_);
            switch (rng_() % 4) {
                case 0:
                    if (next_[r] < scripts_[r].size()) scripts_[r][next_[r]++]();
                    break;
                case 1: windows_[r]->progress(); break;
                default: scheduler_.step(); break;
            }
            check();
        }
        return steps;
    }

    // After run(): what must hold at the end. Empty if all is well.
    std::string final_problem() {
        if (!violation_.empty()) return violation_;
        if (!finished()) return "did not finish: " + pending_description();
        if (!requests_.all_complete_ok()) return "a request failed";
        for (const auto &[key, calls] : by_counter_) {
            const std::uint64_t count = counter(key.first, key.second);
            if (count != calls.size())
                return "counter " + std::to_string(key.second) + " of rank " +
                       std::to_string(key.first) + " is " + std::to_string(count) + ", " +
                       std::to_string(calls.size()) + " calls notified it";
        }
        for (int t = 0; t < n_; ++t)
            for (int index = 0; index < static_cast<int>(kCapacity); ++index)
                if (!by_counter_.count({t, index}) && counter(t, index) != 0)
                    return "counter " + std::to_string(index) + " of rank " + std::to_string(t) +
                           " moved: nobody notified it";
        for (const Notified &call : calls_)
            if (!done(call)) return describe(call) + ": not done at the end";
        return {};
    }
    std::uint64_t deferred_calls() const { return deferred_calls_; }
    // Counters that more than one origin notified.
    std::uint64_t shared_counters() const {
        std::uint64_t shared = 0;
        for (const auto &[key, calls] : by_counter_) {
            for (std::size_t i : calls) {
                if (calls_[i].origin == calls_[calls.front()].origin) continue;
                ++shared;
                break;
            }
        }
        return shared;
    }
    std::uint64_t deliveries() const { return scheduler_.deliveries; }

  private:
    Window &w(int rank) { return *windows_[rank]; }

    std::uint64_t counter(int target, int index) {
        std::uint64_t value = 0;
        EXPECT_EQ(windows_[target]->notifications().value(index, &value), Status::ok);
        return value;
    }

    template <typename T>
    T load(const std::uint8_t *base, std::size_t offset) const {
        T value;
        std::memcpy(&value, base + offset, sizeof value);
        return value;
    }
    // Whether the call's data is in the target's window (put, accumulate) or the get
    // read it.
    bool done(const Notified &call) const {
        const std::uint8_t *base =
            call.kind == RmaKind::get ? call.read : world_.memory(call.target, Region::window);
        for (const Notified::Cell &cell : call.cells) {
            const std::int64_t there = cell.bytes == 8 ? load<std::int64_t>(base, cell.offset)
                                                       : load<std::int32_t>(base, cell.offset);
            if (there != cell.value) return false;
        }
        return true;
    }

    // The promise, after every step: no counter counts more calls than are done; a
    // threshold that completed saw its count done. Once a get is counted the target
    // overwrites what it read (it may: the get is over).
    void check() {
        if (!violation_.empty()) return;
        for (const auto &[key, calls] : by_counter_) {
            const std::uint64_t count = counter(key.first, key.second);
            std::uint64_t done_calls = 0;
            for (std::size_t i : calls) done_calls += done(calls_[i]);
            if (count > done_calls) {
                violation_ = "counter " + std::to_string(key.second) + " of rank " +
                             std::to_string(key.first) + " is " + std::to_string(count) + " with " +
                             std::to_string(done_calls) + " of its calls done";
                for (std::size_t i : calls)
                    violation_ +=
                        "\n  " + describe(calls_[i]) + (done(calls_[i]) ? " done" : " NOT done");
                return;
            }
            for (std::size_t i : calls) {
                Notified &call = calls_[i];
                if (call.kind != RmaKind::get || call.poisoned || count == 0) continue;
                std::uint8_t *memory = world_.memory(call.target, Region::window);
                for (std::size_t offset : call.source)
                    std::memcpy(memory + offset, &kPoison, sizeof kPoison);
                call.poisoned = true;
            }
        }
        for (Threshold &threshold : thresholds_) {
            if (threshold.seen || !threshold.request->complete()) continue;
            threshold.seen = true;
            std::uint64_t done_calls = 0;
            for (std::size_t i : by_counter_[{threshold.target, threshold.index}])
                done_calls += done(calls_[i]);
            if (threshold.request->status() != Status::ok || done_calls < threshold.value) {
                violation_ = "threshold " + std::to_string(threshold.value) + " on counter " +
                             std::to_string(threshold.index) + " of rank " +
                             std::to_string(threshold.target) + " completed with " +
                             status_string(threshold.request->status()) + " and " +
                             std::to_string(done_calls) + " calls done";
                return;
            }
        }
    }

    bool finished() const {
        for (int r = 0; r < n_; ++r)
            if (next_[r] < scripts_[r].size() || !windows_[r]->idle()) return false;
        for (Request *request : requests_.all)
            if (!request->complete()) return false;
        return world_.in_flight() == 0 && world_.pending_completions() == 0;
    }

    std::string pending_description() const {
        std::ostringstream s;
        for (std::size_t i = 0; i < world_.in_flight(); ++i) s << "\n  " << world_.describe(i);
        return s.str();
    }

    std::string describe(const Notified &call) const {
        std::ostringstream s;
        s << rma_kind_name(call.kind) << " " << call.origin << "->" << call.target << " counter "
          << call.index << " at +"
          << (call.kind == RmaKind::get ? call.source.front() : call.cells.front().offset);
        return s.str();
    }

    // ---- scripts

    void write_script(int origin) {
        const int lock_types[] = {MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED};
        // A lock epoch, and a second one opened while the first is still completing:
        // it is deferred, its calls recorded and replayed.
        for (int epoch = 0; epoch < 2; ++epoch) {
            const int target = other(origin);
            const int type = lock_types[rng_() % 2];
            step(origin, [this, origin, target, type] {
                EXPECT_EQ(w(origin).lock(type, target, 0), Status::ok);
            });
            add_calls(origin, [target] { return target; });
            step(origin, [this, origin, target] {
                Request *request = nullptr;
                EXPECT_EQ(w(origin).unlock(target, &request), Status::ok);
                requests_(request);
            });
        }
        step(origin, [this, origin] { EXPECT_EQ(w(origin).lock_all(0), Status::ok); });
        add_calls(origin, [this, origin] { return other(origin); });
        step(origin, [this, origin] { requests_(simtest::iunlock_all(w(origin))); });
    }

    int other(int origin) { return (origin + 1 + static_cast<int>(rng_() % (n_ - 1))) % n_; }

    void step(int rank, std::function<void()> action) {
        scripts_[rank].push_back(std::move(action));
    }

    // One to three notifying calls from `origin` to targets `pick` chooses.
    void add_calls(int origin, const std::function<int()> &pick) {
        const int count = 1 + static_cast<int>(rng_() % 3);
        for (int k = 0; k < count; ++k) {
            const int target = pick();
            RmaCall call = make_call(origin, target);
            const bool with_request = rng_() % 3 == 0;
            step(origin, [this, origin, call, with_request] {
                // A call recorded behind an earlier epoch still in the queue: it runs
                // when the deferred epoch activates.
                if (w(origin).epochs_pending() > 1) ++deferred_calls_;
                Request *request = nullptr;
                EXPECT_EQ(w(origin).rma(call, with_request ? &request : nullptr), Status::ok);
                requests_(request);
            });
        }
    }

    // A notifying call with fresh values into a fresh slot of `target`, recorded.
    RmaCall make_call(int origin, int target) {
        const std::size_t slot = kSlotBytes * next_slot_[target]++;
        using Cells = Notified::Cells;
        EXPECT_LE(slot + kSlotBytes, kWindowBytes);
        const std::int64_t base = 1000 * static_cast<std::int64_t>(calls_.size() + 1);
        Notified notified{};
        notified.origin = origin;
        notified.target = target;
        RmaCall call;
        call.target = target;
        call.displacement = static_cast<MPI_Aint>(slot);
        call.notify = true;
        switch (rng_() % 4) {
            case 0: {  // two words into every other word of the slot: two transport puts
                call.kind = RmaKind::put;
                auto &values = int64s_.emplace_back(std::vector<std::int64_t>{base + 1, base + 2});
                call.origin = values.data();
                call.origin_count = 2;
                call.origin_type = MPI_INT64_T;
                call.target_count = 1;
                call.target_type = strided_;
                notified.cells = Cells{{slot, 8, base + 1}, {slot + 16, 8, base + 2}};
                break;
            }
            case 1: {  // MPI_SUM on two int64: two 64-bit atomics at the target
                call.kind = RmaKind::accumulate;
                call.op = MPI_SUM;
                auto &values = int64s_.emplace_back(std::vector<std::int64_t>{base + 3, base + 4});
                call.origin = values.data();
                call.origin_count = 2;
                call.origin_type = MPI_INT64_T;
                call.target_count = 2;
                call.target_type = MPI_INT64_T;
                notified.cells = Cells{{slot, 8, base + 3}, {slot + 8, 8, base + 4}};
                break;
            }
            case 2: {  // MPI_SUM on three int32: under the target's accumulate lock
                call.kind = RmaKind::accumulate;
                call.op = MPI_SUM;
                auto &values = int32s_.emplace_back(std::vector<std::int32_t>{
                    static_cast<std::int32_t>(base + 5), static_cast<std::int32_t>(base + 6),
                    static_cast<std::int32_t>(base + 7)});
                call.origin = values.data();
                call.origin_count = 3;
                call.origin_type = MPI_INT32_T;
                call.target_count = 3;
                call.target_type = MPI_INT32_T;
                notified.cells =
                    Cells{{slot, 4, base + 5}, {slot + 4, 4, base + 6}, {slot + 8, 4, base + 7}};
                break;
            }
            default: {  // every other word of the slot, which holds the old values
                call.kind = RmaKind::get;
                auto &into = int64s_.emplace_back(std::vector<std::int64_t>{0, 0});
                call.result = into.data();
                call.result_count = 2;
                call.result_type = MPI_INT64_T;
                call.target_count = 1;
                call.target_type = strided_;
                std::uint8_t *memory = world_.memory(target, Region::window);
                const std::int64_t old[] = {base + 8, base + 9};
                std::memcpy(memory + slot, &old[0], 8);
                std::memcpy(memory + slot + 16, &old[1], 8);
                notified.read = reinterpret_cast<std::uint8_t *>(into.data());
                notified.source = {slot, slot + 16};
                notified.cells = Cells{{0, 8, base + 8}, {8, 8, base + 9}};
                break;
            }
        }
        notified.kind = call.kind;
        if (call.kind == RmaKind::get)
            call.notify_index = next_get_counter_[target]++;
        else
            call.notify_index = rng_() % 2 ? kSharedCounter : own_counter(origin);
        EXPECT_LT(call.notify_index, static_cast<int>(kCapacity));
        notified.index = call.notify_index;
        by_counter_[{target, call.notify_index}].push_back(calls_.size());
        calls_.push_back(std::move(notified));
        return call;
    }

    struct Threshold {
        int target, index;
        std::uint64_t value;
        Request *request;
        bool seen = false;
    };

    const int n_;
    layout::ControlLayout layout_;
    SimWorld world_;
    Scheduler scheduler_;
    std::mt19937_64 rng_;
    MPI_Datatype strided_;
    std::vector<std::unique_ptr<Scheduled>> transports_;
    std::vector<std::unique_ptr<Window>> windows_;
    std::vector<std::vector<std::function<void()>>> scripts_;
    std::vector<std::size_t> next_ = std::vector<std::size_t>(n_, 0);
    std::vector<std::size_t> next_slot_;
    std::vector<int> next_get_counter_;
    // Origin buffers and get results: they must stay put until the calls ran (a deferred
    // call runs long after the rma call).
    std::deque<std::vector<std::int64_t>> int64s_;
    std::deque<std::vector<std::int32_t>> int32s_;
    std::vector<Notified> calls_;
    std::map<std::pair<int, int>, std::vector<std::size_t>> by_counter_;  // (target, index)
    std::vector<Threshold> thresholds_;
    Requests requests_;
    std::uint64_t deferred_calls_ = 0;
    std::string violation_;
};

TEST(NotifySim, ACounterNeverRunsAheadOfItsDataUnderRandomDelaysAndReordering) {
    // Two int64 at words 0 and 2: a put or get of it is two transport operations.
    MPI_Datatype strided;
    ASSERT_EQ(MPI_Type_vector(2, 1, 2, MPI_INT64_T, &strided), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&strided), MPI_SUCCESS);
    std::uint64_t runs = 0, steps = 0, deliveries = 0, deferred = 0, shared = 0;
    for (int n : {2, 3, 4}) {
        for (std::uint64_t seed = 1; seed <= 200; ++seed) {
            // Half the runs complete puts at the origin when posted (UCX-like: only the
            // fence keeps the notification behind the data), half at delivery; half
            // read the target's count with a get instead of a direct load.
            const bool early_local = seed % 2 == 0;
            const bool peek = seed % 4 < 2;
            SCOPED_TRACE("ranks " + std::to_string(n) + ", seed " + std::to_string(seed) +
                         (early_local ? ", early local completion" : "") +
                         (peek ? "" : ", count read by a get"));
            NotifyRun run(n, seed, early_local, peek, strided);
            steps += run.run();
            const std::string problem = run.final_problem();
            ASSERT_TRUE(problem.empty()) << problem;
            ++runs;
            deliveries += run.deliveries();
            deferred += run.deferred_calls();
            shared += run.shared_counters();
        }
    }
    threads::drain();  // datatypes the replayed calls retained
    MPI_Type_free(&strided);
    // The runs did exercise deferred epochs (calls recorded, replayed later) and
    // counters that several origins notify (whose final counts were checked exact).
    EXPECT_GT(deferred, 0u);
    EXPECT_GT(shared, 0u);
    std::printf("[ notify random ] %" PRIu64 " runs, %" PRIu64 " steps, %" PRIu64
                " deliveries, %" PRIu64 " calls in deferred epochs, %" PRIu64
                " counters of several origins\n",
                runs, steps, deliveries, deferred, shared);
}

// ---------------------------------------------------------------- 3. refused indexes

TEST(NotifyIndex, AnIndexOutsideTheTargetsCountersIsRefusedAndTouchesNothing) {
    constexpr std::uint32_t kCap = 8;
    simtest::SimRanks ranks(2, simtest::SimRanks::default_window_bytes, kCap);
    ranks.hold_puts();  // the notification's add completes at the origin when posted
    Requests requests;
    NotifyCounters &counters = ranks.w(1).notifications();
    ASSERT_EQ(counters.set_count(4), Status::ok);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(counters.set_value(i, 100 + i), Status::ok);
    std::uint8_t *memory = ranks.world.memory(1, Region::window);
    const std::size_t window_bytes = ranks.world.region_bytes(Region::window);
    for (std::size_t i = 0; i < window_bytes; ++i) memory[i] = static_cast<std::uint8_t>(i * 7 + 1);
    const std::vector<std::uint8_t> pattern(memory, memory + window_bytes);
    // Every counter word of the capacity, straight from the control region.
    auto words = [&] {
        std::vector<std::uint64_t> all;
        for (std::uint32_t i = 0; i < kCap; ++i)
            all.push_back(ranks.world.load64(1, Region::control, ranks.layout.notification(i)));
        return all;
    };
    const std::vector<std::uint64_t> before = words();

    Window &origin = ranks.w(0);
    ASSERT_EQ(origin.lock_all(MPI_MODE_NOCHECK), Status::ok);
    const std::int64_t value = 42;
    std::int64_t result = -5;
    auto call_of = [&](RmaKind kind, int index, MPI_Aint count) {
        RmaCall call = simtest::put_call(1, 64, &value);
        call.kind = kind;
        call.op = MPI_SUM;
        call.origin_count = call.target_count = count;
        if (kind == RmaKind::get) {
            call.origin = nullptr;
            call.origin_type = MPI_DATATYPE_NULL;
            call.result = &result;
            call.result_count = count;
            call.result_type = MPI_INT64_T;
        }
        return notify_call(call, index);
    };
    auto refused = [&](int index, MPI_Aint count) {
        for (RmaKind kind : {RmaKind::put, RmaKind::get, RmaKind::accumulate}) {
            SCOPED_TRACE(std::string(rma_kind_name(kind)) + " index " + std::to_string(index) +
                         " count " + std::to_string(count));
            EXPECT_EQ(origin.rma(call_of(kind, index, count), nullptr), Status::err_notification);
            Request *request = nullptr;
            EXPECT_EQ(origin.rma(call_of(kind, index, count), &request), Status::err_notification);
            EXPECT_EQ(request, nullptr);
            EXPECT_EQ(ranks.world.in_flight(), 0u);  // nothing was posted
        }
    };
    // At or past the published count (4) but inside the capacity; at or past the
    // capacity; negative. Also when the call moves no data (it would still notify).
    for (int index : {4, 7, 8, 1 << 20, INT_MAX, -1, INT_MIN}) {
        refused(index, 1);
        refused(index, 0);
    }
    // The target shrinks to 2: the index check follows what it published.
    ASSERT_EQ(counters.set_count(2), Status::ok);
    for (int index : {2, 3}) refused(index, 1);
    ranks.settle();
    EXPECT_EQ(std::vector<std::uint8_t>(memory, memory + window_bytes), pattern);
    EXPECT_EQ(words(), before);
    EXPECT_EQ(result, -5);  // no get read anything

    // An index below the count is taken (the same calls would have gone through).
    ASSERT_EQ(origin.rma(call_of(RmaKind::put, 1, 1), nullptr), Status::ok);
    ranks.settle();
    EXPECT_EQ(ranks.at(1, 64), value);
    std::uint64_t count = 0;
    ASSERT_EQ(counters.value(1, &count), Status::ok);
    EXPECT_EQ(count, 102u);
    requests(simtest::iunlock_all(origin));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
}

}  // namespace
}  // namespace nbrma::engine
