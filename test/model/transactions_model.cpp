// transactions_model — a MODEL, not a measurement: the SC14 Fig 12 transactions
// workload on 64-512 simulated ranks in one process, to show the
// trend this 2-core machine cannot run. nbrma's real engine (engine::Window, the lock
// protocol, deferred epochs, the reorder keys) runs over the sim transport
// (src/transport/sim), driven by a discrete-event clock of modelled costs:
//
//   - every MPI call an application rank makes costs it `call_us` of its own time;
//   - every put, get or atomic an engine posts is performed at its target `latency_us`
//     after it was posted, and a get or fetching atomic is complete at its origin then
//     (one-sided operations, no target CPU involved); puts and atomics without a result
//     complete at the origin when posted, as RDMA networks report them (a flush waits
//     for their arrival); operations toward one peer keep their order where the
//     transport contract asks it (fence), as the sim enforces;
//   - a rank waiting in MPI_Wait/Waitall progresses its engine whenever an operation it
//     posted completes or one lands in its memory (its polling is free: it has nothing
//     else to do).
//
// Each rank performs `per_rank` transactions: an exclusive lock on a random rank, an
// MPI_Accumulate (MPI_SUM) of 4 int64 into a random slot, the unlock. Series, as in
// test/bench/transactions.c: blocking (each transaction waited for), nonblocking
// (batches of 64 MPIX_Win_ilock / accumulate / MPIX_Win_iunlock, then a Waitall), and
// nonblocking on a window with access_after_access_reorder. Reported: transactions per
// second of modelled time for the whole job; checked: the windows sum to what the
// ranks added. Usage: transactions_model [ranks...] (default 64 128 256 512); environment
// NBRMA_MODEL_LATENCY_US (default 2), NBRMA_MODEL_CALL_US (0.3), NBRMA_MODEL_PER_RANK (256).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <queue>
#include <memory>
#include <random>
#include <vector>

#include "engine/request.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "transport/sim/sim_transport.hpp"

using namespace nbrma;
using namespace nbrma::engine;
using transport::sim::SimWorld;

