// Unit tests of the sim transport's own behaviour: delayed delivery, atomic semantics at
// delivery, fence ordering and flush completion under chosen delivery orders, reordering
// without a fence, early local completion. The contract every transport shares (bounds,
// bad peers, the completion model) is checked in test_transport_conformance.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "transport/sim/sim_transport.hpp"

using nbrma::Status;
using nbrma::transport::AtomicOp;
using nbrma::transport::Completion;
using nbrma::transport::Region;
using nbrma::transport::RemoteAddress;
using nbrma::transport::Transport;
using nbrma::transport::sim::SimWorld;

namespace {

struct Counter final : Completion {
    int calls = 0;
    Status last = Status::err_other;
    void on_complete(Status s) override {
        ++calls;
        last = s;
    }
};

// Records the order in which completions ran.
struct Tagged final : Completion {
    std::vector<int> *log = nullptr;
    int tag = 0;
    void on_complete(Status) override { log->push_back(tag); }
};

std::uint64_t word(SimWorld &w, int rank, Region region, std::uint64_t offset) {
    return w.load64(rank, region, offset);
}

void set_word(SimWorld &w, int rank, Region region, std::uint64_t offset, std::uint64_t v) {
    std::memcpy(w.memory(rank, region) + offset, &v, 8);
}

}  // namespace

TEST(SimTransport, SizeRankAndLocalControl) {
    SimWorld w(3, 64, 128);
    for (int r = 0; r < 3; ++r) {
        Transport &t = w.endpoint(r);
        EXPECT_EQ(t.size(), 3);
        EXPECT_EQ(t.rank(), r);
        EXPECT_EQ(t.local_control(), static_cast<void *>(w.memory(r, Region::control)));
        EXPECT_TRUE(t.supports_atomics((r + 1) % 3, Region::window));
        EXPECT_TRUE(t.supports_atomics((r + 1) % 3, Region::control));
    }
    // Memory starts zeroed and ranks' memories are distinct.
    EXPECT_EQ(word(w, 0, Region::window, 0), 0u);
    EXPECT_NE(w.memory(0, Region::window), w.memory(1, Region::window));
    EXPECT_NE(w.memory(0, Region::control), w.memory(0, Region::window));
}

TEST(SimTransport, PutIsDelayedUntilDelivered) {
    SimWorld w(2, 64, 64);
    Transport &t0 = w.endpoint(0);
    Counter c;
    const char msg[] = "hello sim";
    ASSERT_EQ(t0.put(1, msg, sizeof msg, {Region::window, 8}, &c), Status::in_progress);
    EXPECT_EQ(w.in_flight(), 1u);
    // Nothing visible at the target, no completion, before delivery.
    EXPECT_EQ(t0.poll(), 0);
    EXPECT_EQ(c.calls, 0);
    EXPECT_EQ(w.memory(1, Region::window)[8], 0);
    w.deliver(0);
    EXPECT_EQ(w.in_flight(), 0u);
    EXPECT_EQ(std::memcmp(w.memory(1, Region::window) + 8, msg, sizeof msg), 0);
    // The completion runs only from the origin's poll, exactly once.
    EXPECT_EQ(c.calls, 0);
    EXPECT_EQ(w.endpoint(1).poll(), 0);
    EXPECT_EQ(t0.poll(), 1);
    EXPECT_EQ(c.calls, 1);
    EXPECT_EQ(c.last, Status::ok);
    EXPECT_EQ(t0.poll(), 0);
    EXPECT_EQ(c.calls, 1);
}

TEST(SimTransport, PutSourceIsCopiedAtPost) {
    SimWorld w(2, 64, 64);
    std::uint64_t v = 42;
    ASSERT_EQ(w.endpoint(0).put(1, &v, 8, {Region::control, 0}, nullptr), Status::in_progress);
    v = 7;
    w.deliver_all();
    EXPECT_EQ(word(w, 1, Region::control, 0), 42u);
    EXPECT_EQ(w.endpoint(0).poll(), 0);  // null completion: nothing runs
    EXPECT_EQ(w.pending_completions(), 0u);
}

TEST(SimTransport, GetReadsAtDelivery) {
    SimWorld w(2, 64, 64);
    set_word(w, 1, Region::window, 16, 111);
    std::uint64_t dst = 0;
    Counter c;
    ASSERT_EQ(w.endpoint(0).get(1, &dst, 8, {Region::window, 16}, &c), Status::in_progress);
    set_word(w, 1, Region::window, 16, 222);  // a change before delivery is observed
    EXPECT_EQ(dst, 0u);
    w.deliver(0);
    EXPECT_EQ(dst, 222u);
    EXPECT_EQ(c.calls, 0);
    EXPECT_EQ(w.endpoint(0).poll(), 1);
    EXPECT_EQ(c.calls, 1);
}

