// Engine tests of active-target synchronization (fence, PSCW) over the sim transport:
// matching by per-peer monotone counters (SC14 §VII-B: grant g, done d, fence f in
// the target's control region; a and e in the window object), serial activation of
// deferred epochs (§VI-A rule 4) with the exception of epochs the application held
// open together, fence barriers over counters, MPI_Win_test, and the error statuses.
//
// Window-region data moves at once (Operation::execute waits inline for it); every
// control-region notice (grant, done, fence, lock words) stays in flight until the
// test delivers it, in FIFO, random or exhaustively enumerated orders.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../state_hash.hpp"
#include "engine/epoch.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "sim_fixture.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma::engine {
namespace {

using transport::Region;
using transport::sim::SimWorld;

// SimRanks with the views the active-target tests use.
using simtest::CompletionOrder;
using simtest::icomplete;
using simtest::ifence;
using simtest::iunlock;
using simtest::iunlock_all;
using simtest::iwait;
using simtest::get_call;
using simtest::put_call;
using simtest::Requests;

struct Ranks : simtest::SimRanks {
    using SimRanks::SimRanks;
    int size() const { return layout.nranks(); }
    // Progress only (no delivery): what a rank can do on its own.
    void spin(int rounds = 20) {
        for (int i = 0; i < rounds; ++i) progress_all();
    }
    bool window_clean(int rank) const {
        const std::uint8_t *memory = world.memory(rank, Region::window);
        for (std::size_t i = 0; i < world.region_bytes(Region::window); ++i)
            if (memory[i] != 0) return false;
        return true;
    }
    // Index of the in-flight fetch-add on `target`'s counter at `offset`, or -1.
    long find_notice(int target, std::size_t offset) const {
        for (std::size_t i = 0; i < world.in_flight(); ++i) {
            const SimWorld::Op &op = world.op(i);
            if (op.kind == SimWorld::OpKind::atomic && op.target == target &&
                op.region == Region::control && op.offset == offset)
                return static_cast<long>(i);
        }
        return -1;
    }
};

// The names in `order` that start with `prefix`, space-separated.
std::string subsequence(const std::vector<std::string> &order, const std::string &prefix) {
    std::string s;
    for (const std::string &name : order)
        if (name.compare(0, prefix.size(), prefix) == 0) s += (s.empty() ? "" : " ") + name;
    return s;
}
std::ptrdiff_t position(const std::vector<std::string> &order, const std::string &name) {
    auto found = std::find(order.begin(), order.end(), name);
    return found == order.end() ? -1 : found - order.begin();
}

// ---------------------------------------------------------------- programs
//
// A program: per rank, a list of application calls run in order. A blocking call
// (fence, complete, wait as their blocking MPI forms) keeps its rank at that call,
// calling only progress, until its request completed. Values put come from storage
// owned by the program, so a program can be run many times (random seeds, DFS).

struct Call {
    std::string what;
    std::function<Status(Window &, Request **)> run;
    bool block = false;
    std::string tag;  // requests are looked up by tag
};

class Program {
  public:
    explicit Program(int nranks) : nranks_(nranks), calls_(nranks) {}
    Program(const Program &) = delete;
    Program &operator=(const Program &) = delete;

    int nranks() const { return nranks_; }
    const std::vector<Call> &calls(int rank) const { return calls_[rank]; }
    std::deque<std::int64_t> &results() { return results_; }

    void post(int rank, std::vector<int> group, int assert = 0) {
        add(rank, "post", [group, assert](Window &w, Request **) { return w.post(group, assert); });
    }
    void start(int rank, std::vector<int> group, int assert = 0) {
        add(rank, "start", [group, assert](Window &w, Request **) { return w.start(group, assert); });
    }
    void put(int rank, int target, MPI_Aint displacement, std::int64_t value) {
        values_.push_back(value);
        const RmaCall call = put_call(target, displacement, &values_.back());
        add(rank, "put->" + std::to_string(target),
            [call](Window &w, Request **) { return w.rma(call, nullptr); });
    }
    // Reads into results()[index] (zeroed before each run).
    void get(int rank, int target, MPI_Aint displacement, std::size_t index) {
        while (results_.size() <= index) results_.push_back(0);
        const RmaCall call = get_call(target, displacement, &results_[index]);
        add(rank, "get<-" + std::to_string(target),
            [call](Window &w, Request **) { return w.rma(call, nullptr); });
    }
    void complete(int rank, std::string tag, bool block = false) {
        add(rank, "complete", [](Window &w, Request **r) { return w.complete(r); }, block, tag);
    }
    void wait(int rank, std::string tag, bool block = false) {
        add(rank, "wait", [](Window &w, Request **r) { return w.wait(r); }, block, tag);
    }
    void fence(int rank, int assert, std::string tag, bool block = false) {
        add(rank, "fence", [assert](Window &w, Request **r) { return w.fence(assert, r); }, block,
            tag);
    }
    void fence_all(int assert, const std::string &tag, bool block = false) {
        for (int r = 0; r < nranks_; ++r) fence(r, assert, tag + "." + std::to_string(r), block);
    }

  private:
    void add(int rank, std::string what, std::function<Status(Window &, Request **)> run,
             bool block = false, std::string tag = "") {
        calls_[rank].push_back(Call{std::move(what), std::move(run), block, std::move(tag)});
    }
    int nranks_;
    std::vector<std::vector<Call>> calls_;
    std::deque<std::int64_t> values_;   // stable addresses
    std::deque<std::int64_t> results_;  // stable addresses
};

// One run of a program over fresh ranks.
class ProgramRun {
  public:
    ProgramRun(Program &program, std::size_t window_bytes = 4096)
        : program_(program),
          ranks_(program.nranks(), window_bytes),
          pc_(program.nranks(), 0),
          blocked_on_(program.nranks(), nullptr) {
        for (std::int64_t &result : program_.results()) result = 0;
    }
    Ranks &ranks() { return ranks_; }
    SimWorld &world() { return ranks_.world; }
    const std::string &failure() const { return failure_; }
    std::size_t pc(int rank) const { return pc_[rank]; }
    bool finished(int rank) const { return pc_[rank] >= program_.calls(rank).size(); }
    bool all_finished() const {
        for (int r = 0; r < program_.nranks(); ++r)
            if (!finished(r)) return false;
        return true;
    }
    Request *request(const std::string &tag) const {
        auto found = by_tag_.find(tag);
        return found == by_tag_.end() ? nullptr : found->second;
    }
    bool complete(const std::string &tag) const {
        Request *r = request(tag);
        return r && r->complete();
    }
    const Requests &requests() const { return requests_; }
    std::int64_t results_value(std::size_t index) const { return program_.results()[index]; }

    // Issues rank's next calls until one blocks (or just one call if `one`). True if
    // a call was issued.
    bool advance(int rank, bool one = false) {
        bool issued = false;
        while (!finished(rank)) {
            if (blocked_on_[rank] && !blocked_on_[rank]->complete()) break;
            blocked_on_[rank] = nullptr;
            const Call &call = program_.calls(rank)[pc_[rank]];
            Request *request = nullptr;
            const Status status = call.run(*ranks_.windows[rank], &request);
            if (status != Status::ok && failure_.empty())
                failure_ = "rank " + std::to_string(rank) + " call " + std::to_string(pc_[rank]) +
                           " (" + call.what + ") returned " + status_string(status);
            requests_(request);
            if (!call.tag.empty()) by_tag_[call.tag] = request;
            if (call.block) blocked_on_[rank] = request;
            ++pc_[rank];
            issued = true;
            if (one) break;
        }
        return issued;
    }
    // Every rank issues what it can and progresses until nothing moves (no delivery).
    void quiesce() {
        for (int round = 0; round < 10000; ++round) {
            bool moved = false;
            for (int r = 0; r < program_.nranks(); ++r) {
                moved |= advance(r);
                moved |= ranks_.windows[r]->progress();
            }
            if (!moved) return;
        }
        if (failure_.empty()) failure_ = "quiesce: still moving after 10000 rounds";
    }
    // FIFO delivery to the end: the sequential reference.
    void run_fifo() {
        quiesce();
        while (world().in_flight() > 0) {
            std::size_t i = 0;
            while (!world().deliverable(i)) ++i;
            world().deliver(i);
            quiesce();
        }
    }
    // Blocked ranks, in-flight operations, incomplete requests, epochs left.
    std::string unfinished() const {
        std::ostringstream s;
        for (int r = 0; r < program_.nranks(); ++r) {
            if (!finished(r))
                s << "rank " << r << " stuck at call " << pc_[r] << " ("
                  << program_.calls(r)[pc_[r]].what << "); ";
            if (ranks_.windows[r]->epochs_pending() != 0)
                s << "rank " << r << " has " << ranks_.windows[r]->epochs_pending()
                  << " epochs pending; ";
        }
        if (ranks_.world.in_flight() != 0) s << ranks_.world.in_flight() << " ops in flight; ";
        for (const auto &[tag, request] : by_tag_)
            if (!request || !request->complete())
                s << "request " << tag << " incomplete; ";
            else if (request->status() != Status::ok)
                s << "request " << tag << " failed: " << status_string(request->status()) << "; ";
        return s.str();
    }

