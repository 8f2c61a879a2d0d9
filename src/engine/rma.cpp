// RMA calls on a window (put, get, accumulates, atomics, notified RMA): the target range
// checks against the window and the datatype's true bounds, the at-once epoch's own
// paths (a contiguous copy or 64-bit atomics), and the general path that
// issues an operation to the transport, or records it in its epoch until the epoch is
// active and the target's lock held, then replays it (run_pending).
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "check/races.hpp"
#include "common/copy.hpp"
#include "common/log.hpp"
#include "engine/accumulate_stripes.hpp"
#include "engine/reduce.hpp"
#include "engine/window.hpp"
#include "transport/cpu_atomics.hpp"

namespace nbrma::engine {

using transport::Region;
using transport::RemoteAddress;

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
    return check_range(call, *target, byte_offset);
}

Status Window::check_span(const RmaCall &call, const TypeLayout &target,
                          std::uint64_t *byte_offset) {
    const bool dynamic = config_.flavor == Flavor::dynamic;
    if (call.displacement < 0 && !dynamic) return Status::err_range;
    std::uint64_t low, high;
    Status status = target_span(call, target, dynamic ? 1 : config_.disp_units[call.target],
                                byte_offset, &low, &high);
    if (is_error(status) || low == high) return status;
    if (!dynamic) return high <= config_.sizes[call.target] ? Status::ok : Status::err_range;
    // [low, high) must lie in regions the target attached back to back (the transport
    // keeps an origin-side copy of the target's directory, re-read when the target's
    // generation word changed).
    return transport_.check_attached(call.target, low, high);
}

namespace {

// Whether `count` elements of `layout` are one block of bytes, and where it starts
// relative to the buffer (`shift`): contiguous types at any count; at count 1, any type
// of a single segment (a subarray of one row, a type with a lower bound or holes at its
// ends).
bool one_block(const TypeLayout &layout, MPI_Aint count, std::int64_t *shift) {
    *shift = 0;
    if (layout.contiguous) return true;
    if (count != 1 || layout.segments.size() != 1) return false;
    *shift = layout.segments[0].offset;
    return true;
}

}  // namespace

// A put or get of data that is one block at both ends (predefined types, derived ones
// that are one block: one_block) in the at-once epoch, whose transport completes every
// call inline (or, `may_defer`, holds it until settle()): the checks of Operation::check
// and check_range, then one transport call, with no Operation. false, with nothing done,
// for any other call and for every call those checks would refuse: the general path then
// refuses it, naming the cause.
template <Window::Sharing sharing>
bool Window::contiguous(const RmaCall &call, Status *status, bool may_defer) {
    constexpr bool shared = sharing != Sharing::locked;
    constexpr bool concurrent = sharing == Sharing::concurrent;
    const bool put = call.kind == RmaKind::put;
    if ((!put && call.kind != RmaKind::get) || call.notify) return false;
    const MPI_Datatype local_type = put ? call.origin_type : call.result_type;
    const MPI_Aint local_count = put ? call.origin_count : call.result_count;
    const void *buffer = put ? call.origin : call.result;
    const TypeLayout *target, *local;
    std::size_t bytes = 0, local_bytes = 0;
    std::int64_t target_shift = 0, local_shift = 0;
    std::uintptr_t start = 0, end = 0;
    const auto layout = [](MPI_Datatype type, const TypeLayout **found) {
        if constexpr (shared) return type_layout_cached(type, found);
        return !is_error(type_layout_get(type, found));
    };
    if (!layout(call.target_type, &target) ||
        !one_block(*target, call.target_count, &target_shift) ||
        !type_data_bytes(*target, call.target_count, &bytes) || bytes == 0)
        return false;
    if (local_type == call.target_type && local_count == call.target_count) {
        local_shift = target_shift;  // (the usual call: the same data at both ends)
    } else if (!layout(local_type, &local) || !one_block(*local, local_count, &local_shift) ||
               !type_data_bytes(*local, local_count, &local_bytes) || bytes != local_bytes) {
        return false;
    }
    if (__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(buffer), local_shift, &start) ||
        __builtin_add_overflow(start, bytes, &end))
        return false;
    std::uint64_t offset = 0;
    if (is_error(check_range(call, *target, &offset))) return false;
    // (check_range found the block, offset + target_shift, inside the window)
    offset = static_cast<std::uint64_t>(static_cast<std::int64_t>(offset) + target_shift);
    auto *local_block = reinterpret_cast<std::uint8_t *>(start);
    std::uint8_t *mapped;
    if constexpr (concurrent) {  // (not copy_window: its cache is the window's)
        transport::WholeMapping whole;
        whole.base = transport_.copy_window_whole(call.target, &whole.length);
        mapped = whole.at(offset, bytes);
    } else {
        mapped = copy_window(call.target, offset, bytes);
    }
    if (shared && !mapped) return false;
    if (check_) ran_block_ = {offset, bytes, local_block};
    if constexpr (!concurrent) ++next_age_;
    ++counters().rma_ops;
    if (verbose_level() >= 3)
        log(3, "%s to %d at +%llu (contiguous)", rma_kind_name(call.kind), call.target,
            static_cast<unsigned long long>(offset));
    const RemoteAddress address{Region::window, offset};
    if (put) {
        if (mapped) {
            copy_bytes(mapped, local_block, bytes);
            *status = Status::ok;
            if constexpr (concurrent) {  // (written once an epoch: the line stays shared)
                if (!concurrent_puts_.load(std::memory_order_relaxed))
                    concurrent_puts_.store(true, std::memory_order_relaxed);
                return true;
            }
        } else if (may_defer) {
            *status = transport_.put_deferrable(call.target, local_block, bytes, address);
            deferred_ = true;
        } else {
            *status = move_block(transport_, true, call.target, local_block, bytes, address);
        }
        // A copy into mapped memory is at the target: over a transport whose calls do not
        // complete inline (UCX) no flush follows it (over one that does, the flush is a
        // memory fence, which an epoch with MPI_MODE_NOCHECK still takes at its close).
        if (!mapped || completes_inline_) ran_toward(call.target);
    } else if (mapped) {
        copy_bytes(local_block, mapped, bytes);
        *status = Status::ok;
    } else if (may_defer) {
        *status = transport_.get_deferrable(call.target, local_block, bytes, address);
        deferred_ = true;
    } else {
        *status = move_block(transport_, false, call.target, local_block, bytes, address);
    }
    return true;
}

