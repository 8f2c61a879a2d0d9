// nbrma-helper: the node's SmartInterrupts helper process (NBRMA_PROGRESS=interrupt,
// doc/design.md §6). Started with posix_spawn by the node's first rank at MPI_Init:
//
//   nbrma-helper <table> <bytes> <h> <k>
//
// <table> is the node's help table (/proc/<pid>/fd/<n> of the rank that created it),
// <h> of <k> says which share of the ranks this helper serves (slots s with s % k == h).
// It polls the `watch`ed bells of the ranks that want help and wakes a rank's progress
// thread (FUTEX_WAKE) when its bell reached the watched value and no application thread
// of the rank is inside nbrma. With no rank wanting help it sleeps on wanted[h]; without
// a core of its own, idle scans back off to short sleeps (up to 200 us). It
// exits when every rank of its share left (MPI_Finalize) or died (pidfd), and never
// touches MPI. It links only libc and hwloc: no exceptions, no operator new, libstdc++
// linked statically (nothing of it is pulled in), so its private memory stays small.
#include <fcntl.h>
#include <malloc.h>
#include <hwloc.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "helper/help_table.hpp"

using namespace nbrma::helper;

namespace {

// Binds the helper to the package the spawning rank runs on, if the node has a core to
// spare for it (more cores than ranks); otherwise leaves it to the OS scheduler.
HelperState place(unsigned ranks) {
    hwloc_topology_t topology;
    if (hwloc_topology_init(&topology) != 0) return helper_unbound;
    HelperState state = helper_unbound;
    if (hwloc_topology_load(topology) == 0) {
        const int cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
        hwloc_bitmap_t where = hwloc_bitmap_alloc();
        if (cores > static_cast<int>(ranks) &&
            hwloc_get_proc_last_cpu_location(topology, getppid(), where, 0) == 0) {
            hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topology, where, HWLOC_OBJ_PU, 0);
            hwloc_obj_t package = pu ? hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, pu)
                                     : nullptr;
            if (package && hwloc_set_cpubind(topology, package->cpuset, HWLOC_CPUBIND_PROCESS) == 0)
                state = helper_bound;
        }
        hwloc_bitmap_free(where);
    }
    hwloc_topology_destroy(topology);
    malloc_trim(0);  // give back what loading the topology took
    return state;
}

long now_ms() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

std::uint64_t now_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(now.tv_nsec);
}

struct Served {
    RankSlot *slot;
    int pidfd;  // -1: the rank was gone at start, or pidfd_open is not available
    bool gone;
    std::uint64_t activity;    // the slot's activity word when last seen to move
    std::uint64_t busy_until;  // now_ns() until which the rank counts as busy in nbrma
};

