// Window creation, in stages (the four flavors' MPI_Win_create*, MPI_Win_allocate*,
// MPI_Win_create_dynamic come here from window_create.cpp): what each rank tells the
// others in one exchange (PeerRecord), the node's segment of control regions and
// allocated memory, how peers reach memory the user gave (shared pages, cross-memory
// attach), the transports, and the memory-less MPICH window that carries the handle.
// The stages and their order: Creation, below.
#include "mpi/window_setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "common/yield.hpp"
#include "mpi/errors.hpp"
#include "mpi/mpich.hpp"
#include "mpi/pmpi.hpp"
#include "progress/interrupt.hpp"
#include "progress/progress.hpp"
#include "transport/shm/segment_cache.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/ucx/mixed_transport.hpp"
#include "transport/ucx/ucx_transport.hpp"

using namespace nbrma;
using namespace nbrma::mpi;
using engine::Flavor;

namespace nbrma::mpi {

// (Pages no counter touched cost no memory.)
constexpr long notify_max_limit = 1L << 24;
std::int32_t notify_capacity(const WindowInfo &info, std::string *text) {
    const char *environment = settings::env(settings::Id::notify_max_env);
    *text = !info.notify_max.empty() ? info.notify_max : environment ? environment : "";
    if (text->empty()) return 65536;
    char *end = nullptr;
    const long value = std::strtol(text->c_str(), &end, 10);
    if (end == text->c_str() || *end != '\0' || value < 0 || value > notify_max_limit) return -1;
    return static_cast<std::int32_t>(value);
}

void wait_idle(WindowState &state) {
    Backoff backoff;
    while (!locked([&] { return state.engine->idle(); }))
        if (!engine::progress_sweep()) backoff.pause();
}

void barrier_serving(MPI_Comm comm, transport::Transport &transport) {
    if (!transport.needs_target_progress()) {
        mpich::Barrier(comm);
        return;
    }
    MPI_Request request;
    PMPI_Ibarrier(comm, &request);
    Backoff backoff;
    for (int done = 0;;) {
        mpich::Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (locked([&] { return transport.poll(); }) == 0) backoff.pause();
    }
}

}  // namespace nbrma::mpi

