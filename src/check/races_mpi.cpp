// The race checker's MPI side (races.hpp): turning it on at MPI_Init, the summary at
// MPI_Finalize, call sites, the clocks of interposed messages and collectives, and the
// collective creation of a window's logs.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "check/race_log.hpp"
#include "check/races.hpp"
#include "check/tsan.hpp"
#include "common/log.hpp"
#include "common/node.hpp"
#include "common/settings.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/gather_records.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace nbrma::check {

namespace {

// Entries in each rank's log of a window (64 bytes each, touched as used), and calls in
// its ring to replay into ThreadSanitizer (48 bytes each; none without TSan).
constexpr std::uint32_t log_capacity = 16384;
constexpr std::uint32_t landing_capacity = 4096;

// Turns the checker's process state on (NBRMA_CHECK=races at MPI_Init, or the first
// window asking for it): this rank's slot, named by its process id (which the peers
// learn from the collective that follows: MPI_Init's, or the window creation's; a name
// derived from the parent process would differ under a launcher's wrapper that forks).
bool start() {
    static std::mutex starting;  // threads creating windows at once
    std::lock_guard<std::mutex> guard(starting);
    Process &p = process();
    if (enabled()) return true;
    PMPI_Comm_rank(MPI_COMM_WORLD, &p.me);
    PMPI_Comm_size(MPI_COMM_WORLD, &p.ranks);
    p.pids.assign(static_cast<std::size_t>(p.ranks), 0);
    p.nodes.assign(static_cast<std::size_t>(p.ranks), 0);
    p.learn(p.me, static_cast<std::uint64_t>(getpid()), node_key());
    p.clock.assign(static_cast<std::size_t>(p.ranks), 0);
    p.clock[p.me] = 1;  // a peer's entry 0: nothing of it seen
    p.tsan = tsan::available();
    if (p.tsan) tsan::make_fibers(p.ranks);
    p.peers.assign(static_cast<std::size_t>(p.ranks), nullptr);
    p.tried.assign(static_cast<std::size_t>(p.ranks), 0);
    p.remote_slots.assign(static_cast<std::size_t>(p.ranks), Remote{});
    p.spanning.assign(static_cast<std::size_t>(p.ranks), 0);
    p.slot_reads.assign(static_cast<std::size_t>(p.ranks), Process::SlotRead{});
    p.virtual_nodes = std::max(0, settings::virtual_nodes());
    p.own = static_cast<Slot *>(create_shared(slot_name(p.me), Slot::bytes(p.ranks)));
    if (!p.own) {
        log(0,
            "NBRMA_CHECK: cannot create the shared memory of the race checker (%s): "
            "windows run unchecked",
            std::strerror(errno));
        return false;
    }
    p.own->ranks = static_cast<std::uint32_t>(p.ranks);
    const char *abort_value = settings::env(settings::Id::check_abort);
    p.abort_on_race = abort_value && std::strcmp(abort_value, "1") == 0;
    detail::on.store(true);
    return true;
}

// World ranks of comm's ranks.
std::vector<int> world_ranks(MPI_Comm comm) {
    MPI_Group group, world;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    std::vector<int> ranks(static_cast<std::size_t>(size)), out(ranks.size());
    for (int r = 0; r < size; ++r) ranks[r] = r;
    PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_translate_ranks(group, size, ranks.data(), world, out.data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    return out;
}

}  // namespace

void init() {
    const char *value = settings::env(settings::Id::check_env);
    if (!value || std::strcmp(value, "races") != 0) return;
    Process &p = process();
    if (start()) p.summary = true;
    // Every rank's process and node, for its slot's name; once every rank is here, every
    // slot exists.
    const std::uint64_t mine[2] = {p.summary ? p.pids[p.me] : 0, node_key()};
    std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(p.ranks));
    mpich::Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
    if (!p.summary) return;
    {  // every node-local peer's slot mapped now, so that ours can lose its name at once
        std::lock_guard<ProcessLock> guard(p.mutex);
        for (int rank = 0; rank < p.ranks; ++rank) p.learn(rank, all[2 * rank], all[2 * rank + 1]);
        for (int rank = 0; rank < p.ranks; ++rank) join_slot_locked(rank);
    }
    mpich::Barrier(MPI_COMM_WORLD);
    // No name left in /dev/shm, even when a rank is killed or aborts.
    shm_unlink(slot_name(p.me).c_str());
}

