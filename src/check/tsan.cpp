// The race checker and ThreadSanitizer (tsan.hpp): TSan's fiber and sync interface,
// resolved at run time, so that libnbrma needs no TSan to build or run.
#include "check/tsan.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

namespace nbrma::check::tsan {

namespace {

// TSan's interface (its sanitizer/tsan_interface.h), as function pointers.
struct Api {
    void *(*get_current_fiber)();
    void *(*create_fiber)(unsigned flags);
    void (*switch_to_fiber)(void *fiber, unsigned flags);
    void (*set_fiber_name)(void *fiber, const char *name);
    void (*acquire)(void *address);
    void (*release)(void *address);
    void (*read_range)(void *address, unsigned long bytes, void *pc);
    void (*write_range)(void *address, unsigned long bytes, void *pc);
    bool complete = false;
};
constexpr unsigned no_sync = 1;  // __tsan_switch_to_fiber_no_sync

template <typename F>
void resolve(F &pointer, const char *name, bool &found) {
    pointer = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
    found = found && pointer;
}

const Api &api() {
    static const Api resolved = [] {
        Api a{};
        bool found = true;
        resolve(a.get_current_fiber, "__tsan_get_current_fiber", found);
        resolve(a.create_fiber, "__tsan_create_fiber", found);
        resolve(a.switch_to_fiber, "__tsan_switch_to_fiber", found);
        resolve(a.set_fiber_name, "__tsan_set_fiber_name", found);
        resolve(a.acquire, "__tsan_acquire", found);
        resolve(a.release, "__tsan_release", found);
        resolve(a.read_range, "__tsan_read_range_pc", found);
        resolve(a.write_range, "__tsan_write_range_pc", found);
        a.complete = found;
        return a;
    }();
    return resolved;
}

// One byte per tick: the address TSan keys the tick's sync object by (chunks never
// move).
constexpr std::size_t chunk_ticks = 1 << 16;
std::vector<std::unique_ptr<char[]>> ticks;
void *tick_object(std::uint64_t tick) {
    const std::size_t chunk = static_cast<std::size_t>(tick / chunk_ticks);
    while (ticks.size() <= chunk) ticks.emplace_back(new char[chunk_ticks]);
    return ticks[chunk].get() + tick % chunk_ticks;
}

}  // namespace

}  // namespace nbrma::check::tsan

// The one frame of a replayed access in a ThreadSanitizer report: the MPI call it was.
#define NBRMA_REPLAY_FRAME(name)                                                    \
    extern "C" __attribute__((noinline, used, visibility("default"))) void name() { \
        __asm__ volatile("");                                                       \
    }
NBRMA_REPLAY_FRAME(nbrma_replayed_MPI_Put)
NBRMA_REPLAY_FRAME(nbrma_replayed_MPI_Get)
NBRMA_REPLAY_FRAME(nbrma_replayed_MPI_Accumulate)
NBRMA_REPLAY_FRAME(nbrma_replayed_MPI_Get_accumulate)
NBRMA_REPLAY_FRAME(nbrma_replayed_MPI_Fetch_and_op)
NBRMA_REPLAY_FRAME(nbrma_replayed_MPI_Compare_and_swap)
#undef NBRMA_REPLAY_FRAME

namespace nbrma::check::tsan {
namespace {

void *frame(engine::RmaKind kind) {
    void (*f)() = nbrma_replayed_MPI_Put;
    switch (kind) {
        case engine::RmaKind::put:
            break;
        case engine::RmaKind::get:
            f = nbrma_replayed_MPI_Get;
            break;
        case engine::RmaKind::accumulate:
            f = nbrma_replayed_MPI_Accumulate;
            break;
        case engine::RmaKind::get_accumulate:
            f = nbrma_replayed_MPI_Get_accumulate;
            break;
        case engine::RmaKind::fetch_and_op:
            f = nbrma_replayed_MPI_Fetch_and_op;
            break;
        case engine::RmaKind::compare_and_swap:
            f = nbrma_replayed_MPI_Compare_and_swap;
            break;
    }
    return reinterpret_cast<void *>(reinterpret_cast<std::uintptr_t>(f) + 1);
}

// The origins' fibers, by world rank, and the object that orders each replayed access
// after those before it, and the replaying thread after them all.
// (TSan keeps a few thousand threads: ranks beyond share.)
constexpr int most_fibers = 1024;
std::vector<void *> fibers;
char replayed;

}  // namespace

bool available() { return api().complete; }

void released(std::uint64_t tick) { api().release(tick_object(tick)); }

void make_fibers(int ranks) {
    const Api &a = api();
    const std::size_t count = static_cast<std::size_t>(std::min(ranks, most_fibers));
    for (std::size_t r = fibers.size(); r < count; ++r) {
        fibers.push_back(a.create_fiber(0));
        char name[64];
        if (count == static_cast<std::size_t>(ranks))
            std::snprintf(name, sizeof name, "nbrma: RMA calls of rank %zu", r);
        else
            std::snprintf(name, sizeof name, "nbrma: RMA calls of ranks %zu mod %d", r,
                          most_fibers);
        a.set_fiber_name(fibers.back(), name);
    }
}

void replay(int origin, engine::RmaKind kind, std::uint64_t acquired, void *address,
            std::size_t bytes, bool write) {
    const Api &a = api();
    if (origin < 0 || bytes == 0 || fibers.empty()) return;
    void *fiber = fibers[static_cast<std::size_t>(origin) % fibers.size()];
    void *thread = a.get_current_fiber();
    a.switch_to_fiber(fiber, no_sync);
    if (acquired != 0) a.acquire(tick_object(acquired));
    a.acquire(&replayed);
    if (write)
        a.write_range(address, bytes, frame(kind));
    else
        a.read_range(address, bytes, frame(kind));
    a.release(&replayed);
    a.switch_to_fiber(thread, no_sync);
    a.acquire(&replayed);
}

void ordered_after_replays() { api().acquire(&replayed); }

}  // namespace nbrma::check::tsan