  private:
    Program &program_;
    Ranks ranks_;
    Requests requests_;
    std::vector<std::size_t> pc_;
    std::vector<Request *> blocked_on_;
    std::map<std::string, Request *> by_tag_;
    std::string failure_;
};

// One random schedule: each step some random ranks issue at most one call and
// progress, then one random deliverable operation is delivered. `check` runs after
// every step. Returns the number of steps.
std::uint64_t random_schedule(ProgramRun &run, std::uint64_t seed, const std::function<void()> &check) {
    std::mt19937_64 rng(seed);
    const int n = run.ranks().size();
    std::uint64_t steps = 0;
    for (; steps < 200000; ++steps) {
        for (int r = 0; r < n; ++r) {
            if (rng() % 2) continue;
            run.advance(r, /*one=*/true);
            run.ranks().w(r).progress();
            check();
        }
        if (run.world().in_flight() > 0) {
            run.world().deliver_any(rng);
            check();
            continue;
        }
        run.quiesce();
        check();
        if (run.world().in_flight() == 0) break;
    }
    return steps;
}

// ------------------------------------------------------------------ 1. counters

// Rounds of PSCW among three ranks, all issued nonblocking: rank 0 accesses {1,2},
// rank 1 exposes to {0} and (beside it) accesses {2}, rank 2 exposes to {0,1}.
// Round k puts distinct values into per-round slots, and into one "last" slot per
// origin whose final value must be the last round's.
constexpr int kRounds = 4;
std::int64_t value_of(int origin, int target, int round) {
    return 1000 * (origin + 1) + 100 * (target + 1) + round + 1;
}
constexpr MPI_Aint slot(int origin, int round) { return 256 * origin + 8 * round; }
constexpr MPI_Aint last_slot(int origin) { return 1024 + 8 * origin; }

void three_rank_rounds(Program &p) {
    for (int k = 0; k < kRounds; ++k) {
        const std::string round = std::to_string(k);
        p.start(0, {1, 2});
        for (int t : {1, 2}) {
            p.put(0, t, slot(0, k), value_of(0, t, k));
            p.put(0, t, last_slot(0), value_of(0, t, k));
        }
        p.complete(0, "c0." + round);

        p.post(1, {0});
        p.start(1, {2});
        p.put(1, 2, slot(1, k), value_of(1, 2, k));
        p.put(1, 2, last_slot(1), value_of(1, 2, k));
        p.complete(1, "c1." + round);
        p.wait(1, "w1." + round);

        p.post(2, {0, 1});
        p.wait(2, "w2." + round);
    }
}

TEST(PscwRandom, MatchingCountersUnderRandomDeliveryOrders) {
    Program program(3);
    three_rank_rounds(program);
    std::uint64_t total_steps = 0, forced = 0;
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        ProgramRun run(program);
        Ranks &ranks = run.ranks();
        std::string violation;
        auto check = [&] {
            if (!violation.empty()) return;
            std::ostringstream s;
            for (int k = 0; k < kRounds; ++k) {
                const std::string round = std::to_string(k);
                // A completed request implies its data is in place.
                if (run.complete("c0." + round))
                    for (int t : {1, 2})
                        if (ranks.at(t, slot(0, k)) != value_of(0, t, k))
                            s << "c0." << k << " complete without its data at rank " << t << "; ";
                if (run.complete("c1." + round) && ranks.at(2, slot(1, k)) != value_of(1, 2, k))
                    s << "c1." << k << " complete without its data; ";
                if (run.complete("w1." + round) && ranks.at(1, slot(0, k)) != value_of(0, 1, k))
                    s << "w1." << k << " complete before rank 0's round-" << k << " put; ";
                if (run.complete("w2." + round) && (ranks.at(2, slot(0, k)) != value_of(0, 2, k) ||
                                                    ranks.at(2, slot(1, k)) != value_of(1, 2, k)))
                    s << "w2." << k << " complete before both origins' round-" << k << " puts; ";
                // FIFO matching: round k's data lands only in the target's k-th exposure,
                // i.e. after its (k-1)-th exposure completed.
                if (k > 0) {
                    const std::string before = std::to_string(k - 1);
                    if (ranks.at(1, slot(0, k)) != 0 && !run.complete("w1." + before))
                        s << "rank 0's round-" << k << " put reached rank 1 during exposure " << k - 1 << "; ";
                    if ((ranks.at(2, slot(0, k)) != 0 || ranks.at(2, slot(1, k)) != 0) &&
                        !run.complete("w2." + before))
                        s << "a round-" << k << " put reached rank 2 during exposure " << k - 1 << "; ";
                }
            }
            // Counters are monotone and never run ahead of the epochs behind them.
            if (ranks.grants(0, 1) > kRounds || ranks.grants(0, 2) > kRounds ||
                ranks.grants(1, 2) > kRounds || ranks.dones(2, 0) > kRounds)
                s << "a counter ran past the number of epochs; ";
            if (!s.str().empty()) violation = s.str();
        };
        total_steps += random_schedule(run, seed, check);
        for (auto &transport : ranks.transports) forced += transport->forced();
        ASSERT_TRUE(violation.empty()) << "seed " << seed << ": " << violation;
        ASSERT_TRUE(run.failure().empty()) << "seed " << seed << ": " << run.failure();
        ASSERT_TRUE(run.all_finished() && run.unfinished().empty())
            << "seed " << seed << ": " << run.unfinished();
        ASSERT_TRUE(run.requests().all_complete_ok()) << "seed " << seed;
        for (int k = 0; k < kRounds; ++k) {
            for (int t : {1, 2}) ASSERT_EQ(ranks.at(t, slot(0, k)), value_of(0, t, k)) << "seed " << seed;
            ASSERT_EQ(ranks.at(2, slot(1, k)), value_of(1, 2, k)) << "seed " << seed;
        }
        // The last round wins in every "last" slot: epochs toward a target were applied in order.
        ASSERT_EQ(ranks.at(1, last_slot(0)), value_of(0, 1, kRounds - 1)) << "seed " << seed;
        ASSERT_EQ(ranks.at(2, last_slot(0)), value_of(0, 2, kRounds - 1)) << "seed " << seed;
        ASSERT_EQ(ranks.at(2, last_slot(1)), value_of(1, 2, kRounds - 1)) << "seed " << seed;
        // The counters: one grant per exposure, one done per access epoch, no fences.
        const std::uint64_t K = kRounds;
        const std::uint64_t grant[3][3] = {{0, K, K}, {0, 0, K}, {0, 0, 0}};  // [rank][peer]
        const std::uint64_t done[3][3] = {{0, 0, 0}, {K, 0, 0}, {K, K, 0}};
        for (int r = 0; r < 3; ++r)
            for (int peer = 0; peer < 3; ++peer) {
                ASSERT_EQ(ranks.grants(r, peer), grant[r][peer]) << "grant_count(" << peer << ") at rank " << r << ", seed " << seed;
                ASSERT_EQ(ranks.dones(r, peer), done[r][peer]) << "done_count(" << peer << ") at rank " << r << ", seed " << seed;
                ASSERT_EQ(ranks.fences(r, peer), 0u) << "seed " << seed;
            }
    }
    std::printf("[ pscw random ] 3 ranks x %d rounds, 200 seeds, %" PRIu64 " steps, %" PRIu64
                " notices delivered early to let a transfer behind them through\n",
                kRounds, total_steps, forced);
}

// Two ranks; rank 0 is its own target too (P_l == P_r in SC14 §VII-B): it exposes to
// {0} and accesses {0, 1} beside it; rank 1 exposes to {0}.
TEST(PscwRandom, SelfTargetCountersUnderRandomDeliveryOrders) {
    Program program(2);
    const int rounds = 5;
    for (int k = 0; k < rounds; ++k) {
        const std::string round = std::to_string(k);
        program.post(0, {0});
        program.start(0, {0, 1});
        program.put(0, 0, 8 * k, 100 + k);
        program.put(0, 1, 8 * k, 200 + k);
        program.put(0, 1, 512, 200 + k);
        program.complete(0, "c0." + round);
        program.wait(0, "w0." + round);
        program.post(1, {0});
        program.wait(1, "w1." + round);
    }
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        ProgramRun run(program);
        Ranks &ranks = run.ranks();
        std::string violation;
        random_schedule(run, seed, [&] {
            for (int k = 0; k < rounds && violation.empty(); ++k) {
                const std::string round = std::to_string(k);
                if (run.complete("w0." + round) && ranks.at(0, 8 * k) != 100 + k)
                    violation = "w0." + round + " complete without its data";
                if (run.complete("c0." + round) && ranks.at(1, 8 * k) != 200 + k)
                    violation = "c0." + round + " complete without its data";
                if (k > 0 && ranks.at(1, 8 * k) != 0 && !run.complete("w1." + std::to_string(k - 1)))
                    violation = "round " + round + "'s put reached rank 1 during its previous exposure";
            }
        });
        ASSERT_TRUE(violation.empty()) << "seed " << seed << ": " << violation;
        ASSERT_TRUE(run.failure().empty()) << "seed " << seed << ": " << run.failure();
        ASSERT_TRUE(run.all_finished() && run.unfinished().empty())
            << "seed " << seed << ": " << run.unfinished();
        ASSERT_TRUE(run.requests().all_complete_ok()) << "seed " << seed;
        for (int k = 0; k < rounds; ++k) {
            ASSERT_EQ(ranks.at(0, 8 * k), 100 + k) << "seed " << seed;
            ASSERT_EQ(ranks.at(1, 8 * k), 200 + k) << "seed " << seed;
        }
        ASSERT_EQ(ranks.at(1, 512), 200 + rounds - 1) << "seed " << seed;
        const std::uint64_t K = rounds;
        EXPECT_EQ(ranks.grants(0, 0), K) << "seed " << seed;
        EXPECT_EQ(ranks.grants(0, 1), K) << "seed " << seed;
        EXPECT_EQ(ranks.dones(0, 0), K) << "seed " << seed;
        EXPECT_EQ(ranks.dones(1, 0), K) << "seed " << seed;
        EXPECT_EQ(ranks.grants(1, 0) + ranks.grants(1, 1) + ranks.dones(0, 1) + ranks.dones(1, 1), 0u);
    }
}

// ------------------------------------------------------------------ 2. target ahead

TEST(PscwMatching, TargetSeveralEpochsAheadGrantsPersist) {
    Ranks ranks(2);
    Requests requests;
    Window &origin = ranks.w(0);
    Window &target = ranks.w(1);
    constexpr int epochs = 5;
    Request *waits[epochs], *completes[epochs];
    for (int k = 0; k < epochs; ++k) {
        ASSERT_EQ(target.post({0}, 0), Status::ok);
        waits[k] = requests(iwait(target));
    }
    ranks.settle();
    // Exposures activate serially: only the first has granted; its grant waits in the
    // origin's control region although the origin has not opened any epoch.
    EXPECT_EQ(ranks.grants(0, 1), 1u);
    EXPECT_EQ(origin.epochs_pending(), 0u);
    EXPECT_EQ(target.epochs_pending(), static_cast<std::size_t>(epochs));
    for (Request *request : waits) EXPECT_FALSE(request->complete());

    // From here on the target makes no call but progress().
    const std::int64_t values[epochs] = {10, 20, 30, 40, 50};
    for (int k = 0; k < epochs; ++k) {
        // The k-th grant is already there when the origin starts its k-th epoch ...
        ASSERT_EQ(ranks.grants(0, 1), static_cast<std::uint64_t>(k + 1)) << "epoch " << k;
        ASSERT_EQ(origin.start({1}, 0), Status::ok);
        const std::size_t in_flight = ranks.world.in_flight();
        ASSERT_EQ(origin.rma(put_call(1, 8 * k, &values[k]), nullptr), Status::ok);
        ASSERT_EQ(origin.rma(put_call(1, 512, &values[k]), nullptr), Status::ok);
        // ... so the puts happened inside the calls: no delivery, no target action.
        EXPECT_EQ(ranks.at(1, 8 * k), values[k]) << "epoch " << k;
        EXPECT_EQ(ranks.at(1, 512), values[k]) << "epoch " << k;
        EXPECT_EQ(ranks.world.in_flight(), in_flight);
        completes[k] = requests(icomplete(origin));
        EXPECT_FALSE(waits[k]->complete());
        ranks.settle();
        EXPECT_TRUE(completes[k]->complete()) << "epoch " << k;
        EXPECT_TRUE(waits[k]->complete()) << "epoch " << k;
        for (int later = k + 1; later < epochs; ++later) EXPECT_FALSE(waits[later]->complete());
        EXPECT_EQ(ranks.dones(1, 0), static_cast<std::uint64_t>(k + 1));
        EXPECT_EQ(target.epochs_pending(), static_cast<std::size_t>(epochs - k - 1));
    }
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.grants(0, 1), static_cast<std::uint64_t>(epochs));
    EXPECT_EQ(ranks.dones(1, 0), static_cast<std::uint64_t>(epochs));
    EXPECT_EQ(origin.epochs_pending() + target.epochs_pending(), 0u);
}

