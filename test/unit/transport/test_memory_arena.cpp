// MPI_Alloc_mem's arena (transport/shm/memory_arena.hpp): blocks are distinct, aligned
// and reused after they are given back; a window over any part of a block is shared as
// it is (the memfd a peer maps shows the same bytes) and nothing moves; a block given
// back while a window covers it stays mapped until that window is freed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/shm/memory_arena.hpp"
#include "transport/shm/peer_memory.hpp"
#include "transport/shm/user_memory.hpp"

namespace nbrma::transport::shm {
namespace {

TEST(MemoryArena, BlocksAreDistinctAlignedAndReused) {
    const std::size_t blocks_before = arena_blocks();
    std::vector<std::uint8_t *> blocks;
    for (std::size_t i = 0; i < 100; ++i) {
        auto *block = static_cast<std::uint8_t *>(arena_allocate(1 + 97 * i, 64));
        ASSERT_NE(block, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % 64, 0u);
        std::memset(block, static_cast<int>(i), 1 + 97 * i);
        blocks.push_back(block);
    }
    for (std::size_t i = 0; i < blocks.size(); ++i)
        for (std::size_t j = 0; j < 1 + 97 * i; ++j)
            ASSERT_EQ(blocks[i][j], static_cast<std::uint8_t>(i)) << "block " << i;
    EXPECT_EQ(arena_blocks(), blocks_before + 100);
    void *first = blocks[0];
    for (void *block : blocks) EXPECT_TRUE(arena_free(block));
    EXPECT_EQ(arena_blocks(), blocks_before);
    EXPECT_FALSE(arena_free(first));  // given back already
    // Given back and coalesced: the first fit is the same place again.
    void *again = arena_allocate(64, 64);
    EXPECT_EQ(again, first);
    EXPECT_TRUE(arena_free(again));
}

TEST(MemoryArena, AlignmentsAndLargeBlocks) {
    for (std::size_t alignment : {std::size_t{4096}, std::size_t{1} << 21}) {
        void *block = arena_allocate(100, alignment);
        ASSERT_NE(block, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % alignment, 0u);
        EXPECT_TRUE(arena_free(block));
    }
    auto *large = static_cast<std::uint8_t *>(arena_allocate(std::size_t{3} << 20, 64));
    ASSERT_NE(large, nullptr);
    large[(std::size_t{3} << 20) - 1] = 7;
    EXPECT_TRUE(arena_free(large));
    int on_stack = 0;
    EXPECT_FALSE(arena_free(&on_stack));
    EXPECT_EQ(arena_allocate(0, 64), nullptr);
}

TEST(MemoryArena, WindowsOverBlocksAreSharedInPlace) {
    auto *block = static_cast<std::uint8_t *>(arena_allocate(10000, 64));
    ASSERT_NE(block, nullptr);
    for (int i = 0; i < 10000; ++i) block[i] = static_cast<std::uint8_t>(i);
    const std::size_t moved_before = user_memory_moved();
    UserMemoryClaim claim;
    claim.claim(block + 1000, 5000, true, false);  // part of the block, no moving allowed
    ASSERT_GE(claim.descriptor(), 0);
    EXPECT_TRUE(claim.moved());  // nothing to move: share() cannot fail
    EXPECT_EQ(claim.share(), Status::ok);
    PeerMemoryMap peer;  // what a node-local peer maps
    ASSERT_EQ(peer.open_file(getpid(), claim.descriptor()), Status::ok);
    std::uint8_t *seen = peer.at(claim.offset(), 5000);
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(seen[0], static_cast<std::uint8_t>(1000));
    seen[1] = 0xab;  // a peer's store lands in the block
    EXPECT_EQ(block[1001], 0xab);
    EXPECT_EQ(user_memory_moved(), moved_before);
    // Given back while the window lives (an erroneous program): still mapped, until the
    // window goes.
    EXPECT_TRUE(arena_free(block));
    block[1002] = 5;
    EXPECT_EQ(seen[2], 5);
    claim.release();
    // Declined offers share nothing.
    auto *other = static_cast<std::uint8_t *>(arena_allocate(100, 64));
    UserMemoryClaim local;
    local.claim(other, 100, false, false);
    EXPECT_EQ(local.descriptor(), -1);
    local.release();
    EXPECT_TRUE(arena_free(other));
}

// A block given back frees its pages even where a peer keeps the memfd mapped (a peer's
// cached mapping then holds no memory): what the peer sees reads as zeros.
TEST(MemoryArena, GivenBackBlocksHoldNoMemoryInPeersMappings) {
    const std::size_t bytes = std::size_t{3} << 20;  // a memfd of its own
    auto *block = static_cast<std::uint8_t *>(arena_allocate(bytes, 64));
    ASSERT_NE(block, nullptr);
    std::memset(block, 0x5a, bytes);
    UserMemoryClaim claim;
    claim.claim(block, bytes, true, false);
    ASSERT_GE(claim.descriptor(), 0);
    PeerMemoryMap peer;
    ASSERT_EQ(peer.open_file(getpid(), claim.descriptor()), Status::ok);
    const std::uint8_t *seen = peer.at(claim.offset(), bytes);
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(seen[bytes - 1], 0x5a);
    claim.release();
    EXPECT_TRUE(arena_free(block));
    EXPECT_EQ(seen[0], 0);
    EXPECT_EQ(seen[bytes - 1], 0);
}

}  // namespace
}  // namespace nbrma::transport::shm