namespace {

// What each rank contributes to window creation's one exchange (an allgather on the
// user's communicator): everything the ranks must agree on, so each decides alone and
// all decide alike.
struct PeerRecord {
    std::int64_t size;
    std::int64_t base;
    std::uint64_t node_key;  // equal iff same node (node_key())
    std::uint64_t probe;     // where peers can read this process's cross-memory probe word
    std::int32_t disp_unit;
    std::int32_t pid;
    std::int32_t vnode;       // virtual node (NBRMA_VIRTUAL_NODES) within the node, -1: bad
    std::int32_t help_slot;   // NBRMA_PROGRESS=interrupt: slot in the node's help table, or -1
    std::int32_t notify_max;  // notification counters' capacity (-1: a bad value given)
    std::int32_t segment_fd;  // the memfd this rank prepared (ShmSegment), -1: none
    std::int32_t yama_scope;  // Yama's ptrace_scope here (-1: no Yama)
    std::uint32_t flags;      // PeerFlag
    // A freed window's segment this rank offers for reuse (segment_cache.hpp), 0: none
    std::uint64_t offer_id;
    std::int64_t offer_bytes;
    std::uint64_t fresh_id;  // the identity of a segment this rank would create as leader
    std::int32_t offer_ranks;  // how many ranks mapped the offered segment
    // MPI_Win_create: the memfd this rank's window pages move into for node-local peers
    // to map (user_memory.hpp), -1: none; where the window's base lies in it
    std::int32_t user_fd;
    std::uint64_t user_offset;
    std::uint64_t user_identity;  // that memfd's identity, unique on the node
    // Identities of node-local peers' memfds this rank has mapped already (0: none), so
    // that every rank knows whether mapping them can fail (user_memory_settled)
    std::uint64_t user_mapped[8];
};
enum PeerFlag : std::uint32_t {
    transport_valid = 1,  // nbrma_transport / NBRMA_TRANSPORT is "", "shm" or "ucx"
    wants_ucx = 2,        // ... and is "ucx"
    mode_valid = 4,       // NBRMA_PROGRESS is a progress mode
    interrupt_ok = 8,     // NBRMA_PROGRESS=interrupt, and its helper runs (else: not interrupt)
    offer_cma_checked = 16,  // the offered segment's window checked cross-memory attach
    user_moved = 32,         // user_fd's pages moved already (an earlier window's)
    info_valid = 64,         // every info key nbrma knows has a value it allows
};

// Whether nothing about moved user memory can fail at this creation, known to every
// rank alike: every rank that offers its pages has them moved already, and every rank
// of its node and virtual node (who will map them) has that memfd mapped already. A rank
// has at most 8 mapped: a group with more offering ranks is never settled.
bool user_memory_settled(const std::vector<PeerRecord> &peers) {
    const int nranks = static_cast<int>(peers.size());
    std::vector<int> order;  // ranks by (node, virtual node): each group in a run
    for (int r = 0; r < nranks; ++r) {
        if (peers[r].user_fd >= 0 && !(peers[r].flags & user_moved)) return false;
        order.push_back(r);
    }
    auto place = [&](int r) { return std::make_pair(peers[r].node_key, peers[r].vnode); };
    std::sort(order.begin(), order.end(), [&](int a, int b) { return place(a) < place(b); });
    constexpr int held = static_cast<int>(sizeof peers[0].user_mapped / sizeof(std::uint64_t));
    for (std::size_t first = 0, last = 0; first < order.size(); first = last) {
        int offering = 0;
        for (last = first; last < order.size() && place(order[last]) == place(order[first]);
             ++last)
            offering += peers[order[last]].user_fd >= 0;
        if (offering > held + 1) return false;
        for (std::size_t a = first; a < last; ++a)
            for (std::size_t b = first; b < last; ++b) {
                const PeerRecord &mapper = peers[order[a]], &owner = peers[order[b]];
                if (a == b || owner.user_fd < 0) continue;
                if (std::find(std::begin(mapper.user_mapped), std::end(mapper.user_mapped),
                              owner.user_identity) == std::end(mapper.user_mapped))
                    return false;
            }
    }
    return true;
}

// Two ranks share a node iff they run on one kernel under one host name (what
// MPI_COMM_TYPE_SHARED means to MPICH's hydra, without its collective): a hash of the
// host name and the kernel's boot id, computed once.
std::uint64_t node_key() {
    static const std::uint64_t key = [] {
        std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
        auto mix = [&](const char *text, std::size_t length) {
            for (std::size_t i = 0; i < length; ++i) {
                hash ^= static_cast<unsigned char>(text[i]);
                hash *= 1099511628211ull;
            }
        };
        char text[256] = {0};
        gethostname(text, sizeof text - 1);
        mix(text, std::strlen(text));
        std::memset(text, 0, sizeof text);
        if (FILE *file = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
            const std::size_t length = std::fread(text, 1, sizeof text - 1, file);
            std::fclose(file);
            mix(text, length);
        }
        return hash;
    }();
    return key;
}

// Yama's ptrace_scope, read once per process: a failed lookup under /proc/sys (no Yama)
// costs more than the rest of a 2-rank MPI_Win_create. A scope changed during the job is
// not followed (the cross-memory probe at creation still fails a window it breaks).
int yama_scope() {
    static const int scope = transport::shm::yama_ptrace_scope();
    return scope;
}

std::int64_t round_up(std::int64_t value, std::int64_t to) { return (value + to - 1) / to * to; }

// nbrma's UCP worker, one per process, made at the first window that needs UCX and
// kept for the process's life: endpoints are cached in it across windows, and no
// finalize hook could tear it down after the last window; exit closes its sockets.
Status process_worker(transport::ucx::UcxWorker **out) {
    static transport::ucx::UcxWorker *worker = nullptr;
    static Status failure = Status::ok;
    if (!worker && !is_error(failure)) {
        std::unique_ptr<transport::ucx::UcxWorker> made;
        // With wakeup: the interrupt-mode progress thread and the assist thread
        // (progress/assist.hpp) sleep on its events
        failure = transport::ucx::UcxWorker::create(nullptr, &made, true);
        if (!is_error(failure)) worker = made.release();
        // UCX's CMA transport relies on the same PR_SET_PTRACER consent as nbrma's
        transport::shm::PtracerGrant::keep_forever();
    }
    *out = worker;
    return failure;
}

// NBRMA_VIRTUAL_NODES=k (test mode): the ranks of a node form k virtual nodes, rank r of
// MPI_COMM_WORLD in virtual node r mod k; peers in another virtual node are reached
// through UCX as if on another machine. Memory stays per real node. -1: a bad value.
int virtual_node() {
    static int node = [] {
        const char *text = settings::env(settings::Id::virtual_nodes);
        if (!text || !*text) return 0;
        char *end = nullptr;
        const long k = std::strtol(text, &end, 10);
        if (*end || k < 1 || k > 4096) return -1;
        int world_rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        return static_cast<int>(world_rank % k);
    }();
    return node;
}

// True on every rank iff `ok` on every rank.
bool everyone(bool ok, MPI_Comm comm) {
    int mine = ok ? 1 : 0, all = 0;
    mpich::Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
    return all != 0;
}

// The UCX side of a window (doc/design.md §9): register our control region and memory,
// allgather the exposure records, connect to every rank, and wait for the wireup on
// every rank at once (each rank keeps progressing its worker inside a nonblocking
// barrier). On failure `why` says what failed; the result is the same on every rank.
Status connect_ucx(WindowState &state, void *base, std::size_t size, void *control,
                   std::size_t control_bytes, std::unique_ptr<transport::ucx::UcxTransport> *out,
                   const char **why) {
    int rank, nranks;
    PMPI_Comm_rank(state.comm, &rank);
    PMPI_Comm_size(state.comm, &nranks);
    // The process's UCX worker is shared with the windows the progress thread may be
    // sweeping: every step that touches it holds the progress lock (not the collectives).
    transport::ucx::UcxWorker *worker = nullptr;
    std::unique_ptr<transport::ucx::UcxTransport> ucx;
    Status status = locked([&] {
        Status made = process_worker(&worker);
        if (is_error(made)) return made;
        ucx = std::make_unique<transport::ucx::UcxTransport>(*worker, rank, nranks, control,
                                                             control_bytes);
        return state.flavor == Flavor::dynamic ? ucx->expose_dynamic()
                                               : ucx->expose_window(base, size);
    });
    if (!everyone(!is_error(status), state.comm)) {
        *why = worker ? "cannot register the window memory with UCX"
                      : "cannot initialize UCX (see NBRMA_UCX_*/UCX_* settings)";
        return is_error(status) ? status : Status::err_transport;
    }

    std::vector<std::uint8_t> mine = locked([&] { return ucx->exposure(); });
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(nranks), displacements(nranks, 0);
    mpich::Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, state.comm);
    for (int r = 1; r < nranks; ++r) displacements[r] = displacements[r - 1] + lengths[r - 1];
    std::vector<std::uint8_t> records(static_cast<std::size_t>(displacements[nranks - 1]) +
                                      lengths[nranks - 1]);
    PMPI_Allgatherv(mine.data(), length, MPI_BYTE, records.data(), lengths.data(),
                    displacements.data(), MPI_BYTE, state.comm);
    locked([&] {
        for (int r = 0; r < nranks && !is_error(status); ++r) {
            status = ucx->connect(r, records.data() + displacements[r], lengths[r]);
            if (is_error(status)) log(0, "cannot create a UCX endpoint to rank %d", r);
        }
    });
    // Unreachable peers fail ucp_ep_create at once: agree before any wireup waits.
    if (!everyone(!is_error(status), state.comm)) {
        *why = "a peer is unreachable through UCX (endpoint creation failed)";
        return is_error(status) ? status : Status::err_transport;
    }
    status = locked([&] { return ucx->finish_connect_start(); });
    Backoff backoff;
    for (bool done = is_error(status); !done;) {
        status = locked([&] { return ucx->finish_connect_test(&done); });
        if (is_error(status)) break;
        if (!done) backoff.pause();
    }
    MPI_Request barrier;
    PMPI_Ibarrier(state.comm, &barrier);
    for (int done = 0; !done;) {
        mpich::Test(&barrier, &done, MPI_STATUS_IGNORE);
        if (!done && locked([&] { return worker->progress(); }) == 0) backoff.pause();
    }
    if (!everyone(!is_error(status), state.comm)) {
        *why = "the UCX wireup with a peer failed";
        return is_error(status) ? status : Status::err_transport;
    }
    *out = std::move(ucx);
    return Status::ok;
}

