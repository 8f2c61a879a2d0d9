// Layout of a rank's control region: the per-window memory that peers write
// one-sidedly (lock word, accumulate lock, matching counters, lock-queue nodes,
// the directory header of dynamic windows, the notification counters). One layout for
// every transport: shm maps it, sim allocates it, ucx registers it.
#ifndef NBRMA_LAYOUT_CONTROL_REGION_HPP
#define NBRMA_LAYOUT_CONTROL_REGION_HPP

#include <cstddef>
#include <cstdint>

namespace nbrma::layout {

// Offsets in bytes from the start of a rank's control region.
//
//   0   lock word (this rank as lock target; layout in lock_word.hpp)
//   8   (unused)
//   16  notification counters this rank has now (MPIX_Win_notify_set_num): origins
//       read it to check an index (the bell of NBRMA_PROGRESS=interrupt lives in the
//       node's help table)
//   24  head rank: where the exclusive request at the head of this rank's lock queue,
//       waiting for shared holders to drain, and the last of them to leave meet
//       (lock_word.hpp: HeadRank)
//   32  doorway tail: rank + 1 of the last lock operation queued in this rank's doorway
//       (0: none). A lock operation whose CAS of the lock word keeps failing queues
//       here (swap) and retries only once its predecessor has got through, so a burst
//       of p requests costs each a constant number of atomics, not O(p) CAS retries
//       (lock_protocol.hpp)
//   64  accumulate stripes, accumulate_stripe_count of them, one cache line each (the
//       word at its start: 0 free, holder rank + 1): an accumulate-family call takes
//       the stripes of the bytes it touches (accumulate_stripe_mask: 4 KiB granules of
//       the target offset, modulo the count), in ascending order, and applies its op
//       under them, so one call is atomic as a whole against every other call it
//       overlaps, and calls on disjoint blocks rarely wait for each other
//   ..  directory header of dynamic windows, directory_bytes long: where this
//       rank's table of attached regions lives (layout/directory.hpp)
//   ..  fence counters, max_fence_slots of them, each fetch-added once a barrier fence
//       by one sender (so monotone like the counters below). The fence barrier is a
//       k-ary dissemination barrier: round i sends to rank + j k^i, j = 1 .. k-1 (while
//       below p), into the slot of (i, j). With p <= direct_fence_ranks, k = p: one
//       round, a notice to every peer (the quickest on few ranks); beyond, k = 2:
//       ceil(log2 p) rounds of one notice (fence_radix, fence_rounds, fence_slot_of)
//   ..  per-peer matching counters (doc/design.md §4), 16 bytes each, all monotone and
//       only ever fetch-added by that peer (so delivery order does not matter):
//         +0  grant — exposures the peer opened toward this rank (the SC14 g)
//         +8  done  — access epochs of the peer toward this rank that are done (d)
//       The counters a (accesses requested) and e (exposures opened) are only ever
//       read by their owner and live in the engine's window object instead.
//   ..  per-target lock-queue nodes, node_bytes (48) each, constant state per lock
//       request (no per-rank arrays: a window costs 64 bytes a peer on every rank):
//         +0  grant  — written 1 by whoever hands this rank the lock on that target,
//                      or the doorway on that target (never both at once: an operation
//                      waits in the doorway only before its request joins the queue,
//                      or while it holds the lock and releases it)
//         +8  next   — written by an exclusive successor: (rank + 1) | (readers << 32)
//         +16 top    — readers queued behind this rank's exclusive request push
//                      themselves here (swap: rank + 1 of the last one, 0 none)
//         +24 count  — and then count themselves here (fetch-add 1): once it reaches
//                      the number of readers the lock word said, the stack is whole
//         +32 below  — this rank, as such a reader: what it found in top, plus 1
//                      (the exclusive reads it to walk the stack)
//         +40 door_next — written by the operation queued behind this rank's in the
//                      target's doorway: its rank + 1
//   ..  notification counters (doc/design.md §8), notify_capacity of them, 8 bytes each, only
//       ever fetch-added by origins (MPIX_Put_notify ...) and read or set by this rank.
//       Pages nobody touched cost nothing (shm and ucx map them lazily).
class ControlLayout {
  public:
    static constexpr std::size_t lock_word = 0;
    static constexpr std::size_t notify_num = 16;
    static constexpr std::size_t head_rank = 24;
    static constexpr std::size_t door_tail = 32;
    static constexpr int accumulate_stripe_count = 16;
    static constexpr unsigned accumulate_granule_shift = 12;  // 4 KiB of target bytes
    static constexpr std::size_t accumulate_stripe(int stripe) {
        return 64 + 64 * static_cast<std::size_t>(stripe);
    }
    // The stripes of the target bytes [low, high), high > low, as bits (stripe s: 1 << s);
    // every origin computes the same for the same bytes.
    static constexpr std::uint32_t accumulate_stripe_mask(std::uint64_t low, std::uint64_t high) {
        const std::uint64_t first = low >> accumulate_granule_shift;
        const std::uint64_t last = (high - 1) >> accumulate_granule_shift;
        constexpr std::uint32_t all = (std::uint32_t{1} << accumulate_stripe_count) - 1;
        if (first == last) return std::uint32_t{1} << (first % accumulate_stripe_count);
        if (last - first + 1 >= accumulate_stripe_count) return all;
        std::uint32_t mask = 0;
        for (std::uint64_t granule = first; granule <= last; ++granule)
            mask |= std::uint32_t{1} << (granule % accumulate_stripe_count);
        return mask;
    }
    static constexpr std::size_t directory = 64 + 64 * std::size_t{accumulate_stripe_count};
    static constexpr std::size_t directory_bytes = 1024;
    static constexpr std::size_t counter_bytes = 16;
    static constexpr int direct_fence_ranks = 8;  // up to this many: a one-round fence
    static constexpr int max_fence_slots = 24;    // ceil(log2 p) for every p < 2^24
    static constexpr std::size_t node_bytes = 48;
    // Everything from here on (fence rounds, counters, lock-queue nodes) is what a rank's pending
    // epochs wait on: writes there ring the rank's bell (NBRMA_PROGRESS=interrupt).
    static constexpr std::size_t watched = directory + directory_bytes;

