// One RMA communication call (put, get, accumulate family) as the engine keeps it:
// checked at the call, possibly recorded in a deferred epoch, executed over the
// transport when its epoch may touch the target (SC14 §VII-A record and replay).
#ifndef NBRMA_ENGINE_OPERATION_HPP
#define NBRMA_ENGINE_OPERATION_HPP

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "common/status.hpp"
#include "engine/datatype.hpp"
#include "engine/reduce.hpp"
#include "engine/request.hpp"
#include "transport/transport.hpp"

namespace nbrma::engine {

enum class RmaKind : std::uint8_t {
    put,
    get,
    accumulate,
    get_accumulate,
    fetch_and_op,
    compare_and_swap,
};

const char *rma_kind_name(RmaKind kind);

struct RmaCall {
    RmaKind kind = RmaKind::put;
    const void *origin = nullptr;
    MPI_Aint origin_count = 0;
    MPI_Datatype origin_type = MPI_DATATYPE_NULL;
    void *result = nullptr;
    MPI_Aint result_count = 0;
    MPI_Datatype result_type = MPI_DATATYPE_NULL;
    const void *compare = nullptr;
    int target = 0;
    MPI_Aint displacement = 0;
    MPI_Aint target_count = 0;
    MPI_Datatype target_type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_REPLACE;
    // MPIX_Put_notify and friends: the target's counter notify_index grows by one once
    // the call's data is there (put, accumulate) or was read (get).
    bool notify = false;
    int notify_index = 0;
};

// What an operation needs to know about its window when it runs.
struct TargetView {
    transport::Transport *transport = nullptr;
    std::uint64_t byte_offset = 0;  // displacement * disp_unit (dynamic: the address)
    bool hardware_atomics = false;  // accumulate_ops allows single 64-bit atomics
    // Where the notification counter lies in the target's control region, if the call
    // notifies.
    static constexpr std::uint64_t no_notify = ~std::uint64_t{0};
    std::uint64_t notify_offset = no_notify;
};

// Reads one 8-byte word of a peer's memory: a get, waited for.
Status read_word(transport::Transport &transport, int peer, transport::RemoteAddress source,
                 std::uint64_t *value);

// One contiguous put (`put`) or get of `length` bytes between `buffer` and a peer's
// memory, complete at the origin when it returns (as Operation's are: the put's source
// free again, the get's data arrived); a put may still be on its way to the target.
Status move_block(transport::Transport &transport, bool put, int peer, std::uint8_t *buffer,
                  std::size_t length, transport::RemoteAddress address);

class Operation {
  public:
    Operation(const RmaCall &call, std::uint64_t age, Request *request)
        : call_(call), age_(age), request_(request) {}
    Operation(const Operation &) = delete;
    Operation &operator=(const Operation &) = delete;
    ~Operation();

    // Checks types, sizes and ops (not the window range: see Window). A call that moves
    // no data (count 0 or a zero-size type on a side it uses) is a valid no-op whatever
    // the other sides' types: only its handles are checked, and *empty is set so the
    // caller skips it. On an error, *cause (if given) names what was wrong.
    static Status check(const RmaCall &call, bool *empty, const char **cause = nullptr);

    // A deferred operation outlives the call: keep its derived datatypes alive, and
    // look their layouts up now, on the calling thread. A replay (possibly by the
    // progress thread, which never calls MPICH) then needs no datatype lookup.
    void retain_types();

    // Moves the data. Completes inline over shm; waits for the transport otherwise.
    Status execute(const TargetView &view);
    // After execute: whether what it wrote may not have reached the target yet (a put
    // or an atomic without a result is complete at the origin only; fetched results
    // and accumulates under the accumulate lock come back from the target).
    bool needs_flush() const { return needs_flush_; }

    const RmaCall &call() const { return call_; }
    std::uint64_t age() const { return age_; }
    Request *request() const { return request_; }
    // The target type's layout retain_types looked up, or null.
    const TypeLayout *target_layout() const { return target_layout_; }
    const TypeLayout *result_layout() const { return result_layout_; }
    // NBRMA_CHECK=races: the application's call site (check::call_site), else 0.
    void set_site(std::uint64_t site) { site_ = site; }
    std::uint64_t site() const { return site_; }
    // NBRMA_CHECK=races, a recorded call: the issuing rank's clock at the call.
    std::vector<std::uint64_t> &issued_clock() { return issued_clock_; }
    const std::vector<std::uint64_t> &issued_clock() const { return issued_clock_; }

  private:
    Status execute_put(const TargetView &view);
    Status execute_get(const TargetView &view);
    Status execute_accumulate(const TargetView &view);
    Status notify(const TargetView &view);
    Status accumulate_with_atomics(const TargetView &view, transport::AtomicOp op,
                                   bool operand_zero, const TypeLayout &target, std::size_t width,
                                   std::uint8_t *origin_packed, std::uint8_t *fetched);
    Status accumulate_by_compare_swap(const TargetView &view, const TypeLayout &target,
                                      std::size_t width, const std::uint8_t *origin_packed,
                                      std::uint8_t *fetched);
    Status accumulate_locked(const TargetView &view, const TypeLayout &target);
    Status accumulate_under_lock(const TargetView &view, const TypeLayout &target,
                                 const std::uint8_t *origin, std::uint8_t *fetched);
    Status apply_in_place(const TypeLayout &target, const transport::WholeMapping &mapped,
                          std::uint64_t byte_offset, const std::uint8_t *origin,
                          std::uint8_t *fetched);
    Status apply_by_copies(const TargetView &view, const TypeLayout &target,
                           const std::uint8_t *origin, std::uint8_t *fetched);

    // The layout of one of call_'s types: the one retain_types looked up, else a lookup.
    static Status layout(MPI_Datatype type, const TypeLayout *cached, const TypeLayout **out) {
        if (cached) {
            *out = cached;
            return Status::ok;
        }
        return type_layout_get(type, out);
    }

    RmaCall call_;
    std::uint64_t age_;
    Request *request_;
    bool needs_flush_ = false;
    std::uint64_t site_ = 0;
    std::vector<std::uint64_t> issued_clock_;
    std::vector<MPI_Datatype> retained_;
    const TypeLayout *origin_layout_ = nullptr;
    const TypeLayout *target_layout_ = nullptr;
    const TypeLayout *result_layout_ = nullptr;
};

// One element of an accumulate by compare-and-swap (reduce_by_compare_swap): the element
// read (`atomic` fetch_add 0), reduced with *operand, and swapped in if it is unchanged,
// again from the value found if not. `atomic(op, operand, compare, &previous)` is one
// completed atomic of the element's width on the element; *before gets its value before
// the update.
template <typename Atomic>
Status reduce_by_swapping(MPI_Op op, MPI_Datatype basic, const void *operand, Atomic atomic,
                          std::uint64_t *before) {
    std::uint64_t current = 0;  // (little-endian: the element in the low bytes)
    Status status = atomic(transport::AtomicOp::fetch_add, 0, 0, &current);
    while (!is_error(status)) {
        std::uint64_t desired = current, seen = 0;
        status = reduce_apply(op, basic, operand, &desired, 1);
        if (is_error(status)) break;
        status = atomic(transport::AtomicOp::compare_swap, desired, current, &seen);
        if (is_error(status) || seen == current) break;
        current = seen;
    }
    *before = current;
    return status;
}

}  // namespace nbrma::engine

#endif