// Cross-memory attach for a create/dynamic window whose node-local peers go through
// the shm transport: consent to being read where Yama asks for it (the window holds a
// share of PR_SET_PTRACER_ANY, withdrawn with the last such window; left alone when the
// peers could read this process already), then prove it: read the probe word of each
// node-local peer. Consent costs a round (who can be read already, then a barrier once
// it is in place) only when some rank's Yama scope is 1, which every rank sees in the
// exchange. Returns this rank's verdict (CmaVerdict); the caller agrees on it with the
// others, so every rank fails alike, at creation rather than at the first RMA call.
int cross_memory_verdict(WindowState &state, MPI_Comm comm, int rank,
                         const std::vector<PeerRecord> &peers, const std::vector<bool> &is_local) {
    using namespace transport::shm;
    const int nranks = static_cast<int>(peers.size());
    bool needed = false;  // a peer on this node (a rank alone on its node reads no one)
    bool consent_round = false;
    for (int r = 0; r < nranks; ++r) {
        needed |= is_local[r] && r != rank;
        consent_round |= peers[r].yama_scope == 1;
    }
    const bool allowed = needed && !cross_memory_forbidden();
    const int scope = peers[rank].yama_scope;
    auto probe = [&](int r) { return probe_peer(peers[r].pid, peers[r].probe); };
    bool readable_by_some = false;
    if (consent_round) {
        // who can be read already (only Yama's scope 1 lets consent make a difference)
        std::vector<int> readable(nranks, 0), by_some(nranks, 0);
        for (int r = 0; r < nranks; ++r)
            if (allowed && scope == 1 && is_local[r] && r != rank)
                readable[r] = probe(r) == cma_ok;
        mpich::Allreduce(readable.data(), by_some.data(), nranks, MPI_INT, MPI_MAX, comm);
        readable_by_some = by_some[rank] != 0;
    }
    if (allowed) state.ptracer.acquire(scope, readable_by_some);
    if (consent_round) mpich::Barrier(comm);  // consent is in place everywhere
    int verdict = needed && !allowed ? cma_forbidden : cma_ok;
    for (int r = 0; r < nranks && allowed && verdict == cma_ok; ++r)
        if (is_local[r] && r != rank) verdict = probe(r);
    return verdict;
}

// Why an agreed cross-memory verdict other than cma_ok fails the window.
std::string cross_memory_failure(int verdict, int scope, Status *status) {
    using namespace transport::shm;
    *status = verdict == cma_forbidden || verdict == cma_denied ? Status::err_unsupported
                                                                : Status::err_transport;
    switch (verdict) {
        case cma_forbidden:
            return "NBRMA_CMA=0 forbids cross-memory attach, which this window's memory "
                   "needs between ranks of a node (use MPI_Win_allocate or "
                   "nbrma_transport=ucx)";
        case cma_denied:
            return "cross-memory attach (process_vm_readv) between ranks of a node is not "
                   "permitted (Yama ptrace_scope " +
                   std::to_string(scope) + "; use MPI_Win_allocate or nbrma_transport=ucx)";
        default:
            return "process_vm_readv cannot reach a rank of this node (another PID namespace?)";
    }
}

