// An nbrma window as the engine sees it: the epochs in application order (the
// deferred-epoch queue), the activation rule, passive-target synchronization,
// RMA calls with operation ages, and flush requests. Transport-agnostic: it is
// driven over shm by the MPI layer and over sim by the unit tests.
#ifndef NBRMA_ENGINE_WINDOW_HPP
#define NBRMA_ENGINE_WINDOW_HPP

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <vector>

#include "common/threads.hpp"
#include "engine/epoch.hpp"
#include "engine/notify.hpp"
#include "engine/operation.hpp"
#include "engine/reduce.hpp"
#include "engine/request.hpp"
#include "layout/control_region.hpp"
#include "transport/transport.hpp"

namespace nbrma::check {
class WindowCheck;
}

namespace nbrma::engine {

enum class Flavor : std::uint8_t { create, allocate, shared, dynamic };

// The reorder info keys (SC14 §VI-B), as indexes into WindowConfig::reorder. Each
// lets an epoch of the first kind activate while an earlier epoch of the second kind
// is still active. Origin-side ("access") epochs are lock and start epochs; target-side
// ("exposure") epochs are post epochs; fence and lock_all epochs never reorder.
enum Reorder : int {
    access_after_access = 0,
    access_after_exposure = 1,
    exposure_after_exposure = 2,
    exposure_after_access = 3,
};

struct WindowConfig {
    Flavor flavor = Flavor::allocate;
    std::vector<std::uint64_t> sizes;  // window bytes of every rank (unused for dynamic)
    std::vector<int> disp_units;       // of every rank
    bool hardware_atomics = true;      // accumulate_ops permits single 64-bit atomics
    bool no_locks = false;             // info no_locks=true: lock calls are erroneous
    bool reorder[4] = {false, false, false, false};  // by Reorder
};

// The bytes an RMA call touches at its target, from its displacement, disp_unit, target
// count and target type alone: element 0 starts at *start = displacement * disp_unit;
// over all target_count elements (extents may be negative) the lowest byte is *low and
// one past the highest is *high — offsets from the window base, or absolute addresses
// on dynamic windows (disp_unit 1). Every step is overflow-checked: err_range when a
// value does not fit in 64 bits or the range reaches below 0. When no data moves,
// *start = *low = *high = 0.
Status target_span(const RmaCall &call, const TypeLayout &type, std::int64_t disp_unit,
                   std::uint64_t *start, std::uint64_t *low, std::uint64_t *high);

class Window {
  public:
    // One-CAS attempts of a polite lock (polite_locks) before it joins the target's queue.
    static constexpr std::uint16_t polite_polls = 64;

    Window(transport::Transport &transport, const layout::ControlLayout &layout,
           WindowConfig config);
    ~Window();
    Window(const Window &) = delete;
    Window &operator=(const Window &) = delete;

    // Passive target (opening calls never block; closing calls yield a request that
    // completes when the epoch does).
    Status lock(int lock_type, int target, int assertions);
    Status unlock(int target, Request **request);
    Status lock_all(int assertions);
    Status unlock_all(Request **request);
    // target == -1: every target. The request completes when every call issued before
    // it (toward that target) is complete at the target (local: at the origin, as
    // MPI_Win_flush_local); later calls may still be in flight. No request (null): the
    // flush completed in the call.
    Status flush(int target, Request **request, bool local = false) {
        // Inline, a flush of the at-once epoch's targets alone (EpochPath): its calls are
        // at their targets already (once the copies the transport held are made); what
        // is left is the transport's fence, only where something was written since the
        // last (fence_at_once).
        settle();
        if (at_once_ && !is_error(at_once_->failure()) && at_once_flush_covers(target) &&
            (!unfenced() || fence_at_once())) {
            if (check_) check_flushed(target, local);
            *request = nullptr;  // complete
            return Status::ok;
        }
        return flush_general(target, request, local);
    }

    // Active target (SC14 §V–VII). `group` lists window ranks (the MPI layer translates
    // MPI groups); opening calls never block. fence's request completes when the
    // fence's barrier has passed (every peer completed the epoch the fence closes);
    // complete's when a done notice reached every target; wait's when every origin's
    // done notice arrived. test() closes the exposure epoch only if it is complete.
    Status fence(int assertions, Request **request);
    Status start(const std::vector<int> &group, int assertions);
    Status complete(Request **request);
    Status post(const std::vector<int> &group, int assertions);
    Status wait(Request **request);
    Status test(bool *flag);

