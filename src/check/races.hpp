// NBRMA_CHECK=races: the RMA race checker. Off by default; when on, every RMA call a
// window runs is checked, at the moment it runs, against the calls logged at its
// target by every origin, and logged there itself.
//
// Happens-before is tracked with vector clocks over MPI_COMM_WORLD ranks. A rank's own
// clock ticks at each release (what it publishes: an unlock, a fence's arrival, a post,
// a complete, a send, a collective) and at each remote completion of its calls (a
// flush, an unlock, a fence or a complete that found them at their targets). A logged
// call records the clock its origin had when the call completed remotely: a later call
// of another rank is ordered after it only if that rank's clock has seen the origin's
// clock beyond that value, through an acquire (a lock grant after an exclusive
// release, a fence's barrier, a post seen by start, a complete seen by wait, a
// receive, a collective).
//
// Where the clocks live: every process publishes its clock in a small shared-memory
// slot of its own; every rank's window memory gets an access log (and the clocks of its
// lock's releases) in a shared-memory area of its own, which the node's origins write
// and read under a spin lock. Origins on another node reach the area (and the slot)
// through nbrma's UCX worker: the lock taken with a UCX compare-and-swap, the area read
// and written back with gets and puts (remote.hpp). So a check needs no help from the
// target's CPU (where the network does RMA and atomics).
#ifndef NBRMA_CHECK_RACES_HPP
#define NBRMA_CHECK_RACES_HPP

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "check/remote.hpp"
#include "engine/operation.hpp"

namespace nbrma::check {

namespace detail {
__attribute__((visibility("hidden"))) inline std::atomic<bool> on{false};
}
// The checker runs in this process (NBRMA_CHECK=races at MPI_Init, or a window whose
// info key asked for it): the interposed MPI calls publish and acquire clocks, and
// windows are checked unless their info key says off. One relaxed load: free when off.
inline bool enabled() {
    return __builtin_expect(detail::on.load(std::memory_order_relaxed), false);
}
// At MPI_Init (after MPICH's): reads NBRMA_CHECK and NBRMA_CHECK_ABORT, creates this
// rank's clock slot when checking.
void init();
// At MPI_Finalize (before MPICH's; collective over MPI_COMM_WORLD when checking): rank 0
// prints the summary, every rank removes its slot.
void finalize();

// The application's call site of the RMA call being issued on this thread: the return
// address of its MPI_ binding (NBRMA_CALL_SITE, src/mpi/bindings.hpp), resolved (as an
// object and an offset, cached by address) when the engine records the call.
namespace detail {
// Initial-exec TLS, hidden: the binding stores the address inline (no call, so the binding
// saves no registers for one), in 8 bytes of the static TLS glibc keeps for libraries.
__attribute__((visibility("hidden"),
               tls_model("initial-exec"))) inline thread_local const void *caller = nullptr;
}  // namespace detail
inline void set_caller(const void *address) { detail::caller = address; }
std::uint64_t call_site();

// Happens-before from the MPI calls nbrma interposes. `release` publishes this rank's
// clock (before a send or a collective); the acquires join what a peer published.
void release();
void acquire_from(MPI_Comm comm, int rank);  // a receive from `rank` of comm
void acquire_node();  // a receive from an unknown rank: every node-local rank's slot
// A collective: entering it, this rank's clock (then ticked) — the members' clocks at
// their entry are combined with MPI_MAX over the communicator after the collective
// (through the same interposed path) and joined in leaving it.
std::vector<std::uint64_t> enter_collective();
void leave_collective(const std::vector<std::uint64_t> &joined);

// An application thread returns from an MPI call that waited for synchronization
// (another thread, the progress thread, may have acquired for it): under
// ThreadSanitizer it is ordered after the calls replayed so far (tsan.hpp).
void synchronized();

// Races this process found, and target byte ranges it checked (MPI_T counters).
std::uint64_t races_found();
std::uint64_t accesses_checked();

struct Area;   // one rank's access log (race_log.hpp)
struct Entry;  // one call in it

// A window's accumulate info keys, as the checker applies them (MPI 4.0 §12.7.1):
// whether an op and MPI_NO_OP may meet at the same elements (accumulate_ops
// same_op_no_op, the default; same_op: they may not), and which pairs of one origin's
// accumulate-family calls to the same bytes stay in order (accumulate_ordering: a
// subset of read-after-read, read-after-write, write-after-read, write-after-write;
// none: no pair).
struct AccumulateRules {
    enum : unsigned { rar = 1, raw = 2, war = 4, waw = 8 };  // settings::accumulate_ordering_mask's
    bool no_op_mixes = true;
    unsigned ordering = rar | raw | war | waw;
    // From the keys' values (as validated at window creation).
    static AccumulateRules from_info(const char *ops, const char *ordering);
};

// One window's checker: this rank's area and the areas of the window's node-local
// ranks. Made collectively at window creation (create), used by the engine under the
// progress lock.
class WindowCheck {
  public:
    // Collective over comm: every rank makes its area, maps its peers'. Null when the
    // checker cannot run (then the window runs unchecked, said once). `base`: where
    // target offsets start in this rank's memory (null for a dynamic window, whose
    // offsets are addresses). `rules`: the window's accumulate info keys.
    // `shm_reach`: the window's ranks this rank reaches through shared memory (the
    // others' areas are reached through `worker`, nbrma's process UCX worker, which the
    // window's transport connected to every rank); empty when the window reaches every
    // rank so.
    static std::unique_ptr<WindowCheck> create(MPI_Comm comm, const void *base,
                                               const AccumulateRules &rules,
                                               const std::vector<bool> &shm_reach = {},
                                               transport::ucx::UcxWorker *worker = nullptr);
    ~WindowCheck();
    WindowCheck(const WindowCheck &) = delete;
    WindowCheck &operator=(const WindowCheck &) = delete;
    // The most bytes of a watched buffer kept to compare at its completion.
    static constexpr std::size_t sample_bytes = 256;