// Fails the window creation on every rank alike: frees what was made, raises.
int creation_failed(const char *call, WindowState &state, Status status, const char *why) {
    if (state.comm != MPI_COMM_NULL) PMPI_Comm_free(&state.comm);
    if (state.group != MPI_GROUP_NULL) PMPI_Group_free(&state.group);
    return raise_comm(call, state.parent, status, why);
}

// One window's creation, in stages every rank runs in the same order (their collectives
// on the user's communicator in the same order everywhere; a stage that fails, fails on
// every rank alike, through creation_failed):
//   check_arguments  no exchange yet: errors go to the communicator's error handler
//   describe         this rank's PeerRecord: settings, memory, the segment it can offer
//   agree            the one allgather; every setting valid and alike everywhere
//   discover_node    the node's ranks, its leader, who is reached over shared memory
//   reach_user_memory  MPI_Win_create pages offered to node-local peers, mapped
//   plan_segment     the control regions' layout, the segment's size, whether a freed
//                    window's segment is reused
//   map_segment      the node's segment mapped, cross-memory attach agreed
//   choose_transports  shm, ucx or both, and the engine's window over them
//   make_mpich_window  the MPICH window that carries handle, name and attributes
//
// Peer selection (doc/design.md §9): node-local peers over shm, remote peers over UCX (the
// mixed transport, which also sends every atomic through UCX: CPU and NIC atomics are
// not atomic with respect to each other). nbrma_transport=ucx (info key, or the
// NBRMA_TRANSPORT environment variable) sends every peer through UCX; the window
// memory of the allocate flavors still lives in the node's segment, so load/store on
// MPI_Win_allocate_shared memory works in both modes. With NBRMA_VIRTUAL_NODES only the
// transport choice follows the virtual nodes (shm_reach); the segment stays per node.
struct Creation {
    // The call's arguments.
    const char *call;
    Flavor flavor;
    MPI_Aint size;
    int disp_unit;
    MPI_Info info;
    MPI_Comm comm;
    void *user_base;

    std::unique_ptr<WindowState> state = std::make_unique<WindowState>();
    int rank = 0, nranks = 0;
    bool allocates = false;
    // describe
    std::string info_error, choice, notify_text;
    engine::ProgressMode mode = engine::ProgressMode::inline_mode;
    const char *mode_text = "";
    bool mode_ok = false;
    Status interrupt_status = Status::err_transport;
    const char *interrupt_why = nullptr;
    transport::shm::CachedSegment offered;
    PeerRecord mine{};
    std::vector<transport::shm::HeldPeerMemory> held;  // peers' memfds mapped already
    // agree
    std::vector<PeerRecord> peers;
    std::uint32_t all = ~0u;  // the flags every rank set
    bool notify_agreed = true;
    // discover_node
    int leader = -1;  // the node's first rank: its segment is the node's
    std::vector<bool> is_local;
    std::vector<bool> shm_reach;    // local, and in our virtual node
    std::vector<int> local_index;  // position in the node's segment
    int local_count = 0;
    bool spans_nodes = false, spans_virtual = false;
    // reach_user_memory
    bool shm_peer = false, any_user_memory = false, map_user_memory = false;
    bool user_memory_failed = false, user_memory_mapped = false;
    // plan_segment
    std::int64_t control_bytes = 0, total = 0;
    std::vector<std::int64_t> offsets;
    bool reuse = false;

    int check_arguments(MPI_Win *win);
    int describe();
    int agree();
    void discover_node();
    int reach_user_memory();
    int plan_segment();
    int map_segment();
    int choose_transports(void *base_out);
    int make_mpich_window(MPI_Win *win);
    int failed(Status status, const char *why) {
        return creation_failed(call, *state, status, why);
    }
};

int Creation::check_arguments(MPI_Win *win) {
    ensure_initialized();
    if (comm == MPI_COMM_NULL) return raise_comm(call, comm, Status::err_comm, "MPI_COMM_NULL");
    int inter = 0;
    if (int error = PMPI_Comm_test_inter(comm, &inter); error != MPI_SUCCESS) return error;
    if (inter)
        return raise_comm(call, comm, Status::err_comm,
                          "an intercommunicator (windows are made over intracommunicators)");
    if (size < 0) return raise_comm(call, comm, Status::err_arg, "negative window size");
    if (disp_unit <= 0) return raise_comm(call, comm, Status::err_arg, "disp_unit must be > 0");
    if (!win) return raise_comm(call, comm, Status::err_arg, "null window pointer");

    state->flavor = flavor;
    state->parent = comm;
    // nbrma's collectives here run on the user's communicator, in the order this
    // collective call gives them on every rank; only a window whose peers need serving
    // at free (UCX) keeps a duplicate (state->comm). An invalid handle: MPICH has raised
    // MPI_ERR_COMM on it already.
    if (int error = PMPI_Comm_rank(comm, &rank); error != MPI_SUCCESS) return error;
    PMPI_Comm_size(comm, &nranks);
    PMPI_Comm_group(comm, &state->group);
    info_error = parse_info(info, &state->info);
    set_log_rank(rank);
    if (nranks > sync::LockWord::max_ranks)
        return failed(Status::err_unsupported, "too many ranks for the lock word");
    if (const char *why = progress_mismatch()) return failed(Status::err_info, why);
    allocates = flavor == Flavor::allocate || flavor == Flavor::shared;
    return MPI_SUCCESS;
}