TEST(SimTransport, SelfOperationsAreQueuedToo) {
    SimWorld w(1, 64, 64);
    Transport &t = w.endpoint(0);
    std::uint64_t v = 5, old = 99;
    ASSERT_EQ(t.put(0, &v, 8, {Region::window, 0}, nullptr), Status::in_progress);
    ASSERT_EQ(t.atomic(0, AtomicOp::fetch_add, {Region::window, 0}, 3, 0, &old, nullptr),
              Status::in_progress);
    EXPECT_EQ(word(w, 0, Region::window, 0), 0u);
    w.deliver_all();
    EXPECT_EQ(old, 5u);
    EXPECT_EQ(word(w, 0, Region::window, 0), 8u);
}

struct AtomicCase {
    AtomicOp op;
    std::uint64_t initial, operand, compare, expect_word;
};

TEST(SimTransport, AtomicSemantics) {
    const std::uint64_t x = 0xF0F0'0000'1234'5678ull;
    const AtomicCase cases[] = {
        {AtomicOp::fetch_add, x, 10, 0, x + 10},
        {AtomicOp::fetch_add, ~0ull, 2, 0, 1},  // wraps modulo 2^64
        {AtomicOp::compare_swap, x, 77, x, 77},  // match: writes
        {AtomicOp::compare_swap, x, 77, x + 1, x},  // mismatch: unchanged
        {AtomicOp::swap, x, 99, 0, 99},
        {AtomicOp::fetch_and, x, 0xFF00'FF00'FF00'FF00ull, 0, x & 0xFF00'FF00'FF00'FF00ull},
        {AtomicOp::fetch_or, x, 0x0F, 0, x | 0x0F},
        {AtomicOp::fetch_xor, x, ~0ull, 0, ~x},
    };
    for (const AtomicCase &ac : cases) {
        for (Region region : {Region::window, Region::control}) {
            SimWorld w(2, 64, 64);
            set_word(w, 1, region, 24, ac.initial);
            std::uint64_t result = 0xDEAD;
            Counter c;
            ASSERT_EQ(w.endpoint(0).atomic(1, ac.op, {region, 24}, ac.operand, ac.compare, &result, &c),
                      Status::in_progress);
            EXPECT_EQ(result, 0xDEADu);
            EXPECT_EQ(word(w, 1, region, 24), ac.initial);
            w.deliver(0);
            EXPECT_EQ(result, ac.initial) << "op " << static_cast<int>(ac.op);
            EXPECT_EQ(word(w, 1, region, 24), ac.expect_word) << "op " << static_cast<int>(ac.op);
            EXPECT_EQ(w.endpoint(0).poll(), 1);
            EXPECT_EQ(c.calls, 1);
            // Neighbouring words untouched.
            EXPECT_EQ(word(w, 1, region, 16), 0u);
            EXPECT_EQ(word(w, 1, region, 32), 0u);
        }
    }
}

TEST(SimTransport, ReorderWithoutFence) {
    SimWorld w(2, 64, 64);
    Transport &t = w.endpoint(0);
    std::vector<int> log;
    Tagged a, b;
    a.log = b.log = &log;
    a.tag = 1;
    b.tag = 2;
    std::uint64_t v1 = 1, v2 = 2;
    ASSERT_EQ(t.put(1, &v1, 8, {Region::window, 0}, &a), Status::in_progress);
    ASSERT_EQ(t.put(1, &v2, 8, {Region::window, 0}, &b), Status::in_progress);
    EXPECT_TRUE(w.deliverable(0));
    EXPECT_TRUE(w.deliverable(1));
    w.deliver(1);  // the later put overtakes the earlier one
    EXPECT_EQ(word(w, 1, Region::window, 0), 2u);
    w.deliver(0);
    EXPECT_EQ(word(w, 1, Region::window, 0), 1u);  // last delivered wins
    EXPECT_EQ(t.poll(), 2);
    EXPECT_EQ(log, (std::vector<int>{2, 1}));  // completions in delivery order
}

