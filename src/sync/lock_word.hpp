// The 64-bit lock word each rank holds per window (Li et al., "Truly Passive MPI-3
// RMA Synchronization Using InfiniBand Atomics"; doc/design.md §5). Every lock operation
// is a compare-and-swap on this word, done with CPU atomics by local peers and
// network atomics by remote ones: the target's CPU is never involved.
//
//   bits  0..20  active  — shared holders (granted, or granted and being woken)
//   bits 21..41  waiting — shared requesters queued behind the exclusive `tail`
//   bits 42..62  tail    — rank + 1 of the last exclusive requester (0: none)
//   bit  63      head    — the exclusive requester at the front of the queue waits for
//                          the `active` shared holders to drain; the last shared holder
//                          to leave grants it. Its rank is not in the word (21-bit fields
//                          leave room for one bit): the two meet at the target's
//                          head_rank word (control_region.hpp, lock_protocol.hpp).
//
// 21-bit fields: windows of up to 2^21 - 2 ranks (rank + 1 and every count fit).
// Invariants: head implies active > 0 and tail != 0; tail == 0 implies no exclusive
// holder or requester, so a shared request is granted at once.
#ifndef NBRMA_SYNC_LOCK_WORD_HPP
#define NBRMA_SYNC_LOCK_WORD_HPP

#include <cstdint>

namespace nbrma::sync {

struct LockWord {
    static constexpr unsigned field_bits = 21;
    static constexpr unsigned active_shift = 0;
    static constexpr unsigned waiting_shift = field_bits;
    static constexpr unsigned tail_shift = 2 * field_bits;
    static constexpr unsigned head_shift = 3 * field_bits;
    static constexpr std::uint64_t field_mask = (std::uint64_t{1} << field_bits) - 1;
    static constexpr int max_ranks = static_cast<int>(field_mask) - 1;  // rank + 1 must fit

    std::uint32_t active = 0;
    std::uint32_t waiting = 0;
    std::uint32_t tail = 0;  // rank + 1
    bool head = false;

    static LockWord decode(std::uint64_t word) {
        LockWord w;
        w.active = static_cast<std::uint32_t>((word >> active_shift) & field_mask);
        w.waiting = static_cast<std::uint32_t>((word >> waiting_shift) & field_mask);
        w.tail = static_cast<std::uint32_t>((word >> tail_shift) & field_mask);
        w.head = (word >> head_shift) & 1;
        return w;
    }
    std::uint64_t encode() const {
        return (std::uint64_t(active) & field_mask) << active_shift |
               (std::uint64_t(waiting) & field_mask) << waiting_shift |
               (std::uint64_t(tail) & field_mask) << tail_shift |
               std::uint64_t(head) << head_shift;
    }
};

static_assert(LockWord::head_shift == 63, "the fields and the head bit fill the word");
static_assert(LockWord::max_ranks >= (1 << 20), "a window of 2^20 ranks fits the lock word");

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

// The target's head_rank word, where the head and the last shared holder to leave meet
// (in either order; each with one atomic): the head swaps in its rank + 1, the last
// holder compare-and-swaps 0 to `drained`. Whoever comes second learns what it needs:
// the holder finds the head's rank and grants it; the head finds `drained` and knows
// the lock is its own. The head clears the word once it holds the lock.
struct HeadRank {
    static constexpr std::uint64_t drained = ~std::uint64_t{0};
};

}  // namespace nbrma::sync

#endif