// True while some rank of the share is present and alive.
bool anyone_left(Served *served, unsigned count) {
    bool left = false;
    for (unsigned i = 0; i < count; ++i) {
        Served &rank = served[i];
        if (rank.gone) continue;
        if (rank.slot->presence.load(std::memory_order_acquire) == slot_left) {
            rank.gone = true;
        } else if (rank.pidfd >= 0) {
            pollfd event{rank.pidfd, POLLIN, 0};
            if (poll(&event, 1, 0) == 1) rank.gone = true;  // readable: the process exited
        } else if (kill(rank.slot->pid.load(std::memory_order_relaxed), 0) != 0 && errno == ESRCH) {
            rank.gone = true;
        }
        left |= !rank.gone;
    }
    return left;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: nbrma-helper <table> <bytes> <h> <k> (started by libnbrma)\n");
        return 2;
    }
    const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
    const unsigned h = static_cast<unsigned>(std::atoi(argv[3]));
    const unsigned k = static_cast<unsigned>(std::atoi(argv[4]));
    const int fd = open(argv[1], O_RDWR | O_CLOEXEC);
    struct stat info;
    if (fd < 0 || fstat(fd, &info) != 0 || static_cast<std::size_t>(info.st_size) < bytes ||
        bytes < sizeof(HelpHeader)) {
        std::fprintf(stderr, "nbrma-helper: cannot open the help table %s\n", argv[1]);
        return 1;
    }
    void *address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (address == MAP_FAILED) return 1;
    auto *header = static_cast<HelpHeader *>(address);
    if (header->magic != table_magic || h >= k || k > max_helpers || k != header->helpers ||
        table_bytes(header->slots) > bytes) {
        std::fprintf(stderr, "nbrma-helper: %s is not a help table for helper %u of %u\n",
                     argv[1], h, k);
        return 1;
    }

    // Up: nothing of the spawning rank's is held any more (its stderr, a pipe to the
    // launcher, would keep a job whose rank was killed from ending).
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        for (int standard = 0; standard < 3; ++standard) dup2(null, standard);
        close(null);
    }

    const unsigned count = (header->slots - h + k - 1) / k;
    auto *served = static_cast<Served *>(std::calloc(count ? count : 1, sizeof(Served)));
    if (!served) return 1;
    for (unsigned s = h, i = 0; s < header->slots; s += k, ++i) {
        RankSlot *slot = table_slot(header, s);
        const int pidfd = static_cast<int>(
            syscall(SYS_pidfd_open, static_cast<pid_t>(slot->pid.load()), 0));
        served[i] = {slot, pidfd, slot->presence.load() != slot_present, 0, 0};
    }
    header->helper_pid[h].store(static_cast<std::int32_t>(getpid()));
    const HelperState placed = place(header->slots);
    const bool bound = placed == helper_bound;
    prctl(PR_SET_TIMERSLACK, 1000ul);  // its short sleeps are meant short (1 us slack)
    header->helper_state[h].store(placed, std::memory_order_release);
    futex_wake(&header->helper_state[h]);

    std::atomic<std::uint32_t> &wanted = header->wanted[h];
    std::uint64_t scans = 0;
    unsigned idle = 0;
    long checked = now_ms();
    for (;;) {
        if (wanted.load(std::memory_order_acquire) == 0) {
            // Nobody wants help: sleep until a rank raises wanted[h] (it wakes us), and
            // look at our ranks' lives every 50 ms meanwhile.
            header->helper_sleeping[h].store(1, std::memory_order_seq_cst);
            if (wanted.load(std::memory_order_seq_cst) == 0) futex_wait(&wanted, 0, 50000000);
            header->helper_sleeping[h].store(0, std::memory_order_relaxed);
            if (!anyone_left(served, count)) break;
            checked = now_ms();
            idle = 0;
            continue;
        }
        bool woke = false, busy = false;
        const std::uint64_t now = now_ns();
        for (unsigned i = 0; i < count; ++i) {
            RankSlot *slot = served[i].slot;
            const std::uint64_t activity = slot->activity.load(std::memory_order_relaxed);
            if (activity != served[i].activity) {
                served[i].activity = activity;
                served[i].busy_until = now + busy_grace_ns;
            }
            const std::uint64_t watch = slot->watch.load(std::memory_order_acquire);
            if (watch == 0 || slot->bell.load(std::memory_order_seq_cst) < watch) continue;
            if (slot->sleeping.load(std::memory_order_seq_cst) == 0 ||
                slot->inside.load(std::memory_order_seq_cst) != 0)
                continue;  // awake or progressing itself: it will see the bell
            // Its application threads called nbrma a moment ago: likely in their next
            // call, about to progress themselves. Look again soon (no back-off meanwhile).
            if (served[i].busy_until > now) {
                busy = true;
                continue;
            }
            std::uint64_t expected = watch;
            if (!slot->watch.compare_exchange_strong(expected, 0)) continue;
            wanted.fetch_sub(1, std::memory_order_acq_rel);
            slot->wakes.fetch_add(1, std::memory_order_relaxed);
            wake_slot(slot);
            woke = true;
        }
        header->helper_scans[h].store(++scans, std::memory_order_relaxed);
        if (woke || busy) {
            idle = 0;
            if (busy && !bound) sched_yield();
            continue;
        }
        // Idle scans: spin, then yield; with no core of its own (unbound), then sleep
        // 10 us doubling to 200 us, so the ranks get the cores.
        if (++idle < 64) {
            __builtin_ia32_pause();
        } else if (bound || idle < 96) {
            sched_yield();
        } else {
            const long ns = std::min(10000l << std::min((idle - 96) / 8, 5u), 200000l);
            timespec pause{0, ns};
            nanosleep(&pause, nullptr);
        }
        if (idle % 1024 == 0) {
            const long now = now_ms();
            if (now - checked > 50) {
                if (!anyone_left(served, count)) break;
                checked = now;
            }
        }
    }
    header->helper_state[h].store(helper_absent, std::memory_order_release);
    std::free(served);
    return 0;
}
