// The UCX transport in isolation (doc/design.md §2): two workers in one process, each a
// UcxTransport of a 2-rank "window", talking over TCP loopback (UCX_TLS forced to
// tcp,self through the context configuration). Covers what is UCX's own: fetch-adds
// from both ranks at once, the mixed transport (shm for node-local peers), dynamic
// regions (stale rkeys after detach and re-attach, accesses split over regions attached
// back to back), and the worker (unreachable peer, rkeys). Put/get, atomics, fence,
// flush and the error paths are checked for every transport in
// test_transport_conformance.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "transport/ucx/mixed_transport.hpp"
#include "transport/ucx/ucx_transport.hpp"
#include "ucx_worker_server.hpp"

namespace nbrma::transport::ucx {
namespace {

constexpr std::size_t control_bytes = 4096;
constexpr std::size_t window_bytes = 8192;

class Counter final : public Completion {
  public:
    void on_complete(Status status) override {
        ++completed;
        if (is_error(status)) failure = status;
    }
    int posted = 0;
    int completed = 0;
    Status failure = Status::ok;
    void track(Status status) {
        ASSERT_FALSE(is_error(status)) << status_string(status);
        if (status == Status::in_progress) ++posted;
    }
};

struct Rank {
    std::unique_ptr<UcxWorker> worker;
    alignas(64) std::array<std::uint8_t, control_bytes> control{};
    alignas(64) std::array<std::uint8_t, window_bytes> window{};
    std::unique_ptr<UcxTransport> transport;
};

class UcxTransportTest : public ::testing::Test {
  protected:
    void SetUp() override { build(false); }
    void TearDown() override {  // nothing left in flight when the workers go
        serve(false);
        Counter counter;
        for (int r = 0; r < 2; ++r)
            for (int peer = 0; peer < 2 && ranks_[r]->transport; ++peer)
                counter.track(transport(r).flush(peer, &counter));
        wait(counter);
    }

    void build(bool dynamic) {
        for (int r = 0; r < 2; ++r) {
            ranks_[r] = std::make_unique<Rank>();
            ASSERT_EQ(UcxWorker::create("tcp,self", &ranks_[r]->worker), Status::ok);
            ranks_[r]->transport = std::make_unique<UcxTransport>(
                *ranks_[r]->worker, r, 2, ranks_[r]->control.data(), control_bytes);
            Status status = dynamic ? ranks_[r]->transport->expose_dynamic()
                                    : ranks_[r]->transport->expose_window(ranks_[r]->window.data(),
                                                                          window_bytes);
            ASSERT_EQ(status, Status::ok);
        }
        std::vector<std::uint8_t> records[2] = {ranks_[0]->transport->exposure(),
                                                ranks_[1]->transport->exposure()};
        for (int r = 0; r < 2; ++r)
            for (int peer = 0; peer < 2; ++peer)
                ASSERT_EQ(transport(r).connect(peer, records[peer].data(), records[peer].size()),
                          Status::ok);
        for (int r = 0; r < 2; ++r) ASSERT_EQ(transport(r).finish_connect_start(), Status::ok);
        bool done[2] = {false, false};
        for (int spin = 0; spin < 10000000 && !(done[0] && done[1]); ++spin)
            for (int r = 0; r < 2; ++r)
                ASSERT_EQ(transport(r).finish_connect_test(&done[r]), Status::ok);
        ASSERT_TRUE(done[0] && done[1]);
    }

    UcxTransport &transport(int rank) { return *ranks_[rank]->transport; }
    std::uint64_t *control_word(int rank, std::size_t offset) {
        return reinterpret_cast<std::uint64_t *>(ranks_[rank]->control.data() + offset);
    }

    // Polls both ranks (the target's worker runs emulated RMA over tcp) until done;
    // only rank 0 while a WorkerServer progresses rank 1.
    void wait(Counter &counter) {
        for (long spin = 0; spin < 100000000 && counter.completed < counter.posted; ++spin) {
            if (ranks_[0]->transport) transport(0).poll();
            if (mixed_) mixed_->poll();
            if (!server_) transport(1).poll();
        }
        ASSERT_EQ(counter.completed, counter.posted);
        ASSERT_EQ(counter.failure, Status::ok);
    }

    std::uint64_t atomic(int origin, int target, AtomicOp op, RemoteAddress address,
                         std::uint64_t operand, std::uint64_t compare = 0) {
        Counter counter;
        std::uint64_t previous = ~0ull;
        counter.track(
            transport(origin).atomic(target, op, address, operand, compare, &previous, &counter));
        wait(counter);
        return previous;
    }

