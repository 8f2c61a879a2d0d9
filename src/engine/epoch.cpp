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

const char *epoch_path_name(EpochPath path) {
    return path == EpochPath::at_once ? "at once" : "queued";
}

Epoch::Epoch(std::uint64_t id, EpochKind kind, int nranks, int target, sync::LockMode mode,
             int assertions)
    : kind_(kind), nranks_(nranks) {
    reset(id, kind, target, mode, assertions);
}

Epoch::~Epoch() {
    // Only a window torn down with work pending gets here with requests left.
    if (active_request_) active_request_->finish(Status::err_other);
    if (close_request_) close_request_->finish(Status::err_other);
}

void Epoch::set_group(const std::vector<int> &group) {
    member_.assign(static_cast<std::size_t>(nranks_), 0);  // (a reused epoch's storage)
    for (int rank : group) member_[rank] = 1;
    group_.assign(group.begin(), group.end());
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

void Epoch::finish_active_request() {
    active_request_->finish(failure_);
    active_request_ = nullptr;
}

// complete()'s rarer part: the log line, the requests.
void Epoch::make_targets() { targets_.resize(static_cast<std::size_t>(nranks_)); }

// (out of line: the common reset has nothing pending, and its callers stay small)
[[gnu::noinline]] void TargetState::clear_pending() { pending.clear(); }

namespace {
[[gnu::noinline]] std::unique_ptr<TargetState> new_target_state() {
    return std::make_unique<TargetState>();
}
}  // namespace

TargetState &Epoch::touch(std::unique_ptr<TargetState> &state, int rank) {
    if (!state) state = new_target_state();
    state->reset();
    state->epoch = id_;
    touched_.push_back(rank);
    return *state;
}

void Epoch::finish_requests() {
    if (verbose_level() >= 2)  // skip the varargs call in the common case
        log(2, "epoch %llu (%s) completed", static_cast<unsigned long long>(id_),
            epoch_kind_name(kind_));
    if (active_request_) active_request_->finish(failure_);  // failed before its barrier
    active_request_ = nullptr;
    if (close_request_) close_request_->finish(failure_);
    close_request_ = nullptr;
}

}  // namespace nbrma::engine
