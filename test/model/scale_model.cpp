// scale_model — a MODEL, not a measurement: how much synchronization traffic
// a rank generates as a job grows, counted on nbrma's real engine (engine::Window, the
// lock protocol, the fence barrier, PSCW matching) over the sim transport with p
// simulated ranks in one process. No network and no clock: every rank issues its
// calls, then the ranks progress and the operations in flight are delivered in posting
// order until nothing moves. Counted, per rank and per synchronization: the messages it
// posted (puts + gets + atomics; SimWorld::traffic) and its control region's bytes.
//
// Scenarios (every rank, p = 2, 4, ... up to the largest asked):
//   fence       two barrier fences around an epoch without calls (per fence)
//   lock_all    lock_all, an 8-byte put to the right neighbour, unlock_all
//   exclusive   every rank locks rank 0 exclusively at once, puts 8 bytes, unlocks
//   exclusive_nodoor  the same with the lock protocol's doorway off (lock_protocol.hpp):
//               every failed CAS of the lock word retried alone, as without the
//               doorway; for comparison
//   shared      every rank locks rank 0 shared at once, puts 8 bytes, unlocks
//   pscw        a ring: post to the left neighbour, start toward the right one, put, complete, wait
// Every put is checked at its target afterwards.
//
// Output: the rows and results in nbrma-bench's format (series "model-max" and
// "model-mean": the busiest rank and the average; benchmarks scale_<scenario>, parameter
// p; "scale_control_bytes" is the control region a rank holds a window), and with --check
// the bounds below, as "CHECK" lines:
//   fence: exactly ceil(log2 p) messages a rank (p - 1 up to 8 ranks, where one round
//   to every peer is quicker); lock_all and pscw: a constant (3);
//   exclusive: a constant a rank in such a burst (12: two failed CASes, the doorway's
//   swap, link, CAS back and grant, the lock word's CAS, the link to the predecessor,
//   the put, the release and its grant); without the doorway it is O(p) (in a burst one
//   CAS a round of attempts succeeds), not checked; shared: a constant too (11: the
//   acquire and the release each fail twice and go through the doorway); control bytes
//   <= 64 p + 2.5 KiB (1 KiB of it the accumulate stripes).
// Usage: scale_model [--list] [--check] [--largest P] (default 1024; --quick: 256)
//        [--group scale and other nbrma-bench arguments are accepted and ignored]
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "sync/lock_protocol.hpp"
#include "transport/sim/sim_transport.hpp"
#include "../unit/engine/rma_calls.hpp"  // put_call

using namespace nbrma;
using namespace nbrma::engine;
using simtest::put_call;
using transport::sim::SimWorld;

namespace {

const char *const scenarios[] = {"fence", "lock_all", "exclusive", "exclusive_nodoor", "shared", "pscw"};
constexpr int nscenarios = sizeof scenarios / sizeof scenarios[0];

struct PerRank {
    double max = 0, mean = 0;
};

class Job {
  public:
    explicit Job(int p) : p_(p), layout_(p), world_(p, layout_.size(), 64) {
        // Puts complete at the origin when posted, as RDMA networks report them (the
        // engine waits inside a call for a put's local completion); they land when the
        // sim delivers them.
        world_.set_early_local_completion(true);
        WindowConfig config;
        config.sizes.assign(p, 64);
        config.disp_units.assign(p, 1);
        for (int r = 0; r < p; ++r)
            windows_.push_back(std::make_unique<Window>(world_.endpoint(r), layout_, config));
    }
    ~Job() {
        for (Request *request : requests_) request->release();
    }

    int size() const { return p_; }
    Window &w(int r) { return *windows_[r]; }
    const layout::ControlLayout &layout() const { return layout_; }
    void keep(Request *request) {
        if (request) requests_.push_back(request);
    }
    std::int64_t at(int rank, std::size_t offset) const {
        std::int64_t value;
        std::memcpy(&value, world_.memory(rank, transport::Region::window) + offset, sizeof value);
        return value;
    }

    // Runs `body` on every rank, then progresses and delivers until nothing moves; the
    // messages each rank posted, per `times` synchronizations. False if a request failed
    // or did not complete.
    bool measure(int times, const std::function<bool(int)> &body, PerRank *out) {
        world_.reset_traffic();
        for (int r = 0; r < p_; ++r)
            if (!body(r)) return false;
        for (bool moved = true; moved;) {
            moved = false;
            for (auto &window : windows_) moved |= window->progress();
            while (world_.in_flight() > 0) {
                std::size_t i = 0;
                while (!world_.deliverable(i)) ++i;
                world_.deliver(i);
                moved = true;
            }
        }
        *out = PerRank();
        for (int r = 0; r < p_; ++r) {
            const double messages = double(world_.traffic(r).messages()) / times;
            out->max = std::max(out->max, messages);
            out->mean += messages / p_;
        }
        for (Request *request : requests_) {
            if (!request->complete() || is_error(request->status())) return false;
            request->release();
        }
        requests_.clear();
        return true;
    }

