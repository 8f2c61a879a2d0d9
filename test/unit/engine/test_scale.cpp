// The scaling model (issue 16): real windows over the sim transport, p simulated ranks
// in one process, counting what each rank posts (puts, gets, atomics: messages, and
// bytes) per synchronization, for fence, lock_all, one exclusive lock everybody
// contends for, and a PSCW ring. A MODEL: no network, no time; it counts the traffic
// the protocols generate, which is what decides how they scale. Asserted: fence costs
// ceil(log2 p) notices a rank (a dissemination barrier), lock_all and PSCW a constant;
// the contended exclusive lock O(p) a rank in a burst (CAS retries; see below).
// NBRMA_LONG_TESTS=1 goes to 4096 ranks (the sim holds every rank's control region and
// window object: memory grows as p^2).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "engine/window.hpp"
#include "sim_fixture.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using Ranks = simtest::SimRanks;
using simtest::put_call;
using simtest::Requests;
using transport::sim::SimWorld;

struct PerRank {
    double messages_max = 0, messages_mean = 0, bytes_max = 0;
};

// The traffic of `body` (run once on every rank, then settled), per rank and per
// `times` synchronizations.
PerRank measure(Ranks &ranks, int times, const std::function<void(int)> &body) {
    const int p = static_cast<int>(ranks.windows.size());
    ranks.world.reset_traffic();
    for (int r = 0; r < p; ++r) body(r);
    ranks.settle();
    PerRank out;
    for (int r = 0; r < p; ++r) {
        const SimWorld::Traffic &t = ranks.world.traffic(r);
        out.messages_max = std::max(out.messages_max, double(t.messages()) / times);
        out.messages_mean += double(t.messages()) / times / p;
        out.bytes_max = std::max(out.bytes_max, double(t.bytes) / times);
    }
    return out;
}

bool long_tests() {
    const char *v = std::getenv("NBRMA_LONG_TESTS");
    return v != nullptr && *v != '\0' && *v != '0';
}

int ceil_log2(int p) {
    int rounds = 0;
    while ((1 << rounds) < p) ++rounds;
    return rounds;
}

}  // namespace

TEST(ScaleModel, MessagesPerRankPerSynchronization) {
    const int largest = long_tests() ? 4096 : 1024;
    std::printf("[ scale model ] sim transport, messages (puts + gets + atomics) a rank posts per "
                "synchronization: max (mean); a MODEL, not a measurement\n");
    std::printf("[ scale model ] %6s %14s %18s %22s %16s %14s\n", "ranks", "fence",
                "lock_all+put", "exclusive lock+put", "PSCW ring+put", "control B/rank");
    for (int p = 2; p <= largest; p *= 2) {
        Ranks ranks(p);
        Requests requests;
        std::vector<std::int64_t> values(p);
        for (int r = 0; r < p; ++r) values[r] = 1000 + r;

        // Fence: two barrier fences around an epoch with no calls (every rank).
        const PerRank fence = measure(ranks, 2, [&](int r) {
            requests(simtest::ifence(ranks.w(r), 0));
            requests(simtest::ifence(ranks.w(r), MPI_MODE_NOSUCCEED));
        });
        ASSERT_TRUE(requests.all_complete_ok()) << p;
        // Every notice is one fetch-add: ceil(log2 p) rounds, one a round.
        EXPECT_EQ(fence.messages_max, ceil_log2(p)) << p;

        // lock_all, one put to the right neighbour, unlock_all.
        const PerRank lock_all = measure(ranks, 1, [&](int r) {
            ASSERT_EQ(ranks.w(r).lock_all(0), Status::ok);
            ASSERT_EQ(ranks.w(r).rma(put_call((r + 1) % p, 8, &values[r]), nullptr), Status::ok);
            requests(simtest::iunlock_all(ranks.w(r)));
        });
        ASSERT_TRUE(requests.all_complete_ok()) << p;
        EXPECT_LE(lock_all.messages_max, 4) << p;  // lock CAS, put, release CAS (+ a retry)

        // Everybody locks rank 0 exclusively, puts, unlocks: the MCS queue.
        const PerRank exclusive = measure(ranks, 1, [&](int r) {
            ASSERT_EQ(ranks.w(r).lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
            ASSERT_EQ(ranks.w(r).rma(put_call(0, 16, &values[r]), nullptr), Status::ok);
            requests(simtest::iunlock(ranks.w(r), 0));
        });
        ASSERT_TRUE(requests.all_complete_ok()) << p;
        // CAS to join, successor link, put, release CAS or grant: 4-5 uncontended. But
        // the join is a compare-and-swap of the whole lock word, and in a burst where
        // every rank asks at once only one CAS of each round of attempts succeeds: the
        // k-th to get in retried k times, O(p) a rank, O(p^2) in all (a known limit; an
        // atomic swap on a tail word of its own would join in one). Guarded here so it
        // gets no worse.
        EXPECT_LE(exclusive.messages_mean, p + 3) << p;
        EXPECT_LE(exclusive.messages_max, 2 * p + 2) << p;

        // A PSCW ring: expose to the left neighbour, access the right one.
        const PerRank ring = measure(ranks, 1, [&](int r) {
            ASSERT_EQ(ranks.w(r).post({(r + p - 1) % p}, 0), Status::ok);
            ASSERT_EQ(ranks.w(r).start({(r + 1) % p}, 0), Status::ok);
            ASSERT_EQ(ranks.w(r).rma(put_call((r + 1) % p, 24, &values[r]), nullptr), Status::ok);
            requests(simtest::icomplete(ranks.w(r)));
            requests(simtest::iwait(ranks.w(r)));
        });
        ASSERT_TRUE(requests.all_complete_ok()) << p;
        EXPECT_EQ(ring.messages_max, 3) << p;  // grant notice, put, done notice

        for (int r = 0; r < p; ++r) {
            ASSERT_EQ(ranks.at((r + 1) % p, 8), values[r]) << p;
            ASSERT_EQ(ranks.at((r + 1) % p, 24), values[r]) << p;
        }
        std::printf("[ scale model ] %6d %7.0f (%4.1f) %10.0f (%5.2f) %14.0f (%5.2f) %8.0f (%5.2f) %14zu\n",
                    p, fence.messages_max, fence.messages_mean, lock_all.messages_max,
                    lock_all.messages_mean, exclusive.messages_max, exclusive.messages_mean,
                    ring.messages_max, ring.messages_mean, ranks.layout.size());
    }
}

}  // namespace nbrma::engine