TEST(SimTransport, FenceOrdersLaterOpsToThatPeerOnly) {
    SimWorld w(3, 64, 64);
    Transport &t = w.endpoint(0);
    std::uint64_t v1 = 1, v2 = 2, v3 = 3, v4 = 4;
    ASSERT_EQ(t.put(1, &v1, 8, {Region::window, 0}, nullptr), Status::in_progress);  // 0
    ASSERT_EQ(t.put(1, &v2, 8, {Region::window, 8}, nullptr), Status::in_progress);  // 1
    ASSERT_EQ(t.fence(1), Status::ok);
    ASSERT_EQ(t.put(1, &v3, 8, {Region::window, 0}, nullptr), Status::in_progress);  // 2
    ASSERT_EQ(t.put(2, &v4, 8, {Region::window, 0}, nullptr), Status::in_progress);  // 3 (other peer)
    // Another origin's op to peer 1 is not ordered by rank 0's fence.
    ASSERT_EQ(w.endpoint(2).put(1, &v4, 8, {Region::window, 16}, nullptr), Status::in_progress);  // 4
    EXPECT_TRUE(w.deliverable(0));
    EXPECT_TRUE(w.deliverable(1));
    EXPECT_FALSE(w.deliverable(2));
    EXPECT_TRUE(w.deliverable(3));
    EXPECT_TRUE(w.deliverable(4));
    EXPECT_THROW(w.deliver(2), std::logic_error);
    w.deliver(1);  // ops before the fence may still be reordered among themselves
    EXPECT_FALSE(w.deliverable(1));  // index 1 is now the fenced put (v3)
    w.deliver(0);
    EXPECT_TRUE(w.deliverable(0));  // the fenced put is now deliverable
    w.deliver(0);
    EXPECT_EQ(word(w, 1, Region::window, 0), 3u);
    EXPECT_EQ(word(w, 1, Region::window, 8), 2u);
    w.deliver_all();
    EXPECT_EQ(word(w, 2, Region::window, 0), 4u);
    EXPECT_EQ(word(w, 1, Region::window, 16), 4u);
}

TEST(SimTransport, FenceAcrossSeveralEpochs) {
    SimWorld w(2, 64, 64);
    Transport &t = w.endpoint(0);
    std::uint64_t v[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(t.atomic(1, AtomicOp::swap, {Region::control, 0}, v[i], 0, nullptr, nullptr),
                  Status::in_progress);
        ASSERT_EQ(t.fence(1), Status::ok);
    }
    // Only the first is ever deliverable: the chain delivers in posting order.
    std::mt19937_64 rng(1);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(w.deliverable_indices(), std::vector<std::size_t>{0});
        ASSERT_TRUE(w.deliver_any(rng));
        EXPECT_EQ(word(w, 1, Region::control, 0), v[i]);
    }
    EXPECT_FALSE(w.deliver_any(rng));
}

TEST(SimTransport, FlushCompletesOnlyAfterEarlierOps) {
    SimWorld w(3, 64, 64);
    Transport &t = w.endpoint(0);
    Counter put_a, put_b, flushed, later;
    std::uint64_t v = 9;
    // Nothing in flight to the peer: the flush completes inline (no callback).
    EXPECT_EQ(t.flush(1, &flushed), Status::ok);
    ASSERT_EQ(t.put(1, &v, 8, {Region::window, 0}, &put_a), Status::in_progress);   // 0
    ASSERT_EQ(t.put(1, &v, 8, {Region::window, 8}, &put_b), Status::in_progress);   // 1
    ASSERT_EQ(t.put(2, &v, 8, {Region::window, 0}, nullptr), Status::in_progress);  // 2: other peer
    ASSERT_EQ(t.flush(1, &flushed), Status::in_progress);                           // 3
    ASSERT_EQ(t.put(1, &v, 8, {Region::window, 16}, &later), Status::in_progress);  // 4: not flushed
    EXPECT_FALSE(w.deliverable(3));
    EXPECT_TRUE(w.deliverable(4));  // a flush is not a fence
    w.deliver(4);
    w.deliver(2);  // ops to another peer do not matter
    EXPECT_FALSE(w.deliverable(2));  // the flush, now at index 2
    w.deliver(1);
    EXPECT_FALSE(w.deliverable(1));
    EXPECT_EQ(t.poll(), 2);  // later + put_b
    EXPECT_EQ(flushed.calls, 0);
    w.deliver(0);
    ASSERT_EQ(w.in_flight(), 1u);
    EXPECT_TRUE(w.deliverable(0));
    EXPECT_EQ(t.poll(), 1);  // put_a
    EXPECT_EQ(flushed.calls, 0);
    w.deliver(0);
    EXPECT_EQ(t.poll(), 1);
    EXPECT_EQ(flushed.calls, 1);
    EXPECT_EQ(put_a.calls + put_b.calls + later.calls, 3);
}