  private:
    int p_;
    layout::ControlLayout layout_;
    SimWorld world_;
    std::vector<std::unique_ptr<Window>> windows_;
    std::vector<Request *> requests_;
};

int ceil_log2(int p) {
    int rounds = 0;
    while ((1 << rounds) < p) ++rounds;
    return rounds;
}

bool failures = false;

void check(bool ok, const char *what, int p, double value, double bound) {
    std::printf("CHECK model-max %s %s p=%d: %.2f against %.2f\n", ok ? "ok" : "FAILED", what,
                p, value, bound);
    if (!ok) failures = true;
}

// One job of p ranks through the scenarios; false if the engine failed.
bool run(int p, bool checking) {
    Job job(p);
    std::vector<std::int64_t> values(p);
    for (int r = 0; r < p; ++r) values[r] = 1000 + r;
    PerRank result[nscenarios];
    auto ok = [](Status status) { return status == Status::ok; };

    bool fine = job.measure(2, [&](int r) {
        Request *a = nullptr, *b = nullptr;
        bool opened = ok(job.w(r).fence(0, &a));
        job.keep(a);
        opened = opened && ok(job.w(r).fence(MPI_MODE_NOSUCCEED, &b));
        job.keep(b);
        return opened;
    }, &result[0]);
    fine = fine && job.measure(1, [&](int r) {
        Request *released = nullptr;
        bool done = ok(job.w(r).lock_all(0)) &&
                    ok(job.w(r).rma(put_call((r + 1) % p, 0, &values[r]), nullptr)) &&
                    ok(job.w(r).unlock_all(&released));
        job.keep(released);
        return done;
    }, &result[1]);
    auto exclusive_burst = [&](int r) {
        Request *released = nullptr;
        bool done = ok(job.w(r).lock(MPI_LOCK_EXCLUSIVE, 0, 0)) &&
                    ok(job.w(r).rma(put_call(0, 8, &values[r]), nullptr)) &&
                    ok(job.w(r).unlock(0, &released));
        job.keep(released);
        return done;
    };
    fine = fine && job.measure(1, exclusive_burst, &result[2]);
    const int door_after = sync::LockOperation::doorway_after();
    sync::LockOperation::set_doorway_after(0);
    fine = fine && job.measure(1, exclusive_burst, &result[3]);
    sync::LockOperation::set_doorway_after(door_after);
    fine = fine && job.measure(1, [&](int r) {
        Request *released = nullptr;
        bool done = ok(job.w(r).lock(MPI_LOCK_SHARED, 0, 0)) &&
                    ok(job.w(r).rma(put_call(0, 24, &values[r]), nullptr)) &&
                    ok(job.w(r).unlock(0, &released));
        job.keep(released);
        return done;
    }, &result[4]);
    fine = fine && job.measure(1, [&](int r) {
        Request *completed = nullptr, *waited = nullptr;
        bool done = ok(job.w(r).post({(r + p - 1) % p}, 0)) &&
                    ok(job.w(r).start({(r + 1) % p}, 0)) &&
                    ok(job.w(r).rma(put_call((r + 1) % p, 16, &values[r]), nullptr)) &&
                    ok(job.w(r).complete(&completed)) && ok(job.w(r).wait(&waited));
        job.keep(completed);
        job.keep(waited);
        return done;
    }, &result[5]);
    bool data = fine;
    for (int r = 0; r < p && data; ++r)
        data = job.at((r + 1) % p, 0) == values[r] && job.at((r + 1) % p, 16) == values[r];
    // Rank 0's slots 8 and 24 hold the put of whichever rank came last.
    data = data && job.at(0, 8) >= 1000 && job.at(0, 8) < 1000 + p;
    data = data && job.at(0, 24) >= 1000 && job.at(0, 24) < 1000 + p;
    std::printf("CHECK model-max %s p=%d\n", data ? "ok" : "FAILED", p);
    if (!data) return false;

    for (int s = 0; s < nscenarios; ++s) {
        std::printf("RESULT model-max scale_%s %d %.4g msgs\n", scenarios[s], p, result[s].max);
        std::printf("RESULT model-mean scale_%s %d %.4g msgs\n", scenarios[s], p, result[s].mean);
    }
    const double control = double(job.layout().size());
    std::printf("RESULT model-max scale_control_bytes %d %.0f B\n", p, control);
    if (checking) {
        // A notice to every peer up to 8 ranks, a dissemination barrier beyond.
        const double fence_bound = p <= layout::ControlLayout::direct_fence_ranks ? p - 1 : ceil_log2(p);
        check(result[0].max == fence_bound, "fence == p - 1 (p <= 8), ceil(log2 p)", p,
              result[0].max, fence_bound);
        check(result[1].max <= 3, "lock_all <= 3", p, result[1].max, 3);
        check(result[2].max <= 12, "exclusive <= 12", p, result[2].max, 12);
        check(result[4].max <= 11, "shared <= 11", p, result[4].max, 11);
        check(result[5].max <= 3, "pscw <= 3", p, result[5].max, 3);
        check(control <= 64.0 * p + 2560, "control bytes <= 64 p + 2.5 KiB", p, control,
              64.0 * p + 2560);
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    bool list = false, checking = false;
    int largest = 1024;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--list")) list = true;
        else if (!std::strcmp(argv[i], "--check")) checking = true;
        else if (!std::strcmp(argv[i], "--quick")) largest = 256;
        else if (!std::strcmp(argv[i], "--largest") && i + 1 < argc) largest = std::atoi(argv[++i]);
        // nbrma-bench passes --group scale and its own options; they mean nothing here.
    }
    if (largest < 2) {
        std::fprintf(stderr, "scale_model: --largest must be at least 2\n");
        return 2;
    }
    if (list) {
        for (const char *s : scenarios)
            for (int p = 2; p <= largest; p *= 2) std::printf("ROW scale_%s %d msgs\n", s, p);
        for (int p = 2; p <= largest; p *= 2) std::printf("ROW scale_control_bytes %d B\n", p);
        return 0;
    }
    MPI_Init(&argc, &argv);  // for the datatypes the engine looks at
    std::printf("# scale_model: a MODEL (the engine over the sim transport, no network, no "
                "clock): messages a rank posts per synchronization\n");
    for (int p = 2; p <= largest; p *= 2) {
        if (!run(p, checking)) {
            std::fprintf(stderr, "scale_model: the engine failed at p = %d\n", p);
            failures = true;
            break;
        }
        std::fflush(stdout);
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
