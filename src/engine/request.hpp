// Engine-side requests: what an epoch-closing call, a flush or an R-call returns.
// The MPI layer wraps each in an MPICH generalized request; the engine only marks
// completion and calls the hook. A request lives until the engine has completed it
// and the MPI side has released it (two references).
#ifndef NBRMA_ENGINE_REQUEST_HPP
#define NBRMA_ENGINE_REQUEST_HPP

#include <cstddef>
#include <vector>

#include "common/status.hpp"

namespace nbrma::engine {

class Request {
  public:
    using Hook = void (*)(Request *request);

    static Request *create();  // two references: the engine's and the MPI layer's

    bool complete() const { return complete_; }
    Status status() const { return status_; }

    // Engine side: mark complete (once) and drop the engine's reference.
    void finish(Status status);
    // Either side: drop a reference; the last one deletes.
    void release();

    // Called by finish(); the MPI layer completes the generalized request there.
    void set_hook(Hook hook, void *user) {
        hook_ = hook;
        user_ = user;
    }
    void *user() const { return user_; }

  private:
    Request() = default;
    bool complete_ = false;
    Status status_ = Status::ok;
    int references_ = 2;
    Hook hook_ = nullptr;
    void *user_ = nullptr;
};

// A bounded free list of heap objects, for what a short epoch would otherwise
// allocate and free every time (requests, the MPI layer's wrappers of them). Not
// thread-safe, like the rest of the engine.
template <typename T, std::size_t Capacity = 64>
class Spares {
  public:
    // A spare object, or null when there is none (the caller allocates).
    T *take() {
        if (list_.empty()) return nullptr;
        T *object = list_.back();
        list_.pop_back();
        return object;
    }
    // Keeps `object` for reuse, or deletes it once Capacity are kept (a burst of
    // thousands does not stay allocated).
    void give(T *object) {
        if (list_.size() >= Capacity) {
            delete object;
            return;
        }
        if (list_.capacity() == 0) list_.reserve(Capacity);
        list_.push_back(object);
    }

  private:
    std::vector<T *> list_;
};

}  // namespace nbrma::engine

#endif
