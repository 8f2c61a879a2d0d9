// The form nbrma gives the blocking collectives it interposes on one communicator
// (progress/interposed_waits.cpp).
//
// MPI does not match a blocking collective with a nonblocking one (and MPICH really
// does not), so every member of a communicator must run a given collective in the same
// form:
// - blocking: MPICH's own blocking collective (its shared-memory algorithms, 2-3x
//   faster than its nonblocking schedules), with an engine::Assist serving nbrma
//   meanwhile while this rank has work pending;
// - twin: MPICH's nonblocking twin plus a wait that sweeps nbrma and yields the CPU.
//   Taken on a communicator where some member runs at MPI_THREAD_MULTIPLE: there a
//   thread spinning in MPICH's blocking call holds MPICH's global lock against the
//   process's other threads, whose RMA waits need it (MPICH completes nbrma's
//   generalized requests), and on an oversubscribed node that cost the test
//   threads_rma 3-10x its time. Taken too where some member's node has more ranks
//   than cores (common/yield.hpp): MPICH's blocking collectives spin without yielding,
//   and there each step waits for the scheduler to run the rank spun against. And where
//   some member has a window whose transport serves its peers in software (UCX over
//   tcp: engine::progress_serves_peers): a target spinning in MPICH's barrier left its
//   peers' puts to the assist thread, which the spinning rank starves (a put + flush
//   toward it 190-210 us, against 43 us in the twin form).
//
// The members agree at the first interposed collective on the communicator, which MPI
// makes the same call on every member: an allreduce of "MPI_THREAD_MULTIPLE or
// oversubscribed here?" (twice on an intercommunicator, whose allreduce returns the
// other group's value), run as a twin itself. The result is kept as an attribute of the
// communicator (inherited by MPI_Comm_dup, which has the same members) and cached by
// handle in a small table (a lookup is a load and a compare); the attribute's delete
// callback clears the cache entry when the communicator is freed, before MPICH can
// reuse its handle.
#ifndef NBRMA_PROGRESS_COLLECTIVE_FORM_HPP
#define NBRMA_PROGRESS_COLLECTIVE_FORM_HPP

#include <mpi.h>

#include <atomic>
#include <cstdint>

namespace nbrma::mpi {

// unknown: the members have not agreed yet; not_comm: the handle is no communicator
// (MPICH's own collective reports that).
enum class CollectiveForm : std::uint8_t { unknown = 0, blocking = 1, twin = 2, not_comm = 3 };

namespace detail {
constexpr std::size_t form_slots = 256;
__attribute__((visibility("hidden"))) inline std::atomic<std::uint64_t> form_cache[form_slots];
inline std::size_t form_slot(MPI_Comm comm) {
    const auto handle = static_cast<std::uint32_t>(comm);
    return (handle ^ (handle >> 12)) % form_slots;
}
CollectiveForm collective_form_slow(MPI_Comm comm);
}  // namespace detail

// The form of the interposed collectives on `comm`: cached (a load), else read from
// the communicator's attribute; `unknown` before the members agreed (then call
// agree_collective_form from the collective).
inline CollectiveForm collective_form(MPI_Comm comm) {
    const std::uint64_t entry =
        detail::form_cache[detail::form_slot(comm)].load(std::memory_order_relaxed);
    if ((entry >> 8) == static_cast<std::uint32_t>(comm) && entry != 0)
        return static_cast<CollectiveForm>(entry & 0xff);
    return detail::collective_form_slow(comm);
}

// Agrees the form with the other members of `comm` (every member calls this at the same
// collective, its first interposed one on `comm`), records it and returns it in *form.
// `wait` completes an MPICH request with nbrma progressing meanwhile.
int agree_collective_form(MPI_Comm comm, CollectiveForm *form, int (*wait)(MPI_Request *));

// The members of `comm` made a window whose transport may serve peers in software (UCX
// over tcp): its form is forgotten, to be agreed again at the next interposed collective
// (every member calls this at the same point, the window's creation on `comm`).
void forget_collective_form(MPI_Comm comm);

// Counters (nbrma_get_counter): interposed collectives run as the nonblocking twin, and
// agreements run (one per communicator whose members agreed; MPI_Comm_dup inherits).
void count_twin_collective();
std::uint64_t twin_collectives();
std::uint64_t collective_agreements();

}  // namespace nbrma::mpi

#endif
