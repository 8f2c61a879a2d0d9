// The engine driven from several threads (doc/design.md §6), over the sim transport:
// application threads issuing epochs and RMA on their own windows and on one shared
// window, always under threads::Guard as nbrma's MPI entry points do, while other
// threads sweep (engine::progress_sweep only try_locks); requests waited on another
// thread than their creator; request reference counts and the Spares free list; the
// deferred-call queue (threads::defer/drain) and the progress thread
// (engine::progress_thread_start/stop). These run in `make check-tsan`
// under ThreadSanitizer. Every test checks data, counts or statuses, never times (the
// only clock is a generous bound that turns a deadlock into a failure).
//
// Locking is switched on here (threads::enable) for the rest of the process: this file
// is the last of the unit tests' sources, so the single-threaded tests run before it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "common/threads.hpp"
#include "engine/request.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "progress/progress.hpp"
#include "shm_ranks.hpp"
#include "sim_fixture.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using transport::Region;
using transport::sim::SimWorld;
using simtest::get_call;
using simtest::put_call;

// Every operation is performed at its target as soon as it is posted (an ordered
// network with no latency); its completion is still reported by the origin's poll,
// i.e. by a sweep. So epochs complete by sweeps alone, from whatever thread sweeps.
// Called only inside window calls, i.e. with the progress lock held.
class Immediate final : public transport::Transport {
  public:
    Immediate(SimWorld &world, int rank) : world_(world), inner_(world.endpoint(rank)) {}
    int size() const override { return inner_.size(); }
    int rank() const override { return inner_.rank(); }
    void *local_control() override { return inner_.local_control(); }
    Status put(int peer, const void *source, std::size_t length, transport::RemoteAddress target,
               transport::Completion *completion) override {
        return now(inner_.put(peer, source, length, target, completion));
    }
    Status get(int peer, void *destination, std::size_t length, transport::RemoteAddress source,
               transport::Completion *completion) override {
        return now(inner_.get(peer, destination, length, source, completion));
    }
    Status atomic(int peer, transport::AtomicOp op, transport::RemoteAddress target,
                  std::uint64_t operand, std::uint64_t compare, std::uint64_t *result,
                  transport::Completion *completion) override {
        return now(inner_.atomic(peer, op, target, operand, compare, result, completion));
    }
    bool supports_atomics(int peer, Region region) const override {
        return inner_.supports_atomics(peer, region);
    }
    Status fence(int peer) override { return inner_.fence(peer); }
    Status flush(int peer, transport::Completion *completion) override {
        return now(inner_.flush(peer, completion));
    }
    int poll() override { return inner_.poll(); }

  private:
    Status now(Status posted) {
        world_.deliver_all();
        return posted;
    }
    SimWorld &world_;
    transport::Transport &inner_;
};

// n ranks' allocate-flavor windows over one SimWorld, registered with the process's
// progress engine (as window creation in the MPI layer does), so engine::progress_sweep
// and the progress thread advance them.
struct ThreadRanks {
    static constexpr std::size_t window_bytes = 4096;
    explicit ThreadRanks(int n) : layout(n), world(n, layout.size(), window_bytes) {
        threads::enable();
        WindowConfig config;
        config.flavor = Flavor::allocate;
        config.sizes.assign(n, window_bytes);
        config.disp_units.assign(n, 1);
        threads::Guard guard;
        for (int r = 0; r < n; ++r) {
            transports.push_back(std::make_unique<Immediate>(world, r));
            windows.push_back(std::make_unique<Window>(*transports[r], layout, config));
            progress_register(windows.back().get());
        }
    }
    ~ThreadRanks() {
        threads::Guard guard;
        for (auto &window : windows) progress_unregister(window.get());
    }
    Window &w(int rank) { return *windows[rank]; }
    // Read only once the threads that wrote are joined, or under the guard.
    std::int64_t at(int rank, std::size_t offset) const {
        std::int64_t value;
        std::memcpy(&value, world.memory(rank, Region::window) + offset, sizeof value);
        return value;
    }
    void set(int rank, std::size_t offset, std::int64_t value) {
        std::memcpy(world.memory(rank, Region::window) + offset, &value, sizeof value);
    }
    layout::ControlLayout layout;
    SimWorld world;
    std::vector<std::unique_ptr<Immediate>> transports;
    std::vector<std::unique_ptr<Window>> windows;
};

RmaCall accumulate_call(int target, MPI_Aint displacement, const std::int64_t *value) {
    RmaCall call = put_call(target, displacement, value);
    call.kind = RmaKind::accumulate;
    call.op = MPI_SUM;
    return call;
}

// True once pred() holds; false if it did not within a bound generous enough that only a
// deadlock (or a lost wake-up) reaches it.
bool eventually(const std::function<bool()> &pred, int seconds = 120) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

// Threads that call engine::progress_sweep() until destroyed, as application threads
// inside unrelated nbrma calls would.
class Sweepers {
  public:
    explicit Sweepers(int n) {
        for (int i = 0; i < n; ++i)
            threads_.emplace_back([this] {
                while (!stop_.load(std::memory_order_acquire)) {
                    if (progress_sweep()) moved_.fetch_add(1, std::memory_order_relaxed);
                    std::this_thread::yield();
                }
            });
    }
    ~Sweepers() {
        stop_.store(true, std::memory_order_release);
        for (auto &thread : threads_) thread.join();
    }
    std::uint64_t moved() const { return moved_.load(); }

  private:
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> moved_{0};
    std::vector<std::thread> threads_;
};

// Stops the progress thread when a test ends, even a failed one.
struct ProgressThreadStopper {
    ~ProgressThreadStopper() { progress_thread_stop(); }
};

// Waits for `request` on this thread without holding the lock (wait_request sweeps with
// try_lock), checks it succeeded and drops our reference.
void wait_and_release(Request *request) {
    ASSERT_NE(request, nullptr);
    EXPECT_EQ(wait_request(request), Status::ok);
    request->release();
}

// ---------------------------------------------------------------- windows and threads

// Thread t owns window t: each round, an exclusive lock epoch putting a value to its
// neighbour, then a shared lock epoch adding 1 to a counter on rank 0 (nonblocking: the
// second is opened before the first completes, and the engine defers it when both go to
// rank 0). Two more threads only sweep.
TEST(ThreadsWindows, OneWindowPerThreadWithSweepers) {
    constexpr int n = 4, rounds = 200;
    constexpr std::size_t counter = 2048;
    ThreadRanks ranks(n);
    std::vector<std::int64_t> last(n, -1);
    {
        Sweepers sweepers(2);
        std::vector<std::thread> app;
        for (int t = 0; t < n; ++t)
            app.emplace_back([&, t] {
                Window &window = ranks.w(t);
                const int neighbour = (t + 1) % n;
                const std::int64_t one = 1;
                for (int round = 0; round < rounds; ++round) {
                    const std::int64_t value = 1000 * (t + 1) + round;
                    Request *put_done = nullptr, *add_done = nullptr;
                    {
                        threads::Guard guard;
                        ASSERT_EQ(window.lock(MPI_LOCK_EXCLUSIVE, neighbour, 0), Status::ok);
                        ASSERT_EQ(window.rma(put_call(neighbour, 8 * t, &value), nullptr),
                                  Status::ok);
                        ASSERT_EQ(window.unlock(neighbour, &put_done), Status::ok);
                        ASSERT_EQ(window.lock(MPI_LOCK_SHARED, 0, 0), Status::ok);
                        ASSERT_EQ(window.rma(accumulate_call(0, counter, &one), nullptr),
                                  Status::ok);
                        ASSERT_EQ(window.unlock(0, &add_done), Status::ok);
                    }
                    // `value` is on our stack: the put must have copied or completed.
                    wait_and_release(put_done);
                    wait_and_release(add_done);
                    last[t] = value;
                }
            });
        for (auto &thread : app) thread.join();
    }
    for (int t = 0; t < n; ++t) EXPECT_EQ(ranks.at((t + 1) % n, 8 * t), last[t]) << "origin " << t;
    EXPECT_EQ(ranks.at(0, counter), n * rounds);
    threads::Guard guard;
    for (int r = 0; r < n; ++r) EXPECT_TRUE(ranks.w(r).idle()) << "rank " << r;
}

