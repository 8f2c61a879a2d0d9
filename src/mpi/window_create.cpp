// Window creation and free for the four flavors, attach/detach, shared_query,
// get/set_info. Each nbrma window is backed by a real MPICH window on the same
// memory (handles, names, errhandlers, attributes work unchanged); nbrma's own
// state lives in the side table.
#include <unistd.h>

#include <cstring>

#include "common/log.hpp"
#include "common/yield.hpp"
#include "engine/progress.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "nbrma.h"

using namespace nbrma;
using namespace nbrma::mpi;
using engine::Flavor;

namespace {

struct PeerRecord {
    std::int64_t size;
    std::int64_t base;
    std::int32_t disp_unit;
    std::int32_t pid;
};

std::int64_t round_up(std::int64_t value, std::int64_t to) { return (value + to - 1) / to * to; }

// The common path: exchange sizes, map one segment holding every control region
// (and, for the allocate flavors, the window memory), build the transport and the
// engine window, create the MPICH window underneath.
int create_window(const char *call, Flavor flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                  MPI_Comm comm, void *user_base, void *base_out, MPI_Win *win) {
    ensure_initialized();
    if (size < 0) return raise(call, MPI_WIN_NULL, Status::err_arg, "negative window size");
    if (disp_unit <= 0) return raise(call, MPI_WIN_NULL, Status::err_arg, "disp_unit must be > 0");
    if (!win) return raise(call, MPI_WIN_NULL, Status::err_arg, "null window pointer");

    auto state = std::make_unique<WindowState>();
    state->flavor = flavor;
    parse_info(info, &state->info);
    PMPI_Comm_dup(comm, &state->comm);
    int rank, nranks;
    PMPI_Comm_rank(state->comm, &rank);
    PMPI_Comm_size(state->comm, &nranks);
    set_log_rank(rank);

    MPI_Comm node;
    int local = 0;
    PMPI_Comm_split_type(state->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_size(node, &local);
    PMPI_Comm_free(&node);
    int all_local = local == nranks, everywhere = 0;
    PMPI_Allreduce(&all_local, &everywhere, 1, MPI_INT, MPI_LAND, state->comm);
    if (!everywhere) {
        PMPI_Comm_free(&state->comm);
        return raise(call, MPI_WIN_NULL, Status::err_unsupported,
                     "the communicator spans nodes; remote peers need the UCX transport");
    }
    if (nranks > sync::LockWord::max_ranks) {
        PMPI_Comm_free(&state->comm);
        return raise(call, MPI_WIN_NULL, Status::err_unsupported, "too many ranks for the lock word");
    }
    set_local_ranks(local);

    const bool allocates = flavor == Flavor::allocate || flavor == Flavor::shared;
    PeerRecord mine{static_cast<std::int64_t>(size),
                    static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(user_base)),
                    disp_unit, static_cast<std::int32_t>(getpid())};
    if (flavor == Flavor::dynamic) mine = PeerRecord{0, 0, 1, static_cast<std::int32_t>(getpid())};
    std::vector<PeerRecord> peers(nranks);
    PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, peers.data(), sizeof mine, MPI_BYTE, state->comm);

    state->layout = std::make_unique<sync::ControlLayout>(nranks);
    const std::int64_t control_bytes = static_cast<std::int64_t>(state->layout->size());
    std::int64_t total = control_bytes * nranks;
    std::vector<std::int64_t> offsets(nranks, 0);
    const bool contiguous = flavor == Flavor::shared && !state->info.alloc_shared_noncontig;
    if (allocates) {
        std::int64_t cursor = round_up(total, 4096);
        for (int r = 0; r < nranks; ++r) {
            offsets[r] = cursor;
            cursor += contiguous ? peers[r].size : round_up(peers[r].size, 4096);
        }
        total = cursor;
    }