    explicit ControlLayout(int nranks, std::uint32_t notify_capacity = 0)
        : nranks_(nranks), notify_capacity_(notify_capacity) {}

    int nranks() const { return nranks_; }
    std::uint32_t notify_capacity() const { return notify_capacity_; }

    // The fence barrier's radix k, its rounds (the least R with k^R >= p), and the slot
    // that rank - j k^round writes in round `round`.
    int fence_radix() const { return nranks_ <= direct_fence_ranks ? nranks_ : 2; }
    int fence_rounds() const {
        int rounds = 0;
        for (std::int64_t reach = 1; reach < nranks_; reach *= fence_radix()) ++rounds;
        return rounds;
    }
    int fence_slot_of(int round, int j) const { return round * (fence_radix() - 1) + j - 1; }
    // k^round: round `round` reaches rank + j k^round.
    std::int64_t fence_distance(int round) const {
        std::int64_t distance = 1;
        for (int i = 0; i < round; ++i) distance *= fence_radix();
        return distance;
    }
    static constexpr std::size_t fence_slot(int slot) { return watched + 8 * std::size_t(slot); }

    std::size_t counters() const { return fence_slot(max_fence_slots); }
    std::size_t counter(int peer) const {
        return counters() + static_cast<std::size_t>(peer) * counter_bytes;
    }
    std::size_t grant_count(int peer) const { return counter(peer); }
    std::size_t done_count(int peer) const { return counter(peer) + 8; }

    std::size_t nodes() const {
        return counters() + static_cast<std::size_t>(nranks_) * counter_bytes;
    }
    std::size_t node(int target) const {
        return nodes() + static_cast<std::size_t>(target) * node_bytes;
    }
    std::size_t node_grant(int target) const { return node(target); }
    std::size_t node_next(int target) const { return node(target) + 8; }
    std::size_t node_top(int target) const { return node(target) + 16; }
    std::size_t node_count(int target) const { return node(target) + 24; }
    std::size_t node_below(int target) const { return node(target) + 32; }
    std::size_t node_door_next(int target) const { return node(target) + 40; }

    std::size_t notifications() const {
        return round_up(nodes() + static_cast<std::size_t>(nranks_) * node_bytes, 64);
    }
    std::size_t notification(std::uint32_t index) const { return notifications() + 8 * index; }

    std::size_t size() const {
        return round_up(notifications() + 8 * std::size_t{notify_capacity_}, 64);
    }

  private:
    static std::size_t round_up(std::size_t value, std::size_t to) {
        return (value + to - 1) / to * to;
    }
    int nranks_;
    std::uint32_t notify_capacity_;
};

}  // namespace nbrma::layout

#endif