// One window (rank 0's) shared by four threads inside one lock_all epoch: puts to
// per-thread slots, gets of a value rank 2 holds, accumulates to one counter, each round
// flushed (the flush request waited outside the guard).
TEST(ThreadsWindows, OneSharedWindowUnderTheGuard) {
    constexpr int nthreads = 4, rounds = 100;
    constexpr std::size_t counter = 4000, held = 4088;
    constexpr std::int64_t held_value = 0x5eed;
    ThreadRanks ranks(3);
    ranks.set(2, held, held_value);
    Window &window = ranks.w(0);
    {
        threads::Guard guard;
        ASSERT_EQ(window.lock_all(0), Status::ok);
    }
    std::atomic<int> bad_gets{0};
    {
        Sweepers sweepers(1);
        std::vector<std::thread> app;
        for (int t = 0; t < nthreads; ++t)
            app.emplace_back([&, t] {
                const std::int64_t one = 1;
                for (int round = 0; round < rounds; ++round) {
                    const int target = 1 + round % 2;
                    const std::int64_t value = 100000 * (t + 1) + round;
                    std::int64_t fetched = -1;
                    Request *flushed = nullptr;
                    {
                        threads::Guard guard;
                        ASSERT_EQ(window.rma(put_call(target, 8 * (t * rounds + round), &value),
                                             nullptr),
                                  Status::ok);
                        ASSERT_EQ(window.rma(get_call(2, held, &fetched), nullptr), Status::ok);
                        ASSERT_EQ(window.rma(accumulate_call(1, counter, &one), nullptr),
                                  Status::ok);
                        ASSERT_EQ(window.flush(-1, &flushed), Status::ok);
                    }
                    if (flushed) wait_and_release(flushed);  // (null: done in the call)
                    if (fetched != held_value) bad_gets.fetch_add(1);
                }
            });
        for (auto &thread : app) thread.join();
    }
    Request *closed = nullptr;
    {
        threads::Guard guard;
        ASSERT_EQ(window.unlock_all(&closed), Status::ok);
    }
    wait_and_release(closed);
    EXPECT_EQ(bad_gets.load(), 0);
    EXPECT_EQ(ranks.at(1, counter), nthreads * rounds);
    for (int t = 0; t < nthreads; ++t)
        for (int round = 0; round < rounds; ++round)
            EXPECT_EQ(ranks.at(1 + round % 2, 8 * (t * rounds + round)),
                      100000 * (t + 1) + round)
                << "thread " << t << " round " << round;
}

// Threads of one process lock different targets through one window at once (one lock
// epoch per target is allowed), each with nonblocking unlocks waited outside the guard.
TEST(ThreadsWindows, OneWindowLockEpochsTowardDifferentTargets) {
    constexpr int n = 4, rounds = 200;
    ThreadRanks ranks(n);
    Window &window = ranks.w(0);
    {
        Sweepers sweepers(1);
        std::vector<std::thread> app;
        for (int target = 1; target < n; ++target)
            app.emplace_back([&, target] {
                std::vector<std::int64_t> values(rounds);
                std::vector<Request *> closed(rounds, nullptr);
                for (int round = 0; round < rounds; ++round) {
                    values[round] = 10 * round + target;
                    threads::Guard guard;
                    ASSERT_EQ(window.lock(round % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE,
                                          target, 0),
                              Status::ok);
                    ASSERT_EQ(window.rma(put_call(target, 8 * round, &values[round]), nullptr),
                              Status::ok);
                    ASSERT_EQ(window.unlock(target, &closed[round]), Status::ok);
                }
                // Waited only now, in reverse: the later epochs were deferred behind the
                // earlier ones and complete in order anyway.
                for (int round = rounds - 1; round >= 0; --round) wait_and_release(closed[round]);
            });
        for (auto &thread : app) thread.join();
    }
    for (int target = 1; target < n; ++target)
        for (int round = 0; round < rounds; ++round)
            EXPECT_EQ(ranks.at(target, 8 * round), 10 * round + target)
                << "target " << target << " round " << round;
}

// ---------------------------------------------------------------- sweeps

// While one thread holds the progress lock, a sweep on another thread returns false at
// once (try_lock), even with work pending; once the lock is free the work completes.
TEST(ThreadsSweep, ReturnsFalseWhileAnotherThreadHoldsTheLock) {
    ThreadRanks ranks(2);
    const std::int64_t value = 77;
    Request *closed = nullptr;
    std::atomic<bool> returned{false};
    std::atomic<bool> result{true};
    std::thread sweeper;
    {
        threads::Guard guard;
        ASSERT_EQ(ranks.w(0).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
        ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::ok);
        ASSERT_EQ(ranks.w(0).unlock(1, &closed), Status::ok);
        sweeper = std::thread([&] {
            bool any = false;
            for (int i = 0; i < 100; ++i) any |= progress_sweep();
            result.store(any);
            returned.store(true);
        });
        // Still holding the lock: a sweep that queued behind it would never return.
        EXPECT_TRUE(eventually([&] { return returned.load(); }))
            << "progress_sweep blocked on the progress lock held by another thread";
        EXPECT_FALSE(result.load()) << "a sweep moved something while another thread held the lock";
    }
    sweeper.join();
    wait_and_release(closed);
    EXPECT_EQ(ranks.at(1, 0), value);
}

// ---------------------------------------------------------------- requests across threads