    // One segment per window: rank 0 creates it, everyone maps it, then the name goes.
    state->segment = std::make_unique<transport::shm::ShmSegment>();
    char name[128] = {0};
    Status status = Status::ok;
    if (rank == 0) {
        status = state->segment->create(static_cast<std::size_t>(total));
        if (!is_error(status)) std::snprintf(name, sizeof name, "%s", state->segment->name().c_str());
    }
    PMPI_Bcast(name, sizeof name, MPI_CHAR, 0, state->comm);
    if (rank != 0 && name[0]) status = state->segment->open(name, static_cast<std::size_t>(total));
    int ok = !is_error(status) && name[0], all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, state->comm);
    if (rank == 0) state->segment->unlink();
    if (!all_ok) {
        PMPI_Comm_free(&state->comm);
        return raise(call, MPI_WIN_NULL, Status::err_no_memory, "cannot map the shared segment");
    }
    auto *segment = static_cast<std::uint8_t *>(state->segment->address());
    if (flavor != Flavor::allocate && flavor != Flavor::shared) transport::shm::allow_cross_memory_attach();
    PMPI_Barrier(state->comm);  // ptrace permission is in place everywhere

    std::vector<transport::shm::ShmPeer> shm_peers(nranks);
    engine::WindowConfig config;
    config.flavor = flavor;
    for (int r = 0; r < nranks; ++r) {
        transport::shm::ShmPeer &peer = shm_peers[r];
        peer.control = segment + control_bytes * r;
        peer.window_size = static_cast<std::uint64_t>(peers[r].size);
        if (allocates) {
            peer.window = segment + offsets[r];
        } else {
            peer.remote_base = static_cast<std::uint64_t>(peers[r].base);
            peer.pid = peers[r].pid;
            if (flavor == Flavor::dynamic) peer.window_size = ~0ull;
        }
        config.sizes.push_back(static_cast<std::uint64_t>(peers[r].size));
        config.disp_units.push_back(peers[r].disp_unit);
        state->sizes.push_back(static_cast<MPI_Aint>(peers[r].size));
        state->disp_units.push_back(peers[r].disp_unit);
        state->shared_offsets.push_back(static_cast<MPI_Aint>(offsets[r] - offsets[0]));
    }
    config.hardware_atomics = state->info.accumulate_ops == "same_op_no_op" ||
                              state->info.accumulate_ops == "same_op";
    config.no_locks = state->info.no_locks;
    for (int key = 0; key < 4; ++key) config.reorder[key] = state->info.reorder[key];
    state->transport = std::make_unique<transport::shm::ShmTransport>(
        rank, static_cast<std::size_t>(control_bytes), std::move(shm_peers));
    state->engine = std::make_unique<engine::Window>(*state->transport, *state->layout, config);

    void *base = user_base;
    if (allocates) {
        base = size > 0 ? segment + offsets[rank] : nullptr;
        state->shared_base = segment + offsets[0];
        *static_cast<void **>(base_out) = base;
    }
    state->base = flavor == Flavor::dynamic ? MPI_BOTTOM : base;
    state->size = flavor == Flavor::dynamic ? 0 : size;
    state->disp_unit = flavor == Flavor::dynamic ? 1 : disp_unit;
    state->create_flavor = flavor == Flavor::create     ? MPI_WIN_FLAVOR_CREATE
                           : flavor == Flavor::allocate ? MPI_WIN_FLAVOR_ALLOCATE
                           : flavor == Flavor::shared   ? MPI_WIN_FLAVOR_SHARED
                                                        : MPI_WIN_FLAVOR_DYNAMIC;

    int error = flavor == Flavor::dynamic
                    ? PMPI_Win_create_dynamic(info, comm, &state->handle)
                    : PMPI_Win_create(base, size, disp_unit, info, comm, &state->handle);
    if (error != MPI_SUCCESS) {
        PMPI_Comm_free(&state->comm);
        return error;
    }
    *win = state->handle;
    engine::progress_register(state->engine.get());
    ++counters().windows_created;
    log(1, "%s: window %d (%d ranks, %lld bytes here) on nbrma", call, static_cast<int>(*win),
        nranks, static_cast<long long>(size));
    window_insert(state.release());
    return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win) {
    return create_window("MPI_Win_create", Flavor::create, size, disp_unit, info, comm, base,
                         nullptr, win);
}

int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                     MPI_Win *win) {
    if (disp_unit > INT32_MAX)
        return raise("MPI_Win_create_c", MPI_WIN_NULL, Status::err_arg, "disp_unit too large");
    return create_window("MPI_Win_create_c", Flavor::create, size, static_cast<int>(disp_unit),
                         info, comm, base, nullptr, win);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win) {
    return create_window("MPI_Win_allocate", Flavor::allocate, size, disp_unit, info, comm,
                         nullptr, baseptr, win);
}

int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                       void *baseptr, MPI_Win *win) {
    if (disp_unit > INT32_MAX)
        return raise("MPI_Win_allocate_c", MPI_WIN_NULL, Status::err_arg, "disp_unit too large");
    return create_window("MPI_Win_allocate_c", Flavor::allocate, size,
                         static_cast<int>(disp_unit), info, comm, nullptr, baseptr, win);
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win) {
    return create_window("MPI_Win_allocate_shared", Flavor::shared, size, disp_unit, info, comm,
                         nullptr, baseptr, win);
}

