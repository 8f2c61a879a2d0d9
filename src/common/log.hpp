// Process-wide counters (exposed through src/mpi/counter_table.cpp) and NBRMA_VERBOSE logging,
// so a user can check that RMA really ran on nbrma.
#ifndef NBRMA_COMMON_LOG_HPP
#define NBRMA_COMMON_LOG_HPP

#include <atomic>
#include <cstdint>

namespace nbrma {

struct Counters {
    std::uint64_t windows_created = 0;
    std::uint64_t epochs_opened = 0;
    std::uint64_t epochs_completed = 0;
    std::uint64_t epochs_deferred = 0;  // not active when their opening call returned
    std::uint64_t rma_ops = 0;
    std::uint64_t rma_ops_replayed = 0;  // recorded, then run when their target was ready
    std::uint64_t lock_grants = 0;
    std::uint64_t locks_at_once = 0;  // lock epochs taken and run without the engine's queue
    std::uint64_t segments_reused = 0;  // windows made on a freed window's node segment
    std::uint64_t user_memory_shared = 0;  // MPI_Win_create windows, attached regions whose pages peers map
    std::uint64_t progress_thread_sweeps = 0;  // sweeps by the progress thread that moved
};
// Updated with the progress lock held (threads.hpp), or in a shared section, where a
// thread counts into its own slot's; read them under the lock (threads::all_counters).

namespace detail {
inline Counters counters_instance;
// Where this thread counts: the process's counters, or its slot's while it runs a
// shared section (threads::SharedSection). Initial-exec TLS, hidden: no call.
__attribute__((visibility("hidden"),
               tls_model("initial-exec"))) inline thread_local Counters *counting =
    &counters_instance;
inline std::atomic<int> verbose_cache{-1};  // NBRMA_VERBOSE once read, -1 before
int read_verbose_level();
}  // namespace detail

// Inline: the RMA hot paths count and check the level on every call.
inline Counters &counters() { return *detail::counting; }

// Value of NBRMA_VERBOSE (0 when unset).
inline int verbose_level() {
    const int level = detail::verbose_cache.load(std::memory_order_relaxed);
    return level >= 0 ? level : detail::read_verbose_level();
}

// printf-style line to stderr prefixed "nbrma[rank]: ", when verbose_level() >= level.
void log(int level, const char *format, ...) __attribute__((format(printf, 2, 3)));

void set_log_rank(int rank);

}  // namespace nbrma

#endif
