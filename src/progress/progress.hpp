// The process-wide progress engine: every nbrma window registers here; one sweep
// advances all of them (inline progress mode, SC14 §VII-D). Blocking nbrma calls
// are the nonblocking ones plus wait_request(), which sweeps, keeps the other
// engine (MPICH two-sided) moving through a hook, and yields when oversubscribed.
#ifndef NBRMA_PROGRESS_PROGRESS_HPP
#define NBRMA_PROGRESS_PROGRESS_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/status.hpp"
#include "engine/request.hpp"
#include "helper/help_table.hpp"

namespace nbrma::engine {

class Window;

void progress_register(Window *window);
void progress_unregister(Window *window);

// One sweep over every window with work (and every window whose transport serves peers);
// true if anything moved.
bool progress_sweep();
// How many times the calling thread has called progress_sweep: a wait loop whose test
// may sweep itself (MPICH's MPI_Test runs a generalized request's poll_fn) sweeps only
// in the iterations where the test did not, so each iteration sweeps once.
unsigned progress_sweeps_by_this_thread();
// True while some window has epochs, flushes or notification thresholds pending. Looks
// only at the windows that had work queued since a sweep last found them idle (none:
// one relaxed load, no lock).
bool progress_pending();

// For a thread that found nothing to sweep and would sleep: arms the event descriptor of
// a registered window that has one (UCX, one worker per process) and returns it, to
// poll() before sweeping again; -1 if no window has one (or another thread holds the
// progress lock); -2 if events arrived meanwhile (sweep again at once).
int progress_arm_events();

// True while nbrma's progress must run inside MPICH's blocking calls: some window has
// work pending, or serves its peers' operations in software (the transport says
// needs_target_progress, e.g. UCX over tcp). Cheap: idle windows cost nothing.
bool progress_wanted();
// Some window's transport serves its peers' operations in software (needs_target_progress).
bool progress_serves_peers();

// Appends every window's engine state (Window::dump) to the file `path` (null: stderr),
// without taking the lock: for a debugger attached to a process that hangs
// (test/rma/runtests calls it from gdb as nbrma_debug_dump, a plain C name gdb finds).
void debug_dump(const char *path);

// Called every few idle iterations of a wait, so two-sided traffic keeps moving.
void progress_set_external(void (*poke)());

// How many idle rounds of a wait (or polls of a request) go between two such pokes. A
// poke (MPI_Iprobe) costs as much as a fence barrier's whole round trip: on a core of its
// own a rank pokes every 256 idle rounds (some microseconds of waiting), so a wait of a
// few rounds never pays one; oversubscribed, where every idle round yields the core
// anyway, every 16.
unsigned idle_rounds_per_poke();

// Sweeps until `request` completes; returns its status (does not release it). Does not
// hold the progress lock while it waits; on an application thread it runs the deferred
// MPICH calls (threads::drain) as they come. Runs in a SelfProgress scope.
Status wait_request(Request *request);

// The scope of an application thread's loop that sweeps nbrma itself (wait_request, the
// MPICH waits nbrma interposes). In NBRMA_PROGRESS=interrupt the rank counts as waiting
// inside nbrma meanwhile: the helper leaves its progress thread asleep (a wake-up would
// find the progress lock taken, or the work done). The last such scope to end sweeps
// once more and publishes what still waits on peers (help wanted), or leaves the
// progress thread idle. Elsewhere it does nothing.
class SelfProgress {
  public:
    SelfProgress();
    ~SelfProgress();
    SelfProgress(const SelfProgress &) = delete;
    SelfProgress &operator=(const SelfProgress &) = delete;

  private:
    bool counted_ = false;
};

// ---- the progress thread (NBRMA_PROGRESS=thread, doc/design.md §6)
enum class ProgressMode { inline_mode, thread_mode, interrupt_mode };

// NBRMA_PROGRESS: "inline" (the default), "thread" or "interrupt". False for any other
// value, with *value set to the text given.
bool progress_mode_from_environment(ProgressMode *mode, const char **value);

// Starts the process's progress thread if it is not running (switches threads::enable
// on first). It sweeps every registered window, never calls MPICH, and sleeps when
// nothing is pending. `mode` thread: it polls; interrupt: it sleeps on its futex in the
// node's help table (progress/interrupt.hpp; err_other if the table is not set up). Call
// without the progress lock held.
Status progress_thread_start(ProgressMode mode = ProgressMode::thread_mode);
// Stops and joins it (no-op if not running). Call without the progress lock held.
void progress_thread_stop();
// Stops it if no window is registered any more (the last MPI_Win_free), atomically with
// respect to a start by another thread's window creation.
void progress_thread_stop_if_idle();
bool progress_thread_running();
// Number of registered windows (under the lock).
std::size_t progress_window_count();
namespace detail {
__attribute__((visibility("hidden"))) inline std::atomic<bool> progress_thread_sleeping{false};
// Interrupt mode: the rank's helper died (the progress thread found it): kicks wake the
// thread themselves, as in thread mode.
__attribute__((visibility("hidden"))) inline std::atomic<bool> helper_gone{false};
// NBRMA_PROGRESS=interrupt: this rank's slot in the node's help table (its bell and
// activity word) while the progress thread runs, else null.
__attribute__((visibility("hidden"))) inline std::atomic<helper::RankSlot *> interrupt_slot{
    nullptr};
void progress_kick_slow(std::uint64_t seen);
// Puts a registered window that is not on the sweep list there (Window::SweepLink).
// Under the progress lock.
void progress_list(Window *window);
}  // namespace detail

// What progress_kick needs to know from before an engine call: the bell (interrupt
// mode, where the call also marks the rank busy in nbrma: helper/help_table.hpp's
// activity), 0 otherwise.
inline std::uint64_t progress_bell() {
    helper::RankSlot *slot = detail::interrupt_slot.load(std::memory_order_relaxed);
    if (!slot) return 0;
    helper::bump_activity(slot->activity);
    return slot->bell.load(std::memory_order_seq_cst);
}

// After an engine call that may have left work pending, `seen` = progress_bell() from
// before it: tells an idle progress thread (one load if none idles). Thread mode wakes
// it; interrupt mode publishes help wanted for it instead (no wake-up, no context
// switch: the helper wakes it when a peer's write may let the work move).
inline void progress_kick(std::uint64_t seen = 0) {
    if (detail::progress_thread_sleeping.load(std::memory_order_relaxed))
        detail::progress_kick_slow(seen);
}

}  // namespace nbrma::engine

#endif
