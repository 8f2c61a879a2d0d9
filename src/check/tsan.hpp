// The race checker and ThreadSanitizer: loads and stores of window memory.
//
// nbrma cannot see an application's loads and stores; ThreadSanitizer can, when the
// application is built with -fsanitize=thread. Then (its runtime is loaded, found with
// dlsym) each target replays into it the RMA calls that reached its window memory, as
// accesses by one TSan fiber per origin rank, with the happens-before MPI gives them:
//
// - the process's clock entry: each time this rank publishes its entry `tick` (then
//   ticks it), its thread releases the TSan sync object of that tick;
// - an origin records, with each call logged at the target, the target's entry it had
//   acquired when it issued the call; replaying the call, the origin's fiber acquires
//   that tick's object (the target's loads and stores before that publication come
//   before the call) and then reads or writes the call's bytes;
// - the call is replayed once the target's clock covers its completion (an acquire:
//   a barrier, a receive, a fence, a wait ...), or when the window is freed; the
//   thread replaying it then acquires the fiber (what the target does next comes after).
//
// A load or store of the target not ordered so against a call is a race ThreadSanitizer
// reports, naming the fiber "nbrma: RMA calls of rank N". The fibers are ordered among
// themselves in replay order: races between RMA calls are the checker's own to report.
#ifndef NBRMA_CHECK_TSAN_HPP
#define NBRMA_CHECK_TSAN_HPP

#include <cstddef>
#include <cstdint>

#include "engine/operation.hpp"

namespace nbrma::check::tsan {

// The calls below but available() are made with the checker's process mutex held.

// ThreadSanitizer's runtime is in this process (resolved once).
bool available();
// This process publishes its clock entry `tick` (before it ticks past it).
void released(std::uint64_t tick);
// The fibers of world ranks [0, ranks), made as the checker starts (a fiber made by a
// thread starts after what that thread did: made later, it would hide races).
void make_fibers(int ranks);
// Replays one RMA call of kind `kind` of world rank `origin` on [address, address +
// bytes): after the target's publication `acquired` (0: none), a write or a read (its
// frame in a report: nbrma_replayed_MPI_Put, ...); then the calling thread is ordered
// after it.
void replay(int origin, engine::RmaKind kind, std::uint64_t acquired, void *address,
            std::size_t bytes, bool write);
// The calling thread is ordered after every call replayed so far.
void ordered_after_replays();

}  // namespace nbrma::check::tsan

#endif
