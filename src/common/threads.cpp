#include "common/threads.hpp"

#include <utility>
#include <vector>

namespace nbrma::threads {

namespace {
thread_local bool progress_thread = false;

struct Deferred {
    void (*fn)(void *);
    void *arg;
};

// Leaf lock: held only to push or swap the queue, never around MPICH calls.
std::mutex &queue_mutex() {
    static auto *mutex = new std::mutex();
    return *mutex;
}
std::vector<Deferred> &queue() {
    static auto *list = new std::vector<Deferred>();
    return *list;
}
}  // namespace

namespace detail {
std::recursive_mutex &lock() {
    static auto *mutex = new std::recursive_mutex();  // never destroyed: used at exit
    return *mutex;
}

void drain_slow() {
    if (progress_thread) return;
    std::vector<Deferred> batch;
    {
        std::lock_guard<std::mutex> hold(queue_mutex());
        batch.swap(queue());
        deferred_waiting.store(false, std::memory_order_relaxed);
    }
    for (const Deferred &d : batch) d.fn(d.arg);
}
}  // namespace detail

void enable() {
    (void)detail::lock();
    detail::active.store(true, std::memory_order_release);
}

unsigned thread_tag() {
    static std::atomic<unsigned> next{1};
    thread_local const unsigned tag = next.fetch_add(1, std::memory_order_relaxed);
    return tag;
}

bool on_progress_thread() { return progress_thread; }
void mark_progress_thread() { progress_thread = true; }

void defer(void (*fn)(void *), void *arg) {
    if (!active()) {
        fn(arg);
        return;
    }
    std::lock_guard<std::mutex> hold(queue_mutex());
    queue().push_back(Deferred{fn, arg});
    detail::deferred_waiting.store(true, std::memory_order_release);
}

}  // namespace nbrma::threads
