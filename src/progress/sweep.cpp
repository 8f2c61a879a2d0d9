// The sweep: every nbrma window registers here; one sweep advances the windows with
// work (progress.hpp). The progress thread that sweeps beside the application is
// thread.cpp; the waits that sweep inside MPICH's blocking calls, interposed_waits.cpp.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <vector>

#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/window.hpp"
#include "progress/interrupt.hpp"
#include "progress/progress.hpp"
#include "progress/sweep_list.hpp"

namespace nbrma::engine {

namespace {
// All under the progress lock, except `swept_size` (read by progress_wanted without it).
// Every registered window.
std::vector<Window *> &windows() {
    static auto *list =
        new std::vector<Window *>();  // never destroyed: the progress thread may sweep at exit
    return *list;
}
// The windows a sweep visits (Window::SweepLink): every registered window that is not
// idle(), and maybe some that went idle since a sweep last looked at them, plus the
// windows whose transport serves peers (pinned). With many idle windows alive, neither a
// sweep nor "anything pending?" looks at them.
std::vector<Window *> &swept() {
    static auto *list = new std::vector<Window *>();  // never destroyed, as windows()
    return *list;
}
// swept().size(), written under the lock whenever it changes, so that "anything
// pending?" with no window on the list takes no lock (and no locked instruction).
std::atomic<std::size_t> swept_size{0};
void publish_swept_size() { swept_size.store(swept().size(), std::memory_order_relaxed); }
void (*external_poke)() = nullptr;
bool sweeping = false;

// Takes the windows found idle off the sweep list (pinned ones stay); true if a window
// on it is not idle. Not while a sweep walks the list (a completion hook asking): it
// drops them itself when it ends.
bool prune_locked() {
    auto &list = swept();
    if (list.empty()) return false;
    bool busy = false;
    if (sweeping) {
        for (Window *window : list) busy |= !window->idle();
        return busy;
    }
    std::size_t kept = 0;
    for (Window *window : list) {
        Window::SweepLink &link = window->sweep_link();
        if (!window->idle()) {
            busy = true;
        } else if (!link.pinned) {
            link.listed = false;
            continue;
        }
        list[kept++] = window;
    }
    list.resize(kept);
    publish_swept_size();
    return busy;
}
}  // namespace

namespace sweep_list {

std::atomic<int> serving{0};
std::atomic<int> polled{0};
Window *event_window = nullptr;
int event_descriptor = -1;

// One sweep over the windows with work (and the pinned ones); the caller holds the lock
// (or locking is off). A window that goes idle leaves the list here; one that gets work
// meanwhile (registered, or queued by a completion hook) joins its end and is swept too.
bool sweep_locked() {
    if (sweeping) return false;  // a completion hook re-entered progress
    sweeping = true;
    bool moved = false;
    auto &list = swept();
    for (std::size_t i = 0; i < list.size(); ++i) moved |= list[i]->progress();
    sweeping = false;
    prune_locked();
    return moved;
}

// Some window is not idle. Takes the idle ones off the sweep list on the way, so a
// window that went idle inside an engine call (no sweep since) costs one look only.
bool pending_locked() { return prune_locked(); }

// NBRMA_PROGRESS=interrupt: the fewest rings until something that waits for a peer can
// move (Window::rings_awaited); an open epoch that only waits for the application wants
// no wake-up. A waiting window is not idle, so it is on the sweep list.
unsigned rings_awaited_locked() {
    unsigned fewest = 0;
    for (Window *window : swept()) {
        const unsigned rings = window->rings_awaited();
        if (rings > 0 && (fewest == 0 || rings < fewest)) fewest = rings;
        if (fewest == 1) break;
    }
    return fewest;
}

}  // namespace sweep_list

using namespace sweep_list;

void progress_register(Window *window) {
    threads::Guard guard;
    windows().push_back(window);
    Window::SweepLink &link = window->sweep_link();
    link.registered = true;
    link.pinned = window->transport().capabilities().needs_target_progress;
    link.list = &detail::progress_list;
    link.sweeps_on_bells = interrupt::attached();
    if (link.pinned || !window->idle()) detail::progress_list(window);
    if (window->transport().capabilities().needs_target_progress) ++serving;
    if (window->transport().event_fd() >= 0) {
        event_window = window;
        event_descriptor = window->transport().event_fd();
    } else if (!window->transport().capabilities().completes_inline) {
        ++polled;
    }
}

void progress_unregister(Window *window) {
    threads::Guard guard;
    auto &list = windows();
    const auto end = std::remove(list.begin(), list.end(), window);
    if (end == list.end()) return;
    list.erase(end, list.end());
    Window::SweepLink &link = window->sweep_link();
    if (link.listed) {
        auto &listed = swept();
        listed.erase(std::find(listed.begin(), listed.end(), window));
        publish_swept_size();
    }
    link = Window::SweepLink{};
    if (window->transport().capabilities().needs_target_progress) --serving;
    if (window->transport().event_fd() < 0 && !window->transport().capabilities().completes_inline)
        --polled;
    if (event_window == window) {
        event_window = nullptr;
        for (Window *other : list)
            if (other->transport().event_fd() >= 0) event_window = other;
    }
}

std::size_t progress_window_count() {
    threads::Guard guard;
    return windows().size();
}

namespace {
thread_local unsigned sweeps_by_this_thread = 0;
}  // namespace

unsigned progress_sweeps_by_this_thread() { return sweeps_by_this_thread; }

bool progress_sweep() {
    ++sweeps_by_this_thread;
    if (!threads::try_lock()) return false;  // another thread is progressing
    const bool moved = sweep_locked();
    threads::unlock();
    threads::drain();
    return moved;
}

int progress_arm_events() {
    if (!threads::try_lock()) return -1;  // another thread progresses: sleep, no events
    int fd = -1;
    if (event_window) fd = event_window->transport().arm() ? event_descriptor : -2;
    threads::unlock();
    return fd;
}

bool progress_pending() {
    // No window on the sweep list: none has work (another thread that is queuing some
    // now progresses it itself, as when it queues it right after our look).
    if (swept_size.load(std::memory_order_relaxed) == 0) return false;
    if (!threads::try_lock()) return true;  // busy: someone has work
    const bool pending = pending_locked();
    threads::unlock();
    return pending;
}

void debug_dump(const char *path) {
    // No lock: called from a debugger into a process that is stuck, perhaps holding it.
    std::FILE *out = path ? std::fopen(path, "a") : stderr;
    if (!out) return;
    std::fprintf(out, "nbrma state of pid %d: %zu windows, %zu on the sweep list\n",
                 static_cast<int>(getpid()), windows().size(), swept().size());
    for (Window *window : windows()) window->dump(out);
    if (path)
        std::fclose(out);
    else
        std::fflush(out);
}

}  // namespace nbrma::engine

