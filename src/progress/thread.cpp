// The progress thread (NBRMA_PROGRESS=thread or interrupt, doc/design.md §6): sweeps
// beside the application, never calls MPICH, and sleeps when nothing is pending; in
// interrupt mode it sleeps on its futex in the node's help table (interrupt.hpp).
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/window.hpp"
#include "progress/interrupt.hpp"
#include "progress/progress.hpp"
#include "progress/sweep_list.hpp"

namespace nbrma::engine {

using namespace sweep_list;

namespace {
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

// NBRMA_PROGRESS=interrupt, UCX peers: the watcher thread sleeps in poll() on the UCX
// worker's event descriptor once the progress thread armed the worker, and wakes the
// progress thread (its futex) when the descriptor turns readable. It never touches the
// worker or any engine state.
class EventWatcher {
  public:
    void start(int event_fd) {
        stop_fd_ = eventfd(0, EFD_CLOEXEC);
        if (stop_fd_ < 0) return;
        event_fd_ = event_fd;
        thread_ = std::thread([this] { run(); });
        log(2, "interrupt: watching UCX events (descriptor %d)", event_fd);
    }
    bool running() const { return thread_.joinable(); }
    // The worker is armed: watch its descriptor.
    void armed() {
        armed_.store(1, std::memory_order_seq_cst);
        helper::futex_wake(&armed_);
    }
    void stop() {
        if (!running()) return;
        const std::uint64_t one = 1;
        if (write(stop_fd_, &one, sizeof one) < 0) { /* the join below still ends it */
        }
        armed();
        thread_.join();
        close(stop_fd_);
        stop_fd_ = -1;
    }

