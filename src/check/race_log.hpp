// The race checker's shared-memory structures and process state (races.hpp), for
// races.cpp (the engine's side) and races_mpi.cpp (the MPI layer's side).
#ifndef NBRMA_CHECK_RACE_LOG_HPP
#define NBRMA_CHECK_RACE_LOG_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check/remote.hpp"
#include "common/threads.hpp"

namespace nbrma::transport::ucx {
class UcxRegistration;
}

namespace nbrma::check {

class WindowCheck;

constexpr std::uint64_t not_completed = ~std::uint64_t{0};

// A spin lock in shared memory.
struct SpinLock {
    std::atomic<std::uint32_t> word{0};
    void lock() {
        if (word.exchange(1, std::memory_order_acquire) != 0) wait();
    }
    void unlock() { word.store(0, std::memory_order_release); }
    void wait();  // held: spins (yielding) until taken
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "shared between processes");

// A process's published clock: its vector clock as of its last release. Its one writer
// (the process, under its checker lock) stores entry by entry and readers load entry by
// entry, without a lock: entries only grow, so a read racing with a publication joins
// some entries of the newer clock, a clock newer than the message that led to the read,
// which may miss a race, never invent one (as joining the newest slot does anyway).
struct Slot {
    std::uint32_t unused;
    std::uint32_t ranks;
    std::uint64_t clock[1];  // [ranks]
    std::uint64_t load(int i) const { return __atomic_load_n(&clock[i], __ATOMIC_ACQUIRE); }
    void store(int i, std::uint64_t value) { __atomic_store_n(&clock[i], value, __ATOMIC_RELEASE); }
    static std::size_t bytes(int ranks) {
        return sizeof(Slot) + sizeof(std::uint64_t) * static_cast<std::size_t>(ranks - 1);
    }
};

// One logged RMA call at its target.
struct Entry {
    std::uint64_t low, high;     // target bytes [low, high): window offsets (dynamic: addresses)
    std::uint64_t completed;     // the completer's clock at remote completion, or not_completed
    std::int64_t displacement;   // the call's target_disp
    std::uint64_t site;          // the call site (race_site_*), 0 when unknown
    std::int32_t origin;         // world rank
    std::int32_t origin_window;  // window rank
    std::int32_t op;             // MPI_Op (accumulate family), else 0
    std::int32_t basic;          // MPI_Datatype of the target's elements (accumulate family)
    std::uint8_t kind;           // engine::RmaKind
    std::uint8_t sync;           // WindowCheck::Sync
    std::uint8_t element;        // byte size of one basic element (accumulate family)
    std::uint8_t notify;         // a notified call (MPIX_*_notify)
    std::int32_t completer;      // the world rank whose clock `completed` is: the origin, or
                                 // the target that saw the call's notification
};
static_assert(sizeof(Entry) == 64, "one cache line");

// One RMA call at its target, for the target to replay into ThreadSanitizer (tsan.hpp).
struct Landing {
    std::uint64_t low, high;  // target bytes, as Entry's
    std::uint64_t acquired;   // the origin's clock entry of the target when it issued the call
    std::uint64_t completed;  // as Entry's
    std::int32_t origin;      // world rank
    std::int32_t completer;   // as Entry's
    std::uint8_t kind;        // engine::RmaKind
    std::uint8_t writes;      // the call writes the target bytes
    std::uint8_t notify;      // a notified call
    std::uint8_t replayed;    // by the target
    std::uint32_t unused;
};
static_assert(sizeof(Landing) == 48, "packed");

// A rank's window in the checker, in shared memory: a header; the clocks its peers
// release into or acquire from, each `ranks` words: its last two fences' arrivals (by
// fence number parity), its lock's exclusive and shared releases, its post, the
// completes of its exposure's origins, its notified calls; then its access log; then,
// when this rank runs under ThreadSanitizer, the ring of calls it replays (Landing). Each
// clock is exact for its synchronization: a fence's clock is the one this rank entered
// that fence with, not anything it published later.
//
// The header's first cache line is what origins write under the lock (the lock word, the
// log's count). The fence numbers start the second, followed by the fence clocks, which
// only this rank writes: a peer passing a fence reads them (with two ranks, one line)
// without taking the line of the lock away from the origins. The post and done clocks
// come later, side by side (with two ranks, one line): an exposure's origin reads the
// first and writes the second.
struct Area {
    SpinLock lock;
    std::uint32_t ranks;
    std::uint32_t capacity;
    std::uint32_t count;
    std::uint32_t landing_capacity;              // 0: no replay
    std::uint64_t dropped;                       // calls not logged: the log (or the ring) was full
    std::uint64_t landings_head, landings_tail;  // appended by origins, replayed by this rank
    char line_end[16];                           // (the lock's line ends)
    std::uint64_t fences[2];                     // the fence numbers fence_clock(0), (1) hold
    enum Clock { fence0, fence1, exclusive_release, shared_release, post, done, notified, clocks };
    std::uint64_t *clock(Clock which) {
        return reinterpret_cast<std::uint64_t *>(this + 1) + std::size_t{ranks} * which;
    }
    Entry *entries() { return reinterpret_cast<Entry *>(clock(clocks)); }
    Landing *landings() { return reinterpret_cast<Landing *>(entries() + capacity); }
    static std::size_t bytes(int ranks, std::uint32_t capacity, std::uint32_t landing_capacity) {
        return sizeof(Area) + clocks * sizeof(std::uint64_t) * static_cast<std::size_t>(ranks) +
               sizeof(Entry) * capacity + sizeof(Landing) * landing_capacity;
    }
};
static_assert(offsetof(Area, fences) == 64, "the fence numbers start the second cache line");

// The process's checker lock: short sections (a report's printing the longest), taken
// only once locking is on (threads::active(): MPI_THREAD_MULTIPLE or a progress
// thread), as the progress lock is; one branch before that. Locking is switched on
// while no thread is inside nbrma, so a section's lock and unlock agree.
class ProcessLock {
  public:
    void lock() {
        if (threads::active()) lock_.lock();
    }
    void unlock() {
        if (threads::active()) lock_.unlock();
    }

