// The one transport interface (doc/design.md §2). The engine and the sync layer speak
// only this; shm, sim and ucx implement every operation.
//
// Completion model (UCX style): an operation returns Status::ok when it completed
// inline (results already written, the Completion is NOT called), Status::in_progress
// when it was posted (the Completion is called exactly once from a later poll()),
// or an error (nothing was posted). Every call refuses a peer outside [0, size())
// (err_rank; the direct_* calls: null) and an access outside the region it was given
// (err_range), whatever its caller checked.
#ifndef NBRMA_TRANSPORT_TRANSPORT_HPP
#define NBRMA_TRANSPORT_TRANSPORT_HPP

#include <cstddef>
#include <cstdint>

#include "common/status.hpp"

namespace nbrma::transport {

// Which memory of a peer an address refers to.
enum class Region : std::uint8_t {
    window = 0,   // the window memory (offset = byte displacement from the peer's base;
                  // for dynamic windows, the absolute virtual address)
    control = 1,  // the peer's control region (counters, lock word, lock queue nodes)
};

struct RemoteAddress {
    Region region;
    std::uint64_t offset;
};

enum class AtomicOp : std::uint8_t {
    fetch_add,     // *dst += operand
    compare_swap,  // if (*dst == compare) *dst = operand
    swap,          // *dst = operand
    fetch_and,
    fetch_or,
    fetch_xor,
};

// Called once, from poll(), when an operation that returned in_progress completes.
class Completion {
  public:
    virtual void on_complete(Status status) = 0;

  protected:
    ~Completion() = default;
};

// What a transport can do, in one description fixed for its life (as UCX's
// uct_iface_query describes an interface): the engine reads it when a window is made,
// the progress sweep when it registers one. What depends on the peer or the region is
// asked per call instead: supports_atomics, atomic_aligned, peek_control, the mapped_*
// accessors.
struct Capabilities {
    // Every operation completes inside the call that issued it, and every peer write
    // that we may wait for rings our bell in the node's help table
    // (NBRMA_PROGRESS=interrupt): a flush waits for nothing, a lock epoch may be taken
    // at once, the sweep never polls this transport for completions, and a sleeping
    // progress thread needs no timeout. (shm) Such a transport's copy_window_whole and
    // flush touch nothing but the transport's own state: the engine calls them in
    // shared sections (threads.hpp), beside another thread's calls on another window.
    bool completes_inline = false;
    // Peers' operations on our memory need our poll() to run (a transport that emulates
    // RMA or atomics in software, e.g. UCX over tcp): the sweep keeps the window listed
    // and the MPI layer progresses nbrma inside MPICH's blocking calls even with nothing
    // of ours pending.
    bool needs_target_progress = false;
    // With nothing held (settle()), flush toward any peer is a CPU memory fence and
    // cannot fail (shm): the engine makes that fence itself, without the call.
    bool flush_is_fence = false;
    // fence(peer) orders what we post to peer after it behind what we posted before,
    // as a rule without waiting for either (UCX: ucp_worker_fence, a flush only where
    // that does not order the endpoint's lanes; sim): a fence epoch then
    // completes toward a target that the next fence barrier notifies in its first round
    // by that order (the notice lands after the epoch's calls) instead of a flush's round
    // trip (Window::ordered_by_barrier).
    bool fence_orders = false;
    // Every origin of the window reaches every target's memory with its CPU (mapped, or
    // by cross-memory copies), never through a device or a peer's software: accumulates,
    // fetching ones and single-element atomics alike, then apply with plain arithmetic
    // under the target's accumulate stripes (engine/accumulate_stripes.hpp) instead of
    // one atomic per element, so a bulk accumulate runs at memory speed and one call is
    // atomic as a whole. Every rank of a window answers the same (shm).
    bool locked_accumulates = false;
};

// A peer's window memory mapped whole (Transport::mapped_window_whole, copy_window_whole):
// `length` bytes from `base` (null: not mapped).
struct WholeMapping {
    std::uint8_t *base = nullptr;
    std::uint64_t length = 0;
    // [offset, offset + bytes) of it, or null where it lies outside.
    std::uint8_t *at(std::uint64_t offset, std::size_t bytes) const {
        if (!base || offset > length || bytes > length - offset) return nullptr;
        return base + offset;
    }
};

class Transport {
  public:
    virtual ~Transport() = default;