// ------------------------------------------------------------------ 3. P0/P1/P2

// SC14 §VII-B: P0 opens six access epochs toward T0..T5 (P1 in T0,T1,T2,T3,T5; P2 in
// T4,T5). The 6th is P1's 5th access and P2's 2nd.
const std::vector<std::vector<int>> kPaperGroups = {{1}, {1}, {1}, {1}, {2}, {1, 2}};
std::int64_t paper_value(int epoch, int target) { return 100 * (epoch + 1) + target; }
constexpr MPI_Aint paper_last = 512;

void paper_p0(Program &p) {
    for (std::size_t i = 0; i < kPaperGroups.size(); ++i) {
        p.start(0, kPaperGroups[i]);
        for (int t : kPaperGroups[i]) {
            p.put(0, t, 8 * static_cast<MPI_Aint>(i), paper_value(static_cast<int>(i), t));
            p.put(0, t, paper_last, paper_value(static_cast<int>(i), t));
        }
        p.complete(0, "T" + std::to_string(i));
    }
}
void paper_exposures(Program &p, int rank, int count) {
    for (int j = 0; j < count; ++j) {
        p.post(rank, {0});
        p.wait(rank, "P" + std::to_string(rank) + "." + std::to_string(j));
    }
}
// P1's j-th exposure matches P0's epoch kP1Epoch[j]; P2's: kP2Epoch[j].
const int kP1Epoch[] = {0, 1, 2, 3, 5};
const int kP2Epoch[] = {4, 5};

TEST(PscwPaperExample, SixPendingAccessEpochsMatchFifoUnderRandomOrders) {
    Program program(3);
    // Exposures are posted first (early), then P0's six epochs, all nonblocking.
    paper_exposures(program, 1, 5);
    paper_exposures(program, 2, 2);
    paper_p0(program);
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        ProgramRun run(program);
        Ranks &ranks = run.ranks();
        std::vector<int> order;  // P0's epochs, as they complete
        std::string violation;
        auto check = [&] {
            if (!violation.empty()) return;
            std::ostringstream s;
            for (int i = 0; i < 6; ++i) {
                const std::string name = "T" + std::to_string(i);
                if (run.complete(name) && std::find(order.begin(), order.end(), i) == order.end())
                    order.push_back(i);
                if (run.complete(name))
                    for (int t : kPaperGroups[i])
                        if (ranks.at(t, 8 * i) != paper_value(i, t)) s << name << " complete without data at P" << t << "; ";
            }
            // P_t's j-th exposure: completed => its epoch's data is there; the data of
            // its (j+1)-th epoch lands only after it completed (FIFO matching).
            for (int t : {1, 2}) {
                const int *epoch_of = t == 1 ? kP1Epoch : kP2Epoch;
                const int count = t == 1 ? 5 : 2;
                for (int j = 0; j < count; ++j) {
                    const std::string name = "P" + std::to_string(t) + "." + std::to_string(j);
                    if (run.complete(name) && ranks.at(t, 8 * epoch_of[j]) != paper_value(epoch_of[j], t))
                        s << name << " complete without epoch T" << epoch_of[j] << "'s data; ";
                    if (j + 1 < count && ranks.at(t, 8 * epoch_of[j + 1]) != 0 && !run.complete(name))
                        s << "T" << epoch_of[j + 1] << "'s data reached P" << t << " during exposure " << j << "; ";
                }
            }
            if (!s.str().empty()) violation = s.str();
        };
        random_schedule(run, seed, check);
        ASSERT_TRUE(violation.empty()) << "seed " << seed << ": " << violation;
        ASSERT_TRUE(run.failure().empty()) << "seed " << seed << ": " << run.failure();
        ASSERT_TRUE(run.all_finished() && run.unfinished().empty()) << "seed " << seed << ": " << run.unfinished();
        // Serial activation: P0's epochs complete in application order.
        ASSERT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5})) << "seed " << seed;
        for (int i = 0; i < 6; ++i)
            for (int t : kPaperGroups[i]) ASSERT_EQ(ranks.at(t, 8 * i), paper_value(i, t)) << "seed " << seed;
        ASSERT_EQ(ranks.at(1, paper_last), paper_value(5, 1)) << "seed " << seed;
        ASSERT_EQ(ranks.at(2, paper_last), paper_value(5, 2)) << "seed " << seed;
        ASSERT_EQ(ranks.grants(0, 1), 5u);
        ASSERT_EQ(ranks.grants(0, 2), 2u);
        ASSERT_EQ(ranks.dones(1, 0), 5u);
        ASSERT_EQ(ranks.dones(2, 0), 2u);
    }
}

TEST(PscwPaperExample, GrantPersistsWhileTheOriginIsEpochsBehind) {
    Program program(3);
    paper_exposures(program, 1, 5);  // P1 posts all five exposures early
    paper_p0(program);               // P0: six epochs, all pending at once
    ProgramRun run(program);
    Ranks &ranks = run.ranks();
    run.quiesce();  // every call is nonblocking: all of them are issued
    ASSERT_TRUE(run.all_finished());
    CompletionOrder order;
    for (int i = 0; i < 6; ++i) order.watch("T" + std::to_string(i), run.request("T" + std::to_string(i)));
    for (int j = 0; j < 5; ++j) order.watch("P1." + std::to_string(j), run.request("P1." + std::to_string(j)));
    EXPECT_EQ(ranks.w(0).epochs_pending(), 6u);
    ranks.settle([&] { order.poll(); });
    ASSERT_TRUE(run.failure().empty()) << run.failure();
    // P2 has not posted: P0 is stuck at T4. P1 meanwhile finished its 4th exposure
    // and granted its 5th, which P0 reaches only after T4: the grant persists.
    EXPECT_EQ(subsequence(order.order, "T"), "T0 T1 T2 T3");
    EXPECT_EQ(subsequence(order.order, "P1."), "P1.0 P1.1 P1.2 P1.3");
    EXPECT_EQ(ranks.grants(0, 1), 5u);
    EXPECT_EQ(ranks.grants(0, 2), 0u);
    EXPECT_EQ(ranks.w(0).epochs_pending(), 2u);
    EXPECT_EQ(ranks.w(1).epochs_pending(), 1u);
    EXPECT_EQ(ranks.at(1, 8 * 5), 0) << "T5's data reached P1 before T4 was matched";
    EXPECT_EQ(ranks.at(1, paper_last), paper_value(3, 1));
    EXPECT_TRUE(ranks.window_clean(2));
    EXPECT_FALSE(run.complete("P1.4"));

    // P2 posts both exposures at once, the second far ahead of T5.
    Requests requests;
    for (int j = 0; j < 2; ++j) {
        ASSERT_EQ(ranks.w(2).post({0}, 0), Status::ok);
        order.watch("P2." + std::to_string(j), requests(iwait(ranks.w(2))));
    }
    ranks.settle([&] { order.poll(); });
    EXPECT_EQ(subsequence(order.order, "T"), "T0 T1 T2 T3 T4 T5");
    EXPECT_EQ(subsequence(order.order, "P1."), "P1.0 P1.1 P1.2 P1.3 P1.4");
    EXPECT_EQ(subsequence(order.order, "P2."), "P2.0 P2.1");
    // A target's j-th exposure completes before the epoch matching its (j+1)-th.
    EXPECT_LT(position(order.order, "P1.3"), position(order.order, "T5"));
    EXPECT_LT(position(order.order, "P2.0"), position(order.order, "T5"));
    EXPECT_TRUE(run.unfinished().empty()) << run.unfinished();
    EXPECT_TRUE(requests.all_complete_ok());
    for (int i = 0; i < 6; ++i)
        for (int t : kPaperGroups[i]) EXPECT_EQ(ranks.at(t, 8 * i), paper_value(i, t)) << "T" << i;
    EXPECT_EQ(ranks.at(1, paper_last), paper_value(5, 1));
    EXPECT_EQ(ranks.at(2, paper_last), paper_value(5, 2));
    EXPECT_EQ(ranks.grants(0, 2), 2u);
    EXPECT_EQ(ranks.dones(2, 0), 2u);
    EXPECT_EQ(ranks.dones(1, 0), 5u);
}

// ------------------------------------------------------------------ 4. late post

TEST(PscwMatching, LatePostDefersTheOriginWithoutBlocking) {
    Ranks ranks(2);
    Requests requests;
    Window &origin = ranks.w(0);
    Window &target = ranks.w(1);
    const std::int64_t value = 42;
    ASSERT_EQ(origin.start({1}, 0), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 16, &value), nullptr), Status::ok);
    Request *completed = requests(icomplete(origin));
    // Every call returned; nothing moves however long everybody progresses.
    EXPECT_FALSE(completed->complete());
    ranks.settle();
    ranks.spin(100);
    EXPECT_FALSE(completed->complete());
    EXPECT_EQ(ranks.at(1, 16), 0);
    EXPECT_EQ(ranks.world.in_flight(), 0u);
    EXPECT_EQ(origin.epochs_pending(), 1u);
    EXPECT_EQ(ranks.grants(0, 1), 0u);

    ASSERT_EQ(target.post({0}, 0), Status::ok);
    Request *waited = requests(iwait(target));
    // The grant is in flight: still nothing at the target.
    ASSERT_GE(ranks.find_notice(0, ranks.layout.grant_count(1)), 0);
    ranks.spin();
    EXPECT_FALSE(completed->complete());
    EXPECT_EQ(ranks.at(1, 16), 0);
    ranks.settle();
    EXPECT_TRUE(completed->complete());
    EXPECT_TRUE(waited->complete());
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 16), value);
    EXPECT_EQ(origin.epochs_pending() + target.epochs_pending(), 0u);
}

