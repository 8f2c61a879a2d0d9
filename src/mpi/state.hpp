// nbrma's side table of windows (O(1) by handle), the state kept per window beside
// the real MPICH window underneath, and the wrapping of engine requests into MPICH
// generalized requests.
#ifndef NBRMA_MPI_STATE_HPP
#define NBRMA_MPI_STATE_HPP

#include <mpi.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "check/races.hpp"
#include "common/threads.hpp"
#include "engine/request.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "mpich/complete_request.hpp"
#include "progress/progress.hpp"
#include "transport/shm/cross_memory.hpp"
#include "transport/shm/peer_memory.hpp"
#include "transport/shm/shm_segment.hpp"
#include "transport/shm/user_memory.hpp"
#include "transport/transport.hpp"

namespace nbrma::mpi {

struct WindowInfo {
    std::string accumulate_ordering = "rar,raw,war,waw";
    std::string accumulate_ops = "same_op_no_op";
    bool no_locks = false;
    bool alloc_shared_noncontig = false;
    bool same_size = false;
    bool same_disp_unit = false;
    std::string accumulate_granularity = "0";        // mpi_accumulate_granularity (a hint only)
    bool reorder[4] = {false, false, false, false};  // SC14 §VI-B, by engine::Reorder
    // nbrma_transport: "shm" (node-local peers over shm, remote ones over UCX: the
    // default) or "ucx" (every peer over UCX, self included); "" = not given (the
    // NBRMA_TRANSPORT environment variable decides). Anything else is refused.
    std::string transport;
    // nbrma_notify_max: the capacity of the notification counters ("" = not given:
    // NBRMA_NOTIFY_MAX or 65536 decide).
    std::string notify_max;
    // nbrma_share_user_memory: "true" or "false"; "" = not given
    // (NBRMA_SHARE_USER_MEMORY decides).
    std::string share_user_memory;
    // nbrma_check: "races" or "off"; "" = not given (NBRMA_CHECK decides).
    std::string check;
};

struct WindowState {
    MPI_Win handle = MPI_WIN_NULL;
    MPI_Comm comm = MPI_COMM_NULL;     // nbrma's duplicate, only where UCX peers need
                                       // serving during the barrier at free
    MPI_Comm parent = MPI_COMM_NULL;   // the user's: creation errors go to its handler
    MPI_Group group = MPI_GROUP_NULL;  // the window's group (PSCW groups are translated)
    // MPICH's memory-less window underneath: over the window's communicator (its
    // MPI_Win_free is then the barrier at free), or over MPI_COMM_SELF (window_setup.cpp).
    bool mpich_on_comm = false;
    engine::Flavor flavor = engine::Flavor::allocate;
    // Answers for the predefined attributes (MPICH's MPI_WIN_BASE is wrong, doc/design.md §1).
    void *base = nullptr;
    MPI_Aint size = 0;
    int disp_unit = 1;
    int create_flavor = MPI_WIN_FLAVOR_CREATE;
    int model = MPI_WIN_UNIFIED;
    WindowInfo info;
    std::unique_ptr<layout::ControlLayout> layout;
    std::unique_ptr<transport::shm::ShmSegment> segment;
    // Control-only segments (create, dynamic): its node-wide identity, kept for reuse at
    // free (transport/shm/segment_cache.hpp); 0: not kept. Where this rank's control
    // region starts in it.
    std::uint64_t segment_id = 0;
    std::size_t control_offset = 0;
    int segment_ranks = 0;     // node-local ranks mapping it
    bool cma_checked = false;  // passed on with the segment (segment_cache.hpp)
    // MPI_Win_create: this rank's claim on its window's pages (moved into shared memory
    // where node-local peers map them), and those peers' window memory mapped here;
    // dynamic windows: a claim per attached region, by base. Declared before the
    // transport, so they go after it (after UCX deregistered the memory).
    transport::shm::UserMemoryClaim user_memory;
    std::vector<std::shared_ptr<transport::shm::PeerMemoryMap>> peer_memory;
    std::map<const void *, std::unique_ptr<transport::shm::UserMemoryClaim>> attached_memory;
    bool attach_shares = false;  // dynamic, shm only: peers may map attached regions
    bool share_user_memory = false;  // nbrma_share_user_memory / NBRMA_SHARE_USER_MEMORY
    // shm, ucx, or the mixed transport over both (owning them); see window_setup.cpp.
    std::unique_ptr<transport::Transport> transport;
    bool all_ucx = false;  // every peer goes through UCX (nbrma_transport=ucx)
    // all_ucx and MPI_Win_allocate: UCX allocates the window memory and the control
    // region (connect_ucx), the node segment holds neither
    bool ucx_allocates = false;
    // this window's share in the process's PR_SET_PTRACER consent (cross-memory attach)
    transport::shm::PtracerGrant ptracer;
    // NBRMA_CHECK=races / nbrma_check=races: this window's race checker (null: unchecked).
    // Declared before the engine, which uses it, so it goes after.
    std::unique_ptr<check::WindowCheck> check;
    std::unique_ptr<engine::Window> engine;
    // Serializes the engine's calls that run in shared sections (shared_call).
    alignas(64) threads::SpinLock shared_calls;
    std::uint8_t *shared_base =
        nullptr;  // window memory of rank 0 in the segment (allocate flavors)
    std::vector<MPI_Aint> shared_offsets;  // per rank, from shared_base; -1: on another node
    std::vector<MPI_Aint> sizes;
    std::vector<int> disp_units;
};

// Null if `win` is not an nbrma window.
namespace detail {
// The window of the last lookup without threads (every call of an epoch names the same
// one), checked inline; state.cpp keeps it.
__attribute__((visibility("hidden"))) inline WindowState *last_found = nullptr;
// With locking on, each thread keeps its own last window, valid while no window has been
// freed since (`window_generation`, bumped by window_erase), so a lookup that hits takes
// no lock and no call. The handle is kept beside the state, so a hit reads nothing of a
// window another thread may be freeing meanwhile. Initial-exec TLS (24 bytes of the
// static TLS glibc keeps for libraries, as check/races.hpp's caller): no __tls_get_addr
// call on every MPI call.
struct CachedWindow {
    WindowState *state = nullptr;
    MPI_Win handle = MPI_WIN_NULL;
    std::uint64_t generation = 0;
};
__attribute__((visibility("hidden"))) inline std::atomic<std::uint64_t> window_generation{0};
__attribute__((visibility("hidden"),
               tls_model("initial-exec"))) inline thread_local CachedWindow thread_window;
WindowState *window_lookup(MPI_Win win);
}  // namespace detail
// With one thread (no locking), `win` if it is the window of the last lookup, else null:
// for an entry point's inline path, before it builds its frame.
inline WindowState *window_last(MPI_Win win) {
    WindowState *last = detail::last_found;
    return !threads::active() && last && last->handle == win ? last : nullptr;
}
// With locking on, `win` if it is the window this thread looked up last and no window was
// created or freed since, else null: for an entry point's inline path.
inline WindowState *window_cached(MPI_Win win) {
    if (!threads::active()) return nullptr;
    const detail::CachedWindow &cached = detail::thread_window;
    return cached.state && cached.handle == win &&
                   cached.generation == detail::window_generation.load(std::memory_order_acquire)
               ? cached.state
               : nullptr;
}
inline WindowState *window_find(MPI_Win win) {
    if (WindowState *last = window_last(win)) return last;
    if (WindowState *cached = window_cached(win)) return cached;
    return detail::window_lookup(win);
}
void window_insert(WindowState *state);
void window_erase(MPI_Win win);

// Hands an engine request to the application as an MPI_Request (a generalized request
// completed by nbrma's progress). Takes the MPI-side reference of `request`. A
// notification threshold names its window (`cancellable`): MPI_Cancel cancels it there.
int request_wrap(engine::Request *request, MPI_Request *handle,
                 engine::Window *cancellable = nullptr);

// Blocking twin: waits for the request (progressing both engines), releases it.
Status request_wait(engine::Request *request);

// Reads the info keys nbrma knows into *out. Returns "" or, for the first key given a
// value it does not allow, a message naming the key, the value and the values allowed
// (that key is left as it was).
std::string parse_info(MPI_Info info, WindowInfo *out);

// Why NBRMA_PROGRESS=interrupt cannot run in this process (set at MPI_Init), or null;
// *status: err_info for a bad NBRMA_HELPERS, err_transport (MPI_ERR_OTHER) otherwise.
const char *interrupt_failure(Status *status);
// Set on every rank at MPI_Init when NBRMA_PROGRESS=interrupt holds on some ranks only:
// why every window creation fails (on every rank alike); else null.
const char *progress_mismatch();

// Installs the hook that keeps MPICH's progress moving while nbrma waits.
void ensure_initialized();

// Runs an engine call with the progress lock held, then (lock released) wakes the
// progress thread for the work it may have left and runs the deferred MPICH calls.
// Errors are raised by the caller after this returns: never under the lock.
template <typename Call>
inline auto locked(Call call) {
    struct After {
        std::uint64_t seen;
        ~After() {
            if (threads::active()) {
                engine::progress_kick(seen);
                threads::drain();
            }
        }
    } after{threads::active() ? engine::progress_bell() : 0};
    threads::Guard guard;
    return call();
}

// With locking on: runs `call` (an engine *_shared method) in a shared section
// (threads.hpp), the window's calls serialized by its own lock instead of the progress
// lock, so threads on windows of their own run side by side. True if it ran; false
// (nothing done) when no section could start or the engine turned the call down: the
// caller then runs it under the progress lock (locked).
template <typename Call>
[[gnu::always_inline]] inline bool shared_call(WindowState &state, Call call) {
    if (!threads::active() || !threads::SharedSection::enter(&state.shared_calls)) return false;
    const bool ran = call();
    threads::SharedSection::leave(&state.shared_calls);
    return ran;
}

// The same for a call the engine may run concurrently with the window's other calls
// (an engine *_concurrent method): in the section without the window's lock, and only
// where it turns the call down, `serialized` under the window's lock, in the same section.
template <typename Concurrent, typename Serialized>
[[gnu::always_inline]] inline bool shared_call(WindowState &state, Concurrent concurrent,
                                               Serialized serialized) {
    if (!threads::active() || !threads::SharedSection::enter()) return false;
    bool ran = concurrent();
    if (!ran) {
        state.shared_calls.lock();
        ran = serialized();
        state.shared_calls.unlock();
    }
    threads::SharedSection::leave();
    return ran;
}

}  // namespace nbrma::mpi

#endif