// The transport choice, NBRMA_PROGRESS (doc/design.md §6) and NBRMA_VIRTUAL_NODES, checked
// at every creation: a bad value anywhere fails everywhere (agree).
int Creation::describe() {
    choice = state->info.transport;
    if (choice.empty()) {
        const char *environment = settings::env(settings::Id::transport_env);
        choice = environment ? environment : "";
    }
    mode_ok = engine::progress_mode_from_environment(&mode, &mode_text);
    interrupt_why = mode == engine::ProgressMode::interrupt_mode
                        ? interrupt_failure(&interrupt_status)
                        : nullptr;
    // The node's segment: every rank prepares a memfd, the node's first rank's is used;
    // or, for windows whose segment holds control regions only, a rank that kept a freed
    // window's segment offers it instead (reused where every rank of the node offers it).
    if (!allocates) offered = transport::shm::segment_cache_take();
    // MPI_Win_create memory: its pages are registered, and offered to node-local peers
    // unless every peer goes through UCX anyway: MPI_Alloc_mem memory as it is, other
    // memory only if moving it into shared pages was asked for.
    state->share_user_memory = state->info.share_user_memory.empty()
                                   ? transport::shm::user_memory_sharing_requested()
                                   : state->info.share_user_memory == "true";
    if (flavor == Flavor::create)
        state->user_memory.claim(user_base, static_cast<std::size_t>(size), choice != "ucx",
                                 state->share_user_memory);
    state->segment = std::make_unique<transport::shm::ShmSegment>();
    if (!offered) (void)state->segment->prepare();
    mine = PeerRecord{static_cast<std::int64_t>(size),
                      static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(user_base)),
                      node_key(),
                      transport::shm::probe_address(),
                      disp_unit,
                      static_cast<std::int32_t>(getpid()),
                      virtual_node(),
                      engine::interrupt::attached()
                          ? static_cast<std::int32_t>(engine::interrupt::slot_index())
                          : -1,
                      0,
                      state->segment->descriptor(),
                      yama_scope(),
                      0,
                      offered ? offered.id : 0,
                      offered ? static_cast<std::int64_t>(offered.segment->size()) : 0,
                      transport::shm::new_segment_id(),
                      offered ? offered.ranks : 0,
                      state->user_memory.descriptor(),
                      state->user_memory.offset(),
                      state->user_memory.identity(),
                      {}};
    if (state->user_memory.moved()) mine.flags |= user_moved;
    if (choice != "ucx") held = transport::shm::peer_memory_held();
    for (std::size_t i = 0, n = 0; i < held.size() && n < std::size(mine.user_mapped); ++i)
        mine.user_mapped[n++] = held[held.size() - 1 - i].identity;  // the newest first
    if (choice.empty() || choice == "shm" || choice == "ucx") mine.flags |= transport_valid;
    if (choice == "ucx") mine.flags |= wants_ucx;
    if (mode_ok) mine.flags |= mode_valid;
    if (info_error.empty()) mine.flags |= info_valid;
    if (!interrupt_why) mine.flags |= interrupt_ok;
    if (offered && offered.cma_checked && !transport::shm::cross_memory_forbidden())
        mine.flags |= offer_cma_checked;
    mine.notify_max = notify_capacity(state->info, &notify_text);
    if (flavor == Flavor::dynamic) {
        mine.size = 0;
        mine.base = 0;
        mine.disp_unit = 1;
    }
    return MPI_SUCCESS;
}

int Creation::agree() {
    peers.resize(nranks);
    mpich::Allgather(&mine, sizeof mine, MPI_BYTE, peers.data(), sizeof mine, MPI_BYTE, comm);

    std::uint32_t any = 0;
    bool vnodes_valid = true;
    for (const PeerRecord &peer : peers) {
        all &= peer.flags;
        any |= peer.flags;
        vnodes_valid &= peer.vnode >= 0;
        notify_agreed &= peer.notify_max == peers[0].notify_max;
    }
    if (!(all & info_valid))
        return failed(Status::err_info_value, info_error.empty()
                                                  ? "an info value another rank gave is not valid"
                                                  : info_error.c_str());
    if (!(all & transport_valid))
        return failed(Status::err_info,
                      "nbrma_transport / NBRMA_TRANSPORT must be \"shm\" or \"ucx\"");
    state->all_ucx = any & wants_ucx;
    if (!(all & mode_valid)) {
        const std::string why =
            mode_ok ? std::string(
                          "NBRMA_PROGRESS differs between ranks (another rank has a "
                          "value other than \"inline\", \"thread\" or \"interrupt\")")
                    : "NBRMA_PROGRESS=\"" + std::string(mode_text) +
                          "\" is not a progress mode (\"inline\", \"thread\" or \"interrupt\")";
        return failed(Status::err_info, why.c_str());
    }
    if (!(all & interrupt_ok)) {
        const std::string why =
            interrupt_why ? "NBRMA_PROGRESS=interrupt: " + std::string(interrupt_why)
                          : std::string("NBRMA_PROGRESS=interrupt cannot run on another rank");
        return failed(interrupt_status, why.c_str());
    }
    if (!vnodes_valid)
        return failed(Status::err_info, "NBRMA_VIRTUAL_NODES must be a number from 1 to 4096");
    return MPI_SUCCESS;
}

