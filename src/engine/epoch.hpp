// Epoch objects and their explicit state machine (SC14 §VI).
//
// Application lifetime: open ──(close call)──> closed.
// Engine lifetime:      deferred ──(activation rule holds)──> active ──(completion
//                       conditions hold, completion notices sent)──> completed.
// The two are independent: a closed epoch may still be deferred (its calls are
// recorded and replayed on activation), an open one may be active.
//
// An epoch keeps one TargetState per peer it deals with, whose phase says whether
// the epoch may touch that peer yet:
//   lock / lock_all  none → acquiring (lock requested) → held → flushing → releasing
//                    → released (MPI_MODE_NOCHECK: none → held → flushing → released,
//                    no lock traffic)
//   access (start)   acquiring (waiting for the target's grant, g >= A) → held →
//                    flushing → releasing (done notice in flight) → released
//   exposure (post)  acquiring (grant in flight) → held (waiting for the origin's
//                    done count, d >= E) → released
//   fence            acquiring (waiting for the fence barrier) → held; once the epoch
//                    is closed with nothing left to run: flushing → released
// `flushing`: the epoch is closed and its calls toward the target ran (completed
// locally); a transport flush makes sure they also completed at the target before the
// lock is released, the done notice leaves, or the fence epoch completes (MPI's remote
// completion at unlock, complete and fence).
#ifndef NBRMA_ENGINE_EPOCH_HPP
#define NBRMA_ENGINE_EPOCH_HPP

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/log.hpp"
#include "engine/operation.hpp"
#include "engine/request.hpp"
#include "sync/lock_protocol.hpp"
#include "transport/transport.hpp"

namespace nbrma::engine {

enum class EpochKind : std::uint8_t { lock, lock_all, fence, access, exposure };
enum class EngineState : std::uint8_t { deferred, active, completed };
enum class TargetPhase : std::uint8_t { none, acquiring, held, flushing, releasing, released };
// How an epoch runs, chosen when it opens (Window::open_passive):
//   at_once  a lock or lock_all epoch whose opening call could activate it and take its
//            lock at once (lock_all: each target's at the first call toward it), over a
//            transport that completes every call inline. Its calls run in the caller,
//            its flushes and its closing call complete in the caller, and it never
//            waits in the window's queue, so the window stays idle (no sweeps).
//   queued   every other epoch: in the window's queue, moved on by sweeps.
// An at-once epoch whose work cannot finish in the caller (a lock to hand over at its
// release, a lock_all target not free at once, a failed call to report) joins the queue
// as it is, in its place by id, and is queued from then on.
enum class EpochPath : std::uint8_t { queued, at_once };

const char *epoch_kind_name(EpochKind kind);
const char *engine_state_name(EngineState state);
const char *epoch_path_name(EpochPath path);

// Counts the one-sided notices (grants, done counts, fence arrivals) an epoch has
// posted and not yet seen complete. An epoch never completes with notices in flight.
struct Notices final : transport::Completion {
    int outstanding = 0;
    Status failure = Status::ok;
    // Accounts for the status a transport call returned.
    void posted(Status status) {
        if (status == Status::in_progress)
            ++outstanding;
        else if (is_error(status))
            failure = status;
    }
    bool done() const { return outstanding == 0; }
    void on_complete(Status status) override {
        --outstanding;
        if (is_error(status)) failure = status;
    }
};

struct TargetState {
    // The epoch (its id) that touched it: an epoch reused under a new id keeps its target
    // states in place, and those of earlier uses read as untouched (Epoch::find).
    std::uint64_t epoch = 0;
    TargetPhase phase = TargetPhase::none;
    sync::LockOperation operation;  // lock epochs
    std::uint64_t match_id = 0;     // access id A (access) or exposure id E (exposure)
    Notices notices;                // grant (exposure) or done notice (access)
    std::uint64_t flush_upto = 0;   // flushing: the window's run count when it began
    // acquiring a lock without joining the target's queue yet: a one-CAS attempt each
    // sweep (Window::start_target, polite locks), `polls` of them so far
    bool polling = false;
    std::uint16_t polls = 0;
    // Calls toward this target not yet executed, in issue (age) order.
    std::deque<std::unique_ptr<Operation>> pending;

