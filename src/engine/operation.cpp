#include "engine/operation.hpp"

#include <cstdint>
#include <cstring>
#include <utility>

#include "common/copy.hpp"
#include "common/log.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "engine/accumulate_stripes.hpp"
#include "engine/reduce.hpp"
#include "layout/control_region.hpp"
#include "transport/cpu_atomics.hpp"

namespace nbrma::engine {

using transport::AtomicOp;
using transport::Region;
using transport::RemoteAddress;

namespace {

// Counts a batch of transport operations; over shm they all complete inline.
class Pending final : public transport::Completion {
  public:
    Status track(Status posted) {
        if (posted == Status::in_progress) ++count_;
        if (is_error(posted) && !is_error(failure_)) failure_ = posted;
        return failure_;
    }
    void on_complete(Status status) override {
        --count_;
        if (is_error(status) && !is_error(failure_)) failure_ = status;
    }
    Status wait(transport::Transport &transport) {
        Backoff backoff;
        while (count_ > 0) {
            if (transport.poll() == 0 && count_ > 0) backoff.pause();
        }
        return failure_;
    }

  private:
    int count_ = 0;
    Status failure_ = Status::ok;
};

bool is_predefined(MPI_Datatype type) {
    int envelope[4];
    if (PMPI_Type_get_envelope(type, &envelope[0], &envelope[1], &envelope[2], &envelope[3]) !=
        MPI_SUCCESS)
        return false;
    return envelope[3] == MPI_COMBINER_NAMED;
}

bool is_fetching(RmaKind kind) {
    return kind == RmaKind::get_accumulate || kind == RmaKind::fetch_and_op ||
           kind == RmaKind::compare_and_swap;
}

// Bytes for an operand or a fetched value: on the stack for the one- and two-word
// atomics that dominate (no allocation per call), else on the heap. data() is null
// when empty.
class Scratch {
  public:
    explicit Scratch(std::size_t bytes) : bytes_(bytes) {
        if (bytes > sizeof small_) large_.resize(bytes);
    }
    std::uint8_t *data() {
        if (bytes_ == 0) return nullptr;
        return bytes_ <= sizeof small_ ? small_ : large_.data();
    }
    bool empty() const { return bytes_ == 0; }

  private:
    std::size_t bytes_;
    alignas(16) std::uint8_t small_[64];
    std::vector<std::uint8_t> large_;
};

enum class Direction { to_target, from_target };

// Moves `count` elements of the target layout between the packed `buffer` and the
// target window at `byte_offset`: a copy per merged segment where the transport lets
// copies be made into the target's memory (Transport::copy_window_whole), else one
// transport call per segment; stops at the first segment the transport refuses. Whether
// every segment was such a copy.
bool transfer(transport::Transport &transport, int target, const TypeLayout &layout,
              std::size_t count, std::uint64_t byte_offset, std::uint8_t *buffer,
              Direction direction, Pending &pending) {
    transport::WholeMapping mapped;
    mapped.base = transport.copy_window_whole(target, &mapped.length);
    bool all_copied = true;
    std::size_t cursor = 0;
    type_for_each_segment(layout, count, [&](std::int64_t offset, std::size_t length) {
        const std::uint64_t at = byte_offset + static_cast<std::uint64_t>(offset);
        if (std::uint8_t *there = mapped.at(at, length)) {
            if (direction == Direction::to_target)
                copy_bytes(there, buffer + cursor, length);
            else
                copy_bytes(buffer + cursor, there, length);
            cursor += length;
            return true;
        }
        all_copied = false;
        const RemoteAddress address{Region::window, at};
        Status status =
            pending.track(direction == Direction::to_target
                              ? transport.put(target, buffer + cursor, length, address, &pending)
                              : transport.get(target, buffer + cursor, length, address, &pending));
        cursor += length;
        return !is_error(status);
    });
    return all_copied;
}

}  // namespace

const char *rma_kind_name(RmaKind kind) {
    switch (kind) {
        case RmaKind::put: return "put";
        case RmaKind::get: return "get";
        case RmaKind::accumulate: return "accumulate";
        case RmaKind::get_accumulate: return "get_accumulate";
        case RmaKind::fetch_and_op: return "fetch_and_op";
        case RmaKind::compare_and_swap: return "compare_and_swap";
    }
    return "?";
}

namespace {
static_assert(sizeof(MPI_Datatype) <= sizeof(void *), "a datatype handle fits a pointer");

void free_type(void *handle) {
    auto type = static_cast<MPI_Datatype>(reinterpret_cast<std::intptr_t>(handle));
    (void)PMPI_Type_free(&type);
}
}  // namespace

// A replayed operation may end on the progress thread, or under the progress lock: the
// MPICH call goes through the deferred queue (threads.hpp).
Operation::~Operation() {
    for (MPI_Datatype type : retained_)
        threads::defer(free_type, reinterpret_cast<void *>(static_cast<std::intptr_t>(type)));
}

void Operation::retain_types() {
    for (MPI_Datatype *type : {&call_.origin_type, &call_.result_type, &call_.target_type}) {
        if (*type == MPI_DATATYPE_NULL || is_predefined(*type)) continue;
        MPI_Datatype copy;
        if (PMPI_Type_dup(*type, &copy) != MPI_SUCCESS) continue;
        retained_.push_back(copy);
        *type = copy;
    }
    const std::pair<MPI_Datatype, const TypeLayout **> sides[] = {
        {call_.origin_type, &origin_layout_},
        {call_.result_type, &result_layout_},
        {call_.target_type, &target_layout_}};
    for (const auto &[type, cached] : sides)
        if (type != MPI_DATATYPE_NULL && is_error(type_layout_get(type, cached))) *cached = nullptr;
}

namespace {

// A buffer's `count` elements must lie at addresses that fit in 64 bits, so that the
// offsets type_for_each_segment computes for them are representable.
bool buffer_span_ok(const void *buffer, const TypeLayout &layout, MPI_Aint count) {
    std::int64_t low = 0, high = 0;
    std::uint64_t address = 0;
    return type_span(layout, count, &low, &high) &&
           !__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(buffer), low, &address) &&
           !__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(buffer), high, &address);
}