    // request may be null (non-R calls). On an error found by Operation::check, *cause
    // (if given) names it. A notifying call (call.notify) is err_notification when its
    // index lies outside the target's counters (as the target last published them);
    // it notifies even when it moves no data.
    Status rma(const RmaCall &call, Request **request, const char **cause = nullptr) {
        // Inline, a blocking call of the at-once epoch that rma_contiguous or rma_atomic
        // runs now; the rest, and what they turn down, in rma_general.
        if (!request && at_once_ && call.target >= 0 && call.target < size() &&
            ready_at_once(call.target)) {
            Status status;
            if (run_at_once(call, &status, false)) {
                if (cause) *cause = nullptr;
                return Status::ok;
            }
            return rma_general(call, request, cause, true);
        }
        return rma_general(call, request, cause, false);
    }

    // Threads on windows of their own (doc/design.md §6): in a shared section
    // (threads::SharedSection), with the window's calls serialized by the caller, a
    // blocking call of the at-once epoch toward a target it holds that is a copy into
    // mapped window memory (copy_window), of predefined types this thread looked up last
    // (rma_contiguous), or accumulates into mapped memory of the shape the window's last
    // atomic call had (rma_atomic). False, with nothing done, for any other call: the caller
    // then takes the progress lock and calls rma(). (At-once epochs run only over a
    // transport that completes calls inline, whose copy_window_whole and flush touch
    // nothing but the transport: transport.hpp.)
    bool rma_shared(const RmaCall &call) { return call_in_section(call) && rma_shared_held(call); }
    // With the window's calls serialized (one thread, or the progress lock), a blocking
    // call of the window's one open epoch, where there is no at-once epoch, nothing
    // deferred and no checker with locking on: what rma_general runs first (run_now),
    // without its frame and lookups. False, with nothing done, for anything run_now turns
    // down.
    bool rma_open(const RmaCall &call) {
        if (at_once_ || !unlocked_check() || deferred_ || open_.size() != 1 || call.target < 0 ||
            call.target >= size() || !open_.front()->covers(call.target))
            return false;
        return run_now(call, *open_.front());
    }
    // The same for flush(): a flush of the at-once epoch's targets that is nothing, or
    // the transport's flush (shm: a memory fence). `local`: MPI_Win_flush_local (the
    // same here, but for the checker).
    [[gnu::always_inline]] bool flush_shared(int target, bool local = false) {
        if (!flush_in_section(target) || (unfenced() && !fence_at_once())) return false;
        if (check_) check_flushed(target, local);
        return true;
    }
    // Concurrent: in a shared section without the window's serialization, beside other
    // threads' calls on this window (serialized or concurrent). A blocking put or get of
    // the at-once epoch that is a copy into mapped window memory, of predefined types
    // this thread looked up last, toward its lock target or a lock_all target it already
    // holds (concurrent_target); it writes nothing of the window's but concurrent_puts_, once
    // (no operation age, no run: the flushes and the close fence instead, unfenced()).
    // And a flush of the at-once epoch's targets: the transport's fence. False, with
    // nothing done, for anything else: the caller then serializes (rma_shared,
    // flush_shared).
    bool rma_concurrent(const RmaCall &call);
    // (Called in a section threads::SharedSection::enter() opened without a serializer:
    // where that was a full barrier, this thread's earlier copies are fenced already.)
    bool flush_concurrent(int target) {
        return flush_in_section(target) &&
               ((flush_is_fence_ && threads::SharedSection::enter_fences) || fence_transport());
    }
    // The same for lock() and lock_all(): an epoch opened at once where nothing else is
    // open or queued and its lock is free now (the lock taken before anything else is
    // done); and for unlock() and unlock_all() of the at-once epoch: its locks released
    // at once (false: what was done stays, and the caller's unlock under the lock goes on
    // from there, handing a lock over through the queue).
    bool lock_shared(int lock_type, int target, int assertions);
    bool lock_all_shared(int assertions);
    bool unlock_shared(int target);
    bool unlock_all_shared();

    // Notified RMA, target side (MPIX_Win_notify_*): this rank's counters and thresholds.
    NotifyCounters &notifications() { return notify_; }

