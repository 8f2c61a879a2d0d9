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
#include "engine/interrupt.hpp"
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
std::atomic<int> polled{0};   // registered windows whose operations complete only when polled

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
    // Which start the running thread belongs to: a stop moves it on, so a thread only
    // runs while it is current (a start right after a stop cannot revive the old one).
    std::atomic<unsigned> generation{0};
    ProgressMode mode = ProgressMode::thread_mode;  // thread or interrupt
};

ProgressThread &progress_thread() {
    static auto *state = new ProgressThread();  // never destroyed: may run at exit
    return *state;
}

// Idle policy: spin a little after movement, then yield, then sleep with a growing
// timeout (up to 100 us while work is pending, 1 ms when nothing is). A kick from an
// application thread (progress_kick) ends a sleep at once.
void progress_thread_main(unsigned mine) {
    threads::mark_progress_thread();
    ProgressThread &self = progress_thread();
    unsigned idle = 0;
    while (self.generation.load(std::memory_order_acquire) == mine) {
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
            if (self.generation.load(std::memory_order_acquire) == mine)
                self.wake.wait_for(hold, timeout);
            detail::progress_thread_sleeping.store(false, std::memory_order_relaxed);
            if (!pending) idle = 64;  // keep the long sleep only while nothing is pending
        }
    }
}

// NBRMA_PROGRESS=interrupt (DESIGN §6, seed 002): sweep, then sleep on our futex in the
// node's help table until the helper sees our bell pass what the sweep saw (help
// wanted), or an application thread kicks us (new work while nothing was pending), or
// the thread is stopped. The bell is read before the sweep: a peer's write that the
// sweep may have missed has bumped it past `seen`, so it wakes us.
void interrupt_thread_main(unsigned mine) {
    threads::mark_progress_thread();
    ProgressThread &self = progress_thread();
    helper::RankSlot *slot = interrupt::my_slot();
    interrupt::Counters &count = interrupt::counters();
    bool woken = false;  // by the helper
    unsigned idle = 0;
    while (self.generation.load(std::memory_order_acquire) == mine) {
        const std::uint64_t seen = slot->bell.load(std::memory_order_seq_cst);
        bool moved = false, pending = true;
        if (threads::try_lock()) {
            moved = sweep_locked();
            if (!moved) pending = serving.load(std::memory_order_relaxed) > 0 || pending_locked();
            threads::unlock();
            count.sweeps.fetch_add(1, std::memory_order_relaxed);
            if (moved) ++counters().progress_thread_sweeps;
        }  // else an application thread is inside nbrma and progresses
        if (woken && !moved) count.futile_wakeups.fetch_add(1, std::memory_order_relaxed);
        woken = false;
        if (moved) {
            idle = 0;
            continue;
        }
        if (pending)
            interrupt::want(seen);
        else
            interrupt::unwant();
        const std::uint32_t ticket = slot->futex.load(std::memory_order_seq_cst);
        const std::uint64_t wakes = slot->wakes.load(std::memory_order_relaxed);
        // Only an idle thread wants kicks: with help wanted, the bell wakes it.
        detail::progress_thread_sleeping.store(!pending, std::memory_order_seq_cst);
        slot->sleeping.store(1, std::memory_order_seq_cst);
        // Operations of a transport that completes only when polled (UCX) ring no bell:
        // while such a window exists, the sleep has a timeout (50 us growing to 1 ms).
        const long timeout_ns =
            polled.load(std::memory_order_relaxed) > 0 && pending
                ? std::min(50000l << std::min(idle++, 5u), 1000000l)
                : -1;
        if (slot->bell.load(std::memory_order_seq_cst) == seen &&
            self.generation.load(std::memory_order_acquire) == mine)
            helper::futex_wait(&slot->futex, ticket, timeout_ns);
        slot->sleeping.store(0, std::memory_order_relaxed);
        detail::progress_thread_sleeping.store(false, std::memory_order_relaxed);
        if (slot->wakes.load(std::memory_order_relaxed) != wakes) {
            woken = true;
            count.wakeups.fetch_add(1, std::memory_order_relaxed);
        }
    }
    interrupt::unwant();
}
}  // namespace

void progress_register(Window *window) {
    threads::Guard guard;
    windows().push_back(window);
    if (window->transport().needs_target_progress()) ++serving;
    if (!window->transport().completes_inline()) ++polled;
}

void progress_unregister(Window *window) {
    threads::Guard guard;
    auto &list = windows();
    const auto end = std::remove(list.begin(), list.end(), window);
    if (end == list.end()) return;
    list.erase(end, list.end());
    if (window->transport().needs_target_progress()) --serving;
    if (!window->transport().completes_inline()) --polled;
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
    // NBRMA_PROGRESS=interrupt: while we wait here, the helper leaves our thread alone.
    const bool interrupt_mode = interrupt::attached();
    if (interrupt_mode) interrupt::enter_wait();
    while (!request->complete()) {
        if (progress_sweep()) {
            idle = 0;
            continue;
        }
        if (++idle % 16 == 0 && external_poke) external_poke();
        if (!request->complete()) backoff.pause();
    }
    if (interrupt_mode) interrupt::leave_wait();
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
    if (std::strcmp(text, "interrupt") == 0) {
        *mode = ProgressMode::interrupt_mode;
        return true;
    }
    return false;
}

Status progress_thread_start(ProgressMode mode) {
    ProgressThread &self = progress_thread();
    std::lock_guard<std::mutex> hold(self.mutex);
    if (self.running.load(std::memory_order_relaxed)) return Status::ok;
    if (mode == ProgressMode::interrupt_mode && !interrupt::attached()) return Status::err_other;
    threads::enable();
    const unsigned mine = self.generation.fetch_add(1, std::memory_order_acq_rel) + 1;
    self.mode = mode;
    try {
        self.thread = std::thread(mode == ProgressMode::interrupt_mode ? interrupt_thread_main
                                                                       : progress_thread_main,
                                  mine);
    } catch (const std::system_error &) {
        return Status::err_other;
    }
    self.running.store(true, std::memory_order_release);
    log(1, "progress thread started (%s)",
        mode == ProgressMode::interrupt_mode ? "interrupt" : "thread");
    return Status::ok;
}

namespace {
// Stops the thread (when `only_if_idle`: only if no window is registered, checked under
// the start/stop mutex, so a window another thread creates meanwhile keeps it).
void stop_thread(bool only_if_idle) {
    ProgressThread &self = progress_thread();
    std::thread joining;
    {
        std::lock_guard<std::mutex> hold(self.mutex);
        if (!self.running.load(std::memory_order_relaxed)) return;
        if (only_if_idle && progress_window_count() != 0) return;
        self.generation.fetch_add(1, std::memory_order_acq_rel);
        self.wake.notify_all();
        if (self.mode == ProgressMode::interrupt_mode) helper::wake_slot(interrupt::my_slot());
        joining = std::move(self.thread);
        self.running.store(false, std::memory_order_relaxed);
    }
    joining.join();
    threads::drain();  // what its last sweeps completed
    log(1, "progress thread stopped");
}
}  // namespace

void progress_thread_stop() { stop_thread(false); }
void progress_thread_stop_if_idle() { stop_thread(true); }

bool progress_thread_running() { return progress_thread().running.load(std::memory_order_acquire); }

void detail::progress_kick_slow() {
    ProgressThread &self = progress_thread();
    if (self.mode == ProgressMode::interrupt_mode)
        helper::wake_slot(interrupt::my_slot());
    else
        self.wake.notify_one();
}

}  // namespace nbrma::engine
