// The window's epoch queue: opening, closing and retiring epochs in application order
// (the deferred-epoch queue), the activation rule (which epoch may start while earlier
// ones are still active: program order, epochs held open together, the reorder info
// keys), and the sweep that advances the active epochs (progress). Each kind of
// synchronization is in its own file: passive_target.cpp, active_target.cpp; RMA calls in
// rma.cpp, flushes in flush.cpp, the debug dump in window_dump.cpp.
#include "engine/window.hpp"

#include <mpi.h>

#include <algorithm>
#include <utility>

#include "check/races.hpp"
#include "common/log.hpp"

namespace nbrma::engine {

using sync::LockMode;
using transport::Region;
using transport::RemoteAddress;

Window::Window(transport::Transport &transport, const layout::ControlLayout &layout,
               WindowConfig config)
    : transport_(transport),
      layout_(layout),
      rank_(transport.rank()),
      at_once_locks_(transport),
      size_(transport.size()),
      completes_inline_(transport.capabilities().completes_inline),
      locked_accumulates_(transport.capabilities().locked_accumulates),
      flush_is_fence_(transport.capabilities().flush_is_fence),
      config_(std::move(config)),
      peer_flushes_(transport.size()),
      notify_(
          reinterpret_cast<std::uint64_t *>(static_cast<std::uint8_t *>(transport.local_control()) +
                                            layout.notifications()),
          layout.notify_capacity(),
          reinterpret_cast<std::uint64_t *>(static_cast<std::uint8_t *>(transport.local_control()) +
                                            layout::ControlLayout::notify_num)) {
    for (PeerFlush &peer : peer_flushes_) peer.in_flight_count = &transport_flushes_;
    taken_.reset(new std::atomic<std::uint64_t>[(static_cast<std::size_t>(size_) + 63) / 64]());
    notify_.on_wait([](void *window) { static_cast<Window *>(window)->queued(); }, this);
}

Window::~Window() = default;

void Window::queued() {
    if (sweep_link_.registered && !sweep_link_.listed) sweep_link_.list(this);
}

std::unique_ptr<Epoch> Window::spare_epoch() {
    if (spare_epochs_.empty())
        return std::make_unique<Epoch>(0, EpochKind::lock, size(), -1, LockMode::shared, 0);
    std::unique_ptr<Epoch> epoch = std::move(spare_epochs_.back());
    spare_epochs_.pop_back();
    return epoch;
}

std::unique_ptr<Epoch> Window::make_epoch(EpochKind kind, int target, LockMode mode,
                                          int assertions) {
    std::unique_ptr<Epoch> epoch = spare_epoch();
    begin_epoch(*epoch, kind, target, mode, assertions);
    return epoch;
}

void Window::enqueue(std::unique_ptr<Epoch> epoch) {
    if (!epochs_.empty() && epochs_.back()->opener() != epoch->opener()) several_openers_ = true;
    epochs_.push_back(std::move(epoch));
    queued();
}

Epoch &Window::open_epoch(EpochKind kind, int target, LockMode mode, int assertions) {
    enqueue(make_epoch(kind, target, mode, assertions));
    return *epochs_.back();
}

void Window::close_inner_epoch(Epoch &epoch) {
    open_.erase(std::find(open_.begin(), open_.end(), &epoch));
}

// A completed epoch leaves the queue. Only one that completed cleanly is kept for
// reuse: after a failure a lock operation may have been abandoned with a transport
// call still holding it.
void Window::retire(std::unique_ptr<Epoch> epoch) {
    constexpr std::size_t spare_capacity = 4;
    if (spare_epochs_.size() < spare_capacity && !is_error(epoch->failure()))
        spare_epochs_.push_back(std::move(epoch));
}

// A closing call (unlock, unlock_all, complete, wait): no such open epoch is an
// RMA_SYNC error; otherwise the epoch closes and `request` completes with it.
Status Window::close_open(Epoch *epoch, Request **request) {
    if (!epoch) return Status::err_sync;
    *request = Request::create();
    close_epoch(*epoch, *request);
    progress();
    return Status::ok;
}

bool Window::has_open_epoch() const {
    for (Epoch *epoch : open_)
        if (epoch->kind() != EpochKind::fence) return true;
    return false;
}

// The epoch an RMA call toward `target` belongs to (exposure epochs issue no calls).
Epoch *Window::covering_epoch(int target) const {
    for (Epoch *epoch : open_)
        if (epoch->covers(target)) return epoch;
    return nullptr;
}

std::uint64_t Window::control_word(std::size_t offset) const {
    auto *control = static_cast<std::uint8_t *>(transport_.local_control());
    return __atomic_load_n(reinterpret_cast<std::uint64_t *>(control + offset), __ATOMIC_ACQUIRE);
}

// One notice: +1 on a matching counter in `peer`'s control region. Data before notice
// (doc/design.md §4) holds without a transport fence: every notice follows the
// completion at `peer` of what it must follow. A fence barrier's round starts once the
// epochs before it completed (their targets flushed; the epoch's own calls wait for the
// barrier), a done notice once flushed_to saw the access epoch's calls complete, and a
// post's grant follows no call of ours. (A fence would cost a UCX worker fence a notice:
// a sixth of a fence epoch's instructions over UCX.)
//
// We are each such counter's one writer, so we know its value after this notice: `count`,
// the notices we sent to it, this one included. Where the transport maps it (shm), the
// notice is that count stored with release (ordering our writes before it), with no
// read-modify-write to wait for; elsewhere an atomic add through the transport (which
// rings the receiver's bell where it has one).
void Window::notify(int peer, std::size_t offset, std::uint64_t count, Notices &notices) {
    if (std::uint64_t *word = transport_.mapped_control_word(peer, offset)) {
        __atomic_store_n(word, count, __ATOMIC_RELEASE);
        return;
    }
    notices.posted(transport_.atomic(peer, transport::AtomicOp::fetch_add,
                                     RemoteAddress{Region::control, offset}, 1, 0, nullptr,
                                     &notices));
}

Status Window::attach(const void *base, std::uint64_t size) {
    return transport_.attach(base, size);
}

Status Window::detach(const void *base) { return transport_.detach(base); }

// The activation predicate (SC14 §VI-A). Called in queue order, so every earlier
// epoch is already active or completed (rule 4: no skipping). By default an epoch
// activates only after every earlier one completed (§VI-B) — except beside epochs the
// application held open at the same time (post+start, lock(0)+lock(1), a lock inside
// an exposure epoch ...). MPI itself makes those concurrent; serializing them would
// deadlock correct programs (post; start; complete; wait). Fence epochs are never
// concurrent with anything; a lock epoch admits a companion once its lock is held.
// Beyond that, the reorder info keys let an epoch pass an earlier active one.
unsigned Window::rings_awaited() const {
    if (!flushes_.empty() || transport_flushes_ != 0) return 1;
    unsigned fewest = 0;
    for (const auto &epoch : epochs_) {
        // An active fence epoch in its barrier moves only once the round's notices are in
        // (its calls run after it), each a peer's ring; one whose round is heard waits
        // for its own notices to complete (over UCX, which rings no bell).
        if (epoch->kind() == EpochKind::fence && epoch->state() == EngineState::active &&
            !epoch->barrier_passed()) {
            const unsigned missing =
                std::max(1u, fence_round_missing(epoch->barrier_round(), epoch->sequence()));
            if (fewest == 0 || missing < fewest) fewest = missing;
            continue;
        }
        // An epoch not yet active waits for earlier ones (the activation rule), not for
        // a peer: behind a fence barrier, for what that barrier awaits.
        if (epoch->state() != EngineState::active) {
            if (fewest > 0) continue;
            return 1;
        }
        if (!epoch->open()) return 1;
        for (int rank : epoch->touched()) {
            const TargetState *target = epoch->find(rank);
            if (!target->pending.empty() || target->phase == TargetPhase::acquiring ||
                target->phase == TargetPhase::releasing || target->phase == TargetPhase::flushing)
                return 1;
        }
    }
    return fewest;
}

bool Window::may_activate(const Epoch &candidate, std::size_t before) const {
    for (std::size_t i = 0; i < before; ++i) {
        const Epoch &earlier = *epochs_[i];
        if (earlier.state() == EngineState::completed) continue;
        // Epochs of two application threads have no program order between them
        // (MPI_THREAD_MULTIPLE): only what may_overlap forbids keeps them apart, even
        // from another thread's epochs that wait to activate.
        if (candidate.opener() != earlier.opener() && may_overlap(candidate, earlier)) continue;
        if (earlier.state() != EngineState::active) return false;
        if (reorder_allows(candidate, earlier)) continue;
        if (!candidate.opened_beside(earlier.id())) return false;
        if (earlier.kind() == EpochKind::fence || candidate.kind() == EpochKind::fence)
            return false;
        // A lock opened beside an earlier one waits for that one's grant, as a blocking
        // MPI_Win_lock would have (another thread's lock never gets here unless
        // may_overlap forbids the two to overlap).
        if (earlier.kind() == EpochKind::lock) {
            const TargetState *state = earlier.find(earlier.target());
            if (!state || state->phase != TargetPhase::held) return false;
        }
    }
    return true;
}

namespace {
int epoch_side(const Epoch &epoch) {  // 0 origin side, 1 target side, -1 never
    switch (epoch.kind()) {
        case EpochKind::lock:
        case EpochKind::access:
            return 0;
        case EpochKind::exposure:
            return 1;
        case EpochKind::fence:
        case EpochKind::lock_all:
            return -1;
    }
    return -1;
}
}  // namespace

// Whether two epochs may be active at once at all: never across fence or lock_all
// epochs; never two active lock epochs from us toward one target; never our window
// locked and exposed at once.
bool Window::may_overlap(const Epoch &candidate, const Epoch &earlier) const {
    if (epoch_side(candidate) < 0 || epoch_side(earlier) < 0) return false;
    const bool both_locks =
        candidate.kind() == EpochKind::lock && earlier.kind() == EpochKind::lock;
    if (both_locks && candidate.target() == earlier.target()) return false;
    auto locks_self = [this](const Epoch &epoch) {
        return epoch.kind() == EpochKind::lock && epoch.target() == rank();
    };
    return !((locks_self(candidate) && earlier.kind() == EpochKind::exposure) ||
             (locks_self(earlier) && candidate.kind() == EpochKind::exposure));
}

// SC14 §VI-B: a key lets an epoch overlap an earlier one where may_overlap allows.
bool Window::reorder_allows(const Epoch &candidate, const Epoch &earlier) const {
    if (!may_overlap(candidate, earlier)) return false;
    const int later = epoch_side(candidate), before = epoch_side(earlier);
    const Reorder key = later == 0
                            ? (before == 0 ? access_after_access : access_after_exposure)
                            : (before == 1 ? exposure_after_exposure : exposure_after_access);
    return config_.reorder[key];
}

void Window::activate(Epoch &epoch) {
    epoch.activate();
    if (verbose_level() >= 2)  // skip the varargs call in the common case
        log(2, "epoch %llu (%s) active", static_cast<unsigned long long>(epoch.id()),
            epoch_kind_name(epoch.kind()));
    switch (epoch.kind()) {
        case EpochKind::lock:
            start_target(epoch, epoch.target(), epoch.at(epoch.target()));
            return;
        case EpochKind::fence:
            // The fence barrier, a dissemination barrier over counters: our earlier epochs
            // are complete (serial activation), so round 0 tells its peers; the rounds go
            // on in advance_fence.
            if (check_) check_->fence_entered(epoch.sequence());  // before our notices leave
            if (layout_.fence_rounds() > 0) send_fence_round(epoch);
            [[fallthrough]];
        case EpochKind::lock_all:  // shared locks on demand, per target, at the first call
            for (std::size_t i = 0; i < epoch.touched().size(); ++i) {
                const int peer = epoch.touched()[i];
                TargetState *state = epoch.find(peer);
                if (state->phase == TargetPhase::none) start_target(epoch, peer, *state);
            }
            return;
        case EpochKind::access:
            // Access ids are taken at activation, so in activation order (FIFO matching).
            if (accesses_.empty()) {
                accesses_.assign(static_cast<std::size_t>(size()), 0);
                dones_sent_.assign(static_cast<std::size_t>(size()), 0);
            }
            for (int peer : epoch.group()) {
                TargetState &state = epoch.at(peer);
                if (epoch.nocheck()) {  // the matching post happened: no grant to wait for
                    state.phase = TargetPhase::held;
                    if (check_) check_->post_acquire(peer, epoch.id(), !state.pending.empty());
                } else {
                    state.match_id = ++accesses_[peer];
                    state.phase = TargetPhase::acquiring;
                }
            }
            return;
        case EpochKind::exposure:
            if (exposures_.empty()) {
                exposures_.assign(static_cast<std::size_t>(size()), 0);
                grants_sent_.assign(static_cast<std::size_t>(size()), 0);
            }
            if (check_) check_->post_release();  // before the grants
            for (int peer : epoch.group()) {
                TargetState &state = epoch.at(peer);
                state.match_id = ++exposures_[peer];
                if (epoch.nocheck()) {  // the origin will not wait for a grant
                    state.phase = TargetPhase::held;
                } else {
                    notify(peer, layout_.grant_count(rank()), ++grants_sent_[peer], state.notices);
                    state.phase = TargetPhase::acquiring;
                }
            }
            return;
    }
}

// A target first touched after activation (lock_all, fence).
void Window::start_target(Epoch &epoch, int rank, TargetState &state) {
    if (epoch.kind() == EpochKind::fence) {
        state.phase = epoch.barrier_passed() ? TargetPhase::held : TargetPhase::acquiring;
        return;
    }
    if (epoch.nocheck()) {
        state.phase = TargetPhase::held;
        return;
    }
    state.phase = TargetPhase::acquiring;
    if (epoch.kind() == EpochKind::lock && polite_locks()) {
        state.polling = true;
        state.polls = 0;
        return;
    }
    state.operation.acquire(transport_, layout_, rank, epoch.mode());
}

bool Window::advance(Epoch &epoch) {
    switch (epoch.kind()) {
        case EpochKind::lock:
        case EpochKind::lock_all:
            return advance_passive(epoch);
        case EpochKind::fence:
            return advance_fence(epoch);
        case EpochKind::access:
            return advance_access(epoch);
        case EpochKind::exposure:
            return advance_exposure(epoch);
    }
    return false;
}

// The progress() of an opening call: counts the epoch it opened (id; 0: none) as deferred
// when it could not activate at once. An open epoch never completes, so it is still queued
// (the last one: later ones are not opened yet) unless a fence closed it at once.
void Window::progress_opened(std::uint64_t id) {
    progress();
    if (id != 0 && !epochs_.empty() && epochs_.back()->id() == id &&
        epochs_.back()->state() == EngineState::deferred)
        ++counters().epochs_deferred;
}

bool Window::progress() {
    bool moved = transport_.poll() > 0;
    if (notify_.pending() && notify_.check()) {
        moved = true;
        if (check_) check_->notified();  // a threshold request completed
    }
    if (idle()) return moved;  // a pinned window (SweepLink), or one a sweep will drop
    for (bool again = true; again;) {
        again = false;
        // With one epoch queued, one pass is enough: each advance takes its epoch as
        // far as it can go, and only another epoch's move could enable more.
        const bool single = epochs_.size() <= 1;
        std::size_t index = 0;
        for (auto it = epochs_.begin(); it != epochs_.end(); ++it, ++index) {
            Epoch &epoch = **it;
            if (epoch.state() == EngineState::deferred) {
                // Rule 4: no skipping, within one thread's epochs. Another thread's
                // later epoch may still activate (may_activate decides).
                if (!may_activate(epoch, index)) {
                    if (several_openers_) continue;
                    break;
                }
                activate(epoch);
                again = true;
            }
            if (epoch.state() == EngineState::active && advance(epoch)) again = true;
        }
        // Completed epochs leave the queue (anywhere among the active ones: epochs
        // held open together may complete out of order), which may let deferred
        // ones activate. Activation never skips within a thread, so with one opener
        // the epochs that ran form a prefix of the queue: stop at the first deferred
        // one (O(active), not O(pending) — thousands of epochs may be queued).
        for (auto it = epochs_.begin();
             it != epochs_.end() &&
             (several_openers_ || (*it)->state() != EngineState::deferred);) {
            if ((*it)->state() == EngineState::completed) {
                if (it == epochs_.begin()) {  // the usual case: far cheaper than erase
                    retire_front();
                    it = epochs_.begin();
                } else {
                    retire(std::move(*it));
                    it = epochs_.erase(it);
                }
                again = true;
            } else {
                ++it;
            }
        }
        moved |= again;
        if (single) break;
    }
    for (auto it = flushes_.begin(); it != flushes_.end();) {
        if (flush_done(*it)) {
            flush_finished(*it);
            it->request->finish(it->failure);
            it = flushes_.erase(it);
            moved = true;
        } else {
            ++it;
        }
    }
    return moved;
}

}  // namespace nbrma::engine
