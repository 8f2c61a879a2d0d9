// Window creation's last stages (window_creation.hpp): the node's segment mapped with
// cross-memory attach agreed, and the transports over it: shm for node-local peers,
// UCX (its worker, the exposure records, the wireup) for the rest, or both.
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
#include "mpi/window_creation.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/gather_records.hpp"
#include "progress/collective_form.hpp"
#include "progress/interrupt.hpp"
#include "progress/progress.hpp"
#include "transport/shm/segment_cache.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/ucx/mixed_transport.hpp"
#include "transport/ucx/ucx_transport.hpp"

using namespace nbrma;
using namespace nbrma::mpi;

namespace nbrma::mpi::setup {

namespace {

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

// True on every rank iff `ok` on every rank.
bool everyone(bool ok, MPI_Comm comm) {
    int mine = ok ? 1 : 0, all = 0;
    mpich::Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
    return all != 0;
}

// The UCX side of a window (doc/design.md §9): register our control region and memory,
// allgather the exposure records, connect to every rank, and wait for the wireup on
// every rank at once (each rank keeps progressing its worker inside a nonblocking
// barrier). With every peer through UCX, UCX allocates an MPI_Win_allocate window's
// memory and its control region, *base then its address (UcxTransport::
// allocate_control): both or neither, for a notice's fence orders the data before it
// only where both are reached alike (UCX's shared-memory transports serve memory they
// allocated with stores, other memory with active messages). On failure `why` says what
// failed; the result is the same on every rank.
Status connect_ucx(WindowState &state, void **base, std::size_t size, void *control,
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
        if (state.ucx_allocates) {
            made = ucx->allocate_control();
            return is_error(made) ? made : ucx->allocate_window(size, base);
        }
        return state.flavor == Flavor::dynamic ? ucx->expose_dynamic()
                                               : ucx->expose_window(*base, size);
    });
    if (!everyone(!is_error(status), state.comm)) {
        // (where UCX allocates, every rank reports what the allocation failed with)
        const bool allocating = worker && state.ucx_allocates;
        *why = !worker      ? "cannot initialize UCX (see NBRMA_UCX_*/UCX_* settings)"
               : allocating ? "UCX cannot allocate the window memory (on some rank)"
                            : "cannot register the window memory with UCX";
        if (is_error(status)) return status;
        return allocating ? Status::err_no_memory : Status::err_transport;
    }

    const mpich::Records records =
        mpich::gather_records(locked([&] { return ucx->exposure(); }), state.comm);
    locked([&] {
        for (int r = 0; r < nranks && !is_error(status); ++r) {
            status = ucx->connect(r, records.of(r), records.lengths[r]);
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
    mpich::Ibarrier(state.comm, &barrier);
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

}  // namespace

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
    std::uint8_t *shared_base = segment + first_offset;
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
        const Status status = connect_ucx(*state, &base, static_cast<std::size_t>(size), my_control,
                                          static_cast<std::size_t>(control_bytes), &ucx, &why);
        if (is_error(status)) return failed(status, why);
        if (state->ucx_allocates) {
            // UCX's memory, ours alone in this process (MPI_Win_shared_query: the others'
            // is not shared)
            shared_base = static_cast<std::uint8_t *>(base);
            std::fill(state->shared_offsets.begin(), state->shared_offsets.end(), -1);
            state->shared_offsets[rank] = 0;
        }
        if (state->all_ucx)
            state->transport = std::move(ucx);
        else
            state->transport = std::make_unique<transport::ucx::MixedTransport>(
                std::move(shm), std::move(ucx), shm_reach);
        // Its transport may serve peers in software: the collectives' form on comm is
        // agreed again (every member is here; progress/collective_form.hpp).
        forget_collective_form(comm);
    }
    state->engine = std::make_unique<engine::Window>(*state->transport, *state->layout, config);
    if (state->info.check.empty() ? check::enabled() : state->info.check == "races") {
        // Peers not reached through shared memory: their logs through the window's worker
        transport::ucx::UcxWorker *worker = nullptr;
        if (!shm_only) (void)process_worker(&worker);
        state->check = check::WindowCheck::create(
            comm, flavor == Flavor::dynamic ? nullptr : base,
            check::AccumulateRules::from_info(state->info.accumulate_ops.c_str(),
                                              state->info.accumulate_ordering.c_str()),
            shm_only ? std::vector<bool>{} : shm_reach, worker);
        state->engine->set_check(state->check.get());
    }

    if (allocates) {
        state->shared_base = shared_base;
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

}  // namespace nbrma::mpi::setup