  private:
    void run() {
        helper::RankSlot *slot = interrupt::my_slot();
        for (;;) {
            while (armed_.load(std::memory_order_seq_cst) == 0) helper::futex_wait(&armed_, 0);
            pollfd events[2] = {{event_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
            if (::poll(events, 2, -1) < 0 && errno != EINTR) return;
            if (events[1].revents) return;
            if (events[0].revents) {
                armed_.store(0, std::memory_order_seq_cst);
                interrupt::counters().event_wakeups.fetch_add(1, std::memory_order_relaxed);
                helper::wake_slot(slot);
            }
        }
    }
    std::thread thread_;
    std::atomic<std::uint32_t> armed_{0};
    int event_fd_ = -1;
    int stop_fd_ = -1;
};

// NBRMA_PROGRESS=interrupt (doc/design.md §6): sweep, then sleep on our futex in the
// node's help table until the helper sees our bell pass what the sweep saw (help
// wanted), the watcher sees UCX events, an application thread kicks us (new work while
// nothing was pending), or the thread is stopped. The bell is read before the sweep: a
// peer's write that the sweep may have missed has bumped it past `seen`, so it wakes us.
void interrupt_thread_main(unsigned mine) {
    threads::mark_progress_thread();
    ProgressThread &self = progress_thread();
    helper::RankSlot *slot = interrupt::my_slot();
    interrupt::Counters &count = interrupt::counters();
    EventWatcher watcher;
    detail::interrupt_slot.store(slot, std::memory_order_seq_cst);
    bool woken = false;  // by the helper
    bool helper_lost = false;
    unsigned idle = 0;
    int events = -1;  // the event descriptor, as of our last sweep
    while (self.generation.load(std::memory_order_acquire) == mine) {
        const std::uint64_t seen = slot->bell.load(std::memory_order_seq_cst);
        // pending: epochs or flushes wait (on our bell, or on UCX); serving: peers over
        // UCX need our worker progressed (its events or the timeout wake us, not the bell)
        bool moved = false, pending = true, serves = false, armed = false, swept = false;
        unsigned rings = 1;  // until something can move: the watch is the bell seen + rings
        bool again = false;
        if (threads::try_lock()) {
            swept = true;
            events = event_window ? event_descriptor : -1;
            moved = sweep_locked();
            if (!moved) {
                rings = rings_awaited_locked();
                pending = rings > 0;
                serves = serving.load(std::memory_order_relaxed) > 0;
                // A peer rang since `seen`: what it wrote may be what the sweep saw, and a
                // watch of seen + rings would count that spent ring. Sweep again instead.
                again = pending && slot->bell.load(std::memory_order_seq_cst) != seen;
            }
            // UCX windows: arm the worker; busy means events came meanwhile (sweep again)
            if (!moved && !again && event_window) {
                armed = event_window->transport().arm();
                if (!armed) moved = true;
            }
            // Help wanted and "idle" (kicks wanted) change under the lock only (see
            // progress_kick_slow and wait_request): wake us when the bell passes what
            // this sweep saw; only an idle thread wants kicks (an application thread
            // left new work), else the bell, the worker's events or a timeout wake it.
            if (!moved && !again) {
                // (an application thread waiting inside nbrma progresses itself and
                // publishes what still waits when it leaves: wait_request)
                if (pending && slot->inside.load(std::memory_order_seq_cst) == 0)
                    interrupt::want(seen, rings);
                else
                    interrupt::unwant();
                detail::progress_thread_sleeping.store(!pending, std::memory_order_relaxed);
            }
            threads::unlock();
            count.sweeps.fetch_add(1, std::memory_order_relaxed);
            if (moved) ++counters().progress_thread_sweeps;
        }  // else an application thread is inside nbrma and progresses
        if (again) continue;  // (a wake-up that led here is judged by the next sweep)
        if (woken && !moved) count.futile_wakeups.fetch_add(1, std::memory_order_relaxed);
        woken = false;
        if (moved) {
            idle = 0;
            continue;
        }
        if (armed) {
            if (!watcher.running()) watcher.start(events);
            watcher.armed();
        }
        const std::uint32_t ticket = slot->futex.load(std::memory_order_seq_cst);
        const std::uint64_t wakes = slot->wakes.load(std::memory_order_relaxed);
        slot->sleeping.store(1, std::memory_order_seq_cst);
        // A sleep that no bell may end has a timeout (50 us growing to 1 ms): after a
        // sweep that found the lock taken (what the holder leaves is unknown), while
        // windows complete operations only when polled (a transport without an event
        // descriptor), and while UCX windows are registered: the worker's descriptor
        // wakes us for incoming traffic, but UCX over tcp does not signal every event a
        // pending epoch waits for (send completions after wireup, for one), and an
        // application thread that progressed the worker since we armed it may have
        // taken the events the arm was for.
        // With the helper gone (killed), nothing but kicks wakes us: poll while work
        // waits, as the thread mode does. Until then, look at its life every 100 ms.
        const bool unwatched =
            polled.load(std::memory_order_relaxed) > 0 || events >= 0 || helper_lost;
        long timeout_ns = !swept || (unwatched && (pending || serves))
                              ? std::min(50000l << std::min(idle++, 5u), 1000000l)
                              : -1;
        const bool liveness_check = timeout_ns < 0 && !helper_lost;
        if (liveness_check) timeout_ns = 100000000;
        if (slot->bell.load(std::memory_order_seq_cst) == seen &&
            self.generation.load(std::memory_order_acquire) == mine)
            helper::futex_wait(&slot->futex, ticket, timeout_ns);
        slot->sleeping.store(0, std::memory_order_relaxed);
        detail::progress_thread_sleeping.store(false, std::memory_order_relaxed);
        if (slot->wakes.load(std::memory_order_relaxed) != wakes) {
            woken = true;
            count.wakeups.fetch_add(1, std::memory_order_relaxed);
        } else if (liveness_check && interrupt::helper_lost()) {
            helper_lost = true;
            detail::helper_gone.store(true, std::memory_order_relaxed);
        }
    }
    watcher.stop();
    detail::interrupt_slot.store(nullptr, std::memory_order_seq_cst);
    interrupt::unwant();
}
}  // namespace

bool progress_mode_from_environment(ProgressMode *mode, const char **value) {
    const char *text = settings::env(settings::Id::progress);
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
        self.thread = std::thread(
            mode == ProgressMode::interrupt_mode ? interrupt_thread_main : progress_thread_main,
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

void detail::progress_kick_slow(std::uint64_t seen) {
    ProgressThread &self = progress_thread();
    if (self.mode != ProgressMode::interrupt_mode) {
        self.wake.notify_one();
        return;
    }
    if (helper_gone.load(std::memory_order_relaxed)) {  // no helper to wake it: we do
        helper::wake_slot(interrupt::my_slot());
        return;
    }
    // The call read the bell before it ran: any write it did not see rings past `seen`.
    // Published once: later calls' work is covered by the same watch (the earliest
    // bell wins), until the thread, woken, looks for itself again. Under the lock, as
    // every change of help wanted by this rank. If another thread holds the lock, we
    // cannot tell what it publishes: wake ours (rare: threads racing into nbrma).
    if (!threads::try_lock()) {
        helper::wake_slot(interrupt::my_slot());
        return;
    }
    if (const unsigned rings = rings_awaited_locked()) {
        interrupt::want_at_most(seen, rings);
        progress_thread_sleeping.store(false, std::memory_order_relaxed);
    }
    threads::unlock();
}

}  // namespace nbrma::engine