void Creation::discover_node() {
    const int vnode = mine.vnode;
    is_local.assign(nranks, false);
    shm_reach.assign(nranks, false);
    local_index.assign(nranks, -1);
    for (int r = 0; r < nranks; ++r) {
        is_local[r] = peers[r].node_key == mine.node_key;
        if (is_local[r] && leader < 0) leader = r;
        shm_reach[r] = is_local[r] && peers[r].vnode == vnode;
        if (is_local[r]) local_index[r] = local_count++;
        spans_nodes |= peers[r].node_key != peers[0].node_key;
        spans_virtual |= peers[r].vnode != peers[0].vnode;
    }
    set_local_ranks(local_count);
}

// Pages offered are moved where a peer maps them (a node-local peer reached over shm),
// and peers' offered pages are mapped here; whether they are used is agreed in
// map_segment, with the segment.
int Creation::reach_user_memory() {
    for (int r = 0; r < nranks; ++r) {
        shm_peer |= r != rank && shm_reach[r];
        any_user_memory |= peers[r].user_fd >= 0;
    }
    map_user_memory = any_user_memory && shm_peer && !state->all_ucx;
    if (state->user_memory.descriptor() >= 0) {
        if (map_user_memory)
            user_memory_failed = is_error(state->user_memory.share());
        else
            state->user_memory.decline();
    }
    if (map_user_memory) {
        state->peer_memory.resize(nranks);
        for (int r = 0; r < nranks && !user_memory_failed; ++r) {
            if (r == rank || !shm_reach[r] || peers[r].user_fd < 0) continue;
            Status mapped = Status::ok;
            state->peer_memory[r] = transport::shm::peer_memory_map(
                held, peers[r].pid, peers[r].user_fd, peers[r].user_identity, &mapped);
            user_memory_failed =
                is_error(mapped) ||
                !state->peer_memory[r]->at(peers[r].user_offset,
                                           static_cast<std::uint64_t>(peers[r].size));
        }
    }
    if (flavor == Flavor::shared && spans_nodes)
        return failed(Status::err_unsupported,
                      "the communicator spans nodes: no shared memory between them");
    return MPI_SUCCESS;
}

int Creation::plan_segment() {
    // Every rank's control region has the same layout: the capacity must agree.
    if (!notify_agreed || peers[0].notify_max < 0) {
        const std::string why =
            mine.notify_max < 0
                ? "nbrma_notify_max / NBRMA_NOTIFY_MAX=\"" + notify_text +
                      "\" is not a number of notification counters from 0 to 16777216"
                : std::string("nbrma_notify_max / NBRMA_NOTIFY_MAX differs between ranks");
        return failed(Status::err_info, why.c_str());
    }
    state->layout = std::make_unique<layout::ControlLayout>(
        nranks, static_cast<std::uint32_t>(peers[0].notify_max));
    control_bytes = static_cast<std::int64_t>(state->layout->size());
    total = control_bytes * local_count;
    offsets.assign(nranks, 0);
    const bool contiguous = flavor == Flavor::shared && !state->info.alloc_shared_noncontig;
    if (allocates) {
        std::int64_t cursor = round_up(total, 4096);
        for (int r = 0; r < nranks; ++r) {
            if (!is_local[r]) continue;
            offsets[r] = cursor;
            cursor += contiguous ? peers[r].size : round_up(peers[r].size, 4096);
        }
        total = cursor;
    }

    // Reuse only where every node's ranks offer the same segment, all of its holders
    // (segment_offers_agree). Otherwise nobody reuses: the ranks that offered put their
    // segment back, prepare a memfd like the others, and the records are exchanged once
    // more.
    bool any_offer = false;
    for (const PeerRecord &peer : peers) any_offer |= peer.offer_id != 0;
    if (any_offer) {
        std::vector<transport::shm::SegmentOffer> offers;
        offers.reserve(peers.size());
        for (const PeerRecord &peer : peers)
            offers.push_back({peer.node_key, peer.offer_id, peer.offer_bytes, peer.offer_ranks});
        reuse = transport::shm::segment_offers_agree(offers, control_bytes);
        if (!reuse) {
            transport::shm::segment_cache_put(std::move(offered));
            if (state->segment->descriptor() < 0) (void)state->segment->prepare();
            mine.segment_fd = state->segment->descriptor();
            mine.offer_id = 0;
            mine.offer_bytes = 0;
            mine.offer_ranks = 0;
            mpich::Allgather(&mine, sizeof mine, MPI_BYTE, peers.data(), sizeof mine, MPI_BYTE,
                             comm);
        }
    }
    if (!allocates) state->segment_id = reuse ? offered.id : peers[leader].fresh_id;
    state->control_offset = static_cast<std::size_t>(control_bytes) * local_index[rank];
    state->segment_ranks = local_count;
    return MPI_SUCCESS;
}