    // As if newly made (but for `epoch`), keeping the queue's storage (a reused epoch's
    // target).
    void reset() {
        phase = TargetPhase::none;
        // operation: acquire() and release() set up everything they use
        match_id = 0;
        notices.outstanding = 0;
        notices.failure = Status::ok;
        flush_upto = 0;
        polling = false;
        polls = 0;
        if (!pending.empty()) clear_pending();  // a completed epoch ran all its calls
    }
    void clear_pending();
};

class Epoch {
  public:
    // target: lock epochs; group: access/exposure epochs (window ranks); sequence:
    // the fence number of fence epochs.
    Epoch(std::uint64_t id, EpochKind kind, int nranks, int target, sync::LockMode mode,
          int assertions);
    ~Epoch();
    // A completed epoch made new again (same number of ranks), keeping its storage:
    // the window reuses a few rather than allocate an epoch and its targets each time.
    [[gnu::always_inline]] void reset(std::uint64_t id, EpochKind kind, int target,
                                      sync::LockMode mode, int assertions) {
        // The target states stay where they are; the new id makes them untouched (find()).
        // A lock epoch made a lock epoch again keeps its one state touched, made new (every
        // lock epoch touches its target when it activates).
        if (kind_ == EpochKind::lock && kind == EpochKind::lock && !touched_.empty()) {
            one_->reset();
            one_->epoch = id;
            touched_.front() = target;
        } else {
            touched_.clear();
        }
        id_ = id;
        kind_ = kind;
        target_ = target;
        mode_ = mode;
        assert_ = assertions;
        open_ = true;
        barrier_passed_ = false;
        state_ = EngineState::deferred;
        path_ = EpochPath::queued;
        failure_ = Status::ok;
        calls_ = 0;
        // (A completed epoch has handed both its requests back: they are null.)
        beside_.clear();
        if (!passive()) {  // what only active-target epochs read
            barrier_follows_ = false;
            barrier_round_ = 0;
            sequence_ = 0;
            barrier_notices_ = Notices();
            group_.clear();
            member_.clear();
        }
    }

    std::uint64_t id() const { return id_; }
    EpochKind kind() const { return kind_; }
    int target() const { return target_; }  // lock epochs only
    sync::LockMode mode() const { return mode_; }
    bool nocheck() const { return (assert_ & MPI_MODE_NOCHECK) != 0; }
    bool passive() const { return kind_ == EpochKind::lock || kind_ == EpochKind::lock_all; }
    EpochPath path() const { return path_; }
    void set_path(EpochPath path) { path_ = path; }

    void set_group(const std::vector<int> &group);
    const std::vector<int> &group() const { return group_; }
    bool in_group(int rank) const {
        return rank >= 0 && rank < static_cast<int>(member_.size()) && member_[rank];
    }
    void set_sequence(std::uint64_t sequence) { sequence_ = sequence; }
    std::uint64_t sequence() const { return sequence_; }

    // Epochs still open at application level when this one was opened: MPI lets the
    // application hold them together (post+start, lock+lock, ...), so this epoch may
    // activate beside them rather than after them.
    void add_beside(std::uint64_t id) { beside_.push_back(id); }
    bool opened_beside(std::uint64_t id) const;
    // The application thread that opened it (threads::thread_tag; 0 while locking is
    // off). Only one thread's own epochs have a program order between them.
    void set_opener(unsigned tag) { opener_ = tag; }
    unsigned opener() const { return opener_; }

    bool open() const { return open_; }
    EngineState state() const { return state_; }
    Status failure() const { return failure_; }
    std::uint64_t calls() const { return calls_; }
    void count_call() { ++calls_; }

