// The MPI calls that make and free windows, as thin bindings: MPI_Win_create*,
// MPI_Win_allocate*, MPI_Win_allocate_shared*, MPI_Win_create_dynamic (their work is
// window_setup.cpp's, in stages), MPI_Win_attach/detach, MPI_Win_free,
// MPI_Win_shared_query, MPI_Win_get_info/set_info. Each nbrma window is backed by a
// memory-less MPICH window (over MPI_COMM_SELF or the window's communicator, see
// window_setup.cpp): its handle, name, error handler and attributes are MPICH's; nbrma's
// own state lives in the side table.
#include <cstring>
#include <string>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "mpi/window_setup.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"
#include "nbrma.h"
#include "progress/progress.hpp"
#include "transport/shm/segment_cache.hpp"

using namespace nbrma;
using namespace nbrma::mpi;
using engine::Flavor;

namespace {

int win_attach(const char *call, MPI_Win win, void *base, MPI_Aint size) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    if (state->flavor != Flavor::dynamic)
        return raise(call, win, Status::err_arg, "not a dynamic window");
    if (size < 0) return raise(call, win, Status::err_arg, "negative size");
    // The region's pages are registered (no other window moves them while attached),
    // and moved into shared pages where the window's peers can map them; the directory
    // then names the memfd (ShmTransport::attach).
    auto claim = std::make_unique<transport::shm::UserMemoryClaim>();
    claim->claim(base, static_cast<std::size_t>(size), state->attach_shares,
                 state->share_user_memory);
    if (claim->descriptor() >= 0 && !is_error(claim->share()))  // else they stay put
        locked([] { ++counters().user_memory_shared; });
    Status status =
        locked([&] { return state->engine->attach(base, static_cast<std::uint64_t>(size)); });
    if (status == Status::err_range)
        return raise(call, win, Status::err_arg, "overlaps an attached region");
    if (status == Status::err_arg)
        return raise(call, win, Status::err_arg, "base + size exceeds the address space");
    if (is_error(status))
        return raise(call, win, status, "cannot publish or register the region for remote access");
    locked([&] { state->attached_memory[base] = std::move(claim); });
    return MPI_SUCCESS;  // (MPICH's window never learns of it: nbrma does all its RMA)
}

int win_detach(const char *call, MPI_Win win, const void *base) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    Status status = locked([&] { return state->engine->detach(base); });
    if (is_error(status)) return raise(call, win, status, "address was not attached");
    std::unique_ptr<transport::shm::UserMemoryClaim> claim;
    locked([&] {
        auto it = state->attached_memory.find(base);
        if (it != state->attached_memory.end()) {
            claim = std::move(it->second);
            state->attached_memory.erase(it);
        }
    });
    return MPI_SUCCESS;
}

int win_free(const char *call, MPI_Win *win) {
    if (!win) return raise(call, MPI_WIN_NULL, Status::err_arg, "null window pointer");
    WindowState *state = window_find(*win);
    // Every window is an nbrma window: this one is MPI_WIN_NULL or already freed.
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    if (locked([&] { return state->engine->has_open_epoch(); }))
        return raise(call, *win, Status::err_sync, "an epoch is still open");
    locked([&] {
        state->engine->close_fence();  // the epoch the last fence opened ends here
        // Notification thresholds still pending can never complete now.
        state->engine->notifications().fail_all(Status::err_win);
    });
    wait_idle(*state);  // closed epochs whose requests were not waited for
    // No peer touches our memory any more once every rank got here (MPI 4.1 §12.2.5 asks
    // for a barrier): MPICH's MPI_Win_free where its window spans the communicator; for
    // peers over UCX, which need us to serve them until they got here too, a barrier on
    // the window's communicator; otherwise the fence barrier in the control regions.
    if (state->comm != MPI_COMM_NULL) {
        barrier_serving(state->comm, *state->transport);
    } else if (!state->mpich_on_comm) {
        engine::Request *barrier = nullptr;
        Status status = locked([&] { return state->engine->fence(MPI_MODE_NOSUCCEED, &barrier); });
        if (!is_error(status)) status = request_wait(barrier);
        if (is_error(status)) return raise(call, *win, status, "the closing barrier failed");
        wait_idle(*state);
    }
    // Under ThreadSanitizer the checker replays what its clock has not covered yet.
    if (state->check) locked([&] { state->check->freed(); });
    engine::progress_unregister(state->engine.get());
    window_erase(*win);  // before the handle can be reused
    int error = mpich::Win_free(win);
    if (state->comm != MPI_COMM_NULL) PMPI_Comm_free(&state->comm);
    if (state->group != MPI_GROUP_NULL) PMPI_Group_free(&state->group);
    // A control-only segment is kept for the next window (segment_cache.hpp): past the
    // barrier no peer touches it any more; this rank clears its
    // own control region (the fixed part, and the notification counters ever published),
    // so that it reads as fresh memory again.
    transport::shm::CachedSegment keep;
    std::uint8_t *control = nullptr;
    std::size_t fixed_bytes = 0, counter_bytes = 0;
    if (state->segment_id != 0 && state->segment && state->segment->address()) {
        control = static_cast<std::uint8_t *>(state->segment->address()) + state->control_offset;
        fixed_bytes = state->layout->notifications();
        counter_bytes = 8 * std::size_t{state->engine->notifications().used()};
        keep.segment = std::move(state->segment);
        keep.id = state->segment_id;
        keep.ranks = state->segment_ranks;
        keep.cma_checked = state->cma_checked;
    }
    locked([&] { delete state; });  // its transports share the UCX worker
    if (keep) {
        std::memset(control, 0, fixed_bytes + counter_bytes);
        transport::shm::segment_cache_put(std::move(keep));
    }
    // The last window takes the progress thread with it (MPI_Finalize stops it too).
    engine::progress_thread_stop_if_idle();
    return error;
}

