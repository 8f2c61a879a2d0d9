// Window creation, in stages (the four flavors' MPI_Win_create*, MPI_Win_allocate*,
// MPI_Win_create_dynamic come here from window_create.cpp): what each rank tells the
// others in one exchange (PeerRecord), the node's segment of control regions and
// allocated memory, how peers reach memory the user gave (shared pages, cross-memory
// attach), the transports, and the memory-less MPICH window that carries the handle.
// The stages and their order: Creation (window_creation.hpp); the segment's mapping and
// the transports are window_transports.cpp's.
#include "mpi/window_setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/node.hpp"
#include "common/settings.hpp"
#include "common/yield.hpp"
#include "mpi/errors.hpp"
#include "mpi/window_creation.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"
#include "progress/interrupt.hpp"
#include "progress/progress.hpp"
#include "transport/shm/segment_cache.hpp"

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
    if (!transport.capabilities().needs_target_progress) {
        mpich::Barrier(comm);
        return;
    }
    MPI_Request request;
    mpich::Ibarrier(comm, &request);
    Backoff backoff;
    for (int done = 0;;) {
        mpich::Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (locked([&] { return transport.poll(); }) == 0) backoff.pause();
    }
}

}  // namespace nbrma::mpi

namespace nbrma::mpi::setup {

namespace {

// Yama's ptrace_scope, read once per process: a failed lookup under /proc/sys (no Yama)
// costs more than the rest of a 2-rank MPI_Win_create. A scope changed during the job is
// not followed (the cross-memory probe at creation still fails a window it breaks).
int yama_scope() {
    static const int scope = transport::shm::yama_ptrace_scope();
    return scope;
}

std::int64_t round_up(std::int64_t value, std::int64_t to) { return (value + to - 1) / to * to; }

// NBRMA_VIRTUAL_NODES=k (test mode): the ranks of a node form k virtual nodes, rank r of
// MPI_COMM_WORLD in virtual node r mod k; peers in another virtual node are reached
// through UCX as if on another machine. Memory stays per real node. -1: a bad value.
int virtual_node() {
    static int node = [] {
        const int k = settings::virtual_nodes();
        if (k <= 0) return k;
        int world_rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        return world_rank % k;
    }();
    return node;
}

}  // namespace

// Fails the window creation on every rank alike: frees what was made, raises.
int creation_failed(const char *call, WindowState &state, Status status, const char *why) {
    if (state.comm != MPI_COMM_NULL) PMPI_Comm_free(&state.comm);
    if (state.group != MPI_GROUP_NULL) PMPI_Group_free(&state.group);
    return raise_comm(call, state.parent, status, why);
}

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
    state->ucx_allocates = state->all_ucx && flavor == Flavor::allocate;
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
    if (allocates && !state->ucx_allocates) {
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

}  // namespace nbrma::mpi::setup

namespace nbrma::mpi {

int create_window(const char *call, Flavor flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                  MPI_Comm comm, void *user_base, void *base_out, MPI_Win *win) {
    setup::Creation creation{call, flavor, size, disp_unit, info, comm, user_base};
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
