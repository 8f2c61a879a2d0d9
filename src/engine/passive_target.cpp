// Passive-target synchronization of a window: MPI_Win_lock/unlock, lock_all/unlock_all,
// the lock epochs' progress (acquiring, holding and releasing a target's lock word through
// sync::LockOperation), and the direct lock: a lock epoch taken and released at once on a
// transport that maps the target's lock word, before any Epoch object exists
// (materialize() turns it into one when the epoch needs the general path).
#include <mpi.h>

#include "common/log.hpp"
#include "common/threads.hpp"
#include "engine/window.hpp"
#include "progress/interrupt.hpp"

namespace nbrma::engine {

using sync::LockMode;

Status Window::lock(int lock_type, int target, int assertions) {
    materialize();
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return Status::err_lock_type;
    if (target < 0 || target >= size()) return Status::err_rank;
    if (assertions & ~MPI_MODE_NOCHECK) return Status::err_assert;
    if (config_.no_locks) return Status::err_sync;
    if (open_of(EpochKind::lock_all) || open_lock(target) || open_of(EpochKind::access))
        return Status::err_sync;  // already locked, or an active-target access epoch
    if (target == rank() && open_of(EpochKind::exposure))
        return Status::err_conflict;  // a window is never locked and exposed at once
    if (Status status = end_unused_fence(); is_error(status)) return status;
    LockMode mode = lock_type == MPI_LOCK_EXCLUSIVE ? LockMode::exclusive : LockMode::shared;
    if (lock_at_once(target, mode, assertions)) return Status::ok;
    progress_opened(open_epoch(EpochKind::lock, target, mode, assertions).id());
    // (acquisition starts now, not lazily at unlock)
    return Status::ok;
}

Status Window::unlock(int target, Request **request) {
    if (target < 0 || target >= size()) return Status::err_rank;
    if (target == direct_.target && unlock_at_once()) {
        *request = nullptr;  // complete
        return Status::ok;
    }
    materialize();
    return close_open(open_lock(target), request);
}

Status Window::lock_all(int assertions) {
    materialize();
    if (assertions & ~MPI_MODE_NOCHECK) return Status::err_assert;
    if (config_.no_locks) return Status::err_sync;
    if (open_of(EpochKind::exposure)) return Status::err_conflict;  // would lock our own window
    if (has_open_epoch()) return Status::err_sync;
    if (Status status = end_unused_fence(); is_error(status)) return status;
    if (lock_at_once(-1, LockMode::shared, assertions)) return Status::ok;
    progress_opened(open_epoch(EpochKind::lock_all, -1, LockMode::shared, assertions).id());
    return Status::ok;
}

Status Window::unlock_all(Request **request) {
    if (direct_.all && unlock_at_once()) {
        *request = nullptr;  // complete
        return Status::ok;
    }
    materialize();
    return close_open(open_of(EpochKind::lock_all), request);
}

// A lock epoch toward `target` (-1: lock_all, whose locks come at each target's first
// call) taken at once (DirectLock): only with nothing else on the window (no epoch
// queued, no flush pending) and a transport that completes inline; with
// access_after_access_reorder, a lock may also pass queued lock epochs (may_pass_queued).
bool Window::lock_at_once(int target, LockMode mode, int assertions) {
    if (!flushes_.empty() || transport_flushes_ != 0 || !completes_inline_)
        return false;
    if (!epochs_.empty()) {
        if (target < 0 || !config_.reorder[access_after_access]) return false;
        progress();  // retire what completed; grants that arrived start their epochs
        if (!may_pass_queued(target)) return false;
    }
    const bool nocheck = (assertions & MPI_MODE_NOCHECK) != 0;
    if (target >= 0 && !nocheck && !sync::acquire_at_once(transport_, target, mode)) return false;
    direct_.target = target;
    direct_.all = target < 0;
    // lock_all: no target held yet (the flags of the last one were cleared with it).
    if (direct_.all && direct_.held.empty())
        direct_.held.assign(static_cast<std::size_t>(size()), 0);
    direct_.mode = mode;
    direct_.assertions = assertions;
    direct_.opener = threads::active() ? threads::thread_tag() : 0;
    direct_.failure = Status::ok;
    ++counters().epochs_opened;
    ++counters().locks_at_once;
    if (target >= 0 && !nocheck) {
        ++counters().lock_grants;
        if (verbose_level() >= 2) log(2, "lock on %d granted at once", target);
    }
    return true;
}

// With access_after_access_reorder, a lock toward `target` may be taken at once beside
// queued epochs when each of them is a lock epoch toward another target that is active
// already (acquiring, held or releasing its lock): the engine would activate an epoch
// opened now beside them too (may_activate, reorder_allows), and a DirectLock is the
// active epoch the engine would make of it. This is what lets nonblocking epochs pay
// off under contention (SC14 Fig 12): a transaction toward a busy target queues, and the
// ones after it toward free targets still run at once.
bool Window::may_pass_queued(int target) const {
    for (const auto &epoch : epochs_) {
        if (epoch->state() == EngineState::completed) continue;
        if (epoch->state() != EngineState::active || epoch->kind() != EpochKind::lock ||
            epoch->target() == target)
            return false;
    }
    return true;
}

// Whether a call toward `target` runs in the DirectLock: its lock epoch's target, or for
// lock_all a target whose shared lock is ours or is taken at once now.
bool Window::direct_covers(int target) {
    if (target == direct_.target) return true;
    if (!direct_.all) return false;
    if (direct_.held[target]) return true;
    if (!(direct_.assertions & MPI_MODE_NOCHECK)) {
        if (!sync::acquire_at_once(transport_, target, LockMode::shared)) return false;
        ++counters().lock_grants;
    }
    direct_.held[target] = 1;
    direct_.held_ranks.push_back(target);
    return true;
}

// The DirectLock's calls complete at the target (inline) and the lock is released by one
// CAS; false, with the epoch still held, when a call failed or the release must hand
// the lock over (the ordinary epoch then reports or does it).
bool Window::unlock_at_once() {
    const bool nocheck = (direct_.assertions & MPI_MODE_NOCHECK) != 0;
    // Over a transport that completes inline, the release below is a compare-and-swap of
    // each held lock word, a sequentially consistent read-modify-write: it orders the
    // epoch's writes before the release as a flush's fence would (a write reaches a
    // lock_all target only once its lock is held). Without the release (NOCHECK), or with
    // a failed call to report, the flush runs.
    if (completes_inline_ && !nocheck && !is_error(direct_.failure) &&
        (!direct_.all || !direct_.held_ranks.empty()))
        fenced_runs_ = runs_;
    else if (!direct_flush())
        return false;
    if (direct_.all) {
        // Each lock released at once leaves the set; one that must be handed over stays
        // for the ordinary epoch.
        std::size_t kept = 0;
        for (int rank : direct_.held_ranks) {
            if (nocheck || sync::release_at_once(transport_, rank, LockMode::shared))
                direct_.held[rank] = 0;
            else
                direct_.held_ranks[kept++] = rank;
        }
        direct_.held_ranks.resize(kept);
        if (kept > 0) return false;
        direct_.all = false;
    } else {
        if (!nocheck && !sync::release_at_once(transport_, direct_.target, direct_.mode))
            return false;
        direct_.target = -1;
    }
    ++counters().epochs_completed;
    return true;
}

// The DirectLock becomes an ordinary lock epoch, active with its target held, as the
// engine would have left it after granting the lock.
void Window::materialize() {
    if (!direct_.active()) return;
    const bool all = direct_.all;
    const int target = direct_.target;
    direct_.target = -1;
    direct_.all = false;
    Epoch &epoch = open_epoch(all ? EpochKind::lock_all : EpochKind::lock, target, direct_.mode,
                              direct_.assertions);
    --counters().epochs_opened;  // counted when it was taken
    epoch.set_opener(direct_.opener);
    epoch.activate();
    if (all) {
        for (int rank : direct_.held_ranks) {
            epoch.at(rank).phase = TargetPhase::held;
            direct_.held[rank] = 0;
        }
        direct_.held_ranks.clear();
    } else {
        epoch.at(target).phase = TargetPhase::held;
    }
    if (is_error(direct_.failure)) epoch.fail(direct_.failure);
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
           !interrupt::attached();
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
            } else if (sync::acquire_at_once(transport_, rank, epoch.mode())) {
                state->polling = false;
                status = Status::ok;
            } else if (++state->polls >= polite_polls) {
                state->polling = false;  // its turn in the FIFO from now on
                state->operation.acquire(transport_, layout_, rank, epoch.mode());
                status = state->operation.advance();
            }
            if (status == Status::ok) {
                state->phase = TargetPhase::held;
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
        epoch.complete();
        moved = true;
    }
    return moved;
}

}  // namespace nbrma::engine