namespace {

constexpr int slots = 64;      // a rank's window: slots of 4 int64
constexpr int elements = 4;
constexpr int batch = 64;      // nonblocking series: transactions per Waitall

enum class Series { blocking, nonblocking, nonblocking_aaar };
const char *series_name(Series s) {
    return s == Series::blocking      ? "blocking"
           : s == Series::nonblocking ? "nonblocking"
                                      : "nonblocking+aaar";
}

double env_double(const char *name, double fallback) {
    const char *value = std::getenv(name);
    return value ? std::atof(value) : fallback;
}

struct Rank {
    std::unique_ptr<Window> window;
    std::mt19937_64 rng;
    double ready = 0;            // when its next call may start
    bool waiting = false;        // in MPI_Wait(all): progressed by deliveries
    int step = 0;                // 0 lock, 1 accumulate, 2 unlock (of the current transaction)
    int in_batch = 0;            // transactions issued in the current batch
    long done = 0;               // transactions completed
    long issued = 0;
    int target = 0;
    std::int64_t operand[batch][elements];
    std::vector<Request *> requests;
    std::int64_t added = 0;
    double finished = 0;
};

struct Result {
    double tps = 0;
    bool ok = false;
    double span_us = 0;
};

Result run(int nranks, Series series, double latency_us, double call_us, long per_rank) {
    const layout::ControlLayout layout(nranks);
    const std::size_t window_bytes = slots * elements * sizeof(std::int64_t);
    SimWorld world(nranks, layout.size(), window_bytes);
    // Puts and atomics without a result complete at the origin when posted, as an RDMA
    // network reports them (their data lands `latency_us` later; flushes wait for it):
    // the engine's accumulates then never wait inside a call.
    world.set_early_local_completion(true);
    WindowConfig config;
    config.sizes.assign(nranks, window_bytes);
    config.disp_units.assign(nranks, 1);
    config.reorder[access_after_access] = series == Series::nonblocking_aaar;
    std::vector<Rank> ranks(nranks);
    for (int r = 0; r < nranks; ++r) {
        ranks[r].window = std::make_unique<Window>(world.endpoint(r), layout, config);
        ranks[r].rng.seed(0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(r + 1) * 7919);
    }
    // Post times of in-flight operations, by serial. Events run in time order, so
    // operations are posted (in serial order) at nondecreasing times: the new ones are at
    // the end of the in-flight list, and the first deliverable one is the earliest due.
    std::map<std::uint64_t, double> posted;
    std::uint64_t last_seen = 0;
    bool any_seen = false;
    auto note_posts = [&](double now) {
        std::size_t i = world.in_flight();
        while (i > 0 && (!any_seen || world.op(i - 1).serial > last_seen)) --i;
        for (; i < world.in_flight(); ++i) {
            posted.emplace(world.op(i).serial, now);
            last_seen = world.op(i).serial;
            any_seen = true;
        }
    };
    // Ranks ready to make a call, earliest first (entries of ranks since gone waiting,
    // or rescheduled, are skipped when they come up).
    using Entry = std::pair<double, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> calls;
    for (int r = 0; r < nranks; ++r) calls.push({0.0, r});
    const bool nonblocking = series != Series::blocking;
    auto all_complete = [](Rank &rank) {
        for (Request *request : rank.requests)
            if (!request->complete()) return false;
        return true;
    };
    auto end_wait = [&](Rank &rank, double now) {
        for (Request *request : rank.requests) {
            if (is_error(request->status())) std::fprintf(stderr, "model: a request failed\n");
            request->release();
        }
        rank.done += nonblocking ? rank.in_batch : 1;
        rank.requests.clear();
        rank.in_batch = 0;
        rank.waiting = false;
        rank.ready = now + call_us;  // the wait's return
        if (rank.done >= per_rank)
            rank.finished = rank.ready;
        else
            calls.push({rank.ready, static_cast<int>(&rank - ranks.data())});
    };
    // One call of rank r's program at its ready time.
    auto call = [&](int r) {
        Rank &rank = ranks[r];
        Window &w = *rank.window;
        const double now = rank.ready;
        if (rank.step == 0) {
            const std::uint64_t x = rank.rng();
            rank.target = static_cast<int>(x % static_cast<std::uint64_t>(nranks));
            for (int e = 0; e < elements; ++e) {
                rank.operand[rank.in_batch][e] = static_cast<std::int64_t>((x >> (8 * e)) & 0xff) + 1;
                rank.added += rank.operand[rank.in_batch][e];
            }
            if (is_error(w.lock(MPI_LOCK_EXCLUSIVE, rank.target, 0)))
                std::fprintf(stderr, "model: lock failed\n");
            rank.step = 1;
        } else if (rank.step == 1) {
            RmaCall acc;
            acc.kind = RmaKind::accumulate;
            acc.origin = rank.operand[rank.in_batch];
            acc.origin_count = elements;
            acc.origin_type = MPI_INT64_T;
            acc.target = rank.target;
            acc.displacement = static_cast<MPI_Aint>((rank.rng() % slots) * elements * 8);
            acc.target_count = elements;
            acc.target_type = MPI_INT64_T;
            acc.op = MPI_SUM;
            if (is_error(w.rma(acc, nullptr))) std::fprintf(stderr, "model: accumulate failed\n");
            rank.step = 2;
        } else {
            Request *request = nullptr;
            if (is_error(w.unlock(rank.target, &request)))
                std::fprintf(stderr, "model: unlock failed\n");
            if (request) rank.requests.push_back(request);
            rank.step = 0;
            ++rank.issued;
            ++rank.in_batch;
            const long left = per_rank - rank.done - rank.in_batch;
            if (!nonblocking || rank.in_batch == batch || left == 0) rank.waiting = true;
        }
        rank.ready = now + call_us;
        note_posts(now);
        if (!rank.waiting)
            calls.push({rank.ready, r});
        else if (all_complete(rank))
            end_wait(rank, rank.ready);
    };
    const double inf = std::numeric_limits<double>::infinity();
    for (;;) {
        // The next event: a rank's call, or an in-flight operation falling due.
        while (!calls.empty()) {
            const Entry top = calls.top();
            const Rank &rank = ranks[top.second];
            if (!rank.waiting && rank.done < per_rank && rank.ready == top.first) break;
            calls.pop();  // stale
        }
        double next_call = inf;
        int who = -1;
        if (!calls.empty()) {
            next_call = calls.top().first;
            who = calls.top().second;
        }
        double next_op = inf;
        std::size_t op_index = 0;
        for (std::size_t i = 0; i < world.in_flight(); ++i)
            if (world.deliverable(i)) {
                next_op = posted[world.op(i).serial] + latency_us;
                op_index = i;
                break;
            }
        if (who < 0 && next_op == inf) break;
        if (next_call <= next_op) {
            calls.pop();
            call(who);
            continue;
        }
        const double now = next_op;
        const int origin = world.op(op_index).origin, target = world.op(op_index).target;
        posted.erase(world.op(op_index).serial);
        world.deliver(op_index);
        // The ranks that notice: the origin (its completion) and the target (its memory).
        for (int r : {origin, target}) {
            Rank &rank = ranks[r];
            if (!rank.waiting) continue;
            rank.window->progress();
            note_posts(now);
            if (all_complete(rank)) end_wait(rank, now);
        }
    }
    Result result;
    long total = 0;
    std::int64_t added = 0, found = 0;
    for (int r = 0; r < nranks; ++r) {
        total += ranks[r].done;
        added += ranks[r].added;
        result.span_us = std::max(result.span_us, ranks[r].finished);
        const auto *cells = reinterpret_cast<const std::int64_t *>(
            world.memory(r, transport::Region::window));
        for (int i = 0; i < slots * elements; ++i) found += cells[i];
    }
    result.ok = total == per_rank * nranks && found == added;
    result.tps = result.span_us > 0 ? total / (result.span_us * 1e-6) : 0;
    return result;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);  // for the datatypes the engine looks at
    const double latency_us = env_double("NBRMA_MODEL_LATENCY_US", 2.0);
    const double call_us = env_double("NBRMA_MODEL_CALL_US", 0.3);
    const long per_rank = static_cast<long>(env_double("NBRMA_MODEL_PER_RANK", 256));
    std::vector<int> sizes;
    for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
    if (sizes.empty()) sizes = {64, 128, 256, 512};
    std::printf("# MODEL (not a measurement): nbrma's engine over the sim transport, %g us per "
                "operation, %g us per MPI call, %ld transactions a rank\n",
                latency_us, call_us, per_rank);
    std::printf("%-8s %14s %14s %18s %10s %10s\n", "ranks", "blocking", "nonblocking",
                "nonblocking+aaar", "nb/blk", "aaar/blk");
    int status = 0;
    for (int n : sizes) {
        double tps[3];
        for (int s = 0; s < 3; ++s) {
            Result r = run(n, static_cast<Series>(s), latency_us, call_us, per_rank);
            if (!r.ok) {
                std::fprintf(stderr, "model: %d ranks, %s: check FAILED\n", n,
                             series_name(static_cast<Series>(s)));
                status = 1;
            }
            tps[s] = r.tps;
        }
        std::printf("%-8d %14.0f %14.0f %18.0f %10.2f %10.2f\n", n, tps[0], tps[1], tps[2],
                    tps[1] / tps[0], tps[2] / tps[0]);
        std::fflush(stdout);
    }
    MPI_Finalize();
    return status;
}
