// Epoch objects and their explicit state machine (SC14 §VI).
//
// Application lifetime: open ──(close call)──> closed.
// Engine lifetime:      deferred ──(activation rule holds)──> active ──(completion
//                       conditions hold, completion notices sent)──> completed.
// The two are independent: a closed epoch may still be deferred (its calls are
// recorded and replayed on activation), an open one may be active.
//
// Passive-target epochs keep one TargetState per target they touch. A target's
// lock goes none → acquiring → held → releasing → released (MPI_MODE_NOCHECK:
// none → held → released, no lock traffic).
#ifndef NBRMA_ENGINE_EPOCH_HPP
#define NBRMA_ENGINE_EPOCH_HPP

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/operation.hpp"
#include "engine/request.hpp"
#include "sync/lock_protocol.hpp"

namespace nbrma::engine {

enum class EpochKind : std::uint8_t { lock, lock_all };
enum class EngineState : std::uint8_t { deferred, active, completed };
enum class TargetLock : std::uint8_t { none, acquiring, held, releasing, released };

const char *epoch_kind_name(EpochKind kind);
const char *engine_state_name(EngineState state);

struct TargetState {
    TargetLock lock = TargetLock::none;
    sync::LockOperation operation;
    // Calls toward this target not yet executed, in issue (age) order.
    std::deque<std::unique_ptr<Operation>> pending;
};

class Epoch {
  public:
    Epoch(std::uint64_t id, EpochKind kind, int nranks, int target, sync::LockMode mode,
          bool nocheck);
    ~Epoch();

    std::uint64_t id() const { return id_; }
    EpochKind kind() const { return kind_; }
    int target() const { return target_; }  // lock epochs only
    sync::LockMode mode() const { return mode_; }
    bool nocheck() const { return nocheck_; }

    bool open() const { return open_; }
    EngineState state() const { return state_; }
    Status failure() const { return failure_; }

    // Application side.
    void close(Request *request);  // takes the engine's reference of `request`
    // Engine side.
    void activate() { state_ = EngineState::active; }
    void complete();
    void fail(Status status) {
        if (!is_error(failure_)) failure_ = status;
    }

    bool covers(int rank) const { return kind_ == EpochKind::lock_all || rank == target_; }
    TargetState &at(int rank);                 // created on first use
    TargetState *find(int rank) const;         // null if never touched
    const std::vector<std::unique_ptr<TargetState>> &targets() const { return targets_; }

  private:
    std::uint64_t id_;
    EpochKind kind_;
    int target_;
    sync::LockMode mode_;
    bool nocheck_;
    bool open_ = true;
    EngineState state_ = EngineState::deferred;
    Status failure_ = Status::ok;
    Request *close_request_ = nullptr;
    std::vector<std::unique_ptr<TargetState>> targets_;  // by rank
};

}  // namespace nbrma::engine

#endif
