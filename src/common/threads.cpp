#include "common/threads.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "common/yield.hpp"

namespace nbrma::threads {

namespace {
thread_local bool progress_thread = false;

struct Deferred {
    void (*fn)(void *);
    void *arg;
};

// Leaf lock: held only to push or swap the queue, never around MPICH calls.
SpinLock &queue_lock() {
    static auto *lock = new SpinLock();
    return *lock;
}
std::vector<Deferred> &queue() {
    static auto *list = new std::vector<Deferred>();
    return *list;
}
}  // namespace

void SpinLock::lock_slow() {
    Backoff backoff;
    while (!try_lock()) backoff.pause();
}

namespace detail {
// Spins for a while, then sleeps on turn_ until an unlock bumps it. It looks with a load
// before the compare-and-swap, and on a core of its own first waits twice as long
// before each look (1, 2, ... 64 pauses, a few microseconds in all): a waiter that
// polled the lock's line all the time would take the line from a holder that drops and
// takes the lock again at every MPI call (threads on windows of their own), making each
// of its takes a miss (two threads' put + flush ran at a third of one thread's rate,
// two thirds with the backoff). Then, and at once when oversubscribed, it spins as
// Backoff does (which soon yields: a holder preempted on this core must get it back).
// The sleep is bounded (1 ms) so a wake that unlock's unfenced load of sleepers_
// missed costs at most that.
void ProgressLock::lock_slow() {
    Backoff backoff;
    const bool crowded = oversubscribed();
    const unsigned spins = crowded ? 8 : 128;
    unsigned wait = 1;
    for (unsigned i = 0; i < spins; ++i) {
        if (owner_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
        if (crowded || wait > 64) {
            backoff.pause();
            continue;
        }
        for (unsigned j = 0; j < wait; ++j) __builtin_ia32_pause();
        wait *= 2;
    }
    const struct timespec limit = {0, 1000 * 1000};
    for (;;) {
        const std::uint32_t seen = turn_.load(std::memory_order_acquire);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        const bool taken = try_lock();
        if (!taken)
            syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(&turn_), FUTEX_WAIT_PRIVATE, seen,
                    &limit, nullptr, 0);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        if (taken || try_lock()) return;
    }
}

// The lock was just taken: every shared section that began before it ends (those that
// begin now see it held and do not enter). The taker's own slot is not waited for: a
// thread in a section never takes the lock.
void ProgressLock::wait_for_shared_sections() {
    const SharedSlot *own = shared_slot;
    const std::uint32_t used = shared_slots_used.load(std::memory_order_seq_cst);
    for (std::uint32_t i = 0; i < used; ++i) {
        const SharedSlot &slot = shared_slots[i];
        if (&slot == own) continue;
        if (slot.inside.load(std::memory_order_seq_cst) == 0) continue;
        Backoff backoff;
        while (slot.inside.load(std::memory_order_acquire) != 0) backoff.pause();
    }
}

void ProgressLock::wake() {
    turn_.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(&turn_), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

void drain_slow() {
    if (progress_thread) return;
    // A local batch, so a queued call that defers and drains again (re-entry) runs its
    // own batch; its buffer goes back to an empty queue, so the queue keeps its
    // capacity and a steady stream of completions allocates nothing.
    std::vector<Deferred> batch;
    {
        std::lock_guard<SpinLock> hold(queue_lock());
        batch.swap(queue());
        deferred_waiting.store(false, std::memory_order_relaxed);
    }
    for (const Deferred &d : batch) d.fn(d.arg);
    batch.clear();
    std::lock_guard<SpinLock> hold(queue_lock());
    if (queue().empty() && queue().capacity() < batch.capacity()) queue().swap(batch);
}

namespace {
// Gives the thread's slot back when the thread exits (its count stays in it).
struct SlotReturn {
    ~SlotReturn() {
        if (shared_slot) shared_slot->claimed.store(false, std::memory_order_release);
        shared_slot = nullptr;
    }
};
}  // namespace

SharedSlot *claim_shared_slot() {
    thread_local bool refused = false;
    thread_local SlotReturn slot_return;  // constructed here: returns the slot at exit
    if (refused || progress_thread) return nullptr;
    for (std::uint32_t i = 0; i < shared_slot_count; ++i) {
        SharedSlot &slot = shared_slots[i];
        if (slot.claimed.load(std::memory_order_relaxed) ||
            slot.claimed.exchange(true, std::memory_order_acquire))
            continue;
        // The slots a lock taker looks at: every slot ever claimed.
        std::uint32_t used = shared_slots_used.load(std::memory_order_relaxed);
        while (used < i + 1 &&
               !shared_slots_used.compare_exchange_weak(used, i + 1, std::memory_order_seq_cst))
            ;
        shared_slot = &slot;
        return &slot;
    }
    refused = true;
    return nullptr;
}
}  // namespace detail

Counters all_counters() {
    // Counters is words only: summed word by word.
    constexpr std::size_t words = sizeof(Counters) / sizeof(std::uint64_t);
    static_assert(sizeof(Counters) == words * sizeof(std::uint64_t), "words only");
    std::uint64_t sum[words], add[words];
    std::memcpy(sum, &nbrma::detail::counters_instance, sizeof sum);
    const std::uint32_t used = detail::shared_slots_used.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < used; ++i) {
        std::memcpy(add, &detail::shared_slots[i].counts, sizeof add);
        for (std::size_t w = 0; w < words; ++w) sum[w] += add[w];
    }
    Counters total;
    std::memcpy(&total, sum, sizeof total);
    return total;
}

void enable() {
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
    if (!active() && !progress_thread) {
        fn(arg);
        return;
    }
    std::lock_guard<SpinLock> hold(queue_lock());
    queue().push_back(Deferred{fn, arg});
    detail::deferred_waiting.store(true, std::memory_order_release);
}

}  // namespace nbrma::threads
