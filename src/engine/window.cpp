#include "engine/window.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "common/threads.hpp"
#include "engine/interrupt.hpp"
#include "engine/progress.hpp"
#include "engine/reduce.hpp"

namespace nbrma::engine {

using sync::LockMode;
using transport::Region;
using transport::RemoteAddress;

Window::Window(transport::Transport &transport, const sync::ControlLayout &layout,
               WindowConfig config)
    : transport_(transport),
      layout_(layout),
      rank_(transport.rank()),
      size_(transport.size()),
      completes_inline_(transport.completes_inline()),
      config_(std::move(config)),
      peer_flushes_(transport.size()),
      notify_(reinterpret_cast<std::uint64_t *>(static_cast<std::uint8_t *>(
                  transport.local_control()) + layout.notifications()),
              layout.notify_capacity(),
              reinterpret_cast<std::uint64_t *>(static_cast<std::uint8_t *>(
                  transport.local_control()) + sync::ControlLayout::notify_num)) {
    for (PeerFlush &peer : peer_flushes_) peer.in_flight_count = &transport_flushes_;
    notify_.on_wait([](void *window) { static_cast<Window *>(window)->queued(); }, this);
}

Window::~Window() = default;

void Window::queued() {
    if (sweep_link_.registered && !sweep_link_.listed) detail::progress_list(this);
}

// ---------------------------------------------------------------- epochs

Epoch &Window::open_epoch(EpochKind kind, int target, LockMode mode, int assertions) {
    std::unique_ptr<Epoch> epoch;
    if (spare_epochs_.empty()) {
        epoch = std::make_unique<Epoch>(next_epoch_id_++, kind, size(), target, mode, assertions);
    } else {
        epoch = std::move(spare_epochs_.back());
        spare_epochs_.pop_back();
        epoch->reset(next_epoch_id_++, kind, target, mode, assertions);
    }
    for (Epoch *other : open_) epoch->add_beside(other->id());
    const unsigned opener = threads::active() ? threads::thread_tag() : 0;
    if (!epochs_.empty() && epochs_.back()->opener() != opener) several_openers_ = true;
    epoch->set_opener(opener);
    epochs_.push_back(std::move(epoch));
    open_.push_back(epochs_.back().get());
    queued();
    return *epochs_.back();
}

void Window::close_epoch(Epoch &epoch, Request *request) {
    open_.erase(std::find(open_.begin(), open_.end(), &epoch));
    epoch.close(request);
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

Epoch *Window::open_of(EpochKind kind) const {
    for (Epoch *epoch : open_)
        if (epoch->kind() == kind) return epoch;
    return nullptr;
}

Epoch *Window::open_lock(int target) const {
    for (Epoch *epoch : open_)
        if (epoch->kind() == EpochKind::lock && epoch->target() == target) return epoch;
    return nullptr;
}

bool Window::has_open_epoch() const {
    if (direct_.active()) return true;
    for (Epoch *epoch : open_)
        if (epoch->kind() != EpochKind::fence) return true;
    return false;
}

void Window::close_fence() {
    if (Epoch *fence = open_of(EpochKind::fence)) close_epoch(*fence, nullptr);
}

// A fence opens an epoch that only the next fence closes. Programs commonly switch to
// locks or PSCW after a fence without MPI_MODE_NOSUCCEED; that is fine as long as the
// fence epoch issued no calls (it then ends here), and an RMA_SYNC error otherwise.
Status Window::end_unused_fence() {
    Epoch *fence = open_of(EpochKind::fence);
    if (!fence) return Status::ok;
    if (fence->calls() > 0) return Status::err_sync;
    close_epoch(*fence, nullptr);
    return Status::ok;
}

Status Window::check_group(const std::vector<int> &group) const {
    for (int rank : group)
        if (rank < 0 || rank >= size()) return Status::err_rank;
    return Status::ok;
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

// One notice: +1 on a matching counter in `peer`'s control region, ordered after every
// earlier operation toward `peer` (data before notice, doc/design.md §4).
void Window::notify(int peer, std::size_t offset, Notices &notices) {
    Status status = transport_.fence(peer);
    if (!is_error(status))
        status = transport_.atomic(peer, transport::AtomicOp::fetch_add,
                                   RemoteAddress{Region::control, offset}, 1, 0, nullptr, &notices);
    notices.posted(status);
}

// ---------------------------------------------------------------- passive target

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

Status Window::flush_general(int target, Request **request, bool local) {
    if (direct_.active() && direct_flush_covers(target) && direct_flush(target)) {
        *request = nullptr;  // complete
        return Status::ok;
    }
    materialize();
    if (target != -1) {
        if (target < 0 || target >= size()) return Status::err_rank;
        Epoch *epoch = covering_epoch(target);
        if (!epoch || !epoch->passive()) return Status::err_sync;
    } else {
        bool passive = false;
        for (Epoch *epoch : open_) passive |= epoch->passive();
        if (!passive) return Status::err_sync;
    }
    *request = Request::create();
    // Nothing issued before it is still pending, and the transport has it at the target
    // already (shared memory: inline): done, without queueing it for a sweep.
    Flush flush{target, next_age_ - 1, *request, local};
    if (flush_done(flush)) {
        (*request)->finish(flush.failure);
        return Status::ok;
    }
    flushes_.push_back(flush);
    queued();
    progress();
    return Status::ok;
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

bool Window::direct_fence() {
    if (is_error(transport_.flush(direct_.all ? rank_ : direct_.target, nullptr))) return false;
    fenced_runs_ = runs_;
    return true;
}

// Completes the DirectLock's calls at `target` (-1: at every target) inline; false if
// that failed or a call of the epoch failed (the ordinary path then reports it).
bool Window::direct_flush(int target) {
    if (is_error(direct_.failure)) return false;
    // A transport that completes every call inside it (shared memory) has the calls at
    // their targets already: what is left of a flush is its fence, for any target, and
    // only where something was written since the last one (gets and atomics need none).
    if (completes_inline_) return runs_ == fenced_runs_ || direct_fence();
    Status failure = Status::ok;
    auto flushed = [&](int rank) {
        return remote_complete(rank, runs_, &failure) && !is_error(failure);
    };
    if (!direct_.all) return flushed(direct_.target);
    if (target >= 0) return !direct_.held[target] || flushed(target);
    for (int rank : direct_.held_ranks)
        if (!flushed(rank)) return false;
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

void Window::dump(std::FILE *out) const {
    static const char *const phases[] = {"none",     "acquiring", "held",
                                         "flushing", "releasing", "released"};
    std::fprintf(out, "  window rank %d of %d: %zu epochs, %zu open, %zu flushes, %d transport "
                 "flushes, direct lock %d%s, runs %llu\n",
                 rank_, size_, epochs_.size(), open_.size(), flushes_.size(), transport_flushes_,
                 direct_.target, direct_.all ? " (lock_all)" : "",
                 static_cast<unsigned long long>(runs_));
    for (const auto &epoch : epochs_) {
        std::fprintf(out, "    epoch %llu %s %s%s failure %d\n",
                     static_cast<unsigned long long>(epoch->id()), epoch_kind_name(epoch->kind()),
                     engine_state_name(epoch->state()), epoch->open() ? " open" : " closed",
                     static_cast<int>(epoch->failure()));
        for (int rank = 0; rank < size_; ++rank) {
            const TargetState *state = epoch->find(rank);
            if (!state) continue;
            char lock[160];
            if (state->polling)
                std::snprintf(lock, sizeof lock, "polled %u times, not queued", state->polls);
            else
                state->operation.describe(lock, sizeof lock);
            std::fprintf(out, "      target %d: %s, %zu pending, lock %s\n", rank,
                         phases[static_cast<int>(state->phase)], state->pending.size(), lock);
        }
    }
    for (int peer = 0; peer < size_; ++peer) {
        const PeerFlush &flush = peer_flushes_[peer];
        if (flush.last_run == 0) continue;
        std::fprintf(out, "    peer %d: last run %llu, flushed %llu, flush in flight %d\n", peer,
                     static_cast<unsigned long long>(flush.last_run),
                     static_cast<unsigned long long>(flush.flushed), flush.in_flight ? 1 : 0);
    }
    const sync::LockWord word = sync::LockWord::decode(control_word(sync::ControlLayout::lock_word));
    std::fprintf(out,
                 "    lock word: active %u waiting %u tail %u head %d, head rank word %#llx, "
                 "doorway tail %llu\n",
                 word.active, word.waiting, word.tail, word.head ? 1 : 0,
                 static_cast<unsigned long long>(control_word(sync::ControlLayout::head_rank)),
                 static_cast<unsigned long long>(control_word(sync::ControlLayout::door_tail)));
    for (int target = 0; target < size_; ++target) {
        const std::uint64_t grant = control_word(layout_.node_grant(target));
        const std::uint64_t next = control_word(layout_.node_next(target));
        const std::uint64_t top = control_word(layout_.node_top(target));
        const std::uint64_t count = control_word(layout_.node_count(target));
        const std::uint64_t below = control_word(layout_.node_below(target));
        const std::uint64_t door_next = control_word(layout_.node_door_next(target));
        if (grant || next || top || count || below || door_next)
            std::fprintf(out,
                         "    node for target %d: grant %llu next %#llx readers top %llu count "
                         "%llu below %llu doorway next %llu\n",
                         target, static_cast<unsigned long long>(grant),
                         static_cast<unsigned long long>(next),
                         static_cast<unsigned long long>(top),
                         static_cast<unsigned long long>(count),
                         static_cast<unsigned long long>(below),
                         static_cast<unsigned long long>(door_next));
    }
}

// ---------------------------------------------------------------- active target

Status Window::fence(int assertions, Request **request) {
    materialize();
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
    if (previous) close_epoch(*previous, barrier ? nullptr : *request);
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
    materialize();
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
    materialize();
    return close_open(open_of(EpochKind::access), request);
}

Status Window::post(const std::vector<int> &group, int assertions) {
    materialize();
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

Status Window::wait(Request **request) {
    materialize();
    return close_open(open_of(EpochKind::exposure), request);
}

Status Window::test(bool *flag) {
    materialize();
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

// ---------------------------------------------------------------- communication

Status target_span(const RmaCall &call, const TypeLayout &type, std::int64_t disp_unit,
                   std::uint64_t *start, std::uint64_t *low, std::uint64_t *high) {
    *start = *low = *high = 0;
    if (call.target_count <= 0 || type.size == 0) return Status::ok;
    std::int64_t first, lowest, highest;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(call.displacement), disp_unit, &first) ||
        !type_span(type, call.target_count, &lowest, &highest) ||
        __builtin_add_overflow(first, lowest, &lowest) ||
        __builtin_add_overflow(first, highest, &highest) || lowest < 0)
        return Status::err_range;
    *start = static_cast<std::uint64_t>(first);
    *low = static_cast<std::uint64_t>(lowest);
    *high = static_cast<std::uint64_t>(highest);
    return Status::ok;
}

Status Window::check_range(const RmaCall &call, std::uint64_t *byte_offset) {
    const TypeLayout *target;
    if (is_error(type_layout_get(call.target_type, &target))) return Status::err_type;
    const bool dynamic = config_.flavor == Flavor::dynamic;
    if (call.displacement < 0 && !dynamic) return Status::err_range;
    std::uint64_t low, high;
    Status status = target_span(call, *target, dynamic ? 1 : config_.disp_units[call.target],
                                byte_offset, &low, &high);
    if (is_error(status) || low == high) return status;
    if (!dynamic) return high <= config_.sizes[call.target] ? Status::ok : Status::err_range;
    // [low, high) must lie in regions the target attached back to back (the transport
    // keeps an origin-side copy of the target's directory, re-read when the target's
    // generation word changed).
    return transport_.check_attached(call.target, low, high);
}

// A put or get of contiguous data (predefined types, or derived ones that are one block
// at offset 0) in a DirectLock, whose transport completes every call inline: the checks
// of Operation::check and check_range, then one transport call, with no Operation.
// false, with nothing done, for any other call and for every call those checks would
// refuse: the general path then refuses it, naming the cause.
bool Window::rma_contiguous(const RmaCall &call, Status *status) {
    const bool put = call.kind == RmaKind::put;
    if ((!put && call.kind != RmaKind::get) || call.notify) return false;
    const MPI_Datatype local_type = put ? call.origin_type : call.result_type;
    const MPI_Aint local_count = put ? call.origin_count : call.result_count;
    const void *buffer = put ? call.origin : call.result;
    const TypeLayout *target, *local;
    std::size_t bytes = 0, local_bytes = 0;
    std::uintptr_t buffer_end = 0;
    if (is_error(type_layout_get(call.target_type, &target)) || !target->contiguous ||
        is_error(type_layout_get(local_type, &local)) || !local->contiguous ||
        !type_data_bytes(*target, call.target_count, &bytes) ||
        !type_data_bytes(*local, local_count, &local_bytes) || bytes != local_bytes ||
        bytes == 0 ||
        __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(buffer), bytes, &buffer_end))
        return false;
    std::uint64_t offset = 0;
    if (!direct_range(call, bytes, &offset)) return false;
    ++next_age_;
    ++counters().rma_ops;
    if (verbose_level() >= 3)
        log(3, "%s to %d at +%llu (contiguous)", rma_kind_name(call.kind), call.target,
            static_cast<unsigned long long>(offset));
    const RemoteAddress address{Region::window, offset};
    std::uint8_t *mapped = transport_.direct_window(call.target, offset, bytes);
    if (put) {
        if (mapped) {
            std::memcpy(mapped, call.origin, bytes);
            *status = Status::ok;
        } else {
            *status = transport_.put(call.target, call.origin, bytes, address, nullptr);
        }
        ran_toward(call.target);
    } else if (mapped) {
        std::memcpy(call.result, mapped, bytes);
        *status = Status::ok;
    } else {
        *status = transport_.get(call.target, call.result, bytes, address, nullptr);
    }
    return true;
}

// fetch_and_op, compare_and_swap, or an accumulate of up to 16 elements, as 64-bit
// atomics (one an element) in a DirectLock: a shape Operation::check accepted before
// (atomic_shape_), 8-byte data the transport does atomically in the window (what the
// general path's accumulates do element by element; MPI promises accumulates atomicity
// per element only). false, with nothing done, for anything else (the general path
// checks and runs it).
bool Window::rma_atomic(const RmaCall &call, Status *status) {
    constexpr int most_elements = 16;
    const bool swap = call.kind == RmaKind::compare_and_swap;
    const bool accumulate = call.kind == RmaKind::accumulate;  // nothing fetched
    const int elements = accumulate ? call.origin_count : 1;
    if ((!swap && !accumulate && call.kind != RmaKind::fetch_and_op) || call.notify ||
        !config_.hardware_atomics || elements < 1 || elements > most_elements ||
        call.origin_count != elements || call.target_count != elements ||
        call.origin_type != call.target_type ||
        (!accumulate && (call.result_count != 1 || call.result_type != call.target_type)) ||
        !transport_.supports_atomics(call.target, Region::window))
        return false;
    AtomicShape &shape = atomic_shape_;
    if (shape.kind != call.kind || shape.type != call.target_type ||
        (!swap && shape.op != call.op)) {
        shape = AtomicShape{call.kind, call.op, call.target_type, false,
                            transport::AtomicOp::compare_swap, false};
        bool empty = false;
        const TypeLayout *layout;
        shape.usable = !is_error(Operation::check(call, &empty, nullptr)) && !empty &&
                       !is_error(type_layout_get(call.target_type, &layout)) &&
                       layout->size == 8 && layout->basic == call.target_type &&
                       layout->basic_size == 8 &&
                       (swap || reduce_as_atomic(call.op, layout->basic, &shape.atomic,
                                                 &shape.operand_zero));
    }
    if (!shape.usable) return false;
    const std::size_t bytes = 8 * static_cast<std::size_t>(elements);
    std::uintptr_t end = 0;
    if ((!shape.operand_zero &&
         __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(call.origin), bytes, &end)) ||
        (!accumulate &&
         __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(call.result), 8, &end)) ||
        (swap && __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(call.compare), 8, &end)))
        return false;
    std::uint64_t offset = 0;  // every element in range before the first is touched
    if (!direct_range(call, bytes, &offset) ||
        !transport_.atomic_aligned(call.target, RemoteAddress{Region::window, offset}))
        return false;
    std::uint64_t compare = 0, previous = 0;
    if (swap) std::memcpy(&compare, call.compare, 8);
    ++next_age_;
    ++counters().rma_ops;
    const auto *origin = static_cast<const unsigned char *>(call.origin);
    for (int i = 0; i < elements; ++i) {
        std::uint64_t operand = 0;
        if (!shape.operand_zero) std::memcpy(&operand, origin + 8 * i, 8);
        *status = transport_.atomic(call.target, shape.atomic,
                                    RemoteAddress{Region::window, offset + 8 * i}, operand,
                                    compare, &previous, nullptr);
        if (is_error(*status)) return true;
    }
    if (!accumulate) std::memcpy(call.result, &previous, 8);
    return true;
}

// The byte offset of `bytes` bytes at the call's displacement, if they lie in the
// target's window (check_range, for data that is one block at offset 0).
bool Window::direct_range(const RmaCall &call, std::size_t bytes, std::uint64_t *offset) {
    if (config_.flavor == Flavor::dynamic) return !is_error(check_range(call, offset));
    std::int64_t first = 0, end = 0;
    if (call.displacement < 0 ||
        __builtin_mul_overflow(static_cast<std::int64_t>(call.displacement),
                               config_.disp_units[call.target], &first) ||
        __builtin_add_overflow(first, static_cast<std::int64_t>(bytes), &end) ||
        static_cast<std::uint64_t>(end) > config_.sizes[call.target])
        return false;
    *offset = static_cast<std::uint64_t>(first);
    return true;
}

Status Window::rma_general(const RmaCall &call, Request **request, const char **cause,
                           bool direct_tried) {
    if (cause) *cause = nullptr;
    if (call.target < 0 || call.target >= size()) return Status::err_rank;
    const bool direct =  // runs now, in it
        direct_tried || (direct_.active() && direct_covers(call.target));
    if (direct && !direct_tried) {
        Status status;
        if (run_direct(call, &status)) {
            if (request) (*request = Request::create())->finish(status);
            return Status::ok;
        }
    } else if (!direct) {
        materialize();
    }
    Epoch *epoch = direct ? nullptr : covering_epoch(call.target);
    if (!direct && !epoch)  // an access epoch whose group lacks the target, or no epoch at all
        return open_of(EpochKind::access) ? Status::err_rank : Status::err_sync;
    if (request && epoch && !epoch->passive()) return Status::err_sync;  // R-calls: passive only
    bool empty = false;
    Status status = Operation::check(call, &empty, cause);
    if (is_error(status)) return status;
    if (call.notify) {
        status = check_notify(call);
        if (is_error(status)) return status;
    }
    if (empty && !call.notify) {  // moves no data: a valid no-op
        if (request) (*request = Request::create())->finish(Status::ok);
        return Status::ok;
    }
    std::uint64_t byte_offset;
    status = check_range(call, &byte_offset);
    if (is_error(status)) return status;
    if (request) *request = Request::create();
    Request *handle = request ? *request : nullptr;
    const std::uint64_t age = next_age_++;
    if (epoch) {
        epoch->count_call();
        TargetState &state = epoch->at(call.target);
        if (epoch->state() == EngineState::active && state.phase == TargetPhase::none)
            start_target(*epoch, call.target, state);
        if (epoch->state() != EngineState::active || state.phase != TargetPhase::held ||
            !state.pending.empty()) {
            auto operation = std::make_unique<Operation>(call, age, handle);
            operation->retain_types();  // recorded: replayed when the target is ready
            state.pending.push_back(std::move(operation));
            return Status::ok;
        }
    }
    Operation operation(call, age, handle);  // runs now: no need to keep it
    status = run(operation, byte_offset);
    if (is_error(status)) {
        if (epoch)
            epoch->fail(status);
        else if (!is_error(direct_.failure))
            direct_.failure = status;
    }
    if (handle) handle->finish(status);
    return Status::ok;
}

// The index of a notifying call against the target's counters: within the capacity
// every rank's control region has (what keeps the add inside it), and below the count
// the target published — read now where the transport maps the target's control region,
// else (UCX: a get) only when the index is not below the count read last time.
Status Window::check_notify(const RmaCall &call) {
    if (call.notify_index < 0 ||
        static_cast<std::uint32_t>(call.notify_index) >= layout_.notify_capacity())
        return Status::err_notification;
    const auto index = static_cast<std::uint32_t>(call.notify_index);
    if (notify_known_.empty()) notify_known_.assign(static_cast<std::size_t>(size()), 0);
    std::uint32_t &known = notify_known_[call.target];
    std::uint64_t count = 0;
    if (!transport_.peek_control(call.target, sync::ControlLayout::notify_num, &count)) {
        if (index < known) return Status::ok;
        Status status = read_word(transport_, call.target,
                                  RemoteAddress{Region::control, sync::ControlLayout::notify_num},
                                  &count);
        if (is_error(status)) return status;
    }
    known = static_cast<std::uint32_t>(std::min<std::uint64_t>(count, layout_.notify_capacity()));
    return index < known ? Status::ok : Status::err_notification;
}

// ---------------------------------------------------------------- dynamic windows

Status Window::attach(const void *base, std::uint64_t size) {
    return transport_.attach(base, size);
}

Status Window::detach(const void *base) { return transport_.detach(base); }

// ---------------------------------------------------------------- progress

// The activation predicate (SC14 §VI-A). Called in queue order, so every earlier
// epoch is already active or completed (rule 4: no skipping). By default an epoch
// activates only after every earlier one completed (§VI-B) — except beside epochs the
// application held open at the same time (post+start, lock(0)+lock(1), a lock inside
// an exposure epoch ...). MPI itself makes those concurrent; serializing them would
// deadlock correct programs (post; start; complete; wait). Fence epochs are never
// concurrent with anything; a lock epoch admits a companion once its lock is held.
// Beyond that, the reorder info keys let an epoch pass an earlier active one.
bool Window::waiting() const {
    if (!flushes_.empty() || transport_flushes_ != 0) return true;
    for (const auto &epoch : epochs_) {
        if (epoch->state() != EngineState::active || !epoch->open()) return true;
        for (int rank : epoch->touched()) {
            const TargetState *target = epoch->find(rank);
            if (!target->pending.empty() || target->phase == TargetPhase::acquiring ||
                target->phase == TargetPhase::releasing || target->phase == TargetPhase::flushing)
                return true;
        }
    }
    return false;
}

bool Window::may_activate(std::size_t index) const {
    const Epoch &candidate = *epochs_[index];
    for (std::size_t i = 0; i < index; ++i) {
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
            if (accesses_.empty()) accesses_.assign(static_cast<std::size_t>(size()), 0);
            for (int peer : epoch.group()) {
                TargetState &state = epoch.at(peer);
                if (epoch.nocheck()) {  // the matching post happened: no grant to wait for
                    state.phase = TargetPhase::held;
                } else {
                    state.match_id = ++accesses_[peer];
                    state.phase = TargetPhase::acquiring;
                }
            }
            return;
        case EpochKind::exposure:
            if (exposures_.empty()) exposures_.assign(static_cast<std::size_t>(size()), 0);
            for (int peer : epoch.group()) {
                TargetState &state = epoch.at(peer);
                state.match_id = ++exposures_[peer];
                if (epoch.nocheck()) {  // the origin will not wait for a grant
                    state.phase = TargetPhase::held;
                } else {
                    notify(peer, layout_.grant_count(rank()), state.notices);
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

// Runs one operation (complete at the origin when it returns) and, if it may not have
// reached its target yet, numbers it for the target's remote completion.
Status Window::run(Operation &operation, std::uint64_t byte_offset) {
    TargetView view{&transport_, byte_offset, config_.hardware_atomics};
    if (operation.call().notify)  // the index was checked against the capacity at the call
        view.notify_offset = layout_.notification(static_cast<std::uint32_t>(operation.call().notify_index));
    Status status = operation.execute(view);
    if (operation.needs_flush()) ran_toward(operation.call().target);
    return status;
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

bool Window::run_pending(Epoch &epoch, TargetState &state) {
    bool moved = false;
    while (!state.pending.empty()) {
        std::unique_ptr<Operation> operation = std::move(state.pending.front());
        state.pending.pop_front();
        ++counters().rma_ops_replayed;
        std::uint64_t byte_offset = 0;
        Status status = check_range(operation->call(), &byte_offset);
        if (!is_error(status)) status = run(*operation, byte_offset);
        if (is_error(status)) epoch.fail(status);
        if (operation->request()) operation->request()->finish(status);
        moved = true;
    }
    return moved;
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

// Round i of the fence barrier: a notice to rank + j k^i for j = 1 .. k-1 (below p), each
// into the slot the receiver keeps for us (control_region.hpp).
void Window::send_fence_round(Epoch &epoch) {
    const int round = epoch.barrier_round(), radix = layout_.fence_radix();
    const std::int64_t distance = layout_.fence_distance(round);
    for (int j = 1; j < radix && j * distance < size(); ++j)
        notify(static_cast<int>((rank() + j * distance) % size()),
               sync::ControlLayout::fence_slot(layout_.fence_slot_of(round, j)),
               epoch.barrier_notices());
}

// Whether round `round` of the fence barrier numbered `sequence` has heard from every
// rank - j k^round.
bool Window::fence_round_heard(int round, std::uint64_t sequence) const {
    const int radix = layout_.fence_radix();
    const std::int64_t distance = layout_.fence_distance(round);
    for (int j = 1; j < radix && j * distance < size(); ++j)
        if (control_word(sync::ControlLayout::fence_slot(layout_.fence_slot_of(round, j))) <
            sequence)
            return false;
    return true;
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
        for (int peer : epoch.touched()) epoch.find(peer)->phase = TargetPhase::held;
        moved = true;
    }
    for (std::size_t i = 0; i < epoch.touched().size(); ++i) {
        const int peer = epoch.touched()[i];
        moved |= run_pending(epoch, *epoch.find(peer));
    }
    if (epoch.open()) return moved;
    // The calls complete at their targets before the epoch does (and so before the
    // next fence tells the peers).
    bool flushed = true;
    for (int peer : epoch.touched()) {
        TargetState *state = epoch.find(peer);
        if (state->phase == TargetPhase::released) continue;
        if (flushed_to(epoch, peer, *state)) {
            state->phase = TargetPhase::released;
            moved = true;
        } else {
            flushed = false;
        }
    }
    if (flushed) {
        epoch.complete();
        moved = true;
    }
    return moved;
}

// Each target completes on its own: its done notice leaves as soon as the epoch is
// closed and the last call toward it is done (SC14 §VII-D).
bool Window::advance_access(Epoch &epoch) {
    bool moved = false;
    bool busy = false;
    for (int peer : epoch.group()) {
        TargetState &state = epoch.at(peer);
        if (state.phase == TargetPhase::acquiring &&
            control_word(layout_.grant_count(peer)) >= state.match_id) {
            state.phase = TargetPhase::held;
            moved = true;
        }
        if (state.phase == TargetPhase::held) moved |= run_pending(epoch, state);
        // The done notice leaves once the calls completed at the target (MPI_Win_wait
        // there relies on it).
        if ((state.phase == TargetPhase::held || state.phase == TargetPhase::flushing) &&
            !epoch.open() && flushed_to(epoch, peer, state)) {
            notify(peer, layout_.done_count(rank()), state.notices);
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
            moved = true;
        }
    }
    if (!epoch.open() && exposure_finished(epoch)) {
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
    if (notify_.pending()) moved |= notify_.check();
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
                if (!may_activate(index)) {
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
                retire(std::move(*it));
                if (it == epochs_.begin()) {  // the usual case: far cheaper than erase
                    epochs_.pop_front();
                    it = epochs_.begin();
                } else {
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
