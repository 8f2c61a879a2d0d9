// Assisted blocking calls (issue 15, goal 5): MPICH's blocking collectives stay MPICH's
// blocking collectives, on every rank and in every state, and a rank whose nbrma work
// must go on meanwhile gets a thread that sweeps while the application thread is
// blocked inside MPICH.
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
// In inline mode the first assisted call starts one assist thread per process (and
// switches the progress lock on, threads::enable); it sweeps only while some
// application thread is inside an assisted call and no other thread sweeps, never calls
// MPICH (what a sweep would, it queues: threads::defer), and is joined by MPI_Finalize.
// Between sweeps that move nothing it sleeps (in poll() on the UCX worker's event
// descriptor where a window has one), never yields: on an oversubscribed node a thread
// woken from a sleep gets a CPU from application threads spinning in MPICH's blocking
// calls, a yielding one does not. After the last assisted call leaves it naps 5 ms
// more, then parks on a condition variable: an assisted call costs two atomic
// increments while the thread is awake, a wake-up only when it is parked.
#ifndef NBRMA_ENGINE_ASSIST_HPP
#define NBRMA_ENGINE_ASSIST_HPP

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