void finalize() {
    Process &p = process();
    if (!enabled()) return;
    std::uint64_t mine[5] = {p.races.load(), p.checked.load(), p.unchecked.load(), p.dropped.load(),
                             p.tsan ? 1u : 0u};
    std::uint64_t all[5] = {mine[0], mine[1], mine[2], mine[3], mine[4]};
    int ranks = 1;
    if (p.summary) {  // every rank is here: NBRMA_CHECK=races everywhere
        mpich::Reduce(mine, all, 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        mpich::Barrier(MPI_COMM_WORLD);  // no peer opens our slot from now on
        ranks = p.ranks;
    }
    if (!p.summary || p.me == 0) {
        std::string loads = "loads and stores of window memory are not checked";
        if (all[4] != 0)
            loads = "loads and stores of window memory are checked by ThreadSanitizer in " +
                    std::to_string(static_cast<unsigned long long>(all[4])) + " of " +
                    std::to_string(ranks) + " ranks";
        std::fprintf(stderr,
                     "nbrma check: %sraces found: %llu, RMA calls checked: %llu, not checked: "
                     "%llu (logs full or unreachable); %s\n",
                     p.summary ? "" : ("rank " + std::to_string(p.me) + ": ").c_str(),
                     static_cast<unsigned long long>(all[0]),
                     static_cast<unsigned long long>(all[1]),
                     static_cast<unsigned long long>(all[2] + all[3]), loads.c_str());
    }
    shm_unlink(slot_name(p.me).c_str());
    threads::Guard progress;  // the UCX worker's
    std::lock_guard<ProcessLock> guard(p.mutex);
    for (std::size_t r = 0; r < p.remote_slots.size(); ++r) {
        Process::SlotRead &read = p.slot_reads[r];
        if (read.request) {  // its peer may serve it no more: let UCX free it when done (its
            ucp_request_free(read.request);  // buffer and key stay, in this process's state)
            read.request = nullptr;
            continue;
        }
        if (p.remote_slots[r].rkey) ucp_rkey_destroy(p.remote_slots[r].rkey);
        p.remote_slots[r] = Remote{};
    }
    p.slot_reads_in_flight = 0;
    p.slot_registration.reset();
    p.ucx.store(false);
    for (Slot *&slot : p.peers) {
        unmap_shared(slot, Slot::bytes(p.ranks));
        slot = nullptr;
    }
    unmap_shared(p.own, Slot::bytes(p.ranks));
    p.own = nullptr;
    detail::on.store(false);
}

void acquire_from(MPI_Comm comm, int rank) {
    if (rank < 0) return;  // MPI_PROC_NULL
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return;
    const std::vector<int> world = world_ranks(comm);
    if (rank >= static_cast<int>(world.size())) return;
    Process &p = process();
    threads::Guard progress;  // first: a slot on another node is read through UCX
    std::lock_guard<ProcessLock> guard(p.mutex);
    join_slot_locked(world[rank]);
    settle_slot_reads(p.tsan);  // loads and stores after the receive need it at once
    replay_locked();
}

void acquire_node() {
    Process &p = process();
    threads::Guard progress;  // first: a slot on another node is read through UCX
    std::lock_guard<ProcessLock> guard(p.mutex);
    for (int rank = 0; rank < p.ranks; ++rank) join_slot_locked(rank);
    settle_slot_reads(p.tsan);
    replay_locked();
}

std::vector<std::uint64_t> enter_collective() {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    std::vector<std::uint64_t> mine = p.clock;
    tick_locked();
    return mine;
}

void leave_collective(const std::vector<std::uint64_t> &joined) {
    Process &p = process();
    threads::Guard progress;  // first: a replay may reach our area through UCX
    std::lock_guard<ProcessLock> guard(p.mutex);
    for (std::size_t i = 0; i < joined.size() && i < p.clock.size(); ++i)
        p.clock[i] = std::max(p.clock[i], joined[i]);
    replay_locked();
}

AccumulateRules AccumulateRules::from_info(const char *ops, const char *ordering) {
    AccumulateRules rules;
    rules.no_op_mixes = std::strcmp(ops, "same_op") != 0;
    if (!settings::accumulate_ordering_mask(ordering, &rules.ordering))
        rules.ordering = rar | raw | war | waw;  // (validated at creation: not reached)
    return rules;
}

namespace {

// The UCX side of a window's checker (remote.hpp): registers our area (and, once per
// process, our slot), exchanges with every rank of comm its worker's address and the
// regions' addresses and keys, and reaches each rank's area through UCX (the lock word
// of every one, the whole of those not mapped), and the slots of ranks not on this
// node. False on every rank alike when a rank failed.
bool connect_remote(MPI_Comm comm, transport::ucx::UcxWorker &worker, Area *own,
                    std::size_t own_bytes, const std::vector<Area *> &areas,
                    const std::vector<int> &world, std::vector<Remote> *remote,
                    std::unique_ptr<transport::ucx::UcxRegistration> *registration) {
    Process &p = process();
    struct Header {
        std::uint64_t area, slot;
        std::uint32_t address_bytes, area_key_bytes, slot_key_bytes, unused;
    };
    std::vector<std::uint8_t> record(sizeof(Header));
    Status status = Status::ok;
    {
        threads::Guard progress;
        status = worker.map(own, own_bytes, registration);
        if (!is_error(status) && !p.slot_registration)
            status = worker.map(p.own, Slot::bytes(p.ranks), &p.slot_registration);
        if (!is_error(status)) {
            const Header header{reinterpret_cast<std::uintptr_t>(own),
                                reinterpret_cast<std::uintptr_t>(p.own),
                                static_cast<std::uint32_t>(worker.address().size()),
                                static_cast<std::uint32_t>((*registration)->rkey().size()),
                                static_cast<std::uint32_t>(p.slot_registration->rkey().size()),
                                0};
            std::memcpy(record.data(), &header, sizeof header);
            for (const auto *bytes :
                 {&worker.address(), &(*registration)->rkey(), &p.slot_registration->rkey()})
                record.insert(record.end(), bytes->begin(), bytes->end());
        }
    }
    int failed = is_error(status) ? 1 : 0, any = 0;
    mpich::Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any) return false;
    const int size = static_cast<int>(world.size());
    const mpich::Records records = mpich::gather_records(record, comm);
    remote->assign(static_cast<std::size_t>(size), Remote{});
    {
        threads::Guard progress;
        std::lock_guard<ProcessLock> guard(p.mutex);
        for (int r = 0; r < size && !is_error(status); ++r) {
            Header header;
            const std::uint8_t *bytes = records.of(r);
            std::memcpy(&header, bytes, sizeof header);
            bytes += sizeof header;
            Remote &area = (*remote)[r];
            status = worker.connect(bytes, header.address_bytes, &area.ep);
            bytes += header.address_bytes;
            if (!is_error(status))
                status =
                    transport::ucx::status_from_ucs(ucp_ep_rkey_unpack(area.ep, bytes, &area.rkey));
            bytes += header.area_key_bytes;
            area.address = header.area;
            if (is_error(status) || areas[r]) continue;
            Remote &slot = p.remote_slots[world[r]];
            if (slot) continue;
            slot = {area.ep, nullptr, header.slot};
            status =
                transport::ucx::status_from_ucs(ucp_ep_rkey_unpack(slot.ep, bytes, &slot.rkey));
            if (is_error(status)) slot = Remote{};
        }
    }
    failed = is_error(status) ? 1 : 0;
    mpich::Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
    threads::Guard progress;
    std::lock_guard<ProcessLock> guard(p.mutex);
    if (any) {
        for (Remote &area : *remote)
            if (area.rkey) ucp_rkey_destroy(area.rkey);
        return false;
    }
    for (int r = 0; r < size; ++r)
        if (!areas[r]) ++p.spanning[world[r]];  // its slot is read while this window lasts
    p.worker = &worker;
    p.ucx.store(true, std::memory_order_release);
    return true;
}

}  // namespace