bool Window::rma_atomic(const RmaCall &call, Status *status) { return atomic<false>(call, status); }

namespace {
// Whether [a, a + bytes) and [b, b + bytes) share a byte.
bool overlap(const void *a, const void *b, std::size_t bytes) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    return x < y + bytes && y < x + bytes;
}
}  // namespace

// An accumulate-family call (fetch_and_op, compare_and_swap, accumulate, get_accumulate)
// of the at-once epoch, or of the one open epoch run now, over a transport that completes
// calls inline (shared memory, whose accumulates apply under the target's stripes:
// Capabilities::locked_accumulates), whose data, of one predefined type at every end, is
// one block at each (any count), into memory this process maps: the stripes of its bytes
// taken with CPU atomics, the op applied in place with plain arithmetic (one element of
// an integer op one atomic would do: apply_plain_of_width; else the shape's reduction
// kernel, which the compiler vectorizes), the stripes released. Exactly what the general
// path's accumulate_under_lock does, so the two mix on the same bytes. For a shape
// Operation::check accepted before (atomic_shape_). false, with nothing done, for anything
// else (buffers overlapping the target bytes included: the general path copies them).
template <bool shared>
bool Window::atomic(const RmaCall &call, Status *status) {
    const RmaKind kind = call.kind;
    const bool swap = kind == RmaKind::compare_and_swap;
    const bool fetching = kind != RmaKind::accumulate;
    const MPI_Aint count = call.target_count;
    const bool reads_origin = swap || call.op != MPI_NO_OP;
    if (!locked_accumulates_ || kind == RmaKind::put || kind == RmaKind::get || call.notify ||
        count < 1 ||
        ((swap || kind == RmaKind::fetch_and_op) && count != 1) ||
        (reads_origin && (call.origin_count != count || call.origin_type != call.target_type)) ||
        (fetching && (call.result_count != count || call.result_type != call.target_type)))
        return false;
    AtomicShape &shape = atomic_shape_;
    if (shape.kind != kind || shape.type != call.target_type || (!swap && shape.op != call.op)) {
        if constexpr (shared) return false;  // (atomic_shape looks types up)
        shape = atomic_shape(call);
    }
    if (!shape.usable) return false;
    const std::size_t width = shape.width;
    std::size_t bytes = 0;
    std::uintptr_t end = 0;
    if (__builtin_mul_overflow(width, static_cast<std::size_t>(count), &bytes) ||
        (reads_origin &&
         __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(call.origin), bytes, &end)) ||
        (fetching &&
         __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(call.result), bytes, &end)) ||
        (swap &&
         __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(call.compare), width, &end)))
        return false;
    std::uint64_t offset = 0;  // every element in range before the first is touched
    if (is_error(check_range(call, *shape.layout, &offset))) return false;
    std::uint8_t *mapped = mapped_window(call.target, offset, bytes);
    std::uint64_t *stripes = mapped ? stripe_words(call.target) : nullptr;
    if (!stripes || (reads_origin && overlap(call.origin, mapped, bytes)) ||
        (fetching && overlap(call.result, mapped, bytes)) ||
        (swap && overlap(call.compare, mapped, width)))
        return false;
    ++next_age_;
    ++counters().rma_ops;
    const auto *origin = static_cast<const std::uint8_t *>(call.origin);
    auto *result = static_cast<std::uint8_t *>(call.result);
    const std::uint32_t mask =
        layout::ControlLayout::accumulate_stripe_mask(offset, offset + bytes);
    stripes_lock(stripes, mask, static_cast<std::uint64_t>(rank_) + 1);
    *status = Status::ok;
    if (count == 1 && shape.plain) {
        const std::uint64_t operand =
            shape.operand_zero ? 0 : transport::load_of_width(origin, width);
        const std::uint64_t previous = transport::apply_plain_of_width(
            mapped, width, shape.atomic, operand,
            swap ? transport::load_of_width(call.compare, width) : 0);
        if (fetching) transport::store_of_width(result, width, previous);
    } else {
        if (fetching) copy_bytes(result, mapped, bytes);
        if (swap) {
            if (std::memcmp(mapped, call.compare, width) == 0) std::memcpy(mapped, origin, width);
        } else if (call.op == MPI_REPLACE) {
            copy_bytes(mapped, origin, bytes);
        } else if (call.op != MPI_NO_OP) {
            reduce_run(shape.kernel, origin, mapped, static_cast<std::size_t>(count));
        }
    }
    stripes_unlock(stripes, mask);
    return true;
}