TEST(PscwMatching, NocheckOnBothSidesSendsNoGrant) {
    Ranks ranks(2);
    Requests requests;
    const std::int64_t value = 7;
    ASSERT_EQ(ranks.w(1).post({0}, MPI_MODE_NOCHECK), Status::ok);
    EXPECT_EQ(ranks.world.in_flight(), 0u);  // no grant
    ASSERT_EQ(ranks.w(0).start({1}, MPI_MODE_NOCHECK), Status::ok);
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::ok);
    EXPECT_EQ(ranks.at(1, 0), value);  // no grant to wait for
    Request *completed = requests(icomplete(ranks.w(0)));
    Request *waited = requests(iwait(ranks.w(1)));
    ASSERT_EQ(ranks.world.in_flight(), 1u);  // the done notice only
    EXPECT_EQ(ranks.find_notice(1, ranks.layout.done_count(0)), 0);
    ranks.settle();
    EXPECT_TRUE(completed->complete());
    EXPECT_TRUE(waited->complete());
    EXPECT_EQ(ranks.grants(0, 1), 0u);
    EXPECT_EQ(ranks.dones(1, 0), 1u);

    // A checked round after it: exposure id 2 on the target, access id 1 on the
    // origin, one grant. The counters stay in step.
    const std::int64_t checked = 8;
    ASSERT_EQ(ranks.w(0).start({1}, 0), Status::ok);
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &checked), nullptr), Status::ok);
    Request *completed2 = requests(icomplete(ranks.w(0)));
    ranks.settle();
    EXPECT_FALSE(completed2->complete());
    EXPECT_EQ(ranks.at(1, 0), value);
    ASSERT_EQ(ranks.w(1).post({0}, 0), Status::ok);
    Request *waited2 = requests(iwait(ranks.w(1)));
    // Exposure id 2: the done count 1 left by the NOCHECK round does not end it.
    const long grant = ranks.find_notice(0, ranks.layout.grant_count(1));
    ASSERT_GE(grant, 0);
    ranks.world.deliver(static_cast<std::size_t>(grant));
    ranks.w(1).progress();
    EXPECT_FALSE(waited2->complete());
    ranks.settle();
    EXPECT_TRUE(completed2->complete());
    EXPECT_TRUE(waited2->complete());
    EXPECT_EQ(ranks.at(1, 0), checked);
    EXPECT_EQ(ranks.grants(0, 1), 1u);
    EXPECT_EQ(ranks.dones(1, 0), 2u);
}

// ------------------------------------------------------------------ 5. activation order

// Rank 0 queues a lock epoch (blocked: rank 2 holds an exclusive lock on rank 1), an
// access epoch toward rank 1 (whose grant arrives at once) and two fence epochs. No
// epoch may skip the blocked lock epoch; they then complete in window order.
TEST(ActiveTargetDeferred, LockThenAccessThenFenceActivateInWindowOrder) {
    Ranks ranks(3);
    Requests requests;
    Window &w0 = ranks.w(0), &w1 = ranks.w(1), &w2 = ranks.w(2);
    ASSERT_EQ(w2.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ranks.settle();

    const std::int64_t by_lock = 1, by_access = 2, by_fence = 3;
    ASSERT_EQ(w0.lock(MPI_LOCK_EXCLUSIVE, 1, 0), Status::ok);
    ASSERT_EQ(w0.rma(put_call(1, 0, &by_lock), nullptr), Status::ok);
    Request *unlocked = nullptr;
    ASSERT_EQ(w0.unlock(1, &unlocked), Status::ok);
    requests(unlocked);
    ASSERT_EQ(w0.start({1}, 0), Status::ok);
    ASSERT_EQ(w0.rma(put_call(1, 8, &by_access), nullptr), Status::ok);
    Request *completed = requests(icomplete(w0));
    Request *fence1 = requests(ifence(w0, 0));
    ASSERT_EQ(w0.rma(put_call(1, 16, &by_fence), nullptr), Status::ok);
    Request *fence2 = requests(ifence(w0, MPI_MODE_NOSUCCEED));

    ASSERT_EQ(w1.post({0}, 0), Status::ok);
    Request *waited = requests(iwait(w1));
    Request *fence1_at1 = requests(ifence(w1, 0));
    Request *fence2_at1 = requests(ifence(w1, MPI_MODE_NOSUCCEED));
    ranks.settle();

    EXPECT_EQ(w0.epochs_pending(), 4u);  // lock, access, fence, fence (NOSUCCEED)
    EXPECT_EQ(ranks.grants(0, 1), 1u);   // rank 1 granted: the access epoch could go ...
    EXPECT_TRUE(ranks.window_clean(1));  // ... but waits behind the lock epoch
    for (Request *request : {unlocked, completed, fence1, fence2, waited, fence1_at1, fence2_at1})
        EXPECT_FALSE(request->complete());
    // No fence notice left rank 0: its fence epochs are not active.
    for (int peer : {1, 2}) EXPECT_EQ(ranks.fences(peer, 0), 0u);

    // Rank 2 releases its lock and joins the fences.
    Request *released = nullptr;
    ASSERT_EQ(w2.unlock(1, &released), Status::ok);
    requests(released);
    requests(ifence(w2, 0));
    requests(ifence(w2, MPI_MODE_NOSUCCEED));
    CompletionOrder order;
    order.watch("unlock", unlocked);
    order.watch("complete", completed);
    order.watch("fence1", fence1);
    order.watch("fence2", fence2);
    order.watch("wait@1", waited);
    std::string violation;
    std::vector<std::size_t> pending_seen;
    ranks.settle([&] {
        order.poll();
        if (pending_seen.empty() || pending_seen.back() != w0.epochs_pending())
            pending_seen.push_back(w0.epochs_pending());
        // Each put lands only once the epochs before its own completed.
        if (ranks.at(1, 8) != 0 && !unlocked->complete())
            violation += "access put before the lock epoch completed; ";
        if (ranks.at(1, 16) != 0 && !completed->complete())
            violation += "fence put before the access epoch completed; ";
        if (ranks.at(1, 16) != 0 && (!fence1->complete() || ranks.fences(0, 1) < 1))
            violation += "fence put before rank 0 passed the fence barrier; ";
    });
    EXPECT_TRUE(violation.empty()) << violation;
    // rank 1's exposure ends when rank 0's done arrives, possibly after rank 0's complete.
    std::vector<std::string> at0;
    for (const std::string &name : order.order)
        if (name != "wait@1") at0.push_back(name);
    EXPECT_EQ(at0, (std::vector<std::string>{"unlock", "complete", "fence1", "fence2"}))
        << order.str();
    EXPECT_EQ(pending_seen, (std::vector<std::size_t>{4, 3, 2, 1, 0}));
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), by_lock);
    EXPECT_EQ(ranks.at(1, 8), by_access);
    EXPECT_EQ(ranks.at(1, 16), by_fence);
    for (int r = 0; r < 3; ++r)
        for (int peer = 0; peer < 3; ++peer)
            if (peer != r) {
                EXPECT_EQ(ranks.fences(r, peer), 2u);
            }
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
}

// An access epoch opened after an exposure was closed (not complete) is deferred
// behind it, even though its own target granted long ago (no skipping).
TEST(ActiveTargetDeferred, AccessBehindAClosedExposureWaitsForIt) {
    Ranks ranks(3);
    Requests requests;
    const std::int64_t to2 = 5, to0 = 6;
    ASSERT_EQ(ranks.w(2).post({0}, 0), Status::ok);
    Request *waited2 = requests(iwait(ranks.w(2)));
    ASSERT_EQ(ranks.w(0).post({1}, 0), Status::ok);
    Request *waited0 = requests(iwait(ranks.w(0)));
    ASSERT_EQ(ranks.w(0).start({2}, 0), Status::ok);
    ASSERT_EQ(ranks.w(0).rma(put_call(2, 0, &to2), nullptr), Status::ok);
    Request *completed0 = requests(icomplete(ranks.w(0)));
    ranks.settle();
    EXPECT_EQ(ranks.grants(0, 2), 1u);
    EXPECT_EQ(ranks.at(2, 0), 0);
    EXPECT_FALSE(completed0->complete());
    EXPECT_FALSE(waited0->complete());
    EXPECT_FALSE(waited2->complete());
    EXPECT_EQ(ranks.w(0).epochs_pending(), 2u);

    ASSERT_EQ(ranks.w(1).start({0}, 0), Status::ok);
    ASSERT_EQ(ranks.w(1).rma(put_call(0, 0, &to0), nullptr), Status::ok);
    Request *completed1 = requests(icomplete(ranks.w(1)));
    CompletionOrder order;
    order.watch("wait@0", waited0);
    order.watch("complete@0", completed0);
    ranks.settle([&] { order.poll(); });
    EXPECT_EQ(order.str(), "wait@0 complete@0");
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_TRUE(completed1->complete());
    EXPECT_EQ(ranks.at(0, 0), to0);
    EXPECT_EQ(ranks.at(2, 0), to2);
}

// Epochs the application held open together activate beside each other: both ranks
// post, then start, then complete, then wait (serializing them would deadlock).
TEST(ActiveTargetDeferred, PostAndStartHeldOpenTogetherActivateBeside) {
    Ranks ranks(2);
    Requests requests;
    const std::int64_t values[2] = {71, 72};
    Request *completes[2], *waits[2];
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(ranks.w(r).post({1 - r}, 0), Status::ok);
        ASSERT_EQ(ranks.w(r).start({1 - r}, 0), Status::ok);
        ASSERT_EQ(ranks.w(r).rma(put_call(1 - r, 0, &values[r]), nullptr), Status::ok);
    }
    for (int r = 0; r < 2; ++r) {
        completes[r] = requests(icomplete(ranks.w(r)));
        waits[r] = requests(iwait(ranks.w(r)));
    }
    // Both exposures are active (two grants in flight) and so are both access epochs:
    // delivering the grants alone lets both puts run.
    ASSERT_EQ(ranks.world.in_flight(), 2u);
    EXPECT_GE(ranks.find_notice(0, ranks.layout.grant_count(1)), 0);
    EXPECT_GE(ranks.find_notice(1, ranks.layout.grant_count(0)), 0);
    ranks.world.deliver_all();
    ranks.spin(1);
    EXPECT_EQ(ranks.at(1, 0), values[0]);
    EXPECT_EQ(ranks.at(0, 0), values[1]);
    for (int r = 0; r < 2; ++r) EXPECT_FALSE(waits[r]->complete());  // done notices in flight
    ranks.settle();
    for (int r = 0; r < 2; ++r) {
        EXPECT_TRUE(completes[r]->complete());
        EXPECT_TRUE(waits[r]->complete());
    }
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 0), values[0]);
    EXPECT_EQ(ranks.at(0, 0), values[1]);
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(ranks.grants(r, 1 - r), 1u);
        EXPECT_EQ(ranks.dones(r, 1 - r), 1u);
        EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
    }

    // Start before post works the same way.
    const std::int64_t again[2] = {81, 82};
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(ranks.w(r).start({1 - r}, 0), Status::ok);
        ASSERT_EQ(ranks.w(r).post({1 - r}, 0), Status::ok);
        ASSERT_EQ(ranks.w(r).rma(put_call(1 - r, 8, &again[r]), nullptr), Status::ok);
        requests(icomplete(ranks.w(r)));
        requests(iwait(ranks.w(r)));
    }
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.at(1, 8), again[0]);
    EXPECT_EQ(ranks.at(0, 8), again[1]);
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(ranks.grants(r, 1 - r), 2u);
        EXPECT_EQ(ranks.dones(r, 1 - r), 2u);
    }
}

