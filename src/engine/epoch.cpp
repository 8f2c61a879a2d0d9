#include "engine/epoch.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace nbrma::engine {

const char *epoch_kind_name(EpochKind kind) {
    switch (kind) {
        case EpochKind::lock:
            return "lock";
        case EpochKind::lock_all:
            return "lock_all";
        case EpochKind::fence:
            return "fence";
        case EpochKind::access:
            return "access";
        case EpochKind::exposure:
            return "exposure";
    }
    return "?";
}

const char *engine_state_name(EngineState state) {
    switch (state) {
        case EngineState::deferred:
            return "deferred";
        case EngineState::active:
            return "active";
        case EngineState::completed:
            return "completed";
    }
    return "?";
}

Epoch::Epoch(std::uint64_t id, EpochKind kind, int nranks, int target, sync::LockMode mode,
             int assertions)
    : kind_(kind), nranks_(nranks) {
    reset(id, kind, target, mode, assertions);
}

void Epoch::reset(std::uint64_t id, EpochKind kind, int target, sync::LockMode mode,
                  int assertions) {
    // Untouched targets must read as null (find()); keep their states for at().
    for (int rank : touched_) spare_targets_.push_back(std::move(slot(rank)));
    touched_.clear();
    id_ = id;
    kind_ = kind;
    target_ = target;
    mode_ = mode;
    assert_ = assertions;
    open_ = true;
    barrier_passed_ = false;
    barrier_round_ = 0;
    state_ = EngineState::deferred;
    failure_ = Status::ok;
    calls_ = 0;
    sequence_ = 0;
    close_request_ = nullptr;  // a completed epoch has handed both requests back
    active_request_ = nullptr;
    barrier_notices_ = Notices();
    group_.clear();
    member_.clear();
    beside_.clear();
    ++counters().epochs_opened;
}

Epoch::~Epoch() {
    // Only a window torn down with work pending gets here with requests left.
    if (active_request_) active_request_->finish(Status::err_other);
    if (close_request_) close_request_->finish(Status::err_other);
}

void Epoch::set_group(std::vector<int> group) {
    member_.assign(static_cast<std::size_t>(nranks_), 0);
    for (int rank : group) member_[rank] = 1;
    group_ = std::move(group);
}

bool Epoch::opened_beside(std::uint64_t id) const {
    return std::find(beside_.begin(), beside_.end(), id) != beside_.end();
}

bool Epoch::covers(int rank) const {
    switch (kind_) {
        case EpochKind::lock:
            return rank == target_;
        case EpochKind::lock_all:
        case EpochKind::fence:
            return true;
        case EpochKind::access:
            return in_group(rank);
        case EpochKind::exposure:
            return false;  // exposure epochs issue no calls
    }
    return false;
}

void Epoch::close(Request *request) {
    open_ = false;
    close_request_ = request;
}

void Epoch::activate() {
    state_ = EngineState::active;
    if (kind_ != EpochKind::fence) pass_barrier();
}

void Epoch::pass_barrier() {
    barrier_passed_ = true;
    if (active_request_) active_request_->finish(failure_);
    active_request_ = nullptr;
}

void Epoch::complete() {
    state_ = EngineState::completed;
    ++counters().epochs_completed;
    if (verbose_level() >= 2)  // skip the varargs call in the common case
        log(2, "epoch %llu (%s) completed", static_cast<unsigned long long>(id_),
            epoch_kind_name(kind_));
    if (active_request_) active_request_->finish(failure_);  // failed before its barrier
    active_request_ = nullptr;
    if (close_request_) close_request_->finish(failure_);
    close_request_ = nullptr;
}

// A lock epoch deals with its one target; the others get a table by rank the first time
// they touch one (kept when the epoch is reused).
std::unique_ptr<TargetState> &Epoch::slot(int rank) {
    if (kind_ == EpochKind::lock) return one_;
    if (targets_.empty()) targets_.resize(static_cast<std::size_t>(nranks_));
    return targets_[rank];
}

TargetState &Epoch::at(int rank) {
    std::unique_ptr<TargetState> &state = slot(rank);
    if (state) return *state;
    if (spare_targets_.empty()) {
        state = std::make_unique<TargetState>();
    } else {
        state = std::move(spare_targets_.back());
        spare_targets_.pop_back();
        state->reset();
    }
    touched_.push_back(rank);
    return *state;
}

TargetState *Epoch::find(int rank) const {
    if (kind_ == EpochKind::lock) return rank == target_ ? one_.get() : nullptr;
    return targets_.empty() ? nullptr : targets_[rank].get();
}

}  // namespace nbrma::engine