// Two threads open and close epochs and hand their requests to two other threads, which
// wait for them (sweeping, without the lock) and release them.
TEST(ThreadsRequests, WaitedOnAnotherThreadThanTheCreator) {
    constexpr int rounds = 200;
    ThreadRanks ranks(3);
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<Request *> handed;
    int producers_left = 2;
    std::atomic<int> waited{0}, failed{0};
    // Outlive the epochs: a deferred epoch's puts may read their origin at replay.
    std::vector<std::vector<std::int64_t>> origin_values(3, std::vector<std::int64_t>(rounds));

    std::vector<std::thread> threads;
    for (int origin = 1; origin <= 2; ++origin)
        threads.emplace_back([&, origin] {
            struct Leaving {  // also when an assertion returns early
                std::mutex &mutex;
                std::condition_variable &ready;
                int &left;
                ~Leaving() {
                    std::lock_guard<std::mutex> hold(mutex);
                    --left;
                    ready.notify_all();
                }
            } leaving{mutex, ready, producers_left};
            std::vector<std::int64_t> &values = origin_values[origin];
            for (int round = 0; round < rounds; ++round) {
                values[round] = origin * 1000 + round;
                Request *request = nullptr;
                {
                    threads::Guard guard;
                    Window &window = ranks.w(origin);
                    ASSERT_EQ(window.lock(MPI_LOCK_SHARED, 0, 0), Status::ok);
                    ASSERT_EQ(window.rma(put_call(0, 8 * ((origin - 1) * rounds + round),
                                                  &values[round]),
                                         nullptr),
                              Status::ok);
                    ASSERT_EQ(window.unlock(0, &request), Status::ok);
                }
                std::lock_guard<std::mutex> hold(mutex);
                handed.push_back(request);
                ready.notify_one();
            }
        });
    for (int c = 0; c < 2; ++c)
        threads.emplace_back([&] {
            for (;;) {
                Request *request;
                {
                    std::unique_lock<std::mutex> hold(mutex);
                    ready.wait(hold, [&] { return !handed.empty() || producers_left == 0; });
                    if (handed.empty()) return;
                    request = handed.front();
                    handed.pop_front();
                }
                if (wait_request(request) != Status::ok) failed.fetch_add(1);
                if (!request->complete()) failed.fetch_add(1);
                request->release();
                waited.fetch_add(1);
            }
        });
    for (auto &thread : threads) thread.join();
    EXPECT_EQ(waited.load(), 2 * rounds);
    EXPECT_EQ(failed.load(), 0);
    for (int origin = 1; origin <= 2; ++origin)
        for (int round = 0; round < rounds; ++round)
            EXPECT_EQ(ranks.at(0, 8 * ((origin - 1) * rounds + round)), origin * 1000 + round);
}

// Requests created on some threads (under the guard, as the engine does), finished on
// others (under the guard, as a sweep does) and released by their creators at the same
// time (without the guard, as MPICH's free callback does): every finish runs its hook
// exactly once, for the request it was set on (a spare handed out twice would show as one
// tag seen twice and one never).
TEST(ThreadsRequests, ReferenceCountsAndSparesFromSeveralThreads) {
    constexpr int pairs = 2, per_pair = 3000;
    threads::enable();
    std::vector<std::atomic<int>> seen(pairs * per_pair);
    struct Tag {
        std::vector<std::atomic<int>> *seen;
        int index;
    };
    std::vector<Tag> tags(pairs * per_pair);
    for (int i = 0; i < pairs * per_pair; ++i) tags[i] = Tag{&seen, i};
    const Request::Hook hook = [](Request *request) {
        const Tag *tag = static_cast<const Tag *>(request->user());
        (*tag->seen)[tag->index].fetch_add(1);
    };

    std::vector<std::thread> threads;
    for (int p = 0; p < pairs; ++p) {
        auto channel = std::make_shared<std::pair<std::mutex, std::deque<Request *>>>();
        auto done = std::make_shared<std::atomic<bool>>(false);
        threads.emplace_back([&, p, channel, done] {  // creator, then releaser
            for (int i = 0; i < per_pair; ++i) {
                Request *request;
                {
                    threads::Guard guard;
                    request = Request::create();
                    request->set_hook(hook, &tags[p * per_pair + i]);
                }
                {
                    std::lock_guard<std::mutex> hold(channel->first);
                    channel->second.push_back(request);
                }
                request->release();  // may drop the last reference, or the finisher will
            }
            done->store(true);
        });
        threads.emplace_back([&, channel, done] {  // finisher
            for (;;) {
                Request *request = nullptr;
                {
                    std::lock_guard<std::mutex> hold(channel->first);
                    if (!channel->second.empty()) {
                        request = channel->second.front();
                        channel->second.pop_front();
                    }
                }
                if (!request) {
                    if (done->load()) {
                        std::lock_guard<std::mutex> hold(channel->first);
                        if (channel->second.empty()) return;
                    }
                    std::this_thread::yield();
                    continue;
                }
                threads::Guard guard;
                request->finish(Status::ok);
            }
        });
    }
    for (auto &thread : threads) thread.join();
    int twice = 0, never = 0;
    for (auto &count : seen) {
        if (count.load() == 0) ++never;
        if (count.load() > 1) ++twice;
    }
    EXPECT_EQ(never, 0);
    EXPECT_EQ(twice, 0);
}

// A Spares free list shared by four threads taking and giving objects back: no object is
// ever held by two threads at once, and what is kept never exceeds its capacity.
TEST(ThreadsRequests, SparesNeverHandOneObjectToTwoThreads) {
    struct Thing {
        std::atomic<int> holder{0};
    };
    constexpr int nthreads = 4, iterations = 5000;
    threads::enable();
    Spares<Thing, 8> spares;
    std::atomic<int> collisions{0};
    std::vector<std::thread> workers;
    for (int t = 1; t <= nthreads; ++t)
        workers.emplace_back([&, t] {
            std::vector<Thing *> held;
            for (int i = 0; i < iterations; ++i) {
                Thing *thing = spares.take();
                if (!thing) thing = new Thing();
                if (thing->holder.exchange(t) != 0) collisions.fetch_add(1);
                held.push_back(thing);
                if (held.size() == 1 + static_cast<std::size_t>(i % 3)) {  // give back in bursts
                    for (Thing *back : held) {
                        back->holder.store(0);
                        spares.give(back);
                    }
                    held.clear();
                }
            }
            for (Thing *back : held) {
                back->holder.store(0);
                spares.give(back);
            }
        });
    for (auto &thread : workers) thread.join();
    EXPECT_EQ(collisions.load(), 0);
    int kept = 0;
    while (Thing *thing = spares.take()) {
        ++kept;
        delete thing;
    }
    EXPECT_GT(kept, 0);
    EXPECT_LE(kept, 8);
}

// ---------------------------------------------------------------- the deferred queue

struct DeferredRecord {
    std::atomic<int> runs{0};
    std::atomic<bool> on_progress_thread{false};
    std::thread::id ran_on;
    std::mutex mutex;
};

void record_deferred(void *arg) {
    auto *record = static_cast<DeferredRecord *>(arg);
    if (threads::on_progress_thread()) record->on_progress_thread.store(true);
    {
        std::lock_guard<std::mutex> hold(record->mutex);
        record->ran_on = std::this_thread::get_id();
    }
    record->runs.fetch_add(1);
}