    void serve(bool on) {
        if (on)
            server_ = std::make_unique<WorkerServer>(*ranks_[1]->worker);
        else
            server_.reset();
    }

    std::unique_ptr<Rank> ranks_[2];
    std::unique_ptr<WorkerServer> server_;
    std::unique_ptr<MixedTransport> mixed_;  // rank 0's, when a test builds one
};

TEST_F(UcxTransportTest, ConcurrentFetchAddsFromBothRanksAreAtomic) {
    const RemoteAddress at{Region::control, 256};
    Counter counter;
    for (int i = 0; i < 200; ++i)
        for (int origin = 0; origin < 2; ++origin)
            counter.track(
                transport(origin).atomic(1, AtomicOp::fetch_add, at, 1, 0, nullptr, &counter));
    for (int origin = 0; origin < 2; ++origin) counter.track(transport(origin).flush(1, &counter));
    wait(counter);
    EXPECT_EQ(*control_word(1, 256), 400u);
}

// Rank 0 as in a window spanning nodes: itself node-local (shm), rank 1 remote (UCX).
// Plain data to the local peer moves over shm and completes inline; every atomic, the
// local peer's included, goes through UCX; a fence toward the local peer is honoured.
TEST_F(UcxTransportTest, MixedTransportRoutesDataOverShmAndAtomicsOverUcx) {
    std::vector<shm::ShmPeer> shm_peers(2);
    shm_peers[0].control = ranks_[0]->control.data();
    shm_peers[0].window = ranks_[0]->window.data();
    shm_peers[0].window_size = window_bytes;
    mixed_ = std::make_unique<MixedTransport>(
        std::make_unique<shm::ShmTransport>(0, control_bytes, std::move(shm_peers)),
        std::move(ranks_[0]->transport), std::vector<bool>{true, false});
    MixedTransport &mixed = *mixed_;
    EXPECT_TRUE(mixed.capabilities().needs_target_progress);

    const std::uint64_t value = 0xabcdef;
    EXPECT_EQ(mixed.put(0, &value, 8, {Region::window, 16}, nullptr), Status::ok);  // shm: inline
    EXPECT_EQ(std::memcmp(ranks_[0]->window.data() + 16, &value, 8), 0);

    Counter counter;
    std::uint64_t previous = ~0ull;
    *control_word(0, 64) = 5;
    counter.track(
        mixed.atomic(0, AtomicOp::fetch_add, {Region::control, 64}, 3, 0, &previous, &counter));
    counter.track(mixed.put(1, &value, 8, {Region::window, 24}, &counter));
    counter.track(mixed.flush(1, &counter));
    wait(counter);
    EXPECT_EQ(previous, 5u);
    EXPECT_EQ(*control_word(0, 64), 8u);
    EXPECT_EQ(std::memcmp(ranks_[1]->window.data() + 24, &value, 8), 0);

    // A UCX atomic, a fence, then shm data: the atomic is complete first.
    Counter ordered;
    ordered.track(mixed.atomic(0, AtomicOp::swap, {Region::control, 72}, 9, 0, nullptr, &ordered));
    ASSERT_EQ(mixed.fence(0), Status::ok);
    EXPECT_EQ(mixed.get(0, &previous, 8, {Region::control, 72}, nullptr), Status::ok);
    EXPECT_EQ(previous, 9u);
    wait(ordered);
}

class UcxDynamicTest : public UcxTransportTest {
  protected:
    void SetUp() override { build(true); }
};

TEST_F(UcxDynamicTest, AttachedRegionsAreReachableAndDetachedOnesAreNot) {
    alignas(8) std::uint64_t region[64] = {};
    alignas(8) std::uint64_t other[16] = {};
    const auto address = reinterpret_cast<std::uintptr_t>(region);
    std::uint64_t value = 42;
    // Nothing attached yet.
    serve(true);
    EXPECT_EQ(transport(0).put(1, &value, 8, {Region::window, address}, nullptr),
              Status::err_range);

    serve(false);
    ASSERT_EQ(transport(1).attach(region, sizeof region), Status::ok);
    ASSERT_EQ(transport(1).attach(other, sizeof other), Status::ok);
    serve(true);
    Counter counter;
    counter.track(transport(0).put(1, &value, 8, {Region::window, address + 16}, &counter));
    counter.track(transport(0).flush(1, &counter));
    wait(counter);
    EXPECT_EQ(region[2], 42u);
    EXPECT_EQ(atomic(0, 1, AtomicOp::fetch_add, {Region::window, address + 16}, 8), 42u);
    EXPECT_EQ(region[2], 50u);
    // Past the end of the region.
    EXPECT_EQ(
        transport(0).put(1, &value, 16, {Region::window, address + sizeof region - 8}, nullptr),
        Status::err_range);

    // Detached: the cached rkey is noticed stale and the access refused.
    serve(false);
    ASSERT_EQ(transport(1).detach(region), Status::ok);
    serve(true);
    EXPECT_EQ(transport(0).put(1, &value, 8, {Region::window, address}, nullptr),
              Status::err_range);
    serve(false);
    EXPECT_EQ(transport(1).detach(region), Status::err_arg);

    // Re-attached at the same address (a new registration): reachable again.
    ASSERT_EQ(transport(1).attach(region, sizeof region), Status::ok);
    serve(true);
    value = 7;
    Counter again;
    again.track(transport(0).put(1, &value, 8, {Region::window, address + 8}, &again));
    again.track(transport(0).flush(1, &again));
    wait(again);
    EXPECT_EQ(region[1], 7u);
    EXPECT_EQ(
        atomic(0, 1, AtomicOp::swap, {Region::window, reinterpret_cast<std::uintptr_t>(other)}, 5),
        0u);
    EXPECT_EQ(other[0], 5u);
    serve(false);
    ASSERT_EQ(transport(1).detach(region), Status::ok);
    ASSERT_EQ(transport(1).detach(other), Status::ok);
}

TEST_F(UcxDynamicTest, AccessesSpanRegionsAttachedBackToBack) {
    alignas(8) std::uint8_t buffer[3 * 64] = {};
    const auto address = reinterpret_cast<std::uintptr_t>(buffer);
    for (int k = 0; k < 3; ++k) ASSERT_EQ(transport(1).attach(buffer + 64 * k, 64), Status::ok);
    std::uint8_t out[3 * 64], in[3 * 64] = {};
    for (int i = 0; i < 3 * 64; ++i) out[i] = static_cast<std::uint8_t>(i * 7 + 1);
    serve(true);
    EXPECT_EQ(transport(0).check_attached(1, address, address + sizeof buffer), Status::ok);
    Counter counter;  // one put, one get: three UCX operations each, one completion each
    counter.track(transport(0).put(1, out, sizeof out, {Region::window, address}, &counter));
    counter.track(transport(0).flush(1, &counter));
    wait(counter);
    EXPECT_EQ(std::memcmp(buffer, out, sizeof out), 0);
    Counter got;
    got.track(transport(0).get(1, in, sizeof in - 16, {Region::window, address + 8}, &got));
    wait(got);
    EXPECT_EQ(std::memcmp(in, out + 8, sizeof in - 16), 0);

    // The middle one detached: refused whole, nothing written.
    serve(false);
    ASSERT_EQ(transport(1).detach(buffer + 64), Status::ok);
    serve(true);
    std::uint8_t zeros[3 * 64] = {};
    EXPECT_EQ(transport(0).check_attached(1, address, address + sizeof buffer), Status::err_range);
    EXPECT_EQ(transport(0).put(1, zeros, sizeof zeros, {Region::window, address}, nullptr),
              Status::err_range);
    Counter flushed;
    flushed.track(transport(0).flush(1, &flushed));
    wait(flushed);
    EXPECT_EQ(std::memcmp(buffer, out, sizeof out), 0);
    serve(false);
    ASSERT_EQ(transport(1).detach(buffer), Status::ok);
    ASSERT_EQ(transport(1).detach(buffer + 128), Status::ok);
}

// A dynamic window spanning nodes: rank 0 node-local (shm reads the directory its UCX
// transport writes, with CMA), rank 1 remote; spanning accesses on both paths.
TEST_F(UcxDynamicTest, MixedTransportReadsTheDirectoryUcxWrites) {
    std::vector<shm::ShmPeer> shm_peers(2);
    shm_peers[0].control = ranks_[0]->control.data();
    shm_peers[0].window_size = ~0ull;
    shm_peers[0].pid = getpid();
    auto shm = std::make_unique<shm::ShmTransport>(0, control_bytes, std::move(shm_peers));
    shm->enable_dynamic();
    mixed_ = std::make_unique<MixedTransport>(std::move(shm), std::move(ranks_[0]->transport),
                                              std::vector<bool>{true, false});
    MixedTransport &mixed = *mixed_;
    alignas(8) std::uint8_t local[128] = {}, remote[128] = {};
    const auto local_address = reinterpret_cast<std::uintptr_t>(local);
    const auto remote_address = reinterpret_cast<std::uintptr_t>(remote);
    ASSERT_EQ(mixed.attach(local + 64, 64), Status::ok);
    ASSERT_EQ(mixed.attach(local, 64), Status::ok);
    ASSERT_EQ(transport(1).attach(remote, 64), Status::ok);
    ASSERT_EQ(transport(1).attach(remote + 64, 64), Status::ok);
    std::uint8_t out[96];
    for (int i = 0; i < 96; ++i) out[i] = static_cast<std::uint8_t>(3 * i + 1);
    serve(true);
    EXPECT_EQ(mixed.check_attached(0, local_address + 16, local_address + 112), Status::ok);
    EXPECT_EQ(mixed.put(0, out, 96, {Region::window, local_address + 16}, nullptr), Status::ok);
    EXPECT_EQ(std::memcmp(local + 16, out, 96), 0);
    EXPECT_EQ(mixed.check_attached(0, local_address + 16, local_address + 129), Status::err_range);
    EXPECT_EQ(mixed.put(0, out, 8, {Region::window, local_address + 124}, nullptr),
              Status::err_range);
    Counter counter;
    counter.track(mixed.put(1, out, 96, {Region::window, remote_address + 16}, &counter));
    counter.track(mixed.flush(1, &counter));
    wait(counter);
    EXPECT_EQ(std::memcmp(remote + 16, out, 96), 0);
    serve(false);
    ASSERT_EQ(mixed.detach(local), Status::ok);
    ASSERT_EQ(mixed.detach(local + 64), Status::ok);
    ASSERT_EQ(transport(1).detach(remote), Status::ok);
    ASSERT_EQ(transport(1).detach(remote + 64), Status::ok);
}

// A peer whose transports cannot reach ours: endpoint creation reports an error.
TEST(UcxWorker, UnreachablePeerFailsAtConnect) {
    std::unique_ptr<UcxWorker> tcp, shared_memory;
    ASSERT_EQ(UcxWorker::create("tcp", &tcp), Status::ok);
    ASSERT_EQ(UcxWorker::create("posix", &shared_memory), Status::ok);
    alignas(64) std::uint8_t control[256] = {};
    UcxTransport origin(*tcp, 0, 2, control, sizeof control);
    UcxTransport target(*shared_memory, 1, 2, control, sizeof control);
    ASSERT_EQ(target.expose_window(nullptr, 0), Status::ok);
    std::vector<std::uint8_t> record = target.exposure();
    Status status = origin.connect(1, record.data(), record.size());
    if (!is_error(status)) {
        ASSERT_EQ(origin.finish_connect_start(), Status::ok);
        bool done = false;
        for (int spin = 0; spin < 1000000 && !done && !is_error(status); ++spin)
            status = origin.finish_connect_test(&done);
    }
    EXPECT_EQ(status, Status::err_transport);
    // A truncated record is refused, not read past its end.
    EXPECT_EQ(origin.connect(1, record.data(), 3), Status::err_arg);
}

// Where UCX's fence does not order an endpoint's lanes, a fence toward its peer is a
// flush: the data posted before it is at the target when it returns (the hook makes
// every endpoint so; over tcp a put is still in flight after a plain fence).
TEST_F(UcxTransportTest, FenceFlushesWhereUcxFenceDoesNotOrderTheLanes) {
    ranks_[0].reset();
    ranks_[1].reset();
    ::setenv("NBRMA_TEST_UCX_FENCE", "flush", 1);
    build(false);
    ::unsetenv("NBRMA_TEST_UCX_FENCE");
    serve(true);  // rank 1's worker runs tcp's software RMA meanwhile
    std::vector<std::uint8_t> data(window_bytes);
    for (int round = 1; round <= 20; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        std::memset(data.data(), round, data.size());
        Counter counter;
        counter.track(transport(0).put(1, data.data(), data.size(), {Region::window, 0}, &counter));
        ASSERT_EQ(transport(0).fence(1), Status::ok);
        const std::uint8_t *window = ranks_[1]->window.data();
        for (std::size_t i = 0; i < window_bytes; ++i)
            ASSERT_EQ(window[i], round) << "byte " << i << " not there when the fence returned";
        wait(counter);
    }
}

// What ucp_worker_fence orders, from an endpoint's lanes as ucp_ep_print_info lists them.
TEST(UcxWorker, FenceOrdersEndpointsOfOneNetworkLane) {
    const char *shared_memory =
        "#                 lane[0]:  0:self/memory0.0 md[0]          -> md[0]/self/sysdev[255] "
        "amo#0 am am_bw#0\n"
        "#                 lane[1]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255]\n"
        "#                 lane[2]:  4:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255]\n"
        "#                  put[0]: 0..<short>..4294967296..<bcopy>..(inf)\n";
    const char *tcp =
        "#                 lane[0]:  1:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] am "
        "am_bw#0 wireup\n";
    const char *two_rails =
        "#                 lane[0]:  2:rc_mlx5/mlx5_0:1.0 md[1]      -> md[1]/ib/sysdev[0] am "
        "rma_bw#0 amo#0\n"
        "#                 lane[1]:  5:rc_mlx5/mlx5_1:1.0 md[2]      -> md[2]/ib/sysdev[1] "
        "rma_bw#1\n"
        "#                 lane[2]:  7:ud_mlx5/mlx5_0:1.0 md[1]      -> md[1]/ib/sysdev[0] "
        "wireup\n";
    const char *rail_and_wireup =
        "#                 lane[0]:  2:rc_mlx5/mlx5_0:1.0 md[1]      -> md[1]/ib/sysdev[0] am "
        "rma_bw#0 amo#0\n"
        "#                 lane[1]:  7:ud_mlx5/mlx5_0:1.0 md[1]      -> md[1]/ib/sysdev[0] "
        "wireup\n";
    EXPECT_TRUE(fence_orders(false, shared_memory));
    EXPECT_TRUE(fence_orders(false, tcp));
    EXPECT_TRUE(fence_orders(false, rail_and_wireup));
    EXPECT_FALSE(fence_orders(false, two_rails));
    EXPECT_TRUE(fence_orders(true, two_rails));  // UCX 1.14 and later fence across lanes
    EXPECT_FALSE(fence_orders(false, ""));       // no lane named: not known to be ordered
    EXPECT_FALSE(fence_orders(false, "#   lane[0]: garbage\n"));
    EXPECT_FALSE(fence_orders(false, nullptr));

    // This UCX's own account of a tcp endpoint (one lane): a plain fence orders it, unless
    // the test hook says otherwise.
    std::unique_ptr<UcxWorker> origin, target;
    ASSERT_EQ(UcxWorker::create("tcp,self", &origin), Status::ok);
    ASSERT_EQ(UcxWorker::create("tcp,self", &target), Status::ok);
    ucp_ep_h ep = nullptr;
    bool ordered = false;
    ASSERT_EQ(origin->connect(target->address().data(), target->address().size(), &ep, &ordered),
              Status::ok);
    EXPECT_TRUE(ordered);
    // the cached endpoint answers the same
    ordered = false;
    ASSERT_EQ(origin->connect(target->address().data(), target->address().size(), &ep, &ordered),
              Status::ok);
    EXPECT_TRUE(ordered);
    std::unique_ptr<UcxWorker> hooked;
    ::setenv("NBRMA_TEST_UCX_FENCE", "flush", 1);
    ASSERT_EQ(UcxWorker::create("tcp,self", &hooked), Status::ok);
    ASSERT_EQ(hooked->connect(target->address().data(), target->address().size(), &ep, &ordered),
              Status::ok);
    ::unsetenv("NBRMA_TEST_UCX_FENCE");
    EXPECT_FALSE(ordered);
}

TEST(UcxWorker, MapsAndPacksAnRkey) {
    std::unique_ptr<UcxWorker> worker;
    ASSERT_EQ(UcxWorker::create("tcp,self", &worker), Status::ok);
    EXPECT_FALSE(worker->address().empty());
    std::vector<std::uint8_t> memory(4096);
    std::unique_ptr<UcxRegistration> registration;
    ASSERT_EQ(worker->map(memory.data(), memory.size(), &registration), Status::ok);
    EXPECT_EQ(registration->length(), memory.size());
    EXPECT_FALSE(registration->rkey().empty());
    ASSERT_EQ(worker->map(nullptr, 0, &registration), Status::ok);
    EXPECT_TRUE(registration->rkey().empty());
}

}  // namespace
}  // namespace nbrma::transport::ucx