// ------------------------------------------------------------------ 6. fence

TEST(FenceBarrier, OneDelayedRankHoldsEveryFenceAndRecordedPut) {
    constexpr int n = 4;
    Ranks ranks(n);
    Requests requests;
    std::int64_t values[n];
    Request *first[n], *second[n], *last[n];
    auto fence_and_put = [&](int r) {
        values[r] = 900 + r;
        first[r] = requests(ifence(ranks.w(r), 0));
        ASSERT_EQ(ranks.w(r).rma(put_call((r + 1) % n, 8 * r, &values[r]), nullptr), Status::ok);
        second[r] = requests(ifence(ranks.w(r), 0));
    };
    for (int r = 0; r < 3; ++r) fence_and_put(r);
    ranks.settle();
    ranks.spin(100);
    for (int r = 0; r < 3; ++r) {
        EXPECT_FALSE(first[r]->complete()) << "rank " << r;
        EXPECT_FALSE(second[r]->complete()) << "rank " << r;
        EXPECT_EQ(ranks.w(r).epochs_pending(), 2u);
    }
    for (int r = 0; r < n; ++r) EXPECT_TRUE(ranks.window_clean(r)) << "a recorded put ran at rank " << r;
    // Every notice of the first fence arrived; rank 3 sent none.
    for (int r = 0; r < n; ++r)
        for (int peer = 0; peer < n; ++peer)
            if (peer != r) {
                EXPECT_EQ(ranks.fences(r, peer), peer == 3 ? 0u : 1u) << r << "<-" << peer;
            }

    fence_and_put(3);
    CompletionOrder order;
    for (int r = 0; r < n; ++r) {
        order.watch("first" + std::to_string(r), first[r]);
        order.watch("second" + std::to_string(r), second[r]);
    }
    std::string violation;
    ranks.settle([&] {
        order.poll();
        for (int r = 0; r < n; ++r) {
            // The second fence's barrier means every rank's put is done.
            if (second[r]->complete())
                for (int o = 0; o < n; ++o)
                    if (ranks.at((o + 1) % n, 8 * o) != values[o])
                        violation += "rank " + std::to_string(r) + "'s second fence passed before rank " +
                                     std::to_string(o) + "'s put; ";
            if (second[r]->complete() && !first[r]->complete()) violation += "fences out of order; ";
        }
    });
    EXPECT_TRUE(violation.empty()) << violation;
    for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(first[r]->complete());
        EXPECT_TRUE(second[r]->complete());
        EXPECT_EQ(ranks.at((r + 1) % n, 8 * r), values[r]);
    }
    // Close the last epoch; every counter counts three fences.
    for (int r = 0; r < n; ++r) last[r] = requests(ifence(ranks.w(r), MPI_MODE_NOSUCCEED));
    ranks.settle();
    EXPECT_TRUE(requests.all_complete_ok());
    for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(last[r]->complete());
        EXPECT_EQ(ranks.w(r).epochs_pending(), 0u);
        EXPECT_FALSE(ranks.w(r).has_open_epoch());
        for (int peer = 0; peer < n; ++peer)
            if (peer != r) {
                EXPECT_EQ(ranks.fences(r, peer), 3u);
            }
    }
}

// Four ranks, three fence epochs, every rank puts to every other in each, all
// nonblocking; random delivery orders. Fence k's request at a rank completes only
// when every rank's epoch k-1 puts have landed; a put of epoch k lands only after
// its origin passed fence k.
// Beyond 8 ranks the fence barrier is a dissemination barrier (ceil(log2 n) rounds of
// one notice): one late rank still holds every other rank's fence and recorded put, and
// each rank sends exactly one notice a round.
TEST(FenceBarrier, DisseminationOverTwelveRanksWaitsForTheLateOne) {
    constexpr int n = 12, late = 7;
    Ranks ranks(n);
    ASSERT_EQ(ranks.layout.fence_radix(), 2);
    ASSERT_EQ(ranks.layout.fence_rounds(), 4);
    Requests requests;
    std::int64_t values[n];
    Request *first[n], *second[n];
    auto fence_and_put = [&](int r) {
        values[r] = 700 + r;
        first[r] = requests(ifence(ranks.w(r), 0));
        ASSERT_EQ(ranks.w(r).rma(put_call((r + 5) % n, 8 * r, &values[r]), nullptr), Status::ok);
        second[r] = requests(ifence(ranks.w(r), MPI_MODE_NOSUCCEED));
    };
    ranks.world.reset_traffic();
    for (int r = 0; r < n; ++r)
        if (r != late) fence_and_put(r);
    ranks.settle();
    ranks.spin(100);
    for (int r = 0; r < n; ++r) {
        if (r == late) continue;
        EXPECT_FALSE(first[r]->complete()) << "rank " << r << "'s fence passed without rank " << late;
        EXPECT_TRUE(ranks.window_clean(r)) << "a recorded put ran at rank " << r;
    }
    fence_and_put(late);
    ranks.settle();
    for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(first[r]->complete() && second[r]->complete()) << "rank " << r;
        EXPECT_EQ(ranks.at((r + 5) % n, 8 * r), values[r]) << "rank " << r << "'s put";
        // Two barrier fences: one notice a round each, in the slot of each round.
        EXPECT_EQ(ranks.world.traffic(r).atomics, 2u * 4) << "rank " << r;
        for (int round = 0; round < 4; ++round)
            EXPECT_EQ(ranks.fences(r, ((r - (1 << round)) % n + n) % n), 2u)
                << "rank " << r << " round " << round;
    }
    EXPECT_TRUE(requests.all_complete_ok());
}

// With `ordered`, puts complete at the origin when posted and the transport's fence
// orders (Capabilities::fence_orders): on two ranks, epochs end by the next barrier's
// fenced notices instead of flushes.
void fence_epochs_under_random_orders(int n, bool ordered) {
    constexpr int epochs = 3;
    Program program(n);
    auto slot_of = [n](int origin, int epoch) {
        return static_cast<MPI_Aint>(8 * (n * epoch + origin));
    };
    auto value = [](int origin, int target, int epoch) -> std::int64_t {
        return 1000 * (epoch + 1) + 10 * origin + target;
    };
    for (int k = 0; k < epochs; ++k) {
        program.fence_all(k == 0 ? MPI_MODE_NOPRECEDE : 0, "f" + std::to_string(k));
        for (int o = 0; o < n; ++o)
            for (int t = 0; t < n; ++t)
                if (t != o) program.put(o, t, slot_of(o, k), value(o, t, k));
    }
    program.fence_all(MPI_MODE_NOSUCCEED, "f" + std::to_string(epochs));
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        ProgramRun run(program);
        Ranks &ranks = run.ranks();
        if (ordered) {
            ranks.hold_puts();
            ranks.world.set_fence_orders(true);
        }
        std::string violation;
        random_schedule(run, seed, [&] {
            if (!violation.empty()) return;
            for (int k = 0; k < epochs; ++k)
                for (int o = 0; o < n; ++o)
                    for (int t = 0; t < n; ++t) {
                        if (t == o) continue;
                        const bool landed = ranks.at(t, slot_of(o, k)) == value(o, t, k);
                        if (!landed && ranks.at(t, slot_of(o, k)) != 0) violation = "garbage in a slot";
                        if (landed && !run.complete("f" + std::to_string(k) + "." + std::to_string(o)))
                            violation = "epoch " + std::to_string(k) + " put of rank " + std::to_string(o) +
                                        " landed before its fence's barrier";
                        for (int r = 0; r < n; ++r)
                            // (an origin whose epoch ended by ordering passes once its calls
                            // are complete there: MPI's completion at the origin)
                            if (!landed && !(ordered && n == 2 && r == o) &&
                                run.complete("f" + std::to_string(k + 1) + "." + std::to_string(r)))
                                violation = "rank " + std::to_string(r) + " passed fence " + std::to_string(k + 1) +
                                            " before rank " + std::to_string(o) + "'s epoch-" + std::to_string(k) +
                                            " put to " + std::to_string(t);
                    }
        });
        ASSERT_TRUE(violation.empty()) << "seed " << seed << ": " << violation;
        ASSERT_TRUE(run.failure().empty()) << "seed " << seed << ": " << run.failure();
        ASSERT_TRUE(run.all_finished() && run.unfinished().empty()) << "seed " << seed << ": " << run.unfinished();
        ASSERT_TRUE(run.requests().all_complete_ok()) << "seed " << seed;
        for (int r = 0; r < n; ++r)
            for (int peer = 0; peer < n; ++peer) {
                if (peer == r) continue;
                ASSERT_EQ(ranks.fences(r, peer), static_cast<std::uint64_t>(epochs + 1)) << "seed " << seed;
                for (int k = 0; k < epochs; ++k)
                    ASSERT_EQ(ranks.at(r, slot_of(peer, k)), value(peer, r, k)) << "seed " << seed;
            }
    }
}

TEST(FenceBarrier, EpochsUnderRandomDeliveryOrders) { fence_epochs_under_random_orders(4, false); }

TEST(FenceBarrier, EpochsEndedByOrderedNoticesUnderRandomDeliveryOrders) {
    fence_epochs_under_random_orders(2, true);
    fence_epochs_under_random_orders(4, true);
}

