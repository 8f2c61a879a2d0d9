#include "common/yield.hpp"

#include <sched.h>
#include <unistd.h>

namespace nbrma {

namespace {
int local_ranks = 1;
long cores() {
    static const long count = sysconf(_SC_NPROCESSORS_ONLN);
    return count > 0 ? count : 1;
}
}  // namespace

void set_local_ranks(int ranks) {
    if (ranks > local_ranks) local_ranks = ranks;
}

bool oversubscribed() { return local_ranks > cores(); }

void Backoff::pause() {
    ++spins_;
    if (oversubscribed() || spins_ > 64) {
        sched_yield();
    } else {
        __builtin_ia32_pause();
    }
}

}  // namespace nbrma
