// Threads (doc/design.md §6): the one per-process progress lock that guards nbrma's engine
// state, and the queue of MPICH calls a sweep must not make itself.
//
// Locking is switched on once (threads::enable) when the application runs under
// MPI_THREAD_MULTIPLE or nbrma starts its progress thread; until then every guard is
// one predictable branch, so the single-thread path costs nothing measurable.
//
// Rules:
// - Engine state (windows, epochs, requests' engine side, transports, the UCX worker)
//   is touched only with the lock held (threads::Guard).
// - The lock is recursive: an entry point may call into code that guards again.
// - A sweep only try_locks (engine::progress_sweep): if another thread holds the lock it
//   is already progressing, so the caller returns instead of queueing behind it.
// - Shared sections (SharedSection) are the exception: a thread may run a few calls
//   (a put, a get or a flush of an at-once epoch that are copies and a memory fence)
//   under a slot of its own instead of the lock, so threads on different windows do not
//   serialize. Taking the lock waits for every shared section to end, and no section
//   starts while the lock is held: a section sees no lock holder's work half done. A
//   section touches only its window and its thread's slot: the window's calls are
//   serialized by the caller, but for those the engine runs concurrently (a put, a get
//   or a flush of an at-once epoch toward a target it holds: Window::rma_concurrent).
// - MPICH callbacks (a generalized request's poll/wait/query/free functions, attribute
//   delete functions) never block on the lock: MPICH may hold its own lock around them.
// - nbrma's progress thread never calls MPICH. What a sweep would have called
//   (MPI_Grequest_complete for an epoch that completed, MPI_Type_free for a datatype a
//   deferred operation retained) is queued with threads::defer and run by the next
//   application thread that enters nbrma (threads::drain).
#ifndef NBRMA_COMMON_THREADS_HPP
#define NBRMA_COMMON_THREADS_HPP

#include <atomic>
#include <cstdint>

#include "common/log.hpp"

namespace nbrma::threads {

namespace detail {
// The progress lock: recursive, one compare-and-swap to take it and one store to drop
// it (a pthread recursive mutex costs two locked instructions per round, on a path
// that takes it several times per epoch). A thread that finds it taken spins a little
// (backing off, lock_slow), then sleeps on a futex until an unlock wakes it: with several
// application threads per rank and ranks outnumbering cores, threads that only yield keep the
// holder (the one thread making progress) off the CPU for whole time slices. The owner
// is the thread pointer.
class ProgressLock {
  public:
    bool try_lock() {
        const std::uintptr_t me = self();
        if (owner_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return true;
        }
        // seq_cst: against SharedSection::enter's store of its slot and load of owner_
        // (either the section sees the lock taken, or the lock sees the section).
        std::uintptr_t expected = 0;
        if (!owner_.compare_exchange_strong(expected, me, std::memory_order_seq_cst,
                                            std::memory_order_relaxed))
            return false;
        depth_ = 1;
        if (others_may_share()) wait_for_shared_sections();
        return true;
    }
    void lock() {
        if (!try_lock()) lock_slow();
    }
    void unlock() {
        if (--depth_ != 0) return;
        owner_.store(0, std::memory_order_release);
        // No fence: a sleeper this load misses wakes by its timeout (lock_slow).
        if (sleepers_.load(std::memory_order_relaxed) != 0) wake();
    }

    // Held by some thread (SharedSection::enter's test).
    bool held() const { return owner_.load(std::memory_order_seq_cst) != 0; }

  private:
    static std::uintptr_t self() {
        return reinterpret_cast<std::uintptr_t>(__builtin_thread_pointer());
    }
    // Whether a thread other than the caller has claimed a slot for shared sections
    // (inline: with one application thread, the one slot is its own).
    static inline bool others_may_share();
    static void wait_for_shared_sections();
    void lock_slow();
    void wake();
    std::atomic<std::uintptr_t> owner_{0};
    unsigned depth_ = 0;                  // touched by the owner only
    std::atomic<std::uint32_t> sleepers_{0};  // threads in lock_slow's futex wait
    std::atomic<std::uint32_t> turn_{0};      // the futex word: bumped by each wake
};

}  // namespace detail

// A leaf lock for small shared lists touched from any thread, MPICH callbacks included
// (never held around anything that could block): one compare-and-swap in, one store out.
class SpinLock {
  public:
    void lock() {
        if (!try_lock()) lock_slow();
    }
    bool try_lock() {
        return !taken_.load(std::memory_order_relaxed) &&
               !taken_.exchange(true, std::memory_order_acquire);
    }
    void unlock() { taken_.store(false, std::memory_order_release); }

