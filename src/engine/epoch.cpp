#include "engine/epoch.hpp"

#include "common/log.hpp"

namespace nbrma::engine {

const char *epoch_kind_name(EpochKind kind) {
    return kind == EpochKind::lock ? "lock" : "lock_all";
}

const char *engine_state_name(EngineState state) {
    switch (state) {
        case EngineState::deferred: return "deferred";
        case EngineState::active: return "active";
        case EngineState::completed: return "completed";
    }
    return "?";
}

Epoch::Epoch(std::uint64_t id, EpochKind kind, int nranks, int target, sync::LockMode mode,
             bool nocheck)
    : id_(id), kind_(kind), target_(target), mode_(mode), nocheck_(nocheck), targets_(nranks) {
    ++counters().epochs_opened;
}

Epoch::~Epoch() {
    if (close_request_) close_request_->finish(Status::err_other);
}

void Epoch::close(Request *request) {
    open_ = false;
    close_request_ = request;
}

void Epoch::complete() {
    state_ = EngineState::completed;
    ++counters().epochs_completed;
    log(2, "epoch %llu (%s) completed", static_cast<unsigned long long>(id_),
        epoch_kind_name(kind_));
    if (close_request_) close_request_->finish(failure_);
    close_request_ = nullptr;
}

TargetState &Epoch::at(int rank) {
    if (!targets_[rank]) targets_[rank] = std::make_unique<TargetState>();
    return *targets_[rank];
}

TargetState *Epoch::find(int rank) const { return targets_[rank].get(); }

}  // namespace nbrma::engine