int win_shared_query(const char *call, MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                     void *baseptr) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    const int nranks = static_cast<int>(state->sizes.size());
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= nranks))
        return raise(call, win, Status::err_rank);
    if (state->flavor != Flavor::shared && state->flavor != Flavor::allocate) {
        *size = 0;
        *disp_unit = 1;
        *static_cast<void **>(baseptr) = nullptr;
        return MPI_SUCCESS;
    }
    if (rank == MPI_PROC_NULL) {  // the first rank with memory (all empty: size 0, NULL)
        rank = 0;
        while (rank < nranks - 1 && state->sizes[rank] == 0) ++rank;
    }
    // On another node (no shared memory with it), or no memory there: size 0, NULL.
    if (state->shared_offsets[rank] < 0 || state->sizes[rank] == 0) {
        *size = 0;
        *disp_unit = state->disp_units[rank];
        *static_cast<void **>(baseptr) = nullptr;
        return MPI_SUCCESS;
    }
    *size = state->sizes[rank];
    *disp_unit = state->disp_units[rank];
    *static_cast<void **>(baseptr) = state->shared_base + state->shared_offsets[rank];
    return MPI_SUCCESS;
}

int win_shared_query_c(const char *call, MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                       void *baseptr) {
    int unit = 0;
    int error = win_shared_query(call, win, rank, size, &unit, baseptr);
    if (error == MPI_SUCCESS) *disp_unit = unit;
    return error;
}

int win_get_info(const char *call, MPI_Win win, MPI_Info *info_used) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    int error = PMPI_Info_create(info_used);
    if (error != MPI_SUCCESS) return error;
    // Every key MPI-4.0 defines for windows, with the value in effect (its default if
    // the user gave none), then nbrma's own.
    const WindowInfo &info = state->info;
    using settings::Id;
    auto set = [&](Id key, const char *value) {
        PMPI_Info_set(*info_used, settings::name(key), value);
    };
    auto truth = [](bool value) { return value ? "true" : "false"; };
    set(Id::no_locks, truth(info.no_locks));
    set(Id::accumulate_ordering, info.accumulate_ordering.c_str());
    set(Id::accumulate_ops, info.accumulate_ops.c_str());
    set(Id::same_size, truth(info.same_size));
    set(Id::same_disp_unit, truth(info.same_disp_unit));
    set(Id::alloc_shared_noncontig, truth(info.alloc_shared_noncontig));
    set(Id::accumulate_granularity, info.accumulate_granularity.c_str());
    set(Id::transport, state->all_ucx ? "ucx" : "shm");
    set(Id::notify_max, std::to_string(state->layout->notify_capacity()).c_str());
    set(Id::share_user_memory_key, truth(state->share_user_memory));
    set(Id::check, state->check ? "races" : "off");
    set(Id::access_after_access_reorder, truth(info.reorder[0]));
    set(Id::access_after_exposure_reorder, truth(info.reorder[1]));
    set(Id::exposure_after_exposure_reorder, truth(info.reorder[2]));
    set(Id::exposure_after_access_reorder, truth(info.reorder[3]));
    return MPI_SUCCESS;
}

int win_set_info(const char *call, MPI_Win win, MPI_Info info) {
    WindowState *state = window_find(win);
    if (!state) return raise(call, MPI_WIN_NULL, Status::err_win);
    const std::string info_error = parse_info(info, &state->info);
    locked([&] {
        for (int key = 0; key < 4; ++key)
            state->engine->set_reorder(static_cast<engine::Reorder>(key), state->info.reorder[key]);
    });
    if (!info_error.empty()) return raise(call, win, Status::err_info_value, info_error.c_str());
    return mpich::Win_set_info(win, info);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/window_create_bindings.inc"