Status refuse(Status status, const char *why, const char **cause) {
    if (cause && is_error(status)) *cause = why;
    return status;
}

}  // namespace

Status Operation::check(const RmaCall &call, bool *empty, const char **cause) {
    *empty = false;
    if (cause) *cause = nullptr;
    if (call.origin_count < 0 || call.target_count < 0 || call.result_count < 0)
        return refuse(Status::err_count, "negative count", cause);
    // Only the fetching calls may use MPI_NO_OP (MPI-4.0 §12.3.4).
    if (call.kind == RmaKind::accumulate && call.op == MPI_NO_OP)
        return refuse(Status::err_op, "MPI_NO_OP is for the fetching calls only", cause);
    const TypeLayout *target = nullptr, *origin = nullptr, *result = nullptr;
    Status status = type_layout_get(call.target_type, &target);
    // MPI_Fetch_and_op and MPI_Compare_and_swap take one predefined type (its layout is
    // its own basic type; a derived type's is a leaf's).
    if ((call.kind == RmaKind::compare_and_swap || call.kind == RmaKind::fetch_and_op) &&
        (is_error(status) || target->basic != call.target_type))
        return refuse(Status::err_type, "the datatype must be a predefined one", cause);
    if (is_error(status)) return refuse(status, "bad target datatype", cause);
    // Data sizes beyond 64 bits are a count no buffer can have (the target range is
    // checked by the window).
    std::size_t target_bytes = 0;
    if (!type_data_bytes(*target, call.target_count, &target_bytes))
        return refuse(Status::err_count, "target data beyond 64 bits", cause);
    std::size_t origin_bytes = target_bytes, result_bytes = target_bytes;
    // A get's buffer is its result; MPI_NO_OP ignores the origin buffer.
    const bool uses_origin = call.kind == RmaKind::put || call.kind == RmaKind::compare_and_swap ||
                             (call.kind != RmaKind::get && call.op != MPI_NO_OP);
    const bool uses_result = call.kind == RmaKind::get || is_fetching(call.kind);
    if (uses_origin) {
        status = type_layout_get(call.origin_type, &origin);
        if (is_error(status)) return refuse(status, "bad origin datatype", cause);
        if (!type_data_bytes(*origin, call.origin_count, &origin_bytes) ||
            !buffer_span_ok(call.origin, *origin, call.origin_count))
            return refuse(Status::err_count,
                          "origin buffer beyond 64 bits (count times datatype extent)", cause);
    }
    if (uses_result) {
        status = type_layout_get(call.result_type, &result);
        if (is_error(status)) return refuse(status, "bad result datatype", cause);
        if (!type_data_bytes(*result, call.result_count, &result_bytes) ||
            !buffer_span_ok(call.result, *result, call.result_count))
            return refuse(Status::err_count,
                          "result buffer beyond 64 bits (count times datatype extent)", cause);
    }
    const bool moves_data = call.kind == RmaKind::put || call.kind == RmaKind::get;
    if (target_bytes == 0 || origin_bytes == 0 || result_bytes == 0) {
        *empty = true;
        return moves_data ? Status::ok : refuse(reduce_check_op(call.op), "bad op", cause);
    }
    if (origin_bytes != target_bytes)
        return refuse(Status::err_type, "origin and target data sizes differ", cause);
    if (result_bytes != target_bytes)
        return refuse(Status::err_type, "result and target data sizes differ", cause);
    if (moves_data) return Status::ok;
    // Accumulates: one predefined element type, the same on every side (MPI-4.0
    // §12.3.4), and a predefined op.
    if (target->basic == MPI_DATATYPE_NULL)
        return refuse(Status::err_type, "target datatype is not built from one basic type", cause);
    if (origin && !reduce_same_basic(origin->basic, target->basic))
        return refuse(Status::err_type, "origin and target basic datatypes differ", cause);
    if (result && !reduce_same_basic(result->basic, target->basic))
        return refuse(Status::err_type, "result and target basic datatypes differ", cause);
    if (call.kind == RmaKind::compare_and_swap)
        return refuse(reduce_check_compare_swap(target->basic),
                      "compare_and_swap needs an integer, logical or byte datatype", cause);
    status = reduce_check(call.op, target->basic);
    if (status == Status::err_op) return refuse(status, "op not defined for this datatype", cause);
    if (status == Status::err_type) return refuse(status, "no reduction for this datatype", cause);
    return refuse(status, "op not supported on this datatype", cause);
}