    // Epoch kinds as a report names them.
    enum class Sync : std::uint8_t { lock_exclusive, lock_shared, lock_all, fence, pscw };
    // A call runs toward its target: checked against the target's log, then logged.
    // `target`: the call's target type layout, if the engine looked it up already.
    // `fetch_request`: an MPI_Rget or MPI_Rget_accumulate, whose request completes once
    // the data was read at the target (the call is complete then, for its origin).
    // `issued`: for a call recorded in its epoch and run later, this rank's clock when it
    // was issued (snapshot()), to which what epoch `epoch` acquired toward the target is
    // added; empty for a call run as it is issued (the clock now is the clock then).
    void access(const engine::RmaCall &call, const engine::TypeLayout *target,
                std::uint64_t byte_offset, Sync sync, std::uint64_t site,
                const std::vector<std::uint64_t> &issued, std::uint64_t epoch, bool fetch_request);
    // A contiguous put or get run as it was issued: its target bytes are one block,
    // [low, low + bytes), checked and logged as access does for any call; `watch`: its
    // origin (put) or result (get) buffer, one block at `local`, is watched as
    // watch_origin and watch_result watch any.
    void block(const engine::RmaCall &call, std::uint64_t low, std::size_t bytes, const void *local,
               Sync sync, std::uint64_t site, std::uint64_t epoch, bool fetch_request, bool watch);
    std::vector<std::uint64_t> snapshot() const;
    // Every call this rank ran toward `target` (-1: every target) completed there;
    // `complete`: and MPI_Win_complete's clock is released to it (before the done notice
    // leaves), under the same lock of its area.
    void completed(int target, bool complete = false);
    // Lock hand-over at `target`: acquired after the grant (`later_calls`: the epoch's
    // calls may have been issued before it, to run once it is granted: what it acquired
    // is kept for them, see access); at the unlock, before the release leaves, this
    // rank's calls toward `target` completed there and (`release`: a lock was held,
    // not MPI_MODE_NOCHECK) the release is published, under one lock of the area.
    void lock_acquired(int target, bool exclusive, std::uint64_t epoch, bool later_calls);
    void unlocked(int target, bool exclusive, bool release);
    // Active target. This rank enters fence number `fence` (before its notices leave),
    // and passes its barrier: every window rank's clock at its entry is joined (and kept
    // for epoch `epoch`'s calls issued before, if `later_calls` are left to run), and this
    // rank's completed calls, ordered before every later one now, leave the logs (a lock
    // of each area it logged in since its last fence). A post
    // publishes the target's clock (before its grants), start acquires it (the grant
    // seen; kept, as a fence's, if `later_calls` recorded before are left); complete
    // publishes the origin's (completed(target, true)), wait acquires it (the notice seen).
    void fence_entered(std::uint64_t fence);
    void fence_passed(std::uint64_t fence, std::uint64_t epoch, bool later_calls);
    void post_release();
    void post_acquire(int target, std::uint64_t epoch, bool later_calls);
    void complete_acquire();
    // Epoch `epoch` completed: what it acquired goes.
    void epoch_done(std::uint64_t epoch);
    // Notified RMA: this rank read a notification counter of its window (a value, or a
    // threshold request completed): the notified calls logged at it are complete, and
    // their origins' clocks at the calls are ours.
    void notified();
    // Origin and result buffers, which MPI lets the application touch only once the call
    // completed (at the origin: a flush_local, a flush, an unlock, a fence, a complete).
    // A digest of the origin buffer (and a compare_and_swap's compare buffer) is taken
    // when the call is issued, of the result buffer when the call is issued and again
    // when it ran; `verify` compares
    // them with the buffers' contents when the calls toward `target` (-1: every target)
    // complete (`result` nonzero: only the result buffers holding that address), and
    // reports a buffer that changed. A notified call is complete for its buffers once
    // its notification is seen: not watched. Request-based calls are not watched
    // (their request completes them).
    void watch_origin(const engine::RmaCall &call, std::uint64_t site);
    void watch_result(const engine::RmaCall &call, const engine::TypeLayout *result,
                      std::uint64_t site);
    void verify(int target, std::uintptr_t result = 0);
    // A call with a result runs now: its result buffer, watched since the call, must not
    // have changed (the call is about to write it; watch_result watches it again after).
    void result_running(const engine::RmaCall &call);
    // The exposure epoch completed: entries ordered before this rank's clock go from its
    // own log.
    void exposure_done();
    // Under ThreadSanitizer (tsan.hpp): replays into it the calls logged at this rank
    // that its clock covers now (`all`: every call), as accesses of their origins' fibers
    // (caller holds the process mutex). The window is freed, past its closing barrier:
    // the calls not replayed yet are.
    void replay(bool all);
    void freed();