    // Number of peers (ranks of the window's communicator) and our own rank.
    virtual int size() const = 0;
    virtual int rank() const = 0;

    // Our own control region, for local loads and stores (spinning is always local).
    virtual void *local_control() = 0;

    // Contiguous byte transfers.
    virtual Status put(int peer, const void *source, std::size_t length, RemoteAddress target,
                       Completion *completion) = 0;
    virtual Status get(int peer, void *destination, std::size_t length, RemoteAddress source,
                       Completion *completion) = 0;

    // 64-bit atomic on an 8-byte aligned remote word; the previous value is stored in
    // *result (result may be null for non-fetching use).
    virtual Status atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                          std::uint64_t compare, std::uint64_t *result, Completion *completion) = 0;

    // Whether atomic() works on that region of that peer (the engine otherwise uses the
    // accumulate lock protocol for element-wise atomicity).
    virtual bool supports_atomics(int peer, Region region) const = 0;

    // The same on a 4-byte aligned 32-bit word (accumulates of 4-byte integers): the
    // previous value goes to *result. A transport that offers them says so in
    // supports_atomics32, for every origin alike (a word must never see both these and
    // the accumulate lock protocol); the others keep these defaults.
    virtual Status atomic32(int peer, AtomicOp op, RemoteAddress target, std::uint32_t operand,
                            std::uint32_t compare, std::uint32_t *result, Completion *completion) {
        (void)peer, (void)op, (void)target, (void)operand, (void)compare, (void)result,
            (void)completion;
        return Status::err_unsupported;
    }
    virtual bool supports_atomics32(int peer, Region region) const {
        (void)peer, (void)region;
        return false;
    }

    // The same on a 2- or 1-byte word (`width`: accumulates of short and char integers,
    // as OSU's benchmarks do with MPI_CHAR), where the transport does them on the CPU:
    // operand and compare in their low `width` bytes, the previous value's `width` bytes
    // to *result. As for supports_atomics32: the same answer for every origin.
    virtual Status atomic_small(int peer, AtomicOp op, RemoteAddress target, std::size_t width,
                                std::uint32_t operand, std::uint32_t compare, void *result,
                                Completion *completion) {
        (void)peer, (void)op, (void)target, (void)width, (void)operand, (void)compare, (void)result,
            (void)completion;
        return Status::err_unsupported;
    }
    virtual bool supports_atomics_small(int peer, Region region) const {
        (void)peer, (void)region;
        return false;
    }

    // atomic(), atomic32() or atomic_small() by the word's `width` (8, 4, 2 or 1 bytes):
    // *result (may be null) gets the previous value's `width` bytes.
    Status atomic_of_width(int peer, AtomicOp op, RemoteAddress target, std::size_t width,
                           std::uint64_t operand, std::uint64_t compare, void *result,
                           Completion *completion) {
        if (width == 8)
            return atomic(peer, op, target, operand, compare, static_cast<std::uint64_t *>(result),
                          completion);
        if (width == 4)
            return atomic32(peer, op, target, static_cast<std::uint32_t>(operand),
                            static_cast<std::uint32_t>(compare),
                            static_cast<std::uint32_t *>(result), completion);
        return atomic_small(peer, op, target, width, static_cast<std::uint32_t>(operand),
                            static_cast<std::uint32_t>(compare), result, completion);
    }
    bool supports_atomics_of_width(int peer, Region region, std::size_t width) const {
        switch (width) {
            case 8:
                return supports_atomics(peer, region);
            case 4:
                return supports_atomics32(peer, region);
            case 2:
            case 1:
                return supports_atomics_small(peer, region);
            default:
                return false;
        }
    }

    // Whether the remote word of `width` bytes (8, 4, 2 or 1) at `address` is aligned to its
    // width, as atomic() and atomic32() need: the peer's base address and the offset
    // together (a window of MPI_Win_create may start anywhere). The engine applies an
    // accumulate to a word that is not aligned under the accumulate lock instead.
    // Default: the offset alone (dynamic windows, whose offsets are addresses, and
    // transports whose regions are aligned).
    virtual bool atomic_aligned(int peer, RemoteAddress address, std::size_t width) {
        (void)peer;
        return address.offset % width == 0;
    }