Status Operation::execute(const TargetView &view) {
    ++counters().rma_ops;
    if (verbose_level() >= 3)  // skip the varargs call in the common case
        log(3, "%s to %d at +%llu", rma_kind_name(call_.kind), call_.target,
            static_cast<unsigned long long>(view.byte_offset));
    Status status;
    switch (call_.kind) {
        case RmaKind::put: status = execute_put(view); break;
        case RmaKind::get: status = execute_get(view); break;
        default: status = execute_accumulate(view); break;
    }
    if (view.notify_offset == TargetView::no_notify || is_error(status)) return status;
    return notify(view);
}

// The notification of MPIX_Put_notify and friends (doc/design.md §8): one fetch-add on the
// target's counter, ordered behind the data by a transport fence (a get's data already
// arrived: execute_get waited for it, so the target may overwrite once it counts).
Status Operation::notify(const TargetView &view) {
    transport::Transport &transport = *view.transport;
    Status status = transport.fence(call_.target);
    if (is_error(status)) return status;
    Pending pending;
    needs_flush_ = true;  // the add may still be on its way
    (void)pending.track(transport.atomic(call_.target, AtomicOp::fetch_add,
                                   RemoteAddress{Region::control, view.notify_offset}, 1, 0,
                                   nullptr, &pending));
    return pending.wait(transport);
}

Status read_word(transport::Transport &transport, int peer, RemoteAddress source,
                 std::uint64_t *value) {
    Pending pending;
    (void)pending.track(transport.get(peer, value, sizeof *value, source, &pending));
    return pending.wait(transport);
}

Status move_block(transport::Transport &transport, bool put, int peer, std::uint8_t *buffer,
                  std::size_t length, RemoteAddress address) {
    Pending pending;
    (void)pending.track(put ? transport.put(peer, buffer, length, address, &pending)
                            : transport.get(peer, buffer, length, address, &pending));
    return pending.wait(transport);
}

