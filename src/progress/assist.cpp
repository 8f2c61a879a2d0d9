#include "progress/assist.hpp"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/log.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "progress/progress.hpp"

namespace nbrma::engine {

namespace {

struct AssistThread {
    std::mutex mutex;  // guards thread start and stop; the park below
    std::condition_variable wake;
    std::thread thread;
    std::atomic<bool> running{false};
    std::atomic<bool> stopping{false};
    std::atomic<bool> parked{false};  // the thread waits on `wake`
    // The application thread inside an assisted call (0 or 1: see Assist), and whether
    // the assist thread is inside the engine: the two exclude each other (Turn).
    std::atomic<int> inside{0};
    std::atomic<bool> busy{false};
    std::atomic<std::uint64_t> calls{0};   // written by application threads, one at a time
    std::atomic<std::uint64_t> sweeps{0};  // written by the assist thread only
};

AssistThread &self() {
    static AssistThread *assist = new AssistThread;  // never destroyed: no exit-order hazard
    return *assist;
}

// How long the thread stays awake after the last assisted call left, so a program that
// calls collectives in a loop wakes it without a system call (it naps meanwhile).
constexpr auto linger = std::chrono::milliseconds(5);

void bump(std::atomic<std::uint64_t> &counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The assist thread's turn in the engine: taken only while the application thread is
// inside an assisted call, which waits for it to end before it leaves (~Assist). No
// progress lock: below MPI_THREAD_MULTIPLE locking stays off (threads::active()), and
// the application's engine calls cost what they cost without the assist thread.
// `busy` is published before `inside` is read, and ~Assist drops `inside` before it
// reads `busy` (all seq_cst): one of the two sees the other.
class Turn {
  public:
    explicit Turn(AssistThread &assist) : assist_(assist) {
        assist_.busy.store(true, std::memory_order_seq_cst);
        taken_ = assist_.inside.load(std::memory_order_seq_cst) > 0;
        if (!taken_) assist_.busy.store(false, std::memory_order_release);
    }
    ~Turn() {
        if (taken_) assist_.busy.store(false, std::memory_order_release);
    }
    explicit operator bool() const { return taken_; }

  private:
    AssistThread &assist_;
    bool taken_ = false;
};

// After a sweep that moved nothing: sleeps until the UCX worker has events (if a window
// has an event descriptor) or a timeout: 10 us doubling to 320 us while this process has
// work pending, else 1 ms (serving peers only: their requests are events). Sleeping,
// not yielding: on an oversubscribed node a sleeper that wakes gets the CPU from the
// application threads spinning in MPICH's blocking calls (a yielding thread does not,
// and served UCX peers 10x slower). The sleep is outside the turn.
void nap(AssistThread &assist, unsigned shift) {
    int fd = -1;
    bool pending = true;
    {
        Turn turn(assist);
        if (!turn) return;
        fd = progress_arm_events();
        if (fd == -2) return;  // events came: sweep again
        pending = progress_pending();
    }
    const timespec timeout{0, fd >= 0 && !pending ? 1000000l : 10000l << shift};
    if (fd >= 0) {
        pollfd event{fd, POLLIN, 0};
        (void)::ppoll(&event, 1, &timeout, nullptr);
    } else {
        nanosleep(&timeout, nullptr);
    }
}

void run() {
    threads::mark_progress_thread();  // what a sweep would call MPICH for, it queues
    AssistThread &assist = self();
    unsigned idle = 0;
    for (;;) {
        if (assist.inside.load(std::memory_order_acquire) > 0) {
            bool moved = false;
            {
                Turn turn(assist);
                if (turn) moved = progress_sweep();
            }
            if (moved) {
                bump(assist.sweeps);
                idle = 0;
            } else if (++idle < 16 && !oversubscribed()) {
                __builtin_ia32_pause();
            } else {
                nap(assist, std::min(idle / 16, 5u));
            }
            continue;
        }
        // Nobody inside: nap a while (no sweep: the application thread progresses
        // itself), then park until an assisted call or a stop.
        const auto left = std::chrono::steady_clock::now();
        while (assist.inside.load(std::memory_order_seq_cst) == 0 &&
               std::chrono::steady_clock::now() - left < linger) {
            const timespec pause{0, 500000};
            nanosleep(&pause, nullptr);
            if (assist.stopping.load(std::memory_order_relaxed)) return;
        }
        std::unique_lock<std::mutex> hold(assist.mutex);
        // Park: `parked` is published before `inside` is read (both seq_cst), and an
        // Assist increments `inside` before it reads `parked`: one of the two sees the
        // other, so no wake-up is lost.
        assist.parked.store(true, std::memory_order_seq_cst);
        assist.wake.wait(hold, [&] {
            return assist.stopping || assist.inside.load(std::memory_order_seq_cst) > 0;
        });
        assist.parked.store(false, std::memory_order_relaxed);
        if (assist.stopping) return;
        idle = 0;
    }
}

}  // namespace

Assist::Assist() {
    if (progress_thread_running()) return;  // thread/interrupt mode: it serves us
    AssistThread &assist = self();
    assist.inside.fetch_add(1, std::memory_order_seq_cst);
    if (!assist.running.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> hold(assist.mutex);
        if (!assist.running.load(std::memory_order_relaxed)) {
            assist.stopping = false;
            try {
                assist.thread = std::thread(run);
            } catch (const std::system_error &) {
                // No thread (the process is at its limit): the call goes on unassisted,
                // as it would without nbrma; said once.
                assist.inside.fetch_sub(1, std::memory_order_seq_cst);
                static std::once_flag said;
                std::call_once(said, [] {
                    log(0,
                        "cannot start the assist thread: blocking collectives with nbrma "
                        "work pending run without nbrma's progress");
                });
                return;
            }
            assist.running.store(true, std::memory_order_release);
        }
    } else if (assist.parked.load(std::memory_order_seq_cst)) {
        { std::lock_guard<std::mutex> hold(assist.mutex); }  // it waits, or sees `inside`
        assist.wake.notify_one();
    }
    bump(assist.calls);
    assisting_ = true;
}

Assist::~Assist() {
    if (!assisting_) return;
    AssistThread &assist = self();
    assist.inside.fetch_sub(1, std::memory_order_seq_cst);
    while (assist.busy.load(std::memory_order_seq_cst)) __builtin_ia32_pause();  // one sweep
    threads::drain();  // what its sweeps queued for MPICH, run by this application thread
}

void assist_stop() {
    AssistThread &assist = self();
    std::thread joined;
    {
        std::lock_guard<std::mutex> hold(assist.mutex);
        if (!assist.running.load(std::memory_order_relaxed)) return;
        assist.stopping = true;
        assist.running.store(false, std::memory_order_relaxed);
        joined = std::move(assist.thread);
    }
    assist.wake.notify_all();
    joined.join();
}

std::uint64_t assisted_calls() { return self().calls.load(std::memory_order_relaxed); }
std::uint64_t assist_sweeps() { return self().sweeps.load(std::memory_order_relaxed); }

}  // namespace nbrma::engine