// A call deferred on the progress thread is not run there, not even by a drain() there;
// the next application thread that drains runs it, once.
TEST(ThreadsDeferred, DeferredOnTheProgressThreadRunsOnTheNextDrainingApplicationThread) {
    threads::enable();
    threads::drain();  // whatever earlier tests left
    DeferredRecord record;
    std::thread progress([&] {
        threads::mark_progress_thread();
        EXPECT_TRUE(threads::on_progress_thread());
        for (int i = 0; i < 3; ++i) threads::defer(record_deferred, &record);
        threads::drain();  // does nothing on the progress thread
        EXPECT_EQ(record.runs.load(), 0);
    });
    progress.join();
    EXPECT_FALSE(threads::on_progress_thread());
    EXPECT_EQ(record.runs.load(), 0);
    std::thread application([&] { threads::drain(); });
    application.join();
    EXPECT_EQ(record.runs.load(), 3);
    EXPECT_FALSE(record.on_progress_thread.load());
    threads::drain();  // nothing left
    EXPECT_EQ(record.runs.load(), 3);
}

// Four threads defer while two application threads drain: every call runs exactly once.
TEST(ThreadsDeferred, ConcurrentDefersAndDrainsRunEachCallOnce) {
    constexpr int deferrers = 4, per_thread = 2000;
    threads::enable();
    threads::drain();
    std::vector<std::atomic<int>> runs(deferrers * per_thread);
    struct Item {
        std::vector<std::atomic<int>> *runs;
        int index;
    };
    std::vector<Item> items(deferrers * per_thread);
    for (int i = 0; i < deferrers * per_thread; ++i) items[i] = Item{&runs, i};
    std::atomic<int> deferring{deferrers};
    std::vector<std::thread> threads;
    for (int t = 0; t < deferrers; ++t)
        threads.emplace_back([&, t] {
            if (t % 2) threads::mark_progress_thread();  // half of them as progress threads
            for (int i = 0; i < per_thread; ++i) {
                Item *item = &items[t * per_thread + i];
                threads::defer(
                    [](void *arg) {
                        auto *it = static_cast<Item *>(arg);
                        (*it->runs)[it->index].fetch_add(1);
                    },
                    item);
            }
            deferring.fetch_sub(1);
        });
    for (int d = 0; d < 2; ++d)
        threads.emplace_back([&] {
            while (deferring.load() > 0) {
                threads::drain();
                std::this_thread::yield();
            }
            threads::drain();
        });
    for (auto &thread : threads) thread.join();
    threads::drain();
    int wrong = 0;
    for (auto &count : runs) wrong += count.load() != 1;
    EXPECT_EQ(wrong, 0) << "deferred calls that did not run exactly once";
}

// A deferred call that defers another and drains (a datatype's attribute delete callback
// run by a deferred MPI_Type_free, calling back into nbrma): every call still runs
// exactly once, and nothing already run stays queued for the next drain.
// (Failed with the thread_local batch of 38f8af3: the inner drain swapped the outer
// drain's batch, still being run, back into the queue, and calls 0, 1 and 2 ran twice.)
TEST(ThreadsDeferred, ACallThatDefersAndDrainsRunsEveryCallOnce) {
    threads::enable();
    threads::drain();
    static std::atomic<int> runs[4];
    for (auto &count : runs) count.store(0);
    const auto count = [](void *arg) { runs[reinterpret_cast<std::intptr_t>(arg)].fetch_add(1); };
    threads::defer(
        [](void *) {
            runs[0].fetch_add(1);
            threads::defer(
                [](void *arg) { runs[reinterpret_cast<std::intptr_t>(arg)].fetch_add(1); },
                reinterpret_cast<void *>(std::intptr_t{1}));
            threads::drain();  // re-entered from inside a drain
        },
        nullptr);
    threads::defer(count, reinterpret_cast<void *>(std::intptr_t{2}));
    threads::drain();
    threads::defer(count, reinterpret_cast<void *>(std::intptr_t{3}));
    threads::drain();
    threads::drain();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(runs[i].load(), 1) << "deferred call " << i;
}

// ---------------------------------------------------------------- the progress thread

// Starts and stops the progress thread five times; each time it alone (this thread does
// not sweep) completes an epoch, whose data arrives. Start and stop are idempotent.
TEST(ThreadsProgressThread, StartsAndStopsRepeatedlyAndCompletesEpochs) {
    ProgressThreadStopper stopper;
    ThreadRanks ranks(2);
    for (int i = 0; i < 5; ++i) {
        SCOPED_TRACE(i);
        ASSERT_EQ(progress_thread_start(), Status::ok);
        EXPECT_TRUE(progress_thread_running());
        ASSERT_EQ(progress_thread_start(), Status::ok);  // already running: no-op
        EXPECT_TRUE(progress_thread_running());
        const std::int64_t value = 500 + i;
        Request *closed = nullptr;
        std::uint64_t sweeps_before;
        {
            threads::Guard guard;
            sweeps_before = counters().progress_thread_sweeps;
            EXPECT_EQ(progress_window_count(), 2u);
            ASSERT_EQ(ranks.w(0).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
            ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::ok);
            ASSERT_EQ(ranks.w(0).unlock(1, &closed), Status::ok);
        }
        progress_kick();
        EXPECT_TRUE(eventually([&] { return closed->complete(); }))
            << "the progress thread did not complete the epoch";
        EXPECT_EQ(closed->status(), Status::ok);
        closed->release();
        {
            threads::Guard guard;
            EXPECT_EQ(ranks.at(1, 0), value);
            EXPECT_TRUE(ranks.w(0).idle());
            EXPECT_GT(counters().progress_thread_sweeps, sweeps_before);
        }
        progress_thread_stop();
        EXPECT_FALSE(progress_thread_running());
        progress_thread_stop();  // not running: no-op
        EXPECT_FALSE(progress_thread_running());
    }
}

// With no window at all the thread still starts and stops cleanly, and an epoch opened
// while it runs beside application threads that also wait on requests completes.
TEST(ThreadsProgressThread, StartStopWithoutWindowsThenBesideWaitingThreads) {
    ProgressThreadStopper stopper;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(progress_thread_start(), Status::ok);
        EXPECT_TRUE(progress_thread_running());
        progress_thread_stop();
        EXPECT_FALSE(progress_thread_running());
    }
    constexpr int n = 3, rounds = 30;
    ThreadRanks ranks(n);
    ASSERT_EQ(progress_thread_start(), Status::ok);
    std::vector<std::thread> app;
    for (int origin = 1; origin < n; ++origin)
        app.emplace_back([&, origin] {
            const std::int64_t one = 1;
            for (int round = 0; round < rounds; ++round) {
                Request *closed = nullptr;
                {
                    threads::Guard guard;
                    Window &window = ranks.w(origin);
                    ASSERT_EQ(window.lock(MPI_LOCK_SHARED, 0, 0), Status::ok);
                    ASSERT_EQ(window.rma(accumulate_call(0, 0, &one), nullptr), Status::ok);
                    ASSERT_EQ(window.unlock(0, &closed), Status::ok);
                }
                if (round % 2) {
                    wait_and_release(closed);  // sweeps beside the progress thread
                } else {
                    progress_kick();
                    EXPECT_TRUE(eventually([&] { return closed->complete(); }));
                    EXPECT_EQ(closed->status(), Status::ok);
                    closed->release();
                }
            }
        });
    for (auto &thread : app) thread.join();
    progress_thread_stop();
    EXPECT_EQ(ranks.at(0, 0), (n - 1) * rounds);
}

