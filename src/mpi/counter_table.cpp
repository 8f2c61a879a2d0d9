// counter_table.cpp — the table of nbrma's counters (see counter_table.hpp).
#include "mpi/counter_table.hpp"

#include <cstring>

#include "check/races.hpp"
#include "common/log.hpp"
#include "common/threads.hpp"
#include "progress/assist.hpp"
#include "progress/collective_form.hpp"
#include "progress/interrupt.hpp"

namespace nbrma::mpi {

namespace {

using K = CounterKind;
namespace interrupt = engine::interrupt;

const CounterRow rows[] = {
    {"windows_created", K::count, false, "windows this process created (every flavor)",
     [] { return threads::all_counters().windows_created; }},
    {"epochs_opened", K::count, false,
     "epochs opened: lock, lock_all, fence, start (access), post (exposure)",
     [] { return threads::all_counters().epochs_opened; }},
    {"epochs_completed", K::count, false, "epochs that completed (closed and finished)",
     [] { return threads::all_counters().epochs_completed; }},
    {"epochs_deferred", K::count, false,
     "epochs that could not activate in their opening call (the window was busy with an "
     "earlier one): queued, activated later",
     [] { return threads::all_counters().epochs_deferred; }},
    {"rma_ops", K::count, false,
     "communication calls issued: put, get, accumulates, atomics (R and notify forms too)",
     [] { return threads::all_counters().rma_ops; }},
    {"rma_ops_replayed", K::count, false,
     "communication calls recorded because their epoch or target lock was not ready, and "
     "run later",
     [] { return threads::all_counters().rma_ops_replayed; }},
    {"lock_grants", K::count, false, "locks acquired at a target (one per target of lock_all)",
     [] { return threads::all_counters().lock_grants; }},
    {"locks_at_once", K::count, false,
     "lock epochs taken by one compare-and-swap and run inline, outside the epoch queue "
     "(shared memory, nothing else pending on the window, or with "
     "access_after_access_reorder only active lock epochs toward other targets); counted "
     "in lock_grants too",
     [] { return threads::all_counters().locks_at_once; }},
    {"segments_reused", K::count, false,
     "MPI_Win_create and MPI_Win_create_dynamic windows whose node segment (control "
     "regions) was a freed window's, kept mapped, instead of a new one",
     [] { return threads::all_counters().segments_reused; }},
    {"user_memory_shared", K::count, false,
     "MPI_Win_create windows and MPI_Win_attach regions whose memory node-local peers "
     "map (its pages moved into shared memory; loads and stores, and CPU atomics on "
     "MPI_Win_create windows, instead of cross-memory attach)",
     [] { return threads::all_counters().user_memory_shared; }},
    {"check_races", K::count, false,
     "NBRMA_CHECK=races: races this process found (conflicting RMA calls at one target that "
     "no MPI synchronization orders; origin or result buffers changed before their call "
     "completed)",
     [] { return check::races_found(); }},
    {"check_calls", K::count, false,
     "NBRMA_CHECK=races: target byte ranges of RMA calls this process checked",
     [] { return check::accesses_checked(); }},
    {"progress_thread_sweeps", K::count, true,
     "sweeps of the progress thread that moved something (NBRMA_PROGRESS=thread or "
     "interrupt)",
     [] { return threads::all_counters().progress_thread_sweeps; }},
    {"assisted_calls", K::count, true,
     "blocking MPICH collectives entered with nbrma work pending in inline mode, served "
     "meanwhile by the assist thread",
     [] { return engine::assisted_calls(); }},
    {"assist_sweeps", K::count, true, "sweeps of the assist thread that moved something",
     [] { return engine::assist_sweeps(); }},
    {"twin_collectives", K::count, true,
     "interposed blocking collectives run as MPICH's nonblocking twin plus a sweeping wait "
     "(on communicators with a member at MPI_THREAD_MULTIPLE, on an oversubscribed node, "
     "or with a window whose transport serves peers in software)",
     [] { return twin_collectives(); }},
    {"collective_agreements", K::count, true,
     "agreements on the form of a communicator's collectives (one at the first interposed "
     "collective on a communicator; duplicates inherit it)",
     [] { return collective_agreements(); }},
    {"interrupt_wakeups", K::count, true,
     "wake-ups of this rank's progress thread by the node's helper (interrupt mode)",
     [] { return interrupt::counters().wakeups.load(); }},
    {"interrupt_futile_wakeups", K::count, true,
     "helper wake-ups whose sweep moved nothing (interrupt mode)",
     [] { return interrupt::counters().futile_wakeups.load(); }},
    {"interrupt_sweeps", K::count, true, "every sweep of the interrupt-mode progress thread",
     [] { return interrupt::counters().sweeps.load(); }},
    {"interrupt_event_wakeups", K::count, true,
     "wake-ups by the UCX worker's event descriptor (interrupt mode, peers over UCX)",
     [] { return interrupt::counters().event_wakeups.load(); }},
    {"helpers", K::level, true, "helper processes on the node (interrupt mode; else 0)",
     [] { return static_cast<std::uint64_t>(interrupt::helper_count()); }},
    {"helper_pid", K::other, true, "the node's first helper's process id (interrupt mode; else 0)",
     [] { return static_cast<std::uint64_t>(interrupt::helper_pid(0)); }},
    {"help_table_bytes", K::size, true,
     "bytes of the node's help table: a 64-byte slot per rank plus a header (interrupt mode)",
     [] { return static_cast<std::uint64_t>(interrupt::table_bytes()); }},
};

}  // namespace

const CounterRow *counter_table() { return rows; }

std::size_t counter_count() { return sizeof rows / sizeof rows[0]; }

const CounterRow *counter_find(const char *name) {
    for (const CounterRow &row : rows)
        if (std::strcmp(row.name, name) == 0) return &row;
    return nullptr;
}

}  // namespace nbrma::mpi
