// The directory of a dynamic window's attached regions (transport/directory.hpp):
// the owner's writer and an origin's cache, read here straight from memory.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "common/status.hpp"
#include "transport/directory.hpp"

namespace nbrma::transport {
namespace {

constexpr std::size_t header_bytes = 1024;

// Reads the owner's header and arrays in this process, as CMA would; counts reads.
class MemorySource final : public DirectoryCache::Source {
  public:
    explicit MemorySource(const std::uint8_t *header) : header_(header) {}
    Status read_header(std::size_t offset, void *destination, std::size_t length) override {
        ++header_reads;
        std::memcpy(destination, header_ + offset, length);
        if (offset == 0 && on_header) on_header();
        return Status::ok;
    }
    Status read_array(const DirectoryHeader &, std::uint64_t address, void *destination,
                      std::size_t length) override {
        ++array_reads;
        std::memcpy(destination, reinterpret_cast<const void *>(address), length);
        return Status::ok;
    }
    int header_reads = 0;
    int array_reads = 0;
    std::function<void()> on_header;  // runs after each generation read (a racing owner)

  private:
    const std::uint8_t *header_;
};

class DirectoryTest : public ::testing::Test {
  protected:
    alignas(8) std::array<std::uint8_t, header_bytes> header_{};
    DirectoryWriter writer_{header_.data(), header_bytes, 0};
    MemorySource source_{header_.data()};
    DirectoryCache cache_;

