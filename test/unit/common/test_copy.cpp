// copy_bytes (common/copy.hpp): the bytes arrive exactly, and no byte around the
// destination changes, for every small distance between source and destination modulo
// 4 KiB on either side (the vector loop serves distances 1-63 from 2 KiB on), and for
// sizes around the loop's threshold and its 4-vector step; the loop itself for every size
// up to a few steps (its tail); streamed copies (from 1 MiB) for every destination offset
// within a cache line and tails of every length up to a step.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/copy.hpp"

namespace nbrma {
namespace {

constexpr std::size_t page = 4096;
constexpr std::size_t guard = 256;

// A page-aligned arena holding a source at `source_offset` and, a few pages on, a
// destination at `destination_offset` into its page, with guard bytes around it.
struct Arena {
    explicit Arena(std::size_t bytes) : storage(bytes + 8 * page + 2 * guard) {
        const auto address = reinterpret_cast<std::uintptr_t>(storage.data());
        base = storage.data() + ((page - address % page) % page);
    }
    std::vector<std::uint8_t> storage;
    std::uint8_t *base;
};

enum class Path { bytes, loop, stream };

void check_copy(std::size_t bytes, std::size_t source_offset, std::size_t destination_offset,
                Path path) {
    Arena arena(2 * bytes);
    std::uint8_t *source = arena.base + guard + source_offset;
    const std::size_t gap = (bytes + 2 * guard + page - 1) / page * page + page;
    std::uint8_t *destination = arena.base + gap + guard + destination_offset;
    for (std::size_t i = 0; i < bytes; ++i) source[i] = static_cast<std::uint8_t>(i * 7 + 3);
    std::memset(destination - guard, 0xa5, bytes + 2 * guard);
    if (path == Path::loop)
        copy_detail::copy_loop(destination, source, bytes);
    else if (path == Path::stream)
        copy_detail::copy_stream(destination, source, bytes);
    else
        copy_bytes(destination, source, bytes);
    ASSERT_EQ(std::memcmp(destination, source, bytes), 0)
        << bytes << " bytes, source +" << source_offset << ", destination +"
        << destination_offset;
    for (std::size_t i = 1; i <= guard; ++i) {
        ASSERT_EQ(destination[-static_cast<std::ptrdiff_t>(i)], 0xa5) << "before, " << bytes;
        ASSERT_EQ(destination[bytes + i - 1], 0xa5) << "after, " << bytes;
    }
}

TEST(CopyBytes, EveryShortDistanceEitherWay) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{127},
                              copy_detail::loop_from - 1, copy_detail::loop_from,
                              copy_detail::loop_from + 1, std::size_t{4096 + 17},
                              std::size_t{65536 + 63}})
        for (std::size_t distance = 0; distance <= 70; ++distance) {
            check_copy(bytes, 0, distance, Path::bytes);  // destination ahead
            check_copy(bytes, distance, 0, Path::bytes);  // source ahead
            check_copy(bytes, 100, (100 + distance) % page, Path::bytes);
        }
}

// The inline copies of up to 16 bytes, and the first sizes past them, at every
// alignment of either end within a word.
TEST(CopyBytes, SmallEverySizeAndAlignment) {
    for (std::size_t bytes = 0; bytes <= 20; ++bytes)
        for (std::size_t source_offset = 0; source_offset < 8; ++source_offset)
            for (std::size_t destination_offset = 0; destination_offset < 8; ++destination_offset)
                check_copy(bytes, source_offset, destination_offset + 64, Path::bytes);
}

TEST(CopyBytes, LoopEverySizeAndAlignment) {
    for (std::size_t bytes = 0; bytes <= 4 * 128 + 33; ++bytes)
        for (std::size_t offset : {0, 1, 16, 31, 63})
            check_copy(bytes, offset, offset + 16, Path::loop);
}

// Streamed: the head up to the destination's cache line, the streamed lines, the tail.
TEST(CopyBytes, StreamEveryLineOffsetAndTail) {
    for (std::size_t destination_offset = 0; destination_offset <= 64; ++destination_offset)
        check_copy(copy_detail::stream_from + 17, 5, destination_offset, Path::bytes);
    for (std::size_t tail = 0; tail <= 130; ++tail) {
        check_copy(copy_detail::stream_from + tail, 0, 0, Path::bytes);
        check_copy(4096 + tail, 3, 40, Path::stream);
    }
    check_copy(0, 0, 7, Path::stream);
    check_copy(63, 0, 7, Path::stream);
}

}  // namespace
}  // namespace nbrma