// The atomic shape of `call` (rma_atomic): usable where Operation::check accepts the call,
// it moves data, and its type is a predefined one whose elements lie back to back; `plain`
// where one element is an atomic's op (reduce_as_atomic, and compare_and_swap of an
// integer width).
Window::AtomicShape Window::atomic_shape(const RmaCall &call) {
    AtomicShape shape;
    shape.kind = call.kind;
    shape.op = call.op;
    shape.type = call.target_type;
    bool empty = false;
    const TypeLayout *layout;
    if (is_error(Operation::check(call, &empty, nullptr)) || empty ||
        is_error(type_layout_get(call.target_type, &layout)) || layout->basic != call.target_type ||
        layout->size != layout->basic_size || !layout->contiguous)
        return shape;
    const std::size_t width = layout->size;
    const bool word = width == 8 || width == 4 || width == 2 || width == 1;
    if (call.kind == RmaKind::compare_and_swap) {
        shape.atomic = transport::AtomicOp::compare_swap;
        shape.plain = word;
    } else {
        shape.plain =
            word && reduce_as_atomic(call.op, layout->basic, &shape.atomic, &shape.operand_zero);
    }
    // (Operation::check accepted the op on the type: a kernel unless it moves data only)
    shape.usable = call.kind == RmaKind::compare_and_swap || call.op == MPI_REPLACE ||
                   call.op == MPI_NO_OP || reduce_kernel(call.op, layout->basic, &shape.kernel);
    shape.layout = layout;
    shape.width = width;
    return shape;
}

