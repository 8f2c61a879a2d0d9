// The control region's size as jobs grow: computed from the real layout
// (layout/control_region.hpp) for p = 2 ... 2^20 ranks, against the bound of 64 bytes a
// peer plus a constant (64 now), and the fields of every peer disjoint and 8-byte aligned.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <utility>

#include "layout/control_region.hpp"

using nbrma::layout::ControlLayout;

namespace {

constexpr std::size_t per_peer_bound = 64;
// Lock word, accumulate lock, notification count, head rank, doorway tail, the directory header of
// dynamic windows, the fence slots, and the rounding of the end to a cache line.
constexpr std::size_t constant_bound =
    ControlLayout::watched + 8 * ControlLayout::max_fence_slots + 64;

TEST(ControlLayout, AccumulateStripesCoverEveryGranuleOfARange) {
    constexpr std::uint64_t granule = std::uint64_t{1} << ControlLayout::accumulate_granule_shift;
    constexpr std::uint32_t all = (1u << ControlLayout::accumulate_stripe_count) - 1;
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(0, 8), 1u);
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(granule - 8, granule), 1u);
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(granule - 8, granule + 8), 3u);
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(3 * granule, 3 * granule + 1), 8u);
    // granules wrap around the stripes: 16 granules apart, the same stripe
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(16 * granule + 5, 16 * granule + 6), 1u);
    // a range over the last and the first granule of a round takes both stripes
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(16 * granule - 1, 16 * granule + 1),
              1u | (1u << 15));
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(0, 16 * granule), all);
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(granule / 2, 16 * granule - 1), all);
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(0, 15 * granule), all >> 1);
    // dynamic windows: absolute addresses near the top of memory
    EXPECT_EQ(ControlLayout::accumulate_stripe_mask(~std::uint64_t{0} - 16, ~std::uint64_t{0}),
              1u << 15);
    // two ranges that share a byte always share a stripe
    for (std::uint64_t a = 0; a < 40 * granule; a += granule / 3)
        for (std::uint64_t b = a; b < a + granule / 2 + 1; b += 97)
            EXPECT_NE(ControlLayout::accumulate_stripe_mask(a, a + granule / 2 + 1) &
                          ControlLayout::accumulate_stripe_mask(b, b + 1),
                      0u)
                << a << " " << b;
}

}  // namespace

TEST(ControlLayout, BytesPerRankStayWithin64APeer) {
    std::printf("[ control ] bytes per rank per window (no notification counters)\n");
    std::printf("[ control ] %10s %16s %12s\n", "ranks", "bytes", "bytes/peer");
    for (int log = 1; log <= 20; ++log) {
        const int p = 1 << log;
        const ControlLayout layout(p);
        const std::size_t bytes = layout.size();
        EXPECT_LE(bytes, per_peer_bound * p + constant_bound) << "p = " << p;
        if (log % 2 == 0 || log == 1)
            std::printf("[ control ] %10d %16zu %12.1f\n", p, bytes, double(bytes) / p);
    }
    // Not a power of two, and the largest window the lock word admits.
    for (int p : {3, 1000, 65534}) {
        const ControlLayout layout(p);
        EXPECT_LE(layout.size(), per_peer_bound * p + constant_bound) << "p = " << p;
    }
}

TEST(ControlLayout, FenceRoundsAndSlots) {
    // Up to direct_fence_ranks ranks: one round, a slot a peer; beyond: ceil(log2 p).
    const std::pair<int, int> expected[] = {{1, 0},
                                            {2, 1},
                                            {3, 1},
                                            {8, 1},
                                            {9, 4},
                                            {16, 4},
                                            {1024, 10},
                                            {1025, 11},
                                            {65536, 16},
                                            {1 << 20, 20},
                                            {(1 << 21) - 2, 21}};
    for (auto [p, rounds] : expected) EXPECT_EQ(ControlLayout(p).fence_rounds(), rounds) << p;
    for (int p : {2, 3, 8, 9, 1000, (1 << 21) - 2}) {
        const ControlLayout layout(p);
        const int radix = layout.fence_radix();
        std::set<int> slots;
        std::int64_t reach = 1;
        for (int round = 0; round < layout.fence_rounds(); ++round, reach *= radix)
            for (int j = 1; j < radix && j * reach < p; ++j) {
                const int slot = layout.fence_slot_of(round, j);
                EXPECT_GE(slot, 0);
                EXPECT_LT(slot, ControlLayout::max_fence_slots) << p;
                EXPECT_TRUE(slots.insert(slot).second) << p;
            }
        EXPECT_EQ(
            slots.size(),
            std::size_t(p <= ControlLayout::direct_fence_ranks ? p - 1 : layout.fence_rounds()))
            << p;
    }
}

TEST(ControlLayout, NotificationCountersComeOnTop) {
    const ControlLayout plain(1024), notified(1024, 100);
    EXPECT_EQ(notified.notifications(), plain.notifications());
    EXPECT_GE(notified.size(), plain.size() + 8 * 100);
    EXPECT_LT(notified.size(), plain.size() + 8 * 100 + 64);
    EXPECT_EQ(notified.notification(99) + 8, notified.notifications() + 800);
}

TEST(ControlLayout, FieldsAreDisjointAlignedAndInside) {
    for (int p : {1, 2, 3, 7, 64, 1000}) {
        const ControlLayout layout(p);
        std::set<std::size_t> words = {ControlLayout::lock_word, ControlLayout::notify_num,
                                       ControlLayout::head_rank, ControlLayout::door_tail};
        for (int stripe = 0; stripe < ControlLayout::accumulate_stripe_count; ++stripe) {
            const std::size_t word = ControlLayout::accumulate_stripe(stripe);
            EXPECT_EQ(word % 64, 0u);  // a cache line each
            EXPECT_LT(word, ControlLayout::directory);
            EXPECT_TRUE(words.insert(word).second) << "stripe " << stripe;
        }
        auto add = [&](std::size_t offset) {
            EXPECT_EQ(offset % 8, 0u) << "p = " << p << " offset " << offset;
            EXPECT_GE(offset, ControlLayout::watched) << "p = " << p;
            EXPECT_LE(offset + 8, layout.notifications()) << "p = " << p;
            EXPECT_TRUE(words.insert(offset).second) << "p = " << p << ": " << offset << " twice";
        };
        for (int peer = 0; peer < p; ++peer) {
            add(layout.grant_count(peer));
            add(layout.done_count(peer));
            add(layout.node_grant(peer));
            add(layout.node_next(peer));
            add(layout.node_top(peer));
            add(layout.node_count(peer));
            add(layout.node_below(peer));
            add(layout.node_door_next(peer));
        }
        for (int slot = 0; slot < ControlLayout::max_fence_slots; ++slot)
            add(ControlLayout::fence_slot(slot));
        EXPECT_EQ(words.size(), 4 + ControlLayout::accumulate_stripe_count + 8 * std::size_t(p) +
                                    ControlLayout::max_fence_slots);
        EXPECT_LE(layout.notifications(), layout.size());
    }
}
