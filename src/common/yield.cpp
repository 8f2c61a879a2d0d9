#include "common/yield.hpp"

#include <sched.h>
#include <unistd.h>

#include <atomic>

namespace nbrma {

namespace {
std::atomic<int> local_ranks{1};  // windows may be created from several threads
long cores() {
    static const long count = sysconf(_SC_NPROCESSORS_ONLN);
    return count > 0 ? count : 1;
}
}  // namespace

void set_local_ranks(int ranks) {
    int known = local_ranks.load(std::memory_order_relaxed);
    while (ranks > known && !local_ranks.compare_exchange_weak(known, ranks)) {
    }
}

bool oversubscribed() { return local_ranks.load(std::memory_order_relaxed) > cores(); }

void Backoff::pause() {
    ++spins_;
    if (oversubscribed() || spins_ > 64) {
        sched_yield();
    } else {
        __builtin_ia32_pause();
    }
}

}  // namespace nbrma