// Two threads start and stop the progress thread at once (MPI_Win_free of a process's
// last window on one thread, a window creation on another), while a third completes
// epochs: every stop returns (the thread it joins has seen its stop), and at the end the
// thread is stopped. A join that never returns is a deadlock: reported, then abort(),
// since the test cannot go on.
// (Deadlocked within seconds with one shared `stop` flag: a start that took the mutex
// before the old thread looked at the flag cleared it, and the stop's join() waited
// forever. Each start now has its own generation.)
TEST(ThreadsProgressThread, ConcurrentStartsAndStopsFromTwoThreads) {
    ProgressThreadStopper stopper;
    constexpr int cycles = 200, rounds = 100;
    ThreadRanks ranks(2);
    std::atomic<int> finished{0};
    std::atomic<bool> stopping{true};
    std::vector<std::thread> threads;
    // One thread starts the progress thread over and over (so it is often waiting for the
    // start/stop mutex when a stop releases it); the other stops it now and then, after
    // long enough for the progress thread to go to sleep.
    threads.emplace_back([&] {
        while (stopping.load()) {
            EXPECT_EQ(progress_thread_start(), Status::ok);
            std::this_thread::yield();
        }
        finished.fetch_add(1);
    });
    threads.emplace_back([&] {
        for (int i = 0; i < cycles; ++i) {
            std::this_thread::sleep_for(std::chrono::microseconds(i % 2 ? 300 : 20));
            progress_thread_stop();
        }
        stopping.store(false);
        finished.fetch_add(1);
    });
    threads.emplace_back([&] {
        const std::int64_t one = 1;
        for (int round = 0; round < rounds; ++round) {
            Request *closed = nullptr;
            {
                threads::Guard guard;
                ASSERT_EQ(ranks.w(0).lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
                ASSERT_EQ(ranks.w(0).rma(accumulate_call(1, 0, &one), nullptr), Status::ok);
                ASSERT_EQ(ranks.w(0).unlock(1, &closed), Status::ok);
            }
            wait_and_release(closed);
        }
        finished.fetch_add(1);
    });
    if (!eventually([&] { return finished.load() == 3; })) {
        ADD_FAILURE() << "progress_thread_start/stop from two threads deadlocked (a stop "
                         "joins a thread that a concurrent start told to go on?)";
        std::fprintf(stderr, "ThreadsProgressThread.ConcurrentStartsAndStopsFromTwoThreads: "
                             "deadlock, aborting\n");
        std::abort();
    }
    for (auto &thread : threads) thread.join();
    progress_thread_stop();
    EXPECT_FALSE(progress_thread_running());
    EXPECT_EQ(ranks.at(1, 0), rounds);
}

// A request the progress thread completes runs its hook there; what the hook defers (as
// the MPI layer defers MPI_Grequest_complete) waits for an application thread's drain.
TEST(ThreadsProgressThread, HookOnTheProgressThreadDefersToTheApplication) {
    ProgressThreadStopper stopper;
    threads::enable();
    threads::drain();
    ThreadRanks ranks(2);
    struct Context {
        std::atomic<bool> hook_ran{false};
        std::atomic<bool> hook_on_progress_thread{false};
        DeferredRecord record;
    } context;
    ASSERT_EQ(progress_thread_start(), Status::ok);
    const std::int64_t value = 4242;
    Request *closed = nullptr;
    {
        threads::Guard guard;  // the progress thread cannot sweep before the hook is set
        ASSERT_EQ(ranks.w(0).lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
        ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::ok);
        ASSERT_EQ(ranks.w(0).unlock(1, &closed), Status::ok);
        closed->set_hook(
            [](Request *request) {
                auto *c = static_cast<Context *>(request->user());
                c->hook_on_progress_thread.store(threads::on_progress_thread());
                threads::defer(record_deferred, &c->record);
                c->hook_ran.store(true);
            },
            &context);
    }
    progress_kick();
    // This thread makes no engine call until the request is complete.
    ASSERT_TRUE(eventually([&] { return closed->complete(); }));
    ASSERT_TRUE(eventually([&] { return context.hook_ran.load(); }));
    EXPECT_TRUE(context.hook_on_progress_thread.load());
    EXPECT_EQ(context.record.runs.load(), 0) << "the progress thread ran a deferred call";
    threads::drain();
    EXPECT_EQ(context.record.runs.load(), 1);
    EXPECT_FALSE(context.record.on_progress_thread.load());
    {
        std::lock_guard<std::mutex> hold(context.record.mutex);
        EXPECT_EQ(context.record.ran_on, std::this_thread::get_id());
    }
    closed->release();
    progress_thread_stop();
    EXPECT_EQ(ranks.at(1, 0), value);
}

// ---------------------------------------------------------------- shared sections

// While a thread is in a shared section, another thread's lock waits for it to leave;
// while a thread holds the lock, no section starts, on any thread (the holder's too).
TEST(ThreadsShared, SectionsAndTheLockExcludeEachOther) {
    threads::enable();
    ASSERT_TRUE(threads::SharedSection::enter());
    std::atomic<bool> locked{false}, release{false}, other_entered{true}, own_entered{true};
    std::thread taker([&] {
        threads::Guard guard;
        locked = true;
        std::thread other([&] {
            other_entered = threads::SharedSection::enter();
            if (other_entered) threads::SharedSection::leave();
        });
        other.join();
        own_entered = threads::SharedSection::enter();
        if (own_entered) threads::SharedSection::leave();
        while (!release) std::this_thread::yield();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(locked.load()) << "the lock was taken inside a shared section";
    threads::SharedSection::leave();
    EXPECT_TRUE(eventually([&] { return locked.load(); }));
    release = true;
    taker.join();
    EXPECT_FALSE(other_entered.load());
    EXPECT_FALSE(own_entered.load());
    ASSERT_TRUE(threads::SharedSection::enter());  // the lock is free again
    threads::SharedSection::leave();
}

// A section entered with a serializer holds it until it leaves; one that the lock turns
// away (held by another thread) leaves the serializer free; and the lock waits for such a
// section as for any other.
TEST(ThreadsShared, SectionsWithASerializerHoldItUntilTheyLeave) {
    threads::enable();
    threads::SpinLock serializer;
    ASSERT_TRUE(threads::SharedSection::enter(&serializer));
    std::atomic<bool> serializer_free{true}, locked{false}, release{false}, entered{true};
    std::thread other([&] {
        serializer_free = serializer.try_lock();
        if (serializer_free) serializer.unlock();
        threads::Guard guard;
        locked = true;
        std::thread third([&] {
            entered = threads::SharedSection::enter(&serializer);
            if (entered) threads::SharedSection::leave(&serializer);
        });
        third.join();
        while (!release) std::this_thread::yield();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(locked.load()) << "the lock was taken inside a shared section";
    threads::SharedSection::leave(&serializer);
    EXPECT_TRUE(eventually([&] { return locked.load(); }));
    EXPECT_FALSE(serializer_free.load()) << "the section did not hold its serializer";
    release = true;
    other.join();
    EXPECT_FALSE(entered.load()) << "a section started while the lock was held";
    ASSERT_TRUE(serializer.try_lock()) << "a section turned away kept the serializer";
    serializer.unlock();
    ASSERT_TRUE(threads::SharedSection::enter(&serializer));  // the lock is free again
    threads::SharedSection::leave(&serializer);
}

// Windows of a few ranks of one process for the calls that run in shared sections.
constexpr std::size_t section_window_bytes = 4096;

// The RMA calls counted in shared sections so far (each thread's slot's counters).
std::uint64_t shared_rma_ops() {
    threads::Guard guard;
    return threads::all_counters().rma_ops - counters().rma_ops;
}

// As the MPI layer's shared_call (mpi/state.hpp): the call in a shared section under the
// window's own lock (the section's serializer), else under the progress lock through
// `fallback`. True if it ran shared.
template <typename Shared, typename Fallback>
bool shared_or_locked(threads::SpinLock &window_lock, Shared shared, Fallback fallback) {
    if (threads::SharedSection::enter(&window_lock)) {
        const bool ran = shared();
        threads::SharedSection::leave(&window_lock);
        if (ran) return true;
    }
    threads::Guard guard;
    fallback();
    return false;
}

// The same for a call the engine may run concurrently (the MPI layer's shared_call of
// two calls): `concurrent` in a section without the window's lock, where it turns the
// call down `serialized` under it, else `fallback` under the progress lock. 2 if it ran
// concurrently, 1 serialized, 0 under the lock.
template <typename Concurrent, typename Serialized, typename Fallback>
int shared_or_locked(threads::SpinLock &window_lock, Concurrent concurrent, Serialized serialized,
                     Fallback fallback) {
    if (threads::SharedSection::enter()) {
        if (concurrent()) {
            threads::SharedSection::leave();
            return 2;
        }
        window_lock.lock();
        const bool ran = serialized();
        window_lock.unlock();
        threads::SharedSection::leave();
        if (ran) return 1;
    }
    threads::Guard guard;
    fallback();
    return 0;
}

// Threads on windows of their own, and threads sharing one window, put, flush and get
// inside one lock_all epoch each, in shared sections where the engine takes the call
// (concurrently with the window's other calls where it can, serialized by the window's
// lock where not: the first call toward a target, every fifth round on purpose) and under
// the lock where it does not (the first call of a type, every fifth round on purpose),
// while another thread flushes every window under the lock. Every get reads back the
// value just put; the concurrent and serialized paths ran; under ThreadSanitizer (make
// check-tsan) a concurrent call that overlapped another's writes to the window, or a
// shared section that overlapped a lock holder's work on the same window, is a report.
TEST(ThreadsShared, PutFlushGetOnWindowsOfTheirOwnAndOneShared) {
    constexpr int n = 4, rounds = 2000;
    ShmRanks ranks(n, section_window_bytes, true);
    std::vector<threads::SpinLock> window_locks(n);
    {
        threads::Guard guard;
        for (auto &window : ranks.windows) ASSERT_EQ(window->lock_all(0), Status::ok);
    }
    const std::uint64_t shared_before = shared_rma_ops();
    std::atomic<bool> stop{false};
    std::atomic<int> mismatches{0}, concurrent_calls{0}, serialized_calls{0};
    std::thread flusher([&] {
        while (!stop.load(std::memory_order_acquire)) {
            for (auto &window : ranks.windows) {
                threads::Guard guard;
                Request *request = nullptr;
                EXPECT_EQ(window->flush(-1, &request), Status::ok);
                EXPECT_EQ(request, nullptr);  // at once
            }
            std::this_thread::yield();
        }
    });
    // Threads 0..n-1 on window t; threads n..2n-1 all on window 0, each its own slot.
    std::vector<std::thread> app;
    for (int t = 0; t < 2 * n; ++t)
        app.emplace_back([&, t] {
            const int w = t < n ? t : 0;
            Window &window = *ranks.windows[w];
            const int target = (t + 1) % n;
            const MPI_Aint slot = 8 * t;
            for (int round = 0; round < rounds; ++round) {
                const std::int64_t value = 1000000 * (t + 1) + round;
                std::int64_t back = -1;
                const RmaCall put = put_call(target, slot, &value);
                const RmaCall get = get_call(target, slot, &back);
                const int path = round % 5;  // 4: under the lock, 3: serialized
                const auto concurrent = [&](auto fn) { return path < 3 && fn(); };
                const auto serialized = [&](auto fn) { return path < 4 && fn(); };
                const auto count = [&](int ran) {
                    if (ran == 2) concurrent_calls.fetch_add(1, std::memory_order_relaxed);
                    if (ran == 1) serialized_calls.fetch_add(1, std::memory_order_relaxed);
                };
                count(shared_or_locked(
                    window_locks[w],
                    [&] { return concurrent([&] { return window.rma_concurrent(put); }); },
                    [&] { return serialized([&] { return window.rma_shared(put); }); },
                    [&] { EXPECT_EQ(window.rma(put, nullptr), Status::ok); }));
                count(shared_or_locked(
                    window_locks[w],
                    [&] { return concurrent([&] { return window.flush_concurrent(target); }); },
                    [&] { return serialized([&] { return window.flush_shared(target); }); },
                    [&] {
                        Request *request = nullptr;
                        EXPECT_EQ(window.flush(target, &request), Status::ok);
                        EXPECT_EQ(request, nullptr);
                    }));
                count(shared_or_locked(
                    window_locks[w],
                    [&] { return concurrent([&] { return window.rma_concurrent(get); }); },
                    [&] { return serialized([&] { return window.rma_shared(get); }); },
                    [&] { EXPECT_EQ(window.rma(get, nullptr), Status::ok); }));
                if (back != value) mismatches.fetch_add(1);
            }
        });
    for (auto &thread : app) thread.join();
    stop = true;
    flusher.join();
    EXPECT_EQ(mismatches.load(), 0);
    for (int t = 0; t < 2 * n; ++t)
        EXPECT_EQ(ranks.at((t + 1) % n, 8 * t), 1000000 * (t + 1) + rounds - 1) << "thread " << t;
    EXPECT_GT(shared_rma_ops(), shared_before);
    EXPECT_GT(concurrent_calls.load(), 0);
    EXPECT_GT(serialized_calls.load(), 0);
    threads::Guard guard;
    for (auto &window : ranks.windows) {
        Request *request = nullptr;
        ASSERT_EQ(window->unlock_all(&request), Status::ok);
        EXPECT_EQ(request, nullptr);  // released at once
    }
}

// Threads fetch-and-add one counter through one window (in shared sections, as CPU
// atomics on mapped memory, where the window's last atomic call had the same shape; under
// the lock on purpose every fifth round), while another thread flushes under the lock:
// every fetched value is distinct and the counter holds the sum.
TEST(ThreadsShared, FetchAndOpFromThreadsOnOneWindow) {
    constexpr int threads_n = 4, rounds = 2000;
    ShmRanks ranks(2, section_window_bytes, true);
    Window &window = *ranks.windows[0];
    threads::SpinLock window_lock;
    {
        threads::Guard guard;
        ASSERT_EQ(window.lock_all(0), Status::ok);
    }
    const std::uint64_t shared_before = shared_rma_ops();
    std::atomic<bool> stop{false};
    std::thread flusher([&] {
        while (!stop.load(std::memory_order_acquire)) {
            {
                threads::Guard guard;
                Request *request = nullptr;
                EXPECT_EQ(window.flush(1, &request), Status::ok);
                EXPECT_EQ(request, nullptr);
            }
            std::this_thread::yield();
        }
    });
    std::vector<std::vector<std::int64_t>> fetched(threads_n);
    std::vector<std::thread> app;
    for (int t = 0; t < threads_n; ++t)
        app.emplace_back([&, t] {
            const std::int64_t one = 1;
            for (int round = 0; round < rounds; ++round) {
                std::int64_t old = -1;
                RmaCall call;
                call.kind = RmaKind::fetch_and_op;
                call.op = MPI_SUM;
                call.origin = &one;
                call.origin_count = call.target_count = call.result_count = 1;
                call.origin_type = call.target_type = call.result_type = MPI_INT64_T;
                call.result = &old;
                call.target = 1;
                call.displacement = 64;
                const bool locked_on_purpose = round % 5 == 4;
                shared_or_locked(
                    window_lock, [&] { return !locked_on_purpose && window.rma_shared(call); },
                    [&] { EXPECT_EQ(window.rma(call, nullptr), Status::ok); });
                fetched[t].push_back(old);
            }
        });
    for (auto &thread : app) thread.join();
    stop = true;
    flusher.join();
    std::vector<std::int64_t> all;
    for (const auto &values : fetched) all.insert(all.end(), values.begin(), values.end());
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<std::int64_t>(i));
    EXPECT_EQ(ranks.at(1, 64), threads_n * rounds);
    EXPECT_GT(shared_rma_ops(), shared_before);
    threads::Guard guard;
    Request *request = nullptr;
    ASSERT_EQ(window.unlock_all(&request), Status::ok);
    EXPECT_EQ(request, nullptr);
}

// Threads open and close lock epochs on windows of their own, in shared sections where
// the lock is free at once and under the lock where it is not: each round an exclusive
// lock of rank 0 (every thread's: contended, so some wait in the queue and are handed
// the lock), a lock_all, or a shared lock of the next rank, with one put, while a thread
// sweeps. After each unlock the put is at its target; the counters count every epoch
// once, whichever way it ran.
TEST(ThreadsShared, LockEpochsOnWindowsOfTheirOwn) {
    constexpr int n = 4, rounds = 600;
    ShmRanks ranks(n, section_window_bytes, true);
    std::vector<threads::SpinLock> window_locks(n);
    Counters before;
    {
        threads::Guard guard;
        before = threads::all_counters();
    }
    std::atomic<int> shared_epochs{0}, wrong{0};
    {
        Sweepers sweepers(1);
        std::vector<std::thread> app;
        for (int t = 0; t < n; ++t)
            app.emplace_back([&, t] {
                Window &window = *ranks.windows[t];
                threads::SpinLock &own = window_locks[t];
                for (int round = 0; round < rounds; ++round) {
                    const int kind = round % 3;
                    const int target = kind == 0 ? 0 : (t + 1) % n;
                    const std::int64_t value = 1000000 * (t + 1) + round;
                    const int type = kind == 0 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
                    bool opened_shared;
                    if (kind == 1)
                        opened_shared = shared_or_locked(
                            own, [&] { return window.lock_all_shared(0); },
                            [&] { EXPECT_EQ(window.lock_all(0), Status::ok); });
                    else
                        opened_shared = shared_or_locked(
                            own, [&] { return window.lock_shared(type, target, 0); },
                            [&] { EXPECT_EQ(window.lock(type, target, 0), Status::ok); });
                    const RmaCall put = put_call(target, 8 * t, &value);
                    shared_or_locked(
                        own, [&] { return window.rma_shared(put); },
                        [&] { EXPECT_EQ(window.rma(put, nullptr), Status::ok); });
                    Request *pending = nullptr;
                    if (kind == 1)
                        shared_or_locked(
                            own, [&] { return window.unlock_all_shared(); },
                            [&] { EXPECT_EQ(window.unlock_all(&pending), Status::ok); });
                    else
                        shared_or_locked(
                            own, [&] { return window.unlock_shared(target); },
                            [&] { EXPECT_EQ(window.unlock(target, &pending), Status::ok); });
                    if (pending) wait_and_release(pending);  // `value` is on our stack
                    if (ranks.at(target, 8 * t) != value) wrong.fetch_add(1);
                    if (opened_shared) shared_epochs.fetch_add(1);
                }
            });
        for (auto &thread : app) thread.join();
    }
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GT(shared_epochs.load(), 0);
    threads::Guard guard;
    const Counters after = threads::all_counters();
    EXPECT_EQ(after.epochs_opened - before.epochs_opened, std::uint64_t{n} * rounds);
    EXPECT_EQ(after.epochs_completed - before.epochs_completed, std::uint64_t{n} * rounds);
    EXPECT_EQ(after.rma_ops - before.rma_ops, std::uint64_t{n} * rounds);
    for (int r = 0; r < n; ++r) EXPECT_TRUE(ranks.windows[r]->idle()) << "rank " << r;
}

// The calls a shared section turns down, with nothing done: outside an at-once epoch, a
// type this thread has not looked up under the lock, an atomic of a shape the window has
// not run, a target the epoch does not hold yet; the same calls then run under the lock.
TEST(ThreadsShared, CallsTheSectionTurnsDown) {
    ShmRanks ranks(2, section_window_bytes, true);
    Window &window = *ranks.windows[0];
    const std::int64_t value = 42;
    RmaCall put = put_call(1, 0, &value);
    ASSERT_TRUE(threads::SharedSection::enter());
    EXPECT_FALSE(window.rma_shared(put));  // no epoch
    EXPECT_FALSE(window.flush_shared(1));
    threads::SharedSection::leave();
    {
        threads::Guard guard;
        ASSERT_EQ(window.lock(MPI_LOCK_SHARED, 1, 0), Status::ok);
    }
    RmaCall odd = put;
    odd.origin_type = odd.target_type = MPI_UINT64_T;  // not this thread's last type
    std::int64_t before = ranks.at(1, 0), fetched = -1;
    RmaCall fop = put_call(1, 8, &value);  // no atomic call yet: no shape to run it by
    fop.kind = RmaKind::fetch_and_op;
    fop.op = MPI_SUM;
    fop.result = &fetched;
    fop.result_count = 1;
    fop.result_type = MPI_INT64_T;
    ASSERT_TRUE(threads::SharedSection::enter());
    EXPECT_FALSE(window.rma_shared(odd));
    EXPECT_FALSE(window.rma_shared(fop));
    threads::SharedSection::leave();
    EXPECT_EQ(ranks.at(1, 0), before);
    EXPECT_EQ(ranks.at(1, 8), 0);
    EXPECT_EQ(fetched, -1);
    {
        threads::Guard guard;
        ASSERT_EQ(window.rma(put, nullptr), Status::ok);  // caches MPI_INT64_T and the mapping
    }
    const std::int64_t next = 43;
    put.origin = &next;
    ASSERT_TRUE(threads::SharedSection::enter());
    EXPECT_TRUE(window.rma_shared(put));
    EXPECT_TRUE(window.flush_shared(1));
    RmaCall other = put_call(0, 0, &value);  // a target outside the lock epoch
    EXPECT_FALSE(window.rma_shared(other));
    threads::SharedSection::leave();
    EXPECT_EQ(ranks.at(1, 0), 43);
    EXPECT_EQ(ranks.at(0, 0), 0);
    threads::Guard guard;
    Request *request = nullptr;
    ASSERT_EQ(window.unlock(1, &request), Status::ok);
    EXPECT_EQ(request, nullptr);
}

// A lock_all epoch's first call toward a target takes the target's shared lock in the
// section if it is free; if not, the call is turned down with nothing done (the epoch
// stays at once, its other targets usable) and runs under the lock once it is free.
TEST(ThreadsShared, LockAllTakesFreeTargetsInTheSection) {
    ShmRanks ranks(3, section_window_bytes, true);
    Window &window = *ranks.windows[0];
    std::uint64_t grants_before;
    {
        threads::Guard guard;  // rank 2 locks itself exclusively
        ASSERT_EQ(ranks.windows[2]->lock(MPI_LOCK_EXCLUSIVE, 2, 0), Status::ok);
        const std::int64_t warm = 0;  // caches MPI_INT64_T for this thread
        ASSERT_EQ(ranks.windows[2]->rma(put_call(2, 8, &warm), nullptr), Status::ok);
        Request *none = nullptr;  // rank 0's first epoch (its at-once epoch made)
        ASSERT_EQ(window.lock_all(0), Status::ok);
        ASSERT_EQ(window.unlock_all(&none), Status::ok);
        ASSERT_EQ(none, nullptr);
        grants_before = threads::all_counters().lock_grants;
    }
    const std::int64_t one = 1, two = 2;
    ASSERT_TRUE(threads::SharedSection::enter());
    ASSERT_TRUE(window.lock_all_shared(0));
    EXPECT_TRUE(window.rma_shared(put_call(1, 0, &one)));   // rank 1's lock: free
    EXPECT_FALSE(window.rma_shared(put_call(2, 0, &two)));  // rank 2's: held exclusively
    EXPECT_TRUE(window.rma_shared(put_call(1, 8, &two)));   // still the at-once epoch's
    threads::SharedSection::leave();
    EXPECT_EQ(ranks.at(1, 0), 1);
    EXPECT_EQ(ranks.at(1, 8), 2);
    EXPECT_EQ(ranks.at(2, 0), 0);
    Request *request = nullptr;
    {
        threads::Guard guard;
        EXPECT_EQ(threads::all_counters().lock_grants - grants_before, 1u);  // rank 1's only
        ASSERT_EQ(ranks.windows[2]->unlock(2, &request), Status::ok);
    }
    if (request) wait_and_release(request);
    ASSERT_TRUE(threads::SharedSection::enter());
    EXPECT_TRUE(window.rma_shared(put_call(2, 0, &two)));  // free now
    EXPECT_TRUE(window.unlock_all_shared());
    threads::SharedSection::leave();
    EXPECT_EQ(ranks.at(2, 0), 2);
    {
        threads::Guard guard;
        EXPECT_EQ(threads::all_counters().lock_grants - grants_before, 2u);
    }
    Window &other = *ranks.windows[2];  // both shared locks were released: free again
    for (int target : {1, 2}) {
        ASSERT_TRUE(threads::SharedSection::enter());
        EXPECT_TRUE(other.lock_shared(MPI_LOCK_EXCLUSIVE, target, 0)) << "target " << target;
        EXPECT_TRUE(other.unlock_shared(target));
        threads::SharedSection::leave();
    }
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(ranks.windows[r]->idle()) << "rank " << r;
}

// Concurrent calls (rma_concurrent, flush_concurrent) run only toward what the at-once
// epoch holds: the lock epoch's target, or a lock_all target an earlier call took in
// this epoch (not one an earlier epoch took); the rest is turned down with nothing done.
TEST(ThreadsShared, ConcurrentCallsOnlyTowardHeldTargets) {
    ShmRanks ranks(3, section_window_bytes, true);
    Window &window = *ranks.windows[0];
    const std::int64_t one = 1, two = 2, three = 3;
    std::int64_t back = 0;
    {
        threads::Guard guard;
        const std::int64_t warm = 0;  // caches MPI_INT64_T for this thread
        ASSERT_EQ(ranks.windows[2]->lock(MPI_LOCK_EXCLUSIVE, 2, 0), Status::ok);
        ASSERT_EQ(ranks.windows[2]->rma(put_call(2, 8, &warm), nullptr), Status::ok);
        Request *none = nullptr;
        ASSERT_EQ(ranks.windows[2]->unlock(2, &none), Status::ok);
        ASSERT_EQ(none, nullptr);
        ASSERT_EQ(window.lock_all(0), Status::ok);  // rank 0's at-once epoch made
        ASSERT_EQ(window.unlock_all(&none), Status::ok);
        ASSERT_EQ(none, nullptr);
    }
    for (int epoch = 0; epoch < 2; ++epoch) {
        ASSERT_TRUE(threads::SharedSection::enter());
        ASSERT_TRUE(window.lock_all_shared(0));
        EXPECT_FALSE(window.rma_concurrent(put_call(1, 0, &two))) << "epoch " << epoch;
        EXPECT_EQ(ranks.at(1, 0), epoch == 0 ? 0 : 3);         // nothing done
        EXPECT_TRUE(window.rma_shared(put_call(1, 0, &one)));  // takes rank 1
        EXPECT_TRUE(window.rma_concurrent(put_call(1, 0, &two)));
        EXPECT_TRUE(window.flush_concurrent(1));
        EXPECT_FALSE(window.rma_concurrent(put_call(2, 0, &two)));  // rank 2 not taken
        EXPECT_TRUE(window.rma_concurrent(get_call(1, 0, &back)));
        EXPECT_EQ(back, 2);
        EXPECT_TRUE(window.rma_concurrent(put_call(1, 0, &three)));
        EXPECT_TRUE(window.unlock_all_shared());
        EXPECT_FALSE(window.rma_concurrent(put_call(1, 0, &two)));  // no epoch
        threads::SharedSection::leave();
        EXPECT_EQ(ranks.at(1, 0), 3);
        EXPECT_EQ(ranks.at(2, 0), 0);
    }
    ASSERT_TRUE(threads::SharedSection::enter());  // a lock epoch: its one target
    ASSERT_TRUE(window.lock_shared(MPI_LOCK_EXCLUSIVE, 2, 0));
    EXPECT_TRUE(window.rma_concurrent(put_call(2, 16, &two)));
    EXPECT_FALSE(window.rma_concurrent(put_call(1, 16, &two)));
    EXPECT_TRUE(window.unlock_shared(2));
    threads::SharedSection::leave();
    EXPECT_EQ(ranks.at(2, 16), 2);
    EXPECT_EQ(ranks.at(1, 16), 0);
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(ranks.windows[r]->idle()) << "rank " << r;
}

}  // namespace
}  // namespace nbrma::engine
