// The cache of freed windows' node segments (transport/shm/segment_cache.hpp): what is
// put back comes out again, newest first, with its mapping and identity intact; the
// cache keeps at most segment_cache_limit segments; identities are unique and carry
// the creator's pid; and the rule window creation decides reuse by (segment_offers_agree).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "transport/shm/segment_cache.hpp"

namespace nbrma::transport::shm {
namespace {

CachedSegment made(std::size_t bytes) {
    CachedSegment entry;
    entry.segment = std::make_unique<ShmSegment>();
    EXPECT_EQ(entry.segment->create(bytes), Status::ok);
    entry.segment->withdraw();
    entry.id = new_segment_id();
    return entry;
}

void drain() {
    while (segment_cache_take()) {
    }
}

TEST(SegmentCache, GivesBackTheNewestSegmentWithItsMappingAndIdentity) {
    drain();
    EXPECT_FALSE(segment_cache_take());
    CachedSegment older = made(4096), newer = made(8192);
    const std::uint64_t older_id = older.id, newer_id = newer.id;
    void *newer_address = newer.segment->address();
    std::memset(newer_address, 0x5a, 64);
    segment_cache_put(std::move(older));
    segment_cache_put(std::move(newer));
    EXPECT_EQ(segment_cache_size(), 2u);
    CachedSegment first = segment_cache_take();
    ASSERT_TRUE(first);
    EXPECT_EQ(first.id, newer_id);
    EXPECT_EQ(first.segment->address(), newer_address);  // still mapped, same bytes
    EXPECT_EQ(first.segment->size(), 8192u);
    EXPECT_EQ(static_cast<unsigned char *>(first.segment->address())[63], 0x5a);
    CachedSegment second = segment_cache_take();
    ASSERT_TRUE(second);
    EXPECT_EQ(second.id, older_id);
    EXPECT_FALSE(segment_cache_take());
}

TEST(SegmentCache, KeepsAtMostTheLimitDroppingTheOldest) {
    drain();
    std::vector<std::uint64_t> ids;
    for (std::size_t i = 0; i < segment_cache_limit + 2; ++i) {
        CachedSegment entry = made(4096);
        ids.push_back(entry.id);
        segment_cache_put(std::move(entry));
    }
    EXPECT_EQ(segment_cache_size(), segment_cache_limit);
    for (std::size_t i = 0; i < segment_cache_limit; ++i) {
        CachedSegment entry = segment_cache_take();
        ASSERT_TRUE(entry);
        EXPECT_EQ(entry.id, ids[ids.size() - 1 - i]);  // newest first; the 2 oldest gone
    }
    EXPECT_FALSE(segment_cache_take());
    segment_cache_put(CachedSegment{});  // an empty entry is not kept
    EXPECT_EQ(segment_cache_size(), 0u);
}

TEST(SegmentCache, IdentitiesAreUniqueNonZeroAndNameTheProcess) {
    std::set<std::uint64_t> seen;
    for (int i = 0; i < 1000; ++i) {
        const std::uint64_t id = new_segment_id();
        EXPECT_NE(id, 0u);
        EXPECT_EQ(id >> 32, static_cast<std::uint64_t>(getpid()));
        EXPECT_TRUE(seen.insert(id).second);
    }
}

TEST(SegmentCache, OffersAgreeOnlyWhenEveryHolderOfOneFittingSegmentIsThere) {
    constexpr std::int64_t control = 4096;
    const std::uint64_t a = 1, b = 2;  // two nodes
    // Two nodes, each with its own segment, every rank offering it: reuse.
    EXPECT_TRUE(segment_offers_agree({{a, 11, 2 * control, 2}, {a, 11, 2 * control, 2},
                                      {b, 22, control, 1}},
                                     control));
    // A rank without an offer, or offering another segment, on any node: no reuse.
    EXPECT_FALSE(segment_offers_agree({{a, 11, 2 * control, 2}, {a, 0, 0, 0}}, control));
    EXPECT_FALSE(segment_offers_agree({{a, 11, 2 * control, 2}, {a, 12, 2 * control, 2}}, control));
    EXPECT_FALSE(segment_offers_agree({{a, 11, 2 * control, 2}, {a, 11, 2 * control, 2},
                                       {b, 0, 0, 0}},
                                      control));
    // The wrong size for this window's control regions.
    EXPECT_FALSE(segment_offers_agree({{a, 11, 3 * control, 2}, {a, 11, 3 * control, 2}}, control));
    // The right size, but mapped by more ranks than this window has on the node: a
    // holder outside this window could make another window on it too.
    EXPECT_FALSE(segment_offers_agree({{a, 11, 2 * control, 4}, {a, 11, 2 * control, 4}}, control));
    EXPECT_FALSE(segment_offers_agree({{a, 11, control, 2}}, control));
    EXPECT_FALSE(segment_offers_agree({}, control));
}

}  // namespace
}  // namespace nbrma::transport::shm