// A blocking call of an active epoch toward a target it may reach now (its lock held;
// the fence barrier passed; the target's post matched, its grant seen here if it arrived
// since the last sweep, as advance_access would) with nothing recorded before it: what
// the general path would run at once, run without an Operation by rma_contiguous (any
// transport: complete at the origin on return, as the general path's), or rma_atomic
// (a transport that completes inline). Its failure is kept for the epoch's closing
// call. false, with nothing done, for anything else.
bool Window::run_now(const RmaCall &call, Epoch &epoch) {
    if (epoch.state() != EngineState::active) return false;
    TargetState *state = epoch.find(call.target);
    if (state && epoch.kind() == EpochKind::access) grant_arrived(epoch, call.target, *state);
    const bool ready = state ? state->phase == TargetPhase::held && state->pending.empty()
                             : epoch.kind() == EpochKind::fence && epoch.barrier_passed();
    if (!ready) return false;
    // (the result buffer about to be written must not have changed since an earlier call
    // that wrote it; a call that goes on to the general path is verified there again)
    if (check_) check_->result_running(call);
    Status status;
    if (!rma_contiguous(call, &status, false) && !(completes_inline_ && rma_atomic(call, &status)))
        return false;
    epoch.count_call();
    if (!state) epoch.at(call.target).phase = TargetPhase::held;  // touched now
    if (is_error(status))
        epoch.fail(status);
    else if (check_)
        check_ran(call, false, epoch);
    return true;
}

bool Window::rma_contiguous(const RmaCall &call, Status *status, bool may_defer) {
    return contiguous<Sharing::locked>(call, status, may_defer);
}

bool Window::rma_concurrent(const RmaCall &call) {
    // (not on dynamic windows: their range check may read the target's directory anew)
    if (!call_in_section(call) || config_.flavor == Flavor::dynamic ||
        !concurrent_target(call.target))
        return false;
    Status status;
    return contiguous<Sharing::concurrent>(call, &status, false);  // (a copy: status ok)
}

bool Window::rma_shared_held(const RmaCall &call) {
    if (call.target != at_once_->target() &&
        (at_once_->kind() != EpochKind::lock_all ||
         (!at_once_->find(call.target) && !take_target<true>(call.target))))
        return false;  // (ready_at_once, its target's lock taken only if free)
    Status status;
    if (!contiguous<Sharing::serialized>(call, &status, false) && !atomic<true>(call, &status))
        return false;
    if (is_error(status))  // (as run_at_once)
        at_once_->fail(status);
    else if (check_)
        check_ran(call, false, *at_once_);
    return true;
}

Status Window::rma_general(const RmaCall &call, Request **request, const char **cause,
                           bool tried_at_once) {
    if (cause) *cause = nullptr;
    if (call.target < 0 || call.target >= size()) return Status::err_rank;
    settle();  // (calls run in program order from here on)
    if (!tried_at_once && at_once_ && ready_at_once(call.target)) {  // an R-call
        Status status;
        if (run_at_once(call, &status, request != nullptr)) {
            if (request) (*request = Request::create())->finish(status);
            return Status::ok;
        }
    }
    Epoch *epoch = covering_epoch(call.target);
    if (!epoch)  // an access epoch whose group lacks the target, or no epoch at all
        return open_of(EpochKind::access) ? Status::err_rank : Status::err_sync;
    if (request && !epoch->passive()) return Status::err_sync;  // R-calls: passive only
    if (!request && !tried_at_once && run_now(call, *epoch)) {
        if (cause) *cause = nullptr;
        return Status::ok;
    }
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
    epoch->count_call();
    TargetState &state = epoch->at(call.target);
    if (epoch->state() == EngineState::active && state.phase == TargetPhase::none)
        start_target(*epoch, call.target, state);
    if (epoch->state() != EngineState::active || state.phase != TargetPhase::held ||
        !state.pending.empty()) {
        auto operation = std::make_unique<Operation>(call, age, handle);
        operation->retain_types();  // recorded: replayed when the target is ready
        if (check_) check_issue(*operation, true);
        state.pending.push_back(std::move(operation));
        return Status::ok;
    }
    Operation operation(call, age, handle);  // runs now: no need to keep it
    if (check_) check_issue(operation, false);
    status = run(operation, byte_offset, *epoch);
    if (is_error(status)) epoch->fail(status);
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
    if (!transport_.peek_control(call.target, layout::ControlLayout::notify_num, &count)) {
        if (index < known) return Status::ok;
        Status status =
            read_word(transport_, call.target,
                      RemoteAddress{Region::control, layout::ControlLayout::notify_num}, &count);
        if (is_error(status)) return status;
    }
    known = static_cast<std::uint32_t>(std::min<std::uint64_t>(count, layout_.notify_capacity()));
    return index < known ? Status::ok : Status::err_notification;
}