    // Dynamic windows: publish/withdraw a region in our directory of attached regions
    // (the transport's; err_arg: wraps around the address space; err_range: overlaps an
    // attached region).
    Status attach(const void *base, std::uint64_t size);
    Status detach(const void *base);

    // An epoch other than a fence epoch is open (a fence epoch with no calls ends
    // quietly at the next lock, start, post or free, as in MPICH).
    bool has_open_epoch() const;
    // Window free: ends the open fence epoch, if any.
    void close_fence();
    // An at-once epoch (EpochPath) needs no progress: idle.
    bool idle() const {
        return epochs_.empty() && flushes_.empty() && transport_flushes_ == 0 && !notify_.pending();
    }
    // NBRMA_PROGRESS=interrupt: how many rings of this rank's bell at least (peers' writes
    // into our control region, each ringing once) until a sweep can move what waits for
    // a peer's write or a transport completion; 0 when nothing does. One for an epoch
    // closed and not yet complete, a lock being acquired, released or flushed, calls
    // queued, a flush; for a fence barrier, a notice from each peer of its round not
    // heard from yet (an epoch queued behind it waits for the same). An open epoch that
    // is active with nothing queued (between two fences, a granted lock) waits for the
    // application only. So does a notification threshold: only an application thread
    // can hand its completion to MPICH (MPI_Grequest_complete), in the wait or test that
    // checks the counter anyway, so waking the progress thread for it would be futile
    // every time.
    unsigned rings_awaited() const;
    // One sweep (SC14 §VII-D): advance locks, replay calls, complete and activate
    // epochs, complete flushes. True if anything moved.
    bool progress();
    // Everything the engine holds for this window, and the lock word and queue nodes of
    // its local control region, to `out` (debug_dump: a hang report).
    void dump(std::FILE *out) const;

    int rank() const { return rank_; }
    int size() const { return size_; }
    const WindowConfig &config() const { return config_; }
    // MPI_Win_set_info: the reorder keys apply to epochs activated from now on.
    void set_reorder(Reorder key, bool allowed) { config_.reorder[key] = allowed; }
    transport::Transport &transport() { return transport_; }
    std::size_t epochs_pending() const { return epochs_.size(); }

    // The progress engine's bookkeeping of this window (progress/sweep.cpp), under the
    // progress lock. A registered window is on the engine's sweep list whenever it is
    // not idle(): it puts itself there when work is queued on it (an epoch opened, a
    // flush, a notification threshold: the only ways out of idle() from outside a
    // sweep), and only a sweep that finds it idle() takes it off. A window whose
    // transport serves peers (needs_target_progress) is pinned there.
    struct SweepLink {
        bool registered = false;
        bool listed = false;
        bool pinned = false;
        // What the progress engine gives the window when it registers it: how the window
        // puts itself on the sweep list, and whether sweeps wait for a bell (the
        // SmartInterrupts client, NBRMA_PROGRESS=interrupt; a lock word rings none).
        void (*list)(Window *) = nullptr;
        bool sweeps_on_bells = false;
    };
    SweepLink &sweep_link() { return sweep_link_; }
    // NBRMA_CHECK=races: the window's race checker (check/races.hpp), set once, before the
    // first epoch. A checked window takes the queued path only (no at-once epochs), so
    // every call runs through run(), and tells the checker of each synchronization.
    void set_check(check::WindowCheck *check) { check_ = check; }

  private:
    struct Flush {
        int target;         // -1: all
        std::uint64_t age;  // calls with age <= this must be complete
        Request *request;
        bool local;              // flush_local: completion at the origin is enough
        bool ran = false;        // the calls ran; now waiting for the transport flushes
        std::uint64_t upto = 0;  // runs_ when they had run
        Status failure = Status::ok;
    };
    // Remote completion toward one peer. An operation that ran is complete at the
    // origin only (a UCX put may still be on its way); a transport flush completes
    // everything posted to the peer before it. Every operation that may not have
    // reached its target when it returns (Operation::needs_flush) gets a number
    // (runs_); one flush at a time is in flight per peer.
    struct PeerFlush final : transport::Completion {
        std::uint64_t last_run = 0;  // number of the last operation run toward the peer
        std::uint64_t flushed = 0;   // operations up to this number are complete there
        std::uint64_t covers = 0;    // what the flush in flight will have completed
        bool in_flight = false;
        bool listed = false;          // in unflushed_
        Status failure = Status::ok;  // a flush toward the peer failed (sticky)
        int *in_flight_count = nullptr;
        void on_complete(Status status) override {
            in_flight = false;
            --*in_flight_count;
            flushed = covers;
            if (is_error(status)) failure = status;
        }
    };