Status Operation::execute_put(const TargetView &view) {
    const TypeLayout *origin, *target;
    if (is_error(layout(call_.origin_type, origin_layout_, &origin)) ||
        is_error(layout(call_.target_type, target_layout_, &target)))
        return Status::err_type;
    const std::size_t bytes = origin->size * static_cast<std::size_t>(call_.origin_count);
    if (bytes == 0) return Status::ok;
    std::vector<std::uint8_t> staging;
    const std::uint8_t *source = static_cast<const std::uint8_t *>(call_.origin);
    if (!origin->contiguous) {
        staging.resize(bytes);
        type_pack(*origin, call_.origin, static_cast<std::size_t>(call_.origin_count),
                  staging.data());
        source = staging.data();
    }
    Pending pending;
    const bool copied = transfer(*view.transport, call_.target, *target,
                                 static_cast<std::size_t>(call_.target_count), view.byte_offset,
                                 const_cast<std::uint8_t *>(source), Direction::to_target, pending);
    // copies into the target's memory are there (a transport whose calls complete inline
    // keeps its flush: the memory fence a MPI_MODE_NOCHECK epoch takes at its close)
    needs_flush_ = !copied || view.transport->capabilities().completes_inline;
    return pending.wait(*view.transport);
}

Status Operation::execute_get(const TargetView &view) {
    const TypeLayout *origin, *target;
    if (is_error(layout(call_.result_type, result_layout_, &origin)) ||
        is_error(layout(call_.target_type, target_layout_, &target)))
        return Status::err_type;
    const std::size_t bytes = origin->size * static_cast<std::size_t>(call_.result_count);
    if (bytes == 0) return Status::ok;
    std::vector<std::uint8_t> staging;
    std::uint8_t *destination = static_cast<std::uint8_t *>(call_.result);
    if (!origin->contiguous) {
        staging.resize(bytes);
        destination = staging.data();
    }
    Pending pending;
    transfer(*view.transport, call_.target, *target, static_cast<std::size_t>(call_.target_count),
             view.byte_offset, destination, Direction::from_target, pending);
    Status status = pending.wait(*view.transport);
    if (!is_error(status) && !staging.empty())
        type_unpack(*origin, staging.data(), call_.result,
                    static_cast<std::size_t>(call_.result_count));
    return status;
}

Status Operation::execute_accumulate(const TargetView &view) {
    const TypeLayout *target;
    if (is_error(layout(call_.target_type, target_layout_, &target))) return Status::err_type;
    const std::size_t bytes = target->size * static_cast<std::size_t>(call_.target_count);
    if (bytes == 0) return Status::ok;
    if (view.transport->capabilities().locked_accumulates) return accumulate_locked(view, *target);

    // The origin operand, packed (compare_and_swap: the new value).
    const bool uses_origin = call_.kind == RmaKind::compare_and_swap || call_.op != MPI_NO_OP;
    Scratch origin_packed(uses_origin ? bytes : 0);
    if (uses_origin) {
        const TypeLayout *origin;
        if (is_error(layout(call_.origin_type, origin_layout_, &origin))) return Status::err_type;
        type_pack(*origin, call_.origin,
                  call_.kind == RmaKind::accumulate || call_.kind == RmaKind::get_accumulate
                      ? static_cast<std::size_t>(call_.origin_count)
                      : 1,
                  origin_packed.data());
    }
    Scratch fetched(is_fetching(call_.kind) ? bytes : 0);

    Status status;
    AtomicOp atomic_op;
    bool operand_zero = false;
    // Elements of 8, 4, 2 or 1 bytes as the transport's atomics of that width where it
    // has them. Every word aligned, too: the transport's atomics need it, and MPI does not
    // (a window may start anywhere, a displacement may be any byte). A word's alignment
    // is the same for every origin, so accumulates to it never mix the two ways.
    const std::size_t width = target->basic_size;
    const bool word_sized =
        view.transport->supports_atomics_of_width(call_.target, Region::window, width);
    bool use_atomics =
        view.hardware_atomics && word_sized &&
        type_for_each_segment(
            *target, static_cast<std::size_t>(call_.target_count),
            [&](std::int64_t offset, std::size_t length) {
                return length % width == 0 &&
                       view.transport->atomic_aligned(
                           call_.target, RemoteAddress{Region::window, view.byte_offset + offset},
                           width);
            });
    // One atomic an element where the op is one (integer sums, bitwise ops, ...), else a
    // compare-and-swap loop an element (floating-point sums, MPI_MAX, ...): every predefined
    // type of those widths but the pairs takes no lock, whatever the op, so a word never
    // sees both.
    bool by_compare_swap = false;
    if (call_.kind == RmaKind::compare_and_swap) {
        atomic_op = AtomicOp::compare_swap;
        use_atomics = use_atomics && reduce_by_compare_swap(MPI_REPLACE, target->basic);
    } else if (use_atomics &&
               !reduce_as_atomic(call_.op, target->basic, &atomic_op, &operand_zero)) {
        use_atomics = reduce_by_compare_swap(call_.op, target->basic);
        by_compare_swap = true;
    }
    if (use_atomics && by_compare_swap)
        status =
            accumulate_by_compare_swap(view, *target, width, origin_packed.data(), fetched.data());
    else if (use_atomics)
        status = accumulate_with_atomics(view, atomic_op, operand_zero, *target, width,
                                         origin_packed.data(), fetched.data());
    else
        status = accumulate_under_lock(view, *target, origin_packed.data(), fetched.data());
    if (is_error(status) || fetched.empty()) return status;

    const TypeLayout *result;
    if (is_error(layout(call_.result_type, result_layout_, &result))) return Status::err_type;
    std::size_t result_count =
        call_.kind == RmaKind::get_accumulate ? static_cast<std::size_t>(call_.result_count) : 1;
    type_unpack(*result, fetched.data(), call_.result, result_count);
    return Status::ok;
}

