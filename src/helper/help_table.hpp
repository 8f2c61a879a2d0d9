// The node's help table (NBRMA_PROGRESS=interrupt, doc/design.md §6): one shared
// segment per node, mapped by every rank of the node and by its helper processes.
// Layout and the futex calls are shared by the library (progress/interrupt.cpp) and the
// helper program (helper/main.cpp), which links nothing else of nbrma.
//
// Per rank, one slot:
//   bell     bumped by every peer write into the rank's control region that a pending
//            epoch may wait on (counters and lock-queue nodes; shm transport)
//   watch    0, or the bell value that makes progress possible ("help wanted"): the
//            rank's progress thread publishes (bell seen before its last sweep) + 1
//   futex    the rank's progress thread sleeps on it; whoever wakes it bumps it first
//   sleeping 1 while the thread sleeps (or is about to)
//   inside   application threads of the rank waiting inside nbrma (they progress
//            themselves: the helper leaves them alone)
//   wakes    wake-ups the helper delivered (the thread tells useful from futile ones)
//   activity bumped by the rank's application threads at every nbrma call and at the
//            end of every wait in which they progressed themselves: a rank whose
//            activity moved within `busy_grace_ns` is busy in MPI calls, about to
//            progress itself again, and the helper lets its progress thread sleep
// Helper h of k serves the slots s with s % k == h; `wanted[h]` counts its slots whose
// watch is set and is the word it sleeps on when none is.
#ifndef NBRMA_HELPER_HELP_TABLE_HPP
#define NBRMA_HELPER_HELP_TABLE_HPP

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace nbrma::helper {

constexpr std::uint64_t table_magic = 0x6e62726d6168656cull;  // "nbrmahel"
constexpr unsigned max_helpers = 16;

enum HelperState : std::uint32_t {
    helper_absent = 0,
    helper_bound = 1,     // running, bound to the ranks' package
    helper_unbound = 2,   // running, no spare core: the OS schedules it
    helper_failed = 3,    // could not map the table
};

struct HelpHeader {
    std::uint64_t magic;
    std::uint32_t slots;
    std::uint32_t helpers;
    std::atomic<std::uint32_t> wanted[max_helpers];
    std::atomic<std::uint32_t> helper_sleeping[max_helpers];
    std::atomic<std::uint32_t> helper_state[max_helpers];
    std::atomic<std::int32_t> helper_pid[max_helpers];
    std::atomic<std::uint64_t> helper_scans[max_helpers];
};

enum SlotPresence : std::uint32_t { slot_empty = 0, slot_present = 1, slot_left = 2 };

struct alignas(64) RankSlot {
    std::atomic<std::uint32_t> futex;
    std::atomic<std::uint32_t> sleeping;
    std::atomic<std::uint32_t> inside;
    std::atomic<std::uint32_t> presence;
    std::atomic<std::int32_t> pid;
    std::uint32_t pad;
    std::atomic<std::uint64_t> bell;
    std::atomic<std::uint64_t> watch;
    std::atomic<std::uint64_t> wakes;
    std::atomic<std::uint64_t> activity;
};
static_assert(sizeof(RankSlot) == 64, "one cache line per rank");
static_assert(sizeof(std::atomic<std::uint32_t>) == 4, "futex words are 32 bits");

constexpr std::uint64_t busy_grace_ns = 50000;

// An application thread's mark of activity (one writer per call; a lost bump between two
// threads still moves the word).
inline void bump_activity(std::atomic<std::uint64_t> &activity) {
    activity.store(activity.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

inline std::size_t table_bytes(unsigned slots) {
    const std::size_t header = (sizeof(HelpHeader) + 63) / 64 * 64;
    return header + slots * sizeof(RankSlot);
}
inline RankSlot *table_slot(HelpHeader *header, unsigned slot) {
    const std::size_t offset = (sizeof(HelpHeader) + 63) / 64 * 64;
    return reinterpret_cast<RankSlot *>(reinterpret_cast<std::uint8_t *>(header) + offset) + slot;
}

// Process-shared futex calls (the table is MAP_SHARED: no FUTEX_PRIVATE_FLAG).
inline void futex_wait(std::atomic<std::uint32_t> *word, std::uint32_t expected,
                       long timeout_ns = -1) {
    timespec timeout{timeout_ns / 1000000000, timeout_ns % 1000000000};
    syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(word), FUTEX_WAIT, expected,
            timeout_ns < 0 ? nullptr : &timeout, nullptr, 0);
}
inline void futex_wake(std::atomic<std::uint32_t> *word) {
    syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(word), FUTEX_WAKE, 1, nullptr,
            nullptr, 0);
}

// Wakes the rank's progress thread (the helper, or the rank itself).
inline void wake_slot(RankSlot *slot) {
    slot->futex.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(&slot->futex);
}

}  // namespace nbrma::helper

#endif