    // Work was queued: onto the sweep list, if registered and not there yet (SweepLink).
    void queued();
    // A completed epoch kept for reuse (retire), or a new one.
    std::unique_ptr<Epoch> spare_epoch();
    // A new epoch, open at application level, in a spare_epoch().
    std::unique_ptr<Epoch> make_epoch(EpochKind kind, int target, sync::LockMode mode,
                                      int assertions);
    // `epoch` (completed or new) made the newest open epoch.
    [[gnu::always_inline]] void begin_epoch(Epoch &epoch, EpochKind kind, int target,
                                            sync::LockMode mode, int assertions) {
        epoch.reset(next_epoch_id_++, kind, target, mode, assertions);
        for (Epoch *other : open_) epoch.add_beside(other->id());
        epoch.set_opener(threads::active() ? threads::thread_tag() : 0);
        open_.push_back(&epoch);
        ++counters().epochs_opened;
    }
    // Opens an epoch in the queue (EpochPath::queued).
    Epoch &open_epoch(EpochKind kind, int target, sync::LockMode mode, int assertions);
    void enqueue(std::unique_ptr<Epoch> epoch);
    // Passive target: opens a lock (target >= 0) or lock_all (-1) epoch at once where it
    // may (take_at_once), queued otherwise.
    [[gnu::always_inline]] inline void open_passive(EpochKind kind, int target, sync::LockMode mode,
                                                    int assertions);
    [[gnu::always_inline]] inline bool take_at_once(Epoch &epoch);
    [[gnu::always_inline]] inline void held_at_once(Epoch &epoch, bool took_lock);
    bool open_shared(EpochKind kind, int target, sync::LockMode mode, int assertions);
    Status lock_arguments(int lock_type, int target, int assertions) const;
    Status lock_all_arguments(int assertions) const;
    // A flush is under way on the window (no lock epoch is taken at once beside it).
    bool flushing() const { return !flushes_.empty() || transport_flushes_ != 0; }
    void queue_opened(std::unique_ptr<Epoch> epoch);
    bool polite_locks() const;
    // Readies the at-once epoch (at_once_ set) for a call toward `target`: true if it holds
    // the target's lock — its lock's target, or a lock_all target whose shared lock it
    // holds or takes now, at the first call toward it (take_target); false if the call is
    // not the at-once epoch's (take_target may have handed the epoch to the queue).
    bool ready_at_once(int target) {
        if (target == at_once_->target()) return true;
        if (at_once_->kind() != EpochKind::lock_all) return false;
        return at_once_->find(target) != nullptr || take_target<false>(target);
    }
    template <bool shared>
    bool take_target(int target);
    // Whether `target` is held by the at-once epoch for concurrent calls: its lock
    // target, or a lock_all target take_target took in it (taken_).
    bool concurrent_target(int target) const {
        return target == at_once_->target() ||
               (at_once_->kind() == EpochKind::lock_all &&
                (taken_word(target).load(std::memory_order_acquire) & taken_bit(target)));
    }
    // taken_'s word and bit of `target`. Its writers (take_target, forget_taken) are
    // serialized (the window's spin lock, or the progress lock): a load and a store, no
    // locked instruction.
    std::atomic<std::uint64_t> &taken_word(int target) const {
        return taken_[static_cast<std::size_t>(target) / 64];
    }
    static std::uint64_t taken_bit(int target) {
        return std::uint64_t{1} << (static_cast<std::size_t>(target) % 64);
    }
    // The at-once lock_all epoch's targets leave taken_ (it closes, or joins the queue).
    void forget_taken(const Epoch &epoch);
    // A flush of `target` (-1: all) concerns the at-once epoch alone: flush_all only when
    // no queued epoch is open beside it or was passed by it.
    bool at_once_flush_covers(int target) const {
        return (target == -1 && epochs_.empty()) || target == at_once_->target() ||
               (at_once_->kind() == EpochKind::lock_all && target >= 0 && target < size());
    }
    // The transport's fence (over an inline transport, what completes written calls),
    // with nothing held (settle()): fence_transport, and no write left unfenced.
    bool fence_at_once() {
        if (!fence_transport()) return false;
        fenced_runs_ = runs_;
        return true;
    }
    bool fence_transport() {
        if (flush_is_fence_) {
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            return true;
        }
        return !is_error(transport_.flush(fence_peer(), nullptr));
    }
    // What the transport's fence of the at-once epoch names: its lock target, or this rank
    // (lock_all).
    int fence_peer() const { return at_once_->target() >= 0 ? at_once_->target() : rank_; }
    // A call of the at-once epoch a shared section may take (rma_shared, rma_concurrent),
    // as far as the window and the target's rank tell.
    bool call_in_section(const RmaCall &call) const {
        return at_once_ && unlocked_check() && !deferred_ && call.target >= 0 &&
               call.target < size() && verbose_level() < 3;
    }
    // No checker, or one whose hooks run here: with one thread, serialized as it is (with
    // locking on, a checked window's calls take the progress lock, as the checker's hooks
    // may block and call UCX, which a shared section must not).
    bool unlocked_check() const { return !check_ || !threads::active(); }
    // rma_shared's body, for a call call_in_section takes.
    bool rma_shared_held(const RmaCall &call);
    // A flush of `target` the at-once epoch alone answers in a shared section
    // (flush_shared, flush_concurrent).
    bool flush_in_section(int target) const {
        return at_once_ && unlocked_check() && !deferred_ && !is_error(at_once_->failure()) &&
               at_once_flush_covers(target);
    }
    // The closing call of the at-once epoch: true if it completed here; otherwise the
    // epoch joined the queue (join_queue), closed with the locks it could not release.
    template <bool shared>
    [[gnu::always_inline]] inline bool close_at_once();
    void join_queue();
    Status flush_general(int target, Request **request, bool local);
    // progress() for an opening call; counts epoch `id` (0: none) in epochs_deferred when it
    // is still waiting to activate.
    void progress_opened(std::uint64_t id);
    void close_epoch(Epoch &epoch, Request *request) {
        if (open_.back() == &epoch)  // the usual case: the newest open epoch
            open_.pop_back();
        else
            close_inner_epoch(epoch);
        epoch.close(request);
    }
    void close_inner_epoch(Epoch &epoch);
    void retire(std::unique_ptr<Epoch> epoch);
    // The completed epoch at the queue's front retired and out of the queue.
    void retire_front() {
        retire(std::move(epochs_.front()));
        epochs_.pop_front();
    }
    Status close_open(Epoch *epoch, Request **request);
    // The open epochs' queries, here so that lock() and the other opening calls inline
    // them.
    Epoch *open_of(EpochKind kind) const {
        for (Epoch *epoch : open_)
            if (epoch->kind() == kind) return epoch;
        return nullptr;
    }
    Epoch *open_lock(int target) const {
        for (Epoch *epoch : open_)
            if (epoch->kind() == EpochKind::lock && epoch->target() == target) return epoch;
        return nullptr;
    }
    // A fence opens an epoch that only the next fence closes. Programs commonly switch to
    // locks or PSCW after a fence without MPI_MODE_NOSUCCEED; that is fine as long as the
    // fence epoch issued no calls (it then ends here), and an RMA_SYNC error otherwise.
    Status end_unused_fence() {
        Epoch *fence = open_of(EpochKind::fence);
        if (!fence) return Status::ok;
        if (fence->calls() > 0) return Status::err_sync;
        close_epoch(*fence, nullptr);
        return Status::ok;
    }
    Status check_group(const std::vector<int> &group) const;
    Epoch *covering_epoch(int target) const;
    // The call's target bytes lie in the target's window (attached regions: dynamic);
    // *byte_offset: where its element 0 starts.
    Status check_range(const RmaCall &call, std::uint64_t *byte_offset);
    Status check_range(const RmaCall &call, const TypeLayout &target, std::uint64_t *byte_offset) {
        if (!target.contiguous || config_.flavor == Flavor::dynamic)
            return check_span(call, target, byte_offset);
        // One block at offset 0 (what target_span finds, in fewer steps): target_count *
        // size bytes from the displacement.
        std::int64_t first = 0, bytes = 0, end = 0;
        *byte_offset = 0;
        if (call.displacement < 0 ||
            __builtin_mul_overflow(static_cast<std::int64_t>(target.size),
                                   static_cast<std::int64_t>(call.target_count), &bytes))
            return Status::err_range;
        if (bytes <= 0) return Status::ok;  // no data moves
        if (__builtin_mul_overflow(static_cast<std::int64_t>(call.displacement),
                                   static_cast<std::int64_t>(config_.disp_units[call.target]),
                                   &first) ||
            __builtin_add_overflow(first, bytes, &end))
            return Status::err_range;
        *byte_offset = static_cast<std::uint64_t>(first);
        return static_cast<std::uint64_t>(end) <= config_.sizes[call.target] ? Status::ok
                                                                             : Status::err_range;
    }
    // check_range of any type (target_span), and on dynamic windows.
    Status check_span(const RmaCall &call, const TypeLayout &target, std::uint64_t *byte_offset);
    // rma() past its inline part; `tried_at_once`: run_at_once turned it down.
    Status rma_general(const RmaCall &call, Request **request, const char **cause,
                       bool tried_at_once);
    // Runs a call of the at-once epoch now if rma_contiguous or rma_atomic takes it (its
    // failure kept for the epoch's closing call); false, with nothing done, otherwise.
    // `with_request`: an R-call.
    bool run_at_once(const RmaCall &call, Status *status, bool with_request) {
        // (a checked window's checker reads result buffers as the call runs: not held)
        if (!rma_contiguous(call, status, !with_request && !check_) && !rma_atomic(call, status))
            return false;
        if (is_error(*status))
            at_once_->fail(*status);
        else if (check_)
            check_ran(call, with_request, *at_once_);
        return true;
    }
    // A blocking call of an active epoch toward a target it may reach now, run as
    // run_at_once runs the at-once epoch's (rma_general, before it builds an Operation).
    bool run_now(const RmaCall &call, Epoch &epoch);
    // The transport's mapped_window, from the last target's whole map (remembered).
    std::uint8_t *mapped_window(int target, std::uint64_t offset, std::size_t length) {
        return reach(mapped_, &transport::Transport::mapped_window_whole, target, offset, length);
    }
    // The same for copies (Transport::copy_window_whole).
    std::uint8_t *copy_window(int target, std::uint64_t offset, std::size_t length) {
        return reach(copied_, &transport::Transport::copy_window_whole, target, offset, length);
    }
    // The target's accumulate stripes as this process maps them (mapped_control_word of
    // stripe 0; null: not mapped), from the last target asked for (remembered).
    std::uint64_t *stripe_words(int target) {
        if (target != stripes_.target) {
            stripes_.words = transport_.mapped_control_word(
                target, layout::ControlLayout::accumulate_stripe(0));
            stripes_.target = target;
        }
        return stripes_.words;
    }
    struct CachedStripes {
        int target = -1;
        std::uint64_t *words = nullptr;
    };
    struct CachedMapping {  // a whole map of the last target asked for
        int target = -1;
        transport::WholeMapping whole;
    };
    using WholeMap = std::uint8_t *(transport::Transport::*)(int, std::uint64_t *);
    std::uint8_t *reach(CachedMapping &cache, WholeMap whole_map, int target, std::uint64_t offset,
                        std::size_t length) {
        if (target != cache.target) {
            cache.whole.base = (transport_.*whole_map)(target, &cache.whole.length);
            cache.target = target;
        }
        return cache.whole.at(offset, length);
    }
    // `may_defer`: the transport may hold the copy until settle() (a call whose request
    // completes now may not, nor a call the race checker watches).
    bool rma_contiguous(const RmaCall &call, Status *status, bool may_defer);
    // Its body; in a shared section (rma_shared, rma_concurrent) it takes only copies into
    // mapped memory.
    enum class Sharing { locked, serialized, concurrent };
    template <Sharing sharing>
    bool contiguous(const RmaCall &call, Status *status, bool may_defer);
    // The block rma_contiguous ran last on a checked window: its target bytes at `offset`,
    // its origin (put) or result (get) buffer `local`, `bytes` long each.
    struct RanBlock {
        std::uint64_t offset = 0;
        std::size_t bytes = 0;
        const void *local = nullptr;
    } ran_block_;
    // The copies rma_contiguous let the transport hold are made: at the at-once epoch's
    // flush and close, before any call takes the general path, and when the epoch joins
    // the queue. A failure fails the at-once epoch (its closing call reports it).
    void settle() {
        if (!deferred_) return;
        deferred_ = false;
        const Status status = transport_.settle();
        if (is_error(status) && at_once_) at_once_->fail(status);
    }
    bool rma_atomic(const RmaCall &call, Status *status);
    // Its body; `shared`: in a shared section (rma_shared), which takes only calls of the
    // window's last atomic shape.
    template <bool shared>
    bool atomic(const RmaCall &call, Status *status);
    // Whether `candidate` may activate now, with the first `before` epochs of the queue
    // ahead of it (the activation rule).
    bool may_activate(const Epoch &candidate, std::size_t before) const;
    bool may_overlap(const Epoch &candidate, const Epoch &earlier) const;
    bool reorder_allows(const Epoch &candidate, const Epoch &earlier) const;
    void activate(Epoch &epoch);
    void start_target(Epoch &epoch, int rank, TargetState &state);
    bool advance(Epoch &epoch);
    bool advance_passive(Epoch &epoch);
    bool advance_fence(Epoch &epoch);
    bool advance_access(Epoch &epoch);
    bool grant_arrived(Epoch &epoch, int peer, TargetState &state);
    bool advance_exposure(Epoch &epoch);
    bool exposure_finished(const Epoch &epoch) const;
    bool run_pending(Epoch &epoch, TargetState &state);
    Status run(Operation &operation, std::uint64_t byte_offset, const Epoch &epoch);
    void check_issue(Operation &operation, bool recorded);
    void check_run(const Operation &operation, std::uint64_t byte_offset, const Epoch &epoch);
    // A call run as it was issued (run_at_once, run_now) in `epoch`: checked and logged
    // as check_issue and check_run do for the queued path. The at-once epoch's locks:
    // taken, and, before any is released at once, its calls complete and the release
    // published (check_closing_at_once).
    void check_ran(const RmaCall &call, bool with_request, const Epoch &epoch);
    void check_closing_at_once(Epoch &epoch);
    // A flush request found done (flush_done): the checker learns of the remote completion.
    void flush_finished(const Flush &flush);
    void check_flushed(int target, bool local);
    bool remote_complete(int peer, std::uint64_t upto, Status *failure);
    bool flushed_to(Epoch &epoch, int peer, TargetState &state);
    bool ordered_by_barrier(Epoch &epoch, int peer, TargetState &state);
    bool flush_done(Flush &flush);
    std::uint64_t control_word(std::size_t offset) const;
    void notify(int peer, std::size_t offset, std::uint64_t count, Notices &notices);
    void send_fence_round(Epoch &epoch);
    bool fence_round_heard(int round, std::uint64_t sequence) const {
        return fence_round_missing(round, sequence) == 0;
    }
    // How many notices of round `round` of the fence barrier numbered `sequence` have
    // not arrived.
    unsigned fence_round_missing(int round, std::uint64_t sequence) const;
    Status check_notify(const RmaCall &call);

