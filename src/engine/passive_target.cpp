// Passive-target synchronization of a window: MPI_Win_lock/unlock, lock_all/unlock_all,
// the two paths of a lock epoch (EpochPath): at once, its lock taken and released by one
// compare-and-swap in the application's calls, and queued, the lock acquired, held and
// released through sync::LockOperation as sweeps move it on (advance_passive).
#include <mpi.h>

#include "check/races.hpp"
#include "common/log.hpp"
#include "engine/window.hpp"

namespace nbrma::engine {

using sync::LockMode;

// The at-once path (EpochPath): over a transport that completes every call inline, with
// no flush pending and no other at-once epoch open, where the activation rule lets the
// epoch activate now (may_activate: nothing queued ahead, or only what it may pass or
// was opened beside), and its lock is free (lock_all: taken per target later,
// take_target). The epoch is then active, its target held.
inline bool Window::take_at_once(Epoch &epoch) {
    if (flushing()) return false;
    if (!epochs_.empty()) {
        // Passing active epochs (access_after_access_reorder) is worth a sweep first:
        // grants that arrived start their epochs. Otherwise the queue is judged as it is
        // (completed epochs never hold a candidate back), and a lock that cannot be taken
        // at once is swept only once, by progress_opened.
        if (config_.reorder[access_after_access]) progress();
        if (!may_activate(epoch, epochs_.size())) return false;
    }
    const bool takes_lock = epoch.target() >= 0 && !epoch.nocheck();
    if (takes_lock && !at_once_locks_.acquire(epoch.target(), epoch.mode())) return false;
    held_at_once(epoch, takes_lock);
    return true;
}

// take_at_once past the acquisition (`took_lock`: its lock was taken).
inline void Window::held_at_once(Epoch &epoch, bool took_lock) {
    const int target = epoch.target();
    epoch.set_path(EpochPath::at_once);
    epoch.activate();
    if (target >= 0) epoch.at(target).phase = TargetPhase::held;
    if (check_ && took_lock)
        check_->lock_acquired(target, epoch.mode() == LockMode::exclusive, epoch.id(), false);
    ++counters().locks_at_once;
    if (took_lock) {
        ++counters().lock_grants;
        if (verbose_level() >= 2) log(2, "lock on %d granted at once", target);
    }
}

// open_passive's at-once case where nothing else is open, queued or flushing and the
// epoch of the last at-once one is there to reuse, in a shared section: the lock is
// taken first, so that a lock not free leaves nothing done.
bool Window::open_shared(EpochKind kind, int target, LockMode mode, int assertions) {
    if (at_once_ || !completes_inline_ || check_ || !at_once_home_ || !open_.empty() ||
        !epochs_.empty() || flushing())
        return false;
    const bool takes_lock = target >= 0 && !(assertions & MPI_MODE_NOCHECK);
    if (takes_lock && !at_once_locks_.acquire(target, mode)) return false;
    Epoch &epoch = *at_once_home_;
    begin_epoch(epoch, kind, target, mode, assertions);
    held_at_once(epoch, takes_lock);
    at_once_ = &epoch;
    return true;
}

inline void Window::open_passive(EpochKind kind, int target, LockMode mode, int assertions) {
    if (!at_once_ && completes_inline_) {
        if (!at_once_home_) at_once_home_ = spare_epoch();
        Epoch &epoch = *at_once_home_;
        begin_epoch(epoch, kind, target, mode, assertions);
        if (take_at_once(epoch)) {
            at_once_ = &epoch;
            return;
        }
        queue_opened(std::move(at_once_home_));  // the same epoch, queued
    } else {
        queue_opened(make_epoch(kind, target, mode, assertions));
    }
}

// An opened epoch into the queue, its acquisition started now (not lazily at unlock).
void Window::queue_opened(std::unique_ptr<Epoch> epoch) {
    const std::uint64_t id = epoch->id();
    enqueue(std::move(epoch));
    progress_opened(id);
}

// Over a transport that completes inline, every call of the epoch is at its target; a
// lock released by compare-and-swap (a sequentially consistent read-modify-write) also
// orders the epoch's writes before the release, as the transport's fence would. Each
// lock released at once is marked released; one that must be handed over, or a failed
// call to report, leaves the rest to the queued path (advance_passive).
//
// `shared`: in a shared section, where nothing may join the queue: a close that cannot
// finish returns false with the epoch as it is (targets released so far marked so), and
// the caller's close under the lock goes on from there. Nor may requests finish there.
template <bool shared>
inline bool Window::close_at_once() {
    Epoch &epoch = *at_once_;
    if constexpr (shared) {
        if (deferred_ || epoch.has_requests() || verbose_level() >= 2) return false;
    }
    settle();
    const bool nocheck = epoch.nocheck();
    if (is_error(epoch.failure())) {
        if (!shared) join_queue();
        return false;
    }
    if (!nocheck && !epoch.touched().empty())  // (the locks' release orders the writes)
        fenced_runs_ = runs_;
    else if (unfenced() && !fence_at_once()) {
        if (!shared) join_queue();  // whose flush reports the failure
        return false;
    }
    concurrent_puts_.store(false, std::memory_order_relaxed);  // (the epoch's calls are over)
    if (check_) check_closing_at_once(epoch);
    bool all_released = true;
    if (epoch.kind() == EpochKind::lock) {  // its one target, held (its state stays so
        all_released =                      // if it must be handed over)
            nocheck || at_once_locks_.release(epoch.target(), epoch.mode());
    } else {
        for (int rank : epoch.touched()) {
            TargetState &state = *epoch.find(rank);
            if (state.phase != TargetPhase::held) continue;
            if (nocheck || at_once_locks_.release(rank, LockMode::shared))
                state.phase = TargetPhase::released;
            else
                all_released = false;
        }
    }
    if (!all_released) {
        if (!shared) join_queue();
        return false;
    }
    close_epoch(epoch, nullptr);
    if (check_) check_->epoch_done(epoch.id());
    forget_taken(epoch);
    epoch.complete();
    at_once_ = nullptr;  // the epoch stays in at_once_home_ for the next
    return true;
}

// As advance_passive does for a queued epoch: the calls complete at each held target,
// then its release is published (a lock the queued path hands over later is published
// again then).
void Window::check_closing_at_once(Epoch &epoch) {
    const bool exclusive = epoch.mode() == LockMode::exclusive;
    auto close = [&](int rank) { check_->unlocked(rank, exclusive, !epoch.nocheck()); };
    if (epoch.kind() == EpochKind::lock) {
        close(epoch.target());
        return;
    }
    for (int rank : epoch.touched())
        if (epoch.find(rank)->phase == TargetPhase::held) close(rank);
}

// What MPI_Win_lock_all, and MPI_Win_lock (lock_arguments), refuse in their arguments
// and the window's info, whatever else is open.
Status Window::lock_all_arguments(int assertions) const {
    if (assertions & ~MPI_MODE_NOCHECK) return Status::err_assert;
    if (config_.no_locks) return Status::err_sync;
    return Status::ok;
}

Status Window::lock_arguments(int lock_type, int target, int assertions) const {
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return Status::err_lock_type;
    if (target < 0 || target >= size()) return Status::err_rank;
    return lock_all_arguments(assertions);
}

Status Window::lock(int lock_type, int target, int assertions) {
    if (Status status = lock_arguments(lock_type, target, assertions); is_error(status))
        return status;
    if (!open_.empty()) {  // (the usual lock opens beside no other epoch)
        if (open_of(EpochKind::lock_all) || open_lock(target) || open_of(EpochKind::access))
            return Status::err_sync;  // already locked, or an active-target access epoch
        if (target == rank() && open_of(EpochKind::exposure))
            return Status::err_conflict;  // a window is never locked and exposed at once
        if (Status status = end_unused_fence(); is_error(status)) return status;
    }
    open_passive(EpochKind::lock, target,
                 lock_type == MPI_LOCK_EXCLUSIVE ? LockMode::exclusive : LockMode::shared,
                 assertions);
    return Status::ok;
}

Status Window::unlock(int target, Request **request) {
    if (target < 0 || target >= size()) return Status::err_rank;
    if (at_once_ && at_once_->kind() == EpochKind::lock && at_once_->target() == target &&
        close_at_once<false>()) {
        *request = nullptr;  // complete
        return Status::ok;
    }
    return close_open(open_lock(target), request);
}

Status Window::lock_all(int assertions) {
    if (Status status = lock_all_arguments(assertions); is_error(status)) return status;
    if (open_of(EpochKind::exposure)) return Status::err_conflict;  // would lock our own window
    if (has_open_epoch()) return Status::err_sync;
    if (Status status = end_unused_fence(); is_error(status)) return status;
    open_passive(EpochKind::lock_all, -1, LockMode::shared, assertions);
    return Status::ok;
}

Status Window::unlock_all(Request **request) {
    if (at_once_ && at_once_->kind() == EpochKind::lock_all && close_at_once<false>()) {
        *request = nullptr;  // complete
        return Status::ok;
    }
    return close_open(open_of(EpochKind::lock_all), request);
}

bool Window::lock_shared(int lock_type, int target, int assertions) {
    if (is_error(lock_arguments(lock_type, target, assertions)) || verbose_level() >= 2)
        return false;
    return open_shared(EpochKind::lock, target,
                       lock_type == MPI_LOCK_EXCLUSIVE ? LockMode::exclusive : LockMode::shared,
                       assertions);
}

bool Window::lock_all_shared(int assertions) {
    if (is_error(lock_all_arguments(assertions)) || verbose_level() >= 2) return false;
    return open_shared(EpochKind::lock_all, -1, LockMode::shared, assertions);
}

bool Window::unlock_shared(int target) {
    return at_once_ && !check_ && at_once_->kind() == EpochKind::lock &&
           at_once_->target() == target && close_at_once<true>();
}

bool Window::unlock_all_shared() {
    return at_once_ && !check_ && at_once_->kind() == EpochKind::lock_all && close_at_once<true>();
}

// A lock_all target of the at-once epoch at the first call toward it: its shared lock
// taken at once (or, MPI_MODE_NOCHECK, no lock at all); when it is not free, the epoch
// joins the queue, which acquires it in turn. `shared`: in a shared section (rma_shared),
// where a lock not free leaves nothing done, and the call goes on under the lock.
template <bool shared>
bool Window::take_target(int target) {
    if (!at_once_->nocheck()) {
        if (!at_once_locks_.acquire(target, LockMode::shared)) {
            if (!shared) join_queue();
            return false;
        }
        ++counters().lock_grants;
        if (check_) check_->lock_acquired(target, false, at_once_->id(), false);
    }
    at_once_->first_touch(target).phase = TargetPhase::held;  // (ready_at_once found none)
    std::atomic<std::uint64_t> &word = taken_word(target);    // (after the lock: release)
    word.store(word.load(std::memory_order_relaxed) | taken_bit(target), std::memory_order_release);
    return true;
}
template bool Window::take_target<false>(int target);
template bool Window::take_target<true>(int target);

void Window::forget_taken(const Epoch &epoch) {
    if (epoch.kind() != EpochKind::lock_all) return;
    for (int rank : epoch.touched()) {
        std::atomic<std::uint64_t> &word = taken_word(rank);
        word.store(word.load(std::memory_order_relaxed) & ~taken_bit(rank),
                   std::memory_order_relaxed);
    }
}

// The at-once epoch goes on as a queued one, in its place by id (epochs opened after it
// beside it are queued behind it), with the window back on the sweep list.
void Window::join_queue() {
    settle();
    if (concurrent_puts_.load(std::memory_order_relaxed)) fence_at_once();  // (uncounted)
    forget_taken(*at_once_);
    std::unique_ptr<Epoch> epoch = std::move(at_once_home_);
    at_once_ = nullptr;
    epoch->set_path(EpochPath::queued);
    for (const auto &other : epochs_)
        if (other->opener() != epoch->opener()) several_openers_ = true;
    auto place = epochs_.begin();
    while (place != epochs_.end() && (*place)->id() < epoch->id()) ++place;
    epochs_.insert(place, std::move(epoch));
    queued();
}

// A lock epoch that may run out of order (access_after_access_reorder) over a transport
// whose atomics complete inline, with a progress that sweeps without waiting for a bell
// (not NBRMA_PROGRESS=interrupt: the lock word rings none): it tries the lock with one
// CAS each sweep, up to polite_polls times, before it joins the target's FIFO queue.
// A queued request is granted whenever its turn comes, also while its rank is
// descheduled or busy elsewhere, and the lock then sits idle until the rank runs again
// (four ranks on two cores); a polled lock is taken only by a rank
// that is running its progress, and such epochs are usually closed already, so the lock
// is held for one sweep. The bound keeps it from starving behind queued requests.
bool Window::polite_locks() const {
    return config_.reorder[access_after_access] && completes_inline_ &&
           !sweep_link_.sweeps_on_bells;
}

bool Window::advance_passive(Epoch &epoch) {
    bool moved = false;
    bool busy = false;  // some target still acquiring, holding work, or releasing
    // A lock epoch touches its one target only; lock_all those it dealt with.
    for (std::size_t i = 0; i < epoch.touched().size(); ++i) {
        const int rank = epoch.touched()[i];
        TargetState *state = epoch.find(rank);
        if (state->phase == TargetPhase::acquiring) {
            Status status = Status::in_progress;
            if (!state->polling) {
                status = state->operation.advance();
            } else if (at_once_locks_.acquire(rank, epoch.mode())) {
                state->polling = false;
                status = Status::ok;
            } else if (++state->polls >= polite_polls) {
                state->polling = false;  // its turn in the FIFO from now on
                state->operation.acquire(transport_, layout_, rank, epoch.mode());
                status = state->operation.advance();
            }
            if (status == Status::ok) {
                state->phase = TargetPhase::held;
                if (check_)
                    check_->lock_acquired(rank, epoch.mode() == LockMode::exclusive, epoch.id(),
                                          true);
                ++counters().lock_grants;
                if (verbose_level() >= 2)
                    log(2, "lock on %d granted (epoch %llu)", rank,
                        static_cast<unsigned long long>(epoch.id()));
                moved = true;
            } else if (is_error(status)) {
                epoch.fail(status);
                state->phase = TargetPhase::released;
                state->pending.clear();
                moved = true;
            }
        }
        if (state->phase == TargetPhase::held) moved |= run_pending(epoch, *state);
        if (epoch.open()) {
            busy = true;
            continue;
        }
        // Unlock completes the calls at the target, before the lock is released.
        if (state->phase == TargetPhase::held || state->phase == TargetPhase::flushing) {
            if (!flushed_to(epoch, rank, *state)) {
                busy = true;
                continue;
            }
            if (check_)
                check_->unlocked(rank, epoch.mode() == LockMode::exclusive, !epoch.nocheck());
            if (epoch.nocheck()) {
                state->phase = TargetPhase::released;
            } else {
                state->operation.release(transport_, layout_, rank, epoch.mode());
                state->phase = TargetPhase::releasing;
            }
            moved = true;
        }
        if (state->phase == TargetPhase::releasing) {
            Status status = state->operation.advance();
            if (status == Status::ok || is_error(status)) {
                if (is_error(status)) epoch.fail(status);
                state->phase = TargetPhase::released;
                moved = true;
            }
        }
        if (state->phase != TargetPhase::released) busy = true;
    }
    if (!busy && !epoch.open()) {
        if (check_) check_->epoch_done(epoch.id());
        epoch.complete();
        moved = true;
    }
    return moved;
}

}  // namespace nbrma::engine
