// The process-wide progress engine: every nbrma window registers here; one sweep
// advances all of them (inline progress mode, SC14 §VII-D). Blocking nbrma calls
// are the nonblocking ones plus wait_request(), which sweeps, keeps the other
// engine (MPICH two-sided) moving through a hook, and yields when oversubscribed.
#ifndef NBRMA_ENGINE_PROGRESS_HPP
#define NBRMA_ENGINE_PROGRESS_HPP

#include "common/status.hpp"
#include "engine/request.hpp"

namespace nbrma::engine {

class Window;

void progress_register(Window *window);
void progress_unregister(Window *window);

// One sweep over every window; true if anything moved.
bool progress_sweep();
// True while some window has epochs or flushes pending.
bool progress_pending();

// True while nbrma's progress must run inside MPICH's blocking calls: some window has
// work pending, or serves its peers' operations in software (the transport says
// needs_target_progress(), e.g. UCX over tcp). Cheap: no window, no cost.
bool progress_wanted();

// Called every few idle iterations of a wait, so two-sided traffic keeps moving.
void progress_set_external(void (*poke)());

// Sweeps until `request` completes; returns its status (does not release it).
Status wait_request(Request *request);

}  // namespace nbrma::engine

#endif
