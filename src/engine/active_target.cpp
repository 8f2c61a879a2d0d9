// Active-target synchronization of a window: MPI_Win_fence (the dissemination barrier
// through the control regions' fence counters), MPI_Win_start/complete (access epochs)
// and MPI_Win_post/wait/test (exposure epochs, matched with the grant and done counters),
// and their progress.
#include <mpi.h>

#include "check/races.hpp"
#include "engine/window.hpp"

namespace nbrma::engine {

using sync::LockMode;

void Window::close_fence() {
    if (Epoch *fence = open_of(EpochKind::fence)) close_epoch(*fence, nullptr);
}

Status Window::check_group(const std::vector<int> &group) const {
    for (int rank : group)
        if (rank < 0 || rank >= size()) return Status::err_rank;
    return Status::ok;
}

Status Window::fence(int assertions, Request **request) {
    constexpr int allowed =
        MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
    if (assertions & ~allowed) return Status::err_assert;
    if (has_open_epoch()) return Status::err_sync;  // inside a lock or PSCW epoch
    // Local stores become visible to peers' loads of a shared window (skipped when the
    // application asserts there were none).
    if (!(assertions & MPI_MODE_NOSTORE)) __atomic_thread_fence(__ATOMIC_SEQ_CST);
    *request = Request::create();
    Epoch *previous = open_of(EpochKind::fence);
    // No epoch before and none after (every rank must assertions both): no barrier at all.
    const bool barrier = !((assertions & MPI_MODE_NOPRECEDE) && (assertions & MPI_MODE_NOSUCCEED));
    if (previous) {
        if (barrier) previous->set_barrier_follows();
        close_epoch(*previous, barrier ? nullptr : *request);
        // Alone in the queue (the usual fence loop), it completes here: the next
        // fence's epoch then activates in a queue of one.
        if (epochs_.size() == 1 && epochs_.front().get() == previous &&
            previous->state() == EngineState::active && advance(*previous) &&
            previous->state() == EngineState::completed) {
            retire_front();
        }
    }
    std::uint64_t opened = 0;  // epoch ids start at 1
    if (barrier) {
        Epoch &epoch = open_epoch(EpochKind::fence, -1, LockMode::shared, assertions);
        opened = epoch.id();
        epoch.set_sequence(++fences_);
        epoch.on_active(*request);  // the fence returns once its barrier has passed
        if (assertions & MPI_MODE_NOSUCCEED) close_epoch(epoch, nullptr);
    } else if (!previous) {
        (*request)->finish(Status::ok);
    }
    progress_opened(opened);
    return Status::ok;
}

Status Window::start(const std::vector<int> &group, int assertions) {
    if (assertions & ~MPI_MODE_NOCHECK) return Status::err_assert;
    if (Status status = check_group(group); is_error(status)) return status;
    if (open_of(EpochKind::access) || open_of(EpochKind::lock) || open_of(EpochKind::lock_all))
        return Status::err_sync;
    if (Status status = end_unused_fence(); is_error(status)) return status;
    Epoch &epoch = open_epoch(EpochKind::access, -1, LockMode::shared, assertions);
    epoch.set_group(group);
    progress_opened(epoch.id());
    return Status::ok;
}

Status Window::complete(Request **request) {
    return close_open(open_of(EpochKind::access), request);
}

Status Window::post(const std::vector<int> &group, int assertions) {
    if (assertions & ~(MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT))
        return Status::err_assert;
    if (Status status = check_group(group); is_error(status)) return status;
    if (open_of(EpochKind::exposure)) return Status::err_sync;
    if (open_of(EpochKind::lock_all) || open_lock(rank()))
        return Status::err_conflict;  // a window is never locked and exposed at once
    if (Status status = end_unused_fence(); is_error(status)) return status;
    if (!(assertions & MPI_MODE_NOSTORE)) __atomic_thread_fence(__ATOMIC_SEQ_CST);
    Epoch &epoch = open_epoch(EpochKind::exposure, -1, LockMode::shared, assertions);
    epoch.set_group(group);
    progress_opened(epoch.id());
    return Status::ok;
}

Status Window::wait(Request **request) { return close_open(open_of(EpochKind::exposure), request); }

Status Window::test(bool *flag) {
    Epoch *epoch = open_of(EpochKind::exposure);
    if (!epoch) return Status::err_sync;
    progress();
    *flag = exposure_finished(*epoch);
    if (!*flag) return Status::ok;
    const Status failure = epoch->failure();
    close_epoch(*epoch, nullptr);
    progress();  // completes it
    return failure;
}

// Round i of the fence barrier: a notice to rank + j k^i for j = 1 .. k-1 (below p), each
// into the slot the receiver keeps for us (control_region.hpp), which counts our barrier
// fences: this one is the epoch's sequence number.
void Window::send_fence_round(Epoch &epoch) {
    const int round = epoch.barrier_round(), radix = layout_.fence_radix();
    const std::int64_t distance = layout_.fence_distance(round);
    for (int j = 1; j < radix && j * distance < size(); ++j)
        notify(static_cast<int>((rank() + j * distance) % size()),
               layout::ControlLayout::fence_slot(layout_.fence_slot_of(round, j)), epoch.sequence(),
               epoch.barrier_notices());
}

// Of the notices of round `round` of the fence barrier numbered `sequence`, one from each
// rank - j k^round, those not arrived.
unsigned Window::fence_round_missing(int round, std::uint64_t sequence) const {
    const int radix = layout_.fence_radix();
    const std::int64_t distance = layout_.fence_distance(round);
    unsigned missing = 0;
    for (int j = 1; j < radix && j * distance < size(); ++j)
        missing +=
            control_word(layout::ControlLayout::fence_slot(layout_.fence_slot_of(round, j))) <
            sequence;
    return missing;
}

bool Window::advance_fence(Epoch &epoch) {
    bool moved = false;
    if (!epoch.barrier_passed()) {
        // Round i passes when the notices of this fence from rank - j k^i arrived, which
        // they sent only after their own rounds before i passed: after the last round
        // every rank has entered the fence (each slot counts one notice a barrier fence).
        const int rounds = layout_.fence_rounds();
        while (epoch.barrier_round() < rounds) {
            if (!fence_round_heard(epoch.barrier_round(), epoch.sequence())) return moved;
            epoch.next_barrier_round();
            moved = true;
            if (epoch.barrier_round() < rounds) send_fence_round(epoch);
        }
        Notices &notices = epoch.barrier_notices();
        if (!notices.done()) return moved;
        if (is_error(notices.failure)) epoch.fail(notices.failure);
        epoch.pass_barrier();
        // every rank entered the fence: their clocks are ours (and, for the calls
        // recorded before, their issue clocks')
        if (check_) {
            bool recorded = false;
            for (int peer : epoch.touched()) recorded |= !epoch.find(peer)->pending.empty();
            check_->fence_passed(epoch.sequence(), epoch.id(), recorded);
        }
        for (int peer : epoch.touched()) epoch.find(peer)->phase = TargetPhase::held;
        moved = true;
    }
    for (std::size_t i = 0; i < epoch.touched().size(); ++i) {
        const int peer = epoch.touched()[i];
        moved |= run_pending(epoch, *epoch.find(peer));
    }
    if (epoch.open()) return moved;
    // The calls complete at their targets before the epoch does (and so before the
    // next fence tells the peers), or are ordered before that fence's notice.
    bool flushed = true;
    for (int peer : epoch.touched()) {
        TargetState *state = epoch.find(peer);
        if (state->phase == TargetPhase::released) continue;
        if (ordered_by_barrier(epoch, peer, *state) || flushed_to(epoch, peer, *state)) {
            if (check_) check_->completed(peer);
            state->phase = TargetPhase::released;
            moved = true;
        } else {
            flushed = false;
        }
    }
    if (flushed) {
        if (check_) check_->epoch_done(epoch.id());
        epoch.complete();
        moved = true;
    }
    return moved;
}

// A closed fence epoch of a two-rank window, toward the other rank, over a transport
// whose fence orders (Capabilities::fence_orders): the epoch's calls toward it ran
// (complete here), and a transport fence puts the next fence's barrier notice behind
// them, so that rank passes the barrier only once they have landed - MPI's completion
// at the target, without a flush's round trip. With more ranks a third one would pass
// on our notice to it alone, before our calls toward another target landed (no
// transport orders across peers), so those epochs flush. Not with the race checker,
// which learns of completion from the flush.
bool Window::ordered_by_barrier(Epoch &epoch, int peer, TargetState &state) {
    if (size() != 2 || peer == rank() || !epoch.barrier_follows() ||
        state.phase != TargetPhase::held || check_ || !transport_.capabilities().fence_orders)
        return false;
    const PeerFlush &flush = peer_flushes_[peer];
    if (flush.flushed >= flush.last_run) return false;  // nothing to flush: flushed_to is free
    if (Status status = transport_.fence(peer); is_error(status)) epoch.fail(status);
    return true;
}

// An access epoch's target whose grant (its matching post) arrived: held from now on,
// and the race checker orders what the target did before its post before our calls.
bool Window::grant_arrived(Epoch &epoch, int peer, TargetState &state) {
    if (state.phase != TargetPhase::acquiring ||
        control_word(layout_.grant_count(peer)) < state.match_id)
        return false;
    state.phase = TargetPhase::held;
    if (check_) check_->post_acquire(peer, epoch.id(), !state.pending.empty());
    return true;
}

// Each target completes on its own: its done notice leaves as soon as the epoch is
// closed and the last call toward it is done (SC14 §VII-D).
bool Window::advance_access(Epoch &epoch) {
    bool moved = false;
    bool busy = false;
    for (int peer : epoch.group()) {
        TargetState &state = epoch.at(peer);
        moved |= grant_arrived(epoch, peer, state);
        if (state.phase == TargetPhase::held) moved |= run_pending(epoch, state);
        // The done notice leaves once the calls completed at the target (MPI_Win_wait
        // there relies on it).
        if ((state.phase == TargetPhase::held || state.phase == TargetPhase::flushing) &&
            !epoch.open() && flushed_to(epoch, peer, state)) {
            if (check_) check_->completed(peer, true);
            notify(peer, layout_.done_count(rank()), ++dones_sent_[peer], state.notices);
            state.phase = TargetPhase::releasing;
            moved = true;
        }
        if (state.phase == TargetPhase::releasing && state.notices.done()) {
            if (is_error(state.notices.failure)) epoch.fail(state.notices.failure);
            state.phase = TargetPhase::released;
            moved = true;
        }
        if (state.phase != TargetPhase::released) busy = true;
    }
    if (!busy && !epoch.open()) {
        if (check_) check_->epoch_done(epoch.id());
        epoch.complete();
        moved = true;
    }
    return moved;
}

bool Window::advance_exposure(Epoch &epoch) {
    bool moved = false;
    for (int peer : epoch.group()) {
        TargetState &state = epoch.at(peer);
        if (state.phase == TargetPhase::acquiring && state.notices.done()) {
            if (is_error(state.notices.failure)) epoch.fail(state.notices.failure);
            state.phase = TargetPhase::held;
            moved = true;
        }
        if (state.phase == TargetPhase::held &&
            control_word(layout_.done_count(peer)) >= state.match_id) {
            state.phase = TargetPhase::released;
            if (check_) check_->complete_acquire();  // the origin's complete
            moved = true;
        }
    }
    if (!epoch.open() && exposure_finished(epoch)) {
        if (check_) {
            check_->exposure_done();
            check_->epoch_done(epoch.id());
        }
        epoch.complete();
        moved = true;
    }
    return moved;
}

// Every origin of the group reported done (MPI_Win_test's condition).
bool Window::exposure_finished(const Epoch &epoch) const {
    if (epoch.state() != EngineState::active) return false;
    for (int peer : epoch.group()) {
        const TargetState *state = epoch.find(peer);
        if (!state || state->phase != TargetPhase::released) return false;
    }
    return true;
}

}  // namespace nbrma::engine