// One transport atomic per element of `width` bytes (8, 4, 2 or 1).
Status Operation::accumulate_with_atomics(const TargetView &view, AtomicOp op, bool operand_zero,
                                          const TypeLayout &target, std::size_t width,
                                          std::uint8_t *origin_packed, std::uint8_t *fetched) {
    transport::Transport &transport = *view.transport;
    const std::uint64_t compare = call_.kind == RmaKind::compare_and_swap
                                      ? transport::load_of_width(call_.compare, width)
                                      : 0;
    needs_flush_ = fetched == nullptr;
    Pending pending;
    std::size_t cursor = 0;
    type_for_each_segment(
        target, static_cast<std::size_t>(call_.target_count),
        [&](std::int64_t offset, std::size_t length) {
            for (std::size_t word = 0; word < length; word += width, cursor += width) {
                const std::uint64_t operand =
                    !operand_zero && origin_packed
                        ? transport::load_of_width(origin_packed + cursor, width)
                        : 0;
                const RemoteAddress address{Region::window, view.byte_offset + offset + word};
                void *previous = fetched ? fetched + cursor : nullptr;
                const Status posted = transport.atomic_of_width(
                    call_.target, op, address, width, operand, compare, previous, &pending);
                if (is_error(pending.track(posted)))
                    return false;  // stop at the first refused word
            }
            return true;
        });
    return pending.wait(transport);
}

// A compare-and-swap loop per element (reduce_by_swapping), each atomic completed before
// the next: the swaps that took are complete at the target, so no flush is owed.
Status Operation::accumulate_by_compare_swap(const TargetView &view, const TypeLayout &target,
                                             std::size_t width, const std::uint8_t *origin_packed,
                                             std::uint8_t *fetched) {
    transport::Transport &transport = *view.transport;
    needs_flush_ = false;
    Status status = Status::ok;
    std::size_t cursor = 0;
    type_for_each_segment(
        target, static_cast<std::size_t>(call_.target_count),
        [&](std::int64_t offset, std::size_t length) {
            for (std::size_t word = 0; word < length; word += width, cursor += width) {
                const RemoteAddress address{Region::window, view.byte_offset + offset + word};
                auto atomic = [&](AtomicOp op, std::uint64_t operand, std::uint64_t compare,
                                  std::uint64_t *previous) {
                    Pending pending;
                    Status posted = pending.track(transport.atomic_of_width(
                        call_.target, op, address, width, operand, compare, previous, &pending));
                    return is_error(posted) ? posted : pending.wait(transport);
                };
                std::uint64_t before = 0;
                status = reduce_by_swapping(call_.op, target.basic, origin_packed + cursor, atomic,
                                            &before);
                if (is_error(status)) return false;
                if (fetched) transport::store_of_width(fetched + cursor, width, before);
            }
            return true;
        });
    return status;
}