  private:
    void lock_slow();
    std::atomic<bool> taken_{false};
};

namespace detail {
// A thread's slot for shared sections, on cache lines of its own: `inside` while the
// thread runs one; `counts`, what counters() counted in them (written only in its
// thread's sections, read by all_counters under the lock, which waits for them).
struct alignas(64) SharedSlot {
    std::atomic<std::uint32_t> inside{0};
    std::atomic<bool> claimed{false};
    Counters counts;
};
constexpr std::uint32_t shared_slot_count = 64;  // threads past that run under the lock

// Hidden: used on every guard, so no GOT indirection inside libnbrma.so.
#define NBRMA_HIDDEN __attribute__((visibility("hidden")))
NBRMA_HIDDEN inline std::atomic<bool> active{false};
NBRMA_HIDDEN inline std::atomic<bool> deferred_waiting{false};
NBRMA_HIDDEN inline ProgressLock progress_lock;
NBRMA_HIDDEN inline SharedSlot shared_slots[shared_slot_count];
NBRMA_HIDDEN inline std::atomic<std::uint32_t> shared_slots_used{0};  // slots ever claimed
// The calling thread's slot, once it claimed one.
NBRMA_HIDDEN inline thread_local SharedSlot *shared_slot
    __attribute__((tls_model("initial-exec"))) = nullptr;
#undef NBRMA_HIDDEN
inline ProgressLock &lock() { return progress_lock; }
void drain_slow();
SharedSlot *claim_shared_slot();  // null when every slot is taken
}  // namespace detail

inline bool detail::ProgressLock::others_may_share() {
    const std::uint32_t used = shared_slots_used.load(std::memory_order_seq_cst);  // (a plain load)
    return used > 1 || (used == 1 && shared_slot != &shared_slots[0]);
}

// A shared section (with locking on): while enter() returned true and until leave(), the
// calling thread runs without the progress lock, and no thread holds it. False (nothing
// entered) when the lock is held (by any thread, the caller included) or the thread has
// no slot: the caller takes the lock instead. A section must not take the lock, block or
// call MPICH; what it touches besides its thread's slot, the caller serializes: with
// `serializer`, a lock enter() takes (and leave() drops) around the section, whose
// locked exchange then also orders the slot's store before the test of the progress
// lock, so the section's entry costs one locked instruction, not two.
class SharedSection {
  public:
    static bool enter(SpinLock *serializer = nullptr) {
        detail::SharedSlot *slot = detail::shared_slot;
        if (!slot && !(slot = detail::claim_shared_slot())) return false;
        // Dekker against try_lock's compare-and-swap, then its loads of the slots: the
        // slot's store, a full barrier, then the load of the lock (one of the two sees
        // the other).
        if (serializer) {
            slot->inside.store(1, std::memory_order_relaxed);
            order_before_lock();
            serializer->lock();
            order_after_lock();
        } else {
            slot->inside.exchange(1, std::memory_order_seq_cst);
        }
        if (__builtin_expect(detail::lock().held(), false)) {
            if (serializer) serializer->unlock();
            slot->inside.store(0, std::memory_order_release);
            return false;
        }
        nbrma::detail::counting = &slot->counts;
        return true;
    }
    // Whether enter() without a serializer is a full barrier for the calling thread: its
    // locked exchange on x86 (no store before it passes it, no load after it passes it).
#if defined(__x86_64__) || defined(__i386__)
    static constexpr bool enter_fences = true;
#else
    static constexpr bool enter_fences = false;
#endif
    static void leave(SpinLock *serializer = nullptr) {
        nbrma::detail::counting = &nbrma::detail::counters_instance;
        if (serializer) serializer->unlock();
        detail::shared_slot->inside.store(0, std::memory_order_release);
    }

  private:
    // The barrier between the slot's store and the lock's load. On x86 the serializer's
    // locked exchange is one (a locked instruction drains the store buffer, and no load
    // passes it): the compiler only must not move the store past it or the load before
    // it. Elsewhere, a fence.
    static void order_before_lock() {
#if defined(__x86_64__) || defined(__i386__)
        std::atomic_signal_fence(std::memory_order_seq_cst);
#else
        std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
    }
    static void order_after_lock() { std::atomic_signal_fence(std::memory_order_seq_cst); }
};

// counters() of the process and of every thread's shared sections, summed (call with the
// progress lock held, as the counters' readers do).
Counters all_counters();

// Whether locking is on (MPI_THREAD_MULTIPLE, or a progress thread exists).
inline bool active() { return detail::active.load(std::memory_order_relaxed); }

// Switches locking on for the rest of the process. Call while no other thread is inside
// nbrma (at MPI initialization, or before starting the progress thread).
void enable();

// Holds the progress lock for a scope when locking is on; otherwise does nothing.
class Guard {
  public:
    Guard() : held_(active()) {
        if (held_) detail::lock().lock();
    }
    ~Guard() {
        if (held_) detail::lock().unlock();
    }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

  private:
    bool held_;
};

// For sweeps: takes the lock unless another thread holds it. True when the caller may
// go on (and must call unlock() afterwards if active()).
inline bool try_lock() { return !active() || detail::lock().try_lock(); }
inline void unlock() {
    if (active()) detail::lock().unlock();
}

// Drops one of the references `count` holds and returns how many are left: an atomic
// decrement once locking is on, a plain load and store (no locked instruction) on the
// single-thread path.
inline int release_reference(std::atomic<int> &count) {
    if (active()) return count.fetch_sub(1, std::memory_order_acq_rel) - 1;
    const int left = count.load(std::memory_order_relaxed) - 1;
    count.store(left, std::memory_order_relaxed);
    return left;
}

// A small number naming the calling thread (1, 2, ... in order of first use).
unsigned thread_tag();

// True on nbrma's own progress thread (and its assist thread, progress/assist.hpp).
bool on_progress_thread();
void mark_progress_thread();

// Queues fn(arg) for an application thread: run at once when called on one while
// locking is off, else queued (always on nbrma's own threads). Safe from any thread,
// with or without the lock.
void defer(void (*fn)(void *), void *arg);

// Runs the queued calls; does nothing on the progress thread. Never call it with the
// progress lock held (the queued calls enter MPICH). Cheap when the queue is empty.
inline void drain() {
    if (detail::deferred_waiting.load(std::memory_order_acquire)) detail::drain_slow();
}

}  // namespace nbrma::threads

#endif
