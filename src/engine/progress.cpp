#include "engine/progress.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/window.hpp"

namespace nbrma::engine {

namespace {
// All under the progress lock, except `serving` (read by progress_wanted without it).
std::vector<Window *> &windows() {
    static auto *list = new std::vector<Window *>();  // never destroyed: see progress_thread()
    return *list;
}
void (*external_poke)() = nullptr;
bool sweeping = false;
std::atomic<int> serving{0};  // registered windows whose transport needs our poll to serve peers

// One sweep; the caller holds the lock (or locking is off).
bool sweep_locked() {
    if (sweeping) return false;  // a completion hook re-entered progress
    sweeping = true;
    bool moved = false;
    for (std::size_t i = 0; i < windows().size(); ++i) moved |= windows()[i]->progress();
    sweeping = false;
    return moved;
}

bool pending_locked() {
    for (Window *window : windows())
        if (!window->idle()) return true;
    return false;
}

// ---- the progress thread
struct ProgressThread {
    std::mutex mutex;  // guards thread start/stop and the sleep below
    std::condition_variable wake;
    std::thread thread;
    std::atomic<bool> running{false};
    std::atomic<bool> stop{false};
};

ProgressThread &progress_thread() {
    static auto *state = new ProgressThread();  // never destroyed: may run at exit
    return *state;
}

// Idle policy: spin a little after movement, then yield, then sleep with a growing
// timeout (up to 100 us while work is pending, 1 ms when nothing is). A kick from an
// application thread (progress_kick) ends a sleep at once.
void progress_thread_main() {
    threads::mark_progress_thread();
    ProgressThread &self = progress_thread();
    unsigned idle = 0;
    while (!self.stop.load(std::memory_order_acquire)) {
        bool moved = false, pending = true;
        if (threads::try_lock()) {
            moved = sweep_locked();
            if (moved)
                ++counters().progress_thread_sweeps;
            else
                pending = serving.load(std::memory_order_relaxed) > 0 || pending_locked();
            threads::unlock();
        }
        if (moved) {
            idle = 0;
            continue;
        }
        ++idle;
        if (idle < 32 && !oversubscribed()) {
            __builtin_ia32_pause();
        } else if (idle < 64) {
            sched_yield();
        } else {
            const unsigned shift = std::min(idle - 64, 7u);
            auto timeout = std::chrono::microseconds(pending ? std::min(1u << shift, 100u) : 1000u);
            std::unique_lock<std::mutex> hold(self.mutex);
            detail::progress_thread_sleeping.store(true, std::memory_order_seq_cst);
            if (!self.stop.load(std::memory_order_acquire)) self.wake.wait_for(hold, timeout);
            detail::progress_thread_sleeping.store(false, std::memory_order_relaxed);
            if (!pending) idle = 64;  // keep the long sleep only while nothing is pending
        }
    }
}
}  // namespace

void progress_register(Window *window) {
    threads::Guard guard;
    windows().push_back(window);
    if (window->transport().needs_target_progress()) ++serving;
}

void progress_unregister(Window *window) {
    threads::Guard guard;
    auto &list = windows();
    const auto end = std::remove(list.begin(), list.end(), window);
    if (end == list.end()) return;
    list.erase(end, list.end());
    if (window->transport().needs_target_progress()) --serving;
}

std::size_t progress_window_count() {
    threads::Guard guard;
    return windows().size();
}

bool progress_sweep() {
    if (!threads::try_lock()) return false;  // another thread is progressing
    const bool moved = sweep_locked();
    threads::unlock();
    threads::drain();
    return moved;
}

bool progress_pending() {
    if (!threads::try_lock()) return true;  // busy: someone has work
    const bool pending = pending_locked();
    threads::unlock();
    return pending;
}

bool progress_wanted() { return serving.load(std::memory_order_relaxed) > 0 || progress_pending(); }

void progress_set_external(void (*poke)()) { external_poke = poke; }

Status wait_request(Request *request) {
    Backoff backoff;
    unsigned idle = 0;
    while (!request->complete()) {
        if (progress_sweep()) {
            idle = 0;
            continue;
        }
        if (++idle % 16 == 0 && external_poke) external_poke();
        if (!request->complete()) backoff.pause();
    }
    threads::drain();
    return request->status();
}

bool progress_mode_from_environment(ProgressMode *mode, const char **value) {
    const char *text = std::getenv("NBRMA_PROGRESS");
    *value = text ? text : "";
    if (!text || !*text || std::strcmp(text, "inline") == 0) {
        *mode = ProgressMode::inline_mode;
        return true;
    }
    if (std::strcmp(text, "thread") == 0) {
        *mode = ProgressMode::thread_mode;
        return true;
    }
    return false;
}

Status progress_thread_start() {
    ProgressThread &self = progress_thread();
    std::lock_guard<std::mutex> hold(self.mutex);
    if (self.running.load(std::memory_order_relaxed)) return Status::ok;
    threads::enable();
    self.stop.store(false, std::memory_order_relaxed);
    try {
        self.thread = std::thread(progress_thread_main);
    } catch (const std::system_error &) {
        return Status::err_other;
    }
    self.running.store(true, std::memory_order_release);
    log(1, "progress thread started");
    return Status::ok;
}

void progress_thread_stop() {
    ProgressThread &self = progress_thread();
    std::thread joining;
    {
        std::lock_guard<std::mutex> hold(self.mutex);
        if (!self.running.load(std::memory_order_relaxed)) return;
        self.stop.store(true, std::memory_order_release);
        self.wake.notify_all();
        joining = std::move(self.thread);
        self.running.store(false, std::memory_order_relaxed);
    }
    joining.join();
    threads::drain();  // what its last sweeps completed
    log(1, "progress thread stopped");
}

bool progress_thread_running() { return progress_thread().running.load(std::memory_order_acquire); }

void detail::progress_kick_slow() { progress_thread().wake.notify_one(); }

}  // namespace nbrma::engine