    transport::Transport &transport_;
    const layout::ControlLayout &layout_;
    // The transport's, asked once: the sweep consults them at every step.
    const int rank_;
    sync::AtOnceLocks at_once_locks_;  // the at-once path's lock words
    CachedMapping mapped_, copied_;    // mapped_window's and copy_window's
    CachedStripes stripes_;            // stripe_words'
    const int size_;
    const bool completes_inline_;
    const bool locked_accumulates_;  // Capabilities::locked_accumulates
    const bool flush_is_fence_;  // Capabilities::flush_is_fence
    WindowConfig config_;
    std::deque<std::unique_ptr<Epoch>> epochs_;  // not completed, in application order
    std::vector<Epoch *> open_;                  // open at application level
    std::vector<Flush> flushes_;
    // Completed epochs kept for reuse by open_epoch (a short lock epoch would otherwise
    // allocate an epoch and its target state every time); bounded.
    std::vector<std::unique_ptr<Epoch>> spare_epochs_;
    // The local halves of the matching counters (doc/design.md §4): accesses requested
    // toward each peer (a), exposures opened toward each peer (e) (both sized at the
    // first PSCW epoch: windows without one pay nothing a peer), fences entered.
    std::vector<std::uint64_t> accesses_;
    std::vector<std::uint64_t> exposures_;
    // Notices sent to each peer's done and grant counters (Window::notify), sized with
    // accesses_ and exposures_.
    std::vector<std::uint64_t> dones_sent_;
    std::vector<std::uint64_t> grants_sent_;
    std::uint64_t fences_ = 0;
    std::uint64_t next_epoch_id_ = 1;
    std::uint64_t next_age_ = 1;
    // The last accumulate-family shape (kind, op, datatype) rma_atomic saw, and whether it
    // takes it (Operation::check accepted it, a predefined type whose elements lie back to
    // back). Only predefined datatypes and ops are ever usable, and their handles live as
    // long as the process.
    struct AtomicShape {
        RmaKind kind = RmaKind::put;  // put: none yet
        MPI_Op op = MPI_OP_NULL;
        MPI_Datatype type = MPI_DATATYPE_NULL;
        const TypeLayout *layout = nullptr;  // of type, when usable
        std::size_t width = 0;               // of an element, when usable
        bool usable = false;
        // One element is `atomic`'s op (apply_plain_of_width): integer data of 8, 4, 2 or
        // 1 bytes with an op one atomic does, and compare_and_swap of such data.
        bool plain = false;
        transport::AtomicOp atomic = transport::AtomicOp::fetch_add;
        bool operand_zero = false;  // MPI_NO_OP: add 0, the origin is not read
        ReduceKernel kernel;        // the op's arithmetic, unless MPI_REPLACE or MPI_NO_OP
    };
    AtomicShape atomic_shape_;
    static AtomicShape atomic_shape(const RmaCall &call);
    // Epochs of more than one application thread were queued (MPI_THREAD_MULTIPLE):
    // activation may then skip another thread's waiting epochs (may_activate).
    bool several_openers_ = false;
    std::uint64_t runs_ = 0;               // operations that needed a flush (PeerFlush)
    std::vector<PeerFlush> peer_flushes_;  // by peer
    // The peers something ran toward since a flush of every peer last found them
    // complete: what MPI_Win_flush_all waits for, so it never walks all p peers.
    std::vector<int> unflushed_;
    // An operation that needs a flush ran toward `peer`: numbered, and the peer listed.
    void ran_toward(int peer) {
        PeerFlush &flush = peer_flushes_[peer];
        flush.last_run = ++runs_;
        if (!flush.listed) {
            flush.listed = true;
            unflushed_.push_back(peer);
        }
    }
    int transport_flushes_ = 0;            // in flight
    std::uint64_t fenced_runs_ = 0;        // runs_ at the at-once epoch's last fence
    // Concurrent puts (rma_concurrent) ran in the at-once epoch: they count no run, so
    // every flush of the epoch and its close fence (cleared by the close alone: a fence
    // of one thread does not order another's stores).
    std::atomic<bool> concurrent_puts_{false};
    // Something written since the at-once epoch's last fence.
    bool unfenced() const {
        return runs_ != fenced_runs_ || concurrent_puts_.load(std::memory_order_relaxed);
    }
    // A bit per target: take_target took it in the open at-once lock_all epoch (set
    // after its lock, release; cleared by forget_taken), for concurrent calls.
    std::unique_ptr<std::atomic<std::uint64_t>[]> taken_;
    NotifyCounters notify_;
    // Per target: how many notification counters it had when we last read its count
    // (sized at the first notified call).
    std::vector<std::uint32_t> notify_known_;
    SweepLink sweep_link_;
    check::WindowCheck *check_ = nullptr;
    // The open at-once epoch (EpochPath::at_once), if any: in open_, not in epochs_. It
    // lives in at_once_home_, kept from one at-once epoch to the next (a lock epoch taken
    // and released again and again allocates nothing and moves nothing); an at-once
    // epoch that joins the queue takes its home with it.
    Epoch *at_once_ = nullptr;
    bool deferred_ = false;  // rma_contiguous let the transport hold copies (settle)
    std::unique_ptr<Epoch> at_once_home_;
};

}  // namespace nbrma::engine

#endif
