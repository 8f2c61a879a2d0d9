// The sweep's shared state, for the two files that drive it: the sweep itself
// (sweep.cpp: registration, the sweep list, waits) and the progress thread
// (thread.cpp). Nothing outside src/progress includes this.
#ifndef NBRMA_PROGRESS_SWEEP_LIST_HPP
#define NBRMA_PROGRESS_SWEEP_LIST_HPP

#include <atomic>

namespace nbrma::engine {
class Window;
}

namespace nbrma::engine::sweep_list {

// Registered windows whose transport needs our poll to serve peers (read without the
// lock: progress_wanted).
extern std::atomic<int> serving;
// Registered windows whose operations complete only when polled, with no event descriptor.
extern std::atomic<int> polled;
// NBRMA_PROGRESS=interrupt: a registered window whose transport has an event descriptor
// (UCX: one worker per process, so one descriptor), read by the progress thread under
// the lock; the descriptor itself, kept once seen.
extern Window *event_window;
extern int event_descriptor;

// One sweep over the windows with work (and the pinned ones); the caller holds the lock
// (or locking is off); true if anything moved.
bool sweep_locked();
// Some window is not idle (under the lock).
bool pending_locked();
// NBRMA_PROGRESS=interrupt: the fewest rings of this rank's bell until a sweep can move what waits
// for a peer (Window::rings_awaited), 0 if nothing does (under the lock).
unsigned rings_awaited_locked();

}  // namespace nbrma::engine::sweep_list

#endif
