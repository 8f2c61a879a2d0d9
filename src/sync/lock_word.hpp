// The 64-bit lock word each rank holds per window (Li et al., "Truly Passive MPI-3
// RMA Synchronization Using InfiniBand Atomics"; DESIGN §5). Every lock operation
// is a compare-and-swap on this word, done with CPU atomics by local peers and
// network atomics by remote ones: the target's CPU is never involved.
//
//   bits  0..15  active  — shared holders (granted, or granted and being woken)
//   bits 16..31  waiting — shared requesters queued behind the exclusive `tail`
//   bits 32..47  tail    — rank + 1 of the last exclusive requester (0: none)
//   bits 48..63  head    — rank + 1 of an exclusive requester at the front of the
//                          queue waiting for the `active` shared holders to drain
//                          (0: none); the last shared holder to leave grants it
//
// Invariants: head != 0 implies active > 0 and tail != 0; tail == 0 implies no
// exclusive holder or requester, so a shared request is granted at once.
#ifndef NBRMA_SYNC_LOCK_WORD_HPP
#define NBRMA_SYNC_LOCK_WORD_HPP

#include <cstdint>

namespace nbrma::sync {

struct LockWord {
    static constexpr unsigned active_shift = 0;
    static constexpr unsigned waiting_shift = 16;
    static constexpr unsigned tail_shift = 32;
    static constexpr unsigned head_shift = 48;
    static constexpr std::uint64_t field_mask = 0xffff;
    static constexpr int max_ranks = 0xfffe;  // rank + 1 must fit a field

    std::uint32_t active = 0;
    std::uint32_t waiting = 0;
    std::uint32_t tail = 0;  // rank + 1
    std::uint32_t head = 0;  // rank + 1

    static LockWord decode(std::uint64_t word) {
        LockWord w;
        w.active = static_cast<std::uint32_t>((word >> active_shift) & field_mask);
        w.waiting = static_cast<std::uint32_t>((word >> waiting_shift) & field_mask);
        w.tail = static_cast<std::uint32_t>((word >> tail_shift) & field_mask);
        w.head = static_cast<std::uint32_t>((word >> head_shift) & field_mask);
        return w;
    }
    std::uint64_t encode() const {
        return (std::uint64_t(active) & field_mask) << active_shift |
               (std::uint64_t(waiting) & field_mask) << waiting_shift |
               (std::uint64_t(tail) & field_mask) << tail_shift |
               (std::uint64_t(head) & field_mask) << head_shift;
    }
};

// The successor record an exclusive requester writes into its predecessor's node.
struct LockNext {
    static std::uint64_t encode(int rank, std::uint32_t readers) {
        return std::uint64_t(rank + 1) | std::uint64_t(readers) << 32;
    }
    static int rank(std::uint64_t next) { return static_cast<int>(next & 0xffffffff) - 1; }
    static std::uint32_t readers(std::uint64_t next) {
        return static_cast<std::uint32_t>(next >> 32);
    }
};

}  // namespace nbrma::sync

#endif