// Capabilities::locked_accumulates: every accumulate-family call under the target's
// stripes, the origin's data read where it lies when it is one block (else packed), and
// what the call fetches written straight into a result buffer that is one block.
Status Operation::accumulate_locked(const TargetView &view, const TypeLayout &target) {
    const std::size_t bytes = target.size * static_cast<std::size_t>(call_.target_count);
    const bool swap = call_.kind == RmaKind::compare_and_swap;
    const bool several = call_.kind == RmaKind::accumulate || call_.kind == RmaKind::get_accumulate;
    const TypeLayout *origin = nullptr, *result = nullptr;
    if ((swap || call_.op != MPI_NO_OP) &&
        is_error(layout(call_.origin_type, origin_layout_, &origin)))
        return Status::err_type;
    if (is_fetching(call_.kind) && is_error(layout(call_.result_type, result_layout_, &result)))
        return Status::err_type;
    Scratch origin_packed(origin && !origin->contiguous ? bytes : 0);
    Scratch fetched(result && !result->contiguous ? bytes : 0);
    if (!origin_packed.empty())
        type_pack(*origin, call_.origin, several ? static_cast<std::size_t>(call_.origin_count) : 1,
                  origin_packed.data());
    const auto *operand = origin_packed.empty() ? static_cast<const std::uint8_t *>(call_.origin)
                                                : origin_packed.data();
    auto *into = fetched.empty() ? static_cast<std::uint8_t *>(call_.result) : fetched.data();
    Status status = accumulate_under_lock(view, target, origin ? operand : nullptr,
                                          result ? into : nullptr);
    if (!is_error(status) && !fetched.empty())
        type_unpack(*result, fetched.data(), call_.result,
                    several ? static_cast<std::size_t>(call_.result_count) : 1);
    return status;
}

namespace {

// The target's accumulate stripes of one call (accumulate_stripes.hpp): CPU atomics on
// the words where the transport maps them, else the transport's atomics, each completed
// before the next.
class Stripes {
  public:
    Stripes(transport::Transport &transport, int target, std::uint32_t mask)
        : transport_(transport), target_(target), mask_(mask) {}

    Status acquire() {
        const std::uint64_t me = static_cast<std::uint64_t>(transport_.rank()) + 1;
        words_ = transport_.mapped_control_word(target_, layout::ControlLayout::accumulate_stripe(0));
        if (words_) {
            stripes_lock(words_, mask_, me);
            return Status::ok;
        }
        for (std::uint32_t left = mask_; left != 0; left &= left - 1) {
            const RemoteAddress stripe = address(__builtin_ctz(left));
            Backoff backoff;
            for (;;) {
                std::uint64_t previous = ~0ull;
                Pending pending;
                Status status = pending.track(transport_.atomic(
                    target_, AtomicOp::compare_swap, stripe, me, 0, &previous, &pending));
                if (!is_error(status)) status = pending.wait(transport_);
                if (is_error(status)) {
                    (void)release(mask_ & ((1u << __builtin_ctz(left)) - 1));  // those taken
                    return status;
                }
                if (previous == 0) break;
                // The holder's release may need our own progress (a transport that serves
                // peers in software), and a CAS that completed inline polled nothing.
                if (transport_.poll() == 0) backoff.pause();
            }
        }
        return Status::ok;
    }

    Status release() { return release(mask_); }

  private:
    RemoteAddress address(int stripe) const {
        return RemoteAddress{Region::control, layout::ControlLayout::accumulate_stripe(stripe)};
    }
    Status release(std::uint32_t mask) {
        if (words_) {
            stripes_unlock(words_, mask);
            return Status::ok;
        }
        Status result = Status::ok;
        for (std::uint32_t left = mask; left != 0; left &= left - 1) {
            Pending pending;
            Status status = pending.track(transport_.atomic(
                target_, AtomicOp::swap, address(__builtin_ctz(left)), 0, 0, nullptr, &pending));
            if (!is_error(status)) status = pending.wait(transport_);
            if (!is_error(result)) result = status;
        }
        return result;
    }

    transport::Transport &transport_;
    const int target_;
    const std::uint32_t mask_;
    std::uint64_t *words_ = nullptr;
};

// Whether every segment of one element of `layout` holds whole basic elements (not so
// where a segment splits a pair type such as MPI_SHORT_INT's {short, int}).
bool whole_elements(const TypeLayout &layout) {
    for (const TypeSegment &segment : layout.segments)
        if (segment.length % layout.basic_size != 0) return false;
    return true;
}

}  // namespace