// Runs one operation (complete at the origin when it returns) and, if it may not have
// reached its target yet, numbers it for the target's remote completion.
Status Window::run(Operation &operation, std::uint64_t byte_offset, const Epoch &epoch) {
    if (check_) check_run(operation, byte_offset, epoch);
    TargetView view{&transport_, byte_offset, config_.hardware_atomics};
    if (operation.call().notify)  // the index was checked against the capacity at the call
        view.notify_offset = layout_.notification(static_cast<std::uint32_t>(operation.call().notify_index));
    Status status = operation.execute(view);
    if (check_ && !operation.request())  // its result buffer holds what it fetched now
        check_->watch_result(operation.call(), operation.result_layout(), operation.site());
    if (operation.needs_flush()) ran_toward(operation.call().target);
    return status;
}

// NBRMA_CHECK=races: a call issued gets its site; a recorded one (run later) the clock it
// was issued with. Its origin buffer is watched, and a recorded call's result buffer.
void Window::check_issue(Operation &operation, bool recorded) {
    operation.set_site(check::call_site());
    if (recorded) operation.issued_clock() = check_->snapshot();
    if (operation.request()) return;  // its request completes it
    check_->watch_origin(operation.call(), operation.site());
    if (recorded)
        check_->watch_result(operation.call(), operation.result_layout(), operation.site());
}

namespace {
check::WindowCheck::Sync check_sync(const Epoch &epoch) {
    using Sync = check::WindowCheck::Sync;
    return epoch.kind() == EpochKind::lock
               ? (epoch.mode() == sync::LockMode::exclusive ? Sync::lock_exclusive
                                                            : Sync::lock_shared)
           : epoch.kind() == EpochKind::lock_all ? Sync::lock_all
           : epoch.kind() == EpochKind::fence    ? Sync::fence
                                                 : Sync::pscw;
}

// An MPI_Rget or MPI_Rget_accumulate: complete, for its origin, once it ran.
bool fetch_request(const RmaCall &call, bool with_request) {
    return with_request && (call.kind == RmaKind::get || call.kind == RmaKind::get_accumulate);
}
}  // namespace

// NBRMA_CHECK=races: the call is checked against its target's log and logged; the result
// buffer it is about to write must not have changed since the call.
void Window::check_run(const Operation &operation, std::uint64_t byte_offset, const Epoch &epoch) {
    const RmaCall &call = operation.call();
    check_->access(call, operation.target_layout(), byte_offset, check_sync(epoch),
                   operation.site(), operation.issued_clock(), epoch.id(),
                   fetch_request(call, operation.request() != nullptr));
    if (!operation.request()) check_->result_running(call);
}

void Window::check_ran(const RmaCall &call, bool with_request, const Epoch &epoch) {
    const std::uint64_t site = check::call_site();
    const bool fetch = fetch_request(call, with_request);
    if (call.kind == RmaKind::put || call.kind == RmaKind::get) {  // rma_contiguous ran it
        check_->block(call, ran_block_.offset, ran_block_.bytes, ran_block_.local,
                      check_sync(epoch), site, epoch.id(), fetch, !with_request);
        return;
    }
    static const std::vector<std::uint64_t> now;  // issued as it runs: the clock now
    std::uint64_t byte_offset = 0;
    if (is_error(check_range(call, &byte_offset))) return;
    check_->access(call, nullptr, byte_offset, check_sync(epoch), site, now, epoch.id(), fetch);
    if (with_request) return;  // its request completes it
    check_->watch_origin(call, site);
    check_->watch_result(call, nullptr, site);
}

bool Window::run_pending(Epoch &epoch, TargetState &state) {
    bool moved = false;
    while (!state.pending.empty()) {
        std::unique_ptr<Operation> operation = std::move(state.pending.front());
        state.pending.pop_front();
        ++counters().rma_ops_replayed;
        std::uint64_t byte_offset = 0;
        Status status = check_range(operation->call(), &byte_offset);
        if (!is_error(status)) status = run(*operation, byte_offset, epoch);
        if (is_error(status)) epoch.fail(status);
        if (operation->request()) operation->request()->finish(status);
        moved = true;
    }
    return moved;
}

}  // namespace nbrma::engine