// One segment per node, the leader's memfd (nothing in /dev/shm, whoever dies when); the
// others open it by the name its descriptor gives and drop theirs; the leader drops its
// descriptor once every rank has mapped (agreed here).
int Creation::map_segment() {
    Status status = Status::ok;
    if (reuse) {
        state->segment = std::move(offered.segment);  // its creator withdrew its descriptor
    } else if (rank == leader) {
        status = state->segment->create(static_cast<std::size_t>(total));
    } else {
        state->segment->withdraw();
        status = peers[leader].segment_fd < 0
                     ? Status::err_transport
                     : state->segment->open(transport::shm::ShmSegment::name_of(
                                                peers[leader].pid, peers[leader].segment_fd),
                                            static_cast<std::size_t>(total));
    }
    // One agreement on the mapping and, for memory the user gave, on cross-memory attach.
    // A reused segment is mapped already, and the window made on it checked
    // cross-memory attach among the same node-local processes with no Yama consent to
    // take: where every rank says so (and nbrma_transport=ucx needs no check), and no
    // rank's moved pages can fail (user_memory_settled: a loop creating windows over the
    // same buffers), there is nothing to agree on and the allreduce is left out (the same
    // on every rank). The third verdict: every rank moved the pages it offered and mapped
    // its peers'.
    // verdict[0]: the errno of a failed mapping (EIO when none was seen), 0 when mapped.
    const int segment_error = state->segment->error() > 0 ? state->segment->error() : EIO;
    int verdict[3] = {is_error(status) ? segment_error : 0, transport::shm::cma_ok,
                      user_memory_failed},
        agreed[3] = {0, 0, 0};
    const bool cma_known = reuse && (all & offer_cma_checked);
    // (Whether to agree must not depend on map_user_memory, which differs between
    // ranks with and without a peer in their virtual node.)
    if (reuse && (state->all_ucx || cma_known) &&
        (!any_user_memory || state->all_ucx || user_memory_settled(peers))) {
        agreed[1] = transport::shm::cma_ok;
        if (user_memory_failed) {  // settled says it cannot: peers now count on it
            log(0, "%s: internal error: moved window memory failed after all", call);
            std::abort();
        }
    } else {
        // (A reused segment whose window checked cross-memory attach needs no new check:
        // the allreduce is then only for the moved pages.)
        if (!allocates && !state->all_ucx && !cma_known)
            verdict[1] = cross_memory_verdict(*state, comm, rank, peers, is_local);
        mpich::Allreduce(verdict, agreed, 3, MPI_INT, MPI_MAX, comm);
    }
    // Not agreed: every peer is reached by cross-memory attach (moved pages included).
    user_memory_mapped = map_user_memory && !agreed[2];
    if (map_user_memory && !user_memory_mapped) {
        state->peer_memory.clear();
        state->user_memory.decline();
    }
    bool consent = false;
    for (const PeerRecord &peer : peers) consent |= peer.yama_scope == 1;
    state->cma_checked = cma_known || (!allocates && !state->all_ucx && !consent &&
                                       !agreed[0] && agreed[1] == transport::shm::cma_ok);
    if (rank == leader) state->segment->withdraw();
    if (rank != leader) transport::shm::test_die_at("peer_agreed");
    if (reuse) locked([] { ++counters().segments_reused; });
    if (user_memory_mapped && state->user_memory.shared())
        locked([] { ++counters().user_memory_shared; });
    if (agreed[0]) {
        std::string why = "cannot map the node's shared segment: ";
        if (agreed[0] == EMFILE)
            why += "a rank has as many open files as RLIMIT_NOFILE allows (ulimit -n)";
        else if (agreed[0] == ENFILE)
            why += "the system's open-file table is full (fs.file-max)";
        else if (agreed[0] == ENOMEM || agreed[0] == ENOSPC)
            why += "out of memory";
        else
            why += std::string(std::strerror(agreed[0])) +
                   " (local ranks open it as /proc/<pid>/fd/<n>: same user, one PID "
                   "namespace)";
        return failed(Status::err_no_memory, why.c_str());
    }
    if (agreed[1] != transport::shm::cma_ok) {
        const std::string why = cross_memory_failure(agreed[1], mine.yama_scope, &status);
        return failed(status, why.c_str());
    }
    return MPI_SUCCESS;
}