    Status covered(std::uint64_t low, std::uint64_t high, std::size_t *count = nullptr) {
        Status status = cache_.refresh(source_);
        if (is_error(status)) return status;
        std::size_t first = 0, n = 0;
        status = cache_.cover(low, high, &first, &n);
        if (count) *count = n;
        return status;
    }
};

TEST_F(DirectoryTest, EmptyDirectoryCoversNothing) {
    EXPECT_EQ(covered(0x1000, 0x1008), Status::err_range);
    EXPECT_EQ(source_.array_reads, 0);  // generation 0: nothing published, nothing read
}

TEST_F(DirectoryTest, ThousandsOfRegionsGrowTheArray) {
    constexpr int regions = 3000;
    for (int i = 0; i < regions; ++i)  // 16-byte regions with 16-byte gaps
        ASSERT_EQ(writer_.add(0x100000 + 32 * i, 16, nullptr, 0), Status::ok) << i;
    EXPECT_EQ(writer_.regions(), static_cast<std::size_t>(regions));
    EXPECT_GE(writer_.capacity(), static_cast<std::size_t>(regions));
    EXPECT_LT(writer_.capacity(), 2u * regions);  // O(regions) memory
    for (int i = 0; i < regions; i += 97) {
        EXPECT_EQ(covered(0x100000 + 32 * i, 0x100000 + 32 * i + 16), Status::ok) << i;
        EXPECT_EQ(covered(0x100000 + 32 * i + 8, 0x100000 + 32 * i + 24), Status::err_range) << i;
    }
    // Detach every other one; the rest stay reachable, the freed slots are reused.
    for (int i = 0; i < regions; i += 2) ASSERT_EQ(writer_.remove(0x100000 + 32 * i), Status::ok);
    const std::size_t capacity = writer_.capacity();
    EXPECT_EQ(covered(0x100000, 0x100010), Status::err_range);
    EXPECT_EQ(covered(0x100020, 0x100030), Status::ok);
    for (int i = 0; i < regions; i += 2)
        ASSERT_EQ(writer_.add(0x100000 + 32 * i, 16, nullptr, 0), Status::ok);
    EXPECT_EQ(writer_.capacity(), capacity);
    EXPECT_EQ(covered(0x100000, 0x100010), Status::ok);
}

TEST_F(DirectoryTest, OverlapAndUnknownBaseAreRefused) {
    ASSERT_EQ(writer_.add(0x1000, 0x100, nullptr, 0), Status::ok);
    EXPECT_EQ(writer_.add(0x1000, 0x10, nullptr, 0), Status::err_range);            // same base
    EXPECT_EQ(writer_.add(0x10ff, 0x10, nullptr, 0), Status::err_range);            // tail
    EXPECT_EQ(writer_.add(0x0ff0, 0x11, nullptr, 0), Status::err_range);            // head
    EXPECT_EQ(writer_.add(0x0f00, 0x1000, nullptr, 0), Status::err_range);          // around
    EXPECT_EQ(writer_.add(~std::uint64_t{0} - 4, 8, nullptr, 0), Status::err_arg);  // wraps
    EXPECT_EQ(writer_.add(0x1100, 0x10, nullptr, 0), Status::ok);  // back to back is fine
    EXPECT_EQ(writer_.add(0x0ff0, 0x10, nullptr, 0), Status::ok);
    EXPECT_EQ(writer_.remove(0x1001), Status::err_arg);
    EXPECT_EQ(writer_.remove(0x1000), Status::ok);
    EXPECT_EQ(writer_.remove(0x1000), Status::err_arg);
    // Zero-size regions: accepted, detachable, reach nothing.
    EXPECT_EQ(writer_.add(0x5000, 0, nullptr, 0), Status::ok);
    EXPECT_EQ(covered(0x5000, 0x5001), Status::err_range);
    EXPECT_EQ(writer_.remove(0x5000), Status::ok);
}

TEST_F(DirectoryTest, BackToBackRegionsCoverOneAccess) {
    ASSERT_EQ(writer_.add(0x2040, 0x40, nullptr, 0), Status::ok);  // attached out of order
    ASSERT_EQ(writer_.add(0x2000, 0x40, nullptr, 0), Status::ok);
    ASSERT_EQ(writer_.add(0x2080, 0x40, nullptr, 0), Status::ok);
    ASSERT_EQ(writer_.add(0x2100, 0x40, nullptr, 0), Status::ok);  // after a gap
    std::size_t count = 0;
    EXPECT_EQ(covered(0x2000, 0x20c0, &count), Status::ok);
    EXPECT_EQ(count, 3u);
    EXPECT_EQ(covered(0x2030, 0x2050, &count), Status::ok);
    EXPECT_EQ(count, 2u);
    EXPECT_EQ(covered(0x2000, 0x20c1), Status::err_range);  // into the gap
    EXPECT_EQ(covered(0x20b0, 0x2110), Status::err_range);  // across the gap
    EXPECT_EQ(covered(0x1ff8, 0x2008), Status::err_range);  // below the first
    EXPECT_EQ(covered(0x2100, 0x2140, &count), Status::ok);
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(covered(0x2100, 0x2100, &count), Status::ok);  // empty
    EXPECT_EQ(count, 0u);
    // The middle one detached: the spanning access is refused.
    ASSERT_EQ(writer_.remove(0x2040), Status::ok);
    EXPECT_EQ(covered(0x2000, 0x20c0), Status::err_range);
    EXPECT_EQ(covered(0x2000, 0x2040), Status::ok);
    EXPECT_EQ(covered(0x2080, 0x20c0), Status::ok);
}

TEST_F(DirectoryTest, CacheRereadsOnlyWhenTheGenerationChanged) {
    ASSERT_EQ(writer_.add(0x3000, 0x40, nullptr, 0), Status::ok);
    EXPECT_EQ(covered(0x3000, 0x3040), Status::ok);
    const int arrays = source_.array_reads;
    for (int i = 0; i < 100; ++i) EXPECT_EQ(covered(0x3000, 0x3008), Status::ok);
    EXPECT_EQ(source_.array_reads, arrays);  // one generation read per lookup, no more
    ASSERT_EQ(writer_.add(0x4000, 0x40, nullptr, 0), Status::ok);
    EXPECT_EQ(covered(0x4000, 0x4040), Status::ok);
    EXPECT_EQ(source_.array_reads, arrays + 1);
}

TEST_F(DirectoryTest, ReaderRetriesWhenTheOwnerChangesItMeanwhile) {
    ASSERT_EQ(writer_.add(0x3000, 0x40, nullptr, 0), Status::ok);
    // The owner attaches (growing the array, which retires the old one) right after
    // the reader's first generation read: the copy is stale and must be re-read.
    int changes = 0;
    source_.on_header = [&] {
        if (changes++ != 0) return;
        for (int i = 0; i < 40; ++i)
            ASSERT_EQ(writer_.add(0x10000 + 0x100 * i, 0x40, nullptr, 0), Status::ok);
    };
    EXPECT_EQ(covered(0x10000 + 0x100 * 39, 0x10000 + 0x100 * 39 + 0x40), Status::ok);
    EXPECT_GE(source_.array_reads, 1);
}

TEST(DirectoryKeys, KeysAndArraysArePublished) {
    alignas(8) std::array<std::uint8_t, header_bytes> header{};
    std::vector<void *> published;
    DirectoryWriter writer(header.data(), header_bytes, 8,
                           [&](void *array, std::size_t, std::vector<std::uint8_t> *key) {
                               published.push_back(array);
                               *key = {1, 2, 3};
                               return Status::ok;
                           });
    const std::uint8_t key[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    EXPECT_EQ(writer.add(0x1000, 8, key, 9), Status::err_no_memory);  // longer than the stride
    for (int i = 0; i < 20; ++i)
        ASSERT_EQ(writer.add(0x1000 + 16 * i, 8, key, 1 + i % 8), Status::ok);
    ASSERT_EQ(published.size(), 2u);  // grown once (16 -> 32 slots)
    MemorySource source(header.data());
    DirectoryCache cache;
    ASSERT_EQ(cache.refresh(source), Status::ok);
    EXPECT_EQ(cache.header().address, reinterpret_cast<std::uintptr_t>(published.back()));
    EXPECT_EQ(cache.header().key_length, 3u);
    EXPECT_EQ(header[sizeof(DirectoryHeader) + 2], 3);
    std::size_t first = 0, count = 0;
    ASSERT_EQ(cache.cover(0x1000 + 16 * 19, 0x1000 + 16 * 19 + 8, &first, &count), Status::ok);
    const DirectoryCache::Region &region = cache.region(first);
    EXPECT_EQ(region.key_length, 1u + 19 % 8);
    const auto *slot_key = reinterpret_cast<const std::uint8_t *>(cache.key_address(region.slot));
    EXPECT_EQ(std::memcmp(slot_key, key, region.key_length), 0);
}

}  // namespace
}  // namespace nbrma::transport