  private:
    threads::SpinLock lock_;
};

// The process's checker state.
struct Process {
    bool abort_on_race = false;
    int me = 0;
    int ranks = 1;
    // By world rank, as learnt from the collectives that started the checker (every
    // rank's at MPI_Init; a checked window's ranks' at its creation): the process id,
    // which names its shared memory (0: not known yet), and its node (node_key()).
    std::vector<std::uint64_t> pids, nodes;
    ProcessLock mutex;   // clock, peers, reported
    std::vector<std::uint64_t> clock;
    Slot *own = nullptr;
    std::vector<Slot *> peers;  // by world rank; opened at the first acquire
    std::vector<char> tried;
    std::set<std::pair<std::uint64_t, std::uint64_t>> reported;  // site pairs
    std::atomic<std::uint64_t> next_window{0};  // numbers of this rank's areas (their names)
    bool summary = false;  // on from MPI_Init: a collective summary at MPI_Finalize
    bool tsan = false;     // under ThreadSanitizer: windows replay their calls into it
    std::vector<WindowCheck *> replaying;  // this process's windows that do
    std::atomic<std::uint64_t> races{0}, checked{0}, unchecked{0}, dropped{0};
    // Ranks on another (virtual) node, reached through nbrma's UCX worker (remote.hpp):
    // set up by the first checked window that has such peers; their slots by world rank,
    // read while `spanning` of this rank's live checked windows reach them (their
    // windows keep their workers progressed, which UCX over tcp needs).
    std::atomic<bool> ucx{false};
    transport::ucx::UcxWorker *worker = nullptr;
    std::unique_ptr<transport::ucx::UcxRegistration> slot_registration;
    std::vector<Remote> remote_slots;
    std::vector<int> spanning;
    // Reads of those slots, one in flight per rank (`again`: a message came from it
    // meanwhile, so another read must follow this one).
    struct SlotRead {
        void *request = nullptr;
        bool again = false;
        std::vector<std::uint64_t> clock;
    };
    std::vector<SlotRead> slot_reads;
    int slot_reads_in_flight = 0;
    int virtual_nodes = 0;  // NBRMA_VIRTUAL_NODES (test mode), else 0
    // Whether world rank `rank` is known to be on this node (its slot tried through
    // shared memory), and not in another virtual node.
    bool may_share_node(int rank) const {
        return pids[rank] != 0 && nodes[rank] == nodes[me] &&
               (virtual_nodes <= 0 || rank % virtual_nodes == me % virtual_nodes);
    }
    // What a collective told of world rank `rank` (caller holds `mutex`, or no peer
    // reads yet).
    void learn(int rank, std::uint64_t pid, std::uint64_t node) {
        pids[rank] = pid;
        nodes[rank] = node;
    }
};
extern Process process_state;  // races.cpp
inline Process &process() { return process_state; }

// Shared memory of the checker: a new object of `bytes` (O_EXCL; a leftover of the
// same name is replaced) or an existing one, mapped; null on failure.
void *create_shared(const std::string &name, std::size_t bytes);
void *open_shared(const std::string &name, std::size_t *bytes);
void unmap_shared(void *address, std::size_t bytes);
// Names in /dev/shm: world rank `world_rank`'s slot (by its process id, known to
// may_share_node), and its area of the window it numbered `window`.
std::string slot_name(int world_rank);
std::string area_name(std::uint64_t pid, std::uint64_t window);

// Joins world rank `rank`'s published clock into ours (caller holds process().mutex, and
// the progress lock). A slot on another node is read through UCX without waiting: its
// read joins when settle_slot_reads_locked finds it done.
void join_slot_locked(int rank);
// Joins the reads of slots on another node that completed; `wait`: waits for every one
// (an engine hook, which may then check or publish: a receive does not wait, as the
// sender may be blocked in an MPICH call that does not serve UCX peers).
void settle_slot_reads_locked(bool wait);
inline void settle_slot_reads(bool wait) {
    if (process().slot_reads_in_flight != 0) settle_slot_reads_locked(wait);
}
// Ticks our clock's own entry past the value just published (caller holds the mutex).
void tick_locked();
// Publishes our clock, then ticks it (caller holds process().mutex).
void publish_locked();
// Our clock grew: the windows under ThreadSanitizer replay the calls it now covers
// (caller holds process().mutex).
void replay_locked();

// Call sites: an object (by name hash) and an offset in it, as one word.
std::uint64_t encode_site(const void *address);
std::string describe_site(std::uint64_t site);

}  // namespace nbrma::check

#endif