int Creation::choose_transports(void *base_out) {
    auto *segment = static_cast<std::uint8_t *>(state->segment->address());
    std::vector<transport::shm::ShmPeer> shm_peers(nranks);
    engine::WindowConfig config;
    config.flavor = flavor;
    std::int64_t first_offset = 0;
    for (int r = 0; r < nranks; ++r)
        if (is_local[r]) {
            first_offset = offsets[r];
            break;
        }
    for (int r = 0; r < nranks; ++r) {
        transport::shm::ShmPeer &peer = shm_peers[r];
        if (is_local[r]) {
            peer.control = segment + control_bytes * local_index[r];
            peer.window_size = static_cast<std::uint64_t>(peers[r].size);
            peer.bell = engine::interrupt::bell(peers[r].help_slot);
            if (allocates) {
                peer.window = segment + offsets[r];
            } else {
                peer.remote_base = static_cast<std::uint64_t>(peers[r].base);
                peer.pid = peers[r].pid;
                if (flavor == Flavor::dynamic) peer.window_size = ~0ull;
                if (user_memory_mapped && shm_reach[r] && peers[r].user_fd >= 0)
                    peer.window = r == rank ? static_cast<std::uint8_t *>(user_base)
                                            : state->peer_memory[r]->at(
                                                  peers[r].user_offset,
                                                  static_cast<std::uint64_t>(peers[r].size));
            }
        }
        config.sizes.push_back(static_cast<std::uint64_t>(peers[r].size));
        config.disp_units.push_back(peers[r].disp_unit);
        state->sizes.push_back(static_cast<MPI_Aint>(peers[r].size));
        state->disp_units.push_back(peers[r].disp_unit);
        state->shared_offsets.push_back(
            is_local[r] ? static_cast<MPI_Aint>(offsets[r] - first_offset) : -1);
    }
    config.hardware_atomics =
        state->info.accumulate_ops == "same_op_no_op" || state->info.accumulate_ops == "same_op";
    config.no_locks = state->info.no_locks;
    for (int key = 0; key < 4; ++key) config.reorder[key] = state->info.reorder[key];

    void *base = user_base;
    if (allocates) base = size > 0 ? segment + offsets[rank] : nullptr;
    void *my_control = segment + state->control_offset;
    auto shm = std::make_unique<transport::shm::ShmTransport>(
        rank, static_cast<std::size_t>(control_bytes), std::move(shm_peers));
    const bool shm_only = !spans_nodes && !spans_virtual && !state->all_ucx;
    if (flavor == Flavor::dynamic) {
        // Attached regions in shared pages (MPI_Alloc_mem memory, or moved where that was
        // asked for) are mapped by node-local peers (the directory carries the memfd;
        // MixedTransport's directories are UCX's).
        state->attach_shares = shm_only && shm_peer;
        shm->enable_dynamic(state->attach_shares);
    }
    if (shm_only) {
        state->transport = std::move(shm);
    } else {
        std::unique_ptr<transport::ucx::UcxTransport> ucx;
        const char *why = nullptr;
        PMPI_Comm_dup(comm, &state->comm);  // for the barrier that serves peers at free
        const Status status = connect_ucx(*state, base, static_cast<std::size_t>(size),
                                          my_control, static_cast<std::size_t>(control_bytes),
                                          &ucx, &why);
        if (is_error(status)) return failed(status, why);
        if (state->all_ucx)
            state->transport = std::move(ucx);
        else
            state->transport = std::make_unique<transport::ucx::MixedTransport>(
                std::move(shm), std::move(ucx), shm_reach);
    }
    state->engine = std::make_unique<engine::Window>(*state->transport, *state->layout, config);

    if (allocates) {
        state->shared_base = segment + first_offset;
        *static_cast<void **>(base_out) = base;
    }
    state->base = flavor == Flavor::dynamic ? MPI_BOTTOM : base;
    state->size = flavor == Flavor::dynamic ? 0 : size;
    state->disp_unit = flavor == Flavor::dynamic ? 1 : disp_unit;
    state->create_flavor = flavor == Flavor::create     ? MPI_WIN_FLAVOR_CREATE
                           : flavor == Flavor::allocate ? MPI_WIN_FLAVOR_ALLOCATE
                           : flavor == Flavor::shared   ? MPI_WIN_FLAVOR_SHARED
                                                        : MPI_WIN_FLAVOR_DYNAMIC;
    return MPI_SUCCESS;
}

// MPICH's window carries the handle, name, error handler and attributes. Made over
// MPI_COMM_SELF it costs no communication, and the barrier at free is nbrma's:
// state->comm's, or the fence barrier in the control regions, cheap where they are in
// memory already (a reused segment). A new segment's control pages were never touched:
// faulting them in for that barrier costs more than MPICH's window over the
// communicator, whose MPI_Win_free is the barrier then. (The same on every rank.)
int Creation::make_mpich_window(MPI_Win *win) {
    state->mpich_on_comm = state->comm == MPI_COMM_NULL && !reuse;
    MPI_Comm mpich_comm = state->mpich_on_comm ? comm : MPI_COMM_SELF;
    int error = flavor == Flavor::dynamic
                    ? mpich::Win_create_dynamic(info, mpich_comm, &state->handle)
                    : mpich::Win_create(nullptr, 0, 1, info, mpich_comm, &state->handle);
    if (error != MPI_SUCCESS) {
        if (state->comm != MPI_COMM_NULL) PMPI_Comm_free(&state->comm);
        PMPI_Group_free(&state->group);
        return error;
    }
    *win = state->handle;
    engine::progress_register(state->engine.get());
    locked([] { ++counters().windows_created; });
    if (mode != engine::ProgressMode::inline_mode && !is_error(engine::progress_thread_start(mode)))
        log(2, "%s: progress thread running", call);
    log(1, "%s: window %d (%d ranks, %lld bytes here) on nbrma over %s", call,
        static_cast<int>(*win), nranks, static_cast<long long>(size),
        state->all_ucx                 ? "ucx"
        : spans_nodes || spans_virtual ? "shm+ucx"
                                       : "shm");
    window_insert(state.release());
    return MPI_SUCCESS;
}

}  // namespace

namespace nbrma::mpi {

int create_window(const char *call, Flavor flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                  MPI_Comm comm, void *user_base, void *base_out, MPI_Win *win) {
    Creation creation{call, flavor, size, disp_unit, info, comm, user_base};
    if (int error = creation.check_arguments(win)) return error;
    if (int error = creation.describe()) return error;
    if (int error = creation.agree()) return error;
    creation.discover_node();
    if (int error = creation.reach_user_memory()) return error;
    if (int error = creation.plan_segment()) return error;
    if (int error = creation.map_segment()) return error;
    if (int error = creation.choose_transports(base_out)) return error;
    return creation.make_mpich_window(win);
}

}  // namespace nbrma::mpi