TEST(FenceBarrier, AssertsNoPrecedeNoSucceed) {
    Ranks ranks(2);
    Requests requests;
    const std::int64_t value = 3;
    // NOPRECEDE|NOSUCCEED together: no epoch before or after, no barrier at all.
    Request *alone = requests(ifence(ranks.w(0), MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED));
    EXPECT_TRUE(alone->complete());
    EXPECT_EQ(ranks.world.in_flight(), 0u);
    EXPECT_EQ(ranks.w(0).epochs_pending(), 0u);
    EXPECT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::err_sync);

    // NOPRECEDE alone still opens an epoch behind a barrier.
    Request *open0 = requests(ifence(ranks.w(0), MPI_MODE_NOPRECEDE));
    EXPECT_FALSE(open0->complete());
    ranks.settle();
    EXPECT_FALSE(open0->complete());  // rank 1 has not fenced
    Request *open1 = requests(ifence(ranks.w(1), MPI_MODE_NOPRECEDE));
    ranks.settle();
    EXPECT_TRUE(open0->complete());
    EXPECT_TRUE(open1->complete());
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::ok);
    EXPECT_EQ(ranks.at(1, 0), value);  // barrier passed: the put ran at once

    // NOSUCCEED: the fence's own epoch is closed at once; PSCW may follow right away
    // (even before the barrier passed) and RMA calls outside it are erroneous.
    Request *close0 = requests(ifence(ranks.w(0), MPI_MODE_NOSUCCEED));
    EXPECT_FALSE(ranks.w(0).has_open_epoch());
    EXPECT_EQ(ranks.w(0).rma(put_call(1, 8, &value), nullptr), Status::err_sync);
    ASSERT_EQ(ranks.w(0).start({1}, 0), Status::ok);
    ASSERT_EQ(ranks.w(0).rma(put_call(1, 8, &value), nullptr), Status::ok);
    Request *completed = requests(icomplete(ranks.w(0)));
    ranks.settle();
    EXPECT_FALSE(close0->complete());
    EXPECT_FALSE(completed->complete());
    EXPECT_EQ(ranks.at(1, 8), 0);
    Request *close1 = requests(ifence(ranks.w(1), MPI_MODE_NOSUCCEED));
    ASSERT_EQ(ranks.w(1).post({0}, 0), Status::ok);
    Request *waited = requests(iwait(ranks.w(1)));
    ranks.settle();
    EXPECT_TRUE(close0->complete());
    EXPECT_TRUE(close1->complete());
    EXPECT_TRUE(completed->complete());
    EXPECT_TRUE(waited->complete());
    EXPECT_EQ(ranks.at(1, 8), value);
    EXPECT_TRUE(requests.all_complete_ok());
    EXPECT_EQ(ranks.fences(0, 1), 2u);
    EXPECT_EQ(ranks.fences(1, 0), 2u);
}

// ------------------------------------------------------------------ 7. DFS

// Exhaustive exploration of delivery orders (in the style of test_lock_protocol.cpp).
// Two step granularities (Explorer::Steps): "coarse" delivers one operation and then
// lets every rank issue calls and progress until nothing moves; "fine" also
// interleaves single ranks' progress with deliveries, so several notices may land
// before a rank looks. Each state is rebuilt by replaying its path (the sim is
// deterministic) and identified by a 128-bit hash of what the engines can observe
// and what determines their future (program counters, request completions, queued
// epochs, control and window memories, get results, pending completions, in-flight
// operations); a state reached twice is expanded once, and complete schedules are
// counted over the state graph. Engine-internal state is not hashed directly: it is
// a function of what the rank observed, which the hash covers. A per-program
// invariant is checked in every state; every terminal state must equal the FIFO
// (sequential) run's memories and get results, with all requests complete and
// nothing pending (no deadlock).

using unittest::Hash128;
using unittest::Hash128Hasher;
using unittest::Hasher;


// What a terminal state must equal.
struct Outcome {
    std::vector<std::vector<std::uint8_t>> memories;
    std::vector<std::int64_t> results;
    bool operator==(const Outcome &o) const { return memories == o.memories && results == o.results; }
};

class Explorer {
  public:
    static constexpr std::size_t window_bytes = 64;

    // Granularity of a step.
    //  coarse: deliver one operation, then every rank issues and progresses until
    //          nothing moves.
    //  fine:   either deliver one operation (nobody looks yet) or let one rank issue
    //          and progress until it alone cannot move; a rank is offered only when
    //          something it can observe changed since it last ran (a delivery into
    //          its control region, a completion of its own), otherwise its progress
    //          would be a no-op. Several notices may thus arrive before a rank looks.
    enum class Steps { coarse, fine };
    // `invariant` runs in every state and returns a violation or "".
    using Invariant = std::function<std::string(ProgramRun &)>;
    Explorer(Program &program, Steps steps, std::uint64_t state_bound, Invariant invariant)
        : program_(program), steps_(steps), state_bound_(state_bound), invariant_(std::move(invariant)) {}

    struct Result {
        std::uint64_t states = 0, terminal = 0, replayed = 0;
        long double schedules = 0;
        std::size_t max_depth = 0;
        bool bound_hit = false;
        std::string failure;
    };

    Result explore() {
        ProgramRun reference(program_, window_bytes);
        reference.run_fifo();
        if (!reference.failure().empty() || !reference.unfinished().empty()) {
            result_.failure = "the FIFO run itself fails: " + reference.failure() + reference.unfinished();
            return result_;
        }
        expected_ = outcome(reference);
        std::vector<Choice> path;
        result_.schedules = dfs(path);
        result_.states = memo_.size();
        return result_;
    }

  private:
    struct Choice {
        bool deliver;  // true: deliver in-flight op `index`; false: run rank `index`
        std::size_t index;
    };

    // One run being replayed, with the fine mode's "something to observe" flags.
    struct State {
        std::unique_ptr<ProgramRun> run;
        std::vector<char> dirty;
    };

    Outcome outcome(ProgramRun &run) const {
        Outcome o;
        for (int r = 0; r < program_.nranks(); ++r) {
            const std::uint8_t *memory = run.world().memory(r, Region::window);
            o.memories.emplace_back(memory, memory + window_bytes);
        }
        o.results.assign(program_.results().begin(), program_.results().end());
        return o;
    }

    // Rank r issues and progresses until it alone cannot move.
    void run_rank(State &state, int r) {
        ProgramRun &run = *state.run;
        Ranks &ranks = run.ranks();
        // Its inline transfers may have forced a delivery of one of its notices.
        const std::uint64_t forced = ranks.transports[r]->forced();
        for (int round = 0; round < 10000; ++round) {
            bool moved = run.advance(r);
            moved |= ranks.w(r).progress();
            if (!moved) break;
        }
        state.dirty[r] = 0;
        const bool delivered = ranks.transports[r]->forced() != forced;
        for (int s = 0; s < program_.nranks(); ++s)
            if (ranks.world.sim_endpoint(s).pending_completions() > 0 || (s != r && delivered))
                state.dirty[s] = 1;
    }

    void apply(State &state, const Choice &c) {
        ProgramRun &run = *state.run;
        if (steps_ == Steps::coarse) {
            run.world().deliver(c.index);
            run.quiesce();
            return;
        }
        if (!c.deliver) {
            run_rank(state, static_cast<int>(c.index));
            return;
        }
        const SimWorld::Op &op = run.world().op(c.index);
        const int origin = op.origin, target = op.target;
        const bool control = op.region == Region::control;
        run.world().deliver(c.index);
        state.dirty[origin] = 1;  // a completion to poll
        if (control) state.dirty[target] = 1;
    }

    State replay(const std::vector<Choice> &path) {
        State state{std::make_unique<ProgramRun>(program_, window_bytes),
                    std::vector<char>(program_.nranks(), 1)};
        if (steps_ == Steps::coarse) state.run->quiesce();
        for (const Choice &c : path) {
            apply(state, c);
            ++result_.replayed;
        }
        return state;
    }

    std::vector<Choice> enabled(const State &state) const {
        std::vector<Choice> out;
        if (steps_ == Steps::fine)
            for (int r = 0; r < program_.nranks(); ++r)
                if (state.dirty[r]) out.push_back({false, static_cast<std::size_t>(r)});
        for (std::size_t i : state.run->world().deliverable_indices()) out.push_back({true, i});
        return out;
    }

    Hash128 hash(const State &state) const {
        ProgramRun &run = *state.run;
        Hasher h;
        Ranks &ranks = run.ranks();
        for (int r = 0; r < program_.nranks(); ++r) {
            h.word(run.pc(r));
            h.word(state.dirty[r]);
            h.word(ranks.w(r).epochs_pending());
            h.word(ranks.w(r).has_open_epoch());
            h.word(ranks.world.sim_endpoint(r).pending_completions());
            h.bytes(ranks.world.memory(r, Region::control), ranks.layout.size());
            h.bytes(ranks.world.memory(r, Region::window), window_bytes);
        }
        for (Request *request : run.requests().all)
            h.word(request->complete() | static_cast<std::uint64_t>(static_cast<int>(request->status()) + 64) << 1);
        for (std::int64_t result : program_.results()) h.word(static_cast<std::uint64_t>(result));
        h.word(ranks.world.in_flight());
        for (std::size_t i = 0; i < ranks.world.in_flight(); ++i) {
            const SimWorld::Op &op = ranks.world.op(i);
            h.word(static_cast<std::uint64_t>(op.kind) | std::uint64_t(op.origin) << 8 |
                   std::uint64_t(op.target) << 24 | std::uint64_t(op.region) << 40 |
                   std::uint64_t(op.atomic_op) << 48);
            h.word(op.offset);
            h.word(op.length);
            h.bytes(op.data.data(), op.data.size());
            h.word(op.operand);
            h.word(op.compare);
            h.word(op.fence_epoch);
        }
        return h.result();
    }

    std::string trace(const std::vector<Choice> &path) {
        State state{std::make_unique<ProgramRun>(program_, window_bytes),
                    std::vector<char>(program_.nranks(), 1)};
        if (steps_ == Steps::coarse) state.run->quiesce();
        std::ostringstream s;
        s << "schedule (" << path.size() << " steps):\n";
        for (const Choice &c : path) {
            if (c.deliver)
                s << "  deliver " << state.run->world().describe(c.index) << "\n";
            else
                s << "  rank " << c.index << " runs\n";
            apply(state, c);
        }
        s << "state: " << state.run->failure() << state.run->unfinished() << "\n";
        return s.str();
    }

    long double dfs(std::vector<Choice> &path) {
        if (!result_.failure.empty()) return 0;
        State state = replay(path);
        ProgramRun &run = *state.run;
        if (!run.failure().empty()) {
            result_.failure = run.failure() + "\n" + trace(path);
            return 0;
        }
        if (const std::string violation = invariant_(run); !violation.empty()) {
            result_.failure = violation + "\n" + trace(path);
            return 0;
        }
        const Hash128 h = hash(state);
        if (auto found = memo_.find(h); found != memo_.end()) return found->second;
        if (on_stack_.count(h)) {
            result_.failure = "a schedule returns to an earlier state\n" + trace(path);
            return 0;
        }
        result_.max_depth = std::max(result_.max_depth, path.size());
        const std::vector<Choice> choices = enabled(state);
        if (choices.empty()) {
            std::string problem;
            if (!run.all_finished() || !run.unfinished().empty())
                problem = "deadlock: " + run.unfinished();
            else if (!run.requests().all_complete_ok())
                problem = "a request failed";
            else if (!(outcome(run) == expected_))
                problem = "final memory or get results differ from the FIFO run";
            if (!problem.empty()) {
                result_.failure = problem + "\n" + trace(path);
                return 0;
            }
            ++result_.terminal;
            memo_.emplace(h, 1);
            return 1;
        }
        if (memo_.size() >= state_bound_) {
            result_.bound_hit = true;
            return 0;
        }
        state.run.reset();
        on_stack_.insert(h);
        long double total = 0;
        for (const Choice &choice : choices) {
            path.push_back(choice);
            total += dfs(path);
            path.pop_back();
            if (!result_.failure.empty()) break;
        }
        on_stack_.erase(h);
        memo_.emplace(h, total);
        return total;
    }

