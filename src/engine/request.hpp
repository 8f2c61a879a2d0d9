// Engine-side requests: what an epoch-closing call, a flush or an R-call returns.
// The MPI layer wraps each in an MPICH generalized request; the engine only marks
// completion and calls the hook. A request lives until the engine has completed it
// and the MPI side has released it (two references).
#ifndef NBRMA_ENGINE_REQUEST_HPP
#define NBRMA_ENGINE_REQUEST_HPP

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "common/status.hpp"
#include "common/threads.hpp"

namespace nbrma::engine {

class Request {
  public:
    using Hook = void (*)(Request *request);

    static Request *create();  // two references: the engine's and the MPI layer's

    // Safe from any thread: status() is final once complete() is true.
    bool complete() const { return complete_.load(std::memory_order_acquire); }
    Status status() const { return status_; }
    // Completed by MPI_Cancel (a notification threshold), not by what it waited for.
    bool cancelled() const { return cancelled_; }

    // Engine side (progress lock held): set the status, call the hook, then mark
    // complete (so whoever sees complete() also finds what the hook queued) and drop
    // the engine's reference. Once only.
    void finish(Status status);
    // finish(ok) as a cancelled request (MPI_Status_set_cancelled).
    void cancel() {
        if (complete()) return;
        cancelled_ = true;
        finish(Status::ok);
    }
    // Either side, any thread: drop a reference; the last one recycles the request.
    void release();

    // Called by finish(); the MPI layer completes the generalized request there.
    void set_hook(Hook hook, void *user) {
        hook_ = hook;
        user_ = user;
    }
    void *user() const { return user_; }

  private:
    Request() = default;
    void reset();
    std::atomic<bool> complete_{false};
    Status status_ = Status::ok;
    bool cancelled_ = false;
    std::atomic<int> references_{2};
    Hook hook_ = nullptr;
    void *user_ = nullptr;
};

// A bounded free list of heap objects, for what a short epoch would otherwise
// allocate and free every time (requests, the MPI layer's wrappers of them). Safe from
// any thread: its own spin lock once threads::active() (objects are given back from
// MPICH callbacks, which never take the progress lock).
template <typename T, std::size_t Capacity = 64>
class Spares {
  public:
    // A spare object, or null when there is none (the caller allocates).
    T *take() {
        if (threads::active()) {
            std::lock_guard<threads::SpinLock> hold(lock_);
            return take_unlocked();
        }
        return take_unlocked();
    }
    // Keeps `object` for reuse, or deletes it once Capacity are kept (a burst of
    // thousands does not stay allocated).
    void give(T *object) {
        if (threads::active()) {
            std::lock_guard<threads::SpinLock> hold(lock_);
            give_unlocked(object);
            return;
        }
        give_unlocked(object);
    }

  private:
    T *take_unlocked() {
        if (list_.empty()) return nullptr;
        T *object = list_.back();
        list_.pop_back();
        return object;
    }
    void give_unlocked(T *object) {
        if (list_.size() >= Capacity) {
            delete object;
            return;
        }
        if (list_.capacity() == 0) list_.reserve(Capacity);
        list_.push_back(object);
    }

    threads::SpinLock lock_;
    std::vector<T *> list_;
};

}  // namespace nbrma::engine

#endif