// The call's data under the target's accumulate stripes of the bytes it touches (its
// datatype's true bounds), so that no other accumulate-family call on those bytes runs
// meanwhile: applied in place where the transport lets copies be made into the target's
// memory (Transport::copy_window_whole: shared memory), else read, reduced and written
// back by the transport's calls. `origin` (packed; null for MPI_NO_OP) and `fetched` (the
// packed previous data; null when nothing is fetched).
Status Operation::accumulate_under_lock(const TargetView &view, const TypeLayout &target,
                                        const std::uint8_t *origin, std::uint8_t *fetched) {
    transport::Transport &transport = *view.transport;
    std::int64_t low = 0, high = 0;
    if (!type_span(target, call_.target_count, &low, &high) || high <= low)
        return Status::err_range;  // (the window's range check found them representable)
    const std::uint64_t first = view.byte_offset + static_cast<std::uint64_t>(low);
    const std::uint64_t span = static_cast<std::uint64_t>(high - low);
    Stripes stripes(transport, call_.target,
                    layout::ControlLayout::accumulate_stripe_mask(first, first + span));
    Status status = stripes.acquire();
    if (is_error(status)) return status;
    transport::WholeMapping mapped;
    mapped.base = transport.copy_window_whole(call_.target, &mapped.length);
    if (mapped.at(first, span) && whole_elements(target))
        status = apply_in_place(target, mapped, view.byte_offset, origin, fetched);
    else
        status = apply_by_copies(view, target, origin, fetched);
    const Status released = stripes.release();
    return is_error(status) ? status : released;
}

// Each segment of the target data where it lies in mapped memory: its previous data
// copied out, then the op applied to it (compare_and_swap: one element).
Status Operation::apply_in_place(const TypeLayout &target, const transport::WholeMapping &mapped,
                                 std::uint64_t byte_offset, const std::uint8_t *origin,
                                 std::uint8_t *fetched) {
    Status status = Status::ok;
    std::size_t cursor = 0;
    type_for_each_segment(
        target, static_cast<std::size_t>(call_.target_count),
        [&](std::int64_t offset, std::size_t length) {
            std::uint8_t *there = mapped.at(byte_offset + static_cast<std::uint64_t>(offset), length);
            if (fetched) copy_bytes(fetched + cursor, there, length);
            if (call_.kind == RmaKind::compare_and_swap) {
                if (std::memcmp(there, call_.compare, length) == 0)
                    copy_bytes(there, origin, length);
            } else if (call_.op != MPI_NO_OP) {
                status = reduce_apply(call_.op, target.basic, origin + cursor, there,
                                      length / target.basic_size);
            }
            cursor += length;
            return !is_error(status);
        });
    return status;
}

// The target data read into a buffer, reduced there and written back, complete at the
// target before the stripes are released: the next holder must read what we wrote (a
// transport fence only orders, and not across UCX lanes).
Status Operation::apply_by_copies(const TargetView &view, const TypeLayout &target,
                                  const std::uint8_t *origin, std::uint8_t *fetched) {
    transport::Transport &transport = *view.transport;
    const std::size_t count = static_cast<std::size_t>(call_.target_count);
    const std::size_t bytes = target.size * count;
    std::vector<std::uint8_t> current(bytes);
    Pending pending;
    transfer(transport, call_.target, target, count, view.byte_offset, current.data(),
             Direction::from_target, pending);
    Status status = pending.wait(transport);
    if (is_error(status)) return status;
    if (fetched) std::memcpy(fetched, current.data(), bytes);
    if (call_.kind == RmaKind::compare_and_swap) {
        if (std::memcmp(current.data(), call_.compare, bytes) != 0) return Status::ok;
        std::memcpy(current.data(), origin, bytes);
    } else if (call_.op == MPI_NO_OP) {
        return Status::ok;
    } else {
        status = reduce_apply(call_.op, target.basic, origin, current.data(),
                              bytes / target.basic_size);
        if (is_error(status)) return status;
    }
    Pending writes;
    transfer(transport, call_.target, target, count, view.byte_offset, current.data(),
             Direction::to_target, writes);
    status = writes.wait(transport);
    Pending flushed;
    (void)flushed.track(transport.flush(call_.target, &flushed));
    const Status flush_status = flushed.wait(transport);
    return is_error(status) ? status : flush_status;
}

}  // namespace nbrma::engine
