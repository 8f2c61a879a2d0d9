#include "engine/assist.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/progress.hpp"

namespace nbrma::engine {

namespace {

struct AssistThread {
    std::mutex mutex;  // guards thread, running, stopping; the sleep below
    std::condition_variable wake;
    std::thread thread;
    bool running = false;
    bool stopping = false;
    std::atomic<int> inside{0};  // application threads inside an assisted call
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> sweeps{0};
};

AssistThread &self() {
    static AssistThread *assist = new AssistThread;  // never destroyed: no exit-order hazard
    return *assist;
}

void run() {
    AssistThread &assist = self();
    Backoff backoff;
    for (;;) {
        if (assist.inside.load(std::memory_order_acquire) > 0) {
            if (progress_sweep())
                assist.sweeps.fetch_add(1, std::memory_order_relaxed);
            else
                backoff.pause();
            continue;
        }
        std::unique_lock<std::mutex> hold(assist.mutex);
        assist.wake.wait(hold, [&] {
            return assist.stopping || assist.inside.load(std::memory_order_acquire) > 0;
        });
        if (assist.stopping) return;
    }
}

}  // namespace

Assist::Assist() {
    if (progress_thread_running()) return;  // thread/interrupt mode: it serves us
    AssistThread &assist = self();
    {
        std::lock_guard<std::mutex> hold(assist.mutex);
        if (!assist.running) {
            threads::enable();
            assist.stopping = false;
            assist.thread = std::thread(run);
            assist.running = true;
        }
        assist.inside.fetch_add(1, std::memory_order_release);
    }
    assist.wake.notify_one();
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
        if (!assist.running) return;
        assist.stopping = true;
        assist.running = false;
        joined = std::move(assist.thread);
    }
    assist.wake.notify_all();
    joined.join();
}

std::uint64_t assisted_calls() { return self().calls.load(std::memory_order_relaxed); }
std::uint64_t assist_sweeps() { return self().sweeps.load(std::memory_order_relaxed); }

}  // namespace nbrma::engine