    Program &program_;
    Steps steps_;
    std::uint64_t state_bound_;
    Invariant invariant_;
    Outcome expected_;
    std::unordered_map<Hash128, long double, Hash128Hasher> memo_;
    std::unordered_set<Hash128, Hash128Hasher> on_stack_;
    Result result_;
};

// Both granularities over one program.
void exhaustive(const char *name, Program &program, std::uint64_t state_bound,
                const Explorer::Invariant &invariant) {
    for (Explorer::Steps steps : {Explorer::Steps::coarse, Explorer::Steps::fine}) {
        const char *mode = steps == Explorer::Steps::coarse ? "coarse" : "fine";
        Explorer explorer(program, steps, state_bound, invariant);
        const Explorer::Result r = explorer.explore();
        std::printf("[ active DFS ] %s (%s steps): %" PRIu64 " distinct states, %" PRIu64
                    " terminal, %.6Lg complete schedules, %" PRIu64 " replayed steps, max depth %zu%s\n",
                    name, mode, r.states, r.terminal, r.schedules, r.replayed, r.max_depth,
                    r.bound_hit ? " (BOUND HIT: not exhaustive)" : " (exhaustive)");
        EXPECT_TRUE(r.failure.empty()) << mode << " steps: " << r.failure;
        EXPECT_FALSE(r.bound_hit) << mode << " steps: state bound " << state_bound << " hit";
        EXPECT_GT(r.schedules, 1) << mode << " steps: nothing to explore";
    }
}

// Fence epoch (rank 0 puts to 1, rank 1 puts to 2), PSCW (rank 0 accesses {1,2}, rank
// 1 exposes to {0} and accesses {2}, rank 2 exposes to {0,1}), fence epoch (gets of
// the PSCW data, a put). Blocking calls as in a plain MPI program.
void fence_pscw_fence(Program &p) {
    p.fence_all(0, "f1", true);
    p.put(0, 1, 0, 11);
    p.put(1, 2, 0, 12);
    p.fence_all(MPI_MODE_NOSUCCEED, "f2", true);

    p.start(0, {1, 2});
    p.put(0, 1, 8, 21);
    p.put(0, 2, 8, 22);
    p.complete(0, "c0", true);
    p.post(1, {0});
    p.start(1, {2});
    p.put(1, 2, 16, 23);
    p.complete(1, "c1", true);
    p.wait(1, "w1", true);
    p.post(2, {0, 1});
    p.wait(2, "w2", true);

    p.fence_all(MPI_MODE_NOPRECEDE, "f3", true);
    p.get(0, 1, 0, 0);   // 11, from the first fence epoch
    p.get(1, 2, 8, 1);   // 22, from rank 0's access epoch
    p.get(2, 1, 8, 2);   // 21
    p.put(2, 0, 24, 31);
    p.fence_all(MPI_MODE_NOSUCCEED, "f4", true);
}

TEST(ActiveTargetDfs, FencePscwFenceThreeRanks) {
    Program program(3);
    fence_pscw_fence(program);
    // Safety in every state: data lands only in the epoch it belongs to, and a
    // completed request implies its data.
    auto invariant = [](ProgramRun &run) -> std::string {
        Ranks &ranks = run.ranks();
        std::string v;
        // A fence epoch's put runs once its origin passed the fence's barrier.
        if (ranks.at(1, 0) != 0 && !run.complete("f1.0")) v += "rank 0's put before its barrier; ";
        if (ranks.at(2, 0) != 0 && !run.complete("f1.1")) v += "rank 1's put before its barrier; ";
        if (ranks.at(0, 24) != 0 && !run.complete("f3.2")) v += "rank 2's put before its barrier; ";
        for (int r = 0; r < 3; ++r)
            if (run.complete("f2." + std::to_string(r)) && (ranks.at(1, 0) != 11 || ranks.at(2, 0) != 12))
                v += "rank " + std::to_string(r) + " passed the second fence before the first epoch's puts; ";
        // PSCW data reaches a target only inside its exposure (after it posted).
        if (ranks.at(1, 8) != 0 && !run.complete("f2.1")) v += "rank 0's put reached rank 1 before it posted; ";
        if ((ranks.at(2, 8) != 0 || ranks.at(2, 16) != 0) && !run.complete("f2.2"))
            v += "a put reached rank 2 before it posted; ";
        if (run.complete("c0") && (ranks.at(1, 8) != 21 || ranks.at(2, 8) != 22)) v += "c0 without data; ";
        if (run.complete("c1") && ranks.at(2, 16) != 23) v += "c1 without data; ";
        if (run.complete("w1") && ranks.at(1, 8) != 21) v += "w1 before rank 0's put; ";
        if (run.complete("w2") && (ranks.at(2, 8) != 22 || ranks.at(2, 16) != 23)) v += "w2 before both puts; ";
        if (ranks.at(0, 24) != 0 && !run.complete("w2")) v += "third-epoch put before rank 2's exposure ended; ";
        for (int r = 0; r < 3; ++r)
            if (run.complete("f3." + std::to_string(r)) && !(run.complete("c0") && run.complete("w1") && run.complete("w2")))
                v += "rank " + std::to_string(r) + " passed the third fence before PSCW ended; ";
        return v;
    };
    exhaustive("3 ranks: fence epoch, PSCW, fence epoch (blocking calls)", program, 3'000'000, invariant);
    // The reference outcome itself.
    ProgramRun run(program, Explorer::window_bytes);
    run.run_fifo();
    EXPECT_EQ(run.ranks().at(1, 0), 11);
    EXPECT_EQ(run.ranks().at(2, 0), 12);
    EXPECT_EQ(run.ranks().at(1, 8), 21);
    EXPECT_EQ(run.ranks().at(2, 8), 22);
    EXPECT_EQ(run.ranks().at(2, 16), 23);
    EXPECT_EQ(run.ranks().at(0, 24), 31);
    EXPECT_EQ(program.results()[0], 11);
    EXPECT_EQ(program.results()[1], 22);
    EXPECT_EQ(program.results()[2], 21);
}

// The same shape issued all at once with nonblocking calls: the deferred-epoch queue
// holds everything and replays it.
TEST(ActiveTargetDfs, PscwRoundsNonblockingThreeRanks) {
    Program program(3);
    for (int k = 0; k < 2; ++k) {
        const std::string round = std::to_string(k);
        program.start(0, {1, 2});
        program.put(0, 1, 8 * k, 10 + k);
        program.put(0, 2, 8 * k, 20 + k);
        program.put(0, 2, 48, 20 + k);
        program.complete(0, "c0." + round);
        program.post(1, {0});
        program.start(1, {2});
        program.put(1, 2, 16 + 8 * k, 30 + k);
        program.complete(1, "c1." + round);
        program.wait(1, "w1." + round);
        program.post(2, {0, 1});
        program.wait(2, "w2." + round);
    }
    auto invariant = [](ProgramRun &run) -> std::string {
        Ranks &ranks = run.ranks();
        std::string v;
        for (int k = 0; k < 2; ++k) {
            const std::string round = std::to_string(k);
            if (run.complete("c0." + round) && (ranks.at(1, 8 * k) != 10 + k || ranks.at(2, 8 * k) != 20 + k))
                v += "c0." + round + " without data; ";
            if (run.complete("c1." + round) && ranks.at(2, 16 + 8 * k) != 30 + k) v += "c1." + round + " without data; ";
            if (run.complete("w1." + round) && ranks.at(1, 8 * k) != 10 + k) v += "w1." + round + " early; ";
            if (run.complete("w2." + round) && (ranks.at(2, 8 * k) != 20 + k || ranks.at(2, 16 + 8 * k) != 30 + k))
                v += "w2." + round + " early; ";
        }
        // Round 1's data lands only in the targets' second exposures.
        if (ranks.at(1, 8) != 0 && !run.complete("w1.0")) v += "round 1 reached rank 1 in exposure 0; ";
        if ((ranks.at(2, 8) != 0 || ranks.at(2, 24) != 0) && !run.complete("w2.0"))
            v += "round 1 reached rank 2 in exposure 0; ";
        if (ranks.at(2, 48) == 20 && run.complete("w2.1")) v += "the last slot holds round 0's value; ";
        return v;
    };
    exhaustive("3 ranks x 2 PSCW rounds, nonblocking", program, 3'000'000, invariant);
}

// Fence, PSCW and fence epochs again, now all nonblocking and issued at once (the
// deferred-epoch queue holds everything); every rank puts in the first fence epoch
// and gets in the last.
TEST(ActiveTargetDfs, FencePscwFenceNonblockingThreeRanks) {
    Program p(3);
    p.fence_all(0, "f1");
    p.put(0, 1, 0, 11);
    p.put(1, 2, 0, 12);
    p.put(2, 0, 0, 13);
    p.fence_all(MPI_MODE_NOSUCCEED, "f2");
    p.start(0, {1, 2});
    p.put(0, 1, 8, 21);
    p.put(0, 2, 8, 22);
    p.complete(0, "c0");
    p.post(1, {0});
    p.start(1, {2});
    p.put(1, 2, 16, 23);
    p.complete(1, "c1");
    p.wait(1, "w1");
    p.post(2, {0, 1});
    p.wait(2, "w2");
    p.fence_all(MPI_MODE_NOPRECEDE, "f3");
    p.get(0, 1, 8, 0);   // 21
    p.get(1, 2, 16, 1);  // 23
    p.get(2, 0, 0, 2);   // 13
    p.fence_all(MPI_MODE_NOSUCCEED, "f4");
    auto invariant = [](ProgramRun &run) -> std::string {
        Ranks &ranks = run.ranks();
        std::string v;
        const std::int64_t expected[3] = {21, 23, 13};
        for (int i = 0; i < 3; ++i)
            if (run.complete("f4." + std::to_string(i)) && run.results_value(i) != expected[i])
                v += "rank " + std::to_string(i) + "'s get is wrong after its last fence; ";
        for (int r = 0; r < 3; ++r) {
            const std::string rank = std::to_string(r);
            if (run.complete("f2." + rank) && (ranks.at(0, 0) != 13 || ranks.at(1, 0) != 11 || ranks.at(2, 0) != 12))
                v += "rank " + rank + " passed the second fence before the first epoch's puts; ";
            if (run.complete("f3." + rank) && !(run.complete("c0") && run.complete("c1")))
                v += "rank " + rank + " passed the third fence before the access epochs ended; ";
        }
        if (ranks.at(1, 8) != 0 && !run.complete("f2.1")) v += "a PSCW put reached rank 1 before its exposure; ";
        if ((ranks.at(2, 8) != 0 || ranks.at(2, 16) != 0) && !run.complete("f2.2"))
            v += "a PSCW put reached rank 2 before its exposure; ";
        if (run.complete("w2") && (ranks.at(2, 8) != 22 || ranks.at(2, 16) != 23)) v += "w2 before both puts; ";
        if (run.complete("w1") && ranks.at(1, 8) != 21) v += "w1 before rank 0's put; ";
        return v;
    };
    exhaustive("3 ranks: fence, PSCW, fence epochs, all nonblocking", p, 3'000'000, invariant);
}