    // Application side. close() takes the engine's reference of `request` (may be
    // null); on_active() hands a request that completes at activation (fence).
    void close(Request *request) {
        open_ = false;
        close_request_ = request;
    }
    void on_active(Request *request) { active_request_ = request; }
    bool has_requests() const { return active_request_ || close_request_; }
    // Engine side.
    void activate() {
        state_ = EngineState::active;
        if (kind_ != EpochKind::fence) pass_barrier();
    }
    void complete() {
        state_ = EngineState::completed;
        ++counters().epochs_completed;
        if (active_request_ || close_request_ || verbose_level() >= 2) finish_requests();
    }
    void fail(Status status) {
        if (!is_error(failure_)) failure_ = status;
    }
    // The fence barrier, a dissemination barrier (Window::send_fence_round):
    // `barrier_round` is the round whose notices we await.
    Notices &barrier_notices() { return barrier_notices_; }
    int barrier_round() const { return barrier_round_; }
    void next_barrier_round() { ++barrier_round_; }
    bool barrier_passed() const { return barrier_passed_; }
    // A fence epoch closed by a fence that opens a barrier (Window::ordered_by_barrier).
    void set_barrier_follows() { barrier_follows_ = true; }
    bool barrier_follows() const { return barrier_follows_; }
    void pass_barrier() {
        barrier_passed_ = true;
        if (active_request_) finish_active_request();
    }

    bool covers(int rank) const;
    // created on first use
    [[gnu::always_inline]] TargetState &at(int rank) {
        std::unique_ptr<TargetState> &state = slot(rank);
        if (state && state->epoch == id_) return *state;
        return touch(state, rank);
    }
    // at(rank) where find(rank) is null: its state first touched now.
    TargetState &first_touch(int rank) { return touch(slot(rank), rank); }
    // null if never touched
    TargetState *find(int rank) const {
        const TargetState *state = kind_ == EpochKind::lock
                                       ? (rank == target_ ? one_.get() : nullptr)
                                       : (targets_.empty() ? nullptr : targets_[rank].get());
        return state && state->epoch == id_ ? const_cast<TargetState *>(state) : nullptr;
    }
    // The ranks with a TargetState, in the order first touched: what sweeps walk, so an
    // epoch that deals with few of many ranks costs little per sweep.
    const std::vector<int> &touched() const { return touched_; }

  private:
    // A lock epoch deals with its one target; the others get a table by rank the first
    // time they touch one (kept when the epoch is reused).
    [[gnu::always_inline]] std::unique_ptr<TargetState> &slot(int rank) {
        if (kind_ == EpochKind::lock) return one_;
        if (targets_.empty()) make_targets();
        return targets_[rank];
    }
    void make_targets();
    // `rank`'s state (in `state`, its slot) made this epoch's, first touched now.
    TargetState &touch(std::unique_ptr<TargetState> &state, int rank);
    void finish_active_request();
    void finish_requests();

    std::uint64_t id_;
    EpochKind kind_;
    int target_;
    sync::LockMode mode_;
    int assert_;
    bool open_ = true;
    bool barrier_passed_ = false;
    bool barrier_follows_ = false;
    int barrier_round_ = 0;
    EngineState state_ = EngineState::deferred;
    EpochPath path_ = EpochPath::queued;
    Status failure_ = Status::ok;
    std::uint64_t calls_ = 0;
    std::uint64_t sequence_ = 0;
    Request *close_request_ = nullptr;
    Request *active_request_ = nullptr;
    Notices barrier_notices_;
    std::vector<int> group_;
    std::vector<char> member_;  // by rank
    std::vector<std::uint64_t> beside_;
    unsigned opener_ = 0;
    int nranks_;
    std::unique_ptr<TargetState> one_;                   // lock epochs: the target's
    std::vector<std::unique_ptr<TargetState>> targets_;  // the others: by rank, or empty
    std::vector<int> touched_;
};

}  // namespace nbrma::engine

#endif