  private:
    WindowCheck() = default;
    int rank_ = 0;               // in the window
    AccumulateRules rules_;
    std::uintptr_t base_ = 0;    // of this rank's window memory (0: dynamic)
    std::vector<int> world_;     // window rank -> world rank
    std::vector<Area *> areas_;  // by window rank; null: on another node
    std::vector<void *> maps_;
    std::vector<std::size_t> map_bytes_;
    // When some rank's area is reached through UCX: the worker; every rank's area as a
    // UCX region (whose lock is then always taken through UCX); our area's registration;
    // the copy of a remote area while held.
    transport::ucx::UcxWorker *worker_ = nullptr;
    std::vector<Remote> remote_;
    std::unique_ptr<transport::ucx::UcxRegistration> registration_;
    std::vector<std::uint64_t> mirror_;
    bool reaches(int rank) const { return areas_[rank] || (worker_ && remote_[rank]); }
    // Takes rank's area lock and returns the area (a remote one: its copy); null when
    // it cannot be reached. `let_go` writes a remote copy back (`wrote`) and unlocks.
    Area *hold(int rank);
    void let_go(int rank, bool wrote);
    Area *hold_through_ucx(int rank);
    void let_go_through_ucx(int rank, bool wrote);
    // Ranks whose log may hold calls of ours not completed yet (at_head_only: one, the
    // entry at 0 that quick logged or marked pending again); that a fence has not
    // pruned of our calls yet.
    static constexpr char at_head_only = 2;
    std::vector<char> pending_, logged_;
    // What each epoch acquired toward a target (-1: every target, a fence), while the
    // epoch lasts: for its calls run after they were issued. Entries are reused (their
    // clocks keep their capacity), so an epoch allocates nothing once warm.
    struct Acquired {
        std::uint64_t epoch = 0;
        int target = 0;
        bool used = false;
        std::vector<std::uint64_t> clock;
    };
    std::vector<Acquired> acquired_;
    const std::vector<std::uint64_t> *find_acquired(std::uint64_t epoch, int target) const;
    // Scratch clocks (the caller holds the process mutex): a call's issue clock, an
    // acquisition.
    std::vector<std::uint64_t> then_, scratch_;
    struct Watched {
        int target;
        std::uint8_t kind;  // engine::RmaKind
        bool result;        // the result buffer (else the origin or compare buffer)
        std::uint64_t site;
        std::int64_t displacement;
        // The buffer's ranges: up to two in place (most buffers are one), else all in
        // `more`.
        using Range = std::pair<std::uintptr_t, std::size_t>;
        std::uint32_t count = 0;
        Range few[2];
        std::vector<Range> more;
        std::uint64_t digest = 0;
        // A buffer of one range above a word: the `kept` bytes that stand for it (all of
        // it up to sample_bytes, else a sample), compared at completion instead of a
        // digest; 0 for the others.
        std::uint16_t kept = 0;
        unsigned char sample[sample_bytes];
        void add(Range range) {
            if (count < 2)
                few[count++] = range;
            else
                add_more(range);
        }
        void add_more(Range range);
        const Range *ranges() const { return count <= 2 ? few : more.data(); }
    };
    std::vector<Watched> watched_;  // the first watching_ are watched (the rest reused)
    std::size_t watching_ = 0;
    void watch(const engine::RmaCall &call, const void *buffer, const engine::TypeLayout &layout,
               MPI_Aint count, bool result, std::uint64_t site);
    void keep_acquired(std::uint64_t epoch, int target, const std::vector<std::uint64_t> &clock);
    // access and block past their call's target bytes: `now` is checked and
    // logged at each segment [first, second) of them.
    struct Segment {  // no constructor: arrays of them are left uninitialized
        std::uint64_t first, second;
    };
    template <typename Same, typename Make>
    bool quick(const engine::RmaCall &call, Same same, Make make);
    void log_access(const engine::RmaCall &call, Entry &now, const Segment *segments, std::size_t n,
                    const std::vector<std::uint64_t> &issued, std::uint64_t epoch,
                    bool fetch_request);
    Entry entry(const engine::RmaCall &call, Sync sync, std::uint64_t site) const;
    [[gnu::noinline]] void verify_all(int target, std::uintptr_t result);  // verify's loop
    Watched &next_watched(const engine::RmaCall &call, bool result, std::uint64_t site);
    void keep(Watched &watched);
    void forget(bool replay_rest);
};

}  // namespace nbrma::check

#endif