int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                              void *baseptr, MPI_Win *win) {
    if (disp_unit > INT32_MAX)
        return raise("MPI_Win_allocate_shared_c", MPI_WIN_NULL, Status::err_arg,
                     "disp_unit too large");
    return create_window("MPI_Win_allocate_shared_c", Flavor::shared, size,
                         static_cast<int>(disp_unit), info, comm, nullptr, baseptr, win);
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    return create_window("MPI_Win_create_dynamic", Flavor::dynamic, 0, 1, info, comm, nullptr,
                         nullptr, win);
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) {
    WindowState *state = window_find(win);
    if (!state) return raise("MPI_Win_attach", MPI_WIN_NULL, Status::err_win);
    if (state->flavor != Flavor::dynamic)
        return raise("MPI_Win_attach", win, Status::err_arg, "not a dynamic window");
    if (size < 0) return raise("MPI_Win_attach", win, Status::err_arg, "negative size");
    Status status = state->engine->attach(base, static_cast<std::uint64_t>(size));
    if (is_error(status))
        return raise("MPI_Win_attach", win, status == Status::err_range ? Status::err_arg : status,
                     status == Status::err_range ? "overlaps an attached region" : nullptr);
    return PMPI_Win_attach(win, base, size);
}

int MPI_Win_detach(MPI_Win win, const void *base) {
    WindowState *state = window_find(win);
    if (!state) return raise("MPI_Win_detach", MPI_WIN_NULL, Status::err_win);
    Status status = state->engine->detach(base);
    if (is_error(status))
        return raise("MPI_Win_detach", win, status, "address was not attached");
    return PMPI_Win_detach(win, base);
}

int MPI_Win_free(MPI_Win *win) {
    if (!win) return raise("MPI_Win_free", MPI_WIN_NULL, Status::err_arg, "null window pointer");
    WindowState *state = window_find(*win);
    if (!state) return PMPI_Win_free(win);
    if (state->engine->has_open_epoch())
        return raise("MPI_Win_free", *win, Status::err_sync, "an epoch is still open");
    state->engine->close_fence();  // the epoch the last fence opened ends here
    Backoff backoff;
    while (!state->engine->idle()) {  // closed epochs whose requests were not waited for
        if (!state->engine->progress()) backoff.pause();
    }
    PMPI_Barrier(state->comm);  // no peer touches our memory any more
    engine::progress_unregister(state->engine.get());
    window_erase(*win);  // before the handle can be reused
    int error = PMPI_Win_free(win);
    PMPI_Comm_free(&state->comm);
    if (state->group != MPI_GROUP_NULL) PMPI_Group_free(&state->group);
    delete state;
    return error;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
    WindowState *state = window_find(win);
    if (!state) return raise("MPI_Win_shared_query", MPI_WIN_NULL, Status::err_win);
    const int nranks = static_cast<int>(state->sizes.size());
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= nranks))
        return raise("MPI_Win_shared_query", win, Status::err_rank);
    if (state->flavor != Flavor::shared && state->flavor != Flavor::allocate) {
        *size = 0;
        *disp_unit = 1;
        *static_cast<void **>(baseptr) = nullptr;
        return MPI_SUCCESS;
    }
    if (rank == MPI_PROC_NULL) {
        rank = 0;
        while (rank < nranks - 1 && state->sizes[rank] == 0) ++rank;
    }
    *size = state->sizes[rank];
    *disp_unit = state->disp_units[rank];
    *static_cast<void **>(baseptr) = state->shared_base + state->shared_offsets[rank];
    return MPI_SUCCESS;
}

int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                           void *baseptr) {
    int unit = 0;
    int error = MPI_Win_shared_query(win, rank, size, &unit, baseptr);
    if (error == MPI_SUCCESS) *disp_unit = unit;
    return error;
}

int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used) {
    WindowState *state = window_find(win);
    if (!state) return PMPI_Win_get_info(win, info_used);
    int error = PMPI_Info_create(info_used);
    if (error != MPI_SUCCESS) return error;
    const WindowInfo &info = state->info;
    PMPI_Info_set(*info_used, "accumulate_ordering", info.accumulate_ordering.c_str());
    PMPI_Info_set(*info_used, "accumulate_ops", info.accumulate_ops.c_str());
    PMPI_Info_set(*info_used, "no_locks", info.no_locks ? "true" : "false");
    PMPI_Info_set(*info_used, "alloc_shared_noncontig", info.alloc_shared_noncontig ? "true" : "false");
    static const char *const reorder_keys[4] = {
        NBRMA_INFO_ACCESS_AFTER_ACCESS_REORDER, NBRMA_INFO_ACCESS_AFTER_EXPOSURE_REORDER,
        NBRMA_INFO_EXPOSURE_AFTER_EXPOSURE_REORDER, NBRMA_INFO_EXPOSURE_AFTER_ACCESS_REORDER};
    for (int i = 0; i < 4; ++i)
        PMPI_Info_set(*info_used, reorder_keys[i], info.reorder[i] ? "true" : "false");
    return MPI_SUCCESS;
}

int MPI_Win_set_info(MPI_Win win, MPI_Info info) {
    WindowState *state = window_find(win);
    if (!state) return PMPI_Win_set_info(win, info);
    parse_info(info, &state->info);
    for (int key = 0; key < 4; ++key)
        state->engine->set_reorder(static_cast<engine::Reorder>(key), state->info.reorder[key]);
    return PMPI_Win_set_info(win, info);
}

}  // extern "C"
