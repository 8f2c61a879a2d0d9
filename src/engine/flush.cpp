// Flushes of a window (MPI_Win_flush, flush_local, flush_all and their MPIX_ nonblocking
// forms): a flush request completes once every operation issued to its targets before it
// completed remotely (or locally); the transport's flush is asked per peer, once.
#include <algorithm>

#include "check/races.hpp"
#include "engine/window.hpp"

namespace nbrma::engine {

Status Window::flush_general(int target, Request **request, bool local) {
    if (target != -1) {
        if (target < 0 || target >= size()) return Status::err_rank;
        Epoch *epoch = covering_epoch(target);
        if (!epoch || !epoch->passive()) return Status::err_sync;
    } else {
        bool passive = false;
        for (Epoch *epoch : open_) passive |= epoch->passive();
        if (!passive) return Status::err_sync;
    }
    // Nothing issued before it is still pending, and the transport has it at the target
    // already (shared memory, or a transport flush that completed in the call): done in
    // the call, without a request (a failure still goes through one, reported when it is
    // waited for, as a flush that completes later reports its own).
    Flush flush{target, next_age_ - 1, nullptr, local};
    if (flush_done(flush)) {
        flush_finished(flush);
        *request = nullptr;
        if (is_error(flush.failure)) (*request = Request::create())->finish(flush.failure);
        return Status::ok;
    }
    flush.request = *request = Request::create();
    flushes_.push_back(flush);
    queued();
    progress();
    return Status::ok;
}

// Whether every operation toward `peer` numbered up to `upto` is complete at the peer.
// Never waits: posts a transport flush when none is in flight (over shared memory it
// completes inline) and lets the next sweep ask again. A failed flush is reported in
// *failure (and counts as done: the operations will not arrive).
bool Window::remote_complete(int peer, std::uint64_t upto, Status *failure) {
    PeerFlush &flush = peer_flushes_[peer];
    upto = std::min(upto, flush.last_run);
    if (flush.flushed < upto && !flush.in_flight) {
        flush.covers = runs_;
        flush.in_flight = true;
        ++transport_flushes_;
        Status status = transport_.flush(peer, &flush);
        if (status != Status::in_progress) flush.on_complete(status);
    }
    if (flush.flushed < upto) return false;
    if (upto > 0 && is_error(flush.failure)) *failure = flush.failure;
    return true;
}

// A closed epoch's calls toward `peer` ran; whether they completed there (flushing
// phase, entered here from held).
bool Window::flushed_to(Epoch &epoch, int peer, TargetState &state) {
    if (state.phase == TargetPhase::held) {
        state.flush_upto = runs_;
        state.phase = TargetPhase::flushing;
    }
    Status failure = Status::ok;
    if (!remote_complete(peer, state.flush_upto, &failure)) return false;
    if (is_error(failure)) epoch.fail(failure);
    return true;
}

void Window::flush_finished(const Flush &flush) {
    if (check_) check_flushed(flush.target, flush.local);
}

void Window::check_flushed(int target, bool local) {
    if (local)
        check_->verify(target);  // complete at the origin: buffers free again
    else
        check_->completed(target);
}

// First the calls issued before the flush must have run (complete at the origin: all
// flush_local asks), then a transport flush completes them at their targets.
bool Window::flush_done(Flush &flush) {
    if (!flush.ran) {
        for (const auto &epoch : epochs_) {
            if (epoch->state() == EngineState::completed) continue;
            for (int rank : epoch->touched()) {
                if (flush.target != -1 && rank != flush.target) continue;
                const TargetState *state = epoch->find(rank);
                if (!state->pending.empty() && state->pending.front()->age() <= flush.age)
                    return false;
            }
        }
        if (flush.local) return true;
        flush.ran = true;
        flush.upto = runs_;
    }
    if (flush.target != -1) return remote_complete(flush.target, flush.upto, &flush.failure);
    // Only the peers something ran toward since they were last found complete.
    bool done = true;
    std::size_t kept = 0;
    for (int rank : unflushed_) {
        done &= remote_complete(rank, flush.upto, &flush.failure);
        PeerFlush &peer = peer_flushes_[rank];
        if (peer.flushed < peer.last_run)
            unflushed_[kept++] = rank;
        else
            peer.listed = false;
    }
    unflushed_.resize(kept);
    return done;
}

}  // namespace nbrma::engine
