// Assisted blocking calls: MPICH's blocking collectives stay MPICH's
// blocking collectives, in every state (on communicators whose members all run below
// MPI_THREAD_MULTIPLE: progress/collective_form.hpp), and a rank whose nbrma work must go on
// meanwhile gets a thread that sweeps while the application thread is blocked inside
// MPICH.
//
// Why a thread: MPI does not match a blocking collective with a nonblocking one, so the
// form of a collective cannot depend on whether this rank has nbrma work pending; and a
// rank blocked in a collective without nbrma progress can deadlock a peer that waits for
// this rank's epoch before it joins (an MPIX_Win_icomplete toward a target that posts
// late, then MPI_Barrier). Before, every interposed collective ran as MPICH's
// nonblocking twin plus a test loop, which MPICH runs through its generic schedules,
// 2-3x slower than its blocking shared-memory collectives.
//
// In NBRMA_PROGRESS=thread and interrupt modes the progress thread already serves a
// process whose application thread does not call nbrma: an Assist does nothing there.
// In inline mode the first assisted call starts one assist thread per process. It
// sweeps only while the application thread is inside an assisted call, never calls
// MPICH (what a sweep would, it queues: threads::defer; the application thread runs it
// when it leaves), and is joined by MPI_Finalize.
//
// No progress lock: assisted calls happen below MPI_THREAD_MULTIPLE only (communicators
// with a member at that level run the nonblocking twin, progress/collective_form.hpp), so one
// application thread at a time is inside one, and it does not touch nbrma's engine
// until it leaves; the assist thread enters the engine only while that thread is
// inside, and ~Assist waits for the sweep in flight. Locking stays off, and the
// process's RMA calls cost what they cost without the assist thread.
//
// Between sweeps that move nothing it sleeps (in poll() on the UCX worker's event
// descriptor where a window has one), never yields: on an oversubscribed node a thread
// woken from a sleep gets a CPU from application threads spinning in MPICH's blocking
// calls, a yielding one does not. After the last assisted call leaves it naps 5 ms
// more, then parks on a condition variable: an assisted call costs two atomic
// operations while the thread is awake, a wake-up only when it is parked.
#ifndef NBRMA_PROGRESS_ASSIST_HPP
#define NBRMA_PROGRESS_ASSIST_HPP

#include <cstdint>

namespace nbrma::engine {

// Scope of one blocking MPICH call made while nbrma wants progress (progress_wanted()).
class Assist {
  public:
    Assist();
    ~Assist();
    Assist(const Assist &) = delete;
    Assist &operator=(const Assist &) = delete;

  private:
    bool assisting_ = false;
};

// Joins the assist thread (MPI_Finalize); a later Assist would start it again.
void assist_stop();
// Assisted calls so far, and sweeps of the assist thread that moved something.
std::uint64_t assisted_calls();
std::uint64_t assist_sweeps();

}  // namespace nbrma::engine

#endif