    // Reads the 8-byte word at `offset` of peer's control region now, without a
    // transfer, where the transport maps it (shm, sim): true. False where only get()
    // reaches it (ucx).
    virtual bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) {
        return false;
    }

    // The 8-byte word at `offset` of peer's control region, when a CPU atomic on it is
    // exactly what atomic() would do there (completes inline, rings no bell): the lock
    // word's one-CAS paths (sync::AtOnceLocks) then skip the call. Null otherwise.
    virtual std::uint64_t *mapped_control_word(int peer, std::uint64_t offset) {
        (void)peer;
        (void)offset;
        return nullptr;
    }

    // [offset, offset + length) of peer's window memory as a local address, when a copy
    // there is exactly what put() or get() would do, and a CPU atomic (cpu_atomics.hpp) of
    // a width supports_atomics_of_width allows exactly what the atomics would do (mapped,
    // completes inline, rings no bell), after the transport's own bounds check: the
    // engine's at-once fast paths then copy and add themselves. Null otherwise (and for an
    // access out of bounds: put() and get() refuse it).
    virtual std::uint8_t *mapped_window(int peer, std::uint64_t offset, std::size_t length) {
        (void)peer;
        (void)offset;
        (void)length;
        return nullptr;
    }
    // Where mapped_window maps all of peer's window alike, for the transport's lifetime:
    // its first byte, with *length the bytes mapped from there (so mapped_window(peer,
    // offset, n) is that + offset exactly when offset + n <= *length). Null otherwise.
    virtual std::uint8_t *mapped_window_whole(int peer, std::uint64_t *length) {
        (void)peer;
        *length = 0;
        return nullptr;
    }
    // As mapped_window_whole, for copies only: a copy there is exactly what put() or get()
    // would do, and once made it is at the peer (no flush needs to follow it), but the
    // transport's atomics on that memory need not be CPU atomics (UCX may pick an HCA's
    // for every peer, local ones included). Default: mapped_window_whole.
    virtual std::uint8_t *copy_window_whole(int peer, std::uint64_t *length) {
        return mapped_window_whole(peer, length);
    }

    // A put or get the caller completes with settle() (the engine: at the at-once
    // epoch's next flush, close, or call that takes the general path): the transport may
    // hold it until then (shm: cross-memory copies to a peer gathered into one
    // process_vm_writev or process_vm_readv). Bounds are checked now, as put() and get()
    // check them. By default: at once, as put() and get() with no completion.
    virtual Status put_deferrable(int peer, const void *source, std::size_t length,
                                  RemoteAddress target) {
        return put(peer, source, length, target, nullptr);
    }
    virtual Status get_deferrable(int peer, void *destination, std::size_t length,
                                  RemoteAddress source) {
        return get(peer, destination, length, source, nullptr);
    }
    // Performs every call put_deferrable and get_deferrable held; the first failure.
    virtual Status settle() { return Status::ok; }

    // Order: operations to `peer` posted before the fence are complete at the target
    // before any posted after it is performed.
    virtual Status fence(int peer) = 0;

    // Complete every operation posted to `peer` so far (remote completion).
    virtual Status flush(int peer, Completion *completion) = 0;

    // Drain completions; returns how many completion callbacks ran.
    virtual int poll() = 0;

    // What this transport can do (Capabilities), the same for its whole life.
    virtual Capabilities capabilities() const { return {}; }
    // A descriptor that turns readable when poll() has work after arm() returned true
    // (UCX: the worker's event descriptor), or -1. Both only under the progress lock.
    virtual int event_fd() const { return -1; }
    virtual bool arm() { return true; }

    // Dynamic windows: attach a region of our memory / detach it (MPI_Win_attach/detach):
    // publish it in our directory of attached regions (transport/directory.hpp), which
    // origins read one-sidedly; transports that must register memory for peers' access
    // do it here, after the directory admitted the region. attach fails with err_arg if
    // base + size wraps around the address space, err_range if the region overlaps an
    // attached one (both refused before any registration), err_no_memory or
    // err_transport; detach of an address not attached is err_arg.
    virtual Status attach(const void *base, std::uint64_t size) { return Status::err_unsupported; }
    virtual Status detach(const void *base) { return Status::err_unsupported; }
    // Dynamic windows: ok if the bytes [low, high) of peer's memory (absolute addresses)
    // lie in regions the peer has attached, back to back; err_range otherwise. The
    // transport refuses window-region accesses that fail this check itself, too.
    virtual Status check_attached(int peer, std::uint64_t low, std::uint64_t high) {
        return Status::err_range;
    }
};

}  // namespace nbrma::transport

#endif