TEST(SimTransport, CompletionCallbackMayPostMore) {
    SimWorld w(2, 64, 64);
    struct Chain final : Completion {
        Transport *t;
        int remaining = 3;
        std::uint64_t one = 1;
        void on_complete(Status) override {
            if (--remaining > 0)
                (void)t->atomic(1, AtomicOp::fetch_add, {Region::control, 0}, 1, 0, nullptr, this);
        }
    } chain;
    chain.t = &w.endpoint(0);
    ASSERT_EQ(chain.t->atomic(1, AtomicOp::fetch_add, {Region::control, 0}, 1, 0, nullptr, &chain),
              Status::in_progress);
    int rounds = 0;
    while (w.in_flight() > 0) {
        w.deliver_all();
        chain.t->poll();
        ++rounds;
    }
    EXPECT_EQ(rounds, 3);
    EXPECT_EQ(chain.remaining, 0);
    EXPECT_EQ(word(w, 1, Region::control, 0), 3u);
}

TEST(SimTransport, RandomDeliveryRespectsFences) {
    // Many random schedules of fenced chains from 3 origins to one target: each
    // origin's sequence of swaps must land in its posting order.
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        SimWorld w(4, 64, 64);
        std::vector<std::vector<std::uint64_t>> seen(3);
        for (int o = 0; o < 3; ++o)
            for (std::uint64_t k = 1; k <= 5; ++k) {
                ASSERT_EQ(w.endpoint(o).atomic(3, AtomicOp::swap, {Region::control, 8u * o}, k, 0, nullptr,
                                               nullptr),
                          Status::in_progress);
                ASSERT_EQ(w.endpoint(o).fence(3), Status::ok);
            }
        std::mt19937_64 rng(seed);
        while (w.deliver_any(rng))
            for (int o = 0; o < 3; ++o) {
                std::uint64_t v = word(w, 3, Region::control, 8u * o);
                if (seen[o].empty() || seen[o].back() != v) seen[o].push_back(v);
            }
        for (int o = 0; o < 3; ++o) {
            std::vector<std::uint64_t> expect;
            for (std::uint64_t k = (seen[o].front() == 0 ? 0 : 1); k <= 5; ++k) expect.push_back(k);
            EXPECT_EQ(seen[o], expect) << "seed " << seed << " origin " << o;
        }
    }
}

// Early local completion: a put (and an atomic without a result) is complete at the
// origin when posted, at the target only when delivered; only a flush tells.
TEST(SimTransport, EarlyLocalCompletionSeparatesLocalFromRemote) {
    SimWorld w(2, 64, 64);
    w.set_early_local_completion(true);
    Transport &t = w.endpoint(0);
    const std::uint64_t v = 0x1234;
    Counter put, add, cas, flush;
    std::uint64_t previous = 0;
    ASSERT_EQ(t.put(1, &v, 8, RemoteAddress{Region::window, 0}, &put), Status::in_progress);
    ASSERT_EQ(
        t.atomic(1, AtomicOp::fetch_add, RemoteAddress{Region::window, 8}, 1, 0, nullptr, &add),
        Status::in_progress);
    ASSERT_EQ(t.atomic(1, AtomicOp::compare_swap, RemoteAddress{Region::window, 16}, 5, 0,
                       &previous, &cas),
              Status::in_progress);
    ASSERT_EQ(t.flush(1, &flush), Status::in_progress);
    EXPECT_EQ(t.poll(), 2);  // the put and the add, before any delivery
    EXPECT_EQ(put.calls, 1);
    EXPECT_EQ(add.calls, 1);
    EXPECT_EQ(cas.calls, 0);  // a fetching atomic completes with its result
    EXPECT_EQ(word(w, 1, Region::window, 0), 0u);
    EXPECT_EQ(word(w, 1, Region::window, 8), 0u);
    w.deliver_all();
    EXPECT_EQ(t.poll(), 2);  // the compare-and-swap, then the flush
    EXPECT_EQ(put.calls, 1);
    EXPECT_EQ(cas.calls, 1);
    EXPECT_EQ(flush.calls, 1);
    EXPECT_EQ(word(w, 1, Region::window, 0), v);
    EXPECT_EQ(word(w, 1, Region::window, 8), 1u);
    EXPECT_EQ(word(w, 1, Region::window, 16), 5u);
}