std::unique_ptr<WindowCheck> WindowCheck::create(MPI_Comm comm, const void *base,
                                                 const AccumulateRules &rules,
                                                 const std::vector<bool> &shm_reach,
                                                 transport::ucx::UcxWorker *worker) {
    Process &p = process();
    std::unique_ptr<WindowCheck> check(new WindowCheck());
    PMPI_Comm_rank(comm, &check->rank_);
    check->rules_ = rules;
    check->world_ = world_ranks(comm);
    const int size = static_cast<int>(check->world_.size());
    // Each rank names its area with a number of its own (threads create windows at once,
    // on different communicators), and tells the others.
    const bool started = start();
    // With its process id and node (its peers may not know them yet: a window's info key
    // turned the checker on).
    const std::uint64_t mine_id[3] = {p.next_window.fetch_add(1), started ? p.pids[p.me] : 0,
                                      node_key()};
    std::vector<std::uint64_t> ids(3 * static_cast<std::size_t>(size));
    mpich::Allgather(mine_id, 3, MPI_UINT64_T, ids.data(), 3, MPI_UINT64_T, comm);
    if (started) {
        std::lock_guard<ProcessLock> guard(p.mutex);
        for (int r = 0; r < size; ++r)
            if (ids[3 * r + 1] != 0) p.learn(check->world_[r], ids[3 * r + 1], ids[3 * r + 2]);
    }
    auto name = [&](int rank) { return area_name(ids[3 * rank + 1], ids[3 * rank]); };
    check->base_ = reinterpret_cast<std::uintptr_t>(base);
    const std::uint32_t landings = p.tsan ? landing_capacity : 0;
    const std::size_t bytes = Area::bytes(p.ranks, log_capacity, landings);
    void *own = started ? create_shared(name(check->rank_), bytes) : nullptr;
    if (own) {
        auto *area = static_cast<Area *>(own);
        area->ranks = static_cast<std::uint32_t>(p.ranks);
        area->capacity = log_capacity;
        area->landing_capacity = landings;
    }
    // Whether every rank can (one that cannot leaves the window unchecked everywhere),
    // and whether some rank reaches another through UCX.
    bool remote = false;
    for (bool reached : shm_reach) remote |= !reached;
    const int mine[3] = {own ? 0 : 1, remote ? 1 : 0, worker ? 0 : 1};
    int all[3] = {0, 0, 0};
    mpich::Allreduce(mine, all, 3, MPI_INT, MPI_MAX, comm);
    if (all[0] || (all[1] && all[2])) {
        if (own) {
            shm_unlink(name(check->rank_).c_str());
            unmap_shared(own, bytes);
        }
        return nullptr;
    }
    check->areas_.assign(static_cast<std::size_t>(size), nullptr);
    check->maps_.assign(static_cast<std::size_t>(size), nullptr);
    check->map_bytes_.assign(static_cast<std::size_t>(size), 0);
    check->pending_.assign(static_cast<std::size_t>(size), 0);
    check->logged_.assign(static_cast<std::size_t>(size), 0);
    check->maps_[check->rank_] = own;
    check->map_bytes_[check->rank_] = bytes;
    check->areas_[check->rank_] = static_cast<Area *>(own);
    // Window creation synchronizes its ranks: their clocks at the call are joined.
    const std::vector<std::uint64_t> clock = enter_collective();
    std::vector<std::uint64_t> joined(clock.size());
    mpich::Allreduce(clock.data(), joined.data(), static_cast<int>(clock.size()), MPI_UINT64_T,
                     MPI_MAX, comm);
    leave_collective(joined);
    for (int r = 0; r < size; ++r) {
        if (r == check->rank_ || (!shm_reach.empty() && !shm_reach[r])) continue;
        std::size_t mapped = 0;
        void *address = open_shared(name(r), &mapped);
        if (!address) continue;  // on another node (not told: the launcher's view)
        check->maps_[r] = address;
        check->map_bytes_[r] = mapped;
        check->areas_[r] = static_cast<Area *>(address);
    }
    mpich::Barrier(comm);  // every peer mapped our area: its name can go
    shm_unlink(name(check->rank_).c_str());
    if (all[1]) {
        if (!connect_remote(comm, *worker, check->areas_[check->rank_], bytes, check->areas_,
                            check->world_, &check->remote_, &check->registration_))
            return nullptr;
        check->worker_ = worker;
    }
    if (landings) {
        std::lock_guard<ProcessLock> guard(p.mutex);
        p.replaying.push_back(check.get());
    }
    return check;
}

}  // namespace nbrma::check