// ------------------------------------------------------------------ 8. MPI_Win_test

TEST(PscwWinTest, FalseUntilTheDoneArrivesThenClosesTheExposure) {
    Ranks ranks(2);
    Requests requests;
    Window &origin = ranks.w(0), &target = ranks.w(1);
    bool flag = true;
    EXPECT_EQ(target.test(&flag), Status::err_sync);  // no exposure epoch
    ASSERT_EQ(target.post({0}, 0), Status::ok);
    ASSERT_EQ(target.test(&flag), Status::ok);
    EXPECT_FALSE(flag);  // grant still in flight

    const std::int64_t value = 9;
    ASSERT_EQ(origin.start({1}, 0), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 0, &value), nullptr), Status::ok);
    Request *completed = requests(icomplete(origin));
    // Deliver the grant only: the origin puts and sends its done notice.
    const long grant = ranks.find_notice(0, ranks.layout.grant_count(1));
    ASSERT_GE(grant, 0);
    ranks.world.deliver(static_cast<std::size_t>(grant));
    origin.progress();
    EXPECT_EQ(ranks.at(1, 0), value);
    const long done = ranks.find_notice(1, ranks.layout.done_count(0));
    ASSERT_GE(done, 0);
    ASSERT_EQ(target.test(&flag), Status::ok);
    EXPECT_FALSE(flag);  // the data is there, the done notice is not
    ASSERT_EQ(target.test(&flag), Status::ok);
    EXPECT_FALSE(flag);
    EXPECT_TRUE(target.has_open_epoch());

    ranks.world.deliver(static_cast<std::size_t>(ranks.find_notice(1, ranks.layout.done_count(0))));
    ASSERT_EQ(target.test(&flag), Status::ok);
    EXPECT_TRUE(flag);
    // test closed (and completed) the exposure epoch.
    EXPECT_FALSE(target.has_open_epoch());
    EXPECT_EQ(target.epochs_pending(), 0u);
    Request *again = nullptr;
    EXPECT_EQ(target.wait(&again), Status::err_sync);
    EXPECT_EQ(again, nullptr);
    EXPECT_EQ(target.test(&flag), Status::err_sync);
    ranks.settle();
    EXPECT_TRUE(completed->complete());
    EXPECT_EQ(ranks.dones(1, 0), 1u);
    // The next exposure matches the next access epoch.
    ASSERT_EQ(target.post({0}, 0), Status::ok);
    const std::int64_t next = 10;
    ASSERT_EQ(origin.start({1}, 0), Status::ok);
    ASSERT_EQ(origin.rma(put_call(1, 0, &next), nullptr), Status::ok);
    requests(icomplete(origin));
    ranks.settle();
    ASSERT_EQ(target.test(&flag), Status::ok);
    EXPECT_TRUE(flag);
    EXPECT_EQ(ranks.at(1, 0), next);
    EXPECT_TRUE(requests.all_complete_ok());
}

// ------------------------------------------------------------------ 9. errors

TEST(ActiveTargetErrors, StatusesAtTheEngine) {
    Ranks ranks(3);
    Requests requests;
    Window &w = ranks.w(0);
    Request *request = nullptr;
    bool flag = false;
    const std::int64_t value = 1;

    EXPECT_EQ(w.complete(&request), Status::err_sync);  // no start
    EXPECT_EQ(w.wait(&request), Status::err_sync);      // no post
    EXPECT_EQ(w.test(&flag), Status::err_sync);
    EXPECT_EQ(request, nullptr);

    // Group ranks out of range; bad assert bits.
    EXPECT_EQ(w.start({3}, 0), Status::err_rank);
    EXPECT_EQ(w.start({-1}, 0), Status::err_rank);
    EXPECT_EQ(w.post({1, 3}, 0), Status::err_rank);
    EXPECT_EQ(w.start({1}, MPI_MODE_NOPUT), Status::err_assert);
    EXPECT_EQ(w.start({1}, MPI_MODE_NOSUCCEED), Status::err_assert);
    EXPECT_EQ(w.post({1}, MPI_MODE_NOPRECEDE), Status::err_assert);
    EXPECT_EQ(w.fence(MPI_MODE_NOCHECK, &request), Status::err_assert);
    EXPECT_EQ(request, nullptr);
    EXPECT_FALSE(w.has_open_epoch());  // nothing was opened by the failed calls
    EXPECT_EQ(w.epochs_pending(), 0u);

    // start twice; RMA outside the start group; R-calls in an access epoch; fence inside.
    ASSERT_EQ(w.start({1}, 0), Status::ok);
    EXPECT_EQ(w.start({1}, 0), Status::err_sync);
    EXPECT_EQ(w.start({2}, 0), Status::err_sync);
    EXPECT_EQ(w.rma(put_call(2, 0, &value), nullptr), Status::err_rank);
    EXPECT_EQ(w.rma(put_call(0, 0, &value), nullptr), Status::err_rank);
    EXPECT_EQ(w.rma(put_call(3, 0, &value), nullptr), Status::err_rank);
    Request *rcall = nullptr;
    EXPECT_EQ(w.rma(put_call(1, 0, &value), &rcall), Status::err_sync);
    EXPECT_EQ(rcall, nullptr);
    EXPECT_EQ(w.fence(0, &request), Status::err_sync);
    EXPECT_EQ(w.lock(MPI_LOCK_SHARED, 1, 0), Status::err_sync);
    EXPECT_EQ(w.lock_all(0), Status::err_sync);
    Request *flushed = nullptr;
    EXPECT_EQ(w.flush(1, &flushed), Status::err_sync);
    ASSERT_EQ(w.post({1}, 0), Status::ok);  // post beside start is fine
    EXPECT_EQ(w.post({1}, 0), Status::err_sync);  // post twice
    requests(icomplete(w));
    requests(iwait(w));
    EXPECT_EQ(w.complete(&request), Status::err_sync);  // already completed
    EXPECT_FALSE(w.has_open_epoch());

    // Fence inside a lock epoch; post while holding a lock on ourselves.
    ASSERT_EQ(w.lock(MPI_LOCK_EXCLUSIVE, 0, 0), Status::ok);
    EXPECT_EQ(w.fence(0, &request), Status::err_sync);
    EXPECT_EQ(w.post({1}, 0), Status::err_conflict);
    EXPECT_EQ(w.start({1}, 0), Status::err_sync);
    Request *unlocked = nullptr;
    ASSERT_EQ(w.unlock(0, &unlocked), Status::ok);
    requests(unlocked);
    ASSERT_EQ(w.lock_all(0), Status::ok);
    EXPECT_EQ(w.post({1}, 0), Status::err_conflict);
    EXPECT_EQ(w.fence(0, &request), Status::err_sync);
    ASSERT_EQ(w.unlock_all(&unlocked), Status::ok);
    requests(unlocked);
    // ... and the converse: lock ourselves while exposed.
    ASSERT_EQ(w.post({2}, 0), Status::ok);
    EXPECT_EQ(w.lock(MPI_LOCK_SHARED, 0, 0), Status::err_conflict);
    EXPECT_EQ(w.lock_all(0), Status::err_conflict);
    EXPECT_EQ(w.fence(0, &request), Status::err_sync);
    requests(iwait(w));
    EXPECT_EQ(request, nullptr);

    // R-calls inside a fence epoch; a fence epoch with calls cannot end at start/post.
    requests(ifence(w, 0));
    EXPECT_EQ(w.rma(put_call(1, 0, &value), &rcall), Status::err_sync);
    EXPECT_EQ(rcall, nullptr);
    ASSERT_EQ(w.rma(put_call(1, 0, &value), nullptr), Status::ok);
    EXPECT_EQ(w.start({1}, 0), Status::err_sync);
    EXPECT_EQ(w.post({1}, 0), Status::err_sync);
    requests(ifence(w, MPI_MODE_NOSUCCEED));

    // The other ranks join: everything that was opened completes.
    ASSERT_EQ(ranks.w(1).start({0}, 0), Status::ok);
    requests(icomplete(ranks.w(1)));
    ASSERT_EQ(ranks.w(1).post({0}, 0), Status::ok);
    requests(iwait(ranks.w(1)));
    ASSERT_EQ(ranks.w(2).start({0}, 0), Status::ok);
    requests(icomplete(ranks.w(2)));
    for (int r : {1, 2}) {
        requests(ifence(ranks.w(r), 0));
        requests(ifence(ranks.w(r), MPI_MODE_NOSUCCEED));
    }
    ranks.settle();
    EXPECT_EQ(ranks.at(1, 0), value);  // the fence epoch's put
    EXPECT_TRUE(requests.all_complete_ok());
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.w(r).epochs_pending(), 0u) << "rank " << r;
}

// Empty groups (MPI_GROUP_EMPTY) open epochs that complete on their own.
TEST(ActiveTargetErrors, EmptyGroupsCompleteAlone) {
    Ranks ranks(2);
    Requests requests;
    ASSERT_EQ(ranks.w(0).start({}, 0), Status::ok);
    const std::int64_t value = 1;
    EXPECT_EQ(ranks.w(0).rma(put_call(1, 0, &value), nullptr), Status::err_rank);
    Request *completed = requests(icomplete(ranks.w(0)));
    ASSERT_EQ(ranks.w(0).post({}, 0), Status::ok);
    Request *waited = requests(iwait(ranks.w(0)));
    ranks.w(0).progress();
    EXPECT_TRUE(completed->complete());
    EXPECT_TRUE(waited->complete());
    EXPECT_EQ(ranks.world.in_flight(), 0u);
    EXPECT_EQ(ranks.w(0).epochs_pending(), 0u);
}

}  // namespace
}  // namespace nbrma::engine
