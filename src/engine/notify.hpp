// The target side of notified RMA (doc/design.md §8): this rank's notification
// counters, which live in its control region where origins fetch-add them
// (MPIX_Put_notify ...), how many of them it has now (published in the control region,
// where origins read it to check an index), and the threshold requests
// (MPIX_Win_notify_ithreshold) waiting on them. Part of the engine, beside the window
// that owns it, because thresholds are engine requests. Under the progress lock.
#ifndef NBRMA_ENGINE_NOTIFY_HPP
#define NBRMA_ENGINE_NOTIFY_HPP

#include <cstdint>
#include <vector>

#include "common/status.hpp"
#include "engine/request.hpp"

namespace nbrma::engine {

class NotifyCounters {
  public:
    // `words`: `capacity` counters in our control region (zero when mapped); `published`:
    // the control word that tells origins how many we have.
    NotifyCounters(std::uint64_t *words, std::uint32_t capacity, std::uint64_t *published)
        : words_(words), capacity_(capacity), published_(published) {}
    NotifyCounters(const NotifyCounters &) = delete;
    NotifyCounters &operator=(const NotifyCounters &) = delete;

    // Called (with `arg`) whenever a threshold starts waiting: the owning window puts
    // itself on the progress engine's sweep list (progress/sweep.cpp).
    void on_wait(void (*hook)(void *), void *arg) {
        hook_ = hook;
        hook_arg_ = arg;
    }

    std::uint32_t capacity() const { return capacity_; }
    int count() const { return static_cast<int>(count_); }
    // How many counters were ever published (origins may have written below it).
    std::uint32_t used() const { return used_; }
    // MPIX_Win_notify_set_num. err_notification: n < 0 or n > capacity. Counters kept up
    // to the smaller size keep their values; new ones start at 0; thresholds pending on
    // counters that go away complete with err_notification.
    Status set_count(int n);
    // err_notification: index outside [0, count).
    Status value(int index, std::uint64_t *out) const;
    Status set_value(int index, std::uint64_t value);
    // A request that completes once counter `index` >= expected (at once if it is).
    Status threshold(int index, std::uint64_t expected, Request **request);
    // MPI_Cancel: a pending threshold completes as cancelled. False if not pending.
    bool cancel(Request *request);
    // Completes the thresholds whose counters reached them; true if any did.
    bool check();
    bool pending() const { return !waiting_.empty(); }
    // The window goes away: every pending threshold completes with `status`.
    void fail_all(Status status);

  private:
    std::uint64_t load(std::uint32_t index) const {
        return __atomic_load_n(&words_[index], __ATOMIC_ACQUIRE);
    }
    struct Threshold {
        std::uint32_t index;
        std::uint64_t expected;
        Request *request;
    };
    std::uint64_t *words_;
    std::uint32_t capacity_;
    std::uint64_t *published_;
    std::uint32_t count_ = 0;
    // Counters at or above this index were never in use, so nothing wrote them: growing
    // into them needs no clearing (set_num(2^16) on a fresh window touches no page).
    std::uint32_t used_ = 0;
    std::vector<Threshold> waiting_;
    void (*hook_)(void *) = nullptr;
    void *hook_arg_ = nullptr;
};

}  // namespace nbrma::engine

#endif