extern "C" __attribute__((visibility("hidden"), used)) void nbrma_debug_dump(const char *path) {
    nbrma::engine::debug_dump(path);
}

namespace nbrma::engine {

bool progress_serves_peers() { return serving.load(std::memory_order_relaxed) > 0; }
bool progress_wanted() { return progress_serves_peers() || progress_pending(); }

void progress_set_external(void (*poke)()) { external_poke = poke; }

SelfProgress::SelfProgress() {
    if (!interrupt::attached()) return;
    counted_ = true;
    if (interrupt::enter_wait() && threads::try_lock()) {
        interrupt::unwant();
        threads::unlock();
    }
}

SelfProgress::~SelfProgress() {
    if (!counted_) return;
    helper::bump_activity(interrupt::my_slot()->activity);
    if (!interrupt::leave_wait()) return;
    // The last self-progressing thread leaves: one more sweep, then help is wanted for
    // what still waits on peers (the bell read before that sweep), or the thread is idle.
    threads::Guard guard;
    const std::uint64_t seen = interrupt::my_slot()->bell.load(std::memory_order_seq_cst);
    sweep_locked();
    if (const unsigned rings = rings_awaited_locked()) {
        interrupt::want_at_most(seen, rings);
    } else {
        interrupt::unwant();
        detail::progress_thread_sleeping.store(true, std::memory_order_relaxed);  // idle
    }
}

unsigned idle_rounds_per_poke() { return oversubscribed() ? 16 : 256; }

Status wait_request(Request *request) {
    {
        SelfProgress self;
        Backoff backoff;
        const unsigned poke_every = idle_rounds_per_poke();
        unsigned idle = 0;
        while (!request->complete()) {
            if (progress_sweep()) {
                idle = 0;
                continue;
            }
            if (++idle % poke_every == 0 && external_poke) external_poke();
            if (!request->complete()) backoff.pause();
        }
    }
    threads::drain();
    return request->status();
}

void detail::progress_list(Window *window) {
    Window::SweepLink &link = window->sweep_link();
    if (!link.registered || link.listed) return;
    link.listed = true;
    swept().push_back(window);
    publish_swept_size();
}

}  // namespace nbrma::engine
