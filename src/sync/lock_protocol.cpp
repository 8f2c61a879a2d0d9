// The FIFO reader/writer lock protocol; see lock_protocol.hpp for the algorithm
// and lock_word.hpp for the word's invariants.
#include "sync/lock_protocol.hpp"

#include <atomic>
#include <cstdio>

namespace nbrma::sync {

using transport::AtomicOp;
using transport::Region;
using transport::RemoteAddress;

namespace {
std::atomic<int> doorway_failures{2};
}  // namespace

int LockOperation::doorway_after() { return doorway_failures.load(std::memory_order_relaxed); }

void LockOperation::set_doorway_after(int failures) {
    doorway_failures.store(failures < 0 ? 0 : failures, std::memory_order_relaxed);
}

void LockOperation::begin(transport::Transport &transport, const ControlLayout &layout,
                          int target, LockMode mode, Phase phase) {
    transport_ = &transport;
    layout_ = &layout;
    target_ = target;
    me_ = transport.rank();
    mode_ = mode;
    failure_ = Status::ok;
    cas_posted_ = false;
    failures_ = 0;
    in_door_ = false;
    phase_ = phase;
}

void LockOperation::acquire(transport::Transport &transport, const ControlLayout &layout,
                            int target, LockMode mode) {
    begin(transport, layout, target, mode, Phase::acquire_cas);
    enqueued_ = false;
    linked_ = -1;
    cas_expected_ = 0;  // guess: the lock is free
}

void LockOperation::release(transport::Transport &transport, const ControlLayout &layout,
                            int target, LockMode mode) {
    begin(transport, layout, target, mode, Phase::release_cas);
    readers_ = 0;
    successor_ = -1;
    LockWord guess;  // guess: nobody queued behind us
    if (mode == LockMode::exclusive)
        guess.tail = static_cast<std::uint32_t>(me_ + 1);
    else
        guess.active = 1;
    cas_expected_ = guess.encode();
}

void LockOperation::describe(char *out, std::size_t size) const {
    static const char *const names[] = {
        "idle",           "acquire_cas",     "publish_head", "wait_grant",
        "release_cas",    "drain_head",      "clear_head",   "wait_successor",
        "register_reader", "wait_readers",   "walk_readers", "door_join",
        "door_wait",      "door_leave",      "door_pass",    "finished"};
    std::snprintf(out, size,
                  "%s pending=%d cas=%#llx/%#llx failures=%d door=%d readers=%u successor=%d "
                  "linked=%d woken=%u",
                  names[static_cast<int>(phase_)], pending_,
                  static_cast<unsigned long long>(cas_expected_),
                  static_cast<unsigned long long>(cas_result_), failures_, in_door_ ? 1 : 0,
                  readers_, successor_, linked_, woken_);
}

void LockOperation::on_complete(Status status) {
    --pending_;
    if (is_error(status) && !is_error(failure_)) failure_ = status;
}

Status LockOperation::advance() {
    for (;;) {
        if (is_error(failure_)) return failure_;
        if (pending_ > 0) return Status::in_progress;
        if (phase_ == Phase::finished) return Status::ok;
        if (phase_ == Phase::idle) return Status::err_other;
        Status status = step();
        if (status != Status::ok) return status;
    }
}

// One atomic on a word of peer's control region, counted in pending_ while in flight.
Status LockOperation::post_atomic(int peer, AtomicOp op, std::size_t offset, std::uint64_t operand,
                                  std::uint64_t compare, std::uint64_t *result) {
    Status status = transport_->atomic(peer, op, RemoteAddress{Region::control, offset}, operand,
                                       compare, result, this);
    if (status == Status::in_progress) ++pending_;
    return is_error(status) ? status : Status::ok;
}

Status LockOperation::post_cas(std::uint64_t desired) {
    cas_posted_ = true;
    return post_atomic(target_, AtomicOp::compare_swap, ControlLayout::lock_word, desired,
                       cas_expected_, &cas_result_);
}

Status LockOperation::post_put(int peer, std::size_t offset, const void *source,
                               std::size_t length) {
    Status status =
        transport_->put(peer, source, length, RemoteAddress{Region::control, offset}, this);
    if (status == Status::in_progress) ++pending_;
    return is_error(status) ? status : Status::ok;
}

std::uint64_t LockOperation::load_local(std::size_t offset) const {
    auto *word = reinterpret_cast<std::uint64_t *>(
        static_cast<std::uint8_t *>(transport_->local_control()) + offset);
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

void LockOperation::store_local(std::size_t offset, std::uint64_t value) {
    auto *word = reinterpret_cast<std::uint64_t *>(
        static_cast<std::uint8_t *>(transport_->local_control()) + offset);
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

Status LockOperation::grant(int rank) {
    return post_put(rank, layout_->node_grant(target_), &grant_value_, sizeof grant_value_);
}

// A fetching atomic on the target's head_rank word (fetching, so that it completes only
// once performed there), its result in head_result_.
Status LockOperation::post_head_atomic(AtomicOp op, std::uint64_t operand,
                                       std::uint64_t compare) {
    return post_atomic(target_, op, ControlLayout::head_rank, operand, compare, &head_result_);
}

Status LockOperation::read_below(int rank) {
    reader_ = rank;
    link_result_ = 0;
    Status status = transport_->get(rank, &link_result_, sizeof link_result_,
                                    RemoteAddress{Region::control, layout_->node_below(target_)},
                                    this);
    if (status == Status::in_progress) ++pending_;
    return is_error(status) ? status : Status::ok;
}

// acquire_cas, release_cas: the lock word's compare-and-swap, retried with what it found
// (after too many failures through the doorway).
Status LockOperation::cas_step() {
    switch (phase_) {
        case Phase::acquire_cas:
        case Phase::release_cas: {
            if (cas_posted_) {
                cas_posted_ = false;
                if (cas_result_ == cas_expected_) return cas_over(true);
                cas_expected_ = cas_result_;  // lost a race or guessed wrong: retry
                const int door_after = doorway_after();
                if (!in_door_ && door_after > 0 && ++failures_ >= door_after) return join_door();
            }
            LockWord old = LockWord::decode(cas_expected_);
            LockWord next = old;
            if (phase_ == Phase::acquire_cas) {
                if (mode_ == LockMode::exclusive) {
                    next.tail = static_cast<std::uint32_t>(me_ + 1);
                    if (old.tail == 0) {
                        if (old.active > 0) next.head = true;
                    } else {
                        next.waiting = 0;  // those readers now wait for the old tail
                    }
                } else if (old.tail == 0) {
                    next.active += 1;
                } else {
                    next.waiting += 1;
                }
            } else if (mode_ == LockMode::exclusive) {
                if (old.tail != static_cast<std::uint32_t>(me_ + 1))
                    return cas_over(false);  // a successor is linking to us
                next.tail = 0;
                next.active += old.waiting;
                next.waiting = 0;
            } else {
                next.active -= 1;
                if (old.active == 1) next.head = false;  // we grant it below
            }
            return post_cas(next.encode());
        }
        default:
            return Status::err_other;
    }
}

// wait_successor, wait_readers, walk_readers: an exclusive holder hands the lock on to
// its successor, or first to the readers queued between them.
Status LockOperation::queue_step() {
    switch (phase_) {
        case Phase::wait_successor: {
            std::uint64_t next = load_local(layout_->node_next(target_));
            if (next == 0) return Status::in_progress;
            store_local(layout_->node_next(target_), 0);
            successor_ = LockNext::rank(next);
            readers_ = LockNext::readers(next);
            if (readers_ == 0) {
                phase_ = Phase::finished;
                return grant(successor_);
            }
            // The readers queued between us go first; the successor waits as head. The add
            // fetches (its result is unused) so that it completes only once performed at
            // the target: a transport may complete a non-fetching atomic when it leaves
            // (UCX), and a reader we then grant over a faster path (shared memory) could
            // release before its count arrived: active would underflow and the head never
            // be granted (LockProtocolRandom.EarlyLocalCompletion).
            // The successor's rank goes to the head_rank word first, where the last of
            // those readers will find it: we grant them only once both are performed.
            LockWord add;
            add.active = readers_;
            add.head = true;
            phase_ = Phase::wait_readers;
            Status status = post_head_atomic(AtomicOp::swap,
                                             static_cast<std::uint64_t>(successor_ + 1), 0);
            if (is_error(status)) return status;
            return post_atomic(target_, AtomicOp::fetch_add, ControlLayout::lock_word,
                               add.encode(), 0, &add_result_);
        }
        case Phase::wait_readers: {
            if (load_local(layout_->node_count(target_)) < readers_) return Status::in_progress;
            // Every reader pushed itself before counting, and no other reader comes to
            // this node before our next exclusive request: the stack is whole and ours.
            store_local(layout_->node_count(target_), 0);
            const std::uint64_t top = load_local(layout_->node_top(target_));
            store_local(layout_->node_top(target_), 0);
            if (top == 0) return Status::err_other;
            woken_ = 0;
            phase_ = Phase::walk_readers;
            return read_below(static_cast<int>(top) - 1);
        }
        case Phase::walk_readers: {
            // reader_'s below has arrived: grant it (it clears below when it sees the
            // grant, so never before the read), and read the next one's meanwhile.
            const std::uint64_t below = link_result_;
            if (below == 0) return Status::err_other;  // a reader counted before recording
            Status status = grant(reader_);
            if (is_error(status)) return status;
            if (++woken_ == readers_) {
                phase_ = Phase::finished;
                return Status::ok;
            }
            if (below == 1) return Status::err_other;  // fewer on the stack than counted
            return read_below(static_cast<int>(below - 1) - 1);
        }
        default:
            return Status::err_other;
    }
}

// publish_head, drain_head, clear_head: the head_rank word, through which the last of
// the shared holders and the waiting exclusive head find each other.
Status LockOperation::head_step() {
    switch (phase_) {
        case Phase::publish_head: {
            // Our rank is in head_rank now. Found drained: the last shared holder left
            // before, the lock is ours, and we clear the word; else it will grant us.
            if (head_result_ != HeadRank::drained) {
                phase_ = Phase::wait_grant;
                return Status::ok;
            }
            head_grant_ = -1;
            phase_ = Phase::clear_head;
            return post_head_atomic(AtomicOp::swap, 0, 0);
        }
        case Phase::drain_head: {
            // Marked drained: the head will find it. Else we found its rank: clear the
            // word (performed before our grant lets it run on and release, so a later
            // head's rank is never wiped), then grant it.
            if (head_result_ == 0) {
                phase_ = Phase::finished;
                return Status::ok;
            }
            head_grant_ = static_cast<int>(head_result_) - 1;
            phase_ = Phase::clear_head;
            return post_head_atomic(AtomicOp::swap, 0, 0);
        }
        case Phase::clear_head: {
            phase_ = Phase::finished;
            return head_grant_ >= 0 ? grant(head_grant_) : Status::ok;
        }
        default:
            return Status::err_other;
    }
}

// door_join, door_wait, door_leave, door_pass: the doorway, a queue for origins whose
// compare-and-swap keeps losing.
Status LockOperation::door_step() {
    switch (phase_) {
        case Phase::door_join: {
            // Found the doorway empty: ours, retry at once. Else link behind the one found.
            if (door_result_ == 0) {
                phase_ = door_for_;
                return Status::ok;
            }
            phase_ = Phase::door_wait;
            door_record_ = static_cast<std::uint64_t>(me_ + 1);
            return post_put(static_cast<int>(door_result_) - 1, layout_->node_door_next(target_),
                            &door_record_, sizeof door_record_);
        }
        case Phase::door_wait: {
            if (load_local(layout_->node_grant(target_)) == 0) return Status::in_progress;
            store_local(layout_->node_grant(target_), 0);
            phase_ = door_for_;
            return Status::ok;
        }
        case Phase::door_leave: {
            // Still the doorway's tail: it is empty now. Else someone is linking behind us.
            if (door_result_ == static_cast<std::uint64_t>(me_ + 1)) {
                phase_ = door_for_;
                return after_cas();
            }
            phase_ = Phase::door_pass;
            return Status::ok;
        }
        case Phase::door_pass: {
            const std::uint64_t next = load_local(layout_->node_door_next(target_));
            if (next == 0) return Status::in_progress;
            store_local(layout_->node_door_next(target_), 0);
            phase_ = door_for_;
            Status status = grant(static_cast<int>(next) - 1);
            if (is_error(status)) return status;
            return after_cas();
        }
        default:
            return Status::err_other;
    }
}
Status LockOperation::step() {
    switch (phase_) {
        case Phase::acquire_cas:
        case Phase::release_cas:
            return cas_step();
        case Phase::wait_grant: {
            if (load_local(layout_->node_grant(target_)) == 0) return Status::in_progress;
            store_local(layout_->node_grant(target_), 0);
            if (linked_ >= 0) store_local(layout_->node_below(target_), 0);
            phase_ = Phase::finished;
            return Status::ok;
        }
        case Phase::wait_successor:
            return queue_step();
        case Phase::publish_head:
        case Phase::drain_head:
        case Phase::clear_head:
            return head_step();
        case Phase::register_reader: {
            // Our swap put us on top of the exclusive's stack; what was there is below us.
            // Recorded before we count ourselves, so the exclusive, which walks only once
            // every reader counted, always finds it.
            store_local(layout_->node_below(target_), link_result_ + 1);
            phase_ = Phase::wait_grant;
            return post_atomic(linked_, AtomicOp::fetch_add, layout_->node_count(target_), 1, 0,
                               nullptr);
        }
        case Phase::wait_readers:
        case Phase::walk_readers:
            return queue_step();
        case Phase::door_join:
        case Phase::door_wait:
        case Phase::door_leave:
        case Phase::door_pass:
            return door_step();
        case Phase::idle:
        case Phase::finished:
            break;
    }
    return Status::err_other;
}

// Our CAS of the lock word keeps failing: queue in the target's doorway.
Status LockOperation::join_door() {
    in_door_ = true;
    door_for_ = phase_;
    phase_ = Phase::door_join;
    return post_atomic(target_, AtomicOp::swap, ControlLayout::door_tail,
                       static_cast<std::uint64_t>(me_ + 1), 0, &door_result_);
}

// The CAS phase is over (swapped: our CAS took, the word it replaced in cas_expected_;
// else an exclusive release found a successor). Leave the doorway first if we are in it.
Status LockOperation::cas_over(bool swapped) {
    cas_swapped_ = swapped;
    if (swapped && phase_ == Phase::acquire_cas) enqueued_ = true;  // our place is fixed
    if (!in_door_) return after_cas();
    in_door_ = false;
    door_for_ = phase_;
    phase_ = Phase::door_leave;
    return post_atomic(target_, AtomicOp::compare_swap, ControlLayout::door_tail, 0,
                       static_cast<std::uint64_t>(me_ + 1), &door_result_);
}

Status LockOperation::after_cas() {
    if (!cas_swapped_) {
        phase_ = Phase::wait_successor;
        return Status::ok;
    }
    const LockWord old = LockWord::decode(cas_expected_);
    return phase_ == Phase::acquire_cas ? after_acquire_cas(old) : after_release_cas(old);
}

Status LockOperation::after_acquire_cas(LockWord old) {
    enqueued_ = true;
    phase_ = Phase::wait_grant;
    if (old.tail == 0) {
        // Shared: no exclusive requester at all. Exclusive: granted unless readers hold it
        // (then we are head: we leave our rank for the last reader out, who grants us).
        if (mode_ == LockMode::shared || old.active == 0) {
            phase_ = Phase::finished;
            return Status::ok;
        }
        phase_ = Phase::publish_head;
        return post_head_atomic(AtomicOp::swap, static_cast<std::uint64_t>(me_ + 1), 0);
    }
    int tail = static_cast<int>(old.tail) - 1;
    if (mode_ == LockMode::exclusive) {
        next_record_ = LockNext::encode(me_, old.waiting);
        return post_put(tail, layout_->node_next(target_), &next_record_, sizeof next_record_);
    }
    linked_ = tail;
    phase_ = Phase::register_reader;
    return post_atomic(tail, AtomicOp::swap, layout_->node_top(target_),
                       static_cast<std::uint64_t>(me_ + 1), 0, &link_result_);
}

Status LockOperation::after_release_cas(LockWord old) {
    if (mode_ == LockMode::shared) {
        phase_ = Phase::finished;
        if (old.active == 1 && old.head) {
            phase_ = Phase::drain_head;
            return post_head_atomic(AtomicOp::compare_swap, HeadRank::drained, 0);
        }
        return Status::ok;
    }
    readers_ = old.waiting;
    phase_ = readers_ > 0 ? Phase::wait_readers : Phase::finished;
    return Status::ok;
}

namespace {

// A few CAS rounds against other holders coming and going; past them, the queue.
constexpr int at_once_attempts = 4;

// One inline compare-and-swap of the target's lock word: on `word` where the transport
// maps it (mapped_control_word, remembered by AtOnceLocks), else by the transport (it swapped
// iff *seen, the word found, is `expected`); false if the transport did not complete it.
inline bool cas_word(transport::Transport &transport, std::uint64_t *word, int target,
                     std::uint64_t expected, std::uint64_t desired, std::uint64_t *seen) {
    *seen = expected;
    if (word) {
        __atomic_compare_exchange_n(word, seen, desired, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return true;
    }
    return transport.atomic(target, AtomicOp::compare_swap,
                            RemoteAddress{Region::control, ControlLayout::lock_word}, desired,
                            expected, seen, nullptr) == Status::ok;
}

// The word our hold alone makes: exclusive, our rank + 1 as the tail; shared, one reader.
std::uint64_t held_alone(int rank, LockMode mode) {
    LockWord held;
    if (mode == LockMode::exclusive)
        held.tail = static_cast<std::uint32_t>(rank + 1);
    else
        held.active = 1;
    return held.encode();
}

// acquire past its first guess (the word free): `expected`, the word found.
bool acquire_contended(transport::Transport &transport, std::uint64_t *word, int target,
                       LockMode mode, std::uint64_t expected) {
    for (int attempt = 1; attempt < at_once_attempts; ++attempt) {
        LockWord old = LockWord::decode(expected);
        if (old.tail != 0) return false;  // an exclusive holder or requester: queue behind
        LockWord next = old;
        if (mode == LockMode::exclusive) {
            if (old.active != 0) return false;  // we would wait as head
            next.tail = static_cast<std::uint32_t>(transport.rank() + 1);
        } else {
            next.active += 1;
        }
        std::uint64_t seen = 0;
        if (!cas_word(transport, word, target, expected, next.encode(), &seen)) return false;
        if (seen == expected) return true;
        expected = seen;
    }
    return false;
}

// release of a shared hold past its first guess (we the only reader): `expected`,
// the word found.
bool release_shared_contended(transport::Transport &transport, std::uint64_t *word, int target,
                              std::uint64_t expected) {
    for (int attempt = 1; attempt < at_once_attempts; ++attempt) {
        LockWord old = LockWord::decode(expected);
        if (old.active == 0) return false;                    // not a shared holder's word
        if (old.active == 1 && old.head != 0) return false;  // we would grant the head
        LockWord next = old;
        next.active -= 1;
        std::uint64_t seen = 0;
        if (!cas_word(transport, word, target, expected, next.encode(), &seen)) return false;
        if (seen == expected) return true;
        expected = seen;
    }
    return false;
}

}  // namespace

AtOnceLocks::AtOnceLocks(transport::Transport &transport)
    : transport_(transport),
      alone_exclusive_(held_alone(transport.rank(), LockMode::exclusive)),
      alone_shared_(held_alone(transport.rank(), LockMode::shared)) {}

bool AtOnceLocks::acquire_rest(std::uint64_t *word, int target, LockMode mode, std::uint64_t seen) {
    if (!word) {
        if (!cas_word(transport_, nullptr, target, 0, alone(mode), &seen)) return false;
        if (seen == 0) return true;
    }
    return acquire_contended(transport_, word, target, mode, seen);
}

bool AtOnceLocks::release_rest(std::uint64_t *word, int target, LockMode mode, std::uint64_t seen) {
    if (!word) {
        if (!cas_word(transport_, nullptr, target, alone(mode), 0, &seen)) return false;
        if (seen == alone(mode)) return true;
    }
    return mode == LockMode::shared && release_shared_contended(transport_, word, target, seen);
}

}  // namespace nbrma::sync
