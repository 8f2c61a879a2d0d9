#include "engine/assist.hpp"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/progress.hpp"

namespace nbrma::engine {

namespace {

struct AssistThread {
    std::mutex mutex;  // guards thread start and stop; the park below
    std::condition_variable wake;
    std::thread thread;
    std::atomic<bool> running{false};
    std::atomic<bool> stopping{false};
    std::atomic<bool> parked{false};  // the thread waits on `wake`
    std::atomic<int> inside{0};  // application threads inside an assisted call
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> sweeps{0};
};

// How long the thread stays awake after the last assisted call left, so a program that
// calls collectives in a loop wakes it without a system call (it naps meanwhile).
constexpr auto linger = std::chrono::milliseconds(5);

AssistThread &self() {
    static AssistThread *assist = new AssistThread;  // never destroyed: no exit-order hazard
    return *assist;
}

// After a sweep that moved nothing: sleeps until the UCX worker has events (if a window
// has an event descriptor) or a timeout: 10 us doubling to 320 us while this process has
// work pending, else 1 ms (serving peers only: their requests are events). Sleeping,
// not yielding: on an oversubscribed node a sleeper that wakes gets the CPU from the
// application threads spinning in MPICH's blocking calls (a yielding thread does not,
// and served UCX peers 10x slower).
void nap(unsigned shift) {
    const long pending_ns = 10000l << shift;
    const int fd = progress_arm_events();
    if (fd == -2) return;  // events came: sweep again
    const timespec timeout{0, fd >= 0 && !progress_pending() ? 1000000l : pending_ns};
    if (fd >= 0) {
        pollfd event{fd, POLLIN, 0};
        (void)::ppoll(&event, 1, &timeout, nullptr);
    } else {
        nanosleep(&timeout, nullptr);
    }
}

void run() {
    AssistThread &assist = self();
    unsigned idle = 0;
    std::uint64_t swept = progress_sweeps();  // as of our last sweep or look
    for (;;) {
        if (assist.inside.load(std::memory_order_acquire) > 0) {
            const std::uint64_t now = progress_sweeps();
            if (now != swept) {
                // Another thread swept since we looked (MPI_THREAD_MULTIPLE: an
                // application thread in an nbrma call or wait progresses): leave it
                // the work rather than contend for the lock; look again after a nap.
                swept = now;
                nap(std::min(++idle / 16, 5u));
                continue;
            }
            const bool moved = progress_sweep();
            swept = progress_sweeps();
            if (moved) {
                assist.sweeps.fetch_add(1, std::memory_order_relaxed);
                idle = 0;
            } else if (++idle < 16 && !oversubscribed()) {
                __builtin_ia32_pause();
            } else {
                nap(std::min(idle / 16, 5u));
            }
            continue;
        }
        // Nobody inside: nap a while (a nap, not a sweep: the application thread
        // progresses itself), then park until an assisted call or a stop.
        const auto left = std::chrono::steady_clock::now();
        while (assist.inside.load(std::memory_order_seq_cst) == 0 &&
               std::chrono::steady_clock::now() - left < linger) {
            const timespec pause{0, 500000};
            nanosleep(&pause, nullptr);
            if (assist.stopping.load(std::memory_order_relaxed)) return;
        }
        std::unique_lock<std::mutex> hold(assist.mutex);
        // Park: `parked` is published before `inside` is read (both seq_cst), and an
        // Assist increments `inside` before it reads `parked`: one of the two sees the
        // other, so no wake-up is lost.
        assist.parked.store(true, std::memory_order_seq_cst);
        assist.wake.wait(hold, [&] {
            return assist.stopping || assist.inside.load(std::memory_order_seq_cst) > 0;
        });
        assist.parked.store(false, std::memory_order_relaxed);
        if (assist.stopping) return;
        idle = 0;
        swept = progress_sweeps();
    }
}

}  // namespace

Assist::Assist() {
    if (progress_thread_running()) return;  // thread/interrupt mode: it serves us
    AssistThread &assist = self();
    assist.inside.fetch_add(1, std::memory_order_seq_cst);
    if (!assist.running.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> hold(assist.mutex);
        if (!assist.running.load(std::memory_order_relaxed)) {
            threads::enable();
            assist.stopping = false;
            assist.thread = std::thread(run);
            assist.running.store(true, std::memory_order_release);
        }
    } else if (assist.parked.load(std::memory_order_seq_cst)) {
        { std::lock_guard<std::mutex> hold(assist.mutex); }  // it waits, or sees `inside`
        assist.wake.notify_one();
    }
    assist.calls.fetch_add(1, std::memory_order_relaxed);
    assisting_ = true;
}

Assist::~Assist() {
    if (!assisting_) return;
    self().inside.fetch_sub(1, std::memory_order_release);
    threads::drain();  // what its sweeps queued for MPICH, run by this application thread
}

void assist_stop() {
    AssistThread &assist = self();
    std::thread joined;
    {
        std::lock_guard<std::mutex> hold(assist.mutex);
        if (!assist.running.load(std::memory_order_relaxed)) return;
        assist.stopping = true;
        assist.running.store(false, std::memory_order_relaxed);
        joined = std::move(assist.thread);
    }
    assist.wake.notify_all();
    joined.join();
}

std::uint64_t assisted_calls() { return self().calls.load(std::memory_order_relaxed); }
std::uint64_t assist_sweeps() { return self().sweeps.load(std::memory_order_relaxed); }

}  // namespace nbrma::engine
